"""Planning a released checkpoint offline: the first plan of each id, after import.

Target (issue 21): with ``HF_HUB_OFFLINE=1`` and no Hugging Face cache, each released id
plans in under 1 s once the package and transformers are imported (no hub retries; the
config comes from the built-in facts, the weights from one meta-device build per id).
Each id's first plan is printed against the same run's baseline: the first plan of the
tiny Gemma 4 (whose config is built in too), after the tiny Gemma 3n and Unified have
been planned once so that the model modules (and timm) are imported.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_released.py
"""

from __future__ import annotations

import os
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_CACHE", tempfile.mkdtemp(prefix="empty_hub_"))  # no cache

import gemma_explore as ge  # noqa: E402
from gemma_explore.facts.released import RELEASED_IDS  # noqa: E402


def _first_plan(name: str) -> float:
    start = time.perf_counter()
    ge.plan_serving(name, max_model_len=32_768)
    return time.perf_counter() - start


def main() -> None:
    import transformers  # noqa: F401  (import cost is not the plan's)

    for warm in ("tiny-gemma3n", "tiny-gemma4-unified"):  # imports the modeling modules
        _first_plan(warm)
    baseline = _first_plan("tiny-gemma4")
    print(f"baseline: tiny-gemma4's first plan {baseline:.2f} s")
    for model_id in RELEASED_IDS:
        seconds = _first_plan(model_id)
        print(f"{model_id:28s} {seconds:5.2f} s  ({seconds / baseline:4.1f}× the baseline)")


if __name__ == "__main__":
    main()
