"""Sampled video frames as thumbnails with their ``mm:ss`` stamps and token counts.

Gid: ``"frame_thumb"`` on each thumbnail image.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from gemma_explore.plans.video import VideoPlan, plan_video
from gemma_explore.viz.palette import panels
from gemma_explore.viz.style import current_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["show_video_frames"]


def _caption(plan: VideoPlan, n: int) -> str:
    """The figure's title: frames → tokens, what a caption says, and shared stamps."""
    per_stamp = n / max(len(set(plan.timestamps)), 1)
    shared = (
        f"; stamps are mm:ss with the seconds truncated, so about {per_stamp:.0f} frames "
        "share each stamp"
        if per_stamp > 1.5
        else ""
    )
    return current_style().fill(
        f"{plan.num_frames} frames at {plan.fps:g} fps → {n} sampled × "
        f"{plan.soft_tokens_per_frame} = {plan.num_soft_tokens} soft tokens "
        f"(+{plan.total_tokens - plan.num_soft_tokens} markers + timestamps)"
        f"\ncaption: mm:ss stamp · frame index · soft tokens{shared}",
        10.5,
        size=current_style().title,
    )


def show_video_frames(
    plan: VideoPlan | Any, *, fps: float | None = None, max_frames: int = 32, ax: Any = None
) -> Figure:
    """Thumbnails of the frames Gemma 4 samples, each with its timestamp and tokens.

    ``plan`` is a :class:`~gemma_explore.plans.video.VideoPlan` that holds its sampled frames,
    or any video input (planned first, with ``fps=`` for a frame array). With ``ax=`` the
    thumbnails go in a sub-grid at that axes' place.

    >>> import gemma_explore as ge
    >>> fig = show_video_frames(ge.plan_video(ge.sample_video()))
    """
    if not isinstance(plan, VideoPlan):
        plan = plan_video(plan, fps=fps, max_frames=max_frames)
    if plan.frames is None:
        raise ValueError("This plan was made from a frame count; plan the video itself.")
    st = current_style()
    n = len(plan.frame_indices)
    cols = min(6 if st.small < 12 else 4, n)  # captions stay on one line at the style's size
    rows = math.ceil(n / cols)
    h, w = plan.frame_size
    width = 11.4 if st.small >= 12 else 1.9 * cols
    height = (width / cols) * rows * h / w + 0.45 * rows * st.small / 9 + 1.2 * st.title / 11
    fig, grid = panels(ax, (width, height), rows, cols)
    for i, (frame, idx, stamp) in enumerate(
        zip(plan.frames, plan.frame_indices, plan.timestamps, strict=False)
    ):
        a = fig.add_subplot(grid[i // cols, i % cols])
        a.imshow(frame, gid="frame_thumb")
        a.set_title(f"{stamp} · #{idx} · {plan.soft_tokens_per_frame} tok", fontsize=st.small)
        a.set_xticks([])
        a.set_yticks([])
    fig.suptitle(_caption(plan, n), fontsize=st.title)
    return fig
