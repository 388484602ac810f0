"""Patch grids: how an image is resized and cut into patches and soft-token cells.

Artists carry a ``gid`` so tests (and curious readers) can find them:
``"patch_lines"``, ``"token_lines"``, ``"zoom_block"`` and ``"zoom_patch_lines"`` (one
soft-token cell enlarged with its patches), ``"real_patches"`` and ``"padding_patches"``
(pixel_values, one square per soft token's rows), ``"budget_image"`` (one per budget in
:func:`show_budgets`, drawn to one scale).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gemma_explore.facts.families import DEFAULT_FAMILY, FamilySpec, get_family
from gemma_explore.media.loaders import load_image
from gemma_explore.plans.image import ImagePlan, plan_image
from gemma_explore.sizes import size_label
from gemma_explore.viz.palette import (
    PADDING,
    VALID,
    cell_axes,
    grid_lines,
    panels,
    pixels,
    rect,
    slot_strip,
)
from gemma_explore.viz.style import current_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["show_budgets", "show_patch_grid"]

_MAX_NUMBERED = 120  # number soft-token cells only when they stay readable
_NO_PIXELS = "no pixels in this plan\n(planned from a size or a file header)"


# -- passes that draw one panel each ---------------------------------------------------
def _draw_image_or_note(ax, image, width: int, height: int, *, x0: float = 0.0) -> None:
    """The (resized) image over ``width`` × ``height`` px at ``x0``, or a grey box that
    says the plan holds no pixels."""
    st = current_style()
    if image is not None:
        ax.imshow(np.asarray(image), extent=(x0, x0 + width, height, 0), interpolation="nearest")
        return
    ax.add_patch(rect(x0, 0, width, height, color="#eeeeee"))
    ax.text(
        x0 + width / 2,
        height / 2,
        _NO_PIXELS,
        ha="center",
        va="center",
        fontsize=st.small,
        color="#555555",
    )


def _number_cells(ax, plan: ImagePlan, cell: int) -> None:
    """Write each soft token's index in its cell, when there are few enough to read."""
    if plan.num_soft_tokens > _MAX_NUMBERED:
        return
    cols = plan.pooled_grid[1]
    for i in range(plan.num_soft_tokens):
        r, c = divmod(i, cols)
        ax.text(
            (c + 0.5) * cell,
            (r + 0.5) * cell,
            str(i),
            ha="center",
            va="center",
            fontsize=current_style().small,
            color="white",
            bbox={"boxstyle": "round,pad=0.1", "fc": "black", "alpha": 0.45, "lw": 0},
        )


def _draw_budget_grid(ax, plan: ImagePlan, *, display_max: int = 1200) -> None:
    """Any family with budgets: the image as the tower sees it (resized as the processor
    resizes, shown no larger than ``display_max`` px; the axes stay in resized pixels),
    its patch lines, its soft-token cells (numbered when few)."""
    th, tw = plan.resized_size
    scale = min(1.0, display_max / max(th, tw))
    _draw_image_or_note(ax, pixels(plan, (round(th * scale), round(tw * scale))), tw, th)
    ax.add_collection(grid_lines(tw, th, plan.patch_size, color="white", lw=0.3, gid="patch_lines"))
    cell = plan.patch_size * plan.pooling_kernel
    ax.add_collection(grid_lines(tw, th, cell, color=VALID, lw=1.2, gid="token_lines"))
    _number_cells(ax, plan, cell)
    cell_axes(ax, tw, th)
    ax.set_title(
        f"budget {plan.max_soft_tokens}: resized to {size_label(plan.resized_size)}\n→ "
        f"{size_label(plan.patch_grid, unit='patches')} → {plan.num_soft_tokens} tokens",
        fontsize=current_style().body,
    )


def _zoom_cell(plan: ImagePlan) -> tuple[int, int]:
    """The (row, column) of the soft-token cell the zoom enlarges: the middle one."""
    rows, cols = plan.pooled_grid
    return rows // 2, cols // 2


