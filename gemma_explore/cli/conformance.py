"""The conformance commands: ``golden`` writes the set other runtimes test against;
``probe`` measures a running server against it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gemma_explore.cli.common import _fail, _release, _Vllm, release_line


def golden(
    out: Annotated[
        Path, typer.Option("--out", help="Folder to write the set to (made if missing).")
    ],
    vocabulary: Annotated[
        Path | None,
        typer.Option(
            help="The folder `gemma-explore tokenizer fetch` fills: adds the real ids of the "
            "text to your copy (never publish that copy)."
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="A JSON summary: counts, files, versions.")
    ] = False,
) -> None:
    """Write the conformance set other runtimes test against (docs/conformance.md): every
    case's input, steps and expanded prompt, made by transformers' processors (and vLLM's,
    where installed) and written where our plans agree."""
    from gemma_explore.conformance.generate import golden_command_text

    try:
        typer.echo(golden_command_text(out, vocabulary=vocabulary, as_json=as_json))
    except ValueError as e:
        _fail(str(e))


def probe_server(
    url: Annotated[str, typer.Argument(help="The server's base URL (/v1 is added when missing).")],
    model: Annotated[str, typer.Option(help="The model id the server serves (GET /v1/models).")],
    family: Annotated[
        str | None,
        typer.Option(help="gemma3n, gemma4 or gemma4_unified (default: read from --model's name)."),
    ] = None,
    images: Annotated[
        str | None,
        typer.Option(metavar="W×H,…", help="Image sizes (default 256x256,640x480,200x1000; none)."),
    ] = None,
    clips: Annotated[
        str | None,
        typer.Option(metavar="S,…", help="Clip lengths in seconds (default 5,35; none)."),
    ] = None,
    budget: Annotated[
        str | None,
        typer.Option(
            metavar="B,…",
            help="Budgets sent in mm_processor_kwargs for one image (default: the family's "
            "smallest and largest; none).",
        ),
    ] = None,
    video: Annotated[
        str | None,
        typer.Option(
            metavar="FRAMES@FPS", help="The video, where the family has one (default 41@1; none)."
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(min=1, help="Seconds each request may take.")] = 120.0,
    deadline: Annotated[
        float, typer.Option(min=1, help="Seconds the whole probe may take (every request).")
    ] = 300.0,
    as_json: Annotated[bool, typer.Option("--json", help="The cases as JSON, for CI.")] = False,
    vllm: _Vllm = None,
) -> None:
    """Measure what a running OpenAI-compatible server counts for images, clips and a video,
    against the reference and one vLLM release's arithmetic (--vllm), and give each case a
    verdict (exit 1 on a fault; exit 2, with one line, when the server gave no count)."""
    from gemma_explore.conformance.probe import probe_command_text

    release = _release(vllm)
    try:
        text, code = probe_command_text(
            url,
            model=model,
            family=family,
            images=images,
            clips=clips,
            budget=budget,
            video=video,
            timeout=timeout,
            deadline=deadline,
            as_json=as_json,
            vllm_version=release.version,
        )
    except ValueError as exc:  # a bad flag, in its own words; an unknown --family
        _fail(str(exc))
    if code == 2 and not as_json:  # the server gave no count: what it did, in one line
        _fail(text)
    if not as_json:  # the JSON names the release itself
        typer.echo(release_line(release))
    typer.echo(text)
    raise typer.Exit(code)
