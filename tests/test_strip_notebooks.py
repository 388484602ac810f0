"""scripts/strip_notebooks.py, the git clean filter that keeps outputs out of commits."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "strip_notebooks.py"


def _run_notebook_text() -> str:
    """A notebook as JupyterLab saves it after a run: outputs, counts, widget state."""
    code = new_code_cell("x = 1\nx", execution_count=3, metadata={"tags": ["parameters"]})
    code.outputs = [new_output("execute_result", data={"text/plain": "1"}, execution_count=3)]
    code.metadata["execution"] = {"iopub.status.busy": "2026-01-01T00:00:00"}
    nb = new_notebook(cells=[new_markdown_cell("# Lesson"), code])
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nbformat.writes(nb)


def _strip(text: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        input=text,
        capture_output=True,
        text=True,
        check=False,
    )


def test_filter_strips_outputs_and_keeps_the_lesson():
    out = _strip(_run_notebook_text())
    assert out.returncode == 0, out.stderr
    nb = nbformat.reads(out.stdout, as_version=4)
    code = nb.cells[1]
    assert code.outputs == [] and code.execution_count is None
    assert code.metadata == {"tags": ["parameters"]}  # tags survive, run metadata does not
    assert code.source == "x = 1\nx" and nb.cells[0].source == "# Lesson"
    assert set(nb.metadata) == {"kernelspec"}
    assert _strip(out.stdout).stdout == out.stdout  # idempotent


def test_check_mode_names_the_dirty_notebook(tmp_path):
    dirty = tmp_path / "lesson.ipynb"
    dirty.write_text(_run_notebook_text())
    out = _strip("", "--check", str(dirty))
    assert out.returncode == 1 and "lesson.ipynb" in out.stderr
    assert _strip("", str(dirty)).returncode == 0  # strips in place
    assert _strip("", "--check", str(dirty)).returncode == 0


def test_committed_notebooks_are_already_stripped():
    out = _strip("", "--check", *map(str, sorted((ROOT / "notebooks").glob("*.ipynb"))))
    assert out.returncode == 0, out.stderr


def test_gitattributes_registers_the_filter():
    out = subprocess.run(
        ["git", "check-attr", "filter", "notebooks/00_quickstart.ipynb"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip().endswith("filter: strip-notebook")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_add_stores_the_stripped_notebook(tmp_path):
    """Configured as CONTRIBUTING.md says, `git add` stores no outputs and the working
    copy keeps them."""

    def run(*a):
        return subprocess.run(["git", *a], cwd=tmp_path, capture_output=True, text=True, check=True)

    run("init", "-q")
    shutil.copy(ROOT / ".gitattributes", tmp_path / ".gitattributes")
    run("config", "filter.strip-notebook.clean", f"{sys.executable} {SCRIPT}")
    run("config", "filter.strip-notebook.smudge", "cat")
    run("config", "filter.strip-notebook.required", "true")
    text = _run_notebook_text()
    (tmp_path / "lesson.ipynb").write_text(text)
    run("add", "lesson.ipynb")
    stored = run("show", ":lesson.ipynb").stdout
    assert '"outputs": []' in stored and 'execution_count": 3' not in stored
    assert (tmp_path / "lesson.ipynb").read_text() == text
