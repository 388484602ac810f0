"""Cold start, each in a fresh process, printed as the difference from the baseline import
of torch, transformers and the Gemma model classes measured in the same run.

* ``ge.load("tiny-gemma4")`` and ``ge.load("tiny-gemma3n")``: target ≤ 2 s over the floor;
* the demo serving its page (``GET /`` answers 200): target ≤ 4 s over the floor (the
  model loads in the background behind a notice, so the page does not wait for it);
* Gemma 3n's mel figure (``show_mel``, drawn and saved as PNG), the first in its process,
  alone and as the demo's first audio request: target < 0.5 s.

    .venv/bin/python benchmarks/bench_startup.py [--repeat 3] [--load-only]

``ge.load`` after the floor is measured with both tokenizers a machine can have: the
fetched Gemma vocabulary (``gemma-explore tokenizer fetch``) and the stand-in, in wall and
CPU seconds (on a shared machine the CPU figure is the one to read).

Run it with the interpreter of the environment to measure (``.venv-demo/bin/python`` for
the light one that ``make demo`` builds).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "GRADIO_ANALYTICS_ENABLED": "False"}

FLOOR = (
    "import torch, transformers\n"
    "from transformers import Gemma3nForConditionalGeneration, Gemma4ForConditionalGeneration\n"
)
LOAD = "import gemma_explore as ge\nge.load({name!r})\n"
# The floor and then ge.load in one process: the difference is what load adds, free of
# the run-to-run noise of two separate processes.
AFTER_FLOOR = (
    FLOOR
    + """
import json, time
t0, c0 = time.perf_counter(), time.process_time()
import gemma_explore as ge
bundle = ge.load({name!r})
print(json.dumps({{"s": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                  "vocabulary": bundle.vocabulary}}))
"""
)
MEL = """
import io, json, time
import gemma_explore as ge
from gemma_explore.samples import SAMPLES_DIR
features = ge.audio_features(SAMPLES_DIR / "speech.wav", family="gemma3n")
t0 = time.perf_counter()
ge.show_mel(features).savefig(io.BytesIO(), format="png")
print(json.dumps({"s": time.perf_counter() - t0}))
"""
DEMO_AUDIO = """
import io, json, time
from gemma_explore.app import tabs, ui
from gemma_explore.samples import SAMPLES_DIR
ui.preload("tiny-gemma3n").join()  # what the demo does in the background at start
r = tabs.audio_tab("tiny-gemma3n", str(SAMPLES_DIR / "speech.wav"))
lap = [p for p in r.timings.split(" · ") if p.startswith("mel figure")][0]
t0 = time.perf_counter()
r.mel_figure.savefig(io.BytesIO(), format="webp")  # what gr.Plot sends the browser
encode = time.perf_counter() - t0
print(json.dumps({"s": float(lap.split()[-2]) / 1000 + encode}))
"""


def _wall(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=ENV, check=True, capture_output=True)
    return time.perf_counter() - start


def _inner(code: str, env: dict[str, str] | None = None) -> float:
    return _inner_all(code, env)["s"]


def _inner_all(code: str, env: dict[str, str] | None = None) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env or ENV,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _load_after_floor(repeat: int) -> None:
    """What ``ge.load`` adds after the floor's imports, in the same process, with each
    tokenizer a machine can have: the fetched Gemma vocabulary (when fetched) and the
    stand-in (the package's cache pointed at an empty folder). Wall seconds, and the
    process's CPU seconds, which a busy machine inflates far less (the wall figure of a
    shared machine is mostly waiting)."""
    from gemma_explore.models.vocabulary import CACHE_ENV, fetched_vocabulary

    with tempfile.TemporaryDirectory(prefix="bench-startup-empty-cache-") as empty:
        setups = [("stand-in", {**ENV, CACHE_ENV: empty})]
        if fetched_vocabulary() is not None:
            setups.insert(0, ("fetched", ENV))
        else:
            print("(the Gemma vocabulary is not fetched here: `gemma-explore tokenizer fetch`)")
        for name in ("tiny-gemma4", "tiny-gemma3n"):
            for label, env in setups:
                runs = [_inner_all(AFTER_FLOOR.format(name=name), env) for _ in range(repeat)]
                wall = statistics.median(r["s"] for r in runs)
                cpu = statistics.median(r["cpu"] for r in runs)
                print(
                    f"ge.load({name!r}) after the floor, {label:8s}: +{wall:.2f} s wall, "
                    f"+{cpu:.2f} s CPU  ({runs[0]['vocabulary']}; target ≤ +2 s)"
                )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _demo_page() -> float:
    """Seconds from starting ``demo_app.py`` to its page answering 200."""
    port = _free_port()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "demo_app.py", "--port", str(port)],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while time.perf_counter() - start < 300:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1) as r:
                    if r.status == 200:
                        return time.perf_counter() - start
            except OSError:
                time.sleep(0.05)
        raise TimeoutError("the demo did not serve its page within 300 s")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--mel-only", action="store_true", help="only the mel figure timings")
    parser.add_argument(
        "--load-only", action="store_true", help="only ge.load after the floor, both tokenizers"
    )
    args = parser.parse_args()
    runs: dict[str, list[float]] = {}
    for _ in range(
        0 if args.mel_only or args.load_only else args.repeat
    ):  # interleaved, so load drifts hit every measurement alike
        for label, measure in (
            ("floor: torch + transformers + Gemma classes", lambda: _wall(FLOOR)),
            ("ge.load('tiny-gemma4')", lambda: _wall(LOAD.format(name="tiny-gemma4"))),
            ("ge.load('tiny-gemma3n')", lambda: _wall(LOAD.format(name="tiny-gemma3n"))),
            ("demo serves its page", _demo_page),
        ):
            runs.setdefault(label, []).append(measure())
    print(f"python: {sys.executable}  (median of {args.repeat})")
    floor = statistics.median(runs.get("floor: torch + transformers + Gemma classes", [0.0]))
    for label, times in runs.items():
        t = statistics.median(times)
        extra = "" if label.startswith("floor") else f"   {t - floor:+6.2f} s over the floor"
        print(f"{label:44s} {t:6.2f} s{extra}")
    if runs:
        print("targets: ge.load ≤ +2 s; the demo's page ≤ +4 s")
    if not args.mel_only:
        _load_after_floor(args.repeat)
    if args.load_only:
        return
    mel = statistics.median(_inner(MEL) for _ in range(args.repeat))
    first = statistics.median(_inner(DEMO_AUDIO) for _ in range(args.repeat))
    print(f"show_mel (Gemma 3n), first in its process:   {mel:.2f} s  (target < 0.5 s)")
    print(
        f"the demo's first audio request, mel figure:  {first:.2f} s  (drawn and encoded; < 0.5 s)"
    )


if __name__ == "__main__":
    main()
