"""Chromium's own page loads decrypted with its key log: every object the servers served, found.

data/web/browser/captures/ (made by data/web/browser/make_browser.sh: Chromium 156 through
Playwright, SSLKEYLOGFILE set, nginx for HTTP/1.1, TLS 1.2/1.3 and h2, aioquic for h3, idle,
with delay, loss and bulk load). Truth, independent of qoe and of tshark:

* the servers' access logs (``<name>.server-access.jsonl``): one line per request served, with
  its path and status (nginx's ``$request``/``$status``; the HTTP/3 server's own log);
* tshark 4.0's decrypted view (``<name>.tshark-http.tsv``, data/web/browser/make_tshark.py:
  ``tshark -o tls.keylog_file:K -o tcp.reassemble_out_of_order:TRUE -Y http ...`` for HTTP/1.1,
  ``-Y 'http2.type == 1'`` for HTTP/2; each request and response with its frame time).
"""

from __future__ import annotations

import csv
import json
import warnings
from collections import Counter
from pathlib import Path

import pytest

from qoe.web.http import connection_results
from qoe.web.keylog import read_keylog
from qoe.web.quic import quic_connections

CAPS = Path(__file__).resolve().parents[2] / "data" / "web" / "browser" / "captures"
NAMES = sorted(p.stem for p in CAPS.glob("*.pcap")) if CAPS.is_dir() else []
pytestmark = pytest.mark.skipif(not NAMES, reason="data/web/browser/captures not present")


def ns(text: str) -> int:
    sec, _, frac = text.partition(".")
    return int(sec) * 10**9 + int((frac + "000000000")[:9])


def served(name: str) -> Counter:
    out: Counter = Counter()
    for line in (CAPS / f"{name}.server-access.jsonl").read_text().splitlines():
        s = json.loads(line)
        path = s["request"].split()[1] if "request" in s else s["path"]
        out[(path, int(s["status"]))] += 1
    return out


def ours(name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cleartext loads' key logs are empty (a warning says so)
        keys = read_keylog(CAPS / f"{name}.keylog")
    results = connection_results(CAPS / f"{name}.pcap", keylog=keys)
    quic = quic_connections(CAPS / f"{name}.pcap", keylog=keys) if name.startswith("h3") else []
    return results, quic


@pytest.mark.parametrize("name", NAMES)
def test_every_object_the_servers_served_is_found_whole(name):
    results, quic = ours(name)
    txs = [t for r in results for t in r.transactions] + [t for c in quic for t in c.transactions]
    assert Counter((t.target, t.status) for t in txs) == served(name)
    assert all(t.complete for t in txs), [t.partial for t in txs if not t.complete]
    protocol = {"h1": "http/1.1", "h2": "h2", "h3": "h3", "tl": "http/1.1"}[name[:2]]
    assert {t.protocol for t in txs} == {protocol}
    for r in results:
        if r.decryption is not None:  # no record failed authentication, and any connection left
            assert r.decryption.failed_records == 0  # closed says why (abandoned handshakes)
            assert r.decryption.decrypted or r.decryption.note
    for c in quic:
        assert c.decrypted and c.client_failed_packets == c.server_failed_packets == 0


@pytest.mark.parametrize("name", [n for n in NAMES if not n.startswith("h3")])
def test_requests_and_responses_at_the_frames_tshark_decrypts(name):
    rows = [r for r in csv.DictReader((line for line in (CAPS / f"{name}.tshark-http.tsv").read_text().splitlines()
                                       if not line.startswith("#")), delimiter="\t")]
    results, _ = ours(name)
    tx_by_stream = {r.connection.index: r for r in results}
    req = Counter((int(r["stream"]), ns(r["time_epoch"]), r["path"]) for r in rows if r["message"].startswith("request"))
    resp = Counter((int(r["stream"]), ns(r["time_epoch"]), int(r["status"])) for r in rows
                   if r["message"].startswith("response") and r["status"])
    got_req = Counter((k, t.request_start_ns, t.target) for k, r in tx_by_stream.items() for t in r.transactions)
    # tshark shows a cleartext HTTP/1.1 response at the frame that completed it (head and body
    # reassembled: its last byte); a decrypted one at the TLS record that carried its head
    # (these responses fit one record), an HTTP/2 one at its HEADERS frame's record: the first byte
    last = name.startswith("h1")
    got_resp = Counter((k, t.response_end_ns if last else t.response_start_ns, t.status)
                       for k, r in tx_by_stream.items() for t in r.transactions)
    assert got_req == req
    assert got_resp == resp


@pytest.mark.parametrize("name", [n for n in NAMES if not n.startswith("h1")])
def test_decrypted_objects_are_the_browsers_at_its_request_times(name):
    """Every Resource Timing entry of the load (39 subresources and the document) is one decrypted
    transaction of ``page_loads(options=WebOptions(keylog=...))`` (matched by URL), and the request
    left the capture point when the browser says it sent it: median |Δ requestStart| ≤ 2 ms.
    (Measured, median / max |Δ| in ms over the 40 objects: requestStart 0.1-2.0 / 1.3-56, the
    extreme ones under uplink load, where a request waits in the socket behind the queue;
    responseStart 0.2-3.2 / 3.8-63; see docs/guide/web-decryption.md.)"""
    import statistics
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from browser_truth import load, object_deltas  # tests/web/browser_truth.py (the browser helper's)

    from qoe.web import WebOptions, page_loads

    t = load(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pages = page_loads(t.pcap, options=WebOptions(keylog=str(CAPS / f"{name}.keylog")))
    rows = object_deltas(t, pages)
    assert len(rows) == 40 and all(r["matched"] for r in rows), [r["url"] for r in rows if not r["matched"]]
    assert statistics.median(abs(r["requestStart"]) for r in rows) <= 2.0
