"""The house rules import-linter cannot check (the layers themselves live once, in
pyproject.toml, and `lint-imports` in `make test` holds them).

* No cycle between modules, through imports inside functions and ``if TYPE_CHECKING:``
  blocks too; no module imports the root package ``gemma_explore``.
* The folders are the architecture: the package root holds at most 8 modules beside its
  folders, no module repeats its folder's name as a prefix (``bill/bill_core.py``), and
  none takes a standard-library module's name.
* No compatibility layer: no module of the package raises a DeprecationWarning.
* Every imported third-party package is declared; no function is over 80 lines.

It also plants a function-level back edge and a type-only back edge in a copy of the
package and runs import-linter on it, to show the contract sees both.
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


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.AST, module: str, is_package: bool, known: set[str]):
    """(target module, line) for every import of a package module: inside functions and
    ``if TYPE_CHECKING:`` blocks too (a type hint that points up is a cycle all the same)."""

    def visit(node: ast.AST):
        for child in ast.iter_child_nodes(node):
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


def test_no_cycles_through_any_import():
    assert cycles(import_graph()) == []


def test_no_module_imports_the_root_package():
    """The root is the lesson's namespace; it imports the folders, never the reverse."""
    rooted = [
        f"{source}:{line}"
        for source, targets in import_graph().items()
        if source != "gemma_explore"
        for target, line in targets
        if target == "gemma_explore"
    ]
    assert rooted == []


def test_the_walk_sees_function_level_and_type_only_imports():
    """The old knots were an import inside a function and a type hint pointing up."""
    tree = ast.parse(
        "def f():\n    from gemma_explore.app import ui\nif TYPE_CHECKING:\n    from gemma_explore.models import bundle\n"
    )
    known = {"gemma_explore.app.ui", "gemma_explore.models.bundle"}
    assert list(_imports(tree, "gemma_explore.plans.image", False, known)) == [
        ("gemma_explore.app.ui", 2),
        ("gemma_explore.models.bundle", 4),
    ]
    planted = {**import_graph(), "gemma_explore.facts.families": [("gemma_explore.app.ui", 1)]}
    assert any("gemma_explore.facts.families" in c for c in cycles(planted))


@pytest.mark.skipif(
    shutil.which("lint-imports") is None
    and not (Path(sys.executable).parent / "lint-imports").exists(),
    reason="import-linter not installed",
)
def test_import_linter_fails_on_a_function_level_and_a_type_only_back_edge(tmp_path):
    """pyproject's contract, on a copy of the package with two planted imports."""
    copy = tmp_path / "gemma_explore"
    shutil.copytree(
        PACKAGE, copy, ignore=shutil.ignore_patterns("*.jpg", "*.wav", "*.mp4", "__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    families = copy / "facts" / "families.py"
    families.write_text(
        families.read_text() + "\n\ndef _planted():\n    from gemma_explore.app import ui  # noqa\n"
    )
    caches = copy / "serving" / "caches.py"
    caches.write_text(
        caches.read_text()
        + "\n\ndef _planted():\n    from gemma_explore.serving import plan  # noqa\n"
    )
    sizes = copy / "sizes.py"
    sizes.write_text(
        sizes.read_text() + "\nfrom typing import TYPE_CHECKING  # noqa\n"
        "if TYPE_CHECKING:\n    from gemma_explore.plans.image import ImagePlan  # noqa\n"
    )
    exe = Path(sys.executable).parent / "lint-imports"
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    run = subprocess.run(
        [str(exe) if exe.exists() else "lint-imports", "--no-cache"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode != 0, run.stdout
    assert "gemma_explore.facts.families -> gemma_explore.app.ui" in run.stdout
    assert "gemma_explore.sizes -> gemma_explore.plans.image" in run.stdout
    assert "gemma_explore.serving.caches -> gemma_explore.serving.plan" in run.stdout


def _serving_layers() -> list[set[str]]:
    """The serving contract's layers, top first, as sets of module names."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (serving,) = [
        c for c in contracts["contracts"] if c.get("containers") == ["gemma_explore.serving"]
    ]
    return [
        {f"gemma_explore.serving.{m.strip()}" for m in layer.split("|")}
        for layer in serving["layers"]
    ]


def test_the_serving_layers_hold_every_module_and_every_import():
    """Read with this file's own walk (imports in functions and type-only ones too): each
    of serving/'s modules sits in one layer, and each import inside serving/ points to a
    lower layer."""
    layers = _serving_layers()
    graph = import_graph()
    modules = {m for m in graph if m.startswith("gemma_explore.serving.")}
    placed = [m for layer in layers for m in layer]
    assert sorted(placed) == sorted(modules) and len(modules) >= 15
    rank = {m: i for i, layer in enumerate(layers) for m in layer}
    upward = [
        f"{source} -> {target} (line {line})"
        for source in modules
        for target, line in graph[source]
        if target in rank and rank[target] <= rank[source] and target != source
    ]
    assert upward == []
    # the layers are as deep as the imports make them: each layer imports the one below
    assert all(
        any(t in layers[i + 1] for m in layers[i] for t, _ in graph[m])
        for i in range(len(layers) - 1)
    )


# ------------------------------------------------------------------ the folders


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_root_holds_at_most_8_modules_beside_its_folders():
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root) <= 8, root


def test_no_module_repeats_its_folders_name_as_a_prefix():
    prefixed = [
        str(p.relative_to(PACKAGE))
        for p in _modules()
        if p.parent != PACKAGE and p.stem.startswith(p.parent.name.rstrip("s") + "_")
    ]
    assert prefixed == []


def test_no_module_takes_a_standard_library_name():
    """``gemma_explore/inspect.py`` once hid the standard library's inspect from any script
    run beside it."""
    shadows = [
        str(p.relative_to(PACKAGE))
        for p in _modules()
        if p.stem in sys.stdlib_module_names or p.parent.name in sys.stdlib_module_names
    ]
    assert shadows == []


DEPRECATIONS = {"DeprecationWarning", "PendingDeprecationWarning", "FutureWarning"}


def _deprecations(tree: ast.AST) -> list[int]:
    """Lines that warn or raise a deprecation: ``warnings.warn(..., DeprecationWarning)``
    (or ``category=``) and ``raise DeprecationWarning(...)``. Filtering a library's own
    notice out of a lesson (``filterwarnings``) is neither."""
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "warn"
        ):
            given = [*node.args, *(k.value for k in node.keywords if k.arg == "category")]
            if any(isinstance(a, ast.Name) and a.id in DEPRECATIONS for a in given):
                lines.append(node.lineno)
        elif isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id in DEPRECATIONS:
                lines.append(node.lineno)
    return sorted(lines)


def test_no_module_raises_a_deprecation_warning():
    """No compatibility layer before 1.0: a rename migrates every caller instead."""
    found = [
        f"{p.relative_to(PACKAGE)}:{line}"
        for p in _modules()
        for line in _deprecations(ast.parse(p.read_text(encoding="utf-8")))
    ]
    assert found == []


def test_the_deprecation_walk_sees_a_warning_and_a_raise():
    planted = ast.parse(
        "import warnings\n"
        "def old():\n    warnings.warn('renamed', DeprecationWarning, stacklevel=2)\n"
        "def older():\n    raise FutureWarning('gone')\n"
        "warnings.filterwarnings('ignore', category=FutureWarning)\n"
    )
    assert _deprecations(planted) == [3, 5]


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
                    long.append(
                        f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name} "
                        f"({lines} lines)"
                    )
    assert long == [], "split these into named passes:\n" + "\n".join(long)
