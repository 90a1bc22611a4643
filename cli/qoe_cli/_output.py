"""Printing results as a table, JSON or CSV: the CLI's one place for output formats."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import click
import numpy as np

FORMATS = ("table", "json", "csv")

format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="Output format.",
)
output_option = click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write to this file instead of standard output.",
)


def _plain(value: Any) -> Any:
    """Turn NumPy scalars/arrays and tuples into JSON-ready Python values."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _cell(value: Any, digits: int) -> str:
    value = _plain(value)
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.{digits}f}"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def render(rows: Sequence[Mapping[str, Any]], fmt: str, *, digits: int = 4) -> str:
    """Render a list of flat records in one of :data:`FORMATS`."""
    rows = [_plain(dict(r)) for r in rows]
    if fmt == "json":
        return json.dumps(rows if len(rows) != 1 else rows[0], indent=2, allow_nan=True) + "\n"
    columns: list[str] = []
    for r in rows:
        columns.extend(k for k in r if k not in columns)
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: _cell(r.get(k), 12) if not isinstance(r.get(k), str) else r[k] for k in columns})
        return buf.getvalue()
    cells = [[_cell(r.get(k), digits) for k in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells)
    return "\n".join(lines) + "\n"


def render_pairs(record: Mapping[str, Any], fmt: str, *, digits: int = 4) -> str:
    """Render one record: as ``name  value`` lines for a table, else like :func:`render`."""
    if fmt != "table":
        return render([record], fmt, digits=digits)
    record = _plain(dict(record))
    width = max(len(k) for k in record)
    return "\n".join(f"{k.ljust(width)}  {_cell(v, digits)}" for k, v in record.items()) + "\n"


def emit(text: str, output: str | None) -> None:
    """Write ``text`` to ``output`` (a path) or to standard output."""
    if output is None:
        click.echo(text, nl=False)
    else:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
