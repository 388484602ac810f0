"""Encoder-free families (Gemma 4 Unified): the patch grid, the audio frames, and the
three families side by side.

* :func:`show_embedder_grid`: each soft token is one block of raw pixels (3×3 patches,
  48×48 px, 6912 values for Unified), projected on its own: nothing mixes blocks.
* :func:`show_audio_frames`: the waveform cut into raw-sample frames, one token each,
  with the frames vLLM's prompt has no placeholder for marked, and the last frames
  enlarged so a single dropped frame is seen.
* :func:`show_three_way`: one photo and one clip through every family.

Gids: ``"token_lines"``, ``"zoom_block"``, ``"frame_cells"``, ``"vllm_dropped"``,
``"zoom_kept"`` and ``"zoom_dropped"`` (the enlarged last frames), ``"real_rows"``,
``"padding_rows"``, ``"vision_params"`` / ``"audio_params"`` (the three-way figure's bars of
released parameters) and ``"params_label"`` (each bar's count).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gemma_explore.colors import KIND_COLORS, PADDING, VALID
from gemma_explore.facts.families import FAMILIES, FamilySpec, get_family
from gemma_explore.media.loaders import load_image
from gemma_explore.plans.audio import AudioPlan, plan_audio
from gemma_explore.plans.image import ImagePlan, plan_image
from gemma_explore.plans.vllm import vllm_audio_tokens
from gemma_explore.sizes import size_label
from gemma_explore.viz.palette import (
    cell_axes,
    grid_lines,
    padding_cells,
    panels,
    pixels,
    real_cells,
    rect,
    slot_strip,
    waveshow,
)
from gemma_explore.viz.style import current_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["show_audio_frames", "show_embedder_grid", "show_three_way"]


def _encoder_free(family: str | FamilySpec | None) -> FamilySpec:
    """``family``'s spec, or (None) the first family without encoders."""
    if family is not None:
        return get_family(family)
    return next(s for s in FAMILIES.values() if s.encoder_free)


# -- the image path ---------------------------------------------------------------------
def _draw_block_grid(ax, plan: ImagePlan, block: tuple[int, int]) -> None:
    """The resized image with one cell per soft token, and the enlarged block framed."""
    st = current_style()
    th, tw = plan.resized_size
    cell = plan.spec.image.cell_px
    image = pixels(plan, plan.resized_size)
    if image is not None:
        ax.imshow(np.asarray(image), extent=(0, tw, th, 0), interpolation="nearest")
    ax.add_collection(grid_lines(tw, th, cell, color=VALID, lw=1.0, gid="token_lines"))
    br, bc = block
    ax.add_patch(
        rect(
            bc * cell,
            br * cell,
            cell,
            cell,
            fill=False,
            ec=PADDING,
            lw=st.lw(2.5),
            gid="zoom_block",
        )
    )
    cell_axes(ax, tw, th)
    ax.set_title(
        f"{size_label((th, tw))} → {size_label(plan.pooled_grid, unit='blocks')} of {cell} px"
        f"\n= {plan.num_soft_tokens} tokens",
        fontsize=st.body,
    )


def _draw_block_zoom(ax, plan: ImagePlan, block: tuple[int, int], index: int) -> None:
    """One block enlarged with its patches: these values are the token's whole input."""
    st = current_style()
    spec = plan.spec
    cell, p = spec.image.cell_px, spec.image.patch_size
    image = pixels(plan, plan.resized_size)
    if image is not None:
        br, bc = block
        crop = np.asarray(image)[br * cell : (br + 1) * cell, bc * cell : (bc + 1) * cell]
        ax.imshow(crop, extent=(0, cell, cell, 0), interpolation="nearest")
    ax.add_collection(grid_lines(cell, cell, p, color="white", lw=1.5, gid="zoom_patch_lines"))
    for spine in ax.spines.values():
        spine.set(edgecolor=PADDING, linewidth=st.lw(2.5))
    cell_axes(ax, cell, cell)
    ax.set_title(
        f"token {index}: {cell} × {cell} × 3\n= {cell * cell * 3} raw values\n"
        "→ LN → Dense → LN\n→ + position (x, y) → LN\n→ RMSNorm → Linear\nno tower: blocks never mix",
        fontsize=st.small,
    )


