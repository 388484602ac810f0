"""Notebook 02 · budgets and pooling: padding rows, the budget that keeps text legible.

>>> from gemma_explore.course.grader import grade
>>> [e.name for e in EXERCISES]
['padding-wide-140', 'ocr-budget', 'why-padding']
>>> grade(EXERCISES[2], "One static shape lets images be batched.").right
True
"""

from __future__ import annotations

from gemma_explore.course.grader import Exercise
from gemma_explore.facts.families import GEMMA4, get_family

__all__ = ["EXERCISES", "NOTEBOOK"]

NOTEBOOK = "02_budgets_and_pooling"


def _padding_rows(size: tuple[int, int], budget: int) -> int:
    from gemma_explore.plans.image import plan_image

    return plan_image(size, family=GEMMA4, max_soft_tokens=budget).num_padding_patches


def _smallest_budget_for_text(size: tuple[int, int], text_px: float) -> int:
    # The smallest budget whose resize keeps text at least one patch tall.
    from gemma_explore.plans.image import plan_image

    patch = get_family(GEMMA4).image.patch_size
    return min(
        b
        for b in (70, 140, 280, 560, 1120)
        if text_px * plan_image(size, family=GEMMA4, max_soft_tokens=b).resized_size[0] / size[0]
        >= patch
    )


EXERCISES = (
    Exercise(
        name="padding-wide-140",
        notebook=NOTEBOOK,
        kind="predict",
        truth=lambda: _padding_rows((1080, 1920), 140),
        hint="How many patch rows does every image get at one budget, and how many of them "
        "does this resized photo really fill? Both are counted in 16 px patches.",
        why="budget × 9 rows, minus the patches of the resized image.",
        misconceptions=(
            (0, "Every image at one budget gets budget × 9 rows, whatever it needs."),
            (20, "That counts soft tokens (140 − 120); rows are 16 px patches."),
            (1260, "That is every row; the question asks for the padding ones."),
        ),
    ),
    Exercise(
        name="ocr-budget",
        notebook=NOTEBOOK,
        kind="choose",
        truth=lambda: _smallest_budget_for_text((3000, 800), 30),
        hint="Plan the receipt at each budget: how much does the resize shrink it, and how tall "
        "is 30 px of text afterwards? Section 5 does this for a page.",
        why="The first budget whose resize keeps the text at least one 16 px patch tall.",
        misconceptions=(
            (1120, "1120 works too, but it is not the smallest that does."),
            (280, "At 280 the receipt shrinks to about half: its text is under one patch."),
            (70, "At 70 the text shrinks to a few pixels."),
        ),
    ),
    Exercise(
        name="why-padding",
        notebook=NOTEBOOK,
        kind="explain",
        hint="What do batching and compiled graphs need from tensor shapes?",
        answer="Every image at one budget gets the same static shape, so images can be batched "
        "and a compiled CUDA graph replayed.",
        ideas=(
            # one shape for every image
            (
                "static",
                "same shape",
                "same size",
                "same tensor shape",
                "fixed shape",
                "fixed size",
                "fixed tensor shape",
                "constant shape",
                "identical shape",
                "one shape",
                "shapes never change",
                "shapes do not change",
                "shape does not change",
            ),
            # what needs it
            ("batch", "compile", "compiled", "cuda graph", "graph", "xla", "replay"),
        ),
        rejects=(
            (
                ("accuracy", "accurate", "quality", "better answer"),
                "The padding rows are ignored: they add nothing.",
            ),
            (
                (
                    "model sees the padding",
                    "encoder sees the padding",
                    "model uses the padding",
                    "encoder uses the padding",
                    "model reads the padding",
                    "border",
                    "edge",
                    "bigger image",
                ),
                "The padding rows sit at (−1, −1) and are ignored.",
            ),
            (
                ("exactly budget", "exactly the budget", "always budget", "always the budget"),
                "The padding slots are stripped before the prompt: the count stays below the "
                "budget.",
            ),
        ),
        misconceptions=(
            ("The padding improves accuracy because the model sees a bigger image.", ""),
            ("So the prompt always gets exactly budget tokens of the same shape.", ""),
            ("It pads so that the batch is faster.", ""),
            ("static batch", ""),  # a fragment: names two ideas, explains neither
        ),
        paraphrases=(
            "Every image at a budget then has one fixed tensor shape, so different images batch "
            "together and a captured CUDA graph can be replayed.",
            "Shapes never change between calls, which compiled encoders and batching need.",
        ),
    ),
)
