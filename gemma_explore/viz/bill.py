"""The token bill of a dataset: a histogram of prompt tokens per file, per budget.

The budgets share one set of bins and stand side by side in each bin, each in its own
colour and line style: a file whose tokens do not depend on the budget (a clip, a video
at a fixed frame budget) shows once per budget, not as one outline drawn over another.
The count axis ticks whole files only.

>>> import tempfile, gemma_explore as ge
>>> folder = tempfile.mkdtemp()
>>> ge.sample_photo().save(f"{folder}/photo.jpg")
>>> fig = show_bill(ge.bill(folder, family="gemma4"))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gemma_explore.colors import OKABE_ITO
from gemma_explore.viz.style import current_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.patches import PathPatch

    from gemma_explore.bill.totals import Bill

__all__ = ["show_bill"]

_COLORS = [OKABE_ITO[c] for c in ("blue", "orange", "green", "purple", "vermillion", "sky")]
_DASHES = ["solid", "dashed", "dotted", "dashdot"]


def _edges(histograms: tuple[dict[int, int], ...], bins: int = 30) -> np.ndarray:
    """One set of bin edges for every budget, over all their token counts."""
    values = sorted({v for h in histograms for v in h})
    return np.histogram_bin_edges(values, bins=bins)


def _series(edges: np.ndarray, counts: dict[int, int], slot: int, slots: int) -> PathPatch:
    """One budget's bars as one outlined patch: in each bin, the ``slot``-th of ``slots``
    side-by-side bars, as tall as the files that fall in it."""
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path

    heights, _ = np.histogram(list(counts), bins=edges, weights=list(counts.values()))
    verts, codes = [], []
    for lo, hi, h in zip(edges[:-1], edges[1:], heights, strict=True):
        if not h:
            continue
        w = (hi - lo) / slots
        x = lo + slot * w
        verts += [(x, 0), (x, h), (x + w, h), (x + w, 0), (x, 0)]
        codes += [Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY]
    return PathPatch(Path(verts, codes), fill=False)


def show_bill(bill: Bill, *, ax: Any = None) -> Figure:
    """A histogram of tokens per file (or sample), one series per budget, side by side in
    shared bins (a Figure; ``ax=`` to draw into an existing axis).

    >>> import tempfile, gemma_explore as ge
    >>> folder = tempfile.mkdtemp()
    >>> ge.sample_photo().save(f"{folder}/photo.jpg")
    >>> fig = show_bill(ge.bill(folder, family="gemma4", budgets=(70, 280)))
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    st = current_style()
    if ax is None:
        fig = Figure(figsize=(7, 3.5 * st.body / 10), layout="constrained")
        ax = fig.subplots()
    else:
        fig = ax.figure
    drawn = [(b, c) for b, c in zip(bill.budgets, bill.histograms, strict=True) if c]
    if drawn:
        edges = _edges(tuple(c for _, c in drawn))
        for i, (budget, counts) in enumerate(drawn):
            patch = _series(edges, counts, i, len(drawn))
            # Outlines, not translucent bars: overlapping filled bars mix into colours the
            # legend does not have.
            patch.set(
                edgecolor=_COLORS[i % len(_COLORS)],
                linestyle=_DASHES[i % len(_DASHES)],
                linewidth=st.lw(2),
                label="fixed" if budget is None else f"budget {budget}",
                gid="bill_series",
            )
            ax.add_patch(patch)
        pad = 0.03 * (edges[-1] - edges[0])  # the outer bars clear the spines
        ax.set_xlim(edges[0] - pad, edges[-1] + pad)
        ax.autoscale_view(scalex=False)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=st.small)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # whole files: no 0.5 tick
    unit = bill.unit  # "sample" for parquet, tar and arrow shards
    ax.set_xlabel(f"prompt tokens per {unit}")
    ax.set_ylabel(f"{unit}s")
    ax.set_title(f"Token bill: {bill.billed_files} {unit}s ({bill.family})", fontsize=st.body)
    return fig
