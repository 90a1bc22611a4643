"""A capture that starts in the middle of a connection (no SYN) still yields its transactions.

The cut files are a real capture (data/web/captures/http11-idle-b64-wget_client.pcap: wget
fetching a page of four objects over one keep-alive connection) without its first frames,
as tcpdump started late would write it. Reference: tshark's HTTP requests and response codes
on the same cut file (``tshark -r CUT -Y http -T fields -e http.request.method -e
http.request.uri -e http.response.code``).
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import dpkt
import pytest

from qoe.web import page_loads
from qoe.web.http import connection_results

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "data/web/captures/http11-idle-b64-wget_client.pcap"
needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def cut(dst: Path, first: int) -> Path:
    """SOURCE from frame ``first`` (1-based, as tshark numbers frames) on."""
    with open(SOURCE, "rb") as f:
        r = dpkt.pcap.Reader(f)
        link, snap, packets = r.datalink(), r.snaplen, list(r)
    with open(dst, "wb") as f:
        w = dpkt.pcap.Writer(f, snaplen=snap, linktype=link)
        for ts, buf in packets[first - 1:]:
            w.writepkt(buf, ts=ts)
    return dst


def tshark_exchanges(path: Path) -> list[tuple[str, str, int]]:
    """(method, uri, status) of each request tshark finds, paired in order with the responses
    after it (a response before the first request answers a request the cut removed)."""
    out = subprocess.run(["tshark", "-r", str(path), "-Y", "http", "-T", "fields", "-e", "http.request.method",
                          "-e", "http.request.uri", "-e", "http.response.code"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    requests, statuses = [], []
    for line in out.splitlines():
        method, uri, code = (line.split("\t") + ["", "", ""])[:3]
        if method:
            requests.append((method, uri))
        elif code and requests:
            statuses.append(int(code))
    return [(m, u, s) for (m, u), s in zip(requests, statuses)]


@needs_tshark
@pytest.mark.parametrize("first", [20, 36], ids=["cut-mid-response-body", "cut-before-a-request"])
def test_a_capture_cut_mid_connection_gives_tshark_s_transactions(tmp_path, first):
    path = cut(tmp_path / "cut.pcap", first)
    expected = tshark_exchanges(path)
    assert len(expected) == 3  # /style.css, /img1.jpg, /img2.jpg
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (res,) = connection_results(path)
        found = page_loads(path)
    assert [(t.method, t.target, t.status) for t in res.transactions] == expected
    assert all(t.complete for t in res.transactions)
    assert res.note.startswith("capture began mid-connection (no handshake)")
    assert len(found) == 1 and found[0].objects == 3


@needs_tshark
def test_the_whole_capture_is_unchanged_by_the_mid_connection_rules():
    (res,) = connection_results(SOURCE)
    assert res.note is None and [(t.method, t.target, t.status) for t in res.transactions] == tshark_exchanges(SOURCE)
