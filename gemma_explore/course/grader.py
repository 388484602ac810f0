"""The grader: how a learner's answer is compared with an exercise's truth.

This module knows how to grade, not what the course asks: the exercises themselves
live in :mod:`gemma_explore.course.exercises`, one module per notebook, and build on the
:class:`Exercise` type defined here (so the grader never imports the course).

A verdict is one of three:

- ``...`` or ``None`` → "not answered yet" (the notebook still runs to the end);
- a wrong answer → "not yet", a note when it is a known misconception, and a hint that
  nudges (never the answer, never the working);
- a right answer → confirmed, with a sentence saying why it is right.

Numbers, strings, tuples and dicts are compared with :func:`same`. An "Explain"
exercise first asks for a real sentence (:func:`sentence_note`: at least
:data:`MIN_WORDS` words and a verb, at most :data:`MAX_WORDS`), so a fragment such as
"static batch" or "CNN 768" is refused however well it names the ideas. Then it grades
the sentence with *keyword groups*: each idea is a short list of plain
words or phrases, any one of which counts; every idea must be there; and a sentence that
uses a phrase of a known misconception is refused even when it also names the right
ideas. Both the sentence and the keywords are read by :func:`words` (lowercase, plurals
and -ed/-ing endings folded), so a keyword never needs to list "batch", "batches" and
"batched" separately.

>>> why = Exercise(
...     name="why-static",
...     notebook="02_budgets_and_pooling",
...     kind="explain",
...     hint="What do compiled graphs need?",
...     ideas=(("static", "fixed shape"), ("batch", "compiled")),
...     rejects=((("accuracy",), "Padding adds no accuracy."),),
... )
>>> grade(why, "A static shape lets images be batched.")
✓ why-static: right. Compare with the model answer above (click “Model answer”).
>>> grade(why, "Static shapes improve accuracy.")
✗ why-static: not yet. Padding adds no accuracy. Hint: What do compiled graphs need?
>>> grade(why, "static batch")  # doctest: +ELLIPSIS
✗ why-static: not yet. Write a whole sentence ... Hint: What do compiled graphs need?

**Where the truths are.** A truth is never stored: each exercise holds a function of the
package (``plan_image``, ``plan_audio``, …) that the grader calls at check time, so a
lesson whose claim stops being true fails in CI. The learner's one namespace does not
hand it out: ``ge.answer_key(answers)`` only *loads* a key (CI's, a teacher's), and
``ge.answer_key[name]`` computes a truth only for a teacher, when the environment variable
``GEMMA_EXPLORE_TEACHER=1`` is set before the kernel starts (``GEMMA_EXPLORE_TEACHER=1
jupyter lab``); a learner gets a refusal that names no number. A verdict never prints the
truth either: a wrong answer gets a note and a hint, a right one its own value. This is
a speed bump, not a lock: the package computes every truth, so a learner who reads the
exercise modules can recompute one, as they could by working it out; the point is that
the answer is never one call away. The printed answer sheet (``tests/notebook_answers.json``,
which CI injects) lives in the repository's tests, not in the installed package; the
build-it track's reference solutions open with the same switch
(:mod:`gemma_explore.course.buildit.sealed`).
"""

from __future__ import annotations

import functools
import html
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_WORDS",
    "MIN_WORDS",
    "TEACHER_ENV",
    "AnswerKey",
    "Exercise",
    "Keywords",
    "Verdict",
    "explains",
    "grade",
    "grade_against",
    "mentions",
    "same",
    "sentence_note",
    "teacher",
    "words",
]

MAX_WORDS = 70  # an explanation is one or two sentences: a pasted paragraph is not one
MIN_WORDS = 6  # ... and a sentence: "static batch" or "CNN 768" names ideas, explains none

# Set to "1" (before the kernel starts) for a teacher: answer_key[name] then computes truths.
TEACHER_ENV = "GEMMA_EXPLORE_TEACHER"

# name → answer, loaded by AnswerKey.__call__ (CI and teachers fill blanks from it).
# One store for the whole process: a notebook's setup cell loads it once for all cells.
_KEY: dict[str, Any] = {}

