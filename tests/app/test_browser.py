"""The demo in a real browser: Debian's Chromium driven by Playwright, headless.

`make test` installs Chromium with apt; Playwright never downloads a browser. Every tab
re-renders live (no buttons), so these tests only change inputs and wait for outputs.
They look at what a person sees: every figure inside its column and the screen (its
box, its drawn size and every scroll width; on a phone, its sideways-scrolling box, which
says so), a message where the figure it replaces would
be (above the fold), the controls a family uses enabled and the others not, and the
Stop button's state before, during and after a turn. Screenshots at 1280×800 and at
390×844 land in artifacts/<viewport>_<tab>.png (kept by CI).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SAMPLES = Path(__file__).resolve().parents[2] / "gemma_explore" / "samples"
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
    page.wait_for_selector("#notice")
    page.wait_for_function(  # the background load has finished: the notice says so
        "() => { const t = document.querySelector('#notice').innerText;"
        " return t.includes('random weights') && !t.includes('Loading') }"
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
    error = _wait_text(page, "#image_error", "✗", "not an image")
    assert "Traceback" not in error and "/tmp" not in error
    assert error.count("notes.png") == 1  # the file, named once
    assert "soft tokens" not in page.locator("#image_counts").inner_text()
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
    assert "soft tokens" in before
    page.locator("#audio_in button[aria-label='Clear']").first.click()
    bad = tmp_path / "notes.txt"
    bad.write_text("shopping list: eggs, milk")
    page.locator("#audio_in input[type=file]").set_input_files(str(bad))
    counts = _settled(page, "#audio_error")  # the default 60 s: a busy 2-core CI box
    assert counts.startswith("✗") and "not audio" in counts and "WAV or FLAC" in counts, counts
    assert len(counts.strip().splitlines()) == 1 and "/tmp" not in counts
    assert "soft tokens" not in page.locator("#audio_counts").inner_text()
    assert page.locator("#mel_plot img").count() == 0  # the old figure is gone
    assert page.locator("#audio_parity").inner_text().strip() == ""
    toasts = page.locator("[data-testid=toast-body]").filter(visible=True)  # gradio's toasts
    assert toasts.count() == 0, toasts.all_inner_texts()


def _stop_state(page) -> tuple[str, bool]:
    button = page.locator("#chat_stop")
    return button.inner_text().strip(), button.is_enabled()


def test_stop_ends_a_streaming_answer_and_its_button_says_so(page, artifacts_dir):
    """Behaviour, not timing: Stop is inactive before a turn, active during one; pressed,
    it says so at once and the answer freezes (it says it was stopped by the user and
    does not grow any more); after the turn it is inactive again."""
    _tab(page, "Chat")
    _settled(page, "#chat_counts")
    assert _stop_state(page) == ("Stop", False), "Stop is active with nothing to stop"
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
    assert _stop_state(page) == ("Stop", True), "Stop is inactive while a turn streams"
    page.locator("#chat_stop").click()
    page.wait_for_function(  # pressed: it says so (a hang guard, not a timing: 10 s)
        "() => document.querySelector('#chat_stop').innerText.trim() !== 'Stop'", timeout=10_000
    )
    page.wait_for_function(
        "() => { const m = document.querySelectorAll('#chatbot .message');"
        " return m.length && m[m.length - 1].innerText.includes('stopped by you') }",
        timeout=30_000,
    )
    stopped = _last_message(page)
    page.wait_for_timeout(2000)
    assert _last_message(page) == stopped, "the answer kept growing after Stop"
    assert _stop_state(page) == ("Stopped", False)
    page.screenshot(path=str(artifacts_dir / "desktop_1280x800_chat_stopped.png"))


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
    ("Audio", "#audio_counts", ("soft tokens", "ms per token")),
    ("Video", "#video_counts", ("sampled", "prompt tokens")),
    ("Prompt layout", "#layout_counts", ("image_soft", "audio_soft")),
    ("Serving", "#serving_table", ("max_model_len", "photos that fit")),
    ("Chat", "#chat_counts", ("Waiting to be asked", "prompt tokens")),
]
VIEWPORTS = [DESKTOP, PHONE]
VIEWPORT_IDS = ["desktop_1280x800", "phone_390x844"]


def _name(viewport) -> str:
    kind = "desktop" if viewport["width"] > 600 else "phone"
    return f"{kind}_{viewport['width']}x{viewport['height']}"


def _overflow(page) -> list[str]:
    """What a person could not see on the visible tab: a figure wider than its column or
    the screen, a figure with a sideways scroll inside its box, a table cut by its box,
    or a page that scrolls sideways."""
    return page.evaluate(
        """() => {
            const out = [], vw = document.documentElement.clientWidth;
            for (const img of document.querySelectorAll('[id$=_plot] img')) {
                if (!img.offsetParent) continue;
                const box = img.closest('[id$=_plot]'), id = box.id;
                const r = img.getBoundingClientRect(), c = box.getBoundingClientRect();
                // On a phone a figure keeps legible labels in a box that scrolls
                // sideways and says so above it: the box, not the figure, must fit.
                if (getComputedStyle(box, '::before').content.includes('sideways')) {
                    const m = img.closest('.matplotlib') || img.parentElement;
                    const b = m.getBoundingClientRect();
                    if (b.right > c.right + 1 || b.right > vw + 1 || b.left < c.left - 1)
                        out.push(`${id}: its scrolling box ends at ${Math.round(b.right)} px`);
                    if (!['auto', 'scroll'].includes(getComputedStyle(m).overflowX)
                        && m.scrollWidth > m.clientWidth + 1)
                        out.push(`${id}: cut, not scrolled`);
                    continue;
                }
                if (r.width > c.width + 1 || r.right > c.right + 1 || r.left < c.left - 1)
                    out.push(`${id}: ${Math.round(r.width)} px wide in a ${Math.round(c.width)} px column`);
                if (r.right > vw + 1) out.push(`${id}: ends at ${Math.round(r.right)} px, the screen at ${vw}`);
                if (img.naturalWidth && r.width < 1) out.push(`${id}: drawn 0 px wide`);
                for (let el = img.parentElement; el && el !== box.parentElement; el = el.parentElement)
                    if (el.scrollWidth > el.clientWidth + 1)
                        out.push(`${id}: a ${el.scrollWidth - el.clientWidth} px sideways scroll inside`);
            }
            for (const t of document.querySelectorAll('.prose table')) {
                if (!t.offsetParent) continue;
                const host = t.closest('[id]');
                const r = t.getBoundingClientRect();
                if (t.scrollWidth > t.clientWidth + 1 || r.right > vw + 1)
                    out.push(`table in #${host && host.id}: ${t.scrollWidth} px in ${t.clientWidth} px`);
            }
            if (document.documentElement.scrollWidth > vw + 1)
                out.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} px in ${vw}`);
            return out }"""
    )


def _above_the_fold(page, selector) -> None:
    """The element's text shows on the first screen (the page scrolled to its top)."""
    page.evaluate("() => window.scrollTo(0, 0)")
    box = page.evaluate(
        """sel => { const r = document.querySelector(sel).getBoundingClientRect();
                    return [r.top, r.bottom, r.height, window.innerHeight] }""",
        selector,
    )
    top, bottom, height, fold = box
    assert height > 0 and bottom <= fold, (
        f"{selector} shows at y {top:.0f}–{bottom:.0f}, the fold at {fold}"
    )


def _panorama(tmp_path):
    """An odd-sized upload: a 3000×500 px (W×H) panorama."""
    import numpy as np
    from PIL import Image

    x = np.linspace(0, 255, 3000, dtype=np.uint8)
    pixels = np.stack([np.tile(x, (500, 1))] * 3, axis=-1)
    path = tmp_path / "panorama.png"
    Image.fromarray(pixels).save(path)
    return path


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=VIEWPORT_IDS)
def test_every_tab_shows_its_example_and_every_figure_fits(
    browser, app_url, artifacts_dir, viewport
):
    """Each tab renders its example when opened (no click); every figure is inside its
    column and the screen, nothing scrolls sideways, names are not broken, headers are
    not cut, every character has a font. Screenshots: artifacts/<viewport>_<tab>.png."""
    page = _open(browser, app_url, viewport)
    name = _name(viewport)
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
            if tab != "Chat":
                page.locator("[id$=_plot] img").filter(visible=True).first.wait_for()
                page.wait_for_function(
                    "() => [...document.querySelectorAll('[id$=_plot] img')]"
                    ".filter(i => i.offsetParent).every(i => i.complete && i.naturalWidth)"
                )
            assert _overflow(page) == [], f"{tab} at {name}"
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


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=VIEWPORT_IDS)
def test_an_odd_sized_upload_fits_and_messages_show_where_the_figure_was(
    browser, app_url, artifacts_dir, tmp_path, viewport
):
    """A 3000×500 px panorama on the Image and Prompt layout tabs: its figures fit. A bad
    file on the Image tab, an MP4 on the Audio tab and a raw prompt with no placeholder:
    each message shows on the first screen, where the figure it replaces was, names the
    file once and the tab that reads it."""
    page = _open(browser, app_url, viewport)
    name = _name(viewport)
    wide = _panorama(tmp_path)
    try:
        _tab(page, "Image")
        before = _settled(page, "#image_counts")
        page.locator("#image_in button[aria-label='Clear']").first.click()
        page.locator("#image_in input[type=file]").set_input_files(str(wide))
        counts = _settled(page, "#image_counts", other_than=before)
        assert "3000×500 px" in counts, counts
        page.locator("#patch_plot img").wait_for()
        assert _overflow(page) == [], f"Image, panorama, at {name}"
        page.screenshot(path=str(artifacts_dir / f"{name}_image_panorama.png"), full_page=True)
        page.locator("#image_in button[aria-label='Clear']").first.click()
        empty = tmp_path / "empty.png"
        empty.write_bytes(b"")
        page.locator("#image_in input[type=file]").set_input_files(str(empty))
        error = _wait_text(page, "#image_error", "✗", "empty.png")
        assert error.count("empty.png") == 1, error
        assert page.locator("#patch_plot img").count() == 0
        _above_the_fold(page, "#image_error")

        _tab(page, "Audio")
        _settled(page, "#audio_counts")
        page.locator("#audio_in button[aria-label='Clear']").first.click()
        page.locator("#audio_in input[type=file]").set_input_files(str(SAMPLES / "video.mp4"))
        error = _wait_text(page, "#audio_error", "✗", "Video tab")
        assert error.count("video.mp4") == 1, error
        _above_the_fold(page, "#audio_error")
        page.screenshot(path=str(artifacts_dir / f"{name}_audio_wrong_file.png"))

        _tab(page, "Prompt layout")
        before = _settled(page, "#layout_counts")
        page.locator("#layout_image button[aria-label='Clear']").first.click()
        page.locator("#layout_image input[type=file]").set_input_files(str(wide))
        _settled(page, "#layout_counts", other_than=before)
        page.locator("#layout_plot img").wait_for()
        assert _overflow(page) == [], f"Prompt layout, panorama, at {name}"
        page.locator("#layout_raw input").check()
        _wait_text(page, "#layout_error", "✗", "untick")
        assert page.locator("#layout_plot img").count() == 0  # the ribbon it replaces
        _above_the_fold(page, "#layout_error")
        page.screenshot(path=str(artifacts_dir / f"{name}_layout_raw.png"))
    finally:
        page.context.close()


def test_an_upload_over_the_cap_gets_our_message(page, tmp_path):
    """A 25 MB WAV: the page's own line under the box (the file, its size, what to do),
    not gradio's bare toast."""
    big = tmp_path / "long.wav"
    big.write_bytes(b"RIFF" + bytes(25 * 1024 * 1024))
    _tab(page, "Audio")
    _settled(page, "#audio_counts")
    page.locator("#audio_in button[aria-label='Clear']").first.click()
    page.locator("#audio_in input[type=file]").set_input_files(str(big))
    line = _wait_text(page, "#audio_in .upload-cap", "long.wav", "20 MB")
    assert "25.0 MB" in line and "Cut the clip" in line
    page.wait_for_timeout(1000)
    toasts = page.locator("[data-testid=toast-body]").filter(visible=True)
    assert toasts.count() == 0, toasts.all_inner_texts()


def _pick(page, box, option):
    page.locator(f"{box} input").click()
    page.get_by_role("option", name=option, exact=True).click()


def test_controls_follow_the_family_chosen(page):
    """The budget boxes are enabled exactly when the chosen family has budgets (and show
    no stale value when it has none); the banner names the new family's checkpoint at
    once; Transcribe is active only for Gemma 3n; the Serving tab's budget follows the
    checkpoint chosen on the tab, not the Model box."""
    from gemma_explore.facts.families import get_family

    families = {
        "tiny-gemma3n": "gemma3n",
        "tiny-gemma4-unified": "gemma4_unified",
        "tiny-gemma4": "gemma4",
    }
    _tab(page, "Image")
    _settled(page, "#image_counts")
    for model, family in families.items():
        spec = get_family(family)
        _pick(page, "#model", model)
        _wait_text(page, "#notice", spec.hub_ids[-1].split("/")[-1])  # the right checkpoint
        has = bool(spec.image.budgets)
        page.wait_for_function(
            "([sel, on]) => document.querySelector(sel + ' input').disabled === !on",
            arg=["#image_budget", has],
            timeout=30_000,
        )
        value = page.locator("#image_budget input").input_value()
        assert ("fixed" in value) != has, f"{model}: the budget box shows {value!r}"
        _tab(page, "Audio")
        page.wait_for_function(
            "([on]) => document.querySelector('#transcribe_btn').disabled === !on",
            arg=[spec.transcribes],
            timeout=30_000,
        )
        for tab, box in (("Prompt layout", "#layout_budget"), ("Chat", "#chat_budget")):
            _tab(page, tab)
            assert page.locator(f"{box} input").is_disabled() == (not has), f"{model}: {box}"
        _tab(page, "Image")
        _wait_text(page, "#image_counts", spec.display_name)
    _pick(page, "#model", "tiny-gemma3n")
    _wait_text(page, "#notice", "gemma-3n")
    _tab(page, "Serving")
    _settled(page, "#serving_table")
    _pick(page, "#serving_checkpoint", "google/gemma-4-31B-it")
    page.wait_for_function("() => !document.querySelector('#serving_budget input').disabled")
    _pick(page, "#serving_checkpoint", "google/gemma-3n-E4B-it")
    page.wait_for_function("() => document.querySelector('#serving_budget input').disabled")


def test_the_serving_tab_says_what_it_assumes_and_refuses_in_one_place(page):
    _tab(page, "Serving")
    table = _settled(page, "#serving_table", other_than="")
    assert "verdict" in table and "fits" in table
    assumption = page.locator("#serving_assumption").inner_text()
    from gemma_explore.app.serving_tab import VLLM_DEFAULT, utilization_default

    assert "80 GiB" in assumption and f"{utilization_default(VLLM_DEFAULT):g}" in assumption
    gpu = page.locator("#serving_gpu_memory_gib input")
    gpu.fill("4")
    gpu.press("Enter")
    table = _settled(page, "#serving_table", other_than=table)
    assert "does not fit" in table
    _wait_text(page, "#serving_assumption", "4 GiB")
    gpu.fill("0")
    gpu.press("Enter")
    error = _wait_text(page, "#serving_error", "✗", "GPU memory (GiB)")
    assert "between 1 and 1024" in error
    _above_the_fold(page, "#serving_error")
    page.wait_for_function("() => !document.querySelector('#serving_plot img')")
    assert page.locator("#serving_table").inner_text().strip() == ""  # nothing stale
    gpu.fill("80")
    gpu.press("Enter")
    _settled(page, "#serving_table")
    number = page.locator("#serving_gpu_memory_utilization input[type=number]")
    number.fill("7")  # past the slider's end: refused by the handler, in its words
    number.press("Enter")
    error = _wait_text(page, "#serving_error", "✗", "gpu_memory_utilization")
    assert "between 0.05 and 1" in error
    toasts = page.locator("[data-testid=toast-body]").filter(visible=True)
    assert toasts.count() == 0, toasts.all_inner_texts()
    page.wait_for_function("() => !document.querySelector('#serving_plot img')")
    assert page.locator("#serving_table").inner_text().strip() == ""  # nothing stale


def test_raw_prompt_messages_show_their_token_names(page):
    _tab(page, "Prompt layout")
    _wait_text(page, "#layout_counts", "image_soft")
    page.locator("#layout_raw input").check()
    text = _wait_text(page, "#layout_error", "✗", "untick")
    _above_the_fold(page, "#layout_error")
    assert "The raw prompt has 0 <|image|> for 1 image" in text
    assert "type one <|image|> where the image goes" in text and "template=True" not in text
    box = page.locator("#layout_text textarea")
    box.fill("<bos>Look <|image|> and listen <|audio|>")
    text = _wait_text(page, "#layout_counts", "image_soft", "audio_soft")
    assert "✗" not in text
    _wait_text(page, "#layout_html", "<bos>", "<|image|>")  # the tokens, shown as text
    page.locator("#model input").click()
    page.get_by_role("option", name="tiny-gemma3n", exact=True).click()
    text = _wait_text(page, "#layout_error", "✗", "<image_soft_token>")
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
    _wait_text(page, "#audio_counts", "soft tokens")
    assert page.locator("#transcribe_btn").is_disabled()  # Gemma 4: no speech-to-text
    assert "Chat tab" in page.locator("#transcribe_help").inner_text()
    page.locator("#model input").click()
    page.get_by_role("option", name="tiny-gemma4-unified", exact=True).click()
    _wait_text(page, "#audio_counts", "Gemma 4 Unified", "640-sample frames")
    _tab(page, "Image")
    counts = _wait_text(page, "#image_counts", "Gemma 4 Unified", "48 px blocks")
    assert "px patches" not in counts
    shown = page.locator("[id$=_plot] img").filter(visible=True)
    assert shown.count() == 1, "Unified's Image tab shows its one figure more than once"
    _wait_text(page, "#notice", "gemma-4-12B")
    for tab, selector, needles in ON_LOAD:
        _tab(page, tab)
        _wait_text(page, selector, *needles)
        text = page.locator("body").inner_text().lower()
        claims = re.findall(r"(?<!no )\b(?:vision |audio )?(?:tower|pooler)\b", text)
        assert claims == [], f"{tab} speaks of a tower or pooler Unified has not: {claims}"
    assert "mel" not in page.locator("#audio_time").inner_text()  # Unified has no mel frames
