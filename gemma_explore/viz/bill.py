"""The token bill of a dataset: a histogram of prompt tokens per file, per budget.

>>> fig = show_bill(bill(Path("dataset"), family="gemma4"))   # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gemma_explore.viz.style import current_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from gemma_explore.bill.totals import Bill

__all__ = ["show_bill"]


def show_bill(bill: Bill, *, ax: Any = None) -> Figure:
    """A histogram of tokens per file (or sample), one series per budget (a Figure; ``ax=`` to draw
    into an existing axis).

    >>> fig = show_bill(bill(Path("dataset"), budgets=(70, 280)))   # doctest: +SKIP
    """
    from matplotlib.figure import Figure

    st = current_style()
    if ax is None:
        fig = Figure(figsize=(7, 3.5 * st.body / 10), layout="constrained")
        ax = fig.subplots()
    else:
        fig = ax.figure
    for budget, counts in zip(bill.budgets, bill.histograms, strict=True):
        if not counts:
            continue
        label = "fixed" if budget is None else f"budget {budget}"
        values, weights = zip(*sorted(counts.items()), strict=True)
        # Outlines, not translucent bars: overlapping filled bars mix into colours the
        # legend does not have.
        ax.hist(values, bins=30, weights=weights, histtype="step", linewidth=st.lw(2), label=label)
    unit = bill.unit  # "sample" for parquet, tar and arrow shards
    ax.set_xlabel(f"prompt tokens per {unit}")
    ax.set_ylabel(f"{unit}s")
    ax.set_title(f"Token bill: {bill.billed_files} {unit}s ({bill.family})", fontsize=st.body)
    if any(bill.histograms):
        ax.legend(fontsize=st.small)
    return fig
