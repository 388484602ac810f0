"""``gemma-explore serve-args`` for a released checkpoint, cold, each in a fresh process,
against the floor measured in the same run (the interpreter importing ``gemma_explore.cli``,
what every command pays before it starts). Target: the answer within 3 s (issue 46), that is
at most 3 s over the interpreter's own start.

It also lists which heavy libraries the command imported (torch, transformers, vllm): a
released id with nothing of it in the local Hugging Face cache is planned from its stored
serving inputs (``gemma_explore/facts/released_serving.json``, written from transformers'
config classes and a meta-device build and held to them by
``tests/serving/test_released_facts.py``), so it needs none of them. Before that file the
command imported transformers' config classes (and torch with them) and built the model on
the meta device twice: 23.9 s against a 1.5 s floor on the loaded 2-core machine.

    .venv/bin/python benchmarks/bench_serve_args.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
TARGET_S = 3.0
COMMAND = ("serve-args", "google/gemma-4-31B-it", "--gpu", "L4")

FLOOR = "import gemma_explore.cli"
RUN = f"""
import json, sys
from gemma_explore.cli import main
sys.argv = ["gemma-explore", *{list(COMMAND)!r}]
try:
    main()
except SystemExit as done:
    code = done.code
else:
    code = 0
heavy = sorted(m for m in ("torch", "transformers", "vllm") if m in sys.modules)
print(json.dumps({{"rc": code, "heavy": heavy}}), file=sys.stderr)
"""


def _seconds(code: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code], env=ENV, capture_output=True, text=True, check=False
    )
    return time.perf_counter() - t0, done.stderr.strip().splitlines()[-1] if done.stderr else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    floor = statistics.median(_seconds(FLOOR)[0] for _ in range(repeat))
    runs = [_seconds(RUN) for _ in range(repeat)]
    took = statistics.median(s for s, _ in runs)
    info = json.loads(runs[-1][1]) if runs[-1][1].startswith("{") else {}
    print(f"floor (import gemma_explore.cli): {floor:.2f} s (median of {repeat})")
    print(
        f"gemma-explore {' '.join(COMMAND)}: {took:.2f} s, {took - floor:+.2f} s over the floor "
        f"({took / floor:.2f}× it), "
        f"{took / TARGET_S:.2f}× the {TARGET_S:g} s target; exit {info.get('rc')}; "
        f"imported {', '.join(info.get('heavy', [])) or 'none of torch, transformers, vllm'}"
    )


if __name__ == "__main__":
    main()
