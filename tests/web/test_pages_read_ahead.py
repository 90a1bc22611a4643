"""WebOptions(read_ahead=True): a capture's segments read in a child process give the same
pages as read here (the browser's captures, HTTP/1.1, HTTPS with the key log, HTTP/2 and
HTTP/3 beside TCP; the seed paper's curl loads with DNS).

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
                                  "browser/captures/h2-down.pcap", "browser/captures/h3-idle.pcap"])
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
