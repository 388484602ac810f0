"""loading.py is the only code that knows the engines: the front ends read its table.

The check walks the front ends' ASTs for a string constant that is a engine's name
(docstrings aside), and plants one to show it would be caught.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gemma_explore.engines.load import ENGINE_TABLE, ENGINES, engine_options, require_engine

ROOT = Path(__file__).resolve().parents[2]
FRONT_ENDS = [
    ROOT / "demo_app.py",
    *sorted((ROOT / "gemma_explore" / "cli").glob("*.py")),
    *sorted((ROOT / "gemma_explore" / "app").glob("*.py")),
]


def _backend_literals(source: str) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in ENGINES and id(node) not in docstrings
    ]


def test_no_front_end_names_an_engine():
    found = {
        f"{path.relative_to(ROOT)}:{line}": name
        for path in FRONT_ENDS
        for line, name in _backend_literals(path.read_text())
    }
    assert found == {}, f"front ends branch on engine names; read loading's table: {found}"


def test_the_check_sees_a_planted_branch():
    planted = 'def launch(engine):\n    """Serve."""\n    if engine == "openai":\n        pass\n'
    assert _backend_literals(planted) == [(3, "openai")]


def test_the_table_gives_each_front_end_its_options():
    assert set(ENGINES) == set(ENGINE_TABLE)
    for engine in ENGINE_TABLE.values():
        options = engine_options(engine.name, base_url="http://127.0.0.1:8000/v1")
        assert options["engine"] == engine.name
        assert ("base_url" in options) == engine.takes_base_url
    with pytest.raises(ValueError) as refused:
        require_engine("tpu")
    assert "--engine" in str(refused.value) and all(n in str(refused.value) for n in ENGINES)
