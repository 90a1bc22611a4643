"""The result of :func:`qoe.score`: scored items (streams, calls, pages) and how they were scored.

A :class:`Report` holds a tuple of result objects of one kind (for voice:
:class:`qoe.voice.call.DirectionScore`, one per stream) and turns them into records,
a pandas DataFrame, a dict or JSON: the one place where results are serialised.

A result object provides

* ``to_record(brief=False)`` → one flat dict (the row of a table; ``brief``: the
  headline columns only),
* ``to_dict()`` → a nested plain-Python dict (everything, for JSON),
* optionally ``tables()`` → named detail tables (e.g. ``"windows"``, ``"plays"``), each a
  list of flat dicts, and ``identity()`` → the columns that name the item in them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qoe.errors import InputError

__all__ = ["Report"]


def _plain(value: Any, *, nan: Any) -> Any:
    """NumPy scalars/arrays, tuples and mappings → JSON-ready Python; NaN/inf → ``nan``."""
    if isinstance(value, np.ndarray):
        return [_plain(v, nan=nan) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return nan
    if isinstance(value, Mapping):
        return {str(k): _plain(v, nan=nan) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, nan=nan) for v in value]
    return value


@dataclass(frozen=True)
class Report:
    """Scores of everything :func:`qoe.score` found in one capture.

    Attributes
    ----------
    kind : str
        What was scored: ``"voice"`` (later also ``"video"``, ``"web"``).
    source : str
        The capture.
    results : tuple
        One result per scored item (voice: :class:`~qoe.voice.call.DirectionScore`, one
        per stream and direction of each call), in capture order.
    inputs : dict
        The options and inputs the scores were computed with (references, second
        capture, jitter buffer, ...).
    notes : tuple of str
        Report-wide notes (e.g. streams that were left out).
    """

    kind: str
    source: str
    results: tuple[Any, ...]
    inputs: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.results)

    def tables(self) -> tuple[str, ...]:
        """Names of the tables :meth:`to_records` accepts: ``"results"`` and the detail tables."""
        names = ["results"]
        for r in self.results:
            for name in getattr(r, "tables", dict)():
                if name not in names:
                    names.append(name)
        return tuple(names)

    def to_records(self, table: str = "results", *, brief: bool = False) -> list[dict[str, Any]]:
        """Flat records: one per result, or the rows of a detail table.

        Parameters
        ----------
        table : str
            ``"results"`` (default) or a detail table (e.g. ``"windows"``, ``"plays"``;
            see :meth:`tables`), whose rows start with the columns naming their item.
        brief : bool, keyword-only
            For ``"results"``: only the headline columns (``to_record(brief=True)``).

        Raises
        ------
        InputError
            An unknown table name.
        """
        if table == "results":
            return [r.to_record(brief=brief) for r in self.results]
        if table not in self.tables():
            raise InputError(f"unknown table {table!r}; this {self.kind} report has: {', '.join(self.tables())}")
        rows = []
        for r in self.results:
            ident = r.identity() if hasattr(r, "identity") else {}
            for row in r.tables().get(table, []):
                rows.append({**ident, **row})
        return rows

    def to_frame(self, table: str = "results"):  # noqa: ANN201 - pandas is imported lazily
        """The records of ``table`` as a :class:`pandas.DataFrame` (see :meth:`to_records`)."""
        import pandas as pd  # noqa: PLC0415 - only needed here

        rows = self.to_records(table)
        return pd.DataFrame.from_records(rows) if rows else pd.DataFrame()

    def to_dict(self) -> dict[str, Any]:
        """Everything as nested plain Python (NaN stays NaN)."""
        return {
            "kind": self.kind,
            "source": self.source,
            "inputs": _plain(self.inputs, nan=float("nan")),
            "notes": list(self.notes),
            "results": [_plain(r.to_dict(), nan=float("nan")) for r in self.results],
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        """:meth:`to_dict` as strict JSON (NaN and infinities become ``null``)."""
        d = self.to_dict()
        return json.dumps(_plain(d, nan=None), indent=indent, allow_nan=False)
