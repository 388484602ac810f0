"""Gemma 4 Unified, which has no encoder: its patch grid, its audio frames, and the
three families side by side.

* :func:`show_embedder_grid`: each soft token is one 48×48 px block of raw pixels
  (3×3 patches of 16 px, 6912 values), projected on its own: nothing mixes blocks.
* :func:`show_audio_frames`: the waveform cut into 640-sample (40 ms) frames, one token
  each, with the frames vLLM's prompt has no placeholder for marked.
* :func:`show_three_way`: one photo and one clip through Gemma 3n, Gemma 4 and Unified.

Gids: ``"token_lines"``, ``"zoom_block"``, ``"frame_cells"``, ``"vllm_dropped"``,
``"real_rows"``, ``"padding_rows"``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..colors import PADDING, VALID
from ..families import get_family
from ..media import load_image
from ..plans import AudioPlan, ImagePlan, plan_audio, plan_image
from ..sizes import size_label
from ..vllm_rules import vllm_audio_tokens
from .palette import cell_axes, padding_cells, real_cells

__all__ = ["show_audio_frames", "show_embedder_grid", "show_three_way"]


def _rect(x, y, w, h, **kw):
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, **kw)


def _resized(plan: ImagePlan):
    """The plan's pixels resized as the processor resizes them (None: planned from a size)."""
    if plan.image is None:
        return None
    pil = plan.image if getattr(plan.image, "mode", None) == "RGB" else load_image(plan.image)
    th, tw = plan.resized_size
    return pil.resize((tw, th), resample=get_family(plan.family).image.resample)


