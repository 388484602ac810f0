"""vLLM's words as the first supported release has them: the catalogue every later
release starts from.

:data:`TEMPLATES` holds every message ``serving/vllm_errors.py`` explains as the oldest
supported release (vLLM 0.32) formats it, its f-string fields named, and :data:`FILES` the
file under ``vllm/`` that raises or logs it there. ``v0_32.py`` copies both into its
profile. A later profile changes only what its release changed, in its own module:
``v0_33.py`` adds its new messages (the KV-dtype refusal, the media budgets) and moves the
two KV messages' file; ``v0_34.py`` gives those two vLLM's own advice (``{hint}``) and adds
the pieces it fills in. A profile's ``message_templates`` is then the whole catalogue of its
release, and an older release never has a newer one's message.

>>> from gemma_explore.vllm_versions import vllm_profile
>>> "kv-dtype-mismatch" in vllm_profile("0.32").message_templates
False
>>> vllm_profile("0.33").message_files["kv-dtype-mismatch"]
'config/vllm.py'
"""

from __future__ import annotations

__all__ = ["FILES", "TEMPLATES"]

# Each message as vLLM 0.32 formats it: the literal of FILES[key], its f-string fields (and
# a logger's %s / %f) kept, each field named as the package fills it ({max_model_len}, …).
# tests/serving/test_vllm_errors.py finds each in that release's own file.
TEMPLATES: dict[str, str] = {
    "encoder-cache": (
        "The {prompt_type} prompt contains a(n) {modality} item with {num_embeds} "
        "embedding tokens, which exceeds the pre-allocated encoder cache size {cache}. "
        "Please reduce the input size or increase the encoder cache size by setting "
        "--limit-mm-per-prompt at startup."
    ),
    "prompt-too-long": (
        "The {prompt_type} prompt (length {prompt_len}) is longer than the maximum "
        "model length of {max_model_len}. {suggestion}"
    ),
    "prompt-fills-context": (
        "The {prompt_type} prompt (length {prompt_len}) plus the number of requested "
        "output tokens (at least 1) is longer than the maximum model length of "
        "{max_model_len}. {suggestion}"
    ),
    "empty-prompt": "The {prompt_type} prompt cannot be empty",
    "too-many-items": "At most {limit} {modality}(s) may be provided in one prompt.",
    "item-above-batch": (
        "Chunked MM input disabled but max_tokens_per_mm_item "
        "({max_tokens_per_mm_item}) is larger than max_num_batched_tokens "
        "({max_num_batched_tokens}). Please increase max_num_batched_tokens."
    ),
    "kv-no-memory": (
        "No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine (this flag also controls "
        "CPU memory reservation on the CPU backend, despite its name). See "
        "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more "
        "details."
    ),
    "kv-too-small": (
        "To serve at least one request with the model's max seq len ({max_model_len}), "
        "({needed} GiB KV cache is needed, which is larger than the available KV cache "
        "memory ({available} GiB). {estimated_msg}Try increasing "
        "`gpu_memory_utilization` (which also controls CPU memory on the CPU backend) "
        "or decreasing `max_model_len` when initializing the engine. See "
        "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more "
        "details."
    ),
    "max-model-len-above-model": (
        "User-specified max_model_len ({max_model_len}) is greater than the derived "
        "max_model_len ({max_len_key}={derived_max_model_len} or "
        "model_max_length={model_max_length} in model's config.json)."
    ),
    "batch-below-max-model-len": (
        "max_num_batched_tokens ({max_num_batched_tokens}) is smaller than "
        "max_model_len ({max_model_len}). This effectively limits the maximum sequence "
        "length to max_num_batched_tokens and makes vLLM reject longer sequences. "
        "Please increase max_num_batched_tokens or decrease max_model_len."
    ),
    "batch-below-seqs": (
        "max_num_batched_tokens ({max_num_batched_tokens}) must be greater than or "
        "equal to max_num_seqs ({max_num_seqs})."
    ),
    "context-tokens": (
        "This model's maximum context length is {max_total_tokens} tokens. However, "
        "your prompt contains {qualifier}{token_count} input tokens, which exceeds this "
        "limit even without any output tokens. Please reduce the length of the input "
        "prompt."
    ),
    "context-characters": (
        "This model's maximum context length is {max_total_tokens} tokens. However, "
        "your prompt contains {chars} characters (more than {max_input_chars} "
        "characters, which is the upper bound for {max_input_tokens} input tokens). "
        "Please reduce the length of the input prompt."
    ),
    "audio-decode-too-long-metadata": (
        "Audio exceeds maximum allowed duration of {max_duration_s}s (metadata reports "
        "{metadata_duration_s:.1f}s). Set VLLM_MAX_AUDIO_DECODE_DURATION_S to increase "
        "this limit."
    ),
    "audio-decode-too-long-samples": (
        "Audio exceeds maximum allowed duration of {max_duration_s}s (decoded "
        "{total_samples} samples at {sr}Hz). Set VLLM_MAX_AUDIO_DECODE_DURATION_S to "
        "increase this limit."
    ),
    "audio-decode-too-long-file": (
        "Audio exceeds maximum allowed duration of {max_duration_s}s (file contains "
        "{file_duration_s:.1f}s at {native_sr}Hz). Set VLLM_MAX_AUDIO_DECODE_DURATION_S "
        "to increase this limit."
    ),
    "audio-no-target-rate": ("Audio resampling is not supported when `target_sr` is not provided"),
    "no-audio-tower": (
        "Audio input was provided but the model '{model}' does not have an audio tower. "
        "Audio inference is only supported for Gemma4 models that include an "
        "audio_config (i.e., models that include an audio_config)."
    ),
    "audio-longer-than-model": "Audio duration exceeds max: %f > %f seconds",
    "processor-cache-item-too-large": (
        "Skipping multi-modal processor cache insert for an item of %s GiB because it "
        "exceeds --mm-processor-cache-gb=%s. The item will be processed uncached; "
        "increase --mm-processor-cache-gb to cache items of this size."
    ),
    "unsupported-language": ("Unsupported language: {language!r}.  Must be one of {supported}."),
    "max-tokens-above-context": (
        "{max_output_tokens_param}={max_output_tokens} cannot be greater than "
        "{max_total_tokens_param}={max_total_tokens}. Please request fewer output "
        "tokens."
    ),
    "request-mm-kwargs-untrusted": (
        "Per-request mm_processor_kwargs are disabled by default because they can "
        "change multimodal preprocessing resource usage. Start the server with "
        "--trust-request-mm-kwargs only when clients are trusted."
    ),
    "input-above-context": (
        "Input length ({input_length}) exceeds model's maximum context length ({max_model_len})."
    ),
}
# The file of each, under vllm/ (v0_33.py moves the two KV messages).
FILES: dict[str, str] = {
    "encoder-cache": "v1/engine/input_processor.py",
    "prompt-too-long": "v1/engine/input_processor.py",
    "prompt-fills-context": "v1/engine/input_processor.py",
    "empty-prompt": "v1/engine/input_processor.py",
    "too-many-items": "multimodal/processing/context.py",
    "item-above-batch": "v1/core/encoder_cache_manager.py",
    "kv-no-memory": "v1/core/kv_cache_utils.py",
    "kv-too-small": "v1/core/kv_cache_utils.py",
    "max-model-len-above-model": "config/model.py",
    "batch-below-max-model-len": "config/scheduler.py",
    "batch-below-seqs": "config/scheduler.py",
    "context-tokens": "renderers/params.py",
    "context-characters": "renderers/params.py",
    "audio-decode-too-long-metadata": "multimodal/media/audio.py",
    "audio-decode-too-long-samples": "multimodal/media/audio.py",
    "audio-decode-too-long-file": "multimodal/media/audio.py",
    "audio-no-target-rate": "multimodal/audio.py",
    "no-audio-tower": "model_executor/models/gemma4_mm.py",
    "audio-longer-than-model": "model_executor/models/gemma4_mm.py",
    "processor-cache-item-too-large": "multimodal/cache/base.py",
    "unsupported-language": "model_executor/models/interfaces.py",
    "max-tokens-above-context": "renderers/params.py",
    "request-mm-kwargs-untrusted": "entrypoints/generate/base/protocol.py",
    "input-above-context": "entrypoints/serve/utils/api_utils.py",
}
