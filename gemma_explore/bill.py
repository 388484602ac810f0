"""A token bill for a whole dataset: what every sample will cost, at each budget, from headers.

Before spending a GPU-day on 50 000 images, an archive of clips or a hub dataset's parquet
shards, one wants the total: how many prompt tokens at budget 70, 280 or 1120, which
samples will not load, and how the cost spreads. The work is split in four parts:

* :mod:`gemma_explore.bill_core`: the pure per-sample function (headers → plans'
  arithmetic → a :class:`BillRow`);
* :mod:`gemma_explore.bill_sources`: folders, parquet shards, WebDataset tars,
  ``save_to_disk`` folders and the local hub cache, cut into picklable tasks;
* :mod:`gemma_explore.bill_engines`: the process pool (``engine="local"``) and Ray Data
  (``engine="ray"``), which map that one function;
* this module: :func:`bill` ties them together and aggregates on the fly (memory holds
  counters, never the rows, however large the dataset), :class:`Bill` is the result,
  :meth:`Bill.summary` the cost per budget with a checkpoint's KV bytes, and
  :class:`BillWriter` streams rows to CSV or parquet.

>>> b = bill("dataset/", family="gemma4", budgets=[70, 280, 1120])   # doctest: +SKIP
>>> b.totals                                                         # doctest: +SKIP
(71_280, 268_800, 1_075_200)
"""

from __future__ import annotations

import csv
import heapq
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .bill_core import (
    BillRow,
    Item,
    Sample,
    bill_file,
    bill_sample,
    budget_label,
    resolve_budgets,
)
from .bill_engines import ENGINES, local_rows, ray_rows
from .bill_sources import Source, Walk, scan, walk_files
from .families import get_family

if TYPE_CHECKING:
    from .serving import ServingPlan

__all__ = [
    "Bill",
    "BillRow",
    "BillSummary",
    "BillWriter",
    "BudgetCost",
    "Item",
    "Progress",
    "Sample",
    "Walk",
    "bill",
    "bill_file",
    "bill_sample",
    "budget_label",
    "resolve_budgets",
    "walk_files",
]


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class BudgetCost:
    """One budget's line of the summary."""

    budget: int | None  # None: a family without image budgets
    total_tokens: int  # every billed sample's prompt tokens
    tokens_per_sample: float  # mean over billed samples
    max_tokens: int  # the largest sample
    kv_bytes_per_sample: float | None  # mean KV bytes of one sample's prompt (None: no model)
    kv_bytes_max: int | None  # the largest sample's KV bytes
    kv_bytes_total: int | None  # summed over the samples (each prompt's own cache)


@dataclass(frozen=True)
class BillSummary:
    """The bill keyed by budget, with what the tokens cost in KV on one checkpoint."""

    checkpoint: str | None  # the model the KV bytes are for
    samples: int  # billed samples
    lines: tuple[BudgetCost, ...]
    steps: tuple[str, ...] = field(default=(), compare=False)

    def text(self) -> str:
        """A table: one line per budget."""
        head = f"{'budget':>8} {'total tokens':>15} {'per sample':>11} {'largest':>8}"
        if self.checkpoint is not None:
            head += f" {'KV/sample':>11} {'KV largest':>11} {'KV, all samples':>16}"
        out = [head]
        for c in self.lines:
            label = "fixed" if c.budget is None else str(c.budget)
            line = (f"{label:>8} {c.total_tokens:>15,} {c.tokens_per_sample:>11,.1f} "
                    f"{c.max_tokens:>8,}")  # fmt: skip
            if c.kv_bytes_per_sample is not None:
                line += (f" {_mib(c.kv_bytes_per_sample):>11} {_mib(c.kv_bytes_max):>11} "
                         f"{_mib(c.kv_bytes_total):>16}")  # fmt: skip
            out.append(line)
        if self.checkpoint is not None:
            out.append(f"KV bytes on {self.checkpoint}: " + "; ".join(self.steps))
        return "\n".join(out)

    def __repr__(self) -> str:
        return self.text()


