"""The OpenAI engine against a real ``vllm serve`` (see conftest.py): chat with images,
audio and video, whole and streamed, and the counts the server reports.

The tiny models have random weights, so the text is noise (``<unused…>`` tokens and the
like); what is checked is that tokens come back, that streaming yields the same greedy
answer, and that the server's ``usage.prompt_tokens`` is our layout's count of the prompt.
"""

from __future__ import annotations

import json
import urllib.request

import numpy as np
import pytest

import gemma_explore as ge
from gemma_explore.engines.openai import chat_request
from gemma_explore.errors import EngineError
from gemma_explore.processing.layout import layout_prompt

from .conftest import printed_setting

pytestmark = pytest.mark.vllm

MAX_NEW = 6


def _turn(*items: dict) -> list[dict]:
    return [{"role": "user", "content": [*items, {"type": "text", "text": "What is this?"}]}]


def _frames() -> np.ndarray:
    """Eight 64×96 frames with structure (a bar moving right)."""
    frames = np.zeros((8, 64, 96, 3), np.uint8)  # (frames, height, width, RGB)
    for i in range(8):
        frames[i, :, 10 * i : 10 * i + 12] = (255, 128, 0)
    return frames


def _open(server):
    return ge.load(server.name, engine="openai", base_url=server.base_url, family=server.family)


def _check_answer(bundle, messages, *, reference, **kwargs):
    """One whole answer and one streamed, greedy: same text; counts from the server."""
    gen = bundle.generate(messages, max_new_tokens=MAX_NEW, **kwargs)
    assert gen.text, "the server generated no text"
    assert 1 <= gen.generated_tokens <= MAX_NEW
    expected = layout_prompt(messages, bundle=reference, **kwargs)
    assert gen.prompt_tokens == len(expected.input_ids)  # the server's count is our layout's
    pieces = list(bundle.generate(messages, stream=True, max_new_tokens=MAX_NEW, **kwargs))
    assert len(pieces) >= 1 and "".join(pieces) == gen.text
    return gen


def test_gemma4_image_chat(gemma4_server, tiny4, photo):
    bundle = _open(gemma4_server)
    assert bundle.engine.name == "openai" and bundle.family == "gemma4"
    _check_answer(bundle, _turn({"type": "image", "image": photo}), reference=tiny4)


def test_gemma4_video_chat(gemma4_server, tiny4):
    bundle = _open(gemma4_server)
    video = {"type": "video", "video": _frames(), "fps": 4.0}
    _check_answer(bundle, _turn(video), reference=tiny4)


@pytest.mark.parametrize("budget", [70, 1120])
def test_gemma4_per_request_budget_round_trips(gemma4_server, tiny4, photo, budget):
    """``mm_processor_kwargs`` in the body (the SDK's extra_body) sets the image's soft
    tokens for this request only: the server's prompt count is our layout at that budget,
    above and below the server's start-up budget."""
    bundle = _open(gemma4_server)
    messages = _turn({"type": "image", "image": photo})
    gen = bundle.generate(messages, max_new_tokens=1, max_soft_tokens=budget)
    at_budget = layout_prompt(messages, bundle=tiny4, max_soft_tokens=budget)
    assert gen.prompt_tokens == len(at_budget.input_ids)
    default = bundle.generate(messages, max_new_tokens=1)  # none sent: the start-up budget
    startup = printed_setting(gemma4_server, "--mm-processor-kwargs")["max_soft_tokens"]
    at_startup = layout_prompt(messages, bundle=tiny4, max_soft_tokens=startup)
    assert default.prompt_tokens == len(at_startup.input_ids) != gen.prompt_tokens


def test_chat_request_body_is_what_the_server_takes(gemma4_server, tiny4, photo):
    """chat_request's JSON, posted as is (what a curl user sends)."""
    messages = _turn({"type": "image", "image": photo})
    body = chat_request(messages, model=gemma4_server.name, max_tokens=2, max_soft_tokens=140)
    request = urllib.request.Request(
        gemma4_server.base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=300) as answer:
        out = json.load(answer)
    assert out["choices"][0]["message"]["content"]
    expected = layout_prompt(messages, bundle=tiny4, max_soft_tokens=140)
    assert out["usage"]["prompt_tokens"] == len(expected.input_ids)


def test_gemma4_refuses_more_images_than_its_limit(gemma4_server, photo):
    """A refusal from the real server is one EngineError with the server's reason."""
    bundle = _open(gemma4_server)
    limit = printed_setting(gemma4_server, "--limit-mm-per-prompt")["image"]
    messages = _turn(*[{"type": "image", "image": photo}] * (limit + 1))
    with pytest.raises(EngineError, match=r"answered HTTP 400 \(Bad Request\): .*image") as refused:
        bundle.generate(messages, max_new_tokens=1)
    assert str(limit) in str(refused.value)
    assert gemma4_server.alive()


def test_gemma3n_image_and_audio_chat(gemma3n_server, tiny3n, photo, tone):
    bundle = _open(gemma3n_server)
    assert bundle.family == "gemma3n" and "audio" in bundle.modalities
    messages = _turn({"type": "image", "image": photo}, {"type": "audio", "audio": (tone, 16_000)})
    _check_answer(bundle, messages, reference=tiny3n)


def test_gemma3n_audio_chat(gemma3n_server, tiny3n, tone):
    bundle = _open(gemma3n_server)
    _check_answer(bundle, _turn({"type": "audio", "audio": (tone, 16_000)}), reference=tiny3n)
