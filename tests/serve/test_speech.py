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
