"""Drawing helpers every figure shares: real cells, padding, cell grids, grid lines, the
plan's pixels, and where a figure's panels go (a new Figure, or a sub-grid at ``ax``).

The colours themselves live in :mod:`gemma_explore.colors`, shared with the HTML views;
sizes and line widths come from :mod:`gemma_explore.viz.style`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gemma_explore.colors import KIND_COLORS, PADDING, VALID, kind_color
from gemma_explore.viz.style import current_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.gridspec import GridSpecBase

__all__ = [
    "KIND_COLORS",
    "PADDING",
    "VALID",
    "cell_axes",
    "grid_lines",
    "kind_color",
    "padding_cells",
    "panels",
    "pixels",
    "real_cells",
    "rect",
    "slot_strip",
    "waveshow",
]


def real_cells(rects: list, *, gid: str):
    """Real soft tokens / patches / slots: solid blue squares, one artist for all."""
    from matplotlib.collections import PatchCollection

    return PatchCollection(rects, facecolor=VALID, edgecolor="none", gid=gid)


def padding_cells(rects: list, *, gid: str, linewidth: float = 0.4):
    """Padding: white squares hatched in vermillion, the same in every figure."""
    from matplotlib.collections import PatchCollection

    return PatchCollection(
        rects,
        facecolor="white",
        edgecolor=PADDING,
        hatch="///",
        linewidth=current_style().lw(linewidth),
        gid=gid,
    )


def slot_strip(
    ax, real: int, slots: int, per_row: int, *, gids: tuple[str, str], pad_linewidth: float
) -> int:
    """``slots`` squares in rows of ``per_row``: the first ``real`` in blue, the rest one
    hatched rectangle per row (so the hatched area is the padding count). Returns the rows.
    """
    rows = -(-slots // per_row)
    squares = [rect(i % per_row + 0.1, i // per_row + 0.1, 0.8, 0.8) for i in range(real)]
    ax.add_collection(real_cells(squares, gid=gids[0]))
    pads = []
    for r in range(rows):
        lo, hi = max(real, r * per_row), min(slots, (r + 1) * per_row)
        if hi > lo:
            pads.append(rect(lo - r * per_row, r, hi - lo, 1))
    ax.add_collection(padding_cells(pads, gid=gids[1], linewidth=pad_linewidth))
    return rows


def rect(x: float, y: float, w: float, h: float, **kw: Any):
    """A matplotlib Rectangle from its corner and size."""
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, **kw)


def grid_lines(
    width: float, height: float, step: float, *, color: str, lw: float, gid: str, x0: float = 0
):
    """Vertical and horizontal lines every ``step`` units over a ``width`` × ``height``
    area starting at ``(x0, 0)``, borders included, as one LineCollection (``lw`` in
    screen points)."""
    import numpy as np
    from matplotlib.collections import LineCollection

    xs = x0 + np.arange(0, width + 1e-9, step)
    ys = np.arange(0, height + 1e-9, step)
    segs = [((x, 0), (x, height)) for x in xs] + [((x0, y), (x0 + width, y)) for y in ys]
    return LineCollection(segs, colors=color, linewidths=current_style().lw(lw), gid=gid)


def cell_axes(ax, width: float, height: float, *, flip: bool = True) -> None:
    """An axis of unit cells: limits, square aspect, no ticks (rows top-down if flip)."""
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0) if flip else ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])


def panels(
    ax: Any,
    figsize: tuple[float, float],
    nrows: int = 1,
    ncols: int = 1,
    *,
    layout: str = "constrained",
    **grid: Any,
) -> tuple[Figure, GridSpecBase]:
    """Where a figure's panels go: with ``ax=None`` a new Figure (constrained layout, not
    registered with pyplot, so nothing is shown or kept alive behind the caller's back);
    with an axes, a sub-grid of its figure at that axes' place (the axes itself is removed).
    ``layout="compressed"`` suits a row of square-pixel images (constrained layout then
    misplaces their titles).

    >>> from matplotlib.figure import Figure
    >>> host = Figure()
    >>> fig, grid = panels(host.subplots(1, 2)[1], (6, 4), 2, 1)
    >>> fig is host, grid.get_geometry(), len(host.axes)
    (True, (2, 1), 1)
    """
    if ax is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=figsize, layout=layout)
        return fig, fig.add_gridspec(nrows, ncols, **grid)
    fig = ax.figure
    sub = ax.get_subplotspec().subgridspec(nrows, ncols, **grid)
    ax.remove()
    return fig, sub


def pixels(plan: Any, size: tuple[int, int] | None = None):
    """The plan's image as RGB PIL (None when it was planned from a size), resized to
    ``size`` = (height, width) as the family's processor resamples, when given."""
    from gemma_explore.media.loaders import load_image

    if plan.image is None:
        return None
    pil = plan.image if getattr(plan.image, "mode", None) == "RGB" else load_image(plan.image)
    if size is None:
        return pil
    h, w = size
    return pil.resize((max(1, w), max(1, h)), resample=plan.spec.image.resample)


def waveshow(ax, wave: Any, rate: int, *, columns: int = 2000, offset_s: float = 0.0) -> None:
    """The waveform as its min/max envelope over ``columns`` time buckets (what
    ``librosa.display.waveshow`` draws for a long clip), in seconds from ``offset_s``.
    Plain matplotlib: importing librosa.display compiles numba kernels (seconds)."""
    import numpy as np

    wave = np.asarray(wave, dtype=np.float32)  # (samples,)
    if wave.size == 0:
        return
    per = max(1, -(-wave.size // columns))
    pad = (-wave.size) % per
    blocks = np.pad(wave, (0, pad), mode="edge").reshape(-1, per)  # (buckets, per)
    edges = offset_s + np.arange(blocks.shape[0] + 1) * per / rate  # bucket edges, seconds
    t = np.repeat(edges, 2)[1:-1]  # (2·buckets,) a step outline
    lo, hi = np.repeat(blocks.min(axis=1), 2), np.repeat(blocks.max(axis=1), 2)
    # One polygon (upper edge there, lower edge back), not a collection. Added as an
    # artist with its limits given at once: add_patch walks every segment in Python to
    # find them, a third of a second for a long clip.
    from matplotlib.patches import Polygon

    xy = np.column_stack([np.concatenate([t, t[::-1]]), np.concatenate([hi, lo[::-1]])])
    poly = Polygon(
        xy, closed=True, facecolor="#555555", edgecolor="#555555", lw=current_style().lw(0.5)
    )
    ax.add_artist(poly)
    poly.set_clip_path(ax.patch)
    ax.update_datalim(xy)
    ax.autoscale_view()
