"""Mel spectrograms: waveform → log-mel frames → frame mask → audio tokens.

:func:`show_long_audio` draws a long clip's windows (``plan_long_audio``) over its waveform:
gids ``"window"`` (one band per window), ``"window_overlap"`` (the spans heard twice) and
``"window_cut"`` (each cut; solid at a quiet point, dashed elsewhere).

Gids: ``"token_boundaries"`` (one line per audio token), ``"cut_30s"`` (the cut at the
family's longest clip), ``"slots_real"`` / ``"slots_padding"`` (a fixed run of
placeholder slots, Gemma 3n's 188), ``"frame_mask"`` / ``"frame_mask_padding"`` (the valid
mel frames in blue, the padding ones hatched).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gemma_explore.facts.families import AudioSpec, FamilySpec
from gemma_explore.processing.features import AudioFeatures, audio_features
from gemma_explore.viz.palette import PADDING, padding_cells, real_cells, rect, waveshow
from gemma_explore.viz.style import current_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["show_long_audio", "show_mel"]

_TOKEN_TICKS = "#0072B2"


def _draw_wave(ax, features: AudioFeatures, a: AudioSpec) -> None:
    """The waveform in seconds, with the cut when the clip is longer than the family takes."""
    st, plan = current_style(), features.plan
    waveshow(ax, plan.waveform, a.sampling_rate)
    ax.set_title(
        f"{plan.duration_s:.2f} s at {a.sampling_rate / 1000:g} kHz"
        + (" (resampled)" if plan.resampled else "")
        + (" — silent" if plan.silent else ""),
        fontsize=st.body,
    )
    ax.set_xlabel("time (s)")
    ax.set_ylabel("amplitude")
    if plan.truncated:
        cut = a.max_seconds
        ax.axvline(cut, color=PADDING, lw=st.lw(2), gid="cut_30s")
        ax.text(  # left of the line: a clip just over the cut leaves no room right of it
            cut,
            0.9,
            f"{cut:g} s cut ",
            ha="right",
            color=PADDING,
            transform=ax.get_xaxis_transform(),
            fontsize=st.small,
        )


def _draw_mel(ax, features: AudioFeatures, a: AudioSpec) -> None:
    """The log-mel frames, with one tick per audio token in a band above them (full-height
    lines would turn silence into a barcode)."""
    from matplotlib.collections import LineCollection

    st, plan, mel = current_style(), features.plan, features.mel  # mel: (frames, bins)
    hop_s = a.hop_length / a.sampling_rate
    ax.imshow(
        mel.T,
        origin="lower",
        aspect="auto",
        interpolation="nearest",
        cmap="magma",
        extent=(0, mel.shape[0] * hop_s, 0, mel.shape[1]),
    )  # (bins, frames)
    tokens, bins = plan.num_encoder_tokens, mel.shape[1]
    band = bins * 0.1
    xs = [i * a.subsampling * hop_s for i in range(tokens)]
    ax.add_collection(
        LineCollection(
            [((x, bins), (x, bins + band)) for x in xs],
            colors=_TOKEN_TICKS,
            linewidths=st.lw(0.5 if tokens > 200 else 0.9),
            gid="token_boundaries",
            label=f"start of an audio token (every {plan.ms_per_token:.0f} ms)",
        )
    )
    ax.set_ylim(0, bins + band)
    ax.set_ylabel("mel bin")
    ax.set_xlabel("time (s)")
    ax.legend(loc="upper right", fontsize=st.small, framealpha=0.9)
    ax.set_title(
        st.fill(
            f"{plan.num_feature_frames} mel frames × {a.mel_bins} bins → {tokens} tokens "
            f"(one per {a.subsampling} frames = {plan.ms_per_token:.0f} ms); colour: "
            "log-mel energy, bright = loud; low bins = low pitch",
            9.5,
        ),
        fontsize=st.body,
    )


def _draw_frame_mask(ax, features: AudioFeatures, a: AudioSpec) -> None:
    """Which mel frames are valid (blue, as a real token) and which are padding the
    encoder ignores (hatched): one run of each, so a clip with no padding is one blue bar
    whose title says so, not a black strip that reads as silence."""
    st, mask = current_style(), features.mask  # (frames,)
    hop_s = a.hop_length / a.sampling_rate
    valid, n = int(mask.sum()), len(mask)
    runs, start = [], 0
    for i in range(1, n + 1):  # contiguous runs of valid / padding frames, in seconds
        if i == n or mask[i] != mask[start]:
            runs.append((bool(mask[start]), start * hop_s, (i - start) * hop_s))
            start = i
    real = [rect(x, 0, w, 1) for ok, x, w in runs if ok]
    pad = [rect(x, 0, w, 1) for ok, x, w in runs if not ok]
    ax.add_collection(real_cells(real, gid="frame_mask"))
    ax.add_collection(padding_cells(pad, gid="frame_mask_padding", linewidth=0.6))
    ax.set_ylim(0, 1)
    ax.set_yticks([])
    ax.set_xlabel("time (s)")
    title = (
        f"frame mask: all {n} frames valid (blue), no padding frames in this clip"
        if valid == n
        else f"frame mask: {valid} valid frames (blue) of {n}; hatched = padding frames "
        "the encoder ignores"
    )
    ax.set_title(st.fill(title, 9.5, size=st.small), fontsize=st.small)


def _draw_slots(ax, features: AudioFeatures, a: AudioSpec) -> None:
    """A fixed run of placeholder slots: real tokens first, padding after."""
    st, plan = current_style(), features.plan
    slots = a.fixed_placeholders
    tokens = min(plan.num_encoder_tokens, slots)
    ax.add_collection(real_cells([rect(i, 0, 0.9, 1) for i in range(tokens)], gid="slots_real"))
    ax.add_collection(
        padding_cells(
            [rect(i, 0, 0.9, 1) for i in range(tokens, slots)], gid="slots_padding", linewidth=0.3
        )
    )
    ax.set_xlim(0, slots)
    ax.set_ylim(0, 1)
    ax.set_yticks([])
    ax.set_xlabel("placeholder slot (index in the prompt's audio run)")
    dropped = f", {plan.dropped_tokens} tokens dropped" if plan.dropped_tokens else ""
    ax.set_title(
        f"{slots} placeholder slots: {tokens} real (blue), {plan.num_padding_soft_tokens} "
        f"padding (hatched){dropped}",
        fontsize=st.small,
    )


def _mel_axes(ax: Any, fixed: bool) -> tuple[Figure, list]:
    """The panels, top to bottom. A new figure gets fixed margins in inches rather than
    layout="constrained": that engine measures every tick label before drawing, about a
    third of the figure's time on a cold start."""
    from matplotlib.figure import Figure

    st = current_style()
    n = 4 if fixed else 3
    ratios = [1.2, 2.2, 0.35] + ([0.5] if fixed else [])
    if ax is not None:
        fig = ax.figure
        grid = ax.get_subplotspec().subgridspec(n, 1, height_ratios=ratios, hspace=1.0)
        ax.remove()
    else:
        grow = st.body / 10  # bigger text, bigger margins
        height = (2.0 * n + 0.6) * (1 + (grow - 1) / 3)
        fig = Figure(figsize=(11, height))
        grid = fig.add_gridspec(
            n,
            1,
            height_ratios=ratios,
            left=0.8 * grow / 11,
            right=1 - 0.4 * grow / 11,  # room for half the last tick label
            top=1 - 0.75 * grow / height,
            bottom=0.55 * grow / height,
            hspace=0.8 * grow,
        )
    return fig, [fig.add_subplot(grid[i, 0]) for i in range(n)]


