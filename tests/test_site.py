"""The offline course site (`make site` → scripts/build_site.py) in a real browser.

Debian's Chromium driven by Playwright (never a downloaded browser), with the network
cut: every page reachable from index.html is opened over file://, every local link must
lead to a file (and its #anchor to an element), every image must load, and no page may
try to fetch anything from the network. The site is built once per session; to keep it
short, only the quickstart notebook is executed (the others are exported as written),
which still covers an explorer's still image, the gallery and the slides.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM) and not os.environ.get("CI"),
        reason="Debian's chromium is not installed (make test installs it)",
    ),
]
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
LOCAL = ("file:", "data:", "blob:", "about:")


def _build_site():
    spec = importlib.util.spec_from_file_location("build_site", ROOT / "scripts" / "build_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    _build_site().main(["--out", str(out), "--execute", "quickstart"])
    return out


@pytest.fixture(scope="module")
def context():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        ctx = browser.new_context(offline=True)
        ctx.remote = []  # every request that left file:// (aborted)

        def route(r):
            if r.request.url.startswith(LOCAL):
                r.continue_()
            else:
                ctx.remote.append(r.request.url)
                r.abort()

        ctx.route("**/*", route)
        yield ctx
        browser.close()


_PAGE_FACTS = """() => ({
  links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  images: [...document.images].map(i => ({src: i.src.slice(-80), ok: i.complete && i.naturalWidth > 0})),
  ids: [...document.querySelectorAll('[id]')].map(e => e.id),
})"""


def _crawl(context, start: Path) -> dict[Path, dict]:
    """Every page reachable from ``start`` through local links → its links, images, ids."""
    page = context.new_page()
    facts: dict[Path, dict] = {}
    queue = [start.resolve()]
    while queue:
        path = queue.pop()
        if path in facts:
            continue
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        facts[path] = page.evaluate(_PAGE_FACTS)
        for link in facts[path]["links"]:
            url = urlparse(link)
            target = Path(unquote(url.path))
            if url.scheme == "file" and target.suffix == ".html" and target.exists():
                queue.append(target.resolve())
    page.close()
    return facts


def _problems(facts: dict[Path, dict]) -> tuple[list, list]:
    """(broken local links or anchors, images that did not load) over crawled pages."""
    broken, missing = [], []
    for path, f in facts.items():
        missing += [(path.name, i["src"]) for i in f["images"] if not i["ok"]]
        for link in f["links"]:
            url = urlparse(link)
            if url.scheme != "file":
                continue  # external (offline: not followed)
            target = Path(unquote(url.path))
            if not target.exists():
                broken.append((path.name, link))
            elif url.fragment and target.suffix == ".html":
                if url.fragment not in facts.get(target.resolve(), {}).get("ids", []):
                    broken.append((path.name, link))
    return broken, missing


def test_the_crawl_sees_a_broken_link_an_unknown_anchor_and_a_missing_image(tmp_path, context):
    """The control: the checks below can fail."""
    (tmp_path / "b.html").write_text('<p id="here">b</p>')
    (tmp_path / "a.html").write_text(
        '<a href="b.html#here">ok</a> <a href="b.html#gone">anchor</a> '
        '<a href="nowhere.html">link</a> <img src="missing.png">'
    )
    broken, missing = _problems(_crawl(context, tmp_path / "a.html"))
    assert sorted(link.rsplit("/", 1)[-1] for _, link in broken) == ["b.html#gone", "nowhere.html"]
    assert [src.rsplit("/", 1)[-1] for _, src in missing] == ["missing.png"]


def test_every_link_and_image_resolves_offline(site, context):
    facts = _crawl(context, site / "index.html")
    pages = {p.relative_to(site.resolve()).as_posix() for p in facts}
    # Reached: every notebook page, the gallery, the slides, every teaching page.
    assert {f"notebooks/{p.stem}.html" for p in (ROOT / "notebooks").glob("*.ipynb")} <= pages
    assert {"gallery/index.html", "slides/index.html", "teaching/index.html"} <= pages
    assert {f"teaching/{p.stem}.html" for p in (ROOT / "docs/teaching").glob("*.md")} - {
        "teaching/README.html",
        "teaching/slides.html",
    } <= pages
    broken, missing = _problems(facts)
    assert broken == [], broken
    assert missing == [], missing
    assert context.remote == [], context.remote  # nothing tried the network
    images = sum(len(f["images"]) for f in facts.values())
    assert images > 20  # the gallery, the executed quickstart, the slides


def test_the_quickstart_page_shows_its_explorer_as_a_still(site, context):
    page = context.new_page()
    page.goto((site / "notebooks" / "00_quickstart.html").as_uri())
    text = page.inner_text("body")
    assert "An explorer (a live widget in JupyterLab)" in text
    assert "VBox(" not in text
    page.close()


def test_the_slides_move_with_the_keys_and_draw_their_figures(site, context):
    page = context.new_page()
    page.goto((site / "slides" / "index.html").as_uri())
    count = page.locator(".slide").count()
    assert 10 <= count <= 20
    assert page.locator(".slide.current").get_attribute("id") == "s1"
    page.keyboard.press("ArrowRight")
    assert page.locator(".slide.current").get_attribute("id") == "s2"
    # The first slide with a figure (the quickstart's layout, from this build's executed
    # copy), reached with the arrow key.
    first = page.locator(".slide:has(img)").first.get_attribute("id")
    for _ in range(count):
        if page.locator(".slide.current").get_attribute("id") == first:
            break
        page.keyboard.press("ArrowRight")
    assert page.locator(".slide.current").get_attribute("id") == first
    assert "show_layout" in page.locator(".slide.current img").get_attribute("src")
    page.keyboard.press("n")
    assert page.locator(".slide.current .notes").is_visible()
    page.keyboard.press("End")
    assert page.locator(".slide.current").get_attribute("id") == f"s{count}"
    page.close()


def test_the_site_says_its_figures_are_in_the_projector_style(site):
    """``make site`` draws the notebooks (and so the slides) and the gallery in the
    projector style by default (tests/viz/test_projector.py checks the figures at 14 pt)."""
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "the projector style (text at least 14 pt" in index
