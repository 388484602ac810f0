"""The Audio tab's Transcribe button: the handler directly, and the launched demo's endpoint."""

import numpy as np
import pytest
import soundfile as sf

from gemma_explore.app.transcribe_tab import transcribe_tab
from gemma_explore.processing.transcription import transcription_prompt
from gemma_explore.samples import SAMPLES_DIR

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


def test_a_clip_over_30_s_is_a_message(tmp_path):
    path = tmp_path / "long.wav"
    sf.write(path, np.zeros(16_000 * 31, np.float32), 16_000)
    r = transcribe_tab("tiny-gemma3n", str(path))
    assert "at most 30 s" in r.error


def test_the_demo_serves_the_transcribe_button(app_url):
    from gradio_client import Client, handle_file

    client = Client(app_url, verbose=False)
    text = client.predict("tiny-gemma3n", handle_file(SPEECH), "en", "", api_name="/transcribe")
    assert text.startswith("**Transcript**") and "noise" in text
