"""Mel spectrograms: waveform → log-mel frames → frame mask → audio tokens.

Gids: ``"token_boundaries"`` (one line per audio token), ``"cut_30s"`` (the 30 s cut),
``"slots_real"`` / ``"slots_padding"`` (Gemma 3n's 188 placeholder slots),
``"frame_mask"``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ..families import get_family
from ..media import load_audio
from ..plans import AudioPlan, plan_audio
from .palette import PADDING, padding_cells, real_cells

__all__ = ["mel_features", "show_mel"]


@lru_cache(maxsize=2)
def _extractor(family: str):
    if family == "gemma3n":
        from transformers import Gemma3nAudioFeatureExtractor

        return Gemma3nAudioFeatureExtractor()
    from transformers import Gemma4AudioFeatureExtractor

    return Gemma4AudioFeatureExtractor()


def mel_features(wave: np.ndarray, *, family: str) -> tuple[np.ndarray, np.ndarray]:
    """The family's real feature extractor on one clip: (frames, 128) log-mel, (frames,) mask."""
    out = _extractor(get_family(family).name)([wave], return_tensors="np")
    return out["input_features"][0], out["input_features_mask"][0].astype(bool)


def show_mel(audio: Any, *, family: str, sampling_rate: int | None = None, ax: Any = None):
    """Waveform, log-mel spectrogram, frame mask and token boundaries of a clip.

    Gemma 4: one token per 4 frames (40 ms), capped at 750. Gemma 3n: one encoder token
    per 16 frames (160 ms) and a strip of the 188 placeholder slots, real vs padding.

    >>> fig = show_mel((wave, 16000), family="gemma4")               # doctest: +SKIP
    """
    import librosa.display
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    spec = get_family(family)
    rate = sampling_rate
    if isinstance(audio, int | np.integer):
        raise ValueError(
            "show_mel needs the waveform, not a sample count; use plan_audio for counts."
        )
    wave, _notes = load_audio(audio, sampling_rate=rate, target_rate=spec.audio.sampling_rate)
    plan: AudioPlan = plan_audio(wave, family=spec.name)
    mel, mask = mel_features(wave, family=spec.name)  # (frames, 128), (frames,)
    hop_s = spec.audio.hop_length / spec.audio.sampling_rate
    frames_per_token = 16 if spec.name == "gemma3n" else 4
    n_rows = 4 if spec.name == "gemma3n" else 3
    if ax is not None:
        raise ValueError("show_mel draws several aligned panels; leave ax=None.")
    fig = Figure(figsize=(11, 2.0 * n_rows + 0.6), layout="constrained")
    ratios = [1.2, 2.2, 0.35] + ([0.5] if spec.name == "gemma3n" else [])
    axes = fig.subplots(n_rows, 1, height_ratios=ratios, sharex=False)
    duration = max(plan.duration_s, 1e-3)

    wax, max_, kax = axes[0], axes[1], axes[2]
    librosa.display.waveshow(wave, sr=spec.audio.sampling_rate, ax=wax, color="#555555")
    wax.set_title(
        f"{plan.duration_s:.2f} s at 16 kHz"
        + (" (resampled)" if plan.resampled else "")
        + (" — silent" if plan.silent else ""),
        fontsize=10,
    )
    wax.set_xlabel("")
    if plan.truncated:
        for a in (wax,):
            a.axvline(30.0, color=PADDING, lw=2, gid="cut_30s")
        wax.text(
            30.0, 0.9, " 30 s cut", color=PADDING, transform=wax.get_xaxis_transform(), fontsize=9
        )
    librosa.display.specshow(
        mel.T,
        sr=spec.audio.sampling_rate,
        hop_length=spec.audio.hop_length,
        x_axis="time",
        ax=max_,
        cmap="magma",
    )
    tokens = plan.num_encoder_tokens
    xs = [i * frames_per_token * hop_s for i in range(tokens)]
    max_.add_collection(
        LineCollection(
            [((x, 0), (x, mel.shape[1])) for x in xs],
            colors="white",
            linewidths=0.3 if tokens > 200 else 0.6,
            alpha=0.6,
            gid="token_boundaries",
        )
    )
    max_.set_ylim(0, mel.shape[1])
    max_.set_ylabel("mel bin")
    max_.set_title(
        f"{plan.num_mel_frames} mel frames × {spec.audio.mel_bins} bins → {tokens} "
        f"tokens (one per {frames_per_token} frames = {plan.ms_per_token:.0f} ms)",
        fontsize=10,
    )
    kax.imshow(
        mask[None, :].astype(float),
        aspect="auto",
        cmap="Greys",
        vmin=0,
        vmax=1,
        extent=(0, len(mask) * hop_s, 0, 1),
        gid="frame_mask",
    )
    kax.set_yticks([])
    kax.set_title(f"frame mask: {int(mask.sum())} real frames of {len(mask)}", fontsize=9)
    for a in axes[:3]:
        a.set_xlim(0, max(duration, len(mask) * hop_s))
    if spec.name == "gemma3n":
        sax = axes[3]
        slots = spec.audio.fixed_placeholders
        real = [Rectangle((i, 0), 0.9, 1) for i in range(min(tokens, slots))]
        pad = [Rectangle((i, 0), 0.9, 1) for i in range(min(tokens, slots), slots)]
        sax.add_collection(real_cells(real, gid="slots_real"))
        sax.add_collection(padding_cells(pad, gid="slots_padding", linewidth=0.3))
        sax.set_xlim(0, slots)
        sax.set_ylim(0, 1)
        sax.set_yticks([])
        sax.set_title(
            f"188 placeholder slots: {min(tokens, slots)} real, {plan.padding_slots} "
            f"padding" + (f", {plan.dropped_tokens} tokens dropped" if plan.dropped_tokens else ""),
            fontsize=9,
        )
    fig.suptitle(f"{spec.display_name} audio: {plan.num_placeholders} placeholders", fontsize=12)
    return fig
