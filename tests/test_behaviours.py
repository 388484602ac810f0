"""docs/behaviours.md holds its claims (issues 22 and 34).

Every row names the seed function (``file: name``), our function, the vLLM or transformers
symbol it is held to (optionally through a package helper: ``via``), the test that holds
it, the notebook phrase that teaches it, and a status. This file checks each claim
statically (ast, no vLLM import, well under 10 s):

* the seed name is in the seed file; it is also in vLLM's installed file unless the row
  says "(seed only)", and then it is truly absent there;
* our function is defined where the row says;
* the held-to symbol is defined in the installed vLLM or transformers (a ``seed:`` one in
  the seed file only);
* the test exists; for a "full" row its source (with the helpers and fixtures of its
  file it uses) references both our function and the held-to symbol, or reaches the
  ``via`` helper (itself or through our function), whose own source references the symbol;
* every quoted vLLM or transformers message in the behaviour is in that library's source:
  the held-to symbol's file, or the file of the row's seed name;
* the notebook phrase is in a cell a learner reads;
* every function, method and table of both seed files is a row's seed name, or is listed
  as plumbing with a reason: the table covers the seeds one for one.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import re
from pathlib import Path

import pytest

from tests.seeds import SEEDS

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "behaviours.md").read_text(encoding="utf-8")
SEED_FILES = ("gemma3n_mm.py", "gemma4_mm.py")


def _table(heading: str) -> list[list[str]]:
    """The rows of the markdown table under ``heading``, cells stripped."""
    part = DOC.split(heading, 1)[1].split("\n## ", 1)[0]
    return [
        [c.strip() for c in line.strip().strip("|").split(" | ")]
        for line in part.splitlines()
        if re.match(r"\| \d+ \|", line)
    ]


ROWS = _table("## The behaviours")
PLUMBING = _table("## Plumbing")
CODE = re.compile(r"`([^`]+)`")


def _codes(cell: str) -> list[str]:
    return CODE.findall(cell)


@functools.cache
def _library_root(top: str) -> Path | None:
    spec = importlib.util.find_spec(top)  # finds the package without importing it
    return None if spec is None else Path(next(iter(spec.submodule_search_locations)))


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _defined(tree: ast.AST, names: list[str]) -> ast.AST | None:
    """The def, class or assignment ``names`` (a.b.c) inside ``tree``, or None."""
    node = tree
    for name in names:
        found = None
        for child in getattr(node, "body", []):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if child.name == name:
                    found = child
            elif isinstance(child, (ast.Assign, ast.AnnAssign)):
                targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    found = child
            elif isinstance(child, ast.ImportFrom) and any(
                (a.asname or a.name) == name for a in child.names
            ):
                found = child  # re-exported (vllm.LLM, transformers' lazy modules aside)
        if found is None:
            return None
        node = found
    return node


def _locate(dotted: str) -> tuple[Path, ast.AST] | None:
    """The source file and node of a dotted name in the package, vLLM or transformers."""
    parts = dotted.split(".")
    top = ROOT if parts[0] == "gemma_explore" else _library_root(parts[0])
    if top is None:
        return None
    base = top / "gemma_explore" if parts[0] == "gemma_explore" else top
    for i in range(len(parts), 0, -1):
        stem = base.joinpath(*parts[1:i])
        for path in (stem.with_suffix(".py"), stem / "__init__.py"):
            if path.is_file():
                node = _defined(_tree(path), parts[i:]) if parts[i:] else _tree(path)
                return (path, node) if node is not None else None
    return None


@functools.cache
def _locals(tree: ast.Module) -> dict[str, ast.AST]:
    """A file's functions and classes (any depth) and module-level assignments, by name."""
    local = {
        n.name: n
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    for n in tree.body:  # module-level assignments (VLLM_PROCESSORS = VllmProcessors())
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    local.setdefault(t.id, n)
    return local


@functools.cache
def _docstrings(tree: ast.Module) -> frozenset[int]:
    """The ids of a file's docstrings: a docstring that names a symbol does not use it."""
    return frozenset(
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    )


def _references(tree: ast.Module, node: ast.AST) -> set[str]:
    """Every identifier ``node`` uses (names, attributes, imported names, words of its
    strings but not of docstrings, its arguments), with those of the same file's functions
    and classes it uses (helpers, fixtures), transitively."""
    local, docstrings = _locals(tree), _docstrings(tree)
    out: set[str] = set()
    todo, seen = [node], set()
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for n in ast.walk(current):
            if id(n) in docstrings:
                continue
            elif isinstance(n, ast.Name):
                out.add(n.id)
            elif isinstance(n, ast.Attribute):
                out.add(n.attr)
            elif isinstance(n, ast.alias):
                out.update({n.asname or n.name, n.name.rsplit(".", 1)[-1]})
            elif isinstance(n, ast.arg):
                out.add(n.arg)
            elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                out.update(re.findall(r"\w+", n.value))
        todo.extend(local[name] for name in out if name in local)
    return out


def _held_to(cell: str) -> tuple[str, str | None]:
    """(symbol, via helper or None) of a "held to" cell."""
    codes = _codes(cell)
    assert codes and (len(codes) == 1 or " via " in cell), cell
    return codes[0], codes[1] if len(codes) > 1 else None


def _seed_defs(text: str) -> set[str]:
    """Module-level functions, classes and tables of a seed file, and its classes' methods
    and class attributes as ``Class.name`` (schema fields, annotated, are the class's)."""
    tree = ast.parse(text)
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        schema = isinstance(node, ast.ClassDef) and any(
            getattr(b, "id", None) == "TensorSchema" for b in node.bases
        )  # an input schema's fields are the schema's plumbing entry
        if isinstance(node, ast.ClassDef) and not schema:
            for child in node.body:
                if isinstance(child, ast.FunctionDef):
                    names.add(f"{node.name}.{child.name}")
                elif isinstance(child, ast.Assign):
                    names.update(
                        f"{node.name}.{t.id}" for t in child.targets if isinstance(t, ast.Name)
                    )
                elif isinstance(child, ast.AnnAssign) and child.value is not None:
                    names.add(f"{node.name}.{child.target.id}")  # flags: supports_…: … = True
    return names


def _names_in(name: str, defs: set[str]) -> bool:
    """``Class.name`` names exactly that; a bare name, any definition called so."""
    return name in defs if "." in name else any(d.rsplit(".", 1)[-1] == name for d in defs)


@functools.cache
def _seed_text(file: str) -> str | None:
    path = SEEDS / file
    return path.read_text(encoding="utf-8") if path.exists() else None


@functools.cache
def _installed_text(file: str) -> str | None:
    root = _library_root("vllm")
    path = None if root is None else root / "model_executor" / "models" / file
    return path.read_text(encoding="utf-8") if path and path.exists() else None


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


def test_the_tables_are_numbered_and_shaped():
    assert [int(r[0]) for r in ROWS] == list(range(1, len(ROWS) + 1))
    assert all(len(r) == 8 for r in ROWS), [r[0] for r in ROWS if len(r) != 8]
    assert [int(r[0]) for r in PLUMBING] == list(range(1, len(PLUMBING) + 1))
    assert all(len(r) == 3 for r in PLUMBING)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r[0])
