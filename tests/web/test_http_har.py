"""HAR 1.2 export and import.

The schema (tests/web/har12.schema.json) was written from J. Odvarko, "HAR 1.2 Spec",
http://www.softwareishard.com/blog/har-12-spec/ (required fields from its tables, custom
fields only with a leading "_", -1 or >= 0 for optional timings). The independent HAR is
tests/web/http_samples/mitmproxy.har, written by mitmproxy 11.0.2's ``hardump`` for curl
fetching three objects through it (make_har.sh); its values are read from the file with
``json`` in the tests, not typed in.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import jsonschema
import pytest
from web_streams import SAMPLES, results

from qoe.errors import InputError, QoEWarning
from qoe.web.har import HarPage, parse_har, read_har, to_har, write_har

SCHEMA = json.loads((Path(__file__).parent / "har12.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
MITM = SAMPLES / "mitmproxy.har"


def captured():
    return [t for name in ("http10", "keepalive", "framing", "continue", "pipelined", "tls13")
            for r in results(SAMPLES / f"{name}.pcap") for t in r.transactions]


def errors(har) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATOR.iter_errors(har)]


def test_schema_is_a_valid_json_schema_and_accepts_an_independent_har():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert errors(json.loads(MITM.read_text())) == []
    bad = json.loads(MITM.read_text())
    bad["log"]["entries"][0]["timings"]["wait"] = -1  # HAR 1.2: send/wait/receive non-negative
    bad["log"]["entries"][0]["unknownField"] = 1  # a non-custom field the spec does not have
    assert len(errors(bad)) == 2


def test_export_validates_and_follows_the_timing_rules():
    txs = captured()
    har = to_har(txs)
    assert errors(har) == []
    log = har["log"]
    assert log["version"] == "1.2" and log["pages"] == []  # no page grouping given
    assert len(log["entries"]) == len(txs)
    for e in log["entries"]:
        t = e["timings"]
        # "time" is the sum of the timings that are not -1; ssl (-1) lies inside connect
        assert e["time"] == pytest.approx(sum(v for v in t.values() if v != -1))
        assert t["blocked"] == t["dns"] == t["ssl"] == -1
        assert "pageref" not in e and all(k.startswith("_") or k in {
            "startedDateTime", "time", "request", "response", "cache", "timings", "serverIPAddress", "connection",
        } for k in e)
    # entries are written in startedDateTime order (the spec's preferred order)
    for tx, e in zip(sorted(txs, key=lambda t: t.started_ns), log["entries"]):
        assert e["request"]["url"] == tx.url and e["connection"] == str(tx.connection)
        # connect: SYN -> first request byte for a new connection, -1 for a reused one
        if tx.reused:
            assert e["timings"]["connect"] == -1
        else:
            assert e["timings"]["connect"] == pytest.approx((tx.request_start_ns - tx.connection_start_ns) / 1e6)
        assert e["time"] == pytest.approx((tx.response_end_ns - tx.started_ns) / 1e6)
        assert e["response"]["headersSize"] == tx.response_header_bytes
        assert e["response"]["bodySize"] == tx.response_body_bytes == e["response"]["content"]["size"]


def test_export_with_pages_sets_pageref_and_plt(tmp_path):
    txs = captured()
    first = [t for t in txs if t.connection == 0][:2]
    page = HarPage("page_0", "test page", first[0].started_ns, None, None, tuple(first))
    path = tmp_path / "out.har"
    write_har(path, txs, pages=[page])
    har = json.loads(path.read_text(encoding="utf-8"))
    assert errors(har) == []
    (p,) = har["log"]["pages"]
    assert p["pageTimings"] == {"onContentLoad": -1, "onLoad": -1}  # a capture sees no onLoad
    assert p["_plt"] == pytest.approx((max(t.response_end_ns for t in first) - first[0].started_ns) / 1e6)
    assert sum(1 for e in har["log"]["entries"] if e.get("pageref") == "page_0") == 2


def test_own_files_read_back_exactly(tmp_path):
    txs = captured()
    path = tmp_path / "qoe.har"
    write_har(path, txs)
    back = read_har(path)
    assert back.creator[0] == "qoe"
    assert sorted(back.transactions, key=lambda t: (t.connection, t.sequence)) == sorted(
        txs, key=lambda t: (t.connection, t.sequence))


def test_another_writers_view_of_our_export_keeps_the_times():
    txs = captured()
    har = to_har(txs)
    har["log"]["creator"]["name"] = "someone-else"  # their custom fields are ignored
    back = parse_har(har)
    mine = sorted(txs, key=lambda t: t.started_ns)
    assert len(back.transactions) == len(mine)
    for a, b in zip(back.transactions, mine):
        assert (a.method, a.url, a.status) == (b.method, b.url, b.status)
        # startedDateTime has microseconds; ms floats round to the ns
        assert abs(a.request_start_ns - b.request_start_ns) <= 1000
        assert abs(a.response_end_ns - b.response_end_ns) <= 1000
        assert a.reused == b.reused


def test_import_an_independent_har():
    raw = json.loads(MITM.read_text())["log"]["entries"]
    log = read_har(MITM)
    assert log.creator[0] == "mitmproxy" and log.pages == ()
    assert len(log.transactions) == len(raw) == 3
    for t, e in zip(log.transactions, raw):
        tm = e["timings"]
        before = tm.get("blocked", 0) + tm.get("dns", 0)
        connect = tm["connect"] if tm["connect"] >= 0 else 0
        assert t.url == e["request"]["url"] and t.method == e["request"]["method"]
        assert t.status == e["response"]["status"] and t.content_type == e["response"]["content"]["mimeType"]
        assert t.response_body_bytes == e["response"]["content"]["size"] - e["response"]["content"].get("compression", 0)
        assert t.reused == (tm["connect"] == -1)
        assert (t.request_start_ns - t.started_ns) == pytest.approx((max(before, 0) + connect) * 1e6, abs=1)
        # entry.time is the sum of the timings: the last byte lands there
        assert (t.response_end_ns - t.started_ns) == pytest.approx(e["time"] * 1e6, abs=3)
        assert t.server == (e["serverIPAddress"], 8080)


def test_import_pages_with_onload_like_browsertime():
    har = {"log": {
        "version": "1.2",
        "creator": {"name": "browsertime", "version": "21"},
        "browser": {"name": "firefox", "version": "120"},
        "pages": [{"startedDateTime": "2024-01-02T03:04:05.100+01:00", "id": "page_1", "title": "t",
                   "pageTimings": {"onContentLoad": 120.5, "onLoad": 300}}],
        "entries": [
            {"pageref": "page_1", "startedDateTime": "2024-01-02T02:04:05.200Z", "time": 60,
             "request": {"method": "GET", "url": "https://example.org/a.css?x=1", "httpVersion": "HTTP/2",
                         "cookies": [], "headers": [], "queryString": [], "headersSize": -1, "bodySize": 0},
             "response": {"status": 200, "statusText": "", "httpVersion": "HTTP/2", "cookies": [],
                          "headers": [{"name": "content-encoding", "value": "br"}],
                          "content": {"size": 5000, "compression": 3000, "mimeType": "text/css"},
                          "redirectURL": "", "headersSize": -1, "bodySize": 2000},
             "cache": {}, "timings": {"blocked": 5, "dns": -1, "connect": -1, "ssl": -1, "send": 1, "wait": 40,
                                      "receive": 14}, "serverIPAddress": "[2001:db8::1]", "connection": "17",
             "_custom": {"ignored": True}},
            {"pageref": "page_1", "startedDateTime": "2024-01-02T02:04:05.100Z", "time": 100,
             "request": {"method": "GET", "url": "https://example.org/", "httpVersion": "HTTP/2", "cookies": [],
                         "headers": [], "queryString": [], "headersSize": -1, "bodySize": 0},
             "response": {"status": 200, "statusText": "", "httpVersion": "HTTP/2", "cookies": [], "headers": [],
                          "content": {"size": 15000, "mimeType": "text/html"}, "redirectURL": "",
                          "headersSize": -1, "bodySize": 15000},
             "cache": {}, "timings": {"blocked": 0, "dns": 10, "connect": 30, "ssl": 20, "send": 1, "wait": 50,
                                      "receive": 9}, "serverIPAddress": "2001:db8::1", "connection": "17"},
        ]}}
    assert errors(har) == []
    log = parse_har(har)
    (page,) = log.pages
    assert page.started_ns == 1704161045_100_000_000  # 03:04:05.100+01:00 = 02:04:05.100Z
    assert page.on_load_ms == 300 and page.on_content_load_ms == 120.5
    doc, css = page.transactions  # sorted by startedDateTime
    assert doc.url == "https://example.org/" and doc.sequence == 0 and not doc.reused
    assert doc.connection_start_ns == page.started_ns + 10_000_000  # after blocked + dns
    assert doc.request_start_ns == page.started_ns + 40_000_000  # ssl is inside connect
    # the handshake: ssl (20 ms) ends where connect does (blocked + dns + connect = 40 ms)
    assert (doc.tls_start_ns, doc.tls_end_ns) == (page.started_ns + 20_000_000, page.started_ns + 40_000_000)
    assert css.tls_start_ns is None and css.tls_end_ns is None  # a reused connection: ssl -1
    assert doc.response_end_ns == page.started_ns + 100_000_000
    assert css.sequence == 1 and css.reused and css.connection == doc.connection == 0
    assert css.target == "/a.css?x=1" and css.host == "example.org" and css.server == ("2001:db8::1", 443)
    assert css.response_body_bytes == 2000 and css.content_encoding == "br"  # size - compression
    assert page.fully_loaded_ms == pytest.approx(160)  # css ends 100 + 60 ms after the page start


@pytest.mark.parametrize("bad, match", [
    ({"nolog": 1}, "no 'log' object"),
    ({"log": {"version": "2.0", "entries": []}}, "major version must be 1"),
    ({"log": {"version": "1.2", "entries": [{"startedDateTime": "yesterday"}]}}, "entry 0: startedDateTime is not ISO 8601"),
    ({"log": {"version": "1.2", "entries": [{"startedDateTime": "2024-01-01T00:00:00Z"}]}}, "request and response"),
])
def test_bad_har_input(bad, match):
    with pytest.raises(InputError, match=match):
        parse_har(bad, source="x.har")


def test_bad_har_files(tmp_path):
    with pytest.raises(InputError, match="no such HAR file"):
        read_har(tmp_path / "missing.har")
    p = tmp_path / "bad.har"
    p.write_text("{not json")
    with pytest.raises(InputError, match="bad.har: not a HAR file"):
        read_har(p)
    p.write_text('\ufeff{"log": {"version": "1.2", "creator": {"name": "x", "version": "1"}, "entries": []}}',
                 encoding="utf-8")
    assert read_har(p).transactions == ()  # a BOM is accepted


def test_a_time_without_zone_warns():
    har = {"log": {"version": "1.2", "pages": [{"startedDateTime": "2024-01-01T00:00:00", "id": "p", "title": "",
                                                 "pageTimings": {}}], "entries": []}}
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        log = parse_har(har)
    assert log.pages[0].started_ns == 1704067200 * 10**9 and any(issubclass(x.category, QoEWarning) for x in w)
