"""The bill's figure: every budget visible, whole files on the count axis."""

import matplotlib

matplotlib.use("Agg")

import numpy as np

from gemma_explore.bill.totals import Bill
from gemma_explore.viz.bill import show_bill


def _bill(histograms, budgets=(70, 280, 1120)) -> Bill:
    totals = tuple(sum(k * v for k, v in h.items()) for h in histograms)
    files = sum(histograms[0].values())
    return Bill("gemma4", budgets, files, {}, totals, {}, (), (), (), {}, histograms, 0.0)


def _series(ax) -> dict[str, np.ndarray]:
    return {
        p.get_label(): p.get_path().vertices for p in ax.patches if p.get_gid() == "bill_series"
    }


def _bars(verts: np.ndarray) -> list[tuple[float, float]]:
    """(left, right) of each bar of a series' path (five vertices a bar)."""
    return [(v[:, 0].min(), v[:, 0].max()) for v in np.split(verts, len(verts) // 5)]


def test_budgets_that_agree_are_side_by_side_not_drawn_over_each_other():
    """A clip costs the same at every budget: three bars in its bin, none hidden."""
    same = {134: 1, 2399: 1}
    fig = show_bill(_bill(({65: 1, **same}, {272: 1, **same}, {1082: 1, **same})))
    ax = fig.axes[0]
    series = _series(ax)
    assert list(series) == ["budget 70", "budget 280", "budget 1120"]
    spans = [{(round(x0, 6), round(x1, 6)) for x0, x1 in _bars(verts)} for verts in series.values()]
    # No bar of one budget sits on a bar of another: their x spans never coincide.
    assert all(spans) and not (spans[0] & spans[1] or spans[0] & spans[2] or spans[1] & spans[2])
    styles = {p.get_linestyle() for p in ax.patches}
    colors = {p.get_edgecolor() for p in ax.patches}
    assert len(styles) == len(colors) == 3
    assert not any(p.get_fill() for p in ax.patches)


def test_the_count_axis_ticks_whole_files():
    fig = show_bill(_bill(({300: 1, 900: 2},), budgets=(280,)))
    ax = fig.axes[0]
    ticks = [t for t in ax.get_yticks() if ax.get_ylim()[0] <= t <= ax.get_ylim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] >= 2


def test_an_empty_bill_draws_its_axes():
    fig = show_bill(_bill(({},), budgets=(280,)))
    assert fig.axes[0].get_legend() is None and not fig.axes[0].patches
