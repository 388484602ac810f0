"""Notebook 01 · images, Gemma 3n vs Gemma 4: a budget's count, and 3n's squashed grid.

>>> from gemma_explore.course.grader import grade
>>> [e.name for e in EXERCISES]
['landscape-280', 'panorama-3n-stretch', 'why-squash']
>>> grade(EXERCISES[0], 280).message  # doctest: +ELLIPSIS
'not yet. The budget is an upper bound, not the count. Hint: ...'
"""

from __future__ import annotations

from gemma_explore.course.exercises.common import image_tokens
from gemma_explore.course.grader import Exercise
from gemma_explore.facts.families import GEMMA3N

__all__ = ["EXERCISES", "NOTEBOOK"]

NOTEBOOK = "01_images_3n_vs_4"


def _stretch_3n(size: tuple[int, int]) -> float:
    from gemma_explore.plans.image import plan_image

    h, w = plan_image(size, family=GEMMA3N).token_area  # (height, width) of the original
    return round(w / h, 3)


EXERCISES = (
    Exercise(
        name="landscape-280",
        notebook=NOTEBOOK,
        kind="predict",
        truth=lambda: image_tokens((900, 1200)),
        hint="Fit the area to 280 × 9 patches of 16 px, keep the shape, and remember that each "
        "side must hold whole 48 px cells.",
        why="The budget is an upper bound: rounding each side down to 48 px leaves a few slots.",
        misconceptions=(
            (280, "The budget is an upper bound, not the count."),
            (270, "That is our portrait's count; this photo has another shape."),
            (256, "256 is Gemma 3n's fixed count."),
            (
                300,
                "Round each side down to whole 48 px cells (floor): rounding up would go over "
                "the budget.",
            ),
        ),
    ),
    Exercise(
        name="panorama-3n-stretch",
        notebook=NOTEBOOK,
        kind="predict",
        truth=lambda: _stretch_3n((1000, 3000)),
        tolerance=0.05,
        hint="Gemma 3n squashes every image to one square grid: how many original pixels of "
        "width, and of height, land in one cell?",
        why="A 3:1 panorama squashed to a square: each cell covers three times more width.",
        misconceptions=(
            (
                1,
                "Gemma 3n does not keep the aspect ratio: its cells are square only after the "
                "squash.",
            ),
            (1 / 3, "Width ÷ height: the panorama is wider than tall."),
        ),
    ),
    Exercise(
        name="why-squash",
        notebook=NOTEBOOK,
        kind="explain",
        hint="What kind of encoder does Gemma 3n use, and what does it expect as input?",
        answer="MobileNet-V5 is a convolutional encoder trained on one fixed 768 px square input, "
        "so every image is squashed to that size.",
        ideas=(
            # the kind of encoder
            ("convolutional", "convolution", "conv", "cnn", "mobilenet", "vision encoder"),
            # the one input it was trained on
            (
                "fixed size",
                "fixed input",
                "fixed resolution",
                "fixed shape",
                "one fixed",
                "single fixed",
                "one size",
                "one input size",
                "one resolution",
                "single size",
                "single resolution",
                "same size",
                "768",
                "square input",
                "trained on one",
                "trained on a single",
                "trained on square",
            ),
        ),
        rejects=(
            (
                ("save memory", "saves memory", "less memory", "faster", "speed"),
                "Speed and memory are not the reason.",
            ),
            (("budget",), "Gemma 3n has no budget: its count is fixed by the encoder."),
            (
                (
                    "3n vision transformer",
                    "3n vit",
                    "3n transformer",
                    "3n uses a vision transformer",
                    "3n uses a vit",
                    "3n has a vision transformer",
                ),
                "Gemma 3n's MobileNet-V5 is convolutional, not a vision transformer.",
            ),
        ),
        misconceptions=(
            ("To save memory, Gemma 3n uses a smaller fixed image.", ""),
            ("Gemma 3n's vision transformer needs square patches of one size.", ""),
            ("Because its budget is always 256 tokens.", ""),
            ("CNN 768", ""),  # a fragment: the encoder and the size, but no reason
        ),
        paraphrases=(
            "MobileNet-V5 is a CNN that was trained on 768×768 inputs only, so every image is "
            "resized to that one shape and gives the same 16×16 grid.",
            "Its convolutional encoder expects a single fixed resolution, so the processor "
            "stretches every picture to it.",
        ),
    ),
)
