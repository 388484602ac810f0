"""Start-up arguments for a stated workload, each one explained from the serving plan.

"Up to 4 images at budget 560 and one 30 s clip" is a :class:`Workload`;
:func:`engine_recipe` turns it into ``max_model_len``, ``limit_mm_per_prompt``,
``mm_processor_kwargs`` and ``max_num_batched_tokens``, and says why each value, from
the same arithmetic vLLM's profiler runs (:func:`~gemma_explore.serving.plan.plan_serving`).

>>> r = engine_recipe("tiny-gemma4", workload=Workload(images=4, max_soft_tokens=560,
...                                                    audio_clips=1))  # doctest: +SKIP
>>> r.args["limit_mm_per_prompt"], r.args["max_model_len"]              # doctest: +SKIP
({'image': 4, 'audio': 1, 'video': 0}, 4096)
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from gemma_explore.facts.families import DEFAULT_FAMILY, FamilySpec, get_family
from gemma_explore.plans.vllm import vllm_video_tokens
from gemma_explore.serving.plan import (
    DEFAULT_MAX_NUM_BATCHED_TOKENS,
    ServingModel,
    ServingPlan,
    plan_serving,
    serving_model,
)

__all__ = ["EngineRecipe", "Workload", "engine_recipe", "production_advice"]

ROUND_TO = 256  # lengths are rounded up to a multiple of this (vLLM's blocks are 16)


@dataclass(frozen=True)
class Workload:
    """The largest request the server must take, in words a user would say."""

    images: int = 0  # images per prompt, at most
    max_soft_tokens: int | None = None  # Gemma 4: the largest image budget any request asks
    audio_clips: int = 0  # clips per prompt (each up to 30 s)
    videos: int = 0  # Gemma 4 videos per prompt
    video_frames: int | None = None  # sampled frames per video (≤ 32)
    text_tokens: int = 256  # prompt text around the items
    max_new_tokens: int = 512  # the longest answer


@dataclass(frozen=True)
class EngineRecipe:
    """Proposed ``vllm.LLM`` arguments with one reason per argument."""

    args: dict[
        str, Any
    ]  # max_model_len, limit_mm_per_prompt, mm_processor_kwargs, max_num_batched_tokens
    reasons: dict[str, str]  # argument → why this value
    plan: ServingPlan | None  # what vLLM reserves with these arguments (None: no config here)

    def __str__(self) -> str:
        return "\n".join(f"{k} = {self.args[k]!r}: {v}" for k, v in self.reasons.items())


def _round_up(n: int) -> int:
    return max(ROUND_TO, math.ceil(n / ROUND_TO) * ROUND_TO)


def _model_for(model: str) -> ServingModel | None:
    """The checkpoint's serving facts when its config is on this machine (a tiny name, a
    folder, or a released id: local HF cache, else the built-in facts), else None."""
    from gemma_explore.facts.released import is_released
    from gemma_explore.models.tiny import TINY_NAMES

    if model in TINY_NAMES or os.path.isdir(model) or is_released(model):
        return serving_model(model)
    return None


def engine_recipe(
    model: str,
    *,
    workload: Workload,
    family: str | FamilySpec = DEFAULT_FAMILY,
    has_audio: bool = True,
) -> EngineRecipe:
    """Propose start-up arguments for ``workload`` and explain each from the serving plan.

    The checkpoint's config decides the family and modalities when it is on this machine;
    otherwise ``family`` (and ``has_audio``) stand in for it.

    >>> engine_recipe("someone/unknown", workload=Workload(images=1)).args["max_model_len"]
    1280
    """
    sm = _model_for(model)
    spec = get_family(sm.family if sm is not None else family)
    modalities = _served_modalities(sm, spec, has_audio=has_audio)
    _require_served(model, spec, workload, modalities)
    wanted = {"image": workload.images, "audio": workload.audio_clips, "video": workload.videos}
    limits, limits_why = _limits_arg(workload, wanted, modalities)
    args: dict[str, Any] = {"limit_mm_per_prompt": limits}
    reasons: dict[str, str] = {"limit_mm_per_prompt": limits_why}
    budget = _budget_arg(spec, workload)
    if budget is not None:
        args["mm_processor_kwargs"] = {"max_soft_tokens": budget}
        reasons["mm_processor_kwargs"] = (
            f"the start-up budget ({budget} soft tokens): the default for requests that name "
            "none, and the size the profiler and the encoder cache assume per image. A request "
            "may ask for another budget in its own mm_processor_kwargs, larger ones too: vLLM "
            "refuses it only when one item's embeddings exceed the encoder cache "
            "(encoder_cache_size) or the prompt exceeds max_model_len"
        )
    # Worst-case tokens per item (what the profiler assumes), markers included.
    probe = plan_serving(sm, limit_mm_per_prompt=limits, max_soft_tokens=budget) if sm else None
    per_item = (
        dict(probe.max_tokens_per_item)
        if probe
        else _facts_per_item(spec, limits, budget, workload)
    )
    args["max_model_len"], reasons["max_model_len"] = _model_len_arg(
        spec, workload, wanted, per_item
    )
    args["max_num_batched_tokens"], reasons["max_num_batched_tokens"] = _batched_tokens_arg(
        per_item
    )
    plan = None
    if sm is not None:
        plan = plan_serving(
            sm,
            max_model_len=args["max_model_len"],
            limit_mm_per_prompt=limits,
            max_num_batched_tokens=args["max_num_batched_tokens"],
            max_soft_tokens=budget,
        )
        reasons["max_num_batched_tokens"] += (
            f"; the plan: encoder cache {plan.encoder_cache_size} tokens "
            f"({plan.encoder_cache_bytes / 2**20:.1f} MiB), KV "
            f"{plan.vllm_kv_bytes_per_request / 2**20:.1f} MiB per request"
        )
    return EngineRecipe(args, reasons, plan)


def _served_modalities(
    sm: ServingModel | None, spec: FamilySpec, *, has_audio: bool
) -> tuple[str, ...]:
    """What the checkpoint takes: its config's modalities, else the family's (with an
    audio tower when ``has_audio``)."""
    if sm is not None:
        return sm.modalities
    audio = ("audio",) if has_audio else ()
    return ("image", *audio) + (("video",) if spec.has_video else ())


def _require_served(
    model: str, spec: FamilySpec, workload: Workload, modalities: tuple[str, ...]
) -> None:
    """The workload asks only for what the checkpoint takes."""
    if workload.audio_clips and "audio" not in modalities:
        raise ValueError(
            f"{model} has no audio tower: set audio_clips=0, or use an E2B/E4B checkpoint."
        )
    if workload.videos and "video" not in modalities:
        raise ValueError(f"{spec.display_name} serves no video: set videos=0.")


def _limits_arg(
    workload: Workload, wanted: dict[str, int], modalities: tuple[str, ...]
) -> tuple[dict[str, Any], str]:
    """``limit_mm_per_prompt``: the workload's counts, and why a 0 costs nothing."""
    limits: dict[str, Any] = {m: wanted[m] for m in modalities}
    if workload.videos and workload.video_frames:
        limits["video"] = {"count": workload.videos, "num_frames": workload.video_frames}
    off = [m for m in modalities if not wanted[m]]
    return limits, (
        "the workload's counts; vLLM profiles (and budgets the encoder cache for) the "
        "largest item of every modality whose limit is above 0"
        + (
            f", so {', '.join(off)} at 0 costs nothing (and such requests are refused)"
            if off
            else ""
        )
    )


