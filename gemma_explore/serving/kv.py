"""vLLM's start-up KV arithmetic and its admission of one request, re-derived.

When vLLM starts it sizes the KV cache once and logs one line::

    GPU KV cache size: 41,495 tokens, Maximum concurrency for 32,768 tokens per request: 1.27x

That line is not ``memory / (bytes per token)``. vLLM (``get_kv_cache_configs`` then
``get_kv_cache_capacity``; the profile's ``locations`` say in which file of each release)
does this, and :func:`capacity` follows it step by step, with no vLLM import:

1. **One spec per layer that stores KV** (``Attention.get_kv_cache_spec``). A KV-shared
   layer reads an earlier layer's cache and has no spec. Each tensor-parallel rank holds
   ``max(1, kv_heads // tp)`` KV heads, so TP shrinks every page.
2. **Groups.** With the hybrid KV cache manager (on by default on CUDA and on vLLM's CPU
   build), sliding and full layers keep their own block tables. Pages must be the same
   size in every group, so a smaller page gets a bigger block (``block_size × ratio``,
   ``unify_kv_cache_spec_page_size``). Layers of one kind are then split into groups of
   equal size (the rarer kind's count), ``layers[i::n]``. With the manager off, every
   sliding layer is allocated as a full layer and all layers form one group.
3. **The pool.** One block of the pool holds one page for every layer of the widest group:
   ``num_blocks = memory // bytes_per_block``.
4. **One request** at ``max_model_len`` takes, per group, ``cdiv(max_model_len, block)``
   blocks on full layers and ``cdiv(min(window − 1 + in-flight, max_model_len), block) + 1``
   on sliding layers (``max_memory_usage_bytes``). In-flight tokens are
   ``max_num_batched_tokens`` times the batches in flight: 2 with async scheduling (on by
   default on GPUs), 1 without.
5. ``max_concurrency = num_blocks / blocks per request`` and
   ``num_tokens = int(max_concurrency × max_model_len)``. If one request does not fit in
   the memory minus the null block, vLLM refuses to start and names the longest
   ``max_model_len`` that would fit.

:func:`gemma_explore.serving.admission.admit` answers the other question: does vLLM
accept this request? :func:`start_settings` applies what vLLM decides
before all this: the ``max_num_batched_tokens`` default of each entry point and GPU, and
the ``disable_chunked_mm_input`` CUDA forces on Gemma 4's bidirectional-vision
checkpoints. :func:`kv_memory_estimate` guesses the KV memory from a GPU's size, the way
the release sizes its pool (the profile's ``kv_sizing``): a fixed share of the GPU less
what profiling measures, or the extensible KV cache, which measures what is free after
warm-up and keeps a margin.

>>> import gemma_explore as ge
>>> plan = ge.plan_serving("tiny-gemma4", max_model_len=4096)
>>> plan.capacity(kv_cache_memory_bytes=2**30).num_tokens
4186127
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gemma_explore.facts.families import get_family
from gemma_explore.plans.rules import Rule
from gemma_explore.plans.vllm import vllm_video_tokens
from gemma_explore.serving.vllm_errors import error_named
from gemma_explore.vllm_versions import VllmProfile, profile_of, vllm_profile

__all__ = [
    "KVCapacity",
    "KVGroup",
    "GPU",
    "GPUS",
    "KVMemoryEstimate",
    "StartSettings",
    "batch_settings",
    "capacity",
    "gpu_named",
    "kv_memory_estimate",
    "start_settings",
]

GIB = 1 << 30  # vLLM's GiB_bytes
# The extensible KV cache's margin (extensible_kv_cache.py: KV_CACHE_MARGIN_FLOOR_BYTES and
# KV_CACHE_MARGIN_FRACTION, module constants no flag changes): on CUDA at least 1 GiB, or
# 0.75 × the transient peak when that is more, stays free beside the peak itself.
EXTENSIBLE_MARGIN_FLOOR_BYTES = 1 << 30
EXTENSIBLE_MARGIN_FRACTION = 0.75
ENTRY_POINTS = ("serve", "LLM")  # UsageContext.OPENAI_API_SERVER, UsageContext.LLM_CLASS
# A guess for what vLLM's profiling run finds besides weights and the encoder outputs
# (activation peak, CUDA graphs, NCCL and allocator overhead): measure yours, vLLM logs
# "Available KV cache memory: N GiB".
ACTIVATION_ALLOWANCE_BYTES = 2 * GIB


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _gib(n: int) -> str:
    """vLLM's ``format_gib``: GiB rounded to 2 decimals, as Python prints a float."""
    return f"{round(n / GIB, 2)}"


# ----------------------------------------------------------------------- capacity


@dataclass(frozen=True)
class _Spec:
    """One layer's KV spec on one rank, as vLLM's ``FullAttentionSpec`` / ``SlidingWindowSpec``."""

    sliding: bool  # SlidingWindowSpec (else FullAttentionSpec)
    window: int | None  # sliding_window (a promoted sliding layer keeps it)
    block_size: int  # tokens per block
    kv_heads: int  # KV heads on this rank
    head_dim: int
    dtype_bytes: int
    padded_page: int | None = None  # page_size_padded

    @property
    def per_token(self) -> int:
        return 2 * self.kv_heads * self.head_dim * self.dtype_bytes  # K and V

    @property
    def page(self) -> int:
        return self.padded_page or self.block_size * self.per_token

    def blocks_per_request(self, max_model_len: int, in_flight: int) -> int:
        if not self.sliding:
            return _cdiv(max_model_len, self.block_size)
        held = min(self.window - 1 + in_flight, max_model_len)
        return _cdiv(held, self.block_size) + 1  # the window may start mid-block


def _merge_full(specs: Sequence[_Spec]) -> _Spec | None:
    """``FullAttentionSpec.merge``: the same page layout, at most one window size."""
    first = specs[0]
    if any(s.sliding for s in specs):
        return None
    base = [(s.block_size, s.kv_heads, s.head_dim, s.dtype_bytes, s.padded_page) for s in specs]
    windows = {s.window for s in specs if s.window is not None}
    if len(set(base)) > 1 or len(windows) > 1:
        return None
    return _Spec(False, next(iter(windows), None), *base[0][:4], first.padded_page)


