"""vLLM 0.33: what changed from 0.32 for a Gemma deployment.

Every ``sources`` entry is "file:line symbol" under ``vllm/`` in the 0.33.0 wheel.

>>> PROFILE.placeholder_str["Gemma4ForConditionalGeneration"]["image"]
'<|image|>'
"""

from __future__ import annotations

from dataclasses import replace

from gemma_explore.vllm_versions import v0_32
from gemma_explore.vllm_versions.release import BatchTier

__all__ = ["PROFILE", "TIERS"]

_BIG, _H100, _SMALL = v0_32.TIERS
# GB10 (DGX Spark: compute capability 12.1, 128 GB of memory shared with the CPU) stays on
# the small tier however much memory it reports (get_batch_defaults' is_gb10).
TIERS: tuple[BatchTier, ...] = (
    _BIG,
    replace(
        _H100,
        name="a GPU with ≥ 70 GiB that is not an A100 or a GB10 (H100/H200-class)",
        excluded_capabilities=((12, 1),),
    ),
    replace(_SMALL, name="a GPU under 70 GiB, an A100 or a GB10"),
)

_KV_PLANNING = "v1/core/kv_cache_planning.py"

# The messages 0.33 added: key -> (text, file under vllm/).
_ADDED_MESSAGES: dict[str, tuple[str, str]] = {
    # VllmConfig._reject_mismatched_float_kv_cache: an explicit float16/bfloat16 KV cache
    # dtype that differs from the model's dtype stops the engine at start-up.
    "kv-dtype-mismatch": (
        'kv_cache_dtype="{cache_dtype}" is incompatible with dtype="{model_dtype}". '
        "Please set `--kv-cache-dtype` to {allowed}.",
        "config/vllm.py",
    ),
    # MediaDecodedBudget (one per chat request): reserve() with nothing left, and an audio
    # clip that overruns a reservation cut below VLLM_MAX_AUDIO_DECODE_BYTES
    # (AudioMediaIO._load_with_budget, multimodal/media/audio.py: the same words).
    "media-decode-budget": (
        "Request decoded media exceeds VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES.",
        "multimodal/media/base.py",
    ),
    # MediaDecodedBudget.charge (an image, a video's frames) and settle (a decoded clip).
    "media-decode-budget-bytes": (
        "Request decoded media exceeds VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES={limit} ({used} bytes).",
        "multimodal/media/base.py",
    ),
    # MediaRequestDownloadBudget.charge: the bytes downloaded for one request's media URLs.
    "media-download-budget": (
        "Request media downloads exceed VLLM_MAX_MEDIA_REQUEST_DOWNLOAD_SIZE_MB={limit_mb:g} "
        "({received} bytes received, including retried attempts).",
        "connections.py",
    ),
}

# Gemma 4's get_placeholder_str now names Gemma 4's own strings.
_GEMMA4_STRINGS = {"image": "<|image|>", "audio": "<|audio|>", "video": "<|video|>"}

PROFILE = replace(
    v0_32.PROFILE,
    version="0.33",
    release="0.33.0",
    transformers="5.20.2",
    batch_tiers=TIERS,
    refuses_kv_dtype_mismatch=True,
    encoder_graph_rule="row-width",
    tower_quant_rule="per-tower",
    placeholder_str={
        **v0_32.PROFILE.placeholder_str,
        "Gemma4ForConditionalGeneration": dict(_GEMMA4_STRINGS),
        "Gemma4UnifiedForConditionalGeneration": dict(_GEMMA4_STRINGS),
    },
    media_decode_limit_bytes=715_827_880,
    audio_decode_reservation_bytes=256 << 20,
    message_templates={
        **v0_32.PROFILE.message_templates,
        **{key: text for key, (text, _) in _ADDED_MESSAGES.items()},
    },
    # KV planning moved out of kv_cache_utils.py; the two messages keep their words.
    message_files={
        **v0_32.PROFILE.message_files,
        **{key: file for key, (_, file) in _ADDED_MESSAGES.items()},
        "kv-no-memory": _KV_PLANNING,
        "kv-too-small": _KV_PLANNING,
    },
    locations={
        **v0_32.PROFILE.locations,
        **{
            name: f"{_KV_PLANNING}: {name}"
            for name in (
                "get_kv_cache_configs",
                "check_enough_kv_cache_memory",
                "unify_kv_cache_spec_page_size",
            )
        },
        "tower quantization": "model_executor/models/gemma4_mm.py: _get_tower_quant_config",
        "encoder graph row widths": (
            "model_executor/models/gemma4_mm.py: "
            "Gemma4ForConditionalGeneration.get_encoder_cudagraph_config"
        ),
    },
    sources={
        "gpu_memory_utilization": "config/cache.py:215 gpu_memory_utilization",
        "default_block_size": "config/cache.py:185 DEFAULT_BLOCK_SIZE",
        "batch_tiers": "engine/arg_utils.py:2940 get_batch_defaults",
        "tower_quant_rule": "model_executor/models/gemma4_mm.py:102 _get_tower_quant_config",
        "encoder_graph_rule": "model_executor/models/gemma4_mm.py:1672 row_widths",
        "placeholder_str": "model_executor/models/gemma4_mm.py:2353 get_placeholder_str",
        "media_decode_limit_bytes": "envs.py:87 VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES",
        "refuses_kv_dtype_mismatch": "config/vllm.py:1492 _reject_mismatched_float_kv_cache",
        "message_files": "v1/core/kv_cache_planning.py:58 No available memory for the cache blocks",
    },
)
