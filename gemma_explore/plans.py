"""Plans: how many tokens an image, clip or video becomes, and why — pure arithmetic.

Each ``plan_*`` function re-derives, in plain Python, what the transformers processors
do, and writes the derivation out as ``steps``. The tests prove the numbers equal the
real processors' (and the real encoders' output lengths). Nothing here imports torch.

>>> from gemma_explore import plan_image
>>> plan = plan_image((1080, 1920), family="gemma4", max_soft_tokens=280)
>>> plan.resized_size, plan.num_soft_tokens
((576, 1056), 264)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import renamed
from .families import DEFAULT_FAMILY, FAMILIES, FamilySpec, get_family
from .media import (
    Video,
    image_size,
    is_image_size,
    load_audio,
    load_video,
    sample_frame_indices,
)
from .results import Rule
from .sizes import size_label
from .tables import Table

__all__ = [
    "AudioPlan",
    "ImagePlan",
    "VideoPlan",
    "check_budget",
    "conv_out",
    "family_spec",
    "format_timestamp",
    "gemma4_resized_size",
    "plan_audio",
    "plan_image",
    "plan_video",
    "require_budget",
    "sample_frame_indices",
]


# --------------------------------------------------------------------------- helpers


def _table(title: str, rows: list[tuple[str, Any]], steps: tuple[str, ...]) -> Table:
    return Table((), tuple(rows), title=title, notes=steps, notes_title="steps")


def family_spec(family: str | FamilySpec | Any = DEFAULT_FAMILY) -> FamilySpec:
    """The spec of a family given by name, as a :class:`FamilySpec`, or as anything that
    carries one (a loaded ``Bundle``, a ``ServingModel``): how every ``family=`` reads.

    >>> family_spec().name == DEFAULT_FAMILY.name, family_spec("3n").name
    (True, 'gemma3n')
    """
    return get_family(getattr(family, "spec", family))


def require_budget(
    max_soft_tokens: int | None,
    *,
    family: str | FamilySpec | Any = DEFAULT_FAMILY,
    what: str = "image",
) -> int:
    """The one check of an image budget: the family's default when None, else one of its
    allowed budgets; raises a ``ValueError`` that says what to pass otherwise (also for a
    family with no budget at all). Returns the clean ``int``.

    Every caller that takes a ``max_soft_tokens`` validates it here (plans, prompts,
    ``plan_serving``, vLLM's engine arguments, the bills, the encoder batches).

    >>> require_budget(None, family="gemma4"), require_budget(560, family="gemma4")
    (280, 560)
    """
    spec = family_spec(family)
    img = spec.image
    if not img.budgets:
        raise ValueError(
            f"{spec.display_name} has no image budget: every {what} becomes "
            f"{img.fixed_soft_tokens} soft tokens. Drop max_soft_tokens."
        )
    if max_soft_tokens is None:
        return img.default_budget
    if isinstance(max_soft_tokens, bool) or not isinstance(max_soft_tokens, int | np.integer):
        raise ValueError(
            f"max_soft_tokens must be one of {list(img.budgets)}, got {max_soft_tokens!r}."
        )
    if int(max_soft_tokens) not in img.budgets:
        raise ValueError(
            f"max_soft_tokens must be one of {list(img.budgets)} for {spec.display_name} (soft "
            f"tokens per {what}), got {max_soft_tokens}. Choose one of them (default "
            f"{img.default_budget})."
        )
    return int(max_soft_tokens)


def _check_budget_old_order(
    spec: FamilySpec, max_soft_tokens: int | None = None, *, what: str = "image"
) -> int:
    return require_budget(max_soft_tokens, family=spec, what=what)


_check_budget_old_order.__name__ = "require_budget"  # the name the warning tells you to use
check_budget = renamed(_check_budget_old_order, "check_budget")


def conv_out(frames: int) -> int:
    """Output length of a kernel-3, stride-2 conv with 2 frames of padding: ceil(t/2)."""
    return (frames + 2 - 3) // 2 + 1


# --------------------------------------------------------------------------- images


@dataclass(frozen=True)
class ImagePlan:
    """How one image becomes soft tokens. Sizes are (height, width) in pixels."""

    family: str  # "gemma3n", "gemma4" or "gemma4_unified"
    original_size: tuple[int, int]  # what the user gave
    resized_size: tuple[int, int]  # what the vision tower sees (3n: always 768×768)
    patch_size: int  # px per patch side (3n: px per output cell of MobileNet-V5)
    patch_grid: tuple[int, int]  # patches per column, per row
    pooling_kernel: int  # patches per pooled cell side (4: 3; 3n: 1, no pooling step)
    pooled_grid: tuple[int, int]  # soft-token cells per column, per row
    num_patches: int  # real patches the encoder sees
    max_patches: int  # 16 px patches the budget allows (4: rows of pixel_values, budget × 9)
    num_padding_patches: int  # padded rows, position id (-1, -1)
    num_soft_tokens: int  # embeddings the encoder keeps = placeholders in the prompt
    max_soft_tokens: int | None  # Gemma 4's budget; None for 3n
    num_padding_soft_tokens: int  # pooled slots the pooler marks invalid
    total_tokens: int  # prompt tokens: markers + soft tokens (+ 3n's "\n\n" wrappers)
    token_area: tuple[float, float]  # px of the *original* image one soft token covers
    steps: tuple[str, ...] = field(default=(), compare=False)  # the derivation, in words
    # The pixels the plan was made from (a PIL image or array), kept so a figure can draw
    # them without loading the image again; None when planned from a size or a file header.
    image: Any = field(default=None, compare=False, repr=False)

    def _rows(self) -> list[tuple[str, Any]]:
        return [
            ("original", size_label(self.original_size)),
            ("resized", size_label(self.resized_size)),
            ("patch grid", size_label(self.patch_grid, unit=f"patches of {self.patch_size} px")),
            ("pooled grid", size_label(self.pooled_grid, unit="cells")),
            ("patches / max", f"{self.num_patches} / {self.max_patches}"),
            ("padding patches", self.num_padding_patches),
            ("soft tokens", self.num_soft_tokens),
            ("budget", self.max_soft_tokens),
            ("prompt tokens", self.total_tokens),
        ]

    def table(self) -> Table:
        return _table(f"ImagePlan — {self.family}", self._rows(), self.steps)

    def __repr__(self) -> str:
        return self.table().text()

    def _repr_html_(self) -> str:
        return self.table().html()


def gemma4_resized_size(
    height: int, width: int, *, patch_size: int, pooling_kernel: int, max_soft_tokens: int
) -> tuple[int, int]:
    """Gemma 4's aspect-preserving target size, derived in our own words.

    Scale the image so its area is the patch budget (``max_soft_tokens × 9`` patches of
    16×16 px), then round each side *down* to a multiple of 48 px (one pooled cell).
    A side that rounds to zero becomes one cell, and the other side is then
    ``floor(long / short)`` cells, capped at the budget — so a 3×900 strip becomes
    48 × (280 × 48) px at budget 280, never more tokens than the budget.
    """
    cell = patch_size * pooling_kernel  # 48 px: one soft token's side
    budget_px = max_soft_tokens * pooling_kernel**2 * patch_size**2
    scale = math.sqrt(budget_px / (height * width))
    th = int(math.floor(height * scale / cell)) * cell
    tw = int(math.floor(width * scale / cell)) * cell
    longest = max_soft_tokens * cell  # a one-cell-high strip holds at most the budget
    if th == 0:
        th, tw = cell, min(int(math.floor(width / height)) * cell, longest)
    elif tw == 0:
        th, tw = min(int(math.floor(height / width)) * cell, longest), cell
    return th, tw


def _prompt_rule(spec: FamilySpec, n: int, modality: str = "image") -> Rule[int]:
    """Prompt tokens of one item: its placeholders and markers (and 3n's wrappers)."""
    opener, token, closer = (
        (spec.boi_token, spec.image_token, spec.eoi_token)
        if modality == "image"
        else (spec.boa_token, spec.audio_token, spec.eoa_token)
    )
    total = n + spec.markers_per_item
    run = f"{opener} + {token}×{n} + {closer}"
    if spec.wraps_in_newlines:
        return Rule(
            total,
            f'Prompt: "\\n\\n" {run} "\\n\\n" = {total} tokens (the "\\n\\n" may merge with '
            "neighbouring newlines).",
        )
    return Rule(total, f"Prompt: {run} = {total} tokens.")


# -- images of a family with one fixed size (Gemma 3n) --------------------------------


def _squash_rule(spec: FamilySpec, h: int, w: int) -> Rule[tuple[int, int]]:
    """Every image is squashed to the family's fixed size, aspect ratio not kept."""
    rh, rw = spec.image.fixed_size
    return Rule(
        (rh, rw),
        f"Squash {size_label((h, w))} to {size_label((rh, rw))} (aspect ratio not kept; "
        f"x-scale {rw / w:.3g}, y-scale {rh / h:.3g}); rescale pixels by 1/255, no "
        "normalisation.",
    )


def _cell_grid_rule(spec: FamilySpec, size: tuple[int, int]) -> Rule[tuple[int, int]]:
    """The tower's output grid: one soft token per ``patch_size`` px cell of the squash."""
    p = spec.image.patch_size
    grid = (size[0] // p, size[1] // p)
    n = grid[0] * grid[1]
    return Rule(
        grid,
        f"The {spec.image_encoder} gives one soft token per {p}×{p} px cell: a grid of "
        f"{size_label(grid, unit='cells')} = {n} soft tokens, always.",
    )


def _cell_area_rule(
    spec: FamilySpec, h: int, w: int, grid: tuple[int, int]
) -> Rule[tuple[float, float]]:
    """Pixels of the original image one soft token covers."""
    p = spec.image.patch_size
    area = (h / grid[0], w / grid[1])
    return Rule(
        area,
        f"One soft token covers {p}×{p} px of the squash = {size_label(area)} of the original.",
    )


def _plan_fixed_image(spec: FamilySpec, h: int, w: int, pixels: Any) -> ImagePlan:
    size = _squash_rule(spec, h, w)
    grid = _cell_grid_rule(spec, size.value)
    area = _cell_area_rule(spec, h, w, grid.value)
    n = grid.value[0] * grid.value[1]
    prompt = _prompt_rule(spec, n)
    return ImagePlan(
        family=spec.name,
        original_size=(h, w),
        resized_size=size.value,
        patch_size=spec.image.patch_size,
        patch_grid=grid.value,
        pooling_kernel=1,
        pooled_grid=grid.value,
        num_patches=n,
        max_patches=n,
        num_padding_patches=0,
        num_soft_tokens=n,
        max_soft_tokens=None,
        num_padding_soft_tokens=0,
        total_tokens=prompt.value,
        token_area=area.value,
        steps=(size.step, grid.step, area.step, prompt.step),
        image=pixels,
    )


# -- images of a family with budgets (Gemma 4, Unified) --------------------------------


def _patch_budget_rule(spec: FamilySpec, budget: int) -> Rule[int]:
    """Patches the budget allows: budget × (patches per soft token)."""
    img = spec.image
    p, k = img.patch_size, img.pooling_kernel
    max_patches = budget * img.patches_per_token
    return Rule(
        max_patches,
        f"Budget {budget} soft tokens × {k}×{k} patches = {max_patches} patches of {p}×{p} px "
        f"= {max_patches * p * p:,} px.",
    )


def _aspect_resize_rule(
    spec: FamilySpec, h: int, w: int, budget: int, max_patches: int
) -> Rule[tuple[int, int]]:
    """Scale the area to the patch budget, each side floored to whole cells
    (:func:`gemma4_resized_size`); a side that rounds to 0 becomes one cell."""
    img = spec.image
    p, cell = img.patch_size, img.cell_px
    size = gemma4_resized_size(
        h, w, patch_size=p, pooling_kernel=img.pooling_kernel, max_soft_tokens=budget
    )
    scale = math.sqrt(max_patches * p * p / (h * w))
    step = (
        f"Scale {size_label((h, w))} by √({max_patches * p * p:,} / {h * w:,}) = {scale:.4g} → "
        f"{size_label((h * scale, w * scale))}; round each side down to a multiple of {cell} px."
    )
    if int(h * scale // cell) == 0 or int(w * scale // cell) == 0:
        step += (
            f" One side rounded to 0, so it becomes {cell} px and the other side "
            f"floor(long / short) × {cell} px, capped at {budget} × {cell} px."
        )
    return Rule(size, step)


def _patch_grid_rule(
    spec: FamilySpec, size: tuple[int, int], max_patches: int
) -> Rule[tuple[int, int]]:
    """The resized image cut into patches; pixel_values padded to the budget's rows (a
    tower) or kept as merged blocks (encoder-free, described by the pooling rule)."""
    p = spec.image.patch_size
    grid = (size[0] // p, size[1] // p)
    n = grid[0] * grid[1]
    step = (
        f"Resize (bicubic, aspect kept) to {size_label(size)} → "
        f"{size_label(grid, unit='patches')} = {n} patches"
    )
    if spec.encoder_free:
        return Rule(grid, step + f" of {p} px.")
    return Rule(
        grid,
        step + f"; pad pixel_values to {max_patches} rows ({max_patches - n} padding rows with "
        "position (-1, -1)).",
    )


def _pool_rule(spec: FamilySpec, grid: tuple[int, int], budget: int) -> Rule[tuple[int, int]]:
    """k×k patches become one soft token: pooled by the tower, or (encoder-free) merged
    into one row of raw pixels that a small embedder projects on its own."""
    img = spec.image
    k, cell = img.pooling_kernel, img.cell_px
    pooled = (grid[0] // k, grid[1] // k)
    n = pooled[0] * pooled[1]
    if spec.encoder_free:
        # Unified: no tower, no attention between blocks, so a token is exactly its block.
        return Rule(
            pooled,
            f"Merge each {k} × {k} block into one row of {cell} × {cell} × 3 = {cell * cell * 3} "
            f"raw pixel values: {size_label(pooled, unit='blocks')} = {n} rows; pad "
            f"pixel_values to {budget} rows ({budget - n} padding rows with position (-1, -1)). "
            f"Then {spec.image_encoder}: one soft token per row, nothing mixes pixels across "
            f"blocks: {n} soft tokens.",
        )
    return Rule(
        pooled,
        f"Pool {k}×{k} patches → {size_label(pooled, unit='cells')} = {n} soft tokens "
        f"({budget - n} of the {budget} pooled slots are padding and are stripped).",
    )


def _plan_budget_image(
    spec: FamilySpec, h: int, w: int, max_soft_tokens: int | None, pixels: Any
) -> ImagePlan:
    budget = require_budget(max_soft_tokens, family=spec)
    max_patches = _patch_budget_rule(spec, budget)
    size = _aspect_resize_rule(spec, h, w, budget, max_patches.value)
    grid = _patch_grid_rule(spec, size.value, max_patches.value)
    pooled = _pool_rule(spec, grid.value, budget)
    num_patches = grid.value[0] * grid.value[1]
    n = pooled.value[0] * pooled.value[1]
    prompt = _prompt_rule(spec, n)
    return ImagePlan(
        family=spec.name,
        original_size=(h, w),
        resized_size=size.value,
        patch_size=spec.image.patch_size,
        patch_grid=grid.value,
        pooling_kernel=spec.image.pooling_kernel,
        pooled_grid=pooled.value,
        num_patches=num_patches,
        max_patches=max_patches.value,
        num_padding_patches=max_patches.value - num_patches,
        num_soft_tokens=n,
        max_soft_tokens=budget,
        num_padding_soft_tokens=budget - n,
        total_tokens=prompt.value,
        token_area=(h / pooled.value[0], w / pooled.value[1]),
        steps=(max_patches.step, size.step, grid.step, pooled.step, prompt.step),
        image=pixels,
    )


def plan_image(
    image: Any,
    *,
    family: str | FamilySpec | Any = DEFAULT_FAMILY,
    max_soft_tokens: int | None = None,
) -> ImagePlan:
    """Plan how an image becomes soft tokens.

    ``image`` is any image input (a path, bytes, file, PIL image, array (H, W[, C]) or
    a ``(height, width)`` pair); files are read only as far as their header.
    ``family`` is a name, a spec or a loaded bundle (default: ``DEFAULT_FAMILY``).
    ``max_soft_tokens`` is the family's budget (Gemma 4: 70, 140, 280, 560 or 1120).

    >>> plan_image((768, 1024), family="gemma3n").num_soft_tokens
    256
    """
    spec = family_spec(family)
    h, w = image_size(image)
    # Keep in-memory pixels for figures; never load a file's pixels just to plan.
    pixels = image if hasattr(image, "getbands") or isinstance(image, np.ndarray) else None
    if spec.image.fixed_size is None:
        return _plan_budget_image(spec, h, w, max_soft_tokens, pixels)
    if max_soft_tokens is not None:
        budgeted = next(f.name for f in FAMILIES.values() if f.image.budgets)
        raise ValueError(
            f"{spec.display_name} has no token budget: every image becomes "
            f"{spec.image.fixed_soft_tokens} soft tokens. Drop max_soft_tokens, or use "
            f"family={budgeted!r}."
        )
    return _plan_fixed_image(spec, h, w, pixels)


# --------------------------------------------------------------------------- audio


@dataclass(frozen=True)
class AudioPlan:
    """How one clip becomes mel frames and audio tokens (all counts at 16 kHz)."""

    family: str
    sampling_rate: int  # the rate the user's audio had
    resampled: bool  # librosa resampled it to 16 kHz
    downmixed_channels: int | None  # stereo etc. averaged to mono (channel count)
    num_samples: int  # samples at 16 kHz before truncation
    duration_s: float  # num_samples / 16 kHz
    samples_used: int  # after the 30 s cut
    truncated: bool  # the clip was longer than 30 s
    padded_samples: int  # after padding to a multiple of 128 samples
    frame_length: int  # samples per analysis window
    hop_length: int  # samples between frame starts (10 ms)
    num_mel_frames: int  # rows of input_features
    num_valid_frames: int  # frames whose mask is True (real audio)
    subsampling: int  # the encoder's time reduction
    num_encoder_tokens: int  # embeddings of real audio the encoder produces
    num_placeholders: int  # audio placeholders in the prompt (3n: always 188)
    padding_slots: int  # 3n: placeholders filled with the padding embedding
    dropped_tokens: int  # encoder tokens that do not fit the placeholders
    ms_per_token: float  # audio time one token stands for
    total_tokens: int  # prompt tokens incl. markers (+ 3n's "\n\n" wrappers)
    silent: bool = False  # every sample is 0: tokens are still spent
    steps: tuple[str, ...] = field(default=(), compare=False)
    # The mono 16 kHz waveform the plan was made from, kept for figures; None when
    # planned from a sample count.
    waveform: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def frame_kind(self) -> str:
        """ "mel" (log-mel frames for a tower) or "raw" (encoder-free: slices of
        ``samples_per_token`` samples of the waveform itself, one token each;
        num_mel_frames then counts those)."""
        return "mel" if get_family(self.family).audio.has_mel else "raw"

    @property
    def _frame_label(self) -> str:
        a = get_family(self.family).audio
        return f"raw {a.samples_per_token}-sample" if self.frame_kind == "raw" else "mel"

    def _rows(self) -> list[tuple[str, Any]]:
        khz = f"{get_family(self.family).audio.sampling_rate / 1000:g} kHz"
        return [
            ("duration", f"{self.duration_s:.3f} s ({self.num_samples} samples @{khz})"),
            ("used", f"{self.samples_used} samples{' (truncated)' if self.truncated else ''}"),
            (
                f"{self._frame_label} frames (valid)",
                f"{self.num_mel_frames} ({self.num_valid_frames})",
            ),
            ("encoder tokens", self.num_encoder_tokens),
            ("placeholders", self.num_placeholders),
            ("padding slots", self.padding_slots),
            ("dropped tokens", self.dropped_tokens),
            ("ms per token", self.ms_per_token),
            ("prompt tokens", self.total_tokens),
        ]

    def table(self) -> Table:
        return _table(f"AudioPlan — {self.family}", self._rows(), self.steps)

    def __repr__(self) -> str:
        return self.table().text()

    def _repr_html_(self) -> str:
        return self.table().html()


def _ms(samples: int, rate: int) -> str:
    return f"{samples * 1000 / rate:g} ms"


def _read_clip(
    audio: Any, spec: FamilySpec, sampling_rate: int | None
) -> tuple[int, np.ndarray | None, dict[str, Any]]:
    """(samples at the family's rate, the mono waveform or None, what loading did)."""
    a = spec.audio
    notes: dict[str, Any] = {"downmixed": None, "resampled_from": None, "silent": False}
    if isinstance(audio, int | np.integer) and not isinstance(audio, bool):
        if audio < 0:
            raise ValueError(f"A clip cannot have {audio} samples.")
        rate = sampling_rate or a.sampling_rate
        if rate == a.sampling_rate:
            return int(audio), None, notes
        notes["resampled_from"] = rate
        return int(math.ceil(int(audio) * a.sampling_rate / rate)), None, notes  # librosa's
    wav, notes = load_audio(
        audio, sampling_rate=sampling_rate, target_rate=a.sampling_rate,
        bare_array_rate=a.sampling_rate,
    )  # fmt: skip
    return int(wav.shape[0]), wav, notes


def _loading_steps(spec: FamilySpec, n: int, notes: dict[str, Any]) -> list[str]:
    steps = []
    if notes.get("downmixed"):
        steps.append(f"Average {notes['downmixed']} channels to mono.")
    if notes.get("resampled_from"):
        khz = f"{spec.audio.sampling_rate / 1000:g} kHz"
        steps.append(f"Resample {notes['resampled_from']} Hz → {khz} (librosa): {n} samples.")
    return steps


def _cut_rule(spec: FamilySpec, n: int) -> Rule[int]:
    """Samples the extractor keeps: the first ``max_samples`` (none cut when it has none)."""
    a = spec.audio
    used = n if a.max_samples is None else min(n, a.max_samples)
    keep = f"; keep the first {a.max_samples} ({a.max_seconds:g} s)." if n > used else "."
    return Rule(used, f"{n} samples = {n / a.sampling_rate:.3f} s{keep}")


def _pad_rule(spec: FamilySpec, used: int) -> Rule[int]:
    """The extractor pads the kept samples to a multiple of ``pad_to_multiple_of``."""
    m = spec.audio.pad_to_multiple_of or 1
    padded = int(math.ceil(used / m) * m)
    return Rule(padded, f"Pad to a multiple of {m} samples: {padded}.")


# -- raw frames, no tower (Unified) ---------------------------------------------------


def _raw_rows_rule(spec: FamilySpec, padded: int) -> Rule[int]:
    """The padded waveform reshaped into rows of ``samples_per_token`` samples."""
    a = spec.audio
    rows = padded // a.samples_per_token
    return Rule(
        rows,
        f"Reshape into {rows} rows of {a.samples_per_token} raw samples ({a.ms_per_token} ms "
        f"each): input_features ({rows}, {a.samples_per_token}). No mel, no FFT.",
    )


def _raw_embedder_rule(spec: FamilySpec, rows: int) -> Rule[int]:
    """One token per row, with no cap in transformers."""
    return Rule(
        rows,
        f"The embedder ({spec.audio_encoder}) makes one token per row: {rows} tokens, with no "
        f"cap (audio_seq_length {spec.audio.max_tokens} is documented but transformers does not "
        "apply it; vLLM's count does, see check_audio_parity).",
    )


def _tokens_of_raw_rows(spec: FamilySpec, padded: int) -> tuple[dict[str, int], list[str]]:
    rows = _raw_rows_rule(spec, padded)
    tokens = _raw_embedder_rule(spec, rows.value)
    counts = dict(num_mel_frames=rows.value, num_valid_frames=rows.value,
                  num_encoder_tokens=tokens.value, num_placeholders=tokens.value,
                  padding_slots=0, dropped_tokens=0)  # fmt: skip
    return counts, [rows.step, tokens.step]


# -- mel frames, a tower, fixed placeholders (Gemma 3n) --------------------------------


def _centred_frames_rule(spec: FamilySpec, padded: int, used: int) -> Rule[tuple[int, int]]:
    """(frames, frames over real audio): windows of frame_length + 1 samples every hop
    (the extra sample feeds pre-emphasis); a frame is real when its first sample is."""
    a = spec.audio
    fl, hop = a.frame_length, a.hop_length
    frames = max((padded - (fl + 1)) // hop + 1, 0)
    valid = min(frames, -(-used // hop))
    return Rule(
        (frames, valid),
        f"Mel frames: ({padded} − {fl + 1}) // {hop} + 1 = {frames} ({valid} over real audio); "
        f"{a.mel_bins} mel bins, {_ms(fl, a.sampling_rate)} windows, "
        f"{_ms(hop, a.sampling_rate)} hop.",
    )


def _conformer_rule(spec: FamilySpec, frames: int, valid: int) -> Rule[int]:
    """Encoder tokens over real audio: stride-2 convs, then the conformer keeps every
    r-th step. A token is real when the frame it starts at is real."""
    a = spec.audio
    t_conv = frames
    for _ in range(a.conv_layers):
        t_conv = conv_out(t_conv) if t_conv else 0
    r = a.conformer_reduction
    t_enc = (t_conv + r - 1) // r
    real = t_enc if valid >= frames else min(t_enc, -(-valid // a.subsampling))
    return Rule(
        real,
        f"Encoder: {a.conv_layers} stride-2 convs → {t_conv} steps; the conformer keeps every "
        f"{r}th → {t_enc} tokens ({real} over real audio), one per {a.ms_per_token} ms.",
    )


def _fixed_slots_rule(spec: FamilySpec, real: int) -> Rule[tuple[int, int]]:
    """(padding slots, dropped tokens): the prompt always holds the same placeholders."""
    a = spec.audio
    place = a.fixed_placeholders
    fate = (
        f"{place - real} slots are filled with the padding embedding."
        if real <= place
        else f"{real - place} tokens are dropped."
    )
    return Rule(
        (max(place - real, 0), max(real - place, 0)),
        f"The prompt always reserves {place} audio placeholders ({a.max_seconds:g} s × "
        f"{1000 / a.ms_per_token:g}/s): {fate}",
    )


def _tokens_of_fixed_slots(
    spec: FamilySpec, padded: int, used: int
) -> tuple[dict[str, int], list[str]]:
    frames = _centred_frames_rule(spec, padded, used)
    real = _conformer_rule(spec, *frames.value)
    slots = _fixed_slots_rule(spec, real.value)
    counts = dict(num_mel_frames=frames.value[0], num_valid_frames=frames.value[1],
                  num_encoder_tokens=real.value, num_placeholders=spec.audio.fixed_placeholders,
                  padding_slots=slots.value[0], dropped_tokens=slots.value[1])  # fmt: skip
    return counts, [frames.step, real.step, slots.step]


# -- mel frames, a tower, one token per real step (Gemma 4) ----------------------------


def _semicausal_frames_rule(spec: FamilySpec, padded: int, used: int) -> Rule[tuple[int, int]]:
    """(frames, frames ending inside real audio) after ``frame_length // 2`` zeros are
    prepended; frame i is real when its last sample, i·hop + frame_length, is."""
    a = spec.audio
    fl, hop = a.frame_length, a.hop_length
    pad_left = fl // 2
    total = padded + pad_left
    frames = max((total - (fl + 1)) // hop + 1, 0)
    valid = min(frames, max(0, -(-(pad_left + used - fl) // hop)))
    return Rule(
        (frames, valid),
        f"Prepend {pad_left} zeros (semicausal): {total} samples → ({total} − {fl + 1}) // {hop}"
        f" + 1 = {frames} mel frames of {_ms(fl, a.sampling_rate)} every "
        f"{_ms(hop, a.sampling_rate)} ({valid} end inside real audio).",
    )


def _strided_tokens_rule(spec: FamilySpec, frames: int, valid: int) -> Rule[int]:
    """Each stride-2 conv keeps every 2nd step (the processor every 2nd mask entry): the
    real ones stay a prefix. Capped at ``max_tokens``."""
    a = spec.audio
    t, real = frames, valid
    for _ in range(a.conv_layers):
        t = conv_out(t)
        real = min(t, -(-real // 2))
    tokens = min(real, a.max_tokens)
    cap = f", capped at {a.max_tokens}." if real > a.max_tokens else "."
    return Rule(
        tokens,
        f"{a.conv_layers} stride-2 convs keep every 2nd frame each: {t} steps, {real} over real "
        f"audio → one token per {a.ms_per_token} ms{cap}",
    )


def _tokens_of_strided_frames(
    spec: FamilySpec, padded: int, used: int
) -> tuple[dict[str, int], list[str]]:
    frames = _semicausal_frames_rule(spec, padded, used)
    tokens = _strided_tokens_rule(spec, *frames.value)
    counts = dict(num_mel_frames=frames.value[0], num_valid_frames=frames.value[1],
                  num_encoder_tokens=tokens.value, num_placeholders=tokens.value,
                  padding_slots=0, dropped_tokens=0)  # fmt: skip
    return counts, [frames.step, tokens.step]


def plan_audio(
    audio: Any,
    *,
    family: str | FamilySpec | Any = DEFAULT_FAMILY,
    sampling_rate: int | None = None,
) -> AudioPlan:
    """Plan how a clip becomes audio tokens.

    ``audio`` is any audio input (a path, bytes, file, ``(waveform, rate)``, or a
    waveform with ``sampling_rate=``), or a number of samples at ``sampling_rate``
    (the family's rate, 16 kHz, when not given). ``family`` is a name, a spec or a loaded
    bundle (default: ``DEFAULT_FAMILY``).

    >>> plan_audio(48_000, family="gemma4").num_placeholders
    75
    """
    spec = family_spec(family)
    a = spec.audio
    n, wav, notes = _read_clip(audio, spec, sampling_rate)
    used = _cut_rule(spec, n)
    padded = _pad_rule(spec, used.value)
    if a.samples_per_token is not None:
        counts, steps = _tokens_of_raw_rows(spec, padded.value)
    elif a.fixed_placeholders is not None:
        counts, steps = _tokens_of_fixed_slots(spec, padded.value, used.value)
    else:
        counts, steps = _tokens_of_strided_frames(spec, padded.value, used.value)
    prompt = _prompt_rule(spec, counts["num_placeholders"], "audio")
    return AudioPlan(
        family=spec.name,
        sampling_rate=int(notes.get("resampled_from") or a.sampling_rate),
        resampled=bool(notes.get("resampled_from")),
        downmixed_channels=notes.get("downmixed"),
        num_samples=n,
        duration_s=n / a.sampling_rate,
        samples_used=used.value,
        truncated=n > used.value,
        padded_samples=padded.value,
        frame_length=a.frame_length,
        hop_length=a.hop_length,
        subsampling=a.subsampling,
        ms_per_token=float(a.ms_per_token),
        total_tokens=prompt.value,
        silent=bool(notes.get("silent")),
        steps=(*_loading_steps(spec, n, notes), used.step, padded.step, *steps, prompt.step),
        waveform=wav,
        **counts,
    )


# --------------------------------------------------------------------------- video


def format_timestamp(seconds: float) -> str:
    """``mm:ss`` as Gemma 4's processor writes it (seconds truncated, not rounded)."""
    return f"{int(seconds // 60):02d}:{int(seconds % 60):02d}"


@dataclass(frozen=True)
class VideoPlan:
    """How a video becomes timestamped frames of soft tokens (Gemma 4 only)."""

    family: str
    num_frames: int  # frames in the video
    fps: float  # frames per second of the video
    duration_s: float
    frame_size: tuple[int, int]  # (height, width) of one frame
    frame_indices: tuple[int, ...]  # which frames are sampled
    timestamps: tuple[str, ...]  # "mm:ss" for each sampled frame
    soft_tokens_per_frame: int  # at the video budget (70)
    frame_plan: ImagePlan  # the plan of one frame
    timestamp_text: str  # the text the processor writes, soft tokens shown as ×N
    total_soft_tokens: int
    total_tokens: int  # soft tokens + markers; the timestamp text is counted by layouts
    steps: tuple[str, ...] = field(default=(), compare=False)
    # The sampled frames only, (len(frame_indices), H, W, 3) uint8, kept for figures;
    # None when planned from a frame count.
    frames: np.ndarray | None = field(default=None, compare=False, repr=False)

    def _rows(self) -> list[tuple[str, Any]]:
        return [
            ("frames (fps)", f"{self.num_frames} ({self.fps:g} fps, {self.duration_s:.2f} s)"),
            ("frame size", size_label(self.frame_size)),
            ("sampled", f"{len(self.frame_indices)} frames"),
            ("tokens per frame", self.soft_tokens_per_frame),
            ("soft tokens", self.total_soft_tokens),
            ("markers", self.total_tokens - self.total_soft_tokens),
        ]

    def table(self) -> Table:
        return _table(f"VideoPlan — {self.family}", self._rows(), self.steps)

    def __repr__(self) -> str:
        return self.table().text()

    def _repr_html_(self) -> str:
        return self.table().html()


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
    :class:`~gemma_explore.media.Video`, or a frame array with ``fps=``; files give
    their own fps), or a frame count with ``fps=`` and ``frame_size=(h, w)``.

    >>> plan_video(48, fps=24, frame_size=(360, 640)).timestamps[:2]
    ('00:00', '00:00')
    """
    spec = family_spec(family)
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
    text = " ".join(f"{t} {spec.boi_token}{spec.video_token}×{n}{spec.eoi_token}" for t in stamps)
    steps = (
        f"{count} frames at {fps:g} fps = {count / fps:.2f} s; sample {len(idx)} of them "
        f"(at most {limit}, evenly spaced).",
        f"Each frame is an image at budget {spec.image.video_budget}: {size_label(size)} → "
        f"{size_label(frame.resized_size)} → {n} soft tokens.",
        f"Each frame is written as 'mm:ss {spec.boi_token}{spec.video_token}×n{spec.eoi_token}' "
        "(timestamp = index / fps, seconds truncated), frames joined by spaces.",
        f"Soft tokens: {len(idx)} × {n} = {len(idx) * n}; markers: "
        f"{len(idx) * spec.markers_per_item}.",
    )
    return VideoPlan(
        family=spec.name,
        num_frames=count,
        fps=float(fps),
        duration_s=count / fps,
        frame_size=size,
        frame_indices=tuple(idx),
        timestamps=stamps,
        soft_tokens_per_frame=n,
        frame_plan=frame,
        timestamp_text=text,
        total_soft_tokens=len(idx) * n,
        total_tokens=len(idx) * (n + spec.markers_per_item),
        steps=steps,
        frames=frames,
    )
