"""The expanded prompt as a ribbon of segments coloured by kind.

Box widths are *not* proportional to token counts (a 1120-token image would hide the
text): they grow with log₂ of the count, the figure says so, and every box with more
than one token is labelled with its count ("<|image|> × 280"). Runs of newlines are
written "\\n×3", so "\\n\\n\\n" and "\\n\\n\\n\\n" stay apart. A video's frames repeat
the same four segments (stamp, markers, soft tokens): past the first two frames and
before the last, they fold into one box that says how many frames and tokens it holds.
A box is widened until its label fits whole in the current style (at 14 pt too).
Gids: ``"segment"`` (one rectangle per segment drawn), ``"folded_segments"`` (one per
fold; its label is the number of segments it holds), ``"merge_marker"`` (Gemma 3n
newline merges), ``"divergence"``.
"""

from __future__ import annotations

import math
import re
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gemma_explore.colors import PADDING, kind_color
from gemma_explore.processing.layout import PromptLayout
from gemma_explore.viz.style import current_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

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
_DARK = ("image_soft", "bos", "video_soft", "timestamp")  # kinds that take white text
_NEWLINES = re.compile(r"(?:\\n){2,}")
_FRAME_START = "timestamp"  # a video frame's segments start with its stamp
_ROW = 1.4  # row pitch, in box heights


@dataclass(frozen=True)
class _Box:
    """One box of the ribbon: a segment, or a fold of several."""

    segments: tuple  # the Segment(s) it stands for
    x: float
    y: float
    w: float

    @property
    def folded(self) -> bool:
        return len(self.segments) > 1


def _label(seg) -> str:
    """The box's text: short names for markers, newline runs counted ("\\n×3")."""
    text = _SHORT.get(seg.kind, seg.text)
    return _NEWLINES.sub(lambda m: f"\\n×{len(m.group(0)) // 2}", text)


def _width(length: int) -> float:
    return 2.6 + 2.2 * math.log2(length) if length > 1 else 2.6


def _char_units(per_row: float) -> float:
    """How wide one character of the current style's small text is, in box units: the
    ribbon is 12 in wide and ``per_row`` units across (a DejaVu character is ~0.6 em)."""
    return 0.6 * current_style().small * (per_row + 0.4) / (12 * 72 * 0.96)


def _fold_label(group: tuple) -> str:
    frames = sum(s.kind == _FRAME_START for s in group)
    return f"{frames} frames like these: {group[-1].end - group[0].start} tokens"


def _box_width(group: tuple, per_row: float) -> float:
    """log₂ of the tokens, widened until the box's label fits whole (at most a row)."""
    label = _fold_label(group) if len(group) > 1 else _label(group[0])
    base = 30.0 if len(group) > 1 else _width(group[0].length)
    return min(max(base, (len(label) + 1.5) * _char_units(per_row)), per_row)


def _fold_frames(segments: list, keep_first: int = 2, keep_last: int = 1) -> list[tuple]:
    """Group the segments into boxes: each segment alone, except a run of more than
    ``keep_first + keep_last + 1`` frames, whose middle frames become one group."""
    starts = [i for i, s in enumerate(segments) if s.kind == _FRAME_START]
    if len(starts) <= keep_first + keep_last + 1:
        return [(s,) for s in segments]
    lo, hi = starts[keep_first], starts[-keep_last]
    return [(s,) for s in segments[:lo]] + [tuple(segments[lo:hi])] + [(s,) for s in segments[hi:]]


def _place(groups: list[tuple], per_row: float) -> list[_Box]:
    """Wrap the boxes into rows ``per_row`` wide."""
    boxes, x, y = [], 0.0, 0.0
    for group in groups:
        w = _box_width(group, per_row)
        if x + w > per_row and x > 0:
            x, y = 0.0, y + _ROW
        boxes.append(_Box(group, x, y, w))
        x += w + 0.15
    return boxes


def _problems(layout: PromptLayout) -> str:
    """Where vLLM's prompt would differ from transformers', and the layout's warnings."""
    lines = [
        f"⚠ vLLM ≠ transformers at token {d.position}: "
        + (d.error.split(":")[0] + " — " if d.error else "")
        + d.rule
        for d in layout.divergences
    ] + [f"⚠ {w}" for w in layout.warnings]
    width = int(11.5 * 72 / (0.6 * current_style().small))
    return "\n".join(textwrap.fill(p, width) for p in lines)


