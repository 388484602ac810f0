"""Gemma 3n transcription: the fixed prompt, the limits, and each engine's path."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gemma_explore.errors import MediaError
from gemma_explore.processing.transcription import (
    LANGUAGES,
    MAX_CLIP_S,
    require_language,
    transcription_prompt,
    transcription_request,
)

CODES = [None, *sorted(LANGUAGES)]


def _expected(task: str, language: str | None, to_language: str | None) -> str:
    """The seed's rules, written out as a table of phrases (not the module's code path)."""
    verb = {"transcribe": "Transcribe", "translate": "Translate"}[task]
    name = LANGUAGES.get(language) if language else None
    target = LANGUAGES.get(to_language) if to_language else None
    middle = {
        ("transcribe", True, False): f" into {name}",
        ("transcribe", False, False): "",
        ("translate", True, True): f" from {name} into {target}",
        ("translate", True, False): f" from {name}",
        ("translate", False, True): f" into {target}",
        ("translate", False, False): "",
    }[(task, name is not None, target is not None)]
    return (
        f"<start_of_turn>user\n{verb} this audio{middle}: "
        "<audio_soft_token><end_of_turn>\n<start_of_turn>model\n"
    )


def _combinations():
    for task, language, to_language in itertools.product(("transcribe", "translate"), CODES, CODES):
        if task == "transcribe" and to_language is not None:
            continue  # refused: see test_to_language_needs_translate
        yield task, language, to_language


def test_every_task_and_language_gives_the_seed_prompt():
    combos = list(_combinations())
    assert len(combos) == 58 + 58 * 58  # 57 languages and "none", both tasks
    for task, language, to_language in combos:
        got = transcription_prompt(language=language, task=task, to_language=to_language)
        assert got == _expected(task, language, to_language), (task, language, to_language)


def test_the_table_is_whispers_57_iso_codes():
    assert len(LANGUAGES) == 57
    assert all(len(code) == 2 and code.islower() for code in LANGUAGES)
    assert LANGUAGES["fr"] == "French" and LANGUAGES["zh"] == "Chinese"


@pytest.mark.vllm
def test_vllms_own_function_gives_the_same_text():
    pytest.importorskip("vllm")
    from vllm.config.speech_to_text import SpeechToTextParams
    from vllm.model_executor.models.gemma3n_mm import Gemma3nForConditionalGeneration as G

    # A classmethod: model_config is only passed through, so None is enough on a CPU box.
    config = G.get_speech_to_text_config(None, "transcribe")
    assert config.max_audio_clip_s == MAX_CLIP_S
    assert config.sample_rate == 16_000
    assert G.supported_languages == LANGUAGES
    audio = np.zeros(1600, np.float32)
    for task, language, to_language in _combinations():
        params = SpeechToTextParams(
            audio=audio,
            stt_config=config,
            model_config=None,
            language=language,
            task_type=task,
            to_language=to_language,
        )
        theirs = G.get_generation_prompt(params)
        ours = transcription_prompt(language=language, task=task, to_language=to_language)
        assert theirs["prompt"] == ours, (task, language, to_language)


def test_unknown_codes_list_the_supported_ones():
    with pytest.raises(ValueError, match=r"Unknown language 'xx'.*\(af, ar, az.*zh\)"):
        transcription_prompt(language="xx")
    with pytest.raises(ValueError, match="Unknown target language 'french'"):
        transcription_prompt(task="translate", to_language="french")
    assert require_language("EN") == "en" and require_language(None) is None


def test_to_language_needs_translate():
    with pytest.raises(ValueError, match="task='translate'"):
        transcription_prompt(language="fr", to_language="en")
    with pytest.raises(ValueError, match="'transcribe' or 'translate'"):
        transcription_prompt(task="summarise")


def test_gemma4_says_to_use_a_chat_prompt(tiny4, tone):
    with pytest.raises(ValueError, match="no speech-to-text interface.*chat turn"):
        transcription_prompt(family="gemma4")
    with pytest.raises(ValueError, match="Gemma 4 has no speech-to-text"):
        tiny4.transcribe((tone, 16_000))


def test_limits_30_seconds_and_16_khz():
    long = np.zeros(16_000 * 31, np.float32)
    with pytest.raises(MediaError, match=r"31\.0 s.*at most 30 s.*Cut it"):
        transcription_request((long, 16_000))
    ok = transcription_request((np.zeros(44_100 * 30, np.float32), 44_100))
    assert ok.resampled_from == 44_100 and ok.wave.shape == (480_000,)
    with pytest.raises(MediaError, match="sampling rate"):
        transcription_request(np.zeros(100, np.float32))


def test_tiny_gemma3n_transcribes_noise(tiny3n, tone):
    result = tiny3n.transcribe((tone, 16_000), language="fr", max_new_tokens=4)
    assert result.prompt == transcription_prompt(language="fr")
    assert result.engine == "hf" and result.duration_s == pytest.approx(3.0)
    assert "noise" in result.note and result.note in str(result)
    assert isinstance(result.text, str)


def test_layout_prompt_shows_the_transcription_prompt(tiny3n, tone):
    from gemma_explore import layout_prompt

    prompt = transcription_prompt(task="translate", language="de", to_language="en")
    layout = layout_prompt(prompt, bundle=tiny3n, audios=[(tone, 16_000)], template=False)
    assert "Translate this audio from German into English" in "".join(layout.tokens).replace(
        "▁", " "
    )
    assert "audio_soft #0: <audio_soft_token> × 188" in repr(layout)
    assert layout.input_ids.count(262_273) == 188


# The OpenAI engine's /v1/audio/transcriptions and /translations against a real
# `vllm serve`: tests/serve/test_speech.py.
