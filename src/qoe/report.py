"""The one serialiser: results to plain Python, flat records, strict JSON, CSV and DataFrames.

Every conversion of a result into something outside Python objects happens here, with one
policy for each format:

* :func:`to_plain` — the one walk from NumPy scalars and arrays, tuples, mappings and
  nested results to plain Python (NaN and infinities kept, or replaced).
* :func:`as_dict` — a result dataclass's fields, in declaration order, as plain Python:
  what the results' ``to_dict()`` methods return.
* :func:`brief` — a brief view of a flat record: *fewer* columns, never renamed ones (a
  column a brief view names must exist in the full record).
* :func:`to_json` — RFC 8259 JSON: NaN and infinities become ``null``; nothing else is
  ever written for a number JSON cannot hold.
* :func:`to_csv` — CSV (RFC 4180 quoting, ``\\n`` line ends): NaN, infinities and None
  become empty cells; floats are written with every digit (``repr``).
* :func:`to_frame` — a pandas DataFrame of flat records.
* :func:`html_table` — an HTML table of flat records (how a :class:`Report` shows itself in a
  notebook, with ``_repr_html_``).
* :class:`Report` — what :func:`qoe.score` returns, with ``to_records``, ``to_frame``,
  ``to_dict``, ``to_json`` and ``to_csv`` built on the above.

This module imports nothing from the domain packages (it only knows results by the
methods below), so every layer can route its results through it.

A result held by a :class:`Report` provides

* ``to_record(brief=False)`` → one flat dict (the row of a table; ``brief``: the headline
  columns only, a subset of the full record's),
* ``to_dict()`` → a nested plain-Python dict (everything, for JSON),
* optionally ``tables()`` → named detail tables (e.g. ``"windows"``, ``"plays"``), each a
  list of flat dicts, ``identity()`` → the columns that name the item in them, and
  ``label`` → a short name of the item for notes.

References
----------
.. [1] T. Bray (ed.), "The JavaScript Object Notation (JSON) Data Interchange Format",
   RFC 8259, §6 ("Numeric values that cannot be represented ... such as Infinity and NaN
   are not permitted").
.. [2] Y. Shafranovich, "Common Format and MIME Type for Comma-Separated Values (CSV)
   Files", RFC 4180, §2 (quoting).
"""

from __future__ import annotations

import copyreg
import csv
import dataclasses
import html
import io
import json
import math
import operator
import os
import pickle
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from qoe.errors import InputError

__all__ = ["Report", "ReportWriter", "iter_csv", "to_plain", "as_dict", "brief", "columns", "to_json", "to_csv", "to_frame", "read_table", "html_table"]

_KEEP: Any = object()  # to_plain's default: non-finite floats stay as they are
_LEAVES = frozenset({str, int, bool, type(None)})  # plain as they are
_NUMBERS = _LEAVES | {float}  # plain as they are when finite (or kept)
_STR = frozenset({str})
_SEQS = frozenset({list, tuple})
_LIST = frozenset({list})


def _finite(v: Any) -> bool:
    return type(v) is not float or math.isfinite(v)


def to_plain(value: Any, *, nan: Any = _KEEP) -> Any:
    """NumPy values, tuples, mappings and results → plain Python (NaN and infinities → ``nan`` if given).

    Parameters
    ----------
    value : any
        A number, string, NumPy scalar or array (0-d arrays become scalars), list, tuple,
        mapping (keys become strings), or an object with a ``to_dict()`` method (a result).
    nan : any, keyword-only
        What non-finite floats (NaN, ±inf) become: by default they are kept (for Python
        use); ``None`` for JSON.

    Returns
    -------
    Plain Python: None, bool, int, float, str, list and dict only.

    Examples
    --------
    >>> to_plain({"r": np.float64(93.2), "lost": np.int64(3), "j": (1.0, float("nan"))}, nan=None)
    {'r': 93.2, 'lost': 3, 'j': [1.0, None]}
    """
    return _plain(value, nan, False)


