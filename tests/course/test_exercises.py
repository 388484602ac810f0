"""The course's exercises: graded against truths the package computes, never against
anything a learner can copy off the notebook.

Every exercise runs three ways: with the answer key it passes; with each of its listed
misconceptions it fails; with the visible source of its notebook copied into the blank it
does not pass. The grader itself: unanswered, wrong (a nudge, never the answer), right.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from gemma_explore.course.exercises import EXERCISES, answer_key, grade_exercise
from gemma_explore.course.grader import TEACHER_ENV, grade_against

ROOT = Path(__file__).resolve().parents[2]
KEY = json.loads((ROOT / "tests" / "notebook_answers.json").read_text(encoding="utf-8"))
NAMES = sorted(EXERCISES)
CALL = re.compile(r'^(\w+) = \.\.\.  # [^\n]*\ngrade_exercise\(\1, exercise="([^"]+)"\)$')
NUMBER = re.compile(r"(?<![\w.])\d+(?:[  ]\d{3})*(?:\.\d+)?(?!\w)")


@pytest.fixture(autouse=True)
def _no_key():
    answer_key(None)
    yield
    answer_key(None)


@pytest.fixture
def teacher(monkeypatch):
    """A teacher's process: answer_key[name] computes truths (GEMMA_EXPLORE_TEACHER=1)."""
    monkeypatch.setenv(TEACHER_ENV, "1")


def _cells(notebook: str) -> list[tuple[str, str]]:
    nb = json.loads((ROOT / "notebooks" / f"{notebook}.ipynb").read_text(encoding="utf-8"))
    return [(c["cell_type"], "".join(c["source"])) for c in nb["cells"]]


def _exercise_cells(name: str) -> tuple[str, str, list[tuple[str, str]]]:
    """(the question's markdown, the answer cell's code, every cell) of exercise ``name``."""
    cells = _cells(EXERCISES[name].notebook)
    for i, (kind, src) in enumerate(cells):
        m = CALL.match(src.strip()) if kind == "code" else None
        if m and m.group(2) == name:
            return cells[i - 1][1], src, cells
    raise AssertionError(f"{name}: no answer cell in {EXERCISES[name].notebook}")


def _numbers(text: str) -> list[float]:
    return [float(n.replace(" ", "").replace(" ", "")) for n in NUMBER.findall(text)]


def _visible(name: str) -> list[object]:
    """What a learner could copy into the blank from the notebook: every cell's whole
    source, every literal in the notebook's code, every number in the question, and for
    an Explain the question itself (the model answer is hidden in <details>)."""
    question, _code, cells = _exercise_cells(name)
    visible: list[object] = [src for _, src in cells]
    for kind, src in cells:
        if kind == "code":
            magics = re.sub(r"^\s*[%!]", "#", src, flags=re.M)  # IPython lines are not Python
            for node in ast.walk(ast.parse(magics)):
                if isinstance(node, ast.Constant) and node.value is not ...:
                    visible.append(node.value)
    visible += _numbers(question)
    shown = re.sub(r"<details>.*?</details>", "", question, flags=re.S)
    visible.append(shown)
    return visible


# ---- one: with the answer key, it passes ----------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_with_the_answer_key_it_passes(name, teacher):
    ex = EXERCISES[name]
    assert KEY[ex.notebook][name] == answer_key[name]  # the teacher's sheet = the package
    assert grade_exercise(answer_key[name], exercise=name).right
    answer_key(KEY[ex.notebook])
    verdict = grade_exercise(..., exercise=name)
    assert verdict.right and verdict.from_key
    if ex.kind == "explain":
        assert "above" in verdict.message and "below" not in verdict.message
        for sentence in ex.paraphrases:  # the right idea in other words
            assert grade_exercise(sentence, exercise=name).right, sentence


