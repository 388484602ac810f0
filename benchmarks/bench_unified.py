"""Gemma 4 Unified's tiny bundle: warm build and a one-image answer on this CPU.

Targets (issue 12): the tiny Unified bundle builds in < 3 s warm (imports already
done, a first build already made) and answers a one-image prompt in < 2 s. Printed as
ratios against the targets, and against the tiny Gemma 4 (with towers) measured the
same way in the same run: the baseline that shows what dropping the encoder changes.

    .venv/bin/python benchmarks/bench_unified.py
"""

from __future__ import annotations

import numpy as np
from PIL import Image
from timing import median_seconds  # benchmarks/ is on sys.path when these scripts run

BUILD_TARGET_S = 3.0
ANSWER_TARGET_S = 2.0


def _build(family: str) -> None:
    from gemma_explore.models.tiny import build_tiny_model, build_tiny_processor

    build_tiny_model(family)
    build_tiny_processor(family)


def main() -> None:
    import torch

    import gemma_explore as ge

    photo = Image.fromarray(np.random.RandomState(0).randint(0, 255, (1080, 1920, 3), np.uint8))
    msg = [
        {
            "role": "user",
            "content": [
                {"type": "image", "image": photo},
                {"type": "text", "text": "What is this?"},
            ],
        }
    ]
    print(f"torch threads: {torch.get_num_threads()}")
    results = {}
    for name, family in (("tiny-gemma4", "gemma4"), ("tiny-gemma4-unified", "gemma4_unified")):
        _build(family)  # the first build pays the imports
        build_s = median_seconds(lambda f=family: _build(f), repeat=3)
        b = ge.load(name, device="cpu")
        b.generate(msg, max_new_tokens=8)  # warm-up
        answer_s = median_seconds(lambda b=b: b.generate(msg, max_new_tokens=8))
        results[family] = (build_s, answer_s)
    (b4, a4), (bu, au) = results["gemma4"], results["gemma4_unified"]
    print(
        f"tiny-gemma4-unified warm build {bu:5.2f} s (= {bu / BUILD_TARGET_S:.2f} × target; "
        f"tiny Gemma 4 {b4:.2f} s, ratio {bu / b4:.2f})"
    )
    print(
        f"tiny-gemma4-unified 1920×1080 px (W×H) image answer {au:5.2f} s "
        f"(= {au / ANSWER_TARGET_S:.2f} × target; tiny Gemma 4 {a4:.2f} s, ratio {au / a4:.2f})"
    )


if __name__ == "__main__":
    main()
