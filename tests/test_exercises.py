"""ge.check: unanswered, wrong (hint, never the answer), right; the answer key."""

from __future__ import annotations

import pytest

import gemma_explore as ge


@pytest.fixture(autouse=True)
def _no_key():
    ge.answer_key(None)
    yield
    ge.answer_key(None)


@pytest.mark.parametrize("blank", [..., None, "", "   "])
def test_a_blank_is_not_answered_yet(blank):
    v = ge.check("q", blank, truth=3, hint="h")
    assert v.status == "unanswered" and not v.answered and "not answered yet" in repr(v)


def test_a_wrong_answer_gets_the_hint_not_the_truth():
    v = ge.check("q", 4, truth=12345, hint="count the cells")
    assert v.status == "wrong" and "count the cells" in v.message and "12345" not in repr(v)


def test_a_right_answer_is_confirmed_with_why():
    v = ge.check("q", 270, truth=lambda: 270, hint="", why="15 × 18 cells")
    assert v.right and "15 × 18 cells" in v.message
    assert "#009E73" in v._repr_html_()


def test_comparisons_follow_the_type():
    assert ge.check("s", " 00:02 ", truth="00:02", hint="").right  # strings: trimmed
    assert ge.check("d", {70: 66}, truth={70: 66}, hint="").right
    assert not ge.check("d", {70: 65}, truth={70: 66}, hint="").right
    assert ge.check("t", (1, 2.05), truth=(1, 2.0), hint="", tolerance=0.1).right
    assert not ge.check("b", 1, truth=True, hint="").right  # True is not 1 here


def test_explain_needs_one_word_of_each_group():
    groups = [("static", "fixed"), ("shape",)]
    assert ge.check("e", "Shapes stay FIXED.", keywords=groups, hint="").right
    wrong = ge.check("e", "so it is faster", keywords=groups, hint="think about shapes")
    assert wrong.status == "wrong" and "think about shapes" in wrong.message


def test_the_answer_key_fills_blanks_and_refuses_a_wrong_key():
    ge.answer_key({"q": 256})
    v = ge.check("q", ..., truth=256, hint="")
    assert v.right and v.from_key
    assert ge.check("other", ..., truth=1, hint="").status == "unanswered"
    assert ge.check("q", 1, truth=256, hint="h").status == "wrong"  # the learner's own answer
    ge.answer_key({"q": 255})
    with pytest.raises(AssertionError, match="answer key"):
        ge.check("q", ..., truth=256, hint="")