def _merge(specs: Sequence[_Spec]) -> _Spec | None:
    """The spec a group of layers shares, or None when vLLM's ``merge`` would refuse."""
    if specs[0].sliding:
        return specs[0] if all(s == specs[0] for s in specs) else None
    return _merge_full(specs)


@dataclass(frozen=True)
class KVGroup:
    """One KV cache group: layers that share one block table."""

    kind: str  # "full_attention" or "sliding_attention"
    layers: tuple[int, ...]  # decoder layer indices
    block_size: int  # tokens per block (full layers' block grows to unify page sizes)
    page_bytes: int  # bytes of one block of one layer of this group
    blocks_per_request: int  # blocks one request at max_model_len takes in this group

    @property
    def window(self) -> str:
        return "sliding" if self.kind == "sliding_attention" else "full"


@dataclass(frozen=True)
class KVCapacity:
    """What vLLM's start-up logs about the KV cache, and why."""

    num_tokens: int  # "KV cache size: N tokens" (0 when vLLM refuses)
    max_concurrency: float  # "Maximum concurrency for M tokens per request: X x"
    num_blocks: int  # blocks in the pool (each holds one page per layer of a group)
    bytes_per_block: int  # the widest group's pages side by side
    blocks_per_request: int  # summed over groups, at max_model_len
    groups: tuple[KVGroup, ...]
    kv_cache_memory_bytes: int  # what the pool was given
    max_model_len: int
    refusal: str | None = None  # vLLM's ValueError when one request does not fit
    estimated_max_model_len: int | None = None  # the longest that fits, when refused
    device: str = "GPU"  # how vLLM names the pool in its log line
    steps: tuple[str, ...] = field(default=(), compare=False)

    @property
    def fits(self) -> bool:
        return self.refusal is None

    def log_line(self) -> str:
        """The start-up line as vLLM writes it (``update_kv_cache_capacity``). With the
        extensible KV cache it is logged once, after warm-up, for the measured pool."""
        return (
            f"{self.device} KV cache size: {self.num_tokens:,} tokens, Maximum concurrency for "
            f"{self.max_model_len:,} tokens per request: {self.max_concurrency:.2f}x"
        )


