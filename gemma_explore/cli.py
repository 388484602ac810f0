"""``gemma-explore``: token plans, dataset bills, serving flags, the demo and transcription.

Built on typer. Every command prints its answer and exits 0, or prints one line
``gemma-explore: error: …`` saying what to fix and exits 2. Anything slower than a
second shows a progress bar on stderr (tqdm; hidden when stderr is not a terminal).

    gemma-explore plan photo.jpg talk.wav --family gemma4 --budget 280
    gemma-explore bill ./dataset --budget 70,280,1120 --recursive --out bill.csv --plot bill.png
    gemma-explore serve-args google/gemma-4-E4B-it --budget 560
    gemma-explore demo --model tiny-gemma3n --port 7861
    gemma-explore transcribe clip.wav --language fr --translate-to en

Without installing the script: ``python -m gemma_explore.cli …``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

__all__ = ["app", "main", "serve_command", "serving_recipe"]

app = typer.Typer(
    name="gemma-explore",
    help="See what Gemma 3n, Gemma 4 and Gemma 4 Unified make of images, clips and videos, "
    "from the shell.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,  # plain click output: an error is one "Error: …" line
    pretty_exceptions_enable=False,
)


def _fail(message: str) -> NoReturn:
    """One line on stderr saying what to fix, and exit code 2 (bad input)."""
    typer.echo(f"gemma-explore: error: {' '.join(str(message).split())}", err=True)
    raise typer.Exit(2)


def _progress(**kwargs: Any) -> Any:
    from tqdm import tqdm

    return tqdm(file=sys.stderr, disable=None, dynamic_ncols=True, **kwargs)


# --------------------------------------------------------------------------- plan


def _plain(value: Any) -> Any:
    """A plan as JSON-ready data: dataclasses as dicts, tuples as lists, no pixel arrays."""
    if dataclasses.is_dataclass(value):
        heavy = {"image", "waveform", "frames"}  # the pixels/samples kept for figures
        return {
            f.name: _plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name not in heavy
        }
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


@app.command(
    epilog="Example: gemma-explore plan photo.jpg talk.wav clip.mp4 --family gemma4 --budget 280"
)
def plan(
    files: Annotated[list[Path], typer.Argument(metavar="FILE", help="Images, clips or videos.")],
    family: Annotated[str, typer.Option(help="gemma4, gemma3n or gemma4_unified.")] = "gemma4",
    budget: Annotated[
        int | None,
        typer.Option(help="Gemma 4 image budget: 70, 140, 280, 560 or 1120 (default 280)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per file.")] = False,
) -> None:
    """Print how each file becomes tokens, with the steps of the derivation."""
    from .families import get_family
    from .headers import kind_of
    from .plans import plan_audio, plan_image, plan_video

    try:
        spec = get_family(family)
    except ValueError as exc:
        _fail(str(exc))
    errors = []
    with _progress(total=len(files), desc="planning", unit="file") as bar:
        for path in files:
            kind = kind_of(path)
            try:
                if kind == "image":
                    result: Any = plan_image(path, family=spec.name, max_soft_tokens=budget)
                elif kind == "audio":
                    result = plan_audio(path, family=spec.name)
                elif kind == "video":
                    result = plan_video(path, family=spec.name)
                else:
                    raise ValueError(
                        f"unsupported file type {path.suffix or '(no suffix)'}: give an image, "
                        "a clip (.wav, .flac, .mp3, …) or a video (.mp4, .mov, …)"
                    )
            except ValueError as exc:  # MediaError is a ValueError
                errors.append(f"{path}: {exc}")
                bar.update()
                continue
            bar.update()
            if as_json:
                typer.echo(json.dumps({"file": str(path), "kind": kind, **_plain(result)}))
            else:
                typer.echo(f"{path}\n{result!r}\n")
    if errors:
        for line in errors[:-1]:
            typer.echo(f"gemma-explore: error: {' '.join(line.split())}", err=True)
        _fail(errors[-1])


# --------------------------------------------------------------------------- bill


def _budgets(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        _fail(f"--budget takes numbers separated by commas (70,280,1120), got {text!r}.")


def _short(path: str, width: int) -> str:
    return path if len(path) <= width else "…" + path[-(width - 1) :]


@app.command(
    epilog="Example: gemma-explore bill ./dataset --family gemma4 --budget 70,280,1120 "
    "--recursive --out bill.csv --plot bill.png"
)
def bill(
    folder: Annotated[Path, typer.Argument(help="A dataset folder (or one file).")],
    family: Annotated[str, typer.Option(help="gemma4, gemma3n or gemma4_unified.")] = "gemma4",
    budget: Annotated[
        str | None,
        typer.Option(help="Gemma 4 budgets, comma-separated (default: 280). Not for Gemma 3n."),
    ] = None,
    recursive: Annotated[
        bool, typer.Option("--recursive", "-r", help="Walk sub-folders too.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option(help="Write every row to a .csv or .parquet file.")
    ] = None,
    plot: Annotated[
        Path | None, typer.Option(help="Save a histogram of tokens per file (.png).")
    ] = None,
    workers: Annotated[
        int | None, typer.Option(min=1, help="Processes (default: every core).")
    ] = None,
    per_file: Annotated[
        int, typer.Option(min=0, help="Print this many files' tokens (all rows: --out).")
    ] = 20,
) -> None:
    """Total the tokens a dataset costs at each budget, reading file headers only."""
    from .bill import BillWriter, budget_label, resolve_budgets
    from .bill import bill as run_bill
    from .families import get_family

    try:
        spec = get_family(family)
        budgets = resolve_budgets(spec.name, _budgets(budget))
        if out is not None:
            BillWriter.check(out)
    except ValueError as exc:
        _fail(str(exc))
    if not folder.exists():
        _fail(f"No file or folder at {folder}. Check the path.")
    if plot is not None and plot.suffix.lower() != ".png":
        _fail(f"--plot saves a PNG: give a name ending in .png, got {str(plot)!r}.")
    writer = BillWriter(out, budgets) if out is not None else None
    try:
        with _progress(desc="billing", unit="file") as bar:
            shown: list[Any] = []  # the first --per-file rows only: memory stays flat

            def on_row(row: Any) -> None:
                bar.update()
                if writer is not None:
                    writer.write(row)
                if len(shown) < per_file and row.error is None:
                    shown.append(row)

            result = run_bill(
                folder, family=spec.name, budgets=budgets, recursive=recursive, workers=workers,
                on_row=on_row,
            )  # fmt: skip
    finally:
        if writer is not None:
            writer.close()
    if shown:
        labels = "  ".join(f"{budget_label(b):>13}" for b in budgets)
        typer.echo(f"{'file':<40} {'kind':<6} {labels}")
        for row in shown:
            tokens = "  ".join(f"{t:>13,}" for t in row.tokens)
            typer.echo(f"{_short(row.path, 40):<40} {row.kind:<6} {tokens}")
        if result.billed_files > len(shown):
            more = result.billed_files - len(shown)
            typer.echo(f"… and {more} more billed files (--out bill.csv writes every row)")
        typer.echo("")
    typer.echo(result.text())
    if out is not None:
        typer.echo(f"Rows written to {out}")
    if plot is not None:
        from .viz.bill import show_bill

        fig = show_bill(result)
        fig.savefig(plot, dpi=120)
        typer.echo(f"Histogram saved to {plot}")


# --------------------------------------------------------------------------- serve-args


def serving_recipe(
    model: str,
    *,
    family: str | None = None,
    budget: int | None = None,
    max_model_len: int | None = None,
    images: int | None = None,
    audios: int | None = None,
    videos: int | None = None,
    reasons: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The ``vllm serve`` arguments for a model, as a dict of engine arguments.

    With a stated workload (``images``, ``audios`` or ``videos``), the serving plan's
    recipe (``engine_args(for_workload=Workload(…))``) proposes ``limit_mm_per_prompt``,
    ``mm_processor_kwargs``, ``max_model_len`` and ``max_num_batched_tokens``, and fills
    ``reasons`` (argument → why); without one, the engine defaults of ``engine_args``.

    >>> serving_recipe("google/gemma-4-E4B-it", budget=560)["mm_processor_kwargs"]
    {'max_soft_tokens': 560}
    """
    from .families import get_family
    from .inference.vllm_backend import engine_args
    from .inference.vllm_recipe import Workload, engine_recipe
    from .models.checkpoints import family_from_config, guess_family, modalities_of
    from .models.tiny import TINY_NAMES

    config = None
    if Path(model).is_dir():  # a local checkpoint: its config says the family and towers
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(model)
    if family is None:
        family = TINY_NAMES.get(model) or (
            family_from_config(config, model) if config is not None else guess_family(model)
        )
    fam = get_family(family).name
    has_audio = "audio" in modalities_of(fam, config, model)  # Gemma 4 26B/31B: none
    if images is None and audios is None and videos is None:
        return engine_args(
            model, family=fam, max_soft_tokens=budget, max_model_len=max_model_len,
            has_audio=has_audio,
        )  # fmt: skip
    work = Workload(
        images=images or 0, max_soft_tokens=budget, audio_clips=audios or 0, videos=videos or 0
    )
    if reasons is not None:
        recipe = engine_recipe(model, workload=work, family=fam, has_audio=has_audio)
        reasons.update(recipe.reasons)
    return engine_args(
        model, family=fam, max_model_len=max_model_len, has_audio=has_audio, for_workload=work
    )


