"""Printing records: JSON and CSV from :mod:`qoe.report` (the one serialiser), and a text table.

JSON is strict (RFC 8259: NaN and infinities are ``null``) and CSV writes empty cells for
them, for every command, because both come from :func:`qoe.report.to_json` and
:func:`qoe.report.to_csv`. Only the terminal table is laid out here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import click

from qoe.report import columns, to_csv, to_json, to_plain

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


def _cell(value: Any, digits: int) -> str:
    t = type(value)
    if t is str:  # the common cells, first
        return value
    if t is int:
        return str(value)
    if t is float:
        return "nan" if math.isnan(value) else f"{value:.{digits}f}"
    value = to_plain(value)
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.{digits}f}"
    if isinstance(value, (list, dict)):
        return to_json(value, indent=None)
    return str(value)


def table(rows: Sequence[Mapping[str, Any]], *, digits: int = 4) -> str:
    """Flat records as a text table: a header, a rule, one right-aligned line per record."""
    names = columns(rows)
    cells = [[_cell(r.get(k), digits) for k in names] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(names)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(names, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells)
    return "\n".join(lines) + "\n"


def render(rows: Sequence[Mapping[str, Any]], fmt: str, *, digits: int = 4) -> str:
    """Flat records in one of :data:`FORMATS`; JSON is always a list, whatever the number of rows."""
    if fmt == "json":
        return to_json(list(rows)) + "\n"
    if fmt == "csv":
        return to_csv(rows)
    return table(rows, digits=digits)


def render_pairs(record: Mapping[str, Any], fmt: str, *, digits: int = 4) -> str:
    """One record: ``name  value`` lines for a table, a JSON object, or a one-row CSV."""
    if fmt == "json":
        return to_json(record) + "\n"
    if fmt == "csv":
        return to_csv([record])
    width = max(len(k) for k in record)
    return "\n".join(f"{k.ljust(width)}  {_cell(v, digits)}" for k, v in record.items()) + "\n"


def emit(text: str, output: str | None) -> None:
    """Write ``text`` to ``output`` (a path) or to standard output."""
    if output is None:
        click.echo(text, nl=False)
    else:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
