"""The demo in a real browser: Debian's Chromium driven by Playwright, headless.

`make test` installs Chromium with apt; Playwright never downloads a browser. The
screenshots of every tab are written to artifacts/ (kept by CI as test artifacts).
"""

from __future__ import annotations

import os
import shutil

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


@pytest.fixture(scope="module")
def page(app_url, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        pg = context.new_page()
        pg.set_default_timeout(60_000)
        pg.goto(app_url)
        pg.wait_for_selector("text=gemma_explore")
        yield pg
        context.close()
        browser.close()


def _tab(page, name):
    page.get_by_role("tab", name=name).click()


def _click_example(page):
    """Click the visible tab's first gr.Examples sample."""
    page.locator("button.gallery-item, .examples button, td[data-testid=dataset-cell-0-0]").filter(
        visible=True
    ).first.click()


def _show(page, button, counts):
    page.locator(button).click()
    page.wait_for_function(
        "sel => { const el = document.querySelector(sel); return el && el.innerText.length > 20 }",
        arg=counts,
    )
    return page.locator(counts).inner_text()


def test_image_tab_example_grid_and_counts(page, artifacts_dir):
    _tab(page, "Image")
    _click_example(page)
    counts = _show(page, "#image_btn", "#image_counts")
    assert "soft tokens" in counts and "270" in counts  # the bundled photo at budget 280
    page.wait_for_selector("#patch_plot img, #patch_plot svg, #patch_plot canvas")
    assert "random weights" in page.locator("#notice").inner_text()
    assert "Parity" in page.locator("#image_parity").inner_text()
    page.screenshot(path=str(artifacts_dir / "tab_image.png"), full_page=True)


def test_audio_tab(page, artifacts_dir):
    _tab(page, "Audio")
    _click_example(page)
    counts = _show(page, "#audio_btn", "#audio_counts")
    assert "placeholders" in counts and "ms per token" in counts
    page.screenshot(path=str(artifacts_dir / "tab_audio.png"), full_page=True)


def test_video_tab(page, artifacts_dir):
    _tab(page, "Video")
    _click_example(page)
    counts = _show(page, "#video_btn", "#video_counts")
    assert "sampled" in counts and "32" in counts
    page.screenshot(path=str(artifacts_dir / "tab_video.png"), full_page=True)


def test_layout_tab(page, artifacts_dir):
    _tab(page, "Prompt layout")
    _click_example(page)
    counts = _show(page, "#layout_btn", "#layout_counts")
    assert "image_soft" in counts and "audio_soft" in counts
    page.screenshot(path=str(artifacts_dir / "tab_layout.png"), full_page=True)


def test_chat_answer_streams_in(page, artifacts_dir):
    _tab(page, "Chat")
    slider_number = page.locator("input[type=number]").filter(visible=True).last
    slider_number.fill("120")
    slider_number.press("Enter")
    _click_example(page)
    # Count how many different texts the answer shows while it streams.
    page.evaluate("""() => {
        window.__seen = new Set();
        const box = document.querySelector('#chatbot');
        new MutationObserver(() => window.__seen.add(box.innerText.length))
            .observe(box, {subtree: true, childList: true, characterData: true});
    }""")
    page.locator("#chat_in textarea").filter(visible=True).first.press("Enter")
    page.wait_for_function(
        "() => document.querySelector('#chatbot').innerText.includes('random weights')"
    )
    assert page.evaluate("() => window.__seen.size") >= 3
    page.screenshot(path=str(artifacts_dir / "tab_chat.png"), full_page=True)


def test_corrupt_upload_shows_an_error_and_the_next_request_works(page, tmp_path):
    _tab(page, "Image")
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n this is not an image")
    page.locator("#image_in button[aria-label*='Clear'], #image_in button[title*='Clear']").filter(
        visible=True
    ).first.click() if page.locator("#image_in button[aria-label*='Clear']").count() else None
    page.locator("#image_in input[type=file]").set_input_files(str(bad))
    page.locator("#image_btn").click()
    page.wait_for_function("""() => {
        const t = document.body.innerText;
        return t.includes('Error') || t.includes('✗') || t.includes('not an image');
    }""")
    _click_example(page)
    counts = _show(page, "#image_btn", "#image_counts")
    assert "270" in counts
