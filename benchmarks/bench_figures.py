"""Figure render times (build + PNG at 100 dpi) for a 1920×1080 image and a 30 s clip.

Target (issue 4): each figure renders in < 0.5 s. The baseline, measured in the same
run, is matplotlib rendering a bare 1920×1080 ``imshow`` — the least any image figure
can cost — so the ratio shows what our drawing adds.

    .venv/bin/python benchmarks/bench_figures.py
"""

from __future__ import annotations

import io
import statistics
import time

import numpy as np
from matplotlib.figure import Figure
from PIL import Image

import gemma_explore as ge

TARGET_S = 0.5


def _render(make) -> float:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        make().savefig(io.BytesIO(), format="png", dpi=100)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    rng = np.random.RandomState(0)
    photo = Image.fromarray(rng.randint(0, 255, (1080, 1920, 3), np.uint8))
    clip = (rng.uniform(-0.3, 0.3, 30 * 16_000).astype(np.float32), 16_000)
    b4, b3 = ge.load("tiny-gemma4"), ge.load("tiny-gemma3n")
    layout = ge.layout_prompt("What?", bundle=b4, images=[photo], audios=[clip])

    def bare():
        fig = Figure(figsize=(7, 4))
        fig.subplots().imshow(np.asarray(photo))
        return fig

    base = _render(bare)
    jobs = {
        "patch grid (Gemma 4, 280)": lambda: ge.show_patch_grid(photo, family="gemma4"),
        "patch grid (Gemma 3n)": lambda: ge.show_patch_grid(photo, family="gemma3n"),
        "five budgets": lambda: ge.show_patch_grid(photo, family="gemma4", max_soft_tokens="all"),
        "pooled mask (Gemma 4, tower incl.)": lambda: ge.show_pooled_mask(
            ge.vision_pooling(photo, bundle=b4)
        ),
        "pooled mask (Gemma 3n, tower incl.)": lambda: ge.show_pooled_mask(
            ge.vision_pooling(photo, bundle=b3)
        ),
        "mel 30 s (Gemma 4)": lambda: ge.show_mel(clip, family="gemma4"),
        "mel 30 s (Gemma 3n)": lambda: ge.show_mel(clip, family="gemma3n"),
        "layout ribbon": lambda: ge.show_layout(layout),
    }
    print(f"baseline: bare 1920×1080 imshow renders in {base:.3f} s")
    for name, make in jobs.items():
        make()  # warm caches (feature extractor, fonts)
        t = _render(make)
        print(f"{name:38s} {t:6.3f} s = {t / TARGET_S:5.2f} × target, {t / base:5.1f} × baseline")


if __name__ == "__main__":
    main()
