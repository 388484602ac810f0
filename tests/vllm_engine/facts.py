"""What a running vLLM engine reports about itself, read from the engine (not re-derived).

:func:`engine_startup_facts` gathers the start-up numbers of an in-process ``vllm.LLM``
(``start_vllm``'s default on CPU): the KV line vLLM logged, the KV cache it sized, the
encoder budget and per-item maxima it profiled, and the dummy inputs it built. Tests hold
them to ``plan_serving`` (and, once merged, to ``capacity()``).

>>> facts = engine_startup_facts(bundle.engine.llm, kv_line=log.kv_line)   # doctest: +SKIP
>>> facts.kv_cache_tokens, facts.max_concurrency                          # doctest: +SKIP
(508400, 248.24)
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

KV_LINE = re.compile(
    r"(?P<pool>\S+) KV cache size: (?P<tokens>[\d,]+) tokens, Maximum concurrency for "
    r"(?P<len>[\d,]+) tokens per request: (?P<conc>[\d.]+)x"
)


class KVLineLog(logging.Handler):
    """Keeps the "KV cache size … Maximum concurrency …" lines vLLM logs at start-up.

    vLLM logs through its own "vllm" logger (not propagated to the root, so pytest's
    caplog misses it); attach this to it while engines start.
    """

    def __init__(self) -> None:
        super().__init__(level=logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if KV_LINE.search(text):
            self.lines.append(text)


@dataclass(frozen=True)
class EngineStartupFacts:
    """The numbers a started engine holds (in-process engine only)."""

    device: str  # vLLM's platform: "cpu" or "cuda"
    # The line vLLM logged ("CPU KV cache size: … Maximum concurrency …"): logged once per
    # process (info_once, first local rank), so a later engine in the same process may not
    # log it; the numbers are kept in cache_config either way.
    kv_line: str | None
    kv_cache_tokens: int  # cache_config.kv_cache_size_tokens (the line's first number)
    max_concurrency: float  # cache_config.kv_cache_max_concurrency (the line's last number)
    num_blocks: int  # KV blocks allocated
    block_size: int  # tokens per KV block
    kv_cache_memory_bytes: int | None  # what the engine was given (CPU: bytes, not a share)
    hybrid_kv_cache_manager: bool  # a sliding-window group of its own (False: all full blocks)
    kv_bytes_per_token: dict[str, int]  # per layer kind ("full"/"sliding"): page bytes / block
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    limits: dict[str, int]  # limit_mm_per_prompt as the engine resolved it
    encoder_compute_budget: int  # scheduler.max_num_encoder_input_tokens
    encoder_cache_size: int  # the scheduler's encoder cache manager, in tokens
    max_tokens_per_item: dict[str, int]  # MultiModalBudget.mm_max_toks_per_item
    max_items_per_prompt: dict[str, int]
    max_items_per_batch: dict[str, int]
    # modality → what the dummy builder made for profiling: {"images": [(w, h)],
    # "audio_samples": [n], "video_frames": [(frames, h, w)], "placeholders": n}
    dummy_inputs: dict[str, dict[str, Any]] = field(default_factory=dict)


def kv_line_of(facts: EngineStartupFacts) -> str:
    """The KV line as vLLM formats it (``update_kv_cache_capacity``), from the numbers the
    engine stored: what ``capacity()`` should reproduce."""
    return (
        f"{facts.device.upper()} KV cache size: {facts.kv_cache_tokens:,} tokens, Maximum "
        f"concurrency for {facts.max_model_len:,} tokens per request: {facts.max_concurrency:.2f}x"
    )


def engine_core(llm: Any) -> Any:
    """The ``EngineCore`` of an in-process ``vllm.LLM`` (``VLLM_ENABLE_V1_MULTIPROCESSING=0``)."""
    client = llm.llm_engine.engine_core
    core = getattr(client, "engine_core", None)
    if core is None:
        raise RuntimeError(
            "engine_startup_facts reads an in-process engine: start it with "
            "ge.load(…, engine='vllm') on CPU, or start_vllm(…, in_process=True)."
        )
    return core


def model_runner(llm: Any) -> Any:
    """The worker's model runner (in-process engine)."""
    return engine_core(llm).model_executor.driver_worker.worker.model_runner


