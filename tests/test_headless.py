"""Headless runs never stall (issue 26, item 8).

The stall: nbclient (``nbconvert --execute``, ``make html``, ``make site``, the notebook
tests) plays the front end of every ``Output`` widget a cell *captures* into, and writes
each captured output back to the kernel on the shell socket, the socket on which it is
waiting for the cell's reply. The reply can then go unnoticed until the cell timeout runs
out (nbclient issue #312). The explorers now set the widget's ``outputs`` state instead of
capturing (``gemma_explore.course.widgets._draw_into``), so the client has nothing to write back.

What is checked, with one kernel for the whole module: every explorer cell of the course
(found by glob and pattern, so renamed notebooks are still covered) runs 20 times with a
short IOPub timeout that raises, draws its figure into its Output widget every time, and
the client sends the kernel nothing but the cells themselves. A control cell that draws
the old way shows that the check sees the write-back when it happens.
"""

from __future__ import annotations

import ast
import copy
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
EXPLORER = re.compile(r"\bexplore_\w+\(")
ROUNDS = 20
IOPUB_TIMEOUT_S = 2  # short, and raising: any wait on IOPub fails the test
HANG_GUARD_S = 90  # per-cell limit; a hang guard only (nothing here asserts timings)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _source(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _explorer_plan() -> list[tuple[str, list, list]]:
    """(notebook, cells to run first, explorer cells) for each notebook with explorers."""
    plan = []
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        hits = [i for i, c in enumerate(code) if EXPLORER.search(_source(c))]
        if hits:
            plan.append((path.stem, _needed(code, hits), [code[i] for i in hits]))
    return plan


def _names(source: str) -> tuple[set[str], set[str]]:
    """(names a cell reads, names it binds), from its syntax tree (magics dropped)."""
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    tree = ast.parse("\n".join(lines))
    reads, binds = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (binds if isinstance(node.ctx, ast.Store) else reads).add(node.id)
        elif isinstance(node, ast.alias):
            binds.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            binds.add(node.name)
    return reads, binds


def _needed(code: list, hits: list[int]) -> list:
    """The cells before the last explorer that the explorers need, in order: the
    parameters and import cells, and every earlier cell that binds a name they read."""
    names = [_names(_source(c)) for c in code]
    keep = {0, 1}
    wanted: set[str] = set()
    for i in [*hits, 0, 1]:
        wanted |= names[i][0]
    for i in range(hits[-1] - 1, -1, -1):
        if i not in hits and names[i][1] & wanted:
            keep.add(i)
            wanted |= names[i][0]
    return [code[i] for i in sorted(keep) if i not in hits and i < hits[-1]]


PLAN = _explorer_plan()


class _Run:
    """One kernel, and every message the client sent it on the shell channel."""

    def __init__(self, client: NotebookClient) -> None:
        self.client = client
        self.sent: list[str] = []

    def cell(self, cell):
        cell = copy.deepcopy(cell)
        self.client.nb.cells.append(cell)
        return self.client.execute_cell(cell, len(self.client.nb.cells) - 1)


@pytest.fixture(scope="module")
def run(tmp_path_factory, monkeypatch_module):
    monkeypatch_module.setenv("MPLBACKEND", "Agg")
    for key in ("GEMMA_EXPLORE_MODEL", "GEMMA_EXPLORE_MODEL_3N", "GEMMA_EXPLORE_ENGINE"):
        monkeypatch_module.delenv(key, raising=False)
    cwd = tmp_path_factory.mktemp("headless")
    nb = nbformat.v4.new_notebook()
    client = NotebookClient(
        nb,
        timeout=HANG_GUARD_S,
        iopub_timeout=IOPUB_TIMEOUT_S,
        raise_on_iopub_timeout=True,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd)}},
    )
    with client.setup_kernel():
        r = _Run(client)
        channel = client.kc.shell_channel
        send = channel.send

        def recording_send(msg, *args, **kwargs):
            r.sent.append(msg["header"]["msg_type"])
            return send(msg, *args, **kwargs)

        channel.send = recording_send
        yield r


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _figures(client: NotebookClient) -> list[dict]:
    """The outputs of every Output widget, as the client recorded their state."""
    return [
        out
        for state in client.widget_state.values()
        if state.get("_model_name") == "OutputModel"
        for out in state.get("outputs", [])
    ]


def _pngs(client: NotebookClient) -> list[dict]:
    return [o for o in _figures(client) if "image/png" in o.get("data", {})]


def test_the_course_has_explorer_cells():
    assert PLAN, "no explore_* cell found in notebooks/*.ipynb"
    assert {"explore_image", "explore_audio", "explore_prompt"} <= {
        m.group(0)[:-1]
        for _, _, cells in PLAN
        for c in cells
        for m in EXPLORER.finditer(_source(c))
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", [p[0] for p in PLAN])
def test_explorer_cells_run_headless_without_a_write_back(run, name):
    _, before, explorers = next(p for p in PLAN if p[0] == name)
    for cell in before:
        run.cell(cell)
    start = len(run.sent)
    drawn = len(_pngs(run.client))
    for _ in range(ROUNDS):
        for cell in explorers:
            ran = run.cell(cell)  # raises on an IOPub timeout (raise_on_iopub_timeout)
            assert [o for o in ran.outputs if o.output_type == "error"] == []
            views = [o for o in ran.outputs if WIDGET_VIEW in o.get("data", {})]
            assert len(views) == 1, ran.outputs  # the explorer itself is displayed
    # The client sent the kernel the cells and nothing else: no comm_msg written back.
    assert run.sent[start:] == ["execute_request"] * (ROUNDS * len(explorers))
    # ... and every explorer of this notebook, every round, still drew into its Output.
    assert len(_pngs(run.client)) - drawn >= ROUNDS * len(explorers)


def test_capturing_into_an_output_makes_the_client_write_back(run):
    """The control: drawn the old way (``with out: display(...)``), the client plays the
    front end and sends the kernel a comm_msg, so the check above can fail."""
    start = len(run.sent)
    ran = run.cell(
        new_code_cell(
            "import ipywidgets as widgets\nfrom IPython.display import display\n"
            "out = widgets.Output()\ndisplay(out)\nwith out:\n    display('captured')"
        )
    )
    assert [o for o in ran.outputs if o.output_type == "error"] == []
    assert "comm_msg" in run.sent[start:]
