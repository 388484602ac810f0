"""The settings that let more requests share one GPU, each with its gain computed.

:func:`levers` re-plans a :class:`~gemma_explore.serving.plan.ServingPlan` once per
setting (a smaller ``max_num_batched_tokens``, FP8 KV, tensor parallelism, a smaller image
budget, a modality limit of 0; a shorter ``max_model_len`` when one request does not
fit), sizes vLLM's KV pool for each with the same memory
estimate (:func:`~gemma_explore.serving.kv.kv_memory_estimate`) and start-up arithmetic
(:func:`~gemma_explore.serving.kv.capacity`), and returns those that raise the maximum
concurrency, the most useful first. No gain is guessed: each is two calls to
``capacity``.

Why ``max_num_batched_tokens`` is a lever: a sliding layer holds
``min(window − 1 + in-flight tokens, max_model_len)`` tokens, and with async scheduling
two batches are in flight. At 8192 tokens per batch a sliding layer of a 1024 window holds
16,383 + 1 tokens, the whole of an 8k request, so the window saves nothing; at 2048 it
holds 5,119.

>>> from gemma_explore.serving.plan import plan_serving
>>> plan = plan_serving("tiny-gemma4", gpu="H100 80GB", max_model_len=4096)
>>> [lever.flag for lever in levers(plan, kv_cache_memory_bytes=2**28)][:1]
['--kv-cache-dtype fp8']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gemma_explore.serving.kv import GIB, capacity, kv_memory_estimate
from gemma_explore.serving.plan import ServingPlan, plan_serving

__all__ = ["Lever", "levers"]

_BATCHES = (2048, 4096)  # smaller batches tried, smallest first
_MIN_GAIN = 1.01  # a lever must raise the concurrency by at least 1 %


@dataclass(frozen=True)
class Lever:
    """One setting and what it does to vLLM's start-up maximum concurrency."""

    flag: str  # the vllm serve flags, e.g. "--max-num-batched-tokens 2048"
    settings: dict[str, Any]  # the same as engine arguments
    before: float  # maximum concurrency at max_model_len with the plan as it is
    after: float  # the same with this setting
    why: str  # what changes, and what it costs
    plan: ServingPlan = field(repr=False, compare=False)  # the re-planned engine
    tensor_parallel_size: int = 1  # GPUs the lever needs (more GPUs: listed after the rest)
    steps: tuple[str, ...] = field(default=(), compare=False)

    @property
    def gain(self) -> float:
        """How many times the concurrency grows (inf when the plan did not fit before)."""
        return self.after / self.before if self.before else float("inf")

    def line(self) -> str:
        """The lever in one line, as ``serve-args`` and the Serving tab print it."""
        return f"{self.flag}: {self.before:.2f}x → {self.after:.2f}x concurrency; {self.why}"


def _replan(plan: ServingPlan, **changes: Any) -> ServingPlan:
    """The plan again with ``changes`` (every other setting as the plan has it)."""
    limits: dict[str, Any] = dict(plan.limits)
    if plan.num_frames is not None and limits.get("video"):
        limits["video"] = {"count": limits["video"], "num_frames": plan.num_frames}
    args: dict[str, Any] = dict(
        max_model_len=plan.max_model_len,
        limit_mm_per_prompt=limits,
        max_num_batched_tokens=plan.max_num_batched_tokens,
        max_soft_tokens=plan.max_soft_tokens,
        max_num_seqs=plan.max_num_seqs,
        enable_chunked_prefill=plan.enable_chunked_prefill,
        disable_chunked_mm_input=plan.disable_chunked_mm_input,
        async_scheduling=plan.async_scheduling,
        dtype="fp8" if plan.dtype_bytes == 1 else "bfloat16",
        kv_cache_dtype="fp8" if plan.kv_dtype_bytes == 1 else "bfloat16",
        block_size=plan.block_size,
    )
    args.update(changes)
    new = plan_serving(plan.model, **args)
    # Keep the GPU the plan names (the defaults were taken already, all given above).
    from dataclasses import replace

    return replace(
        new, gpu=plan.gpu, gpu_memory_bytes=plan.gpu_memory_bytes, entry_point=plan.entry_point
    )


