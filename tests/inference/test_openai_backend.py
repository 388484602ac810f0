"""The OpenAI-compatible client against a stand-in server on loopback."""

import base64
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
import soundfile as sf
from PIL import Image

import gemma_explore as ge
from gemma_explore.inference.openai_backend import chat_request


@pytest.fixture(scope="module")
def server():
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, "body": body, "auth": self.headers["Authorization"]})
            if body.get("stream"):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for piece in ["A ", "cat ", "sits."]:
                    chunk = {"choices": [{"delta": {"content": piece}}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                return
            out = {
                "choices": [{"message": {"content": "A cat sits."}}],
                "usage": {"prompt_tokens": 300, "completion_tokens": 4},
            }
            data = json.dumps(out).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", seen
    httpd.shutdown()


def _msgs(photo, tone, frames=None):
    content = [{"type": "image", "image": photo}, {"type": "audio", "audio": (tone, 16000)}]
    if frames is not None:
        content.append({"type": "video", "video": frames, "fps": 4.0})
    return [{"role": "user", "content": content + [{"type": "text", "text": "What?"}]}]


def test_request_parts(photo, tone):
    frames = np.random.RandomState(0).randint(0, 255, (8, 32, 48, 3), np.uint8)
    body = chat_request(
        _msgs(photo, tone, frames), model="google/gemma-4-E4B-it", max_tokens=7, max_soft_tokens=560
    )
    parts = body["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["image_url", "input_audio", "video_url", "text"]
    png = base64.b64decode(parts[0]["image_url"]["url"].split(",", 1)[1])
    assert Image.open(io.BytesIO(png)).size == photo.size
    wav, rate = sf.read(io.BytesIO(base64.b64decode(parts[1]["input_audio"]["data"])))
    assert rate == 16000 and abs(len(wav) - len(tone)) == 0
    assert parts[2]["video_url"]["url"].startswith("data:video/mp4;base64,")
    assert body["mm_processor_kwargs"] == {"max_soft_tokens": 560} and body["max_tokens"] == 7


def test_generate_and_stream_through_the_server(server, photo, tone):
    url, seen = server
    bundle = ge.load("google/gemma-4-E4B-it", backend="openai", base_url=url, api_key="k")
    assert bundle.family == "gemma4" and bundle.backend == "openai"
    gen = bundle.generate(_msgs(photo, tone), max_new_tokens=4, max_soft_tokens=280)
    assert gen.text == "A cat sits." and gen.prompt_tokens == 300 and gen.generated_tokens == 4
    assert seen[-1]["path"] == "/v1/chat/completions" and seen[-1]["auth"] == "Bearer k"
    assert seen[-1]["body"]["mm_processor_kwargs"] == {"max_soft_tokens": 280}
    assert gen.multimodal_tokens is None and gen.encoder_s is None  # not reported: no sentinel
    pieces = list(bundle.generate(_msgs(photo, tone), stream=True))
    assert pieces == ["A ", "cat ", "sits."] and seen[-1]["body"]["stream"] is True
    # No budget asked: the server's own start-up budget applies, so none is sent.
    assert "mm_processor_kwargs" not in seen[-1]["body"]


def test_no_server_is_a_clear_error(photo, tone):
    bundle = ge.load("google/gemma-3n-E2B-it", backend="openai", base_url="http://127.0.0.1:9/v1")
    assert bundle.family == "gemma3n"
    with pytest.raises(ConnectionError, match="vllm serve"):
        bundle.generate("Hi")
