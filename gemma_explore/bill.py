"""A token bill for a whole dataset: what every file will cost, at each budget, from headers.

Before spending a GPU-day on 50 000 images or an archive of clips, one wants the total:
how many prompt tokens at budget 70, 280 or 1120, which files will not load, and how the
cost spreads. :func:`bill_file` answers for one file, reading only its header
(:mod:`gemma_explore.headers`) and running the plans' arithmetic on the sizes it finds;
it is a pure function of its arguments, so it runs unchanged in a process pool here or
under Dask or Ray for a dataset that outgrows one machine. :func:`bill` walks a folder
(reporting symlink loops and unreadable folders instead of following them), bills the
files across cores in chunks, and aggregates on the fly: memory holds counters, never the
rows, however large the dataset.

>>> row = bill_file(SAMPLES_DIR / "photo.jpg", family="gemma4", budgets=(70, 280))  # doctest: +SKIP
>>> row.kind, row.tokens                                                             # doctest: +SKIP
('image', (66, 266))
"""

from __future__ import annotations

import csv
import functools
import heapq
import itertools
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .families import get_family
from .headers import audio_header, image_header, kind_of, video_header
from .plans import check_budget, plan_audio, plan_image, plan_video

__all__ = [
    "Bill",
    "BillRow",
    "BillWriter",
    "bill",
    "bill_file",
    "bill_rows",
    "resolve_budgets",
    "walk_files",
]

CHUNK = 256  # files per task sent to a worker: amortises the pickling round trip


def resolve_budgets(family: str, budgets: Iterable[int] | None = None) -> tuple[int | None, ...]:
    """The budgets to bill at: Gemma 4's allowed ones (default: its default budget);
    ``(None,)`` for Gemma 3n, whose images always cost 256 soft tokens.

    >>> resolve_budgets("gemma4", [70, 280, 1120]), resolve_budgets("gemma3n")
    ((70, 280, 1120), (None,))
    """
    spec = get_family(family)
    given = [b for b in (budgets or ()) if b is not None]
    if not spec.image.budgets:
        if given:
            raise ValueError(
                f"{spec.display_name} has no image budget (every image is "
                f"{spec.image.fixed_soft_tokens} soft tokens): drop --budget."
            )
        return (None,)
    if not given:
        return (spec.image.default_budget,)
    return tuple(dict.fromkeys(check_budget(spec, int(b)) for b in given))


def budget_label(budget: int | None) -> str:
    """Column name of a budget: ``tokens@280``, or ``tokens`` for a family without one."""
    return "tokens" if budget is None else f"tokens@{budget}"


# --------------------------------------------------------------------------- one file


@dataclass(frozen=True)
class BillRow:
    """What one file costs. Small on purpose: thousands travel between processes."""

    path: str
    kind: str | None  # "image", "audio", "video", or None for an unsupported file
    tokens: tuple[int, ...] = ()  # prompt tokens at each budget (empty when it failed)
    height: int | None = None  # image or frame size, upright
    width: int | None = None
    duration_s: float | None = None  # clips and videos
    frames: int | None = None  # video frames in the container
    fps: float | None = None
    error: str | None = None  # one line: why this file cannot be billed
    header_s: float = 0.0  # seconds reading the header
    plan_s: float = 0.0  # seconds in the plans' arithmetic