def _draw_zoom(ax, plan: ImagePlan, main) -> None:
    """One soft-token cell enlarged: its k × k patches, each 16 px, lines one can see
    (on the image itself they are a few screen pixels apart). ``main`` gets a frame
    around the cell it shows."""
    st = current_style()
    cell = plan.patch_size * plan.pooling_kernel
    r, c = _zoom_cell(plan)
    main.add_patch(
        rect(
            c * cell, r * cell, cell, cell, fill=False, ec=PADDING, lw=st.lw(2.5), gid="zoom_block"
        )
    )
    image = pixels(plan, plan.resized_size)
    if image is not None:
        crop = np.asarray(image)[r * cell : (r + 1) * cell, c * cell : (c + 1) * cell]
        ax.imshow(crop, extent=(0, cell, cell, 0), interpolation="nearest")
    ax.add_collection(
        grid_lines(cell, cell, plan.patch_size, color="white", lw=2.0, gid="zoom_patch_lines")
    )
    for spine in ax.spines.values():
        spine.set(edgecolor=PADDING, linewidth=st.lw(2.5))
    cell_axes(ax, cell, cell)
    k = plan.pooling_kernel
    ax.set_title(
        f"one soft token (framed):\n{k} × {k} patches of {plan.patch_size} px", fontsize=st.body
    )


def _line_legend(ax, plan: ImagePlan) -> None:
    """Say what each colour of line is (white: patches, blue: soft-token cells)."""
    from matplotlib.lines import Line2D

    st = current_style()
    cell, p = plan.patch_size * plan.pooling_kernel, plan.patch_size
    handles = [
        Line2D([], [], color="#999999", lw=st.lw(1), label=f"patch, {p}×{p} px (white)"),
        Line2D([], [], color=VALID, lw=st.lw(2), label=f"soft token, {cell}×{cell} px"),
    ]
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=2,
        fontsize=st.small,
        frameon=False,
    )


def _draw_pixel_values(ax, plan: ImagePlan, *, per_row: int = 70) -> None:
    """pixel_values, one square per soft token's k² rows (one row per patch): real
    tokens' rows in blue, padding rows (position (−1, −1)) hatched, one hatched rectangle
    per strip row, so the hatched *area* times k² is the number of padding rows."""
    from matplotlib.patches import Patch

    st = current_style()
    k2 = plan.pooling_kernel**2
    budget = plan.max_patches // k2  # squares: the budget's soft tokens
    real = plan.num_patches // k2
    per_row = max(1, min(budget, per_row))
    rows = slot_strip(
        ax, real, budget, per_row, gids=("real_patches", "padding_patches"), pad_linewidth=1.0
    )
    cell_axes(ax, per_row, rows)
    ax.set_title(
        st.fill(
            f"pixel_values: {plan.max_patches} rows (one per patch) = {plan.num_patches} "
            f"real + {plan.num_padding_patches} padding; one square = one soft token's "
            f"{k2} rows",
            9.0,
        ),
        fontsize=st.body,
    )
    handles = [
        Patch(facecolor=VALID, label=f"real ({real} tokens)"),
        Patch(
            facecolor="white",
            edgecolor=PADDING,
            hatch="///",
            label=f"padding, position (−1, −1) ({budget - real})",
        ),
    ]
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=2,
        fontsize=st.small,
        frameon=False,
    )


def _draw_squash(ax, plan: ImagePlan, spec: FamilySpec) -> None:
    """A fixed-size family: the image squashed to its one size, with a cell per token."""
    st = current_style()
    rh, rw = plan.resized_size
    image = pixels(plan, plan.resized_size)
    if image is not None:
        ax.imshow(np.asarray(image), extent=(0, rw, rh, 0))
    cell = spec.image.cell_px
    ax.add_collection(grid_lines(rw, rh, cell, color=VALID, lw=1.0, gid="token_lines"))
    cell_axes(ax, rw, rh)
    ax.set_title(
        f"squashed to {size_label((rh, rw))}\n→ {size_label(plan.pooled_grid, unit='cells')}"
        f" = {plan.num_soft_tokens} tokens",
        fontsize=st.body,
    )
    from matplotlib.lines import Line2D

    label = (
        f"one soft token = {cell}×{cell} px of the squash\n"
        f"= {size_label(plan.token_area)} of the original"
    )
    ax.legend(
        handles=[Line2D([], [], color=VALID, lw=st.lw(2), label=label)],
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        fontsize=st.small,
        frameon=False,
    )


