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

import html
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .families import FamilySpec, get_family

__all__ = [
    "AudioPlan",
    "ImagePlan",
    "VideoPlan",
    "plan_audio",
    "plan_image",
    "plan_video",
    "image_size_of",
    "prepare_waveform",
    "format_timestamp",
]


# --------------------------------------------------------------------------- helpers


def _steps_html(title: str, rows: list[tuple[str, Any]], steps: tuple[str, ...]) -> str:
    cells = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
        f"<td>{html.escape(str(v))}</td></tr>"
        for k, v in rows
    )
    items = "".join(f"<li>{html.escape(s)}</li>" for s in steps)
    return f"<div><b>{html.escape(title)}</b><table>{cells}</table><ol>{items}</ol></div>"


def _steps_repr(title: str, rows: list[tuple[str, Any]], steps: tuple[str, ...]) -> str:
    width = max(len(k) for k, _ in rows)
    lines = [title] + [f"  {k:<{width}}  {v}" for k, v in rows] + ["  steps:"]
    lines += [f"    {i}. {s}" for i, s in enumerate(steps, 1)]
    return "\n".join(lines)


def image_size_of(image: Any) -> tuple[int, int]:
    """Return ``(height, width)`` of a PIL image, an array (H, W[, C]) or an (h, w) pair.

    Raises a ``ValueError`` that says what to pass when the input is not an image.
    """
    if (
        isinstance(image, tuple | list)
        and len(image) == 2
        and all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in image)
    ):
        h, w = int(image[0]), int(image[1])
    elif hasattr(image, "size") and hasattr(image, "mode") and hasattr(image, "getbands"):
        w, h = image.size  # PIL reports (width, height)
    elif isinstance(image, np.ndarray) or hasattr(image, "shape"):
        shape = tuple(image.shape)
        if len(shape) == 2:
            h, w = shape
        elif len(shape) == 3 and shape[-1] in (1, 3, 4):
            h, w = shape[0], shape[1]  # (H, W, C)
        elif len(shape) == 3 and shape[0] in (1, 3, 4):
            h, w = shape[1], shape[2]  # (C, H, W)
        else:
            raise ValueError(
                f"An image array must be (height, width) or (height, width, channels); got shape "
                f"{shape}. Pass a PIL image, an array, or a (height, width) pair."
            )
        h, w = int(h), int(w)
    else:
        raise ValueError(
            f"Expected a PIL image, an array or a (height, width) pair, got {type(image).__name__}. "
            "Open files with PIL.Image.open(path) first."
        )
    if h <= 0 or w <= 0:
        raise ValueError(
            f"Image sides must be positive, got height={h}, width={w}. "
            "Check the file is a real image (an empty or corrupt file decodes to nothing)."
        )
    return h, w


def _check_budget(spec: FamilySpec, max_soft_tokens: int | None, *, what: str = "image") -> int:
    img = spec.image
    if max_soft_tokens is None:
        return img.default_budget
    if isinstance(max_soft_tokens, bool) or not isinstance(max_soft_tokens, int | np.integer):
        raise ValueError(
            f"max_soft_tokens must be one of {list(img.budgets)}, got {max_soft_tokens!r}."
        )
    if int(max_soft_tokens) not in img.budgets:
        raise ValueError(
            f"Gemma 4 does not support a budget of {max_soft_tokens} soft tokens per {what}. "
            f"Choose one of {list(img.budgets)} (default {img.default_budget})."
        )
    return int(max_soft_tokens)


# --------------------------------------------------------------------------- images