def _budget_arg(spec: FamilySpec, workload: Workload) -> int | None:
    """The start-up image budget (None: the family has no budgets)."""
    if spec.image.budgets:
        from gemma_explore.plans.rules import require_budget

        return require_budget(workload.max_soft_tokens, family=spec)
    if workload.max_soft_tokens is not None:
        raise ValueError(f"{spec.display_name} has no image budget: drop max_soft_tokens.")
    return None


def _model_len_arg(
    spec: FamilySpec, workload: Workload, wanted: dict[str, int], per_item: dict[str, int]
) -> tuple[int, str]:
    """``max_model_len``: every item at its worst case, the text and the answer, rounded."""
    markers = spec.markers_per_item
    counted = [(m, n) for m, n in wanted.items() if n and m in per_item]
    items = sum(n * (per_item[m] + (markers if m != "video" else 0)) for m, n in counted)
    need = items + workload.text_tokens + workload.max_new_tokens
    value = _round_up(need)
    parts = (
        " + ".join(
            f"{n} {m} × ({per_item[m]}{f' + {markers}' if m != 'video' else ''})"
            for m, n in counted
        )
        or "no items"
    )
    return value, (
        f"{parts} + {workload.text_tokens} text + {workload.max_new_tokens} answer = {need}, "
        f"rounded up to {value}: KV pages are allocated on demand, but vLLM "
        "refuses to start unless one request of max_model_len fits the KV pool, and its "
        "'maximum concurrency' figure counts that worst case per request; no longer than "
        "the workload"
    )