def show_embedder_grid(
    plan: ImagePlan | Any,
    *,
    max_soft_tokens: int | None = None,
    block: int | None = None,
    ax: Any = None,
):
    """Unified's image path: 48 px blocks of raw pixels, each its own soft token.

    Left: the resized image with one cell per soft token. Right: one block (``block``,
    default the middle one) enlarged, with its 16 px patches: these 48×48×3 = 6912
    values are the token's whole input. Bottom: pixel_values, ``budget`` rows, real
    blocks then padding. With ``ax=`` only the grid is drawn. ``plan`` may also be any
    image input, planned first for Unified at ``max_soft_tokens``.

    >>> fig = show_embedder_grid(plan_image(photo, family="gemma4_unified"))   # doctest: +SKIP
    """
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure

    if not isinstance(plan, ImagePlan):
        plan = plan_image(
            load_image(plan), family="gemma4_unified", max_soft_tokens=max_soft_tokens
        )
    spec = get_family(plan.family)
    if not spec.encoder_free:
        raise ValueError(
            f"{spec.display_name} has a vision tower; use show_patch_grid(plan) for it."
        )
    th, tw = plan.resized_size
    cell = spec.image.cell_px
    rows, cols = plan.pooled_grid
    block = (rows // 2) * cols + cols // 2 if block is None else block
    if not 0 <= block < plan.num_soft_tokens:
        raise ValueError(f"block must be 0 … {plan.num_soft_tokens - 1}, got {block}.")
    br, bc = divmod(block, cols)
    img = _resized(plan)
    if ax is None:
        fig = Figure(figsize=(10, 6.4), layout="constrained")
        axes = fig.subplot_mosaic(
            [["grid", "zoom"], ["strip", "strip"]],
            height_ratios=[4.6, 1],
            width_ratios=[2.2, 1],
        )
        grid_ax, zoom_ax, strip_ax = axes["grid"], axes["zoom"], axes["strip"]
    else:
        fig, grid_ax, zoom_ax, strip_ax = ax.figure, ax, None, None
    if img is not None:
        grid_ax.imshow(np.asarray(img), extent=(0, tw, th, 0), interpolation="nearest")
    xs, ys = np.arange(0, tw + 1, cell), np.arange(0, th + 1, cell)
    segs = [((x, 0), (x, th)) for x in xs] + [((0, y), (tw, y)) for y in ys]
    grid_ax.add_collection(LineCollection(segs, colors=VALID, linewidths=1.0, gid="token_lines"))
    grid_ax.add_patch(
        _rect(bc * cell, br * cell, cell, cell, fill=False, ec=PADDING, lw=2.5, gid="zoom_block")
    )
    cell_axes(grid_ax, tw, th)
    grid_ax.set_title(
        f"{size_label((th, tw))} → {size_label((rows, cols), unit='blocks')} of {cell} px "
        f"= {plan.num_soft_tokens} tokens",
        fontsize=10,
    )
    if zoom_ax is not None:
        if img is not None:
            crop = np.asarray(img)[br * cell : (br + 1) * cell, bc * cell : (bc + 1) * cell]
            zoom_ax.imshow(crop, extent=(0, cell, cell, 0), interpolation="nearest")
        p = spec.image.patch_size
        inner = [((x, 0), (x, cell)) for x in range(0, cell + 1, p)]
        inner += [((0, y), (cell, y)) for y in range(0, cell + 1, p)]
        zoom_ax.add_collection(LineCollection(inner, colors="white", linewidths=1.0))
        cell_axes(zoom_ax, cell, cell)
        zoom_ax.set_title(
            f"token {block}: {cell}×{cell}×3 = {cell * cell * 3} raw values\n"
            "→ LayerNorm → Linear → + position (x, y)\nno tower: no mixing with other blocks",
            fontsize=9,
        )
    if strip_ax is not None:
        budget = plan.max_soft_tokens
        real = [_rect(i, 0, 1, 1) for i in range(plan.num_soft_tokens)]
        pads = [_rect(plan.num_soft_tokens, 0, budget - plan.num_soft_tokens, 1)]
        strip_ax.add_collection(real_cells(real, gid="real_rows"))
        if budget > plan.num_soft_tokens:
            strip_ax.add_collection(padding_cells(pads, gid="padding_rows", linewidth=0.5))
        strip_ax.set_xlim(0, budget)
        strip_ax.set_ylim(0, 1)
        strip_ax.set_yticks([])
        strip_ax.set_xlabel("pixel_values row (one per token)", fontsize=9)
        strip_ax.set_title(
            f"pixel_values ({budget}, {cell * cell * 3}): {plan.num_soft_tokens} blocks + "
            f"{budget - plan.num_soft_tokens} padding rows (hatched)",
            fontsize=9,
        )
    if ax is None:
        fig.suptitle(f"{spec.display_name}: pixels straight to tokens", fontsize=12)
    return fig


def show_audio_frames(plan: AudioPlan | Any, *, ax: Any = None, max_frames: int = 400):
    """Unified's audio path: raw 640-sample frames, one token each.

    The waveform with a cell per frame (blue: the prompt has a placeholder for it in
    both transformers and vLLM; hatched: vLLM's prompt has none, so vLLM's runner drops
    that embedding). ``plan`` is an AudioPlan or any audio input. Clips longer than
    ``max_frames`` frames draw the frame cells as one band per 10 frames.

    >>> fig = show_audio_frames(plan_audio((wave, 16000), family="gemma4_unified"))  # doctest: +SKIP
    """
    from matplotlib.figure import Figure

    if not isinstance(plan, AudioPlan):
        plan = plan_audio(plan, family="gemma4_unified")
    spec = get_family(plan.family)
    a = spec.audio
    if a.samples_per_token is None:
        raise ValueError(f"{spec.display_name} uses a mel spectrogram; use show_mel for it.")
    per = a.samples_per_token
    frames = plan.num_encoder_tokens
    kept = min(vllm_audio_tokens(plan.num_samples, family=spec), frames)
    if ax is None:
        fig = Figure(figsize=(11, 3.6), layout="constrained")
        wax, fax = fig.subplots(2, 1, height_ratios=[2, 0.7], sharex=True)
    else:
        fig, wax, fax = ax.figure, ax, ax
    sr = a.sampling_rate
    if plan.waveform is not None and plan.waveform.size:
        t = np.arange(plan.waveform.size) / sr  # (samples,) seconds
        wax.plot(t, plan.waveform, color="#555555", lw=0.6)
    wax.set_ylabel("amplitude")
    y0, h = (0, 1) if fax is not wax else (-1.05, 0.15)
    step = 1 if frames <= max_frames else 10
    real = [_rect(i * per / sr, y0, step * per / sr * 0.92, h) for i in range(0, kept, step)]
    lost = [_rect(i * per / sr, y0, step * per / sr * 0.92, h) for i in range(kept, frames, step)]
    fax.add_collection(real_cells(real, gid="frame_cells"))
    if lost:
        fax.add_collection(padding_cells(lost, gid="vllm_dropped", linewidth=0.6))
    if fax is not wax:
        fax.set_ylim(0, 1)
        fax.set_yticks([])
    fax.set_xlabel("time (s)")
    end = max(frames * per / sr, 1e-3)
    wax.set_xlim(0, end)
    lost_n = frames - kept
    fax.set_title(
        f"{frames} frames of {per} samples ({plan.ms_per_token:.0f} ms) = {frames} tokens"
        + (f"; hatched: {lost_n} frame(s) vLLM's prompt has no placeholder for" if lost_n else ""),
        fontsize=9,
    )
    wax.set_title(
        f"{spec.display_name}: {plan.duration_s:.3f} s of raw 16 kHz samples, no mel, no tower",
        fontsize=10,
    )
    return fig


def show_three_way(comparison: Any, *, image: Any = None):
    """One figure for :func:`~gemma_explore.comparison.compare_families`: for each
    family, its token cells over the image, its audio token count (and vLLM's), and the
    tower or embedder it has, with its released parameter count.

    >>> fig = show_three_way(compare_families(photo, (wave, 16000)))   # doctest: +SKIP
    """
    from matplotlib.figure import Figure

    rows = comparison.rows
    fig = Figure(figsize=(3.9 * len(rows), 6.4), layout="constrained")
    axes = fig.subplots(2, len(rows), height_ratios=[3, 1.3], squeeze=False)
    for col, r in enumerate(rows):
        ax, tax = axes[0][col], axes[1][col]
        plan = r.image_plan
        th, tw = plan.resized_size
        img = _resized(plan)
        if img is not None:
            ax.imshow(np.asarray(img), extent=(0, tw, th, 0))
        from matplotlib.collections import LineCollection

        cell = get_family(r.family).image.cell_px
        segs = [((x, 0), (x, th)) for x in range(0, tw + 1, cell)]
        segs += [((0, y), (tw, y)) for y in range(0, th + 1, cell)]
        ax.add_collection(LineCollection(segs, colors=VALID, linewidths=0.6, gid="token_lines"))
        cell_axes(ax, tw, th)
        ax.set_title(
            f"{r.display_name}\n{size_label((th, tw))}\n→ {r.image_tokens} image tokens",
            fontsize=10,
        )
        tax.axis("off")
        lines = [f"vision: {_wrap(r.image_encoder)}"]
        if r.sizes is not None:
            lines[-1] += f" ({r.sizes.vision_params / 1e6:,.1f} M params)"
        if r.audio_tokens is not None:
            vllm = (
                f", vLLM's prompt {r.vllm_audio_tokens}"
                if r.vllm_audio_tokens != r.audio_tokens
                else ""
            )
            lines.append(f"audio: {r.audio_tokens} tokens{vllm}")
            lines.append(f"  {_wrap(r.audio_encoder)}")
            if r.sizes is not None:
                lines[-1] += f" ({r.sizes.audio_params / 1e6:,.1f} M params)"
        tax.text(0, 1, "\n".join(lines), va="top", ha="left", fontsize=9, wrap=True)
    h, w = comparison.image_size
    clip = (
        "" if comparison.audio_seconds is None else f" and a {comparison.audio_seconds:.2f} s clip"
    )
    fig.suptitle(f"One {w}×{h} px (W×H) image{clip} through three families", fontsize=12)
    return fig


def _wrap(text: str, width: int = 42) -> str:
    import textwrap

    return "\n  ".join(textwrap.wrap(text, width))
