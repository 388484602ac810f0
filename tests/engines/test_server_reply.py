"""``ge.load(..., engine="openai")`` and its ``transcribe`` against the hostile-server
corpus (tests/conformance/hostile_servers.py): every failure is one line (a
``ConnectionError`` where nothing listens, else an ``EngineError``) that says what the
server did and what to check, in the words the probe uses (one classifier,
engines/server_reply.py), within the engine's timeout and under the read cap. The probe
on the same corpus: tests/conformance/test_hostile.py."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import gemma_explore as ge
from gemma_explore.engines.server_reply import MAX_REPLY_BYTES
from gemma_explore.errors import EngineError
from tests.conformance.hostile_servers import (
    HOSTILE,
    HUGE_BYTES,
    MODEL,
    assert_one_line,
    hostile_server,
)

SPEECH = "google/gemma-3n-E2B-it"  # the family with a speech-to-text API
TIMEOUT = 2.0
# Answers that are no fault for a surface: a chat answer without usage still answers
# (usage is optional in the OpenAI API; the engine reports prompt_tokens None), and a
# transcription's JSON has neither usage nor a model name, so those servers' good
# {"text": …} passes.
ANSWERS = {
    "generate": {"no_usage"},
    "transcribe": {"no_usage", "negative_tokens", "absurd_tokens", "other_model"},
}


def _call(url: str, surface: str):
    if surface == "transcribe":
        bundle = ge.load(SPEECH, engine="openai", base_url=url, timeout=TIMEOUT)
        return bundle.transcribe((np.zeros(16000, np.float32), 16000), split=False).text
    bundle = ge.load(MODEL, engine="openai", base_url=url, timeout=TIMEOUT)
    if surface == "stream":
        return "".join(bundle.generate("Hi", stream=True))
    return bundle.generate("Hi").text


@pytest.mark.parametrize("surface", ["generate", "stream", "transcribe"])
@pytest.mark.parametrize("case", HOSTILE)
def test_every_hostile_server_is_one_line_from_the_engine(case, surface):
    with hostile_server(case) as url:
        if case in ANSWERS.get(surface, ()):
            assert _call(url, surface) in ("x", "hello")
            return
        with pytest.raises((EngineError, ConnectionError)) as caught:
            _call(url, surface)
    error = caught.value
    assert type(error) is EngineError  # nothing listens nowhere here: each answered something
    assert error.__suppress_context__  # raised from None: no chain of SDK exceptions below
    assert_one_line(str(error), url)
    if case.startswith("html_"):
        assert f"answered HTTP {case.removeprefix('html_')} (" in str(error)
    if case in ("silent", "drip"):  # the engine's timeout is for the whole request
        assert f"gave no complete answer within {TIMEOUT:g} s" in str(error)


def test_the_probe_and_the_engine_say_the_same_thing():
    """One classifier: the probe's line is the engine's, word for word."""
    from gemma_explore.conformance.probe import probe

    for case in ("banner", "html_501", "tls", "redirect_loop"):
        with hostile_server(case) as url:
            with pytest.raises(EngineError) as caught:
                _call(url, "generate")
            result = probe(url, model=MODEL, timeout=TIMEOUT, clips=(), video=None)
        line = str(caught.value)
        if case == "redirect_loop":  # the same words, about the path each one asked
            line = line.replace("/chat/completions", "/models")
        assert result.failure == line


def test_a_100_mb_answer_is_read_up_to_the_cap():
    with hostile_server("huge") as url:
        bundle = ge.load(MODEL, engine="openai", base_url=url, timeout=30)
        tracemalloc.start()
        try:
            with pytest.raises(EngineError, match="sent more than 4 MiB"):
                bundle.generate("Hi")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 8 * MAX_REPLY_BYTES < HUGE_BYTES / 3


def test_a_closed_port_is_a_connection_error_that_says_what_to_start():
    with hostile_server("close") as url:
        pass  # closed: nothing listens there now
    bundle = ge.load(MODEL, engine="openai", base_url=url, timeout=TIMEOUT)
    with pytest.raises(ConnectionError, match="connection was refused") as caught:
        bundle.generate("Hi")
    assert f"(start one with `vllm serve {MODEL}`, or pass base_url=…)" in str(caught.value)
    assert "\n" not in str(caught.value)
