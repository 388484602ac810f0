"""The OpenAI-compatible client against a stand-in server on loopback."""

import base64
import io
import json

import numpy as np
import pytest
import soundfile as sf
from PIL import Image

import gemma_explore as ge
from gemma_explore.inference.openai_backend import chat_request
from tests.fake_server import fake_server


def _chat_answer(_path: str, raw: bytes) -> tuple[str, bytes]:
    """A streamed answer in three SSE chunks, or a whole one with usage counts."""
    if json.loads(raw).get("stream"):
        chunks = [{"choices": [{"delta": {"content": p}}]} for p in ["A ", "cat ", "sits."]]
        sse = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        return "text/event-stream", sse.encode()
    out = {
        "choices": [{"message": {"content": "A cat sits."}}],
        "usage": {"prompt_tokens": 300, "completion_tokens": 4},
    }
    return "application/json", json.dumps(out).encode()


@pytest.fixture(scope="module")
def server():
    with fake_server(_chat_answer) as (url, seen):
        yield url, seen


def _last(seen: list) -> dict:
    """The last request the server saw, its body parsed as JSON."""
    return {**seen[-1], "body": json.loads(seen[-1]["body"])}


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
    assert _last(seen)["path"] == "/v1/chat/completions" and _last(seen)["auth"] == "Bearer k"
    assert _last(seen)["body"]["mm_processor_kwargs"] == {"max_soft_tokens": 280}
    assert gen.multimodal_tokens is None and gen.encoder_s is None  # not reported: no sentinel
    pieces = list(bundle.generate(_msgs(photo, tone), stream=True))
    assert pieces == ["A ", "cat ", "sits."] and _last(seen)["body"]["stream"] is True
    # No budget asked: the server's own start-up budget applies, so none is sent.
    assert "mm_processor_kwargs" not in _last(seen)["body"]


def test_no_server_is_a_clear_error(photo, tone):
    bundle = ge.load("google/gemma-3n-E2B-it", backend="openai", base_url="http://127.0.0.1:9/v1")
    assert bundle.family == "gemma3n"
    with pytest.raises(ConnectionError, match="vllm serve"):
        bundle.generate("Hi")
