"""vLLM's words, release by release: the first supported release's catalogue, and what
later releases added.

:data:`TEMPLATES` holds every message ``serving/vllm_errors.py`` explains as the oldest
supported release (vLLM 0.32) formats it, its f-string fields named, and :data:`FILES` the
file under ``vllm/`` that raises or logs it there. ``v0_32.py`` copies both into its
profile; a later profile overrides only what its release changed: ``v0_33.py`` the file of
the two KV messages (moved to ``v1/core/kv_cache_planning.py``), ``v0_34.py`` their words
(vLLM's own advice, ``{hint}``, in place of the fixed sentence).

:data:`ADDED` holds what a later release added: new messages and the pieces vLLM fills into
one, each with the first release that has it. :func:`templates_for` and :func:`files_for`
merge them into a profile's own, so a release has them from its first release on and an
older one never does (until its profile lists them itself).

>>> from gemma_explore.vllm_versions import vllm_profile
>>> "kv-dtype-mismatch" in templates_for(vllm_profile("0.32"))
False
>>> files_for(vllm_profile("0.33"))["kv-dtype-mismatch"]
'config/vllm.py'
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gemma_explore.vllm_versions.release import VllmProfile

__all__ = [
    "ADDED",
    "FILES",
    "PENDING_FACTS",
    "TEMPLATES",
    "fact",
    "files_for",
    "first_release",
    "templates_for",
]

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

_KV_PLANNING = "v1/core/kv_cache_planning.py"

# What a later release added: key -> (first release that has it, its text, its file).
ADDED: dict[str, tuple[str, str, str]] = {
    # VllmConfig._reject_mismatched_float_kv_cache: an explicit float16/bfloat16 KV cache
    # dtype that differs from the model's dtype stops the engine at start-up.
    "kv-dtype-mismatch": (
        "0.33",
        'kv_cache_dtype="{cache_dtype}" is incompatible with dtype="{model_dtype}". '
        "Please set `--kv-cache-dtype` to {allowed}.",
        "config/vllm.py",
    ),
    # MediaDecodedBudget (one per chat request): reserve() with nothing left, and an audio
    # clip that overruns a reservation cut below VLLM_MAX_AUDIO_DECODE_BYTES
    # (AudioMediaIO._load_with_budget, multimodal/media/audio.py: the same words).
    "media-decode-budget": (
        "0.33",
        "Request decoded media exceeds VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES.",
        "multimodal/media/base.py",
    ),
    # MediaDecodedBudget.charge (an image, a video's frames) and settle (a decoded clip).
    "media-decode-budget-bytes": (
        "0.33",
        "Request decoded media exceeds VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES={limit} ({used} bytes).",
        "multimodal/media/base.py",
    ),
    # MediaRequestDownloadBudget.charge: the bytes downloaded for one request's media URLs.
    "media-download-budget": (
        "0.33",
        "Request media downloads exceed VLLM_MAX_MEDIA_REQUEST_DOWNLOAD_SIZE_MB={limit_mb:g} "
        "({received} bytes received, including retried attempts).",
        "connections.py",
    ),
    # _more_kv_cache_memory_hint: the {hint} of the two KV messages. The extensible KV
    # cache off (the CPU backend, --kv-cache-memory-bytes, num_gpu_blocks_override, …):
    "kv-memory-hint": (
        "0.34",
        "Try increasing `gpu_memory_utilization` when initializing the engine (this flag "
        "also controls CPU memory reservation on the CPU backend, despite its name).",
        _KV_PLANNING,
    ),
    # ... on, with --gpu-memory-utilization set below 1.0:
    "kv-memory-hint-capped": (
        "0.34",
        "The KV cache gets what is left after {used_by} within "
        "`gpu_memory_utilization`={utilization}; increase it (with the extensible KV cache "
        "it defaults to 1.0) or decrease `max_model_len` or `max_num_seqs`.{graphs_hint}",
        _KV_PLANNING,
    ),
    # ... on, at its default (the utilization resolves to 1.0):
    "kv-memory-hint-full": (
        "0.34",
        "The extensible KV cache already takes all device memory left after {used_by}; "
        "decrease `max_model_len` or `max_num_seqs`, or the model needs a device with more "
        "memory.{graphs_hint}",
        _KV_PLANNING,
    ),
    # {used_by} before warm-up, and after it (the fit is checked again on measured memory)
    "kv-memory-hint-used-by": ("0.34", "the model and its activations", _KV_PLANNING),
    "kv-memory-hint-used-by-warmup": (
        "0.34",
        "the model, its activations, CUDA graphs and warmup",
        _KV_PLANNING,
    ),
    # {graphs_hint} after warm-up ("" before)
    "kv-memory-hint-graphs": (
        "0.34",
        " CUDA graphs take less with fewer or smaller capture sizes in the compilation config.",
        _KV_PLANNING,
    ),
}

# Facts a surface needs that no profile field holds yet: field name -> release -> value.
# fact() prefers the profile's own field once it exists.
PENDING_FACTS: dict[str, dict[str, object]] = {
    # The processor cache keeps a request's own cached items while it inserts the same
    # request's new ones (multimodal/processing/processor.py _merge_mm_kwargs:
    # get_cached_item before the misses are inserted); earlier, a request whose items
    # overflow the cache could evict its own later hits.
    "processor_cache_keeps_request_hits": {"0.32": False, "0.33": False, "0.34": True},
}


def _line(version: str) -> tuple[int, ...]:
    """(0, 33) of "0.33"."""
    return tuple(int(n) for n in re.findall(r"\d+", version)[:2])


def first_release(key: str) -> str | None:
    """The release that added message ``key`` (None: every supported release has it).

    >>> first_release("media-decode-budget"), first_release("too-many-items")
    ('0.33', None)
    """
    return ADDED[key][0] if key in ADDED else None


def templates_for(profile: VllmProfile) -> dict[str, str]:
    """Every message ``profile``'s release has: its own templates, and what :data:`ADDED`
    holds from that release on (the profile's own text wins).

    >>> from gemma_explore.vllm_versions import vllm_profile
    >>> "kv-memory-hint" in templates_for(vllm_profile("0.34"))
    True
    """
    added = {
        k: text for k, (first, text, _) in ADDED.items() if _line(profile.version) >= _line(first)
    }
    return {**added, **profile.message_templates}


def files_for(profile: VllmProfile) -> dict[str, str]:
    """The file (under ``vllm/``) of each message in :func:`templates_for`.

    >>> from gemma_explore.vllm_versions import vllm_profile
    >>> files_for(vllm_profile("0.33"))["kv-too-small"]
    'v1/core/kv_cache_planning.py'
    """
    added = {
        k: file for k, (first, _, file) in ADDED.items() if _line(profile.version) >= _line(first)
    }
    return {**added, **profile.message_files}


def fact(profile: VllmProfile, name: str) -> object:
    """A release's value of a fact in :data:`PENDING_FACTS` (the profile's field if it has one).

    >>> from gemma_explore.vllm_versions import vllm_profile
    >>> fact(vllm_profile("0.34"), "processor_cache_keeps_request_hits")
    True
    """
    if hasattr(profile, name):
        return getattr(profile, name)
    return PENDING_FACTS[name][profile.version]