def _concurrency(plan: ServingPlan, memory: Any, tp: int) -> tuple[float, str]:
    """(max concurrency, vLLM's log line) for the plan on ``tp`` GPUs; ``memory`` is the
    KV memory per rank, or a callable estimating it from the plan and TP."""
    kv = memory(plan, tp) if callable(memory) else memory
    cap = capacity(plan, kv_cache_memory_bytes=kv, tensor_parallel_size=tp)
    return cap.max_concurrency, cap.log_line() if cap.fits else str(cap.refusal)


def _batch_levers(plan: ServingPlan) -> list[tuple[str, dict[str, Any], str]]:
    """Smaller max_num_batched_tokens values vLLM accepts (≥ max_num_seqs, which it
    lowers, and ≥ the largest item when items cannot be chunked)."""
    out = []
    floor = (
        max(plan.max_tokens_per_item.values(), default=0) if plan.disable_chunked_mm_input else 0
    )
    for n in _BATCHES:
        if n >= plan.max_num_batched_tokens or n < floor:
            continue
        if not plan.enable_chunked_prefill and n < plan.max_model_len:
            continue
        settings: dict[str, Any] = {"max_num_batched_tokens": n}
        flag = f"--max-num-batched-tokens {n}"
        if plan.max_num_seqs > n:
            settings["max_num_seqs"] = n
            flag += f" --max-num-seqs {n}"
        sliding = [la.window for la in plan.layers if la.stores_kv and la.window is not None]
        batches = 2 if plan.async_scheduling else 1
        why = (
            f"a sliding layer holds min(window − 1 + {batches} × batch, max_model_len) tokens: "
            f"{min(sliding[0] - 1 + batches * plan.max_num_batched_tokens, plan.max_model_len):,}"
            f" → {min(sliding[0] - 1 + batches * n, plan.max_model_len):,} (window {sliding[0]})"
            if sliding
            else "fewer tokens in flight"
        ) + "; the cost: a long prompt's prefill takes more, smaller steps"
        out.append((flag, settings, why))
    return out


def _candidates(plan: ServingPlan) -> list[tuple[str, dict[str, Any], str, int]]:
    """(flag, engine arguments, why, tensor_parallel_size) of each setting worth trying."""
    out: list[tuple[str, dict[str, Any], str, int]] = []
    out += [(*batch, 1) for batch in _batch_levers(plan)]
    if plan.kv_dtype_bytes > 1:
        out.append(
            (
                "--kv-cache-dtype fp8",
                {"kv_cache_dtype": "fp8"},
                "K and V at 1 B an element instead of 2; check answer quality on your prompts",
                1,
            )
        )
    heads = min((la.kv_heads for la in plan.layers if la.stores_kv), default=1)
    if heads >= 2 and heads % 2 == 0:
        out.append(
            (
                "--tensor-parallel-size 2",
                {},
                "two GPUs: each holds half the weights and half the KV heads, so more of each "
                "GPU goes to the KV pool (twice the GPUs)",
                2,
            )
        )
    budgets = plan.model.spec.image.budgets
    if plan.limits.get("image") and budgets and plan.max_soft_tokens != min(budgets):
        current = plan.max_soft_tokens or plan.model.default_budget
        lower = [b for b in budgets if b < current]
        if lower:
            b = max(lower)
            out.append(
                (
                    f"--mm-processor-kwargs '{{\"max_soft_tokens\": {b}}}'",
                    {"max_soft_tokens": b},
                    f"a smaller start-up image budget ({current} → {b} soft tokens): a smaller "
                    "encoder cache; images keep less detail",
                    1,
                )
            )
    for modality in plan.model.modalities:
        if plan.limits.get(modality, 0) > 0 and modality != "image":
            limits = {**plan.limits, modality: 0}
            out.append(
                (
                    f"--limit-mm-per-prompt '{{\"{modality}\": 0}}'",
                    {"limit_mm_per_prompt": limits},
                    f"no {modality} requests: its items leave the encoder cache (and the "
                    "profiling run)",
                    1,
                )
            )
    return out


