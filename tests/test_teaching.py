"""The teacher's kit (docs/teaching): the cheat sheet's numbers are the package's, every
notebook has its instructor notes, and the slides are 10–15 and draw from cells that exist."""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path

import pytest

import gemma_explore as ge
from gemma_explore.facts.families import AUDIO_SAMPLING_RATE, GEMMA3N, GEMMA4, GEMMA4_UNIFIED
from gemma_explore.samples import sample_photo, sample_speech

ROOT = Path(__file__).resolve().parents[1]
TEACHING = ROOT / "docs" / "teaching"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SPEC = importlib.util.spec_from_file_location("build_site", ROOT / "scripts" / "build_site.py")
build_site = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(build_site)


def _rows() -> list[tuple[str, str]]:
    """(number as written, package expression) for each row of the cheat sheet's table."""
    rows = []
    for line in (TEACHING / "cheat_sheet.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.match(r"^\d", cells[0]):
            rows.append((cells[0], cells[3].strip("`")))
    return rows


ROWS = _rows()
NAMESPACE = {
    "ge": ge,
    "GEMMA3N": GEMMA3N,
    "GEMMA4": GEMMA4,
    "GEMMA4_UNIFIED": GEMMA4_UNIFIED,
    "AUDIO_SAMPLING_RATE": AUDIO_SAMPLING_RATE,
    "sample_photo": functools.cache(sample_photo),
    "sample_speech": functools.cache(sample_speech),
}


def _ints(value) -> list[int]:
    if isinstance(value, tuple | list):
        return [int(v) for v in value]
    return [int(value)]


def test_the_cheat_sheet_has_the_issues_numbers():
    written = {n for n, _ in ROWS}
    assert {"256", "188", "70–1120", "9×", "750", "2496", "6912"} <= written, written


@pytest.mark.parametrize("number, expression", ROWS, ids=[n for n, _ in ROWS])
def test_each_cheat_sheet_number_is_the_packages(number, expression):
    """A single number must equal the expression; a range "a–b" must be the expression's
    smallest and largest value."""
    written = [int(x) for x in re.findall(r"\d+", number)]
    value = _ints(eval(expression, dict(NAMESPACE)))  # noqa: S307 - our own document
    if "–" in number:
        assert written == [min(value), max(value)], (number, value)
    else:
        assert written == value, (number, expression, value)


def test_every_notebook_has_instructor_notes():
    """By number, so a renamed notebook keeps its notes: goal, time, stuck, say."""
    text = (TEACHING / "instructor_notes.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^## (\d\d) [^\n]*\n(.*?)(?=^## |\Z)", text, re.M | re.S))
    for path in NOTEBOOKS:
        body = sections.get(path.stem[:2])
        assert body, f"no '## {path.stem[:2]} …' section for {path.name}"
        for field in ("**Goal:**", "**Time:**", "**Stuck:**", "**Say:**"):
            assert field in body, (path.stem, field)
    assert "8sIyCstxiiiiiIiI" in text  # the script for random-weight noise


def test_the_slides_are_10_to_15_and_their_figures_exist_in_the_notebooks():
    import nbformat

    slides = build_site.split_slides((TEACHING / "slides.md").read_text(encoding="utf-8"))
    assert 10 <= len(slides) <= 15, len(slides)
    refs = [m for body, _ in slides for m in build_site.FIGURE_REF.finditer(body)]
    assert len(refs) >= 8
    cells = {
        p.stem: [
            build_site._source(c)
            for c in nbformat.read(p, as_version=4).cells
            if c.cell_type == "code"
        ]
        for p in NOTEBOOKS
    }
    for ref in refs:
        where, code = ref.group(2), ref.group(3).strip()
        hits = [n for n, src in cells.items() if where in n and any(code in s for s in src)]
        assert hits, f"slide figure {ref.group(0)}: no notebook named *{where}* has {code!r}"


def test_the_kit_covers_the_room():
    text = (TEACHING / "README.md").read_text(encoding="utf-8")
    for must in (
        "gemma-explore doctor",
        "pip download",
        "--no-index --find-links wheelhouse",
        "A room without GPUs",
        "When widgets don't render",
        "make site",
    ):
        assert must in text, must
