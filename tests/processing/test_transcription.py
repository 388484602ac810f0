"""Gemma 3n transcription: the fixed prompt, the limits, and each engine's path.

The limits are held to vLLM's own endpoint code (``SpeechToTextBaseServing.
_decode_and_chunk_speech`` with Gemma 3n's ``get_speech_to_text_config``, and
``vllm.envs``), to each supported release's ``envs.py``, and to transformers'
``Gemma3nAudioFeatureExtractor`` run on real clips.
"""

from __future__ import annotations

import ast
import inspect
import io
import itertools

import numpy as np
import pytest

from gemma_explore.errors import MediaError
from gemma_explore.plans.long_audio import plan_long_audio
from gemma_explore.processing.transcription import (
    HEARD_S,
    LANGUAGES,
    join_window_texts,
    require_language,
    speech_to_text_config,
    transcription_prompt,
    transcription_request,
    transcription_warnings,
)
from gemma_explore.vllm_versions import SUPPORTED, vllm_profile
from tests.vllm_sources import read_source

pytestmark = pytest.mark.vllm_version  # the decode limit is read from each release's profile

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


@pytest.mark.vllm
def test_what_vllm_does_with_codes_we_refuse(caplog):
    """Our message says what vLLM's endpoint does instead: validate_language raises
    "Unsupported language" outside Whisper's table, and lets a Whisper code Gemma 3n does
    not list through with a warning, after which the prompt names no language."""
    pytest.importorskip("vllm")
    from vllm.config.speech_to_text import SpeechToTextParams
    from vllm.model_executor.models.gemma3n_mm import Gemma3nForConditionalGeneration as G

    with pytest.raises(ValueError, match="Unsupported language: 'xx'") as theirs:
        G.validate_language("xx")
    with pytest.raises(ValueError) as ours:
        require_language("xx")
    quoted = str(ours.value).split('"')[1]  # the phrase our message quotes
    assert quoted in str(theirs.value)
    other = sorted(G.get_other_languages())[0]  # in Whisper's table, not in Gemma 3n's
    assert other not in LANGUAGES
    assert G.validate_language(other) == other  # passed through, only logged
    with pytest.raises(ValueError, match=f"Unknown language '{other}'"):
        require_language(other)
    config = G.get_speech_to_text_config(None, "transcribe")
    audio = np.zeros(1600, np.float32)
    params = [
        SpeechToTextParams(
            audio=audio,
            stt_config=config,
            model_config=None,
            language=code,
            task_type="transcribe",
            to_language=None,
        )
        for code in (other, None)
    ]
    with_other, without = (G.get_generation_prompt(p)["prompt"] for p in params)
    assert with_other == without == transcription_prompt()  # the code is left out


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


def _wav(seconds: float, rate: int = 16_000) -> bytes:
    """A silent 16-bit PCM WAV of ``seconds``, as an upload to the endpoint."""
    import soundfile as sf

    out = io.BytesIO()
    sf.write(out, np.zeros(round(seconds * rate), np.int16), rate, format="WAV", subtype="PCM_16")
    return out.getvalue()


@pytest.fixture(scope="module")
def endpoint():
    """vLLM's speech-to-text serving object, reduced to what its decoder step reads:
    Gemma 3n's own config and the decode limits from vllm.envs (no engine behind it)."""
    pytest.importorskip("vllm")
    import vllm.envs as envs
    from vllm.entrypoints.speech_to_text.base.serving import SpeechToTextBaseServing
    from vllm.model_executor.models.gemma3n_mm import Gemma3nForConditionalGeneration as G

    serving = object.__new__(SpeechToTextBaseServing)
    serving.asr_config = G.get_speech_to_text_config(None, "transcribe")
    serving.max_audio_decode_duration_s = envs.VLLM_MAX_AUDIO_DECODE_DURATION_S
    serving.max_audio_decode_bytes = envs.VLLM_MAX_AUDIO_DECODE_BYTES
    return serving


