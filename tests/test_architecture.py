"""The package's imports flow one way: each module imports only from layers below it.

The layer order lives once, in pyproject.toml's import-linter contract. This test reads
it and walks every module's AST, imports inside functions included (``if TYPE_CHECKING``
blocks excluded: type hints create no runtime edge), and fails on:

* an import of a higher layer, or of an independent sibling (``a | b``);
* an import of the root package ``gemma_explore`` from inside it;
* a cycle between modules.

It also plants a back edge and a cycle to show the checks fail when they should, and
runs import-linter itself on a copy of the package with a function-level back edge.

docs/DESIGN.md draws the same layers in its ```layers block: the test holds the two
lists equal (order and siblings), and every module of the package in some layer.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gemma_explore"


def _layers() -> list[list[str]]:
    """Layers from top to bottom, each a list of sibling components."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = config["contracts"]
    return [[c.strip() for c in layer.split("|")] for layer in contract["layers"]]


def _design_layers(text: str | None = None) -> list[list[str]]:
    """The layers docs/DESIGN.md draws: the lines of its ```layers block, each a name, two
    or more spaces, then the layer's modules joined by "|"."""
    import re

    text = (ROOT / "docs" / "DESIGN.md").read_text() if text is None else text
    block = re.search(r"^```layers\n(.*?)^```", text, re.M | re.S)
    assert block, "docs/DESIGN.md has no ```layers block"
    layers = []
    for line in block.group(1).splitlines():
        if line.strip():
            name_and_modules = re.split(r"\s{2,}", line.strip(), maxsplit=1)
            assert len(name_and_modules) == 2, f"DESIGN.md layer line without modules: {line!r}"
            layers.append([c.strip() for c in name_and_modules[1].split("|")])
    return layers


def _components() -> set[str]:
    """The package's top-level modules and subpackages (what a layer lists)."""
    return {
        p.stem if p.is_file() else p.name
        for p in PACKAGE.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()
    }


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, module: str, is_package: bool, known: set[str]):
    """(target module, line) for every runtime import of a package module."""

    def visit(node: ast.AST):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.orelse:
                    yield from visit(stmt)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name, child.lineno
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = module.split(".") if is_package else module.split(".")[:-1]
                    base = base[: len(base) - (child.level - 1)]
                    prefix = ".".join(base + ([child.module] if child.module else []))
                else:
                    prefix = child.module or ""
                for alias in child.names:
                    candidate = f"{prefix}.{alias.name}"
                    yield (candidate if candidate in known else prefix), child.lineno
            yield from visit(child)

    for target, line in visit(tree):
        if target == "gemma_explore" or target.startswith("gemma_explore."):
            yield target, line


def import_graph() -> dict[str, list[tuple[str, int]]]:
    """Module → [(imported package module, line)] for every module of the package."""
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    known = set(files)
    graph = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        graph[name] = list(_imports(tree, name, path.name == "__init__.py", known))
    return graph


