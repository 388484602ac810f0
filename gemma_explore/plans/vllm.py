"""vLLM's own placeholder arithmetic, re-derived in our words so it can be checked
without vLLM installed.

vLLM does not run transformers' token arithmetic when it plans placeholders: its model
files (``vllm/model_executor/models/gemma3n_mm.py`` and ``gemma4_mm.py``) count their own
way, and the counting code is the same in every vLLM release the package supports. How
vLLM counts, as read from those files:

* **images** (Gemma 4, ``_compute_num_soft_tokens``-style arithmetic): scale the image
  so ``(h/16)·(w/16)`` patches equal the budget × 9, round each side *down* to a
  multiple of 48 px but never below 48, count patches, divide by 9, and (since the fix
  for the 3×900 report) clamp to the budget. transformers instead gives a side that
  rounds to zero 48 px and the other ``floor(long/short)`` cells, capped at the budget's
  cells (``get_aspect_ratio_preserving_size``'s ``max_side_length``: 3×900 at 280 gives
  280 cells, not 300): the two can resize differently and, before the clamp, count
  differently.
* **audio** (Gemma 4, ``_compute_audio_num_tokens``): the placeholder count takes mel
  frames from the *whole, unpadded* clip, ``(n + 160 − 321) // 160 + 1`` (this
  arithmetic alone sees every sample: a 45 s clip counts 4499 frames), then two
  ``ceil(t/2)`` convolutions, and only then the cap ``min(t, audio_seq_length)`` (the
  processor's value, 750 in the released ones). The features the tower receives are
  transformers' extractor's, which keeps the first 30 s (2999 real frames) and counts
  the frames of its mask after padding to 128 samples: both end at the same token count,
  and the model hears no more than 30 s. Past ``audio_seq_length × 40 ms`` vLLM only
  logs "Audio duration exceeds max: … > … seconds" (:func:`vllm_audio_warning`).
* **Gemma 4 Unified**: images and video as Gemma 4 (vLLM serves it with Gemma 4's
  processor). Audio keeps Gemma 4's *mel* count above, inherited by
  ``Gemma4UnifiedProcessingInfo``, while the embedder makes ``ceil(n / 640)`` tokens with
  no cap: vLLM's prompt is one short when ``n % 640`` is 1–160 (none at all for
  n ≤ 160) and stops at 750 above 30 s. vLLM raises nothing; its runner slices the
  surplus embeddings away (``_gather_mm_embeddings``), so the model hears less.
* **video**: each sampled frame counted like an image at budget 70.
* **video fields** (``_get_mm_fields_config``): every frame of every video in one flat
  pixel tensor, split back per video by ``video_frame_counts`` (``flat_from_sizes``);
  the counts, soft tokens per frame and timestamps kept on the CPU; the tower returns one
  embedding tensor per video (:func:`vllm_video_fields`).
* **Gemma 3n**: always 256 image and 188 audio placeholders; the clip's real encoder
  output is padded or cut to 188.
* **precomputed image embeddings** are refused (:func:`vllm_image_embeds_error`).

Nothing here imports vLLM or torch.

>>> vllm_image_tokens(3, 900, max_soft_tokens=280), vllm_image_tokens(3, 900, max_soft_tokens=280, clamp=False)
(280, 289)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gemma_explore.facts.families import (
    DEFAULT_FAMILY,
    MAX_NEWLINE_RUN,
    NEWLINE_BASE_ID,
    WRAPPER,
    FamilySpec,
    get_family,
)
from gemma_explore.plans.audio import conv_out
from gemma_explore.plans.video import format_timestamp

__all__ = [
    "Divergence",
    "VLLM_AUDIO_TOO_LONG",
    "VLLM_IMAGE_EMBEDS_ERROR",
    "VLLM_MM_EMBEDS_FLAG_ERROR",
    "VLLM_VIDEO_FIELDS",
    "VllmVideoFields",
    "vllm_audio_warning",
    "vllm_image_embeds_error",
    "vllm_video_fields",
    "VLLM_COUNT_ERROR",
    "VLLM_SEARCH_SPLITS",
    "VIDEO_FRAME_EXTRA_TOKENS",
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
    "vllm_raw_divergences",
    "vllm_replacement_length",
    "vllm_video_timestamps",
    "vllm_search_parts",
    "vllm_video_tokens",
    "newlines_in",
]


# The view vLLM's Gemma 3n placeholder search takes of a merged newline token
# (gemma3n_mm.py _find_mm_placeholders): "\n\n\n" is read as "\n" + "\n\n" and
# "\n\n\n\n" as "\n\n" + "\n\n"; every other token stays whole.
VLLM_SEARCH_SPLITS = {3: ("\n", "\n\n"), 4: ("\n\n", "\n\n")}


def newlines_in(token_id: int) -> int:
    """How many newlines a token id stands for (Gemma's vocabulary has one token per run
    of 1 … 31 newlines), 0 for any other token.

    >>> newlines_in(NEWLINE_BASE_ID + 3), newlines_in(2)
    (3, 0)
    """
    k = token_id - NEWLINE_BASE_ID
    return k if 1 <= k <= MAX_NEWLINE_RUN else 0


def vllm_search_parts(newlines: int) -> tuple[str, ...]:
    r"""The strings vLLM's placeholder search sees in a token of ``newlines`` newlines.

    >>> vllm_search_parts(3), vllm_search_parts(5)
    (('\n', '\n\n'), ('\n\n\n\n\n',))
    """
    return VLLM_SEARCH_SPLITS.get(newlines, ("\n" * newlines,))


def vllm_image_size(
    height: int,
    width: int,
    *,
    max_soft_tokens: int,
    family: str | FamilySpec | Any = DEFAULT_FAMILY,
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
    family: str | FamilySpec | Any = DEFAULT_FAMILY,
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


def vllm_audio_frames(num_samples: int, *, family: str | FamilySpec | Any = DEFAULT_FAMILY) -> int:
    """Mel frames vLLM's Gemma 4 *placeholder count* assumes (``_compute_audio_num_tokens``):
    the whole unpadded clip with the semicausal left padding, framed every hop. Only this
    arithmetic sees every sample, and only its token count is capped, later
    (:func:`vllm_audio_tokens`); the frames the tower gets are transformers' extractor's,
    which stops at 30 s (2999 real frames).

    >>> vllm_audio_frames(45 * 16_000)  # the tower's features: 30 s, 2999 frames
    4499
    """
    a = _audio_rule(get_family(family)).audio
    n = num_samples
    return max((n + a.frame_length // 2 - (a.frame_length + 1)) // a.hop_length + 1, 0)


def vllm_audio_tokens(
    num_samples: int,
    *,
    family: str | FamilySpec | Any = DEFAULT_FAMILY,
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


# gemma4_mm.py _call_hf_processor's logger.warning for a clip longer than the processor's
# audio_seq_length × audio_ms_per_token: vLLM's only notice (it raises nothing).
VLLM_AUDIO_TOO_LONG = "Audio duration exceeds max: %f > %f seconds"


def vllm_audio_warning(
    num_samples: int,
    *,
    family: str | FamilySpec | Any = DEFAULT_FAMILY,
    audio_seq_length: int | None = None,
) -> str | None:
    """The line vLLM's Gemma 4 processor logs for a clip of ``num_samples`` (16 kHz), or
    None. It compares the clip with ``audio_seq_length × audio_ms_per_token`` (750 × 40 ms
    = 30 s in the released processors), warns, and goes on: the count is capped at 750 and
    the extractor keeps 30 s. Gemma 3n's processor has no such warning.

    >>> vllm_audio_warning(45 * 16_000)
    'Audio duration exceeds max: 45.000000 > 30.000000 seconds'
    >>> vllm_audio_warning(30 * 16_000) is None, vllm_audio_warning(45 * 16_000, family="gemma3n")
    (True, None)
    """
    spec = get_family(family)
    if spec.audio.fixed_placeholders is not None:
        return None
    cap = spec.audio.max_tokens if audio_seq_length is None else audio_seq_length
    max_s = cap * spec.audio.ms_per_token / 1000.0
    seconds = num_samples / spec.audio.sampling_rate
    return VLLM_AUDIO_TOO_LONG % (seconds, max_s) if seconds > max_s else None


# How gemma4_mm.py's _get_mm_fields_config ships a video's tensors to the model: field →
# (MultiModalFieldConfig kind, keep_on_cpu).
VLLM_VIDEO_FIELDS: dict[str, tuple[str, bool]] = {
    # every frame of every video stacked in one tensor, cut per video by the frame counts
    "pixel_values_videos": ("flat_from_sizes", False),
    "pixel_position_ids_videos": ("flat_from_sizes", False),
    # one entry per video, left on the CPU: _process_video_input turns the counts into
    # Python ints to batch the frames, which on the GPU would be a device sync
    "video_frame_counts": ("batched", True),
    "video_num_soft_tokens": ("batched", True),
    "video_timestamps": ("batched", True),
}


@dataclass(frozen=True)
class VllmVideoFields:
    """How vLLM hands the videos of one request to Gemma 4's model."""

    frame_counts: tuple[int, ...]  # video_frame_counts: frames per video
    frame_slices: tuple[tuple[int, int], ...]  # each video's [start, stop) in the flat frames
    embedding_rows: tuple[int, ...]  # rows of the one embedding tensor per video
    fields: dict[str, tuple[str, bool]]  # VLLM_VIDEO_FIELDS: field → (kind, keep_on_cpu)
    steps: tuple[str, ...]  # why, in words


