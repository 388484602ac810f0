"""Notebook 09 · inside the model: the per-layer table, and the embedder's order of stages.

>>> from gemma_explore.course.grader import grade
>>> [e.name for e in EXERCISES]
['per-layer-remapped', 'embedder-order', 'why-row-zero']
>>> grade(EXERCISES[2], "Because row 0 holds the image.").right
False
"""

from __future__ import annotations

from typing import Any

from gemma_explore.course.exercises.common import photo, speech, tiny
from gemma_explore.course.grader import Exercise

__all__ = ["EXERCISES", "NOTEBOOK"]

NOTEBOOK = "09_inside_the_model"


def _inside_prompt() -> Any:
    from gemma_explore.processing.inputs import prepare_inputs

    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "image", "image": photo()},
                {"type": "audio", "audio": speech()},
                {"type": "text", "text": "What?"},
            ],
        }
    ]
    return prepare_inputs(msgs, bundle=tiny("tiny-gemma4"))


def _per_layer_remapped() -> int:
    from gemma_explore.inside.per_layer import per_layer_ids

    return len(per_layer_ids(_inside_prompt().input_ids, bundle=tiny("tiny-gemma4")).remapped)


def _embedder_order() -> str:
    from gemma_explore.inside.towers import encode_images

    trace = encode_images(_inside_prompt(), bundle=tiny("tiny-gemma4")).embedder
    return "a" if trace.stages[1].module == "embedding_pre_projection_norm" else "b"


EXERCISES = (
    Exercise(
        name="per-layer-remapped",
        notebook=NOTEBOOK,
        kind="predict",
        truth=_per_layer_remapped,
        hint="Which positions of the prompt hold placeholders? Count the photo's and the clip's "
        "soft tokens.",
        why="Every multimodal position reads the per-layer row of token 0.",
        misconceptions=((270, "The clip's soft tokens are remapped too."),),
    ),
    Exercise(
        name="embedder-order",
        notebook=NOTEBOOK,
        kind="choose",
        truth=_embedder_order,
        hint="Read the stage list of section 1, not vLLM's docstring.",
        why="The weightless RMSNorm runs first, then the Linear.",
        misconceptions=(
            ("b", "That is what vLLM's docstring says; the code runs the norm first."),
        ),
    ),
    Exercise(
        name="why-row-zero",
        notebook=NOTEBOOK,
        kind="explain",
        hint="What does the placeholder id say about the image, and what carries the image?",
        answer="The placeholder id says nothing about the picture; the soft token from the encoder "
        "carries the content, so every such position reads the same neutral pad row 0.",
        ideas=(
            # the placeholder id tells nothing about the picture
            (
                "says nothing",
                "say nothing",
                "tells nothing",
                "nothing about the picture",
                "nothing about the image",
                "no information",
                "no content",
                "carries no",
                "does not say",
                "does not carry",
                "does not tell",
                "id is identical",
                "identical id",
                "id is the same",
                "same id",
                "meaningless",
                "same at every",
            ),
            # what carries the picture instead
            ("encoder", "soft token", "embedding", "vector", "neutral"),
        ),
        rejects=(
            (
                (
                    "row 0 holds the image",
                    "row 0 has the image",
                    "row 0 stores the image",
                    "row 0 holds the picture",
                    "row zero holds the image",
                    "row zero has the image",
                    "row zero stores the image",
                ),
                "Row 0 is the <pad> row: the same for every image.",
            ),
            (("faster", "speed"), "Speed is not the reason."),
        ),
        misconceptions=(
            ("Because row 0 holds the image.", ""),
            ("Row zero is faster to look up.", ""),
            ("The per-layer table has no rows for images, so it would crash otherwise.", ""),
        ),
        paraphrases=(
            "The placeholder id is identical at every image position and tells nothing about the "
            "picture; the encoder's soft token carries the content, so each position gets the "
            "same neutral <pad> row.",
            "Since the id carries no information about the image while the encoder's vectors "
            "hold it, all those positions read one neutral row, id 0.",
        ),
    ),
)
