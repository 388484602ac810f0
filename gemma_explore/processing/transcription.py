r"""Gemma 3n speech-to-text: the fixed prompt vLLM's ``/v1/audio/transcriptions`` sends.

Gemma 3n has no transcription head; it transcribes because it is asked to, in a chat
turn. vLLM standardises that request (``Gemma3nForConditionalGeneration.
get_generation_prompt`` in the seed ``gemma3n_mm.py``) into one fixed raw prompt::

    <start_of_turn>user\nTranscribe this audio[ into French]: <audio_soft_token><end_of_turn>\n<start_of_turn>model\n
    <start_of_turn>user\nTranslate this audio[ from French][ into English]: <audio_soft_token>…

Read in our own words:

* the task picks the verb, ``Transcribe`` or ``Translate``;
* a *transcription* with a known language asks for the text "into" that language;
* a *translation* says "from" the source language and "into" the target, each only
  when given;
* languages are ISO 639-1 codes, written out as English names from the table OpenAI's
  speech-to-text API documents (vLLM's ``ISO639_1_SUPPORTED_LANGS``, Gemma 3n's
  ``supported_languages``). vLLM's endpoint (``SupportsTranscription.validate_language``)
  refuses a code outside Whisper's language table with "Unsupported language"; a Whisper
  code outside these 57 it logs a warning for and then leaves out of the prompt. We
  refuse both, and list the supported ones;
* the one ``<audio_soft_token>`` is the raw-prompt placeholder the processor expands to
  ``"\n\n" <start_of_audio> + 188 × <audio_soft_token> + <end_of_audio> "\n\n"``;
* the prompt has no ``<bos>``: vLLM's tokenizer adds it for Gemma 3n;
* ``get_speech_to_text_config``: 16 kHz, ``max_audio_clip_s=30`` and
  ``min_energy_split_window_size=None``, so chunking is off (the same in every vLLM
  release the package supports). With chunking off vLLM neither splits nor refuses a
  longer clip (``do_split_audio`` in
  ``entrypoints/speech_to_text/base/serving.py`` needs ``allow_audio_chunking``): the
  clip goes whole to transformers' ``Gemma3nAudioFeatureExtractor``, which keeps its
  first 30 s (``max_length=480_000, truncation=True``) and drops the rest without a word.
  We take such a clip and warn. The endpoint's only length limit is its decoder's,
  ``VLLM_MAX_AUDIO_DECODE_DURATION_S`` (600 s by default; the release's profile holds it,
  ``vllm_profile(v).max_audio_decode_s``): we refuse past that, in its words. (Its upload
  limit, ``VLLM_MAX_AUDIO_CLIP_FILESIZE_MB`` = 25, is not reached first: 600 s of the
  16 kHz 16-bit WAV the openai engine uploads is 19.2 MB.)

Gemma 4's model class has no speech-to-text interface: ask it in a chat turn instead.

>>> transcription_prompt(language="fr")
'<start_of_turn>user\nTranscribe this audio into French: <audio_soft_token><end_of_turn>\n<start_of_turn>model\n'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gemma_explore.errors import MediaError
from gemma_explore.facts.families import FAMILIES, SPEECH_TO_TEXT_FAMILY, FamilySpec, get_family
from gemma_explore.media.loaders import load_audio
from gemma_explore.vllm_versions import VllmProfile, vllm_profile

__all__ = [
    "HEARD_S",
    "LANGUAGES",
    "SpeechToTextConfig",
    "TASKS",
    "Transcription",
    "TranscriptionRequest",
    "join_window_texts",
    "require_language",
    "speech_to_text_config",
    "transcription_prompt",
    "transcription_request",
    "transcription_warnings",
]

# What the model hears of a clip: the first max_length samples the extractor keeps (30 s).
HEARD_S: float = SPEECH_TO_TEXT_FAMILY.audio.max_seconds
TASKS = ("transcribe", "translate")

# ISO 639-1 code → the English name written into the prompt. The list OpenAI documents for
# its speech-to-text API (platform.openai.com/docs/guides/speech-to-text), which vLLM
# keeps as ISO639_1_SUPPORTED_LANGS and Gemma 3n declares as its supported_languages.
LANGUAGES: dict[str, str] = {
    "af": "Afrikaans",
    "ar": "Arabic",
    "hy": "Armenian",
    "az": "Azerbaijani",
    "be": "Belarusian",
    "bs": "Bosnian",
    "bg": "Bulgarian",
    "ca": "Catalan",
    "zh": "Chinese",
    "hr": "Croatian",
    "cs": "Czech",
    "da": "Danish",
    "nl": "Dutch",
    "en": "English",
    "et": "Estonian",
    "fi": "Finnish",
    "fr": "French",
    "gl": "Galician",
    "de": "German",
    "el": "Greek",
    "he": "Hebrew",
    "hi": "Hindi",
    "hu": "Hungarian",
    "is": "Icelandic",
    "id": "Indonesian",
    "it": "Italian",
    "ja": "Japanese",
    "kn": "Kannada",
    "kk": "Kazakh",
    "ko": "Korean",
    "lv": "Latvian",
    "lt": "Lithuanian",
    "mk": "Macedonian",
    "ms": "Malay",
    "mr": "Marathi",
    "mi": "Maori",
    "ne": "Nepali",
    "no": "Norwegian",
    "fa": "Persian",
    "pl": "Polish",
    "pt": "Portuguese",
    "ro": "Romanian",
    "ru": "Russian",
    "sr": "Serbian",
    "sk": "Slovak",
    "sl": "Slovenian",
    "es": "Spanish",
    "sw": "Swahili",
    "sv": "Swedish",
    "tl": "Tagalog",
    "ta": "Tamil",
    "th": "Thai",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "ur": "Urdu",
    "vi": "Vietnamese",
    "cy": "Welsh",
}


def _supported(family: str | FamilySpec) -> FamilySpec:
    """The family's spec, when vLLM serves transcriptions for it; else what to do instead."""
    spec = get_family(family)
    if not spec.transcribes:
        which = " and ".join(f.display_name for f in FAMILIES.values() if f.transcribes)
        raise ValueError(
            f"{spec.display_name} has no speech-to-text interface (vLLM defines "
            f"get_generation_prompt for {which} only, so it serves no "
            "/v1/audio/transcriptions for it). Ask in a chat turn instead: "
            "bundle.generate([{'role': 'user', 'content': [{'type': 'audio', 'audio': clip}, "
            "{'type': 'text', 'text': 'Transcribe this audio.'}]}])."
        )
    return spec