def vllm_video_fields(soft_tokens_per_frame: list[list[int]]) -> VllmVideoFields:
    """vLLM's video fields for videos whose frames make ``soft_tokens_per_frame`` soft
    tokens each (70 or fewer per frame; ``video_num_soft_tokens``).

    >>> f = vllm_video_fields([[63] * 3, [63] * 5])
    >>> f.frame_slices, f.embedding_rows
    (((0, 3), (3, 8)), (189, 315))
    """
    counts = tuple(len(frames) for frames in soft_tokens_per_frame)
    starts = [sum(counts[:i]) for i in range(len(counts))]
    slices = tuple((a, a + n) for a, n in zip(starts, counts, strict=True))
    rows = tuple(sum(frames) for frames in soft_tokens_per_frame)
    flat = [k for k, (kind, _) in VLLM_VIDEO_FIELDS.items() if kind == "flat_from_sizes"]
    cpu = [k for k, (_, on_cpu) in VLLM_VIDEO_FIELDS.items() if on_cpu]
    steps = (
        f"{', '.join(flat)}: all {sum(counts)} frames in one tensor, split per video by "
        f"video_frame_counts {list(counts)} (flat_from_sizes): frames {list(slices)}.",
        f"{', '.join(cpu)}: one entry per video, kept on the CPU (keep_on_cpu=True): the "
        "counts drive the frame batching in Python.",
        f"the tower returns one embedding tensor per video, its frames' soft tokens "
        f"concatenated: {list(rows)} rows.",
    )
    return VllmVideoFields(counts, slices, rows, dict(VLLM_VIDEO_FIELDS), steps)


