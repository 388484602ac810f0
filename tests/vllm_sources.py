"""The Python source of each supported vLLM release, for tests that hold a profile's facts
to that release's own files.

``make vllm-sources`` (a step of ``make test``) downloads each release's standard wheel
from PyPI and unpacks its ``.py`` files into ``~/.cache/gemma_explore/vllm-src/<release>/``
(``scripts/vllm_sources.py``); ``GEMMA_EXPLORE_VLLM_SOURCES`` names another folder. A test
that needs a release missing there skips with one line.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gemma_explore.vllm_versions import PROFILES


def sources_root() -> Path:
    """Where the unpacked releases live (``<root>/<release>/vllm/...``)."""
    env = os.environ.get("GEMMA_EXPLORE_VLLM_SOURCES")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "gemma_explore" / "vllm-src"


def vllm_source(version: str) -> Path:
    """The folder holding ``vllm/`` for one supported release ("0.33"), or a skip."""
    release = PROFILES[version].release
    for name in (release, version):
        folder = sources_root() / name
        if (folder / "vllm" / "__init__.py").exists():
            return folder
    pytest.skip(f"vLLM {release}'s source is not unpacked here: run `make vllm-sources`")


def read_source(version: str, relative: str) -> str:
    """The text of ``vllm/<relative>`` in one release."""
    return (vllm_source(version) / "vllm" / relative).read_text()


def only_where_the_engine_runs(why: str) -> pytest.MarkDecorator:
    """Skip, naming ``why``, where the installed vLLM is not the release whose CPU build
    runs the engine here (``CPU_BUILD``): a check whose newer-release side is not modelled
    yet."""
    from gemma_explore.vllm_versions import CPU_BUILD, installed_vllm

    found = installed_vllm()
    newer = found is not None and not found.startswith(CPU_BUILD.rsplit(".", 1)[0])
    return pytest.mark.skipif(newer, reason=f"vLLM {found}: {why}")
