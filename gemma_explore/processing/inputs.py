"""Chat messages → the real processor's inputs, the one path every feature shares.

``prepare_inputs`` takes a chat message list (or plain text plus attachments), pulls
out the images, clips and videos, renders the family's chat template and runs the
bundle's real transformers processor. Generation, layouts and encoder reports all
start from its :class:`PreparedInputs`.

Messages use the transformers format::

    [{"role": "user", "content": [
        {"type": "image", "image": "photo.jpg"},       # path, bytes, array or PIL image
        {"type": "audio", "audio": ("clip.wav")},      # path, bytes, (wave, rate)
        {"type": "video", "video": frames, "fps": 24}, # Gemma 4 only
        {"type": "text", "text": "What is this?"}]}]
"""

from __future__ import annotations

import copy
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from gemma_explore.errors import MediaError
from gemma_explore.facts.families import DEFAULT_FAMILY, FamilySpec, get_family
from gemma_explore.media.loaders import (
    Video,
    load_audio,
    load_image,
    load_video,
    sample_frame_indices,
)
from gemma_explore.plans.rules import require_budget
from gemma_explore.plans.vllm import vllm_adds_bos

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage
    from transformers import BatchFeature


__all__ = [
    "LoadedModel",
    "PreparedInputs",
    "normalize_messages",
    "prepare_inputs",
    "prepare_media",
    "takes_inputs_of",
]


@runtime_checkable
class LoadedModel(Protocol):
    """What preparing a turn reads from a loaded model, and nothing more.

    A :class:`~gemma_explore.models.bundle.Bundle` is one; so is any object with these
    four attributes. Preparing a prompt sits below the models (a bundle's ``generate``
    calls it), so it names what it reads here instead of importing the bundle.

    >>> from gemma_explore.facts.families import GEMMA4
    >>> class Stub:
    ...     name, processor, modalities, spec = "stub", None, ("image",), GEMMA4
    >>> isinstance(Stub(), LoadedModel)
    True
    """

    name: str  # a tiny name, a folder or a hub id: error messages name it
    processor: Any  # the real transformers processor (None: a remote server's model)
    modalities: tuple[str, ...]  # what the checkpoint takes: a clip needs "audio"
    spec: FamilySpec  # the family's facts: tokens, budgets, how clips are resampled


# Keys the processor returns for bookkeeping, not for the model's forward.
_NOT_MODEL_INPUTS = {"num_soft_tokens_per_image", "num_soft_tokens_per_video", "video_metadata"}

_MEDIA_KEYS = {
    "image": ("image", "url", "path"),
    "audio": ("audio", "path", "url"),
    "video": ("video", "path", "url"),
}


@dataclass(frozen=True)
class PreparedInputs:
    """What the real processor made of one chat turn (batch of one).

    Every engine starts from this: transformers feeds ``batch`` to the model; vLLM and
    OpenAI-compatible servers take ``text`` / ``messages`` and the loaded media.
    """

    family: str
    text: str | None  # the chat template's output, before expansion (None: no processor)
    batch: BatchFeature | None  # the processor's tensors (None for a remote-only bundle)
    messages: list[dict[str, Any]] = field(default_factory=list)  # media items as {"type": …}
    images: list[PILImage] = field(default_factory=list)  # RGB, in prompt order
    audios: list[np.ndarray] = field(default_factory=list)  # mono float32 at 16 kHz
    audio_notes: list[dict[str, Any]] = field(default_factory=list)  # what load_audio did
    videos: list[Video] = field(default_factory=list)
    video_frame_indices: list[list[int]] = field(default_factory=list)  # sampled per video
    max_soft_tokens: int | None = None  # Gemma 4 image budget used
    template: bool = True  # False: ``text`` is a raw prompt, tokenized as vLLM's LLM.generate does
    # What the caller asked for on this request (e.g. {"max_soft_tokens": 560}); serving
    # engines send it as vLLM's per-request mm_processor_kwargs. Empty: the server's own.
    request_kwargs: dict[str, Any] = field(default_factory=dict)
    preprocess_s: float = 0.0  # seconds spent in the processor

    @property
    def input_ids(self) -> list[int]:
        if self.batch is None:
            raise ValueError(
                "This bundle has no local processor (a remote server's model), so there are "
                "no input ids to show. Load the same checkpoint with engine='hf' to see them."
            )
        return [int(i) for i in self.batch["input_ids"][0]]

    def to_model(self, model: Any) -> dict[str, Any]:
        """The processor's tensors for ``model(**…)``: moved to its device, floats in its
        dtype, bookkeeping keys dropped."""
        import torch

        out = {}
        for key, value in (self.batch or {}).items():
            if key in _NOT_MODEL_INPUTS:
                continue
            if isinstance(value, torch.Tensor):
                value = value.to(model.device)
                if value.is_floating_point():
                    value = value.to(model.dtype)
            out[key] = value
        return out


