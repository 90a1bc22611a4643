"""qoe.report, the one serialiser: plain values, brief views, strict JSON, CSV, DataFrames."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qoe.errors import InputError
from qoe.report import Report, as_dict, brief, columns, read_table, to_csv, to_frame, to_json, to_plain


def _strict(text: str):
    """``json.loads`` that fails on the NaN/Infinity tokens RFC 8259 §6 does not allow."""
    def refuse(token):
        raise AssertionError(f"not RFC 8259 JSON: {token}")

    return json.loads(text, parse_constant=refuse)


@dataclass(frozen=True)
class _Inner:
    x: np.ndarray

    def to_dict(self):
        return as_dict(self)


@dataclass(frozen=True)
class _Outer:
    name: str
    r: np.float64
    n: np.int64
    inner: _Inner
    runs: tuple


def test_to_plain_turns_numpy_tuples_and_results_into_python():
    value = {1: np.float64(2.5), "a": np.array([[1, 2], [3, 4]]), "z": np.array(7.0), "t": (np.int32(3), None),
             "b": np.bool_(True), "inner": _Inner(np.array([0.5, np.inf]))}
    out = to_plain(value)
    assert out == {"1": 2.5, "a": [[1, 2], [3, 4]], "z": 7.0, "t": [3, None], "b": True, "inner": {"x": [0.5, np.inf]}}
    assert type(out["1"]) is float and type(out["a"][0][0]) is int and type(out["b"]) is bool
    assert to_plain([np.nan, -np.inf, 1.0], nan=None) == [None, None, 1.0]
    assert np.isnan(to_plain(np.float32("nan")))  # NaN is kept unless asked


def test_as_dict_keeps_declaration_order_and_nests():
    d = as_dict(_Outer("s", np.float64(1.5), np.int64(4), _Inner(np.array(2.0)), (1, 2)))
    assert list(d) == ["name", "r", "n", "inner", "runs"]
    assert d == {"name": "s", "r": 1.5, "n": 4, "inner": {"x": 2.0}, "runs": [1, 2]}
    assert list(as_dict(_Outer("s", 1.0, 1, _Inner(np.zeros(1)), ()), skip=("inner", "r"))) == ["name", "n", "runs"]


def test_brief_leaves_columns_out_and_never_renames():
    rec = {"a": 1, "b": 2.0, "c": "x"}
    assert brief(rec, ("c", "a")) == {"c": "x", "a": 1}
    with pytest.raises(KeyError, match=r"brief view names column\(s\) \['loss_%'\]"):
        brief(rec, ("a", "loss_%"))


def test_json_is_strict():
    text = to_json({"nan": float("nan"), "inf": np.float64("inf"), "ninf": -np.inf, "arr": np.array([np.nan, 1.0])})
    assert _strict(text) == {"nan": None, "inf": None, "ninf": None, "arr": [None, 1.0]}
    assert "NaN" not in text and "Infinity" not in text


# Plain values as JSON holds them (and the non-finite floats it does not), nested.
_SCALARS = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=_VALUES, indent=st.sampled_from([None, 0, 1, 2, 4]))
def test_json_text_is_the_standard_librarys(value, indent):
    """to_json writes indented JSON itself (for speed): the text must be exactly what
    ``json.dumps(..., indent=indent)`` of the standard library writes (the reference)."""
    assert to_json(value, indent=indent) == json.dumps(to_plain(value, nan=None), indent=indent, allow_nan=False)


# Header fields and other rows of scalars, with the characters the row writer cuts on inside strings.
_TRICKY = st.text(alphabet=st.sampled_from(["a", "[", "]", "\x00", ",", "\n", "\u00e9"]), max_size=6)
_ROWS = st.lists(st.lists(_SCALARS | _TRICKY, min_size=1, max_size=3).map(tuple) | st.lists(_SCALARS | _TRICKY, max_size=3),
                 max_size=5)


def _reference_plain(v):
    """to_plain's rules for JSON (``nan=None``), written out: tuples become lists, mapping
    keys strings, non-finite floats None."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, (list, tuple)):
        return [_reference_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _reference_plain(x) for k, x in v.items()}
    return v


@settings(max_examples=300, deadline=None)
@given(value=st.recursive(_SCALARS | _TRICKY | _ROWS, lambda inner: st.lists(inner, max_size=4).map(tuple)
                          | st.lists(inner, max_size=4) | st.dictionaries(_TRICKY, inner, max_size=4), max_leaves=30),
       indent=st.sampled_from([None, 0, 2]))
def test_plain_values_and_rows_of_scalars_as_the_rules_say(value, indent):
    """to_plain copies containers of plain leaves whole and to_json writes lists of rows of
    scalars (header fields) in one encoder call: both must give what the rules written out
    give (``_reference_plain``, then the standard library's ``json.dumps``)."""
    plain = _reference_plain(value)
    assert to_plain(value, nan=None) == plain
    assert to_json(value, indent=indent) == json.dumps(plain, indent=indent, allow_nan=False)


