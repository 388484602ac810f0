"""The course: every notebook is a lesson (prose that explains, exercises that ask),
committed without outputs, and runs top to bottom on the tiny offline default (no cell
may hang past 90 s), both with the answer key injected (every check must pass) and without it (every
exercise says "not answered yet", nothing crashes)."""

from __future__ import annotations

import json
import os
import re
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell
from traitlets.config import Config

from tests.size_rule import unlabelled_pairs

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
ANSWERS = json.loads((ROOT / "tests" / "notebook_answers.json").read_text(encoding="utf-8"))
# nbclient's per-cell timeout: a hang guard (tests assert no timings), generous because
# make test runs the notebooks beside another phase.
LIMIT_S = 300


def _ipc(folder: Path) -> Config:
    """The kernel talks to the test over Unix sockets in ``folder``, not TCP on 127.0.0.1:
    nothing else on the machine can connect, and ipykernel has nothing to warn about
    ("Kernel is running over TCP without encryption", once per kernel over TCP). The
    sockets' path is absolute: the kernel runs in another folder than the test."""
    return Config({"KernelManager": {"transport": "ipc", "ip": str(folder / "kernel")}})


MIN_PROSE_WORDS = 400
# The course in order.
COURSE = [
    "00_quickstart",
    "01_images_3n_vs_4",
    "02_budgets_and_pooling",
    "03_audio",
    "04_video",
    "05_prompt_layout",
    "06_inference",
    "07_encoder_free",
    "08_serving",
    "09_inside_the_model",
    "10_review",
]
CHECK_CALL = re.compile(r'grade_exercise\(\s*\w+,\s*exercise="([^"]+)"\)')