def _draw_original(ax, plan: ImagePlan) -> None:
    image = pixels(plan)
    if image is not None:
        ax.imshow(np.asarray(image))
    else:
        ax.text(
            0.5,
            0.5,
            _NO_PIXELS,
            ha="center",
            va="center",
            fontsize=current_style().small,
            wrap=True,
        )
    ax.set_title(f"original {size_label(plan.original_size)}", fontsize=current_style().body)
    ax.set_xticks([])
    ax.set_yticks([])


# -- figures ---------------------------------------------------------------------------
def _budget_figure(plan: ImagePlan, *, ax: Any, show_padding: bool) -> Figure:
    """A family with budgets: the grid, one cell enlarged, and (``show_padding``) the
    pixel_values rows with their padding."""
    fig, grid = panels(
        ax,
        (10, 8.4 if show_padding else 6),
        2 if show_padding else 1,
        2,
        height_ratios=[3, 1.3] if show_padding else None,
        width_ratios=[2.6, 1],
    )
    main = fig.add_subplot(grid[0, 0])
    # Top of its cell: centred, a 4:3 image in large text lifts its title off the figure
    # (constrained layout sizes the margins before the aspect shrinks the box).
    main.set_anchor("N")
    _draw_budget_grid(main, plan)
    _line_legend(main, plan)
    _draw_zoom(fig.add_subplot(grid[0, 1]), plan, main)
    if show_padding:
        _draw_pixel_values(fig.add_subplot(grid[1, :]), plan)
    return fig


def _squash_figure(plan: ImagePlan, spec: FamilySpec, *, ax: Any) -> Figure:
    """A fixed-size family: the original beside the squash."""
    fig, grid = panels(ax, (10, 5.6), 1, 2, layout="compressed")
    _draw_original(fig.add_subplot(grid[0, 0]), plan)
    _draw_squash(fig.add_subplot(grid[0, 1]), plan, spec)
    return fig


def _budget_row(plans: list[ImagePlan], st: Any, *, width_in: float = 10.4):
    """Where each budget's image goes on one axis at one scale: (x offset of each image,
    the gap between them, the room under them for labels, inches per pixel), all in
    resized-image pixels, so the labels under neighbouring images never meet."""
    label_in = 10 * 0.6 * st.small / 72  # "→ 1080 tok" at the style's small size
    label_h = 2.8 * st.small / 72  # two lines
    tallest = max(p.resized_size[0] for p in plans)
    per_px = (4.4 - label_h) / tallest  # images get the figure's height less the labels
    widths = [p.resized_size[1] for p in plans]
    pairs = [(a + b) / 2 for a, b in zip(widths, widths[1:], strict=False)]
    gap_in = max(0.2, label_in - min(pairs) * per_px)
    per_px = min(per_px, (width_in - gap_in * (len(plans) - 1)) / sum(widths))
    gap = gap_in / per_px
    xs = np.cumsum([0, *[w + gap for w in widths[:-1]]])
    return xs, gap, label_h / per_px, per_px