def serve_command(args: dict[str, Any]) -> str:
    """Engine arguments as a ``vllm serve`` command line (vLLM's flags: dashes, JSON dicts).

    >>> serve_command({"model": "m", "max_model_len": 8192, "enforce_eager": True,
    ...                "trust_remote_code": False, "limit_mm_per_prompt": {"image": 4}})
    'vllm serve m --max-model-len 8192 --enforce-eager --limit-mm-per-prompt \\'{"image": 4}\\''
    """
    parts = ["vllm", "serve", shlex.quote(str(args["model"]))]
    for key, value in args.items():
        if key == "model" or value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            parts.append(flag)
        elif isinstance(value, dict | list):
            parts += [flag, shlex.quote(json.dumps(value))]
        else:
            parts += [flag, shlex.quote(str(value))]
    return " ".join(parts)


@app.command(
    "serve-args",
    epilog="Example: gemma-explore serve-args google/gemma-4-E4B-it --budget 560 --images 2",
)
def serve_args(
    model: Annotated[str, typer.Argument(help="A hub id or a local checkpoint folder.")],
    family: Annotated[
        str | None,
        typer.Option(help="gemma4, gemma3n or gemma4_unified (default: from the name)."),
    ] = None,
    budget: Annotated[int | None, typer.Option(help="Gemma 4's start-up image budget.")] = None,
    max_model_len: Annotated[int | None, typer.Option(help="Context length to reserve.")] = None,
    images: Annotated[int | None, typer.Option(min=0, help="Images per prompt.")] = None,
    audios: Annotated[int | None, typer.Option(min=0, help="Clips per prompt.")] = None,
    videos: Annotated[int | None, typer.Option(min=0, help="Videos per prompt (Gemma 4).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The engine arguments as JSON.")] = False,
) -> None:
    """Print the `vllm serve` command (or its arguments) for a Gemma checkpoint."""
    reasons: dict[str, str] = {}
    try:
        args = serving_recipe(
            model, family=family, budget=budget, max_model_len=max_model_len, images=images,
            audios=audios, videos=videos, reasons=reasons,
        )  # fmt: skip
    except (ValueError, RuntimeError) as exc:  # bad budget, unknown family (ModelLoadError)
        _fail(str(exc))
    if as_json:
        typer.echo(json.dumps({"args": args, "reasons": reasons} if reasons else args, indent=2))
        return
    for key, why in reasons.items():  # the workload recipe: why each argument
        typer.echo(f"# {key}: {why}")
    if "mm_processor_kwargs" in args:
        # A server flag, not an engine argument: without it `vllm serve` answers 400 to a
        # request's own mm_processor_kwargs (its image budget). It trusts the clients.
        args = {**args, "trust_request_mm_kwargs": True}
    typer.echo(serve_command(args))


