"""Where vLLM's seed files are, for the tests that read or run them.

The seeds (``gemma3n_mm.py``, ``gemma4_mm.py``: vLLM's model files newer than 0.32, with
``_get_tower_quant_config``) are not shipped in this repository. They sit beside the
checkout, at ``<repo>/../shared/seeds``, in the workplace that holds them;
``GEMMA_EXPLORE_SEEDS`` points elsewhere. Tests that need them skip where they are absent
(a clean clone without the folder runs every check against vLLM 0.32's installed code,
and none against the seed's own).

>>> SEEDS.name
'seeds'
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

__all__ = ["SEEDS", "load_seed"]

# <repo>/../shared/seeds, or GEMMA_EXPLORE_SEEDS: the folder holding vLLM's seed files.
SEEDS = Path(
    os.environ.get(
        "GEMMA_EXPLORE_SEEDS", Path(__file__).resolve().parents[1].parent / "shared" / "seeds"
    )
)


def load_seed(stem: str) -> ModuleType:
    """One of vLLM's seed files, imported beside vLLM's own modules (its relative imports
    resolve in vLLM's package); skips the test where the seeds are absent.

    >>> load_seed("gemma4_mm").__name__  # doctest: +SKIP
    'vllm.model_executor.models._gemma_explore_seed_gemma4_mm'
    """
    path = SEEDS / f"{stem}.py"
    if not path.exists():
        pytest.skip(f"vLLM's seed files are not at {SEEDS} (set GEMMA_EXPLORE_SEEDS)")
    name = f"vllm.model_executor.models._gemma_explore_seed_{stem}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
