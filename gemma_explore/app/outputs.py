"""What each demo tab's handler returns (one frozen dataclass per tab), and how its text
is written: escaped for the page, tables, the parity badge, the timings line, errors.

A handler never raises: a bad input gives ``Result.failed(message, notice)``, every
other output cleared (no stale figure or counts) and the model's notice kept.

>>> r = ImageResult.failed("✗ Upload an image first.", notice="")
>>> r.error == r.counts, r.patch_figure is None, r.parity
(True, True, '')
"""

from __future__ import annotations

import dataclasses
import html
import time
from dataclasses import dataclass
from typing import Any, Self

from gemma_explore.engines.load import ENGINE_TABLE
from gemma_explore.errors import EngineError, MediaError, ModelLoadError
from gemma_explore.tables import Table

__all__ = [
    "AudioResult",
    "ImageResult",
    "LayoutResult",
    "ServingResult",
    "TabResult",
    "TranscribeResult",
    "VideoResult",
    "error_text",
    "file_error",
    "md",
]


@dataclass(frozen=True)
class TabResult:
    """The fields every tab result shares; each tab's subclass adds its own outputs."""

    error: str | None = None  # the one-line message when the input was bad, else None

    @classmethod
    def blank(cls) -> Self:
        """No input yet: every figure None, every text empty, no error."""
        values = {
            f.name: None if f.name.endswith(("figure", "plan", "layout")) else ""
            for f in dataclasses.fields(cls)
            if f.init
        }
        return cls(**{**values, "error": None})

    @classmethod
    def failed(cls, error: str, *, notice: str = "") -> Self:
        """Every output cleared, ``error`` shown where the counts were, the notice kept."""
        names = {f.name for f in dataclasses.fields(cls)}
        values: dict[str, Any] = dict.fromkeys(names)
        values["error"] = error
        for name, value in (("counts", error), ("parity", ""), ("timings", ""), ("notice", notice)):
            if name in names:
                values[name] = value
        return cls(**values)


@dataclass(frozen=True)
class _Analysis(TabResult):
    counts: str = ""  # markdown table, or the error message
    parity: str = ""  # the one-line badge: our plan vs transformers vs vLLM
    timings: str = ""  # "Timings: plan 12 ms · … · total 80 ms"
    notice: str = ""  # the random-weights banner (kept when the input was bad)


@dataclass(frozen=True)
class ImageResult(_Analysis):
    """The Image tab: patch grid, pooled (or Unified's embedder) figure, counts."""

    patch_figure: Any = None  # Figure: the patch grid and its padding
    pooled_figure: Any = None  # Figure: real vs padding soft tokens (or Unified's blocks)
    plan: Any = None  # the ImagePlan both figures read


@dataclass(frozen=True)
class AudioResult(_Analysis):
    """The Audio tab: waveform, mel (or raw) frames and their token slots."""

    mel_figure: Any = None  # Figure from show_mel
    plan: Any = None  # the AudioPlan


@dataclass(frozen=True)
class VideoResult(_Analysis):
    """The Video tab: sampled frames with timestamps and tokens."""

    frames_figure: Any = None  # Figure from show_video_frames
    plan: Any = None  # the VideoPlan


@dataclass(frozen=True)
class LayoutResult(_Analysis):
    """The Prompt layout tab: the ribbon, its HTML form and the placeholder checks
    (``parity`` holds the checks)."""

    layout_figure: Any = None  # Figure from show_layout
    layout_html: str | None = None  # PromptLayout._repr_html_(), token names escaped
    layout: Any = None  # the PromptLayout


@dataclass(frozen=True)
class ServingResult(TabResult):
    """The Serving tab: what vLLM reserves for these engine arguments."""

    figure: Any = None  # Figure from show_serving
    table: str = ""  # markdown in vLLM's names, the verdict first ("" when refused)
    plan: Any = None  # the ServingPlan
    fits: bool | None = None  # the verdict: one engine fits the GPU (None: refused)
    warnings: str = ""  # "⚠ No request with one image fits …", one paragraph each
    assumption: str = ""  # the GPU the memory bar assumes, in words

    @classmethod
    def failed(cls, error: str, *, notice: str = "") -> Self:
        """Refused: the message alone, plot and table both cleared (never one stale)."""
        return cls(error=error)


