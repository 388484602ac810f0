"""Video plans: which frames a model samples, their ``mm:ss`` stamps, and the soft tokens
of each frame (Gemma 4 only).

>>> from gemma_explore.plans.video import format_timestamp
>>> format_timestamp(75.9)
'01:15'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gemma_explore.facts.families import DEFAULT_FAMILY, FAMILIES, FamilySpec, get_family
from gemma_explore.media.loaders import (
    Video,
    image_size,
    is_image_size,
    load_video,
    sample_frame_indices,
)
from gemma_explore.plans.image import ImagePlan, plan_image
from gemma_explore.plans.rules import steps_table
from gemma_explore.sizes import size_label
from gemma_explore.tables import ShownAsTable, Table

__all__ = ["VideoPlan", "format_timestamp", "plan_video", "timestamp_tokens"]

# --------------------------------------------------------------------------- video


def format_timestamp(seconds: float) -> str:
    """``mm:ss`` as Gemma 4's processor writes it (seconds truncated, not rounded)."""
    return f"{int(seconds // 60):02d}:{int(seconds % 60):02d}"


def timestamp_tokens(timestamps: tuple[str, ...] | list[str]) -> int:
    """Tokens of the text a video's frames are written with: ``"mm:ss "`` before each frame
    and one space between frames. Every character is one token: Gemma's vocabulary splits
    digits one by one, and ``:`` and ``▁`` (a space) are pieces of their own.

    >>> timestamp_tokens(("00:00", "00:01"))  # "00:00 " + " " + "00:01 "
    13
    """
    return sum(len(t) + 1 for t in timestamps) + max(len(timestamps) - 1, 0)


@dataclass(frozen=True)
class VideoPlan(ShownAsTable):
    """How a video becomes timestamped frames of soft tokens (Gemma 4 only)."""

    # The family whose rules made the plan: its facts, held, so no reader looks them up again.
    spec: FamilySpec = field(repr=False)
    num_frames: int  # frames in the video
    fps: float  # frames per second of the video
    duration_s: float
    frame_size: tuple[int, int]  # (height, width) of one frame
    frame_indices: tuple[int, ...]  # which frames are sampled
    timestamps: tuple[str, ...]  # "mm:ss" for each sampled frame
    soft_tokens_per_frame: int  # at the video budget (70)
    frame_plan: ImagePlan  # the plan of one frame
    timestamp_text: str  # the text the processor writes, soft tokens shown as ×N
    num_soft_tokens: int  # every sampled frame's soft tokens: placeholders in the prompt
    # Markers: a BOI and an EOI around each frame's soft tokens.
    num_markers: int
    # The "mm:ss " text before each frame and the space that joins frames: one token per
    # character, because Gemma's vocabulary splits digits one by one and has ":" and "▁"
    # as their own pieces (the real vocabulary and the stand-in alike; tests check both).
    num_timestamp_tokens: int
    # Everything the video adds to a prompt: soft tokens + markers + timestamps. The one
    # number every surface shows as the video's prompt tokens, equal to layout_prompt's.
    total_tokens: int
    steps: tuple[str, ...] = field(default=(), compare=False)
    # The sampled frames only, (len(frame_indices), H, W, 3) uint8, kept for figures;
    # None when planned from a frame count.
    frames: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def family(self) -> str:
        """The family's name ("gemma3n", "gemma4", "gemma4_unified"), read off ``spec``."""
        return self.spec.name

    def _rows(self) -> list[tuple[str, Any]]:
        return [
            ("frames (fps)", f"{self.num_frames} ({self.fps:g} fps, {self.duration_s:.2f} s)"),
            ("frame size", size_label(self.frame_size)),
            ("sampled", f"{len(self.frame_indices)} frames"),
            ("tokens per frame", self.soft_tokens_per_frame),
            ("soft tokens", self.num_soft_tokens),
            ("markers", self.num_markers),
            ("timestamps", self.num_timestamp_tokens),
            ("prompt tokens", self.total_tokens),
        ]

    def table(self) -> Table:
        return steps_table(f"VideoPlan — {self.family}", self._rows(), self.steps)

    def __repr__(self) -> str:
        return self.table().text()


