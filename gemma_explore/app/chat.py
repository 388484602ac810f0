"""The Chat tab's handlers: one multimodal turn, streamed, and the token counts of the
turn waiting in the box. Plain functions, no gradio import.

A turn reads its attachments (one message per file that fails), prepares the prompt
once (its counts show before the first token), streams the answer, and ends it with
how long it took and whether the user stopped it.

>>> turn_counts(get_bundle("tiny-gemma4"), [2, 105, 258880, 258880])  # doctest: +SKIP
{'text': 2, 'image': 2, 'audio': 0, 'video': 0}
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gemma_explore.app.attachments import attachment, file_name, split_message
from gemma_explore.app.bundles import get_bundle
from gemma_explore.app.outputs import file_error, md
from gemma_explore.app.tabs import budget_of
from gemma_explore.errors import MediaError
from gemma_explore.models.bundle import Bundle
from gemma_explore.processing.inputs import prepare_inputs

__all__ = ["FRESH_PROMPT", "TurnCounts", "chat_preview", "chat_stream", "turn_counts"]

# Said beside the conversation: the chat does not send the earlier turns.
FRESH_PROMPT = "each message is a fresh prompt: the model does not see the earlier turns"
# Partial answers are sent at most this often: a browser that falls behind a token-by-token
# stream keeps drawing old updates after Stop.
_EVERY_S = 0.1


def turn_counts(bundle: Bundle, input_ids: list[int]) -> dict[str, int]:
    """Prompt tokens of one turn by kind: text (template and markers included) and each
    modality's placeholders, read from the ids the model receives."""
    spec = bundle.spec
    out = {m: input_ids.count(spec.id_of(tok)) for m, tok in spec.placeholder_tokens.items()}
    return {"text": len(input_ids) - sum(out.values()), **out}


@dataclass(frozen=True)
class TurnCounts:
    """A prepared turn's prompt tokens, as the counts line shows them: the placeholders
    by kind, each video as its plan's soft tokens + markers + timestamps (the Video tab's
    rows, layout_prompt's count), and the text around them, with its vocabulary."""

    total: int  # len(input_ids): what layout_prompt counts for the same turn
    text: int  # everything else: the template, the typed text, image and audio markers
    placeholders: dict[str, int]  # "image" / "audio" / "video" → placeholders
    videos: tuple[Any, ...]  # one VideoPlan per attached video
    vocabulary: str  # what the text is counted with

    def line(self) -> str:
        parts = [f"text {self.text} ({self.vocabulary})"]
        for kind, n in self.placeholders.items():
            if kind != "video" or not self.videos:
                parts.append(f"{kind} {n}")
        parts += [
            f"video {v.num_soft_tokens} soft + {v.num_markers} markers + "
            f"{v.num_timestamp_tokens} timestamps = {v.total_tokens}"
            for v in self.videos
        ]
        return f"{self.total} prompt tokens ({' · '.join(parts)})"


def _turn_counts(bundle: Bundle, prepared: Any) -> TurnCounts:
    from gemma_explore.plans.video import plan_video

    ids = list(prepared.input_ids)
    counts = turn_counts(bundle, ids)
    videos = tuple(
        plan_video(v, family=bundle.spec, max_frames=len(idx))
        for v, idx in zip(prepared.videos, prepared.video_frame_indices, strict=False)
    )
    around = sum(v.num_markers + v.num_timestamp_tokens for v in videos)
    placeholders = {k: n for k, n in counts.items() if k != "text"}
    return TurnCounts(len(ids), counts["text"] - around, placeholders, videos, bundle.vocabulary)


def _counts_line(counts: TurnCounts, generated: int | None, seconds: float | None) -> str:
    line = f"**This turn**: {counts.line()}"
    if generated is not None:
        line += f" · {generated} generated"
    if seconds is not None:
        line += f" · {seconds * 1000:.0f} ms"
    return line


