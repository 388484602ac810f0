"""Build it 5 · one video's timestamped expansion.

**The goal.** Gemma 4 reads a video as frames, each like a small image, and writes a
``mm:ss`` stamp before each one: frame tokens say nothing about *when*. Write the text the
processor puts in place of one ``<|video|>`` placeholder.

**The spec.** ``expand_video(frame_indices, fps, tokens_per_frame, boi=, video=, eoi=)``
returns, for each sampled frame in order, ``"mm:ss " + boi + video × tokens_per_frame +
eoi``, the frames joined by one space:

1. a frame's time is ``index / fps`` seconds; with no frame rate (``fps=None``) the
   processor assumes 24 fps;
2. ``mm`` is whole minutes and ``ss`` whole seconds, both *truncated* (never rounded)
   and written with two digits: frame 23 of a 24 fps clip is still ``00:00``.

**The check.** ``python -m gemma_explore.course.buildit check -k video_stamps`` compares
your text with transformers' own ``Gemma4Processor.replace_video_token``
(``transformers/models/gemma4/processing_gemma4.py``), on the tiny Gemma 4's processor,
for clips sampled every way, over a minute long, and without a frame rate. About 10 lines.

Once you have written it (until then it raises ``NotImplementedError``):

>>> expand_video([0, 12], 12.0, 2, boi="<", video="v", eoi=">")  # doctest: +SKIP
'00:00 <vv> 00:01 <vv>'
"""

from __future__ import annotations

__all__ = ["expand_video"]


def expand_video(
    frame_indices: list[int],
    fps: float | None,
    tokens_per_frame: int,
    *,
    boi: str,
    video: str,
    eoi: str,
) -> str:
    """The text that replaces one video placeholder: a stamp and a run per frame."""
    raise NotImplementedError("Your turn: write the timestamped expansion (see the docstring).")
