"""Patch grids: how an image is resized and cut into patches and soft-token cells.

Artists carry a ``gid`` so tests (and curious readers) can find them:
``"patch_lines"``, ``"token_lines"``, ``"padding_patches"``, ``"real_patches"``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..families import get_family
from ..media import load_image
from ..plans import ImagePlan, plan_image
from ..sizes import size_label
from .palette import PADDING, VALID, cell_axes, padding_cells

__all__ = ["show_budgets", "show_patch_grid"]

_MAX_NUMBERED = 120  # number soft-token cells only when they stay readable
_NO_PIXELS = "no pixels in this plan\n(planned from a size or a file header)"


def _figure(ax, ncols: int = 1, width: float = 6.0, height: float = 4.5):
    """Use the caller's axis, or make a new Figure (not registered with pyplot, so
    nothing is displayed or leaked unless the caller shows it)."""
    from matplotlib.figure import Figure

    if ax is not None:
        return ax.figure, [ax]
    fig = Figure(figsize=(width * ncols, height), layout="constrained")
    return fig, list(fig.subplots(1, ncols, squeeze=False)[0])


def _grid_collection(width: int, height: int, step: int, *, color: str, lw: float, gid: str):
    """Vertical and horizontal lines every ``step`` px, borders included."""
    from matplotlib.collections import LineCollection

    xs = np.arange(0, width + 1, step)
    ys = np.arange(0, height + 1, step)
    segs = [((x, 0), (x, height)) for x in xs] + [((0, y), (width, y)) for y in ys]
    coll = LineCollection(segs, colors=color, linewidths=lw, gid=gid)
    coll.n_vertical, coll.n_horizontal = len(xs), len(ys)
    return coll


def _draw_gemma4(
    ax,
    image,
    plan: ImagePlan,
    *,
    number_cells: bool,
    patch_lines: bool = True,
    display_max: int = 1200,
):
    th, tw = plan.resized_size
    # What the tower sees (bicubic, as the processor), shown no larger than display_max px:
    # the axes stay in resized-image pixels, so lines and cells land where they belong.
    scale = min(1.0, display_max / max(th, tw))
    shown = (max(1, round(tw * scale)), max(1, round(th * scale)))
    resample = get_family(plan.family).image.resample
    resized = image.resize(shown, resample=resample) if image is not None else None
    if resized is not None:
        ax.imshow(np.asarray(resized), extent=(0, tw, th, 0), interpolation="nearest")
    else:
        ax.add_patch(_rect(0, 0, tw, th, color="#eeeeee"))
        ax.text(tw / 2, th / 2, _NO_PIXELS, ha="center", va="center", fontsize=9, color="#555555")
    if patch_lines:
        ax.add_collection(
            _grid_collection(tw, th, plan.patch_size, color="white", lw=0.3, gid="patch_lines")
        )
    cell = plan.patch_size * plan.pooling_kernel
    ax.add_collection(_grid_collection(tw, th, cell, color=VALID, lw=1.2, gid="token_lines"))
    if number_cells and plan.num_soft_tokens <= _MAX_NUMBERED:
        rows, cols = plan.pooled_grid
        for i in range(plan.num_soft_tokens):
            r, c = divmod(i, cols)
            ax.text(
                (c + 0.5) * cell,
                (r + 0.5) * cell,
                str(i),
                ha="center",
                va="center",
                fontsize=9,
                color="white",
                bbox={"boxstyle": "round,pad=0.1", "fc": "black", "alpha": 0.45, "lw": 0},
            )
    ax.set_xlim(0, tw)
    ax.set_ylim(th, 0)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(
        f"budget {plan.max_soft_tokens}: resized to {size_label(plan.resized_size)}\n→ "
        f"{size_label(plan.patch_grid, unit='patches')} → {plan.num_soft_tokens} tokens",
        fontsize=10,
    )


def _line_legend(ax, plan: ImagePlan, *, patch_lines: bool = True) -> None:
    """Say what each colour of line is (white: patches, blue: soft-token cells)."""
    from matplotlib.lines import Line2D

    cell = plan.patch_size * plan.pooling_kernel
    handles = [Line2D([], [], color=VALID, lw=2, label=f"one soft token = {cell}×{cell} px")]
    if patch_lines:
        handles.insert(
            0,
            Line2D(
                [], [], color="#999999", lw=1,
                label=f"one patch = {plan.patch_size}×{plan.patch_size} px (white lines)",
            ),
        )  # fmt: skip
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=2,
        fontsize=9,
        frameon=False,
    )


def _rect(x, y, w, h, **kw):
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, **kw)


def _draw_padding_strip(ax, plan: ImagePlan):
    """pixel_values rows, one square per patch: real patches, then padding rows (position
    (−1, −1)) hatched. Padding is drawn as one hatched rectangle per strip row, so the
    hatched *area* (in patches) is the number of padding patches."""
    from matplotlib.colors import ListedColormap

    per_row = max(min(plan.pooled_grid[1] * plan.pooling_kernel * 3, 120), 30)
    rows = -(-plan.max_patches // per_row)
    cells = np.zeros(rows * per_row)  # 0 = beyond max_patches, 1 = real, 2 = padding
    cells[: plan.num_patches] = 1
    cells[plan.num_patches : plan.max_patches] = 2
    grid = cells.reshape(rows, per_row)  # (rows, per_row)
    real = np.ma.masked_where(grid != 1, grid)
    ax.imshow(
        real,
        cmap=ListedColormap([VALID]),
        extent=(0, per_row, rows, 0),
        interpolation="nearest",
        gid="real_patches",
    )
    pads = []
    for r in range(rows):
        cols = np.flatnonzero(grid[r] == 2)
        if cols.size:
            pads.append(_rect(cols[0], r, cols.size, 1))
    ax.add_collection(padding_cells(pads, gid="padding_patches", linewidth=1.0))
    cell_axes(ax, per_row, rows)
    ax.set_title(
        f"pixel_values: {plan.num_patches} real patches + {plan.num_padding_patches} padding "
        f"= {plan.max_patches} rows",
        fontsize=10,
    )
    ax.set_xlabel(f"one square = one row of pixel_values (one patch), {per_row} per line")
    from matplotlib.patches import Patch

    ax.legend(
        handles=[
            Patch(facecolor=VALID, label=f"real patch ({plan.num_patches})"),
            Patch(
                facecolor="white", edgecolor=PADDING, hatch="///",
                label=f"padding, position (−1, −1) ({plan.num_padding_patches})",
            ),
        ],
        loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=2, fontsize=9, frameon=False,
    )  # fmt: skip


def _pixels(plan: ImagePlan):
    """The plan's image as RGB PIL, or None when it was planned from a size."""
    if plan.image is None:
        return None
    if getattr(plan.image, "mode", None) == "RGB":
        return plan.image
    return load_image(plan.image)


