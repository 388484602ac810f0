"""vLLM's error messages, verbatim for each supported release, with the cause and the value
to set.

vLLM's errors name a flag, not a number: "exceeds the pre-allocated encoder cache size"
does not say which ``--max-num-batched-tokens`` would hold the item. The package computes
those numbers (:func:`~gemma_explore.serving.plan.plan_serving`, ``plan.admit``), so each
message vLLM raises or logs about what this package plans is held twice over:

- **vLLM's words** live in each release's profile (``gemma_explore/vllm_versions``:
  ``message_templates`` and ``message_files``, the first release's in ``messages.py``):
  the text as that release's source formats it, and the file that raises or logs it;
- **what is ours** lives here, once for every release: the **stage** (start-up, request,
  log), the **cause** in a porter's words, the **setting** that changes the outcome, the
  **command** that computes it and the **answer**, the value to set, read from the
  numbers in the message and, given a model, from its serving plan.

:func:`error_named` and :func:`errors_for` build the messages of one release
(``vllm_version=``; by default the installed vLLM's, else the newest supported), and
:data:`VLLM_ERRORS` holds the default release's. ``docs/vllm_errors.md`` is rendered from
every release (:func:`errors_page`), so a search for the error text finds it, and
``gemma-explore explain "<pasted error>"`` matches a pasted copy (:func:`explain`): in the
release asked for, else in whichever supported release has those words, said so.
``tests/serving/test_vllm_errors.py`` holds every template to the string literal in its
release's own source, and the package's own refusals (``serving/kv.py``, ``plan.admit``)
format these same templates.

>>> found = explain("ValueError: max_num_batched_tokens (256) must be greater than or "
...                 "equal to max_num_seqs (1024).")
>>> found.error.name, found.fields["max_num_seqs"]
('batch-below-seqs', '1024')
>>> print(found.answer)
Set --max-num-batched-tokens 1024 or more, or --max-num-seqs 256 or less.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gemma_explore.vllm_versions import PROFILES, SUPPORTED, VllmProfile, profile_of, vllm_profile

__all__ = [
    "GENERAL_HINTS",
    "GeneralHint",
    "general_hint",
    "VLLM_ERRORS",
    "Explanation",
    "VllmError",
    "error_named",
    "errors_for",
    "errors_page",
    "explain",
    "kv_memory_hint",
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
    """One message vLLM raises or logs, as one release's source formats it.

    >>> error_named("too-many-items").format(limit=1, modality="image")
    'At most 1 image(s) may be provided in one prompt.'
    """

    name: str  # a short handle, stable across releases: the page's anchor
    template: str  # vLLM's text, its f-string fields named ({modality}, {max_model_len}, …)
    source: str  # the file of this release that raises or logs it (under vllm/)
    stage: str  # "start-up" (the engine refuses to start), "request" (400) or "log"
    cause: str  # why vLLM says it
    setting: str  # the flag or variable that changes the outcome
    command: str  # what computes the value: the gemma-explore command a user types
    vllm_version: str  # the release whose words these are (a key of vllm_versions.PROFILES)
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
# Each answer reads the numbers the message printed and the release it came from; a plan
# (``plan_serving`` of the model the user named) adds what the message cannot know: the
# budgets that would fit.

_Answer = Callable[[Mapping[str, str], Any, VllmProfile], str]
_PerRelease = str | Callable[[VllmProfile], str]


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


def _encoder_cache(f: Mapping[str, str], plan: Any, p: VllmProfile) -> str:
    n = _int(f["num_embeds"])
    return (
        f"Set --max-num-batched-tokens {n} or more: vLLM sizes the encoder cache as the "
        f"larger of max_num_batched_tokens and the largest item it profiled at start-up "
        f"(now {_int(f['cache'])}){_budgets_holding(plan, f['modality'], n)}."
    )


def _item_above_batch(f: Mapping[str, str], plan: Any, p: VllmProfile) -> str:
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


def _prompt_too_long(f: Mapping[str, str], plan: Any, p: VllmProfile) -> str:
    n = _int(f["prompt_len"])
    return (
        f"Set --max-model-len {n + 1} or more (the prompt is {n} tokens, and vLLM keeps room "
        "for at least one output token), or send fewer or smaller items: "
        "gemma-explore plan prices each one."
    )


def _more_kv_memory(f: Mapping[str, str]) -> str:
    """What gives the KV cache more memory, as the message's own advice has it: the
    ``{hint}`` vLLM filled in where the release has one, else its fixed sentence (raise
    ``gpu_memory_utilization``)."""
    hint = f.get("hint", "")
    graphs = (
        ", or capture fewer or smaller CUDA graphs (cudagraph_capture_sizes in "
        "--compilation-config)"
        if "CUDA graphs take less" in hint
        else ""
    )
    if "already takes all device memory" in hint:
        # The extensible KV cache at its default: the utilization already resolves to 1.0.
        return (
            "--gpu-memory-utilization already resolves to 1.0 (the extensible KV cache), so "
            "lower --max-num-seqs, use --kv-cache-dtype fp8, quantize the weights "
            f"(--quantization fp8), shard with --tensor-parallel-size{graphs}, or use a GPU "
            "with more memory"
        )
    capped = re.search(r"`gpu_memory_utilization`=([\d.]+)", hint)
    if capped:
        return (
            f"drop --gpu-memory-utilization {capped.group(1)} (the extensible KV cache "
            "defaults to 1.0) or raise it, lower --max-num-seqs, use --kv-cache-dtype fp8, "
            f"or shard with --tensor-parallel-size{graphs}"
        )
    return (
        "raise --gpu-memory-utilization (on vLLM's CPU build: VLLM_CPU_KVCACHE_SPACE, in "
        "GiB), use --kv-cache-dtype fp8, or shard with --tensor-parallel-size"
    )


def _kv_no_memory(f: Mapping[str, str], plan: Any, p: VllmProfile) -> str:
    return (
        f"Nothing is left for the KV cache: {_more_kv_memory(f)}, or quantize the weights "
        "(--quantization fp8). `gemma-explore serve-args MODEL --gpu GPU` shows whether it "
        "fits and prints a command that does."
    )


def _kv_too_small(f: Mapping[str, str], plan: Any, p: VllmProfile) -> str:
    # Two fields side by side ({estimated_msg}{hint}): the estimate is in either.
    said = f.get("estimated_msg", "") + f.get("hint", "")
    estimate = re.search(r"estimated maximum model length is (\d+)", said)
    shorter = (
        f"--max-model-len {estimate.group(1)} or less" if estimate else "a shorter --max-model-len"
    )
    return (
        f"Set {shorter}, or give the KV cache {f['needed']} GiB instead of {f['available']}: "
        f"{_more_kv_memory(f)}."
    )


def _split_the_clip(f: Mapping[str, str], plan: Any, p: VllmProfile) -> str:
    return (
        "Split the clip into windows the model hears whole (30 s for Gemma 3n and Gemma 4: "
        "transformers' extractor keeps only the first 30 s of a longer one), or raise "
        f"VLLM_MAX_AUDIO_DECODE_DURATION_S above {f['max_duration_s']} on the server."
    )


def _kv_dtype(f: Mapping[str, str], plan: Any, p: VllmProfile) -> str:
    allowed = f["allowed"].replace("`", "")
    return (
        f"Set --kv-cache-dtype {allowed} (auto follows the model's {f['model_dtype']}), or "
        "leave it out; to halve the KV cache use --kv-cache-dtype fp8 instead."
    )


def _fewer_items(setting: str) -> str:
    return (
        f"start vllm serve with {setting} (0 turns the check off), or send fewer or smaller "
        "images, videos or clips per request; `gemma-explore admit MODEL requests.jsonl` "
        "adds up what each decodes to"
    )


def _media_decode(f: Mapping[str, str], plan: Any, p: VllmProfile) -> str:
    return (
        "An audio clip ran out of the request's room while it decoded: "
        f"{_fewer_items('a higher VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES')}."
    )


def _media_decode_bytes(f: Mapping[str, str], plan: Any, p: VllmProfile) -> str:
    used, limit = _int(f["used"]), _int(f["limit"])
    return (
        f"The request's media had decoded to {used:,} B when one crossed {limit:,} B (later "
        f"items not yet counted): "
        f"{_fewer_items(f'VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES={used} or more')}."
    )


def _media_download(f: Mapping[str, str], plan: Any, p: VllmProfile) -> str:
    mib = math.ceil(_int(f["received"]) / (1 << 20))
    return (
        f"Start vllm serve with VLLM_MAX_MEDIA_REQUEST_DOWNLOAD_SIZE_MB {mib} or more (MiB; "
        "0 turns the check off), or send fewer or smaller media URLs, or the media inline."
    )


def _kv_cause_no_memory(p: VllmProfile) -> str:
    if p.kv_sizing == "extensible":
        return (
            "After the weights and the activation peak, nothing of the device memory is left "
            "for KV blocks: with the extensible KV cache (CUDA, ROCm) --gpu-memory-utilization "
            "already resolves to 1.0, and the fit is checked again after CUDA-graph capture "
            "and warm-up. The CPU backend, --kv-cache-memory-bytes and "
            "num_gpu_blocks_override turn it off: then the memory share decides, as before."
        )
    return (
        "After the weights and the profiled activation peak, nothing of the memory share "
        "(--gpu-memory-utilization) is left for KV blocks."
    )


def _kv_cause_too_small(p: VllmProfile) -> str:
    if p.kv_sizing == "extensible":
        return (
            "One request at max_model_len needs more KV blocks than the cache holds; with the "
            "extensible KV cache this is checked again on the memory measured after CUDA-graph "
            "capture and warm-up, so it can stop the engine late in start-up."
        )
    return "One request at max_model_len needs more KV blocks than the cache holds."


def _kv_setting(p: VllmProfile) -> str:
    if p.kv_sizing == "extensible":
        return (
            "--max-model-len, --max-num-seqs, --kv-cache-dtype (--gpu-memory-utilization only "
            "when it is set below 1.0, or the extensible KV cache is off)"
        )
    return "--max-model-len, --gpu-memory-utilization, --kv-cache-dtype"


def _media_cause(p: VllmProfile) -> str:
    limit, held = p.media_decode_limit_bytes or 0, p.audio_decode_reservation_bytes or 0
    return (
        "A chat request's media, decoded, add up to more than "
        f"VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES ({limit:,} B by default: one image at "
        "VLLM_MAX_IMAGE_PIXELS, 4 B a pixel). vLLM counts each image as W×H×4 B, each "
        "video's decoded frames (frames×H×W×3 B), each audio clip's float32 samples at its "
        f"own rate, mono; while a clip decodes it holds up to VLLM_MAX_AUDIO_DECODE_BYTES "
        f"({held:,} B) of the room, and its decoder counts every channel. Checked while the chat "
        "renderer decodes the media (Chat Completions, Responses, LLM.chat): HTTP 400. "
        "LLM.generate with multi_modal_data and /v1/audio/transcriptions do not count it."
    )


def _audio_decode_cause(p: VllmProfile) -> str:
    return (
        "vLLM's audio decoder refuses files longer than VLLM_MAX_AUDIO_DECODE_DURATION_S "
        f"({p.max_audio_decode_s:g} s by default): the only length limit of its endpoints."
    )


@dataclass(frozen=True)
class _Ours:
    """What is ours about a message, the same for every release that has it (a cause or
    setting may read the release's profile)."""

    stage: str
    cause: _PerRelease
    setting: _PerRelease
    command: str
    answer: _Answer
    pieces: tuple[str, ...] = ()  # message keys of the text vLLM fills into it ({hint})


def _for(value: _PerRelease, p: VllmProfile) -> str:
    return value(p) if callable(value) else value


_SERVE_ARGS = "gemma-explore serve-args MODEL"
_KV_HINTS = ("kv-memory-hint", "kv-memory-hint-capped", "kv-memory-hint-full")

OURS: dict[str, _Ours] = {
    "encoder-cache": _Ours(
        stage="request",
        cause="One item's embeddings are larger than the encoder cache vLLM sized at start-up: "
        "typically a per-request budget (mm_processor_kwargs max_soft_tokens) above the "
        "start-up budget. Despite the message, --limit-mm-per-prompt counts items; it does "
        "not size the cache.",
        setting="--max-num-batched-tokens, or the start-up budget (--mm-processor-kwargs)",
        command="gemma-explore admit MODEL requests.jsonl",
        answer=_encoder_cache,
    ),
    "prompt-too-long": _Ours(
        stage="request",
        cause="Text plus every placeholder of every item is more than max_model_len.",
        setting="--max-model-len",
        command="gemma-explore plan IMAGE|CLIP|VIDEO (each item's tokens), gemma-explore admit MODEL requests.jsonl",
        answer=_prompt_too_long,
    ),
    "prompt-fills-context": _Ours(
        stage="request",
        cause="The prompt is exactly max_model_len: no room is left for one output token.",
        setting="--max-model-len",
        command="gemma-explore admit MODEL requests.jsonl",
        answer=_prompt_too_long,
    ),
    "empty-prompt": _Ours(
        stage="request",
        cause="The request's prompt tokenized to nothing.",
        setting="the request's messages",
        command="ge.layout_prompt(messages, bundle=…) (the prompt, token by token)",
        answer=lambda f, plan, p: (
            "Send some text (a chat message, or a raw prompt with the turn markers)."
        ),
    ),
    "too-many-items": _Ours(
        stage="request",
        cause="More items of one modality than the engine's limit_mm_per_prompt (vLLM "
        "reserves encoder memory for that many at start-up). vLLM adds 'Set "
        "`--limit-mm-per-prompt` to increase this limit.' when the model could take more.",
        setting="--limit-mm-per-prompt",
        command="gemma-explore serve-args MODEL --images N --audios N --videos N",
        answer=lambda f, plan, p: (
            f"Start with --limit-mm-per-prompt '{{\"{f['modality']}\": N}}', "
            f"N the most {f['modality']}s one request sends (now {_int(f['limit'])}); "
            "gemma-explore serve-args MODEL prices what each extra item reserves."
        ),
    ),
    "item-above-batch": _Ours(
        stage="start-up",
        cause="The largest item must fit one batch when vLLM may not split an item across "
        "steps: Gemma 4's bidirectional image attention forces disable_chunked_mm_input on "
        "CUDA (llama.cpp's n_ubatch and ollama's batch size follow the same rule).",
        setting="--max-num-batched-tokens",
        command="gemma-explore serve-args MODEL --budget B",
        answer=_item_above_batch,
    ),
    "kv-no-memory": _Ours(
        stage="start-up",
        cause=_kv_cause_no_memory,
        setting=lambda p: _kv_setting(p) + ", --tensor-parallel-size, --quantization",
        command="gemma-explore serve-args MODEL --gpu-memory-gib G",
        answer=_kv_no_memory,
        pieces=_KV_HINTS,
    ),
    "kv-too-small": _Ours(
        stage="start-up",
        cause=_kv_cause_too_small,
        setting=_kv_setting,
        command="gemma-explore serve-args MODEL --max-model-len N --gpu GPU",
        answer=_kv_too_small,
        pieces=_KV_HINTS,
    ),
    "kv-dtype-mismatch": _Ours(
        stage="start-up",
        cause="vLLM refuses an explicit float16 or bfloat16 KV cache dtype that differs from "
        "the model's dtype (the released Gemma checkpoints are bfloat16); auto and the fp8 "
        "dtypes pass.",
        setting="--kv-cache-dtype",
        command=_SERVE_ARGS,
        answer=_kv_dtype,
    ),
    "max-model-len-above-model": _Ours(
        stage="start-up",
        cause="The asked length is beyond the model's positions (text_config's "
        "max_position_embeddings).",
        setting="--max-model-len",
        command=_SERVE_ARGS,
        answer=lambda f, plan, p: (
            f"Set --max-model-len {_int(f['derived_max_model_len'])} or "
            "less (VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 overrides the check, at the cost of positions "
            "the model never learned)."
        ),
    ),
    "batch-below-max-model-len": _Ours(
        stage="start-up",
        cause="With chunked prefill off, a whole prompt must fit one batch.",
        setting="--enable-chunked-prefill, --max-num-batched-tokens, --max-model-len",
        command=_SERVE_ARGS,
        answer=lambda f, plan, p: (
            "Leave chunked prefill on (drop --no-enable-chunked-prefill), or "
            f"set --max-num-batched-tokens {_int(f['max_model_len'])}, or --max-model-len "
            f"{_int(f['max_num_batched_tokens'])}."
        ),
    ),
    "batch-below-seqs": _Ours(
        stage="start-up",
        cause="Each running sequence needs at least one token of the batch.",
        setting="--max-num-batched-tokens, --max-num-seqs",
        command=_SERVE_ARGS,
        answer=lambda f, plan, p: (
            f"Set --max-num-batched-tokens {_int(f['max_num_seqs'])} or "
            f"more, or --max-num-seqs {_int(f['max_num_batched_tokens'])} or less."
        ),
    ),
    "context-tokens": _Ours(
        stage="request",
        cause="`vllm serve`'s HTTP layer counts the rendered prompt before the engine sees it.",
        setting="--max-model-len",
        command="gemma-explore plan …, gemma-explore admit MODEL requests.jsonl",
        answer=lambda f, plan, p: (
            f"Set --max-model-len {_int(f['token_count']) + 1} or more, or send a shorter prompt."
        ),
    ),
    "context-characters": _Ours(
        stage="request",
        cause="Before tokenizing, the HTTP layer refuses text longer than the tokens allowed "
        "times the tokenizer's most characters per token.",
        setting="--max-model-len",
        command="ge.layout_prompt(messages, bundle=…) (the prompt, token by token)",
        answer=lambda f, plan, p: (
            "Send a shorter text, or raise --max-model-len above "
            f"{_int(f['max_input_tokens'])} input tokens."
        ),
    ),
    "media-decode-budget": _Ours(
        stage="request",
        cause=lambda p: (
            "An audio clip found no room left to decode in, or its decoder (every channel) "
            "overran the room the request's earlier media left it (the same words come from "
            "multimodal/media/audio.py). " + _media_cause(p)
        ),
        setting="VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES (on the server)",
        command="gemma-explore admit MODEL requests.jsonl",
        answer=_media_decode,
    ),
    "media-decode-budget-bytes": _Ours(
        stage="request",
        cause=_media_cause,
        setting="VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES (on the server)",
        command="gemma-explore admit MODEL requests.jsonl",
        answer=_media_decode_bytes,
    ),
    "media-download-budget": _Ours(
        stage="request",
        cause="The media URLs of one request downloaded more than "
        "VLLM_MAX_MEDIA_REQUEST_DOWNLOAD_SIZE_MB (MiB), retried attempts included.",
        setting="VLLM_MAX_MEDIA_REQUEST_DOWNLOAD_SIZE_MB (on the server)",
        command="the size of the request's media files",
        answer=_media_download,
    ),
    "audio-decode-too-long-metadata": _Ours(
        stage="request",
        cause=_audio_decode_cause,
        setting="VLLM_MAX_AUDIO_DECODE_DURATION_S",
        command="gemma-explore plan CLIP",
        answer=_split_the_clip,
    ),
    "audio-decode-too-long-samples": _Ours(
        stage="request",
        cause="The same decode limit, found while decoding (no duration in the metadata).",
        setting="VLLM_MAX_AUDIO_DECODE_DURATION_S",
        command="gemma-explore plan CLIP",
        answer=_split_the_clip,
    ),
    "audio-decode-too-long-file": _Ours(
        stage="request",
        cause="The same decode limit, read from a WAV or FLAC file's header.",
        setting="VLLM_MAX_AUDIO_DECODE_DURATION_S",
        command="gemma-explore plan CLIP",
        answer=_split_the_clip,
    ),
    "audio-no-target-rate": _Ours(
        stage="request",
        cause="The checkpoint's processor declares no audio sampling rate: it has no audio "
        "tower (Gemma 4 26B and 31B), so a clip sent with its rate cannot be resampled. "
        "This comes before the 'does not have an audio tower' check.",
        setting="the checkpoint (one with an audio_config)",
        command=_SERVE_ARGS,
        answer=lambda f, plan, p: (
            "Serve a checkpoint with an audio tower (Gemma 3n, Gemma 4 "
            "E2B/E4B, Unified), or send no audio to this one."
        ),
    ),
    "no-audio-tower": _Ours(
        stage="request",
        cause="A Gemma 4 checkpoint without an audio_config (26B, 31B) got a clip.",
        setting="the checkpoint",
        command=_SERVE_ARGS,
        answer=lambda f, plan, p: (
            f"The model '{f['model']}' hears nothing: serve Gemma 4 E2B/E4B, Gemma 3n or "
            "Unified for audio."
        ),
    ),
    "audio-longer-than-model": _Ours(
        stage="log",
        cause="Gemma 4's placeholder arithmetic counts every sample and caps at 750 tokens, "
        "but transformers' extractor hands the tower only the first 30 s: the rest is "
        "silently unheard.",
        setting="the clip's length",
        command="gemma-explore plan CLIP --family gemma4",
        answer=lambda f, plan, p: (
            "Split the clip into windows of at most 30 s and send each "
            "(the warning is a log line; the request still runs on the first 30 s)."
        ),
    ),
    "processor-cache-item-too-large": _Ours(
        stage="log",
        cause="One processed item (its tensors, at the model's dtype) is larger than the "
        "whole multimodal processor cache. vLLM serves it uncached; before "
        'vllm-project/vllm#53016 the same case raised ValueError("value too large") and, for '
        "the profiling dummy, stopped the engine at start-up (vllm-project/vllm#52835).",
        setting="--mm-processor-cache-gb",
        command="gemma-explore processor-cache MODEL",
        answer=lambda f, plan, p: (
            f"Set --mm-processor-cache-gb above {f['arg1']} (GiB) to cache such items, or "
            "leave it: the item still runs, only its repeats are processed again."
        ),
    ),
    "unsupported-language": _Ours(
        stage="request",
        cause="The transcription endpoint's language is outside Whisper's table of codes.",
        setting="the request's language",
        command="gemma-explore transcribe CLIP --language CODE",
        answer=lambda f, plan, p: (
            "Send an ISO 639-1 code from the list in the message (e.g. "
            "'en'), or leave language out."
        ),
    ),
    "max-tokens-above-context": _Ours(
        stage="request",
        cause="`vllm serve` refuses a request whose max_tokens (or max_completion_tokens) alone "
        "exceeds max_model_len, before it tokenizes anything. When only max_tokens + prompt "
        "exceeds it, vLLM lowers max_tokens to what is left and answers 200, without a word.",
        setting="the request's max_tokens, --max-model-len",
        command="gemma-explore admit MODEL requests.jsonl",
        answer=lambda f, plan, p: (
            f"Send max_tokens {_int(f['max_total_tokens'])} or less (minus the prompt's "
            f"tokens), or start with --max-model-len {_int(f['max_output_tokens'])} plus the "
            "prompt's tokens."
        ),
    ),
    "request-mm-kwargs-untrusted": _Ours(
        stage="request",
        cause="A request sent mm_processor_kwargs (e.g. a per-request max_soft_tokens) to a "
        "server started without --trust-request-mm-kwargs. On Gemma 3n the budget is ignored "
        "even when trusted (its processor takes none).",
        setting="--trust-request-mm-kwargs",
        command="gemma-explore serve-args MODEL --budget B",
        answer=lambda f, plan, p: (
            "Start vllm serve with --trust-request-mm-kwargs (trusted clients only), or drop "
            "mm_processor_kwargs and set the budget at start-up with --mm-processor-kwargs."
        ),
    ),
    "input-above-context": _Ours(
        stage="request",
        cause="`vllm serve` computes the output room from the rendered prompt; a prompt longer "
        "than max_model_len leaves none.",
        setting="--max-model-len",
        command="gemma-explore admit MODEL requests.jsonl",
        answer=lambda f, plan, p: (
            f"Set --max-model-len {_int(f['input_length']) + 1} or more, or send a shorter prompt."
        ),
    ),
}


# ------------------------------------------------------------------ one release's messages


@functools.cache
def _errors(version: str) -> tuple[VllmError, ...]:
    """The messages of one supported release (a key of PROFILES), built once."""
    p = PROFILES[version]
    texts, files = p.message_templates, p.message_files
    return tuple(
        VllmError(
            name=name,
            template=texts[name],
            source=files[name],
            stage=ours.stage,
            cause=_for(ours.cause, p),
            setting=_for(ours.setting, p),
            command=ours.command,
            vllm_version=p.version,
            answer=functools.partial(ours.answer, p=p),
        )
        for name, ours in OURS.items()
        if name in texts
    )


def errors_for(*, vllm_version: str | None = None) -> tuple[VllmError, ...]:
    """Every message one release has, in its words and files (None: the installed vLLM's
    release, else the newest supported).

    >>> from gemma_explore.vllm_versions import SUPPORTED
    >>> [e.source for e in errors_for(vllm_version=SUPPORTED[-1]) if e.name == "kv-too-small"]
    ['v1/core/kv_cache_planning.py']
    """
    return _errors(vllm_profile(vllm_version).version)


# The installed vLLM's messages (without vLLM: the newest supported release's).
VLLM_ERRORS: tuple[VllmError, ...] = errors_for()


def error_named(name: str, *, vllm_version: str | None = None) -> VllmError:
    """The message with this handle, in one release's words (None: the installed vLLM's,
    else the newest). A message that release does not have is a ValueError naming the
    releases that have it.

    >>> error_named("kv-no-memory").stage
    'start-up'
    >>> from gemma_explore.vllm_versions import SUPPORTED
    >>> try:
    ...     error_named("kv-dtype-mismatch", vllm_version=SUPPORTED[0])
    ... except ValueError as exc:
    ...     print(str(exc).split(":")[0].endswith("has no message 'kv-dtype-mismatch'"))
    True
    """
    if name not in OURS:
        raise KeyError(f"no vLLM message named {name!r}: one of {list(OURS)}")
    p = vllm_profile(vllm_version)
    for error in _errors(p.version):
        if error.name == name:
            return error
    having = [v for v in SUPPORTED if any(e.name == name for e in _errors(v))]
    raise ValueError(
        f"{p.label} has no message {name!r}: vLLM {_versions(having)} "
        f"{'has' if len(having) == 1 else 'have'} it (vllm_version= in Python, --vllm on the "
        "command line)."
    )


def _versions(versions: list[str] | tuple[str, ...]) -> str:
    """The releases joined for a sentence: "A, B and C" (their keys, never written here)."""
    versions = list(versions)
    if len(versions) <= 1:
        return "".join(versions)
    return f"{', '.join(versions[:-1])} and {versions[-1]}"


def kv_memory_hint(
    *,
    vllm_version: str | None = None,
    extensible: bool | None = None,
    utilization: float | None = None,
    after_warmup: bool = False,
) -> str:
    """The ``{hint}`` a release fills into its two KV refusals (``kv-no-memory``,
    ``kv-too-small``), as vLLM's ``_more_kv_cache_memory_hint`` builds it; "" for a
    release whose messages carry a fixed sentence instead.

    ``extensible`` (None: the release's default on CUDA) is the extensible KV cache, off on
    the CPU backend and with ``--kv-cache-memory-bytes``; ``utilization`` the resolved
    ``gpu_memory_utilization`` (None: 1.0, the extensible default); ``after_warmup`` the
    refusal after CUDA-graph capture and warm-up.

    >>> from gemma_explore.vllm_versions import SUPPORTED
    >>> kv_memory_hint(vllm_version=SUPPORTED[0])
    ''
    >>> kv_memory_hint(vllm_version=SUPPORTED[-1], extensible=False).startswith("Try increasing")
    True
    """
    p = vllm_profile(vllm_version)
    texts = p.message_templates
    if "{hint}" not in texts.get("kv-too-small", ""):
        return ""
    if extensible is None:
        extensible = p.kv_sizing == "extensible"
    if not extensible:
        return texts["kv-memory-hint"]
    used_by = texts["kv-memory-hint-used-by-warmup" if after_warmup else "kv-memory-hint-used-by"]
    graphs = texts["kv-memory-hint-graphs"] if after_warmup else ""
    value = 1.0 if utilization is None else utilization
    key = "kv-memory-hint-capped" if value < 1.0 else "kv-memory-hint-full"
    return texts[key].format(used_by=used_by, utilization=value, graphs_hint=graphs)


# ------------------------------------------------------------------------------ explain


@dataclass(frozen=True)
class Explanation:
    """What a pasted vLLM message means, and what to set."""

    error: VllmError  # the message it matched, in the words of the release that has them
    fields: dict[str, str]  # the values the message printed, by template field
    answer: str  # the value to set, for this message (and model, when given)
    model: str | None = None  # the model the answer was computed for
    steps: tuple[str, ...] = ()
    vllm_version: str = ""  # the release whose words matched (error.vllm_version)
    releases: tuple[str, ...] = ()  # every supported release whose words match the text
    asked: str = ""  # the release explain was asked for (vllm_version=, the plan's, installed)

    def text(self) -> str:
        """The explanation as the CLI prints it."""
        e = self.error
        label = PROFILES[e.vllm_version].label
        lines = [f"{label}'s {e.stage} message '{e.name}' (vllm/{e.source})"]
        if self.asked and self.asked not in self.releases:
            lines.append(
                f"not in {PROFILES[self.asked].label}'s words: these are the words of vLLM "
                f"{_versions(self.releases)}"
            )
        lines += [
            f"cause: {e.cause}",
            f"set: {self.answer}",
            f"computes it: {e.command}",
        ]
        return "\n".join(lines)


@dataclass(frozen=True)
class GeneralHint:
    """A hint for an error that is no vLLM message of any release (CUDA's, PyTorch's), so
    it belongs to no release's profile: what it means for a vLLM server, and what to try."""

    name: str
    pattern: re.Pattern[str]
    cause: str
    answer: str

    def text(self) -> str:
        """The hint as the CLI prints it."""
        return "\n".join(
            [
                f"not a vLLM message: '{self.name}' (a general hint, the same in every release)",
                f"cause: {self.cause}",
                f"set: {self.answer}",
            ]
        )


GENERAL_HINTS: tuple[GeneralHint, ...] = (
    GeneralHint(
        "cuda-out-of-memory",
        re.compile(r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory", re.I),
        cause=(
            "CUDA could not allocate GPU memory (PyTorch's out-of-memory error): at start-up "
            "the weights, the profiling run or the KV pool did not fit; while serving, a "
            "batch's activations outgrew the room left beside the KV pool, or another process "
            "holds part of the GPU (nvidia-smi lists them)."
        ),
        answer=(
            "at start-up, run `gemma-explore serve-args MODEL --gpu GPU`: it says whether the "
            "model fits and prints a command that does (--tensor-parallel-size, "
            "--kv-cache-dtype fp8, a shorter --max-model-len) or the smallest GPU that would; "
            "while serving, leave more room outside the pool with a lower "
            "--gpu-memory-utilization or a smaller --max-num-batched-tokens, and stop other "
            "processes on the GPU"
        ),
    ),
)


def general_hint(text: str) -> GeneralHint | None:
    """The general hint for a pasted error no vLLM message matches, or None.

    >>> general_hint("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB").name
    'cuda-out-of-memory'
    """
    return next((h for h in GENERAL_HINTS if h.pattern.search(text)), None)


def _best(text: str, errors: tuple[VllmError, ...]) -> tuple[VllmError, re.Match[str]] | None:
    """The message with the most fixed text that matches, or None."""
    found = [(e, m) for e in errors if (m := e.pattern().search(text))]
    return max(found, key=lambda pair: pair[0].literal_chars) if found else None


def explain(text: str, *, plan: Any = None, vllm_version: str | None = None) -> Explanation:
    """Match a pasted vLLM error (or log line) against one release's messages and say what
    to set; with ``plan`` (a :class:`~gemma_explore.serving.plan.ServingPlan`, e.g.
    ``plan_serving("google/gemma-4-E4B-it")``) the answer also uses the model: which budget
    would hold an item, which fits a batch.

    The release is ``vllm_version``, else the plan's, else the installed vLLM's (else the
    newest). Text in none of its messages is tried against the other supported releases:
    an older or newer vLLM's message still gets its answer, and the explanation names the
    release whose words matched (``vllm_version``, ``releases``).

    >>> explain("At most 1 image(s) may be provided in one prompt.").answer.split(",")[0]
    'Start with --limit-mm-per-prompt \\'{"image": N}\\''
    """
    asked = profile_of(plan, vllm_version).version
    hit = _best(text, _errors(asked))
    if hit is None:
        others = [(v, h) for v in SUPPORTED if v != asked and (h := _best(text, _errors(v)))]
        if others:
            most = max(h[0].literal_chars for _, h in others)
            # The nearest release to the one asked for answers (a newer one on a tie).
            order = {
                v: (abs(SUPPORTED.index(v) - SUPPORTED.index(asked)), -i)
                for i, v in enumerate(SUPPORTED)
            }
            _, hit = min(
                ((v, h) for v, h in others if h[0].literal_chars == most),
                key=lambda vh: order[vh[0]],
            )
    if hit is None:
        count = len({e.name for v in SUPPORTED for e in _errors(v)})
        raise ValueError(
            "This text matches none of the vLLM messages gemma-explore explains "
            f"({count} of them, in vLLM {_versions(SUPPORTED)}, listed in docs/vllm_errors.md): "
            "paste the whole error line, from vLLM's log or the HTTP response."
        )
    error, match = hit
    releases = tuple(
        v
        for v in SUPPORTED
        if any(e.name == error.name and e.pattern().search(text) for e in _errors(v))
    )
    fields = {k: v.strip() for k, v in match.groupdict().items()}
    label = PROFILES[error.vllm_version].label
    steps = [
        f"matched {error.name} in {label}'s words ({error.literal_chars} characters of fixed text)"
    ]
    if error.vllm_version != asked:
        steps.append(
            f"{PROFILES[asked].label}'s messages hold none of this text: it is vLLM "
            f"{_versions(releases)}'s; the answer follows {label}"
        )
    if plan is not None:
        steps.append(f"answered for {plan.model.name}")
    return Explanation(
        error=error,
        fields=fields,
        answer=error.answer(fields, plan),
        model=None if plan is None else plan.model.name,
        steps=tuple(steps),
        vllm_version=error.vllm_version,
        releases=releases,
        asked=asked,
    )


# ------------------------------------------------------------------------------- the page


def _grouped(values: Mapping[str, str]) -> list[tuple[str, list[str]]]:
    """(value, the releases that have it), in release order."""
    out: dict[str, list[str]] = {}
    for version, value in values.items():
        out.setdefault(value, []).append(version)
    return list(out.items())


def _release_list(versions: list[str]) -> str:
    return f"vLLM {', '.join(versions)}"


def errors_page() -> str:
    """``docs/vllm_errors.md``: every message verbatim in each supported release's words
    (each text with the releases that have it, where they differ), its file per release,
    its cause, setting and command."""
    out = [
        "# vLLM's errors, explained",
        "",
        "<!-- Rendered from gemma_explore/serving/vllm_errors.py (errors_page); "
        "tests/serving/test_vllm_errors.py keeps it equal. -->",
        "",
        "Each message below is vLLM's own text, as its source formats it (`{…}` marks a value "
        f"vLLM fills in), for every release this package supports ({_release_list(list(SUPPORTED))}); "
        "where the words or the file differ between releases, each is given with the releases "
        "that have it. So a search for the error finds it. Paste one into "
        '`gemma-explore explain "<error>" --model <id> --vllm <release>` for the value to set '
        "for your checkpoint (a message in another release's words is still found, and said "
        "so). `tests/serving/test_vllm_errors.py` holds every text to the string literal in "
        "its release's source.",
        "",
    ]
    for name, ours in OURS.items():
        per = {v: e for v in SUPPORTED for e in _errors(v) if e.name == name}
        if not per:
            continue
        have = list(per)
        out += [f"## {name}", ""]
        if len(have) < len(SUPPORTED):
            missing = [v for v in SUPPORTED if v not in have]
            out += [f"In {_release_list(have)} (not in {_release_list(missing)}).", ""]
        texts = _grouped({v: e.template for v, e in per.items()})
        for text, versions in texts:
            if len(texts) > 1:
                out += [f"{_release_list(versions)}:", ""]
            out += [f"> {text}", ""]
        out += _pieces_section(ours.pieces, have)
        files = _grouped({v: e.source for v, e in per.items()})
        where = ", ".join(
            f"`vllm/{file}`" + (f" ({_release_list(vs)})" if len(files) > 1 else "")
            for file, vs in files
        )
        out.append(f"- **where:** {where}, at {ours.stage}")
        for label, key in (("cause", "cause"), ("setting", "setting")):
            values = _grouped({v: getattr(e, key) for v, e in per.items()})
            for value, vs in values:
                tag = f" ({_release_list(vs)})" if len(values) > 1 else ""
                out.append(f"- **{label}{tag}:** {value}")
        out += [f"- **computes the value:** `{ours.command}`", ""]
    return "\n".join(out)


def _pieces_section(pieces: tuple[str, ...], have: list[str]) -> list[str]:
    """The texts vLLM fills into a message's ``{hint}``, per release that has them."""
    out: list[str] = []
    per = {
        v: [PROFILES[v].message_templates[k] for k in pieces if k in PROFILES[v].message_templates]
        for v in have
    }
    for texts, versions in _grouped({v: "\n".join(t) for v, t in per.items() if t}):
        out += [f"`{{hint}}` in {_release_list(versions)} is one of:", ""]
        out += [f"> {t}\n" for t in texts.split("\n")]
    return out
