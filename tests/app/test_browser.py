"""The demo in a real browser: Debian's Chromium driven by Playwright, headless.

`make test` installs Chromium with apt; Playwright never downloads a browser. Every tab
re-renders live (no buttons), so these tests only change inputs and wait for outputs.
Screenshots at 1280×800 and at phone width land in artifacts/ (kept by CI).
"""

from __future__ import annotations

import os
import shutil
import time

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM) and not os.environ.get("CI"),
    reason="Debian's chromium is not installed (make test installs it)",
)
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}  # an iPhone 12-14 in portrait
TABS = ["Image", "Audio", "Video", "Prompt layout", "Serving", "Chat"]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield chromium
        chromium.close()


def _open(browser, app_url, viewport=DESKTOP):
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    page.set_default_timeout(90_000)
    page.goto(app_url)
    page.wait_for_selector("text=gemma_explore")
    page.wait_for_function(  # the background load has finished: the notice says so
        "() => document.querySelector('#notice').innerText.includes('random weights')"
    )
    return page


@pytest.fixture
def page(browser, app_url):
    pg = _open(browser, app_url)
    yield pg
    pg.context.close()


def _tab(page, name):
    page.get_by_role("tab", name=name).click()


def _click_example(page):
    """Click the visible tab's first gr.Examples sample (one click: nothing else)."""
    page.locator("button.gallery-item, .examples button, td[data-testid=dataset-cell-0-0]").filter(
        visible=True
    ).first.click()


def _wait_text(page, selector, *needles):
    page.wait_for_function(
        """([sel, needles]) => {
            const el = document.querySelector(sel);
            return el && needles.every(n => el.innerText.includes(n));
        }""",
        arg=[selector, list(needles)],
    )
    return page.locator(selector).inner_text()


def _plot_src(page, selector):
    return page.evaluate(
        """sel => { const img = document.querySelector(sel + ' img');
                    return img ? img.getAttribute('src') : null }""",
        selector,
    )


def test_an_example_fills_and_runs_in_one_click(page, artifacts_dir):
    _tab(page, "Image")
    _click_example(page)
    counts = _wait_text(page, "#image_counts", "soft tokens", "270")  # photo at budget 280
    assert "quantity" in counts  # the table has headers
    page.wait_for_selector("#patch_plot img")
    assert "Parity" in page.locator("#image_parity").inner_text()
    assert "random weights" in page.locator("#notice").inner_text()
    page.screenshot(path=str(artifacts_dir / "desktop_1280x800_image.png"))


def test_changing_the_budget_updates_the_patch_grid_without_a_click(page):
    _tab(page, "Image")
    _click_example(page)
    _wait_text(page, "#image_counts", "270")
    page.wait_for_selector("#patch_plot img")
    before = _plot_src(page, "#patch_plot")
    page.locator("#image_budget input").click()
    page.get_by_role("option", name="70", exact=True).click()
    page.wait_for_function(  # 270 soft tokens at budget 280 → 63 at 70
        r"""() => { const t = document.querySelector('#image_counts').innerText;
                   return /soft tokens\s+63\b/.test(t) && !t.includes('270') }"""
    )
    page.wait_for_function(
        """([sel, before]) => { const img = document.querySelector(sel + ' img');
                               return img && img.getAttribute('src') !== before }""",
        arg=["#patch_plot", before],
    )


def test_a_renamed_text_file_shows_our_message_and_leaves_nothing_stale(page, tmp_path):
    _tab(page, "Image")
    _click_example(page)
    _wait_text(page, "#image_counts", "270")
    page.wait_for_selector("#patch_plot img")
    page.locator("#image_in button[aria-label='Clear']").first.click()
    bad = tmp_path / "notes.png"
    bad.write_text("shopping list: eggs, milk")  # a text file renamed .png
    page.locator("#image_in input[type=file]").set_input_files(str(bad))
    counts = _wait_text(page, "#image_counts", "✗", "not an image")
    assert "soft tokens" not in counts and "Traceback" not in counts and "/tmp" not in counts
    assert page.locator("#patch_plot img").count() == 0  # the old figure is gone
    assert page.locator("#pooled_plot img").count() == 0
    assert page.locator("#image_parity").inner_text().strip() == ""
    assert "random weights" in page.locator("#notice").inner_text()  # the notice stays
    body = page.locator("body").inner_text()
    assert "UnidentifiedImageError" not in body and "Could not preprocess" not in body


def test_stop_ends_a_streaming_answer_within_a_second(page, artifacts_dir):
    _tab(page, "Chat")
    number = page.locator("#chat_max_tokens input[type=number]")
    number.fill("256")
    number.press("Enter")
    _click_example(page)  # fills the box and asks: one click
    counts = _wait_text(page, "#chat_counts", "prompt tokens", "image")
    assert "text" in counts
    page.wait_for_function(  # some of the answer has streamed in
        "() => { const m = document.querySelectorAll('#chatbot .message');"
        " return m.length >= 2 && m[m.length - 1].innerText.length > 10 }"
    )
    page.locator("#chat_stop").click()
    clicked = time.monotonic()
    answer = "() => { const m = document.querySelectorAll('#chatbot .message');"
    answer += " return m[m.length - 1].innerText.length }"
    settled, last = None, page.evaluate(answer)
    while time.monotonic() - clicked < 3.0:
        time.sleep(0.1)
        now = page.evaluate(answer)
        if now != last:
            settled, last = None, now
        elif settled is None:
            settled = time.monotonic()
    assert settled is not None and settled - clicked < 1.0, "the answer kept growing after Stop"
    page.screenshot(path=str(artifacts_dir / "desktop_1280x800_chat.png"))


def test_phone_width_shows_every_tab(browser, app_url, artifacts_dir):
    page = _open(browser, app_url, PHONE)
    try:
        for name in TABS:
            assert page.get_by_role("tab", name=name).is_visible(), f"{name} tab is hidden"
        assert page.locator("#tabs .overflow-menu button").filter(visible=True).count() == 0
        _tab(page, "Image")
        _click_example(page)
        _wait_text(page, "#image_counts", "270")
        page.wait_for_selector("#patch_plot img")
        page.screenshot(path=str(artifacts_dir / "phone_390x844_image.png"), full_page=True)
        _tab(page, "Chat")
        page.screenshot(path=str(artifacts_dir / "phone_390x844_chat.png"), full_page=True)
    finally:
        page.context.close()


@pytest.mark.parametrize(
    ("tab", "counts", "needles"),
    [
        ("Audio", "#audio_counts", ("placeholders", "ms per token")),
        ("Video", "#video_counts", ("sampled", "32")),
        ("Prompt layout", "#layout_counts", ("image_soft", "audio_soft")),
    ],
)
def test_every_tab_renders_its_example(page, artifacts_dir, tab, counts, needles):
    _tab(page, tab)
    _click_example(page)
    _wait_text(page, counts, *needles)
    name = tab.lower().replace(" ", "_")
    page.screenshot(path=str(artifacts_dir / f"desktop_1280x800_{name}.png"))
