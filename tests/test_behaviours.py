"""docs/behaviours.md stays honest: every function, test, notebook phrase and seed name it
names exists (issue 22)."""

from __future__ import annotations

import ast
import importlib
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TABLE = (ROOT / "docs" / "behaviours.md").read_text(encoding="utf-8")
ROWS = [
    [c.strip() for c in line.strip().strip("|").split(" | ")]
    for line in TABLE.splitlines()
    if re.match(r"\| \d+ \|", line)
]


def _code(cell: str) -> str:
    return cell.strip().strip("`")


def _resolve(dotted: str):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


def _notebook_path(stem: str) -> Path:
    """The notebook a row names; the course renumbers notebooks, so a stem whose number
    changed is found by the rest of its name (exactly one match)."""
    exact = ROOT / "notebooks" / f"{stem}.ipynb"
    if exact.exists():
        return exact
    found = sorted((ROOT / "notebooks").glob(f"[0-9][0-9]_{stem.split('_', 1)[1]}.ipynb"))
    assert len(found) == 1, f"no single notebook for {stem}: {found}"
    return found[0]


def _teaching_cells(stem: str) -> list[str]:
    """The notebook's cells, whitespace-folded, without the teacher's hidden checks."""
    nb = json.loads(_notebook_path(stem).read_text(encoding="utf-8"))
    cells = [re.sub(r"\s+", " ", "".join(c["source"])) for c in nb["cells"]]
    return [c for c in cells if not c.startswith("# Teacher's checks")]


def test_the_table_has_every_row_once():
    assert [int(r[0]) for r in ROWS] == list(range(1, len(ROWS) + 1))
    assert len(ROWS) == 59 and all(len(r) == 6 for r in ROWS)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r[0])
def test_every_name_resolves(row):
    _, _, seed, ours, test, taught = row
    if ours != "—":
        assert callable(_resolve(_code(ours))) or _resolve(_code(ours)) is not None
    if test != "—":
        path, name = _code(test).split("::")
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert name in names, f"{path} has no {name}"
    if taught != "—":
        m = re.fullmatch(r'`(\w+): "(.*)"`', taught)
        assert m, taught
        phrase = m.group(2).replace('\\"', '"').replace("\\\\", "\\")
        # the phrase sits inside one cell a learner reads (not across cells)
        cells = _teaching_cells(m.group(1))
        assert any(phrase in c for c in cells), f"no cell of {m.group(1)} says {phrase!r}"
    m = re.fullmatch(r"`(\w+\.py): (\w+)`( \(seed only\))?", seed)
    assert m, seed
    if not m.group(3):
        try:
            import vllm.model_executor.models as models
        except Exception:  # noqa: BLE001 - without vLLM the seed names cannot be read
            pytest.skip("vllm is not installed")
        text = (Path(models.__file__).parent / m.group(1)).read_text(encoding="utf-8")
        assert re.search(rf"\b{m.group(2)}\b", text), f"{m.group(1)} has no {m.group(2)}"


def test_the_table_counts_what_is_covered():
    covered = [r for r in ROWS if r[3] != "—" and r[4] != "—"]
    taught = [r for r in covered if r[5] != "—"]
    assert len(covered) >= 50 and len(taught) >= 35, (len(covered), len(taught))
    assert all(r[5] != "—" for r in ROWS), [r[0] for r in ROWS if r[5] == "—"]  # all taught