@dataclass(frozen=True)
class SpeechToTextConfig:
    """What ``get_speech_to_text_config`` tells vLLM's speech-to-text endpoint for a
    family, and what the endpoint then does with a long clip."""

    sample_rate: int  # Hz vLLM resamples every upload to before anything else
    max_audio_clip_s: int  # the config's clip length: a split point only with chunking on
    min_energy_split_window_size: int | None  # None: chunking off (vLLM never splits)
    allow_audio_chunking: bool  # vLLM's property: window and clip length both set
    max_decode_s: int  # VLLM_MAX_AUDIO_DECODE_DURATION_S: longer uploads are refused
    heard_s: float | None  # what the feature extractor keeps of a clip (30 s)
    steps: tuple[str, ...]  # why, in words
    vllm_version: str  # the vLLM release whose decode limit this is (its profile's version)

    def __repr__(self) -> str:
        return "\n".join(self.steps)


def speech_to_text_config(
    family: str | FamilySpec = SPEECH_TO_TEXT_FAMILY, *, vllm_version: str | None = None
) -> SpeechToTextConfig:
    """The family's speech-to-text configuration as vLLM reads it, and its effect, with the
    decode limit of ``vllm_version`` (None: the installed vLLM, else the newest supported).

    >>> c = speech_to_text_config()
    >>> c.max_audio_clip_s, c.min_energy_split_window_size, c.allow_audio_chunking
    (30, None, False)
    """
    spec = _supported(family)
    profile = vllm_profile(vllm_version)
    limit = _decode_limit_s(profile)
    window = spec.transcription_split_window  # Gemma 3n: None ("enable chunking later")
    chunking = window is not None and spec.transcription_clip_s is not None  # vLLM's property
    heard = spec.audio.max_seconds
    steps = [
        f"sample_rate {spec.audio.sampling_rate} Hz: vLLM resamples every upload to it.",
        f"max_audio_clip_s {spec.transcription_clip_s}, min_energy_split_window_size "
        f"{window}: allow_audio_chunking is {chunking}, so "
        + (
            f"clips over {spec.transcription_clip_s} s are split at quiet points."
            if chunking
            else "vLLM sends every clip whole: it neither splits nor refuses a long one."
        ),
        f"{profile.label}: VLLM_MAX_AUDIO_DECODE_DURATION_S {limit} s: the decoder refuses "
        "a longer upload, the endpoint's only length check.",
    ]
    if heard is not None:
        steps.append(
            f"transformers' {spec.classes.feature_extractor} keeps the first "
            f"{spec.audio.max_samples} samples ({heard:g} s; max_length, truncation=True): "
            "the model hears no more of a clip."
        )
    return SpeechToTextConfig(
        sample_rate=spec.audio.sampling_rate,
        max_audio_clip_s=spec.transcription_clip_s,
        min_energy_split_window_size=window,
        allow_audio_chunking=chunking,
        max_decode_s=limit,
        heard_s=heard,
        steps=tuple(steps),
        vllm_version=profile.version,
    )


