"""The Audio tab's Transcribe button: the handler directly, and the launched demo's endpoint."""

import numpy as np
import pytest
import soundfile as sf

from gemma_explore.app.transcribe_tab import transcribe_tab
from gemma_explore.processing.transcription import speech_to_text_config, transcription_prompt
from gemma_explore.samples import SAMPLES_DIR
from tests.vllm_audio import vllm_decode

SPEECH = str(SAMPLES_DIR / "speech.wav")


def test_tiny_gemma3n_transcript_says_it_is_noise():
    r = transcribe_tab("tiny-gemma3n", SPEECH, "en", max_new_tokens=4)
    assert r.error is None and r.noise is True
    assert r.prompt == transcription_prompt(language="en")
    assert r.text.startswith("**Transcript** (transcribe, English):")
    assert "this text is noise" in r.text


def test_translation_names_both_languages():
    r = transcribe_tab("tiny-gemma3n", SPEECH, "fr", "en", max_new_tokens=2)
    assert r.text.startswith("**Translation** (translate, French, English):")


@pytest.mark.parametrize(
    "model, audio, language, reason",
    [
        ("tiny-gemma4", SPEECH, "", "Gemma 4 has no speech-to-text interface"),
        ("tiny-gemma3n", SPEECH, "xx", "Unknown language 'xx'"),
        ("tiny-gemma3n", None, "", "Upload or record a clip"),
        ("tiny-gemma3n", "/no/such.wav", "", "No audio file"),
    ],
)
def test_bad_input_is_a_message(model, audio, language, reason):
    r = transcribe_tab(model, audio, language)
    assert r.error.startswith("✗") and reason in r.error and r.text == r.error


def _heard_s() -> float:
    """The seconds transformers' Gemma3nAudioFeatureExtractor keeps of a clip: its
    ``max_length`` samples, with ``truncation=True``, at its sampling rate."""
    import inspect

    from transformers.models.gemma3n.feature_extraction_gemma3n import (
        Gemma3nAudioFeatureExtractor,
    )

    call = inspect.signature(Gemma3nAudioFeatureExtractor.__call__).parameters
    assert call["truncation"].default is True
    return call["max_length"].default / Gemma3nAudioFeatureExtractor().sampling_rate


def test_a_clip_over_30_s_is_transcribed_in_windows(tmp_path, monkeypatch):
    """vLLM's endpoint would take it whole and the extractor keep 30 s; the tab sends
    the windows the model hears whole instead, and says so."""
    heard = _heard_s()
    path = tmp_path / "long.wav"
    sf.write(path, np.zeros(int(16_000 * (heard + 1)), np.float32), 16_000)
    _, decoded = vllm_decode(path, monkeypatch)
    if decoded is not None:  # vLLM's endpoint takes it whole (no refusal, no split)
        assert isinstance(decoded, np.ndarray) and len(decoded) == 16_000 * (heard + 1)
    r = transcribe_tab("tiny-gemma3n", str(path), max_new_tokens=2)
    assert r.error is None and f"⚠ The {heard + 1:.1f} s clip was sent as 2 windows" in r.text
    assert "hears only its first" not in r.text


def test_a_clip_over_vllms_decode_limit_is_a_message(tmp_path, monkeypatch):
    limit = speech_to_text_config().max_decode_s  # the installed release's decode limit
    path = tmp_path / "long.wav"
    sf.write(path, np.zeros(8_000 * (limit + 1), np.float32), 8_000)
    vllm_limit, refused = vllm_decode(path, monkeypatch)
    r = transcribe_tab("tiny-gemma3n", str(path))
    assert r.error.startswith("✗") and f"at most {limit} s" in r.error
    if vllm_limit is not None:  # vLLM refuses the same file, in the words we quote
        assert vllm_limit == limit and isinstance(refused, ValueError)
        quoted = r.error.split('("', 1)[1].split('"', 1)[0]
        assert quoted.startswith("Audio exceeds maximum allowed duration of")
        assert quoted in str(refused)


def test_the_demo_serves_the_transcribe_button(app_url):
    from gradio_client import Client, handle_file

    client = Client(app_url, verbose=False)
    text = client.predict("tiny-gemma3n", handle_file(SPEECH), "en", "", api_name="/transcribe")
    assert text.startswith("**Transcript**") and "noise" in text


def _long_clip() -> tuple[np.ndarray, int]:
    """70 s of noise with a quiet second at 27 s: three windows of at most 30 s."""
    wave = (0.3 * np.random.default_rng(0).standard_normal(70 * 16_000)).astype(np.float32)
    wave[27 * 16_000 : 28 * 16_000] *= 0.001
    return wave, 16_000


def test_the_windows_row_says_who_sends_the_windows():
    """Under Gemma 3n the Transcribe button sends them, and its transcript joins as many
    window texts as the row lists; under Gemma 4 nothing in the demo sends windows, and
    the row says what Chat does instead."""
    from gemma_explore.app.tabs import audio_tab
    from gemma_explore.plans.long_audio import plan_long_audio

    clip = _long_clip()
    n3 = audio_tab("tiny-gemma3n", clip).counts
    assert "The Transcribe button below sends each window" in n3
    windows = plan_long_audio(clip, family="gemma3n").windows
    from gemma_explore.app.bundles import get_bundle  # the bundle the button asks

    result = get_bundle("tiny-gemma3n").transcribe(clip, max_new_tokens=1)
    assert len(result.windows) == len(windows)  # what the button's call really sends
    g4 = audio_tab("tiny-gemma4", clip).counts
    assert "Nothing in this demo sends windows under Gemma 4" in g4
    assert "Chat sends the clip whole and the model hears its first 30 s" in g4


def test_the_help_under_the_button_follows_the_family():
    from gemma_explore.app.ui import transcribe_help
    from gemma_explore.facts.families import get_family

    n3 = transcribe_help(get_family("gemma3n"))
    assert n3.startswith("Transcribe sends the clip with Gemma 3n's fixed speech-to-text")
    assert "window by window" in n3 and "pick a" not in n3
    g4 = transcribe_help(get_family("gemma4"))
    assert "Gemma 4 has no speech-to-text interface here" in g4
    assert 'ask "Transcribe this audio."' in g4 and "pick a Gemma 3n model in Model" in g4
