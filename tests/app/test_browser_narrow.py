"""The demo on a phone (390×844 px) in Debian's Chromium, as test_browser.py drives it:
every figure's smallest label is at least 9 px tall as drawn on the screen, every message
shows within one screen of the control that caused it, tables keep their values whole.
Screenshots land in artifacts/phone_390x844_*.png."""

from __future__ import annotations

import io

import pytest

from tests.app.test_browser import (
    CHROMIUM,  # noqa: F401 - the skip mark below reads it
    DESKTOP,
    PHONE,
    SAMPLES,
    _open,
    _settled,
    _tab,
    _wait_text,
    browser,  # noqa: F401 - the fixture
    pytestmark,  # noqa: F401 - skipped where Chromium is missing
)

MIN_LABEL_PX = 9.0  # the least a label may be, as drawn on the screen
PHOTO = str(SAMPLES / "photo.jpg")
SPEECH = str(SAMPLES / "speech.wav")
VIDEO = str(SAMPLES / "video.mp4")


def _smallest_text(fig) -> tuple[float, float, float]:
    """(smallest text size in pt, dpi, height in px) of a figure as gradio saves it
    (``savefig`` at the figure's own dpi): what the page's image is drawn from."""
    from matplotlib.text import Text

    fig.savefig(io.BytesIO(), format="png")  # as gr.Plot does: lays out, sets tick labels
    sizes = [
        t.get_fontsize()
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and t.get_figure() is not None
    ]
    return min(sizes), fig.dpi, fig.get_figheight() * fig.dpi


def _figures() -> dict[str, object]:
    """Each tab's figures for its example, drawn in this process as the page's server
    draws them (the same handlers, the same inputs)."""
    from gemma_explore.app.serving_tab import SERVING_DEFAULT, serving_tab
    from gemma_explore.app.tabs import audio_tab, image_tab, layout_tab, video_tab

    image = image_tab("tiny-gemma4", PHOTO, 280)
    return {
        "patch_plot": image.patch_figure,
        "pooled_plot": image.pooled_figure,
        "mel_plot": audio_tab("tiny-gemma4", SPEECH).mel_figure,
        "frames_plot": video_tab("tiny-gemma4", VIDEO).frames_figure,
        "layout_plot": layout_tab(
            "tiny-gemma4", "Describe this.", PHOTO, SPEECH, 280
        ).layout_figure,
        "serving_plot": serving_tab(SERVING_DEFAULT).figure,
    }


FIGURE_TABS = {
    "Image": ("#image_counts", ["patch_plot", "pooled_plot"]),
    "Audio": ("#audio_counts", ["mel_plot"]),
    "Video": ("#video_counts", ["frames_plot"]),
    "Prompt layout": ("#layout_counts", ["layout_plot"]),
    "Serving": ("#serving_table", ["serving_plot"]),
}


def _drawn(page, plot_id: str) -> dict:
    return page.evaluate(
        """id => { const img = document.querySelector('#' + id + ' img');
                   if (!img) return null;
                   const r = img.getBoundingClientRect();
                   const box = img.closest('[id$=_plot]');
                   return {height: r.height, natural: img.naturalHeight,
                           hint: getComputedStyle(box, '::before').content} }""",
        plot_id,
    )


def test_every_figures_labels_are_at_least_9_px_tall_on_a_phone(
    browser,  # noqa: F811
    app_url,
    artifacts_dir,
):
    """A label's height on screen: its size in the saved figure (pt × dpi / 72 px) times
    the scale the page draws the figure at (its drawn height over its natural height).
    Shrunk to the phone's width, an 11-inch figure's 9 pt labels would be 4 px tall."""
    figures = _figures()
    viewport = PHONE
    page = _open(browser, app_url, viewport)
    small = []
    try:
        for tab, (selector, plots) in FIGURE_TABS.items():
            _tab(page, tab)
            _settled(page, selector)
            for plot in plots:
                page.locator(f"#{plot} img").wait_for()
                page.wait_for_function(
                    "id => { const i = document.querySelector('#' + id + ' img');"
                    " return i && i.complete && i.naturalHeight > 0 }",
                    arg=plot,
                )
                drawn = _drawn(page, plot)
                pt, dpi, height = _smallest_text(figures[plot])
                assert abs(drawn["natural"] - height) <= 2, (plot, drawn, height)  # one figure
                px = pt * dpi / 72 * drawn["height"] / drawn["natural"]
                if px < MIN_LABEL_PX:
                    small.append(f"{plot}: {pt:g} pt labels drawn {px:.1f} px tall")
                assert "sideways" in drawn["hint"], (plot, drawn)  # it scrolls, and says so
            page.screenshot(
                path=str(artifacts_dir / f"narrow_{viewport['width']}_{tab.lower()[:6]}.png")
            )
    finally:
        page.context.close()
    assert small == [], small


def _within_one_screen(page, message: str, control: str) -> None:
    """The message and its control fit in one screen together (the page scrolled to the
    control, the message is on screen with it)."""
    span = page.evaluate(
        """([m, c]) => { const a = document.querySelector(m).getBoundingClientRect();
                         const b = document.querySelector(c).getBoundingClientRect();
                         return [a.top, a.bottom, a.height, b.top, b.bottom,
                                 window.innerHeight] }""",
        [message, control],
    )
    top, bottom, height, ctop, cbottom, screen = span
    assert height > 0, f"{message} is not shown"
    reach = max(bottom, cbottom) - min(top, ctop)
    assert reach <= screen, (
        f"{message} ({top:.0f}–{bottom:.0f}) and {control} ({ctop:.0f}–{cbottom:.0f}) "
        f"span {reach:.0f} px, more than one {screen} px screen"
    )


