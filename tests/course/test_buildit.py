"""The build-it track: every check fails on the blanks and passes on the sealed reference
solutions, against transformers' and vLLM's own functions; a plausible slip fails too;
and the references stay sealed for a learner."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from gemma_explore.course.buildit import HERE, SOURCE_ENV, TRACK, implementation, start
from gemma_explore.course.buildit.checks import CHECKS
from gemma_explore.course.buildit.sealed import SEALED, reference_source
from gemma_explore.course.grader import TEACHER_ENV

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def teacher(monkeypatch):
    monkeypatch.setenv(TEACHER_ENV, "1")


@pytest.fixture
def learner(monkeypatch):
    monkeypatch.delenv(TEACHER_ENV, raising=False)


def test_the_track_has_a_check_per_exercise():
    assert list(CHECKS) == list(TRACK) == list(SEALED)
    assert len(TRACK) == 5


@pytest.mark.parametrize("name", TRACK)
def test_every_check_fails_on_the_blank(name):
    blank = implementation(name, "package")
    with pytest.raises(NotImplementedError, match="Your turn"):
        CHECKS[name](blank)


@pytest.mark.parametrize("name", TRACK)
def test_every_check_passes_on_the_reference(name, teacher):
    CHECKS[name](implementation(name, "reference"))


def _slipped(name: str, **functions) -> types.ModuleType:
    """The reference with some functions replaced by a learner's plausible slip."""
    module = implementation(name, "reference")
    for attr, fn in functions.items():
        setattr(module, attr, fn)
    return module


def test_a_floor_for_ceil_slip_fails_the_unified_check(teacher):
    pytest.importorskip("vllm")
    slip = _slipped("raw_audio", unified_audio_tokens=lambda n: n // 640)
    with pytest.raises(AssertionError, match="embedder rows"):
        CHECKS["raw_audio"](slip)


def test_a_ceil_for_floor_slip_fails_the_resize_check(teacher):
    import math

    def ceil_resize(h, w, budget):  # rounds each side up to whole 48 px cells
        f = math.sqrt(budget * 9 * 256 / (h * w))
        return math.ceil(h * f / 48) * 48, math.ceil(w * f / 48) * 48

    with pytest.raises(AssertionError, match="transformers"):
        CHECKS["resize"](_slipped("resize", resize_for_budget=ceil_resize))


def test_merging_in_the_wrong_order_fails_the_newline_check(teacher):
    pytest.importorskip("vllm")
    reference = implementation("newlines", "reference").merge_newlines

    def four_first(ids, newline):  # "\n\n"+"\n\n" first: vLLM merges it last
        n1, n2, n4 = newline[1], newline[2], newline[4]
        out, i = [], 0
        while i < len(ids):
            pair = i + 1 < len(ids) and ids[i] == ids[i + 1] == n2
            out.append(n4 if pair else ids[i])
            i += 2 if pair else 1
        return reference(out, newline) if n1 in out else out

    with pytest.raises(AssertionError, match="vLLM"):
        CHECKS["newlines"](_slipped("newlines", merge_newlines=four_first))


# ---- sealed for a learner, open for a teacher -------------------------------------------


@pytest.mark.parametrize("name", TRACK)
def test_a_learner_cannot_open_a_reference(name, learner):
    with pytest.raises(PermissionError, match=TEACHER_ENV):
        reference_source(name)
    with pytest.raises(PermissionError):
        implementation(name, "reference")


@pytest.mark.parametrize("name", TRACK)
def test_no_line_of_a_reference_is_readable_in_the_package(name, teacher):
    shipped = "\n".join(p.read_text(encoding="utf-8") for p in HERE.rglob("*.py"))
    shipped += (HERE / "README.md").read_text(encoding="utf-8")
    blank = (HERE / f"{name}.py").read_text(encoding="utf-8")
    lines = [ln.strip() for ln in reference_source(name).splitlines()]
    code = [ln for ln in lines if len(ln) > 24 and ln not in blank]  # not the signature
    assert code, name
    assert not [ln for ln in code if ln in shipped]


def test_start_copies_the_blanks_and_keeps_a_learners_work(tmp_path, teacher):
    copied = start(tmp_path)
    assert sorted(p.name for p in copied) == sorted(["README.md", *(f"{n}.py" for n in TRACK)])
    (tmp_path / "resize.py").write_text(reference_source("resize"), encoding="utf-8")
    assert start(tmp_path) == []  # nothing overwritten
    CHECKS["resize"](implementation("resize", tmp_path))  # a learner's folder, checked
    with pytest.raises(NotImplementedError):
        CHECKS["video_stamps"](implementation("video_stamps", tmp_path))


def _learner_command(folder: str, *, teacher_on: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in (TEACHER_ENV, SOURCE_ENV)}
    if teacher_on:
        env[TEACHER_ENV] = "1"
    command = [sys.executable, "-m", "gemma_explore.course.buildit", "check", folder]
    command += ["-k", "resize or video_stamps"]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_learners_command_fails_on_blanks_and_passes_on_the_reference(tmp_path):
    """The command a learner types, end to end: pytest on checks.py, in a new process."""
    start(tmp_path)
    blanks = _learner_command(str(tmp_path), teacher_on=False)
    assert blanks.returncode == 1, blanks.stdout[-2000:] + blanks.stderr[-2000:]
    assert "2 failed" in blanks.stdout and "NotImplementedError" in blanks.stdout
    solved = _learner_command("reference", teacher_on=True)
    assert solved.returncode == 0, solved.stdout[-2000:] + solved.stderr[-2000:]
    assert "2 passed" in solved.stdout
