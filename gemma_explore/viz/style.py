"""Two looks for every figure: ``"screen"`` (a notebook on a laptop, the default) and
``"projector"`` (a room at the back of a lecture hall: text ≥ 14 pt, lines twice as thick).

``style(name)`` switches at once and, used in a ``with`` block, switches back at its end.
Every ``show_*`` reads its text sizes and line widths from :func:`current_style` when it
draws, and ``style`` also sets matplotlib's own defaults (tick labels, legends, axis labels)
to the same sizes, so text a figure does not size itself follows too.

The environment variable ``GEMMA_EXPLORE_STYLE`` picks the style a session starts in
(``GEMMA_EXPLORE_STYLE=projector jupyter lab`` for a room; ``make site`` executes the
notebooks that way); without it every session starts in ``"screen"``.

>>> from gemma_explore.viz.style import current_style, style
>>> current_style().name
'screen'
>>> with style("projector"):
...     current_style().small
14.0
>>> current_style().small
9.0
"""

from __future__ import annotations

import os
import re
import textwrap
import warnings
from dataclasses import dataclass
from typing import Any

__all__ = ["ENV_VAR", "STYLES", "Style", "current_style", "style"]

_SIZE = re.compile(r"\d+(?:\.\d+)?×\d+(?:\.\d+)?(?: [a-z]+)? \(W×H\)")
_NBSP = "\u00a0"


@dataclass(frozen=True)
class Style:
    """Text sizes (pt) and a line-width factor that every figure reads."""

    name: str
    small: float  # the least any text may be: captions, legends, tick labels, cell numbers
    body: float  # panel titles and axis labels
    title: float  # a figure's own title (suptitle)
    line_scale: float  # multiplies every line width: a 0.5 pt grid line vanishes on a projector

    def lw(self, width: float) -> float:
        """A line width in this style (``width`` is the screen width, in points)."""
        return width * self.line_scale

    def fill(self, text: str, width_in: float, *, size: float | None = None) -> str:
        """``text`` wrapped so each line fits ``width_in`` inches at ``size`` pt (default
        ``body``): a title written for a laptop stays inside the figure on a projector."""
        chars = max(12, int(width_in * 72 / (0.6 * (size or self.body))))
        # A size and its label ("720×864 px (W×H)") never break apart: no-break spaces,
        # which textwrap does not split on, hold it together until the lines are made.
        held = _SIZE.sub(lambda m: m.group(0).replace(" ", _NBSP), text)
        lines = (
            textwrap.fill(line, chars, break_on_hyphens=False) if line else line
            for line in held.split("\n")
        )
        return "\n".join(lines).replace(_NBSP, " ")

    def rc(self) -> dict[str, Any]:
        """matplotlib defaults for the text and lines a figure does not size itself."""
        return {
            "font.size": self.body,
            "axes.titlesize": self.body,
            "axes.labelsize": self.body,
            "xtick.labelsize": self.small,
            "ytick.labelsize": self.small,
            "legend.fontsize": self.small,
            "legend.title_fontsize": self.small,
            "figure.titlesize": self.title,
            "lines.linewidth": self.lw(1.5),
            "patch.linewidth": self.lw(1.0),
            "axes.linewidth": self.lw(0.8),
            "hatch.linewidth": self.lw(1.0),
            "xtick.major.width": self.lw(0.8),
            "ytick.major.width": self.lw(0.8),
        }


STYLES: dict[str, Style] = {
    # matplotlib's own defaults are 10 pt; nothing goes below 9 on a laptop.
    "screen": Style("screen", small=9.0, body=10.0, title=12.0, line_scale=1.0),
    # A projected 1024 px slide shows a notebook figure at about its own size: 14 pt is the
    # least that reads from the back of a room.
    "projector": Style("projector", small=14.0, body=15.0, title=17.0, line_scale=2.0),
}

ENV_VAR = "GEMMA_EXPLORE_STYLE"
_state = {"current": STYLES["screen"]}


def current_style() -> Style:
    """The style figures are drawn in now (``"screen"`` until :func:`style` says otherwise).

    >>> current_style().body
    10.0
    """
    return _state["current"]


class _Switched:
    """What :func:`style` returns: the switch is made already; ``with`` undoes it at exit."""

    def __init__(self, previous: Style, rc: dict[str, Any]) -> None:
        self.previous, self._rc = previous, rc  # the style and rcParams to restore

    def __enter__(self) -> Style:
        return current_style()

    def __exit__(self, *exc: object) -> None:
        import matplotlib as mpl

        _state["current"] = self.previous
        mpl.rcParams.update(self._rc)

    def __repr__(self) -> str:
        return f"<figures in the {current_style().name!r} style>"


def style(name: str | Style = "screen") -> _Switched:
    """Draw every later figure in ``name``'s style: ``"screen"`` or ``"projector"``.

    Call it once (``ge.style("projector")``) for the rest of the session, or use it in a
    ``with`` block to switch back at its end.

    >>> import gemma_explore as ge
    >>> with style("projector") as s:
    ...     fig = ge.show_patch_grid((640, 480), family="gemma4")  # 14 pt text, thick lines
    """
    import matplotlib as mpl

    if isinstance(name, Style):
        new = name
    elif name in STYLES:
        new = STYLES[name]
    else:
        raise ValueError(f"style must be one of {', '.join(map(repr, STYLES))}, got {name!r}.")
    rc = new.rc()
    switched = _Switched(current_style(), {k: mpl.rcParams[k] for k in rc})
    _state["current"] = new
    mpl.rcParams.update(rc)
    return switched


def _start_style() -> None:
    """Switch to the style ``GEMMA_EXPLORE_STYLE`` names, once, when the package loads
    (matplotlib is imported only when it names another style than ``"screen"``)."""
    name = os.environ.get(ENV_VAR, "").strip()
    if not name or name == "screen":
        return
    if name not in STYLES:
        warnings.warn(
            f"{ENV_VAR}={name!r} is not a style ({', '.join(STYLES)}): figures use 'screen'.",
            stacklevel=2,
        )
        return
    style(name)


_start_style()
