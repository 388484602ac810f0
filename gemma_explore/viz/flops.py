"""What an image costs to encode, at the smallest and the largest budget, per checkpoint.

Gids: ``"flops_image_low"`` and ``"flops_image_high"`` (one bar per checkpoint each),
``"flops_ratio"`` (the ratio written above each pair), ``"flops_prefill"`` (the same
FLOPs as prompt tokens of prefill, on the right axis's scale: one marker per bar).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gemma_explore.colors import OKABE_ITO
from gemma_explore.serving.flops import FlopsReport
from gemma_explore.viz.style import current_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["show_flops"]


def show_flops(reports: list[FlopsReport] | tuple[FlopsReport, ...], *, ax: Any = None) -> Figure:
    """Grouped bars (log scale): each checkpoint's encoder FLOPs for one image at its
    smallest budget and its largest (Gemma 4: 70 and 1120; Gemma 3n: its one fixed size),
    with the ratio written above. The label under each pair gives the prefill cost of one
    prompt token, so the bars read as "this image costs N prompt tokens".

    >>> from gemma_explore.serving.flops import flops_report
    >>> fig = show_flops([flops_report("google/gemma-4-E2B-it")])
    """
    from matplotlib.figure import Figure

    st = current_style()
    reports = list(reports)
    if not reports or not all(isinstance(r, FlopsReport) for r in reports):
        raise TypeError("show_flops draws FlopsReports: pass [ge.flops_report(id), …].")
    if ax is None:
        width = min(11.0, max(6.0, 1.6 * len(reports) * st.small / 9 + 2))
        fig = Figure(figsize=(width, 4.6 * st.body / 10), layout="constrained")
        ax = fig.subplots()
    else:
        fig = ax.figure
    bar = 0.38
    labels = []
    for i, r in enumerate(reports):
        images = [c for c in r.costs if c.item == "image"]
        lo, hi = images[0], images[-1]
        ax.bar(
            i - bar / 2,
            lo.flops / 1e9,
            bar,
            color=OKABE_ITO["sky"],
            label="smallest budget" if i == 0 else None,
            gid="flops_image_low",
        )
        ax.bar(
            i + bar / 2,
            hi.flops / 1e9,
            bar,
            color=OKABE_ITO["orange"],
            label="largest budget" if i == 0 else None,
            gid="flops_image_high",
        )
        if hi is not lo:
            ax.text(
                i,
                hi.flops / 1e9 * 1.15,
                f"{hi.flops / lo.flops:.0f}×",
                ha="center",
                va="bottom",
                fontsize=st.small,
                gid="flops_ratio",
            )
        per_token = r.prefill_flops_per_token / 1e9
        name = r.model.removeprefix("google/")
        setting = lo.label if hi is lo else f"{lo.label.split()[-1]} vs {hi.label.split()[-1]}"
        labels.append(f"{name}\n{setting}\nprefill {per_token:,.1f} GFLOP/token")
    ax.set_yscale("log")
    ax.set_xticks(range(len(reports)), labels, fontsize=st.small)
    ax.set_ylabel("GFLOPs to encode one image", fontsize=st.body)
    ax.set_title(
        st.fill(
            "One image at the smallest and largest budget (FlopCounterMode, meta device)",
            fig.get_figwidth() - 1,
        ),
        fontsize=st.body,
    )
    ax.tick_params(axis="y", labelsize=st.small)
    ax.margins(y=0.15)
    ax.legend(fontsize=st.small, loc="upper left")
    return fig