# What vLLM answers for precomputed image embeddings: without --enable-mm-embeds its data
# parser refuses them (multimodal/processing/context.py parse_mm_data); with it, the model
# class does (_parse_and_validate_image_input's assert).
VLLM_MM_EMBEDS_FLAG_ERROR = "You must set `--enable-mm-embeds` to input `image_embeds`"
VLLM_IMAGE_EMBEDS_ERROR = "{model} does not support image_embeds."


def vllm_image_embeds_error(
    family: str | FamilySpec | Any = DEFAULT_FAMILY, *, enable_mm_embeds: bool = False
) -> str:
    """What vLLM says to an ``image_embeds`` input (a tensor instead of pixels): every
    Gemma family is refused; only the words depend on ``--enable-mm-embeds``. Send images
    as pixels instead.

    >>> vllm_image_embeds_error("gemma3n", enable_mm_embeds=True)
    'Gemma3n does not support image_embeds.'
    """
    if not enable_mm_embeds:
        return VLLM_MM_EMBEDS_FLAG_ERROR
    # Unified's vLLM class inherits Gemma4ForConditionalGeneration's check and its words
    # (as it inherits Gemma 4's audio count: vllm_audio_rule).
    spec = _audio_rule(get_family(family))
    return VLLM_IMAGE_EMBEDS_ERROR.format(
        model=spec.classes.model.removesuffix("ForConditionalGeneration")
    )


