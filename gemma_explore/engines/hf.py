"""The transformers engine: ``model.generate`` on CPU or GPU, plain and streaming, timed.

Not run by the doctests: it needs a model and processor in hand (``ge.load`` builds both), and random weights may stop before 4 tokens.

>>> engine = HFEngine(model, processor, family="gemma4", is_random_weights=True)  # doctest: +SKIP
>>> engine.generate(prepare_inputs("Hi", bundle=bundle), max_new_tokens=4).generated_tokens  # doctest: +SKIP
4
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gemma_explore.facts.families import FamilySpec, get_family
from gemma_explore.models.bundle import Generation
from gemma_explore.processing.inputs import PreparedInputs

if TYPE_CHECKING:
    import torch
    from transformers import ProcessorMixin

__all__ = ["HFEngine", "encoder_free_video_inputs", "forward_drops_video_frames"]

# The first transformers whose Gemma 4 forward passes num_frames_per_video on. In 5.23.0
# Gemma4ForConditionalGeneration.forward hands it to the model
# (models/gemma4/modeling_gemma4.py:2683) and Gemma4Model.forward to get_video_features
# (:2419-2421); Unified the same (models/gemma4_unified/modeling_gemma4_unified.py:1424 and
# :1114-1116). Up to 5.22.2 neither passes it (5.19.0 modeling_gemma4.py:2343-2345,
# 5.22.2 :2346-2348), so get_video_features raises "`num_frames_per_video` is required".
_FORWARD_PASSES_VIDEO_FRAMES = (5, 23)


@contextmanager
def _encoder_timer(model: Any):
    """Time the vision and audio towers with forward hooks (seconds, summed)."""
    spent = {"s": 0.0}
    starts: list[float] = []
    handles = []
    inner = getattr(model, "model", model)
    names = ("vision_tower", "audio_tower")
    if not any(getattr(inner, n, None) is not None for n in names):
        names = ("embed_vision", "embed_audio")  # Unified: its embedders are the "encoder"
    for name in names:
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


def _readable_ids(tok: Any) -> list[int]:
    import string

    chars = [c for c in string.ascii_letters + string.digits + ".,;:!?'-"] + ["▁"] * 6
    ids = tok.convert_tokens_to_ids(chars)
    return [i for i in ids if i is not None and i != tok.unk_token_id]


def forward_drops_video_frames() -> bool:
    """Does the installed transformers' Gemma 4 (and Unified) ``forward`` drop
    ``num_frames_per_video``, so that calling it on a video raises? True before 5.23.

    >>> isinstance(forward_drops_video_frames(), bool)
    True
    """
    import transformers

    major, minor = (int(x) for x in re.match(r"(\d+)\.(\d+)", transformers.__version__).groups())
    return (major, minor) < _FORWARD_PASSES_VIDEO_FRAMES


def encoder_free_video_inputs(model: Any, inputs: dict[str, Any]) -> dict[str, Any]:
    """Inputs for calling a Gemma 4 or Unified model's ``forward`` directly on a video, in
    every transformers the package supports.

    Before transformers 5.23, ``Gemma4ForConditionalGeneration.forward`` (and Unified's)
    accepts ``num_frames_per_video`` but does not pass it on, so the inner model's
    ``get_video_features`` raises "`num_frames_per_video` is required"
    (:func:`forward_drops_video_frames`). There we compute the features with the model's
    own ``get_video_features`` (and ``get_image_features`` for images in the same turn)
    and hand them in as ``mm_encoder_outputs``; ``forward`` refuses pixel tensors next to
    that argument, so they are left out. From 5.23 ``forward`` passes the frame counts
    itself, and the inputs come back as they are. ``generate`` never needs this: it
    encodes images and video before the first forward with ``get_video_features`` and
    every argument its signature names (``_prepare_multimodal_encoder_kwargs_for_generation``),
    in every transformers the package supports.

    Not run by the doctests: its output depends on the installed transformers (5.23 changed it).

    >>> kwargs = encoder_free_video_inputs(model, prepared.to_model(model))  # doctest: +SKIP
    >>> sorted(kwargs["mm_encoder_outputs"])  # before transformers 5.23  # doctest: +SKIP
    ['video']
    """
    if "pixel_values_videos" not in inputs or not forward_drops_video_frames():
        return inputs
    rest = dict(inputs)
    videos = rest.pop("pixel_values_videos")  # (frames, budget, 6912)
    positions = rest.pop("video_position_ids")  # (frames, budget, 2)
    frames = rest.pop("num_frames_per_video")  # (videos,)
    inner = model.model
    encoded = {
        "video": inner.get_video_features(
            videos, positions, num_frames_per_video=frames, return_dict=True
        )
    }
    if "pixel_values" in rest:
        pixels, pos = rest.pop("pixel_values"), rest.pop("image_position_ids")
        encoded["image"] = inner.get_image_features(pixels, pos, return_dict=True)
    rest["mm_encoder_outputs"] = encoded
    return rest


class _StopWhenSet:
    """A transformers ``StoppingCriteria``: ends generation once ``event`` is set (the
    demo's Stop button, or a stream whose reader went away), at the next token."""

    def __init__(self, event: threading.Event) -> None:
        self.event = event

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        # (batch,) bool: every sequence of the batch is done once the event is set.
        return torch.full((input_ids.shape[0],), self.event.is_set(), device=input_ids.device)


def _run(
    engine: HFEngine,
    prepared: PreparedInputs,
    *,
    max_new_tokens: int,
    streamer: Any = None,
    stop: threading.Event | None = None,
) -> Generation:
    import torch

    model, tokenizer = engine.model, engine.processor.tokenizer
    inputs = prepared.to_model(model)
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

    extra = _generate_options(engine, stop)
    with _encoder_timer(model) as enc, torch.inference_mode():
        start = time.perf_counter()
        # generate encodes video itself (see encoder_free_video_inputs): inputs as they are.
        out = model.generate(
            **extra,
            **inputs,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            streamer=_Fanout(),
            pad_token_id=tokenizer.pad_token_id,
        )
        end = time.perf_counter()
    new = out[0, len(prompt_ids) :].tolist()
    # generate() first puts the prompt, then each new token: the 2nd put is token one.
    prefill = (first_token_at[1] - start) if len(first_token_at) > 1 else end - start
    decode_s = end - start - prefill
    rate = (len(new) - 1) / decode_s if len(new) > 1 and decode_s > 0 else None
    return Generation(
        text=tokenizer.decode(new, skip_special_tokens=True),
        prompt_tokens=len(prompt_ids),
        multimodal_tokens=engine.spec.count_placeholders(prompt_ids),
        generated_tokens=len(new),
        preprocess_s=prepared.preprocess_s,
        encoder_s=enc["s"],
        prefill_s=prefill,
        decode_tokens_per_s=rate,
        is_random_weights=engine.is_random_weights,
        timings={"total_s": prepared.preprocess_s + end - start},
    )


def _generate_options(engine: HFEngine, stop: threading.Event | None) -> dict[str, Any]:
    """``model.generate`` options beyond greedy decoding: random weights answer only in
    readable tokens; a set ``stop`` event ends the answer."""
    extra: dict[str, Any] = {}
    if engine.is_random_weights:
        from transformers import LogitsProcessorList

        readable = _ReadableOnly(_readable_ids(engine.processor.tokenizer))
        extra["logits_processor"] = LogitsProcessorList([readable])
    if stop is not None:
        from transformers import StoppingCriteria, StoppingCriteriaList

        stopper = type("_StopWhenSetCriteria", (_StopWhenSet, StoppingCriteria), {})(stop)
        extra["stopping_criteria"] = StoppingCriteriaList([stopper])
    return extra


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


@dataclass
class HFEngine:
    """Answers prepared turns with the transformers model itself (greedy decoding)."""

    model: torch.nn.Module
    processor: ProcessorMixin
    family: str
    is_random_weights: bool  # restrict the noise to printable text (see _ReadableOnly)
    name: str = "hf"

    @property
    def spec(self) -> FamilySpec:
        return get_family(self.family)

    def generate(self, prepared: PreparedInputs, *, max_new_tokens: int = 32) -> Generation:
        """The whole answer, with counts and preprocess/encoder/prefill/decode timings."""
        return _run(self, prepared, max_new_tokens=max_new_tokens)

    def stream(
        self,
        prepared: PreparedInputs,
        *,
        max_new_tokens: int = 32,
        stop: threading.Event | None = None,
    ) -> Iterator[str]:
        """Yield the text of each generated token as it comes (generate()'s streamer hook).

        The input was validated and processed by the caller, so bad input raised there,
        not inside the worker thread. Setting ``stop``, or closing the iterator (a reader
        that goes away), ends ``model.generate`` at its next token: no abandoned thread
        keeps generating.
        """
        streamer = _PieceStreamer(self.processor.tokenizer)
        errors: list[BaseException] = []
        stop = stop if stop is not None else threading.Event()

        def work() -> None:
            try:
                _run(self, prepared, max_new_tokens=max_new_tokens, streamer=streamer, stop=stop)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
                errors.append(exc)
                streamer.end()

        thread = threading.Thread(target=work, daemon=True, name="gemma_explore generate")

        def pieces() -> Iterator[str]:
            thread.start()
            try:
                for piece in streamer:
                    if stop.is_set():
                        break
                    if piece:
                        yield piece
            finally:
                stop.set()  # stopped, finished or abandoned: generate() ends at its next token
            thread.join()
            if errors:
                raise errors[0]

        return pieces()
