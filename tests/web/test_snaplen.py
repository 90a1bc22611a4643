"""Captures whose snapshot length cut the packets (``tcpdump -s 96``, as operators capture
headers only): what qoe can still tell, and that it says why it cannot tell the rest.

The cut copies are made here from Chromium's loads in data/web/browser/captures (each record's
captured length set to at most 96 bytes, its original length kept, as ``editcap -s 96`` and
``tcpdump -s 96`` write them); the references are the whole captures and the byte counts read
here from the records' headers with dpkt.
"""

from __future__ import annotations

import struct
from pathlib import Path

import dpkt

from qoe.web import WebOptions, page_loads

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
    """``source`` with every record cut to :data:`SNAP` bytes; the TCP payload bytes no copy of
    any segment holds any more (a retransmission's cut bytes are the original's)."""
    cut: dict[tuple, list[tuple[int, int]]] = {}
    kept: dict[tuple, list[tuple[int, int]]] = {}
    with source.open("rb") as f, out.open("wb") as g:
        r = dpkt.pcap.Reader(f)
        g.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, SNAP, r.datalink()))
        for ts, buf in r:
            ip = dpkt.ethernet.Ethernet(buf).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP) and ip.data.data:
                tcp = ip.data
                held = min(len(tcp.data), max(0, SNAP - (14 + ip.hl * 4 + tcp.off * 4)))
                flow = (ip.src, tcp.sport, ip.dst, tcp.dport)
                kept.setdefault(flow, []).append((tcp.seq, tcp.seq + held))
                cut.setdefault(flow, []).append((tcp.seq + held, tcp.seq + len(tcp.data)))
            sec, usec = int(ts), round((ts - int(ts)) * 1e6)
            g.write(struct.pack("<IIII", sec, usec, min(len(buf), SNAP), len(buf)) + buf[:SNAP])
    # (sequence numbers do not wrap in these short loads)
    return sum(_measure(cut[f] + kept[f]) - _measure(kept[f]) for f in cut)


def test_a_tcp_page_cut_by_the_snapshot_length_says_so(tmp_path):
    """Chromium's HTTP/2 load cut at 96 bytes: the page keeps its timing (start, end: the TCP
    headers are whole) and says how many payload bytes the capture did not hold, on how many
    connections, with and without the key log; the whole capture says nothing of the kind."""
    source = CAPTURES / "h2-idle.pcap"
    cut = tmp_path / "cut.pcap"
    cut_bytes = snapped(source, cut)
    (whole,) = page_loads(source)
    assert not any("snapshot length" in n for n in whole.notes)
    for keylog in (None, source.with_suffix(".keylog")):
        for ahead in (False, True):
            (page,) = page_loads(cut, options=WebOptions(keylog=keylog, read_ahead=ahead))
            (note,) = [n for n in page.notes if n.startswith("the capture's snapshot length cut")]
            assert f"{cut_bytes} payload bytes not captured on {whole.connections} connection(s)" in note
            assert (page.start_ns, page.end_ns) == (whole.start_ns, whole.end_ns)
            # every connection carried objects the cut hides: none is taken for one opened and
            # never used, and the key log is not asked for when it was given
            assert page.objects == whole.connections and not any("never used" in n for n in page.notes)
            assert any(n.startswith("encrypted: 10 connection(s)") for n in page.notes)