# ---- two: with each listed misconception, it fails ------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_each_misconception_fails(name, teacher):
    ex = EXERCISES[name]
    assert len(ex.misconceptions) >= (3 if ex.kind == "explain" else 1)
    for wrong, note in ex.misconceptions:
        verdict = grade_exercise(wrong, exercise=name)
        assert verdict.status == "wrong", wrong
        assert ex.hint in verdict.message and (not note or note in verdict.message)
        truth = answer_key[name]
        if ex.kind != "explain":  # a wrong answer never reveals the right one
            shown = f'"{truth}"' if isinstance(truth, str) else f" {truth} "
            assert shown not in verdict.message, verdict.message


# ---- three: with the notebook's visible source copied in, it does not pass ------------


@pytest.mark.parametrize("name", NAMES)
def test_the_visible_source_does_not_pass(name):
    question, code, _cells_ = _exercise_cells(name)
    # The answer cell holds the blank and the grader's call, nothing a truth could hide in.
    assert CALL.match(code.strip()), code
    assert "truth" not in code and "lambda" not in code
    ex = EXERCISES[name]
    candidates = _visible(name)
    if ex.kind == "choose":  # the options are on screen by design: only cells and prose
        candidates = [c for c in candidates if isinstance(c, str) and len(c) > 20]
    passed = [c for c in candidates if grade_exercise(c, exercise=name).right]
    assert not passed, f"{name}: {passed[:3]}"


EXPLAINS = [n for n in NAMES if EXERCISES[n].kind == "explain"]


@pytest.mark.parametrize("name", EXPLAINS)
def test_the_notebooks_model_answer_is_graded_right(name):
    """The model answer a learner reveals (the notebook's <details>) holds every idea."""
    question, _code, _cells_ = _exercise_cells(name)
    model = re.search(r"</summary>(.*?)</details>", question, flags=re.S)
    assert model, f"{name}: no model answer in <details>"
    verdict = grade_exercise(model.group(1).strip(), exercise=name)
    assert verdict.right, verdict


def test_every_exercise_of_the_course_is_in_the_key():
    for notebook, answers in KEY.items():
        in_notebook = [
            m.group(2)
            for kind, src in _cells(notebook)
            if kind == "code" and (m := CALL.match(src.strip()))
        ]
        assert sorted(in_notebook) == sorted(answers), notebook
        assert all(EXERCISES[n].notebook == notebook for n in in_notebook)
    assert sorted(n for a in KEY.values() for n in a) == NAMES


# ---- the grader -----------------------------------------------------------------------


@pytest.mark.parametrize("blank", [..., None, "", "   "])
def test_a_blank_is_not_answered_yet(blank):
    v = grade_exercise(blank, exercise="gemma4-10s")
    assert v.status == "unanswered" and not v.answered and "not answered yet" in repr(v)


def test_a_wrong_answer_gets_a_nudge_not_the_truth(teacher):
    v = grade_exercise(12345, exercise="gemma4-10s")
    assert v.status == "wrong" and EXERCISES["gemma4-10s"].hint in v.message
    assert str(answer_key["gemma4-10s"]) not in repr(v)
    assert "#D55E00" in v._repr_html_()


def test_a_right_answer_is_confirmed_with_why(teacher):
    v = grade_exercise(answer_key["gemma4-10s"], exercise="gemma4-10s")
    assert v.right and EXERCISES["gemma4-10s"].why in v.message and "#009E73" in v._repr_html_()
    assert grade_exercise(str(answer_key["first-second-frames"]), exercise="first-second-frames")


def test_numbers_within_the_tolerance_are_right(teacher):
    truth = answer_key["frame-spacing-10s"]
    assert grade_exercise(round(truth, 2), exercise="frame-spacing-10s").right
    assert not grade_exercise(truth + 0.1, exercise="frame-spacing-10s").right


def test_an_unknown_exercise_names_the_known_ones():
    with pytest.raises(KeyError, match="gemma4-10s"):
        grade_exercise(1, exercise="no-such-thing")


def test_a_wrong_key_raises_instead_of_confusing_a_learner():
    answer_key({"gemma4-10s": 251})
    with pytest.raises(AssertionError, match="answer key"):
        grade_exercise(..., exercise="gemma4-10s")
    assert grade_exercise(1, exercise="gemma4-10s").status == "wrong"  # the learner's own


