"""The Serving tab's probe row in Chromium at 1280 px, pointed at servers that are not vLLM
(issue 46): a web server answering HTML error pages (``python -m http.server``'s own
handler) and a port where an SSH banner answers. The page shows one line where the figure
would be: no gradio "Error" toast, no HTML, no traceback, no figure, no table.

The demo and Chromium start as in test_browser.py (its fixtures and helpers)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.app.test_browser import (  # noqa: F401 - browser and page are fixtures
    _tab,
    _wait_text,
    browser,
    page,
    pytestmark,
)
from tests.conformance.hostile_servers import MODEL, hostile_server


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextmanager
def http_server(folder: str) -> Iterator[str]:
    """What ``python -m http.server`` runs (its handler, serving ``folder``), on a free
    loopback port; yields the URL a user would paste, ending in /v1."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=folder))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _probe(tab, url: str) -> str:
    tab.locator("#probe_url textarea, #probe_url input").first.fill(url)
    tab.locator("#probe_model textarea, #probe_model input").first.fill(MODEL)
    tab.locator("#probe_button").click()
    return _wait_text(tab, "#probe_error", "✗", url)


@pytest.mark.parametrize("server", ["http.server", "banner"])
def test_the_probe_shows_one_line_for_a_server_that_is_not_vllm(page, tmp_path, server):  # noqa: F811
    _tab(page, "Serving")
    page.locator("#probe_button").scroll_into_view_if_needed()
    with http_server(str(tmp_path)) if server == "http.server" else hostile_server(server) as url:
        line = _probe(page, url).strip()
    if server == "http.server":  # GET /v1/models: its 404 page
        assert "answered HTTP 404 (Not Found) with an HTML page" in line
        assert "check the port and that the URL ends in /v1" in line
    else:
        assert "answered 'SSH-2.0-OpenSSH_9.6', which is not HTTP" in line
    assert "\n" not in line, line
    shown = page.locator("#probe_error").inner_html().lower()
    assert "error response" not in shown and "<title>" not in shown and "<h1" not in shown
    toasts = page.locator("[data-testid=toast-body]").filter(visible=True)
    assert toasts.count() == 0, toasts.all_inner_texts()
    assert page.locator("#probe_plot img, #probe_plot canvas").count() == 0
    assert page.locator("#probe_table").inner_text().strip() == ""
    body = page.locator("body").inner_text()
    assert "Traceback" not in body and "Error response" not in body
    # The line shows within one screen of the button that asked for it.
    button, error, fold = page.evaluate(
        """() => [document.querySelector('#probe_button').getBoundingClientRect().bottom,
                  document.querySelector('#probe_error').getBoundingClientRect().bottom,
                  window.innerHeight]"""
    )
    assert 0 < error - button <= fold, (button, error, fold)