def bill_file(path: str | os.PathLike, *, family: str, budgets: tuple[int | None, ...]) -> BillRow:
    """Bill one file from its header: a pure function, safe to map with any executor.

    Never raises for a bad file: the row's ``error`` says what is wrong.

    >>> bill_file("notes.txt", family="gemma4", budgets=(280,)).error
    'unsupported file type .txt (not an image, clip or video)'
    """
    name = os.fspath(path)
    kind = kind_of(name)
    if kind is None:
        suffix = Path(name).suffix.lower() or "(no suffix)"
        return BillRow(
            name, None, error=f"unsupported file type {suffix} (not an image, clip or video)"
        )
    start = time.perf_counter()
    try:
        spec = get_family(family)
        if kind == "video" and not spec.has_video:
            raise ValueError(f"{spec.display_name} has no video input")
        if kind == "image":
            h, w = image_header(name)
            header = time.perf_counter()
            tokens = tuple(_image_tokens(h, w, family, b) for b in budgets)
            extra: dict[str, Any] = {"height": h, "width": w}
        elif kind == "audio":
            a = audio_header(name)
            header = time.perf_counter()
            n = plan_audio(a.frames, family=family, sampling_rate=a.sampling_rate).total_tokens
            tokens = (n,) * len(budgets)  # a clip's tokens do not depend on the image budget
            extra = {"duration_s": a.duration_s}
        else:
            v = video_header(name)
            header = time.perf_counter()
            n = plan_video(v.frames, fps=v.fps, frame_size=v.size, family=family).total_tokens
            tokens = (n,) * len(budgets)  # frames always use the video budget (70)
            extra = {
                "height": v.size[0],
                "width": v.size[1],
                "frames": v.frames,
                "fps": v.fps,
                "duration_s": v.frames / v.fps,
            }
    except Exception as exc:  # noqa: BLE001 - one bad file never stops the walk
        reason = " ".join(str(exc).split()) or type(exc).__name__
        return BillRow(name, kind, error=reason, header_s=time.perf_counter() - start)
    end = time.perf_counter()
    return BillRow(name, kind, tokens=tokens, header_s=header - start, plan_s=end - header, **extra)


@functools.lru_cache(maxsize=16_384)  # datasets repeat sizes (every phone photo is 3000×4000)
def _image_tokens(height: int, width: int, family: str, budget: int | None) -> int:
    return plan_image((height, width), family=family, max_soft_tokens=budget).total_tokens


def _bill_chunk(paths: list[str], *, family: str, budgets: tuple[int | None, ...]) -> list[BillRow]:
    return [bill_file(p, family=family, budgets=budgets) for p in paths]


# --------------------------------------------------------------------------- walking


@dataclass
class Walk:
    """Files under a folder, found lazily; what could not be walked lands in ``problems``."""

    root: Path
    recursive: bool = True
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    seconds: float = 0.0  # time spent listing folders

    def __iter__(self) -> Iterator[str]:
        root = self.root
        if root.is_file():
            yield str(root)
            return
        if not root.is_dir():
            self.problems.append((str(root), "no such file or folder"))
            return
        visited: set[tuple[int, int]] = set()  # (device, inode) of every folder listed
        stack = [root]
        while stack:
            folder = stack.pop()
            folders: list[Path] = []
            yield from self._files(folder, visited, folders)
            stack.extend(sorted(folders, reverse=True))  # depth first, in name order

    def _files(
        self, folder: Path, visited: set[tuple[int, int]], folders: list[Path]
    ) -> Iterator[str]:
        """Files of one folder as the OS lists them (never all held at once); sub-folders
        go to ``folders``."""
        start = time.perf_counter()
        try:
            st = folder.stat()
        except OSError as exc:
            self.problems.append((str(folder), f"cannot stat folder: {exc.strerror or exc}"))
            return
        key = (st.st_dev, st.st_ino)
        if key in visited:
            target = folder.resolve()
            if target == folder.parent.resolve() or target in folder.parent.resolve().parents:
                reason = f"symlink loop (points back to {target}); not followed"
            else:
                reason = f"links to a folder already billed ({target}); not counted twice"
            self.problems.append((str(folder), reason))
            return
        visited.add(key)
        try:
            it = os.scandir(folder)
        except OSError as exc:  # PermissionError included
            self.problems.append((str(folder), f"unreadable folder: {exc.strerror or exc}"))
            return
        with it:
            for entry in it:
                try:
                    if entry.is_dir():  # follows symlinks; loops are caught by `visited`
                        if self.recursive:
                            folders.append(Path(entry.path))
                        continue
                    is_file = entry.is_file()
                    if not is_file and entry.is_symlink():
                        self.problems.append((entry.path, "broken symbolic link"))
                except OSError as exc:  # e.g. ELOOP: a link that points at itself
                    self.problems.append((entry.path, f"cannot follow: {exc.strerror or exc}"))
                    continue
                if is_file:
                    self.seconds += time.perf_counter() - start
                    yield entry.path
                    start = time.perf_counter()
        self.seconds += time.perf_counter() - start


def walk_files(root: str | os.PathLike, *, recursive: bool = True) -> Walk:
    """The files under ``root`` (or ``root`` itself), lazily; see :class:`Walk`.

    >>> walk = walk_files("/no/such/folder")
    >>> list(walk), walk.problems
    ([], [('/no/such/folder', 'no such file or folder')])
    """
    return Walk(Path(root), recursive=recursive)


