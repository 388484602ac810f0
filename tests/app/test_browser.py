"""The demo in a real browser: Debian's Chromium driven by Playwright, headless.

`make test` installs Chromium with apt; Playwright never downloads a browser. Every tab
re-renders live (no buttons), so these tests only change inputs and wait for outputs.
Screenshots at 1280×800 and at phone width land in artifacts/ (kept by CI).
"""

from __future__ import annotations

import os
import re
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


def _settled(page, selector, *, other_than: str | None = None, timeout: float = 60_000) -> str:
    """The Markdown output's text once its request is done (gradio's status tracker
    hidden) and it shows something (other than ``other_than``): what the test then asserts
    on. A page that never answers fails here, saying what it showed."""
    js = """([sel, old]) => {
        const el = document.querySelector(sel);
        if (!el) return null;
        const busy = el.querySelector('[data-testid=status-tracker]:not(.hide)');
        const md = el.querySelector('[data-testid=markdown]');
        const t = md ? md.innerText.trim() : '';
        return !busy && t !== '' && t !== old ? t : null }"""
    old = (other_than or "").strip()
    try:
        return page.wait_for_function(js, arg=[selector, old], timeout=timeout).json_value()
    except Exception:  # noqa: BLE001 - Playwright's TimeoutError: say what is on screen
        shown = page.locator(selector).inner_text() if page.locator(selector).count() else None
        raise AssertionError(f"{selector} never settled; it shows {shown!r}") from None


def _row(text: str, name: str) -> str:
    """The value in a counts table's row called ``name`` (as the browser renders it)."""
    for line in text.splitlines():
        if line.strip().startswith(name):
            return line.strip()[len(name) :].strip()
    raise AssertionError(f"no {name!r} row in {text!r}")


def _photo_tokens(budget: int) -> int:
    """Soft tokens of the bundled photo at ``budget`` for the page's model (tiny-gemma4)."""
    from gemma_explore.media.loaders import load_image
    from gemma_explore.plans.image import plan_image
    from gemma_explore.samples import SAMPLES_DIR

    photo = load_image(SAMPLES_DIR / "photo.jpg")
    return plan_image(photo, family="gemma4", max_soft_tokens=budget).num_soft_tokens


def _plot_src(page, selector):
    return page.evaluate(
        """sel => { const img = document.querySelector(sel + ' img');
                    return img ? img.getAttribute('src') : null }""",
        selector,
    )


def test_an_example_fills_and_runs_in_one_click(page, artifacts_dir):
    _tab(page, "Image")
    _click_example(page)
    counts = _wait_text(page, "#image_counts", "soft tokens")
    assert "quantity" in counts  # the table has headers
    assert _row(counts, "soft tokens") == str(_photo_tokens(280))  # the photo at budget 280
    page.wait_for_selector("#patch_plot img")
    assert "Parity" in page.locator("#image_parity").inner_text()
    assert "random weights" in page.locator("#notice").inner_text()
    page.screenshot(path=str(artifacts_dir / "desktop_1280x800_image.png"))


def test_changing_the_budget_updates_the_patch_grid_without_a_click(page):
    """Picking budget 70 re-plans with no button: the table's soft tokens become the
    plan's count at 70, and the patch grid is a new figure."""
    _tab(page, "Image")
    before = _settled(page, "#image_counts")
    assert _row(before, "soft tokens") == str(_photo_tokens(280))  # the page opens at 280
    page.wait_for_selector("#patch_plot img")
    old_figure = _plot_src(page, "#patch_plot")
    page.locator("#image_budget input").click()
    page.get_by_role("option", name="70", exact=True).click()
    after = _settled(page, "#image_counts", other_than=before)
    assert _row(after, "soft tokens") == str(_photo_tokens(70)), after
    page.wait_for_function(
        """([sel, old]) => { const img = document.querySelector(sel + ' img');
                            return img && img.getAttribute('src') !== old }""",
        arg=["#patch_plot", old_figure],
        timeout=30_000,
    )
    assert _plot_src(page, "#patch_plot") != old_figure


def test_a_renamed_text_file_shows_our_message_and_leaves_nothing_stale(page, tmp_path):
    _tab(page, "Image")
    _click_example(page)
    assert _row(_wait_text(page, "#image_counts", "soft tokens"), "soft tokens") == str(
        _photo_tokens(280)
    )
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


def test_a_text_file_on_the_audio_tab_gets_our_one_line_message(page, tmp_path):
    """As on the Image tab: the file reaches our handler (no gradio MIME toast), which
    says what is wrong in one line and clears the stale figure and counts."""
    _tab(page, "Audio")
    before = _settled(page, "#audio_counts")
    assert "placeholders" in before
    page.locator("#audio_in button[aria-label='Clear']").first.click()
    bad = tmp_path / "notes.txt"
    bad.write_text("shopping list: eggs, milk")
    page.locator("#audio_in input[type=file]").set_input_files(str(bad))
    counts = _settled(page, "#audio_counts", other_than=before, timeout=30_000)
    assert counts.startswith("✗") and "not audio" in counts and "WAV or FLAC" in counts, counts
    assert len(counts.strip().splitlines()) == 1 and "/tmp" not in counts
    assert page.locator("#mel_plot img").count() == 0  # the old figure is gone
    assert page.locator("#audio_parity").inner_text().strip() == ""
    toasts = page.locator("[data-testid=toast-body]").filter(visible=True)  # gradio's toasts
    assert toasts.count() == 0, toasts.all_inner_texts()