# --------------------------------------------------------------------------- demo

_DEMO: dict[str, Any] = {}


def demo_main() -> Any:
    """``demo_app.main(argv)`` from the repository's ``demo_app.py``: one definition of
    the demo's flags and launch, shared with ``python demo_app.py``."""
    if "main" not in _DEMO:
        path = Path(__file__).resolve().parent.parent / "demo_app.py"
        if not path.exists():
            _fail(
                "The web demo (demo_app.py) ships with the repository, not the package: run "
                "this from a checkout of gemma_explore."
            )
        spec = importlib.util.spec_from_file_location("demo_app", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _DEMO["main"] = module.main
    return _DEMO["main"]


@app.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
    epilog="Example: gemma-explore demo --model tiny-gemma3n --port 7861",
)
def demo(ctx: typer.Context) -> None:
    """Start the web demo on 127.0.0.1 (the same flags as `python demo_app.py`)."""
    argv = list(ctx.args)
    if "-h" in argv or "--help" in argv:
        typer.echo("Example: gemma-explore demo --model tiny-gemma3n --port 7861\n")
    program, sys.argv[0] = sys.argv[0], "gemma-explore demo"  # argparse's usage line
    try:
        demo_main()(argv)  # argparse: --help exits 0, a bad flag exits 2 with its reason
    finally:
        sys.argv[0] = program


