"""The :class:`Bundle`: a family's real processor and model, and the engine that answers.

A bundle is what :func:`gemma_explore.load` returns. Analysis (plans, layouts, parity,
encoder reports) reads ``processor`` and ``model``; answering goes through ``engine``,
which is one of transformers (``hf``), ``vllm.LLM`` or an OpenAI-compatible server.
Each engine takes the same :class:`~gemma_explore.prompting.PreparedInputs`, so the
bundle never needs to know which one it holds.

>>> import gemma_explore as ge
>>> bundle = ge.load("tiny-gemma4")                     # doctest: +SKIP
>>> bundle.generate("Hello").text                      # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..families import FamilySpec, get_family
from ..prompting import PreparedInputs, prepare_inputs
from ..results import Generation

if TYPE_CHECKING:
    import torch
    from transformers import ProcessorMixin

__all__ = ["Bundle", "Engine", "MARKER_FILE"]

MARKER_FILE = "gemma_explore.json"  # written beside a saved bundle: family, random weights


class Engine(Protocol):
    """What answers a prepared chat turn: transformers, vLLM or an OpenAI-compatible server."""

    backend: str  # "hf", "vllm" or "openai"

    def generate(self, prepared: PreparedInputs, *, max_new_tokens: int) -> Generation:
        """The whole answer with its counts and timings."""
        ...

    def stream(
        self, prepared: PreparedInputs, *, max_new_tokens: int, stop: Any = None
    ) -> Iterator[str]:
        """The answer's text, piece by piece as it is generated; a set ``stop`` event ends it."""
        ...


@dataclass
class Bundle:
    """A family's real processor and model, loaded together, and the engine that answers."""

    name: str  # "tiny-gemma4", a folder or a hub id
    family: str  # "gemma3n" or "gemma4"
    processor: ProcessorMixin | None  # Gemma3nProcessor / Gemma4Processor (None: remote only)
    model: torch.nn.Module | None  # the transformers model (None when vLLM or a server holds it)
    engine: Engine  # answers prepared turns
    is_random_weights: bool  # True for the tiny offline bundles: their text is noise
    device: str = "cpu"  # where the model runs ("cuda", "cpu", or "remote")
    dtype: torch.dtype | None = None
    # What this checkpoint takes: Gemma 4 26B/31B have no audio tower, Gemma 3n no video.
    modalities: tuple[str, ...] = ("image", "audio", "video")

    @property
    def spec(self) -> FamilySpec:
        return get_family(self.family)

    @property
    def backend(self) -> str:
        return self.engine.backend

    def require_model(self, what: str) -> torch.nn.Module:
        """The transformers model, or a clear error for a bundle that has none."""
        if self.model is None:
            raise ValueError(
                f"{what} runs the model's own towers, which this {self.backend!r} bundle does "
                "not hold. Load the same checkpoint with backend='hf' (or use the tiny default)."
            )
        return self.model

    def __repr__(self) -> str:
        weights = "random weights" if self.is_random_weights else "trained weights"
        size = ""
        if self.model is not None:
            size = f"{sum(p.numel() for p in self.model.parameters()) / 1e6:.1f} M parameters, "
        return (
            f"Bundle({self.name!r}, family={self.family!r}, backend={self.backend!r}, "
            f"device={self.device!r}, {size}{weights})"
        )

    def save_pretrained(self, directory: str | os.PathLike) -> Path:
        """Save model and processor so ``from_pretrained`` (and vLLM) can load the folder."""
        model = self.require_model("Saving")
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(path)
        # A tokenizer that has been called with padding=True keeps that setting in its
        # Rust backend and writes it into tokenizer.json; on reload transformers turns it
        # into max_length=None / pad_to_multiple_of=None defaults that leak into the audio
        # feature extractor ("truncation=True needs max_length"). Save it unpadded.
        backend = getattr(self.processor.tokenizer, "_tokenizer", None)
        if backend is not None:
            backend.no_padding()
            backend.no_truncation()
        self.processor.save_pretrained(path)
        marker = {"family": self.family, "random_weights": self.is_random_weights}
        (path / MARKER_FILE).write_text(json.dumps({**marker, "source": self.name}, indent=2))
        return path

    def generate(
        self,
        messages: Any,
        *,
        max_new_tokens: int = 32,
        stream: bool = False,
        max_soft_tokens: int | None = None,
        images: Any = (),
        audios: Any = (),
        videos: Any = (),
        stop: Any = None,
        **processor_kwargs: Any,
    ) -> Generation | Iterator[str]:
        """Answer a chat turn (or plain text with attachments). ``stream=True`` yields text.

        Messages hold images, audio and (Gemma 4) video items; ``max_soft_tokens``
        sets Gemma 4's per-request image budget. ``template=False`` (a processor option,
        see :func:`~gemma_explore.prompting.prepare_inputs`) sends a raw prompt, as
        vLLM's ``LLM.generate`` takes it; transformers and vLLM engines take it, an
        OpenAI-compatible server's chat API refuses it. Bad input raises here, before any
        generation starts.
        """
        prepared = prepare_inputs(
            self, messages, images=images, audios=audios, videos=videos,
            max_soft_tokens=max_soft_tokens, **processor_kwargs,
        )  # fmt: skip
        if stream:  # stop: a threading.Event that ends the stream at its next token
            if stop is None:
                return self.engine.stream(prepared, max_new_tokens=max_new_tokens)
            return self.engine.stream(prepared, max_new_tokens=max_new_tokens, stop=stop)
        return self.engine.generate(prepared, max_new_tokens=max_new_tokens)
