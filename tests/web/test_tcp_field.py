"""qoe.web.tcp on TCP captures of cases seen in the field (``data/web/field/``, made by its
``make_field.sh``), against tshark's verdicts stored next to each capture (the exact tshark
command is in the script: ``tshark -r CAPTURE -T fields -e frame.number -e ip.id ... -e
tcp.analysis.retransmission -e tcp.analysis.fast_retransmission -e
tcp.analysis.out_of_order -e tcp.analysis.spurious_retransmission``, tshark 4.0.17)."""

from __future__ import annotations

import csv

import pytest

from qoe.capture import TCP_SEGMENT_FIELDS, read_packets, tcp_segment_rows
from qoe.web.tcp import connections

LATE = ("tcp.analysis.retransmission", "tcp.analysis.fast_retransmission", "tcp.analysis.out_of_order",
        "tcp.analysis.spurious_retransmission")


def _tshark(path):  # type: ignore[no-untyped-def]
    with open(f"{path}.tshark-tcp-analysis.tsv", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def _late(conns) -> set[int]:  # type: ignore[no-untyped-def]
    out = {e.frame for c in conns for e in c.retransmission_events}
    for c in conns:
        for d in (c.client, c.server):
            out |= set(d.out_of_order_frames)
    return out


@pytest.fixture
def same_tsval(data_dir):  # type: ignore[no-untyped-def]
    return data_dir / "web" / "field" / "reorder_retx_same_tsval.pcap"


@pytest.mark.parametrize("source", ["file", "packets"])
def test_a_resend_with_the_same_tsval_is_a_retransmission_not_a_copy(same_tsval, source):
    """Frame 24 repeats frame 16's TCP header and TSval 4.5 ms later: only the IPv4
    Identification tells the server's retransmission from one frame captured twice."""
    rows = {int(r["frame.number"]): r for r in _tshark(same_tsval)}
    a, b = rows[16], rows[24]
    assert (a["tcp.seq"], a["tcp.len"], a["tcp.options.timestamp.tsval"]) == (
        b["tcp.seq"], b["tcp.len"], b["tcp.options.timestamp.tsval"])
    assert a["ip.id"] != b["ip.id"] and b["tcp.analysis.retransmission"] == "1"
    conns = connections(same_tsval if source == "file" else read_packets(same_tsval, protocols=("tcp",)))
    theirs = {n for n, r in rows.items() if any(r[k] for k in LATE)}
    assert 24 in _late(conns)
    assert _late(conns) == theirs
    assert sum(c.server.duplicates + c.client.duplicates for c in conns) == 0


def test_the_rows_carry_the_ip_identification(same_tsval):
    """``ip_id`` of the segment rows and of the packets equals tshark's ``ip.id``."""
    ids = {int(r["frame.number"]): int(r["ip.id"], 16) for r in _tshark(same_tsval)}
    i = TCP_SEGMENT_FIELDS.index("ip_id")
    assert {r[0]: r[i] for r in tcp_segment_rows(same_tsval)} == ids
    assert {p.index: p.ip_id for p in read_packets(same_tsval, protocols=("tcp",))} == ids
