"""vLLM 0.34: what changed from 0.33 for a Gemma deployment.

Every ``sources`` entry is "file:line symbol" under ``vllm/`` in the 0.34.0 wheel.

>>> PROFILE.kv_sizing, PROFILE.gpu_memory_utilization
('extensible', None)
"""

from __future__ import annotations

from dataclasses import replace

from gemma_explore.vllm_versions import v0_33

__all__ = ["PROFILE"]

# The pieces of vLLM's own advice ({hint}) that 0.34 fills into the two KV messages
# (_more_kv_cache_memory_hint), each a literal of kv_cache_planning.py.
_HINTS: dict[str, str] = {
    # The extensible KV cache off (the CPU backend, --kv-cache-memory-bytes,
    # num_gpu_blocks_override, …): then both messages read as the older releases' did.
    "kv-memory-hint": (
        "Try increasing `gpu_memory_utilization` when initializing the engine (this flag "
        "also controls CPU memory reservation on the CPU backend, despite its name)."
    ),
    # ... on, with --gpu-memory-utilization set below 1.0:
    "kv-memory-hint-capped": (
        "The KV cache gets what is left after {used_by} within "
        "`gpu_memory_utilization`={utilization}; increase it (with the extensible KV cache "
        "it defaults to 1.0) or decrease `max_model_len` or `max_num_seqs`.{graphs_hint}"
    ),
    # ... on, at its default (the utilization resolves to 1.0):
    "kv-memory-hint-full": (
        "The extensible KV cache already takes all device memory left after {used_by}; "
        "decrease `max_model_len` or `max_num_seqs`, or the model needs a device with more "
        "memory.{graphs_hint}"
    ),
    # {used_by} before warm-up, and after it (the fit is checked again on measured memory)
    "kv-memory-hint-used-by": "the model and its activations",
    "kv-memory-hint-used-by-warmup": "the model, its activations, CUDA graphs and warmup",
    # {graphs_hint} after warm-up ("" before)
    "kv-memory-hint-graphs": (
        " CUDA graphs take less with fewer or smaller capture sizes in the compilation config."
    ),
}

PROFILE = replace(
    v0_33.PROFILE,
    version="0.34",
    release="0.34.0",
    transformers="5.22.2",
    gpu_memory_utilization=None,
    kv_sizing="extensible",
    kv_margin_floor_bytes=1 << 30,
    kv_margin_fraction=0.75,
    checks_fit_after_warmup=True,
    default_block_size=64,
    encoder_graph_rule="grid",
    encoder_graph_max_budget=5120,
    encoder_data_parallel=True,
    processor_cache_keeps_request_hits=True,
    # Gemma 4's images and video frames reach the processor cache as raw uint8 pixels
    # (Unified sets supports_mm_device_do_normalize = False; Gemma 3n's class never sets it).
    mm_device_do_normalize=frozenset({"Gemma4ForConditionalGeneration"}),
    # The two KV messages now carry vLLM's own advice ({hint}: _more_kv_cache_memory_hint).
    message_templates={
        **v0_33.PROFILE.message_templates,
        "kv-no-memory": (
            "No available memory for the cache blocks. {hint} See "
            "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
        ),
        "kv-too-small": (
            "To serve at least one request with the model's max seq len ({max_model_len}), "
            "({needed} GiB KV cache is needed, which is larger than the available KV cache "
            "memory ({available} GiB). {estimated_msg}{hint} Decreasing `max_model_len` also "
            "reduces what is needed. See "
            "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
        ),
        **_HINTS,
    },
    message_files={
        **v0_33.PROFILE.message_files,
        **dict.fromkeys(_HINTS, "v1/core/kv_cache_planning.py"),
    },
    sources={
        **v0_33.PROFILE.sources,
        "gpu_memory_utilization": "config/cache.py:216 gpu_memory_utilization",
        "kv_sizing": "config/cache.py:495 resolved_gpu_memory_utilization",
        "kv_margin_floor_bytes": "v1/worker/extensible_kv_cache.py:64 KV_CACHE_MARGIN_FLOOR_BYTES",
        "kv_margin_fraction": "v1/worker/extensible_kv_cache.py:65 KV_CACHE_MARGIN_FRACTION",
        "checks_fit_after_warmup": "v1/core/kv_cache_planning.py:1827 shrink_kv_cache_configs",
        "default_block_size": "config/cache.py:185 DEFAULT_BLOCK_SIZE",
        "encoder_graph_max_budget": "config/compilation.py:624 encoder_cudagraph_max_token_budget",
        "refuses_kv_dtype_mismatch": "config/vllm.py:1431 _reject_mismatched_float_kv_cache",
        "message_templates": "v1/core/kv_cache_planning.py:108 No available memory for the cache blocks. {hint}",
        "message_files": "v1/core/kv_cache_planning.py:99 _check_enough_kv_cache_memory",
        "kv-memory-hint": "v1/core/kv_cache_planning.py:93 Try increasing `gpu_memory_utilization`",
        "batch_tiers": "engine/arg_utils.py:2977 get_batch_defaults",
        "tower_quant_rule": "model_executor/models/gemma4_mm.py:114 _get_tower_quant_config",
        "encoder_graph_rule": "config/compilation.py:624 encoder_cudagraph_max_token_budget",
        "placeholder_str": "model_executor/models/gemma4_mm.py:2540 get_placeholder_str",
        "encoder_data_parallel": "model_executor/models/gemma4_mm.py:1057 supports_encoder_tp_data",
        "media_decode_limit_bytes": "envs.py:89 VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES",
        "processor_cache_keeps_request_hits": (
            "multimodal/processing/processor.py:1422 get_cached_item"
        ),
        "mm_device_do_normalize": (
            "model_executor/models/gemma4_mm.py:1065 supports_mm_device_do_normalize"
        ),
    },
)
