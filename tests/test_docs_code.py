"""Every Python code block in README.md and docs/ runs, on the tiny models, or says why not.

A page's ```python blocks run in order in one namespace (a later block may use what an
earlier one made), each from a fresh working folder holding ``shards/`` (the bundled
samples: a folder the bill reads) and ``conformance/`` (the repository's golden sets), so
a path a page writes lands there and nowhere in the checkout. A block of ``>>>`` lines runs
as a doctest: its printed values are checked too.

A block that cannot run here says so where a reader sees it: the last line of prose above
its fence reads ``*Not run by the tests: <the reason>.*`` (a running server, a download, a
released checkpoint's weights, names the reader fills in). Every other block runs, so a
call that raises (``bill(..., engine="ray")``: ``TypeError``) fails this test with the
page and the line.
"""

from __future__ import annotations

import doctest
import os
import re
import shutil
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(
    [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")], key=lambda p: p.relative_to(ROOT)
)
NOT_RUN = re.compile(r"^[*_]*Not run by the tests: (?P<reason>.*\S)\s*$")
_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced Python block: where it starts (the fence's line, from 1), its code, and
    the reason it is not run (``None``: it runs)."""

    line: int
    code: str
    not_run: str | None


def python_blocks(text: str) -> list[Block]:
    """The ```python (or ```py) blocks of a markdown page, in order."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m["fence"], (m["info"].strip().split() or [""])[0].lower()
        end = next(
            (j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(fence)),
            len(lines),
        )
        if lang in ("python", "py", "pycon"):
            indent = len(m["indent"])
            code = "\n".join(line[indent:] for line in lines[i + 1 : end])
            above = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            said = NOT_RUN.match(above)
            reason = said["reason"].strip("*_ ").rstrip(".") if said else None
            blocks.append(Block(line=i + 1, code=code + "\n", not_run=reason))
        i = end + 1
    return blocks


def run_page(name: str, text: str, namespace: dict) -> list[str]:
    """Run ``text``'s blocks in ``namespace``; the failures, each headed ``name:line``."""
    failures = []
    for block in python_blocks(text):
        if block.not_run is not None:
            continue
        where = f"{name}:{block.line}"
        if block.code.lstrip().startswith(">>>"):
            test = doctest.DocTestParser().get_doctest(
                block.code, namespace, where, name, block.line
            )
            out: list[str] = []
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
            result = runner.run(test, out=out.append, clear_globs=False)
            namespace.update(test.globs)  # a doctest runs on a copy: later blocks see its names
            if result.failed:
                failures.append(f"{where}:\n" + "".join(out))
            continue
        try:
            exec(compile(block.code, where, "exec"), namespace)
        except BaseException:  # noqa: B036 - SystemExit from a CLI call is a failure too
            failures.append(f"{where}:\n{traceback.format_exc(limit=-4)}")
    return failures


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    shards = tmp_path / "shards"
    shards.mkdir()
    for sample in (ROOT / "gemma_explore" / "samples").iterdir():
        if sample.suffix in (".jpg", ".wav"):
            shutil.copy(sample, shards / sample.name)
    os.symlink(ROOT / "conformance", tmp_path / "conformance")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return tmp_path


def _pages_with_code() -> list[str]:
    return [str(p.relative_to(ROOT)) for p in PAGES if python_blocks(p.read_text(encoding="utf-8"))]


@pytest.mark.slow
@pytest.mark.parametrize("name", _pages_with_code())
def test_every_python_block_runs(name, workdir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    text = (ROOT / name).read_text(encoding="utf-8")
    try:
        failures = run_page(name, text, {"__name__": "__main__"})
    finally:
        plt.close("all")
    assert not failures, "\n".join(failures)


def test_a_block_not_run_says_why_where_a_reader_sees_it():
    for page in PAGES:
        for block in python_blocks(page.read_text(encoding="utf-8")):
            if block.not_run is not None:
                assert len(block.not_run) > 10, f"{page.name}:{block.line}: say why"


def test_the_runner_finds_blocks_and_fails_on_a_call_that_raises(tmp_path, monkeypatch):
    """The runner itself: the marker line, shared names across blocks, doctest output, and
    the shipped mistake (``bill`` has no ``engine``) reported with its page and line."""
    monkeypatch.chdir(tmp_path)
    page = (
        "Some prose.\n\n```python\nx = 2\n```\n\n"
        "*Not run by the tests: needs a GPU.*\n\n```python\nraise SystemExit\n```\n\n"
        "```python\n>>> x + 1\n3\n```\n\n"
        "```python\nfrom gemma_explore import bill\n\n"
        'bill("./shards", budgets=[280], engine="ray")\n```\n'
    )
    blocks = python_blocks(page)
    assert [b.line for b in blocks] == [3, 9, 13, 18]
    assert [b.not_run for b in blocks] == [None, "needs a GPU", None, None]
    (failure,) = run_page("page.md", page, {})
    assert failure.startswith("page.md:18:") and "TypeError" in failure and "engine" in failure
    wrong = page.replace("3\n```", "4\n```")
    assert [f.split(":")[1] for f in run_page("page.md", wrong, {})] == ["13", "18"]
    after = page.replace(
        "```python\nfrom gemma_explore",
        "```python\n>>> y = x\n```\n\n```python\ny\nfrom gemma_explore",
    )
    assert len(run_page("page.md", after, {})) == 1  # a doctest's names reach later blocks


def test_every_page_with_code_is_seen():
    """The pages that hold Python today (a page that loses its blocks drops out here)."""
    names = _pages_with_code()
    assert "README.md" in names and "docs/cli.md" in names and "docs/serving.md" in names