# gemma4_mm.py's estimate of the tokens around each video frame: BOI + EOI + ~6 for the
# "mm:ss " timestamp.
VIDEO_FRAME_EXTRA_TOKENS = 2 + 6


def vllm_video_tokens(
    num_frames: int | None = None, *, family: str | FamilySpec | Any = DEFAULT_FAMILY
) -> int:
    """The worst case vLLM states for one video (``get_mm_max_tokens_per_item``): frames
    (``num_frames``, capped at the family's maximum; the maximum when None) × (the video
    budget + the markers and timestamp around each frame).

    >>> vllm_video_tokens(4)
    312
    """
    img = get_family(family).image
    frames = min(img.max_video_frames, num_frames or img.max_video_frames)
    return frames * (img.video_budget + VIDEO_FRAME_EXTRA_TOKENS)


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
        k = newlines_in(tok)
        parts = [spec.id_of(part) for part in vllm_search_parts(k)] if k else [tok]
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
    """What vLLM's processor does with ids that already hold placeholder runs (a
    hand-edited, already expanded prompt), for families with plain runs (Gemma 4); the
    same in every supported release (``multimodal/processing/processor.py``).

    vLLM never looks for an expanded run first: ``apply_token_matches`` replaces the
    *first* placeholder token of each item, left to right, with a fresh run
    ``BOI + soft × n + EOI`` (``_get_prompt_updates``), and leaves every other
    placeholder token in the prompt as an ordinary text token. The run it wrote is the
    only one it finds, so embeddings and placeholders agree and nothing raises: a prompt
    with one ``<|image|>`` removed from 270 grows by the 272 tokens of a new run, keeps
    268 stray ``<|image|>`` and a second ``<|image>``.

    ``soft_tokens`` maps modality → soft tokens per item (in prompt order).

    >>> from gemma_explore.facts.families import GEMMA4
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
        f"fps {fps:g}"
        + ("" if given else f" (no fps in the metadata: vLLM assumes {VLLM_VIDEO_FPS_FALLBACK})"),
        f"{len(indices)} frames, indices "
        + ("from the metadata" if "frames_indices" in metadata else f"0 … {num_frames - 1}")
        + f": stamps {stamps[0] if stamps else '—'} … {stamps[-1] if stamps else '—'}",
    ]
    return VllmVideoStamps(float(fps), not given, indices, stamps, tuple(steps))


@dataclass(frozen=True)
class Divergence:
    """Where vLLM's processor and transformers' part: a raw Gemma 3n prompt's newlines,
    or a Unified clip that vLLM counts with Gemma 4's mel rule."""

    rule: str  # what happens, in words
    seed_function: str  # where vLLM does it (gemma3n_mm.py)
    position: int  # index in the layout's input_ids where they part
    vllm_ids: tuple[int, ...] | None  # vLLM's tokens there (None: vLLM raises)
    transformers_ids: tuple[int, ...]  # transformers' tokens there
    error: str | None = None  # what vLLM raises, word for word


