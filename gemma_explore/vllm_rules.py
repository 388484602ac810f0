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
* **audio** (Gemma 4, ``_compute_audio_num_tokens``): mel frames from the *whole,
  unpadded* clip, ``(n + 160 − 321) // 160 + 1`` (no sample is cut: a 45 s clip is 4499
  frames), then two ``ceil(t/2)`` convolutions, and only then the cap
  ``min(t, audio_seq_length)`` (the processor's value, 750 in the released ones).
  transformers instead cuts the clip to 30 s and counts the frames of its mask after
  padding to 128 samples; both end at the same token count.
* **Gemma 4 Unified**: images and video as Gemma 4 (vLLM serves it with Gemma 4's
  processor). Audio keeps Gemma 4's *mel* count above, inherited by
  ``Gemma4UnifiedProcessingInfo``, while the embedder makes ``ceil(n / 640)`` tokens with
  no cap: vLLM's prompt is one short when ``n % 640`` is 1–160 (none at all for
  n ≤ 160) and stops at 750 above 30 s. vLLM raises nothing; its runner slices the
  surplus embeddings away (``_gather_mm_embeddings``), so the model hears less.
* **video**: each sampled frame counted like an image at budget 70.
* **Gemma 3n**: always 256 image and 188 audio placeholders; the clip's real encoder
  output is padded or cut to 188.

Nothing here imports vLLM or torch.

>>> vllm_image_tokens(3, 900, max_soft_tokens=280), vllm_image_tokens(3, 900, max_soft_tokens=280, clamp=False)
(280, 289)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .families import WRAPPER, FamilySpec, get_family
from .plans import conv_out, format_timestamp

