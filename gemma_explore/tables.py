"""One table helper for every text, HTML and markdown table the package prints.

Plans, parity reports, encoder reports and the demo's counts are all small tables with
an optional title, flagged rows (where sides disagree) and a list of notes (a plan's
steps). :class:`Table` holds that once and renders it three ways.

>>> t = Table(("step", "ours", "theirs"), (("tokens", 280, 289),), title="Parity", flagged=(0,))
>>> print(t.text())
Parity
    step    ours  theirs
  ✗ tokens   280     289
>>> print(Table((), (("budget", 280),)).markdown())
| | |
|---|---|
| budget | 280 |
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gemma_explore.colors import MISMATCH

__all__ = ["ShownAsTable", "Table"]


def _cell(value: Any) -> str:
    return "—" if value is None else str(value)


@dataclass(frozen=True)
class Table:
    """A titled table of rows; ``header=()`` makes a two-column key/value table."""

    header: tuple[str, ...]  # column names; () for key/value rows
    rows: tuple[tuple[Any, ...], ...]  # cells; None prints as "—"
    title: str = ""
    flagged: Sequence[int] = ()  # indices of rows to mark (sides disagree)
    notes: tuple[str, ...] = ()  # lines under the table (a plan's steps)
    notes_title: str = ""  # e.g. "steps"; numbered when set, bullets otherwise

    @property
    def _marks(self) -> bool:
        return bool(self.flagged)

    def text(self) -> str:
        """Aligned plain text, for ``repr`` and the command line."""
        grid = ([list(self.header)] if self.header else []) + [
            [_cell(c) for c in r] for r in self.rows
        ]
        widths = [max(len(row[i]) for row in grid) for i in range(len(grid[0]))] if grid else []
        lines = [self.title] if self.title else []
        for i, row in enumerate(grid):
            r = i - (1 if self.header else 0)
            mark = ""
            if self._marks:
                mark = "  " if r < 0 else "✗ " if r in self.flagged else "✓ "
            first = row[0].ljust(widths[0])
            rest = [
                c.rjust(w) if self.header else c for c, w in zip(row[1:], widths[1:], strict=False)
            ]
            lines.append("  " + mark + "  ".join([first, *rest]).rstrip())
        lines += self._note_lines("  ")
        return "\n".join(lines)

    def _note_lines(self, indent: str) -> list[str]:
        if not self.notes:
            return []
        if self.notes_title:
            out = [f"{indent}{self.notes_title}:"]
            return out + [f"{indent}  {i}. {n}" for i, n in enumerate(self.notes, 1)]
        return [f"{indent}• {n}" for n in self.notes]

    def markdown(self) -> str:
        """A GitHub-style table (the demo's Markdown boxes)."""
        head = self.header or ("", "")
        lines = [f"**{self.title}**", ""] if self.title else []
        lines.append("| " + " | ".join(head) + " |" if self.header else "| | |")
        lines.append("|" + "|".join("---" for _ in head) + "|")
        for i, r in enumerate(self.rows):
            cells = [_cell(c).replace("|", "\\|") for c in r]
            if i in self.flagged:
                cells[0] = f"✗ {cells[0]}"
            lines.append("| " + " | ".join(cells) + " |")
        if self.notes:
            lines.append("")
            lines += [
                f"{i}. {n}" if self.notes_title else f"- {n}" for i, n in enumerate(self.notes, 1)
            ]
        return "\n".join(lines)

    def html(self) -> str:
        """An HTML table, flagged rows shaded (Jupyter's ``_repr_html_``)."""
        esc = html.escape
        parts = [f"<div><b>{esc(self.title)}</b>" if self.title else "<div>", "<table>"]
        if self.header:
            parts.append("<tr>" + "".join(f"<th>{esc(h)}</th>" for h in self.header) + "</tr>")
        for i, r in enumerate(self.rows):
            style = f" style='background:{MISMATCH}'" if i in self.flagged else ""
            tag = "td" if self.header else "th style='text-align:left;padding-right:1em'"
            first = f"<{tag}>{esc(_cell(r[0]))}</{tag.split()[0]}>"
            rest = "".join(f"<td>{esc(_cell(c))}</td>" for c in r[1:])
            parts.append(f"<tr{style}>{first}{rest}</tr>")
        parts.append("</table>")
        if self.notes:
            tag = "ol" if self.notes_title else "ul"
            items = "".join(f"<li>{esc(n)}</li>" for n in self.notes)
            parts.append(f"<{tag}>{items}</{tag}>")
        parts.append("</div>")
        return "".join(parts)


class ShownAsTable:
    """A result a notebook shows as its :meth:`table`, in HTML (the one ``_repr_html_`` of
    the plans, reports and checks; each defines ``table()``).

    >>> class Sizes(ShownAsTable):
    ...     def table(self) -> Table:
    ...         return Table(("side", "px"), (("width", 900),), title="Sizes")
    >>> Sizes()._repr_html_() == Sizes().table().html()
    True
    """

    def table(self) -> Table:
        raise NotImplementedError(f"{type(self).__name__} defines no table()")

    def _repr_html_(self) -> str:
        return self.table().html()