def plan_video(
    video: Any,
    *,
    fps: float | None = None,
    frame_size: tuple[int, int] | None = None,
    family: str | FamilySpec | Any = DEFAULT_FAMILY,
    max_frames: int | None = None,
) -> VideoPlan:
    """Plan how a video becomes tokens: sampled frames, ``mm:ss`` stamps, 70 tokens each.

    ``video`` is any video input (a path, bytes, file, ``(frames, fps)``, a
    :class:`~gemma_explore.media.loaders.Video`, or a frame array with ``fps=``; files give
    their own fps), or a frame count with ``fps=`` and ``frame_size=(h, w)``.

    >>> plan = plan_video(48, fps=24, frame_size=(360, 640))
    >>> plan.timestamps[:2], plan.num_timestamp_tokens  # 32 × "mm:ss " + 31 joining spaces
    (('00:00', '00:00'), 223)
    >>> plan.total_tokens == plan.num_soft_tokens + plan.num_markers + 223
    True
    """
    spec = get_family(family)
    if not spec.has_video:
        with_video = next(f.name for f in FAMILIES.values() if f.has_video)
        raise ValueError(
            f"{spec.display_name} has no video input. Use family={with_video!r}, or send a few "
            "frames as separate images."
        )
    limit = max_frames or spec.image.max_video_frames
    frames = None
    if isinstance(video, int | np.integer) and not isinstance(video, bool):
        count = int(video)
        if frame_size is None or not is_image_size(tuple(frame_size)):
            raise ValueError("Give frame_size=(height, width) when passing a frame count.")
        size = image_size(tuple(frame_size))
    else:
        v: Video = load_video(video, fps=fps, max_frames=limit)
        count, fps, size = v.num_frames, v.fps, v.size
        frames = v.frames_at(sample_frame_indices(count, max_frames=limit))
    if count <= 0:
        raise ValueError("The video has no frames. Check the file decodes (try another codec).")
    if not fps or fps <= 0:
        raise ValueError(f"fps must be positive, got {fps!r}.")
    idx = sample_frame_indices(count, max_frames=limit)
    stamps = tuple(format_timestamp(i / fps) for i in idx)
    frame = plan_image(size, family=spec.name, max_soft_tokens=spec.image.video_budget)
    n = frame.num_soft_tokens
    stamp_tokens = timestamp_tokens(stamps)
    markers = len(idx) * spec.markers_per_item
    text = " ".join(f"{t} {spec.boi_token}{spec.video_token}×{n}{spec.eoi_token}" for t in stamps)
    steps = (
        f"{count} frames at {fps:g} fps = {count / fps:.2f} s; sample {len(idx)} of them "
        f"(at most {limit}, evenly spaced).",
        f"Each frame is an image at budget {spec.image.video_budget}: {size_label(size)} → "
        f"{size_label(frame.resized_size)} → {n} soft tokens.",
        f"Each frame is written as 'mm:ss {spec.boi_token}{spec.video_token}×n{spec.eoi_token}' "
        "(timestamp = index / fps, seconds truncated), frames joined by spaces.",
        f"Soft tokens: {len(idx)} × {n} = {len(idx) * n}; markers: {markers}; timestamps: "
        f"{stamp_tokens} (one token per character of each 'mm:ss ', plus "
        f"{max(len(idx) - 1, 0)} spaces between frames).",
        f"Prompt tokens: {len(idx) * n} + {markers} + {stamp_tokens} = "
        f"{len(idx) * n + markers + stamp_tokens}.",
    )
    return VideoPlan(
        spec=spec,
        num_frames=count,
        fps=float(fps),
        duration_s=count / fps,
        frame_size=size,
        frame_indices=tuple(idx),
        timestamps=stamps,
        soft_tokens_per_frame=n,
        frame_plan=frame,
        timestamp_text=text,
        num_soft_tokens=len(idx) * n,
        num_markers=markers,
        num_timestamp_tokens=stamp_tokens,
        total_tokens=len(idx) * n + markers + stamp_tokens,
        steps=steps,
        frames=frames,
    )