# --------------------------------------------------------------------------- many files


def _chunks(items: Iterable[str], size: int) -> Iterator[list[str]]:
    it = iter(items)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def bill_rows(
    paths: Iterable[str], *, family: str, budgets: tuple[int | None, ...], workers: int | None = None,
    chunksize: int = CHUNK,
) -> Iterator[BillRow]:  # fmt: skip
    """Bill files across ``workers`` processes (default: every core), streaming rows back
    in the order of ``paths``. Paths are consumed lazily and sent in chunks, so memory stays flat."""
    workers = (os.cpu_count() or 1) if workers is None else max(1, int(workers))
    task = functools.partial(_bill_chunk, family=family, budgets=budgets)
    if workers == 1:
        for chunk in _chunks(paths, chunksize):
            yield from task(chunk)
        return
    import multiprocessing

    with multiprocessing.get_context().Pool(workers) as pool:
        for rows in pool.imap(task, _chunks(paths, chunksize)):
            yield from rows


@dataclass(frozen=True)
class Bill:
    """A dataset's bill: totals per budget, failures, the slowest part, the spread."""

    family: str
    budgets: tuple[int | None, ...]
    files: int  # files seen
    billed: dict[str, int]  # kind → files billed
    totals: tuple[int, ...]  # prompt tokens over all billed files, per budget
    totals_by_kind: dict[str, tuple[int, ...]]  # kind → totals per budget
    failures: tuple[tuple[str, str], ...]  # (path, reason) for files that could not be billed
    walk_problems: tuple[tuple[str, str], ...]  # (path, reason): loops, unreadable folders
    slowest_files: tuple[tuple[str, float], ...]  # (path, seconds), slowest first
    part_seconds: dict[str, float]  # where the time went: walking, headers by kind, arithmetic
    histograms: tuple[dict[int, int], ...]  # per budget: tokens per file → number of files
    wall_s: float  # seconds from start to end

    @property
    def billed_files(self) -> int:
        return sum(self.billed.values())

    @property
    def slowest_part(self) -> tuple[str, float]:
        """The part that took the most (summed) seconds, e.g. ``("video headers", 1.2)``."""
        return max(self.part_seconds.items(), key=lambda kv: kv[1], default=("nothing", 0.0))

    def histogram_text(self, budget: int | None = None, *, bins: int = 10, width: int = 40) -> str:
        """A text histogram of tokens per file at one budget (default: the first)."""
        i = self.budgets.index(budget) if budget in self.budgets else 0
        counts = self.histograms[i]
        if not counts:
            return "(no files billed)"
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

    def text(self) -> str:
        """The bill as the command line prints it."""
        spec = get_family(self.family)
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.billed.items())) or "none"
        out = [
            f"Token bill — {spec.display_name}: {self.files} files, {self.billed_files} billed "
            f"({kinds}), {len(self.failures)} failed, in {self.wall_s:.2f} s",
        ]
        for i, b in enumerate(self.budgets):
            label = "fixed (no budget)" if b is None else f"budget {b}"
            per = self.totals[i] / self.billed_files if self.billed_files else 0.0
            by = ", ".join(f"{k} {t[i]:,}" for k, t in sorted(self.totals_by_kind.items()))
            out.append(f"  {label:>18}: {self.totals[i]:>12,} tokens ({per:,.1f} per file; {by})")
        if self.failures:
            out.append(f"Files that fail ({len(self.failures)}):")
            out += [f"  {p}: {r}" for p, r in self.failures]
        if self.walk_problems:
            out.append(f"Not walked ({len(self.walk_problems)}):")
            out += [f"  {p}: {r}" for p, r in self.walk_problems]
        part, secs = self.slowest_part
        total = sum(self.part_seconds.values()) or 1.0
        parts = ", ".join(f"{k} {v:.3f} s" for k, v in self.part_seconds.items())
        out.append(f"Slowest part: {part} ({secs:.3f} s, {secs / total:.0%} of the work; {parts})")
        if self.slowest_files:
            out.append("Slowest files: " + ", ".join(f"{Path(p).name} {s * 1000:.1f} ms"
                                                     for p, s in self.slowest_files))  # fmt: skip
        first = self.budgets[0]
        title = "fixed" if first is None else f"budget {first}"
        out.append(f"Tokens per file ({title}):")
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
        self.slowest: list[tuple[float, str]] = []  # a min-heap of the slowest files
        self.keep = keep_slowest
        self.parts: Counter[str] = Counter()
        self.hist = [Counter() for _ in budgets]

    def add(self, row: BillRow) -> None:
        self.files += 1
        if row.kind is not None:
            self.parts[f"{row.kind} headers"] += row.header_s
        self.parts["token arithmetic"] += row.plan_s
        if row.error is not None:
            self.failures.append((row.path, row.error))
            return
        self.billed[row.kind] += 1
        kind_totals = self.by_kind.setdefault(row.kind, [0] * len(self.budgets))
        for i, t in enumerate(row.tokens):
            self.totals[i] += t
            kind_totals[i] += t
            self.hist[i][t] += 1
        item = (row.header_s + row.plan_s, row.path)
        if len(self.slowest) < self.keep:
            heapq.heappush(self.slowest, item)
        else:
            heapq.heappushpop(self.slowest, item)


