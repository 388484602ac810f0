"""vLLM's own placeholder arithmetic, re-derived in our words so it can be checked
without vLLM installed.

vLLM does not run transformers' token arithmetic when it plans placeholders: its model
files (``gemma3n_mm.py``, ``gemma4_mm.py``; the seeds in ``shared/seeds``) count their
own way. How vLLM counts, as read from those files:

* **images** (Gemma 4, ``_compute_num_soft_tokens``-style arithmetic): scale the image
  so ``(h/16)·(w/16)`` patches equal the budget × 9, round each side *down* to a
  multiple of 48 px but never below 48, count patches, divide by 9, and (since the fix
  for the 3×900 report) clamp to the budget. transformers instead gives a side that
  rounds to zero 48 px and the other ``floor(long/short)`` cells: the two can resize
  differently and, before the clamp, count differently.
* **audio** (Gemma 4): frames from the *unpadded* length, ``(n + 160 − 321) // 160 + 1``,
  then two ``ceil(t/2)`` convolutions, capped at 750. transformers counts the frames of
  its mask after padding to 128 samples.
* **video**: each sampled frame counted like an image at budget 70.
* **Gemma 3n**: always 256 image and 188 audio placeholders; the clip's real encoder
  output is padded or cut to 188.

Nothing here imports vLLM or torch.

>>> vllm_image_tokens(3, 900, max_soft_tokens=280), vllm_image_tokens(3, 900, max_soft_tokens=280, clamp=False)
(280, 289)
"""

from __future__ import annotations

import math

from .families import FamilySpec, get_family
from .plans import conv_out

__all__ = [
    "vllm_audio_frames",
    "vllm_audio_tokens",
    "vllm_image_size",
    "vllm_image_tokens",
    "vllm_replacement_length",
]


def vllm_image_size(
    height: int, width: int, *, max_soft_tokens: int, family: str | FamilySpec = "gemma4"
) -> tuple[int, int]:
    """The (h, w) vLLM's Gemma 4 count assumes: area scaled to the patch budget, each
    side floored to a multiple of one cell (48 px) with a minimum of one cell."""
    img = get_family(family).image
    patch, cell = img.patch_size, img.cell_px
    max_patches = max_soft_tokens * img.patches_per_token
    scale = math.sqrt(max_patches / ((height / patch) * (width / patch)))
    th = max(cell, int(math.floor(height * scale / cell)) * cell)
    tw = max(cell, int(math.floor(width * scale / cell)) * cell)
    return th, tw


def vllm_image_tokens(
    height: int,
    width: int,
    *,
    max_soft_tokens: int,
    clamp: bool = True,
    family: str | FamilySpec = "gemma4",
) -> int:
    """Soft tokens vLLM's Gemma 4 reserves for an image. ``clamp=False`` gives the count
    before the fix that caps it at the budget (the "280 tokens for 289 placeholders" bug)."""
    img = get_family(family).image
    th, tw = vllm_image_size(height, width, max_soft_tokens=max_soft_tokens, family=family)
    patches = (th // img.patch_size) * (tw // img.patch_size)
    n = patches // img.patches_per_token
    return min(n, max_soft_tokens) if clamp else n


def vllm_audio_frames(num_samples: int, *, family: str | FamilySpec = "gemma4") -> int:
    """Mel frames vLLM's Gemma 4 count assumes: the unpadded clip (cut to 30 s) with the
    semicausal left padding, framed every hop."""
    a = get_family(family).audio
    n = min(num_samples, a.max_samples)
    return max((n + a.frame_length // 2 - (a.frame_length + 1)) // a.hop_length + 1, 0)


def vllm_audio_tokens(num_samples: int, *, family: str | FamilySpec = "gemma4") -> int:
    """Audio placeholders vLLM reserves: Gemma 3n always 188; Gemma 4 from the unpadded
    length with semicausal padding and two stride-2 convolutions, capped at 750."""
    spec = get_family(family)
    if spec.audio.fixed_placeholders is not None:
        return spec.audio.fixed_placeholders
    frames = vllm_audio_frames(num_samples, family=spec)
    if frames <= 0:
        return 0
    for _ in range(spec.audio.conv_layers):
        frames = conv_out(frames)
    return min(frames, spec.audio.max_tokens)


def vllm_replacement_length(family: str | FamilySpec, modality: str, num_embeds: int) -> int:
    """Tokens vLLM's prompt update writes for one item: the soft tokens plus the markers
    (and, for Gemma 3n, the two ``"\\n\\n"`` wrappers, which is why vLLM's range for a
    3n image is 256 + 4 = 260 long)."""
    spec = get_family(family)
    if modality == "video":
        raise ValueError("A video's replacement interleaves timestamps; count it from a layout.")
    return num_embeds + spec.markers_per_item
