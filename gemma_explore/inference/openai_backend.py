"""A client for a running ``vllm serve`` (OpenAI-compatible chat completions).

Media travel inline as data URLs: ``image_url`` (PNG), ``input_audio`` (WAV, base64),
``video_url`` (MP4). Gemma 4's per-request budget goes in ``mm_processor_kwargs``, a
vLLM extension of the request body.

    vllm serve google/gemma-4-E4B-it --max-model-len 8192 --limit-mm-per-prompt '{"image":4}'
    >>> bundle = ge.load("google/gemma-4-E4B-it", backend="openai",
    ...                  base_url="http://127.0.0.1:8000/v1")   # doctest: +SKIP
"""

from __future__ import annotations

import base64
import io
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..prompting import normalize_messages

__all__ = ["OpenAIClient", "chat_request", "DEFAULT_BASE_URL"]

DEFAULT_BASE_URL = os.environ.get("GEMMA_EXPLORE_OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")


def _png_data_url(image: Any) -> str:
    from ..media import load_image

    buf = io.BytesIO()
    load_image(image).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _wav_base64(audio: Any, sampling_rate: int | None) -> str:
    import soundfile as sf

    from ..media import load_audio

    wave, _ = load_audio(audio, sampling_rate=sampling_rate)
    buf = io.BytesIO()
    sf.write(buf, wave, 16_000, format="WAV", subtype="PCM_16")
    return base64.b64encode(buf.getvalue()).decode()


def _mp4_data_url(video: Any, fps: float | None) -> str:
    import os as _os
    import tempfile

    import cv2

    from ..media import load_video

    if isinstance(video, str | _os.PathLike) and str(video).lower().endswith(".mp4"):
        with open(video, "rb") as fh:
            return "data:video/mp4;base64," + base64.b64encode(fh.read()).decode()
    v = load_video(video, fps=fps)
    with tempfile.TemporaryDirectory() as tmp:
        path = _os.path.join(tmp, "clip.mp4")
        h, w = v.frames.shape[1:3]
        writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*"mp4v"), v.fps, (w, h))
        for frame in v.frames:
            writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
        writer.release()
        with open(path, "rb") as fh:
            return "data:video/mp4;base64," + base64.b64encode(fh.read()).decode()


def chat_request(
    messages: Any,
    *,
    model: str,
    max_tokens: int = 32,
    stream: bool = False,
    max_soft_tokens: int | None = None,
) -> dict[str, Any]:
    """The JSON body of ``POST /v1/chat/completions`` for a multimodal chat."""
    out_messages = []
    for m in normalize_messages(messages):
        content = m.get("content", "")
        if isinstance(content, str):
            out_messages.append({"role": m["role"], "content": content})
            continue
        parts = []
        for item in content:
            kind = item.get("type")
            if kind == "text":
                parts.append({"type": "text", "text": item.get("text", "")})
            elif kind == "image":
                parts.append(
                    {"type": "image_url", "image_url": {"url": _png_data_url(item.get("image"))}}
                )
            elif kind == "audio":
                parts.append(
                    {
                        "type": "input_audio",
                        "input_audio": {
                            "data": _wav_base64(item.get("audio"), item.get("sampling_rate")),
                            "format": "wav",
                        },
                    }
                )
            elif kind == "video":
                parts.append(
                    {
                        "type": "video_url",
                        "video_url": {"url": _mp4_data_url(item.get("video"), item.get("fps"))},
                    }
                )
            else:
                raise ValueError(f"Unknown content type {kind!r}.")
        out_messages.append({"role": m["role"], "content": parts})
    body: dict[str, Any] = {
        "model": model,
        "messages": out_messages,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "stream": stream,
    }
    if max_soft_tokens is not None:
        body["mm_processor_kwargs"] = {"max_soft_tokens": int(max_soft_tokens)}
    return body


@dataclass
class OpenAIClient:
    """Talks to an OpenAI-compatible server (``vllm serve``) over HTTP."""

    model: str
    base_url: str = DEFAULT_BASE_URL
    api_key: str | None = None
    timeout: float = 600.0

    def _headers(self) -> dict[str, str]:
        key = self.api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        return {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def _no_server(self, exc: Exception) -> str:
        return (
            f"No OpenAI-compatible server answered at {self.base_url} ({exc}). Start one "
            f"with `vllm serve {self.model}` or pass base_url=…."
        )

    def _url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    def complete(
        self, messages: Any, *, max_tokens: int = 32, max_soft_tokens: int | None = None
    ) -> dict[str, Any]:
        import httpx

        body = chat_request(
            messages, model=self.model, max_tokens=max_tokens, max_soft_tokens=max_soft_tokens
        )
        try:
            r = httpx.post(self._url(), json=body, headers=self._headers(), timeout=self.timeout)
        except httpx.HTTPError as exc:
            raise ConnectionError(self._no_server(exc)) from None
        if r.status_code != 200:
            raise RuntimeError(
                f"The server at {self.base_url} answered {r.status_code}: {r.text[:300]}"
            )
        return r.json()

    def stream(
        self, messages: Any, *, max_tokens: int = 32, max_soft_tokens: int | None = None
    ) -> Iterator[str]:
        import httpx

        body = chat_request(
            messages,
            model=self.model,
            max_tokens=max_tokens,
            stream=True,
            max_soft_tokens=max_soft_tokens,
        )
        try:
            with httpx.stream(
                "POST", self._url(), json=body, headers=self._headers(), timeout=self.timeout
            ) as r:
                if r.status_code != 200:
                    raise RuntimeError(f"The server at {self.base_url} answered {r.status_code}.")
                for line in r.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    delta = json.loads(data)["choices"][0].get("delta", {})
                    if delta.get("content"):
                        yield delta["content"]
        except httpx.HTTPError as exc:
            raise ConnectionError(self._no_server(exc)) from None


def generate_openai(
    bundle: Any,
    messages: Any,
    *,
    max_new_tokens: int = 32,
    stream: bool = False,
    max_soft_tokens: int | None = None,
):
    """Bundle.generate for backend='openai'."""
    from ..models.bundle import Generation

    client: OpenAIClient = bundle.model
    if stream:
        return client.stream(messages, max_tokens=max_new_tokens, max_soft_tokens=max_soft_tokens)
    start = time.perf_counter()
    out = client.complete(messages, max_tokens=max_new_tokens, max_soft_tokens=max_soft_tokens)
    elapsed = time.perf_counter() - start
    usage = out.get("usage") or {}
    return Generation(
        text=out["choices"][0]["message"].get("content") or "",
        prompt_tokens=int(usage.get("prompt_tokens", 0)),
        multimodal_tokens=-1,  # the server does not report it
        generated_tokens=int(usage.get("completion_tokens", 0)),
        preprocess_s=0.0,
        encoder_s=0.0,
        prefill_s=elapsed,
        decode_tokens_per_s=0.0,
        is_random_weights=False,
        timings={"request_s": elapsed},
    )
