"""Mel spectrograms: waveform → log-mel frames → frame mask → audio tokens.

Gids: ``"token_boundaries"`` (one line per audio token), ``"cut_30s"`` (the 30 s cut),
``"slots_real"`` / ``"slots_padding"`` (Gemma 3n's 188 placeholder slots),
``"frame_mask"``.
"""

from __future__ import annotations

from typing import Any

from ..families import get_family
from ..features import AudioFeatures, audio_features
from .palette import PADDING, padding_cells, real_cells

__all__ = ["show_mel"]


def show_mel(
    features: AudioFeatures | Any,
    *,
    family: str | None = None,
    sampling_rate: int | None = None,
    ax: Any = None,
):
    """Waveform, log-mel spectrogram, frame mask and token boundaries of a clip.

    ``features`` is an :class:`~gemma_explore.features.AudioFeatures` (drawn as is), or
    any audio input, whose features are computed first with ``family=``.

    Gemma 4: one token per 4 frames (40 ms), capped at 750. Gemma 3n: one encoder token
    per 16 frames (160 ms) and a strip of the 188 placeholder slots, real vs padding.

    >>> fig = show_mel(ge.audio_features("speech.wav", family="gemma4"))   # doctest: +SKIP
    >>> fig = show_mel((wave, 16000), family="gemma4")                      # doctest: +SKIP
    """
    # Plain matplotlib, not librosa.display: importing that compiles numba kernels
    # (seconds on a cold start, before the first figure of a demo request).
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    if not isinstance(features, AudioFeatures):
        if family is None:
            raise ValueError("Pass AudioFeatures, or a clip with family='gemma4' / 'gemma3n'.")
        features = audio_features(features, family=family, sampling_rate=sampling_rate)
    spec = get_family(features.family)
    if not spec.audio.has_mel:  # Unified: no mel; its frame view (viz/embedder.py)
        from .embedder import show_audio_frames

        return show_audio_frames(features.plan, ax=ax)
    plan, mel, mask = features.plan, features.mel, features.mask  # (frames, bins), (frames,)
    wave = plan.waveform
    a = spec.audio
    hop_s = a.hop_length / a.sampling_rate
    frames_per_token = a.subsampling
    fixed = a.fixed_placeholders is not None
    n_rows = 4 if fixed else 3
    if ax is not None:
        raise ValueError("show_mel draws several aligned panels; leave ax=None.")
    height = 2.0 * n_rows + 0.6
    fig = Figure(figsize=(11, height))
    ratios = [1.2, 2.2, 0.35] + ([0.5] if fixed else [])
    # Fixed margins in inches, not layout="constrained": that engine measures every tick
    # label before drawing, about a third of the figure's time on a cold start.
    axes = fig.subplots(
        n_rows, 1, height_ratios=ratios, sharex=False,
        gridspec_kw=dict(left=0.75 / 11, right=1 - 0.25 / 11, top=1 - 0.75 / height,
                         bottom=0.5 / height, hspace=0.8),
    )  # fmt: skip
    duration = max(plan.duration_s, 1e-3)

    wax, max_, kax = axes[0], axes[1], axes[2]
    _waveshow(wax, wave, a.sampling_rate)
    wax.set_title(
        f"{plan.duration_s:.2f} s at {a.sampling_rate / 1000:g} kHz"
        + (" (resampled)" if plan.resampled else "")
        + (" — silent" if plan.silent else ""),
        fontsize=10,
    )
    wax.set_xlabel("time (s)")
    wax.set_ylabel("amplitude")
    if plan.truncated:
        cut = a.max_seconds
        wax.axvline(cut, color=PADDING, lw=2, gid="cut_30s")
        wax.text(
            cut, 0.9, f" {cut:g} s cut", color=PADDING, transform=wax.get_xaxis_transform(),
            fontsize=9,
        )  # fmt: skip
    max_.imshow(
        mel.T,  # (bins, frames): low bins at the bottom
        origin="lower",
        aspect="auto",
        interpolation="nearest",
        cmap="magma",
        extent=(0, mel.shape[0] * hop_s, 0, mel.shape[1]),
    )
    max_.set_xlabel("time (s)")
    tokens = plan.num_encoder_tokens
    xs = [i * frames_per_token * hop_s for i in range(tokens)]
    # Token starts as ticks in a band above the spectrogram, not lines through it:
    # full-height lines turn silence into a barcode.
    bins = mel.shape[1]
    band = bins * 0.08
    max_.add_collection(
        LineCollection(
            [((x, bins), (x, bins + band)) for x in xs],
            colors="#0072B2",
            linewidths=0.5 if tokens > 200 else 0.9,
            gid="token_boundaries",
            label=f"start of an audio token (every {plan.ms_per_token:.0f} ms)",
        )
    )
    max_.set_ylim(0, bins + band)
    max_.set_ylabel("mel bin (low → high pitch)")
    max_.set_xlabel("time (s)")
    max_.legend(loc="upper right", fontsize=9, framealpha=0.9)
    max_.set_title(
        f"{plan.num_mel_frames} mel frames × {a.mel_bins} bins → {tokens} "
        f"tokens (one per {frames_per_token} frames = {plan.ms_per_token:.0f} ms); "
        "colour: log-mel energy, bright = loud",
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
    kax.set_xlabel("time (s)")
    kax.set_title(
        f"frame mask: {int(mask.sum())} real frames (black) of {len(mask)}; "
        "white = padding frames the encoder ignores",
        fontsize=9,
    )
    for axis in axes[:3]:
        axis.set_xlim(0, max(duration, len(mask) * hop_s))
    if fixed:
        sax = axes[3]
        slots = a.fixed_placeholders
        real = [Rectangle((i, 0), 0.9, 1) for i in range(min(tokens, slots))]
        pad = [Rectangle((i, 0), 0.9, 1) for i in range(min(tokens, slots), slots)]
        sax.add_collection(real_cells(real, gid="slots_real"))
        sax.add_collection(padding_cells(pad, gid="slots_padding", linewidth=0.3))
        sax.set_xlim(0, slots)
        sax.set_ylim(0, 1)
        sax.set_yticks([])
        sax.set_xlabel("placeholder slot (index in the prompt's audio run)")
        sax.set_title(
            f"{slots} placeholder slots: {min(tokens, slots)} real (blue), {plan.padding_slots} "
            f"padding (hatched)"
            + (f", {plan.dropped_tokens} tokens dropped" if plan.dropped_tokens else ""),
            fontsize=9,
        )
    fig.suptitle(f"{spec.display_name} audio: {plan.num_placeholders} placeholders", fontsize=12)
    return fig


def _waveshow(ax: Any, wave: Any, rate: int, *, columns: int = 2000) -> None:
    """The waveform as its min/max envelope over ``columns`` time buckets (what
    ``librosa.display.waveshow`` draws for a long clip), in seconds."""
    import numpy as np

    wave = np.asarray(wave, dtype=np.float32)  # (samples,)
    if wave.size == 0:
        return
    per = max(1, -(-wave.size // columns))
    pad = (-wave.size) % per
    blocks = np.pad(wave, (0, pad), mode="edge").reshape(-1, per)  # (buckets, per)
    t = np.arange(blocks.shape[0]) * per / rate
    ax.fill_between(t, blocks.min(axis=1), blocks.max(axis=1), color="#555555", lw=0.5)
    ax.set_xlabel("time (s)")