def _decode_limit_s(profile: VllmProfile) -> int:
    """The release's VLLM_MAX_AUDIO_DECODE_DURATION_S default in whole seconds (an int in
    vllm/envs.py, and its refusal writes it so: "… duration of 600s")."""
    return int(profile.max_audio_decode_s)


def transcription_warnings(
    seconds: float, *, family: str | FamilySpec = SPEECH_TO_TEXT_FAMILY
) -> tuple[str, ...]:
    """What to tell the caller about a clip of ``seconds`` that vLLM takes: the part the
    feature extractor silently drops (``()`` when the model hears it all).

    >>> transcription_warnings(45.0)[0].split(":")[0]
    'The clip is 45.0 s, but Gemma 3n hears only its first 30 s'
    """
    spec = _supported(family)
    heard = spec.audio.max_seconds
    if heard is None or seconds <= heard or speech_to_text_config(spec).allow_audio_chunking:
        return ()  # heard whole, or vLLM splits it into pieces the extractor keeps
    return (
        f"The clip is {seconds:.1f} s, but {spec.display_name} hears only its first "
        f"{heard:g} s: vLLM neither splits nor refuses it (chunking is off for "
        f"{spec.display_name}: no min_energy_split_window_size), and transformers' "
        f"{spec.classes.feature_extractor} keeps the first {spec.audio.max_samples} samples "
        f"(its max_length, with truncation on), so the last {seconds - heard:.1f} s are never "
        f"transcribed. Cut it into pieces of {heard:g} s or less "
        f"(ffmpeg -i in.wav -f segment -segment_time {heard:g} out%03d.wav).",
    )


def require_language(code: str | None, *, what: str = "language") -> str | None:
    """A supported ISO 639-1 code (lower-cased), None for none; else a clear error.

    Stricter than vLLM on purpose: vLLM's ``validate_language`` raises only for a code
    outside Whisper's table; a Whisper code Gemma 3n does not list passes with a logged
    warning, and ``get_generation_prompt`` then writes no language at all.

    >>> require_language("FR")
    'fr'
    """
    if code is None or code == "":
        return None
    key = str(code).strip().lower()
    if key not in LANGUAGES:
        codes = ", ".join(sorted(LANGUAGES))
        raise ValueError(
            f"Unknown {what} {code!r}: give an ISO 639-1 code "
            f"{SPEECH_TO_TEXT_FAMILY.display_name}'s transcription supports ({codes}). "
            "(vLLM's endpoint refuses a code outside Whisper's table with \"Unsupported "
            'language", and leaves any other code outside these out of the prompt, with '
            "only a warning in its log.)"
        )
    return key


