"""Start-up arguments for a stated workload, each one explained from the serving plan.

"Up to 4 images at budget 560 and one 30 s clip" is a :class:`Workload`;
:func:`~gemma_explore.engines.serve_args.engine_args` (``workload=``) turns it into ``max_model_len``, ``limit_mm_per_prompt``,
``mm_processor_kwargs`` and ``max_num_batched_tokens``, and says why each value, from
the same arithmetic vLLM's profiler runs (:func:`~gemma_explore.serving.plan.plan_serving`).

>>> r = _recipe("tiny-gemma4", workload=Workload(images=4, max_soft_tokens=560,
...                                              audio_clips=1))
>>> r.args["limit_mm_per_prompt"], r.args["max_model_len"]
({'image': 4, 'audio': 1, 'video': 0}, 3840)
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from gemma_explore.facts.families import DEFAULT_FAMILY, FamilySpec, get_family
from gemma_explore.plans.vllm import vllm_video_tokens
from gemma_explore.serving.plan import (
    ServingModel,
    ServingPlan,
    plan_serving,
    serving_model,
)
from gemma_explore.vllm_versions import VllmProfile, vllm_profile

__all__ = ["EngineRecipe", "Workload"]

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


def _recipe(
    model: str,
    *,
    workload: Workload,
    family: str | FamilySpec = DEFAULT_FAMILY,
    has_audio: bool = True,
    gpu: str | None = None,
    gpu_memory_gib: float | None = None,
    entry_point: str = "serve",
    vllm_version: str | None = None,
) -> EngineRecipe:
    """Propose start-up arguments for ``workload`` and explain each from the serving plan.

    The checkpoint's config decides the family and modalities when it is on this machine;
    otherwise ``family`` (and ``has_audio``) stand in for it. ``gpu`` (a name of
    ``kv.GPUS``) or ``gpu_memory_gib`` (default 80: an H100-class GPU) and ``entry_point``
    decide vLLM's ``max_num_batched_tokens`` default the proposal starts from, by the rules
    of ``vllm_version`` (default: the installed vLLM's, else the newest supported).

    >>> _recipe("someone/unknown", workload=Workload(images=1)).args["max_model_len"]
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
    profile = vllm_profile(vllm_version)
    probe = (
        plan_serving(
            sm, limit_mm_per_prompt=limits, max_soft_tokens=budget, vllm_version=profile.version
        )
        if sm
        else None
    )
    per_item = (
        dict(probe.max_tokens_per_item)
        if probe
        else _facts_per_item(spec, limits, budget, workload)
    )
    args["max_model_len"], reasons["max_model_len"] = _model_len_arg(
        spec, workload, wanted, per_item
    )
    default = _default_batch(profile, gpu, gpu_memory_gib, entry_point)
    args["max_num_batched_tokens"], reasons["max_num_batched_tokens"] = _batched_tokens_arg(
        per_item, default
    )
    plan = None
    if sm is not None:
        plan = plan_serving(
            sm,
            gpu=gpu,
            gpu_memory_gib=gpu_memory_gib if gpu is not None or gpu_memory_gib else 80.0,
            entry_point=entry_point,
            max_model_len=args["max_model_len"],
            limit_mm_per_prompt=limits,
            max_num_batched_tokens=args["max_num_batched_tokens"],
            max_soft_tokens=budget,
            vllm_version=profile.version,
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


def _default_batch(
    profile: VllmProfile, gpu: str | None, gpu_memory_gib: float | None, entry_point: str
) -> tuple[int, str]:
    """(vLLM's max_num_batched_tokens default, in words) for this GPU and entry point
    (``kv.batch_settings``' table, ``EngineArgs.get_batch_defaults``)."""
    from gemma_explore.serving.kv import GIB, _batch_defaults, gpu_named

    named = gpu_named(gpu) if gpu is not None else None
    memory = (
        int(gpu_memory_gib * GIB) if gpu_memory_gib else (named.memory_bytes if named else 80 * GIB)
    )
    name = named.device_name if named else ""
    capability = named.capability if named else None
    defaults, _, why = _batch_defaults(profile, memory, name, "cuda", 1, capability)
    who = "vllm serve" if entry_point == "serve" else "LLM(...)"
    where = named.device_name if named else f"{memory / GIB:g} GiB"
    return defaults[entry_point], f"{who}'s default on {where} ({why})"


def _batched_tokens_arg(per_item: dict[str, int], default: tuple[int, str]) -> tuple[int, str]:
    """``max_num_batched_tokens``: at least the largest item, so the encoder cache is not
    raised to it."""
    biggest = max(per_item.values(), default=0)
    base, where = default
    value = max(base, _round_up(biggest))
    return value, (
        f"at least the largest item ({biggest} tokens) so the encoder budget and cache stay "
        f"at this value instead of being raised to the item (encoder_cache_size = max("
        f"max_num_batched_tokens, largest item)); otherwise {base}, {where}"
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


def _kv_now(plan: ServingPlan, gib: float, util: float | None, tp: int = 1) -> tuple[Any, Any]:
    """(the memory estimate, the start-up KV capacity) of the plan on ``tp`` GPUs of ``gib``
    GiB each."""
    from gemma_explore.serving.kv import GIB, capacity, kv_memory_estimate

    est = kv_memory_estimate(
        plan, gpu_memory_bytes=int(gib * GIB), gpu_memory_utilization=util, tensor_parallel_size=tp
    )
    return est, capacity(
        plan, kv_cache_memory_bytes=est.kv_cache_memory_bytes, tensor_parallel_size=tp
    )


def _fewest_gpus(plan: ServingPlan, gib: float, util: float | None, kv_heads: int) -> int | None:
    """The smallest tensor parallel size (1, 2, 4, … dividing the KV heads) at which vLLM
    starts this plan, by the same estimate and capacity; None when none does."""
    tp = 1
    while tp <= kv_heads:
        if kv_heads % tp == 0 and _kv_now(plan, gib, util, tp)[1].fits:
            return tp
        tp *= 2
    return None


def _measured_line(plan: ServingPlan) -> str:
    """The start-up log line that holds the KV memory vLLM measured, in this release."""
    if plan.vllm.kv_sizing == "extensible":  # the first figure is only what it reserves
        return "'Memory after warmup: …' line, then its KV cache size"
    return "'Available KV cache memory'"


def _seqs_default(plan: ServingPlan) -> str:
    """Where the plan's max_num_seqs came from, in words."""
    if plan.entry_point is None:
        return f"this plan's {plan.max_num_seqs}"
    from gemma_explore.serving.kv import _batch_defaults

    who = "vllm serve" if plan.entry_point == "serve" else "LLM(...)"
    default = _batch_defaults(plan.vllm, plan.gpu_memory_bytes or 0, plan.gpu or "", "cuda", 1)[1][
        plan.entry_point
    ]
    where = plan.gpu or f"{(plan.gpu_memory_bytes or 0) / 2**30:.0f} GiB"
    return f"{who}'s default on {where} is {default}; this plan's {plan.max_num_seqs}"


def _gain(lever: Any) -> str:
    """A lever's computed gain as the end of an advice line ("" when it has none)."""
    if lever is None:
        return ""
    return (
        f"; with it the maximum concurrency goes {lever.before:.2f}x → {lever.after:.2f}x "
        "(re-planned)"
    )


def _fp8_advice(plan: ServingPlan) -> str:
    """``--quantization fp8``: the weights vLLM allocates in bf16 against under FP8
    (:func:`~gemma_explore.serving.weights.vllm_loaded_weights`, held to vLLM's meta model)."""
    from gemma_explore.serving.weights import vllm_loaded_weights

    gib = 2**30
    fp8 = vllm_loaded_weights(
        plan.model,
        limit_mm_per_prompt=plan.limits,
        quantization="fp8",
        dtype_bytes=plan.dtype_bytes,
        max_num_batched_tokens=plan.max_num_batched_tokens,
        vllm_version=plan.vllm_version,
    ).bytes
    return (
        f"FP8 weights (1 B per parameter of the Linear and MoE layers; vLLM's FP8 needs "
        f"compute capability 7.5+: native on Ada (L4) and Hopper, a weight-only Marlin kernel "
        f"on an A100): {plan.weights_bytes / gib:.1f} → {fp8 / gib:.1f} GiB as vLLM allocates "
        "them (embeddings, per-layer embeddings and the towers it does not quantize stay "
        "bf16), the difference goes to the KV pool; check answer quality on your own prompts"
    )


def _advice(
    plan: ServingPlan,
    *,
    gpu_memory_gib: float | None = None,
    gpu_memory_utilization: float | None = None,  # None: the plan's release's default
) -> dict[str, str]:
    """Flags worth weighing for a production ``vllm serve`` of this plan, each with why:
    tensor parallelism (the fewest GPUs that start it, re-planned; the key carries the
    value, e.g. ``"--tensor-parallel-size 2"``), FP8 weights, FP8 KV cache (with their concurrency gains from
    :func:`~gemma_explore.serving.levers.levers`), prefix caching and ``max_num_seqs``
    with the start-up KV line :meth:`~ServingPlan.capacity` predicts. The full lever list, the most useful
    first, is :func:`~gemma_explore.serving.levers.levers`.

    ``gpu_memory_gib`` defaults to the plan's GPU. The KV memory is an estimate
    (:func:`~gemma_explore.serving.kv.kv_memory_estimate`: vLLM profiles the activation peak
    on the device).

    >>> from gemma_explore.serving.plan import plan_serving
    >>> advice = _advice(plan_serving("google/gemma-4-31B-it", gpu="A100 40GB"))
    >>> next(iter(advice))  # the most useful first
    '--tensor-parallel-size 4'
    """
    from gemma_explore.serving.levers import levers

    gib = 2**30
    gpu = (
        gpu_memory_gib if gpu_memory_gib is not None else (plan.gpu_memory_bytes or 80 * gib) / gib
    )
    util = gpu_memory_utilization or plan.vllm.gpu_memory_utilization or 1.0
    budget = gpu * util * gib
    weights = plan.weights_bytes
    est, cap = _kv_now(plan, gpu, gpu_memory_utilization)
    found = {
        x.flag: x
        for x in levers(plan, gpu_memory_gib=gpu, gpu_memory_utilization=gpu_memory_utilization)
    }
    kv_heads = min((la.kv_heads for la in plan.layers if la.stores_kv), default=1)
    tp = _fewest_gpus(plan, gpu, gpu_memory_utilization, kv_heads)
    advice: dict[str, str] = {}
    split = (
        f"the weights are {weights / gib:.1f} GiB at {plan.dtype_bytes} B each, "
        f"{gpu:.1f} GiB × {util:g} = {budget / gib:.1f} GiB per GPU is vLLM's. With tensor "
        f"parallelism each rank keeps 1/N of the weights and of the KV heads (the fewest on "
        f"any layer: {kv_heads}, so up to N = {kv_heads} splits them evenly)"
    )
    if tp is None:
        advice["--tensor-parallel-size"] = (
            f"not enough: {split}, and even {kv_heads} GPUs leave no room for one "
            f"{plan.max_model_len:,}-token request (re-planned); quantize the weights or use "
            "a larger GPU"
        )
    else:
        _, at_tp = _kv_now(plan, gpu, gpu_memory_utilization, tp)
        advice[f"--tensor-parallel-size {tp}"] = (
            f"{'one GPU is enough' if tp == 1 else 'the fewest GPUs that start it'}: {split}; "
            f"at {tp}, vLLM would log: {at_tp.log_line()} (re-planned)"
            + _gain(found.get("--tensor-parallel-size 2"))
        )
    advice["--quantization fp8"] = _fp8_advice(plan)
    if plan.kv_dtype_bytes > 1:
        advice["--kv-cache-dtype fp8"] = (
            f"halves K and V per token ({plan.kv_bytes_per_token:,} → "
            f"{plan.kv_bytes_per_token // plan.kv_dtype_bytes:,} B while the windows grow)"
            + _gain(found.get("--kv-cache-dtype fp8"))
        )
    advice["--enable-prefix-caching"] = (
        "on by default in vLLM's V1 engine; keep it: a shared system prompt, and an image "
        "sent again in a later turn (vLLM hashes each item into its block hashes), reuse "
        "their KV pages instead of running the prefill (and the encoder) again"
    )
    advice["--max-num-seqs"] = (
        f"caps the requests scheduled at once ({_seqs_default(plan)}). At start-up vLLM "
        f"would log '{cap.log_line() if cap.fits else cap.refusal}' with ~{est.kv_cache_memory_bytes / gib:.2f}"
        f" GiB of KV memory (estimated; read vLLM's {_measured_line(plan)}): "
        f"{cap.max_concurrency:.2f} requests of max_model_len {plan.max_model_len} at once, more "
        "only when requests are shorter (pages are allocated on demand); set it to the "
        "concurrency you need"
    )
    return advice