def show_mel(
    features: AudioFeatures | Any,
    *,
    family: str | FamilySpec | None = None,
    sampling_rate: int | None = None,
    ax: Any = None,
) -> Figure:
    """Waveform, log-mel spectrogram, frame mask and token boundaries of a clip.

    ``features`` is an :class:`~gemma_explore.processing.features.AudioFeatures` (drawn as is), or
    any audio input, whose features are computed first with ``family=``. With ``ax=`` the
    panels are drawn in a sub-grid at that axes' place.

    Gemma 4: one token per 4 frames (40 ms), capped at 750. Gemma 3n: one encoder token
    per 16 frames (160 ms) and a strip of the 188 placeholder slots, real vs padding. A
    family without a mel (Unified): its frame view, :func:`show_audio_frames`.

    >>> import gemma_explore as ge
    >>> fig = show_mel(ge.audio_features(ge.sample_speech(), family="gemma4"))
    >>> fig = show_mel(([0.0] * 16000, 16000), family="gemma4")  # one second of silence
    """
    if not isinstance(features, AudioFeatures):
        if family is None:
            raise ValueError("Pass AudioFeatures, or a clip with family='gemma4' / 'gemma3n'.")
        features = audio_features(features, family=family, sampling_rate=sampling_rate)
    spec = features.spec
    if not spec.audio.has_mel:  # no mel: the raw-frame view (viz/embedder.py)
        from gemma_explore.viz.embedder import show_audio_frames

        return show_audio_frames(features.plan, ax=ax)
    a, plan = spec.audio, features.plan
    fixed = a.fixed_placeholders is not None
    fig, axes = _mel_axes(ax, fixed)
    for draw, panel in zip(
        (_draw_wave, _draw_mel, _draw_frame_mask, _draw_slots), axes, strict=False
    ):
        draw(panel, features, a)
    end = max(plan.duration_s, 1e-3, len(features.mask) * a.hop_length / a.sampling_rate)
    for panel in axes[:3]:
        panel.set_xlim(0, end)
    fig.suptitle(
        f"{spec.display_name} audio: {plan.num_soft_tokens} placeholders",
        fontsize=current_style().title,
    )
    return fig