# --------------------------------------------------------------------------- transcribe


@app.command(
    epilog="Example: gemma-explore transcribe clip.wav --language fr --translate-to en "
    "--model tiny-gemma3n"
)
def transcribe(
    clip: Annotated[
        Path, typer.Argument(help="A clip of at most 30 s (any rate: resampled to 16 kHz).")
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
    backend: Annotated[str, typer.Option(help="hf, vllm or openai (a running vllm serve).")] = "hf",
    base_url: Annotated[
        str | None, typer.Option(help="For --backend openai: the server URL.")
    ] = None,
    max_new_tokens: Annotated[int, typer.Option(min=1, help="Longest answer.")] = 128,
    show_prompt: Annotated[
        bool, typer.Option("--show-prompt", help="Print the fixed prompt too.")
    ] = False,
) -> None:
    """Transcribe (or translate) a clip with Gemma 3n's fixed speech-to-text prompt."""
    from .loading import BACKENDS, load
    from .models.checkpoints import guess_family
    from .models.tiny import TINY_NAMES
    from .transcription import transcription_request

    task = "translate" if translate or translate_to else "transcribe"
    if backend not in BACKENDS:
        _fail(f"Unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}.")
    try:
        family = TINY_NAMES.get(model) or (None if Path(model).is_dir() else guess_family(model))
        # Check the request before loading any model: languages, limits, the clip itself.
        transcription_request(
            clip, family=family or "gemma3n", language=language, task=task,
            to_language=translate_to,
        )  # fmt: skip
    except (ValueError, RuntimeError) as exc:
        _fail(str(exc))
    options = {"base_url": base_url} if backend == "openai" and base_url else {}
    with _progress(total=2, desc=f"loading {model}", unit="step") as bar:
        try:
            bundle = load(model, backend=backend, **options)
            bar.set_description("transcribing")
            bar.update()
            result = bundle.transcribe(
                clip, language=language, task=task, to_language=translate_to,
                max_new_tokens=max_new_tokens,
            )  # fmt: skip
            bar.update()
        except (ValueError, RuntimeError, ConnectionError) as exc:
            _fail(str(exc))
    if show_prompt:
        typer.echo(f"prompt: {result.prompt!r}")
    typer.echo(result.text)
    if result.note:
        typer.echo(f"({result.note})")


def main(argv: list[str] | None = None) -> None:
    """The ``gemma-explore`` console script."""
    app(args=argv, prog_name="gemma-explore")


if __name__ == "__main__":
    main()