def _draw_box(ax, box: _Box, layout: PromptLayout, merges: set[int], per_row: float) -> None:
    """One box, its whole label (cut only when longer than a row), and its markers
    (▼ merged newline, ▲ divergence)."""
    from matplotlib.patches import Rectangle

    st = current_style()
    first, last = box.segments[0], box.segments[-1]
    if box.folded:
        face, label, gid = "white", _fold_label(box.segments), "folded_segments"
    else:
        face, label, gid = kind_color(first.kind), _label(first), "segment"
    patch = Rectangle(
        (box.x, box.y),
        box.w,
        1.0,
        facecolor=face,
        gid=gid,
        edgecolor="black" if box.folded else "white",
        lw=st.lw(0.5),
        hatch="..." if box.folded else None,
    )
    if box.folded:
        patch.set_label(str(len(box.segments)))
    ax.add_patch(patch)
    fits = int(box.w / _char_units(per_row)) - 1  # a label longer than a row: cut
    label = label if len(label) <= fits else label[: max(fits - 1, 1)] + "…"
    ax.text(
        box.x + box.w / 2,
        box.y + 0.5,
        label,
        ha="center",
        va="center",
        fontsize=st.small,
        color="white" if first.kind in _DARK and not box.folded else "black",
        clip_on=True,
        parse_math=False,  # "$x$" is token text, not math
        bbox={"fc": "white", "lw": 0, "pad": 1} if box.folded else None,
    )
    if first.start in merges:
        ax.plot(
            [box.x + box.w / 2],
            [box.y - 0.12],
            marker="v",
            color="black",
            ms=st.lw(5),
            gid="merge_marker",
        )
    if any(first.start <= d.position < last.end for d in layout.divergences):
        ax.plot(
            [box.x + box.w / 2],
            [box.y + 1.12],
            marker="^",
            color=PADDING,
            ms=st.lw(7),
            gid="divergence",
        )


def _title(layout: PromptLayout, folded: bool) -> str:
    family = layout.spec.display_name
    status = "all placeholders match their plans ✓" if layout.agrees else "placeholder mismatch ✗"
    kind = "" if layout.template else f" ({layout.source})"
    return current_style().fill(
        f"{family} prompt{kind}: {layout.num_tokens} tokens in {len(layout.segments)} segments "
        f"— {status}\nbox width grows with log₂(tokens) and fits its label, not to scale: "
        "counts are in the labels (× n) and the legend"
        + ("; ▼ = merged newline token" if layout.newline_merges else "")
        + ("; dotted: frames folded" if folded else ""),
        11.5,
    )


def show_layout(
    layout: PromptLayout, *, ax: Any = None, per_row: float = 60.0, fold: bool = True
) -> Figure:
    """Draw the prompt after expansion: one box per segment, wrapped into rows (a video's
    middle frames folded into one box unless ``fold=False``).

    >>> import gemma_explore as ge
    >>> b = ge.load("tiny-gemma4")
    >>> fig = show_layout(ge.layout_prompt("Hi", bundle=b, images=[ge.sample_photo()]))
    """
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    st = current_style()
    segments = list(layout.segments)
    groups = _fold_frames(segments) if fold else [(s,) for s in segments]
    boxes = _place(groups, per_row)
    rows = int(boxes[-1].y / _ROW) + 1 if boxes else 1
    notes = _problems(layout)
    scale = st.body / 10  # bigger text, taller rows
    notes_ax = None
    if ax is None:
        note_h = (0.8 + 0.2 * scale * (notes.count("\n") + 1)) if notes else 0.0
        fig = Figure(figsize=(12, (0.55 * rows + 1.9) * scale + note_h), layout="constrained")
        if notes:
            ax, notes_ax = fig.subplots(2, 1, height_ratios=[(0.55 * rows + 0.6) * scale, note_h])
            notes_ax.axis("off")
        else:
            ax = fig.subplots()
    fig = ax.figure
    merges = {m.position for m in layout.newline_merges}
    for box in boxes:
        _draw_box(ax, box, layout, merges, per_row)
    ax.set_xlim(-0.2, per_row + 0.2)
    ax.set_ylim(rows * _ROW - 0.1, -0.4)
    ax.axis("off")
    handles = [
        Patch(facecolor=kind_color(k), label=f"{k} ({v})") for k, v in layout.counts().items()
    ]
    (notes_ax or ax).legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 1.0 if notes_ax else 0.0),
        ncol=min(6 if st.small < 12 else 4, len(handles)),
        fontsize=st.small,
        frameon=False,
    )
    ax.set_title(_title(layout, any(b.folded for b in boxes)), fontsize=st.body)
    if notes:
        where = notes_ax or ax
        where.text(
            0.0,
            0.0 if notes_ax else -0.35,
            notes,
            fontsize=st.small,
            color=PADDING,
            va="bottom",
            ha="left",
            transform=where.transAxes,
            gid="divergence_notes",
            parse_math=False,
        )
    return fig
