"""Strip outputs from notebooks: the committed .ipynb files are the lessons' source.

A teacher edits a notebook in JupyterLab, runs it, and commits. This script makes sure
what lands in git is the lesson, not one run of it: no outputs, no execution counts, no
widget state, no per-run cell metadata. Three ways to run it:

- as a git *clean filter* (``.gitattributes``: ``*.ipynb filter=strip-notebook``), which
  reads a notebook on stdin and writes the stripped one to stdout, so ``git add`` stores
  the stripped text while your working copy keeps its outputs. Set it up once per clone::

      git config filter.strip-notebook.clean ".venv/bin/python scripts/strip_notebooks.py"
      git config filter.strip-notebook.smudge cat
      git config filter.strip-notebook.required true

- on files, in place: ``.venv/bin/python scripts/strip_notebooks.py notebooks/*.ipynb``;
- as a check: ``--check notebooks/*.ipynb`` exits 1 and names each notebook with outputs.

It is the equivalent of ``nbstripout`` (not a dependency here), written with nbformat.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

# Cell metadata that records a run or a view, not the lesson (tags stay: "parameters").
RUN_METADATA = ("execution", "collapsed", "scrolled", "ExecuteTime", "jupyter")
NOTEBOOK_METADATA = ("kernelspec", "language_info")  # the rest is editor/widget state


def strip(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Remove outputs, execution counts and run metadata from ``nb`` (in place)."""
    for cell in nb.cells:
        for key in RUN_METADATA:
            cell.metadata.pop(key, None)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    for key in list(nb.metadata):
        if key not in NOTEBOOK_METADATA:
            del nb.metadata[key]
    if "language_info" in nb.metadata:
        nb.metadata["language_info"] = {"name": nb.metadata["language_info"].get("name", "python")}
    return nb


def strip_text(text: str) -> str:
    """The stripped notebook, as the JSON text git stores (nbformat's layout)."""
    nb = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
    return nbformat.writes(strip(nb)) + "\n"


def has_outputs(text: str) -> bool:
    """True when the notebook would change on stripping."""
    return strip_text(text) != text


def main(argv: list[str]) -> int:
    if not argv:  # git clean filter: stdin → stdout
        sys.stdout.write(strip_text(sys.stdin.read()))
        return 0
    check = argv[0] == "--check"
    dirty = []
    for name in argv[1:] if check else argv:
        path = Path(name)
        text = path.read_text(encoding="utf-8")
        if not has_outputs(text):
            continue
        dirty.append(name)
        if not check:
            path.write_text(strip_text(text), encoding="utf-8")
    if check and dirty:
        print("Outputs or run metadata in: " + ", ".join(dirty), file=sys.stderr)
        print(
            "Fix: .venv/bin/python scripts/strip_notebooks.py " + " ".join(dirty), file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