def normalize_messages(
    messages_or_text: Any,
    *,
    images: Any = (),
    audios: Any = (),
    videos: Any = (),
) -> list[dict[str, Any]]:
    """Return a message list; plain text becomes one user turn with the attachments first."""
    if isinstance(messages_or_text, str):
        content: list[dict[str, Any]] = []
        content += [{"type": "image", "image": im} for im in _as_list(images)]
        content += [{"type": "audio", "audio": a} for a in _as_list(audios)]
        content += [{"type": "video", "video": v} for v in _as_list(videos)]
        if messages_or_text:
            content.append({"type": "text", "text": messages_or_text})
        return [{"role": "user", "content": content}]
    if isinstance(messages_or_text, dict):
        messages_or_text = [messages_or_text]
    if not isinstance(messages_or_text, list | tuple) or not messages_or_text:
        raise ValueError(
            "Pass a chat message list like [{'role': 'user', 'content': [...]}] or a string."
        )
    if images or audios or videos:
        raise ValueError(
            "Attachments go inside the message list when you pass messages; images=, audios= "
            "and videos= are for plain-text prompts."
        )
    return list(messages_or_text)


def _as_list(x: Any) -> list:
    if x is None:
        return []
    if isinstance(x, list | tuple) and not (
        isinstance(x, tuple) and len(x) == 2 and np.isscalar(x[1])
    ):
        return list(x)
    return [x]


def _media_of(item: dict[str, Any], kind: str) -> Any:
    for key in _MEDIA_KEYS[kind]:
        if item.get(key) is not None:
            return item[key]
    raise MediaError(
        f"A {kind!r} item needs its data under the key {kind!r}: {{'type': "
        f"'{kind}', '{kind}': ...}}."
    )


def prepare_media(
    messages_or_text: Any,
    *,
    family: str | FamilySpec | LoadedModel = DEFAULT_FAMILY,
    images: Any = (),
    audios: Any = (),
    videos: Any = (),
    max_soft_tokens: int | None = None,
) -> PreparedInputs:
    """Load and check a turn's media, without a processor (``text`` and ``batch`` None).

    This is all a remote server's bundle can do locally; :func:`prepare_inputs` adds the
    chat template and the processor run.

    ``family`` (a name, a spec or a bundle) says how clips are resampled and which
    budgets exist.

    >>> prepare_media("Hi", images=[(480, 640)]).images[0].size
    (640, 480)
    """
    spec = get_family(getattr(family, "spec", family))
    messages = normalize_messages(messages_or_text, images=images, audios=audios, videos=videos)
    loaded = _Loaded()
    clean = copy.deepcopy([{k: v for k, v in m.items() if k != "content"} for m in messages])
    for out, message in zip(clean, messages, strict=True):
        content = message.get("content", "")
        out["content"] = (
            content if isinstance(content, str) else [loaded.take(i, spec) for i in content]
        )
    budget = None
    if spec.image.budgets:
        budget = require_budget(max_soft_tokens, family=spec)
    elif max_soft_tokens is not None:
        require_budget(max_soft_tokens, family=spec)  # raises: this family has no budget
    requested = {} if max_soft_tokens is None else {"max_soft_tokens": budget}
    limit = spec.image.max_video_frames or 0
    return PreparedInputs(
        family=spec.name,
        text=None,
        batch=None,
        messages=clean,
        images=loaded.images,
        audios=loaded.waves,
        audio_notes=loaded.notes,
        videos=loaded.videos,
        video_frame_indices=[
            sample_frame_indices(v.num_frames, max_frames=limit) for v in loaded.videos
        ],
        max_soft_tokens=budget,
        request_kwargs=requested,
    )


@dataclass
class _Loaded:
    """The media of one turn, loaded in prompt order while its messages are cleaned."""

    images: list[PILImage] = field(default_factory=list)
    waves: list[np.ndarray] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    videos: list[Video] = field(default_factory=list)

    def take(self, item: dict[str, Any], spec: FamilySpec) -> dict[str, Any]:
        """Load ``item``'s media and return the item as the message keeps it: its type
        (and a text item's text), the data left out."""
        kind = item.get("type")
        if kind == "image":
            self.images.append(load_image(_media_of(item, "image")))
        elif kind == "audio":
            wave, note = load_audio(
                _media_of(item, "audio"),
                sampling_rate=item.get("sampling_rate"),
                target_rate=spec.audio.sampling_rate,
            )
            self.waves.append(wave)
            self.notes.append(note)
        elif kind == "video":
            if not spec.has_video:
                raise MediaError(
                    f"{spec.display_name} has no video input. Use a Gemma 4 model, or send "
                    "a few frames as images."
                )
            self.videos.append(load_video(_media_of(item, "video"), fps=item.get("fps")))
        elif kind != "text":
            raise ValueError(
                f"Unknown content type {kind!r}; use 'text', 'image', 'audio' or 'video'."
            )
        return {"type": kind, "text": item.get("text", "")} if kind == "text" else {"type": kind}


