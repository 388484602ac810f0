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

from .families import FamilySpec, get_family
from .media import (
    Video,
    image_size,
    is_image_size,
    load_audio,
    load_video,
    sample_frame_indices,
)
from .sizes import size_label
from .tables import Table

__all__ = [
    "AudioPlan",
    "ImagePlan",
    "VideoPlan",
    "check_budget",
    "conv_out",
    "format_timestamp",
    "gemma4_resized_size",
    "plan_audio",
    "plan_image",
    "plan_video",
    "sample_frame_indices",
]


# --------------------------------------------------------------------------- helpers


def _table(title: str, rows: list[tuple[str, Any]], steps: tuple[str, ...]) -> Table:
    return Table((), tuple(rows), title=title, notes=steps, notes_title="steps")


def check_budget(spec: FamilySpec, max_soft_tokens: int | None, *, what: str = "image") -> int:
    """Gemma 4's image budget: the default when None, else one of the allowed budgets.

    >>> check_budget(get_family("gemma4"), None)
    280
    """
    img = spec.image
    if not img.budgets:
        raise ValueError(
            f"{spec.display_name} has no token budget: every image becomes "
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
            f"{spec.display_name} does not support a budget of {max_soft_tokens} soft tokens "
            f"per {what}. Choose one of {list(img.budgets)} (default {img.default_budget})."
        )
    return int(max_soft_tokens)


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


