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
from gemma_explore.course.grader import grade_against

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
def test_with_the_answer_key_it_passes(name):
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
def test_each_misconception_fails(name):
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


def test_a_wrong_answer_gets_a_nudge_not_the_truth():
    v = grade_exercise(12345, exercise="gemma4-10s")
    assert v.status == "wrong" and EXERCISES["gemma4-10s"].hint in v.message
    assert str(answer_key["gemma4-10s"]) not in repr(v)
    assert "#D55E00" in v._repr_html_()


def test_a_right_answer_is_confirmed_with_why():
    v = grade_exercise(answer_key["gemma4-10s"], exercise="gemma4-10s")
    assert v.right and EXERCISES["gemma4-10s"].why in v.message and "#009E73" in v._repr_html_()
    assert grade_exercise(str(answer_key["first-second-frames"]), exercise="first-second-frames")


def test_numbers_within_the_tolerance_are_right():
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


def test_the_key_is_a_mapping_of_computed_truths():
    assert set(answer_key) == set(EXERCISES) and len(answer_key) == len(EXERCISES)
    assert answer_key.misconceptions("gemma4-10s") == (188, 1000, 750)


def test_grade_against_a_teachers_own_truth():
    assert grade_against(256, exercise="mine", truth=lambda: 16 * 16, hint="").right
    assert not grade_against({70: 65}, exercise="d", truth={70: 66}, hint="").right
    assert grade_against((1, 2.05), exercise="t", truth=(1, 2.0), hint="", tolerance=0.1).right
    assert not grade_against(1, exercise="b", truth=True, hint="").right  # True is not 1
    groups = [("static", "fixed"), ("shape",)]
    assert grade_against("Shapes stay FIXED.", exercise="e", keywords=groups, hint="").right
