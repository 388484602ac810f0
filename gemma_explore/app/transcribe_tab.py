"""The Audio tab's Transcribe button: a plain function, no gradio import, easy to test.

It asks the demo's bundle for Gemma 3n's fixed speech-to-text prompt
(:meth:`~gemma_explore.models.bundle.Bundle.transcribe`) and returns Markdown. Bad input
(an unknown language code, a clip over vLLM's 600 s decode limit, a Gemma 4 model) comes
back as a message, never an exception, so the demo keeps answering. A clip over 30 s is
sent window by window (the windows the Audio tab's counts list, cut at quiet points) and
the texts joined; what the result's note says about the join is shown after ⚠.

>>> from gemma_explore.samples import SAMPLES_DIR
>>> transcribe_tab("tiny-gemma3n", str(SAMPLES_DIR / "speech.wav"), "en").text.startswith(
...     "**Transcript** (transcribe, English): ")
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gemma_explore.app.outputs import TranscribeResult
from gemma_explore.facts.families import SPEECH_TO_TEXT_FAMILY
from gemma_explore.models.bundle import Bundle
from gemma_explore.processing.transcription import LANGUAGES, _supported, speech_to_text_config

__all__ = ["transcribe_tab"]


def _bundles() -> Callable[[str], Bundle]:
    from gemma_explore.app.bundles import get_bundle  # the demo's one bundle cache

    return get_bundle


def transcribe_tab(
    model_name: str,
    audio: Any,
    language: str | None = None,
    translate_to: str | None = None,
    *,
    max_new_tokens: int = 64,
    get_bundle: Callable[[str], Bundle] | None = None,
) -> TranscribeResult:
    """Transcribe (or, with ``translate_to``, translate) the uploaded clip: a
    :class:`~gemma_explore.app.outputs.TranscribeResult` (``text`` in Markdown, the fixed
    ``prompt``, ``error`` or None, ``noise`` when the model's weights are random).
    """
    try:
        if audio is None:
            stt = SPEECH_TO_TEXT_FAMILY
            raise ValueError(
                f"Upload or record a clip first (up to {speech_to_text_config().max_decode_s} s; "
                f"{stt.display_name} hears its first {stt.audio.max_seconds:g} s)."
            )
        bundle = (get_bundle or _bundles())(model_name)
        try:
            _supported(bundle.family)
        except ValueError:  # the library's message names a Python call; name the controls
            STT = SPEECH_TO_TEXT_FAMILY.display_name
            raise ValueError(
                f"{bundle.spec.display_name} has no speech-to-text interface (vLLM serves "
                f"/v1/audio/transcriptions for {STT} only). Pick a {STT} model in "
                "Model, or ask in the Chat tab: attach the clip and type "
                '"Transcribe this audio."'
            ) from None
        task = "translate" if translate_to else "transcribe"
        result = bundle.transcribe(
            audio,
            language=language or None,
            task=task,
            to_language=translate_to or None,
            max_new_tokens=max_new_tokens,
        )
    except Exception as exc:  # noqa: BLE001 - a message for the page, never a crash
        message = (
            str(exc)
            if isinstance(exc, ValueError | RuntimeError | ConnectionError)
            else (f"Something went wrong ({type(exc).__name__}: {exc}). Try another clip.")
        )
        return TranscribeResult.failed(f"✗ {message}")
    names = [LANGUAGES[c] for c in (result.language, result.to_language) if c]
    how = ", ".join([result.task, *names])
    text = f"**{'Translation' if task == 'translate' else 'Transcript'}** ({how}): "
    text += f"`{result.text.strip()}`" if result.text.strip() else "*(empty)*"
    if result.note:
        text += f"\n\n⚠ {result.note}"
    return TranscribeResult(text=text, prompt=result.prompt, noise=result.is_random_weights)