def _plain(value: Any, nan: Any, reuse: bool) -> Any:
    """:func:`to_plain`; ``reuse``: a list or dict that is plain already (leaves, rows of leaves,
    finite or ``nan`` kept) is given as it is rather than copied (:func:`to_json`, which walks
    a result's ``to_dict()`` only to find its non-finite floats)."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:  # the common leaves, first
        return value
    if t is float:
        return value if nan is _KEEP or math.isfinite(value) else nan
    if t is list or t is tuple:
        # a container of leaves only (a header field, a row of numbers) is taken whole: the
        # types of its items are looked at in C, not one call per item
        kinds = set(map(type, value))
        if kinds <= _LEAVES or (kinds <= _NUMBERS and (nan is _KEEP or all(map(_finite, value)))):
            return value if reuse and t is list else list(value)
        if kinds <= _SEQS:  # rows (header fields as name-value pairs): all their leaves at once
            if set(map(type, chain.from_iterable(value))) <= _LEAVES:
                return value if reuse and t is list and kinds == _LIST else list(map(list, value))
            return [_plain(x, nan, reuse) for x in value]
        return [v if type(v) in _LEAVES else _plain(v, nan, reuse) for v in value]
    if t is dict:
        if set(map(type, value)) <= _STR:
            vals = value.values()
            kinds = set(map(type, vals))
            if kinds <= _LEAVES or (kinds <= _NUMBERS and (nan is _KEEP or all(map(_finite, vals)))):
                return value if reuse else dict(value)
            return {k: v if type(v) in _LEAVES else _plain(v, nan, reuse) for k, v in value.items()}
        return {str(k): _plain(v, nan, reuse) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return _plain(value.tolist(), nan, reuse)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if nan is _KEEP or math.isfinite(value) else nan
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v, nan, reuse) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, nan, reuse) for v in value]
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return _plain(to_dict(), nan, reuse)
    return value


def as_dict(result: Any, *, skip: Iterable[str] = ()) -> dict[str, Any]:
    """A result dataclass's fields in declaration order, as plain Python (NaN and infinities kept).

    Nested results become their ``to_dict()``; arrays become lists (0-d arrays, numbers).

    Parameters
    ----------
    result : dataclass instance
    skip : iterable of str, keyword-only
        Fields to leave out (e.g. the nested ones a caller lays out itself).
    """
    names, get = _fields_of(type(result))
    values = get(result)
    if skip:
        left_out = set(skip)
        return {n: v if type(v) in _NUMBERS else _plain(v, _KEEP, False) for n, v in zip(names, values)
                if n not in left_out}
    # (a leaf is kept as it is, NaN included: to_plain's default, without a call per field)
    return {n: v if type(v) in _NUMBERS else _plain(v, _KEEP, False) for n, v in zip(names, values)}


_FIELDS: dict[type, tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]] = {}


def _fields_of(cls: type) -> tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]:
    """A dataclass's field names, and a getter of their values as a tuple (one C call)."""
    ent = _FIELDS.get(cls)
    if ent is None:
        names = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
        get: Callable[[Any], tuple[Any, ...]]
        if len(names) > 1:
            get = operator.attrgetter(*names)
        else:
            def get(obj: Any, names: tuple[str, ...] = names) -> tuple[Any, ...]:
                return tuple(getattr(obj, n) for n in names)
        ent = _FIELDS[cls] = (names, get)
    return ent


