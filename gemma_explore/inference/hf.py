"""Generation with the transformers backend: plain and streaming, with timings."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..prompting import PreparedInputs, prepare_inputs

__all__ = ["generate_hf", "stream_hf", "model_inputs"]

# Keys the processor returns for our own bookkeeping, not for the model.
_NOT_MODEL_INPUTS = {"num_soft_tokens_per_image", "num_soft_tokens_per_video", "video_metadata"}


def model_inputs(bundle: Any, prepared: PreparedInputs) -> dict[str, Any]:
    """The processor's output moved to the model's device and dtype."""
    import torch

    out = {}
    for key, value in prepared.batch.items():
        if key in _NOT_MODEL_INPUTS:
            continue
        if isinstance(value, torch.Tensor):
            value = value.to(bundle.model.device)
            if value.is_floating_point():
                value = value.to(bundle.model.dtype)
        out[key] = value
    return out


@contextmanager
def _encoder_timer(model: Any):
    """Time the vision and audio towers with forward hooks (seconds, summed)."""
    spent = {"s": 0.0}
    starts: list[float] = []
    handles = []
    inner = getattr(model, "model", model)
    for name in ("vision_tower", "audio_tower"):
        tower = getattr(inner, name, None)
        if tower is None:
            continue
        handles.append(
            tower.register_forward_pre_hook(lambda *_: starts.append(time.perf_counter()))
        )
        handles.append(
            tower.register_forward_hook(
                lambda *_: spent.__setitem__("s", spent["s"] + time.perf_counter() - starts.pop())
            )
        )
    try:
        yield spent
    finally:
        for h in handles:
            h.remove()


def _count_mm(bundle: Any, ids: list[int]) -> int:
    spec = bundle.spec
    mm = {spec.id_of(spec.image_token), spec.id_of(spec.audio_token)}
    if spec.video_token:
        mm.add(spec.id_of(spec.video_token))
    return sum(1 for i in ids if i in mm)


class _ReadableOnly:
    """For random-weight bundles only: keep the argmax among printable characters.

    A random model's favourite ids are mostly the stand-in vocabulary's inert
    ``<unused…>`` fillers, which decode to walls of tags and never contain a space (so
    nothing streams). Restricting the choice to letters, digits, punctuation and space
    keeps the output visibly noise, readable, and streamable. Trained checkpoints are
    never restricted.
    """

    def __init__(self, allowed: list[int]) -> None:
        self.allowed = allowed

    def __call__(self, input_ids, scores):
        import torch

        mask = torch.full_like(scores, float("-inf"))
        mask[:, self.allowed] = 0.0
        return scores + mask


def _readable_ids(bundle: Any) -> list[int]:
    import string

    tok = bundle.processor.tokenizer
    chars = [c for c in string.ascii_letters + string.digits + ".,;:!?'-"] + ["▁"] * 6
    ids = tok.convert_tokens_to_ids(chars)
    return [i for i in ids if i is not None and i != tok.unk_token_id]


def _decode(bundle: Any, ids: Any) -> str:
    return bundle.processor.tokenizer.decode(ids, skip_special_tokens=True)


def _run(bundle: Any, prepared: PreparedInputs, *, max_new_tokens: int, streamer: Any = None):
    import torch

    from ..models.bundle import Generation

    inputs = model_inputs(bundle, prepared)
    prompt_ids = prepared.input_ids
    first_token_at: list[float] = []

    class _FirstToken:
        """A streamer that notes when the prompt's forward pass has finished."""

        def put(self, value):
            if len(first_token_at) < 2:
                first_token_at.append(time.perf_counter())

        def end(self):
            pass

    timing_streamer = _FirstToken()
    streamers = [timing_streamer] + ([streamer] if streamer is not None else [])

    class _Fanout:
        def put(self, value):
            for s in streamers:
                s.put(value)

        def end(self):
            for s in streamers:
                s.end()

    extra: dict[str, Any] = {}
    if bundle.is_random_weights:
        from transformers import LogitsProcessorList

        extra["logits_processor"] = LogitsProcessorList([_ReadableOnly(_readable_ids(bundle))])
    with _encoder_timer(bundle.model) as enc, torch.inference_mode():
        start = time.perf_counter()
        out = bundle.model.generate(
            **extra,
            **inputs,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            streamer=_Fanout(),
            pad_token_id=bundle.processor.tokenizer.pad_token_id,
        )
        end = time.perf_counter()
    new = out[0, len(prompt_ids) :].tolist()
    # generate() first puts the prompt, then each new token: the 2nd put is token one.
    prefill = (first_token_at[1] - start) if len(first_token_at) > 1 else end - start
    decode_s = end - start - prefill
    rate = (len(new) - 1) / decode_s if len(new) > 1 and decode_s > 0 else 0.0
    return Generation(
        text=_decode(bundle, new),
        prompt_tokens=len(prompt_ids),
        multimodal_tokens=_count_mm(bundle, prompt_ids),
        generated_tokens=len(new),
        preprocess_s=prepared.preprocess_s,
        encoder_s=enc["s"],
        prefill_s=prefill,
        decode_tokens_per_s=rate,
        is_random_weights=bundle.is_random_weights,
        timings={"total_s": prepared.preprocess_s + end - start},
    )