def _describe_dummy(data: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for modality, items in data.items():
        if not items:
            continue
        if modality == "image":
            out["images"] = [tuple(im.size) for im in items]  # PIL: (w, h)
        elif modality == "audio":
            out["audio_samples"] = [len(a[0] if isinstance(a, tuple) else a) for a in items]
        elif modality == "video":
            frames = [v[0] if isinstance(v, tuple) else v for v in items]
            out["video_frames"] = [tuple(f.shape[:3]) for f in frames]
    return out


def engine_startup_facts(llm: Any, *, kv_line: str | None = None) -> EngineStartupFacts:
    """Read the start-up numbers of an in-process ``vllm.LLM``.

    >>> engine_startup_facts(llm).encoder_cache_size   # doctest: +SKIP
    4096
    """
    vc = llm.llm_engine.vllm_config
    core = engine_core(llm)
    scheduler = core.scheduler
    runner = model_runner(llm)
    budget = runner.mm_budget
    per_token: dict[str, int] = {}
    for group in scheduler.kv_cache_config.kv_cache_groups:
        spec = group.kv_cache_spec
        kind = "sliding" if getattr(spec, "sliding_window", None) else "full"
        per_layer = spec.page_size_bytes // spec.block_size
        per_token[kind] = per_token.get(kind, 0) + per_layer * len(group.layer_names)
    dummies: dict[str, dict[str, Any]] = {}
    processor = budget.processor
    mm_options = vc.model_config.get_multimodal_config().limit_per_prompt
    seq_len = min(vc.model_config.max_model_len, vc.scheduler_config.max_num_batched_tokens)
    for modality in budget.mm_max_toks_per_item:
        data = processor.dummy_inputs.get_dummy_mm_data(seq_len, {modality: 1}, mm_options)
        made = processor.get_dummy_mm_inputs({modality: 1})
        described = _describe_dummy({modality: data.get(modality)})
        described["placeholders"] = sum(
            p.get_num_embeds() for p in made["mm_placeholders"][modality]
        )
        dummies[modality] = described
    cc = vc.cache_config
    return EngineStartupFacts(
        device=str(vc.device_config.device_type),
        kv_line=kv_line,
        kv_cache_tokens=int(cc.kv_cache_size_tokens),
        max_concurrency=float(cc.kv_cache_max_concurrency),
        num_blocks=int(scheduler.kv_cache_config.num_blocks),
        block_size=int(cc.block_size),
        kv_cache_memory_bytes=cc.kv_cache_memory_bytes,
        hybrid_kv_cache_manager="sliding" in per_token,
        kv_bytes_per_token=per_token,
        max_model_len=int(vc.model_config.max_model_len),
        max_num_batched_tokens=int(vc.scheduler_config.max_num_batched_tokens),
        max_num_seqs=int(vc.scheduler_config.max_num_seqs),
        limits=dict(budget.mm_limits),
        encoder_compute_budget=int(scheduler.max_num_encoder_input_tokens),
        encoder_cache_size=int(scheduler.encoder_cache_manager.cache_size),
        max_tokens_per_item=dict(budget.mm_max_toks_per_item),
        max_items_per_prompt=dict(budget.mm_max_items_per_prompt),
        max_items_per_batch=dict(budget.mm_max_items_per_batch),
        dummy_inputs=dummies,
    )


def fresh(llm: Any) -> None:
    """Forget cached multimodal inputs, encoder outputs and prefixes, so the next request
    runs the encoders again (a hook then sees every item)."""
    llm.reset_mm_cache()
    llm.reset_prefix_cache()
    llm.llm_engine.reset_encoder_cache()


def capture_mm_embeddings(llm: Any) -> list[list[Any]]:
    """Record what ``embed_multimodal`` returns inside the engine (one list per call, one
    tensor per item, on CPU): the embeddings vLLM's runner scatters into the placeholders.
    Returns the live list, emptied: it fills as the engine runs the encoders.

    >>> calls = capture_mm_embeddings(llm)   # doctest: +SKIP
    """

    def install(model: Any) -> list[list[Any]]:
        calls = getattr(model, "_ge_calls", None)
        if calls is None:
            calls = model._ge_calls = []
            original = model.embed_multimodal

            def recorded(**kwargs: Any) -> Any:
                out = original(**kwargs)
                calls.append([t.detach().float().cpu().clone() for t in out])
                return out

            model.embed_multimodal = recorded
        calls.clear()
        return calls

    (calls,) = llm.apply_model(install)
    return calls