def brief(record: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """The brief view of a flat record: the columns ``names``, in that order, under the same names.

    Raises
    ------
    KeyError
        A column of ``names`` that the full record does not have: a brief view may only
        leave columns out (a bug in the result's column list, not bad user input).
    """
    missing = [n for n in names if n not in record]
    if missing:
        raise KeyError(f"brief view names column(s) {missing} that the full record does not have")
    return {n: record[n] for n in names}


def columns(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every column of ``rows``, in the order they first appear."""
    out: dict[str, None] = {}
    for r in rows:
        out.update(dict.fromkeys(r))
    return list(out)


def to_json(value: Any, *, indent: int | None = 2) -> str:
    """Strict RFC 8259 JSON text of ``value`` (any of :func:`to_plain`'s inputs).

    NaN and infinities become ``null``; ``json.loads(text, parse_constant=...)`` never
    sees ``NaN``/``Infinity``.

    Examples
    --------
    >>> to_json({"jitter_ms": float("nan"), "burst_r": np.float64("inf")}, indent=None)
    '{"jitter_ms": null, "burst_r": null}'
    """
    plain = _plain(value, None, True)
    if indent is None:
        return json.dumps(plain, allow_nan=False)
    out: list[str] = []
    _indented(plain, indent, 0, out, {})
    return "".join(out)


def _rows_of_scalars(value: list[Any]) -> bool:
    """Is ``value`` a list of non-empty lists of scalars (header fields as name-value pairs)?"""
    if set(map(type, value)) != {list}:
        return False
    for row in value:
        if not row or not set(map(type, row)) <= _NUMBERS:
            return False
    return True


def _rows_text(value: list[list[Any]], indent: int, level: int) -> str:
    """``json.dumps(value, indent=indent)``'s text of a list of non-empty lists of scalars at
    ``level``, by one call of the C encoder: with NUL as the item separator (a NUL is never
    raw inside a JSON string: it is written ``\\u0000``), the rows are cut apart where one
    ends and the next begins (``]\0[``), and each is laid out as the indented encoder would."""
    text = _NUL_ENCODER.encode(value)[2:-2]  # without the outer "[[" and "]]"
    row_in = "\n" + " " * (indent * (level + 2))
    row_out = "\n" + " " * (indent * (level + 1))
    rows = text.split("]\0[")
    body = ("," + row_out).join("[" + row_in + r.replace("\0", "," + row_in) + row_out + "]" for r in rows)
    return "[" + row_out + body + "\n" + " " * (indent * level) + "]"


_NUL_ENCODER = json.JSONEncoder(separators=("\0", ": "), allow_nan=False)


def _indented(value: Any, indent: int, level: int, out: list[str], flat: dict[int, json.JSONEncoder]) -> None:
    """Append the text of ``json.dumps(value, indent=indent)`` (``value`` plain, finite) to ``out``.

    The same text, faster: the standard library indents with its pure-Python encoder
    (one generator step per value), so a container whose items are all scalars (a record
    of a table) is written by its C encoder instead, with the indented layout as item
    separator (``flat``: one such encoder per level); only containers that hold
    containers are walked here, and in them each run of scalar members is written by one
    call of that encoder too (the members of a run joined by the same separator as the
    members of a flat container one level down). A page load's transaction record holds
    its header fields (lists) among 40 scalars: written member by member, the 8 MB of
    ``qoe web pages --format json`` on 1,000 page loads took 0.59 s here.
    """
    if not isinstance(value, (dict, list)) or not value:
        out.append(json.dumps(value, allow_nan=False))  # a scalar, {} or []
        return
    inner = "\n" + " " * (indent * (level + 1))
    is_dict = isinstance(value, dict)
    items = value.values() if is_dict else value
    opening, closing = ("{", "}") if is_dict else ("[", "]")
    enc = flat.get(level)
    if enc is None:
        enc = flat[level] = json.JSONEncoder(separators=("," + inner, ": "), allow_nan=False)
    if not any(isinstance(v, (dict, list)) for v in items):
        text = enc.encode(value)
        out.append(opening + inner + text[1:-1] + "\n" + " " * (indent * level) + closing)
        return
    if not is_dict and _rows_of_scalars(value):
        out.append(_rows_text(value, indent, level))
        return
    out.append(opening)
    sep = inner
    if is_dict:
        run: dict[str, Any] = {}  # scalar members not written yet
        for k, v in value.items():
            if not isinstance(v, (dict, list)):
                run[k] = v
                continue
            if run:
                out.append(sep + enc.encode(run)[1:-1])
                run = {}
                sep = "," + inner
            out.append(sep + json.dumps(k) + ": ")
            _indented(v, indent, level + 1, out, flat)
            sep = "," + inner
        if run:
            out.append(sep + enc.encode(run)[1:-1])
    else:
        scalars: list[Any] = []
        for v in value:
            if not isinstance(v, (dict, list)):
                scalars.append(v)
                continue
            if scalars:
                out.append(sep + enc.encode(scalars)[1:-1])
                scalars = []
                sep = "," + inner
            out.append(sep)
            _indented(v, indent, level + 1, out, flat)
            sep = "," + inner
        if scalars:
            out.append(sep + enc.encode(scalars)[1:-1])
    out.append("\n" + " " * (indent * level) + closing)


def _json_chunks(head: Mapping[str, Any], results: Iterable[Any], indent: int) -> Iterator[str]:
    """The text of ``to_json({**head, "results": list(results)}, indent=indent)`` in pieces: the
    head, then one result at a time (each result, or its ``to_dict()``, made plain only when
    its turn comes).

    ``head`` must hold a container (a report's ``inputs``), so that its text ends with
    ``"\n}"``, where the ``"results"`` member is spliced in.
    """
    pad = " " * indent
    yield to_json(head, indent=indent)[:-2] + ",\n" + pad + json.dumps("results") + ": "
    sep, flat = "[\n" + pad * 2, {}
    for r in results:
        out = [sep]
        _indented(_plain(r, None, True), indent, 2, out, flat)
        yield "".join(out)
        sep = ",\n" + pad * 2
    yield "[]\n}" if sep[0] == "[" else "\n" + pad + "]\n}"


def _csv_cell(value: Any) -> str:
    value = to_plain(value, nan=None)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value, allow_nan=False)
    return str(value)


def _csv_column(values: list[Any]) -> list[str]:
    """The CSV cells of one column (:func:`_csv_cell` of each value).

    A column of one plain type is converted in one C-level pass (``str`` of ints,
    ``repr`` of finite floats, strings as they are), one of a plain type and None in one
    comprehension; others cell by cell.
    """
    kinds = set(map(type, values))
    if kinds == {str}:
        return values
    if kinds == {int}:
        return list(map(str, values))
    if kinds == {float} and all(map(math.isfinite, values)):
        return list(map(repr, values))
    kinds.discard(type(None))  # one plain type with empty cells: the same, None as ""
    if not kinds:  # a column of None only
        return [""] * len(values)
    if kinds == {str}:
        return ["" if v is None else v for v in values]
    if kinds == {int}:
        return ["" if v is None else str(v) for v in values]
    if kinds == {bool}:
        return ["" if v is None else "true" if v else "false" for v in values]
    if kinds == {float}:
        return ["" if v is None or not math.isfinite(v) else repr(v) for v in values]
    return [_csv_cell(v) for v in values]


def _values(record: Mapping[str, Any]) -> Iterable[Any]:
    return record.values()


# Characters that make the csv module quote a cell (RFC 4180 §2 rules 6 and 7: a cell holding
# the delimiter, a double quote or a line break is enclosed in double quotes).
_CSV_SPECIAL = (",", '"', "\n", "\r")


def _plain_csv(names: list[str], cells: list[list[str]]) -> str | None:
    """The CSV text of a header and columns of cells when no cell needs quoting (what
    ``csv.writer`` writes for them, joined in a few C-level passes), else None.

    Two columns at least: the csv module quotes the empty cell of a one-column row (``""``),
    so that the line is not blank.
    """
    if len(names) < 2 or not all(isinstance(n, str) for n in names):  # (the csv module writes str() of a name)
        return None
    for column in (names, *cells):
        joined = "\x00".join(column)
        if any(c in joined for c in _CSV_SPECIAL):
            return None
    return "\n".join((",".join(names), *map(",".join, zip(*cells)))) + "\n"


def to_csv(rows: Iterable[Mapping[str, Any]]) -> str:
    """Flat records as CSV text: a header of :func:`columns`, then one line per record.

    Empty cells for None, NaN and infinities (and for a column a record does not have);
    floats with all their digits; booleans as ``true``/``false``; lists and dicts as
    JSON text. No rows: an empty string. Cells are made column by column
    (:func:`_csv_column`), so that a table of many rows costs few Python steps per cell.
    """
    rows = list(rows)
    if not rows:
        return ""
    keys = tuple(rows[0])
    if all(map(keys.__eq__, map(tuple, rows))):  # the usual table: every record has the same columns
        names = list(keys)
        cells = [_csv_column(list(c)) for c in zip(*map(_values, rows))] if keys else []
        text = _plain_csv(names, cells)
        if text is not None:
            return text
    else:
        names = columns(rows)
        cells = [_csv_column([r.get(k) for r in rows]) for k in names]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(names)
    writer.writerows(zip(*cells) if cells else [[]] * len(rows))  # records without columns: empty lines
    return buf.getvalue()


def iter_csv(rows: Callable[[], Iterable[Mapping[str, Any]]]) -> Iterator[str]:
    """:func:`to_csv` of the records ``rows()`` gives, in pieces, holding one record at a time.

    Parameters
    ----------
    rows : callable
        Gives the same records each time it is called: once for the columns (the header
        names every column of every record, :func:`columns`), once for the lines.

    Yields
    ------
    str
        The header line, then one line per record: together, ``to_csv(list(rows()))``,
        the same text (:func:`_csv_cell` of each value is what :func:`_csv_column` gives
        for it).
    """
    names = columns(rows())
    if not names and not any(True for _ in rows()):
        return
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")

    def line(cells: Iterable[str]) -> str:
        buf.seek(0)
        buf.truncate()
        writer.writerow(cells)
        return buf.getvalue()

    yield line(names)
    for r in rows():
        yield line([_csv_cell(r.get(k)) for k in names])


def to_frame(rows: Iterable[Mapping[str, Any]]):  # noqa: ANN201 - pandas is imported lazily
    """Flat records as a :class:`pandas.DataFrame` (columns in :func:`columns` order)."""
    import pandas as pd  # noqa: PLC0415 - only needed here

    rows = [to_plain(dict(r)) for r in rows]
    return pd.DataFrame.from_records(rows, columns=columns(rows)) if rows else pd.DataFrame()


#: Readers of :func:`read_table` by file suffix (longest suffixes first).
_TABLE_SUFFIXES = (".csv.gz", ".csv", ".parquet", ".pq", ".json")


def read_table(path: str | os.PathLike[str], *, text: Sequence[str] = ("row_key", "error")):  # noqa: ANN201
    """A table of results read back: what :func:`to_csv`, ``qoe batch`` or ``qoe score --format json`` wrote.

    An empty CSV cell is a missing value (as :func:`to_csv` writes None, NaN and inf); any
    other text is kept as it is (a label ``NA`` stays ``"NA"``).

    Parameters
    ----------
    path : str or path-like
        CSV (``.csv``, ``.csv.gz``), Parquet (``.parquet``, ``.pq``; needs pyarrow) or JSON
        records (``.json``: a list of objects).
    text : sequence of str
        Columns read as text even when every value looks like a number (identifiers).

    Returns
    -------
    pandas.DataFrame
        Possibly without rows (an empty file gives an empty frame).

    Raises
    ------
    InputError
        The file is missing, its suffix names none of these formats, or it does not parse.
    """
    import pandas as pd  # noqa: PLC0415 - only needed here

    p = Path(path)
    suffix = next((s for s in _TABLE_SUFFIXES if p.name.lower().endswith(s)), None)
    if suffix is None:
        raise InputError(f"{p}: a results table must be .csv, .csv.gz, .parquet, .pq or .json")
    if not p.is_file():
        raise InputError(f"{p}: no such file")
    kind = suffix.strip(".").removesuffix(".gz")
    try:
        if kind == "csv":
            if p.stat().st_size == 0:
                return pd.DataFrame()
            return pd.read_csv(p, dtype=dict.fromkeys(text, str), keep_default_na=False, na_values=[""])
        if kind == "json":
            return pd.DataFrame(json.loads(p.read_text(encoding="utf-8")))
        return pd.read_parquet(p)
    except ImportError as exc:
        raise InputError(f"{p}: reading Parquet needs pyarrow ({exc})") from exc
    except (ValueError, OSError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise InputError(f"{p}: not a readable {kind} table ({exc})") from exc
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many kinds for a damaged Parquet file
        raise InputError(f"{p}: not a readable {kind} table ({type(exc).__name__}: {exc})") from exc


#: Significant digits of a number in a report's HTML table.
_HTML_DIGITS = 4


def _html_cell(value: Any) -> str:
    value = to_plain(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{_HTML_DIGITS}g}" if math.isfinite(value) else ("" if math.isnan(value) else str(value))
    if isinstance(value, (list, dict)):
        value = json.dumps(value, allow_nan=False) if value else ""
    return html.escape(str(value))


def html_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Flat records as an HTML ``<table>``: a header of :func:`columns`, a line per record.

    Numbers with :data:`_HTML_DIGITS` significant digits, empty cells for None and NaN,
    text escaped.

    Examples
    --------
    >>> html_table([{"r": 93.20621, "note": "<ok>"}])
    '<table><thead><tr><th>r</th><th>note</th></tr></thead><tbody><tr><td>93.21</td><td>&lt;ok&gt;</td></tr></tbody></table>'
    """
    names = columns(rows)
    head = "".join(f"<th>{html.escape(n)}</th>" for n in names)
    body = "".join("<tr>" + "".join(f"<td>{_html_cell(r.get(n))}</td>" for n in names) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


@dataclass(frozen=True, repr=False)
class Report:
    """Scores of everything :func:`qoe.score` found in one capture.

    Attributes
    ----------
    kind : str
        What was scored: ``"voice"``, ``"video"``, or the kinds found joined by ``+``
        (``"voice+video"``) when :func:`qoe.score` looked for every kind; each result's own
        kind is the ``kind`` column of :meth:`to_records`.
    source : str
        The capture.
    results : tuple
        One result per scored item (voice: :class:`~qoe.voice.DirectionScore`, one per
        stream and direction of each call; video: :class:`~qoe.video.VideoScore` with a
        reference, else :class:`~qoe.video.StreamFacts`, one per stream).
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

    def __repr__(self) -> str:
        """A one-line summary (the results themselves are in :meth:`to_frame`)."""
        notes = f", {len(self.notes)} note{'s' * (len(self.notes) != 1)}" if self.notes else ""
        return f"Report(kind={self.kind!r}, source={self.source!r}, {len(self.results)} result" \
               f"{'s' * (len(self.results) != 1)}{notes})"

    def _repr_html_(self) -> str:
        """How a notebook shows the report: a heading, the brief records of each kind as a
        table (one line per call direction, stream or page load), and the notes."""
        parts = [f"<p><b>qoe report</b> ({html.escape(self.kind)}): {html.escape(self.source)}, "
                 f"{len(self.results)} result{'s' * (len(self.results) != 1)}</p>"]
        kinds: dict[str, list[dict[str, Any]]] = {}
        for r in self.results:
            kinds.setdefault(str(getattr(r, "kind", self.kind)), []).append(r.to_record(brief=True))
        for kind, rows in kinds.items():
            if len(kinds) > 1:
                parts.append(f"<p>{html.escape(kind)}</p>")
            parts.append(html_table(rows))
        lines = self.note_lines()
        if lines:
            parts.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in lines) + "</ul>")
        return "<div>" + "".join(parts) + "</div>"

    def __iter__(self) -> Iterator[Any]:
        return iter(self.results)

    def tables(self) -> tuple[str, ...]:
        """Names of the tables :meth:`to_records` accepts: ``"results"`` and the detail tables."""
        return _table_names(self.results)

    def to_records(self, table: str = "results", *, brief: bool = False) -> list[dict[str, Any]]:
        """Flat records: one per result, or the rows of a detail table.

        A full result record starts with the result's ``kind`` (``"voice"``, ``"video"``), so
        that one table can hold every kind; a brief one has the headline columns only.

        Parameters
        ----------
        table : str
            ``"results"`` (default) or a detail table (e.g. ``"windows"``, ``"plays"``;
            see :meth:`tables`), whose rows start with the columns naming their item.
        brief : bool, keyword-only
            For ``"results"``: only the headline columns (``to_record(brief=True)``, a
            subset of the full record's columns).

        Raises
        ------
        InputError
            An unknown table name.
        """
        _check_table(self, table, self.results)
        return [row for r in self.results for row in _records_of(r, table, brief=brief, kind=self.kind)]

    def to_frame(self, table: str = "results", *, brief: bool = False):  # noqa: ANN201 - pandas is lazy
        """The records of ``table`` as a :class:`pandas.DataFrame` (see :meth:`to_records`)."""
        return to_frame(self.to_records(table, brief=brief))

    def to_csv(self, table: str = "results", *, brief: bool = False) -> str:
        """The records of ``table`` as CSV text (see :meth:`to_records` and :func:`to_csv`)."""
        return to_csv(self.to_records(table, brief=brief))

    def to_dict(self) -> dict[str, Any]:
        """Everything as nested plain Python (NaN and infinities stay)."""
        return {**self._head(), "results": [_plain_result(r) for r in self.results]}

    def _head(self) -> dict[str, Any]:
        """:meth:`to_dict` without the results."""
        return {"kind": self.kind, "source": self.source, "inputs": to_plain(self.inputs), "notes": list(self.notes)}

    def to_json(self, *, indent: int | None = 2) -> str:
        """:meth:`to_dict` as strict JSON (NaN and infinities become ``null``)."""
        if indent is None:
            return to_json(self.to_dict(), indent=None)
        return "".join(_json_chunks(self._head(), self.results, indent))

    def note_lines(self) -> list[str]:
        """The report's notes, then each distinct result note once, prefixed by the results it is about.

        A result names itself by its ``label`` (voice: the direction, else the stream);
        results without one by their position. A note about more than six results (``NOTE_NAMES``)
        names the first five and the last, and says how many in all (the JSON output holds
        every result's notes).

        Examples
        --------
        ``"[user talks, user listens] network one-way delay: measured ..."``;
        ``"[#1, #2, #3, #4, #5, ... #200 (200 in all)] slow DNS"``
        """
        return _note_lines(self.notes, self.results)


def _plain_result(result: Any) -> Any:
    """A result in a report's :meth:`~Report.to_dict`: its ``to_dict()`` as plain Python."""
    return to_plain(result.to_dict())


def _table_names(results: Iterable[Any]) -> tuple[str, ...]:
    """``"results"`` and the names of the detail tables of ``results``, in order of appearance."""
    names = ["results"]
    for r in results:
        for name in getattr(r, "tables", dict)():
            if name not in names:
                names.append(name)
    return tuple(names)


def _check_table(report: Report, table: str, results: Iterable[Any]) -> None:
    """Raise :class:`InputError` when ``table`` is neither ``"results"`` nor a detail table of ``results``."""
    if table == "results":
        return
    names = _table_names(results)
    if table not in names:
        raise InputError(f"unknown table {table!r}; this {report.kind} report has: {', '.join(names)}")


def _records_of(result: Any, table: str, *, brief: bool, kind: str) -> list[dict[str, Any]]:
    """The records of one result in ``table`` (see :meth:`Report.to_records`); ``kind``: the report's."""
    if table == "results":
        if brief:
            return [result.to_record(brief=True)]
        return [{"kind": getattr(result, "kind", kind), **result.to_record()}]
    ident = result.identity() if hasattr(result, "identity") else {}
    return [{**ident, **row} for row in result.tables().get(table, [])]


#: Results a note line names at most: a note about more names the first ones and the last,
#: and how many in all (:meth:`Report.note_lines`).
NOTE_NAMES = 6


def _note_lines(notes: Iterable[str], results: Iterable[Any]) -> list[str]:
    """:meth:`Report.note_lines` of a report's ``notes`` and ``results``."""
    lines = list(notes)
    seen: dict[str, dict[str, None]] = {}
    for i, r in enumerate(results):
        who = str(getattr(r, "label", None) or f"#{i + 1}")
        for n in getattr(r, "notes", ()):
            seen.setdefault(n, {})[who] = None
    lines += [f"[{_names(list(who))}] {n}" for n, who in seen.items()]
    return lines


def _names(who: list[str]) -> str:
    """The results a note is about, at most :data:`NOTE_NAMES` of them named."""
    if len(who) <= NOTE_NAMES:
        return ", ".join(who)
    return f"{', '.join(who[:NOTE_NAMES - 1])}, ... {who[-1]} ({len(who)} in all)"


def _mapping_proxy(items: dict[Any, Any]) -> MappingProxyType:
    """A read-only mapping of ``items`` (what an unpickled one is made with)."""
    return MappingProxyType(items)


def _reduce_mapping_proxy(m: MappingProxyType) -> tuple[Any, tuple[dict[Any, Any]]]:
    """How the spool pickles a read-only mapping (results hold some): as one made anew of a copy."""
    return _mapping_proxy, (dict(m),)


#: The reducers of :class:`ReportWriter`'s pickler: the standard ones and :func:`_reduce_mapping_proxy`
#: (set on the writer's pickler only, not in :mod:`copyreg`).
_SPOOL_REDUCERS = {**copyreg.dispatch_table, MappingProxyType: _reduce_mapping_proxy}


class ReportWriter:
    """A report's outputs from its results given one at a time, in memory flat in their number.

    Each result given to :meth:`add` is pickled to an unnamed temporary file (the spool,
    :func:`tempfile.TemporaryFile`: it has no name and is gone when closed, even after a
    crash); the outputs are then written from the spool, one result at a time, by the same
    functions :class:`Report` uses, so that they are the same text as the report's with
    these results: :meth:`json_chunks` is :meth:`Report.to_json`, :meth:`records`
    :meth:`Report.to_records`, :meth:`csv_chunks` :meth:`Report.to_csv`, :meth:`note_lines`
    :meth:`Report.note_lines`. The methods that write take ``head``: the report without its
    results (``results=()``, e.g. :meth:`qoe.api.ScoreStream.report`).

    A writer is a context manager; :meth:`close` removes the spool.

    Examples
    --------
    >>> from qoe.api import iter_score                                       # doctest: +SKIP
    >>> stream = iter_score("big.pcap", kind="web")                          # doctest: +SKIP
    >>> with ReportWriter() as writer:                                       # doctest: +SKIP
    ...     for result in stream:
    ...         writer.add(result)
    ...     with open("big.csv", "w") as f:
    ...         f.writelines(writer.csv_chunks(stream.report()))
    """

    def __init__(self) -> None:
        self._spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close(), a writer lives longer than a block
        self._count = 0

    def __enter__(self) -> ReportWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return self._count

    def close(self) -> None:
        """Remove the spool (the writer cannot be used after)."""
        self._spool.close()

    def add(self, result: Any) -> None:
        """Spool one result (the next of the report's ``results``)."""
        self._spool.seek(0, os.SEEK_END)
        pickler = pickle.Pickler(self._spool, protocol=pickle.HIGHEST_PROTOCOL)
        pickler.dispatch_table = _SPOOL_REDUCERS
        pickler.dump(result)
        self._count += 1

    def results(self) -> Iterator[Any]:
        """The results given so far, in order, read back one at a time (several readers may interleave)."""
        offset = 0
        for _ in range(self._count):
            self._spool.seek(offset)
            result = pickle.load(self._spool)  # noqa: S301 - our own spool, written by add()
            offset = self._spool.tell()
            yield result

    def report(self, head: Report) -> Report:
        """``head`` with the results in memory (what the writer avoids; for small reports and tests)."""
        return dataclasses.replace(head, results=tuple(self.results()))

    def tables(self) -> tuple[str, ...]:
        """:meth:`Report.tables` of the results: ``"results"`` and the detail tables."""
        return _table_names(self.results())

    def records(self, head: Report, table: str = "results", *, brief: bool = False) -> Iterator[dict[str, Any]]:
        """:meth:`Report.to_records`, one record at a time.

        Raises
        ------
        InputError
            An unknown table name (at the call).
        """
        _check_table(head, table, self.results())
        return self._records(head, table, brief)

    def _records(self, head: Report, table: str, brief: bool) -> Iterator[dict[str, Any]]:
        return (row for r in self.results() for row in _records_of(r, table, brief=brief, kind=head.kind))

    def csv_chunks(self, head: Report, table: str = "results", *, brief: bool = False) -> Iterator[str]:
        """:meth:`Report.to_csv` in pieces (a header, then a line per record).

        Raises
        ------
        InputError
            An unknown table name (at the call).
        """
        _check_table(head, table, self.results())
        return iter_csv(lambda: self._records(head, table, brief))

    def json_chunks(self, head: Report, *, indent: int = 2) -> Iterator[str]:
        """:meth:`Report.to_json` in pieces (the report's fields, then one result at a time)."""
        return _json_chunks(head._head(), self.results(), indent)  # noqa: SLF001

    def note_lines(self, head: Report) -> list[str]:
        """:meth:`Report.note_lines`: the report's notes, then each result note once."""
        return _note_lines(head.notes, self.results())
