"""A laid-out prompt drawn as HTML: one coloured span per segment, then what vLLM and
transformers disagree on. ``PromptLayout._repr_html_`` calls :func:`layout_html`; this
module reads the layout's fields only (no import of ``layout``, which sits above it).

>>> short_ids((2, 7, 7, 7, 9))
'[2, 7×3, 9]'
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from .colors import kind_color

if TYPE_CHECKING:
    from .layout import PromptLayout

__all__ = ["layout_html", "short_ids"]


def short_ids(ids: tuple[int, ...] | None) -> str:
    """An id list for a message: runs of one id shortened to ``id×count``."""
    if ids is None:
        return "—"
    parts: list[str] = []
    for i in ids:
        if parts and parts[-1].split("×")[0] == str(i):
            head, _, count = parts[-1].partition("×")
            parts[-1] = f"{head}×{int(count or 1) + 1}"
        else:
            parts.append(str(i))
    return "[" + ", ".join(parts) + "]"


def _span(layout: PromptLayout, segment) -> str:
    s = segment
    ids = layout.input_ids[s.start : s.end]
    title = html.escape(
        f"{s.kind} #{s.item} @{s.start}+{s.length}: ids {list(ids[:8])}"
        + ("…" if s.length > 8 else "")
    )
    label = html.escape(s.text if len(s.text) < 40 else s.text[:37] + "…")
    return (
        f"<span title='{title}' style='background:{kind_color(s.kind)};padding:1px 3px;"
        "margin:1px;border-radius:3px;display:inline-block;font-family:monospace;"
        f"font-size:12px'>{label}</span>"
    )


def _problems(layout: PromptLayout) -> str:
    return "".join(
        f"<li><b>vLLM ≠ transformers at token {d.position}</b> ({html.escape(d.seed_function)}): "
        f"{html.escape(d.rule)}<br><code>vLLM: {html.escape(d.error or short_ids(d.vllm_ids))}"
        f"</code><br><code>transformers: {html.escape(short_ids(d.transformers_ids))}</code></li>"
        for d in layout.divergences
    ) + "".join(f"<li>{html.escape(w)}</li>" for w in layout.warnings)


def layout_html(layout: PromptLayout) -> str:
    """The layout as an HTML fragment (what a notebook shows for a ``PromptLayout``)."""
    spans = "".join(_span(layout, s) for s in layout.segments)
    summary = ", ".join(f"{k}: {v}" for k, v in layout.counts().items())
    problems = _problems(layout)
    return (
        f"<div><b>PromptLayout — {layout.family}, {layout.num_tokens} tokens ({layout.source})</b>"
        f"<div style='line-height:1.9'>{spans}</div><small>{summary}</small>"
        + (f"<ul style='color:#b24000'>{problems}</ul>" if problems else "")
        + "</div>"
    )