def _draw_block_rows(ax, plan: ImagePlan) -> None:
    """pixel_values: one row per token up to the budget, real blocks then padding."""
    st = current_style()
    cell = plan.spec.image.cell_px
    budget, n = plan.max_soft_tokens, plan.num_soft_tokens
    per_row = max(1, min(budget, 70))
    rows = slot_strip(ax, n, budget, per_row, gids=("real_rows", "padding_rows"), pad_linewidth=0.5)
    cell_axes(ax, per_row, rows)
    ax.set_title(
        st.fill(
            f"pixel_values ({budget}, {cell * cell * 3}): one square per row = one token; "
            f"{n} blocks (blue) + {budget - n} padding rows (hatched)",
            9.5,
        ),
        fontsize=st.body,
    )


def show_embedder_grid(
    plan: ImagePlan | Any,
    *,
    family: str | FamilySpec | None = None,
    max_soft_tokens: int | None = None,
    block: int | None = None,
    ax: Any = None,
) -> Figure:
    """An encoder-free family's image path: blocks of raw pixels, each its own soft token.

    Left: the resized image with one cell per soft token. Right: one block (``block``,
    default the middle one) enlarged, with its 16 px patches: these values are the
    token's whole input. Bottom: pixel_values, ``budget`` rows, real blocks then padding.
    ``plan`` may also be any image input, planned first for ``family`` (default: the
    first family without encoders) at ``max_soft_tokens``.

    >>> fig = show_embedder_grid(plan_image((640, 480), family="gemma4_unified"))
    """
    if not isinstance(plan, ImagePlan):
        spec = _encoder_free(family)
        plan = plan_image(load_image(plan), family=spec, max_soft_tokens=max_soft_tokens)
    spec = plan.spec
    if not spec.encoder_free:
        raise ValueError(
            f"{spec.display_name} has a vision tower; use show_patch_grid(plan) for it."
        )
    rows, cols = plan.pooled_grid
    index = (rows // 2) * cols + cols // 2 if block is None else block
    if not 0 <= index < plan.num_soft_tokens:
        raise ValueError(f"block must be 0 … {plan.num_soft_tokens - 1}, got {index}.")
    fig, grid = panels(ax, (10, 7.2), 2, 2, height_ratios=[4.6, 1.2], width_ratios=[2.6, 1])
    _draw_block_grid(fig.add_subplot(grid[0, 0]), plan, divmod(index, cols))
    _draw_block_zoom(fig.add_subplot(grid[0, 1]), plan, divmod(index, cols), index)
    _draw_block_rows(fig.add_subplot(grid[1, :]), plan)
    if ax is None:
        fig.suptitle(
            f"{spec.display_name}: pixels straight to tokens", fontsize=current_style().title
        )
    return fig


# -- the audio path ---------------------------------------------------------------------
def _draw_envelope(ax, wave: np.ndarray | None, rate: int, *, start: int = 0) -> str:
    """Samples from ``start`` on as their min/max envelope (in seconds), with y-limits
    around the signal, so a quiet or constant clip is not a line on an empty axis.
    Returns a note for the title when every sample is the same."""
    if wave is None or not wave.size:
        return ""
    part = wave[start:]  # (samples,)
    waveshow(ax, part, rate, offset_s=start / rate)
    peak = float(np.max(np.abs(part))) if part.size else 0.0
    ax.set_ylim(-1.15 * peak - 1e-3, 1.15 * peak + 1e-3)
    constant = part.size and np.ptp(part) == 0
    return f"; every sample is {part[0]:.3g} (a constant signal)" if constant else ""


def _frame_cells(ax, frames: range, kept: int, per: int, sr: int, y0: float, h: float) -> int:
    """One cell per frame of ``per`` samples: blue if vLLM's prompt keeps it, hatched if
    not (one collection each); returns how many were hatched."""
    step = 1 if len(frames) <= 400 else 10
    cells = [(i, rect(i * per / sr, y0, step * per / sr * 0.92, h)) for i in frames[::step]]
    ax.add_collection(real_cells([c for i, c in cells if i < kept], gid="frame_cells"))
    lost = [c for i, c in cells if i >= kept]
    if lost:
        ax.add_collection(padding_cells(lost, gid="vllm_dropped", linewidth=1.0))
    return len(lost)


def _draw_last_frames(ax, plan: AudioPlan, spec: FamilySpec, kept: int, n: int = 4) -> None:
    """The last ``n`` frames enlarged: samples, frame edges, and which frame vLLM drops."""
    st = current_style()
    per, sr = spec.audio.samples_per_token, spec.audio.sampling_rate
    frames = plan.num_encoder_tokens
    first = max(0, frames - n)
    _draw_envelope(ax, plan.waveform, sr, start=first * per)
    lo, hi = ax.get_ylim()
    for i in range(first, frames):  # patches, so the overview's collections stay its own
        lost = i >= kept
        ax.add_patch(
            rect(
                i * per / sr,
                lo,
                per / sr * 0.92,
                0.18 * (hi - lo),
                facecolor="white" if lost else VALID,
                hatch="///" if lost else None,
                edgecolor=PADDING if lost else "none",
                lw=st.lw(1.0),
                gid="zoom_dropped" if lost else "zoom_kept",
            )
        )
    for i in range(first, frames + 1):
        ax.axvline(i * per / sr, color="black", lw=st.lw(0.8))
    ax.set_xlim(first * per / sr, frames * per / sr)
    ax.set_ylim(lo, hi)
    last = plan.num_samples - (frames - 1) * per
    dropped = f"; hatched: vLLM drops {frames - kept}" if frames > kept else ""
    ax.set_title(
        st.fill(
            f"last {frames - first} frames enlarged: the last holds {last} of "
            f"{per} samples{dropped}",
            2.6,
            size=st.small,
        ),
        fontsize=st.small,
    )
    ax.set_xlabel("time (s)")
    ax.set_yticks([])


def show_audio_frames(
    plan: AudioPlan | Any,
    *,
    family: str | FamilySpec | None = None,
    ax: Any = None,
    max_frames: int = 400,
) -> Figure:
    """An encoder-free family's audio path: raw frames of samples, one token each.

    The waveform over a cell per frame (blue: the prompt has a placeholder for it in both
    transformers and vLLM; hatched: vLLM's prompt has none, so vLLM's runner drops that
    embedding), and the last frames enlarged. ``plan`` is an AudioPlan or any audio input
    (planned for ``family``, default the first family without encoders). Clips longer
    than ``max_frames`` frames draw one cell per 10 frames.

    >>> fig = show_audio_frames(plan_audio(([0.0] * 16000, 16000), family="gemma4_unified"))
    """
    if not isinstance(plan, AudioPlan):
        plan = plan_audio(plan, family=_encoder_free(family))
    spec = plan.spec
    a, st = spec.audio, current_style()
    if a.samples_per_token is None:
        raise ValueError(f"{spec.display_name} uses a mel spectrogram; use show_mel for it.")
    per, sr, frames = a.samples_per_token, a.sampling_rate, plan.num_encoder_tokens
    kept = min(vllm_audio_tokens(plan.num_samples, family=spec), frames)
    fig, grid = panels(ax, (11, 4.4), 2, 2, height_ratios=[2, 0.8], width_ratios=[3, 1])
    wax = fig.add_subplot(grid[0, 0])
    fax = fig.add_subplot(grid[1, 0], sharex=wax)
    note = _draw_envelope(wax, plan.waveform, sr)
    wax.set_ylabel("amplitude")
    wax.set_title(
        st.fill(
            f"{spec.display_name}: {plan.duration_s:.3f} s of raw {sr / 1000:g} "
            f"kHz samples, no mel, no tower{note}",
            7.5,
        ),
        fontsize=st.body,
    )
    lost = _frame_cells(fax, range(frames), kept, per, sr, 0, 1)
    fax.set_ylim(0, 1)
    fax.set_yticks([])
    fax.set_xlabel("time (s)")
    wax.set_xlim(0, max(frames * per / sr, 1e-3))
    fax.set_title(
        st.fill(
            f"{frames} frames of {per} samples ({plan.ms_per_token:.0f} ms) = {frames} tokens"
            + (f"; {lost} hatched: no placeholder in vLLM's prompt" if lost else ""),
            7.5,
            size=st.small,
        ),
        fontsize=st.small,
    )
    _draw_last_frames(fig.add_subplot(grid[:, 1]), plan, spec, kept)
    return fig


# -- every family side by side ----------------------------------------------------------
def _draw_family_cells(ax, row: Any) -> None:
    """One family's token cells over the image as it resizes it; the title gives its image
    and audio token counts (and vLLM's, where its prompt holds fewer)."""
    st, plan = current_style(), row.image_plan
    th, tw = plan.resized_size
    image = pixels(plan, plan.resized_size)
    if image is not None:
        ax.imshow(np.asarray(image), extent=(0, tw, th, 0))
    cell = get_family(row.family).image.cell_px
    ax.add_collection(grid_lines(tw, th, cell, color=VALID, lw=0.6, gid="token_lines"))
    cell_axes(ax, tw, th)
    title = f"{row.display_name}\n{size_label((th, tw))}\n→ {row.image_tokens} image tokens"
    if row.audio_tokens is not None:
        vllm = row.vllm_audio_tokens
        title += f"\n{row.audio_tokens} audio tokens" + (
            f" (vLLM: {vllm})" if vllm != row.audio_tokens else ""
        )
    ax.set_title(title, fontsize=st.body)


def _draw_params(ax, rows: list) -> None:
    """A bar per family and modality: the released parameters of what turns pixels and
    samples into soft tokens (a tower, or Unified's embedder), on a log scale so a 2.5 M
    embedder and a 681 M tower both show; each bar says its count and what it is."""
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter

    st = current_style()
    rows = [r for r in rows if r.sizes is not None]
    colors = {"vision": KIND_COLORS["image_soft"], "audio": KIND_COLORS["audio_soft"]}
    height, values = 0.38, []
    for i, r in enumerate(rows):
        kind = "embedder" if get_family(r.family).encoder_free else "tower"
        for j, (modality, n) in enumerate(
            (("vision", r.sizes.vision_params), ("audio", r.sizes.audio_params))
        ):
            if not n:
                continue
            y = i + (j - 0.5) * height
            ax.barh(
                y, n / 1e6, height=height * 0.92, color=colors[modality], gid=f"{modality}_params"
            )
            ax.annotate(
                f"{n / 1e6:,.1f} M ({kind})",
                (n / 1e6, y),
                xytext=(st.small / 3, 0),
                textcoords="offset points",
                va="center",
                fontsize=st.small,
                gid="params_label",
            )
            values.append(n / 1e6)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))  # 10, 100, not 10¹
    if values:
        ax.set_xlim(min(values) / 2, max(values) * 12)  # room right of the longest label
    ax.set_yticks(range(len(rows)), [r.display_name for r in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the families top to bottom, as left to right above
    ax.set_xlabel("released parameters (millions, log scale)")
    ax.legend(
        handles=[Patch(facecolor=c, label=m) for m, c in colors.items()],
        loc="lower right",
        fontsize=st.small,
        frameon=False,
    )
    ax.set_title(
        "what turns pixels and samples into soft tokens: a tower, or an embedder",
        fontsize=st.body,
    )


def show_three_way(comparison: Any, *, ax: Any = None) -> Figure:
    """One figure for :func:`~gemma_explore.parity.comparison.compare_families`: for each
    family, its token cells over the image and its audio token count (and vLLM's); below,
    a bar chart of the released parameters of each family's tower or embedder (when
    ``compare_families`` counted them).

    >>> import gemma_explore as ge
    >>> fig = show_three_way(ge.compare_families(ge.sample_photo(), ge.sample_speech()))
    """
    st = current_style()
    rows = comparison.rows
    width_in = min(11.5, 3.9 * len(rows))
    sized = [r for r in rows if r.sizes is not None]
    bars_in = (0.55 * len(sized) + 1.1) * st.small / 9 if sized else 0.0
    heights = [4.6] + ([bars_in] if sized else [])
    fig, grid = panels(
        ax,
        (width_in, 4.6 + bars_in + 0.6 * st.body / 10),
        len(heights),
        len(rows),
        height_ratios=heights,
    )
    for col, r in enumerate(rows):  # the images first: fig.axes[:n] are the families
        _draw_family_cells(fig.add_subplot(grid[0, col]), r)
    if sized:
        _draw_params(fig.add_subplot(grid[1, :]), sized)
    h, w = comparison.image_size
    clip = (
        "" if comparison.audio_seconds is None else f" and a {comparison.audio_seconds:.2f} s clip"
    )
    fig.suptitle(
        f"One {size_label((h, w))} image{clip} through {len(rows)} families", fontsize=st.title
    )
    return fig