def test_each_rows_seed_name_is_where_it_says(row):
    seed = row[2]
    m = re.fullmatch(r"`(\w+\.py): ([\w.]+)`( \(seed only\))?", seed)
    assert m, seed
    file, name, seed_only = m.group(1), m.group(2), bool(m.group(3))
    installed = _installed_text(file)
    if installed is None:
        pytest.skip("vLLM is not installed")
    in_installed = _names_in(name, _seed_defs(installed))
    assert in_installed is not seed_only, (
        f"{file}: {name} is {'in' if in_installed else 'absent from'} vLLM's installed file; "
        f"the '(seed only)' mark must say so"
    )
    seed_text = _seed_text(file)
    if seed_text is not None:
        assert _names_in(name, _seed_defs(seed_text)), f"the seed's {file} has no {name}"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r[0])
def test_each_rows_claim_is_checked_by_its_test(row):
    num, behaviour, _, ours, held, test, _, status = row
    full = status == "full"
    assert full or status.startswith("partial: "), status
    if ours == "—" or held == "—" or test == "—":
        assert not full, f"row {num} is full but names no function, symbol or test"
        return
    ours = _codes(ours)[0]
    assert _locate(ours) is not None, f"the package defines no {ours}"
    symbol, via = _held_to(held)
    if symbol.startswith("seed: "):
        file, name = symbol.removeprefix("seed: ").split(".", 1)
        text = _seed_text(f"{file}.py")
        if text is None:
            pytest.skip("vLLM's seed files are not here")
        assert name in _seed_defs(text), f"the seed's {file}.py has no {name}"
    elif _library_root(symbol.split(".")[0]) is None:
        pytest.skip(f"{symbol.split('.')[0]} is not installed")
    else:
        assert _locate(symbol) is not None, f"the installed library defines no {symbol}"
    path, name = _codes(test)[0].split("::")
    tree = _tree(ROOT / path)
    node = _defined(tree, [name])
    assert isinstance(node, ast.FunctionDef), f"{path} has no test {name}"
    if not full:
        return  # a partial row's names exist; its claim is what is missing
    used = _references(tree, node)
    assert ours.split(".")[-1] in used, f"{name} never uses {ours}"
    target = symbol.removeprefix("seed: ").split(".")[-1]
    if via is None:
        assert target in used, f"{name} never uses {symbol}"
    else:  # the test calls the helper, or calls ours, whose own source calls the helper
        ours_path, ours_node = _locate(ours)
        reached = used | _references(_tree(ours_path), ours_node)
        assert via.split(".")[-1] in reached, f"neither {name} nor {ours} uses {via}"
        via_path, via_node = _locate(via) or (None, None)
        assert via_node is not None, f"the package defines no {via}"
        assert target in _references(_tree(via_path), via_node), f"{via} never uses {symbol}"
    # A quoted message is vLLM's or transformers' own: in the held-to symbol's file, or in
    # the file of the row's seed name (the seed's, and vLLM's installed copy unless the
    # name is seed only), where a message logged inside a call the test makes is written.
    held_source = (
        _seed_text(f"{symbol.removeprefix('seed: ').split('.')[0]}.py")
        if symbol.startswith("seed: ")
        else _locate(symbol)[0].read_text(encoding="utf-8")
    )
    seed_file, seed_only = re.match(r"`(\w+\.py): [\w.]+`( \(seed only\))?", row[2]).groups()
    seed_source = _seed_text(seed_file) if seed_only else _installed_text(seed_file)
    for quote in re.findall(r'"([A-Za-z][^"]{5,})"', behaviour):  # messages, not tokens
        assert quote in (held_source or "") or quote in (seed_source or ""), (
            f"neither {symbol}'s file nor {seed_file} says {quote!r}"
        )


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r[0])
def test_each_rows_lesson_says_it(row):
    taught, status = row[6], row[7]
    if taught == "—":
        assert status != "full", f"row {row[0]} is full but taught nowhere"
        return
    m = re.fullmatch(r'`(\w+): "(.*)"`', taught)
    assert m, taught
    phrase = m.group(2).replace('\\"', '"').replace("\\\\", "\\")
    # the phrase sits inside one cell a learner reads (not across cells)
    cells = _teaching_cells(m.group(1))
    assert any(phrase in c for c in cells), f"no cell of {m.group(1)} says {phrase!r}"


@pytest.mark.parametrize("file", SEED_FILES)
def test_the_table_covers_every_seed_function(file):
    text = _seed_text(file) or _installed_text(file)
    if text is None:
        pytest.skip("neither the seeds nor vLLM are here")
    named = {
        m.group(2)
        for r in ROWS
        if (m := re.match(r"`(\w+\.py): ([\w.]+)`", r[2])) and m.group(1) == file
    }
    named |= {
        m.group(2)
        for r in PLUMBING
        if (m := re.match(r"`(\w+\.py): ([\w.]+)`", r[1])) and m.group(1) == file
    }
    bare = {n for n in named if "." not in n}
    missing = {d for d in _seed_defs(text) if d not in named and d.rsplit(".", 1)[-1] not in bare}
    assert not missing, f"{file}: no row and no plumbing entry for {sorted(missing)}"


def test_the_count_the_doc_states_is_the_tables():
    full = sum(r[7] == "full" for r in ROWS)
    m = re.search(r"(\d+) behaviours: (\d+) full, (\d+) partial", DOC)
    assert m, "the doc states its count"
    assert tuple(map(int, m.groups())) == (len(ROWS), full, len(ROWS) - full)
