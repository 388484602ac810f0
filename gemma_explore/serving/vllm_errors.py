"""vLLM's error messages, verbatim, with the cause and the value to set.

vLLM's errors name a flag, not a number: "exceeds the pre-allocated encoder cache size"
does not say which ``--max-num-batched-tokens`` would hold the item. The package computes
those numbers (:func:`~gemma_explore.serving.plan.plan_serving`, ``plan.admit``), so each
message vLLM 0.32 raises or logs about what this package plans is written here once, as
vLLM's source formats it, with:

- **cause**: why vLLM says it, in a porter's words;
- **setting**: the flag or variable that changes the outcome;
- **answer**: the value to set, read from the numbers in the message and, given a model,
  from its serving plan;
- **command**: the ``gemma-explore`` command (or Python call) that computes it.

``docs/vllm_errors.md`` is rendered from :data:`VLLM_ERRORS` (:func:`errors_page`), so a
search for the error text finds it, and ``gemma-explore explain "<pasted error>"`` matches
a pasted copy (:func:`explain`). ``tests/serving/test_vllm_errors.py`` holds every
template to the string literal in vLLM's installed source, and the package's own refusals
(``serving/kv.py``) format these same templates.

>>> found = explain("ValueError: max_num_batched_tokens (256) must be greater than or "
...                 "equal to max_num_seqs (1024).")
>>> found.error.name, found.fields["max_num_seqs"]
('batch-below-seqs', '1024')
>>> print(found.answer)
Set --max-num-batched-tokens 1024 or more, or --max-num-seqs 256 or less.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "VLLM_ERRORS",
    "Explanation",
    "VllmError",
    "error_named",
    "errors_page",
    "explain",
]

# A field of a template: "{name}", "{name:.1f}", "{name!r}", or a logger's "%f" / "%s".
_FIELD = re.compile(r"\{(?P<name>\w+)(?:![rsa])?(?::[^{}]*)?\}|%[-#0-9.]*[sdfr]")


def _int(text: str) -> int:
    """The number a message printed: "1,024", "at least 4097", "131072.0" → int.

    >>> _int("at least 4,097"), _int("131072.0")
    (4097, 131072)
    """
    m = re.search(r"\d[\d,]*(?:\.\d+)?", text)
    return int(float(m.group(0).replace(",", ""))) if m else 0


@dataclass(frozen=True)
class VllmError:
    """One message vLLM raises or logs, as its source formats it.

    >>> error_named("too-many-items").format(limit=1, modality="image")
    'At most 1 image(s) may be provided in one prompt.'
    """

    name: str  # a short handle, stable across versions: the page's anchor
    template: str  # vLLM's text, its f-string fields named ({modality}, {max_model_len}, …)
    source: str  # the file of vLLM 0.32 that raises or logs it (under vllm/)
    stage: str  # "start-up" (the engine refuses to start), "request" (400) or "log"
    cause: str  # why vLLM says it
    setting: str  # the flag or variable that changes the outcome
    command: str  # what computes the value: a gemma-explore command or a plan call
    # The value to set: (the message's fields, a serving plan or None) → one sentence.
    answer: Callable[[Mapping[str, str], Any], str] = field(repr=False, compare=False)

    @property
    def fields(self) -> tuple[str, ...]:
        """The template's field names, in order.

        >>> error_named("batch-below-seqs").fields
        ('max_num_batched_tokens', 'max_num_seqs')
        """
        return tuple(_name(m, i) for i, m in enumerate(_FIELD.finditer(self.template)))

    def format(self, **values: Any) -> str:
        """The message with these values, exactly as vLLM prints it."""
        return self.template.format(**values)

    def pattern(self) -> re.Pattern[str]:
        """A regex that finds this message in pasted text: the literal parts as written
        (any run of spaces matches any other), each field a lazy group."""
        parts, last = [], 0
        for i, m in enumerate(_FIELD.finditer(self.template)):
            parts.append(_literal(self.template[last : m.start()]))
            lazy = "?" if m.end() < len(self.template) else ""  # the last field takes the rest
            parts.append(f"(?P<{_name(m, i)}>.*{lazy})")
            last = m.end()
        parts.append(_literal(self.template[last:]))
        return re.compile("".join(parts), re.S)

    @property
    def literal_chars(self) -> int:
        """How much fixed text the template holds: the longest match wins in :func:`explain`."""
        return len(_FIELD.sub("", self.template))


def _name(m: re.Match[str], i: int) -> str:
    """A field's name; a logger's "%f" is named by its place ("arg1", "arg2", …)."""
    return m.group("name") or f"arg{i + 1}"


def _literal(text: str) -> str:
    """Fixed text as a regex: escaped, and any run of spaces matches any whitespace."""
    return re.sub(r"(?:\\ )+", r"\\s+", re.escape(text))


# --------------------------------------------------------------------------- answers
# Each answer reads the numbers the message printed; a plan (``plan_serving`` of the model
# the user named) adds what the message cannot know: the budgets that would fit.


def _budgets_holding(plan: Any, modality: str, tokens: int) -> str:
    """ ", or start at --mm-processor-kwargs '{"max_soft_tokens": B}'" for the smallest
    budget whose largest item holds ``tokens``; "" without a plan or budgets."""
    if plan is None or modality != "image" or not plan.model.spec.image.budgets:
        return ""
    # vLLM profiles an image at the start-up budget: its largest item is that many
    # embeddings (get_mm_max_tokens_per_item; markers are not embeddings).
    for budget in plan.model.spec.image.budgets:
        if budget >= tokens:
            return (
                f", or start the engine at the budget that profiles such an item: "
                f"--mm-processor-kwargs '{{\"max_soft_tokens\": {budget}}}' "
                f"({plan.model.spec.display_name}'s largest image there is {budget} embeddings)"
            )
    return ""


def _encoder_cache(f: Mapping[str, str], plan: Any) -> str:
    n = _int(f["num_embeds"])
    return (
        f"Set --max-num-batched-tokens {n} or more: vLLM sizes the encoder cache as the "
        f"larger of max_num_batched_tokens and the largest item it profiled at start-up "
        f"(now {_int(f['cache'])}){_budgets_holding(plan, f['modality'], n)}."
    )


def _item_above_batch(f: Mapping[str, str], plan: Any) -> str:
    n = _int(f["max_tokens_per_mm_item"])
    fits = ""
    if plan is not None and plan.model.spec.image.budgets:
        mnbt = _int(f["max_num_batched_tokens"])
        ok = [b for b in plan.model.spec.image.budgets if b <= mnbt]  # the largest image is b
        if ok:
            fits = (
                f", or start at a budget of {max(ok)} or less: --mm-processor-kwargs "
                f"'{{\"max_soft_tokens\": {max(ok)}}}' (its largest image fits {mnbt})"
            )
    return f"Set --max-num-batched-tokens {n} or more{fits}."


def _prompt_too_long(f: Mapping[str, str], plan: Any) -> str:
    n = _int(f["prompt_len"])
    return (
        f"Set --max-model-len {n + 1} or more (the prompt is {n} tokens, and vLLM keeps room "
        "for at least one output token), or send fewer or smaller items: "
        "gemma-explore plan prices each one."
    )


def _kv_too_small(f: Mapping[str, str], plan: Any) -> str:
    estimate = re.search(r"estimated maximum model length is (\d+)", f["estimated_msg"])
    shorter = (
        f"--max-model-len {estimate.group(1)} or less" if estimate else "a shorter --max-model-len"
    )
    return (
        f"Set {shorter}, or give the KV cache {f['needed']} GiB instead of {f['available']}: "
        "raise --gpu-memory-utilization (on vLLM's CPU build: VLLM_CPU_KVCACHE_SPACE, in GiB), "
        "use --kv-cache-dtype fp8, or shard with --tensor-parallel-size."
    )


def _split_the_clip(f: Mapping[str, str], plan: Any) -> str:
    return (
        "Split the clip into windows the model hears whole (30 s for Gemma 3n and Gemma 4: "
        "transformers' extractor keeps only the first 30 s of a longer one), or raise "
        f"VLLM_MAX_AUDIO_DECODE_DURATION_S above {f['max_duration_s']} on the server."
    )


VLLM_ERRORS: tuple[VllmError, ...] = (
    VllmError(
        name="encoder-cache",
        template=(
            "The {prompt_type} prompt contains a(n) {modality} item with {num_embeds} embedding "
            "tokens, which exceeds the pre-allocated encoder cache size {cache}. Please reduce "
            "the input size or increase the encoder cache size by setting --limit-mm-per-prompt "
            "at startup."
        ),
        source="v1/engine/input_processor.py",
        stage="request",
        cause="One item's embeddings are larger than the encoder cache vLLM sized at start-up: "
        "typically a per-request budget (mm_processor_kwargs max_soft_tokens) above the "
        "start-up budget. Despite the message, --limit-mm-per-prompt counts items; it does "
        "not size the cache.",
        setting="--max-num-batched-tokens, or the start-up budget (--mm-processor-kwargs)",
        command="plan_serving(model, …).admit(images=[…], max_soft_tokens=…)",
        answer=_encoder_cache,
    ),
    VllmError(
        name="prompt-too-long",
        template=(
            "The {prompt_type} prompt (length {prompt_len}) is longer than the maximum model "
            "length of {max_model_len}. {suggestion}"
        ),
        source="v1/engine/input_processor.py",
        stage="request",
        cause="Text plus every placeholder of every item is more than max_model_len.",
        setting="--max-model-len",
        command="gemma-explore plan IMAGE|CLIP|VIDEO (each item's tokens), plan.admit(…)",
        answer=_prompt_too_long,
    ),
    VllmError(
        name="prompt-fills-context",
        template=(
            "The {prompt_type} prompt (length {prompt_len}) plus the number of requested output "
            "tokens (at least 1) is longer than the maximum model length of {max_model_len}. "
            "{suggestion}"
        ),
        source="v1/engine/input_processor.py",
        stage="request",
        cause="The prompt is exactly max_model_len: no room is left for one output token.",
        setting="--max-model-len",
        command="plan.admit(…)",
        answer=_prompt_too_long,
    ),
    VllmError(
        name="empty-prompt",
        template="The {prompt_type} prompt cannot be empty",
        source="v1/engine/input_processor.py",
        stage="request",
        cause="The request's prompt tokenized to nothing.",
        setting="the request's messages",
        command="ge.layout_prompt(messages, bundle=…) (the prompt, token by token)",
        answer=lambda f, plan: (
            "Send some text (a chat message, or a raw prompt with the turn markers)."
        ),
    ),
    VllmError(
        name="too-many-items",
        template="At most {limit} {modality}(s) may be provided in one prompt.",
        source="multimodal/processing/context.py",
        stage="request",
        cause="More items of one modality than the engine's limit_mm_per_prompt (vLLM "
        "reserves encoder memory for that many at start-up). vLLM adds 'Set "
        "`--limit-mm-per-prompt` to increase this limit.' when the model could take more.",
        setting="--limit-mm-per-prompt",
        command="gemma-explore serve-args MODEL --images N --audios N --videos N",
        answer=lambda f, plan: (
            f"Start with --limit-mm-per-prompt '{{\"{f['modality']}\": N}}', "
            f"N the most {f['modality']}s one request sends (now {_int(f['limit'])}); "
            "gemma-explore serve-args MODEL prices what each extra item reserves."
        ),
    ),
    VllmError(
        name="item-above-batch",
        template=(
            "Chunked MM input disabled but max_tokens_per_mm_item ({max_tokens_per_mm_item}) is "
            "larger than max_num_batched_tokens ({max_num_batched_tokens}). Please increase "
            "max_num_batched_tokens."
        ),
        source="v1/core/encoder_cache_manager.py",
        stage="start-up",
        cause="The largest item must fit one batch when vLLM may not split an item across "
        "steps: Gemma 4's bidirectional image attention forces disable_chunked_mm_input on "
        "CUDA (llama.cpp's n_ubatch and ollama's batch size follow the same rule).",
        setting="--max-num-batched-tokens",
        command="gemma-explore serve-args MODEL --budget B",
        answer=_item_above_batch,
    ),
    VllmError(
        name="kv-no-memory",
        template=(
            "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
            "when initializing the engine (this flag also controls CPU memory reservation on "
            "the CPU backend, despite its name). See "
            "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
        ),
        source="v1/core/kv_cache_utils.py",
        stage="start-up",
        cause="After the weights and the profiled activation peak, nothing of the memory "
        "share is left for KV blocks.",
        setting="--gpu-memory-utilization, --tensor-parallel-size, --quantization",
        command="gemma-explore serve-args MODEL --gpu-memory-gib G",
        answer=lambda f, plan: (
            "Raise --gpu-memory-utilization, shard the weights with "
            "--tensor-parallel-size, or quantize them (--quantization fp8); "
            "plan_serving(model).memory_fit(gpu_gib, util) shows what is left."
        ),
    ),
    VllmError(
        name="kv-too-small",
        template=(
            "To serve at least one request with the model's max seq len ({max_model_len}), "
            "({needed} GiB KV cache is needed, which is larger than the available KV cache "
            "memory ({available} GiB). {estimated_msg}Try increasing `gpu_memory_utilization` "
            "(which also controls CPU memory on the CPU backend) or decreasing `max_model_len` "
            "when initializing the engine. See "
            "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
        ),
        source="v1/core/kv_cache_utils.py",
        stage="start-up",
        cause="One request at max_model_len needs more KV blocks than the cache holds.",
        setting="--max-model-len, --gpu-memory-utilization, --kv-cache-dtype",
        command="plan_serving(model, max_model_len=…).capacity(memory)",
        answer=_kv_too_small,
    ),
    VllmError(
        name="max-model-len-above-model",
        template=(
            "User-specified max_model_len ({max_model_len}) is greater than the derived "
            "max_model_len ({max_len_key}={derived_max_model_len} or model_max_length="
            "{model_max_length} in model's config.json)."
        ),
        source="config/model.py",
        stage="start-up",
        cause="The asked length is beyond the model's positions (text_config's "
        "max_position_embeddings).",
        setting="--max-model-len",
        command="gemma-explore serve-args MODEL",
        answer=lambda f, plan: (
            f"Set --max-model-len {_int(f['derived_max_model_len'])} or "
            "less (VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 overrides the check, at the cost of positions "
            "the model never learned)."
        ),
    ),
    VllmError(
        name="batch-below-max-model-len",
        template=(
            "max_num_batched_tokens ({max_num_batched_tokens}) is smaller than max_model_len "
            "({max_model_len}). This effectively limits the maximum sequence length to "
            "max_num_batched_tokens and makes vLLM reject longer sequences. Please increase "
            "max_num_batched_tokens or decrease max_model_len."
        ),
        source="config/scheduler.py",
        stage="start-up",
        cause="With chunked prefill off, a whole prompt must fit one batch.",
        setting="--enable-chunked-prefill, --max-num-batched-tokens, --max-model-len",
        command="gemma-explore serve-args MODEL",
        answer=lambda f, plan: (
            "Leave chunked prefill on (drop --no-enable-chunked-prefill), or "
            f"set --max-num-batched-tokens {_int(f['max_model_len'])}, or --max-model-len "
            f"{_int(f['max_num_batched_tokens'])}."
        ),
    ),
    VllmError(
        name="batch-below-seqs",
        template=(
            "max_num_batched_tokens ({max_num_batched_tokens}) must be greater than or equal to "
            "max_num_seqs ({max_num_seqs})."
        ),
        source="config/scheduler.py",
        stage="start-up",
        cause="Each running sequence needs at least one token of the batch.",
        setting="--max-num-batched-tokens, --max-num-seqs",
        command="gemma-explore serve-args MODEL",
        answer=lambda f, plan: (
            f"Set --max-num-batched-tokens {_int(f['max_num_seqs'])} or "
            f"more, or --max-num-seqs {_int(f['max_num_batched_tokens'])} or less."
        ),
    ),
    VllmError(
        name="context-tokens",
        template=(
            "This model's maximum context length is {max_total_tokens} tokens. However, your "
            "prompt contains {qualifier}{token_count} input tokens, which exceeds this limit "
            "even without any output tokens. Please reduce the length of the input prompt."
        ),
        source="renderers/params.py",
        stage="request",
        cause="`vllm serve`'s HTTP layer counts the rendered prompt before the engine sees it.",
        setting="--max-model-len",
        command="gemma-explore plan …, plan.admit(…)",
        answer=lambda f, plan: (
            f"Set --max-model-len {_int(f['token_count']) + 1} or more, or send a shorter prompt."
        ),
    ),
    VllmError(
        name="context-characters",
        template=(
            "This model's maximum context length is {max_total_tokens} tokens. However, your "
            "prompt contains {chars} characters (more than {max_input_chars} characters, which "
            "is the upper bound for {max_input_tokens} input tokens). Please reduce the length "
            "of the input prompt."
        ),
        source="renderers/params.py",
        stage="request",
        cause="Before tokenizing, the HTTP layer refuses text longer than the tokens allowed "
        "times the tokenizer's most characters per token.",
        setting="--max-model-len",
        command="ge.layout_prompt(messages, bundle=…) (the prompt, token by token)",
        answer=lambda f, plan: (
            "Send a shorter text, or raise --max-model-len above "
            f"{_int(f['max_input_tokens'])} input tokens."
        ),
    ),
    VllmError(
        name="audio-decode-too-long-metadata",
        template=(
            "Audio exceeds maximum allowed duration of {max_duration_s}s (metadata reports "
            "{metadata_duration_s:.1f}s). Set VLLM_MAX_AUDIO_DECODE_DURATION_S to increase this "
            "limit."
        ),
        source="multimodal/media/audio.py",
        stage="request",
        cause="vLLM's audio decoder refuses files longer than VLLM_MAX_AUDIO_DECODE_DURATION_S "
        "(600 s by default): the only length limit of its endpoints.",
        setting="VLLM_MAX_AUDIO_DECODE_DURATION_S",
        command="gemma-explore plan CLIP",
        answer=_split_the_clip,
    ),
    VllmError(
        name="audio-decode-too-long-samples",
        template=(
            "Audio exceeds maximum allowed duration of {max_duration_s}s (decoded "
            "{total_samples} samples at {sr}Hz). Set VLLM_MAX_AUDIO_DECODE_DURATION_S to "
            "increase this limit."
        ),
        source="multimodal/media/audio.py",
        stage="request",
        cause="The same decode limit, found while decoding (no duration in the metadata).",
        setting="VLLM_MAX_AUDIO_DECODE_DURATION_S",
        command="gemma-explore plan CLIP",
        answer=_split_the_clip,
    ),
    VllmError(
        name="audio-decode-too-long-file",
        template=(
            "Audio exceeds maximum allowed duration of {max_duration_s}s (file contains "
            "{file_duration_s:.1f}s at {native_sr}Hz). Set VLLM_MAX_AUDIO_DECODE_DURATION_S "
            "to increase this limit."
        ),
        source="multimodal/media/audio.py",
        stage="request",
        cause="The same decode limit, read from a WAV or FLAC file's header.",
        setting="VLLM_MAX_AUDIO_DECODE_DURATION_S",
        command="gemma-explore plan CLIP",
        answer=_split_the_clip,
    ),
    VllmError(
        name="audio-no-target-rate",
        template="Audio resampling is not supported when `target_sr` is not provided",
        source="multimodal/audio.py",
        stage="request",
        cause="The checkpoint's processor declares no audio sampling rate: it has no audio "
        "tower (Gemma 4 26B and 31B), so a clip sent with its rate cannot be resampled. "
        "This comes before the 'does not have an audio tower' check.",
        setting="the checkpoint (one with an audio_config)",
        command="gemma-explore serve-args MODEL",
        answer=lambda f, plan: (
            "Serve a checkpoint with an audio tower (Gemma 3n, Gemma 4 "
            "E2B/E4B, Unified), or send no audio to this one."
        ),
    ),
    VllmError(
        name="no-audio-tower",
        template=(
            "Audio input was provided but the model '{model}' does not have an audio tower. "
            "Audio inference is only supported for Gemma4 models that include an audio_config "
            "(i.e., models that include an audio_config)."
        ),
        source="model_executor/models/gemma4_mm.py",
        stage="request",
        cause="A Gemma 4 checkpoint without an audio_config (26B, 31B) got a clip.",
        setting="the checkpoint",
        command="gemma-explore serve-args MODEL",
        answer=lambda f, plan: (
            f"The model '{f['model']}' hears nothing: serve Gemma 4 E2B/E4B, Gemma 3n or Unified for audio."
        ),
    ),
    VllmError(
        name="audio-longer-than-model",
        template="Audio duration exceeds max: %f > %f seconds",
        source="model_executor/models/gemma4_mm.py",
        stage="log",
        cause="Gemma 4's placeholder arithmetic counts every sample and caps at 750 tokens, "
        "but transformers' extractor hands the tower only the first 30 s: the rest is "
        "silently unheard.",
        setting="the clip's length",
        command="gemma-explore plan CLIP --family gemma4",
        answer=lambda f, plan: (
            "Split the clip into windows of at most 30 s and send each "
            "(the warning is a log line; the request still runs on the first 30 s)."
        ),
    ),
    VllmError(
        name="processor-cache-item-too-large",
        template=(
            "Skipping multi-modal processor cache insert for an item of %s GiB because it "
            "exceeds --mm-processor-cache-gb=%s. The item will be processed uncached; "
            "increase --mm-processor-cache-gb to cache items of this size."
        ),
        source="multimodal/cache/base.py",
        stage="log",
        cause="One processed item (its tensors, at the model's dtype) is larger than the "
        "whole multimodal processor cache. vLLM 0.32 serves it uncached; before "
        'vllm-project/vllm#53016 the same case raised ValueError("value too large") and, for '
        "the profiling dummy, stopped the engine at start-up (vllm-project/vllm#52835).",
        setting="--mm-processor-cache-gb",
        command="ge.processor_cache(plan_serving(MODEL), mm_processor_cache_gb=GB)",
        answer=lambda f, plan: (
            f"Set --mm-processor-cache-gb above {f['arg1']} (GiB) to cache such items, or "
            "leave it: the item still runs, only its repeats are processed again."
        ),
    ),
    VllmError(
        name="unsupported-language",
        template=("Unsupported language: {language!r}.  Must be one of {supported}."),
        source="model_executor/models/interfaces.py",
        stage="request",
        cause="The transcription endpoint's language is outside Whisper's table of codes.",
        setting="the request's language",
        command="gemma-explore transcribe CLIP --language CODE",
        answer=lambda f, plan: (
            "Send an ISO 639-1 code from the list in the message (e.g. "
            "'en'), or leave language out."
        ),
    ),
    VllmError(
        name="max-tokens-above-context",
        template=(
            "{max_output_tokens_param}={max_output_tokens} cannot be greater than "
            "{max_total_tokens_param}={max_total_tokens}. Please request fewer output tokens."
        ),
        source="renderers/params.py",
        stage="request",
        cause="`vllm serve` refuses a request whose max_tokens (or max_completion_tokens) alone "
        "exceeds max_model_len, before it tokenizes anything. When only max_tokens + prompt "
        "exceeds it, vLLM lowers max_tokens to what is left and answers 200, without a word.",
        setting="the request's max_tokens, --max-model-len",
        command="plan.admit(request, entry_point='serve')",
        answer=lambda f, plan: (
            f"Send max_tokens {_int(f['max_total_tokens'])} or less (minus the prompt's "
            f"tokens), or start with --max-model-len {_int(f['max_output_tokens'])} plus the "
            "prompt's tokens."
        ),
    ),
    VllmError(
        name="request-mm-kwargs-untrusted",
        template=(
            "Per-request mm_processor_kwargs are disabled by default because they can change "
            "multimodal preprocessing resource usage. Start the server with "
            "--trust-request-mm-kwargs only when clients are trusted."
        ),
        source="entrypoints/generate/base/protocol.py",
        stage="request",
        cause="A request sent mm_processor_kwargs (e.g. a per-request max_soft_tokens) to a "
        "server started without --trust-request-mm-kwargs. On Gemma 3n the budget is ignored "
        "even when trusted (its processor takes none).",
        setting="--trust-request-mm-kwargs",
        command="gemma-explore serve-args MODEL --budget B",
        answer=lambda f, plan: (
            "Start vllm serve with --trust-request-mm-kwargs (trusted clients only), or drop "
            "mm_processor_kwargs and set the budget at start-up with --mm-processor-kwargs."
        ),
    ),
    VllmError(
        name="input-above-context",
        template=(
            "Input length ({input_length}) exceeds model's maximum context length "
            "({max_model_len})."
        ),
        source="entrypoints/serve/utils/api_utils.py",
        stage="request",
        cause="`vllm serve` computes the output room from the rendered prompt; a prompt longer "
        "than max_model_len leaves none.",
        setting="--max-model-len",
        command="plan.admit(request, entry_point='serve')",
        answer=lambda f, plan: (
            f"Set --max-model-len {_int(f['input_length']) + 1} or more, or send a shorter prompt."
        ),
    ),
)


def error_named(name: str) -> VllmError:
    """The message with this handle.

    >>> error_named("kv-no-memory").stage
    'start-up'
    """
    for error in VLLM_ERRORS:
        if error.name == name:
            return error
    raise KeyError(f"no vLLM message named {name!r}: one of {[e.name for e in VLLM_ERRORS]}")


@dataclass(frozen=True)
class Explanation:
    """What a pasted vLLM message means, and what to set."""

    error: VllmError  # the message it matched
    fields: dict[str, str]  # the values the message printed, by template field
    answer: str  # the value to set, for this message (and model, when given)
    model: str | None = None  # the model the answer was computed for
    steps: tuple[str, ...] = ()

    def text(self) -> str:
        """The explanation as the CLI prints it."""
        e = self.error
        lines = [
            f"vLLM's {e.stage} message '{e.name}' (vllm/{e.source})",
            f"cause: {e.cause}",
            f"set: {self.answer}",
            f"computes it: {e.command}",
        ]
        return "\n".join(lines)


def explain(text: str, *, plan: Any = None) -> Explanation:
    """Match a pasted vLLM error (or log line) against :data:`VLLM_ERRORS` and say what to
    set; with ``plan`` (a :class:`~gemma_explore.serving.plan.ServingPlan`, e.g.
    ``plan_serving("google/gemma-4-E4B-it")``) the answer also uses the model: which budget
    would hold an item, which fits a batch.

    >>> explain("At most 1 image(s) may be provided in one prompt.").answer.split(",")[0]
    'Start with --limit-mm-per-prompt \\'{"image": N}\\''
    """
    found = [(e, m) for e in VLLM_ERRORS if (m := e.pattern().search(text))]
    if not found:
        raise ValueError(
            "This text matches none of the vLLM messages gemma-explore explains "
            f"({len(VLLM_ERRORS)} of them, listed in docs/vllm_errors.md): paste the whole "
            "error line, from vLLM's log or the HTTP response."
        )
    error, match = max(found, key=lambda pair: pair[0].literal_chars)
    fields = {k: v.strip() for k, v in match.groupdict().items()}
    steps = [f"matched {error.name} ({error.literal_chars} characters of fixed text)"]
    if plan is not None:
        steps.append(f"answered for {plan.model.name}")
    return Explanation(
        error=error,
        fields=fields,
        answer=error.answer(fields, plan),
        model=None if plan is None else plan.model.name,
        steps=tuple(steps),
    )


def errors_page() -> str:
    """``docs/vllm_errors.md``: every message verbatim, its cause, setting and command."""
    out = [
        "# vLLM's errors, explained",
        "",
        "<!-- Rendered from gemma_explore/serving/vllm_errors.py (errors_page); "
        "tests/serving/test_vllm_errors.py keeps it equal. -->",
        "",
        "Each message below is vLLM 0.32's own text, as its source formats it (`{…}` marks "
        "a value vLLM fills in), so a search for the error finds it. Paste one into "
        '`gemma-explore explain "<error>" --model <id>` for the value to set for your '
        "checkpoint. `tests/serving/test_vllm_errors.py` holds every template to the string "
        "literal in vLLM's installed source.",
        "",
    ]
    for e in VLLM_ERRORS:
        out += [
            f"## {e.name}",
            "",
            f"> {e.template}",
            "",
            f"- **where:** `vllm/{e.source}`, at {e.stage}",
            f"- **cause:** {e.cause}",
            f"- **setting:** {e.setting}",
            f"- **computes the value:** `{e.command}`",
            "",
        ]
    return "\n".join(out)
