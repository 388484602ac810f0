"""Notebook 06 · inference: a request's own budget, engine arguments, the tiny model's speed.

>>> from gemma_explore.course.grader import grade
>>> [e.name for e in EXERCISES]
['request-budget-560', 'restart-needed', 'tiny-speed']
>>> grade(EXERCISES[2], "On a GPU it will be even faster.").right
False
"""

from __future__ import annotations

from gemma_explore.course.exercises.common import photo, tiny
from gemma_explore.course.grader import Exercise
from gemma_explore.facts.families import GEMMA4

__all__ = ["EXERCISES", "NOTEBOOK"]

NOTEBOOK = "06_inference"


def _request_budget(budget: int) -> int:
    from gemma_explore.plans.vllm import vllm_image_tokens

    image = photo()
    return vllm_image_tokens(image.height, image.width, max_soft_tokens=budget)


def _needs_restart() -> str:
    # The option set only in the engine's arguments (not in any request) needs a restart.
    from gemma_explore.engines.serve_args import engine_args
    from gemma_explore.engines.vllm import vllm_request
    from gemma_explore.processing.inputs import prepare_inputs

    engine = engine_args("google/gemma-4-E4B-it", family=GEMMA4, has_audio=True)
    prepared = prepare_inputs(
        "Hi", bundle=tiny("tiny-gemma4"), images=[photo()], max_soft_tokens=140
    )
    request = vllm_request(prepared)
    options = {"a": "mm_processor_kwargs", "b": "limit_mm_per_prompt", "c": "max_tokens"}
    return next(k for k, v in options.items() if v in engine and v not in request)


EXERCISES = (
    Exercise(
        name="request-budget-560",
        notebook=NOTEBOOK,
        kind="predict",
        truth=lambda: _request_budget(560),
        hint="Does the engine's start-up budget cap a request that names its own? Then plan "
        "the photo at the request's budget.",
        why="vLLM hands the request's budget to the processor: the photo gets that budget's count.",
        misconceptions=(
            (270, "That is the start-up budget's count; the request's own budget wins."),
            (560, "The budget is an upper bound, not the count."),
        ),
    ),
    Exercise(
        name="restart-needed",
        notebook=NOTEBOOK,
        kind="choose",
        truth=_needs_restart,
        hint="Which of the three travels with each request, and which is an engine argument "
        "printed in section 3?",
        why="limit_mm_per_prompt is an engine argument: vLLM profiles memory for it at start-up.",
        misconceptions=(
            ("a", "A request may carry its own budget in mm_processor_kwargs."),
            ("c", "max_tokens is a sampling parameter of each request."),
        ),
    ),
    Exercise(
        name="tiny-speed",
        notebook=NOTEBOOK,
        kind="explain",
        hint="Compare the tiny model's size with a real checkpoint's.",
        answer="The tiny model has random weights and a few million parameters, so its speed says "
        "nothing about a real model's size on a GPU.",
        ideas=(
            # what the tiny model is
            ("tiny", "small", "million", "random", "toy", "fewer parameters"),
            # why its speed does not carry over
            (
                "billion",
                "bigger model",
                "larger model",
                "model size",
                "real size",
                "orders of magnitude",
                "thousands of times",
                "says nothing",
                "say nothing",
                "does not transfer",
                "not representative",
                "hardware",
            ),
        ),
        rejects=(
            (
                (
                    "same speed",
                    "conclusion holds",
                    "conclusion is right",
                    "conclusion is correct",
                    "conclusion is true",
                    "will be fast",
                    "will also be fast",
                    "will be faster",
                    "will be even faster",
                    "even faster",
                ),
                "The speed of a few million random parameters says nothing about a real model.",
            ),
        ),
        misconceptions=(
            ("On a GPU it will be even faster, so the conclusion holds.", ""),
            ("The tiny model is random, so its answers are wrong.", ""),
            ("The conclusion holds: tiny and real models have the same speed per parameter.", ""),
        ),
        paraphrases=(
            "The tiny model has only a few million random parameters; a real checkpoint has "
            "billions, so its speed depends on its size and the GPU and must be measured there.",
            "Random toy weights at a tiny size say nothing about the throughput of the full "
            "model, which is orders of magnitude bigger.",
        ),
    ),
)