def plan_image(image: Any, *, family: str, max_soft_tokens: int | None = None) -> ImagePlan:
    """Plan how an image becomes soft tokens.

    ``image`` is any image input (a path, bytes, file, PIL image, array (H, W[, C]) or
    a ``(height, width)`` pair); files are read only as far as their header.
    ``max_soft_tokens`` is Gemma 4's budget (70, 140, 280, 560 or 1120).

    >>> plan_image((768, 1024), family="gemma3n").num_soft_tokens
    256
    """
    spec = get_family(family)
    h, w = image_size(image)
    # Keep in-memory pixels for figures; never load a file's pixels just to plan.
    pixels = image if hasattr(image, "getbands") or isinstance(image, np.ndarray) else None
    img = spec.image
    if img.fixed_size is not None:
        if max_soft_tokens is not None:
            raise ValueError(
                f"{spec.display_name} has no token budget: every image becomes "
                f"{img.fixed_soft_tokens} soft tokens. Drop max_soft_tokens, or use "
                "family='gemma4'."
            )
        rh, rw = img.fixed_size
        grid = (rh // img.patch_size, rw // img.patch_size)  # 16×16 MobileNet-V5 cells
        n = grid[0] * grid[1]
        markers = spec.markers_per_item  # BOI/EOI + "\n\n" before and after
        steps = (
            f"Squash {size_label((h, w))} to {size_label((rh, rw))} (aspect ratio not kept; x-scale {rw / w:.3g}, "
            f"y-scale {rh / h:.3g}); rescale pixels by 1/255, no normalisation.",
            f"MobileNet-V5 reduces it by {img.patch_size} to a grid of "
            f"{size_label(grid, unit='cells')} of 2048-d features: {n} soft tokens, always.",
            f"One soft token covers {img.patch_size}×{img.patch_size} px of the squash = "
            f"{size_label((h / grid[0], w / grid[1]))} of the original.",
            f'Prompt: "\\n\\n" {spec.boi_token} + {spec.image_token}×{n} + {spec.eoi_token} '
            f'"\\n\\n" = {n + markers} tokens (the "\\n\\n" may merge with neighbouring newlines).',
        )
        return ImagePlan(
            family=spec.name,
            original_size=(h, w),
            resized_size=(rh, rw),
            patch_size=img.patch_size,
            patch_grid=grid,
            pooling_kernel=1,
            pooled_grid=grid,
            num_patches=n,
            max_patches=n,
            num_padding_patches=0,
            num_soft_tokens=n,
            max_soft_tokens=None,
            num_padding_soft_tokens=0,
            total_tokens=n + markers,
            token_area=(h / grid[0], w / grid[1]),
            steps=steps,
            image=pixels,
        )

    budget = check_budget(spec, max_soft_tokens)
    p, k = img.patch_size, img.pooling_kernel
    th, tw = gemma4_resized_size(h, w, patch_size=p, pooling_kernel=k, max_soft_tokens=budget)
    grid = (th // p, tw // p)
    num_patches = grid[0] * grid[1]
    max_patches = budget * img.patches_per_token
    pooled = (grid[0] // k, grid[1] // k)
    n = num_patches // img.patches_per_token
    cell = img.cell_px
    scale = math.sqrt(max_patches * p * p / (h * w))
    steps = [
        f"Budget {budget} soft tokens × {k}×{k} patches = {max_patches} patches of {p}×{p} px "
        f"= {max_patches * p * p:,} px.",
        f"Scale {size_label((h, w))} by √({max_patches * p * p:,} / {h * w:,}) = {scale:.4g} → "
        f"{size_label((h * scale, w * scale))}; round each side down to a multiple of {cell} px.",
    ]
    if int(h * scale // cell) == 0 or int(w * scale // cell) == 0:
        steps.append(
            f"One side rounded to 0, so it becomes {cell} px and the other side "
            f"floor(long / short) × {cell} px, capped at {budget} × {cell} px."
        )
    if spec.encoder_free:
        # Unified: the processor merges each 3×3 block of patches into one row of raw
        # pixels, and a small embedder projects each row on its own: no tower, no
        # attention between blocks, so a token is exactly its 48×48 px block.
        steps += [
            f"Resize (bicubic, aspect kept) to {size_label((th, tw))} → "
            f"{size_label(grid, unit='patches')} = {num_patches} patches of {p} px.",
            f"Merge each {k} × {k} block into one row of {cell} × {cell} × 3 = {cell * cell * 3} "
            f"raw pixel values: {size_label(pooled, unit='blocks')} = {n} rows; pad "
            f"pixel_values to {budget} rows ({budget - n} padding rows with position (-1, -1)).",
            f"No encoder: each row goes LayerNorm → Linear → + position embedding (x, y) → "
            f"LayerNorm → one soft token. Nothing mixes pixels across blocks: {n} soft tokens.",
            f"Prompt: {spec.boi_token} + {spec.image_token}×{n} + {spec.eoi_token} = "
            f"{n + spec.markers_per_item} tokens.",
        ]
    else:
        steps += [
            f"Resize (bicubic, aspect kept) to {size_label((th, tw))} → "
            f"{size_label(grid, unit='patches')} = {num_patches} patches; pad pixel_values to "
            f"{max_patches} rows ({max_patches - num_patches} padding rows with position "
            "(-1, -1)).",
            f"Pool {k}×{k} patches → {size_label(pooled, unit='cells')} = {n} soft tokens "
            f"({budget - n} of the {budget} pooled slots are padding and are stripped).",
            f"Prompt: {spec.boi_token} + {spec.image_token}×{n} + {spec.eoi_token} = "
            f"{n + spec.markers_per_item} tokens.",
        ]
    return ImagePlan(
        family=spec.name,
        original_size=(h, w),
        resized_size=(th, tw),
        patch_size=p,
        patch_grid=grid,
        pooling_kernel=k,
        pooled_grid=pooled,
        num_patches=num_patches,
        max_patches=max_patches,
        num_padding_patches=max_patches - num_patches,
        num_soft_tokens=n,
        max_soft_tokens=budget,
        num_padding_soft_tokens=budget - n,
        total_tokens=n + spec.markers_per_item,
        token_area=(h / pooled[0], w / pooled[1]),
        steps=tuple(steps),
        image=pixels,
    )


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
        """ "mel" (3n, 4: log-mel frames for a tower) or "raw" (Unified: 640-sample slices
        of the waveform itself, one token each; num_mel_frames then counts those)."""
        return "mel" if get_family(self.family).audio.has_mel else "raw"

    def _rows(self) -> list[tuple[str, Any]]:
        return [
            ("duration", f"{self.duration_s:.3f} s ({self.num_samples} samples @16 kHz)"),
            ("used", f"{self.samples_used} samples{' (truncated)' if self.truncated else ''}"),
            (
                f"{'raw 640-sample' if self.frame_kind == 'raw' else 'mel'} frames (valid)",
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


def plan_audio(audio: Any, *, family: str, sampling_rate: int | None = None) -> AudioPlan:
    """Plan how a clip becomes audio tokens.

    ``audio`` is any audio input (a path, bytes, file, ``(waveform, rate)``, or a
    waveform with ``sampling_rate=``), or a number of samples at ``sampling_rate``
    (16 kHz when not given).

    >>> plan_audio(48_000, family="gemma4").num_placeholders
    75
    """
    spec = get_family(family)
    a = spec.audio
    notes: dict[str, Any] = {"downmixed": None, "resampled_from": None, "silent": False}
    wav = None
    if isinstance(audio, int | np.integer) and not isinstance(audio, bool):
        if audio < 0:
            raise ValueError(f"A clip cannot have {audio} samples.")
        n_in, rate = int(audio), sampling_rate or a.sampling_rate
        if rate != a.sampling_rate:
            notes["resampled_from"] = rate
            n = int(math.ceil(n_in * a.sampling_rate / rate))  # librosa's length
        else:
            n = n_in
    else:
        wav, notes = load_audio(audio, sampling_rate=sampling_rate, target_rate=a.sampling_rate,
                                bare_array_rate=a.sampling_rate)  # fmt: skip
        n = int(wav.shape[0])

    used = n if a.max_samples is None else min(n, a.max_samples)
    m = a.pad_to_multiple_of or 1
    padded = int(math.ceil(used / m) * m)
    hop, fl = a.hop_length, a.frame_length
    steps = []
    if notes.get("downmixed"):
        steps.append(f"Average {notes['downmixed']} channels to mono.")
    khz = f"{a.sampling_rate / 1000:g} kHz"
    if notes.get("resampled_from"):
        steps.append(f"Resample {notes['resampled_from']} Hz → {khz} (librosa): {n} samples.")
    steps.append(
        f"{n} samples = {n / a.sampling_rate:.3f} s"
        + (f"; keep the first {a.max_samples} ({a.max_seconds:g} s)." if n > used else ".")
    )
    steps.append(f"Pad to a multiple of {m} samples: {padded}.")

    # Fields both families fill the same way.
    common = dict(
        family=spec.name,
        sampling_rate=int(notes.get("resampled_from") or a.sampling_rate),
        resampled=bool(notes.get("resampled_from")),
        downmixed_channels=notes.get("downmixed"),
        num_samples=n,
        duration_s=n / a.sampling_rate,
        samples_used=used,
        truncated=n > used,
        padded_samples=padded,
        frame_length=fl,
        hop_length=hop,
        silent=bool(notes.get("silent")),
        subsampling=a.subsampling,
        ms_per_token=float(a.ms_per_token),
        waveform=wav,
    )
    if a.samples_per_token is not None:
        # Unified: no spectrogram and no tower. The padded waveform is reshaped into
        # rows of 640 samples (40 ms); each row is one token after RMSNorm → Linear.
        frames = padded // a.samples_per_token
        steps += [
            f"Reshape into {frames} rows of {a.samples_per_token} raw samples "
            f"({a.ms_per_token} ms each): input_features ({frames}, {a.samples_per_token}). "
            "No mel, no FFT.",
            f"The embedder (RMSNorm → Linear) makes one token per row: {frames} tokens, "
            f"with no cap (audio_seq_length {a.max_tokens} is documented but transformers "
            "does not apply it; vLLM's count does, see check_audio_parity).",
            f"Prompt: {spec.boa_token} + {spec.audio_token}×{frames} + {spec.eoa_token} = "
            f"{frames + spec.markers_per_item} tokens.",
        ]
        return AudioPlan(
            **common,
            num_mel_frames=frames,
            num_valid_frames=frames,
            num_encoder_tokens=frames,
            num_placeholders=frames,
            padding_slots=0,
            dropped_tokens=0,
            total_tokens=frames + spec.markers_per_item,
            steps=tuple(steps),
        )

    if a.fixed_placeholders is not None:
        # Frames: windows of frame_length+1 samples every hop (the extra sample feeds
        # pre-emphasis). A frame is real when the sample at its start is real.
        frames = max((padded - (fl + 1)) // hop + 1, 0)
        valid_frames = min(frames, -(-used // hop))  # frames starting inside real audio
        # Encoder: two kernel-3 stride-2 convs (÷4), then the conformer keeps every
        # 4th step (÷4 again): one token per 16 frames = 160 ms. A token is real when
        # the frame it starts at (16·i, clamped to the last frame) is real.
        t_conv = frames
        for _ in range(a.conv_layers):
            t_conv = conv_out(t_conv) if t_conv else 0
        r = a.conformer_reduction
        t_enc = (t_conv + r - 1) // r
        if valid_frames >= frames:
            enc_valid = t_enc
        else:
            enc_valid = min(t_enc, -(-valid_frames // a.subsampling))
        place = a.fixed_placeholders
        seconds = a.max_seconds
        steps += [
            f"Mel frames: ({padded} − {fl + 1}) // {hop} + 1 = {frames} "
            f"({valid_frames} over real audio); {a.mel_bins} mel bins, 32 ms windows, 10 ms hop.",
            f"Encoder: two stride-2 convs → {t_conv} steps; the conformer keeps every {r}th → "
            f"{t_enc} tokens ({enc_valid} over real audio), one per {a.ms_per_token} ms.",
            f"The prompt always reserves {place} audio placeholders ({seconds:g} s × "
            f"{1000 / a.ms_per_token:g}/s): "
            + (
                f"{place - enc_valid} slots are filled with the padding embedding."
                if enc_valid <= place
                else f"{enc_valid - place} tokens are dropped."
            ),
            f'Prompt: "\\n\\n" {spec.boa_token} + {spec.audio_token}×{place} + '
            f'{spec.eoa_token} "\\n\\n" = {place + spec.markers_per_item} tokens.',
        ]
        return AudioPlan(
            **common,
            num_mel_frames=frames,
            num_valid_frames=valid_frames,
            num_encoder_tokens=enc_valid,
            num_placeholders=place,
            padding_slots=max(place - enc_valid, 0),
            dropped_tokens=max(enc_valid - place, 0),
            total_tokens=place + spec.markers_per_item,
            steps=tuple(steps),
        )

    # Gemma 4: semicausal left padding of frame_length // 2 zeros, then frames of
    # frame_length + 1 samples; a frame is real when its *last* sample is real audio.
    pad_left = fl // 2
    total = padded + pad_left
    frames = max((total - (fl + 1)) // hop + 1, 0)
    # Frame i is real when its last sample, i·hop + frame_length, lies in real audio:
    # frames 0 … n_valid − 1 (the first frame already ends past the left padding).
    n_valid = min(frames, max(0, -(-(pad_left + used - fl) // hop)))
    # Two kernel-3 stride-2 convs; the processor keeps every 2nd mask entry, twice.
    # Kept entries j are real while 2j < n_valid: the real ones stay a prefix.
    t, real = frames, n_valid
    for _ in range(a.conv_layers):
        t = conv_out(t)
        real = min(t, -(-real // 2))
    tokens = min(real, a.max_tokens)
    steps += [
        f"Prepend {pad_left} zeros (semicausal): {total} samples → ({total} − {fl + 1}) // {hop}"
        f" + 1 = {frames} mel frames of 20 ms every 10 ms ({n_valid} end inside real audio).",
        f"Two stride-2 convs keep every 2nd frame twice: {t} steps, "
        f"{real} over real audio → one token per 40 ms"
        + (f", capped at {a.max_tokens}." if real > a.max_tokens else "."),
        f"Prompt: {spec.boa_token} + {spec.audio_token}×{tokens} + {spec.eoa_token} = "
        f"{tokens + spec.markers_per_item} tokens.",
    ]
    return AudioPlan(
        **common,
        num_mel_frames=frames,
        num_valid_frames=n_valid,
        num_encoder_tokens=tokens,
        num_placeholders=tokens,
        padding_slots=0,
        dropped_tokens=0,
        total_tokens=tokens + spec.markers_per_item,
        steps=tuple(steps),
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
    family: str = "gemma4",
    max_frames: int | None = None,
) -> VideoPlan:
    """Plan how a video becomes tokens: sampled frames, ``mm:ss`` stamps, 70 tokens each.

    ``video`` is any video input (a path, bytes, file, ``(frames, fps)``, a
    :class:`~gemma_explore.media.Video`, or a frame array with ``fps=``; files give
    their own fps), or a frame count with ``fps=`` and ``frame_size=(h, w)``.

    >>> plan_video(48, fps=24, frame_size=(360, 640)).timestamps[:2]
    ('00:00', '00:00')
    """
    spec = get_family(family)
    if not spec.has_video:
        raise ValueError(
            f"{spec.display_name} has no video input. Use family='gemma4', or send a few "
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
