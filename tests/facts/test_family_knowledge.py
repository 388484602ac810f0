"""Family knowledge lives in families.py: no other module names a family in its code.

Code outside ``gemma_explore/facts/families.py`` reads what a family decides from its
``FamilySpec`` (``spec.encoder_free``, ``spec.classes``, ``spec.transcribes``, …)
and takes its default from ``families.DEFAULT_FAMILY``. So a family's name, as a string,
appears nowhere else: not in a comparison (``spec.name == "gemma3n"``), not as a default
(``family: str = "gemma4"``, ``family or "gemma3n"``), not as the key of a lookup table,
not as an argument that picks a family. Docstrings and comments may name families (they
are prose; their examples run as doctests).

The walk reads every module's AST and compares each string constant with the family
names: ``FAMILIES``' keys, each spec's ``name`` and ``display_name``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from gemma_explore.facts.families import FAMILIES

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "gemma_explore"
FACTS = PACKAGE / "facts" / "families.py"  # the one module that may name families

NAMES = frozenset(
    {*FAMILIES, *(s.name for s in FAMILIES.values()), *(s.display_name for s in FAMILIES.values())}
)


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the constants that are docstrings (prose, not code)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _what(node: ast.Constant, parents: dict[int, ast.AST]) -> str:
    """What the name is doing there, in the words of the rule it breaks."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.Tuple | ast.List | ast.Set):
        parent = parents.get(id(parent), parent)
    if isinstance(parent, ast.Compare):
        return "compares a family name (read a field of the spec)"
    if isinstance(parent, ast.arguments | ast.AnnAssign | ast.BoolOp | ast.IfExp):
        return "defaults to a family name (use families.DEFAULT_FAMILY)"
    if isinstance(parent, ast.Dict) and any(k is node for k in parent.keys):
        return "keys a table by family name (make it a field of FamilySpec)"
    if isinstance(parent, ast.match_case | ast.MatchValue):
        return "matches on a family name (read a field of the spec)"
    if isinstance(parent, ast.keyword | ast.Call):
        return "picks a family by its name (pass a spec, or read one)"
    return "names a family (read it from families.py)"


def family_names_in(source: str, filename: str = "<string>") -> list[str]:
    """``"file:line: 'name' <what it does>"`` for each family name in ``source``'s code."""
    tree = ast.parse(source, filename=filename)
    docs = _docstrings(tree)
    parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    hits = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value in NAMES
            and id(node) not in docs
        ):
            hits.append(f"{filename}:{node.lineno}: {node.value!r} {_what(node, parents)}")
    return sorted(hits, key=lambda h: (h.split(":")[0], int(h.split(":")[1])))


def test_no_module_but_families_names_a_family():
    hits = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path != FACTS:
            rel = str(path.relative_to(ROOT))
            hits += family_names_in(path.read_text(), rel)
    assert hits == [], "family knowledge outside families.py:\n" + "\n".join(hits)


def test_the_walk_finds_every_form_and_spares_prose():
    """Planted: each form the rule forbids is found; docstrings and comments are not."""
    planted = '''
"""Module prose may say "gemma3n"."""
TABLE = {"gemma4": 1}                       # a table keyed by name
def f(spec, family="gemma4"):               # a default
    """Function prose: "Gemma 3n"."""
    if spec.name == "gemma3n":              # a comparison
        return family or "gemma4_unified"   # a default in disguise
    if spec.name in ("gemma4", "x"):        # a membership test
        return get(family="Gemma 4")        # a call that picks a family
    match spec.name:
        case "gemma3n":
            return 1
class C:
    family: str = "gemma4"                  # a field default
    label = "a gemma3n checkpoint"          # a longer string only mentions one: prose
'''
    hits = family_names_in(planted, "planted.py")
    lines = [int(h.split(":")[1]) for h in hits]
    assert lines == [3, 4, 6, 7, 8, 9, 11, 14]
    assert "keys a table" in hits[0] and "defaults to" in hits[1]
    assert "compares" in hits[2] and "defaults to" in hits[3] and "compares" in hits[4]
    assert "picks a family" in hits[5] and "matches" in hits[6] and "defaults to" in hits[7]
