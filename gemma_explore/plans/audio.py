"""Audio plans: how a clip is cut, padded, framed and strided into soft tokens, and why.

>>> from gemma_explore.plans.audio import plan_audio
>>> plan_audio(16_000 * 4, family="gemma4").num_soft_tokens  # doctest: +SKIP
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gemma_explore.facts.families import DEFAULT_FAMILY, FamilySpec, get_family
from gemma_explore.media.loaders import (
    load_audio,
)
from gemma_explore.plans.rules import Rule, prompt_rule, steps_table
from gemma_explore.tables import ShownAsTable, Table

__all__ = ["AudioPlan", "conv_out", "plan_audio"]

# --------------------------------------------------------------------------- audio


def conv_out(frames: int) -> int:
    """Output length of a kernel-3, stride-2 conv with 2 frames of padding: ceil(t/2)."""
    return (frames + 2 - 3) // 2 + 1


@dataclass(frozen=True)
class AudioPlan(ShownAsTable):
    """How one clip becomes mel frames and audio tokens (all counts at 16 kHz)."""

    # The family whose rules made the plan: its facts, held, so no reader looks them up again.
    spec: FamilySpec = field(repr=False)
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
    num_feature_frames: int  # rows of input_features (Unified: raw slices, one per token)
    num_valid_frames: int  # frames whose mask is True (real audio)
    subsampling: int  # the encoder's time reduction
    num_encoder_tokens: int  # embeddings of real audio the encoder produces
    num_soft_tokens: int  # audio placeholders in the prompt (3n: always 188), as ImagePlan's
    num_padding_soft_tokens: int  # 3n: placeholders filled with the padding embedding
    dropped_tokens: int  # encoder tokens that do not fit the placeholders
    ms_per_token: float  # audio time one token stands for
    total_tokens: int  # prompt tokens incl. markers (+ 3n's "\n\n" wrappers)
    silent: bool = False  # every sample is 0: tokens are still spent
    steps: tuple[str, ...] = field(default=(), compare=False)
    # The mono 16 kHz waveform the plan was made from, kept for figures; None when
    # planned from a sample count.
    waveform: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def family(self) -> str:
        """The family's name ("gemma3n", "gemma4", "gemma4_unified"), read off ``spec``."""
        return self.spec.name

    @property
    def frame_kind(self) -> str:
        """ "mel" (log-mel frames for a tower) or "raw" (encoder-free: slices of
        ``samples_per_token`` samples of the waveform itself, one token each;
        num_feature_frames then counts those)."""
        return "mel" if self.spec.audio.has_mel else "raw"

    @property
    def _frame_label(self) -> str:
        a = self.spec.audio
        return f"raw {a.samples_per_token}-sample" if self.frame_kind == "raw" else "mel"

    def _rows(self) -> list[tuple[str, Any]]:
        khz = f"{self.spec.audio.sampling_rate / 1000:g} kHz"
        rate = self.spec.audio.sampling_rate
        # The cut loses audio, not tokens: what is past 30 s never reaches the encoder, so
        # "dropped tokens" (encoder tokens over the placeholders) is shown only when it isn't 0.
        cut = (
            f" (the first {self.samples_used / rate:g} s; the last "
            f"{(self.num_samples - self.samples_used) / rate:.3f} s are cut, never tokenised)"
            if self.truncated
            else ""
        )
        dropped = [("dropped tokens", self.dropped_tokens)] if self.dropped_tokens else []
        return [
            ("duration", f"{self.duration_s:.3f} s ({self.num_samples} samples @{khz})"),
            ("used", f"{self.samples_used} samples{cut}"),
            (
                f"{self._frame_label} frames (valid)",
                f"{self.num_feature_frames} ({self.num_valid_frames})",
            ),
            ("encoder tokens", self.num_encoder_tokens),
            ("soft tokens", self.num_soft_tokens),
            ("padding soft tokens", self.num_padding_soft_tokens),
            *dropped,
            ("ms per token", self.ms_per_token),
            ("prompt tokens", self.total_tokens),
        ]

    def table(self) -> Table:
        return steps_table(f"AudioPlan — {self.family}", self._rows(), self.steps)

    def __repr__(self) -> str:
        return self.table().text()


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
        audio,
        sampling_rate=sampling_rate,
        target_rate=a.sampling_rate,
        bare_array_rate=a.sampling_rate,
    )
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
    counts = dict(
        num_feature_frames=rows.value,
        num_valid_frames=rows.value,
        num_encoder_tokens=tokens.value,
        num_soft_tokens=tokens.value,
        num_padding_soft_tokens=0,
        dropped_tokens=0,
    )
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
    counts = dict(
        num_feature_frames=frames.value[0],
        num_valid_frames=frames.value[1],
        num_encoder_tokens=real.value,
        num_soft_tokens=spec.audio.fixed_placeholders,
        num_padding_soft_tokens=slots.value[0],
        dropped_tokens=slots.value[1],
    )
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
    counts = dict(
        num_feature_frames=frames.value[0],
        num_valid_frames=frames.value[1],
        num_encoder_tokens=tokens.value,
        num_soft_tokens=tokens.value,
        num_padding_soft_tokens=0,
        dropped_tokens=0,
    )
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

    >>> plan_audio(48_000, family="gemma4").num_soft_tokens
    75
    """
    spec = get_family(family)
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
    prompt = prompt_rule(spec, counts["num_soft_tokens"], "audio")
    return AudioPlan(
        spec=spec,
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