def _batched_tokens_arg(per_item: dict[str, int]) -> tuple[int, str]:
    """``max_num_batched_tokens``: at least the largest item, so the encoder cache is not
    raised to it."""
    biggest = max(per_item.values(), default=0)
    value = max(DEFAULT_MAX_NUM_BATCHED_TOKENS, _round_up(biggest))
    return value, (
        f"at least the largest item ({biggest} tokens) so the encoder budget and cache stay "
        f"at this value instead of being raised to the item (encoder_cache_size = max("
        f"max_num_batched_tokens, largest item)); vLLM's default "
        f"{DEFAULT_MAX_NUM_BATCHED_TOKENS} otherwise"
    )


def _facts_per_item(
    spec: FamilySpec, limits: dict[str, Any], budget: int | None, w: Workload
) -> dict[str, int]:
    """Worst case per item from the family's facts alone (no config on this machine)."""
    out: dict[str, int] = {}
    if limits.get("image"):
        out["image"] = spec.image.fixed_soft_tokens or budget
    if limits.get("audio"):
        out["audio"] = spec.audio.fixed_placeholders or spec.audio.max_tokens
    if limits.get("video"):
        frames = min(spec.image.max_video_frames, w.video_frames or spec.image.max_video_frames)
        out["video"] = vllm_video_tokens(frames, family=spec)
    return out


def production_advice(
    plan: ServingPlan, *, gpu_memory_gib: float = 80.0, gpu_memory_utilization: float = 0.9
) -> dict[str, str]:
    """Flags worth weighing for a production ``vllm serve`` of this plan, each with why:
    tensor parallelism, FP8 weights, FP8 KV cache, prefix caching and ``max_num_seqs``.

    The KV room is an estimate (GPU × utilisation − weights): vLLM profiles the activation
    peak on the device and takes it off too.

    >>> advice = production_advice(plan_serving("google/gemma-4-31B-it"))   # doctest: +SKIP
    >>> "--tensor-parallel-size" in advice                                    # doctest: +SKIP
    """
    gib = 2**30
    budget = gpu_memory_gib * gpu_memory_utilization * gib
    weights = plan.weights_bytes
    per_request = plan.vllm_kv_bytes_per_request
    tp = 1
    while (weights + per_request) / tp > budget and tp < 8:  # TP splits both
        tp *= 2
    advice: dict[str, str] = {}
    kv_heads = min((la.kv_heads for la in plan.layers if la.stores_kv), default=1)
    room = budget * tp - weights
    advice["--tensor-parallel-size"] = (
        f"{tp}: the weights are {weights / gib:.1f} GiB at {plan.dtype_bytes} B each; "
        f"{gpu_memory_gib:g} GiB × {gpu_memory_utilization:g} = {budget / gib:.1f} GiB per GPU "
        f"leaves ~{room / gib:.1f} GiB for KV across {tp} GPU(s) (an estimate: vLLM also takes "
        f"off the profiled activation peak). With tensor parallelism each rank keeps "
        f"1/N of the weights and of the KV heads (the fewest on any layer: {kv_heads}, so up "
        f"to N = {kv_heads} splits them evenly), and the KV pool grows with the GPUs"
    )
    advice["--quantization fp8"] = (
        f"FP8 weights (1 B per parameter) on Hopper or newer: {weights / gib:.1f} → "
        f"{plan.model.num_parameters / gib:.1f} GiB, the difference goes to the KV pool; "
        "check answer quality on your own prompts"
    )
    advice["--kv-cache-dtype fp8"] = (
        f"halves K and V per token ({plan.kv_bytes_per_token:,} → "
        f"{plan.kv_bytes_per_token * 1 // plan.kv_dtype_bytes:,} B while the windows grow; "
        f"{per_request / 2**20:,.0f} → ~{per_request / plan.kv_dtype_bytes / 2**20:,.0f} MiB "
        "for a max_model_len request), so about twice the requests fit"
    )
    advice["--enable-prefix-caching"] = (
        "on by default in vLLM's V1 engine; keep it: a shared system prompt, and an image "
        "sent again in a later turn (vLLM hashes each item into its block hashes), reuse "
        "their KV pages instead of running the prefill (and the encoder) again"
    )
    fit = int(room // per_request) if per_request else 0
    advice["--max-num-seqs"] = (
        f"caps the requests scheduled at once (vLLM's default {plan.max_num_seqs}); about "
        f"{fit} requests of max_model_len {plan.max_model_len} fit the estimated KV room, "
        "more only when requests are shorter (pages are allocated on demand); set it to the "
        "concurrency you need, since more waiting sequences only add queueing and a larger "
        "profiling batch"
    )
    return advice