def bill(
    root: str | os.PathLike,
    *,
    family: str = "gemma4",
    budgets: Iterable[int] | None = None,
    recursive: bool = True,
    workers: int | None = None,
    on_row: Callable[[BillRow], None] | None = None,
    keep_slowest: int = 5,
) -> Bill:
    """Walk ``root`` and bill every file at each budget, in parallel, from headers.

    ``on_row`` sees every row as it arrives (a progress bar, a CSV writer); nothing else
    keeps them. ``workers`` defaults to every core; 1 runs in this process.

    >>> b = bill("dataset/", family="gemma4", budgets=[70, 280, 1120])   # doctest: +SKIP
    >>> b.totals                                                         # doctest: +SKIP
    (71_280, 268_800, 1_075_200)
    """
    start = time.perf_counter()
    spec = get_family(family)
    chosen = resolve_budgets(spec.name, budgets)
    walk = walk_files(root, recursive=recursive)
    tally = _Tally(chosen, keep_slowest)
    for row in bill_rows(walk, family=spec.name, budgets=chosen, workers=workers):
        tally.add(row)
        if on_row is not None:
            on_row(row)
    parts = {"walking folders": walk.seconds, **dict(tally.parts)}
    return Bill(
        family=spec.name,
        budgets=chosen,
        files=tally.files,
        billed=dict(tally.billed),
        totals=tuple(tally.totals),
        totals_by_kind={k: tuple(v) for k, v in tally.by_kind.items()},
        failures=tuple(sorted(tally.failures)),
        walk_problems=tuple(sorted(walk.problems)),
        slowest_files=tuple((p, s) for s, p in sorted(tally.slowest, reverse=True)),
        part_seconds={k: v for k, v in parts.items() if v > 0},
        histograms=tuple(dict(h) for h in tally.hist),
        wall_s=time.perf_counter() - start,
    )


# --------------------------------------------------------------------------- output


class BillWriter:
    """Rows to ``.csv`` (streamed) or ``.parquet`` (batches; needs pyarrow), as they come.

    >>> BillWriter.check("bill.xlsx")
    Traceback (most recent call last):
    ...
    ValueError: --out must end in .csv or .parquet, got 'bill.xlsx'.
    """

    BATCH = 10_000  # parquet rows per row group held in memory

    def __init__(self, path: str | os.PathLike, budgets: tuple[int | None, ...]) -> None:
        self.path = Path(path)
        self.format = self.check(self.path)
        self.columns = [
            "path", "kind", "height", "width", "duration_s", "frames", "fps",
            *(budget_label(b) for b in budgets), "error", "seconds",
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
                    "pip install pyarrow, or use --out bill.csv."
                ) from None
            return "parquet"
        raise ValueError(f"--out must end in .csv or .parquet, got {str(path)!r}.")

    def write(self, row: BillRow) -> None:
        tokens = list(row.tokens) or [None] * (len(self.columns) - 9)
        values = [
            row.path, row.kind, row.height, row.width, row.duration_s, row.frames, row.fps,
            *tokens, row.error, round(row.header_s + row.plan_s, 6),
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

        if not self._batch:
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
        self._flush()
        if self._parquet is not None:
            self._parquet.close()

    def __enter__(self) -> BillWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