def _source(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _prose_words(nb) -> int:
    text = " ".join(_source(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    return len(re.findall(r"[A-Za-z][A-Za-z'’-]*", text))


def _exercises(nb) -> tuple[list[dict], list[dict]]:
    """(cells before "## Exercises", cells from it on)."""
    cells = nb["cells"]
    for i, c in enumerate(cells):
        if c["cell_type"] == "markdown" and "## Exercises" in _source(c):
            return cells[:i], cells[i:]
    return cells, []


WORKSHOP = ROOT / "docs" / "workshop.md"
AGENDA_ROW = re.compile(r"^\| ([\d:]+|after) \| (.+?) \| (\d+) \| (\d+) \|", re.M)


def _agenda() -> list[tuple[str, str, int, int]]:
    """(start, what, core minutes, homework minutes) per row of workshop.md's agenda."""
    text = WORKSHOP.read_text(encoding="utf-8")
    section = text[text.index("## Agenda") : text.index("## Running each notebook")]
    return [(s, w.strip("` "), int(c), int(h)) for s, w, c, h in AGENDA_ROW.findall(section)]


def test_the_agenda_holds_three_hours_and_lists_every_notebook():
    rows = _agenda()
    listed = [what for _, what, _, _ in rows if what in COURSE]
    assert sorted(listed) == COURSE  # every notebook, once
    total = sum(core for _, _, core, _ in rows)
    assert total <= 180, f"{total} minutes of core material"
    clock = 0
    for start, what, core, _ in rows:  # each row starts when the one before ends
        if start != "after":
            assert start == f"{clock // 60}:{clock % 60:02d}", (what, start)
            clock += core
        else:
            assert core == 0, what  # after the day: homework only
    # A notebook with homework in the room's notebooks says which part (a heading or a line).
    for _, what, core, homework in rows:
        if what in COURSE and core and homework:
            words = " ".join(_source(c) for c in _nb(what)["cells"] if c["cell_type"] == "markdown")
            assert "homework" in words.lower(), what


def _nb(name: str) -> dict:
    return json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))


def test_there_is_a_full_course():
    names = [p.stem for p in NOTEBOOKS]
    assert names == COURSE, names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs_and_shaped_as_a_lesson(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code)
    assert "You will learn" in _source(nb["cells"][0])
    assert "parameters" in code[0].get("metadata", {}).get("tags", [])
    assert "ANSWERS = None" in _source(code[0]) and "answer_key(ANSWERS)" in _source(code[1])
    headings = [_source(c) for c in nb["cells"] if c["cell_type"] == "markdown"]
    assert any(h.startswith("## 1.") for h in headings)
    assert any("## Summary" in h for h in headings)
    words = _prose_words(nb)
    assert words >= MIN_PROSE_WORDS, f"{path.stem}: {words} words of prose"
    # Lessons point at the code they mirror: transformers files or the vLLM seeds.
    sources = re.findall(
        r"(transformers/models/\w+/\w+\.py|gemma3n_mm\.py|gemma4_mm\.py)", " ".join(headings)
    )
    assert len(sources) >= 2, f"{path.stem} names {sources}"
    # Claims are checked in the last cell only, never in a bare assert mid-lesson.
    assert all("assert " not in _source(c) for c in code[:-1])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_ends_with_exercises_that_ask(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    _, tail = _exercises(nb)
    text = "\n".join(_source(c) for c in tail)
    names = CHECK_CALL.findall(text)
    assert 2 <= len(names) <= 4, f"{path.stem}: {names}"
    assert "### Predict" in text and "### Explain" in text
    assert "<details>" in text  # the model answer, hidden until revealed
    for c in tail:
        if c["cell_type"] == "code" and "grade_exercise(" in _source(c):
            assert re.search(r"^\w+ = \.\.\.", _source(c), re.M), _source(c)  # a blank
    # The answer key covers exactly these exercises (and lives outside the notebook).
    assert sorted(ANSWERS[path.stem]) == sorted(names)
    for answer in ANSWERS[path.stem].values():  # the key's explanations are not printed
        assert not isinstance(answer, str) or len(answer) < 20 or answer not in text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_sizes_in_the_source_are_labelled(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    bad = [p for c in nb["cells"] for p in unlabelled_pairs(_source(c))]
    assert not bad, bad


@contextmanager
def _kernel(nb, tmp_path: Path):
    """One kernel for ``nb`` on the offline default (the model variables unset)."""
    env_keys = ("GEMMA_EXPLORE_MODEL", "GEMMA_EXPLORE_MODEL_3N", "GEMMA_EXPLORE_ENGINE")
    saved = {k: os.environ.pop(k, None) for k in env_keys}
    os.environ["MPLBACKEND"] = "Agg"
    try:
        client = NotebookClient(
            nb,
            timeout=LIMIT_S,
            kernel_name="python3",
            resources={"metadata": {"path": str(tmp_path)}},
            config=_ipc(tmp_path),
        )
        with client.setup_kernel():
            yield client
    finally:
        for k, v in saved.items():
            if v is not None:
                os.environ[k] = v


def _texts(nb) -> list[str]:
    out = []
    for c in nb.cells:
        for o in c.get("outputs", []):
            if o.get("output_type") == "stream":
                out.append(o["text"])
            elif "data" in o and "text/plain" in o["data"]:
                out.append(o["data"]["text/plain"])
    return out


def _verdicts(nb) -> dict[str, str]:
    """Exercise name → the check's printed verdict."""
    found = {}
    for text in _texts(nb):
        m = re.match(r"^([◷✗✓]) ([\w.-]+): ", text)
        if m:
            found[m.group(2)] = text
    return found


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_without_answers_then_with_the_answer_key(path, tmp_path):
    """A learner who runs everything before answering reaches the end: each exercise
    says "not answered yet" instead of failing. Then, in the same kernel, the answer key
    is loaded (``ge.answer_key``, as the injected ``ANSWERS`` cell would) and every
    exercise cell runs again: every check must pass. One run of the lesson serves both."""
    nb = nbformat.read(path, as_version=4)
    with _kernel(nb, tmp_path) as client:
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        unanswered = _verdicts(nb)
        texts = _texts(nb)
        _, exercises = _exercises(nb)
        graded = [c for c in exercises if c.cell_type == "code"]
        key = new_code_cell(f"ge.answer_key({ANSWERS[path.stem]!r})")
        nb.cells.append(key)
        client.execute_cell(key, len(nb.cells) - 1)
        for cell in graded:
            client.execute_cell(cell, nb.cells.index(cell))
        answered = _verdicts(nb)
        texts += _texts(nbformat.v4.new_notebook(cells=[key, *graded]))
    assert sorted(unanswered) == sorted(ANSWERS[path.stem])
    assert all("not answered yet" in v for v in unanswered.values()), unanswered
    assert sorted(answered) == sorted(ANSWERS[path.stem])
    assert all(v.startswith("✓") for v in answered.values()), answered
    bad = [p for t in texts for p in unlabelled_pairs(t)]
    assert not bad, bad
    # A lesson prints no warning: a learner should not meet one on the offline default.
    warned = [t for t in texts if "Warning:" in t]
    assert not warned, warned
