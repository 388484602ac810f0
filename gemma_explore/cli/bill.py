"""``gemma-explore bill``: the tokens a dataset costs at each budget, read from headers."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Annotated, Any

import typer

from gemma_explore.cli.common import _FAMILY_HELP, _fail, _family, _progress
from gemma_explore.facts.families import DEFAULT_FAMILY


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
    """The first files' tokens per budget, one line each; a clip past the extractor's cut
    says what the model hears of it."""
    from gemma_explore.bill.walk import budget_label
    from gemma_explore.facts.families import get_family

    if not shown:
        return
    unit = result.unit
    heard_s = get_family(result.family).audio.max_seconds
    labels = "  ".join(f"{budget_label(b):>13}" for b in budgets)
    width = max(40, min(80, max(len(r.path) for r in shown)))
    typer.echo(f"{unit:<{width}} {'kind':<10} {labels}")
    for row in shown:
        tokens = "  ".join(f"{t:>13,}" for t in row.tokens)
        cut = f"  (the model hears {heard_s:g} s; {row.cut_s:,.1f} s cut)" if row.cut_s else ""
        typer.echo(f"{_short(row.path, width):<{width}} {row.kind:<10} {tokens}{cut}")
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