def _mib(n: float | None) -> str:
    if n is None:
        return "—"
    if n >= 1024**3:
        return f"{n / 1024**3:,.2f} GiB"
    return f"{n / 1024**2:,.2f} MiB"


@dataclass(frozen=True)
class Bill:
    """A dataset's bill: totals per budget, failures, the slowest part, the spread."""

    family: str
    budgets: tuple[int | None, ...]
    files: int  # samples seen (files, for a folder of files)
    billed: dict[str, int]  # sample kind ("image", "image+text", …) → samples billed
    totals: tuple[int, ...]  # prompt tokens over all billed samples, per budget
    totals_by_kind: dict[str, tuple[int, ...]]  # item kind (and "text") → totals per budget
    failures: tuple[tuple[str, str], ...]  # (sample, reason) for samples not billed
    walk_problems: tuple[tuple[str, str], ...]  # (path, reason): loops, unreadable folders
    slowest_files: tuple[tuple[str, float], ...]  # (sample, seconds), slowest first
    part_seconds: dict[str, float]  # where the time went: walking, headers by kind, arithmetic
    histograms: tuple[dict[int, int], ...]  # per budget: tokens per sample → samples
    wall_s: float  # seconds from start to end
    unit: str = "file"  # "file" for a folder of files, "sample" for shards
    engine: str = "local"  # which engine ran the per-sample function
    text_tokenizer: str | None = None  # what counted the captions (None: not counted)

    @property
    def billed_files(self) -> int:
        return sum(self.billed.values())

    @property
    def slowest_part(self) -> tuple[str, float]:
        """The part that took the most (summed) seconds, e.g. ``("video headers", 1.2)``."""
        return max(self.part_seconds.items(), key=lambda kv: kv[1], default=("nothing", 0.0))

    def histogram_text(self, budget: int | None = None, *, bins: int = 10, width: int = 40) -> str:
        """A text histogram of tokens per sample at one budget (default: the first)."""
        i = self.budgets.index(budget) if budget in self.budgets else 0
        counts = self.histograms[i]
        if not counts:
            return f"(no {self.unit}s billed)"
        lo, hi = min(counts), max(counts)
        step = max(1, math.ceil((hi - lo + 1) / bins))
        binned = Counter()
        for value, n in counts.items():
            binned[(value - lo) // step] += n
        top = max(binned.values())
        lines = []
        for b in range(max(binned) + 1):
            a = lo + b * step
            n = binned.get(b, 0)
            bar = "█" * max(1 if n else 0, round(n / top * width))
            lines.append(f"{a:>7}–{a + step - 1:<7} {bar} {n}")
        return "\n".join(lines)

    def summary(self, serving: ServingPlan | None = None) -> BillSummary:
        """Total tokens, tokens per sample and, given a :func:`~gemma_explore.plan_serving`
        plan, the KV bytes each sample's prompt holds on that checkpoint (exact per sample:
        the histogram keeps every distinct token count).

        >>> b = bill("dataset/", budgets=[280, 1120])                        # doctest: +SKIP
        >>> b.summary(plan_serving("tiny-gemma4")).lines[0].kv_bytes_total    # doctest: +SKIP
        """
        n = self.billed_files
        lines = []
        for budget, hist, total in zip(self.budgets, self.histograms, self.totals, strict=True):
            kv_mean = kv_max = kv_total = None
            if serving is not None and hist:
                kv_total = sum(count * serving.kv_bytes(t) for t, count in hist.items())
                kv_max = serving.kv_bytes(max(hist))
                kv_mean = kv_total / n
            lines.append(BudgetCost(
                budget, total, total / n if n else 0.0, max(hist, default=0), kv_mean, kv_max,
                kv_total,
            ))  # fmt: skip
        steps: tuple[str, ...] = ()
        name = None
        if serving is not None:
            name = serving.model.name
            steps = (
                f"{serving.kv_bytes_per_token_full:,} B per token on full-attention layers + "
                f"{serving.kv_bytes_per_token_sliding:,} B on sliding layers until their window "
                f"fills ({serving.kv_dtype_bytes} B per element)",
                "each sample is its own prompt: KV, all samples = Σ over samples of the KV "
                "its prompt holds (what a batch job's cache sees, one sample at a time)",
            )
        return BillSummary(name, n, tuple(lines), steps)

    def text(self) -> str:
        """The bill as the command line prints it."""
        spec = get_family(self.family)
        unit, units = self.unit, f"{self.unit}s"
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.billed.items())) or "none"
        head = (
            f"Token bill — {spec.display_name}: {self.files} {units}, {self.billed_files} billed "
            f"({kinds}), {len(self.failures)} failed, in {self.wall_s:.2f} s"
        )
        if self.engine != "local":
            head += f" on {self.engine}"
        out = [head]
        if self.text_tokenizer is not None:
            out.append(f"  text counted with {self.text_tokenizer}")
        for i, b in enumerate(self.budgets):
            label = "fixed (no budget)" if b is None else f"budget {b}"
            per = self.totals[i] / self.billed_files if self.billed_files else 0.0
            by = ", ".join(f"{k} {t[i]:,}" for k, t in sorted(self.totals_by_kind.items()))
            out.append(f"  {label:>18}: {self.totals[i]:>12,} tokens ({per:,.1f} per {unit}; {by})")
        if self.failures:
            out.append(f"{units.capitalize()} that fail ({len(self.failures)}):")
            out += [f"  {p}: {r}" for p, r in self.failures]
        if self.walk_problems:
            out.append(f"Not walked ({len(self.walk_problems)}):")
            out += [f"  {p}: {r}" for p, r in self.walk_problems]
        part, secs = self.slowest_part
        total = sum(self.part_seconds.values()) or 1.0
        parts = ", ".join(f"{k} {v:.3f} s" for k, v in self.part_seconds.items())
        out.append(f"Slowest part: {part} ({secs:.3f} s, {secs / total:.0%} of the work; {parts})")
        if self.slowest_files:
            out.append(f"Slowest {units}: " + ", ".join(f"{Path(p).name} {s * 1000:.1f} ms"
                                                        for p, s in self.slowest_files))  # fmt: skip
        first = self.budgets[0]
        title = "fixed" if first is None else f"budget {first}"
        out.append(f"Tokens per {unit} ({title}):")
        out.append(self.histogram_text(first))
        return "\n".join(out)

    def __repr__(self) -> str:
        return self.text()


