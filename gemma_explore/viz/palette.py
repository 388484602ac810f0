"""One palette for every figure and the app: a token kind has one colour everywhere.

Colours come from the Okabe–Ito set, which stays distinguishable for the common forms
of colour blindness; paler tints mark the markers that wrap a run.
"""

from __future__ import annotations

__all__ = ["KIND_COLORS", "VALID", "PADDING", "kind_color"]

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