def _cut_notes(bundle: Bundle, files: list[str], content: list[dict[str, Any]]) -> list[str]:
    """One line per clip longer than the family hears: it is cut, and the page says so."""
    limit = bundle.spec.audio.max_seconds
    clips = [(p, c) for p, c in zip(files, content, strict=False) if c.get("type") == "audio"]
    notes = []
    for path, item in clips:
        wave, rate = item["audio"]
        seconds = len(wave) / rate
        if limit is not None and seconds > limit:
            notes.append(
                f"⚠ {md(file_name(path))} is {seconds:.1f} s: {bundle.spec.display_name} hears "
                f"its first {limit:g} s only (cut it to choose which {limit:g} s)."
            )
    return notes


class _TurnStop(threading.Event):
    """The event a chat turn hands the engine: set when the user presses Stop, or when
    the engine itself ends the stream (it sets its event when it finishes). Only
    ``user`` says which of the two happened."""

    def __init__(self, user: threading.Event | None) -> None:
        super().__init__()
        self.user = user if user is not None else threading.Event()

    def is_set(self) -> bool:
        return super().is_set() or self.user.is_set()


def _read_attachments(files: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """Each file as a content item, and one line per file that could not be read."""
    content: list[dict[str, Any]] = []
    problems: list[str] = []
    for path in files:
        try:
            content.append(attachment(path))
        except Exception as exc:  # noqa: BLE001 - one message per failing attachment
            problems.append(file_error(path, exc))
    return content, problems


@dataclass
class _Turn:
    """A turn ready to stream: its pieces and, where we tokenized it, its counts."""

    pieces: Iterator[str]
    counts: TurnCounts | None  # None: a remote server tokenizes the turn itself


def _start(bundle: Bundle, content: list[dict], budget: Any, n: int, stop: Any) -> _Turn:
    """Prepare the prompt once and start the engine's stream."""
    messages = [{"role": "user", "content": content}]
    b = budget_of(bundle, budget)
    if bundle.processor is None:  # a remote server: it tokenizes the turn itself
        pieces = bundle.generate(
            messages, stream=True, max_new_tokens=n, max_soft_tokens=b, stop=stop
        )
        return _Turn(pieces, None)
    prepared = prepare_inputs(messages, max_soft_tokens=b, bundle=bundle)
    pieces = bundle.engine.stream(prepared, max_new_tokens=n, stop=stop)
    return _Turn(pieces, _turn_counts(bundle, prepared))


def _ending(elapsed: float, *, stopped: bool, random_weights: bool) -> str:
    """The answer's last line: how long, whether the user stopped it, whether it is noise."""
    suffix = "\n\n_(" + ("stopped by you, " if stopped else "") + f"{elapsed * 1000:.0f} ms"
    return suffix + (", random weights: this text is noise)_" if random_weights else ")_")


def _paced(pieces: Iterator[str], stopped: threading.Event) -> Iterator[tuple[str, int, bool]]:
    """(answer so far, pieces so far, show it): the first piece shown at once, then at
    most one update every ``_EVERY_S``, and none once the user pressed Stop (the text
    freezes there; the caller's last update, with "stopped by you", follows at the next
    token). Every piece is read, so the final answer is whole."""
    answer, generated, last = "", 0, 0.0
    for piece in pieces:
        answer, generated = answer + piece, generated + 1
        now = time.perf_counter()
        show = not stopped.is_set() and (generated == 1 or now - last >= _EVERY_S)
        last = now if show else last
        yield answer, generated, show


def _with_notes(line: str, notes: list[str]) -> str:
    return "\n\n".join([line, *notes]) if notes else line


def chat_stream(
    model_name: str,
    message: dict[str, Any] | str,
    history: list[dict] | None,
    max_new_tokens: int = 32,
    budget: Any = None,
    *,
    stop: threading.Event | None = None,
    outcome: dict[str, Any] | None = None,
) -> Iterator[tuple[list[dict], str]]:
    """One multimodal chat turn, streamed: yields (history with the growing answer,
    the turn's token counts).

    ``message`` is gradio's MultimodalTextbox value ``{"text": ..., "files": [...]}``.
    Setting ``stop`` (the user's Stop) or closing this generator ends generation at the
    next token. ``outcome``, when given, is filled with ``failed`` (the turn never ran:
    the caller keeps the question) and ``stopped`` (the user stopped it; a turn that
    simply finished is not "stopped").
    """
    history = list(history or [])
    outcome = outcome if outcome is not None else {}
    outcome.update(failed=False, stopped=False)
    turn_stop = _TurnStop(stop)
    turn = None
    try:
        bundle = get_bundle(model_name)
        text, files = split_message(message)
        content, problems = _read_attachments(files)
        if problems:
            outcome["failed"] = True
            yield history + [{"role": "assistant", "content": p} for p in problems], ""
            return
        if text:
            content.append({"type": "text", "text": text})
        if not content:
            raise MediaError("Type a message or attach an image, clip or video.")
        notes = _cut_notes(bundle, files, content)
        shown = md(text) + "".join(f"\n[{md(file_name(p))}]" for p in files)
        start = time.perf_counter()
        turn = _start(bundle, content, budget, int(max_new_tokens), turn_stop)
        history += [{"role": "user", "content": shown}, {"role": "assistant", "content": ""}]
        counts_md = _with_notes(
            _counts_line(turn.counts, None, None) if turn.counts is not None else "", notes
        )
        if turn.counts is not None:  # the turn's counts show before its first token
            yield history, counts_md
        answer, generated = "", 0
        for step in _paced(turn.pieces, turn_stop.user):
            answer, generated, show = step
            if show:
                history[-1] = {"role": "assistant", "content": md(answer)}
                yield history, counts_md
        elapsed = time.perf_counter() - start
        outcome["stopped"] = stopped = turn_stop.user.is_set()
        ending = _ending(elapsed, stopped=stopped, random_weights=bundle.is_random_weights)
        history[-1] = {"role": "assistant", "content": md(answer) + ending}
        if turn.counts is not None:
            counts_md = _with_notes(_counts_line(turn.counts, generated, elapsed), notes)
        yield history, counts_md
    except Exception as exc:  # noqa: BLE001
        outcome["failed"] = True
        yield history + [{"role": "assistant", "content": file_error(None, exc)}], ""
    finally:
        if turn is not None and hasattr(turn.pieces, "close"):
            turn.pieces.close()  # an abandoned turn stops its generation thread


def chat_preview(model_name: str, message: dict[str, Any] | str, budget: Any = None) -> str:
    """The token counts of the turn waiting in the chat box, before anything is asked
    (the Chat tab's result on page load). A message, never an exception.

    >>> chat_preview("tiny-gemma4", "Hi")                          # doctest: +SKIP
    '**Waiting to be asked** (press Enter): 12 prompt tokens (text 12 · image 0 · …)'
    """
    try:
        bundle = get_bundle(model_name)
        if bundle.processor is None:
            return ""  # a remote server tokenizes the turn itself
        text, files = split_message(message)
        content, problems = _read_attachments(files)
        if problems:
            return "\n\n".join(problems)
        notes = _cut_notes(bundle, files, content)
        if text:
            content.append({"type": "text", "text": text})
        if not content:
            return ""
        messages = [{"role": "user", "content": content}]
        prepared = prepare_inputs(
            messages, max_soft_tokens=budget_of(bundle, budget), bundle=bundle
        )
        line = _counts_line(_turn_counts(bundle, prepared), None, None)
        line = line.replace("**This turn**", "**Waiting to be asked** (press Enter)")
        return _with_notes(line, notes)
    except Exception as exc:  # noqa: BLE001 - the box's own problem, as a line
        return file_error(None, exc)