_UNANSWERED = "not answered yet: replace the ... with your answer and run the cell again."
_EXPLAINED = "right. Compare with the model answer above (click “Model answer”)."


@dataclass(frozen=True)
class Verdict:
    """What a grader decided, printable in a notebook and readable by a test.

    >>> Verdict("budget-70", "right", "right: 63.").right
    True
    """

    # The exercise's name, e.g. "budget-70": printed first, so a learner sees which cell.
    name: str
    # "unanswered" | "wrong" | "right": a test reads this, the mark (◷ ✗ ✓) shows it.
    status: str
    # One line for the learner: a nudge when wrong, the reason when right.
    message: str
    # True when the answer came from the answer key (CI, a teacher), not the learner:
    # then a wrong answer is the lesson's fault and raises instead of printing ✗.
    from_key: bool = False

    @property
    def answered(self) -> bool:
        return self.status != "unanswered"

    @property
    def right(self) -> bool:
        return self.status == "right"

    def __repr__(self) -> str:
        mark = {"unanswered": "◷", "wrong": "✗", "right": "✓"}[self.status]
        return f"{mark} {self.name}: {self.message}"

    def _repr_html_(self) -> str:
        color = {"unanswered": "#555555", "wrong": "#D55E00", "right": "#009E73"}[self.status]
        return f"<p style='color:{color};font-weight:bold'>{html.escape(repr(self))}</p>"


# A keyword group: plain words or phrases, any one of which counts ("cnn", "mobilenet").
Keywords = tuple[str, ...]


@dataclass(frozen=True)
class Exercise:
    """One exercise of the course: its truth, the hint, and the known wrong answers.

    >>> Exercise("sum", "10_review", "predict", hint="add them", truth=lambda: 2 + 2).kind
    'predict'
    """

    # What the notebook's cell passes as exercise=; unique across the course.
    name: str
    # The notebook it belongs to, e.g. "03_audio": the tests find its answer cell there.
    notebook: str
    # "predict" (a number) | "choose" (a letter or option) | "explain" (a sentence):
    # decides whether the guess is compared with the truth or read for its ideas.
    kind: str
    # A nudge shown with every wrong answer: where to look, never the working.
    hint: str
    # Predict/choose: a function of the package that computes the truth, so the answer
    # is never a literal a learner could copy, and a lesson whose claim stops being true
    # fails in CI.
    truth: Callable[[], Any] | None = None
    # Printed with a right answer: the one-line reason, the lesson's takeaway.
    why: str = ""
    # Numbers within ± this are right (a ratio read off a plot needs a little slack).
    tolerance: float = 0
    # Known wrong answers → a note on why not (explain: sentences, note usually ""). The
    # tests grade every one of them as wrong, so a misconception stays refused.
    misconceptions: tuple[tuple[Any, str], ...] = ()
    # Explain: the ideas a right sentence must hold, one keyword group per idea; a
    # sentence is right when every group has at least one of its keywords in it.
    ideas: tuple[Keywords, ...] = ()
    # Explain: (keywords, note) for a misconception: a sentence with any of those
    # keywords is refused with the note, even when it also holds every idea.
    rejects: tuple[tuple[Keywords, str], ...] = ()
    # Explain: a right answer in one sentence: the answer key's, and the test's proof
    # that the ideas can be met.
    answer: str = ""
    # Explain: the right idea in other words; the tests grade each right, so the groups
    # stay wide enough for a learner who does not copy the model answer's wording.
    paraphrases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # A keyword that reads as no words would match every sentence: refuse it early.
        groups = [*self.ideas, *(keywords for keywords, _note in self.rejects)]
        for group in groups:
            if isinstance(group, str) or not group:
                raise ValueError(f"{self.name}: a keyword group is a tuple of phrases: {group!r}")
            for phrase in group:
                if not words(phrase):
                    raise ValueError(f"{self.name}: the keyword {phrase!r} holds no words")


