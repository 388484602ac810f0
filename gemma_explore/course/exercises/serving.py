"""Notebook 08 · serving: what vLLM reserves at start-up, and how it finds the worst case.

>>> from gemma_explore.course.grader import grade
>>> [e.name for e in EXERCISES]
['photos-in-4096', 'e4b-cache-512', 'why-dummy-inputs']
>>> grade(EXERCISES[2], "The counts would become more accurate.").right
False
"""

from __future__ import annotations

from typing import Any

from gemma_explore.course.grader import Exercise

__all__ = ["EXERCISES", "NOTEBOOK"]

NOTEBOOK = "08_serving"


def _served(model_id: str) -> Any:
    from gemma_explore.engines.load import load

    return load(model_id, weights=False)


def _photos_that_fit() -> int:
    from gemma_explore.serving.plan import plan_serving

    plan = plan_serving(_served("google/gemma-4-31B-it"), max_model_len=4096, max_soft_tokens=560)
    return plan.images_that_fit((1080, 1920)).fits


def _encoder_cache(model_id: str, batched: int, **limits: Any) -> int:
    from gemma_explore.serving.plan import plan_serving

    plan = plan_serving(
        _served(model_id), max_num_batched_tokens=batched, limit_mm_per_prompt=limits or None
    )
    return plan.encoder_cache_size


EXERCISES = (
    Exercise(
        name="photos-in-4096",
        notebook=NOTEBOOK,
        kind="predict",
        truth=_photos_that_fit,
        hint="How many tokens does vLLM count for one such photo at 560 (markers included)? "
        "Then fill 4096 with them, after the text.",
        why="Whole images only: vLLM's count per image plus two markers, against max_model_len.",
        misconceptions=((8, "Count vLLM's tokens for this size, not the budget: a few less fit."),),
    ),
    Exercise(
        name="e4b-cache-512",
        notebook=NOTEBOOK,
        kind="predict",
        truth=lambda: _encoder_cache("google/gemma-4-E4B-it", 512, video=0),
        hint="max(max_num_batched_tokens, the largest item): which item is the largest once "
        "video is off, on a checkpoint that hears?",
        why="With video off, the largest item is a 30 s clip.",
        misconceptions=(
            (512, "The cache is never smaller than the largest item."),
            (280, "Which is larger on the E4B: an image at 280, or a clip?"),
            (2496, "Video is off: its worst case no longer counts."),
            (16384, "That is the H100 default of max_num_batched_tokens; here it is 512."),
        ),
    ),
    Exercise(
        name="why-dummy-inputs",
        notebook=NOTEBOOK,
        kind="explain",
        hint="Which hook would vLLM then find, and do Gemma 3n's counts depend on the input?",
        answer="vLLM would call the renamed method instead of building dummy inputs, and the worst "
        "case would stay 256 image and 188 audio tokens, because Gemma 3n's counts are fixed.",
        ideas=(
            # what changes: vLLM asks the method instead of building dummy inputs
            (
                "instead of building",
                "instead of the dummy",
                "no dummy",
                "without dummy",
                "without the dummy",
                "skip the dummy",
                "skip dummy",
                "no longer build",
                "not build",
                "call the method",
                "ask the method",
                "use the method",
                "read the method",
                "call it directly",
                "read it directly",
            ),
            # what does not: Gemma 3n's numbers
            (
                "unchanged",
                "same numbers",
                "same counts",
                "same worst case",
                "same 256",
                "still 256",
                "stay 256",
                "remain 256",
                "numbers stay",
                "counts stay",
                "either way",
                "anyway",
                "both ways",
                "regardless",
                "counts are fixed",
                "numbers are fixed",
                "fixed counts",
                "fixed numbers",
                "would not change",
                "do not change",
                "does not change",
            ),
        ),
        rejects=(
            (
                (
                    "smaller worst case",
                    "larger worst case",
                    "bigger worst case",
                    "different worst case",
                    "smaller cache",
                    "larger cache",
                    "bigger cache",
                    "different cache",
                    "smaller numbers",
                    "larger numbers",
                    "different numbers",
                    "smaller counts",
                    "larger counts",
                    "different counts",
                    "more accurate",
                    "more precise",
                ),
                "Gemma 3n's counts are fixed: any input gives 256 and 188.",
            ),
        ),
        misconceptions=(
            (
                "vLLM would reserve a smaller worst case, because it no longer builds dummy inputs.",
                "",
            ),
            ("Nothing: vLLM always builds dummy inputs for every model.", ""),
            ("The counts would become more accurate.", ""),
        ),
        paraphrases=(
            "vLLM would ask the method for the worst case and skip the dummy inputs, but the "
            "numbers stay the same, 256 and 188, since Gemma 3n's counts are fixed.",
            "It would read get_mm_max_tokens_per_item directly instead of building dummy inputs; "
            "256 and 188 either way.",
        ),
    ),
)
