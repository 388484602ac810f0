"""Sampled video frames as thumbnails with their ``mm:ss`` stamps and token counts.

Gid: ``"frame_thumb"`` on each thumbnail image.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..media import load_video
from ..plans import plan_video

__all__ = ["show_video_frames"]


def show_video_frames(video: Any, *, fps: float | None = None, max_frames: int = 32):
    """Thumbnails of the frames Gemma 4 samples, each with its timestamp and tokens.

    >>> fig = show_video_frames("clip.mp4")                           # doctest: +SKIP
    """
    from matplotlib.figure import Figure

    v = load_video(video, fps=fps)
    plan = plan_video(v.frames, fps=v.fps, max_frames=max_frames)
    n = len(plan.frame_indices)
    cols = min(8, n)
    rows = math.ceil(n / cols)
    h, w = v.frames.shape[1:3]
    fig = Figure(figsize=(1.9 * cols, 1.9 * rows * h / w + 0.9), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    for a, idx, stamp in zip(axes, plan.frame_indices, plan.timestamps, strict=False):
        a.imshow(v.frames[idx], gid="frame_thumb")
        a.set_title(f"{stamp} · #{idx} · {plan.soft_tokens_per_frame} tok", fontsize=8)
        a.set_xticks([])
        a.set_yticks([])
    for a in axes[n:]:
        a.axis("off")
    fig.suptitle(
        f"{v.num_frames} frames at {v.fps:g} fps → {n} sampled × {plan.soft_tokens_per_frame} "
        f"= {plan.total_soft_tokens} soft tokens (+{2 * n} markers + timestamps)",
        fontsize=11,
    )
    return fig