def teacher() -> bool:
    """Whether this process is a teacher's (``GEMMA_EXPLORE_TEACHER=1``): then
    ``answer_key[name]`` computes a truth. Read at each call, so a test can set it.

    >>> teacher() in (True, False)
    True
    """
    return os.environ.get(TEACHER_ENV, "").strip() == "1"


def _truth_of(exercise: Exercise) -> Any:
    """The right answer, for the grader (and a teacher's key): computed at check time
    (predict, choose) or the model sentence (explain). Never stored in the exercise."""
    return _computed(exercise.truth) if exercise.truth is not None else exercise.answer


@functools.cache
def _computed(truth: Callable[[], Any]) -> Any:
    # Truths load models and plan media: compute each once per process.
    return truth()


# ---- reading a sentence -----------------------------------------------------------------


def _stem(word: str) -> str:
    """Fold the endings a sentence varies: plurals, -ed, -ing, a final -e, a doubled
    consonant. Crude on purpose: it only has to read a sentence and a keyword alike."""
    if word.endswith(("ies", "ied")) and len(word) > 4:
        return word[:-3] + "y"  # carries, carried → carry
    if word.endswith("s") and not word.endswith(("ss", "us")) and len(word) > 3:
        word = word[:-1]  # batches → batche, shapes → shape
    for ending in ("ing", "ed"):
        if word.endswith(ending) and len(word) - len(ending) >= 2:
            word = word[: -len(ending)]  # padding → padd, batched → batch
            break
    if word.endswith("e") and len(word) > 2:
        word = word[:-1]  # batche → batch, shape → shap, compile → compil
    if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "aeiouylsz0123456789":
        word = word[:-1]  # padd → pad
    return word


def words(text: str) -> tuple[str, ...]:
    """The word stems of ``text``, lowercase: how a sentence and a keyword are both read.

    >>> words("Images BATCHED, shapes don't change.")
    ('imag', 'batch', 'shap', 'do', 'not', 'chang')
    >>> words("Gemma 3n's encoder") == words("gemma 3n encoders")
    True
    """
    low = str(text).lower().replace("’", "'")
    low = low.replace("can't", "can not").replace("won't", "will not").replace("n't", " not")
    low = re.sub(r"'s\b", "", low)  # Gemma 3n's → Gemma 3n
    return tuple(_stem(w) for w in re.findall(r"\w+", low))


def mentions(said: Iterable[str], keywords: Iterable[str]) -> bool:
    """Whether the stems ``said`` (from :func:`words`) hold any of ``keywords``, each a
    word or a phrase whose words must come in that order, side by side.

    >>> mentions(words("It is a fixed-size input."), ("fixed size", "768"))
    True
    >>> mentions(words("A size that is fixed."), ("fixed size",))
    False
    """
    line = f" {' '.join(said)} "
    return any(f" {' '.join(words(k))} " in line for k in keywords)


# The auxiliaries and modals, read as written: almost every English sentence has one.
_AUXILIARIES = frozenset(
    "am is are was were be been being has have had do does did can could will would shall "
    "should may might must cannot".split()
)
# Verbs an explanation of this course leans on, read as stems (so "keeps", "kept" aside,
# "keeping" and "keep" are one). Not a parser: a list of nouns has none of these.
_VERBS = frozenset(
    _stem(verb)
    for verb in (
        "get give make keep need use write read fill pad change depend mean hold carry say tell "
        "know find match search look replace leave call build ask run stay remain let see sit "
        "take put cut count reserve spend cost squash stretch resize expect train split merge "
        "hide mix relate attend combine arrive happen fail raise refuse compile replay shrink "
        "grow stop start lose drop add apply decide gets lets arrives affect produce "
        "measure depend follow round ignore strip encode learn show"
    ).split()
)