def _shorter_length(plan: ServingPlan, kv_bytes: int) -> list[tuple[str, dict[str, Any], str, int]]:
    """When one request of ``max_model_len`` does not fit the KV pool: the longest length
    that does, as vLLM's own refusal estimates it (rounded down to a multiple of 256 from
    256 on); none when the plan fits or not even one token fits (the weights fill it)."""
    cap = capacity(plan, kv_cache_memory_bytes=kv_bytes)
    best = cap.estimated_max_model_len
    if cap.fits or not best:
        return []
    n = best - best % 256 if best >= 256 else best
    why = (
        f"one {plan.max_model_len:,}-token request needs more KV than the pool holds; the "
        f"longest that fits is {best:,} tokens (vLLM's own estimate when it refuses); the "
        f"cost: prompt and answer together stay under {n:,} tokens"
    )
    return [(f"--max-model-len {n}", {"max_model_len": n}, why, 1)]


def _kind(flag: str) -> str:
    """Levers of one kind compete (the batch sizes); the others stand alone."""
    return "batch" if flag.startswith("--max-num-batched-tokens") else flag


def levers(
    plan: ServingPlan,
    *,
    kv_cache_memory_bytes: int | None = None,
    gpu_memory_gib: float | None = None,
    gpu_memory_utilization: float | None = None,
) -> tuple[Lever, ...]:
    """The settings that raise this plan's maximum concurrency by 1 % or more, each computed
    by re-planning and re-sizing vLLM's KV pool: those for the same GPU first, the largest
    gain first, then those that need more GPUs (tensor parallelism).

    ``kv_cache_memory_bytes``: the KV memory per GPU (vLLM's "Available KV cache memory");
    else estimated for the plan's GPU (``gpu_memory_gib`` overrides it) with
    :func:`~gemma_explore.serving.kv.kv_memory_estimate`, again for each re-planned engine
    (its weights and encoder cache change the room left), by the plan's vLLM release
    (``gpu_memory_utilization`` None: that release's default).

    >>> plan = plan_serving("tiny-gemma4")
    >>> [round(x.gain, 2) for x in levers(plan, kv_cache_memory_bytes=2**28)][:1]
    [2.0]
    """
    gib = (
        gpu_memory_gib if gpu_memory_gib is not None else (plan.gpu_memory_bytes or 80 * GIB) / GIB
    )

    def estimate(p: ServingPlan, tp: int) -> int:
        if kv_cache_memory_bytes is not None:
            return int(kv_cache_memory_bytes)
        return kv_memory_estimate(
            p,
            gpu_memory_bytes=int(gib * GIB),
            gpu_memory_utilization=gpu_memory_utilization,
            tensor_parallel_size=tp,
        ).kv_cache_memory_bytes

    before, line = _concurrency(plan, estimate, 1)
    found = []
    for flag, settings, why, tp in _candidates(plan) + _shorter_length(plan, estimate(plan, 1)):
        try:
            new = _replan(plan, **settings) if settings else plan
        except ValueError:  # vLLM would refuse the setting here
            continue
        after, new_line = _concurrency(new, estimate, tp)
        kind = _kind(flag)
        if after > before * _MIN_GAIN and all(
            x.after < after for x in found if _kind(x.flag) == kind
        ):
            found = [x for x in found if _kind(x.flag) != kind]  # the best batch size only
            found.append(
                Lever(
                    flag,
                    settings,
                    before,
                    after,
                    why,
                    new,
                    tp,
                    (f"now: {line}", f"with {flag}: {new_line}"),
                )
            )
    return tuple(sorted(found, key=lambda x: (x.tensor_parallel_size, -x.after)))
