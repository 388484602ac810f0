"""The Chat tab in a real browser after a bad attachment (issue 46): it recovers.

A text file named .png is attached and sent. The page shows the user's turn, then the
refusal as its own message (its own bubble, not text added to the last answer), and the
file is gone from the box. The next send, plain text, gets a normal answer, and every
user turn is on screen. Debian's Chromium through Playwright, as tests/app/test_browser.py
(its fixtures: the shared demo from conftest.py, one browser per module).
"""

from __future__ import annotations

import pytest

from tests.app import test_browser as shared
from tests.app.test_browser import _tab, _wait_text

# test_browser.py's fixtures (one Chromium per module, a fresh page per test) and its skip
# where Debian's chromium is missing.
browser = shared.browser
page = shared.page
pytestmark = shared.pytestmark


def _messages(page) -> list[tuple[str, str]]:
    """(role, text) of every message bubble on screen, in order."""
    return page.evaluate(
        "() => [...document.querySelectorAll('#chatbot .message')].map("
        "m => [m.classList.contains('user') ? 'user' : 'bot', m.innerText])"
    )


def _box(page) -> tuple[str, int]:
    """The message box: its text and how many files it holds."""
    text = page.locator("#chat_in textarea").input_value()
    return text, page.locator("#chat_in .thumbnail-item").count()


def _send_and_wait(page, count: int) -> None:
    """Press Enter in the box and wait for the turn to end: ``count`` bubbles, the last
    one an answer that ended (its time in ms) or an error."""
    page.locator("#chat_in textarea").press("Enter")
    page.wait_for_function(
        """n => { const m = document.querySelectorAll('#chatbot .message');
            if (m.length < n) return false;
            const last = m[m.length - 1];
            return last.classList.contains('bot')
                && (/\\d ms/.test(last.innerText) || last.innerText.includes('✗')) }""",
        arg=count,
    )


@pytest.mark.parametrize("with_text", [False, True], ids=["file alone", "file and text"])
def test_a_bad_attachment_is_refused_once_and_the_chat_goes_on(page, tmp_path, with_text):
    _tab(page, "Chat")
    _wait_text(page, "#chat_counts", "Waiting to be asked")
    number = page.locator("#chat_max_tokens input[type=number]")
    number.fill("3")
    number.press("Enter")
    _send_and_wait(page, 2)  # the example waiting in the box: a first, normal answer
    first_answer = _messages(page)[-1][1]
    assert "✗" not in first_answer and _box(page) == ("", 0)

    bad = tmp_path / "notes.png"
    bad.write_text("shopping list: eggs, milk")
    page.locator("#chat_in input[type=file]").set_input_files(str(bad))
    page.wait_for_function("() => document.querySelectorAll('#chat_in .thumbnail-item').length")
    if with_text:
        page.locator("#chat_in textarea").fill("And what is this?")
    # Waiting in the box, the file is already called out, with what to do about it.
    waiting = _wait_text(page, "#chat_counts", "notes.png", "×")
    assert "✗ notes.png is not an image" in waiting and "Take it out of the box" in waiting
    _send_and_wait(page, 4)
    shown = _messages(page)
    assert [role for role, _ in shown] == ["user", "bot", "user", "bot"], shown
    assert shown[1][1] == first_answer, "the refusal went into the last answer's bubble"
    assert "notes.png" in shown[2][1]  # the user's turn shows, the refused one too
    refusal = shown[3][1]
    assert refusal.startswith("✗ notes.png") and "taken out of the message box" in refusal
    assert str(tmp_path) not in refusal and "PIL" not in refusal
    page.wait_for_function("() => !document.querySelectorAll('#chat_in .thumbnail-item').length")
    assert _box(page) == ("And what is this?" if with_text else "", 0)

    page.locator("#chat_in textarea").fill("What now?")
    _send_and_wait(page, 6)
    shown = _messages(page)
    assert [role for role, _ in shown] == ["user", "bot"] * 3, shown
    assert shown[4][1].strip() == "What now?"
    answer = shown[5][1]
    assert "✗" not in answer and "notes.png" not in answer and "random weights" in answer
    assert _box(page) == ("", 0)


def test_a_loaded_file_box_says_how_to_choose_another(page):
    """gr.File shows no picker while it holds a file: a line under the file says to
    press × first (issue 46)."""
    from gemma_explore.app.ui import REPLACE_FILE

    page.wait_for_selector("#image_in .file-preview-holder")
    said = page.evaluate(
        "() => getComputedStyle(document.querySelector('#image_in .file-preview-holder'),"
        " '::after').content"
    )
    assert REPLACE_FILE in said and "×" in said
    page.locator("#image_in button[aria-label=Clear]").click()  # the × the line names
    page.wait_for_function("() => !document.querySelector('#image_in .file-preview-holder')")
    assert page.locator("#image_in input[type=file]").count() == 1  # the picker is back
