"""The expanded prompt as a ribbon of segments coloured by kind.

Box widths are *not* proportional to token counts (a 1120-token image would hide the
text): they grow with log₂ of the count, the figure says so, and every box with more
than one token is labelled with its count ("<|image|> × 280"). Runs of newlines are
written "\\n×3", so "\\n\\n\\n" and "\\n\\n\\n\\n" stay apart. Gids:
``"segment"`` (one rectangle per segment), ``"merge_marker"`` (Gemma 3n newline merges).
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..colors import PADDING, kind_color
from ..families import get_family
from ..layout import PromptLayout

__all__ = ["show_layout"]


_SHORT = {
    "bos": "BOS",
    "turn_start": "turn▶",
    "turn_end": "◀turn",
    "boi": "BOI",
    "eoi": "EOI",
    "boa": "BOA",
    "eoa": "EOA",
}


_NEWLINES = re.compile(r"(?:\\n){2,}")


def _label(seg) -> str:
    """The box's text: short names for markers, newline runs counted ("\\n×3")."""
    text = _SHORT.get(seg.kind, seg.text)
    return _NEWLINES.sub(lambda m: f"\\n×{len(m.group(0)) // 2}", text)


def _width(length: int) -> float:
    return 2.6 + 2.2 * math.log2(length) if length > 1 else 2.6


def show_layout(layout: PromptLayout, *, ax: Any = None, per_row: float = 60.0):
    """Draw the prompt after expansion: one box per segment, wrapped into rows.

    >>> fig = show_layout(ge.layout_prompt("Hi", bundle=b, images=[img]))   # doctest: +SKIP
    """
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    boxes = []
    x = y = 0.0
    for seg in layout.segments:
        w = _width(seg.length)
        if x + w > per_row and x > 0:
            x, y = 0.0, y + 1.4
        boxes.append((seg, x, y, w))
        x += w + 0.15
    rows = int(y / 1.4) + 1
    problems = [
        f"⚠ vLLM ≠ transformers at token {d.position}: "
        + (d.error.split(":")[0] + " — " if d.error else "")
        + d.rule
        for d in layout.divergences
    ] + [f"⚠ {w}" for w in layout.warnings]
    import textwrap

    notes = "\n".join(textwrap.fill(p, 140) for p in problems)
    notes_ax = None
    if ax is None:
        note_h = 0.8 + 0.17 * (notes.count("\n") + 1) if problems else 0.0
        fig = Figure(figsize=(12, 0.55 * rows + 1.6 + note_h), layout="constrained")
        if problems:
            ax, notes_ax = fig.subplots(2, 1, height_ratios=[0.55 * rows + 0.6, note_h])
            notes_ax.axis("off")
        else:
            ax = fig.subplots()
    else:
        fig = ax.figure
    merges = {m.position for m in layout.newline_merges}
    for seg, x0, y0, w in boxes:
        ax.add_patch(
            Rectangle(
                (x0, y0),
                w,
                1.0,
                facecolor=kind_color(seg.kind),
                edgecolor="white",
                lw=0.5,
                gid="segment",
            )
        )
        label = _label(seg)
        fits = int(w * 2.2)
        label = label if len(label) <= fits else label[: max(fits - 1, 1)] + "…"
        dark = seg.kind in ("image_soft", "bos", "video_soft", "timestamp")
        ax.text(
            x0 + w / 2,
            y0 + 0.5,
            label,
            ha="center",
            va="center",
            fontsize=9,
            color="white" if dark else "black",
            clip_on=True,
            parse_math=False,  # token text is shown as written: "$x$" is not math here
        )
        if seg.start in merges:
            ax.plot([x0 + w / 2], [y0 - 0.12], marker="v", color="black", ms=5, gid="merge_marker")
        if any(seg.start <= d.position < seg.end for d in layout.divergences):
            ax.plot([x0 + w / 2], [y0 + 1.12], marker="^", color=PADDING, ms=7, gid="divergence")
    ax.set_xlim(-0.2, per_row + 0.2)
    ax.set_ylim(y + 1.3, -0.4)
    ax.axis("off")
    counts = layout.counts()
    handles = [Patch(facecolor=kind_color(k), label=f"{k} ({v})") for k, v in counts.items()]
    (notes_ax or ax).legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 1.0 if notes_ax else 0.0),
        ncol=min(6, len(handles)),
        fontsize=9,
        frameon=False,
    )
    family = get_family(layout.family).display_name
    status = "all placeholders match their plans ✓" if layout.agrees else "placeholder mismatch ✗"
    kind = "" if layout.template else f" ({layout.source})"
    ax.set_title(
        f"{family} prompt{kind}: {layout.num_tokens} tokens in {len(layout.segments)} "
        f"segments — {status}\nbox width grows with log₂(tokens), not to scale: "
        "counts are in the labels (× n) and the legend"
        + ("; ▼ = merged newline token" if layout.newline_merges else ""),
        fontsize=10,
    )
    if problems:
        where = notes_ax or ax
        y0 = 0.0 if notes_ax else -0.35
        where.text(
            0.0, y0, notes, fontsize=9, color=PADDING, va="bottom", ha="left",
            transform=where.transAxes, gid="divergence_notes", parse_math=False,
        )  # fmt: skip
    return fig