def _layer_specs(
    layers: Sequence[Any], *, tp: int, block_size: int, dtype_bytes: int
) -> tuple[dict[int, _Spec], list[str]]:
    specs: dict[int, _Spec] = {}
    shared = [la.index for la in layers if not la.stores_kv]
    for la in layers:
        if not la.stores_kv:
            continue
        if la.kv_heads >= tp and la.kv_heads % tp:
            raise ValueError(
                f"tensor_parallel_size={tp} does not divide layer {la.index}'s "
                f"{la.kv_heads} KV heads: use a divisor of {la.kv_heads}."
            )
        heads = max(1, la.kv_heads // tp)
        specs[la.index] = _Spec(
            la.window is not None, la.window, block_size, heads, la.head_dim, dtype_bytes
        )
    kinds = sorted({(s.sliding, s.kv_heads, s.head_dim, s.per_token) for s in specs.values()})
    steps = [
        f"{len(specs)} of {len(layers)} layers store KV"
        + (
            f" (layers {shared[0]}–{shared[-1]} read an earlier layer's cache: no spec)"
            if shared
            else ""
        )
    ]
    for sliding, heads, dim, per_token in kinds:
        n = sum(
            1
            for s in specs.values()
            if (s.sliding, s.kv_heads) == (sliding, heads) and s.head_dim == dim
        )
        split = f" ({heads * tp} ÷ TP {tp})" if tp > 1 else ""
        steps.append(
            f"{n} {'sliding' if sliding else 'full'} layers: {heads} KV heads{split} × head dim "
            f"{dim} × 2 (K, V) × {dtype_bytes} B = {per_token:,} B per token"
        )
    return specs, steps


_Group = tuple[_Spec, list[int], list[_Spec]]  # (group spec, layer indices, per-layer specs)


def _promote_sliding(specs: dict[int, _Spec]) -> Rule[dict[int, _Spec]]:
    """Hybrid manager off: every sliding layer is allocated as a full layer (keeping its
    window for compute), with the full layers' block size when they agree on one."""
    values = list(specs.values())
    full_blocks = {s.block_size for s in values if not s.sliding}
    bs = next(iter(full_blocks)) if len(full_blocks) == 1 else None
    promoted = {
        i: _Spec(False, s.window, bs or s.block_size, s.kv_heads, s.head_dim, s.dtype_bytes)
        if s.sliding
        else s
        for i, s in specs.items()
    }
    return Rule(
        promoted,
        "hybrid KV cache manager off: every sliding layer is allocated as a full layer "
        "(blocks for every token; its window still saves compute)",
    )


def _one_group(specs: dict[int, _Spec]) -> Rule[list[_Group] | None]:
    """One group when every layer shares one spec, or needs the same blocks per request
    (one kind, one block size) with pages side by side; else None."""
    names, values = list(specs), list(specs.values())
    merged = _merge(values)
    if merged is not None:
        return Rule([(merged, names, values)], f"all {len(names)} layers share one spec: one group")
    same_block = len({s.block_size for s in values}) == 1
    one_kind = all(not s.sliding for s in values) or (
        all(s.sliding for s in values) and len({s.window for s in values}) == 1
    )
    if same_block and one_kind:
        return Rule(
            [(values[0], names, values)],
            f"all {len(names)} layers need the same blocks per request (one kind, one block "
            "size) but differ in page size: one group, pages of every layer side by side",
        )
    return Rule(None, "")


def _unify_pages(specs: dict[int, _Spec]) -> tuple[dict[int, _Spec], list[str]]:
    """``unify_kv_cache_spec_page_size``: a smaller page takes a bigger block (or, when the
    sizes do not divide, is padded) so every page is the biggest one."""
    biggest = max(s.page for s in specs.values())
    unified: dict[int, _Spec] = {}
    for i, s in specs.items():
        if s.page == biggest:
            unified[i] = s
        elif biggest % s.page == 0:
            unified[i] = _Spec(
                s.sliding,
                s.window,
                s.block_size * (biggest // s.page),
                s.kv_heads,
                s.head_dim,
                s.dtype_bytes,
            )
        else:
            unified[i] = _Spec(
                s.sliding,
                s.window,
                s.block_size,
                s.kv_heads,
                s.head_dim,
                s.dtype_bytes,
                padded_page=biggest,
            )
    changed = {
        (specs[i].sliding, specs[i].page, u.block_size, u.padded_page)
        for i, u in unified.items()
        if u != specs[i]
    }
    steps = []
    for sliding, page, bs, padded in sorted(changed):
        kind = "sliding" if sliding else "full"
        steps.append(
            f"page sizes differ: {kind} layers' {page:,} B page is padded to {biggest:,} B"
            if padded
            else f"page sizes differ ({page:,} B vs {biggest:,} B per block): {kind} layers take "
            f"{bs}-token blocks so every page is {biggest:,} B"
        )
    return unified, steps


def _buckets(unified: dict[int, _Spec]) -> list[tuple[list[int], list[_Spec]]]:
    """Layers bucketed by spec (in order of first appearance); full specs that differ in
    window only merge into one bucket."""
    buckets: list[tuple[list[int], list[_Spec]]] = []
    by_spec: dict[_Spec, list[int]] = {}
    for i, s in unified.items():
        by_spec.setdefault(s, []).append(i)
    for s, idx in by_spec.items():
        for names_b, specs_b in buckets:
            if _merge([*specs_b, s]) is not None:
                names_b.extend(idx)
                specs_b.append(s)
                break
        else:
            buckets.append((list(idx), [s]))
    return buckets


def _group_size_rule(buckets: list[tuple[list[int], list[_Spec]]]) -> Rule[int]:
    """Groups hold equally many layers: the rarer kind's count, or the larger count when
    the two are within 1.5×."""
    counts = [len(b[0]) for b in buckets]
    size = min(counts)
    if max(counts) < size * 1.5:
        size = max(counts)
    return Rule(
        size,
        f"groups hold equally many layers: the rarer kind's count, {size} "
        "(or the larger count when the two are within 1.5×)",
    )


def _split_bucket(
    idx: list[int], bspecs: list[_Spec], size: int, unified: dict[int, _Spec]
) -> Rule[list[_Group]]:
    """One bucket cut into ``cdiv(len, size)`` groups, layer i in group i mod n."""
    n = _cdiv(len(idx), size)
    spec = _merge(bspecs)
    groups = [(spec, idx[k::n], [unified[i] for i in idx[k::n]]) for k in range(n)]
    kind = "sliding" if bspecs[0].sliding else "full"
    pad = n * size - len(idx)
    return Rule(
        groups,
        f"{len(idx)} {kind} layers → {n} group(s) of {size}"
        + (f" ({pad} padding slot(s): memory a layer could have used)" if pad else "")
        + (f", each layer i in group i mod {n}" if n > 1 else ""),
    )


def _groups(specs: dict[int, _Spec], *, hybrid: bool) -> tuple[list[_Group], list[str]]:
    """vLLM's ``get_kv_cache_groups`` for attention layers in a layer-outer layout:
    (group spec, layer indices, per-layer specs) per group."""
    steps: list[str] = []
    values = list(specs.values())
    if not hybrid and any(not s.sliding for s in values) and any(s.sliding for s in values):
        promoted = _promote_sliding(specs)
        specs = promoted.value
        steps.append(promoted.step)
    one = _one_group(specs)
    if one.value is not None:
        return one.value, [*steps, one.step]
    unified, why = _unify_pages(specs)
    buckets = _buckets(unified)
    size = _group_size_rule(buckets)
    splits = [_split_bucket(idx, bspecs, size.value, unified) for idx, bspecs in buckets]
    groups = [g for split in splits for g in split.value]
    return groups, [*steps, *why, size.step, *(split.step for split in splits)]


def _in_flight_rule(async_scheduling: bool, mnbt: int) -> Rule[int]:
    """Tokens in flight: one batch, or two with async scheduling."""
    batches = 2 if async_scheduling else 1
    return Rule(
        batches * mnbt,
        f"in-flight tokens: {batches} batch(es) × max_num_batched_tokens {mnbt} = "
        f"{batches * mnbt}"
        + (" (async scheduling keeps two batches in flight)" if async_scheduling else ""),
    )


def _blocks_steps(
    kv_groups: tuple[KVGroup, ...], groups: list[_Group], in_flight: int, mml: int
) -> list[str]:
    """Blocks per request of each kind of group, with the formula that gives them."""
    seen: dict[tuple[str, int, int], int] = {}
    for g in kv_groups:
        key = (g.window, len(g.layers), g.blocks_per_request)
        seen[key] = seen.get(key, 0) + 1
    steps = []
    for (window, n_layers, n_blocks), n_groups in seen.items():
        g = next(g for g in kv_groups if (g.window, len(g.layers)) == (window, n_layers))
        if window == "sliding":
            spec = next(s for s, idx, _ in groups if tuple(idx) == g.layers)
            held = min(spec.window - 1 + in_flight, mml)
            how = f"cdiv(min({spec.window} − 1 + {in_flight}, {mml}) = {held}, {g.block_size}) + 1"
        else:
            how = f"cdiv({mml}, {g.block_size})"
        steps.append(
            f"{n_groups} group(s) of {n_layers} {window} layers: {how} = {n_blocks} blocks each"
        )
    return steps


def _kv_message(name: str, profile: VllmProfile, **fields: Any) -> str:
    """One of vLLM's two KV refusals in ``profile``'s words. Where the release's text holds
    vLLM's own advice (``{hint}``), it is the advice for a pool of given memory: the
    extensible KV cache is off with ``--kv-cache-memory-bytes``."""
    hint = profile.message_templates.get("kv-memory-hint", "")
    return error_named(name, vllm_version=profile.version).format(hint=hint, **fields)


def _longest_that_fits(blocks: Any, bytes_per_block: int, usable: int, mml: int) -> int:
    """The longest max_model_len whose request fits ``usable`` bytes (vLLM's binary search);
    0 when not even one token fits."""
    if bytes_per_block * sum(blocks(1)) > usable:
        return 0
    lo, hi, best = 1, mml, 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if bytes_per_block * sum(blocks(mid)) <= usable:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


def _refusal_rule(
    blocks: Any, bytes_per_block: int, need: int, memory: int, mml: int, profile: VllmProfile
) -> Rule[tuple[str, int | None] | None]:
    """vLLM's refusal to start, (its message, the longest length that fits), or None when
    one request at max_model_len fits the memory less the null block."""
    usable = memory - bytes_per_block  # BlockPool keeps one null block
    if usable <= 0:
        return Rule(
            (_kv_message("kv-no-memory", profile), None),
            "vLLM refuses to start: the memory does not hold one block beyond the null block",
        )
    needed = bytes_per_block * need
    if needed <= usable:
        return Rule(None, "")
    best = _longest_that_fits(blocks, bytes_per_block, usable, mml)
    estimate = (
        f"Based on the available memory, the estimated maximum model length is {best}. "
        if best > 0
        else ""
    )
    msg = _kv_message(
        "kv-too-small",
        profile,
        max_model_len=mml,
        needed=_gib(needed),
        available=_gib(usable),
        estimated_msg=estimate,
    )
    return Rule(
        (msg, best),
        f"vLLM refuses to start: {needed:,} B needed > {usable:,} B (memory less the null "
        f"block); the longest max_model_len that fits is {best} (binary search)",
    )


def _pool_rule(
    memory: int, bytes_per_block: int, need: int, mml: int
) -> Rule[tuple[int, float, int]]:
    """(blocks in the pool, max concurrency, KV cache size in tokens)."""
    num_blocks = memory // bytes_per_block
    conc = num_blocks / need
    tokens = int(conc * mml)
    return Rule(
        (num_blocks, conc, tokens),
        f"pool: {memory:,} B // {bytes_per_block:,} B = {num_blocks:,} blocks; "
        f"{num_blocks:,} / {need} = {conc:.2f} requests of {mml} tokens = {tokens:,} tokens "
        "(pages are handed out on demand: this is the worst case, every request at full length)",
    )


def _kv_groups(groups: list[Any], per_group: list[int]) -> tuple[KVGroup, ...]:
    """Each group of layers as the result shows it: its kind, layers, block and page size,
    and the blocks one request takes."""
    return tuple(
        KVGroup(
            "sliding_attention" if spec.sliding else "full_attention",
            tuple(idx),
            spec.block_size,
            layer_specs[0].page,
            n,
        )
        for (spec, idx, layer_specs), n in zip(groups, per_group, strict=True)
    )


def capacity(
    plan: Any,
    *,
    kv_cache_memory_bytes: int,
    tensor_parallel_size: int = 1,
    hybrid_kv_cache_manager: bool = True,
    async_scheduling: bool | None = None,
    max_num_batched_tokens: int | None = None,
    block_size: int | None = None,
    max_model_len: int | None = None,
    device: str = "GPU",
) -> KVCapacity:
    """vLLM's start-up KV cache size and maximum concurrency for a serving plan.

    ``kv_cache_memory_bytes`` is the memory the pool gets on each rank (vLLM's
    "Available KV cache memory", or ``--kv-cache-memory-bytes``). The defaults are a CUDA
    GPU's: hybrid manager on, async scheduling on, 16-token blocks. vLLM's CPU engine
    keeps the manager on but turns async scheduling off and uses 128-token blocks
    (``async_scheduling=False, block_size=128, device="CPU"``).
    ``hybrid_kv_cache_manager=False`` is ``--disable-hybrid-kv-cache-manager``.
    ``max_num_batched_tokens``, ``block_size``, ``max_model_len`` and ``async_scheduling``
    default to the plan's.

    >>> from gemma_explore.serving.plan import plan_serving
    >>> plan = plan_serving("tiny-gemma4", max_model_len=4096)
    >>> capacity(plan, kv_cache_memory_bytes=256 * 2**20).log_line()
    'GPU KV cache size: 1,046,531 tokens, Maximum concurrency for 4,096 tokens per request: 255.50x'
    """
    mml = int(max_model_len or plan.max_model_len)
    if async_scheduling is None:
        async_scheduling = bool(getattr(plan, "async_scheduling", True))
    mnbt = int(max_num_batched_tokens or plan.max_num_batched_tokens)
    bs = int(block_size or plan.block_size)
    tp = int(tensor_parallel_size)
    if tp < 1 or bs < 1 or mml < 1 or mnbt < 1:
        raise ValueError(
            "tensor_parallel_size, block_size, max_model_len and max_num_batched_tokens "
            "must be ≥ 1."
        )
    specs, steps = _layer_specs(plan.layers, tp=tp, block_size=bs, dtype_bytes=plan.kv_dtype_bytes)
    groups, why = _groups(specs, hybrid=hybrid_kv_cache_manager)
    in_flight = _in_flight_rule(async_scheduling, mnbt)
    steps += [*why, in_flight.step]

    def blocks(length: int) -> list[int]:
        return [g[0].blocks_per_request(length, in_flight.value) for g in groups]

    bytes_per_block = max(sum(s.page for s in layer_specs) for _, _, layer_specs in groups)
    per_group = blocks(mml)
    kv_groups = _kv_groups(groups, per_group)
    need = sum(per_group)
    steps += _blocks_steps(kv_groups, groups, in_flight.value, mml)
    steps.append(
        f"one block = the widest group's pages side by side = {bytes_per_block:,} B; one request "
        f"at {mml} tokens takes {need} blocks = {_gib(need * bytes_per_block)} GiB"
    )
    common = dict(
        bytes_per_block=bytes_per_block,
        blocks_per_request=need,
        groups=kv_groups,
        kv_cache_memory_bytes=kv_cache_memory_bytes,
        max_model_len=mml,
        device=device,
    )
    profile = profile_of(plan, None)
    refusal = _refusal_rule(blocks, bytes_per_block, need, kv_cache_memory_bytes, mml, profile)
    if refusal.value is not None:
        msg, best = refusal.value
        return KVCapacity(
            0,
            0.0,
            0,
            refusal=msg,
            estimated_max_model_len=best,
            steps=(*steps, refusal.step),
            **common,
        )
    pool = _pool_rule(kv_cache_memory_bytes, bytes_per_block, need, mml)
    num_blocks, conc, tokens = pool.value
    return KVCapacity(tokens, conc, num_blocks, steps=(*steps, pool.step), **common)


# ----------------------------------------------------------------------- memory estimate


@dataclass(frozen=True)
class KVMemoryEstimate:
    """An estimate of the KV pool vLLM will size on one GPU, by the release's own rule.

    vLLM measures what this guesses (the activation peak, the CUDA-graph pool, what the
    driver and libraries hold); ``steps`` say which numbers are measured at start-up and
    which are the plan's estimate.
    """

    gpu_memory_bytes: int
    # The share of the GPU vLLM may use: yours, else the release's default (the
    # extensible KV cache resolves an unset value to 1.0).
    gpu_memory_utilization: float
    requested_bytes: int  # ceil(gpu_memory_bytes × gpu_memory_utilization): vLLM's budget
    weights_bytes: int  # this rank's share of the weights
    encoder_cache_bytes: int  # encoder outputs the profiling run keeps
    activation_bytes: int  # the guessed activation peak, CUDA graphs and overhead
    kv_cache_memory_bytes: int  # what is left for the KV cache (0 if nothing)
    # "utilization" (a share of the GPU less what profiling measures) or "extensible"
    # (free memory measured after warm-up, less a margin and the transient peak).
    sizing: str = "utilization"
    margin_bytes: int = 0  # extensible: max(1 GiB, 0.75 × the transient peak), kept free
    vllm_version: str = ""  # the release whose rule this follows
    steps: tuple[str, ...] = field(default=(), compare=False)


def _extensible_kv_bytes(
    *,
    free_at_start: int,
    non_kv: int,
    requested: int,
    transient_peak: int,
) -> tuple[int, int]:
    """The extensible KV cache's budget after warm-up (``measure_kv_cache_bytes``), on an
    idle GPU whose blocks warm-up shrank back to none: (KV bytes, margin).

    The pool gets what is left of the budget once everything else is resident, capped by
    the free memory less a margin, and the transient peak is then kept free in full.

    >>> _extensible_kv_bytes(free_at_start=80 << 30, non_kv=10 << 30, requested=80 << 30,
    ...                      transient_peak=2 << 30)[0] / 2**30
    66.5
    """
    free_after_warmup = free_at_start - non_kv
    margin = max(EXTENSIBLE_MARGIN_FLOOR_BYTES, int(transient_peak * EXTENSIBLE_MARGIN_FRACTION))
    available = min(requested - non_kv, free_after_warmup - margin) - transient_peak
    return max(available, 0), margin


def kv_memory_estimate(
    plan: Any,
    *,
    gpu_memory_bytes: int,
    gpu_memory_utilization: float | None = None,
    tensor_parallel_size: int = 1,
    activation_bytes: int = ACTIVATION_ALLOWANCE_BYTES,
    vllm_version: str | None = None,
) -> KVMemoryEstimate:
    """Estimate the KV memory vLLM will find on each GPU, by the plan's vLLM release (or
    ``vllm_version``):

    - **a share of the GPU** (``kv_sizing == "utilization"``): ``ceil(GPU ×
      gpu_memory_utilization)`` (default 0.92) less this rank's weights, the encoder
      outputs and ``activation_bytes``. vLLM profiles the real peak and logs "Available KV
      cache memory".
    - **the extensible KV cache** (``"extensible"``, the default on CUDA and ROCm unless
      ``--kv-cache-memory-bytes``, ``--num-gpu-blocks-override`` or
      ``--no-enable-extensible-kv-cache``): an unset utilization resolves to 1.0; after
      warm-up and CUDA-graph capture vLLM measures the free memory and keeps
      ``max(1 GiB, 0.75 × the transient peak)`` plus the peak itself out of the pool. It
      logs "Memory after warm-up: …" and then the KV cache size, once.

    ``activation_bytes`` (2 GiB) stands for the transient peak, the CUDA-graph pool and
    the driver's share: a guess either way, which the steps say.

    >>> from gemma_explore.serving.plan import plan_serving
    >>> plan = plan_serving("google/gemma-4-E4B-it", max_model_len=8192)
    >>> from gemma_explore.vllm_versions import SUPPORTED
    >>> est = kv_memory_estimate(plan, gpu_memory_bytes=80 * 2**30, vllm_version=SUPPORTED[0])
    >>> round(est.kv_cache_memory_bytes / 2**30, 1)  # GiB
    56.4
    """
    profile = profile_of(plan, vllm_version)
    util = gpu_memory_utilization
    extensible = profile.kv_sizing == "extensible"
    if util is None:
        util = 1.0 if extensible else float(profile.gpu_memory_utilization or 1.0)
    if not 0 < util <= 1:
        raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {util}.")
    tp = int(tensor_parallel_size)
    requested = math.ceil(gpu_memory_bytes * util)  # vLLM's request_memory
    weights = _cdiv(plan.weights_bytes, tp)
    enc = plan.encoder_cache_bytes
    asked = "yours" if gpu_memory_utilization is not None else "the default"
    head = [
        f"{profile.label}: requested {_gib(gpu_memory_bytes)} GiB × gpu_memory_utilization "
        f"{util:g} ({asked}) = {_gib(requested)} GiB",
        f"weights: {_gib(plan.weights_bytes)} GiB / TP {tp} = {_gib(weights)} GiB per GPU",
        f"encoder outputs ({plan.encoder_cache_size} tokens at the text width): {_gib(enc)} GiB",
    ]
    if not extensible:
        left = max(requested - weights - enc - activation_bytes, 0)
        steps = [
            *head,
            f"activation peak, CUDA graphs, overhead: {_gib(activation_bytes)} GiB (a guess: "
            "vLLM profiles it on the device)",
            f"KV cache ≈ {_gib(left)} GiB = requested − weights − encoder outputs − activations "
            "(an estimate; read vLLM's 'Available KV cache memory')",
        ]
        return KVMemoryEstimate(
            gpu_memory_bytes, util, requested, weights, enc, activation_bytes, left,
            "utilization", 0, profile.version, tuple(steps),
        )  # fmt: skip
    return _extensible_estimate(profile, gpu_memory_bytes, util, requested, weights, enc,
                                activation_bytes, head)  # fmt: skip


def _extensible_estimate(
    profile: VllmProfile,
    gpu_memory_bytes: int,
    util: float,
    requested: int,
    weights: int,
    enc: int,
    activation_bytes: int,
    head: list[str],
) -> KVMemoryEstimate:
    """The estimate under the extensible KV cache, with what vLLM measures instead."""
    left, margin = _extensible_kv_bytes(
        free_at_start=gpu_memory_bytes,
        non_kv=weights + enc,
        requested=requested,
        transient_peak=activation_bytes,
    )
    steps = [
        f"{profile.label} sizes the pool with the extensible KV cache (on CUDA and ROCm unless "
        "--kv-cache-memory-bytes, --num-gpu-blocks-override or "
        "--no-enable-extensible-kv-cache): it measures free memory after warm-up and "
        "CUDA-graph capture",
        *head,
        f"transient peak and CUDA graphs: {_gib(activation_bytes)} GiB (a guess: vLLM measures "
        "both during warm-up), kept free in full",
        f"margin: max(1 GiB, 0.75 × the peak) = {_gib(margin)} GiB, also kept free",
        f"KV cache ≈ {_gib(left)} GiB = min(requested − resident, free after warm-up − margin)"
        " − peak, on an idle GPU (an estimate; vLLM logs 'Memory after warmup: …' and the "
        "measured size)",
    ]
    return KVMemoryEstimate(
        gpu_memory_bytes, util, requested, weights, enc, activation_bytes, left,
        "extensible", margin, profile.version, tuple(steps),
    )  # fmt: skip


# ----------------------------------------------------------------------- start-up settings


@dataclass(frozen=True)
class StartSettings:
    """The scheduler settings a vLLM engine starts with, and why."""

    entry_point: str  # "serve" (vllm serve) or "LLM" (LLM(...))
    max_num_batched_tokens: int
    max_num_seqs: int
    disable_chunked_mm_input: bool  # forced on CUDA for bidirectional-vision checkpoints
    largest_item: int  # the largest multimodal item vLLM plans for (tokens)
    steps: tuple[str, ...] = field(default=(), compare=False)


def _batch_defaults(
    profile: VllmProfile,
    gpu_memory_bytes: int,
    gpu_name: str,
    platform: str,
    world: int,
    capability: tuple[int, int] | None = None,
) -> tuple[dict[str, int], dict[str, int], str]:
    """``EngineArgs.get_batch_defaults``: (max_num_batched_tokens, max_num_seqs) per entry
    point, and why: the release's tiers (``profile.batch_tiers``) on CUDA."""
    if platform == "cpu":
        return (
            {"LLM": 4096 * world, "serve": 2048 * world},
            {"LLM": 256 * world, "serve": 128 * world},
            f"vLLM's CPU platform scales its defaults by the {world} rank(s)",
        )
    tier = profile.batch_tier(gpu_memory_bytes, gpu_name, capability)
    return (
        {"LLM": tier.llm_batch, "serve": tier.serve_batch},
        {"LLM": tier.llm_seqs, "serve": tier.serve_seqs},
        f"{tier.name} ({profile.label}'s tiers)",
    )


def _supported_item_tokens(plan: Any) -> dict[str, int]:
    """The worst case per item of every modality the model serves, whatever its limit
    (``get_mm_max_tokens_per_item`` with one item of each)."""
    model = plan.model
    spec = get_family(model.family)
    out: dict[str, int] = {}
    for m in model.modalities:
        if m in plan.max_tokens_per_item:
            out[m] = plan.max_tokens_per_item[m]
        elif m == "image":
            out[m] = (
                model.image_seq_length
                if spec.image.fixed_soft_tokens is not None
                else plan.max_soft_tokens or model.default_budget
            )
        elif m == "audio":
            out[m] = model.audio_seq_length
        elif m == "video":
            out[m] = vllm_video_tokens(plan.num_frames, family=spec)
    return out


def _whole_items_rule(largest: int, mnbt: int) -> list[str]:
    """On CUDA, vLLM forces ``disable_chunked_mm_input`` for a model whose image tokens
    attend each other: the largest item must then fit one batch, or the engine stops."""
    steps = [
        "disable_chunked_mm_input forced on: on CUDA vLLM never splits an image across two "
        "steps for a model whose image tokens attend each other (use_bidirectional_attention="
        "'vision'; 'Forcing --disable_chunked_mm_input for models with multimodal-"
        "bidirectional attention.')"
    ]
    if largest > mnbt:
        raise ValueError(
            error_named("item-above-batch").format(
                max_tokens_per_mm_item=largest, max_num_batched_tokens=mnbt
            )
        )
    if largest:
        steps.append(
            f"the largest item ({largest} tokens) fits one batch of {mnbt}: the engine starts"
        )
    return steps


@dataclass(frozen=True)
class GPU:
    """A GPU as vLLM sees it: ``get_device_name()`` and ``get_device_total_memory()``
    (what ``EngineArgs.get_batch_defaults`` reads), and its compute capability."""

    device_name: str  # torch.cuda.get_device_name, as vLLM's CudaPlatform returns it
    # Total memory as NVML (nvidia-smi) lists it, what get_batch_defaults reads. torch's
    # total, which vLLM's memory budget multiplies, is about 0.5 GiB less on an H100.
    memory_mib: int
    capability: tuple[int, int]  # (major, minor)

    @property
    def memory_bytes(self) -> int:
        return self.memory_mib << 20


# The GPUs a plan can name (``plan_serving(..., gpu="H100 80GB")``). Memory: nvidia-smi's
# total for the SXM parts; pass ``gpu_memory_gib=`` for another card.
GPUS: dict[str, GPU] = {
    "L4": GPU("NVIDIA L4", 23034, (8, 9)),
    "A100 40GB": GPU("NVIDIA A100-SXM4-40GB", 40960, (8, 0)),
    "A100 80GB": GPU("NVIDIA A100-SXM4-80GB", 81920, (8, 0)),
    "H100 80GB": GPU("NVIDIA H100 80GB HBM3", 81559, (9, 0)),
    "H200": GPU("NVIDIA H200", 143771, (9, 0)),
    "B200": GPU("NVIDIA B200", 183359, (10, 0)),
    # DGX Spark: 128 GB shared with the CPU; the tiers single it out by its capability.
    "GB10": GPU("NVIDIA GB10", 122070, (12, 1)),  # 128 GB
}


def cuda_block_size(
    plan: Any, gpu: GPU | None, kv_dtype_bytes: int, *, vllm_version: str | None = None
) -> Rule[int]:
    """The KV block vLLM picks on CUDA when none is given, with the reason.

    ``CacheConfig`` starts at the release's ``DEFAULT_BLOCK_SIZE`` (the profile's
    ``default_block_size``) and the chosen attention backend may raise it
    (``Platform.update_block_size_for_backend`` → ``get_preferred_block_size``):

    - Hopper (9.x) with FP8 KV and 512-wide heads (Gemma 4's full layers):
      FlashAttention 4's FP8-KV kernel pages 64 tokens
      (``FlashAttentionBackend._get_sm90_fa4_fp8_kv_block_size``);
    - Blackwell (10.x) with ``use_bidirectional_attention="vision"`` (the 26B-A4B, 31B
      and 12B): the ``TRITON_FLASHINFER`` composite backend has one kernel block, 64;
    - otherwise the default (FlashAttention, FlashInfer and Triton all keep it).

    Both 64s assume vLLM's CUDA wheel with FlashAttention 4 and FlashInfer; without them
    vLLM falls back to Triton. ``plan`` needs ``layers`` and
    ``use_bidirectional_attention`` (a ServingModel or a plan's model), and may carry the
    release (``plan.vllm``); ``vllm_version`` names another.

    >>> from types import SimpleNamespace as N
    >>> from gemma_explore.vllm_versions import SUPPORTED  # the oldest and newest release
    >>> m = N(layers=[N(head_dim=512)], use_bidirectional_attention="vision")
    >>> cuda_block_size(m, GPUS["H100 80GB"], 1, vllm_version=SUPPORTED[0]).value
    64
    >>> [cuda_block_size(m, GPUS["L4"], 2, vllm_version=v).value for v in SUPPORTED[::2]]
    [16, 64]
    """
    profile = profile_of(plan, vllm_version)
    default = profile.default_block_size
    widest = max((la.head_dim for la in plan.layers), default=0)
    major = None if gpu is None else gpu.capability[0]
    if major == 9 and kv_dtype_bytes == 1 and widest == 512:
        return Rule(
            max(default, 64),
            f"block_size {max(default, 64)}: on Hopper with FP8 KV, FlashAttention 4's kernel "
            "for the 512-wide heads pages 64 tokens"
            + (" (vLLM logs 'Setting kv cache block size to 64')" if default < 64 else ""),
        )
    if major == 10 and plan.use_bidirectional_attention == "vision":
        return Rule(
            64,
            "block_size 64: on Blackwell a checkpoint with bidirectional vision attention "
            "runs the TRITON_FLASHINFER backend, whose only kernel block is 64",
        )
    where = "this GPU" if gpu is not None else "an unnamed GPU (the rule needs its name)"
    return Rule(
        default,
        f"block_size {default} ({profile.label}'s CacheConfig.DEFAULT_BLOCK_SIZE, which the "
        f"attention backend vLLM picks on {where} keeps; vLLM logs 'Setting kv cache "
        "block size to N' when it differs: then pass block_size=N)",
    )


def gpu_named(name: str) -> GPU:
    """A GPU of :data:`GPUS` by its short name (case and spaces ignored).

    >>> gpu_named("h100 80gb").device_name
    'NVIDIA H100 80GB HBM3'
    """
    key = name.replace(" ", "").lower()
    for short, gpu in GPUS.items():
        if short.replace(" ", "").lower() == key:
            return gpu
    raise ValueError(
        f"Unknown gpu {name!r}: use one of {list(GPUS)}, or give gpu_memory_gib= instead."
    )


def _default_batch_tokens(
    default: tuple[int, str],
    max_model_len: int,
    seq_default: int,
    chunked: bool,
    prefix_items: dict[str, int],
) -> tuple[int, list[str]]:
    """vLLM's ``max_num_batched_tokens`` when you give none: the entry point's default,
    raised to ``max_model_len`` without chunked prefill and to the largest item of a
    prefix-LM model (``prefix_items``: every modality it supports), capped at
    ``max_num_seqs × max_model_len``."""
    mnbt, why = default
    steps = [f"max_num_batched_tokens: {why}"]
    if not chunked:
        mnbt = max(max_model_len, mnbt)
        steps.append(f"chunked prefill off: raised to max_model_len → {mnbt}")
    largest_any = max(prefix_items.values(), default=0)
    if largest_any > mnbt:
        top = max(prefix_items, key=prefix_items.__getitem__)
        steps.append(
            f"raised to {largest_any}: images attend both ways (use_bidirectional_attention="
            f"'vision'), so one {top} item must fit one batch (vLLM counts every modality "
            "the model supports, even one limited to 0)"
        )
        mnbt = largest_any
    if seq_default * max_model_len < mnbt:
        steps.append(f"capped at max_num_seqs × max_model_len = {seq_default * max_model_len}")
    return min(seq_default * max_model_len, mnbt), steps


def batch_settings(
    *,
    entry_point: str,
    gpu_memory_bytes: int,
    gpu_name: str = "",
    platform: str = "cuda",
    tensor_parallel_size: int = 1,
    max_model_len: int,
    prefix_lm: bool = False,
    item_tokens: dict[str, int] | None = None,
    largest_item: int = 0,
    max_num_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
    enable_chunked_prefill: bool = True,
    gpu_capability: tuple[int, int] | None = None,
    vllm_version: str | None = None,
) -> StartSettings:
    """``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args`` for one entry point
    and GPU, and on CUDA the forced ``disable_chunked_mm_input`` of a prefix-LM model
    (``prefix_lm``: images attend both ways). ``item_tokens``: the worst case per item of
    every modality the model supports (vLLM raises the batch to the largest);
    ``largest_item``: the largest of the modalities whose limit is above 0;
    ``gpu_capability``: (major, minor), which some releases' tiers read. The one source
    of the start-up defaults: :func:`start_settings` and ``plan_serving`` call it.

    >>> batch_settings(entry_point="serve", gpu_memory_bytes=24 << 30, max_model_len=8192
    ...               ).max_num_batched_tokens
    2048
    >>> from gemma_explore.vllm_versions import SUPPORTED  # the oldest and newest release
    >>> gb10 = dict(gpu_memory_bytes=GPUS["GB10"].memory_bytes, gpu_capability=(12, 1))
    >>> [batch_settings(entry_point="serve", max_model_len=8192, vllm_version=v, **gb10
    ...                 ).max_num_batched_tokens for v in (SUPPORTED[0], SUPPORTED[-1])]
    [8192, 2048]
    """
    if entry_point not in ENTRY_POINTS:
        raise ValueError(f"entry_point must be one of {list(ENTRY_POINTS)}, got {entry_point!r}.")
    if platform not in ("cuda", "cpu"):
        raise ValueError(f"platform must be 'cuda' or 'cpu', got {platform!r}.")
    items = dict(item_tokens or {})
    world = int(tensor_parallel_size)
    profile = vllm_profile(vllm_version)
    defaults, seqs_defaults, why = _batch_defaults(
        profile, gpu_memory_bytes, gpu_name, platform, world, gpu_capability
    )
    name = "vllm serve" if entry_point == "serve" else "LLM(...)"
    prefix_lm = prefix_lm and bool(items)
    seqs = max_num_seqs
    if max_num_batched_tokens is None:
        seq_default = max_num_seqs if max_num_seqs is not None else seqs_defaults[entry_point]
        default = (defaults[entry_point], f"{name} defaults to {defaults[entry_point]} on {why}")
        mnbt, steps = _default_batch_tokens(
            default, max_model_len, seq_default, enable_chunked_prefill, items if prefix_lm else {}
        )
    else:
        mnbt = max_num_batched_tokens
        steps = [f"max_num_batched_tokens={mnbt}: yours (no default applied)"]
    if seqs is None:
        seqs = min(seqs_defaults[entry_point], mnbt)
        steps.append(
            f"max_num_seqs: {name} defaults to {seqs_defaults[entry_point]} ({why})"
            + (
                f", capped at max_num_batched_tokens → {seqs}"
                if seqs < seqs_defaults[entry_point]
                else ""
            )
        )
    else:
        steps.append(f"max_num_seqs={seqs}: yours (no default applied)")
    forced = platform == "cuda" and prefix_lm
    steps += _whole_items_rule(largest_item, mnbt) if forced else []
    return StartSettings(entry_point, int(mnbt), int(seqs), forced, largest_item, tuple(steps))


def start_settings(
    plan: Any,
    *,
    entry_point: str = "serve",
    gpu_memory_bytes: int = 80 * GIB,
    gpu_name: str = "",
    platform: str = "cuda",
    tensor_parallel_size: int = 1,
    max_num_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
    enable_chunked_prefill: bool = True,
    gpu_capability: tuple[int, int] | None = None,
) -> StartSettings:
    """What vLLM sets before it sizes anything: the defaults of ``vllm serve`` or
    ``LLM(...)`` on this GPU (``engine/arg_utils.py``) for the values you leave out, and,
    on CUDA, ``disable_chunked_mm_input`` for checkpoints whose images attend both ways
    (``platforms/cuda.py``). With it forced, an explicit ``max_num_batched_tokens`` below
    the largest item stops the engine at start-up (raised here with vLLM's words).
    ``plan_serving(..., gpu=…, entry_point=…)`` applies the same (:func:`batch_settings`).

    >>> from gemma_explore.serving.plan import plan_serving
    >>> plan = plan_serving("google/gemma-4-E4B-it")
    >>> s = start_settings(plan, entry_point="serve", gpu_memory_bytes=80 * 2**30)
    >>> s.max_num_batched_tokens, s.max_num_seqs
    (8192, 1024)
    """
    items = _supported_item_tokens(plan)
    active = [t for m, t in plan.max_tokens_per_item.items() if plan.limits.get(m, 0) > 0]
    return batch_settings(
        entry_point=entry_point,
        gpu_memory_bytes=gpu_memory_bytes,
        gpu_name=gpu_name,
        platform=platform,
        tensor_parallel_size=tensor_parallel_size,
        max_model_len=plan.max_model_len,
        prefix_lm=plan.model.use_bidirectional_attention == "vision",
        item_tokens=items,
        largest_item=max(active, default=0),
        max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs,
        enable_chunked_prefill=enable_chunked_prefill,
        gpu_capability=gpu_capability,
        vllm_version=profile_of(plan, None).version,
    )
