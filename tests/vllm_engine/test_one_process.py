"""Any number of vLLM engines, one after another, in one process.

In-process engines share the process's distributed groups (``vllm.distributed.
parallel_state``: a second engine reuses the first's), and vLLM's ``EngineCore.shutdown``
tears them down for the whole process, whether it is called or runs as the engine's
finalizer. A notebook that loaded a second model and dropped the first then failed at the
second's first request ("pipeline model parallel group is not initialized"). These tests
load a tiny engine of their own next to this folder's three (``engines``), drop it or close
it, and every family still answers; one extra engine at a time, freed before the next.
"""

from __future__ import annotations

import gc

import pytest

import gemma_explore as ge
from gemma_explore.engines.vllm import _LIVE_IN_PROCESS
from gemma_explore.errors import EngineError

from .conftest import FAMILIES

# A small extra engine: text only is asked of it (one image, no clip or video profiled).
SMALL = {"max_model_len": 1024, "limit_mm_per_prompt": {"image": 1, "audio": 0, "video": 0}}


def _answers(bundle) -> None:
    gen = bundle.generate("Hello.", max_new_tokens=2)
    assert gen.generated_tokens >= 1 and gen.prompt_tokens > 0


def _groups_standing() -> bool:
    from vllm.distributed.parallel_state import model_parallel_is_initialized

    return model_parallel_is_initialized()


def test_the_three_families_answer_one_after_another(engines):
    """This folder's engines start one after another in this one process (the first
    request of each family starts it), and each answers."""
    for family in FAMILIES:
        _answers(engines(family).bundle)
    assert _groups_standing()


def test_a_dropped_engine_leaves_the_others_answering(engines):
    """``bundle = ge.load(…)`` twice in a notebook: the first engine is dropped, not
    closed, and its finalizer shuts it down while the others run."""
    for family in FAMILIES:  # the others are running before the extra one starts
        engines(family)
    extra = ge.load("tiny-gemma3n", engine="vllm", **SMALL)
    _answers(extra)
    core = extra.engine.llm.llm_engine.engine_core.engine_core  # vLLM's EngineCore
    assert core in _LIVE_IN_PROCESS
    del extra
    gc.collect()  # its finalizer runs now, as a notebook's next sweep would run it
    assert core not in _LIVE_IN_PROCESS  # it was shut down, by its finalizer
    del core
    assert _groups_standing()
    for family in FAMILIES:
        _answers(engines(family).bundle)


def test_a_closed_engine_says_so_and_leaves_the_others_answering(engines):
    extra = ge.load("tiny-gemma4", engine="vllm", **SMALL)
    _answers(extra)
    extra.engine.close()
    extra.engine.close()  # twice is harmless
    with pytest.raises(EngineError, match="was closed: load the model again"):
        extra.generate("Hello.", max_new_tokens=2)
    assert _groups_standing()
    for family in FAMILIES:
        _answers(engines(family).bundle)
