"""``read_tcp_segments`` / ``tcp_segment_rows`` against ``read_packets(..., protocols=("tcp",))``.

The columnar TCP reader decodes the common layouts with NumPy (and TCP options when
absent or NOP, NOP, Timestamps) and hands everything else to the per-packet decoder; on
any mixture of layouts, on random bytes and on every capture in ``data/`` it must return
exactly the packets of ``read_packets(path, protocols=("tcp",))``.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import struct
import warnings

import numpy as np
import pytest

from qoe.capture import (
    FLOW_BUCKETS, TCP_SEGMENT_FIELDS, Packet, TcpInfo, flow_bucket, read_packets, read_tcp_segments, read_udp_batches,
    tcp_segment_chunks, tcp_segment_row, tcp_segment_rows,
)
from qoe.errors import InputError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA_CAPTURES = sorted(
    p for p in glob.glob(os.path.join(ROOT, "data", "**", "*.pcap*"), recursive=True)
    if p.endswith((".pcap", ".pcapng", ".pcap.gz"))
)

# TCP option layouts (RFC 9293 §3.2, RFC 7323 §3.2 and Appendix A, RFC 2018 §2-§3)
_OPTIONS = [
    b"",
    b"\x01\x01\x08\x0a" + struct.pack("!II", 123456, 654321),  # the usual timestamps layout
    b"\x02\x04\x05\xb4\x04\x02\x08\x0a" + struct.pack("!II", 7, 0) + b"\x01\x03\x03\x07",  # a SYN's
    b"\x01\x01\x05\x0a" + struct.pack("!II", 1000, 2000),  # one SACK block
    b"\x01\x01\x08\x0a" + struct.pack("!II", 9, 8) + b"\x01\x01\x05\x0a" + struct.pack("!II", 5, 6),
    b"\x08\x0a" + struct.pack("!II", 1, 2) + b"\x01\x01",  # timestamps first
    b"\x01\x01\x08",  # malformed: a length byte missing
]


def _tcp_frames(cap, rng, n: int) -> list[bytes]:  # type: ignore[no-untyped-def]
    frames = []
    for i in range(n):
        payload = bytes(rng.integers(0, 256, int(rng.integers(0, 200)), dtype=np.uint8))
        opts = _OPTIONS[int(rng.integers(0, len(_OPTIONS)))]
        seg = cap.tcp(int(rng.integers(1, 65536)), 80, payload, seq=int(rng.integers(0, 2**32)),
                      ack=int(rng.integers(0, 2**32)), flags=int(rng.integers(0, 0x200)), options=opts,
                      window=int(rng.integers(0, 65536)), urgent=int(rng.integers(0, 3)))
        v6 = rng.random() < 0.3
        kind = rng.random()
        if kind < 0.08:  # a fragmented segment (fragments in random order)
            cut = 8 * int(rng.integers(1, max(2, len(seg) // 8)))
            if v6:
                parts = [cap.ipv6("2001:db8::1", "2001:db8::2", 44, cap.frag6(6, 0, True, i) + seg[:cut]),
                         cap.ipv6("2001:db8::1", "2001:db8::2", 44, cap.frag6(6, cut, False, i) + seg[cut:])]
                frames += [cap.eth(p, 0x86DD) for p in rng.permutation(parts)]
            else:
                parts = [cap.ipv4("192.0.2.1", "198.51.100.2", 6, seg[:cut], ident=i, mf=True),
                         cap.ipv4("192.0.2.1", "198.51.100.2", 6, seg[cut:], ident=i, offset=cut)]
                frames += [cap.eth(p) for p in rng.permutation(parts)]
            continue
        if kind < 0.15:
            seg = cap.udp(53, 5353, payload)  # not TCP
        proto = 17 if kind < 0.15 else 6
        if v6:
            chain = cap.ext(proto) if rng.random() < 0.2 else b""
            ip = cap.ipv6("2001:db8::1", f"2001:db8::{int(rng.integers(2, 9)):x}", 0 if chain else proto, chain + seg)
            et = 0x86DD
        else:
            ip_opts = b"\x01\x01\x01\x00" if rng.random() < 0.1 else b""
            total = None
            if rng.random() < 0.05:  # a Total Length shorter or longer than the bytes
                total = int(rng.integers(20, len(seg) + 60))
            ip = cap.ipv4(f"192.0.2.{int(rng.integers(1, 5))}", "198.51.100.2", proto, seg, options=ip_opts, total=total)
            et = 0x0800
        r = rng.random()
        if r < 0.15:
            frame = cap.eth(ip, et, vlans=(0x8100,))
        elif r < 0.2:
            frame = cap.eth(ip, et, vlans=(0x88A8, 0x8100))
        elif r < 0.25:
            frame = cap.eth(b"\0" * 28, 0x0806)
        else:
            frame = cap.eth(ip, et, pad_to=60)
        if rng.random() < 0.1:
            frame = frame[: int(rng.integers(1, len(frame)))]  # snap length cut
        frames.append(frame)
    return frames


def _rows_as_packets(path, **kw) -> list[Packet]:  # type: ignore[no-untyped-def]
    """The rows rebuilt into Packets by the names of TCP_SEGMENT_FIELDS."""
    out = []
    for row in tcp_segment_rows(path, **kw):
        f = dict(zip(TCP_SEGMENT_FIELDS, row, strict=True))
        tcp = TcpInfo(**{k: f.pop(k) for k in [x.name for x in dataclasses.fields(TcpInfo)]})
        out.append(Packet(proto=6, tcp=tcp, **f))
    return out


def test_chunks_split_by_flow_bucket_partition_the_rows(cap, write):  # type: ignore[no-untyped-def]
    """``tcp_segment_chunks`` gives the rows of ``tcp_segment_rows`` chunk by chunk; a range of
    flow buckets takes the rows whose ``flow_bucket`` is in it (the same sum on the columns
    of the common layouts as on the rows the per-packet decoder made), and the bucket of a
    4-tuple is the same both ways."""
    rng = np.random.default_rng(20261127)
    frames = _tcp_frames(cap, rng, 800)
    path = write(cap.pcap([(cap.T0 + i // 1000, i % 1000, f) for i, f in enumerate(frames)]))
    want = list(tcp_segment_rows(path, chunk_size=4096))
    chunks = list(tcp_segment_chunks(path, chunk_size=4096, udp=True))
    assert len(chunks) > 10 and [r for c in chunks for r in c.rows()] == want
    ends = [c.upto for c in chunks]
    assert ends == sorted(ends) and all(r[0] <= c.upto for c in chunks for r in c.rows())
    datagrams = []
    for c in chunks:
        c.rows(udp=lambda b: datagrams.extend(b.index.tolist()))
    assert datagrams == [d for b in read_udp_batches(path) for d in b.index.tolist()] and datagrams
    buckets = {r[0]: flow_bucket(r[2], r[3], r[4], r[5]) for r in want}
    assert all(flow_bucket(r[4], r[5], r[2], r[3]) == buckets[r[0]] for r in want)
    assert len(set(buckets.values())) > 30
    for lo, hi in [(0, 37), (37, FLOW_BUCKETS), (0, 0), (0, FLOW_BUCKETS)]:
        got = [r for c in chunks for r in c.rows(flows=(lo, hi))]
        assert got == [r for r in want if lo <= buckets[r[0]] < hi]
    for bad in [(-1, 10), (10, 5), (0, 101), (0.5, 10)]:
        with pytest.raises(InputError, match="flows must be"):
            chunks[0].rows(flows=bad)


def test_chunk_rows_within_times_are_the_rows_captured_then(cap, write):  # type: ignore[no-untyped-def]
    """``SegmentChunk.rows(times=...)`` gives the rows whose capture time lies within one of the
    spans (both ends included; overlapping spans, spans in any order, with ``flows`` too),
    the common layouts' rows and the per-packet decoder's alike; spans that are not pairs of
    integers in order are refused. Reference: the rows of ``tcp_segment_rows`` filtered by
    their time field one by one."""
    rng = np.random.default_rng(20261128)
    frames = _tcp_frames(cap, rng, 800)
    path = write(cap.pcap([(cap.T0 + i // 1000, i % 1000, f) for i, f in enumerate(frames)]))
    want = list(tcp_segment_rows(path, chunk_size=4096))
    chunks = list(tcp_segment_chunks(path, chunk_size=4096))
    ts = [r[1] for r in want]
    t0, t1 = min(ts), max(ts)
    at = sorted(ts)
    cases = [
        [(t0, t1)],
        [],
        [(at[100], at[100])],  # one instant, its end included
        [(at[500], at[600]), (at[10], at[50]), (at[40], at[120])],  # out of order, overlapping
        [(t0 - 10**9, t0 - 1), (t1 + 1, t1 + 10**9)],  # none
    ]
    for spans in cases:
        got = [r for c in chunks for r in c.rows(times=spans)]
        assert got == [r for r in want if any(a <= r[1] <= b for a, b in spans)]
    assert 0 < len([r for c in chunks for r in c.rows(times=cases[3])]) < len(want)
    buckets = {r[0]: flow_bucket(r[2], r[3], r[4], r[5]) for r in want}
    both = [r for c in chunks for r in c.rows(flows=(0, 50), times=cases[3])]
    assert both == [r for r in want if buckets[r[0]] < 50 and any(a <= r[1] <= b for a, b in cases[3])] and both
    for bad in [[(5, 1)], [(1.5, 2)], [(True, 2)], [(1, 2, 3)], [1], [("1", "2")]]:
        with pytest.raises(InputError, match="times must be"):
            chunks[0].rows(times=bad)


@pytest.mark.parametrize("linktype", [1, 113, 276, 101])
def test_tcp_readers_agree_on_random_mixtures(cap, write, linktype):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(20261123 + linktype)
    frames = _tcp_frames(cap, rng, 800)
    if linktype == 113:
        frames = [cap.sll(f[14:], int.from_bytes(f[12:14], "big")) for f in frames if len(f) >= 14]
    elif linktype == 276:
        frames = [cap.sll2(f[14:], int.from_bytes(f[12:14], "big")) for f in frames if len(f) >= 14]
    elif linktype == 101:
        frames = [f[14:] for f in frames if len(f) > 14 and f[12:14] in (b"\x08\x00", b"\x86\xdd")]
    path = write(cap.pcap([(cap.T0 + i // 1000, i % 1000, f) for i, f in enumerate(frames)], linktype=linktype))
    want = list(read_packets(path, protocols=("tcp",)))
    assert len(want) > 300
    assert {p.tcp.tsval is not None for p in want} == {True, False}
    assert any(p.tcp.sack for p in want) and any(p.tcp.mss for p in want)
    for chunk_size in (4096, 1 << 20):  # rows split over many chunks, or in one
        assert list(read_tcp_segments(path, chunk_size=chunk_size)) == want
        assert _rows_as_packets(path, chunk_size=chunk_size) == want
        assert list(tcp_segment_rows(path, chunk_size=chunk_size)) == [tcp_segment_row(p) for p in want]


def test_tcp_readers_agree_on_pcapng(cap, write):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(7)
    frames = _tcp_frames(cap, rng, 200)
    body = cap.shb("<") + cap.idb("<", 1) + cap.idb("<", 113)
    for i, f in enumerate(frames):
        body += cap.epb("<", 0, cap.T0 * 10**6 + i, f) if i % 3 else cap.epb("<", 1, cap.T0 * 10**6 + i, f[14:])
        if i % 50 == 0:
            body += cap.isb("<", 0)
    path = write(body, "t.pcapng")
    want = list(read_packets(path, protocols=("tcp",)))
    assert len(want) > 50
    assert list(read_tcp_segments(path)) == want


@pytest.mark.parametrize("linktype", [0, 1, 12, 108, 113, 276, 228, 229])
def test_random_bytes_read_the_same(cap, write, linktype):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(99 + linktype)
    frames = []
    for _ in range(400):
        f = bytearray(rng.integers(0, 256, int(rng.integers(0, 140)), dtype=np.uint8).tobytes())
        if len(f) > 40 and rng.random() < 0.6:  # make IP + TCP headers likelier
            f[min(len(f) - 1, 12)] = 0x08
            f[0] = 0x45 if rng.random() < 0.5 else 0x60
            f[9], f[6] = 6, 6
        frames.append(bytes(f))
    path = write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)], linktype=linktype))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        want = list(read_packets(path, protocols=("tcp",)))
        assert list(read_tcp_segments(path)) == want


@pytest.mark.parametrize("path", DATA_CAPTURES, ids=lambda p: os.path.relpath(p, ROOT))
def test_tcp_readers_agree_on_the_real_captures(path):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = list(read_packets(path, protocols=("tcp",)))
        assert list(read_tcp_segments(path)) == want


@pytest.mark.parametrize("name", ["web/browser/captures/h3-idle.pcap", "web/captures/http11-down-b8-curl-dns_client.pcap"])
def test_rows_with_udp_give_the_udp_batches_datagrams_in_one_pass(name):
    # the reference: read_udp_batches on the same file (its own pass); the rows must not change
    path = os.path.join(ROOT, "data", name)
    got = []
    rows = list(tcp_segment_rows(path, udp=got.append))
    assert rows == list(tcp_segment_rows(path))
    want = list(read_udp_batches(path))
    assert sum(len(b.lengths) for b in want) > 0  # the capture holds UDP (QUIC, DNS)
    for col in ("index", "ts_ns", "sport", "dport", "lengths", "cut", "wire_len"):
        assert np.array_equal(np.concatenate([getattr(b, col) for b in got]),
                              np.concatenate([getattr(b, col) for b in want])), col
    assert [b.addresses[s] for b in got for s in b.src] == [b.addresses[s] for b in want for s in b.src]
    assert [b.payload_of(i) for b in got for i in range(len(b.lengths))] == \
        [b.payload_of(i) for b in want for i in range(len(b.lengths))]
