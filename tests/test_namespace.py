"""``ge`` is a curated namespace: what a lesson calls, in lesson order, and nothing else.

The result types live in :mod:`gemma_explore.results`; the folders hold the rest. A
notebook reaches ``ge`` and at most one folder (``08_serving`` reaches ``serving``),
except the lessons that tour the insides, which say so below.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import types
from pathlib import Path

import gemma_explore as ge
from gemma_explore import results

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# The two lessons that tour vLLM's and the model's insides reach several folders; every
# other lesson reaches ge and at most one.
TOURS = {"09_inside_the_model"}


def _code(path: Path) -> str:
    nb = json.loads(path.read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


def test_the_namespace_is_small_and_holds_the_lessons_names():
    assert len(ge.__all__) <= 55
    assert len(set(ge.__all__)) == len(ge.__all__)
    for name in ("load", "Bundle", "sample_photo", "plan_image", "layout_prompt", "bill"):
        assert name in ge.__all__
    assert all(callable(getattr(ge, name)) for name in ge.__all__)


def test_dir_shows_no_submodule():
    shown = dir(ge)
    assert not [n for n in shown if isinstance(getattr(ge, n), types.ModuleType)]
    assert shown == sorted([*ge.__all__, "__version__"])


def test_every_ge_name_a_lesson_calls_exists():
    called = {m for path in NOTEBOOKS for m in re.findall(r"\bge\.(\w+)", _code(path))}
    assert sorted(called - set(ge.__all__)) == []


def test_results_gathers_the_result_types():
    for name in results.__all__:
        cls = getattr(results, name)
        assert isinstance(cls, type) and dataclasses.is_dataclass(cls), name
    assert results.ImagePlan is ge.plan_image((10, 10), family="gemma3n").__class__


def _folders_imported(path: Path) -> set[str]:
    folders = set()
    for node in ast.walk(ast.parse(_code(path))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "gemma_explore" and len(parts) > 2:
                folders.add(parts[1])
    return folders


def test_a_lesson_imports_from_ge_and_at_most_one_folder():
    many = {
        p.stem: sorted(_folders_imported(p))
        for p in NOTEBOOKS
        if p.stem not in TOURS and len(_folders_imported(p)) > 1
    }
    assert many == {}