@dataclass(frozen=True)
class TranscribeResult(TabResult):
    """The Audio tab's Transcribe button."""

    text: str = ""  # markdown: the transcript, or the error
    prompt: str | None = None  # the fixed prompt that was sent
    noise: bool = False  # True when the model's weights are random

    @classmethod
    def failed(cls, error: str, *, notice: str = "") -> Self:
        return cls(error=error, text=error)


def md(text: Any) -> str:
    """``text`` safe inside gradio's Markdown/HTML: token names such as ``<bos>`` and
    ``<image_soft_token>`` stay visible instead of being read as HTML tags.

    >>> md("0 <image_soft_token> for 1 image")
    '0 &lt;image_soft_token&gt; for 1 image'
    """
    return html.escape(str(text), quote=False)


def error_text(exc: BaseException) -> str:
    """A one-paragraph message for the UI.

    >>> error_text(MediaError("Upload an image first."))
    '✗ Upload an image first.'
    >>> error_text(EngineError("the server at http://127.0.0.1:8000/v1 answered HTTP 503"))
    '✗ the server at http://127.0.0.1:8000/v1 answered HTTP 503'
    """
    if isinstance(exc, ConnectionError):  # the library's text names base_url=; ours the flag
        where = str(exc).split(" (")[0]
        server = next(b.name for b in ENGINE_TABLE.values() if b.takes_base_url)
        return (
            f"✗ {md(where)}. Start the server (`vllm serve MODEL`), or relaunch the demo with "
            f"--engine {server} --base-url http://HOST:PORT/v1."
        )
    if isinstance(exc, MediaError | ModelLoadError | EngineError | ValueError):  # one line each
        return f"✗ {md(exc)}"
    return f"✗ Something went wrong ({type(exc).__name__}: {md(exc)}). Try another input."


def file_error(path: Any, exc: BaseException) -> str:
    """:func:`error_text` for an upload, naming the file once (by its own name, never its
    temporary folder).

    >>> file_error("/tmp/x/notes.png", MediaError("This file is not an image."))
    '✗ notes.png is not an image.'
    >>> file_error("/tmp/x/empty.png", MediaError("empty.png is empty (0 bytes)."))
    '✗ empty.png is empty (0 bytes).'
    """
    text = error_text(exc)
    name = md(str(path).replace("\\", "/").rsplit("/", 1)[-1])
    if not isinstance(path, str) or not name or name in text:
        return text
    if "This file" in text:
        return text.replace("This file", name, 1)
    return f"✗ {name}: {text.removeprefix('✗ ')}"


def counts_table(rows: list[tuple[str, Any]]) -> str:
    """A two-column markdown table, every cell escaped."""
    return Table(("quantity", "value"), tuple((md(k), md(v)) for k, v in rows)).markdown()


def parity_badge(report: Any) -> str:
    """Our plan vs the transformers processor vs vLLM's arithmetic, in one line."""
    if report.agree:
        return "✓ **Parity**: our plan, the transformers processor and vLLM's arithmetic agree."
    tokens = [r for r in report.rows if "token" in r.step or "placeholder" in r.step]
    if tokens and all(r.agree for r in tokens):  # the counts agree; a step before them not
        counted = ", ".join(f"{md(r.step)} {r.values[0]}" for r in tokens)
        return (
            f"✓ **Parity** on the token counts ({counted}: every side agrees). They part "
            f"earlier, at *{md(report.disagreements[0])}*, and meet again: {md(' '.join(report.notes))}"
        )
    first = md(report.disagreements[0])
    notes = md(" ".join(report.notes))
    return f"⚠ **Parity**: they part at *{first}*. {notes} Encoder: {md(report.encoder_follows)}."


class Timer:
    """Named wall-clock laps for the timings line."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._start = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = now - self._start
        self._start = now

    def text(self) -> str:
        shown = " · ".join(f"{k} {v * 1000:.0f} ms" for k, v in self.laps.items())
        return f"Timings: {shown} · total {sum(self.laps.values()) * 1000:.0f} ms"