def test_every_message_shows_within_one_screen_of_its_control(
    browser,  # noqa: F811
    app_url,
    artifacts_dir,
    tmp_path,
):
    page = _open(browser, app_url, PHONE)
    try:
        _tab(page, "Image")
        _settled(page, "#image_counts")
        page.locator("#image_in button[aria-label='Clear']").first.click()
        bad = tmp_path / "notes.png"
        bad.write_text("shopping list")
        page.locator("#image_in input[type=file]").set_input_files(str(bad))
        _wait_text(page, "#image_error", "✗")
        _within_one_screen(page, "#image_error", "#image_in")

        _tab(page, "Audio")
        _settled(page, "#audio_counts")
        page.locator("#audio_in button[aria-label='Clear']").first.click()
        page.locator("#audio_in input[type=file]").set_input_files(VIDEO)
        _wait_text(page, "#audio_error", "✗", "Video tab")
        _within_one_screen(page, "#audio_error", "#audio_in")

        _tab(page, "Prompt layout")
        _settled(page, "#layout_counts")
        page.locator("#layout_raw input").check()
        _wait_text(page, "#layout_error", "✗", "untick")
        _within_one_screen(page, "#layout_error", "#layout_raw")
        page.screenshot(path=str(artifacts_dir / "phone_390x844_layout_raw_near.png"))

        _tab(page, "Serving")
        _settled(page, "#serving_table")
        for control, value in (("gpu_memory_gib", "0"), ("gpu_memory_utilization", "7")):
            box = page.locator(f"#serving_{control} input[type=number]")
            box.fill(value)
            box.press("Enter")
            _wait_text(page, "#serving_error", "✗", "must be between")
            _within_one_screen(page, "#serving_error", f"#serving_{control}")
            page.screenshot(path=str(artifacts_dir / f"phone_390x844_serving_{control}.png"))
            box.fill("80" if control == "gpu_memory_gib" else "0.5")
            box.press("Enter")
            page.wait_for_function(
                "() => !document.querySelector('#serving_error').innerText.trim()"
            )
    finally:
        page.context.close()


def test_a_value_past_a_sliders_end_is_said_and_the_limits_follow_the_checkpoint(
    browser,  # noqa: F811
    app_url,
):
    """gradio sets a typed 40 to the slider's end (16) when the box loses focus: a line
    under the slider says so. The 31B takes no audio: its audio limit is disabled, with
    the reason under it."""
    page = _open(browser, app_url, DESKTOP)
    try:
        _tab(page, "Serving")
        _settled(page, "#serving_table")
        box = page.locator("#serving_image_limit input[type=number]")
        box.fill("40")
        box.blur()
        line = _wait_text(page, "#serving_image_limit .slider-range", "16")
        assert "40 was set to 16" in line and "limit_mm_per_prompt: image" in line, line
        page.wait_for_function(
            "() => document.querySelector('#serving_image_limit input[type=number]').value == '16'"
        )
        assert not page.locator("#serving_audio_limit input[type=range]").is_disabled()
        page.locator("#serving_checkpoint input").click()
        page.get_by_role("option", name="google/gemma-4-31B-it", exact=True).click()
        page.wait_for_function(
            "() => document.querySelector('#serving_audio_limit input[type=range]').disabled"
        )
        why = page.locator("#serving_audio_limit").inner_text()
        assert "google/gemma-4-31B-it takes no audio" in why, why
        assert not page.locator("#serving_video_limit input[type=range]").is_disabled()
    finally:
        page.context.close()


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone_390x844", "desktop_1280x800"])
def test_tables_keep_their_values_whole(browser, app_url, viewport):  # noqa: F811
    """The Video tab's counts keep each value on at most two lines (its frame times may
    run on), and the Example-turn table is not cut."""
    page = _open(browser, app_url, viewport)
    try:
        _tab(page, "Video")
        _settled(page, "#video_counts")
        lines = page.evaluate(
            """() => [...document.querySelectorAll('#video_counts tbody tr')].map(tr => {
                   const [name, value] = tr.querySelectorAll('td');
                   const h = parseFloat(getComputedStyle(value).lineHeight) || 18;
                   const r = document.createRange(); r.selectNodeContents(value);
                   const tops = new Set([...r.getClientRects()].map(x => Math.round(x.top)));
                   return [name.innerText, tops.size] })"""
        )
        squeezed = [(n, k) for n, k in lines if k > 2 and n != "frame times"]
        assert lines and squeezed == [], lines
        _tab(page, "Prompt layout")
        _settled(page, "#layout_counts")
        cut = page.evaluate(
            """() => [...document.querySelectorAll('#layout_examples table, #layout_examples div')]
                   .filter(t => t.offsetParent)
                   .filter(t => t.scrollWidth > t.clientWidth + 1
                                || t.getBoundingClientRect().right > innerWidth + 1)
                   .map(t => `${t.tagName}: ${t.scrollWidth} px in ${t.clientWidth} px`)"""
        )
        assert cut == [], cut
    finally:
        page.context.close()
