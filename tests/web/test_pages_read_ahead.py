"""WebOptions(read_ahead=True): a capture read in a child process, its connections split
between the two (``qoe.web._split``), gives the same pages as read here (the browser's
captures, HTTP/1.1, HTTPS with the key log, HTTP/2 and HTTP/3 beside TCP; the seed paper's
curl loads with DNS); with a key log each process decrypts its connections (TLS 1.2 and
1.3, HTTP/1.1 and HTTP/2 inside, a capture with losses and one cut short).

Run in a fresh interpreter (tests/fresh_python.py says why), which asserts that a child
process read the capture.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from fresh_python import run_fresh  # tests/fresh_python.py

DATA = Path(__file__).resolve().parents[2] / "data" / "web"


@pytest.mark.skipif(not (sys.platform.startswith("linux") and hasattr(os, "memfd_create")),
                    reason="read_ahead reads in a child process on Linux only")
@pytest.mark.parametrize("name", ["captures/http11-down-b8-curl-dns_client.pcap", "browser/captures/h1-loss.pcap",
                                  "browser/captures/h2-down.pcap", "browser/captures/h3-idle.pcap",
                                  "browser/captures/tls12-idle.pcap", "browser/captures/tls13-loss.pcap"])
def test_the_same_pages_with_the_segments_read_in_a_child(name):
    cap = DATA / name
    keylog = cap.with_suffix(".keylog")
    out = run_fresh('''
        import json, resource, sys
        from qoe.report import to_json
        from qoe.web import WebOptions, page_loads
        keylog = sys.argv[2] if sys.argv[2] != "-" else None
        plain = page_loads(sys.argv[1], options=WebOptions(keylog=keylog))
        assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss == 0
        ahead = page_loads(sys.argv[1], options=WebOptions(keylog=keylog, read_ahead=True))
        assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss > 0  # a child read the segments
        assert to_json([p.to_dict() for p in ahead]) == to_json([p.to_dict() for p in plain])
        print(len(plain), sum(len(p.transactions) for p in plain))
    ''', cap, keylog if keylog.exists() else "-")
    pages, transactions = map(int, out.split())
    assert pages >= 1 and transactions >= 3


@pytest.mark.skipif(not (sys.platform.startswith("linux") and hasattr(os, "memfd_create")),
                    reason="read_ahead reads in a child process on Linux only")
def test_a_damaged_capture_decrypted_in_a_child_warns_and_gives_what_it_holds(tmp_path):
    """Segments the capture point missed (every 12th of the large ones: the TLS records they
    held fail, their plaintext is a gap for HTTP/2) and its end cut off: the child's reader
    warns, the warning reaches the caller, and the pages are those read here."""
    import dpkt

    src = DATA / "browser" / "captures" / "h2-down.pcap"
    cut = tmp_path / "damaged.pcap"
    with open(src, "rb") as f, open(cut, "wb") as out_file:
        reader = dpkt.pcap.Reader(f)
        writer = dpkt.pcap.Writer(out_file, linktype=reader.datalink(), snaplen=reader.snaplen)
        records = list(reader)
        for k, (ts, frame) in enumerate(records[: len(records) * 3 // 5]):
            if len(frame) > 1000 and k % 12 == 0:
                continue
            writer.writepkt(frame, ts)
        writer.writepkt(records[len(records) * 3 // 5][1][:40], records[len(records) * 3 // 5][0])
    data = cut.read_bytes()
    cut.write_bytes(data[:-10])  # the last record cut short
    out = run_fresh('''
        import sys, warnings
        from qoe.report import to_json
        from qoe.web import WebOptions, page_loads

        def run(ahead):
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                pages = page_loads(sys.argv[1], options=WebOptions(keylog=sys.argv[2], read_ahead=ahead))
            return to_json([p.to_dict() for p in pages]), sorted({str(w.message) for w in seen})

        plain, plain_warnings = run(False)
        ahead, ahead_warnings = run(True)
        assert ahead == plain
        assert ahead_warnings == plain_warnings and any("capture ends inside packet record" in w for w in plain_warnings), plain_warnings
        print(plain.count('"url"'), plain.count("bytes missing from the capture"))
    ''', cut, src.with_suffix(".keylog"))
    objects, cut_streams = map(int, out.split())
    assert objects >= 3 and cut_streams >= 1  # objects of the page before the end; streams a gap cut


@pytest.mark.parametrize("bad", [1, "yes"])
def test_read_ahead_is_true_false_or_none(bad):
    from qoe.errors import InputError
    from qoe.web import WebOptions

    with pytest.raises(InputError, match="read_ahead must be True, False or None"):
        WebOptions(read_ahead=bad)


def test_read_ahead_is_not_in_the_reports_options():
    """How the pages were read is not what was computed: a report's options leave it out,
    so that `qoe score` (on with two cores) and qoe.score (off) write the same report."""
    from qoe.web import WebOptions

    assert "read_ahead" in WebOptions.names()
    assert "read_ahead" not in WebOptions(read_ahead=True).to_dict()
    assert WebOptions(read_ahead=True).to_dict() == WebOptions().to_dict()
