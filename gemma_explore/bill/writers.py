"""Bill rows to disk as they arrive: ``.csv`` streamed, ``.parquet`` in row groups.

>>> BillWriter.check("bill.csv")
'csv'
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

from gemma_explore.bill.core import BillRow, budget_label

__all__ = ["BillWriter"]


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
            "path",
            "kind",
            "height",
            "width",
            "duration_s",
            "frames",
            "fps",
            "cut_s",
            *(budget_label(b) for b in budgets),
            "text_tokens",
            "error",
            "seconds",
        ]
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
                    "pip install pyarrow (a dependency of gemma-explore), or use --out bill.csv."
                ) from None
            return "parquet"
        raise ValueError(f"--out must end in .csv or .parquet, got {str(path)!r}.")

    def write(self, row: BillRow) -> None:
        tokens = list(row.tokens) or [None] * len(self.budgets)
        values = [
            row.path,
            row.kind,
            row.height,
            row.width,
            row.duration_s,
            row.frames,
            row.fps,
            row.cut_s,
            *tokens,
            row.text_tokens,
            row.error,
            round(row.header_s + row.plan_s + row.text_s, 6),
        ]
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
        floats = {"duration_s", "fps", "cut_s", "seconds"}
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
