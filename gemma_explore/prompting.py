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
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .families import get_family
from .media import MediaError, load_audio, load_image, load_video
from .plans import _check_budget, sample_frame_indices

__all__ = ["PreparedInputs", "normalize_messages", "prepare_inputs"]

_MEDIA_KEYS = {
    "image": ("image", "url", "path"),
    "audio": ("audio", "path", "url"),
    "video": ("video", "path", "url"),
}


@dataclass
class PreparedInputs:
    """What the real processor made of one chat turn (batch of one)."""

    family: str
    text: str  # the chat template's output, before placeholder expansion
    batch: Any  # transformers BatchFeature (torch tensors)
    images: list = field(default_factory=list)  # RGB PIL images, in prompt order
    audios: list = field(default_factory=list)  # mono float32 waveforms at 16 kHz
    audio_notes: list = field(default_factory=list)  # what load_audio did to each clip
    videos: list = field(default_factory=list)  # Video objects
    video_frame_indices: list = field(default_factory=list)  # sampled frames per video
    max_soft_tokens: int | None = None  # Gemma 4 image budget used
    preprocess_s: float = 0.0  # seconds spent in the processor

    @property
    def input_ids(self) -> list[int]:
        return [int(i) for i in self.batch["input_ids"][0]]


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


def prepare_inputs(
    bundle: Any,
    messages_or_text: Any,
    *,
    images: Any = (),
    audios: Any = (),
    videos: Any = (),
    max_soft_tokens: int | None = None,
    add_generation_prompt: bool = True,
    **processor_kwargs: Any,
) -> PreparedInputs:
    """Render the chat template and run the bundle's real processor on one turn.

    ``max_soft_tokens`` sets Gemma 4's image budget for this request (70 … 1120).
    Extra keyword arguments go to the processor call unchanged.
    """
    spec = get_family(bundle.family)
    processor = bundle.processor
    messages = normalize_messages(messages_or_text, images=images, audios=audios, videos=videos)

    pil_images, waves, notes, vids = [], [], [], []
    clean = copy.deepcopy([{k: v for k, v in m.items() if k != "content"} for m in messages])
    for out, message in zip(clean, messages, strict=True):
        content = message.get("content", "")
        if isinstance(content, str):
            out["content"] = content
            continue
        items = []
        for item in content:
            kind = item.get("type")
            if kind == "image":
                pil_images.append(load_image(_media_of(item, "image")))
            elif kind == "audio":
                wave, note = load_audio(
                    _media_of(item, "audio"),
                    sampling_rate=item.get("sampling_rate"),
                    target_rate=spec.audio.sampling_rate,
                )
                waves.append(wave)
                notes.append(note)
            elif kind == "video":
                if not spec.has_video:
                    raise MediaError(
                        f"{spec.display_name} has no video input. Use a Gemma 4 model, or send "
                        "a few frames as images."
                    )
                vids.append(load_video(_media_of(item, "video"), fps=item.get("fps")))
            elif kind != "text":
                raise ValueError(
                    f"Unknown content type {kind!r}; use 'text', 'image', 'audio' or 'video'."
                )
            items.append(
                {"type": kind, "text": item.get("text", "")} if kind == "text" else {"type": kind}
            )
        out["content"] = items

    text = processor.apply_chat_template(
        clean, tokenize=False, add_generation_prompt=add_generation_prompt
    )
    kwargs: dict[str, Any] = dict(processor_kwargs)
    budget = None
    if spec.name == "gemma4":
        budget = _check_budget(spec, max_soft_tokens)
        images_kwargs = dict(kwargs.pop("images_kwargs", {}) or {})
        images_kwargs.setdefault("max_soft_tokens", budget)
        budget = images_kwargs["max_soft_tokens"]
        kwargs["images_kwargs"] = images_kwargs
    elif max_soft_tokens is not None:
        raise ValueError("Gemma 3n has no image budget (always 256 tokens); drop max_soft_tokens.")
    frame_indices = []
    if vids:
        from transformers.video_utils import VideoMetadata

        limit = spec.image.max_video_frames
        metadata = []
        for v in vids:
            idx = sample_frame_indices(v.num_frames, max_frames=limit)
            frame_indices.append(idx)
            metadata.append(
                VideoMetadata(
                    total_num_frames=v.num_frames,
                    fps=v.fps,
                    duration=v.num_frames / v.fps,
                    height=v.frames.shape[1],
                    width=v.frames.shape[2],
                )
            )
        videos_kwargs = dict(kwargs.pop("videos_kwargs", {}) or {})
        # transformers samples 32 frames and raises for shorter videos; ask for what exists.
        videos_kwargs.setdefault("num_frames", min(limit, min(v.num_frames for v in vids)))
        videos_kwargs["video_metadata"] = metadata
        kwargs["videos_kwargs"] = videos_kwargs

    call: dict[str, Any] = {"text": [text], "return_tensors": "pt"}
    if pil_images:
        call["images"] = [pil_images]
    if waves:
        call["audio"] = waves
    if vids:
        call["videos"] = [v.frames for v in vids]
    # The chat template already writes <bos>; adding special tokens again would double it.
    call["add_special_tokens"] = False
    start = time.perf_counter()
    batch = processor(**call, **kwargs)
    elapsed = time.perf_counter() - start
    return PreparedInputs(
        family=spec.name,
        text=text,
        batch=batch,
        images=pil_images,
        audios=waves,
        audio_notes=notes,
        videos=vids,
        video_frame_indices=frame_indices,
        max_soft_tokens=budget,
        preprocess_s=elapsed,
    )