class _Tally:
    """Running totals: O(kinds + distinct token counts + failures), never O(rows)."""

    def __init__(self, budgets: tuple[int | None, ...], keep_slowest: int) -> None:
        self.budgets = budgets
        self.files = 0
        self.billed: Counter[str] = Counter()
        self.totals = [0] * len(budgets)
        self.by_kind: dict[str, list[int]] = {}
        self.failures: list[tuple[str, str]] = []
        self.slowest: list[tuple[float, str]] = []  # a min-heap of the slowest samples
        self.keep = keep_slowest
        self.parts: Counter[str] = Counter()
        self.hist = [Counter() for _ in budgets]

    def add(self, row: BillRow) -> None:
        self.files += 1
        media = [k for k in (row.kind or "").split("+") if k and k != "text"]
        if row.header_s or media:
            self.parts[f"{media[0]} headers" if media else "headers"] += row.header_s
        self.parts["token arithmetic"] += row.plan_s
        if row.text_s:
            self.parts["text tokenizer"] += row.text_s
        if row.error is not None:
            self.failures.append((row.path, row.error))
            return
        self.billed[row.kind] += 1
        for kind, tokens in row.parts:
            kind_totals = self.by_kind.setdefault(kind, [0] * len(self.budgets))
            for i, t in enumerate(tokens):
                kind_totals[i] += t
        for i, t in enumerate(row.tokens):
            self.totals[i] += t
            self.hist[i][t] += 1
        item = (row.header_s + row.plan_s + row.text_s, row.path)
        if len(self.slowest) < self.keep:
            heapq.heappush(self.slowest, item)
        else:
            heapq.heappushpop(self.slowest, item)


