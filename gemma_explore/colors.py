"""One colour per token kind, for every figure, HTML view and the app.

Plain data with no imports, so results can colour their HTML without importing the
drawing code. Colours come from the Okabe–Ito set, which stays distinguishable for the
common forms of colour blindness; paler tints mark the markers that wrap a run.

>>> from gemma_explore.colors import kind_color
>>> kind_color("image_soft")
'#0072B2'
"""

from __future__ import annotations

__all__ = ["KIND_COLORS", "MISMATCH", "OKABE_ITO", "PADDING", "VALID", "kind_color"]

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
MISMATCH = "#fde0d0"  # background of a table row whose sides disagree


def kind_color(kind: str) -> str:
    """The colour of a segment kind (grey for unknown kinds)."""
    return KIND_COLORS.get(kind, OKABE_ITO["grey"])
