"""Where a served checkpoint's GPU memory goes, and how big one item can get.

Each memory bar's title names the vLLM release whose rules planned it and the share of the
GPU it is measured against (the release's own when none is given).

Gids: ``"mem_weights"``, ``"mem_kv"``, ``"mem_encoder_cache"``, ``"mem_headroom"`` (the
stacked bar; a released checkpoint set beside it carries the same gids with
``"_released"`` appended), ``"item_tokens"`` (one bar per modality: worst-case tokens of
the items a prompt may hold), ``"item_label"`` (its "items × tokens", right of the bars and
both limit lines), ``"max_model_len"`` and ``"encoder_budget"`` (the two limits).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gemma_explore.colors import KIND_COLORS, OKABE_ITO
from gemma_explore.serving.plan import ServingPlan
from gemma_explore.viz.palette import panels
from gemma_explore.viz.style import current_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["show_serving"]

_GIB, _MIB = 2**30, 2**20
_MODALITY_COLOR = {
    "image": KIND_COLORS["image_soft"],
    "audio": KIND_COLORS["audio_soft"],
    "video": KIND_COLORS["video_soft"],
}


def _is_tiny(plan: ServingPlan) -> bool:
    """A tiny random-weight build (by name or loaded): its bytes say nothing about a real
    checkpoint. (ServingModel has no field for it yet; its name and source say it.)"""
    from gemma_explore.models.tiny import TINY_NAMES

    return plan.model.name in TINY_NAMES or plan.model.config_source == "tiny build"


def _utilization(plan: ServingPlan, asked: float | None) -> float:
    """The share of the GPU the bar is measured against: yours, else what the plan's release
    uses with the flag unset (its default share, or 1.0 with the extensible KV cache)."""
    if asked is not None:
        return float(asked)
    return float(plan.vllm.gpu_memory_utilization or 1.0)


def _memory_parts(plan: ServingPlan, gpu_memory_gib: float | None, utilization: float):
    """(label, bytes, colour, gid) for each part of one engine's memory, and whether it
    fits: the plan's own :meth:`~ServingPlan.memory_fit` (the demo's verdict reads it too)."""
    fit = plan.memory_fit(gpu_memory_gib or 0.0, utilization)
    parts = [
        ("weights", fit.weights_bytes, OKABE_ITO["grey"], "mem_weights"),
        (f"KV, one {plan.max_model_len}-token request", fit.kv_bytes, OKABE_ITO["sky"], "mem_kv"),
        (
            f"encoder cache ({plan.encoder_cache_size} tokens)",
            fit.encoder_cache_bytes,
            OKABE_ITO["green"],
            "mem_encoder_cache",
        ),
    ]
    if gpu_memory_gib is None:
        return parts, True
    headroom = max(fit.room_bytes - fit.need_bytes, 0)
    parts.append(("activations + more requests' KV", headroom, "white", "mem_headroom"))
    return parts, fit.fits


def _gpu_text(plan: ServingPlan, gpu_memory_gib: float | None, asked: float | None) -> str:
    """What the bars are measured against, under which release: "80 GiB GPU × 0.9 =
    72.0 GiB (yours, <release>)", the release's default share, or no GPU."""
    p = plan.vllm
    if gpu_memory_gib is None:
        return f"no GPU given: the engine's own bytes only ({p.label})"
    util = _utilization(plan, asked)
    if asked is not None:
        whose = f"yours, {p.label}"
    elif p.kv_sizing == "extensible":
        whose = f"{p.label}: unset, extensible KV cache; vLLM measures the pool at start-up"
    else:
        whose = f"{p.label}'s default"
    return f"{gpu_memory_gib:g} GiB GPU × {util:g} = {gpu_memory_gib * util:,.1f} GiB ({whose})"


def _draw_memory(
    ax, plan: ServingPlan, parts: list, fits: bool, gpu: str, suffix: str = ""
) -> None:
    """One stacked bar, in GiB when it reaches one GiB, else MiB (the axis says which)."""
    st = current_style()
    unit, scale = ("GiB", _GIB) if sum(p[1] for p in parts) >= _GIB else ("MiB", _MIB)
    bottom = 0.0
    for label, value, color, gid in parts:
        h = value / scale
        ax.bar(
            [0],
            [h],
            bottom=bottom,
            color=color,
            edgecolor="black",
            linewidth=st.lw(0.5),
            label=f"{label}: {h:,.2f} {unit}",
            gid=gid + suffix,
        )
        bottom += h
    ax.set_xticks([])
    ax.set_ylabel(unit)
    ax.set_xlim(-0.6, 0.6)
    ax.legend(fontsize=st.small, loc="upper center", bbox_to_anchor=(0.5, -0.02))
    name = plan.model.name.removeprefix("google/")
    what = (
        "tiny random-weight model: its MiB are not a real checkpoint's"
        if _is_tiny(plan)
        else f"released checkpoint, weights {plan.dtype_bytes} B/param"
    )
    title = f"{name}\n{what}" if fits else f"{name}: does not fit"
    title += f"\n{gpu}"
    ax.set_title(
        st.fill(title, 5.0), fontsize=st.body, color="black" if fits else OKABE_ITO["vermillion"]
    )


