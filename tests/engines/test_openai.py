"""The OpenAI-compatible client: the request it builds, and its failures. Against a
real ``vllm serve``: tests/serve/test_chat.py."""

import base64
import io

import numpy as np
import pytest
import soundfile as sf
from PIL import Image

import gemma_explore as ge
from gemma_explore.engines.openai import chat_request
from gemma_explore.errors import EngineError
from tests.fake_server import fake_server, json_answer


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


def test_a_server_error_is_one_clear_error(photo):
    """A failing server (here a stand-in answering 503, as an overloaded proxy would):
    one EngineError that names the server and its status; success paths: tests/serve/."""
    down = json_answer({"error": {"message": "Service Unavailable: engine restarting"}})
    with fake_server(down, status=503) as (url, seen):
        bundle = ge.load("google/gemma-4-E4B-it", engine="openai", base_url=url)
        with pytest.raises(
            EngineError,
            match=rf"server at {url} answered HTTP 503 \(Service Unavailable\): .*restarting",
        ):
            bundle.generate([{"role": "user", "content": [{"type": "image", "image": photo}]}])
        with pytest.raises(EngineError, match="answered HTTP 503"):
            list(bundle.generate("Hi", stream=True))
    assert [r["path"] for r in seen] == ["/v1/chat/completions"] * 2


def test_no_server_is_a_clear_error(photo, tone):
    bundle = ge.load("google/gemma-3n-E2B-it", engine="openai", base_url="http://127.0.0.1:9/v1")
    assert bundle.family == "gemma3n"
    with pytest.raises(ConnectionError, match="vllm serve"):
        bundle.generate("Hi")
