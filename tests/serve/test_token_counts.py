"""Q8 of the course: counting and reading back tokens through the OpenAI API of a real
``vllm serve`` (vLLM 0.32's chat-completions fields, read from its protocol):

- ``usage.prompt_tokens`` / ``usage.completion_tokens``: the counts, also at the end of a
  stream with ``stream_options={"include_usage": true}``;
- ``return_token_ids``: the prompt's ids (``prompt_token_ids``, the soft tokens included)
  and each choice's ``token_ids``;
- ``logprobs`` + ``return_tokens_as_token_ids``: each generated token as ``token_id:N``;
- ``prompt_logprobs``: one entry per prompt token (the first is null).
"""

from __future__ import annotations

import json
import urllib.request

import pytest

import gemma_explore as ge
from gemma_explore.engines.openai import chat_request
from gemma_explore.processing.layout import layout_prompt

pytestmark = pytest.mark.vllm

BUDGET = 140


def _post(server, body: dict) -> bytes:
    request = urllib.request.Request(
        server.base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=300) as answer:
        return answer.read()


def _messages(photo) -> list[dict]:
    return [
        {
            "role": "user",
            "content": [
                {"type": "image", "image": photo},
                {"type": "text", "text": "What is this?"},
            ],
        }
    ]


def test_the_server_counts_and_returns_every_token(gemma4_server, tiny4, photo):
    messages = _messages(photo)
    body = chat_request(messages, model=gemma4_server.name, max_tokens=3, max_soft_tokens=BUDGET)
    body |= {
        "return_token_ids": True,
        "logprobs": True,
        "top_logprobs": 0,
        "return_tokens_as_token_ids": True,
        "prompt_logprobs": 0,
    }
    out = json.loads(_post(gemma4_server, body))
    ours = layout_prompt(messages, bundle=tiny4, max_soft_tokens=BUDGET)
    prompt = out["prompt_token_ids"]
    assert prompt == list(ours.input_ids)  # the server's prompt is our layout, id for id
    assert out["usage"]["prompt_tokens"] == len(prompt)
    plan = ge.plan_image(photo, family=tiny4.spec, max_soft_tokens=BUDGET)
    assert tiny4.spec.count_placeholders(prompt) == plan.num_soft_tokens  # soft tokens counted
    (choice,) = out["choices"]
    assert out["usage"]["completion_tokens"] == len(choice["token_ids"]) >= 1
    tokens = [c["token"] for c in choice["logprobs"]["content"]]
    assert tokens == [f"token_id:{t}" for t in choice["token_ids"]]
    assert len(out["prompt_logprobs"]) == len(prompt) and out["prompt_logprobs"][0] is None
    assert out["usage"]["total_tokens"] == len(prompt) + len(choice["token_ids"])


def test_a_stream_reports_usage_at_the_end(gemma4_server, tiny4, photo):
    messages = _messages(photo)
    body = chat_request(
        messages, model=gemma4_server.name, max_tokens=3, stream=True, max_soft_tokens=BUDGET
    )
    body |= {"stream_options": {"include_usage": True}, "return_token_ids": True}
    chunks = [
        json.loads(line[6:])
        for line in _post(gemma4_server, body).decode().splitlines()
        if line.startswith("data: {")
    ]
    usage = [c["usage"] for c in chunks if c.get("usage")]
    ours = layout_prompt(messages, bundle=tiny4, max_soft_tokens=BUDGET)
    assert usage[-1]["prompt_tokens"] == len(ours.input_ids)
    first_ids = next(c["prompt_token_ids"] for c in chunks if c.get("prompt_token_ids"))
    assert first_ids == list(ours.input_ids)  # in the first chunk only
    generated = [
        t for c in chunks for ch in c.get("choices", []) for t in ch.get("token_ids") or []
    ]
    assert usage[-1]["completion_tokens"] == len(generated)