def test_stop_ends_a_streaming_answer(page, artifacts_dir):
    """Behaviour, not timing: after Stop the turn says it was stopped by the user, and the
    answer does not grow any more (the stream really ended; a 256-token answer would
    otherwise keep streaming)."""
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
    page.wait_for_function(
        "() => { const m = document.querySelectorAll('#chatbot .message');"
        " return m.length && m[m.length - 1].innerText.includes('stopped by you') }"
    )
    stopped = _last_message(page)
    page.wait_for_timeout(2000)
    assert _last_message(page) == stopped, "the answer kept growing after Stop"


def _tofu(page) -> list[str]:
    """Characters on screen that the browser draws as the missing-glyph box (issue 23's
    ⏳): each is drawn in the body's font and compared, pixel for pixel, with a code
    point no font has."""
    return page.evaluate(
        """() => {
            const font = '20px ' + getComputedStyle(document.body).fontFamily;
            const draw = ch => { const c = document.createElement('canvas');
                c.width = 40; c.height = 30; const x = c.getContext('2d');
                x.font = font; x.fillText(ch, 5, 22);
                return Array.from(x.getImageData(0, 0, 40, 30).data).join(',') };
            const box = draw('\u0378');  // unassigned: every font lacks it
            const seen = new Set([...document.body.innerText].filter(ch => ch > '\u024f'
                && !/\s/.test(ch)));
            return [...seen].filter(ch => draw(ch) === box) }"""
    )


def _last_message(page) -> str:
    return page.evaluate(
        "() => { const m = document.querySelectorAll('#chatbot .message');"
        " return m.length ? m[m.length - 1].innerText : '' }"
    )


# What each tab shows for its example as soon as the page opens (no click).
ON_LOAD = [
    ("Image", "#image_counts", ("soft tokens", "prompt tokens")),
    ("Audio", "#audio_counts", ("placeholders", "ms per token")),
    ("Video", "#video_counts", ("sampled", "prompt tokens")),
    ("Prompt layout", "#layout_counts", ("image_soft", "audio_soft")),
    ("Serving", "#serving_table", ("max_model_len", "photos that fit")),
    ("Chat", "#chat_counts", ("Waiting to be asked", "prompt tokens")),
]
# Figures are drawn at matplotlib's 100 dpi with text of 9 pt or more (the gallery's
# readability test), i.e. 12.5 px: shown at a scale under 9 / 12.5 their text would be
# under 9 px.
MIN_SCALE = 9 / (9 * 100 / 72)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop_1280x800", "phone_390x844"])
def test_every_tab_shows_its_example_on_load_and_reads_at_this_width(
    browser, app_url, artifacts_dir, viewport
):
    import matplotlib

    assert matplotlib.rcParams["figure.dpi"] == 100  # MIN_SCALE's premise
    page = _open(browser, app_url, viewport)
    name = (
        f"{'desktop' if viewport is DESKTOP else 'phone'}_{viewport['width']}x{viewport['height']}"
    )
    try:
        for tab in TABS:
            assert page.get_by_role("tab", name=tab).is_visible(), f"{tab} tab is hidden"
        assert page.locator("#tabs .overflow-menu button").filter(visible=True).count() == 0
        for tab, selector, needles in ON_LOAD:
            _tab(page, tab)
            text = _settled(page, selector)  # the example's result, with no click
            assert "✗" not in text, f"{tab}: {text}"
            missing = [n for n in needles if n not in text]
            assert missing == [], f"{tab} shows {text!r}, without {missing}"
            plots = page.locator("[id$=_plot] img").filter(visible=True)
            if tab != "Chat":
                plots.first.wait_for()
            scales = page.evaluate(
                """() => [...document.querySelectorAll('[id$=_plot] img')]
                       .filter(i => i.offsetParent)
                       .map(i => [i.closest('[id]').id, i.clientWidth / i.naturalWidth])"""
            )
            for plot, scale in scales:
                assert scale >= MIN_SCALE, f"{tab}: {plot} text shows at {scale * 12.5:.1f} px"
            broken = page.evaluate(  # a name with no space must not wrap inside itself
                """() => [...document.querySelectorAll('.prose td, .prose th')]
                       .filter(c => c.offsetParent && !/\\s/.test(c.innerText.trim()))
                       .filter(c => { const r = document.createRange();
                                      r.selectNodeContents(c);
                                      const tops = new Set([...r.getClientRects()]
                                          .map(x => Math.round(x.top)));
                                      return tops.size > 1 })
                       .map(c => c.innerText)"""
            )
            assert broken == [], f"{tab}: names broken mid-word: {broken}"
            cut = page.evaluate(  # example headers show whole
                """() => [...document.querySelectorAll('th')].filter(t => t.offsetParent)
                       .filter(t => t.scrollWidth > t.clientWidth + 1).map(t => t.innerText)"""
            )
            assert cut == [], f"{tab}: headers cut: {cut}"
            assert _tofu(page) == [], f"{tab}: characters with no font here: {_tofu(page)}"
            page.screenshot(
                path=str(artifacts_dir / f"{name}_{tab.lower().replace(' ', '_')}.png"),
                full_page=True,
            )
        body = page.locator("body").inner_text()
        assert "Something went wrong" not in body and "Traceback" not in body
    finally:
        page.context.close()


