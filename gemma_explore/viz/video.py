"""Sampled video frames as thumbnails with their ``mm:ss`` stamps and token counts.

Gid: ``"frame_thumb"`` on each thumbnail image.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..plans import VideoPlan, plan_video

__all__ = ["show_video_frames"]


def show_video_frames(plan: VideoPlan | Any, *, fps: float | None = None, max_frames: int = 32):
    """Thumbnails of the frames Gemma 4 samples, each with its timestamp and tokens.

    ``plan`` is a :class:`~gemma_explore.plans.VideoPlan` that holds its sampled frames,
    or any video input (planned first, with ``fps=`` for a frame array).

    >>> fig = show_video_frames(ge.plan_video("clip.mp4"))             # doctest: +SKIP
    """
    from matplotlib.figure import Figure

    if not isinstance(plan, VideoPlan):
        plan = plan_video(plan, fps=fps, max_frames=max_frames)
    if plan.frames is None:
        raise ValueError("This plan was made from a frame count; plan the video itself.")
    n = len(plan.frame_indices)
    cols = min(6, n)  # six across keeps the 9 pt captions readable at notebook width
    rows = math.ceil(n / cols)
    h, w = plan.frame_size
    fig = Figure(figsize=(1.9 * cols, 1.9 * rows * h / w + 0.9), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    for a, frame, idx, stamp in zip(
        axes, plan.frames, plan.frame_indices, plan.timestamps, strict=False
    ):
        a.imshow(frame, gid="frame_thumb")
        a.set_title(f"{stamp} · #{idx} · {plan.soft_tokens_per_frame} tok", fontsize=9)
        a.set_xticks([])
        a.set_yticks([])
    for a in axes[n:]:
        a.axis("off")
    per_stamp = n / max(len(set(plan.timestamps)), 1)
    shared = (
        f"\nstamps are mm:ss with the seconds truncated, so about {per_stamp:.0f} frames "
        "share each stamp"
        if per_stamp > 1.5
        else ""
    )
    fig.suptitle(
        f"{plan.num_frames} frames at {plan.fps:g} fps → {n} sampled × "
        f"{plan.soft_tokens_per_frame} = {plan.total_soft_tokens} soft tokens "
        f"(+{plan.total_tokens - plan.total_soft_tokens} markers + timestamps)"
        f"\ncaption: mm:ss stamp · frame index · soft tokens{shared}",
        fontsize=11,
    )
    return fig
