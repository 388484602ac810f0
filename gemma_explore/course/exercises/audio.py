"""Notebook 03 · audio: Gemma 3n's fixed 188 slots against Gemma 4's 40 ms tokens.

>>> from gemma_explore.course.grader import grade
>>> [e.name for e in EXERCISES]
['padding-2s', 'gemma4-10s', 'why-188']
>>> grade(EXERCISES[0], 176).message  # doctest: +ELLIPSIS
'not yet. Round up: ... (ceil, not floor). Hint: ...'
"""

from __future__ import annotations

from gemma_explore.course.exercises.common import audio_tokens
from gemma_explore.course.grader import Exercise
from gemma_explore.facts.families import GEMMA3N, GEMMA4

__all__ = ["EXERCISES", "NOTEBOOK"]

NOTEBOOK = "03_audio"


def _padding_soft_tokens_3n(seconds: float) -> int:
    import numpy as np

    from gemma_explore.plans.audio import plan_audio

    clip = np.full(int(seconds * 16_000), 0.1, np.float32)
    return plan_audio(clip, family=GEMMA3N).num_padding_soft_tokens


def _tokens_gemma4(seconds: float) -> int:
    import numpy as np

    return audio_tokens(np.full(int(seconds * 16_000), 0.1, np.float32), GEMMA4)


EXERCISES = (
    Exercise(
        name="padding-2s",
        notebook=NOTEBOOK,
        kind="predict",
        truth=lambda: _padding_soft_tokens_3n(2),
        hint="How long is one Gemma 3n encoder token (the steps in section 3 say)? The slots "
        "that 2 s of sound does not fill are padding.",
        why="188 slots, minus one real token per 160 ms of the clip.",
        misconceptions=(
            (0, "Gemma 3n always writes 188 slots, so a short clip leaves most of them empty."),
            (138, "That counts 40 ms tokens; Gemma 3n's encoder makes one per 160 ms."),
            (188, "Some slots do hold the clip's real tokens."),
            (
                176,
                "Round up: the last, partial 160 ms of the clip still makes a token (ceil, "
                "not floor).",
            ),
        ),
    ),
    Exercise(
        name="gemma4-10s",
        notebook=NOTEBOOK,
        kind="predict",
        truth=lambda: _tokens_gemma4(10),
        hint="How many milliseconds of sound does one Gemma 4 audio token hold?",
        why="One token per 40 ms: 10 000 ms / 40 ms.",
        misconceptions=(
            (188, "188 is Gemma 3n's fixed count; Gemma 4 charges by length."),
            (1000, "That counts 10 ms mel frames; the encoder squeezes four into one token."),
            (750, "750 is the cap for 30 s; this clip is shorter."),
        ),
    ),
    Exercise(
        name="why-188",
        notebook=NOTEBOOK,
        kind="explain",
        hint="How long is 188 × 160 ms, and what fills the slots a short clip does not use?",
        answer="The processor always writes a fixed 188 placeholders (about 30 s), a static prompt "
        "shape; a short clip's unused slots are filled with padding.",
        ideas=(
            # the count does not depend on the clip
            (
                "fixed",
                "static",
                "always",
                "constant",
                "same number",
                "same count",
                "same shape",
                "same length",
                "regardless",
                "whatever the clip",
                "does not depend",
                "do not depend",
                "never depends",
                "without looking",
                "without knowing",
                "without decoding",
            ),
            # what a short clip leaves: slots filled with padding ("the maximum" alone says
            # what 188 is, not what happens to the slots a 2 s clip does not use)
            ("pad", "padding", "unused", "fill", "empty slot", "filler", "not used"),
        ),
        rejects=(
            (
                ("stretch", "slow down", "slowed down", "resample"),
                "The clip is not stretched: the unused slots get a padding embedding.",
            ),
            (("mel bin", "mel band", "128"), "188 counts tokens, not mel bands."),
            (
                ("188 ms", "188 milliseconds"),
                "One Gemma 3n token is 160 ms; 188 is the number of slots.",
            ),
        ),
        misconceptions=(
            ("Because there are 188 mel bins.", ""),
            ("The clip is always stretched to fill 188 tokens.", ""),
            ("It always uses 188 because the encoder makes 188 tokens for any clip.", ""),
            ("188 is the maximum so it is always used", ""),  # vague: what fills the slots?
        ),
        paraphrases=(
            "The prompt always gets 188 placeholders, about 30 s worth, so its shape never "
            "depends on the clip; slots a short clip doesn't use hold a padding embedding.",
            "A static count: 188 × 160 ms is about the longest clip, and shorter clips are padded.",
        ),
    ),
)
