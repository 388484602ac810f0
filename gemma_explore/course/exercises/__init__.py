"""The course's exercises, one module per notebook, and ``grade_exercise`` that grades them.

A notebook exercise leaves a blank, ``guess = ...``, and calls :func:`grade_exercise`
with the exercise's name. Nothing else sits in the cell: the truth is computed in the
package, by the same functions the lessons use (``plan_image``, ``plan_serving``, ...),
so there is no ``truth=`` to copy into the blank. Each exercise keeps its misconceptions
next to its truth (:class:`~gemma_explore.course.grader.Exercise`), and the tests grade
every one of them as wrong. An Explain's model answer is in the notebook, in a collapsed
``<details>`` block *above* the answer cell.

CI (and a teacher checking a notebook) fills the blanks with the answer key: the
notebook's ``parameters`` cell holds ``ANSWERS = None``; a cell injected after it sets
``ANSWERS = {...}`` (``tests/notebook_answers.json``) and the setup cell calls
``answer_key(ANSWERS)``. A blank is then answered from that key, and a key that
disagrees with the truth raises, so a lesson whose claim stopped being true fails in CI
instead of confusing a learner. ``answer_key[name]`` computes the truth for a teacher
only (``GEMMA_EXPLORE_TEACHER=1``; see :mod:`gemma_explore.course.grader` for where the
truths are kept and why): a learner is told to answer instead.

To add an exercise, add an :class:`~gemma_explore.course.grader.Exercise` to its
notebook's module (``audio.py`` for ``03_audio``); the table below picks it up.

>>> "gemma4-10s" in answer_key, len(answer_key) == len(EXERCISES)
(True, True)
>>> answer_key(None)
>>> grade_exercise(..., exercise="gemma4-10s")
◷ gemma4-10s: not answered yet: replace the ... with your answer and run the cell again.
>>> grade_exercise(188, exercise="gemma4-10s")  # doctest: +ELLIPSIS
✗ gemma4-10s: not yet. 188 is Gemma 3n's fixed count; ... Hint: ...
>>> grade_exercise("No shapes.", exercise="why-padding")  # doctest: +ELLIPSIS
✗ why-padding: not yet. Write a whole sentence ... Hint: ...
"""

from __future__ import annotations

from typing import Any

from gemma_explore.course.exercises import (
    audio,
    budgets,
    encoder_free,
    images,
    inference,
    inside_the_model,
    prompt_layout,
    quickstart,
    review,
    serving,
    video,
)
from gemma_explore.course.grader import AnswerKey, Exercise, Verdict, grade

__all__ = ["EXERCISES", "NOTEBOOKS", "answer_key", "grade_exercise"]

# The notebooks' modules, in course order (00 → 10): the table keeps this order.
NOTEBOOKS = (
    quickstart,
    images,
    budgets,
    audio,
    video,
    prompt_layout,
    inference,
    encoder_free,
    serving,
    inside_the_model,
    review,
)


def _table() -> dict[str, Exercise]:
    table: dict[str, Exercise] = {}
    for module in NOTEBOOKS:
        for exercise in module.EXERCISES:
            if exercise.name in table:
                raise ValueError(f"Two exercises are named {exercise.name!r}: names are unique.")
            table[exercise.name] = exercise
    return table


# name → exercise, in course order. The tests grade every truth, misconception and paraphrase.
EXERCISES: dict[str, Exercise] = _table()

# answer_key(answers) loads a key; answer_key[name] computes a truth, for a teacher only.
answer_key = AnswerKey(EXERCISES)


def grade_exercise(guess: Any, *, exercise: str) -> Verdict:
    """Grade ``guess`` for the course exercise named ``exercise`` (its truth lives here).

    >>> grade_exercise(12345, exercise="gemma4-10s").status  # no docstring holds a truth
    'wrong'
    """
    if exercise not in EXERCISES:
        raise KeyError(
            f"No exercise named {exercise!r}; the course has: {', '.join(sorted(EXERCISES))}."
        )
    return grade(EXERCISES[exercise], guess)
