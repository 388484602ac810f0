"""Marks for the package's doctests (pytest collects them with ``--doctest-modules``).

A docstring example cannot carry a pytest mark, so the few that run vLLM's own code or
take long are marked here by name: ``make check`` (``-m "not slow and not vllm"``) leaves
them to ``make test``, as it does every other test marked so.
"""

from __future__ import annotations

import pytest

# The suite's environment (offline, Agg, the stand-in vocabulary: tests/conftest.py says
# why) holds for the doctests too, also when they run without tests/: their printed
# counts are the stand-in's on every machine, fetched vocabulary or not.
import tests.conftest  # noqa: F401

# Docstrings whose examples call vLLM's code (its processor, its model classes).
NEEDS_VLLM = (
    "gemma_explore.engines.vllm_processor",
    "gemma_explore.inside.logits.vllm_applies_suppress_tokens",
    "gemma_explore.parity.checks.vllm_replay",
)


# Docstrings whose examples build released-size models on the meta device (tens of
# seconds on 2 cores): make check (-m "not slow") leaves them to make test.
SLOW = (
    "gemma_explore.serving.flops",
    "gemma_explore.serving.weights",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.DoctestItem) and item.name.startswith(NEEDS_VLLM):
            item.add_marker(pytest.mark.vllm)
        if isinstance(item, pytest.DoctestItem) and item.name.startswith(SLOW):
            item.add_marker(pytest.mark.slow)