def _draw_item_tokens(ax, plan: ServingPlan, width_in: float) -> None:
    """Per modality, the worst-case tokens of one prompt against the two limits."""
    st = current_style()
    mods = list(plan.max_tokens_per_item)
    totals = [plan.max_tokens_per_item[m] * plan.max_items_per_prompt[m] for m in mods]
    bars = ax.barh(
        mods, totals, color=[_MODALITY_COLOR.get(m, "grey") for m in mods], gid="item_tokens"
    )
    # Each bar's "n × tokens" goes right of its bar and of both limit lines, never on them.
    limits = [plan.max_model_len] + (
        [plan.encoder_compute_budget] if plan.encoder_cache_size else []
    )
    labels = [f"{plan.max_items_per_prompt[m]} × {plan.max_tokens_per_item[m]}" for m in mods]
    right = max([*limits, *totals])
    for bar, label in zip(bars, labels, strict=True):
        ax.annotate(
            label,
            (right, bar.get_y() + bar.get_height() / 2),
            xytext=(st.small / 2, 0),
            textcoords="offset points",
            va="center",
            fontsize=st.small,
            gid="item_label",
        )
    ax.axvline(
        plan.max_model_len,
        color="black",
        gid="max_model_len",
        lw=st.lw(1.5),
        label=f"max_model_len {plan.max_model_len}",
    )
    if plan.encoder_cache_size:
        ax.axvline(
            plan.encoder_compute_budget,
            color=OKABE_ITO["vermillion"],
            ls="--",
            gid="encoder_budget",
            lw=st.lw(1.5),
            label=f"encoder budget {plan.encoder_compute_budget}",
        )
    ax.set_xlabel(st.fill("tokens (worst case per prompt: items × tokens per item)", width_in))
    # The limits' legend in one row between the title and the bars: inside the axes it
    # covers a bar's "n × tokens" label, whichever corner it takes.
    ax.legend(
        fontsize=st.small, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=2, frameon=False
    )
    ax.set_title(
        st.fill(f"what the profiler reserves per modality ({plan.model.name})", width_in),
        fontsize=st.body,
        pad=2.2 * st.small + 6,  # above the legend's row
    )
    # Room right of the furthest line for the longest label (~0.6 em a character).
    label_in = (max(map(len, labels), default=0) + 1.5) * 0.6 * st.small / 72
    room = label_in / max(0.8 * width_in - label_in, 1.0)
    ax.set_xlim(0, (1 + max(0.3, 1.15 * room)) * max([*limits, *totals]))
    if not mods:
        ax.text(
            0.5,
            0.5,
            "every modality has limit 0",
            transform=ax.transAxes,
            ha="center",
            fontsize=st.small,
        )


def show_serving(
    plan: ServingPlan,
    *,
    released: ServingPlan | None = None,
    gpu_memory_gib: float | None = None,
    gpu_memory_utilization: float | None = None,
    ax: Any = None,
) -> Figure:
    """Left: a stacked bar of the memory one engine holds: weights, KV for one request of
    ``max_model_len`` (vLLM's per-request reservation), the encoder cache and, when
    ``gpu_memory_gib`` is given, what is left of ``gpu_memory_utilization`` × the GPU for
    activations and more requests' KV. ``released=`` sets a released checkpoint's plan
    beside it (a tiny model's bar is labelled as one: its MiB say nothing about a real
    checkpoint). Right: per modality, the worst-case tokens of the items one prompt may
    hold (``max_tokens_per_item × max_items_per_prompt``) against ``max_model_len`` and the
    encoder budget. Each bar's title names the GPU it is measured against (its size and
    utilisation: ``gpu_memory_utilization``, else what the plan's vLLM release uses with
    the flag unset) and that release, and says when the engine does not fit. With ``ax=``
    the panels go in a sub-grid at that axes' place.

    >>> import gemma_explore as ge
    >>> fig = show_serving(ge.plan_serving("tiny-gemma4"), gpu_memory_gib=24)
    """
    if not isinstance(plan, ServingPlan):
        raise TypeError("show_serving draws a ServingPlan: pass ge.plan_serving(bundle, …).")
    plans = [plan] + ([released] if released is not None else [])
    grow = 1 + (current_style().body / 10 - 1) / 4  # taller for bigger text
    if released is None:  # the bar beside the tokens
        fig, grid = panels(ax, (11, 5.4 * grow), 1, 2, width_ratios=[1, 1.6])
        mem_cells, tok_cell, tok_in = [grid[0, 0]], grid[0, 1], 5.8
    else:  # two bars above the tokens
        fig, grid = panels(ax, (11, 9.0 * grow), 2, 2, height_ratios=[1.5, 1])
        mem_cells, tok_cell, tok_in = [grid[0, 0], grid[0, 1]], grid[1, :], 10.0
    for i, (p, cell) in enumerate(zip(plans, mem_cells, strict=True)):
        parts, fits = _memory_parts(p, gpu_memory_gib, _utilization(p, gpu_memory_utilization))
        gpu = _gpu_text(p, gpu_memory_gib, gpu_memory_utilization)
        _draw_memory(fig.add_subplot(cell), p, parts, fits, gpu, "_released" if i else "")
    _draw_item_tokens(fig.add_subplot(tok_cell), plan, tok_in)
    return fig