def test_results_as_json_as_the_rules_say():
    """Results (a page load of Chromium's HTTP/3 capture without keys: NaN shares, nested
    transactions with header fields) are written from their ``to_dict()`` walked once: the
    text must be the standard library's for the rules written out."""
    from pathlib import Path

    from qoe.web import page_loads

    pages = page_loads(Path(__file__).resolve().parents[1] / "data" / "web" / "browser" / "captures" / "h3-idle.pcap")
    plain = _reference_plain(to_plain(pages))
    assert None in plain[0].values()  # (a NaN of the page's became null)
    for indent in (None, 2):
        assert to_json(pages, indent=indent) == json.dumps(plain, indent=indent, allow_nan=False)


def _reference_cell(v):
    """The cell rules of to_csv's docstring, written out."""
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, dict)):
        return json.dumps(to_plain(v, nan=None), allow_nan=False)
    return repr(v) if isinstance(v, float) else str(v)


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.dictionaries(st.sampled_from("abcd"), _VALUES, max_size=4), max_size=6))
def test_csv_text_is_the_csv_modules(rows):
    """to_csv builds its cells column by column (for speed): the text must be what the
    standard csv module writes for the rows' cells one by one (the reference)."""
    assert to_csv(rows) == _reference_csv(rows)


def _reference_csv(rows):
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    names = columns(rows)
    if rows:
        writer.writerow(names)
        for r in rows:
            writer.writerow([_reference_cell(r[k]) if k in r else "" for k in names])
    return buf.getvalue()


_COLUMN_VALUES = [_SCALARS, st.integers(-5, 5) | st.none(), st.floats(allow_nan=True) | st.none(), st.none(),
                  st.booleans() | st.none(), st.text(alphabet=' a,"\n\r', max_size=4)]


@settings(max_examples=300, deadline=None)
@given(data=st.data(), names=st.lists(st.text(alphabet='ab,"_', min_size=1, max_size=3), unique=True, max_size=5),
       n=st.integers(0, 8))
def test_csv_text_of_records_with_the_same_columns_is_the_csv_modules(data, names, n):
    """Records that all have the same columns in the same order (what every table of results
    is) take to_csv's shortest path, which joins the cells itself when none needs quoting:
    the text must still be the csv module's (the reference), with or without cells to quote,
    for one column (whose empty cell the module quotes) as for several."""
    kinds = [data.draw(st.sampled_from(_COLUMN_VALUES)) for _ in names]
    rows = [{k: data.draw(v) for k, v in zip(names, kinds)} for _ in range(n)]
    assert to_csv(rows) == _reference_csv(rows)


def test_csv_of_records_whose_columns_are_not_strings_is_the_csv_modules():
    rows = [{1: "a", 2: 0.5}, {1: "c", 2: None}]  # the csv module writes str() of each name
    assert to_csv(rows) == _reference_csv(rows) == "1,2\na,0.5\nc,\n"


def test_csv_writes_empty_cells_for_nan_inf_and_none():
    rows = [{"a": 1, "b": float("nan"), "c": "x,y"}, {"a": np.int64(2), "b": np.inf, "d": None, "e": True},
            {"a": 0.1 + 0.2, "b": [1.0, np.nan], "c": None}]
    text = to_csv(rows)
    got = list(csv.reader(io.StringIO(text)))
    assert got[0] == columns(rows) == ["a", "b", "c", "d", "e"]
    assert got[1] == ["1", "", "x,y", "", ""]
    assert got[2] == ["2", "", "", "", "true"]
    assert got[3] == [repr(0.1 + 0.2), "[1.0, null]", "", "", ""]  # every digit; lists as strict JSON
    assert to_csv([]) == ""


def test_frame_has_the_records_columns_in_order():
    df = to_frame([{"b": 1.0, "a": np.float64("nan")}, {"a": 2.0, "c": "z"}])
    assert list(df.columns) == ["b", "a", "c"] and np.isnan(df["a"][0]) and df["a"][1] == 2.0
    assert to_frame([]).empty


def test_report_serialises_any_result_kind():
    @dataclass(frozen=True)
    class Page:
        url: str
        plt_s: float
        notes: tuple = ()
        BRIEF = ("url",)

        @property
        def label(self):
            return self.url

        def to_record(self, *, brief=False):
            rec = {"url": self.url, "plt_s": self.plt_s}
            return {k: rec[k] for k in self.BRIEF} if brief else rec

        def to_dict(self):
            return {"url": self.url, "plt_s": self.plt_s, "objects": [1.0, float("inf")]}

    rep = Report(kind="web", source="x.pcap", results=(Page("http://a/", 0.5, ("slow DNS",)),
                                                        Page("http://b/", float("nan"), ("slow DNS", "no TLS")),
                                                        Page("http://c/", 1.0)),
                 inputs={"rtt_ms": np.float64(np.nan)}, notes=("one page left out",))
    assert rep.tables() == ("results",) and rep.to_frame()["url"].tolist() == ["http://a/", "http://b/", "http://c/"]
    doc = _strict(rep.to_json())
    assert doc["results"][1] == {"url": "http://b/", "plt_s": None, "objects": [1.0, None]}
    assert doc["inputs"] == {"rtt_ms": None}
    # a full record starts with the result's kind (the report's, when the result has none)
    assert rep.to_csv().splitlines() == ["kind,url,plt_s", "web,http://a/,0.5", "web,http://b/,", "web,http://c/,1.0"]
    assert rep.to_csv(brief=True).splitlines() == ["url", "http://a/", "http://b/", "http://c/"]
    assert rep.note_lines() == ["one page left out", "[http://a/, http://b/] slow DNS", "[http://b/] no TLS"]