def _component(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def layer_violations(graph: dict[str, list[tuple[str, int]]], layers: list[list[str]]):
    rank = {c: i for i, layer in enumerate(layers) for c in layer}  # 0 = top
    siblings = {c: set(layer) - {c} for layer in layers for c in layer}
    out = []
    for source, targets in graph.items():
        src = _component(source)
        if src is None:  # the root __init__ is the public face: it may import anything
            continue
        for target, line in targets:
            dst = _component(target)
            if dst is None:
                out.append(f"{source}:{line} imports the root package gemma_explore")
            elif dst == src:
                continue
            elif src not in rank or dst not in rank:
                out.append(f"{source}:{line} → {target}: add {src if src not in rank else dst!r} "
                           "to the layers in pyproject.toml")  # fmt: skip
            elif dst in siblings[src]:
                out.append(f"{source}:{line} imports its independent sibling {target}")
            elif rank[dst] < rank[src]:
                out.append(f"{source}:{line} imports {target}, a higher layer")
    return out


def cycles(graph: dict[str, list[tuple[str, int]]]) -> list[list[str]]:
    """Strongly connected components with more than one module (or a self-import)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]
    edges = {m: {t for t, _ in ts if t in graph} for m, ts in graph.items()}

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges[v]:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return found


def test_every_import_flows_downward():
    assert layer_violations(import_graph(), _layers()) == []


def layer_differences(design: list[list[str]], enforced: list[list[str]]) -> list[str]:
    """How DESIGN.md's layers differ from pyproject's (a layer's modules in any order)."""
    d = [" | ".join(sorted(x)) for x in design]
    e = [" | ".join(sorted(x)) for x in enforced]
    out = [f"only in DESIGN.md: {x}" for x in d if x not in e]
    out += [f"only in pyproject.toml: {x}" for x in e if x not in d]
    if not out and d != e:
        out.append("the same layers in another order: " + " > ".join(d))
    return out


def test_design_md_draws_the_layers_pyproject_enforces():
    """DESIGN.md's picture is the contract: the same layers, in the same order, with the
    same siblings."""
    assert layer_differences(_design_layers(), _layers()) == []


def test_the_layer_comparison_fails_on_a_drifted_picture():
    enforced = _layers()
    lines = (f"x{i}  {' | '.join(layer)}" for i, layer in enumerate(enforced))
    text = "```layers\n" + "\n".join(lines)
    assert _design_layers(text + "\n```\n") == enforced  # the parser reads what it wrote
    swapped = [enforced[1], enforced[0], *enforced[2:]]
    assert layer_differences(swapped, enforced)[0].startswith("the same layers in another order")
    missing = [[c for c in layer if c != "flops"] for layer in enforced]
    assert any("flops" in d for d in layer_differences(missing, enforced))


def test_every_module_is_in_a_layer():
    """A module nobody imports would slip past the import walk: list it, or it is homeless."""
    placed = {c for layer in _layers() for c in layer}
    assert sorted(_components() - placed) == [], "add these to pyproject.toml and DESIGN.md"
    assert sorted(placed - _components()) == [], "these layers name modules that do not exist"


def test_no_cycles_even_through_function_level_imports():
    assert cycles(import_graph()) == []


def test_the_checks_fail_on_a_planted_back_edge_and_cycle():
    graph = import_graph()
    planted = {**graph, "gemma_explore.facts.families": [("tests.app.handlers", 1)]}
    problems = layer_violations(planted, _layers())
    assert problems == [
        "gemma_explore.facts.families:1 imports tests.app.handlers, a higher layer"
    ]
    assert any("gemma_explore.facts.families" in c for c in cycles(planted))
    rooted = {**graph, "gemma_explore.plans": [("gemma_explore", 3)]}
    assert "imports the root package" in layer_violations(rooted, _layers())[0]


def test_function_level_imports_are_seen():
    """The old knot was made of imports inside functions: the walk must see them."""
    tree = ast.parse("def f():\n    from .app import handlers\n")
    known = {"gemma_explore.app", "tests.app.handlers"}
    assert list(_imports(tree, "gemma_explore.plans", False, known)) == [
        ("tests.app.handlers", 2)
    ]


@pytest.mark.skipif(
    shutil.which("lint-imports") is None
    and not (Path(sys.executable).parent / "lint-imports").exists(),
    reason="import-linter not installed",
)
def test_import_linter_fails_on_a_function_level_back_edge(tmp_path):
    """import-linter's own contract, on a copy of the package with one planted import."""
    copy = tmp_path / "gemma_explore"
    shutil.copytree(
        PACKAGE, copy, ignore=shutil.ignore_patterns("*.jpg", "*.wav", "*.mp4", "__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    families = copy / "families.py"
    families.write_text(
        families.read_text() + "\n\ndef _planted():\n    from .app import handlers  # noqa\n"
    )
    exe = Path(sys.executable).parent / "lint-imports"
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    run = subprocess.run(
        [str(exe) if exe.exists() else "lint-imports", "--no-cache"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode != 0, run.stdout
    assert "gemma_explore.facts.families -> tests.app.handlers" in run.stdout


# ------------------------------------------------------------- declared dependencies


def _declared() -> set[str]:
    import re

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        specs += extra
    return {re.split(r"[<>=!~;\[ ]", s, maxsplit=1)[0].lower().replace("_", "-") for s in specs}


def _third_party_imports() -> dict[str, str]:
    """Top-level third-party module → the first file that imports it."""
    found: dict[str, str] = {}
    stdlib = set(sys.stdlib_module_names)
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top not in stdlib and top != "gemma_explore" and top != "__future__":
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_imported_package_is_declared():
    """cv2 once arrived only with the vllm extra (Linux-only), httpx with nothing."""
    from importlib.metadata import packages_distributions

    dists = packages_distributions()
    declared = _declared()
    missing = []
    for module, where in _third_party_imports().items():
        names = {d.lower().replace("_", "-") for d in dists.get(module, [module])}
        if not names & declared:
            missing.append(f"{module} (imported in {where}; distributions {sorted(names)})")
    assert missing == [], "declare these in pyproject.toml"


def test_no_function_is_longer_than_80_lines():
    """Issue 24's rule: a function does one job in named passes a reader can follow. A
    function over 80 lines (docstring included) has to be split before it lands."""
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > 80:
                    long.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name} "
                                f"({lines} lines)")  # fmt: skip
    assert long == [], "split these into named passes:\n" + "\n".join(long)
