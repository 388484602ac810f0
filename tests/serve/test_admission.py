"""admit(entry_point="serve") against the suite's real `vllm serve` servers: the HTTP status
and message a chat client gets, for the requests admission warns or refuses on (over
max_tokens, over-long, over the item limit, a Gemma 3n budget, a 45 s clip, max_tokens
past what max_model_len leaves). All in one file so the two servers start once."""

from __future__ import annotations

import io
import json
import shlex
import urllib.error
import urllib.request
import wave

import numpy as np
import pytest

from gemma_explore.serving.admission import Request, admit
from gemma_explore.serving.plan import plan_serving

from .test_serve_args import _printed_settings

pytestmark = pytest.mark.vllm


def _plan(server):
    """The plan of the server as it was started (its printed settings)."""
    s = _printed_settings(shlex.split(server.printed))
    budget = (s.get("mm_processor_kwargs") or {}).get("max_soft_tokens")
    plan = plan_serving(
        server.name,
        max_model_len=s["max_model_len"],
        limit_mm_per_prompt=s["limit_mm_per_prompt"],
        **({"max_soft_tokens": budget} if budget else {}),
        **(
            {"max_num_batched_tokens": s["max_num_batched_tokens"]}
            if "max_num_batched_tokens" in s
            else {}
        ),
    )
    return plan, bool(s.get("trust_request_mm_kwargs"))


def _post(server, content: list[dict], *, max_tokens: int, **extra) -> tuple[int, dict]:
    """(HTTP status, JSON body) of one chat completion."""
    body = {
        "model": server.name,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "temperature": 0.0,
        **extra,
    }
    request = urllib.request.Request(
        server.base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=600) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def _said(out: dict) -> str:
    return out["error"]["message"]


def _image_part() -> dict:
    from base64 import b64encode

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.full((64, 64, 3), 128, np.uint8)).save(buf, format="PNG")
    url = "data:image/png;base64," + b64encode(buf.getvalue()).decode()
    return {"type": "image_url", "image_url": {"url": url}}


def _audio_part(seconds: float) -> dict:
    from base64 import b64encode

    wav = (np.sin(np.arange(int(seconds * 16000)) / 9) * 8000).astype(np.int16)
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
        w.writeframes(wav.tobytes())
    return {
        "type": "input_audio",
        "input_audio": {"data": b64encode(buf.getvalue()).decode(), "format": "wav"},
    }


TEXT = {"type": "text", "text": "Describe."}


@pytest.mark.parametrize("which", ["gemma3n_server", "gemma4_server"])
def test_http_answers_equal_admit(request, which):
    server = request.getfixturevalue(which)
    plan, trust = _plan(server)
    mml = plan.max_model_len
    seen = []

    def check(content, req: Request, **extra):
        ours = admit(plan, req, entry_point="serve", trust_request_mm_kwargs=trust)
        status, out = _post(server, content, max_tokens=req.max_tokens or 1, **extra)
        seen.append((req, status, ours.verdict))
        if status != ours.status:
            print(server.log_tail(150))  # the server's own trace, in pytest's captured stdout
        assert status == ours.status, (req, out, server.log_tail(80))
        if status == 400:
            assert ours.message in _said(out), (req, _said(out))
        return ours, out

    # max_tokens above max_model_len: the HTTP layer's own words.
    check([TEXT], Request(text_tokens=10, max_tokens=mml + 1))
    # A text longer than max_model_len: tokenized to mml + 1, "at least".
    words = {"type": "text", "text": "hello " * (mml + 50)}
    check([words], Request(text_tokens=mml + 60, max_tokens=1))
    # One image more than the limit.
    limit = plan.limits["image"]
    check([_image_part()] * (limit + 1) + [TEXT], Request(images=((64, 64),) * (limit + 1)))
    # A per-request budget (Gemma 3n: ignored by its processor; refused unless trusted).
    budget = {"mm_processor_kwargs": {"max_soft_tokens": 280}}
    ours, out = check(
        [_image_part(), TEXT], Request(images=((64, 64),), max_soft_tokens=280), **budget
    )
    if server.family == "gemma3n" and ours.accepted:
        assert any("ignored" in w for w in ours.warnings)
    assert server.alive()

    # max_tokens past what max_model_len leaves: lowered in silence, 200.
    def count(n: int) -> int:
        _, out = _post(server, [{"type": "text", "text": "hello " * n}], max_tokens=1)
        return out["usage"]["prompt_tokens"]

    t10, t110 = count(10), count(110)
    n = 10 + int((mml - 40 - t10) * 100 / (t110 - t10))  # words for a prompt near mml - 40
    near = [{"type": "text", "text": "hello " * n}]
    prompt = count(n)
    assert mml - 80 < prompt < mml, prompt
    status, out = _post(server, near, max_tokens=mml - 1)
    ours = admit(plan, Request(text_tokens=prompt, max_tokens=mml - 1), entry_point="serve")
    assert status == ours.status == 200 and ours.warnings
    assert ours.max_tokens == mml - prompt >= out["usage"]["completion_tokens"]
    assert out["choices"][0]["finish_reason"] in ("length", "stop")
    # Last: a clip past 30 s.
    # Gemma 4 is left out: on vLLM 0.32's CPU engine a 45 s clip kills the engine (onednn_mm
    # "Expected a.stride(-1) == 1", EngineDeadError, HTTP 500), which would take the shared
    # server down for the tests after this one; admit warns about it.
    if server.family == "gemma3n" and plan.limits.get("audio"):
        # 45 s: accepted with a warning; the model hears 30 s (the same prompt as a 30 s clip).
        ours, long = check([_audio_part(45.0), TEXT], Request(audio_seconds=(45.0,)))
        assert any("first 30 s" in w for w in ours.warnings)
        _, short = _post(server, [_audio_part(30.0), TEXT], max_tokens=1)
        assert long["usage"]["prompt_tokens"] == short["usage"]["prompt_tokens"]
