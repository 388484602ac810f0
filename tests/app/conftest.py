"""A launched demo on a random free port, shared by the client and browser tests."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def app_url():
    from gemma_explore.app.ui import LAUNCH_OPTIONS, build_app

    demo = build_app("tiny-gemma4")
    port = _free_port()

    demo.launch(
        server_name="127.0.0.1",
        server_port=port,
        prevent_thread_lock=True,
        quiet=True,
        **LAUNCH_OPTIONS,  # the demo's own: share=False, the upload cap, its style and script
    )
    yield f"http://127.0.0.1:{port}/"
    demo.close()


@pytest.fixture(scope="session")
def artifacts_dir():
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
