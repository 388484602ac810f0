"""The demo's Serving tab: engine arguments in, what vLLM reserves out (pure handler).

The handler takes plain values (as sliders give them) and returns a
:class:`~gemma_explore.app.outputs.ServingResult` (figure, table, plan, error); it never
raises, so a bad combination shows a one-line reason instead of breaking the demo.

>>> out = serving_tab("tiny-gemma4", max_model_len=4096, image_limit=2)  # doctest: +SKIP
>>> out.plan.encoder_cache_size                                          # doctest: +SKIP
8192
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gemma_explore.app.outputs import ServingResult
from gemma_explore.facts.released import RELEASED_IDS
from gemma_explore.serving.plan import ServingPlan, plan_serving
from gemma_explore.viz.serving import show_serving

__all__ = ["LOADED_MODEL", "SERVING_CHOICES", "SERVING_DEFAULT", "serving_tab"]

# The tab plans a released checkpoint by default (the E4B: image, audio and video, so every
# slider means something); the last choice plans whatever the Model box has loaded.
LOADED_MODEL = "the model loaded above"
SERVING_DEFAULT = "google/gemma-4-E4B-it"
SERVING_CHOICES = (*RELEASED_IDS, LOADED_MODEL)


def _number(value: Any, name: str, *, low: int = 0) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number, got {value!r}.") from None
    if n < low:
        raise ValueError(f"{name} must be at least {low}, got {n}.")
    return n


def serving_tab(
    model_name: str,
    max_model_len: Any = 8192,
    image_limit: Any = 4,
    audio_limit: Any = 1,
    video_limit: Any = 1,
    max_num_batched_tokens: Any = 8192,
    max_soft_tokens: Any = None,
    gpu_memory_gib: Any = 80,
    video_frames: Any = 32,
) -> ServingResult:
    """Plan serving for these engine arguments: ``figure`` (:func:`show_serving`),
    ``table`` (markdown, vLLM's names), ``plan`` and ``error`` (None when all went well)."""
    try:
        limits: dict[str, Any] = {
            "image": _number(image_limit, "image limit"),
            "audio": _number(audio_limit, "audio limit"),
        }
        videos = _number(video_limit, "video limit")
        limits["video"] = {
            "count": videos,
            "num_frames": _number(video_frames, "video frames", low=1),
        }
        budget = (
            None
            if max_soft_tokens in (None, "", "default")
            else _number(max_soft_tokens, "max_soft_tokens")
        )
        plan = plan_serving(
            model_name,
            max_model_len=_number(max_model_len, "max_model_len", low=1),
            limit_mm_per_prompt=limits,
            max_num_batched_tokens=_number(max_num_batched_tokens, "max_num_batched_tokens", low=1),
            max_soft_tokens=budget,  # Gemma 3n ignores it, as vLLM does
        )
        fig = show_serving(plan, gpu_memory_gib=float(gpu_memory_gib) if gpu_memory_gib else None)
        return ServingResult(figure=fig, table=_table(plan), plan=plan)
    except Exception as exc:  # noqa: BLE001 - the demo shows every failure as a line
        kind = "" if isinstance(exc, ValueError | TypeError) else f"{type(exc).__name__}: "
        return ServingResult(error=str(exc), table=f"✗ {kind}{exc}")


def _table(plan: ServingPlan) -> str:
    """The plan's own table, plus the question people ask first: how many photos fit."""
    table = plan.table()
    fit = plan.images_that_fit((1080, 1920))
    photos = (
        "1920×1080 px (W×H) photos that fit",
        f"{fit.fits} ({fit.tokens_per_image} tokens each, {fit.limited_by})",
    )
    return dataclasses.replace(table, rows=(*table.rows, photos)).markdown()
