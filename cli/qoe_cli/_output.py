"""Printing records: JSON and CSV from :mod:`qoe.report` (the one serialiser), and a text table.

JSON is strict (RFC 8259: NaN and infinities are ``null``) and CSV writes empty cells for
them, for every command, because both come from :func:`qoe.report.to_json` and
:func:`qoe.report.to_csv`. Only the terminal table is laid out here.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import click

from qoe.outputs import atomic_output
from qoe.report import columns, to_csv, to_json, to_plain

FORMATS = ("table", "json", "csv")

# Without --format, an output file named *.json or *.csv is written in that format (a table
# written into "report.json" was no use to anyone); anything else is a table.
_SUFFIX_FORMATS = {".json": "json", ".csv": "csv"}


def _by_suffix(output: str | None) -> str:
    return _SUFFIX_FORMATS.get(os.path.splitext(output)[1].lower(), "table") if output else "table"


def _format_given(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--format, or (not given) what the output's suffix says once -o is known (whichever of
    the two Click processes first: see :func:`_output_given`)."""
    if value is not None:
        return value
    if "output" in ctx.params or not any(p.name == "output" for p in ctx.command.params):
        return _by_suffix(ctx.params.get("output"))
    return None  # -o comes later: its callback decides


def _output_given(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if "fmt" in ctx.params and ctx.params["fmt"] is None:
        ctx.params["fmt"] = _by_suffix(value)
    return value


format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    callback=_format_given,
    help="Output format [default: table; with -o FILE.json or FILE.csv, json or csv].",
)
output_option = click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    callback=_output_given,
    help="Write to this file instead of standard output.",
)


def _cell(value: Any, digits: int) -> str:
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


def _column(values: list[Any], digits: int) -> list[str]:
    """The table cells of one column (:func:`_cell` of each value); a column of one
    plain type (str, int, float) in one C-level pass."""
    kinds = set(map(type, values))
    if kinds == {str}:
        return values
    if kinds == {int}:
        return list(map(str, values))
    if kinds == {float}:  # format() writes NaN as "nan" and infinities as "inf", as _cell
        return list(map(f"{{:.{digits}f}}".format, values))
    return [_cell(v, digits) for v in values]


def table(rows: Sequence[Mapping[str, Any]], *, digits: int = 4) -> str:
    """Flat records as a text table: a header, a rule, one right-aligned line per record.

    Laid out column by column (cells, width, alignment), then joined line by line.
    """
    names = columns(rows)
    if not names:  # an empty header and rule, and an empty line per record
        return "\n" * (len(rows) + 2)
    cols = []
    for name in names:
        cells = _column([r.get(name) for r in rows], digits)
        width = max([len(name), *map(len, cells)])
        cols.append([name.rjust(width), "-" * width, *(c.rjust(width) for c in cells)])
    return "\n".join(map("  ".join, zip(*cols))) + "\n"


def iter_table(rows: Callable[[], Iterable[Mapping[str, Any]]], *, digits: int = 4) -> Iterator[str]:
    """:func:`table` of the records ``rows()`` gives, line by line, holding one record at a time.

    ``rows`` gives the same records each time it is called: once for the columns and
    their widths, once for the lines (the cells are :func:`_cell` of each value, what
    :func:`_column` gives for it). No records: no lines (where :func:`table` writes an
    empty header and rule).
    """
    widths: dict[str, int] = {}
    count = 0
    for r in rows():
        count += 1
        for name in r:
            widths.setdefault(name, len(name))
        for name, width in widths.items():
            widths[name] = max(width, len(_cell(r.get(name), digits)))
    if not count:
        return
    if not widths:  # an empty header and rule, and an empty line per record
        yield "\n" * (count + 2)
        return
    yield "  ".join(name.rjust(w) for name, w in widths.items()) + "\n"
    yield "  ".join("-" * w for w in widths.values()) + "\n"
    for r in rows():
        yield "  ".join(_cell(r.get(name), digits).rjust(w) for name, w in widths.items()) + "\n"


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


def emit_chunks(chunks: Iterable[str], output: str | None, inputs: Sequence[str | None] = ()) -> None:
    """:func:`emit` of ``"".join(chunks)``, without holding the whole text (written in pieces of
    about :data:`_PIECE` characters)."""
    if output is None:
        for piece in _pieces(chunks):
            click.echo(piece, nl=False)
        return
    with atomic_output(output, inputs=inputs) as tmp, tmp.open("w", encoding="utf-8") as f:
        f.writelines(_pieces(chunks))


#: Characters gathered before a write of :func:`emit_chunks`.
_PIECE = 1 << 20


def _pieces(chunks: Iterable[str]) -> Iterator[str]:
    """``chunks`` joined into pieces of at least :data:`_PIECE` characters (the last one shorter)."""
    held: list[str] = []
    size = 0
    for c in chunks:
        held.append(c)
        size += len(c)
        if size >= _PIECE:
            yield "".join(held)
            held, size = [], 0
    if held:
        yield "".join(held)


def emit(text: str, output: str | None, inputs: Sequence[str | None] = ()) -> None:
    """Write ``text`` to ``output`` (a path; atomically, never over one of ``inputs``) or to
    standard output."""
    emit_chunks([text], output, inputs)
