"""Handlers for ``demo_app.py``: plain functions, no gradio import, easy to test.

Every handler catches bad input and returns a message instead of raising, so one bad
upload never stops the app from answering the next request.
"""

from __future__ import annotations

import threading
from typing import Any

from ..media import MediaError
from ..models.bundle import Bundle, ModelLoadError, load

__all__ = ["RANDOM_WEIGHTS_NOTICE", "answer_image_question", "get_bundle", "error_text"]

RANDOM_WEIGHTS_NOTICE = (
    "⚠️ This is the tiny offline model with **random weights**: its answers are noise. "
    "Everything before generation (resizing, patches, token counts) is real. "
    "Launch with `--model google/gemma-4-E4B-it` on a GPU for real answers."
)

_BUNDLES: dict[str, Bundle] = {}
_LOCK = threading.Lock()


def get_bundle(name: str) -> Bundle:
    """Load (once) and return the bundle called ``name``."""
    with _LOCK:
        if name not in _BUNDLES:
            _BUNDLES[name] = load(name)
        return _BUNDLES[name]


def error_text(exc: BaseException) -> str:
    """A one-paragraph message for the UI."""
    if isinstance(exc, MediaError | ModelLoadError | ValueError):
        return f"❌ {exc}"
    return f"❌ Something went wrong ({type(exc).__name__}: {exc}). Try another input."


def answer_image_question(
    model_name: str, image: Any, question: str, max_new_tokens: int = 24
) -> tuple[str, str]:
    """Image + question → (answer, notice). Errors come back as the answer text."""
    try:
        bundle = get_bundle(model_name)
        if image is None:
            raise MediaError("Upload an image first (PNG or JPEG).")
        content = [{"type": "image", "image": image}]
        if question and question.strip():
            content.append({"type": "text", "text": question.strip()})
        gen = bundle.generate(
            [{"role": "user", "content": content}], max_new_tokens=int(max_new_tokens)
        )
        notice = RANDOM_WEIGHTS_NOTICE if bundle.is_random_weights else ""
        stats = (
            f"\n\n— {gen.prompt_tokens} prompt tokens ({gen.multimodal_tokens} image), "
            f"{gen.generated_tokens} generated, prefill {gen.prefill_s * 1000:.0f} ms"
        )
        return gen.text + stats, notice
    except Exception as exc:  # noqa: BLE001 - the UI shows every failure as text
        return error_text(exc), ""