def takes_inputs_of(base: Callable[..., Any]) -> Callable[[Callable[..., Any]], Any]:
    """Give a function that hands its ``**inputs`` to ``base`` the keyword-only parameters
    of ``base`` it does not name itself, in its signature and type hints: one list of a
    turn's inputs, written once (on :func:`prepare_inputs`), shown by ``help()``,
    ``inspect`` and editors wherever a function takes them too.

    >>> def prepare(text: str, *, images: tuple = (), template: bool = True) -> str: ...
    >>> @takes_inputs_of(prepare)
    ... def lay_out(text: str, *, prepared: str | None = None, **inputs: Any) -> int: ...
    >>> str(inspect.signature(lay_out))
    "(text: 'str', *, prepared: 'str | None' = None, images: 'tuple' = (), template: 'bool' = True) -> 'int'"
    """
    theirs = inspect.signature(base).parameters.values()

    def give(function: Callable[..., Any]) -> Callable[..., Any]:
        own = inspect.signature(function)
        kept = [p for p in own.parameters.values() if p.kind is not p.VAR_KEYWORD]
        named = {p.name for p in kept}
        added = [p for p in theirs if p.kind is p.KEYWORD_ONLY and p.name not in named]
        rest = [p for p in theirs if p.kind is p.VAR_KEYWORD]
        function.__signature__ = own.replace(parameters=[*kept, *added, *rest])  # type: ignore[attr-defined]
        hints = {
            p.name: base.__annotations__[p.name] for p in added if p.name in base.__annotations__
        }
        function.__annotations__ = {**hints, **function.__annotations__}
        return function

    return give


def prepare_inputs(
    messages_or_text: Any,
    *,
    bundle: LoadedModel,
    images: Any = (),
    audios: Any = (),
    videos: Any = (),
    max_soft_tokens: int | None = None,
    template: bool = True,
    add_generation_prompt: bool = True,
    **processor_kwargs: Any,
) -> PreparedInputs:
    """Render the chat template and run the bundle's real processor on one turn.

    ``max_soft_tokens`` sets Gemma 4's image budget for this request (70 … 1120).
    Extra keyword arguments go to the processor call unchanged. A bundle without a
    local processor (a remote server's model) gets its media loaded and checked only.

    ``template=False`` takes an already-templated prompt, as vLLM's
    ``LLM.generate({"prompt": text, "multi_modal_data": …})`` takes it: one placeholder
    token per item (``<|image|>``, ``<|audio|>``, ``<|video|>`` for Gemma 4;
    ``<image_soft_token>``, ``<audio_soft_token>`` for Gemma 3n), with the media given
    as ``images=``, ``audios=``, ``videos=`` in the prompt's order. The text is
    tokenized as vLLM does (Gemma 3n prepends ``<bos>``; Gemma 4 with a chat template
    does not), then the processor expands the placeholders.

    >>> import gemma_explore as ge
    >>> prepared = prepare_inputs("Hi", bundle=ge.load("tiny-gemma4"), images=[(480, 640)])
    >>> prepared.input_ids.count(258880)  # <|image|>: the image's soft tokens
    266
    """
    _require_raw_text(messages_or_text, template=template)
    media = prepare_media(
        "" if not template else messages_or_text,
        family=bundle.spec,
        images=images,
        audios=audios,
        videos=videos,
        max_soft_tokens=max_soft_tokens,
    )
    _require_audio_tower(bundle, media)
    if not template:
        _check_raw_placeholders(bundle.spec, messages_or_text, media)
        media = replace(media, text=messages_or_text, template=False)
    processor = bundle.processor
    if processor is None:  # a remote server's model: media checked, nothing to tokenize
        return media
    kwargs = _with_video_metadata(media, _with_budget(media, dict(processor_kwargs)))
    if template:
        text = processor.apply_chat_template(
            media.messages, tokenize=False, add_generation_prompt=add_generation_prompt
        )
    else:
        text = messages_or_text
    call = _processor_call(text, media, bos=_adds_bos(bundle, template=template))
    start = time.perf_counter()
    batch = processor(**call, **kwargs)
    elapsed = time.perf_counter() - start
    budget = kwargs.get("images_kwargs", {}).get("max_soft_tokens", media.max_soft_tokens)
    return replace(
        media,
        text=text,
        batch=batch,
        preprocess_s=elapsed,
        max_soft_tokens=budget,
        template=template,
    )