def generate_hf(
    bundle: Any,
    messages: Any,
    *,
    max_new_tokens: int = 32,
    max_soft_tokens: int | None = None,
    **processor_kwargs: Any,
):
    """Answer one chat turn with ``model.generate`` (greedy)."""
    prepared = prepare_inputs(bundle, messages, max_soft_tokens=max_soft_tokens, **processor_kwargs)
    return _run(bundle, prepared, max_new_tokens=max_new_tokens)


class _PieceStreamer:
    """Yields the new text after every generated token.

    transformers' TextIteratorStreamer holds text back until a space, so an answer
    without spaces would arrive all at once; this one only holds back an incomplete
    UTF-8 character.
    """

    _END = object()

    def __init__(self, tokenizer: Any, timeout: float = 300.0) -> None:
        import queue

        self.tokenizer = tokenizer
        self.queue: queue.Queue = queue.Queue()
        self.timeout = timeout
        self.ids: list[int] = []
        self.sent = 0
        self.prompt_seen = False

    def put(self, value) -> None:
        if not self.prompt_seen:  # generate() first puts the prompt
            self.prompt_seen = True
            return
        self.ids.extend(int(i) for i in value.reshape(-1).tolist())
        text = self.tokenizer.decode(self.ids, skip_special_tokens=True)
        if text.endswith("\ufffd"):
            return
        if len(text) > self.sent:
            self.queue.put(text[self.sent :])
            self.sent = len(text)

    def end(self) -> None:
        self.queue.put(self._END)

    def __iter__(self):
        while True:
            item = self.queue.get(timeout=self.timeout)
            if item is self._END:
                return
            yield item


def stream_hf(
    bundle: Any,
    messages: Any,
    *,
    max_new_tokens: int = 32,
    max_soft_tokens: int | None = None,
    **processor_kwargs: Any,
) -> Iterator[str]:
    """Yield the text of each generated token as it comes (generate()'s streamer hook).

    Bad input raises here, before the first piece, not inside the worker thread.
    """
    # Validate and preprocess in the caller's thread so errors surface cleanly.
    prepared = prepare_inputs(bundle, messages, max_soft_tokens=max_soft_tokens, **processor_kwargs)
    streamer = _PieceStreamer(bundle.processor.tokenizer)
    errors: list[BaseException] = []

    def work():
        try:
            _run(bundle, prepared, max_new_tokens=max_new_tokens, streamer=streamer)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            errors.append(exc)
            streamer.end()

    thread = threading.Thread(target=work, daemon=True)

    def pieces() -> Iterator[str]:
        thread.start()
        for piece in streamer:
            if piece:
                yield piece
        thread.join()
        if errors:
            raise errors[0]

    return pieces()
