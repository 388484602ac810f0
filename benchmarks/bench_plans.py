"""plan_image / plan_audio speed against running the transformers processor on the same input.

Target (issue 3): plans are pure arithmetic, ≥ 100× faster than the processor.
The baseline is the real processor call measured in the same run.

    .venv/bin/python benchmarks/bench_plans.py
"""

from __future__ import annotations

import timeit

import numpy as np
from PIL import Image

import gemma_explore as ge


def _rate(fn, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=3)) / number


def main() -> None:
    b4, b3 = ge.load("tiny-gemma4"), ge.load("tiny-gemma3n")
    photo = Image.fromarray(np.random.RandomState(0).randint(0, 255, (1080, 1920, 3), np.uint8))
    clip = np.random.RandomState(0).uniform(-0.2, 0.2, 16_000 * 10).astype(np.float32)
    rows = []
    for name, bundle in (("gemma4", b4), ("gemma3n", b3)):
        p = bundle.processor
        plan_s = _rate(lambda n=name: ge.plan_image(photo, family=n), 2000)
        proc_s = _rate(lambda p=p: p(text=[p.image_token], images=[[photo]]), 10)
        rows.append((f"{name} image 1920×1080", plan_s, proc_s))
        plan_s = _rate(lambda n=name: ge.plan_audio(clip.shape[0], family=n), 2000)
        proc_s = _rate(lambda p=p: p(text=[p.audio_token], audio=[clip]), 10)
        rows.append((f"{name} audio 10 s (count)", plan_s, proc_s))
        plan_s = _rate(lambda n=name: ge.plan_audio(clip, family=n), 200)
        rows.append((f"{name} audio 10 s (waveform)", plan_s, proc_s))
    for label, plan_s, proc_s in rows:
        print(
            f"{label:30s} plan {plan_s * 1e6:9.1f} µs | processor {proc_s * 1e3:8.2f} ms | "
            f"plan is {proc_s / plan_s:8.0f}× faster (target ≥ 100×)"
        )


if __name__ == "__main__":
    main()