def sentence_note(text: str) -> str:
    """Why ``text`` is not yet a sentence that explains ("" when it is one): at least
    :data:`MIN_WORDS` words, at most :data:`MAX_WORDS`, and a verb.

    >>> sentence_note("CNN 768")  # doctest: +ELLIPSIS
    'Write a whole sentence ...'
    >>> sentence_note("Its encoder was trained on one fixed 768 px input.")
    ''
    """
    raw = re.findall(r"\w+", str(text).lower().replace("n't", " not"))
    count = len(str(text).split())  # a word is what spaces separate: "3n's" is one
    if count > MAX_WORDS:
        return f"Write it in one or two sentences of your own (at most {MAX_WORDS} words)."
    if count < MIN_WORDS:
        return (
            f"Write a whole sentence (at least {MIN_WORDS} words): what happens, and why. "
            "A few keywords name the ideas but explain none of them."
        )
    if not (_AUXILIARIES & set(raw) or _VERBS & set(words(text))):
        return "Write it as a sentence, with a verb: say what happens, not only what is there."
    return ""


def explains(exercise: Exercise, text: str) -> tuple[bool, str]:
    """(right?, note): no misconception's keyword, a real sentence (:func:`sentence_note`),
    and every idea's group present. A misconception's note comes first: it teaches most."""
    said = words(text)
    for keywords, note in exercise.rejects:
        if mentions(said, keywords):
            return False, note
    note = sentence_note(text)
    if note:
        return False, note
    return all(mentions(said, idea) for idea in exercise.ideas), ""


# ---- comparing a value --------------------------------------------------------------------


def same(guess: Any, truth: Any, tolerance: float = 0) -> bool:
    """Whether ``guess`` is ``truth``: numbers within ``tolerance``, strings without case
    or quotes, containers element by element, and ``True`` never equal to ``1``.

    >>> same({70: 65}, {70: 66}), same((1, 2.05), (1, 2.0), 0.1), same(" 'B' ", "b")
    (False, True, True)
    """
    if isinstance(truth, Mapping) and isinstance(guess, Mapping):
        return set(guess) == set(truth) and all(same(guess[k], truth[k], tolerance) for k in truth)
    if isinstance(truth, tuple | list) and isinstance(guess, tuple | list):
        return len(guess) == len(truth) and all(
            same(g, t, tolerance) for g, t in zip(guess, truth, strict=True)
        )
    if isinstance(truth, str) and isinstance(guess, str):
        return guess.strip().lower().strip("\"'") == truth.strip().lower()
    if isinstance(truth, bool) or isinstance(guess, bool):
        return guess is truth
    if isinstance(truth, int | float) and isinstance(guess, int | float):
        return abs(guess - truth) <= tolerance
    return guess == truth


def _blank(value: Any) -> bool:
    return value is ... or value is None or (isinstance(value, str) and not value.strip())


def _from_key(name: str, guess: Any) -> tuple[Any, bool]:
    """(the guess, whether it came from the answer key): a blank is filled from the key."""
    if _blank(guess) and name in _KEY:
        return _KEY[name], True
    return guess, False


def _wrong_key(name: str, guess: Any, where: str) -> AssertionError:
    return AssertionError(
        f"The answer key says {guess!r} for {name!r}, but the {where} disagrees: the "
        "lesson's claim changed. Fix the notebook's text or the answer key."
    )


# ---- grading ------------------------------------------------------------------------------


def grade(exercise: Exercise, guess: Any) -> Verdict:
    """Grade ``guess`` for ``exercise``; a blank is answered from the answer key, and a key
    that disagrees with the truth raises. (The notebooks call
    :func:`gemma_explore.course.exercises.grade_exercise`, which finds the exercise by
    name and calls this.)

    >>> grade(Exercise("sum", "10_review", "predict", hint="add", truth=lambda: 4), 4)
    ✓ sum: right: 4.
    """
    guess, from_key = _from_key(exercise.name, guess)
    if _blank(guess):
        return Verdict(exercise.name, "unanswered", _UNANSWERED)
    if exercise.kind == "explain":
        right = _EXPLAINED
        ok, note = explains(exercise, str(guess))
    else:
        ok = same(guess, _truth_of(exercise), exercise.tolerance)
        note = next(
            (n for wrong, n in exercise.misconceptions if same(guess, wrong, exercise.tolerance)),
            "",
        )
        right = f"right: {guess!r}." + (f" {exercise.why}" if exercise.why else "")
    if ok:
        return Verdict(exercise.name, "right", right, from_key)
    if from_key:
        raise _wrong_key(exercise.name, guess, "package")
    return Verdict(
        exercise.name,
        "wrong",
        "not yet. " + (f"{note} " if note else "") + f"Hint: {exercise.hint}",
    )


