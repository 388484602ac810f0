"""One vLLM engine per family, shared by every engine test (each takes ~30–50 s to start
on two cores) and shut down when this folder's tests are done: three in-process engines
hold gigabytes that the folders after it need. The engines run in this process
(``start_vllm``'s CPU default), on the tiny bundles saved once in float32
(``saved_dirs``), so transformers (the ``tiny*`` fixtures) and vLLM read the same
weights."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import pytest

from gemma_explore.engines.vllm_processor import vllm_available

from .facts import EngineStartupFacts, KVLineLog, engine_startup_facts

if not vllm_available():  # pragma: no cover - the test environment installs vLLM's CPU build
    pytest.skip("vLLM is not installed (python scripts/install_vllm.py)", allow_module_level=True)

MAX_MODEL_LEN = 4096  # room for a 1120-budget image (1089 + markers) and a 32-frame video
# Per family: two images (so a third is refused), one clip, one video where the family has it.
LIMITS = {
    "gemma3n": {"image": 2, "audio": 1},
    "gemma4": {"image": 2, "audio": 1, "video": 1},
    "gemma4_unified": {"image": 2, "audio": 1, "video": 1},
}


@dataclass
class Engine:
    """A started engine and what it said at start-up."""

    family: str
    folder: str
    bundle: Any  # gemma_explore Bundle with engine "vllm"
    kv_line: str | None

    @property
    def llm(self) -> Any:
        return self.bundle.engine.llm

    def facts(self) -> EngineStartupFacts:
        return engine_startup_facts(self.llm, kv_line=self.kv_line)


@pytest.fixture(scope="package")
def engines(saved_dirs):
    """``engines(family)`` → this folder's :class:`Engine` for that family (started on
    first use)."""
    import gemma_explore as ge

    started: dict[str, Engine] = {}
    log = KVLineLog()
    vllm_logger = logging.getLogger("vllm")

    def get(family: str) -> Engine:
        if family not in started:
            folder = str(saved_dirs[family])
            before = len(log.lines)
            vllm_logger.addHandler(log)
            try:
                bundle = ge.load(
                    folder,
                    engine="vllm",
                    max_model_len=MAX_MODEL_LEN,
                    limit_mm_per_prompt=LIMITS[family],
                )
            finally:
                vllm_logger.removeHandler(log)
            line = log.lines[before] if len(log.lines) > before else None
            started[family] = Engine(family, folder, bundle, line)
        return started[family]

    yield get
    for engine in started.values():
        engine.bundle.engine.close()  # the last one closed frees the distributed groups too
    started.clear()


@pytest.fixture(scope="package")
def engine3n(engines):
    return engines("gemma3n")


@pytest.fixture(scope="package")
def engine4(engines):
    return engines("gemma4")


@pytest.fixture(scope="package")
def engineu(engines):
    return engines("gemma4_unified")


FAMILIES = ["gemma3n", "gemma4", "gemma4_unified"]
ENGINE_OF = {"gemma3n": "engine3n", "gemma4": "engine4", "gemma4_unified": "engineu"}
HF_OF = {"gemma3n": "tiny3n", "gemma4": "tiny4", "gemma4_unified": "tinyu"}
