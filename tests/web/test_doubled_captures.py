"""A capture that holds every frame twice gives the pages of the capture that holds it once.

Linux's "any" device on a router or a host with two interfaces, and span ports, capture each
frame twice (DESIGN.md's traps). Here every frame of Chromium's page loads (data/web/browser) is
doubled by merging the capture with itself (Wireshark's mergecap): each copy at the same time,
so a copy can also come after the frames that followed its original (an ACK of it, a SYN-ACK).
The pages, with and without the key log, must be those of the capture itself, field by field
(transactions' connection numbers aside: each copy of a connection's frames is the same
connection); TCP counts the copies as ``Direction.duplicates``, QUIC as
``QuicConnection.duplicate_datagrams``.
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from qoe.web import WebOptions, page_loads
from qoe.web.http import connections
from qoe.web.quic import quic_connections
from web.as_plain import pages_plain  # tests/web/as_plain.py

CAPTURES = Path(__file__).resolve().parents[2] / "data" / "web" / "browser" / "captures"
needs_mergecap = pytest.mark.skipif(shutil.which("mergecap") is None, reason="mergecap (Wireshark) not installed")


def _doubled(tmp_path: Path, name: str) -> Path:
    out = tmp_path / f"{name}-x2.pcap"
    src = str(CAPTURES / f"{name}.pcap")
    subprocess.run(["mergecap", "-F", "pcap", "-w", str(out), src, src], check=True)
    return out


@needs_mergecap
@pytest.mark.parametrize("name, keys", [(n, k) for n in ("h2-up-b256", "h2-delay", "tls13-loss", "h3-loss", "h3-up")
                                        for k in (False, True)] + [("h1-up-b256", False)])  # (h1: cleartext)
def test_every_frame_twice_gives_the_same_pages(tmp_path, name, keys):
    """Before: a repeated SYN's copy after the SYN-ACK, and the copy of a spurious
    retransmission (of bytes already acknowledged), were retransmissions of their own
    (h2-up-b256: 71 -> 109 retransmissions, h1-up-b256: 98 -> 153, h2-delay: 1 -> 2); QUIC counted
    every datagram twice (the page's bytes doubled, 105 -> 211 kB on h3-loss without keys, and
    its round trips) and, with keys, each copy as a lost packet's retransmission (5 -> 134)."""
    keylog = CAPTURES / f"{name}.keylog"
    opts = WebOptions(keylog=str(keylog) if keys else None)
    doubled = _doubled(tmp_path, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        once, twice = page_loads(CAPTURES / f"{name}.pcap", options=opts), page_loads(doubled, options=opts)
    assert once and pages_plain(twice, connections=False) == pages_plain(once, connections=False)


@needs_mergecap
def test_the_copies_are_counted(tmp_path):
    """TCP: every frame of h2-up-b256 twice, each connection's copies as duplicates (its
    retransmission events those of the capture itself); QUIC: every datagram of h3-loss twice,
    each connection's datagrams once and as many duplicates."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        once = connections(CAPTURES / "h2-up-b256.pcap")
        twice = connections(_doubled(tmp_path, "h2-up-b256"))
        q_once = quic_connections(CAPTURES / "h3-loss.pcap")
        q_twice = quic_connections(_doubled(tmp_path, "h3-loss"))
    assert len(once) == len(twice)
    for a, b in zip(once, twice):
        assert [(e.segment, e.offset, e.length, e.kind) for e in a.retransmission_events] == \
            [(e.segment, e.offset, e.length, e.kind) for e in b.retransmission_events]
        assert (b.client.packets, b.server.packets) == (2 * a.client.packets, 2 * a.server.packets)
        assert b.client.duplicates + b.server.duplicates >= a.client.data_packets + a.server.data_packets
    assert len(q_once) == len(q_twice)
    for a, b in zip(q_once, q_twice):
        assert (b.client_packets, b.server_packets, b.client_bytes, b.server_bytes) == \
            (a.client_packets, a.server_packets, a.client_bytes, a.server_bytes)
        assert a.duplicate_datagrams == 0 and b.duplicate_datagrams == a.client_packets + a.server_packets