def test_the_key_names_every_exercise_and_computes_truths_for_a_teacher(teacher):
    assert set(answer_key) == set(EXERCISES) and len(answer_key) == len(EXERCISES)
    assert "gemma4-10s" in answer_key and "no-such-thing" not in answer_key
    assert answer_key.misconceptions("gemma4-10s") == (188, 1000, 750)
    assert grade_exercise(answer_key["gemma4-10s"], exercise="gemma4-10s").right


# ---- the answers are not one call away ---------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_a_learner_cannot_read_a_truth_from_the_key(name, monkeypatch):
    monkeypatch.delenv(TEACHER_ENV, raising=False)
    with pytest.raises(PermissionError, match="teacher") as info:
        answer_key[name]
    said = f" {info.value} {answer_key!r} "
    truth = KEY[EXERCISES[name].notebook][name]
    shown = [repr(truth), f'"{truth}"'] if isinstance(truth, str) else [f" {truth} "]
    assert not [s for s in shown if s in said], said
    monkeypatch.setenv(TEACHER_ENV, "0")  # only "1" opens it
    with pytest.raises(PermissionError):
        answer_key[name]


def test_no_docstring_of_the_course_grades_a_truth_right(teacher):
    """help() on an exercise module is one call: its examples show wrong answers only."""
    from gemma_explore.course import exercises

    docs = " ".join(m.__doc__ or "" for m in (exercises, *exercises.NOTEBOOKS))
    for name, ex in EXERCISES.items():
        if ex.kind != "explain":
            assert f"{name}: right: {answer_key[name]!r}" not in docs, name
            assert f'({answer_key[name]!r}, exercise="{name}")' not in docs, name


# The issue's own examples: fragments that name the ideas and a vague answer, each of
# which the grader used to pass, against a learner's good answer in their own words.
FRAGMENTS = [
    ("why-padding", "static batch"),
    ("why-squash", "CNN 768"),
    ("why-188", "188 is the maximum so it is always used"),
]
GOOD = [
    ("why-padding", "Every image at a budget has the same static shape, so they can be batched."),
    ("why-squash", "Its CNN, MobileNet-V5, was trained on one fixed 768 px square input."),
    ("why-188", "The count is fixed at 188 whatever the clip, and the unused slots get padding."),
]


@pytest.mark.parametrize(("name", "fragment"), FRAGMENTS)
def test_fragments_and_vague_answers_are_refused(name, fragment):
    verdict = grade_exercise(fragment, exercise=name)
    assert verdict.status == "wrong", verdict
    assert EXERCISES[name].hint in verdict.message
    if len(fragment.split()) < 3:  # a fragment is told to write a sentence
        assert "Write a whole sentence" in verdict.message, verdict


@pytest.mark.parametrize(("name", "sentence"), GOOD)
def test_a_good_answer_in_a_learners_words_passes(name, sentence):
    assert grade_exercise(sentence, exercise=name).right, sentence


@pytest.mark.parametrize(
    ("name", "slip"),
    [("padding-2s", 176), ("unified-1.5s", 37), ("landscape-280", 300)],
)
def test_floor_for_ceil_and_ceil_for_floor_get_a_note(name, slip):
    """Rounding the wrong way is the commonest slip: each gets its own note."""
    verdict = grade_exercise(slip, exercise=name)
    assert verdict.status == "wrong"
    assert "ceil" in verdict.message or "floor" in verdict.message, verdict


def test_grade_against_a_teachers_own_truth():
    assert grade_against(256, exercise="mine", truth=lambda: 16 * 16, hint="").right
    assert not grade_against({70: 65}, exercise="d", truth={70: 66}, hint="").right
    assert grade_against((1, 2.05), exercise="t", truth=(1, 2.0), hint="", tolerance=0.1).right
    assert not grade_against(1, exercise="b", truth=True, hint="").right  # True is not 1
    groups = [("static", "fixed"), ("shape",)]
    said = "The shapes stay FIXED for every image."
    assert grade_against(said, exercise="e", keywords=groups, hint="").right
