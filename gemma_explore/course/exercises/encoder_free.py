"""Notebook 07 · encoder-free: Gemma 4 Unified's 640-sample rows, and vLLM's count of them.

>>> from gemma_explore.course.grader import grade
>>> [e.name for e in EXERCISES]
['unified-1.5s', 'vllm-unified-clip', 'why-more-work']
>>> grade(EXERCISES[0], 37).message  # doctest: +ELLIPSIS
'not yet. The last partial row is padded to a whole row, not dropped: ceil, not floor. Hint: ...'
"""

from __future__ import annotations

from gemma_explore.course.exercises.common import audio_tokens, tiny
from gemma_explore.course.grader import Exercise
from gemma_explore.facts.families import GEMMA4_UNIFIED

__all__ = ["EXERCISES", "NOTEBOOK"]

NOTEBOOK = "07_encoder_free"


def _unified_samples(samples: int) -> int:
    return audio_tokens(samples, GEMMA4_UNIFIED)


def _vllm_unified_placeholders(samples: int) -> int:
    from gemma_explore.parity.checks import check_audio_parity

    rows = check_audio_parity(samples, bundle=tiny("tiny-gemma4-unified"), use_vllm=False).rows
    return next(r for r in rows if r.step == "soft tokens").vllm_arithmetic


EXERCISES = (
    Exercise(
        name="unified-1.5s",
        notebook=NOTEBOOK,
        kind="predict",
        truth=lambda: _unified_samples(24_000),
        hint="How many samples does one Unified token hold, and what happens to the last, "
        "shorter row?",
        why="ceil(samples / 640): the last partial row is zero-padded into a whole token.",
        misconceptions=(
            (
                37,
                "The last partial row is padded to a whole row, not dropped: ceil, not floor.",
            ),
            (150, "That counts 10 ms mel frames; Unified has no mel at all."),
        ),
    ),
    Exercise(
        name="vllm-unified-clip",
        notebook=NOTEBOOK,
        kind="predict",
        truth=lambda: _vllm_unified_placeholders(20 * 640 + 50),
        hint="First count the embedder's rows; then ask whether the remainder falls in the "
        "window where vLLM's mel count is short.",
        why="The remainder (50 samples) is inside vLLM's 1–160 window: one placeholder short.",
        misconceptions=(
            (21, "That is what the embedder makes; vLLM's prompt counts with Gemma 4's mel rule."),
            (0, "vLLM's mel count is short by one here, not empty: the clip is long."),
        ),
    ),
    Exercise(
        name="why-more-work",
        notebook=NOTEBOOK,
        kind="explain",
        hint="What has a Gemma 4 token already 'seen' that a Unified token has not?",
        answer="Gemma 4's tower has already mixed every patch with attention; Unified's tokens are "
        "independent raw blocks, so the language model must relate them.",
        ideas=(
            # what Gemma 4's tower already did
            ("attention", "attend", "mix", "mixed", "context", "combined", "every patch"),
            # what Unified's tokens are, and who must relate them
            (
                "raw",
                "independent",
                "unmixed",
                "local",
                "isolated",
                "on its own",
                "on their own",
                "separately",
                "no context",
                "no mixing",
                "language model must",
                "language model has to",
                "language model needs to",
                "in the language model",
                "decoder must",
                "in the decoder",
            ),
        ),
        rejects=(
            (
                ("more tokens", "more soft tokens"),
                "Gemma 4 and Unified give a photo the same number of tokens.",
            ),
        ),
        misconceptions=(
            ("Unified makes more tokens for the same photo, so it needs more compute.", ""),
            ("Unified's encoder is bigger.", ""),
            ("Its rows hold 6912 values, so each token is bigger and slower.", ""),
        ),
        paraphrases=(
            "In Gemma 4 the ViT's attention has already combined every patch with the rest of "
            "the image; Unified's tokens are raw 48 px blocks projected on their own, so the "
            "language model has to relate them itself.",
            "Gemma 4's tokens arrive with context from the vision encoder; Unified's are isolated "
            "local blocks, and the decoder must do that mixing.",
        ),
    ),
)
