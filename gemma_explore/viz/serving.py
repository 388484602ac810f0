"""Where a served checkpoint's GPU memory goes, and how big one item can get.

Gids: ``"mem_weights"``, ``"mem_kv"``, ``"mem_encoder_cache"``, ``"mem_headroom"`` (the
stacked bar), ``"item_tokens"`` (one bar per modality: worst-case tokens of the items a
prompt may hold), ``"max_model_len"`` and ``"encoder_budget"`` (the two limits).
"""

from __future__ import annotations

from typing import Any

from ..colors import KIND_COLORS, OKABE_ITO
from ..serving import ServingPlan

__all__ = ["show_serving"]

_GIB = 2**30
_MODALITY_COLOR = {
    "image": KIND_COLORS["image_soft"],
    "audio": KIND_COLORS["audio_soft"],
    "video": KIND_COLORS["video_soft"],
}


def show_serving(
    plan: ServingPlan,
    *,
    gpu_memory_gib: float | None = None,
    gpu_memory_utilization: float = 0.9,
    ax: Any = None,
):
    """Left: a stacked bar of the memory one engine holds: weights, KV for one request of
    ``max_model_len`` (vLLM's per-request reservation), the encoder cache and, when
    ``gpu_memory_gib`` is given, what is left of ``gpu_memory_utilization`` × the GPU for
    activations and more requests' KV. Right: per modality, the worst-case tokens of the
    items one prompt may hold (``max_tokens_per_item × max_items_per_prompt``) against
    ``max_model_len`` and the encoder budget. ``ax=`` draws the memory bar only.

    >>> fig = show_serving(ge.plan_serving("tiny-gemma4"))     # doctest: +SKIP
    """
    from matplotlib.figure import Figure

    if not isinstance(plan, ServingPlan):
        raise TypeError("show_serving draws a ServingPlan: pass ge.plan_serving(bundle, …).")
    if ax is None:
        fig = Figure(figsize=(11, 4), layout="constrained")
        mem_ax, tok_ax = fig.subplots(1, 2, width_ratios=[1, 2.2])
    else:
        fig, mem_ax, tok_ax = ax.figure, ax, None

    parts = [
        ("weights", plan.weights_bytes, OKABE_ITO["grey"], "mem_weights"),
        (f"KV, one {plan.max_model_len}-token request", plan.vllm_kv_bytes_per_request,
         OKABE_ITO["sky"], "mem_kv"),
        (f"encoder cache ({plan.encoder_cache_size} tokens)", plan.encoder_cache_bytes,
         OKABE_ITO["green"], "mem_encoder_cache"),
    ]  # fmt: skip
    used = sum(p[1] for p in parts)
    if gpu_memory_gib is not None:
        left = gpu_memory_gib * _GIB * gpu_memory_utilization - used
        if left < 0:
            mem_ax.set_title("does not fit", color=OKABE_ITO["vermillion"])
        parts.append(("activations + more requests' KV", max(left, 0), "white", "mem_headroom"))
    unit, scale = ("GiB", _GIB) if sum(p[1] for p in parts) >= _GIB / 4 else ("MiB", 2**20)
    bottom = 0.0
    for label, value, color, gid in parts:
        h = value / scale
        mem_ax.bar([0], [h], bottom=bottom, color=color, edgecolor="black", linewidth=0.5,
                   label=f"{label}: {h:,.2f} {unit}", gid=gid)  # fmt: skip
        bottom += h
    mem_ax.set_xticks([])
    mem_ax.set_ylabel(unit)
    mem_ax.set_xlim(-0.6, 0.6)
    mem_ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.02))
    if not mem_ax.get_title():
        mem_ax.set_title(
            f"{plan.model.name}: memory (weights {plan.dtype_bytes} B/param)", fontsize=10
        )

    if tok_ax is not None:
        mods = list(plan.max_tokens_per_item)
        totals = [plan.max_tokens_per_item[m] * plan.max_items_per_prompt[m] for m in mods]
        bars = tok_ax.barh(mods, totals, color=[_MODALITY_COLOR.get(m, "grey") for m in mods],
                           gid="item_tokens")  # fmt: skip
        for bar, m in zip(bars, mods, strict=True):
            tok_ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2,
                        f" {plan.max_items_per_prompt[m]} × {plan.max_tokens_per_item[m]}",
                        va="center", fontsize=9)  # fmt: skip
        tok_ax.axvline(plan.max_model_len, color="black", gid="max_model_len",
                       label=f"max_model_len {plan.max_model_len}")  # fmt: skip
        if plan.encoder_cache_size:
            tok_ax.axvline(plan.encoder_compute_budget, color=OKABE_ITO["vermillion"], ls="--",
                           gid="encoder_budget",
                           label=f"encoder budget {plan.encoder_compute_budget}")  # fmt: skip
        tok_ax.set_xlabel("tokens (worst case per prompt: items × tokens per item)")
        tok_ax.set_title("what the profiler reserves per modality", fontsize=10)
        tok_ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncols=2)
        tok_ax.set_xlim(0, 1.2 * max([plan.max_model_len, plan.encoder_compute_budget, *totals]))
        if not mods:
            tok_ax.text(0.5, 0.5, "every modality has limit 0", transform=tok_ax.transAxes,
                        ha="center")  # fmt: skip
    return fig
