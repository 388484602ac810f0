"""One palette for every figure and the app: a token kind has one colour everywhere.

Colours come from the Okabe–Ito set, which stays distinguishable for the common forms
of colour blindness; paler tints mark the markers that wrap a run.
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

OKABE_ITO = {
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "grey": "#999999",
}

KIND_COLORS: dict[str, str] = {
    "text": "#DDDDDD",
    "bos": "#555555",
    "turn_start": "#888888",
    "turn_end": "#888888",
    "newline": "#BBBBBB",
    "newline_merge": OKABE_ITO["yellow"],
    "boi": "#9CC9E8",
    "eoi": "#9CC9E8",
    "image_soft": OKABE_ITO["blue"],
    "boa": "#F3C98B",
    "eoa": "#F3C98B",
    "audio_soft": OKABE_ITO["orange"],
    "video_soft": OKABE_ITO["green"],
    "timestamp": OKABE_ITO["purple"],
}
VALID = OKABE_ITO["blue"]  # real soft tokens / real audio
PADDING = OKABE_ITO["vermillion"]  # padding patches, padded slots


def kind_color(kind: str) -> str:
    """The colour of a segment kind (grey for unknown kinds)."""
    return KIND_COLORS.get(kind, OKABE_ITO["grey"])


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
