"""Drawing helpers that give real cells, padding and cell grids one look in every figure.

The colours themselves live in :mod:`gemma_explore.colors`, shared with the HTML views.
"""

from __future__ import annotations

__all__ = [
    "KIND_COLORS",
    "PADDING",
    "VALID",
    "cell_axes",
    "kind_color",
    "padding_cells",
    "real_cells",
]

from ..colors import KIND_COLORS, PADDING, VALID, kind_color


def real_cells(rects: list, *, gid: str):
    """Real soft tokens / patches / slots: solid blue squares, one artist for all."""
    from matplotlib.collections import PatchCollection

    return PatchCollection(rects, facecolor=VALID, edgecolor="none", gid=gid)


def padding_cells(rects: list, *, gid: str, linewidth: float = 0.4):
    """Padding: white squares hatched in vermillion, the same in every figure."""
    from matplotlib.collections import PatchCollection

    return PatchCollection(
        rects, facecolor="white", edgecolor=PADDING, hatch="///", linewidth=linewidth, gid=gid
    )


def cell_axes(ax, width: float, height: float, *, flip: bool = True) -> None:
    """An axis of unit cells: limits, square aspect, no ticks (rows top-down if flip)."""
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0) if flip else ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
