"""Notebook 10 · review: two plans added up, a budget that fits, and a hand-edited prompt.

>>> from gemma_explore.course.grader import grade
>>> [e.name for e in EXERCISES]
['photo70-plus-speech', 'four-photos-2048', 'stray-at-70', 'why-no-error']
>>> grade(EXERCISES[3], "vLLM fixes the prompt with a fresh run, so it is harmless.").right
False
"""

from __future__ import annotations

from gemma_explore.course.exercises.common import audio_tokens, image_tokens, photo, speech, tiny
from gemma_explore.course.grader import Exercise
from gemma_explore.facts.families import GEMMA4

__all__ = ["EXERCISES", "NOTEBOOK"]

NOTEBOOK = "10_review"


def _sum_of_plans() -> int:
    return image_tokens(photo().size[::-1], 70) + audio_tokens(speech(), GEMMA4)


def _largest_budget_for_four() -> int:
    from gemma_explore.plans.image import plan_image

    size = photo().size[::-1]
    return max(
        b
        for b in (70, 140, 280, 560, 1120)
        if 4 * plan_image(size, family=GEMMA4, max_soft_tokens=b).total_tokens + 50 <= 2048
    )


def _stray_after_edit(budget: int) -> int:
    from gemma_explore.parity.checks import vllm_replay
    from gemma_explore.processing.inputs import prepare_inputs

    bundle = tiny("tiny-gemma4")
    one = [{"role": "user", "content": [{"type": "image", "image": photo()}]}]
    prepared = prepare_inputs(one, max_soft_tokens=budget, bundle=bundle)
    ids = prepared.input_ids
    k = ids.index(bundle.spec.id_of(bundle.spec.image_token))
    return vllm_replay(
        ids[:k] + ids[k + 1 :], use_vllm=False, prepared=prepared, bundle=bundle
    ).stray["image"]


EXERCISES = (
    Exercise(
        name="photo70-plus-speech",
        notebook=NOTEBOOK,
        kind="predict",
        truth=_sum_of_plans,
        hint="Two plans, each from its own notebook: the photo at 70 (02), the speech in "
        "Gemma 4 (03). Soft tokens only.",
        why="The photo's soft tokens at 70 plus one audio token per 40 ms.",
        misconceptions=(
            (70 + 132, "The budget 70 is an upper bound, not the photo's count."),
            (63 + 188, "188 is Gemma 3n's count; this is Gemma 4."),
        ),
    ),
    Exercise(
        name="four-photos-2048",
        notebook=NOTEBOOK,
        kind="choose",
        truth=_largest_budget_for_four,
        hint="Four times the photo's total tokens at each budget, plus the text: which is the "
        "last that stays under 2048?",
        why="The next budget up overflows max_model_len.",
        misconceptions=((560, "Count the photo's tokens at 560, four times, plus the text."),),
    ),
    Exercise(
        name="stray-at-70",
        notebook=NOTEBOOK,
        kind="predict",
        truth=lambda: _stray_after_edit(70),
        hint="How many <|image|> did the edited prompt hold, and how many of them does vLLM "
        "replace with its fresh run?",
        why="The edited run had one placeholder less; vLLM replaces only the first one.",
        misconceptions=(
            (268, "That is the photo at 280; here it is at 70."),
            (0, "vLLM does not look for the runs already in the ids."),
            (62, "vLLM replaces the first <|image|> with its fresh run."),
        ),
    ),
    Exercise(
        name="why-no-error",
        notebook=NOTEBOOK,
        kind="explain",
        hint="Which <|image|> does vLLM expand, and what happens to the others?",
        answer="vLLM replaces the first <|image|> with a fresh run and keeps the other 268 as "
        "stray text tokens, so the counts match, nothing fails, and the model silently reads a "
        "wrong, longer prompt.",
        ideas=(
            # what vLLM does: a fresh run for the first placeholder, so its counts agree
            (
                "fresh run",
                "new run",
                "own run",
                "re-expand",
                "reexpand",
                "replaces the first",
                "replaces only the first",
                "first <|image|>",
                "counts match",
                "counts agree",
                "numbers match",
                "270 = 270",
            ),
            # what is left: stray placeholders the model reads without a word
            (
                "stray",
                "leftover",
                "left over",
                "extra",
                "remain",
                "268",
                "text token",
                "ordinary token",
                "silent",
                "silently",
                "wrong prompt",
                "different prompt",
                "longer prompt",
                "worse answer",
                "no error",
                "no warning",
                "unnoticed",
                "hidden",
                "hides",
            ),
        ),
        rejects=(
            (
                (
                    "vllm refuses",
                    "vllm raises",
                    "vllm rejects",
                    "vllm fails",
                    "refuses the request",
                    "error is raised",
                    "exception is raised",
                ),
                "vLLM raises nothing here.",
            ),
            (
                ("harmless", "no harm", "so it is fine", "and it is fine"),
                "The model reads a wrong prompt.",
            ),
        ),
        misconceptions=(
            ("vLLM refuses the request with Attempted to assign.", ""),
            ("vLLM fixes the prompt with a fresh run, so it is harmless.", ""),
            ("There is no difference: the counts match.", ""),
        ),
        paraphrases=(
            "vLLM writes its own fresh run for the first <|image|> and leaves the other 268 as "
            "ordinary text tokens, so its counts agree, nothing raises, and the model silently "
            "reads a wrong prompt.",
            "The re-expanded run matches the encoder, so no error appears, but the leftover "
            "placeholders stay in the prompt and spoil answers unnoticed.",
        ),
    ),
)
