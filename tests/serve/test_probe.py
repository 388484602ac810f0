"""``gemma-explore probe`` against the suite's real ``vllm serve`` servers (conftest.py).

The Gemma 4 server is started as ``serve-args`` prints it, with
``--trust-request-mm-kwargs``: its budgets travel and must match. The Gemma 3n server is
started without it (3n has no budget): there the knob must be refused in vLLM's own words,
which the probe turns into "budget refused: …". Every case must match, or name the known
vLLM difference (the video's timestamps, vllm-project/vllm#46988).

Gemma 4 audio is not sent on CPU: vLLM 0.32's CPU build kills its engine on it
(test_vllm_gemma4_audio.py), which would take the session's server down.
"""

from __future__ import annotations

import pytest

from gemma_explore.conformance.probe import (
    DEFAULT_CLIPS,
    VERDICTS,
    check_knob,
    probe,
    probe_table,
)

from .conftest import gemma4_audio_answers

pytestmark = pytest.mark.vllm

GOOD = {"matches", "vllm_known"}


def test_the_gemma4_server_counts_like_the_reference(gemma4_server):
    assert "--trust-request-mm-kwargs" in gemma4_server.argv
    # A clip kills the engine where vLLM's CPU linear kernel refuses the audio tower's
    # strided tensor (tests/serve/test_vllm_gemma4_audio.py): then the probe sends none.
    clips = DEFAULT_CLIPS if gemma4_audio_answers(gemma4_server) else ()
    result = probe(
        gemma4_server.base_url, model=gemma4_server.name, family=gemma4_server.family, clips=clips
    )
    print(probe_table(result).text())
    assert result.failure is None, result.failure
    assert {c.verdict for c in result.cases} <= GOOD, probe_table(result).text()
    knob = next(c for c in result.cases if c.modality == "knob")
    assert knob.verdict == "matches" and knob.measured == 0  # the server takes the budget
    assert {c.budget for c in result.cases if c.modality == "image"} == {None, 70, 1120}
    (video,) = [c for c in result.cases if c.modality == "video"]
    assert "vllm-project/vllm#46988" in video.note  # same count, other timestamps


def test_the_gemma3n_server_counts_like_the_reference(gemma3n_server):
    result = probe(gemma3n_server.base_url, model=gemma3n_server.name, family="gemma3n")
    print(probe_table(result).text())
    assert result.failure is None, result.failure
    assert {c.verdict for c in result.cases} == {"matches"}, probe_table(result).text()
    assert {c.modality for c in result.cases} == {"image", "audio"}


def test_without_the_trust_flag_the_budget_is_refused(gemma3n_server):
    """The one real server started without --trust-request-mm-kwargs: vLLM answers 400 to
    a request's mm_processor_kwargs, and the probe says why in one line."""
    assert "--trust-request-mm-kwargs" not in gemma3n_server.argv
    case = check_knob(
        gemma3n_server.base_url, model=gemma3n_server.name, family="gemma3n", budget=280
    )
    assert case.verdict == "budget_refused" and case.words == VERDICTS["budget_refused"]


def test_a_model_the_server_does_not_have_is_one_line(gemma3n_server):
    result = probe(gemma3n_server.base_url, model="google/gemma-3n-E4B-it")
    said = result.failure  # what the server serves, and what to check: one line
    assert said.startswith(f"the server at {gemma3n_server.base_url} serves ") and "\n" not in said
    assert said.endswith("not 'google/gemma-3n-E4B-it': check the model name"), said
    assert gemma3n_server.name in said and result.requests == 1