# ----------------------------------------------------- raw prompts: where vLLM parts

_SEED = "gemma3n_mm.py"
_MERGES = "'\\n'+'\\n\\n', '\\n\\n'+'\\n' and '\\n\\n'+'\\n\\n'"


@dataclass(frozen=True)
class _Around:
    """The newline runs around one placeholder token of a raw prompt."""

    modality: str
    item: int
    before: int  # newlines in the token right before it (0 if not a newline run)
    after: int  # newlines in the token right after it
    next_is_item: bool  # only newlines stand between it and the next placeholder


def _around_placeholders(spec: FamilySpec, prompt_ids: list[int]) -> list[_Around]:
    targets = {spec.id_of(t): m for m, t in spec.placeholder_tokens.items()}
    out, counts = [], dict.fromkeys(spec.placeholder_tokens, 0)
    for p, tok in enumerate(prompt_ids):
        if tok not in targets:
            continue
        modality = targets[tok]
        before = newlines_in(prompt_ids[p - 1]) if p > 0 else 0
        after = newlines_in(prompt_ids[p + 1]) if p + 1 < len(prompt_ids) else 0
        q = p + 1
        while q < len(prompt_ids) and newlines_in(prompt_ids[q]):
            q += 1
        next_is_item = q < len(prompt_ids) and prompt_ids[q] in targets and q > p + 1
        out.append(_Around(modality, counts[modality], before, after, next_is_item))
        counts[modality] += 1
    return out


def _runs(spec: FamilySpec, ids: list[int]) -> list[tuple[int, int]]:
    """(opener, closer) positions of each item's marker-delimited run."""
    openers = {spec.id_of(spec.boi_token), spec.id_of(spec.boa_token)}
    closers = {spec.id_of(spec.eoi_token), spec.id_of(spec.eoa_token)}
    out, start = [], None
    for p, tok in enumerate(ids):
        if tok in openers:
            start = p
        elif tok in closers and start is not None:
            out.append((start, p))
            start = None
    return out


def _gap_rule(around: list[_Around], gap: int) -> str:
    """Why the tokens between item ``gap - 1`` and item ``gap`` differ."""
    prev = around[gap - 1] if gap > 0 else None
    nxt = around[gap] if gap < len(around) else None
    if prev is not None and nxt is not None and prev.next_is_item:
        return (
            f"Newlines between {prev.modality} #{prev.item} and {nxt.modality} #{nxt.item}: vLLM "
            "expands both items first, then merges the wrappers with the newlines between "
            f"them pairwise, left to right (only {_MERGES}); transformers expands the text and "
            "tokenizes the whole run as one token."
        )
    rules = []
    if prev is not None and prev.after >= 3:
        rules.append(
            f"{prev.after} newlines after the {prev.modality} placeholder: vLLM merges only "
            f"{_MERGES} after expansion, so the closing '\\n\\n' and the {prev.after} newlines "
            f"stay two tokens; transformers tokenizes one run of {prev.after + 2}."
        )
    if nxt is not None and nxt.before >= 3:
        rules.append(
            f"{nxt.before} newlines before the {nxt.modality} placeholder: vLLM merges only "
            f"{_MERGES} after expansion, so they and the opening '\\n\\n' stay two tokens; "
            f"transformers tokenizes one run of {nxt.before + 2}."
        )
    return " ".join(rules) or (
        f"vLLM merges only {_MERGES} after expansion; transformers tokenizes the expanded "
        "text, so the newline tokens here differ."
    )


def _window(ids: list[int], start: int, stop: int) -> tuple[int, ...]:
    return tuple(ids[max(start - 1, 0) : stop + 1])


