"""TCP reassembly from a capture file and from packets already read must agree exactly.

``connections(path)`` reads the file with the columnar ``qoe.capture.tcp_segment_rows``;
``connections(read_packets(path, protocols=("tcp",)))`` takes the per-packet objects. On
every capture in ``data/web`` both must give the same connections (every field, RTT
samples included) and, through ``qoe.web.http.connection_results``, the same HTTP transactions
and TLS sessions.
"""

from __future__ import annotations

import glob
import os
import warnings

import pytest
from web.as_plain import as_plain  # tests/web/as_plain.py

from qoe.capture import read_packets
from qoe.web.http import connection_results
from qoe.web.tcp import connections

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# (data/web/browser/captures/h3-*.pcap, h3v2-*.pcap: HTTP/3 over QUIC, no TCP at all)
CAPTURES = sorted(p for p in glob.glob(os.path.join(ROOT, "data", "web", "**", "*.pcap"), recursive=True)
                  if not (os.path.basename(p).startswith(("h3-", "h3v2-")) and os.sep + "browser" + os.sep in p))


def test_there_are_captures():
    assert len(CAPTURES) >= 20


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: os.path.basename(p))
def test_file_and_packets_give_the_same_results(path):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = connections(path)
        b = connections(read_packets(path, protocols=("tcp",)))
        by_file = connection_results(path)
        by_packets = connection_results(read_packets(path, protocols=("tcp",)))
    if not a and (os.path.basename(path).startswith("h3-") or "quic" in os.path.basename(path)):
        pytest.skip("HTTP/3 only (QUIC over UDP): no TCP connection to compare")
    assert a, "a web capture with no TCP connection"
    assert as_plain(a) == as_plain(b)
    assert as_plain(by_file) == as_plain(by_packets)
