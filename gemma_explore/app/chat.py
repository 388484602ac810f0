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
from gemma_explore.app.outputs import error_text, md
from gemma_explore.app.tabs import budget_of
from gemma_explore.errors import MediaError
from gemma_explore.models.bundle import Bundle
from gemma_explore.processing.inputs import prepare_inputs

__all__ = ["chat_preview", "chat_stream", "turn_counts"]


def turn_counts(bundle: Bundle, input_ids: list[int]) -> dict[str, int]:
    """Prompt tokens of one turn by kind: text (template and markers included) and each
    modality's placeholders, read from the ids the model receives."""
    spec = bundle.spec
    out = {m: input_ids.count(spec.id_of(tok)) for m, tok in spec.placeholder_tokens.items()}
    return {"text": len(input_ids) - sum(out.values()), **out}


def _counts_line(counts: dict[str, int], generated: int | None, seconds: float | None) -> str:
    parts = " · ".join(f"{k} {v}" for k, v in counts.items())
    line = f"**This turn**: {sum(counts.values())} prompt tokens ({parts})"
    if generated is not None:
        line += f" · {generated} generated"
    if seconds is not None:
        line += f" · {seconds * 1000:.0f} ms"
    return line


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
            why = error_text(exc).removeprefix("✗ ")
            problems.append(f"✗ **{md(file_name(path))}**: {why}")
    return content, problems


@dataclass
class _Turn:
    """A turn ready to stream: its pieces and, where we tokenized it, its counts."""

    pieces: Iterator[str]
    counts: dict[str, int] | None  # None: a remote server tokenizes the turn itself


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
    return _Turn(pieces, turn_counts(bundle, prepared.input_ids))


def _ending(elapsed: float, *, stopped: bool, random_weights: bool) -> str:
    """The answer's last line: how long, whether the user stopped it, whether it is noise."""
    suffix = "\n\n_(" + ("stopped by you, " if stopped else "") + f"{elapsed * 1000:.0f} ms"
    return suffix + (", random weights: this text is noise)_" if random_weights else ")_")


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
        shown = md(text) + "".join(f"\n[{md(file_name(p))}]" for p in files)
        start = time.perf_counter()
        turn = _start(bundle, content, budget, int(max_new_tokens), turn_stop)
        history += [{"role": "user", "content": shown}, {"role": "assistant", "content": ""}]
        counts_md = _counts_line(turn.counts, None, None) if turn.counts is not None else ""
        if turn.counts is not None:  # the turn's counts show before its first token
            yield history, counts_md
        answer, generated = "", 0
        for piece in turn.pieces:
            answer, generated = answer + piece, generated + 1
            history[-1] = {"role": "assistant", "content": md(answer)}
            yield history, counts_md
        elapsed = time.perf_counter() - start
        outcome["stopped"] = stopped = turn_stop.user.is_set()
        ending = _ending(elapsed, stopped=stopped, random_weights=bundle.is_random_weights)
        history[-1] = {"role": "assistant", "content": md(answer) + ending}
        if turn.counts is not None:
            counts_md = _counts_line(turn.counts, generated, elapsed)
        yield history, counts_md
    except Exception as exc:  # noqa: BLE001
        outcome["failed"] = True
        yield history + [{"role": "assistant", "content": error_text(exc)}], ""
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
        content = [attachment(path) for path in files]
        if text:
            content.append({"type": "text", "text": text})
        if not content:
            return ""
        messages = [{"role": "user", "content": content}]
        prepared = prepare_inputs(
            messages, max_soft_tokens=budget_of(bundle, budget), bundle=bundle
        )
        line = _counts_line(turn_counts(bundle, prepared.input_ids), None, None)
        return line.replace("**This turn**", "**Waiting to be asked** (press Enter)")
    except Exception as exc:  # noqa: BLE001 - the box's own problem, as a line
        return error_text(exc)
