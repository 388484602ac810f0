"""A loopback OpenAI-compatible server that counts prompts with transformers' real
processor (a tiny bundle's), honestly or with one known fault of the runtimes in issue 35.

Honest: ``usage.prompt_tokens`` is the length of the processor's ``input_ids`` for the
request's messages (``prepare_inputs``: the bundle's chat template and processor), at the
request's ``mm_processor_kwargs`` budget. Each fault changes what reaches the processor,
the way the port that had it did:

- ``square``: every image squashed to a square first (mlx-swift-lm#325: Gemma 4 as 3n);
- ``fixed256``: every image 256 soft tokens, whatever its size or budget (flutter_gemma#318);
- ``budget_ignored``: ``mm_processor_kwargs`` dropped (ollama#15626);
- ``audio_dropped``: the clip removed, markers and all (onnxruntime-genai#2103);
- ``audio_cut_30s``: the clip cut to its first 30 s (mlx-vlm#675);
- ``frames``: every second frame of the video only (TensorRT-LLM#18274's miscount).

``vllm`` is no fault: the prompt is counted by vLLM's own multimodal processor, offline
(``engines/vllm_processor.py``), where vLLM parts from transformers (Unified's audio).

Also: ``usage=False`` (an answer without usage), ``delay`` (seconds before answering),
``trust=False`` (refuses ``mm_processor_kwargs`` as ``vllm serve`` does without
``--trust-request-mm-kwargs``). The house pattern of ``tests/fake_server.py``.
"""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAULTS = (
    "honest",
    "vllm",
    "square",
    "fixed256",
    "budget_ignored",
    "audio_dropped",
    "audio_cut_30s",
    "frames",
)

# vllm serve's words without --trust-request-mm-kwargs (vllm/entrypoints/generate/base/
# protocol.py, validate_request_mm_kwargs); the real server's are tested in tests/serve.
REFUSAL = (
    "Per-request mm_processor_kwargs are disabled by default because they can change "
    "multimodal preprocessing resource usage. Start the server with "
    "--trust-request-mm-kwargs only when clients are trusted."
)


def _data(url: str) -> bytes:
    return base64.b64decode(url.split(",", 1)[1])


def _items(part: dict, fault: str) -> list[dict]:
    """One OpenAI content part as the package's message items (what the fault lets in)."""
    from PIL import Image

    kind = part["type"]
    if kind == "text":
        return [{"type": "text", "text": part["text"]}]
    if kind == "image_url":
        image = Image.open(io.BytesIO(_data(part["image_url"]["url"]))).convert("RGB")
        if fault == "square":
            side = max(image.size)
            image = image.resize((side, side))
        return [{"type": "image", "image": image}]
    if kind == "input_audio":
        import soundfile as sf

        wave, rate = sf.read(io.BytesIO(base64.b64decode(part["input_audio"]["data"])))
        if fault == "audio_dropped":
            return []
        if fault == "audio_cut_30s":
            wave = wave[: 30 * rate]
        return [{"type": "audio", "audio": (wave.astype("float32"), rate)}]
    raw = _data(part["video_url"]["url"])
    if fault != "frames":
        return [{"type": "video", "video": raw}]
    from gemma_explore.media.loaders import load_video

    video = load_video(raw, max_frames=10_000)
    return [{"type": "video", "video": video.frames[::2], "fps": video.fps}]


def count_prompt(bundle: Any, body: dict, fault: str) -> int:
    """``usage.prompt_tokens`` of one chat request, by the bundle's real processor."""
    from gemma_explore.processing.inputs import prepare_inputs

    messages = []
    images = 0
    for m in body["messages"]:
        content = m["content"]
        if isinstance(content, str):
            messages.append(m)
            continue
        items = [i for part in content for i in _items(part, fault)]
        if fault == "fixed256":
            images += sum(i["type"] == "image" for i in items)
            items = [i for i in items if i["type"] != "image"]
        messages.append({"role": m["role"], "content": items})
    budget = (body.get("mm_processor_kwargs") or {}).get("max_soft_tokens")
    if fault in ("budget_ignored", "fixed256"):
        budget = None
    if not bundle.spec.image.budgets:
        budget = None
    prepared = prepare_inputs(messages, bundle=bundle, max_soft_tokens=budget)
    if fault == "vllm":
        from gemma_explore.engines.vllm_processor import vllm_mm_data, vllm_process

        kwargs = {"max_soft_tokens": budget} if budget else None
        out = vllm_process(bundle, prepared.text, vllm_mm_data(prepared), kwargs)
        return len(out["prompt_token_ids"])
    return len(prepared.input_ids) + images * (256 + bundle.spec.markers_per_item)


@contextmanager
def faulty_server(
    bundle: Any,
    fault: str = "honest",
    *,
    model: str = "served-gemma",
    usage: bool = True,
    delay: float = 0.0,
    trust: bool = True,
) -> Iterator[tuple[str, list[dict]]]:
    """Serve ``GET /v1/models`` and ``POST /v1/chat/completions`` on 127.0.0.1; yields
    (base URL ending in /v1, the chat bodies seen)."""
    assert fault in FAULTS, fault
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout)
                pass

        def do_GET(self):
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": model, "object": "model"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            time.sleep(delay)
            if body.get("model") != model:
                message = f"The model `{body.get('model')}` does not exist."
                return self._send(404, {"error": {"message": message, "code": 404}})
            if body.get("mm_processor_kwargs") and not trust:
                return self._send(400, {"error": {"message": REFUSAL, "code": 400}})
            answer: dict[str, Any] = {
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}}],
            }
            if usage:
                n = count_prompt(bundle, body, fault)
                answer["usage"] = {"prompt_tokens": n, "completion_tokens": 1}
            self._send(200, answer)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", seen
    finally:
        httpd.shutdown()
        httpd.server_close()
