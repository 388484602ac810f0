"""Exercises that ask: ``check(...)`` compares a learner's blank with the truth.

A notebook exercise leaves a blank, ``guess = ...``, and calls :func:`check` with the
truth (computed by the package, not typed in) and a hint. The verdict is one of three:

- ``...`` or ``None`` → "not answered yet" (the notebook still runs to the end);
- a wrong answer → "not yet", and the hint (never the answer);
- a right answer → confirmed, with a sentence saying why it is right.

"Explain" exercises pass ``keywords=``: groups of words, one of each group must appear
in the learner's sentence. Their model answer lives in the notebook, in a collapsed
``<details>`` block a teacher can open.

CI (and a teacher checking a notebook) can fill the blanks with an *answer key*: the
notebook's ``parameters`` cell holds ``ANSWERS = None``; a cell injected after it sets
``ANSWERS = {...}`` and the setup cell calls ``answer_key(ANSWERS)``. A blank is then
answered from the key, and a key that disagrees with the truth raises, so a lesson whose
claim stopped being true fails in CI instead of confusing a learner.

>>> answer_key(None)
>>> check("tokens", ..., truth=256, hint="16×16 cells")
⏳ tokens: not answered yet: replace the ... with your answer and run the cell again.
>>> check("tokens", 270, truth=256, hint="count the 16×16 cells")
✗ tokens: not yet. Hint: count the 16×16 cells
>>> check("tokens", 256, truth=256, hint="", why="16 × 16 = 256")
✓ tokens: right: 256. 16 × 16 = 256
>>> check("why", "shapes must be static", keywords=[("static", "fixed"), ("shape",)], hint="")
✓ why: right. Compare with the model answer below.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Verdict", "answer_key", "check"]

_KEY: dict[str, Any] = {}  # name → answer; set by answer_key() (CI, teachers)


def answer_key(answers: Mapping[str, Any] | None) -> None:
    """Use ``answers`` (exercise name → answer) for every blank left as ``...``.

    ``None`` clears the key: the learner's own answers only.
    """
    _KEY.clear()
    if answers:
        _KEY.update(answers)


@dataclass(frozen=True)
class Verdict:
    """What :func:`check` decided, printable in a notebook and readable by a test."""

    name: str  # the exercise's name, e.g. "budget-70"
    status: str  # "unanswered" | "wrong" | "right"
    message: str  # one line for the learner
    from_key: bool = False  # the answer came from the answer key, not the learner

    @property
    def answered(self) -> bool:
        return self.status != "unanswered"

    @property
    def right(self) -> bool:
        return self.status == "right"

    def __repr__(self) -> str:
        mark = {"unanswered": "⏳", "wrong": "✗", "right": "✓"}[self.status]
        return f"{mark} {self.name}: {self.message}"

    def _repr_html_(self) -> str:
        color = {"unanswered": "#555555", "wrong": "#D55E00", "right": "#009E73"}[self.status]
        return f"<p style='color:{color};font-weight:bold'>{html.escape(repr(self))}</p>"


def _blank(value: Any) -> bool:
    return value is ... or value is None or (isinstance(value, str) and not value.strip())


def _same(guess: Any, truth: Any, tolerance: float) -> bool:
    if isinstance(truth, Mapping) and isinstance(guess, Mapping):
        return set(guess) == set(truth) and all(_same(guess[k], truth[k], tolerance) for k in truth)
    if isinstance(truth, tuple | list) and isinstance(guess, tuple | list):
        return len(guess) == len(truth) and all(
            _same(g, t, tolerance) for g, t in zip(guess, truth, strict=True)
        )
    if isinstance(truth, str) and isinstance(guess, str):
        return guess.strip().lower() == truth.strip().lower()
    if isinstance(truth, bool) or isinstance(guess, bool):
        return guess is truth
    if isinstance(truth, int | float) and isinstance(guess, int | float):
        return abs(guess - truth) <= tolerance
    return guess == truth


def _mentions(text: str, keywords: Iterable[Iterable[str]]) -> list[tuple[str, ...]]:
    """The keyword groups ``text`` does not mention (one word of each group is enough)."""
    low = text.lower()
    return [tuple(g) for g in keywords if not any(w.lower() in low for w in g)]


def check(
    name: str,
    guess: Any,
    *,
    truth: Any = None,
    hint: str,
    why: str = "",
    keywords: Iterable[Iterable[str]] | None = None,
    tolerance: float = 0,
) -> Verdict:
    """Compare ``guess`` with ``truth`` (a value, or a function computing it) and say so.

    With ``keywords=`` the guess is a sentence: it is right when it mentions one word of
    every group. ``tolerance`` allows numbers within ± tolerance.
    """
    from_key = False
    if _blank(guess) and name in _KEY:
        guess, from_key = _KEY[name], True
    if _blank(guess):
        return Verdict(
            name,
            "unanswered",
            "not answered yet: replace the ... with your answer and run the cell again.",
        )
    if keywords is not None:
        missing = _mentions(str(guess), keywords)
        ok = not missing
        right = "right. Compare with the model answer below."
    else:
        value = truth() if isinstance(truth, Callable) else truth
        ok = _same(guess, value, tolerance)
        right = f"right: {guess!r}." + (f" {why}" if why else "")
    if ok:
        return Verdict(name, "right", right, from_key)
    if from_key:
        raise AssertionError(
            f"The answer key says {guess!r} for {name!r}, but the notebook disagrees: the "
            "lesson's claim changed. Fix the notebook's text or the answer key."
        )
    return Verdict(name, "wrong", f"not yet. Hint: {hint}")