# --------------------------------------------------------------------------- progress


@dataclass(frozen=True)
class Progress:
    """Where a running bill is: rows done, the rate, and an ETA from the shards' metadata."""

    rows: int  # samples billed so far (failures included)
    rows_total: int | None  # what parquet footers / arrow batches / the walk announce
    bytes_done: int  # tar bytes read so far
    bytes_total: int  # tar bytes in the source
    seconds: float  # since the start
    final_total: bool  # False while the walk still finds files (rows_total may grow)

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    @property
    def fraction(self) -> float | None:
        """Share of the work done: rows and tar bytes weighted by what each source holds."""
        parts = []
        if self.rows_total:
            parts.append((min(1.0, self.rows / self.rows_total), self.rows_total))
        if self.bytes_total:
            # tars hold an unknown number of rows: weigh them by their share of the bytes
            parts.append((min(1.0, self.bytes_done / self.bytes_total), self.bytes_total))
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0][0]
        return (parts[0][0] + parts[1][0]) / 2

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the rate so far (None until the metadata makes it knowable)."""
        f = self.fraction
        if f is None or f <= 0 or not self.final_total:
            return None
        return self.seconds * (1 - f) / f

    def text(self) -> str:
        """``"1,024 / 100,000 rows, 5,210 rows/s, ETA 19 s"``."""
        total = f" / {self.rows_total:,}" if self.rows_total and not self.bytes_total else ""
        eta = self.eta_s
        tail = f", ETA {eta:,.0f} s" if eta is not None else ""
        if self.bytes_total:
            tail += f", tars {self.bytes_done / 1e6:,.1f} / {self.bytes_total / 1e6:,.1f} MB"
        return f"{self.rows:,}{total} rows, {self.rows_per_s:,.0f} rows/s{tail}"


# --------------------------------------------------------------------------- the bill


def bill(
    root: str | os.PathLike,
    *,
    family: str = "gemma4",
    budgets: Iterable[int] | None = None,
    recursive: bool = True,
    workers: int | None = None,
    engine: str = "local",
    column: str | None = None,
    text_column: str | None = None,
    text: Callable[[str], int] | None = None,
    on_row: Callable[[BillRow], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    keep_slowest: int = 5,
) -> Bill:
    """Bill every sample of ``root`` at each budget, from headers, on ``engine``.

    ``root``: a media file or folder, one ``.parquet`` / ``.tar`` shard or a folder of them,
    a ``save_to_disk`` folder, or a hub dataset name (``org/name``) found in the local
    cache. ``column`` picks the media column of parquet / arrow shards. ``text`` counts a
    caption's tokens (``gemma_explore.bill_cost.text_counter(family)``; its ``label`` says
    which tokenizer). ``engine``: ``"local"`` (a process pool; ``workers`` defaults to
    every core, 1 runs here) or ``"ray"`` (Ray Data; joins a running cluster, else starts
    a local one). ``on_row`` sees every row as it arrives (a CSV writer); ``on_progress``
    the rate and ETA after each task; nothing else keeps them.

    >>> bill("/no/such/folder").walk_problems
    (('/no/such/folder', 'no such file or folder'),)
    """
    start = time.perf_counter()
    spec = get_family(family)
    chosen = resolve_budgets(spec.name, budgets)
    if engine not in ENGINES:
        raise ValueError(f"--engine must be one of {', '.join(ENGINES)}, got {engine!r}.")
    source: Source = scan(root, recursive=recursive, column=column, text_column=text_column)
    tally = _Tally(chosen, keep_slowest)
    run = local_rows if engine == "local" else ray_rows
    done_rows = done_bytes = 0
    seen: set[int] = set()  # tar tasks already counted (Ray may split a task's rows)
    for task, rows in run(source.tasks(), family=spec.name, budgets=chosen, text=text,
                          workers=workers):  # fmt: skip
        for row in rows:
            tally.add(row)
            if on_row is not None:
                on_row(row)
        done_rows += len(rows)
        if task.format == "tar" and id(task) not in seen:
            seen.add(id(task))
            done_bytes += task.nbytes
        if on_progress is not None:
            on_progress(Progress(
                done_rows, source.expected_rows or None, done_bytes, source.expected_bytes,
                time.perf_counter() - start, source.scanned,
            ))  # fmt: skip
    parts = {"walking folders and shard metadata": source.seconds, **dict(tally.parts)}
    return Bill(
        family=spec.name,
        budgets=chosen,
        files=tally.files,
        billed=dict(tally.billed),
        totals=tuple(tally.totals),
        totals_by_kind={k: tuple(v) for k, v in tally.by_kind.items()},
        failures=tuple(sorted(tally.failures)),
        walk_problems=tuple(sorted(source.problems)),
        slowest_files=tuple((p, s) for s, p in sorted(tally.slowest, reverse=True)),
        part_seconds={k: v for k, v in parts.items() if v > 0},
        histograms=tuple(dict(h) for h in tally.hist),
        wall_s=time.perf_counter() - start,
        unit=source.unit,
        engine=engine,
        text_tokenizer=getattr(text, "label", None if text is None else repr(text)),
    )


# --------------------------------------------------------------------------- output


class BillWriter:
    """Rows to ``.csv`` (streamed) or ``.parquet`` (row groups of 10 000), as they come.

    >>> BillWriter.check("bill.xlsx")
    Traceback (most recent call last):
    ...
    ValueError: --out must end in .csv or .parquet, got 'bill.xlsx'.
    """

    BATCH = 10_000  # parquet rows per row group held in memory

    def __init__(self, path: str | os.PathLike, budgets: tuple[int | None, ...]) -> None:
        self.path = Path(path)
        self.format = self.check(self.path)
        self.budgets = budgets
        self.columns = [
            "path", "kind", "height", "width", "duration_s", "frames", "fps",
            *(budget_label(b) for b in budgets), "text_tokens", "error", "seconds",
        ]  # fmt: skip
        self._batch: list[list[Any]] = []
        self._parquet: Any = None
        if self.format == "csv":
            self._fh = self.path.open("w", newline="")
            self._csv = csv.writer(self._fh)
            self._csv.writerow(self.columns)

    @staticmethod
    def check(path: str | os.PathLike) -> str:
        """``"csv"`` or ``"parquet"``; a clear error for anything else or missing pyarrow."""
        suffix = Path(path).suffix.lower()
        if suffix == ".csv":
            return "csv"
        if suffix == ".parquet":
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                raise ValueError(
                    "Writing .parquet needs pyarrow, which is not installed: "
                    "pip install gemma-explore[parquet], or use --out bill.csv."
                ) from None
            return "parquet"
        raise ValueError(f"--out must end in .csv or .parquet, got {str(path)!r}.")

    def write(self, row: BillRow) -> None:
        tokens = list(row.tokens) or [None] * len(self.budgets)
        values = [
            row.path, row.kind, row.height, row.width, row.duration_s, row.frames, row.fps,
            *tokens, row.text_tokens, row.error, round(row.header_s + row.plan_s + row.text_s, 6),
        ]  # fmt: skip
        if self.format == "csv":
            self._csv.writerow(values)
            return
        self._batch.append(values)
        if len(self._batch) >= self.BATCH:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self._batch and self._parquet is not None:
            return
        types = {"path": pa.string(), "kind": pa.string(), "error": pa.string()}
        floats = {"duration_s", "fps", "seconds"}
        schema = pa.schema(
            [(c, types.get(c, pa.float64() if c in floats else pa.int64())) for c in self.columns]
        )
        columns = {c: [r[i] for r in self._batch] for i, c in enumerate(self.columns)}
        table = pa.table(columns, schema=schema)
        if self._parquet is None:
            self._parquet = pq.ParquetWriter(self.path, schema)
        self._parquet.write_table(table)
        self._batch = []

    def close(self) -> None:
        if self.format == "csv":
            self._fh.close()
            return
        self._flush()  # an empty bill still writes a file with the columns
        self._parquet.close()

    def __enter__(self) -> BillWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