def show_budgets(image: Any, *, family: str = "gemma4"):
    """The same image at each of Gemma 4's budgets, side by side (one plan per budget).

    >>> fig = show_budgets((1080, 1920))                     # doctest: +SKIP
    """
    spec = get_family(family)
    pil = load_image(image)
    budgets = spec.image.budgets
    fig, axes = _figure(None, ncols=len(budgets), width=2.3, height=3.6)
    for a, b in zip(axes, budgets, strict=True):
        plan = plan_image(pil, family=spec.name, max_soft_tokens=b)
        _draw_gemma4(a, pil, plan, number_cells=False, patch_lines=b <= 280, display_max=400)
        a.set_title(
            f"{b}: {size_label(plan.resized_size, unit='px')}\n→ {plan.num_soft_tokens} tok",
            fontsize=9,
        )
    fig.suptitle(
        f"{spec.display_name} budgets for a {size_label((pil.height, pil.width))} image; "
        "blue lines: one soft token each (48 px cells)",
        fontsize=11,
    )
    return fig


def show_patch_grid(
    plan: ImagePlan | Any,
    *,
    family: str | None = None,
    max_soft_tokens: int | str | None = None,
    ax: Any = None,
    show_padding: bool = True,
):
    """Draw how an image is resized and cut into patches and soft tokens.

    ``plan`` is an :class:`~gemma_explore.plans.ImagePlan` (drawn as is, with the pixels
    it holds), or any image input, which is planned first with ``family=`` and
    ``max_soft_tokens=`` (``"all"`` draws Gemma 4's five budgets side by side).

    Gemma 4: the resized image with 16 px patch lines and 48 px soft-token cells
    (numbered when few), and a strip of pixel_values rows with padding hatched.
    Gemma 3n: the original beside the 768×768 squash with its 16×16 token cells.

    >>> fig = show_patch_grid(plan_image(photo, family="gemma4"))    # doctest: +SKIP
    >>> fig = show_patch_grid((1080, 1920), family="gemma4")          # doctest: +SKIP
    """
    if not isinstance(plan, ImagePlan):
        if family is None:
            raise ValueError("Pass an ImagePlan, or an image with family='gemma4' / 'gemma3n'.")
        if max_soft_tokens == "all":
            if ax is not None:
                raise ValueError("max_soft_tokens='all' draws five axes; leave ax=None.")
            return show_budgets(plan, family=family)
        plan = plan_image(load_image(plan), family=family, max_soft_tokens=max_soft_tokens)
    spec = get_family(plan.family)
    if spec.encoder_free:  # Unified: raw 48 px blocks, no tower (viz/embedder.py)
        from .embedder import show_embedder_grid

        return show_embedder_grid(plan, ax=ax)
    pil = _pixels(plan)
    if spec.image.fixed_size is None:
        if ax is not None:
            fig, (main,) = _figure(ax)
            _draw_gemma4(main, pil, plan, number_cells=True)
            return fig
        from matplotlib.figure import Figure

        fig = Figure(figsize=(7, 7.5 if show_padding else 5), layout="constrained")
        if show_padding:
            top, bottom = fig.subplots(2, 1, height_ratios=[3, 1.2])
            _draw_gemma4(top, pil, plan, number_cells=True)
            _line_legend(top, plan)
            _draw_padding_strip(bottom, plan)
        else:
            main = fig.subplots()
            _draw_gemma4(main, pil, plan, number_cells=True)
            _line_legend(main, plan)
        return fig
    # Gemma 3n: original beside the squash.
    rh, rw = plan.resized_size
    h, w = plan.original_size
    fig, axes = _figure(ax, ncols=1 if ax is not None else 2, width=5, height=5)
    if ax is None:
        left, right = axes
        if pil is not None:
            left.imshow(np.asarray(pil))
        else:
            left.text(0.5, 0.5, _NO_PIXELS, ha="center", va="center", fontsize=9, wrap=True)
        left.set_title(f"original {size_label((h, w))}", fontsize=10)
        left.set_xticks([])
        left.set_yticks([])
    else:
        right = axes[0]
    if pil is not None:
        squash = pil.resize((rw, rh), resample=spec.image.resample)
        right.imshow(np.asarray(squash), extent=(0, rw, rh, 0))
    cell = spec.image.cell_px
    right.add_collection(_grid_collection(rw, rh, cell, color=VALID, lw=1.0, gid="token_lines"))
    right.set_xlim(0, rw)
    right.set_ylim(rh, 0)
    right.set_xticks([])
    right.set_yticks([])
    rows, cols = plan.pooled_grid
    right.set_title(
        f"squashed to {size_label((rh, rw))}\n→ {size_label((rows, cols), unit='cells')}"
        f" = {plan.num_soft_tokens} tokens",
        fontsize=10,
    )
    from matplotlib.lines import Line2D

    right.legend(
        handles=[
            Line2D(
                [], [], color=VALID, lw=2,
                label=f"one soft token = {cell}×{cell} px of the squash\n"
                f"= {size_label(plan.token_area)} of the original",
            )
        ],
        loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=9, frameon=False,
    )  # fmt: skip
    return fig
