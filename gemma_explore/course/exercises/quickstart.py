"""Notebook 00 · quickstart: what the tiny model's counts can be trusted for.

>>> from gemma_explore.course.grader import grade
>>> [e.name for e in EXERCISES]
['clip-twice-as-long', 'what-a-real-model-changes', 'why-counts-hold']
>>> grade(EXERCISES[2], "Trained weights make the counts right.").right
False
"""

from __future__ import annotations

from gemma_explore.course.exercises.common import audio_tokens, speech
from gemma_explore.course.grader import Exercise
from gemma_explore.facts.families import GEMMA4

__all__ = ["EXERCISES", "NOTEBOOK"]

NOTEBOOK = "00_quickstart"


def _twice_the_clip() -> int:
    import numpy as np

    wave, rate = speech()
    return audio_tokens((np.tile(wave, 2), rate), GEMMA4)


def _real_model_changes() -> str:
    # The question's laptop has not fetched the vocabulary: its tiny bundle holds the
    # stand-in, which cuts text into characters. The multimodal counts are the real
    # processor's either way; a real checkpoint's tokenizer (Gemma's vocabulary, fetched
    # here or not) cuts the same text into fewer pieces, so only the prompt count changes.
    from gemma_explore.models.tokenizer import build_stand_in_tokenizer
    from gemma_explore.models.vocabulary import fetched_tokenizer

    text = "What do you see and hear?"
    stand_in = len(build_stand_in_tokenizer(GEMMA4).encode(text, add_special_tokens=False))
    real = fetched_tokenizer(GEMMA4)
    if real is not None:  # Gemma's own pieces, measured
        changes = len(real.encode(text, add_special_tokens=False)) != stand_in
    else:  # one piece per character is what no real vocabulary does
        changes = stand_in == len(text)
    return "a" if changes else "d"


EXERCISES = (
    Exercise(
        name="clip-twice-as-long",
        notebook=NOTEBOOK,
        kind="predict",
        truth=_twice_the_clip,
        tolerance=1,
        hint="Does Gemma 4's audio count depend on how long the clip is? Its plan in section 3 "
        "says how much sound one token holds.",
        why="Gemma 4 spends one token per 40 ms, so twice the sound costs twice the tokens.",
        misconceptions=(
            (132, "That is the clip played once: Gemma 4's count follows the length."),
            (188, "188 is Gemma 3n's fixed count; this is Gemma 4."),
        ),
    ),
    Exercise(
        name="what-a-real-model-changes",
        notebook=NOTEBOOK,
        kind="choose",
        truth=_real_model_changes,
        hint="Which of the two numbers does the real processor count, and which one depends on "
        "how text is cut into tokens? Section 1 lists what is the tiny model's own.",
        why="The soft-token counts are the real processor's; only the text is cut differently.",
        misconceptions=(
            ("c", "Weights never change how many soft tokens the processor writes."),
            ("b", "The multimodal count is the real processor's, with any weights."),
            (
                "d",
                "Without the fetched vocabulary the tiny bundle's tokenizer is a stand-in that "
                "cuts text into characters; a real checkpoint's cuts it into words.",
            ),
        ),
    ),
    Exercise(
        name="why-counts-hold",
        notebook=NOTEBOOK,
        kind="explain",
        hint="Name what does the counting, and what random weights change.",
        answer="The real processor and model classes do every count; random weights change the "
        "values of the vectors, not their shape or number.",
        ideas=(
            # what does the counting: the real code
            ("processor", "real code", "same code", "model class", "real class", "config"),
            # what the weights change, and what they do not
            (
                "value",
                "numbers inside",
                "contents",
                "not their shape",
                "not the shape",
                "never the shape",
                "not how many",
                "never how many",
                "do not depend on the weights",
                "regardless of the weights",
                "independent of the weights",
            ),
        ),
        rejects=(
            (
                ("weights are real", "weights are trained", "trained weights", "pretrained"),
                "The tiny model's weights are random, not trained.",
            ),
            (
                (
                    "weights change how many",
                    "weights decide how many",
                    "weights set how many",
                    "weights change the count",
                    "weights change the number",
                    "weights change the shape",
                    "weights decide the count",
                    "weights determine the count",
                ),
                "Weights change what the vectors hold, never how many there are.",
            ),
        ),
        misconceptions=(
            ("processor weights", ""),
            ("The weights are trained, so the counts are right.", ""),
            ("Random weights change how many tokens come out, but the processor fixes it.", ""),
        ),
        paraphrases=(
            "The real processor does all the counting; random weights only change the numbers "
            "inside the vectors, not how many there are.",
            "Every count comes from the same code and config as the real model, and weights "
            "affect values, never the shape.",
        ),
    ),
)