@pytest.mark.vllm
@pytest.mark.parametrize("task", ["transcribe", "translate"])
def test_the_config_is_vllms(task):
    pytest.importorskip("vllm")
    from vllm.model_executor.models.gemma3n_mm import Gemma3nForConditionalGeneration as G

    theirs = G.get_speech_to_text_config(None, task)
    ours = speech_to_text_config()
    assert ours.sample_rate == theirs.sample_rate
    assert ours.max_audio_clip_s == theirs.max_audio_clip_s
    assert ours.min_energy_split_window_size is theirs.min_energy_split_window_size is None
    assert ours.allow_audio_chunking is theirs.allow_audio_chunking is False


@pytest.mark.vllm
def test_the_refusal_bound_is_vllms_decode_limit(monkeypatch):
    pytest.importorskip("vllm")
    import vllm.envs as envs

    monkeypatch.delenv("VLLM_MAX_AUDIO_DECODE_DURATION_S", raising=False)
    monkeypatch.delenv("VLLM_MAX_AUDIO_CLIP_FILESIZE_MB", raising=False)
    ours = speech_to_text_config()  # the installed release's profile
    assert ours.vllm_version == vllm_profile().version
    assert ours.max_decode_s == envs.VLLM_MAX_AUDIO_DECODE_DURATION_S  # 600, vLLM's default
    # The upload limit is not met first: the longest clip we take, as the openai engine
    # uploads it (16 kHz, 16-bit WAV), stays under VLLM_MAX_AUDIO_CLIP_FILESIZE_MB.
    from gemma_explore.engines.openai import _wav_base64

    upload = len(_wav_base64(np.zeros(ours.max_decode_s * 16_000, np.float32), 16_000)) * 3 // 4
    assert upload <= envs.VLLM_MAX_AUDIO_CLIP_FILESIZE_MB * 2**20


def _envs_default(source: str, name: str) -> str:
    """The default string of ``os.getenv(name, default)`` in vLLM's ``environment_variables``
    table (envs.py), read with ``ast``."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and key.value == name:
                for call in ast.walk(value):
                    if (
                        isinstance(call, ast.Call)
                        and getattr(call.func, "attr", None) == "getenv"
                        and len(call.args) == 2
                    ):
                        return call.args[1].value
    raise LookupError(f"{name} has no os.getenv default in this envs.py")


@pytest.mark.parametrize("version", SUPPORTED)
def test_each_releases_decode_limit_is_its_envs_default(version):
    """The limit we refuse past, per release, is that release's envs.py default."""
    theirs = int(_envs_default(read_source(version, "envs.py"), "VLLM_MAX_AUDIO_DECODE_DURATION_S"))
    ours = speech_to_text_config(vllm_version=version)
    assert (ours.max_decode_s, ours.vllm_version) == (theirs, version)
    assert vllm_profile(version).label in ours.steps[2]
    limit = ours.max_decode_s
    request = transcription_request((np.zeros(8_000, np.float32), 16_000), vllm_version=version)
    assert request.vllm_version == version and f"≤ {limit} s" in request.steps[0]
    with pytest.raises(MediaError, match=f"at most {limit} s"):
        transcription_request(
            (np.zeros(limit * 16_000 + 160, np.float32), 16_000), vllm_version=version
        )


@pytest.mark.vllm
def test_a_45_s_clip_is_taken_whole_by_both(endpoint):
    """vLLM's endpoint neither splits nor refuses a clip over max_audio_clip_s when
    chunking is off; we take it too, whole, and warn."""
    chunks, duration = endpoint._decode_and_chunk_speech(_wav(45))
    assert len(chunks) == 1 and duration == 45.0  # not split, not refused
    ours = transcription_request((np.zeros(45 * 16_000, np.float32), 16_000))
    assert ours.wave.shape == chunks[0].shape  # every sample is sent on
    assert ours.duration_s == duration and ours.heard_s == HEARD_S
    (warning,) = ours.warnings
    assert "hears only its first 30 s" in warning and "last 15.0 s" in warning


