"""Captures whose snapshot length cut the packets (``tcpdump -s 96``, as operators capture
headers only): what qoe can still tell, and that it says why it cannot tell the rest.

The cut copies are made here from Chromium's loads in data/web/browser/captures (each record's
captured length set to at most 96 bytes, its original length kept, as ``editcap -s 96`` and
``tcpdump -s 96`` write them); the references are the whole captures and the byte counts read
here from the records' headers with dpkt.
"""

from __future__ import annotations

from pathlib import Path

import dpkt
from snapshot_cut import cut_capture

from qoe.web import WebOptions, page_loads
from qoe.web.http import connection_results
from qoe.web.quic import quic_connections

CAPTURES = Path(__file__).resolve().parents[2] / "data" / "web" / "browser" / "captures"
SNAP = 96


def _measure(spans: list[tuple[int, int]]) -> int:
    """The bytes covered by the half-open ranges ``spans`` (each counted once)."""
    total, end = 0, None
    for lo, hi in sorted(spans):
        if end is None or lo > end:
            total, end = total + hi - lo, hi
        elif hi > end:
            total, end = total + hi - end, hi
    return total


def snapped(source: Path, out: Path) -> int:
    """``source`` with every record cut to :data:`SNAP` bytes, written to ``out``; the TCP
    payload bytes no copy of any segment holds any more (a retransmission's cut bytes are the
    original's), read from ``source`` with dpkt."""
    cut_capture(source, out, SNAP)
    cut: dict[tuple, list[tuple[int, int]]] = {}
    kept: dict[tuple, list[tuple[int, int]]] = {}
    with source.open("rb") as f:
        for _, buf in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP) and ip.data.data:
                tcp = ip.data
                held = min(len(tcp.data), max(0, SNAP - (14 + ip.hl * 4 + tcp.off * 4)))
                flow = (ip.src, tcp.sport, ip.dst, tcp.dport)
                kept.setdefault(flow, []).append((tcp.seq, tcp.seq + held))
                cut.setdefault(flow, []).append((tcp.seq + held, tcp.seq + len(tcp.data)))
    # (sequence numbers do not wrap in these short loads)
    return sum(_measure(cut[f] + kept[f]) - _measure(kept[f]) for f in cut)


def test_a_tcp_page_cut_by_the_snapshot_length_says_so(tmp_path):
    """Chromium's HTTP/2 load cut at 96 bytes: the page keeps its timing (start, end: the TCP
    headers are whole) and says how many payload bytes the capture did not hold, on how many
    connections, with and without the key log; the whole capture says nothing of the kind.
    The connections Chromium opened ahead and closed before their handshake was whole (the
    whole capture's TLS records show them so) are told by their TCP headers: never used, no
    object; the others, one object each (what they carried, the cut hides)."""
    source = CAPTURES / "h2-idle.pcap"
    cut = tmp_path / "cut.pcap"
    cut_bytes = snapped(source, cut)
    (whole,) = page_loads(source)
    assert not any("snapshot length" in n for n in whole.notes)
    results = list(connection_results(source))
    given_up = sum(1 for r in results if r.tls is not None and not r.tls.complete)
    assert given_up == 6
    used = ", ".join(str(r.connection.index) for r in results if r.tls is not None and r.tls.complete)
    for keylog in (None, source.with_suffix(".keylog")):
        for ahead in (False, True):
            (page,) = page_loads(cut, options=WebOptions(keylog=keylog, read_ahead=ahead))
            (note,) = [n for n in page.notes if n.startswith("the capture's snapshot length cut")]
            assert f"{cut_bytes} payload bytes not captured on {whole.connections} connection(s)" in note
            assert (page.start_ns, page.end_ns) == (whole.start_ns, whole.end_ns)
            # the others carried objects the cut hides (the key log is not asked for when given)
            assert page.objects == whole.connections - given_up
            assert any(n.startswith(f"{given_up} TLS connection(s) opened and never used (the snapshot length cut")
                       for n in page.notes)
            assert any(n.startswith(f"encrypted: {whole.connections - given_up} connection(s)") for n in page.notes)
            # the used ones are partial, for one reason said once
            assert f"partial: the snapshot length cut the records of TLS connection(s) {used}" in page.notes


def test_a_quic_page_cut_by_the_snapshot_length_keeps_its_timing_and_sizes(tmp_path):
    """Chromium's HTTP/3 load cut at 96 bytes: the QUIC headers are whole, so each connection is
    opened by its client's Initial (not taken as joined in progress, as the cut Initial, short
    of RFC 9000 §14.1's 1200 bytes as captured, made it), its bytes are the datagrams' lengths
    on the wire (UDP length, RFC 768), and its note says the cut packets were not opened; the
    page starts and ends where the whole capture's keyless page does, with its bytes."""
    source = CAPTURES / "h3-idle.pcap"
    cut = tmp_path / "cut.pcap"
    snapped(source, cut)
    (whole,) = page_loads(source)
    whole_conns = quic_connections(source)
    for keylog in (None, source.with_suffix(".keylog")):
        conns = quic_connections(cut, keylog=keylog)
        assert [(c.client, c.server, c.client_bytes, c.server_bytes, c.client_initial_ns, c.version)
                for c in conns] == [(c.client, c.server, c.client_bytes, c.server_bytes, c.client_initial_ns,
                                     c.version) for c in whole_conns]
        for c in conns:
            assert not c.joined_in_progress and "snapshot length cut" in c.note and c.transactions == ()
        (page,) = page_loads(cut, options=WebOptions(keylog=keylog))
        assert (page.start_ns, page.end_ns, page.bytes) == (whole.start_ns, whole.end_ns, whole.bytes)
        # what no key log would show is not put down to a missing key log, nor the RTT to Initial
        # packets missing from the capture (they are there, cut)
        assert any(n.startswith("encrypted: 3 connection(s)") and "snapshot length" in n for n in page.notes)
        assert not any("key log" in n and ("give" in n or "without a key log" in n) for n in page.notes)
        assert any("ACK frames are in packets the capture's snapshot length cut" in n for n in page.notes)
