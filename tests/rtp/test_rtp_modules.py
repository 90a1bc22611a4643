"""qoe.rtp as the public face of its private modules, and the pieces they share.

Expected values are written from RFC 3550's header layout (§5.1, §5.3.1) and its
modular sequence arithmetic (A.1), packet by packet, as the packets are built here.
"""

from __future__ import annotations

import doctest
import importlib
import socket
import struct

import dpkt
import numpy as np
import pytest

import qoe.rtp as rtp
from qoe.rtp._packet import SEQ_MOD, TS_MOD, header_columns, wrapped_distance
from qoe.rtp._stats import Presence

PRIVATE = ["qoe.rtp._packet", "qoe.rtp._stats", "qoe.rtp._results", "qoe.rtp._scan"]
# What qoe.rtp exported when it was one module (its __all__ and the RTCP packet types).
PUBLIC = [
    "RtpPackets", "StreamKey", "RtpStats", "RtpStream", "RtcpSummary", "RtpScan", "RtpHeader",
    "STATIC_PAYLOAD_TYPES", "parse_rtp_header", "parse_rtcp", "rtp_stats", "make_packets",
    "extend_sequence", "find_streams", "scan_capture",
]
RTCP_TYPES = {"RTCP_SR": 200, "RTCP_RR": 201, "RTCP_SDES": 202, "RTCP_BYE": 203, "RTCP_APP": 204}


def test_public_face_exports_what_it_exported():
    assert set(PUBLIC) <= set(rtp.__all__)
    for name in PUBLIC:
        obj = getattr(rtp, name)
        homes = [m for m in PRIVATE if getattr(importlib.import_module(m), name, None) is obj]
        assert homes, f"{name} is not the private modules' object"
    assert {k: getattr(rtp, k) for k in RTCP_TYPES} == RTCP_TYPES


@pytest.mark.parametrize("name", PRIVATE)
def test_private_module_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    if name.endswith("_packet"):  # parse_rtp_header and extend_sequence carry examples
        assert result.attempted >= 2


def _rtp(seq, *, csrc=0, ext_words=None, pad=0, payload=b"\xd5" * 20, b0_extra=0):
    """RFC 3550 §5.1 header (PT 8, ts 160*seq, SSRC 0x1234), CSRCs, §5.3.1 extension, padding."""
    b0 = 0x80 | csrc | (0x10 if ext_words is not None else 0) | (0x20 if pad else 0) | b0_extra
    out = struct.pack("!BBHII", b0, 8, seq, 160 * seq, 0x1234) + bytes(4 * csrc)
    if ext_words is not None:
        out += struct.pack("!HH", 0xBEDE, ext_words) + bytes(4 * ext_words)
    return out + payload + (bytes(pad - 1) + bytes([pad]) if pad else b"")


def test_header_columns_of_many_packets_at_once():
    pkts = [
        _rtp(1),  # plain: payload at 12
        _rtp(2, csrc=2, ext_words=1, pad=4),  # 12 + 8 + 4 + 4 = 28, 4 bytes of padding
        _rtp(3, payload=b""),  # header only: empty payload
        bytes([0x8F, 8]) + bytes(20),  # 15 CSRCs announced, 22 bytes: dropped
        _rtp(5, ext_words=200)[:60],  # extension longer than the packet: dropped
        _rtp(6, payload=b"\x01\x02", b0_extra=0x20)[:-1] + b"\xff",  # padding count 255 > payload: ignored
    ]
    buf = b"".join(pkts)
    starts = np.cumsum([0] + [len(p) for p in pkts[:-1]]).astype(np.int64)
    lengths = np.array([len(p) for p in pkts], dtype=np.int64)
    h = header_columns(np.frombuffer(buf, dtype=np.uint8), starts, lengths)
    assert h.rows.tolist() == [0, 1, 2, 5]
    assert h.seq.tolist() == [1, 2, 3, 6] and h.timestamp.tolist() == [160, 320, 480, 960]
    assert (h.payload_start - starts[h.rows]).tolist() == [12, 28, 12, 12]
    assert (h.payload_end - starts[h.rows]).tolist() == [32, 48, 12, 14]
    assert rtp.parse_rtp_header(pkts[3]) is None and rtp.parse_rtp_header(pkts[4]) is None