@pytest.mark.vllm
def test_past_the_decode_limit_both_refuse_in_vllms_words(endpoint):
    limit = endpoint.max_audio_decode_duration_s
    chunks, _ = endpoint._decode_and_chunk_speech(_wav(limit))  # exactly the limit: taken
    assert chunks[0].shape == (limit * 16_000,)
    assert transcription_request((np.zeros(limit * 16_000, np.float32), 16_000)).warnings
    with pytest.raises(ValueError, match="Audio exceeds maximum allowed duration") as theirs:
        endpoint._decode_and_chunk_speech(_wav(limit + 0.01))
    with pytest.raises(MediaError, match=rf"{limit + 0.0:.1f} s.*at most {limit} s") as ours:
        transcription_request((np.zeros(limit * 16_000 + 160, np.float32), 16_000))
    quoted = str(ours.value).split('"')[1]  # the words of vLLM's we quote
    assert quoted in str(theirs.value)


def test_the_stated_cut_is_the_extractors():
    """The warning's 30 s is what transformers' Gemma3nAudioFeatureExtractor keeps: a 45 s
    clip gives exactly the features of its first 30 s."""
    from transformers import Gemma3nAudioFeatureExtractor

    extractor = Gemma3nAudioFeatureExtractor()
    defaults = inspect.signature(extractor.__call__).parameters
    assert defaults["truncation"].default is True
    assert HEARD_S * extractor.sampling_rate == defaults["max_length"].default
    wave = np.random.RandomState(0).randn(45 * 16_000).astype(np.float32) * 0.1
    heard = round(HEARD_S * 16_000)
    whole = extractor(wave)["input_features"][0]
    first = extractor(wave[:heard])["input_features"][0]
    np.testing.assert_array_equal(whole, first)
    assert (
        whole.shape[0]
        < extractor(wave[: heard + 16_000], truncation=False)["input_features"][0].shape[0]
    )  # not a cap of the frames: the samples after 30 s are gone
    assert transcription_warnings(heard / 16_000) == ()
    assert transcription_warnings(45.0)


def test_any_rate_is_resampled_to_16_khz():
    ok = transcription_request((np.zeros(44_100 * 30, np.float32), 44_100))
    assert ok.resampled_from == 44_100 and ok.wave.shape == (480_000,) and not ok.warnings
    with pytest.raises(MediaError, match="sampling rate"):
        transcription_request(np.zeros(100, np.float32))


def test_a_long_clips_warning_reaches_the_result(tiny3n):
    long = np.zeros(31 * 16_000, np.float32)
    result = tiny3n.transcribe((long, 16_000), max_new_tokens=2, split=False)
    (warning,) = result.warnings
    assert "last 1.0 s are never transcribed" in warning
    assert warning in result.note and "noise" in result.note and result.note in str(result)
    assert result.windows == ()


def test_a_long_clip_is_sent_in_windows_and_joined(tiny3n):
    """By default a clip past 30 s goes as plan_long_audio's windows, one generation
    each, in order; nothing is cut, so no warning, and the note says how it was sent."""
    long = np.zeros(31 * 16_000, np.float32)
    result = tiny3n.transcribe((long, 16_000), max_new_tokens=2)
    plan = plan_long_audio((long, 16_000), family="gemma3n")
    # Silence everywhere: vLLM's rule cuts at the first of equally quiet frames (28 s).
    assert [(s, e) for s, e, _ in result.windows] == [(0.0, 28.0), (27.0, 31.0)]
    assert [(s, e) for s, e, _ in result.windows] == [(w.start_s, w.end_s) for w in plan.windows]
    assert result.warnings == () and "2 windows" in result.note and "noise" in result.note
    assert result.text == join_window_texts([t for *_, t in result.windows])[0]


@pytest.mark.parametrize(
    "texts, overlapped, joined, dropped",
    [
        (
            ["Hello there, my friend", "My friend! How are you?"],
            True,
            "Hello there, my friend How are you?",
            [2],
        ),
        (["one two", "three four", "four five"], True, "one two three four five", [0, 1]),
        (["one two", "two three"], False, "one two two three", []),
        (["same same", "same same"], True, "same same", [2]),
        (["", "a b"], True, "a b", [0]),
    ],
)
def test_the_join_keeps_an_overlap_once(texts, overlapped, joined, dropped):
    text, steps = join_window_texts(texts, overlapped=overlapped)
    assert text == joined
    found = [
        int(s.split(": ")[1].split()[0]) if "dropped" in s else 0
        for s in steps
        if s.startswith("window")
    ]
    assert found == dropped


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
