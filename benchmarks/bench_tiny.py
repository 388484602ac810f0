"""Build and first-answer times of the tiny bundles on this machine's CPU.

Targets (issue 2): each tiny bundle builds in < 10 s and answers a one-image prompt in
< 3 s on 2 cores. Printed as ratios: against the target, and against a text-only
answer measured in the same run (the baseline), which shows what the image costs.

    .venv/bin/python benchmarks/bench_tiny.py
"""

from __future__ import annotations

import time

import numpy as np
from PIL import Image
from timing import median_seconds  # benchmarks/ is on sys.path when these scripts run

BUILD_TARGET_S = 10.0
ANSWER_TARGET_S = 3.0


def main() -> None:
    import torch

    torch.manual_seed(0)
    import gemma_explore as ge
    from gemma_explore.models import checkpoints
    from gemma_explore.models.tiny import build_tiny_model, build_tiny_processor

    photo = Image.fromarray(np.random.RandomState(0).randint(0, 255, (1080, 1920, 3), np.uint8))
    print(f"torch threads: {torch.get_num_threads()}")
    for name, family in (("tiny-gemma3n", "gemma3n"), ("tiny-gemma4", "gemma4")):
        start = time.perf_counter()
        build_tiny_model(family)
        build_tiny_processor(family)
        build_s = time.perf_counter() - start
        checkpoints._tiny.cache_clear()
        b = ge.load(name, device="cpu")
        image_msg = [
            {
                "role": "user",
                "content": [
                    {"type": "image", "image": photo},
                    {"type": "text", "text": "What is this?"},
                ],
            }
        ]
        text_msg = [{"role": "user", "content": [{"type": "text", "text": "What is this?"}]}]
        b.generate(image_msg, max_new_tokens=8)  # warm-up
        answer_s = median_seconds(lambda b=b, m=image_msg: b.generate(m, max_new_tokens=8))
        text_s = median_seconds(lambda b=b, m=text_msg: b.generate(m, max_new_tokens=8))
        print(
            f"{name:13s} build {build_s:5.2f} s (= {build_s / BUILD_TARGET_S:.2f} × target) | "
            f"1920×1080 image answer {answer_s:5.2f} s (= {answer_s / ANSWER_TARGET_S:.2f} × "
            f"target, {answer_s / text_s:.1f} × the text-only answer of {text_s:.2f} s)"
        )


if __name__ == "__main__":
    main()