@dataclass(frozen=True)
class ImagePlan:
    """How one image becomes soft tokens. Sizes are (height, width) in pixels."""

    family: str  # "gemma3n" or "gemma4"
    original_size: tuple[int, int]  # what the user gave
    resized_size: tuple[int, int]  # what the vision tower sees (3n: always 768×768)
    patch_size: int  # px per patch side (3n: px per output cell of MobileNet-V5)
    patch_grid: tuple[int, int]  # patches per column, per row
    pooling_kernel: int  # patches per pooled cell side (4: 3; 3n: 1, no pooling step)
    pooled_grid: tuple[int, int]  # soft-token cells per column, per row
    num_patches: int  # real patches the encoder sees
    max_patches: int  # rows of pixel_values (4 pads up to budget × 9)
    num_padding_patches: int  # padded rows, position id (-1, -1)
    num_soft_tokens: int  # embeddings the encoder keeps = placeholders in the prompt
    max_soft_tokens: int | None  # Gemma 4's budget; None for 3n
    num_padding_soft_tokens: int  # pooled slots the pooler marks invalid
    total_tokens: int  # prompt tokens: markers + soft tokens (+ 3n's "\n\n" wrappers)
    token_area: tuple[float, float]  # px of the *original* image one soft token covers
    steps: tuple[str, ...] = field(default=(), compare=False)  # the derivation, in words

    def _rows(self) -> list[tuple[str, Any]]:
        return [
            ("original (h×w)", f"{self.original_size[0]}×{self.original_size[1]}"),
            ("resized (h×w)", f"{self.resized_size[0]}×{self.resized_size[1]}"),
            ("patch grid", f"{self.patch_grid[0]}×{self.patch_grid[1]} of {self.patch_size} px"),
            ("pooled grid", f"{self.pooled_grid[0]}×{self.pooled_grid[1]}"),
            ("patches / max", f"{self.num_patches} / {self.max_patches}"),
            ("padding patches", self.num_padding_patches),
            ("soft tokens", self.num_soft_tokens),
            ("budget", self.max_soft_tokens),
            ("prompt tokens", self.total_tokens),
        ]

    def __repr__(self) -> str:
        return _steps_repr(f"ImagePlan[{self.family}]", self._rows(), self.steps)

    def _repr_html_(self) -> str:
        return _steps_html(f"ImagePlan — {self.family}", self._rows(), self.steps)


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


