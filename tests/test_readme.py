"""The README is the front door: short, offline, and every link lands on a file in the repo.

The same holds for the docs pages the README's map points at: no link leaves the project
(no http, no ``..`` above the checkout, nothing in the shared folder), and every target exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_LINES = 180

# The pages that took over the README's sections (plus the contributor guide).
PAGES = [
    "README.md",
    "CONTRIBUTING.md",
    "docs/install.md",
    "docs/vllm_cpu.md",
    "docs/parity.md",
    "docs/serving.md",
    "docs/released.md",
    "docs/course.md",
    "docs/demo.md",
    "docs/cli.md",
    "docs/folders.md",
]

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_INLINE_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
_HTML_LINK = re.compile(r"<(?:a|img|source)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']*)[\"']", re.I)
_AUTOLINK = re.compile(r"<([a-z][a-z0-9+.-]*:[^>\s]*)>", re.I)


def _prose(text: str) -> str:
    """The text with code blocks and inline code removed: commands are not links."""
    return _INLINE_CODE.sub("", _FENCE.sub("", text))


def links(text: str) -> list[str]:
    """Every link and image target in a markdown page (inline, reference, HTML, autolink)."""
    prose = _prose(text)
    found = []
    for pattern in (_INLINE_LINK, _REF_LINK, _HTML_LINK, _AUTOLINK):
        found += pattern.findall(prose)
    return found


def problem(page: Path, target: str) -> str | None:
    """Why ``target`` (a link on ``page``) is not a relative path to a file in the repo."""
    if not target:
        return "empty link"
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
        return "points outside the project (a URL)"
    if target.startswith("/"):
        return "absolute path"
    path = target.split("#", 1)[0].split("?", 1)[0]
    if not path:
        return None  # an anchor on the same page
    if "shared" in Path(path).parts:
        return "points into the shared folder, which is not part of the project"
    resolved = (page.parent / path).resolve()
    if not resolved.is_relative_to(ROOT):
        return "escapes the repository"
    if not resolved.exists():
        return "no such file in the repository"
    return None


def test_the_link_finder_sees_every_kind_of_link_and_skips_code():
    text = (
        "[a](docs/a.md) ![b](docs/images/b.png) <https://example.org> "
        '<img src="c.png"> `[not](a-link.md)`\n\n[ref]: ../shared/x.json\n'
        "```\n[also not](in-a-fence.md)\n```\n"
    )
    assert sorted(links(text)) == sorted(
        ["docs/a.md", "docs/images/b.png", "https://example.org", "c.png", "../shared/x.json"]
    )
    assert problem(README, "https://example.org") and problem(README, "../shared/x.json")
    assert problem(README, "../outside.md") and problem(README, "docs/no-such-page.md")
    assert problem(README, "docs/install.md#an-anchor") is None


def test_the_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; at most {MAX_LINES}"


def test_the_readme_gives_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert "make demo" in text and "make test" in text


def test_the_readme_has_a_picture_and_no_address_outside_the_project():
    text = README.read_text(encoding="utf-8")
    assert "](docs/images/patch_grid_gemma4_budgets.jpg)" in text
    assert "://" not in text, "the README names an address outside the project"
    assert "../shared" not in text


@pytest.mark.parametrize("name", PAGES)
def test_every_link_stays_in_the_project_and_exists(name):
    page = ROOT / name
    assert page.exists(), f"{name} is missing"
    text = page.read_text(encoding="utf-8")
    bad = [(t, why) for t in links(text) if (why := problem(page, t))]
    assert bad == [], f"{name}: {bad}"
    assert "../shared" not in text, f"{name} points at ../shared/, which is not part of the project"


def test_every_docs_page_the_readme_maps_exists():
    text = _prose(README.read_text(encoding="utf-8"))
    mapped = {t for t in links(text) if t.startswith("docs/") and t.endswith(".md")}
    assert mapped, "the README maps no docs page"
    assert all((ROOT / t).exists() for t in mapped)