def test_raw_prompt_messages_show_their_token_names(page):
    _tab(page, "Prompt layout")
    _wait_text(page, "#layout_counts", "image_soft")
    page.locator("#layout_raw input").check()
    text = _wait_text(page, "#layout_counts", "✗", "untick")
    assert "The raw prompt has 0 <|image|> for 1 image" in text
    assert "type one <|image|> where the image goes" in text and "template=True" not in text
    box = page.locator("#layout_text textarea")
    box.fill("<bos>Look <|image|> and listen <|audio|>")
    text = _wait_text(page, "#layout_counts", "image_soft", "audio_soft")
    assert "✗" not in text
    _wait_text(page, "#layout_html", "<bos>", "<|image|>")  # the tokens, shown as text
    page.locator("#model input").click()
    page.get_by_role("option", name="tiny-gemma3n", exact=True).click()
    text = _wait_text(page, "#layout_counts", "✗", "<image_soft_token>")
    assert "The raw prompt has 0 <image_soft_token> for 1 image" in text
    # Gemma 3n has no image budget: its dropdowns are disabled (no re-run for nothing).
    page.wait_for_function(
        "() => document.querySelector('#layout_budget input').disabled", timeout=30_000
    )
    assert page.locator("#layout_budget input").is_disabled()


def test_chat_turns_finished_failed_and_kept(page, tmp_path):
    _tab(page, "Chat")
    _wait_text(page, "#chat_counts", "Waiting to be asked")
    number = page.locator("#chat_max_tokens input[type=number]")
    number.fill("3")
    number.press("Enter")
    page.locator("#chat_in textarea").press("Enter")  # the example waits in the box
    page.wait_for_function(
        "() => { const m = document.querySelectorAll('#chatbot .message');"
        " return m.length >= 2 && m[m.length - 1].innerText.includes('ms') }"
    )
    assert "stop" not in _last_message(page).lower()  # it finished: nobody stopped it
    bad = tmp_path / "notes.png"
    bad.write_text("shopping list: eggs, milk")
    page.locator("#chat_in textarea").fill("And what is this?")
    page.locator("#chat_in input[type=file]").set_input_files(str(bad))
    page.wait_for_function(  # the upload shows as a thumbnail in the box
        "() => document.querySelectorAll('#chat_in img, #chat_in .thumbnail-item').length > 0"
    )
    page.locator("#chat_in textarea").press("Enter")
    page.wait_for_function(
        "() => [...document.querySelectorAll('#chatbot .message')].some("
        "m => m.innerText.includes('notes.png') && m.innerText.includes('✗'))"
    )
    assert page.locator("#chat_in textarea").input_value() == "And what is this?"
    assert str(tmp_path) not in page.locator("#chatbot").inner_text()


def test_nothing_stale_and_no_tower_under_unified(page):
    _tab(page, "Audio")
    _wait_text(page, "#audio_counts", "placeholders")
    page.locator("#transcribe_btn").click()
    _wait_text(page, "#transcript", "speech-to-text", "Chat tab")  # Gemma 4: no STT
    page.locator("#model input").click()
    page.get_by_role("option", name="tiny-gemma4-unified", exact=True).click()
    page.wait_for_function("() => !document.querySelector('#transcript').innerText.trim()")
    _wait_text(page, "#audio_counts", "Gemma 4 Unified", "640-sample frames")
    _tab(page, "Image")
    counts = _wait_text(page, "#image_counts", "Gemma 4 Unified", "48 px blocks")
    assert "px patches" not in counts
    _wait_text(page, "#notice", "gemma-4-12B")
    for tab, selector, needles in ON_LOAD:
        _tab(page, tab)
        _wait_text(page, selector, *needles)
        text = page.locator("body").inner_text().lower()
        claims = re.findall(r"(?<!no )\b(?:vision |audio )?(?:tower|pooler)\b", text)
        assert claims == [], f"{tab} speaks of a tower or pooler Unified has not: {claims}"
    assert "mel" not in page.locator("#audio_time").inner_text()  # Unified has no mel frames