def transcription_prompt(
    *,
    language: str | None = None,
    task: str = "transcribe",
    to_language: str | None = None,
    family: str | FamilySpec = SPEECH_TO_TEXT_FAMILY,
) -> str:
    r"""The raw prompt vLLM builds for a transcription or translation request.

    Feed it to :func:`~gemma_explore.processing.layout.layout_prompt` with ``template=False`` and the
    clip as ``audios=[clip]`` to see every token.

    >>> transcription_prompt(task="translate", language="de", to_language="en").splitlines()[1]
    'Translate this audio from German into English: <audio_soft_token><end_of_turn>'
    """
    spec = _supported(family)
    if task not in TASKS:
        raise ValueError(f"task must be 'transcribe' or 'translate', got {task!r}.")
    source = require_language(language)
    target = require_language(to_language, what="target language")
    if task == "transcribe" and target is not None:
        raise ValueError(
            "to_language only applies to task='translate' (vLLM ignores it when "
            "transcribing): pass task='translate', or drop to_language."
        )
    text = f"{spec.turn_start}user\n" + ("Transcribe" if task == "transcribe" else "Translate")
    text += " this audio"
    if task == "transcribe" and source is not None:
        text += f" into {LANGUAGES[source]}"
    elif task == "translate":
        if source is not None:
            text += f" from {LANGUAGES[source]}"
        if target is not None:
            text += f" into {LANGUAGES[target]}"
    return text + f": {spec.audio_token}{spec.turn_end}\n{spec.turn_start}model\n"


@dataclass(frozen=True)
class TranscriptionRequest:
    """A checked request: the prompt, the clip as 16 kHz mono, and what the model will
    not hear of it."""

    prompt: str
    wave: np.ndarray = field(repr=False)  # (samples,) float32 at 16 kHz, the whole clip
    language: str | None
    task: str
    to_language: str | None
    duration_s: float
    resampled_from: int | None  # the clip's own rate when it was not 16 kHz
    heard_s: float  # seconds the feature extractor keeps (at most 30)
    warnings: tuple[str, ...]  # what vLLM accepts but drops (the cut after 30 s)
    steps: tuple[str, ...]  # each check, in words
    vllm_version: str  # the vLLM release whose decode limit was checked (profile.version)


def transcription_request(
    audio: Any,
    *,
    family: str | FamilySpec = SPEECH_TO_TEXT_FAMILY,
    language: str | None = None,
    task: str = "transcribe",
    to_language: str | None = None,
    sampling_rate: int | None = None,
    vllm_version: str | None = None,
) -> TranscriptionRequest:
    """Check everything before any model runs: family, task, languages, the clip's limits.

    A clip over 30 s is taken, as vLLM takes it, with a warning (the extractor keeps its
    first 30 s); one over the decode limit of ``vllm_version`` (None: the installed vLLM,
    else the newest supported; 600 s by default) is refused, in vLLM's words. The same
    rule holds for every engine, so a request means the same everywhere.

    >>> r = transcription_request((np.zeros(8000, np.float32), 8000), language="en")
    >>> r.duration_s, r.resampled_from, r.warnings
    (1.0, 8000, ())
    """
    spec = _supported(family)
    prompt = transcription_prompt(
        language=language, task=task, to_language=to_language, family=spec
    )
    profile = vllm_profile(vllm_version)
    rate, limit = spec.audio.sampling_rate, _decode_limit_s(profile)
    wave, notes = load_audio(audio, sampling_rate=sampling_rate, target_rate=rate)
    seconds = wave.shape[0] / rate
    if seconds > limit:
        raise MediaError(
            f"The clip is {seconds:.1f} s; {spec.display_name} transcription takes at most "
            f"{limit} s: vLLM's audio decoder refuses a longer one (\"Audio exceeds maximum "
            f'allowed duration of {limit}s", VLLM_MAX_AUDIO_DECODE_DURATION_S), and the '
            f"model hears only the first {spec.audio.max_seconds:g} s anyway. Cut it into "
            f"pieces of {spec.audio.max_seconds:g} s or less (ffmpeg -i in.wav -f segment "
            f"-segment_time {spec.audio.max_seconds:g} out%03d.wav)."
        )
    warnings = transcription_warnings(seconds, family=spec)
    heard = min(seconds, spec.audio.max_seconds)
    steps = [
        f"{seconds:.1f} s at {rate} Hz"
        + (f" (resampled from {notes['resampled_from']} Hz)" if notes.get("resampled_from") else "")
        + f" ≤ {limit} s, {profile.label}'s decode limit: taken whole (chunking off).",
        f"heard: {heard:.1f} s (the extractor keeps {spec.audio.max_seconds:g} s).",
    ]
    return TranscriptionRequest(
        prompt=prompt,
        wave=wave,
        language=require_language(language),
        task=task,
        to_language=require_language(to_language),
        duration_s=seconds,
        resampled_from=notes.get("resampled_from"),
        heard_s=heard,
        warnings=warnings,
        steps=tuple(steps),
        vllm_version=profile.version,
    )


