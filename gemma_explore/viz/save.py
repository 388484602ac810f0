"""Save a figure for slides (PNG at 200 dpi, or SVG)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["save_figure"]


def save_figure(fig: Any, path: str | os.PathLike, *, dpi: int = 200) -> Path:
    """Write ``fig`` to ``path`` (format from the suffix: .png, .svg, .pdf)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi, bbox_inches="tight")
    return out
