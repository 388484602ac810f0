"""vLLM's admission of one request, re-derived: does vLLM accept it, and why not.

vLLM checks a request when it arrives (``v1/engine/input_processor.py`` and the
multimodal processor), before the scheduler sees it: the per-request budget, the item
counts against ``--limit-mm-per-prompt``, the prompt against ``max_model_len``, and each
item against the encoder cache. A chat request to ``vllm serve`` meets the HTTP layer
first, and, in a release with a per-request decoded-media limit
(``VllmProfile.media_decode_limit_bytes``: ``VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES``), the
media decoder's count of every image, frame and audio sample. :func:`admit` runs the same
checks, in vLLM's order, for one release (``vllm_version=``; by default the plan's), and
quotes vLLM's own message for the first one that fails.

>>> import gemma_explore as ge
>>> plan = ge.plan_serving("tiny-gemma4", max_model_len=4096)
>>> plan.admit(images=[(768, 1024)], text_tokens=20).accepted
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gemma_explore.facts.families import get_family
from gemma_explore.plans.rules import Rule
from gemma_explore.plans.vllm import (
    VIDEO_FRAME_EXTRA_TOKENS,
    vllm_audio_tokens,
    vllm_image_tokens,
)
from gemma_explore.serving.vllm_errors import error_named
from gemma_explore.sizes import size_label
from gemma_explore.tables import Table
from gemma_explore.vllm_versions import CPU_BUILD, VllmProfile, profile_of

__all__ = ["AdmissionTable", "AdmitResult", "Request", "admit", "admit_jsonl_text", "admit_many"]

# Words admission quotes that are not vLLM's (vLLM's own, the HTTP layer's included, are in
# serving/vllm_errors.py: max-tokens-above-context, request-mm-kwargs-untrusted,
# input-above-context, media-decode-budget, …):
HTTP_MESSAGES = {
    # transformers' text, logged, not raised: transformers/processing_utils.py:1685 (the
    # Gemma 3n processor takes no max_soft_tokens, and vLLM passes **kwargs through:
    # multimodal/processing/context.py, call_hf_processor).
    "kwarg-ignored": (
        "Keyword argument `{key}` is not a valid argument for this processor and will be ignored."
    ),
}


@dataclass(frozen=True)
class Request:
    """One request as admission sees it. ``images`` are (height, width) sizes, ``audio_seconds``
    clip lengths, ``videos`` (frames, height, width) per video: the frames vLLM samples
    and keeps, at the video's own size (Gemma 4: each frame at the video budget, 70);
    ``text_tokens`` are the prompt's other tokens (chat template, text, BOS);
    ``max_soft_tokens`` is this request's ``mm_processor_kwargs`` image budget (vLLM
    takes it per request: every image of the request gets it); ``max_tokens`` the output it
    asks for (None: vLLM's default, the rest of ``max_model_len``). Items are counted as
    separated by text: two Gemma 3n items side by side share one merged ``"\\n\\n\\n\\n"``
    token, one fewer than counted here. ``audio_sample_rate`` and ``audio_channels`` are
    the clips' as sent (None: the model's rate, 16 kHz): a chat request's audio is decoded
    at the file's own rate, every channel, before it is mixed and resampled, and that is
    what vLLM's decoded-media limit counts.

    >>> Request(images=((768, 1024),), max_tokens=256).max_tokens
    256
    """

    images: tuple[tuple[int, int], ...] = ()
    audio_seconds: tuple[float, ...] = ()
    text_tokens: int = 32
    max_soft_tokens: int | None = None
    videos: tuple[tuple[int, int, int], ...] = ()
    max_tokens: int | None = None
    audio_sample_rate: int | None = None
    audio_channels: int = 1


@dataclass(frozen=True)
class AdmitResult:
    """vLLM's verdict on one request.

    ``verdict`` is one of "accepted", "refused" (the message is vLLM's, HTTP 400 from
    ``vllm serve``), "never scheduled" (accepted, but the KV pool cannot hold it) and
    "engine refuses to start" (the pool does not hold one ``max_model_len`` request, so
    vLLM stops at start-up: no request is ever admitted). ``vllm_version`` is the release
    whose checks ran."""

    accepted: bool
    message: str | None  # vLLM's exact error when refused
    reason: (
        str | None
    )  # "limit_mm_per_prompt", "max_model_len", "encoder_cache_size", "budget", "audio",
    #   "max_tokens", "mm_processor_kwargs", "media_decode", "kv_cache" (start-up)
    prompt_tokens: int  # text + every item's placeholders and markers
    item_tokens: tuple[tuple[str, int], ...]  # (modality, embeddings) per item, in order
    encoder_cache_size: int
    max_model_len: int
    steps: tuple[str, ...] = field(default=(), compare=False)
    warnings: tuple[str, ...] = ()  # what vLLM changes or drops without a word
    entry_point: str = "LLM"  # "LLM" (the engine's checks) or "serve" (the HTTP layer first)
    status: int | None = None  # HTTP status a `vllm serve` client gets (200 or 400)
    max_tokens: int | None = None  # the output vLLM will allow (after its clamp)
    blocks_needed: int | None = None  # KV blocks the request takes (prompt + output)
    blocks_in_pool: int | None = None  # usable KV blocks (the pool less the null block)
    schedulable: bool | None = None  # None: no KV memory given, not checked
    fix: str | None = None  # the setting that lets a never-scheduled request run
    vllm_version: str = ""  # the release whose checks ran (a key of vllm_versions.PROFILES)
    decoded_media_bytes: int | None = None  # what vLLM's decoded-media limit counted (None: none)

    @property
    def verdict(self) -> str:
        if self.reason == "kv_cache":
            return "engine refuses to start"
        if not self.accepted:
            return "refused"
        return "never scheduled" if self.schedulable is False else "accepted"


_Refusal = tuple[str, str] | None  # (vLLM's message, reason) or None: the check passes


def _budget_check(req: Request, plan: Any, spec: Any) -> Rule[tuple[int | None, _Refusal]]:
    """(the images' budget, a refusal): a per-request ``max_soft_tokens`` must be one the
    processor knows; a family without budgets takes none (our error, before vLLM)."""
    if req.images and spec.image.budgets:
        budget = req.max_soft_tokens or plan.max_soft_tokens or plan.model.default_budget
        if req.max_soft_tokens is not None and req.max_soft_tokens not in spec.image.budgets:
            msg = (
                f"Unsupported max_soft_tokens value: {req.max_soft_tokens}. Valid values are "
                f"{tuple(spec.image.budgets)}."
            )
            return Rule((budget, (msg, "budget")), "")
        return Rule((budget, None), "")
    if req.max_soft_tokens is not None and not spec.image.budgets:
        # A family with no budget (Gemma 3n): vLLM passes mm_processor_kwargs to its
        # processor (multimodal/processing/context.py, call_hf_processor); transformers logs
        # and drops it.
        why = HTTP_MESSAGES["kwarg-ignored"].format(key="max_soft_tokens")
        fixed = spec.image.fixed_soft_tokens
        return Rule((None, None), f"ignored: {why} ({spec.display_name} images are always {fixed})")
    return Rule((None, None), "")


def _count_check(req: Request, plan: Any, spec: Any, v: str) -> tuple[_Refusal, list[str]]:
    """Items per modality against ``limit_mm_per_prompt`` (audio on a checkpoint with no
    audio tower fails earlier, while vLLM parses the clip)."""
    steps = []
    counts = (("image", len(req.images)), ("audio", len(req.audio_seconds)))
    for modality, n in (*counts, ("video", len(req.videos))):
        if not n:
            continue
        if modality == "audio" and "audio" not in plan.model.modalities and spec.image.budgets:
            # Gemma 4's processing info builds its audio parser with no sampling rate when
            # there is no audio tower, so a clip that comes with its rate (as every served
            # request's does) fails while it is parsed, before the count check.
            steps.append(
                "audio on a Gemma 4 checkpoint without an audio tower: vLLM's parser has no "
                "target rate and cannot resample the clip (a bare array with no rate gets "
                "'… does not have an audio tower' instead)"
            )
            msg = error_named("audio-no-target-rate", vllm_version=v).template
            return (msg, "audio"), steps
        limit = plan.limits.get(modality, 0)
        if n > limit:
            msg = error_named("too-many-items", vllm_version=v).format(
                limit=limit, modality=modality
            )
            return (msg, "limit_mm_per_prompt"), steps
        steps.append(f"{n} {modality}(s) ≤ limit_mm_per_prompt {limit}")
    return None, steps


def _item_tokens(
    req: Request, plan: Any, spec: Any, budget: int | None
) -> tuple[list[tuple[str, int]], int, list[str]]:
    """(modality, embeddings) per item as vLLM counts them, the prompt length, and why."""
    per: list[tuple[str, int]] = []
    steps = []
    prompt = req.text_tokens
    for h, w in req.images:
        if spec.image.fixed_soft_tokens is not None:
            n = plan.model.image_seq_length
            steps.append(f"image {size_label((h, w))}: {n} (fixed)")
        else:
            n = vllm_image_tokens(h, w, max_soft_tokens=budget, family=spec)
            steps.append(f"image {size_label((h, w))} at budget {budget}: {n} embeddings")
        per.append(("image", n))
        prompt += n + spec.markers_per_item
    for s in req.audio_seconds:
        n = vllm_audio_tokens(int(round(s * spec.audio.sampling_rate)), family=spec)
        steps.append(f"audio {s:g} s: {n} embeddings")
        per.append(("audio", n))
        prompt += n + spec.markers_per_item
    for frames, h, w in req.videos:
        # Gemma 4: every frame given is encoded at the video budget (vLLM samples no array),
        # with BOI, EOI and an "mm:ss" timestamp around each (VIDEO_FRAME_EXTRA_TOKENS).
        each = vllm_image_tokens(h, w, max_soft_tokens=spec.image.video_budget, family=spec)
        per.append(("video", frames * each))
        prompt += frames * (each + VIDEO_FRAME_EXTRA_TOKENS)
        steps.append(
            f"video {frames} frames of {size_label((h, w))}: {frames} × {each} = "
            f"{frames * each} embeddings, {frames * (each + VIDEO_FRAME_EXTRA_TOKENS)} prompt "
            "tokens (timestamps estimated at 6 tokens a frame)"
        )
    steps.append(
        f"prompt: {req.text_tokens} text + items with {spec.markers_per_item} markers "
        f"each = {prompt} tokens (max_model_len {plan.max_model_len})"
    )
    return per, prompt, steps


def _length_check(prompt: int, mml: int, v: str) -> _Refusal:
    """The prompt must leave room for one output token (``_validate_model_input``)."""
    if prompt == 0:
        return error_named("empty-prompt", vllm_version=v).format(
            prompt_type="decoder"
        ), "max_model_len"
    if prompt > mml:
        return (
            error_named("prompt-too-long", vllm_version=v).format(
                prompt_type="decoder",
                prompt_len=prompt,
                max_model_len=mml,
                suggestion="Make sure that `max_model_len` is no smaller than the number of "
                "text tokens plus multimodal tokens. For image inputs, the number of image "
                "tokens depends on the number of images, and possibly their aspect ratios as "
                "well.",
            ),
            "max_model_len",
        )
    if prompt == mml:
        return (
            error_named("prompt-fills-context", vllm_version=v).format(
                prompt_type="decoder",
                prompt_len=prompt,
                max_model_len=mml,
                suggestion="Make sure that `max_model_len` is no smaller than the number of "
                "text tokens (prompt + requested output tokens).",
            ),
            "max_model_len",
        )
    return None


def _cache_check(per: list[tuple[str, int]], cache: int, v: str) -> _Refusal:
    """Each item's embeddings must fit the encoder cache."""
    for modality, n in per:
        if n > cache:
            return (
                error_named("encoder-cache", vllm_version=v).format(
                    prompt_type="decoder", modality=modality, num_embeds=n, cache=cache
                ),
                "encoder_cache_size",
            )
    return None


def _request(request: Request | None, items: dict[str, Any]) -> Request:
    """The request, or one built from ``admit``'s keyword items (lists become tuples)."""
    if request is not None:
        return request
    seqs = ("images", "audio_seconds", "videos")
    return Request(
        **{
            k: tuple(tuple(v) if k != "audio_seconds" else v for v in val) if k in seqs else val
            for k, val in items.items()
        }
    )


def _silent_drops(
    req: Request, plan: Any, spec: Any, per: list[tuple[str, int]], p: VllmProfile
) -> list[str]:
    """What vLLM accepts but does not use, without a word: audio past what the extractor
    keeps (30 s), Unified's embedder rows beyond vLLM's placeholders, and a Gemma 3n budget."""
    out = []
    if req.max_soft_tokens is not None and req.images and not spec.image.budgets:
        out.append(
            f"max_soft_tokens={req.max_soft_tokens} is ignored: Gemma 3n's processor takes no "
            "budget (transformers logs only 'Keyword argument `max_soft_tokens` is not a "
            "valid argument for this processor and will be ignored.'); each image is 256."
        )
    audio = [n for m, n in per if m == "audio"]
    for s, n in zip(req.audio_seconds, audio, strict=False):
        cap = spec.audio.max_seconds
        if cap is not None and s > cap:
            out.append(
                f"audio {s:g} s: the model hears only the first {cap:g} s ({n} embeddings); "
                f"the last {s - cap:g} s are dropped without a word. Split the clip into "
                "windows with ge.plan_long_audio(clip, family=…)."
                + (
                    " (vLLM logs 'Audio duration exceeds max' on the server only: "
                    "model_executor/models/gemma4_mm.py, Gemma4MultiModalProcessor."
                    f"_apply_hf_processor_main. On the CPU build of vLLM {CPU_BUILD} any "
                    "Gemma 4 clip kills the engine, EngineDeadError and HTTP 500, where the "
                    "audio tower's linear kernel is oneDNN or the AMX one (bfloat16 on a CPU "
                    "with AMX): both refuse its strided tensor. Its x86 wheel has oneDNN, so "
                    "every x86 CPU is one, unless zentorch is installed on an AMD Zen "
                    "(untested); docs/vllm_cpu.md)"
                    if spec.audio.fixed_placeholders is None and not spec.encoder_free
                    else ""  # Gemma 4: a tower, and placeholders that follow the clip
                )
            )
        per_token = spec.audio.samples_per_token
        if per_token:  # Unified: raw frames, one embedder row per samples_per_token
            rows = math.ceil(round(s * spec.audio.sampling_rate) / per_token)
            if rows > n:
                out.append(
                    f"audio {s:g} s on Unified: the embedder makes {rows} rows, {p.label} "
                    f"reserves {n} placeholders and its runner keeps rows 0–{n - 1}: "
                    f"{rows - n} row(s) dropped without a word (docs/parity.md)."
                )
    return out


@dataclass(frozen=True)
class _Decoded:
    """vLLM's count of one request's decoded media (``MediaDecodedBudget``)."""

    refusal: _Refusal  # (vLLM's message, "media_decode") when an item crosses the limit
    bytes: int | None  # counted up to the item that crossed (None: the release has no limit)
    needed: int  # the smallest limit that lets the whole request through
    steps: tuple[str, ...]


def _decoded_media(req: Request, spec: Any, p: VllmProfile) -> _Decoded:
    """What ``p``'s release counts against ``VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES`` for a chat
    request (one ``MediaDecodedBudget`` per request, ``multimodal/media/base.py``), item
    by item in the request's order, and where it refuses.

    Each image counts W×H×4 B, whatever its mode (``multimodal/media/image.py``); each
    video its decoded frames' array, frames×H×W×3 B of RGB (``multimodal/media/video.py``);
    each audio clip its decoded float32 mono samples at the clip's own rate. While a clip
    decodes it holds a reservation of ``VLLM_MAX_AUDIO_DECODE_BYTES``, cut to what is left
    of the limit, and its decoder counts every channel against that reservation
    (``AudioMediaIO._load_with_budget``): a clip that overruns a cut reservation fails with
    the message that has no numbers, even where its mono samples would have fitted. Once
    it has decoded, only its samples stay counted. vLLM decodes a request's items
    concurrently, so another item may be the one that crosses; the total that fails is
    the same."""
    limit = p.media_decode_limit_bytes
    if limit is None or limit <= 0 or not (req.images or req.audio_seconds or req.videos):
        return _Decoded(None, None, 0, ())
    label, at = p.label, f"VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES {limit:,}"
    items: list[tuple[str, int, int]] = []  # (what, bytes counted, bytes held while decoding)
    for h, w in req.images:
        items.append((f"image {size_label((h, w))}: {w}×{h}×4", w * h * 4, w * h * 4))
    rate = req.audio_sample_rate or spec.audio.sampling_rate
    for sec in req.audio_seconds:
        n = round(sec * rate)
        what = f"audio {sec:g} s: {n:,} samples at {rate:,} Hz ×4"
        items.append((what, n * 4, n * req.audio_channels * 4))
    for frames, h, w in req.videos:
        n = frames * h * w * 3
        what = f"video {frames} frames of {size_label((h, w))}: {frames}×{w}×{h}×3"
        items.append((what, n, n))
    reservation = p.audio_decode_reservation_bytes or 0
    used, needed, crossed = 0, 0, 0
    refusal: _Refusal = None
    steps: list[str] = []
    fitted: list[tuple[str, int, int]] = []  # a run of alike items that fitted: one step
    for what, counted, held in items:
        is_audio = what.startswith("audio")
        room = limit - used  # what is left when the item starts decoding
        needed = max(needed, used + counted, used + (min(held, reservation) if is_audio else 0))
        used += counted
        if refusal is not None:
            continue
        if fitted and fitted[-1][0] != what:
            steps.append(_fitted_step(fitted, label, at))
            fitted = []
        if is_audio and (room <= 0 or room < reservation and held > room):
            # reserve() finds no room, or the decoder overruns the cut reservation.
            msg = error_named("media-decode-budget", vllm_version=p.version).template
            refusal, crossed = (msg, "media_decode"), used
            steps.append(
                f"{label}: {what} = {counted:,} B; while it decodes, its {req.audio_channels} "
                f"channel(s) take {held:,} B of the {max(room, 0):,} B left of {at}: refused"
            )
        elif used > limit:
            msg = error_named("media-decode-budget-bytes", vllm_version=p.version).format(
                limit=limit, used=used
            )
            refusal, crossed = (msg, "media_decode"), used
            steps.append(
                f"{label}: {what} = {counted:,} B brings the request to {used:,} B > {at}: refused"
            )
        else:
            fitted.append((what, counted, used))
        if is_audio and held > reservation:
            steps.append(
                f"{label}: the clip alone decodes to {held:,} B, past VLLM_MAX_AUDIO_DECODE_BYTES "
                f"{reservation:,}: vLLM's audio decoder refuses it (its own message, not "
                "checked here)"
            )
    if fitted:
        steps.append(_fitted_step(fitted, label, at))
    return _Decoded(refusal, used if refusal is None else crossed, needed, tuple(steps))


def _fitted_step(run: list[tuple[str, int, int]], label: str, at: str) -> str:
    """One step for a run of alike items that fitted: "3 × image …: 48,000,000 B each"."""
    what, counted, used = run[-1]
    many = f"{len(run)} × " if len(run) > 1 else ""
    each = " each" if len(run) > 1 else ""
    return f"{label}: {many}{what} = {counted:,} B decoded{each}, {used:,} B so far ≤ {at}"


def _media_note(d: _Decoded, p: VllmProfile, entry: str) -> str:
    """Where vLLM applies the decoded-media limit, and what to raise: said with a refusal
    (serve) or as a warning (LLM: LLM.generate does not count, LLM.chat does)."""
    where = (
        "Only chat requests count decoded media (vllm serve's Chat Completions and "
        "Responses, LLM.chat): LLM.generate with multi_modal_data and "
        "/v1/audio/transcriptions do not."
    )
    fix = (
        f"Start the server with VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES={d.needed} or more (0 "
        "turns the check off), or send fewer or smaller items."
    )
    if entry == "serve":
        return f"{p.label}: HTTP 400 from the chat renderer. {where} {fix}"
    msg = d.refusal[0] if d.refusal else ""
    return (
        f"{p.label}: as a chat request (LLM.chat, or vllm serve: HTTP 400) vLLM refuses it "
        f"with '{msg}' {where} {fix}"
    )


def _http_check(
    req: Request, mml: int, entry: str, trust: bool, media: _Decoded, v: str
) -> tuple[_Refusal, list[str]]:
    """``vllm serve``'s own checks before the engine's (and the renderer's text length
    check, which ``LLM`` shares), in its order (the chat renderer's ``preprocess_chat``):
    per-request mm_processor_kwargs, max_tokens against max_model_len, the media as the
    chat renderer decodes them (``media``: :func:`_decoded_media`), then the prompt's
    tokens before the items are expanded."""
    steps = []
    if entry == "serve" and req.max_soft_tokens is not None and not trust:
        return (
            error_named("request-mm-kwargs-untrusted", vllm_version=v).template,
            "mm_processor_kwargs",
        ), steps
    if entry == "serve" and req.max_tokens is not None and req.max_tokens > mml:
        msg = error_named("max-tokens-above-context", vllm_version=v).format(
            max_output_tokens_param="max_tokens",
            max_output_tokens=req.max_tokens,
            max_total_tokens_param="max_model_len",
            max_total_tokens=mml,
        )
        return (msg, "max_tokens"), steps
    steps += media.steps
    if entry == "serve" and media.refusal is not None:
        return media.refusal, steps
    items = len(req.images) + len(req.audio_seconds) + len(req.videos)
    tokens = req.text_tokens + items  # one placeholder per item, not yet expanded
    if tokens > mml:
        # A text prompt is tokenized to at most max_model_len + 1 tokens (serve), so vLLM
        # can only say "at least"; token ids (LLM) are counted whole.
        count = min(tokens, mml + 1) if entry == "serve" else tokens
        msg = error_named("context-tokens", vllm_version=v).format(
            max_total_tokens=mml,
            qualifier="at least " if count == mml + 1 else "",
            token_count=count,
        )
        return (msg, "max_model_len"), steps
    steps.append(f"{tokens} prompt tokens before expansion ≤ max_model_len {mml}")
    return None, steps


def _output_rule(req: Request, prompt: int, mml: int, entry: str) -> Rule[int]:
    """The output vLLM allows: the request's max_tokens, lowered to what is left of
    max_model_len (``get_max_tokens`` in serve; the engine stops at max_model_len)."""
    room = mml - prompt
    if req.max_tokens is None or req.max_tokens <= room:
        return Rule(room if req.max_tokens is None else req.max_tokens, "")
    how = (
        "vllm serve lowers it (get_max_tokens) and answers 200"
        if entry == "serve"
        else "the engine stops the output there (finish_reason 'length')"
    )
    return Rule(
        room,
        f"max_tokens {req.max_tokens} > the {room} tokens max_model_len {mml} leaves after the "
        f"{prompt}-token prompt: {how}, without an error; set --max-model-len "
        f"{prompt + req.max_tokens} or more for the whole output.",
    )


def _schedule_rule(
    plan: Any, length: int, memory: int, options: dict[str, Any]
) -> Rule[tuple[Any, int, int]]:
    """(the start-up capacity, KV blocks this request takes, usable blocks in the pool).

    vLLM refuses to start when one max_model_len request does not fit the pool less its
    null block (``check_enough_kv_cache_memory``: ``VllmProfile.locations`` says where each
    release keeps it), and a shorter request never takes more blocks: so an admitted
    request always fits the pool alone, and "accepted but never scheduled"
    (vllm-project/vllm#39734) cannot happen."""
    cap = plan.capacity(kv_cache_memory_bytes=memory, **options)
    need = plan.capacity(
        kv_cache_memory_bytes=memory, **{**options, "max_model_len": max(length, 1)}
    ).blocks_per_request
    usable = max(cap.num_blocks - 1, 0)
    return Rule(
        (cap, need, usable),
        f"KV: the request's {length} tokens take {need} blocks; the pool holds {usable} "
        f"usable blocks (one max_model_len request takes {cap.blocks_per_request})",
    )


def _engine_checks(
    req: Request, plan: Any, spec: Any, budget: int | None, v: str
) -> tuple[_Refusal, list[tuple[str, int]], int, list[str]]:
    """The engine's checks in its order: counts, prompt length, encoder cache."""
    mml, cache = plan.max_model_len, plan.encoder_cache_size
    refusal, steps = _count_check(req, plan, spec, v)
    if refusal is not None:
        return refusal, [], 0, steps
    per, prompt, counted = _item_tokens(req, plan, spec, budget)
    refusal = _length_check(prompt, mml, v) or _cache_check(per, cache, v)
    return refusal, per, prompt, steps + counted


def _checks(
    req: Request, plan: Any, spec: Any, p: VllmProfile, media: _Decoded, entry: str, trust: bool
) -> tuple[_Refusal, list[tuple[str, int]], int, list[str]]:
    """Every check in vLLM's order, to the first refusal: (the refusal or None, the items'
    embeddings, the prompt's tokens, why)."""
    budget_rule = _budget_check(req, plan, spec)
    budget, refusal = budget_rule.value
    steps = [f"{p.label}'s checks ({p.chosen_because})"]
    steps += [budget_rule.step] if budget_rule.step else []
    per: list[tuple[str, int]] = []
    prompt = 0
    if refusal is None:
        refusal, more = _http_check(req, plan.max_model_len, entry, trust, media, p.version)
        steps += more
    if refusal is None:
        refusal, per, prompt, more = _engine_checks(req, plan, spec, budget, p.version)
        steps += more
    return refusal, per, prompt, steps


def _refused(
    refusal: tuple[str, str], media: _Decoded, p: VllmProfile, base: tuple[Any, ...], common: dict
) -> AdmitResult:
    """A refused request's result: vLLM's message, and for the decoded-media limit the
    variable to raise and where it applies."""
    (msg, reason), (prompt, per, steps) = refusal, base
    steps.append(f"refused ({reason}): {msg}")
    fix = None
    if reason == "media_decode":
        fix = f"VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES={media.needed} or more on the server"
        steps.append(_media_note(media, p, common["entry_point"]))
    http = 400 if common["entry_point"] == "serve" else None
    return AdmitResult(
        False, msg, reason, prompt, per, steps=tuple(steps), status=http, fix=fix, **common
    )


def admit(
    plan: Any,
    request: Request | None = None,
    *,
    entry_point: str = "LLM",
    trust_request_mm_kwargs: bool = False,
    kv_cache_memory_bytes: int | None = None,
    capacity_options: dict[str, Any] | None = None,
    vllm_version: str | None = None,
    **items: Any,
) -> AdmitResult:
    """Whether vLLM accepts a request on an engine started with this plan, its message if
    not, what it drops without a word (``warnings``), and whether the KV pool can run it.

    vLLM checks, in order: ``vllm serve``'s HTTP layer (``entry_point="serve"``, a chat
    request: per-request mm_processor_kwargs without ``--trust-request-mm-kwargs``,
    max_tokens against max_model_len, and, in a release that has the limit, the media as
    they decode against ``VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES``), the prompt's tokens
    before expansion, the counts per modality (``limit_mm_per_prompt``), the expanded
    prompt (``max_model_len``, leaving room for one output token), then each item's
    embeddings against the encoder cache. A per-request ``max_soft_tokens`` above the
    start-up budget is honoured when the item fits the cache; Gemma 3n ignores it. With
    ``kv_cache_memory_bytes`` (and ``capacity_options``, :meth:`ServingPlan.capacity`'s
    keywords) the request's KV blocks are set against the pool's. ``entry_point="LLM"``
    (``LLM.generate`` with ``multi_modal_data``) does not count decoded media: a request
    ``LLM.chat`` or ``vllm serve`` would refuse for it gets a warning.

    ``vllm_version`` names the release whose checks run (by default the plan's:
    ``plan.vllm``); the result's ``vllm_version`` and first step say which.

    >>> from gemma_explore.serving.plan import plan_serving
    >>> plan = plan_serving("tiny-gemma4", max_model_len=4096)
    >>> admit(plan, images=[(1080, 1920)], max_soft_tokens=1120).accepted
    True
    """
    if entry_point not in ("LLM", "serve"):
        raise ValueError(f"entry_point={entry_point!r}: use 'LLM' or 'serve'.")
    req = _request(request, items)
    p = profile_of(plan, vllm_version)
    spec = get_family(plan.model.family)
    mml, cache = plan.max_model_len, plan.encoder_cache_size
    media = _decoded_media(req, spec, p)
    common = dict(
        encoder_cache_size=cache,
        max_model_len=mml,
        entry_point=entry_point,
        vllm_version=p.version,
        decoded_media_bytes=media.bytes,
    )
    refusal, per, prompt, steps = _checks(
        req, plan, spec, p, media, entry_point, trust_request_mm_kwargs
    )
    if refusal is not None:
        return _refused(refusal, media, p, (prompt, tuple(per), steps), common)
    steps.append(f"every item ≤ encoder_cache_size {cache}: accepted")
    warnings = _silent_drops(req, plan, spec, per, p)
    if media.refusal is not None:  # LLM.generate: not counted there, but LLM.chat counts
        warnings.append(_media_note(media, p, entry_point))
    out = _output_rule(req, prompt, mml, entry_point)
    if out.step:
        warnings.append(out.step)
    done = dict(
        warnings=tuple(warnings),
        status=200 if entry_point == "serve" else None,
        max_tokens=out.value,
        **common,
    )
    if kv_cache_memory_bytes is None:
        return AdmitResult(True, None, None, prompt, tuple(per), steps=tuple(steps), **done)
    base = (prompt, tuple(per), tuple(steps), done)
    return _kv_verdict(plan, base, out.value, kv_cache_memory_bytes, dict(capacity_options or {}))


def _kv_verdict(
    plan: Any, base: tuple[Any, ...], output: int, memory: int, options: dict[str, Any]
) -> AdmitResult:
    """An accepted request's verdict with the KV pool: runs, or vLLM refuses to start."""
    prompt, per, steps, done = base
    mml = plan.max_model_len
    kv = _schedule_rule(plan, min(prompt + output, mml), memory, options)
    cap, need, usable = kv.value
    steps = (*steps, kv.step)
    if cap.refusal is not None:
        fix = f"--max-model-len {cap.estimated_max_model_len} (or more KV memory)"
        steps = (*steps, f"vLLM refuses to start, before any request: {cap.refusal}")
        return AdmitResult(
            False, cap.refusal, "kv_cache", prompt, per, steps=steps,
            blocks_needed=need, blocks_in_pool=usable, schedulable=False, fix=fix,
            **{**done, "status": None},
        )  # fmt: skip
    fits = need <= usable
    return AdmitResult(
        True, None, None, prompt, per, steps=steps, blocks_needed=need,
        blocks_in_pool=usable, schedulable=fits,
        fix=None if fits else f"KV memory for {need} blocks of {cap.bytes_per_block:,} B",
        **done,
    )  # fmt: skip


@dataclass(frozen=True)
class AdmissionTable:
    """vLLM's verdict on each request of a workload, in order."""

    requests: tuple[Request, ...]
    results: tuple[AdmitResult, ...]
    model: str  # the plan's model
    steps: tuple[str, ...] = field(default=(), compare=False)

    @property
    def accepted(self) -> int:
        """How many vLLM accepts and can run."""
        return sum(r.verdict == "accepted" for r in self.results)

    def table(self) -> Table:
        """One row per request: items, tokens, verdict, HTTP status, message or warning."""
        rows = []
        for i, (q, r) in enumerate(zip(self.requests, self.results, strict=True)):
            sent = (("image", q.images), ("audio", q.audio_seconds), ("video", q.videos))
            items = ", ".join(f"{m} {n}" for m, n in r.item_tokens) or (
                ", ".join(f"{len(v)} {m}" for m, v in sent if v) or "text"
            )
            said = r.message or "; ".join(r.warnings) or None
            rows.append((i, items, r.prompt_tokens, q.max_tokens, r.verdict, r.status, said))
        return Table(
            header=("#", "items (embeddings)", "prompt", "max_tokens", "verdict", "HTTP", "says"),
            rows=tuple(rows),
            title=f"admission on {self.model}: {self.accepted} of {len(self.results)} run",
            flagged=tuple(i for i, r in enumerate(self.results) if r.verdict != "accepted"),
            notes=self.steps,
        )


def admit_many(plan: Any, requests: Iterable[Request | dict], **options: Any) -> AdmissionTable:
    """:func:`admit` for each request of a workload (``Request`` objects or dicts of its
    fields, e.g. the lines of a JSONL file); ``options`` go to every call (``entry_point``,
    ``kv_cache_memory_bytes``, …).

    >>> from gemma_explore.serving.plan import plan_serving
    >>> plan = plan_serving("tiny-gemma4", max_model_len=4096)
    >>> admit_many(plan, [{"images": [(768, 1024)]}]).accepted
    1
    """
    reqs = tuple(r if isinstance(r, Request) else _request(None, dict(r)) for r in requests)
    results = tuple(admit(plan, r, **options) for r in reqs)
    steps = (f"{len(reqs)} requests, {options.get('entry_point', 'LLM')} entry point",)
    return AdmissionTable(reqs, results, plan.model.name, steps=steps)


_FIELDS = (
    "images",
    "audio_seconds",
    "videos",
    "text_tokens",
    "max_soft_tokens",
    "max_tokens",
    "audio_sample_rate",
    "audio_channels",
)


def admit_jsonl_text(plan: Any, lines: Iterable[str], **options: Any) -> str:
    """``gemma-explore admit MODEL requests.jsonl``'s output: one JSON object a line, with
    :class:`Request`'s fields (``{"images": [[768, 1024]], "max_tokens": 256}``), the
    verdict table back.

    >>> from gemma_explore.serving.plan import plan_serving
    >>> plan = plan_serving("tiny-gemma4", max_model_len=4096)
    >>> print(admit_jsonl_text(plan, ['{"text_tokens": 20}']).splitlines()[0])
    admission on tiny-gemma4: 1 of 1 run
    """
    import json

    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"requests line {n} is not JSON ({exc.msg}): {line.strip()[:60]}"
            ) from None
        extra = set(row) - set(_FIELDS) if isinstance(row, dict) else {"(not an object)"}
        if extra:
            raise ValueError(
                f"requests line {n}: unknown field(s) {sorted(extra)}; a request takes "
                f"{', '.join(_FIELDS)}."
            )
        rows.append(row)
    return admit_many(plan, rows, **options).table().text()