def grade_against(
    guess: Any,
    *,
    exercise: str,
    truth: Any = None,
    hint: str,
    why: str = "",
    keywords: Iterable[Keywords] | None = None,
    tolerance: float = 0,
) -> Verdict:
    """Grade ``guess`` against a ``truth`` you give (a value or a function): for a
    teacher's own extra exercise. ``keywords=`` grades a sentence instead, as the
    course's do: a real sentence (:func:`sentence_note`), and one keyword of each group
    (read as :func:`words` reads them).

    >>> grade_against(256, exercise="mine", truth=lambda: 16 * 16, hint="count cells").right
    True
    >>> grade_against("The shapes stay fixed for every image.", exercise="e",
    ...               keywords=[("static", "fixed")], hint="")
    ✓ e: right. Compare with the model answer above.
    """
    guess, from_key = _from_key(exercise, guess)
    if _blank(guess):
        return Verdict(exercise, "unanswered", _UNANSWERED)
    note = ""
    if keywords is not None:
        said = words(str(guess))
        note = sentence_note(str(guess))
        ok = not note and all(mentions(said, group) for group in keywords)
        right = "right. Compare with the model answer above."
    else:
        value = truth() if callable(truth) else truth
        ok = same(guess, value, tolerance)
        right = f"right: {guess!r}." + (f" {why}" if why else "")
    if ok:
        return Verdict(exercise, "right", right, from_key)
    if from_key:
        raise _wrong_key(exercise, guess, "notebook")
    return Verdict(exercise, "wrong", "not yet. " + (f"{note} " if note else "") + f"Hint: {hint}")


class AnswerKey:
    """The course's answer key, as a learner and a teacher meet it.

    ``key(answers)`` loads answers (name → answer) that fill blanks left as ``...`` (CI's
    ``tests/notebook_answers.json``, a teacher's sheet; ``None`` clears them: the learner's
    own answers only). ``key[name]`` computes an exercise's truth, for a teacher only
    (:func:`teacher`); for anyone else it refuses without naming the answer. The names,
    ``len`` and ``in`` are open to all.

    >>> key = AnswerKey({"sum": Exercise("sum", "10_review", "predict", "add", lambda: 4)})
    >>> "sum" in key, len(key), list(key)
    (True, 1, ['sum'])
    >>> key["sum"]  # doctest: +SKIP
    PermissionError: The answer to 'sum' is the teacher's ...
    """

    def __init__(self, exercises: Mapping[str, Exercise]) -> None:
        self._exercises = exercises  # name → Exercise: the table whose truths this computes

    def __getitem__(self, name: str) -> Any:
        exercise = self._exercises[name]
        if not teacher():
            raise PermissionError(
                f"The answer to {name!r} is the teacher's: answer the exercise with "
                "grade_exercise, and the grader tells you whether you are right (and why)."
            )
        return _truth_of(exercise)

    def __contains__(self, name: object) -> bool:
        return name in self._exercises

    def __iter__(self) -> Iterator[str]:
        return iter(self._exercises)

    def __len__(self) -> int:
        return len(self._exercises)

    def __call__(self, answers: Mapping[str, Any] | None) -> None:
        _KEY.clear()
        if answers:
            _KEY.update(answers)

    def misconceptions(self, name: str) -> tuple[Any, ...]:
        """The known wrong answers of exercise ``name`` (each graded wrong by the tests)."""
        return tuple(m for m, _ in self._exercises[name].misconceptions)

    def __repr__(self) -> str:
        return f"AnswerKey({len(self)} exercises; load a key with answer_key(answers))"