def _require_raw_text(messages_or_text: Any, *, template: bool) -> None:
    """``template=False`` takes one prompt string, never a message list."""
    if not template and not isinstance(messages_or_text, str):
        raise ValueError(
            "template=False takes the prompt text itself (with one placeholder per item), "
            "not a message list; pass the media as images=, audios=, videos=."
        )


def _require_audio_tower(bundle: LoadedModel, media: PreparedInputs) -> None:
    """A clip needs a checkpoint with an audio tower (``bundle.modalities``)."""
    if media.audios and "audio" not in bundle.modalities:
        raise MediaError(
            f"{bundle.name} has no audio tower (its config has no audio_config, like Gemma 4 "
            "26B and 31B): it takes images and video only, and vLLM would refuse the clip: "
            "one sent with its rate with 'Audio resampling is not supported when `target_sr` "
            "is not provided', a bare array with 'does not have an audio tower'. Use an E2B "
            "or E4B checkpoint for audio."
        )


def _with_budget(media: PreparedInputs, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The processor's kwargs with the request's image budget in ``images_kwargs`` (a
    budget the caller put there already wins)."""
    if media.max_soft_tokens is not None:
        images_kwargs = dict(kwargs.pop("images_kwargs", {}) or {})
        images_kwargs.setdefault("max_soft_tokens", media.max_soft_tokens)
        kwargs["images_kwargs"] = images_kwargs
    return kwargs


def _with_video_metadata(media: PreparedInputs, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The processor's kwargs with each video's own sampled frames described.

    transformers takes one ``num_frames`` for all videos; each video here keeps its own
    sample, so the processor gets the sampled frames with their indices (for the
    timestamps) and is told not to sample again.
    """
    if not media.videos:
        return kwargs
    from transformers.video_utils import VideoMetadata

    metadata = [
        VideoMetadata(
            total_num_frames=v.num_frames,
            fps=v.fps,
            duration=v.num_frames / v.fps,
            height=v.size[0],
            width=v.size[1],
            frames_indices=list(idx),
        )
        for v, idx in zip(media.videos, media.video_frame_indices, strict=True)
    ]
    videos_kwargs = dict(kwargs.pop("videos_kwargs", {}) or {})
    videos_kwargs.update(video_metadata=metadata, do_sample_frames=False)
    kwargs["videos_kwargs"] = videos_kwargs
    return kwargs


def _adds_bos(bundle: LoadedModel, *, template: bool) -> bool:
    """Whether tokenizing the text adds ``<bos>``.

    The chat template already writes ``<bos>``: adding special tokens again would double
    it. A raw prompt follows vLLM's rule, which reads the tokenizer's chat template
    (``gemma4_mm.py`` ``get_default_tok_params``).
    """
    if template:
        return False
    has_template = getattr(bundle.processor.tokenizer, "chat_template", None) is not None
    return vllm_adds_bos(bundle.spec, has_chat_template=has_template)


def _processor_call(text: str, media: PreparedInputs, *, bos: bool) -> dict[str, Any]:
    """The processor's arguments: the text and each modality's items, batch of one."""
    call: dict[str, Any] = {"text": [text], "return_tensors": "pt"}
    if media.images:
        call["images"] = [media.images]
    if media.audios:
        call["audio"] = media.audios
    if media.videos:
        call["videos"] = [
            v.frames_at(idx) for v, idx in zip(media.videos, media.video_frame_indices, strict=True)
        ]
    call["add_special_tokens"] = bos
    return call


def _check_raw_placeholders(spec: FamilySpec, text: str, media: PreparedInputs) -> None:
    """A raw prompt needs exactly one placeholder per item, as vLLM's processor does:
    every placeholder that does not match is named in one message."""
    given = {"image": len(media.images), "audio": len(media.audios), "video": len(media.videos)}
    said, fixes = [], []
    for modality, token in spec.placeholder_tokens.items():
        found = text.count(token)
        if found != given[modality]:
            vllm = (
                " (vLLM would stop with 'Failed to apply prompt replacement for "
                f"mm_items[{modality!r}][{found}]')"
                if found < given[modality]
                else ""
            )
            said.append(
                f"{found} {token} placeholder(s) for {given[modality]} {modality} item(s){vllm}"
            )
            fixes.append(f"one {token} where each {modality} goes")
    if said:
        raise ValueError(
            f"The raw prompt has {' and '.join(said)}. Write {' and '.join(fixes)}, or pass "
            "template=True to let the chat template place them."
        )