class _Cells(__import__("html.parser").parser.HTMLParser):
    """The text of every <th> and <td> of an HTML fragment, table by table, row by row."""

    def __init__(self):
        super().__init__()
        self.tables, self._cell = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][-1].append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def test_report_shows_itself_as_a_compact_table_per_kind():
    @dataclass(frozen=True)
    class Item:
        kind: str
        name: str
        mos: float
        notes: tuple = ()

        @property
        def label(self):
            return self.name

        def to_record(self, *, brief=False):
            rec = {"name": self.name, "mos": self.mos, "detail": list(range(50))}
            return {"name": self.name, "mos": self.mos} if brief else rec

        def to_dict(self):
            return self.to_record()

    rep = Report(kind="voice+web", source="a<b>.pcap",
                 results=(Item("voice", "up", 4.123456), Item("voice", "down", float("nan"), ("late",)),
                          Item("web", "http://x/?a=1&b=2", 2.5)), notes=("n1",))
    text = rep._repr_html_()
    parser = _Cells()
    parser.feed(text)
    # one table per kind: a header of the brief columns, then a line per result, 4 significant digits
    assert parser.tables == [[["name", "mos"], ["up", "4.123"], ["down", ""]],
                             [["name", "mos"], ["http://x/?a=1&b=2", "2.5"]]]
    assert "a&lt;b&gt;.pcap" in text and "<li>n1</li>" in text and "<li>[down] late</li>" in text
    assert "Item(" not in text and "detail" not in text  # not a dataclass dump, not the full record
    assert repr(rep) == "Report(kind='voice+web', source='a<b>.pcap', 3 results, 1 note)"


def test_a_csv_table_reads_back_what_to_csv_wrote(tmp_path):
    rows = [{"row_key": "0123", "label": "NA", "mos": 4.1, "error": None},
            {"row_key": "0456", "label": "b", "mos": float("nan"), "error": "InputError: x"}]
    (tmp_path / "r.csv").write_text(to_csv(rows))
    frame = read_table(tmp_path / "r.csv")
    assert list(frame.row_key) == ["0123", "0456"]  # identifiers stay text, leading zero kept
    assert list(frame.label) == ["NA", "b"]  # only an empty cell is missing
    assert frame.mos.iloc[0] == 4.1 and np.isnan(frame.mos.iloc[1])
    assert frame.error.isna().tolist() == [True, False]
    (tmp_path / "empty.csv").write_bytes(b"")
    assert read_table(tmp_path / "empty.csv").empty


def test_unreadable_tables_name_the_file(tmp_path):
    (tmp_path / "r.parquet").write_bytes(b"PAR1 not parquet")
    (tmp_path / "r.json").write_text("{not json")
    for name in ("r.parquet", "r.json", "missing.csv", "r.xlsx"):
        with pytest.raises(InputError, match=name.replace(".", r"\.")):
            read_table(tmp_path / name)


def test_a_note_about_many_results_names_a_few_and_counts_them():
    """A note shared by 200 results (copies of one page: the same note on each) is one line that
    names the first five and the last and says 200, not 200 names; six are still all named,
    and a note of a few results next to it keeps its own names. The JSON output keeps every
    result's note."""
    @dataclass(frozen=True)
    class Page:
        url: str
        notes: tuple = ()

        @property
        def label(self):
            return self.url

        def to_record(self, *, brief=False):
            return {"url": self.url}

        def to_dict(self):
            return {"url": self.url, "notes": list(self.notes)}

    pages = [Page(f"http://h{i}/", ("never used",) + (("slow",) if i in (3, 150) else ())) for i in range(200)]
    rep = Report(kind="web", source="x.pcap", results=tuple(pages))
    assert rep.note_lines() == [
        "[http://h0/, http://h1/, http://h2/, http://h3/, http://h4/, ... http://h199/ (200 in all)] never used",
        "[http://h3/, http://h150/] slow",
    ]
    six = Report(kind="web", source="x.pcap", results=tuple(pages[:6]))
    assert six.note_lines()[0] == "[" + ", ".join(f"http://h{i}/" for i in range(6)) + "] never used"
    seven = Report(kind="web", source="x.pcap", results=tuple(pages[:7]))
    assert seven.note_lines()[0].endswith("... http://h6/ (7 in all)] never used")
    assert sum("never used" in r["notes"] for r in _strict(rep.to_json())["results"]) == 200