@pytest.mark.parametrize("seed", range(3))
def test_one_packet_and_many_packet_parsers_agree(seed):
    """parse_rtp_header (one header, plain Python) and header_columns (the scan's, NumPy)
    state the same rules: random version-2 packets with random CSRC counts, extension
    lengths, padding bytes and sizes get the same verdict and the same fields."""
    rng = np.random.default_rng(seed)
    pkts = []
    for _ in range(2000):
        n = int(rng.integers(12, 120))
        b = bytearray(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
        b[0] = 0x80 | (b[0] & 0x3F)  # version 2, random P, X and CSRC count
        if rng.random() < 0.5 and n >= 16 + 4 * (b[0] & 0x0F):  # a plausible extension length
            at = 12 + 4 * (b[0] & 0x0F)
            b[at + 2 : at + 4] = int(rng.integers(0, 8)).to_bytes(2, "big")
        pkts.append(bytes(b))
    pkts = [p for p in pkts if p[1] not in range(200, 205)]  # RTCP is told apart before
    starts = np.cumsum([0] + [len(p) for p in pkts[:-1]]).astype(np.int64)
    lengths = np.array([len(p) for p in pkts], dtype=np.int64)
    h = header_columns(np.frombuffer(b"".join(pkts), dtype=np.uint8), starts, lengths)
    ones = [rtp.parse_rtp_header(p) for p in pkts]
    assert h.rows.tolist() == [i for i, o in enumerate(ones) if o is not None]
    assert 300 < h.rows.size < len(pkts)  # both verdicts are exercised
    got = [
        (int(h.csrc_count[k]), bool(h.extension[k]), bool(h.padding[k]), bool(h.marker[k]), int(h.payload_type[k]),
         int(h.seq[k]), int(h.timestamp[k]), int(h.ssrc[k]), int(h.payload_start[k] - starts[i]),
         int(h.payload_end[k] - starts[i]))
        for k, i in enumerate(h.rows.tolist())
    ]
    want = [
        (o.csrc_count, o.extension, o.padding, o.marker, o.payload_type, o.seq, o.timestamp, o.ssrc,
         o.payload_start, o.payload_end)
        for o in ones if o is not None
    ]
    assert got == want


def test_wrapped_distance_is_the_shortest_signed_step():
    d = np.array([0, 1, 32767, 32768, 32769, 65535, -1, -32768, -32769])
    assert wrapped_distance(d, SEQ_MOD).tolist() == [0, 1, 32767, -32768, -32767, -1, -1, -32768, 32767]
    assert wrapped_distance(np.array([TS_MOD - 160]), TS_MOD).tolist() == [-160]


def test_presence_window_is_a_parameter():
    e = np.arange(1, 1000)
    small, whole = Presence(0, window=64), Presence(0)
    small.add(e)
    whole.add(e)
    assert small.settled is not None and whole.settled is None
    assert (small.dups, small.ooo, small.loss_runs()) == (whole.dups, whole.ooo, whole.loss_runs())


def test_scan_table_extends_across_wraps_and_batches(tmp_path):
    """Sequence numbers and timestamps wrap inside the stream, one packet comes late and
    one twice; read three datagrams per batch, the table's extended numbers are those
    of extend_sequence over the whole stream and its statistics those of rtp_stats."""
    seqs = [65530 + i for i in range(12)]
    seqs[7], seqs[8] = seqs[8], seqs[7]  # reordered across the wrap
    seqs.insert(5, seqs[3])  # a duplicate
    ts0 = TS_MOD - 800
    path = tmp_path / "wrap.pcap"
    with open(path, "wb") as fh:
        w = dpkt.pcap.Writer(fh, nano=True)
        for i, s in enumerate(seqs):
            data = struct.pack("!BBHII", 0x80, 0, s % SEQ_MOD, (ts0 + 160 * (s - 65530)) % TS_MOD, 7) + b"\xff" * 160
            u = dpkt.udp.UDP(sport=5004, dport=5006, data=data)
            u.ulen = len(u)
            ip = dpkt.ip.IP(src=socket.inet_aton("192.0.2.1"), dst=socket.inet_aton("198.51.100.2"), p=17, data=u)
            ip.len = len(ip)
            w.writepkt(bytes(dpkt.ethernet.Ethernet(type=0x0800, data=ip)), ts=1_700_000_000 + 0.02 * i)
    (s,) = rtp.scan_capture(path, batch_size=3).streams
    p = s.packets
    assert p.seq_ext.tolist() == seqs
    assert p.ts_ext.tolist() == [ts0 + 160 * (x - 65530) for x in seqs]
    assert np.array_equal(p.seq_ext, rtp.extend_sequence(p.seq, SEQ_MOD))
    # chunked and whole-table statistics differ by float rounding only
    assert s.stats.to_dict() == pytest.approx(rtp.rtp_stats(p, 8000).to_dict(), rel=1e-12)
    assert (s.stats.duplicates, s.stats.out_of_order, s.stats.lost) == (1, 1, -1)
