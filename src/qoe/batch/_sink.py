"""Writing a batch's result rows as they complete (CSV or Parquet), and reading them back to resume.

* CSV (``.csv``): each completed row's results are appended and flushed at once; when a
  row brings a column the file's header does not have (the first video row after voice
  rows, the first error), the file is rewritten with the wider header. Cells follow
  :func:`qoe.report.to_csv` (empty for None/NaN/inf; lists as JSON text).
* Parquet (``.parquet``, needs ``pyarrow``: the ``parquet`` extra): a Parquet file is only
  valid once its footer is written, so the whole file is rewritten (to a temporary file,
  then renamed over the old one) at most once per :data:`PARQUET_EVERY_S` (less often when
  writing it takes long) and when the batch ends; a crash loses the results of the last
  few seconds. Lists and mappings are stored as JSON text, as in CSV, and a column mixing
  types is stored as text.

In both, the file holds one attempt per manifest row: resuming drops the rows of failed
attempts before running them again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from qoe.errors import InputError
from qoe.outputs import atomic_output
from qoe.report import columns, read_table, to_csv

__all__: list[str] = []

FORMATS = {".csv": "csv", ".parquet": "parquet"}
#: Longest time (s) a completed row waits before the Parquet file is rewritten (or, when
#: rewriting takes longer, :data:`PARQUET_WRITING_SHARE` of the time goes to rewriting at most).
PARQUET_EVERY_S = 2.0
PARQUET_WRITING_SHARE = 0.2


def output_format(path: Path) -> str:
    """``"csv"`` or ``"parquet"`` from the file's suffix (and pyarrow present for Parquet).

    Raises
    ------
    InputError
        Another suffix, or Parquet without pyarrow.
    """
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"output {path}: give a .csv or .parquet file name")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401, PLC0415
        except ImportError as exc:
            raise InputError(f"output {path}: Parquet needs pyarrow (pip install 'qoe[parquet]'), or write .csv") from exc
    return fmt


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of an earlier batch's output file (empty cells as None).

    Raises
    ------
    InputError
        A file that is not a batch's output (no ``row_key`` and ``error`` columns).
    """
    output_format(path)
    frame = read_table(path)
    if frame.empty:
        return []
    missing = [c for c in ("row_key", "error") if c not in frame.columns]
    if missing:
        raise InputError(f"resume: {path} is not the output of a batch (no {', '.join(missing)} column)")
    frame = frame.astype(object).where(frame.notna(), None)
    return frame.to_dict("records")


def _json_cells(rows: list[dict[str, Any]], names: list[str]) -> dict[str, list[Any]]:
    """Columns for a file: lists and mappings as JSON text; a column of mixed types as text."""
    out = {}
    for name in names:
        values = [r.get(name) for r in rows]
        values = [json.dumps(v, default=str) if isinstance(v, (list, tuple, Mapping)) else v for v in values]
        kinds = {type(v) for v in values if v is not None}
        if len(kinds) > 1 and not kinds <= {int, float, bool}:
            values = [None if v is None else str(v) for v in values]
        out[name] = values
    return out


class Sink:
    """Where completed rows go: kept in memory (for the DataFrame) and, with a path, written out."""

    def __init__(self, path: Path | None, rows: Iterable[dict[str, Any]] = ()) -> None:
        self.path = path
        self.fmt = output_format(path) if path is not None else None
        self.rows: list[dict[str, Any]] = list(rows)
        self.header: list[str] = columns(self.rows)
        self._last_write = 0.0
        self._write_s = 0.0
        self._dirty = False
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._rewrite()

    def add(self, rows: list[dict[str, Any]]) -> None:
        """Keep ``rows`` and write them (CSV: now; Parquet: when it is time)."""
        self.rows.extend(rows)
        grown = [c for c in columns(rows) if c not in self.header]
        self.header += grown
        if self.path is None:
            return
        if self.fmt == "csv" and not grown:
            with open(self.path, "a", encoding="utf-8", newline="") as fh:
                text = to_csv([{k: r.get(k) for k in self.header} for r in rows])
                fh.write(text.split("\n", 1)[1])  # without the header line
                fh.flush()
            return
        self._dirty = True
        wait = max(PARQUET_EVERY_S, self._write_s / PARQUET_WRITING_SHARE)
        if self.fmt == "csv" or time.monotonic() - self._last_write >= wait:
            self._rewrite()

    def close(self) -> None:
        """Write what is not written yet."""
        if self.path is not None and self._dirty:
            self._rewrite()

    def _rewrite(self) -> None:
        assert self.path is not None
        t0 = time.monotonic()
        # replaced whole (qoe.outputs.atomic_output: a device or a pipe such as /dev/null is
        # written where it is, a symbolic link followed)
        with atomic_output(self.path) as tmp:
            if self.fmt == "csv":
                text = to_csv([{k: r.get(k) for k in self.header} for r in self.rows]) if self.rows else ""
                if not self.rows and self.header:
                    text = ",".join(self.header) + "\n"
                tmp.write_text(text, encoding="utf-8")
            else:
                import pandas as pd  # noqa: PLC0415 - pandas only when results are read back

                pd.DataFrame(_json_cells(self.rows, self.header), columns=self.header).to_parquet(tmp, index=False)
        self._last_write = time.monotonic()
        self._write_s = self._last_write - t0
        self._dirty = False
