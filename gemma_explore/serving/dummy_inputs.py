"""The dummy request vLLM builds at start-up to profile memory, re-derived per family.

Before serving, vLLM runs one worst-case request through the model to measure memory.
It is made by the model file's dummy builder (``get_dummy_text`` and
``get_dummy_mm_data``; seeds ``gemma3n_mm.py``, ``gemma4_mm.py``), from the
*processor's* settings, not from any real media:

* **text**: Gemma 3n writes its placeholders bare (``<image_soft_token>`` …); Gemma 4
  and Unified write ``"\\t<|image|>"`` per image (what the chat template writes), then
  ``<|audio|>`` and ``<|video|>`` per clip and video.
* **images**: black images of the image processor's ``size`` (Gemma 3n 768×768 px; Gemma 4's
  processor has no ``size``, so vLLM falls back to 224×224 px).
* **audio**: one clip of the extractor's ``fft_length`` samples (Gemma 3n 1024, 64 ms:
  ``2 ** ceil(log2(512))`` doubled by ``fft_overdrive``; Gemma 4 512, 32 ms), else, in
  Gemma 4's ``_dummy_audio_num_samples``, ``audio_seq_length × audio_ms_per_token`` of
  samples (Unified's extractor has no ``fft_length``; reading it raised AttributeError
  before this fallback).
* **video** (Gemma 4 and Unified): 32 frames of the image size (at least 2), labelled
  2 fps, every frame kept (``do_sample_frames=False``).

>>> import gemma_explore as ge
>>> d = vllm_dummy_inputs(ge.load("tiny-gemma4"), {"image": 2, "audio": 1})
>>> d.text
'\\t<|image|>\\t<|image|><|audio|>'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gemma_explore.sizes import size_label

if TYPE_CHECKING:
    from gemma_explore.models.bundle import Bundle

__all__ = ["DummyInputs", "vllm_dummy_inputs"]

# vLLM's image size when the image processor states none (BaseDummyInputsBuilder callers).
DEFAULT_DUMMY_SIDE = 224
# gemma4_mm.py: _VIDEO_MAX_FRAMES, the ≥ 2 floor in _get_dummy_videos, and the fps label.
DUMMY_VIDEO_FRAMES = 32
DUMMY_VIDEO_MIN_FRAMES = 2
DUMMY_VIDEO_FPS = 2.0


@dataclass(frozen=True)
class DummyInputs:
    """One profiling request as vLLM's dummy builder makes it."""

    family: str
    counts: dict[str, int]  # items per modality asked for
    text: str  # get_dummy_text
    image_size: tuple[int, int] | None  # (h, w) of each dummy image / video frame
    audio_samples: int | None  # samples in each dummy clip
    video_frames: int | None  # frames in each dummy video
    video_fps: float | None  # the fps its metadata states
    video_sampled: bool | None  # do_sample_frames (False: every frame is kept)
    steps: tuple[str, ...]  # where each number comes from

    def __repr__(self) -> str:
        return "\n".join(self.steps)


def vllm_dummy_inputs(bundle: Bundle, counts: dict[str, int]) -> DummyInputs:
    """What vLLM's dummy builder for ``bundle``'s family makes for ``counts`` items
    (e.g. ``{"image": 1, "audio": 1}``), read from the bundle's processor."""
    spec = bundle.spec
    proc = bundle.processor
    n_img, n_aud, n_vid = (counts.get(m, 0) for m in ("image", "audio", "video"))
    if n_vid and not spec.video_token:
        raise ValueError(f"{spec.display_name} takes no video: drop 'video' from counts.")
    # Gemma 3n's builder writes bare placeholders; Gemma 4's (Unified inherits it) writes
    # "\t<|image|>" as the chat template does. (Lead: a families.py field would hold this.)
    prefix = "" if spec.wraps_in_newlines else "\t"
    text = (prefix + proc.image_token) * n_img
    if n_aud and getattr(proc, "audio_token", None):
        text += proc.audio_token * n_aud
    if n_vid:
        text += proc.video_token * n_vid
    size = getattr(proc.image_processor, "size", None) or {}
    h = size.get("height", DEFAULT_DUMMY_SIDE)
    w = size.get("width", DEFAULT_DUMMY_SIDE)
    steps = [f"text: {text!r} (get_dummy_text)."]
    image_size = (h, w) if (n_img or n_vid) else None
    if image_size:
        where = "the image processor's size" if size else "no size on the processor: 224 px"
        steps.append(f"images: {size_label(image_size)} ({where}).")
    audio = None
    if n_aud:
        fe = proc.feature_extractor
        fft = getattr(fe, "fft_length", None)
        if fft is not None:
            audio = int(fft)
            steps.append(f"audio: {audio} samples (the extractor's fft_length).")
        else:
            secs = proc.audio_seq_length * proc.audio_ms_per_token / 1000.0
            audio = int(secs * fe.sampling_rate)
            steps.append(
                f"audio: {audio} samples = audio_seq_length {proc.audio_seq_length} × "
                f"{proc.audio_ms_per_token} ms (no fft_length on this extractor)."
            )
    frames = fps = sampled = None
    if n_vid:
        frames, fps, sampled = (
            max(DUMMY_VIDEO_FRAMES, DUMMY_VIDEO_MIN_FRAMES),
            DUMMY_VIDEO_FPS,
            False,
        )
        steps.append(
            f"video: {frames} frames labelled {fps:g} fps, all kept (do_sample_frames=False)."
        )
    return DummyInputs(
        spec.name, dict(counts), text, image_size, audio, frames, fps, sampled, tuple(steps)
    )
