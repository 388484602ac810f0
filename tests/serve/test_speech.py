"""``bundle.transcribe`` and ``gemma-explore transcribe`` through a real ``vllm serve``
of the tiny Gemma 3n: ``/v1/audio/transcriptions`` and ``/v1/audio/translations``.

Random weights: the text is noise. The checks are that text comes back, that the prompt
the server builds is ours token for token (its ``/metrics`` prompt-token counter grows by
our layout's count of :func:`transcription_prompt`, languages included), and that
``max_new_tokens`` travels (``max_completion_tokens``).
"""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
from typer.testing import CliRunner

import gemma_explore as ge
from gemma_explore import cli
from gemma_explore.processing.layout import layout_prompt
from gemma_explore.processing.transcription import transcription_prompt

pytestmark = pytest.mark.vllm


@pytest.fixture()
def stt(gemma3n_server):
    return ge.load(gemma3n_server.name, engine="openai", base_url=gemma3n_server.base_url)


def _prompt_count(prompt: str, bundle, tone) -> int:
    """Our layout's count of a raw transcription prompt with the clip (vLLM's view)."""
    layout = layout_prompt(prompt, bundle=bundle, audios=[(tone, 16_000)], template=False)
    return len(layout.input_ids)


@pytest.mark.parametrize(
    "task, language, to_language",
    [
        ("transcribe", None, None),
        ("transcribe", "fr", None),
        ("translate", "de", "en"),
        ("translate", None, "ja"),
    ],
)
def test_the_server_builds_our_prompt(
    gemma3n_server, stt, tiny3n, tone, task, language, to_language
):
    """The server's prompt-token counter grows by our layout's count of
    transcription_prompt(...): the languages reached the prompt it built."""
    before = gemma3n_server.prompt_tokens_total()
    out = stt.transcribe(
        (tone, 16_000), task=task, language=language, to_language=to_language, max_new_tokens=2
    )
    grew = gemma3n_server.prompt_tokens_total() - before
    assert out.text and out.engine == "openai" and out.task == task
    prompt = transcription_prompt(task=task, language=language, to_language=to_language)
    assert out.prompt == prompt
    assert grew == _prompt_count(prompt, tiny3n, tone)


def test_max_new_tokens_travels(stt, tone):
    """``max_new_tokens`` goes as ``max_completion_tokens``: greedy, so the shorter answer
    is a prefix of the longer one."""
    long = stt.transcribe((tone, 16_000), language="fr", max_new_tokens=6)
    short = stt.transcribe((tone, 16_000), language="fr", max_new_tokens=2)
    assert short.text and long.text.startswith(short.text)
    assert len(long.text) >= len(short.text)


def test_resampled_clip_is_accepted(stt):
    """A 44.1 kHz clip is resampled to 16 kHz before it travels (the server takes it)."""
    t = np.arange(44_100 * 2) / 44_100
    wave = (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    assert stt.transcribe((wave, 44_100), max_new_tokens=2).text


def test_cli_transcribe_on_the_openai_engine(gemma3n_server, tmp_path):
    clip = tmp_path / "tone.wav"
    t = np.arange(16_000 * 2) / 16_000
    sf.write(clip, (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), 16_000)
    args = [
        "transcribe",
        str(clip),
        "--language",
        "fr",
        "--engine",
        "openai",
        "--base-url",
        gemma3n_server.base_url,
        "--model",
        gemma3n_server.name,
        "--max-new-tokens",
        "4",
        "--show-prompt",
    ]
    result = CliRunner().invoke(cli.app, args, prog_name="gemma-explore")
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[0] == f"prompt: {transcription_prompt(language='fr')!r}"
    assert lines[1]  # the server's (noise) text


def _requests_total(server) -> float:
    """vLLM's /metrics count of finished requests (every finish reason together)."""
    import re
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=30) as a:
        text = a.read().decode()
    found = re.findall(r"^vllm:request_success_total\{[^}]*\} (\S+)$", text, re.MULTILINE)
    assert found, "vLLM's /metrics has no vllm:request_success_total"
    return sum(float(x) for x in found)


def test_a_95_s_clip_is_transcribed_in_windows(gemma3n_server, stt, tiny3n, monkeypatch):
    """bundle.transcribe sends plan_long_audio's windows to the real server, one request
    each, in order, and returns one text joined from theirs."""
    from gemma_explore.plans.long_audio import plan_long_audio
    from gemma_explore.processing.transcription import join_window_texts

    rng = np.random.default_rng(0)
    wave = (0.3 * rng.standard_normal(95 * 16_000)).astype(np.float32)
    wave[int(27.6 * 16_000) : int(28.3 * 16_000)] *= 0.001  # a pause to cut at
    sent: list[np.ndarray] = []
    served = stt.engine.transcribe

    def spy(w, **kwargs):
        sent.append(np.asarray(w))
        return served(w, **kwargs)

    monkeypatch.setattr(stt.engine, "transcribe", spy)
    requests, tokens = _requests_total(gemma3n_server), gemma3n_server.prompt_tokens_total()
    out = stt.transcribe((wave, 16_000), max_new_tokens=2)
    plan = plan_long_audio((wave, 16_000), family="gemma3n")
    assert len(plan.windows) == 4
    assert _requests_total(gemma3n_server) - requests == 4
    for w, got in zip(plan.windows, sent, strict=True):  # the windows, in order
        np.testing.assert_array_equal(got, wave[w.start : w.end])
    # Each request is our prompt with one window (188 placeholders whatever its length).
    per = _prompt_count(transcription_prompt(), tiny3n, wave[:16_000])
    assert gemma3n_server.prompt_tokens_total() - tokens == 4 * per
    assert [(s, e) for s, e, _ in out.windows] == [(w.start_s, w.end_s) for w in plan.windows]
    assert out.text == join_window_texts([t for *_, t in out.windows])[0]
    assert out.warnings == () and "4 windows" in out.note  # nothing cut, and it says how