def plan_image(image_or_size: Any, *, family: str, max_soft_tokens: int | None = None) -> ImagePlan:
    """Plan how an image becomes soft tokens.

    ``image_or_size`` is a PIL image, an array (H, W[, C]) or a ``(height, width)``
    pair. ``max_soft_tokens`` is Gemma 4's budget (70, 140, 280, 560 or 1120).

    >>> plan_image((768, 1024), family="gemma3n").num_soft_tokens
    256
    """
    spec = get_family(family)
    h, w = image_size_of(image_or_size)
    img = spec.image
    if spec.name == "gemma3n":
        if max_soft_tokens is not None:
            raise ValueError(
                "Gemma 3n has no token budget: every image becomes 256 soft tokens. "
                "Drop max_soft_tokens, or use family='gemma4'."
            )
        rh, rw = img.fixed_size
        grid = (rh // img.patch_size, rw // img.patch_size)  # 16×16 MobileNet-V5 cells
        n = grid[0] * grid[1]
        markers = 2 + 2  # BOI/EOI + "\n\n" before and after
        steps = (
            f"Squash {h}×{w} to {rh}×{rw} (aspect ratio not kept; x-scale {rw / w:.3g}, "
            f"y-scale {rh / h:.3g}); rescale pixels by 1/255, no normalisation.",
            f"MobileNet-V5 reduces 768×768 by 48 to a {grid[0]}×{grid[1]} grid of 2048-d "
            f"features: {n} soft tokens, always.",
            f"One soft token covers {img.patch_size}×{img.patch_size} px of the squash = "
            f"{h / grid[0]:.1f}×{w / grid[1]:.1f} px of the original.",
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
        )

    budget = _check_budget(spec, max_soft_tokens)
    p, k = img.patch_size, img.pooling_kernel
    th, tw = gemma4_resized_size(h, w, patch_size=p, pooling_kernel=k, max_soft_tokens=budget)
    grid = (th // p, tw // p)
    num_patches = grid[0] * grid[1]
    max_patches = budget * k * k
    pooled = (grid[0] // k, grid[1] // k)
    n = num_patches // (k * k)
    cell = p * k
    scale = math.sqrt(max_patches * p * p / (h * w))
    steps = [
        f"Budget {budget} soft tokens × {k}×{k} patches = {max_patches} patches of {p}×{p} px "
        f"= {max_patches * p * p:,} px.",
        f"Scale {h}×{w} by √({max_patches * p * p:,} / {h * w:,}) = {scale:.4g} → "
        f"{h * scale:.1f}×{w * scale:.1f}; round each side down to a multiple of {cell} px.",
    ]
    if int(h * scale // cell) == 0 or int(w * scale // cell) == 0:
        steps.append(
            f"One side rounded to 0, so it becomes {cell} px and the other side "
            f"floor(long/short)×{cell} px, capped at {budget}×{cell} px."
        )
    steps += [
        f"Resize (bicubic, aspect kept) to {th}×{tw} → {grid[0]}×{grid[1]} = {num_patches} "
        f"patches; pad pixel_values to {max_patches} rows ({max_patches - num_patches} "
        "padding rows with position (-1, -1)).",
        f"Pool {k}×{k} patches → {pooled[0]}×{pooled[1]} = {n} soft tokens "
        f"({budget - n} of the {budget} pooled slots are padding and are stripped).",
        f"Prompt: {spec.boi_token} + {spec.image_token}×{n} + {spec.eoi_token} = {n + 2} tokens.",
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
        total_tokens=n + 2,
        token_area=(h / pooled[0], w / pooled[1]),
        steps=tuple(steps),
    )


# --------------------------------------------------------------------------- audio


def prepare_waveform(
    audio: Any, *, sampling_rate: int, target_rate: int = 16_000
) -> tuple[np.ndarray, dict[str, Any]]:
    """Turn user audio into a mono float32 waveform at ``target_rate``.

    Accepts a 1-D array (samples), a 2-D array (channels × samples or samples ×
    channels), or a ``(waveform, sampling_rate)`` pair. Stereo is averaged to mono and
    other rates are resampled with librosa. Returns the waveform and a dict saying what
    was done (``{"downmixed": 2, "resampled_from": 44100, …}``).
    """
    notes: dict[str, Any] = {"downmixed": None, "resampled_from": None, "non_finite": 0}
    if isinstance(audio, tuple) and len(audio) == 2 and np.isscalar(audio[1]):
        audio, sampling_rate = audio[0], int(audio[1])
    try:
        wav = np.asarray(audio, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"Audio must be an array of samples, got {type(audio).__name__}. "
            "Load files with librosa.load(path, sr=16000)."
        ) from exc
    if not sampling_rate or sampling_rate <= 0:
        raise ValueError(f"sampling_rate must be a positive number of Hz, got {sampling_rate!r}.")
    if wav.ndim == 2 and 1 in wav.shape:
        wav = wav.reshape(-1)  # one channel stored as 2-D: nothing to mix
    if wav.ndim == 2:
        # The shorter axis is the channel axis: (2, n) or (n, 2).
        channels_first = wav.shape[0] <= wav.shape[1]
        notes["downmixed"] = int(wav.shape[0] if channels_first else wav.shape[1])
        wav = wav.mean(axis=0 if channels_first else 1)
    elif wav.ndim != 1:
        raise ValueError(
            f"Audio must be 1-D (samples) or 2-D (channels × samples), got shape {wav.shape}."
        )
    if wav.size == 0:
        raise ValueError("The audio clip is empty (0 samples). Record or upload a longer clip.")
    if not np.isfinite(wav).all():
        bad = ~np.isfinite(wav)
        notes["non_finite"] = int(bad.sum())
        if bad.all():
            raise ValueError(
                "Every sample of the clip is NaN or infinite. The file is probably corrupt; "
                "re-export it as 16-bit PCM WAV."
            )
        wav = np.where(bad, 0.0, wav).astype(np.float32)
    if sampling_rate != target_rate:
        import librosa

        notes["resampled_from"] = int(sampling_rate)
        wav = librosa.resample(wav, orig_sr=sampling_rate, target_sr=target_rate).astype(np.float32)
    notes["silent"] = not wav.any()
    return wav, notes


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

    def _rows(self) -> list[tuple[str, Any]]:
        return [
            ("duration", f"{self.duration_s:.3f} s ({self.num_samples} samples @16 kHz)"),
            ("used", f"{self.samples_used} samples{' (truncated)' if self.truncated else ''}"),
            ("mel frames (valid)", f"{self.num_mel_frames} ({self.num_valid_frames})"),
            ("encoder tokens", self.num_encoder_tokens),
            ("placeholders", self.num_placeholders),
            ("padding slots", self.padding_slots),
            ("dropped tokens", self.dropped_tokens),
            ("ms per token", self.ms_per_token),
            ("prompt tokens", self.total_tokens),
        ]

    def __repr__(self) -> str:
        return _steps_repr(f"AudioPlan[{self.family}]", self._rows(), self.steps)

    def _repr_html_(self) -> str:
        return _steps_html(f"AudioPlan — {self.family}", self._rows(), self.steps)


def _conv_out(t: int) -> int:
    """Output length of a kernel-3, stride-2 conv with 2 frames of padding: ceil(t/2)."""
    return (t + 2 - 3) // 2 + 1


def plan_audio(audio_or_num_samples: Any, *, family: str, sampling_rate: int = 16_000) -> AudioPlan:
    """Plan how a clip becomes audio tokens.

    ``audio_or_num_samples`` is a waveform (1-D, or 2-D with channels), a
    ``(waveform, rate)`` pair, or a number of samples at ``sampling_rate``.

    >>> plan_audio(48_000, family="gemma4").num_placeholders
    75
    """
    spec = get_family(family)
    a = spec.audio
    notes: dict[str, Any] = {"downmixed": None, "resampled_from": None, "silent": False}
    if isinstance(audio_or_num_samples, int | np.integer) and not isinstance(
        audio_or_num_samples, bool
    ):
        if audio_or_num_samples < 0:
            raise ValueError(f"A clip cannot have {audio_or_num_samples} samples.")
        n_in = int(audio_or_num_samples)
        if sampling_rate != a.sampling_rate:
            notes["resampled_from"] = sampling_rate
            n = int(math.ceil(n_in * a.sampling_rate / sampling_rate))  # librosa's length
        else:
            n = n_in
    else:
        wav, notes = prepare_waveform(
            audio_or_num_samples, sampling_rate=sampling_rate, target_rate=a.sampling_rate
        )
        n = int(wav.shape[0])

    used = min(n, a.max_samples)
    m = a.pad_to_multiple_of or 1
    padded = int(math.ceil(used / m) * m)
    hop, fl = a.hop_length, a.frame_length
    steps = []
    if notes.get("downmixed"):
        steps.append(f"Average {notes['downmixed']} channels to mono.")
    if notes.get("resampled_from"):
        steps.append(f"Resample {notes['resampled_from']} Hz → 16 kHz (librosa): {n} samples.")
    steps.append(
        f"{n} samples = {n / a.sampling_rate:.3f} s"
        + (f"; keep the first {a.max_samples} (30 s)." if n > used else ".")
    )
    steps.append(f"Pad to a multiple of {m} samples: {padded}.")

    # Fields both families fill the same way.
    common = dict(
        family=spec.name,
        sampling_rate=int(notes.get("resampled_from") or sampling_rate),
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
    )
    if spec.name == "gemma3n":
        # Frames: windows of frame_length+1 samples every hop (the extra sample feeds
        # pre-emphasis). A frame is real when the sample at its start is real.
        frames = max((padded - (fl + 1)) // hop + 1, 0)
        valid_frames = min(frames, -(-used // hop))  # frames starting inside real audio
        # Encoder: two kernel-3 stride-2 convs (÷4), then the conformer keeps every
        # 4th step (÷4 again): one token per 16 frames = 160 ms. A token is real when
        # the frame it starts at (16·i, clamped to the last frame) is real.
        t_conv = _conv_out(_conv_out(frames)) if frames else 0
        t_enc = (t_conv + 3) // 4
        if valid_frames >= frames:
            enc_valid = t_enc
        else:
            enc_valid = min(t_enc, -(-valid_frames // 16))
        place = a.fixed_placeholders
        steps += [
            f"Mel frames: ({padded} − {fl + 1}) // {hop} + 1 = {frames} "
            f"({valid_frames} over real audio); {a.mel_bins} mel bins, 32 ms windows, 10 ms hop.",
            f"Encoder: two stride-2 convs → {t_conv} steps; the conformer keeps every 4th → "
            f"{t_enc} tokens ({enc_valid} over real audio), one per 160 ms.",
            f"The prompt always reserves {place} audio placeholders (30 s × 6.25/s): "
            + (
                f"{place - enc_valid} slots are filled with the padding embedding."
                if enc_valid <= place
                else f"{enc_valid - place} tokens are dropped."
            ),
            f'Prompt: "\\n\\n" {spec.boa_token} + {spec.audio_token}×{place} + '
            f'{spec.eoa_token} "\\n\\n" = {place + 4} tokens.',
        ]
        return AudioPlan(
            **common,
            num_mel_frames=frames,
            num_valid_frames=valid_frames,
            subsampling=16,
            num_encoder_tokens=enc_valid,
            num_placeholders=place,
            padding_slots=max(place - enc_valid, 0),
            dropped_tokens=max(enc_valid - place, 0),
            ms_per_token=16 * hop * 1000 / a.sampling_rate,
            total_tokens=place + 4,
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
    for _ in range(2):
        t = _conv_out(t)
        real = min(t, -(-real // 2))
    tokens = min(real, a.max_tokens)
    steps += [
        f"Prepend {pad_left} zeros (semicausal): {total} samples → ({total} − {fl + 1}) // {hop}"
        f" + 1 = {frames} mel frames of 20 ms every 10 ms ({n_valid} end inside real audio).",
        f"Two stride-2 convs keep every 2nd frame twice: {t} steps, "
        f"{real} over real audio → one token per 40 ms"
        + (f", capped at {a.max_tokens}." if real > a.max_tokens else "."),
        f"Prompt: {spec.boa_token} + {spec.audio_token}×{tokens} + {spec.eoa_token} = "
        f"{tokens + 2} tokens.",
    ]
    return AudioPlan(
        **common,
        num_mel_frames=frames,
        num_valid_frames=n_valid,
        subsampling=4,
        num_encoder_tokens=tokens,
        num_placeholders=tokens,
        padding_slots=0,
        dropped_tokens=0,
        ms_per_token=float(a.ms_per_token),
        total_tokens=tokens + 2,
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
    total_tokens: int  # prompt tokens: soft tokens + markers (+ timestamp text, counted by a tokenizer in layouts)
    steps: tuple[str, ...] = field(default=(), compare=False)

    def _rows(self) -> list[tuple[str, Any]]:
        return [
            ("frames (fps)", f"{self.num_frames} ({self.fps:g} fps, {self.duration_s:.2f} s)"),
            ("frame size", f"{self.frame_size[0]}×{self.frame_size[1]}"),
            ("sampled", f"{len(self.frame_indices)} frames"),
            ("tokens per frame", self.soft_tokens_per_frame),
            ("soft tokens", self.total_soft_tokens),
            ("markers", 2 * len(self.frame_indices)),
        ]

    def __repr__(self) -> str:
        return _steps_repr(f"VideoPlan[{self.family}]", self._rows(), self.steps)

    def _repr_html_(self) -> str:
        return _steps_html(f"VideoPlan — {self.family}", self._rows(), self.steps)


def sample_frame_indices(num_frames: int, *, max_frames: int) -> list[int]:
    """Evenly spaced frames, as transformers samples them: ``i × total // n`` for
    ``n = min(total, max_frames)`` (every frame of a short video)."""
    n = min(num_frames, max_frames)
    return [i * num_frames // n for i in range(n)]


def plan_video(
    video_or_frame_count: Any,
    *,
    fps: float,
    frame_size: tuple[int, int] | None = None,
    family: str = "gemma4",
    max_frames: int | None = None,
) -> VideoPlan:
    """Plan how a video becomes tokens: sampled frames, ``mm:ss`` stamps, 70 tokens each.

    ``video_or_frame_count`` is an array (frames, H, W, C) or a frame count (then give
    ``frame_size=(h, w)``).

    >>> plan_video(48, fps=24, frame_size=(360, 640)).timestamps[:2]
    ('00:00', '00:00')
    """
    spec = get_family(family)
    if not spec.has_video:
        raise ValueError(
            f"{spec.display_name} has no video input. Use family='gemma4', or send a few "
            "frames as separate images."
        )
    if isinstance(video_or_frame_count, int | np.integer) and not isinstance(
        video_or_frame_count, bool
    ):
        count = int(video_or_frame_count)
        if frame_size is None:
            raise ValueError("Give frame_size=(height, width) when passing a frame count.")
        size = image_size_of(tuple(frame_size))
    else:
        arr = np.asarray(video_or_frame_count)
        if arr.ndim != 4:
            raise ValueError(
                f"A video must be an array (frames, height, width, channels); got shape {arr.shape}."
            )
        count = int(arr.shape[0])
        size = (int(arr.shape[1]), int(arr.shape[2]))
    if count <= 0:
        raise ValueError("The video has no frames. Check the file decodes (try another codec).")
    if not fps or fps <= 0:
        raise ValueError(f"fps must be positive, got {fps!r}.")
    limit = max_frames or spec.image.max_video_frames
    idx = sample_frame_indices(count, max_frames=limit)
    stamps = tuple(format_timestamp(i / fps) for i in idx)
    frame = plan_image(size, family=spec.name, max_soft_tokens=spec.image.video_budget)
    n = frame.num_soft_tokens
    text = " ".join(f"{t} {spec.boi_token}{spec.video_token}×{n}{spec.eoi_token}" for t in stamps)
    steps = (
        f"{count} frames at {fps:g} fps = {count / fps:.2f} s; sample {len(idx)} of them "
        f"(at most {limit}, evenly spaced).",
        f"Each frame is an image at budget {spec.image.video_budget}: {size[0]}×{size[1]} → "
        f"{frame.resized_size[0]}×{frame.resized_size[1]} → {n} soft tokens.",
        "Each frame is written as 'mm:ss <|image><|video|>×n<image|>' (timestamp = index / fps, "
        "seconds truncated), frames joined by spaces.",
        f"Soft tokens: {len(idx)} × {n} = {len(idx) * n}; markers: {2 * len(idx)}.",
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
        total_tokens=len(idx) * (n + 2),
        steps=steps,
    )