@dataclass(frozen=True)
class Transcription:
    """What the model wrote for a clip, and how it was asked."""

    text: str
    prompt: str  # the fixed raw prompt (for the openai engine: what the server builds)
    task: str
    language: str | None
    to_language: str | None
    duration_s: float
    engine: str
    is_random_weights: bool  # the tiny bundles' text is noise
    # A long clip sent in windows (plan_long_audio): each window's (start_s, end_s) and
    # text, in order; () when the clip went whole.
    windows: tuple[tuple[float, float, str], ...] = ()
    join_steps: tuple[str, ...] = ()  # how the window texts were joined (join_window_texts)

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the model did not hear (:func:`transcription_warnings` of the clip's
        length: every engine feeds the same extractor, which keeps 30 s); nothing when
        the clip was sent in windows it hears whole."""
        return () if self.windows else transcription_warnings(self.duration_s)

    @property
    def note(self) -> str:
        """The warnings to show with the text, or ``""``."""
        notes = list(self.warnings)
        if self.windows:
            notes.append(
                f"The {self.duration_s:.1f} s clip was sent as {len(self.windows)} windows the "
                "model hears whole (plan_long_audio); " + " ".join(self.join_steps)
            )
        if self.is_random_weights:
            notes.append("Random weights: this text is noise, not a transcription.")
        return " ".join(notes)

    def __str__(self) -> str:
        return f"{self.text}\n({self.note})" if self.note else self.text


def _words(text: str) -> list[str]:
    """Words compared across an overlap: lower-cased, punctuation stripped."""
    return [re.sub(r"[^\w']+", "", w.lower()) for w in text.split()]


def join_window_texts(
    texts: list[str] | tuple[str, ...], *, overlapped: bool = True, max_words: int = 20
) -> tuple[str, tuple[str, ...]]:
    """Join the texts of consecutive windows into one, and say how.

    With ``overlapped`` windows (each repeats the end of the previous one), the longest
    run of words (at most ``max_words``) that ends one text and starts the next, compared
    without case or punctuation, is heard twice: it is kept once. Without overlap nothing
    was heard twice, and the texts are joined with a space as they are.

    >>> join_window_texts(["the cat sat on", "sat on the mat."])
    ('the cat sat on the mat.', ('window 1: 2 words repeated in the overlap dropped (sat on).',))
    >>> join_window_texts(["a b", "c d"], overlapped=False)[0]
    'a b c d'
    """
    out: list[str] = []
    steps: list[str] = []
    for i, text in enumerate(texts):
        words = text.split()
        if i and overlapped:
            tail, head = _words(" ".join(out[-max_words:])), _words(text)
            k = next(
                (
                    k
                    for k in range(min(len(tail), len(head), max_words), 0, -1)
                    if tail[-k:] == head[:k] and any(head[:k])
                ),
                0,
            )
            if k:
                steps.append(
                    f"window {i}: {k} words repeated in the overlap dropped "
                    f"({' '.join(words[:k])})."
                )
            else:
                steps.append(f"window {i}: no words repeated across the overlap; joined whole.")
            words = words[k:]
        out.extend(words)
    if not overlapped and len(texts) > 1:
        steps.append("No overlap: the texts are joined as they are.")
    return " ".join(out), tuple(steps)
