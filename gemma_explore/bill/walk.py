"""A token bill for a whole dataset: what every sample will cost, at each budget, from headers.

Before spending a GPU-day on 50 000 images, an archive of clips or a hub dataset's parquet
shards, one wants the total: how many prompt tokens at budget 70, 280 or 1120, which
samples will not load, and how the cost spreads. The work is split in four parts:

* :mod:`gemma_explore.bill.core`: the pure per-sample function (headers → plans'
  arithmetic → a :class:`BillRow`);
* :mod:`gemma_explore.bill.sources`: folders, parquet shards, WebDataset tars,
  ``save_to_disk`` folders and the local hub cache, cut into picklable tasks;
* :mod:`gemma_explore.bill.runners`: the process pool (``runner="local"``) and Ray Data
  (``runner="ray"``), which map that one function;
* this module: :func:`bill` ties them together and aggregates on the fly (memory holds
  counters, never the rows, however large the dataset), reporting :class:`Progress`;
* :mod:`gemma_explore.bill.totals`: :class:`Bill` is the result, :meth:`Bill.summary`
  the cost per budget with a checkpoint's KV bytes;
* :mod:`gemma_explore.bill.writers`: :class:`BillWriter` streams rows to CSV or parquet.

>>> import tempfile, gemma_explore as ge
>>> dataset = tempfile.mkdtemp()
>>> ge.sample_photo().save(f"{dataset}/photo.jpg")
>>> b = bill(dataset, family="gemma4", budgets=[70, 280, 1120])
>>> b.totals
(65, 272, 1082)
"""

from __future__ import annotations

import heapq
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from gemma_explore.bill.core import (
    BillRow,
    Item,
    Sample,
    bill_file,
    bill_sample,
    budget_label,
    resolve_budgets,
)
from gemma_explore.bill.runners import RUNNERS, local_rows, ray_rows
from gemma_explore.bill.sources import Source, Walk, scan, walk_files
from gemma_explore.bill.totals import Bill, BillSummary, BudgetCost
from gemma_explore.facts.families import DEFAULT_FAMILY, FamilySpec, get_family

__all__ = [
    "Bill",
    "BillRow",
    "BillSummary",
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


# --------------------------------------------------------------------------- the tally


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
        self.cut_samples = 0  # billed samples holding a clip past the extractor's cut
        self.cut_s = 0.0  # the seconds past it, never heard

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
        if row.cut_s:
            self.cut_samples += 1
            self.cut_s += row.cut_s
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

    def counts(self) -> dict[str, Any]:
        """The :class:`Bill` fields the tally holds, frozen."""
        return {
            "files": self.files,
            "billed": dict(self.billed),
            "totals": tuple(self.totals),
            "totals_by_kind": {k: tuple(v) for k, v in self.by_kind.items()},
            "failures": tuple(sorted(self.failures)),
            "slowest_files": tuple((p, s) for s, p in sorted(self.slowest, reverse=True)),
            "histograms": tuple(dict(h) for h in self.hist),
            "cut_samples": self.cut_samples,
            "cut_s": self.cut_s,
        }


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
    family: str | FamilySpec = DEFAULT_FAMILY,
    budgets: Iterable[int] | None = None,
    recursive: bool = True,
    workers: int | None = None,
    runner: str = "local",
    column: str | None = None,
    text_column: str | None = None,
    text: Callable[[str], int] | None = None,
    on_row: Callable[[BillRow], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    keep_slowest: int = 5,
) -> Bill:
    """Bill every sample of ``root`` at each budget, from headers, on ``runner``.

    ``root``: a media file or folder, one ``.parquet`` / ``.tar`` shard or a folder of them,
    a ``save_to_disk`` folder, or a hub dataset name (``org/name``) found in the local
    cache. ``column`` picks the media column of parquet / arrow shards. ``text`` counts a
    caption's tokens (``gemma_explore.bill.cost.text_counter(family)``; its ``label`` says
    which tokenizer). ``runner``: ``"local"`` (a process pool; ``workers`` defaults to
    every core, 1 runs here) or ``"ray"`` (Ray Data; joins a running cluster, else starts
    a local one). ``on_row`` sees every row as it arrives (a CSV writer); ``on_progress``
    the rate and ETA after each task; nothing else keeps them.

    >>> bill("/no/such/folder").walk_problems
    (('/no/such/folder', 'no such file or folder'),)
    """
    start = time.perf_counter()
    spec = get_family(family)
    chosen = resolve_budgets(spec.name, budgets)
    if runner not in RUNNERS:
        raise ValueError(f"--runner must be one of {', '.join(RUNNERS)}, got {runner!r}.")
    source: Source = scan(root, recursive=recursive, column=column, text_column=text_column)
    tally = _Tally(chosen, keep_slowest)
    run = local_rows if runner == "local" else ray_rows
    done_rows = done_bytes = 0
    seen: set[int] = set()  # tar tasks already counted (Ray may split a task's rows)
    for task, rows in run(
        source.tasks(), family=spec.name, budgets=chosen, text=text, workers=workers
    ):
        for row in rows:
            tally.add(row)
            if on_row is not None:
                on_row(row)
        done_rows += len(rows)
        if task.format == "tar" and id(task) not in seen:
            seen.add(id(task))
            done_bytes += task.nbytes
        if on_progress is not None:
            on_progress(
                Progress(
                    done_rows,
                    source.expected_rows or None,
                    done_bytes,
                    source.expected_bytes,
                    time.perf_counter() - start,
                    source.scanned,
                )
            )
    parts = {"walking folders and shard metadata": source.seconds, **dict(tally.parts)}
    return Bill(
        family=spec.name,
        budgets=chosen,
        walk_problems=tuple(sorted(source.problems)),
        part_seconds={k: v for k, v in parts.items() if v > 0},
        wall_s=time.perf_counter() - start,
        unit=source.unit,
        runner=runner,
        text_tokenizer=getattr(text, "label", None if text is None else repr(text)),
        **tally.counts(),
    )
