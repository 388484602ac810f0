"""An engine for a running ``vllm serve`` (or any OpenAI-compatible server), through
the official ``openai`` SDK.

Media travel inline as data URLs: ``image_url`` (PNG), ``input_audio`` (WAV, base64),
``video_url`` (MP4). Gemma 4's per-request budget goes in ``mm_processor_kwargs``, a
vLLM extension of the request body, sent with the SDK's ``extra_body``; ``vllm serve``
refuses it (400) unless started with ``--trust-request-mm-kwargs``, which
``gemma-explore serve-args`` prints for Gemma 4.

    vllm serve google/gemma-4-E4B-it --max-model-len 8192 --trust-request-mm-kwargs

Then (not run by the doctests: it needs that server):

    >>> bundle = ge.load("google/gemma-4-E4B-it", engine="openai",
    ...                  base_url="http://127.0.0.1:8000/v1")   # doctest: +SKIP
"""

from __future__ import annotations

import base64
import io
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from gemma_explore.engines.server_reply import (
    ServerFault,
    bounded_client,
    check_chat_answer,
    fault_from_exception,
    fault_from_response,
    read_json,
)
from gemma_explore.errors import EngineError
from gemma_explore.facts.families import AUDIO_SAMPLING_RATE, DEFAULT_FAMILY, FamilySpec
from gemma_explore.media.loaders import Video
from gemma_explore.models.bundle import Generation
from gemma_explore.processing.inputs import PreparedInputs, prepare_media

if TYPE_CHECKING:
    from gemma_explore.models.bundle import Bundle

__all__ = ["DEFAULT_BASE_URL", "OpenAIEngine", "chat_messages", "chat_request"]

DEFAULT_BASE_URL = os.environ.get("GEMMA_EXPLORE_OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")


def _png_data_url(image: Any) -> str:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _wav_base64(wave: Any, sampling_rate: int) -> str:
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, wave, sampling_rate, format="WAV", subtype="PCM_16")
    return base64.b64encode(buf.getvalue()).decode()


def _mp4_data_url(video: Video) -> str:
    """The clip as the server should sample it itself: the original file when there is
    one (a video read from a file keeps only its sampled frames), else the frames."""
    if video.data is not None or video.source is not None:
        raw = video.data if video.data is not None else Path(video.source).read_bytes()
        return "data:video/mp4;base64," + base64.b64encode(raw).decode()
    import cv2

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "clip.mp4")
        h, w = video.frames.shape[1:3]
        writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*"mp4v"), video.fps, (w, h))
        for frame in video.frames:
            writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
        writer.release()
        with open(path, "rb") as fh:
            return "data:video/mp4;base64," + base64.b64encode(fh.read()).decode()


def chat_messages(
    prepared: PreparedInputs, *, sampling_rate: int = AUDIO_SAMPLING_RATE
) -> list[dict]:
    """The chat-completions ``messages`` for a prepared turn: each media item in place,
    as a data URL of the image, clip or video that was loaded and checked."""
    media = {
        "image": iter(prepared.images),
        "audio": iter(prepared.audios),
        "video": iter(prepared.videos),
    }
    out = []
    for m in prepared.messages:
        content = m.get("content", "")
        if isinstance(content, str):
            out.append({"role": m["role"], "content": content})
            continue
        parts: list[dict[str, Any]] = []
        for item in content:
            kind = item["type"]
            if kind == "text":
                parts.append({"type": "text", "text": item.get("text", "")})
            elif kind == "image":
                parts.append(
                    {"type": "image_url", "image_url": {"url": _png_data_url(next(media[kind]))}}
                )
            elif kind == "audio":
                data = _wav_base64(next(media[kind]), sampling_rate)
                parts.append(
                    {"type": "input_audio", "input_audio": {"data": data, "format": "wav"}}
                )
            else:
                url = _mp4_data_url(next(media[kind]))
                parts.append({"type": "video_url", "video_url": {"url": url}})
        out.append({"role": m["role"], "content": parts})
    return out


def chat_request(
    messages: Any,
    *,
    model: str,
    family: str | FamilySpec | Bundle = DEFAULT_FAMILY,
    max_tokens: int = 32,
    stream: bool = False,
    max_soft_tokens: int | None = None,
) -> dict[str, Any]:
    """The JSON body of ``POST /v1/chat/completions`` for a multimodal chat (for a
    ``curl`` or any other client; :class:`OpenAIEngine` sends the same through the SDK).

    >>> chat_request("Hi", model="google/gemma-4-E4B-it")["messages"]
    [{'role': 'user', 'content': [{'type': 'text', 'text': 'Hi'}]}]
    """
    prepared = prepare_media(messages, family=family, max_soft_tokens=max_soft_tokens)
    body: dict[str, Any] = {
        "model": model,
        "messages": chat_messages(prepared),
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "stream": stream,
    }
    if prepared.request_kwargs:
        body["mm_processor_kwargs"] = dict(prepared.request_kwargs)
    return body