def show_budgets(
    image: Any, *, family: str | FamilySpec = DEFAULT_FAMILY, ax: Any = None
) -> Figure:
    """The same image at each of a family's budgets, side by side and **to one scale**
    (one pixel of every resized image is the same size), with its soft-token cells.

    >>> fig = show_budgets((1080, 1920))
    """
    from matplotlib.figure import Figure

    spec = get_family(family)
    if not spec.image.budgets:
        raise ValueError(f"{spec.display_name} has one image size; use show_patch_grid.")
    st = current_style()
    pil = load_image(image)
    plans = [plan_image(pil, family=spec, max_soft_tokens=b) for b in spec.image.budgets]
    xs, gap, label_room, _ = _budget_row(plans, st)
    if ax is None:
        fig = Figure(figsize=(11, 4.6 + 4 * st.title / 72 * 1.3), layout="constrained")
        ax = fig.subplots()
    fig, tallest = ax.figure, max(p.resized_size[0] for p in plans)
    for p, x in zip(plans, xs, strict=True):
        th, tw = p.resized_size
        shown = pixels(p, (round(th * min(1, 400 / th)), round(tw * min(1, 400 / th))))
        _draw_image_or_note(ax, shown, tw, th, x0=x)
        if shown is not None:
            ax.images[-1].set_gid("budget_image")
        ax.add_collection(
            grid_lines(
                tw, th, spec.image.cell_px, color=VALID, lw=0.6, gid="budget_token_lines", x0=x
            )
        )
        ax.text(
            x + tw / 2,
            th + label_room * 0.1,
            f"{p.max_soft_tokens}\n→ {p.num_soft_tokens} tok",
            ha="center",
            va="top",
            fontsize=st.small,
            gid="budget_label",
        )
    ax.set_xlim(-gap / 4, xs[-1] + plans[-1].resized_size[1] + gap / 4)
    ax.set_ylim(tallest + label_room * 1.1, 0)
    ax.set_aspect("equal")
    ax.axis("off")
    sizes = ", ".join(
        f"{p.max_soft_tokens}: {size_label(p.resized_size, unit='px')}" for p in plans
    )
    fig.suptitle(
        st.fill(
            f"{spec.display_name}'s budgets for a {size_label((pil.height, pil.width))} "
            f"image, drawn to one scale; blue: one soft token each "
            f"({spec.image.cell_px} px cells)\nresized to {sizes}",
            11,
            size=st.title,
        ),
        fontsize=st.title,
    )
    return fig


def show_patch_grid(
    plan: ImagePlan | Any,
    *,
    family: str | FamilySpec | None = None,
    max_soft_tokens: int | str | None = None,
    ax: Any = None,
    show_padding: bool = True,
) -> Figure:
    """Draw how an image is resized and cut into patches and soft tokens.

    ``plan`` is an :class:`~gemma_explore.plans.image.ImagePlan` (drawn as is, with the pixels
    it holds), or any image input, which is planned first with ``family=`` and
    ``max_soft_tokens=`` (``"all"`` draws every budget side by side: :func:`show_budgets`).

    A family with budgets (Gemma 4): the resized image with its patch lines and soft-token
    cells (numbered when few), one cell enlarged with its patches, and the pixel_values
    rows with padding hatched. A fixed-size family (Gemma 3n): the original beside the
    squash with its token cells. An encoder-free family: :func:`show_embedder_grid`.

    >>> fig = show_patch_grid(plan_image((640, 480), family="gemma4"))
    >>> fig = show_patch_grid((1080, 1920), family="gemma4")
    """
    if not isinstance(plan, ImagePlan):
        if family is None:
            raise ValueError("Pass an ImagePlan, or an image with family='gemma4' / 'gemma3n'.")
        if max_soft_tokens == "all":
            return show_budgets(plan, family=family, ax=ax)
        plan = plan_image(load_image(plan), family=family, max_soft_tokens=max_soft_tokens)
    spec = plan.spec
    if spec.encoder_free:  # no tower: raw blocks (viz/embedder.py)
        from gemma_explore.viz.embedder import show_embedder_grid

        return show_embedder_grid(plan, ax=ax)
    if spec.image.fixed_size is None:
        return _budget_figure(plan, ax=ax, show_padding=show_padding)
    return _squash_figure(plan, spec, ax=ax)