def _gap_divergences(
    spec: FamilySpec, v_ids: list[int], t_ids: list[int], around: list[_Around]
) -> tuple[Divergence, ...]:
    v_runs, t_runs = _runs(spec, v_ids), _runs(spec, t_ids)
    bounds_v = [-1] + [c for _, c in v_runs], [o for o, _ in v_runs] + [len(v_ids)]
    bounds_t = [-1] + [c for _, c in t_runs], [o for o, _ in t_runs] + [len(t_ids)]
    out = []
    for gap, (vs, ve, ts, te) in enumerate(zip(*bounds_v, *bounds_t, strict=True)):
        v_gap, t_gap = v_ids[vs + 1 : ve], t_ids[ts + 1 : te]
        if v_gap == t_gap:
            continue
        head = 0
        while head < min(len(v_gap), len(t_gap)) and v_gap[head] == t_gap[head]:
            head += 1
        tail = 0
        while (
            tail < min(len(v_gap), len(t_gap)) - head
            and v_gap[len(v_gap) - 1 - tail] == t_gap[len(t_gap) - 1 - tail]
        ):
            tail += 1
        v_at, t_at = vs + 1 + head, ts + 1 + head
        out.append(
            Divergence(
                rule=_gap_rule(around, gap),
                seed_function=f"{_SEED}: _apply_token_matches",
                position=v_at,
                vllm_ids=_window(v_ids, v_at, ve - tail),
                transformers_ids=_window(t_ids, t_at, te - tail),
            )
        )
    return tuple(out)


def vllm_raw_divergences(
    spec: FamilySpec, prompt_ids: list[int], transformers_ids: list[int], items: dict[str, int]
) -> tuple[list[int], tuple[Divergence, ...], tuple[tuple[str, int, int], ...] | None]:
    """vLLM's ids for a raw prompt of a family that wraps items in newlines (Gemma 3n),
    and where they differ from transformers' ids for the same prompt.

    ``prompt_ids`` is the text as vLLM tokenizes it (:func:`vllm_adds_bos`), ``items``
    modality → items in the prompt. Returns (the ids to lay out: vLLM's, or transformers'
    when vLLM raises; the divergences; vLLM's (modality, offset, length) ranges, or None
    when the ids agree and transformers' walk finds them)."""
    expansion = vllm_expand_gemma3n(spec, prompt_ids, items)
    t_ids = list(transformers_ids)
    around = _around_placeholders(spec, prompt_ids)
    if expansion.error is not None:
        # The item whose closing wrapper vLLM loses: a lone "\n" after it, unless another
        # placeholder follows at once (then "\n" + "\n\n" merge first and nothing is lost).
        lost = next((a for a in around if a.after == 1 and not a.next_is_item), None)
        runs = _runs(spec, t_ids)
        index = around.index(lost) if lost is not None else 0
        closer = runs[index][1] if index < len(runs) else 0
        rule = (
            f"A single '\\n' right after {lost.modality} #{lost.item}'s placeholder: vLLM merges "
            "the closing "
            "'\\n\\n' with it into '\\n\\n\\n', then its placeholder search always splits "
            "'\\n\\n\\n' as '\\n' + '\\n\\n', so it never finds the closing wrapper and raises. "
            "transformers runs. Write no newline or two ('\\n\\n') after the placeholder."
            if lost is not None and lost.after == 1
            else "vLLM cannot find every item's replacement in its expanded prompt."
        )
        divergence = Divergence(
            rule=rule,
            seed_function=f"{_SEED}: _apply_token_matches, _find_mm_placeholders",
            position=closer,
            vllm_ids=None,
            transformers_ids=tuple(t_ids[closer : closer + 2]),
            error=expansion.error,
        )
        return t_ids, (divergence,), ()
    v_ids = list(expansion.ids)
    if v_ids == t_ids:
        return t_ids, (), expansion.placeholders
    return v_ids, _gap_divergences(spec, v_ids, t_ids, around), expansion.placeholders