class OpenAIEngine:
    """Answers prepared turns through an OpenAI-compatible server's chat completions.

    Every request ends within ``timeout`` seconds (its connection, headers and body
    together) and reads at most ``MAX_REPLY_BYTES`` (a stream: per line); whatever a server
    does wrong is one line (:mod:`~gemma_explore.engines.server_reply`, the words the probe
    uses): a ``ConnectionError`` when nothing listens, else an ``EngineError``."""

    name = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        timeout: float = 600.0,
    ) -> None:
        from openai import OpenAI

        self.model, self.base_url, self.timeout = model, base_url, timeout
        key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"  # vllm serve takes any
        self.client = OpenAI(
            base_url=base_url,
            api_key=key,
            timeout=timeout,
            max_retries=0,
            http_client=bounded_client(timeout),
        )

    def _raise(self, fault: ServerFault) -> NoReturn:
        if fault.kind in ("refused", "unreachable"):
            raise ConnectionError(
                f"{fault.line} (start one with `vllm serve {self.model}`, or pass base_url=…)"
            ) from None
        raise EngineError(fault.line) from None

    @contextmanager
    def _answering(self) -> Iterator[None]:
        """Whatever the request meets (a refused connection, a banner, an HTML page, a
        deadline, an answer over the cap, a status error) as one line that says what to do."""
        try:
            yield
        except (EngineError, ConnectionError):
            raise
        except Exception as exc:  # noqa: BLE001 - every failure of the server is one line
            self._raise(fault_from_exception(self.base_url, exc, seconds=self.timeout))

    def _json(self, raw: Any) -> Any:
        """The JSON of a raw SDK answer, or the one line saying what is wrong with it."""
        with self._answering():
            data, fault = read_json(self.base_url, raw.http_response)
        if fault is not None:
            self._raise(fault)
        return data

    def _create(self, prepared: PreparedInputs, *, max_new_tokens: int, stream: bool) -> Any:
        if not prepared.template:
            raise EngineError(
                "A raw prompt (template=False) is what vLLM's LLM.generate takes; an "
                "OpenAI-compatible server's chat API writes the placeholders itself. Send "
                "messages (template=True) here, or use engine='vllm' for raw prompts."
            )
        extra = {"mm_processor_kwargs": prepared.request_kwargs} if prepared.request_kwargs else {}
        messages = chat_messages(prepared)
        with self._answering():
            return self.client.chat.completions.with_raw_response.create(
                model=self.model,
                messages=messages,
                max_tokens=max_new_tokens,
                temperature=0.0,
                stream=stream,
                extra_body=extra or None,
            )

    def generate(self, prepared: PreparedInputs, *, max_new_tokens: int = 32) -> Generation:
        start = time.perf_counter()
        data = self._json(self._create(prepared, max_new_tokens=max_new_tokens, stream=False))
        elapsed = time.perf_counter() - start
        fault = check_chat_answer(self.base_url, data, model=self.model)
        if fault is not None:
            self._raise(fault)
        usage = data.get("usage") or {}
        made = usage.get("completion_tokens")
        return Generation(
            text=str(data["choices"][0]["message"].get("content") or ""),
            prompt_tokens=usage.get("prompt_tokens"),  # checked: a count a prompt can have
            multimodal_tokens=None,  # the server does not report it
            generated_tokens=made if isinstance(made, int) and made >= 0 else None,
            preprocess_s=0.0,
            encoder_s=None,
            prefill_s=None,
            decode_tokens_per_s=None,
            is_random_weights=False,
            timings={"request_s": elapsed},
        )

    def stream(
        self, prepared: PreparedInputs, *, max_new_tokens: int = 32, stop: Any = None
    ) -> Iterator[str]:
        """The server's streamed pieces; setting ``stop`` (a threading.Event) closes the
        stream, which ends the request on the server."""
        raw = self._create(prepared, max_new_tokens=max_new_tokens, stream=True)
        kind = raw.http_response.headers.get("content-type", "")
        if "text/event-stream" not in kind:
            fault = None
            with self._answering():
                fault = fault_from_response(self.base_url, raw.http_response)
            self._raise(
                fault
                or ServerFault(
                    "not_openai",
                    f"the server at {self.base_url} answered {kind or 'a body'} where a stream "
                    "(text/event-stream) was asked, not vLLM's OpenAI API: check the port and "
                    "that the URL ends in /v1",
                )
            )
        with self._answering():
            chunks = raw.parse()
        try:
            with self._answering():
                for chunk in chunks:
                    if stop is not None and stop.is_set():
                        break
                    if chunk.choices and chunk.choices[0].delta.content:
                        yield chunk.choices[0].delta.content
        finally:
            getattr(chunks, "close", lambda: None)()

    def transcribe(
        self,
        wave: Any,
        *,
        language: str | None = None,
        task: str = "transcribe",
        to_language: str | None = None,
        max_new_tokens: int | None = None,
        sampling_rate: int = AUDIO_SAMPLING_RATE,
    ) -> str:
        """Ask the server's ``/v1/audio/transcriptions`` (or ``/translations``) for a checked
        16 kHz clip; vLLM builds Gemma 3n's fixed prompt from ``language``/``to_language``."""

        clip = ("clip.wav", base64.b64decode(_wav_base64(wave, sampling_rate)), "audio/wav")
        extra: dict[str, Any] = {}
        if max_new_tokens is not None:
            extra["max_completion_tokens"] = max_new_tokens  # a vLLM extension of the form
        with self._answering():
            if task == "translate":
                # OpenAI's translations API has no language fields; vLLM's takes both.
                extra.update(
                    {k: v for k, v in (("language", language), ("to_language", to_language)) if v}
                )
                raw = self.client.audio.translations.with_raw_response.create(
                    model=self.model, file=clip, temperature=0.0, extra_body=extra or None
                )
            else:
                kwargs = {"language": language} if language else {}
                raw = self.client.audio.transcriptions.with_raw_response.create(
                    model=self.model,
                    file=clip,
                    temperature=0.0,
                    extra_body=extra or None,
                    **kwargs,
                )
        data = self._json(raw)
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            self._raise(
                ServerFault(
                    "not_openai",
                    f"the server at {self.base_url} answered JSON with no transcription text, "
                    "not vLLM's OpenAI API: check the port and that the URL ends in /v1",
                )
            )
        return data["text"]
