"""The :class:`Bundle`: a family's real processor and model, and the engine that answers.

A bundle is what :func:`gemma_explore.load` returns. Analysis (plans, layouts, parity,
encoder reports) reads ``processor`` and ``model``; answering goes through ``engine``,
which is one of transformers (``hf``), ``vllm.LLM`` or an OpenAI-compatible server.
Each engine takes the same :class:`~gemma_explore.processing.inputs.PreparedInputs`, so the
bundle never needs to know which one it holds.

>>> import gemma_explore as ge

Not run by the doctests: generation on random weights writes noise, different on every machine.

>>> bundle = ge.load("tiny-gemma4")                     # doctest: +SKIP
>>> bundle.generate("Hello").text                      # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gemma_explore.facts.families import FamilySpec, get_family
from gemma_explore.models.vocabulary import LABEL_CACHED, LABEL_FETCHED, NOTICE, vocabulary_of
from gemma_explore.plans.long_audio import plan_long_audio
from gemma_explore.processing.inputs import PreparedInputs, prepare_inputs
from gemma_explore.processing.transcription import (
    Transcription,
    join_window_texts,
    transcription_request,
)

if TYPE_CHECKING:
    import torch
    from transformers import ProcessorMixin

__all__ = ["MARKER_FILE", "Bundle", "Engine", "Generation"]

MARKER_FILE = "gemma_explore.json"  # written beside a saved bundle: family, random weights


@dataclass(frozen=True)
class Generation:
    """One answer with its token counts and timings. ``str(gen)`` is the text."""

    text: str
    prompt_tokens: int | None  # tokens in the expanded prompt (None: not reported)
    multimodal_tokens: int | None  # of which are soft-token placeholders (None: not reported)
    generated_tokens: int | None  # (None: not reported)
    preprocess_s: float = 0.0  # processor: resize, patches, mel, tokenisation
    encoder_s: float | None = None  # vision + audio towers (None: not separable, e.g. vLLM)
    prefill_s: float | None = None  # first forward pass, encoders included
    decode_tokens_per_s: float | None = None  # tokens after the first, per second
    is_random_weights: bool = False  # the text is noise when True
    timings: dict[str, float] = field(default_factory=dict)  # anything else measured

    def __str__(self) -> str:
        return self.text


class Engine(Protocol):
    """What answers a prepared chat turn: transformers, vLLM or an OpenAI-compatible server."""

    name: str  # "hf", "vllm" or "openai": the value of load(engine=…)

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
    family: str  # "gemma3n", "gemma4" or "gemma4_unified"
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
    def vocabulary(self) -> str:
        """Which tokenizer cuts this bundle's text, as every surface shows it: one of
        :data:`~gemma_explore.models.vocabulary.LABELS` ("Gemma vocabulary (fetched)",
        "stand-in: text counted by characters", "your cached checkpoint's"). A folder saved
        from a tiny bundle says what it was saved with (its ``gemma_explore.json``).


        Not run by the doctests: the answer depends on what this machine has fetched.

        >>> ge.load("tiny-gemma4").vocabulary                 # doctest: +SKIP
        'Gemma vocabulary (fetched)'
        """
        tokenizer = getattr(self.processor, "tokenizer", None)
        label = vocabulary_of(tokenizer)
        if label == LABEL_CACHED and tokenizer is not None:
            marker = Path(str(getattr(tokenizer, "name_or_path", "") or ".")) / MARKER_FILE
            if marker.is_file():
                label = json.loads(marker.read_text()).get("vocabulary", label)
        return label

    def require_model(self, what: str) -> torch.nn.Module:
        """The transformers model, or a clear error for a bundle that has none."""
        if self.model is None:
            raise ValueError(
                f"{what} runs the model's own towers, which this {self.engine.name!r} bundle does "
                "not hold. Load the same checkpoint with engine='hf' (or use the tiny default)."
            )
        return self.model

    def __repr__(self) -> str:
        weights = "random weights" if self.is_random_weights else "trained weights"
        size = ""
        if self.model is not None:
            size = f"{sum(p.numel() for p in self.model.parameters()) / 1e6:.1f} M parameters, "
        return (
            f"Bundle({self.name!r}, family={self.family!r}, engine={self.engine.name!r}, "
            f"device={self.device!r}, {size}{weights})"
        )

    def save_pretrained(self, directory: str | os.PathLike) -> Path:
        """Save model and processor so ``from_pretrained`` (and vLLM) can load the folder."""
        model = self.require_model("Saving")
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        # vLLM reads the default image budget from config.json (Gemma 4:
        # vision_config.default_output_length, Unified: vision_config.num_soft_tokens),
        # which transformers' config classes do not define: write the processor's.
        key = self.spec.budget_config_field
        vision = getattr(model.config, "vision_config", None)
        if key and vision is not None and getattr(vision, key, None) is None:
            image_processor = getattr(self.processor, "image_processor", None)
            budget = getattr(image_processor, "max_soft_tokens", None)
            setattr(vision, key, budget or self.spec.image.default_budget)
        model.save_pretrained(path)
        # A tokenizer that has been called with padding=True keeps that setting in its
        # Rust backend and writes it into tokenizer.json; on reload transformers turns it
        # into max_length=None / pad_to_multiple_of=None defaults that leak into the audio
        # feature extractor ("truncation=True needs max_length"). Save it unpadded.
        rust = getattr(self.processor.tokenizer, "_tokenizer", None)
        if rust is not None:
            rust.no_padding()
            rust.no_truncation()
        self.processor.save_pretrained(path)
        vocabulary = self.vocabulary
        if vocabulary == LABEL_FETCHED:  # a modified Gemma file travels with its notice
            (path / "GEMMA_NOTICE.txt").write_text(NOTICE + "\n")
        marker = {
            "family": self.family,
            "random_weights": self.is_random_weights,
            "vocabulary": vocabulary,
        }
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
        see :func:`~gemma_explore.processing.inputs.prepare_inputs`) sends a raw prompt, as
        vLLM's ``LLM.generate`` takes it; transformers and vLLM engines take it, an
        OpenAI-compatible server's chat API refuses it. Bad input raises here, before any
        generation starts.
        """
        prepared = prepare_inputs(
            messages,
            bundle=self,
            images=images,
            audios=audios,
            videos=videos,
            max_soft_tokens=max_soft_tokens,
            **processor_kwargs,
        )
        if stream:  # stop: a threading.Event that ends the stream at its next token
            if stop is None:
                return self.engine.stream(prepared, max_new_tokens=max_new_tokens)
            return self.engine.stream(prepared, max_new_tokens=max_new_tokens, stop=stop)
        return self.engine.generate(prepared, max_new_tokens=max_new_tokens)

    def transcribe(
        self,
        audio: Any,
        *,
        language: str | None = None,
        task: str = "transcribe",
        to_language: str | None = None,
        max_new_tokens: int = 128,
        sampling_rate: int | None = None,
        split: bool = True,
        overlap_s: float = 1.0,
    ) -> Transcription:
        """Gemma 3n speech-to-text with the fixed prompt vLLM's transcription API uses.

        ``language`` / ``to_language`` are ISO 639-1 codes; ``task`` is ``"transcribe"`` or
        ``"translate"``. Clips are resampled to 16 kHz and taken up to 600 s (vLLM's decode
        limit). A clip longer than the model hears (30 s) is sent, with ``split``, as the
        windows of :func:`~gemma_explore.plans.long_audio.plan_long_audio` (cut at quiet
        points, ``overlap_s`` apart), one request each, in order, and the texts are joined
        (:func:`~gemma_explore.processing.transcription.join_window_texts`); the result's
        ``windows`` and ``note`` say how. With ``split=False`` it goes whole: the model hears
        the first 30 s, and the result's ``warnings`` say so.
        transformers and vLLM engines generate from :func:`~gemma_explore.processing.transcription.transcription_prompt`;
        an OpenAI-compatible server is asked through ``/v1/audio/transcriptions`` (or
        ``/translations``), where it builds the same prompt itself.


        Not run by the doctests: it needs a clip on disk and runs generation.

        >>> ge.load("tiny-gemma3n").transcribe("clip.wav", language="fr").note  # doctest: +SKIP
        'Random weights: this text is noise, not a transcription.'
        """
        request = transcription_request(
            audio,
            family=self.family,
            language=language,
            task=task,
            to_language=to_language,
            sampling_rate=sampling_rate,
        )
        windows: tuple[tuple[float, float, str], ...] = ()
        join_steps: tuple[str, ...] = ()
        if split and request.duration_s > request.heard_s:
            plan = plan_long_audio(
                (request.wave, self.spec.audio.sampling_rate), family=self.spec, overlap_s=overlap_s
            )
            texts = [
                self._transcribe_wave(request, request.wave[w.start : w.end], max_new_tokens)
                for w in plan.windows
            ]
            text, join_steps = join_window_texts(texts, overlapped=overlap_s > 0)
            windows = tuple(
                (w.start_s, w.end_s, t) for w, t in zip(plan.windows, texts, strict=True)
            )
        else:
            text = self._transcribe_wave(request, request.wave, max_new_tokens)
        return Transcription(
            text=text,
            prompt=request.prompt,
            task=request.task,
            language=request.language,
            to_language=request.to_language,
            duration_s=request.duration_s,
            engine=self.engine.name,
            is_random_weights=self.is_random_weights,
            windows=windows,
            join_steps=join_steps,
        )

    def _transcribe_wave(self, request: Any, wave: Any, max_new_tokens: int) -> str:
        """One request for one (16 kHz) wave: the server's speech-to-text endpoint, or a
        generation from the fixed prompt."""
        served = getattr(self.engine, "transcribe", None)
        if served is not None:  # a server: its own speech-to-text endpoints
            return served(
                wave,
                language=request.language,
                task=request.task,
                to_language=request.to_language,
                max_new_tokens=max_new_tokens,
            )
        out = self.generate(
            request.prompt,
            audios=[(wave, self.spec.audio.sampling_rate)],
            template=False,
            max_new_tokens=max_new_tokens,
        )
        return out.text