__all__ = [
    "VLLM_COUNT_ERROR",
    "VLLM_MERGE_ERROR",
    "VLLM_REPLACE_ERROR",
    "VllmExpansion",
    "VllmVideoStamps",
    "vllm_adds_bos",
    "vllm_expand_gemma3n",
    "vllm_reexpand",
    "vllm_replacement",
    "vllm_audio_frames",
    "vllm_audio_tokens",
    "vllm_image_size",
    "vllm_image_tokens",
    "vllm_replacement_length",
    "vllm_video_timestamps",
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


def _audio_rule(spec: FamilySpec) -> FamilySpec:
    """The family whose audio arithmetic vLLM applies: Unified's processing info
    inherits Gemma 4's ``_compute_audio_num_tokens`` (mel frames, two convs, cap 750),
    although Unified's embedder makes one token per 640 raw samples."""
    return get_family(spec.vllm_audio_rule) if spec.vllm_audio_rule else spec


def vllm_audio_frames(num_samples: int, *, family: str | FamilySpec = "gemma4") -> int:
    """Mel frames vLLM's Gemma 4 count assumes (``_compute_audio_num_tokens``): the whole
    unpadded clip with the semicausal left padding, framed every hop. vLLM never cuts
    samples; only the token count is capped, later (:func:`vllm_audio_tokens`).

    >>> vllm_audio_frames(45 * 16_000)  # transformers' extractor keeps 30 s: 2999 frames
    4499
    """
    a = _audio_rule(get_family(family)).audio
    n = num_samples
    return max((n + a.frame_length // 2 - (a.frame_length + 1)) // a.hop_length + 1, 0)


def vllm_audio_tokens(
    num_samples: int,
    *,
    family: str | FamilySpec = "gemma4",
    audio_seq_length: int | None = None,
) -> int:
    """Audio placeholders vLLM reserves: Gemma 3n always 188; Gemma 4 (and Unified,
    which inherits the rule) from the unpadded length with semicausal padding and two
    stride-2 convolutions, then ``min(t, audio_seq_length)``.

    ``audio_seq_length`` is the processor's own cap (``processor.audio_seq_length``, which
    vLLM reads); without it, the released processors' value from ``families.py`` (750).

    >>> vllm_audio_tokens(800, family="gemma4_unified")  # the embedder gives ceil(800/640) = 2
    1
    >>> vllm_audio_tokens(45 * 16_000), vllm_audio_tokens(45 * 16_000, audio_seq_length=10**6)
    (750, 1125)
    """
    spec = _audio_rule(get_family(family))
    if spec.audio.fixed_placeholders is not None:
        return spec.audio.fixed_placeholders
    frames = vllm_audio_frames(num_samples, family=spec)
    if frames <= 0:
        return 0
    for _ in range(spec.audio.conv_layers):
        frames = conv_out(frames)
    cap = spec.audio.max_tokens if audio_seq_length is None else audio_seq_length
    return min(frames, cap)


def vllm_replacement_length(family: str | FamilySpec, modality: str, num_embeds: int) -> int:
    """Tokens vLLM's prompt update writes for one item: the soft tokens plus the markers
    (and, for Gemma 3n, the two ``"\\n\\n"`` wrappers, which is why vLLM's range for a
    3n image is 256 + 4 = 260 long)."""
    spec = get_family(family)
    if modality == "video":
        raise ValueError("A video's replacement interleaves timestamps; count it from a layout.")
    return num_embeds + spec.markers_per_item


# ----------------------------------------------------------------- raw prompts in vLLM


def vllm_adds_bos(family: str | FamilySpec, *, has_chat_template: bool = True) -> bool:
    """Whether ``LLM.generate({"prompt": text})`` tokenizes with ``add_special_tokens=True``,
    i.e. prepends ``<bos>`` to the text (vLLM's ``get_default_tok_params``).

    Gemma 3n keeps the base default (True), so a chat-template text that already starts
    with ``<bos>`` becomes ``[2, 2, …]``; Gemma 4 turns it off for checkpoints that ship
    a chat template. (``LLM.chat`` and the chat API never add it.)

    >>> vllm_adds_bos("gemma3n"), vllm_adds_bos("gemma4"), vllm_adds_bos("gemma4", has_chat_template=False)
    (True, False, True)
    """
    spec = get_family(family)
    return not (spec.vllm_bos_off_with_template and has_chat_template)


VLLM_COUNT_ERROR = (
    "RuntimeError: Expected there to be {n} prompt placeholders corresponding to {n} "
    "{modality} items, but instead found {found} prompt placeholders! Make sure the "
    "implementation of `_apply_hf_processor_main` and `_get_mm_fields_config` are "
    "consistent with each other."
)
VLLM_MERGE_ERROR = (
    "ValueError: Attempted to assign {expr} = {n} multimodal tokens to {slots} placeholders"
)
VLLM_REPLACE_ERROR = (
    "AssertionError: Failed to apply prompt replacement for mm_items[{modality!r}][{item}]"
)


@dataclass(frozen=True)
class VllmExpansion:
    """What vLLM's processor makes of a tokenized raw prompt (Gemma 3n's prompt updates)."""

    ids: tuple[int, ...] | None  # the expanded prompt (None when vLLM raises)
    placeholders: tuple[tuple[str, int, int], ...]  # (modality, offset, length) as vLLM finds them
    error: str | None  # the exception vLLM raises, word for word


def _replace_pairs(ids: list[int], pair: tuple[int, int], merged: int) -> list[int]:
    """Left to right, non-overlapping: every ``pair`` becomes ``merged`` (one pass)."""
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(merged)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def vllm_replacement(spec: FamilySpec, modality: str) -> list[int]:
    """Gemma 3n's fixed replacement for one item: ``"\\n\\n" BOI soft×N EOI "\\n\\n"``."""
    nl2 = spec.id_of(WRAPPER)
    if modality == "image":
        run = [spec.id_of(spec.image_token)] * spec.image.fixed_soft_tokens
        return [nl2, spec.id_of(spec.boi_token), *run, spec.id_of(spec.eoi_token), nl2]
    run = [spec.id_of(spec.audio_token)] * spec.audio.fixed_placeholders
    return [nl2, spec.id_of(spec.boa_token), *run, spec.id_of(spec.eoa_token), nl2]


def vllm_expand_gemma3n(
    spec: FamilySpec, prompt_ids: list[int], items: dict[str, int]
) -> VllmExpansion:
    """Re-derive Gemma 3n's prompt updates in vLLM, token by token.

    1. Each placeholder token becomes the item's fixed replacement (``_get_prompt_updates``).
    2. Three passes over the whole prompt merge ``"\\n"+"\\n\\n"`` → ``"\\n\\n\\n"``, then
       ``"\\n\\n"+"\\n"`` → ``"\\n\\n\\n"``, then ``"\\n\\n"+"\\n\\n"`` → ``"\\n\\n\\n\\n"`` — and
       no other pair (``_apply_token_matches``).
    3. To find each item again, a search view splits ``"\\n\\n\\n"`` into ``"\\n"``,
       ``"\\n\\n"`` and ``"\\n\\n\\n\\n"`` into ``"\\n\\n"``, ``"\\n\\n"``, then scans left to right
       for each item's whole replacement (``_find_mm_placeholders``). An item it cannot
       find makes vLLM raise (``_validate_mm_placeholders``).

    ``items`` maps modality → number of items, in the prompt's order.
    """
    targets = {m: spec.id_of(spec.placeholder_tokens[m]) for m in items}
    expanded: list[int] = []
    seen = {m: 0 for m in items}
    for tok in prompt_ids:
        modality = next((m for m, t in targets.items() if t == tok), None)
        if modality is not None and seen[modality] < items[modality]:
            expanded += vllm_replacement(spec, modality)
            seen[modality] += 1
        else:
            expanded.append(tok)
    for modality, n in items.items():
        if seen[modality] < n:
            return VllmExpansion(
                None, (), VLLM_REPLACE_ERROR.format(modality=modality, item=seen[modality])
            )
    n1, n2, n3, n4 = (spec.id_of("\n" * k) for k in (1, 2, 3, 4))
    ids = _replace_pairs(expanded, (n1, n2), n3)
    ids = _replace_pairs(ids, (n2, n1), n3)
    ids = _replace_pairs(ids, (n2, n2), n4)
    view, origin = [], []
    for i, tok in enumerate(ids):
        parts = [n1, n2] if tok == n3 else [n2, n2] if tok == n4 else [tok]
        view += parts
        origin += [i] * len(parts)
    found: list[tuple[str, int, int]] = []
    index = {m: 0 for m in items}
    p = 0
    while p < len(view) and any(index[m] < items[m] for m in items):
        for modality in items:
            if index[modality] >= items[modality]:
                continue
            repl = vllm_replacement(spec, modality)
            if view[p : p + len(repl)] == repl:
                found.append((modality, origin[p], len(repl)))
                index[modality] += 1
                p += len(repl)
                break
        else:
            p += 1
    for modality, n in items.items():
        if index[modality] != n:
            error = VLLM_COUNT_ERROR.format(n=n, modality=modality, found=index[modality])
            return VllmExpansion(None, tuple(found), error)
    return VllmExpansion(tuple(ids), tuple(found), None)


def vllm_reexpand(
    spec: FamilySpec, prompt_ids: list[int], soft_tokens: dict[str, list[int]]
) -> VllmExpansion:
    """What vLLM 0.32's processor does with ids that already hold placeholder runs (a
    hand-edited, already expanded prompt), for families with plain runs (Gemma 4).

    vLLM never looks for an expanded run first: ``apply_token_matches`` replaces the
    *first* placeholder token of each item, left to right, with a fresh run
    ``BOI + soft × n + EOI`` (``_get_prompt_updates``), and leaves every other
    placeholder token in the prompt as an ordinary text token. The run it wrote is the
    only one it finds, so embeddings and placeholders agree and nothing raises: a prompt
    with one ``<|image|>`` removed from 270 grows by the 272 tokens of a new run, keeps
    268 stray ``<|image|>`` and a second ``<|image>``.

    ``soft_tokens`` maps modality → soft tokens per item (in prompt order).

    >>> from gemma_explore.families import GEMMA4
    >>> img = GEMMA4.id_of(GEMMA4.image_token)
    >>> out = vllm_reexpand(GEMMA4, [2, img, img, 7], {"image": [3]})
    >>> len(out.ids), out.placeholders
    (8, (('image', 1, 5),))
    """
    markers = {
        "image": (spec.boi_token, spec.image_token, spec.eoi_token),
        "audio": (spec.boa_token, spec.audio_token, spec.eoa_token),
    }
    wanted: list[tuple[int, str, int]] = []  # (position in prompt_ids, modality, soft tokens)
    for modality, counts in soft_tokens.items():
        if modality not in markers:
            raise ValueError(f"vllm_reexpand covers images and audio, not {modality!r}.")
        target = spec.id_of(markers[modality][1])
        where = [i for i, t in enumerate(prompt_ids) if t == target]
        if len(where) < len(counts):
            error = VLLM_COUNT_ERROR.format(n=len(counts), modality=modality, found=len(where))
            return VllmExpansion(None, (), error)
        wanted += [(w, modality, n) for w, n in zip(where, counts, strict=False)]
    ids: list[int] = []
    found: list[tuple[str, int, int]] = []
    prev = 0
    for pos, modality, n in sorted(wanted):
        ids += prompt_ids[prev:pos]
        start, tok, end = (spec.id_of(t) for t in markers[modality])
        found.append((modality, len(ids), n + 2))
        ids += [start, *[tok] * n, end]
        prev = pos + 1
    ids += prompt_ids[prev:]
    return VllmExpansion(tuple(ids), tuple(found), None)


VLLM_VIDEO_FPS_FALLBACK = 24  # gemma4_mm.py: fps = metadata.get("fps") or 24


@dataclass(frozen=True)
class VllmVideoStamps:
    """The timestamps vLLM's Gemma 4 processor writes before each frame of a video."""

    fps: float  # the frame rate it divides by: the metadata's, or 24 when absent or 0
    fps_fell_back: bool  # the metadata had no usable fps
    frame_indices: tuple[int, ...]  # the metadata's frames_indices, or 0 … n−1
    timestamps: tuple[str, ...]  # "mm:ss" per frame, index / fps, truncated
    steps: tuple[str, ...]  # why, in words


def vllm_video_timestamps(num_frames: int, *, metadata: dict | None) -> VllmVideoStamps:
    """What vLLM's Gemma 4 processor (``_apply_hf_processor_main``) stamps on the
    ``num_frames`` frames it is given with ``metadata`` (the dict of a
    ``(frames, metadata)`` video item). vLLM encodes every frame it is given (it samples
    only when it decodes a file itself); without ``fps`` it assumes 24, and without
    ``frames_indices`` it numbers the frames 0 … n−1. A video sent with no metadata at
    all is refused by vLLM's data parser.

    >>> vllm_video_timestamps(48, metadata={}).timestamps[23:26]
    ('00:00', '00:01', '00:01')
    """
    if metadata is None:
        raise ValueError(
            "vLLM needs metadata with a video array: send (frames, {'fps': …}) so the "
            "timestamps are right (vLLM assumes 24 fps when 'fps' is missing)."
        )
    given = metadata.get("fps")
    fps = given or VLLM_VIDEO_FPS_FALLBACK
    indices = tuple(int(i) for i in metadata.get("frames_indices", range(num_frames)))
    stamps = tuple(format_timestamp(i / fps) for i in indices)
    steps = [
        f"fps {fps:g}" + ("" if given else f" (no fps in the metadata: vLLM assumes "
                                          f"{VLLM_VIDEO_FPS_FALLBACK})"),
        f"{len(indices)} frames, indices "
        + ("from the metadata" if "frames_indices" in metadata else f"0 … {num_frames - 1}")
        + f": stamps {stamps[0] if stamps else '—'} … {stamps[-1] if stamps else '—'}",
    ]  # fmt: skip
    return VllmVideoStamps(float(fps), not given, indices, stamps, tuple(steps))
