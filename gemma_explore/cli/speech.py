"""``gemma-explore transcribe``: a clip to text with Gemma 3n's fixed speech prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gemma_explore.cli.common import _fail, _progress
from gemma_explore.engines.load import ENGINES, engine_help


def transcribe(
    clip: Annotated[
        Path,
        typer.Argument(
            help="A clip (any rate: resampled to 16 kHz), up to vLLM's 600 s decode limit; "
            "past 30 s it is sent in windows the model hears whole (--no-split: whole, and "
            "the model hears its first 30 s)."
        ),
    ],
    language: Annotated[
        str | None, typer.Option(help="ISO 639-1 code of the speech (e.g. fr).")
    ] = None,
    translate_to: Annotated[
        str | None,
        typer.Option("--translate-to", help="Translate into this ISO 639-1 language instead."),
    ] = None,
    translate: Annotated[
        bool, typer.Option("--translate", help="Translate (target unnamed).")
    ] = False,
    model: Annotated[
        str, typer.Option(help="A Gemma 3n checkpoint, folder or hub id.")
    ] = "tiny-gemma3n",
    engine: Annotated[str, typer.Option(help=f"Who answers: {engine_help()}.")] = ENGINES[0],
    base_url: Annotated[
        str | None, typer.Option(help="For a server engine: its URL (…/v1).")
    ] = None,
    max_new_tokens: Annotated[int, typer.Option(min=1, help="Longest answer.")] = 128,
    show_prompt: Annotated[
        bool, typer.Option("--show-prompt", help="Print the fixed prompt too.")
    ] = False,
    split: Annotated[
        bool,
        typer.Option(
            "--split/--no-split",
            help="A clip past 30 s: send the windows the model hears whole (plan_long_audio) "
            "and join the texts; --no-split sends it whole (the model hears its first 30 s).",
        ),
    ] = True,
) -> None:
    """Transcribe (or translate) a clip with Gemma 3n's fixed speech-to-text prompt."""
    from gemma_explore.engines.load import engine_options
    from gemma_explore.models.checkpoints import guess_family
    from gemma_explore.models.tiny import TINY_NAMES
    from gemma_explore.processing.transcription import transcription_request

    task = "translate" if translate or translate_to else "transcribe"
    try:
        options = engine_options(engine, base_url=base_url)
    except ValueError as exc:
        _fail(str(exc))
    try:
        family = TINY_NAMES.get(model) or (None if Path(model).is_dir() else guess_family(model))
        # Check the request before loading any model: languages, limits, the clip itself.
        known = {"family": family} if family else {}  # a folder's family: read once loaded
        transcription_request(clip, language=language, task=task, to_language=translate_to, **known)
    except (ValueError, RuntimeError) as exc:
        _fail(str(exc))
    request = dict(language=language, task=task, to_language=translate_to)
    request |= dict(max_new_tokens=max_new_tokens, split=split)
    result = _load_and_transcribe(model, options, clip, request, base_url)
    if show_prompt:
        typer.echo(f"prompt: {result.prompt!r}")
    typer.echo(result.text)
    if result.note:
        typer.echo(f"({result.note})")


def _load_and_transcribe(
    model: str, options: dict[str, Any], clip: Path, request: dict[str, Any], base_url: str | None
) -> Any:
    """Load ``model`` and transcribe ``clip`` with a two-step progress bar; a failure is
    one line (no server: how to start one or where to point)."""
    from gemma_explore.engines.load import load

    with _progress(total=2, desc=f"loading {model}", unit="step") as bar:
        try:
            bundle = load(model, **options)
            bar.set_description("transcribing")
            bar.update()
            result = bundle.transcribe(clip, **request)
            bar.update()
        except ConnectionError:
            url = base_url or "the default address (http://127.0.0.1:8000/v1)"
            _fail(
                f"No server answered at {url}: start one with `vllm serve {model}`, or give "
                "its address with --base-url http://HOST:PORT/v1."
            )
        except (ValueError, RuntimeError) as exc:
            _fail(str(exc))
    return result
