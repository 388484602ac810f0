"""The grader on its own: keyword groups for a sentence, values for a number, the key.

An Explain exercise is graded by keyword groups: every idea (a group) needs one of its
words or phrases, and a misconception's phrase refuses the sentence. These tests build
small exercises of their own, so they hold whatever the course's exercises say.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gemma_explore.course.grader import (
    MAX_WORDS,
    MIN_WORDS,
    TEACHER_ENV,
    AnswerKey,
    Exercise,
    grade,
    grade_against,
    mentions,
    sentence_note,
    words,
)

COURSE = Path(__file__).resolve().parents[2] / "gemma_explore" / "course"

WHY = Exercise(
    name="why-static",
    notebook="02_budgets_and_pooling",
    kind="explain",
    hint="What do compiled graphs need?",
    ideas=(
        ("static", "same shape", "fixed shape"),  # one shape for every image
        ("batch", "compiled", "cuda graph"),  # what needs it
    ),
    rejects=((("accuracy", "bigger image"), "Padding adds no accuracy."),),
)
SUM = Exercise("sum", "10_review", "predict", hint="add them", truth=lambda: 4, why="2 + 2.")


@pytest.fixture(autouse=True)
def _no_key():
    AnswerKey({})(None)
    yield
    AnswerKey({})(None)


# ---- keyword groups -------------------------------------------------------------------


def test_every_idea_present_passes():
    assert grade(WHY, "A static shape lets images be batched.").right


def test_a_sentence_missing_one_idea_fails():
    verdict = grade(WHY, "Every image gets a static shape.")  # nothing about what needs it
    assert verdict.status == "wrong" and WHY.hint in verdict.message
    assert not grade(WHY, "So the images can be batched.").right  # nothing about the shape


def test_a_misconception_phrase_fails_even_with_every_idea():
    verdict = grade(WHY, "A static shape is batched and gives better accuracy.")
    assert verdict.status == "wrong"
    assert "Padding adds no accuracy." in verdict.message and WHY.hint in verdict.message


@pytest.mark.parametrize(
    "sentence",
    [
        "A static tensor lets a CUDA graph replay.",
        "The same shape every time, so it can be compiled.",
        "Fixed shapes mean that the images batch together.",
    ],
)
def test_any_keyword_of_a_group_counts(sentence):
    assert grade(WHY, sentence).right, sentence


def test_case_plurals_and_endings_are_folded():
    assert words("Images BATCHED, shapes don't change.") == words("image batch shape do not change")
    assert words("padding pads padded pad") == ("pad",) * 4
    assert words("compiled compiles compiling compile") == ("compil",) * 4
    assert words("classes class passes pass") == ("class", "class", "pass", "pass")
    assert words("Gemma 3n’s encoder") == words("gemma 3n encoders")


def test_a_keyword_is_whole_words_in_order():
    said = words("The timestamps are fixed in size.")
    assert not mentions(said, ("time",))  # a word inside a longer word is not the word
    assert not mentions(said, ("fixed size",))  # a phrase's words side by side, in order
    assert mentions(said, ("in size",)) and mentions(words("a fixed-size input"), ("fixed size",))


def test_an_explanation_has_a_word_limit():
    long = "A static shape lets images be batched. " + "And so on. " * MAX_WORDS
    verdict = grade(WHY, long)
    assert verdict.status == "wrong" and f"at most {MAX_WORDS} words" in verdict.message


@pytest.mark.parametrize(
    "fragment",
    [
        "static batch",  # keywords, no sentence
        "static shape, batched",
        "Static shapes; image batches; CUDA graphs; XLA.",  # a list: no verb
    ],
)
def test_a_fragment_is_not_an_explanation(fragment):
    verdict = grade(WHY, fragment)
    assert verdict.status == "wrong" and "sentence" in verdict.message, verdict
    assert sentence_note(fragment)


def test_a_sentence_needs_min_words_and_a_verb():
    assert "at least" in sentence_note("Static shapes get batched.")  # 4 words
    assert "verb" in sentence_note("Static shapes for images in one batch.")
    assert sentence_note("Static shapes let images be batched.") == ""
    assert sentence_note("The images can't change shape at all.") == ""  # "can" is a verb
    assert len("Static shapes let images be batched.".split()) == MIN_WORDS


def test_a_misconception_note_comes_before_the_sentence_rule():
    verdict = grade(WHY, "More accuracy.")  # short, but the misconception teaches more
    assert "Padding adds no accuracy." in verdict.message and "sentence" not in verdict.message


def test_a_keyword_group_must_be_a_tuple_of_phrases_with_words():
    with pytest.raises(ValueError, match="tuple of phrases"):
        Exercise("x", "00_quickstart", "explain", hint="", ideas=("static",))
    with pytest.raises(ValueError, match="holds no words"):
        Exercise("x", "00_quickstart", "explain", hint="", ideas=(("static", "…"),))


# ---- values, the key, a teacher's own exercise ----------------------------------------


def test_a_number_is_compared_and_a_misconception_gets_its_note():
    assert repr(grade(SUM, 4)) == "✓ sum: right: 4. 2 + 2."
    wrong = Exercise(
        "sum", "10_review", "predict", "add", lambda: 4, misconceptions=((22, "Add."),)
    )
    verdict = grade(wrong, 22)
    assert verdict.status == "wrong" and verdict.message == "not yet. Add. Hint: add"
    assert " 4 " not in f" {verdict.message} "


@pytest.mark.parametrize("blank", [..., None, "", "   "])
def test_a_blank_is_not_answered_yet(blank):
    assert grade(SUM, blank).status == "unanswered"
    assert grade(WHY, blank).status == "unanswered"


def test_the_key_computes_a_truth_for_a_teacher_only(monkeypatch):
    key = AnswerKey({"sum": SUM})
    monkeypatch.delenv(TEACHER_ENV, raising=False)
    with pytest.raises(PermissionError) as info:
        key["sum"]
    assert "4" not in str(info.value) and "4" not in repr(key)
    assert list(key) == ["sum"] and len(key) == 1 and "sum" in key  # names are open
    monkeypatch.setenv(TEACHER_ENV, "1")
    assert key["sum"] == 4
    with pytest.raises(KeyError):
        key["nothing"]


def test_the_key_fills_a_blank_and_a_wrong_key_raises():
    key = AnswerKey({"sum": SUM})
    key({"sum": 4})
    verdict = grade(SUM, ...)
    assert verdict.right and verdict.from_key
    assert grade(SUM, 5).status == "wrong"  # the learner's own answer still counts
    key({"sum": 5})
    with pytest.raises(AssertionError, match="answer key"):
        grade(SUM, ...)
    key(None)
    assert grade(SUM, ...).status == "unanswered"


def test_grade_against_reads_keywords_as_the_course_does():
    groups = [("static", "fixed"), ("shape",)]
    said = "The shapes stay FIXED for every image."
    assert grade_against(said, exercise="e", keywords=groups, hint="").right
    assert not grade_against(
        "It stays fixed for every image.", exercise="e", keywords=groups, hint=""
    ).right
    assert (
        "sentence" in grade_against("Shapes FIXED.", exercise="e", keywords=groups, hint="").message
    )
    assert grade_against(256, exercise="mine", truth=lambda: 16 * 16, hint="").right


# ---- how the course is built ----------------------------------------------------------


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_the_grader_never_imports_the_course():
    """Exercises import the grader's types; the grader imports no exercise (no cycle)."""
    assert not {m for m in _imports(COURSE / "grader.py") if "exercises" in m}


def test_exercises_are_written_with_keywords_not_regexes():
    for path in sorted((COURSE / "exercises").glob("*.py")):
        assert "re" not in _imports(path), f"{path.name}: write keyword groups, not regexes"
