"""The Chat tab's handlers: one multimodal turn, streamed, and the token counts of the
turn waiting in the box. Plain functions, no gradio import.

A turn shows the user's message in the history first, then reads its attachments: a
file that cannot be read is refused before anything is sent (one message, its own bubble,
naming each such file) and taken out of the box, so the next send does not meet it again.
A readable turn prepares the prompt once (its counts show before the first token), streams
the answer, and ends it with how long it took and whether the user stopped it.

>>> turn_counts(get_bundle("tiny-gemma4"), [2, 105, 258880, 258880])
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
    """A prepared turn's prompt tokens, as the counts line shows them: each attachment as
    its plan's soft tokens + markers (+ a video's timestamps) = its prompt tokens (the
    Image, Audio and Video tabs' "prompt tokens" rows, the same number), and the text
    around them (the chat template and the typed words), with its vocabulary.

    ``total`` is len(input_ids), what layout_prompt counts for the same turn, and equals
    ``text`` plus every attachment's prompt tokens."""

    total: int  # len(input_ids): what layout_prompt counts for the same turn
    text: int  # everything else: the chat template and the typed words
    plans: tuple[tuple[str, Any], ...]  # ("image" / "audio" / "video", its plan), in order
    vocabulary: str  # what the text is counted with

    def line(self) -> str:
        parts = [f"text {self.text} (the chat template and your words; {self.vocabulary})"]
        parts += [_item(kind, plan) for kind, plan in self.plans]
        return f"{self.total} prompt tokens ({' · '.join(parts)})"


def _item(kind: str, plan: Any) -> str:
    """One attachment's prompt tokens as its plan adds them up: soft tokens, the markers
    around them (BOI/EOI, BOA/EOA: per frame for a video), a video's timestamps and
    Gemma 3n's "\\n\\n" wrappers."""
    if kind == "video":
        extra = [f"{plan.num_markers} markers", f"{plan.num_timestamp_tokens} timestamps"]
    else:
        around = plan.total_tokens - plan.num_soft_tokens
        breaks = around - 2 if plan.spec.wraps_in_newlines else 0
        extra = [f"{around - breaks} markers"] + ([f"{breaks} line breaks"] if breaks else [])
    return f"{kind} {plan.num_soft_tokens} soft + {' + '.join(extra)} = {plan.total_tokens}"


def _turn_counts(bundle: Bundle, prepared: Any) -> TurnCounts:
    """Each attachment planned as its tab plans it (the same budget, the same frames), so
    one image, clip or video shows one count on every surface."""
    from gemma_explore.facts.families import AUDIO_SAMPLING_RATE
    from gemma_explore.plans.audio import plan_audio
    from gemma_explore.plans.image import plan_image
    from gemma_explore.plans.video import plan_video

    spec = bundle.spec
    ids = list(prepared.input_ids)
    images = iter(prepared.images)
    audios = iter(prepared.audios)
    videos = iter(zip(prepared.videos, prepared.video_frame_indices, strict=False))
    plans: list[tuple[str, Any]] = []
    for message in prepared.messages:
        items = message.get("content")
        for item in items if isinstance(items, list) else []:
            kind = item.get("type") if isinstance(item, dict) else None
            if kind == "image":
                b = prepared.max_soft_tokens if spec.image.budgets else None
                plans.append(("image", plan_image(next(images), family=spec, max_soft_tokens=b)))
            elif kind == "audio":
                wave = next(audios)
                plans.append(
                    ("audio", plan_audio(wave, family=spec, sampling_rate=AUDIO_SAMPLING_RATE))
                )
            elif kind == "video":
                video, idx = next(videos)
                plans.append(("video", plan_video(video, family=spec, max_frames=len(idx))))
    text = len(ids) - sum(p.total_tokens for _, p in plans)
    return TurnCounts(len(ids), text, tuple(plans), bundle.vocabulary)


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


def _read_attachments(files: list[str]) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """Each readable file as a content item, one line per file that could not be read,
    and the paths of those files (the ones to take out of the box)."""
    content: list[dict[str, Any]] = []
    problems: list[str] = []
    refused: list[str] = []
    for path in files:
        try:
            content.append(attachment(path))
        except Exception as exc:  # noqa: BLE001 - one line per failing attachment
            problems.append(file_error(path, exc))
            refused.append(path)
    return content, problems, refused


def _refusal(problems: list[str], refused: list[str], *, rest: bool) -> str:
    """The one message for a turn refused for its attachments: what is wrong with each,
    that nothing was sent, that the files left the box, and what to do next."""
    names = ", ".join(md(file_name(p)) for p in refused)
    them = "it" if len(refused) == 1 else "them"
    after = (
        "The rest of your message is back in the box: press Enter to send it without "
        f"{them}, or attach another file."
        if rest
        else "Attach another file, or type a message."
    )
    return "\n\n".join(
        [
            *problems,
            f"Not sent: {names} {'was' if len(refused) == 1 else 'were'} taken out "
            f"of the message box. {after}",
        ]
    )


def _without(message: dict[str, Any] | str, refused: list[str]) -> dict[str, Any] | None:
    """The box's value with the refused files taken out (None: nothing left in it)."""
    if isinstance(message, str):
        return {"text": message, "files": []} if message.strip() else None
    kept = [
        f
        for f in (message or {}).get("files") or []
        if (f if isinstance(f, str) else (f or {}).get("path")) not in refused
    ]
    text = (message or {}).get("text") or ""
    return {"text": text, "files": kept} if text.strip() or kept else None


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


def _shown(text: str, files: list[str]) -> str:
    """The user's turn as the history shows it: the words, then each file's own name."""
    return (md(text) + "".join(f"\n[{md(file_name(p))}]" for p in files)).strip()


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
    The user's turn is added to the history first, whatever happens next; a problem is
    its own assistant message after it, never text added to an earlier answer.
    Setting ``stop`` (the user's Stop) or closing this generator ends generation at the
    next token. ``outcome``, when given, is filled with ``failed`` (the turn never ran),
    ``box`` (what the message box should hold afterwards: None to empty it; a turn
    refused for its files gives back the message without them, any other failure the
    message as it was, to fix and resend) and ``stopped`` (the user stopped it; a turn
    that simply finished is not "stopped").
    """
    history = list(history or [])
    outcome = outcome if outcome is not None else {}
    outcome.update(failed=False, stopped=False, box=None)
    turn_stop = _TurnStop(stop)
    turn = None
    text, files = split_message(message)
    shown = _shown(text, files)
    if shown:  # every user turn shows, a refused one too
        history.append({"role": "user", "content": shown})
    try:
        # The files first: a bad one is refused before the model is even looked up.
        content, problems, refused = _read_attachments(files)
        if problems:
            outcome["failed"] = True
            outcome["box"] = box = _without(message, refused)
            refusal = _refusal(problems, refused, rest=box is not None)
            yield history + [{"role": "assistant", "content": refusal}], ""
            return
        bundle = get_bundle(model_name)
        if text:
            content.append({"type": "text", "text": text})
        if not content:
            raise MediaError("Type a message or attach an image, clip or video.")
        notes = _cut_notes(bundle, files, content)
        start = time.perf_counter()
        turn = _start(bundle, content, budget, int(max_new_tokens), turn_stop)
        history.append({"role": "assistant", "content": ""})
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
        outcome["box"] = _without(message, [])
        if history and history[-1] == {"role": "assistant", "content": ""}:
            history.pop()  # the answer that never came: the error takes its place
        yield history + [{"role": "assistant", "content": file_error(None, exc)}], ""
    finally:
        if turn is not None and hasattr(turn.pieces, "close"):
            turn.pieces.close()  # an abandoned turn stops its generation thread


def chat_preview(model_name: str, message: dict[str, Any] | str, budget: Any = None) -> str:
    """The token counts of the turn waiting in the chat box, before anything is asked
    (the Chat tab's result on page load). A message, never an exception.

    >>> chat_preview("tiny-gemma4", "Hi").startswith("**Waiting to be asked** (press Enter): ")
    True
    """
    try:
        bundle = get_bundle(model_name)
        if bundle.processor is None:
            return ""  # a remote server tokenizes the turn itself
        text, files = split_message(message)
        content, problems, refused = _read_attachments(files)
        if problems:
            it = "it" if len(refused) == 1 else "them"
            advice = (
                f"Take {it} out of the box with {'its' if it == 'it' else 'their'} × before "
                f"you send; sent as it is, the turn is refused and {it} taken out."
            )
            return "\n\n".join([*problems, advice])
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
