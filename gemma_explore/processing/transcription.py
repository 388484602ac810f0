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
  speech-to-text API documents (vLLM's ``ISO639_1_SUPPORTED_LANGS``). vLLM silently drops
  a code it does not know; we refuse it and list the supported ones;
* the one ``<audio_soft_token>`` is the raw-prompt placeholder the processor expands to
  ``"\n\n" <start_of_audio> + 188 × <audio_soft_token> + <end_of_audio> "\n\n"``;
* the prompt has no ``<bos>``: vLLM's tokenizer adds it for Gemma 3n;
* ``get_speech_to_text_config``: clips of at most 30 s at 16 kHz, with chunking of
  longer clips turned off for Gemma 3n.

Gemma 4's seed has no speech-to-text interface: ask it in a chat turn instead.

>>> transcription_prompt(language="fr")
'<start_of_turn>user\nTranscribe this audio into French: <audio_soft_token><end_of_turn>\n<start_of_turn>model\n'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gemma_explore.errors import MediaError
from gemma_explore.facts.families import FAMILIES, SPEECH_TO_TEXT_FAMILY, FamilySpec, get_family
from gemma_explore.media.loaders import load_audio

__all__ = [
    "LANGUAGES",
    "MAX_CLIP_S",
    "TASKS",
    "Transcription",
    "TranscriptionRequest",
    "require_language",
    "transcription_prompt",
    "transcription_request",
]

# vLLM's max_audio_clip_s for Gemma 3n (chunking is off for it): a fact of families.py.
MAX_CLIP_S: int = SPEECH_TO_TEXT_FAMILY.transcription_max_s
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
    if spec.transcription_max_s is None:
        which = " and ".join(f.display_name for f in FAMILIES.values() if f.transcription_max_s)
        raise ValueError(
            f"{spec.display_name} has no speech-to-text interface (the seed defines "
            f"get_generation_prompt for {which} only, so vLLM serves no "
            "/v1/audio/transcriptions for it). Ask in a chat turn instead: "
            "bundle.generate([{'role': 'user', 'content': [{'type': 'audio', 'audio': clip}, "
            "{'type': 'text', 'text': 'Transcribe this audio.'}]}])."
        )
    return spec


def require_language(code: str | None, *, what: str = "language") -> str | None:
    """A supported ISO 639-1 code (lower-cased), None for none; else a clear error.

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
            f"{SPEECH_TO_TEXT_FAMILY.display_name}'s transcription supports ({codes})."
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
    """A checked request: the prompt, and the clip as 16 kHz mono (at most 30 s)."""

    prompt: str
    wave: np.ndarray = field(repr=False)  # (samples,) float32 at 16 kHz
    language: str | None
    task: str
    to_language: str | None
    duration_s: float
    resampled_from: int | None  # the clip's own rate when it was not 16 kHz


def transcription_request(
    audio: Any,
    *,
    family: str | FamilySpec = SPEECH_TO_TEXT_FAMILY,
    language: str | None = None,
    task: str = "transcribe",
    to_language: str | None = None,
    sampling_rate: int | None = None,
) -> TranscriptionRequest:
    """Check everything before any model runs: family, task, languages, the clip's limits.

    >>> r = transcription_request((np.zeros(8000, np.float32), 8000), language="en")
    >>> r.duration_s, r.resampled_from
    (1.0, 8000)
    """
    spec = _supported(family)
    prompt = transcription_prompt(
        language=language, task=task, to_language=to_language, family=spec
    )
    rate, limit = spec.audio.sampling_rate, spec.transcription_max_s
    wave, notes = load_audio(audio, sampling_rate=sampling_rate, target_rate=rate)
    seconds = wave.shape[0] / rate
    if seconds > limit:
        raise MediaError(
            f"The clip is {seconds:.1f} s; {spec.display_name} transcription takes at most "
            f"{limit} s (vLLM's max_audio_clip_s, with chunking off for "
            f"{spec.display_name}). Cut it into pieces of {limit} s or less "
            f"(ffmpeg -i in.wav -f segment -segment_time {limit} out%03d.wav)."
        )
    return TranscriptionRequest(
        prompt=prompt,
        wave=wave,
        language=require_language(language),
        task=task,
        to_language=require_language(to_language),
        duration_s=seconds,
        resampled_from=notes.get("resampled_from"),
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

    @property
    def note(self) -> str:
        """A warning to show with the text, or ``""``."""
        if self.is_random_weights:
            return "Random weights: this text is noise, not a transcription."
        return ""

    def __str__(self) -> str:
        return f"{self.text}\n({self.note})" if self.note else self.text
