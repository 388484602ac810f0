"""A server probe, case by case: what the reference expects an item to cost, and what the
server counted.

Gids: ``"probe_expected"`` (one bar per case: the reference), ``"probe_vllm"`` (a tick
where vLLM's own count differs; the legend names the release whose arithmetic it is), ``"probe_measured"`` (one marker per answered case,
green where it matches, vermillion where a fault was named), ``"probe_verdict"`` (the
verdict written beside each case).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gemma_explore.colors import OKABE_ITO
from gemma_explore.conformance.probe import ProbeResult
from gemma_explore.viz.style import current_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["show_probe"]

_GOOD = ("matches", "vllm_known")


def _cell(value: int | None) -> str:
    return "—" if value is None else str(value)


def show_probe(result: ProbeResult, *, ax: Any = None) -> Figure:
    """Horizontal bars (log scale): each case's expected cost in prompt tokens, with the
    server's measured cost as a marker on it, and "measured / expected: verdict" beside it; a
    failure line, when the probe stopped, is the title, else the title names the model and
    the vLLM release whose arithmetic the ticks follow.

    >>> from gemma_explore.conformance.probe import probe
    >>> fig = show_probe(probe("http://127.0.0.1:9", model="gemma-4-E2B", timeout=1))
    >>> fig.axes[0].get_title(loc="left")[:19]
    'nothing answered at'
    """
    from matplotlib.figure import Figure

    if not isinstance(result, ProbeResult):
        raise TypeError("show_probe draws a ProbeResult: pass ge.probe(url, model=…)'s result.")
    st = current_style()
    cases = [c for c in result.cases if c.modality != "knob"]
    if ax is None:
        height = max(2.6, 0.42 * len(cases) * st.body / 10 + 1.4)
        fig = Figure(figsize=(min(12.0, 10.0 * st.body / 10), height), layout="constrained")
        ax = fig.subplots()
    else:
        fig = ax.figure
    rows = list(range(len(cases)))[::-1]  # the first case on top
    expected = [max(c.expected, 1) for c in cases]
    bar = 0.6  # each bar's height; vLLM's tick reaches a little past it
    ax.barh(rows, expected, bar, color=OKABE_ITO["sky"], label="expected (transformers)")
    for patch in ax.patches:
        patch.set_gid("probe_expected")
    named = False  # the legend names the release on the first tick drawn
    for y, c in zip(rows, cases, strict=True):
        if c.vllm_expected != c.expected:
            ax.plot(
                [c.vllm_expected] * 2,
                [y - bar / 2 - 0.05, y + bar / 2 + 0.05],
                color=OKABE_ITO["purple"],
                gid="probe_vllm",
                label=None if named else f"{result.vllm_label}'s count",
            )
            named = True
        if c.measured is not None:
            good = c.verdict in _GOOD
            ax.plot(
                max(c.measured, 1),
                y,
                "D" if good else "X",
                ms=st.body * 0.9,
                color=OKABE_ITO["green" if good else "vermillion"],
                gid="probe_measured",
                markeredgecolor="black",
                markeredgewidth=st.lw(0.5),
            )
    ax.set_xscale("log")
    ax.set_yticks(rows, [st.fill(c.name, 2.6, size=st.small) for c in cases], fontsize=st.small)
    # The verdicts as the right-hand labels of the same rows ("measured / expected: words");
    # a case the probe never sent says so in two words: the failure is the title.
    right = ax.twinx()
    right.set_ylim(ax.get_ylim())
    verdicts = [
        f"{_cell(c.measured)} / {c.expected}: "
        + ("not sent" if c.measured is None and result.failure else c.words)
        for c in cases
    ]
    right.set_yticks(rows, [st.fill(v, 3.4, size=st.small) for v in verdicts], fontsize=st.small)
    right.tick_params(length=0)
    right.set_gid("probe_verdict")
    ax.set_xlabel("prompt tokens the item adds (log scale)")
    title = result.failure or (
        f"{result.model}: {result.spec.display_name}, probed ({result.vllm_label}'s arithmetic)"
    )
    ax.set_title(st.fill(title, 5.5), loc="left")  # within the bars' width
    ax.plot([], [], "D", color=OKABE_ITO["green"], label="measured: matches")
    ax.plot([], [], "X", color=OKABE_ITO["vermillion"], label="measured: differs")
    ax.legend(loc="upper left", bbox_to_anchor=(0, -0.14), ncol=4, fontsize=st.small)
    ax.margins(y=0.02)
    right.set_ylim(ax.get_ylim())
    return fig