_WINDOW_COLOURS = ("#0072B2", "#E69F00")  # alternate, so neighbouring windows differ


def show_long_audio(plan: Any, *, ax: Any = None) -> Figure:
    """A :class:`~gemma_explore.plans.long_audio.LongAudioPlan`'s windows over the clip:
    one band per window with its tokens, the overlaps hatched, each cut a line (solid
    where the cut found a quiet point).

    >>> from gemma_explore.plans.long_audio import plan_long_audio
    >>> fig = show_long_audio(plan_long_audio(95 * 16_000, family="gemma3n"))
    >>> len([p for p in fig.axes[0].patches if p.get_gid() == "window"])
    4
    """
    from matplotlib.figure import Figure

    st = current_style()
    if ax is None:
        fig = Figure(figsize=(11, 2.8), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    rate = plan.spec.audio.sampling_rate
    if plan.waveform is not None:
        peak = float(abs(plan.waveform).max()) or 1.0
        waveshow(ax, plan.waveform / peak, rate)
    ws = plan.windows
    for w in ws:
        band = rect(
            w.start_s,
            1.1 + 0.35 * (w.index % 2),
            w.duration_s,
            0.3,
            color=_WINDOW_COLOURS[w.index % 2],
            alpha=0.85,
            gid="window",
        )
        ax.add_patch(band)
        ax.text(
            w.start_s + w.duration_s / 2,
            1.25 + 0.35 * (w.index % 2),
            f"{w.index}: {w.audio_tokens} tok",
            ha="center",
            va="center",
            color="white",
            fontsize=st.small,
        )
    for a, b in zip(ws, ws[1:], strict=False):
        if b.start < a.end:
            ax.add_patch(
                rect(
                    b.start_s,
                    -1.05,
                    a.end_s - b.start_s,
                    2.1,
                    facecolor="none",
                    hatch="///",
                    edgecolor=PADDING,
                    lw=0,
                    gid="window_overlap",
                )
            )
        ax.axvline(
            a.end_s,
            color="#D55E00",
            lw=st.lw(1.2),
            gid="window_cut",
            linestyle="-" if a.cut == "quiet" else "--",
        )
    ax.set_xlim(0, max(plan.duration_s, 1e-3))
    ax.set_ylim(-1.1, 1.9)
    ax.set_yticks([])
    ax.set_xlabel("seconds")
    ax.set_title(
        f"{plan.spec.display_name}: {len(ws)} windows of ≤ {plan.max_window_s:g} s, "
        f"{plan.overlap_s:g} s overlap ({plan.audio_tokens} audio tokens)",
        fontsize=st.title,
    )
    return fig
