"""qoe.web.tcp on segments written by hand from RFC 9293's rules (sequence numbers, SYN and FIN
taking one each, ACK = next byte expected): reassembly, classification, RTT, limits, results.

The packets are built with the public ``qoe.capture.Packet`` / ``TcpInfo`` records, the same
objects ``qoe.capture.read_packets`` yields, and fed to ``connections`` directly.
"""

from __future__ import annotations

import json
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qoe.capture import TCP_ACK, TCP_FIN, TCP_PSH, TCP_RST, TCP_SYN, Packet, TcpInfo
from qoe.errors import CaptureError, InputError, QoEWarning
from qoe.report import to_json
from qoe.web.tcp import CLIENT, SERVER, Connection, ConnectionId, TcpLimits, connections, iter_connections

M = 2**32
CLI = ("192.0.2.2", 40000)
SRV = ("198.51.100.2", 80)
MS = 1_000_000


class Collect:
    """A ByteSink that records every call and checks the contract (contiguous offsets)."""

    def __init__(self, cid: ConnectionId):
        self.cid = cid
        self.calls: list[tuple] = []
        self.next = [0, 0]
        self.closed: list = [None, None]

    def data(self, d, ts, offset, payload):
        assert self.closed[d] is None and offset == self.next[d] and len(payload) > 0
        self.next[d] += len(payload)
        self.calls.append(("data", d, ts, offset, bytes(payload)))

    def gap(self, d, ts, offset, length):
        assert self.closed[d] is None and offset == self.next[d] and length > 0
        self.next[d] += length
        self.calls.append(("gap", d, ts, offset, length))

    def close(self, d, ts, how):
        assert self.closed[d] is None
        self.closed[d] = how
        self.calls.append(("close", d, ts, how))

    def stream(self, d) -> bytes:
        """The direction's bytes, gaps as b'?' runs."""
        out = bytearray()
        for c in self.calls:
            if c[0] == "data" and c[1] == d:
                out += c[4]
            elif c[0] == "gap" and c[1] == d:
                out += b"?" * c[4]
        return bytes(out)

    def gaps(self, d) -> list[tuple[int, int]]:
        return [(c[3], c[4]) for c in self.calls if c[0] == "gap" and c[1] == d]


class Flow:
    """Packets of one connection between CLI and SRV, numbered and timed as they are added."""

    def __init__(self, isn_c: int = 1000, isn_s: int = 5000, *, client=CLI, server=SRV, t0: int = 1_700_000_000 * 10**9):
        self.isn = {CLIENT: isn_c, SERVER: isn_s}
        self.ends = {CLIENT: client, SERVER: server}
        self.packets: list[Packet] = []
        self.t = t0

    def seq(self, d: int, offset: int) -> int:
        """Raw sequence number of byte ``offset`` of direction ``d`` (offset -1: the SYN)."""
        return (self.isn[d] + 1 + offset) % M

    def add(self, d, offset, flags=TCP_ACK, data=b"", *, ack=None, dt=MS, data_len=None, window=65535,
            tsval=None, tsecr=None, sack=(), raw_seq=None) -> Packet:
        self.t += dt
        src, dst = self.ends[d], self.ends[1 - d]
        ackno = 0 if ack is None else self.seq(1 - d, ack)
        seq = self.seq(d, offset) if raw_seq is None else raw_seq
        sack_raw = tuple((self.seq(1 - d, a), self.seq(1 - d, b)) for a, b in sack)
        tcp = TcpInfo(seq, ackno, flags, window, data_len=len(data) if data_len is None else data_len,
                      tsval=tsval, tsecr=tsecr, sack=sack_raw)
        p = Packet(len(self.packets) + 1, self.t, src[0], dst[0], 6, src[1], dst[1], data, tcp, 0, 54 + len(data))
        self.packets.append(p)
        return p

    def handshake(self, *, dt=MS):
        self.add(CLIENT, -1, TCP_SYN, dt=dt)
        self.add(SERVER, -1, TCP_SYN | TCP_ACK, ack=0, dt=dt)
        self.add(CLIENT, 0, TCP_ACK, ack=0, dt=dt)
        return self


def run(packets, **kw) -> tuple[list[Connection], dict[int, Collect]]:
    sinks: dict[int, Collect] = {}

    def factory(cid):
        sinks[cid.index] = Collect(cid)
        return sinks[cid.index]

    return connections(packets, sinks=factory, **kw), sinks


# -- reassembly as a property --------------------------------------------------------------------


@st.composite
def shuffled_segments(draw):
    """A byte stream, segments that cover it (cut points, plus re-sent ranges with other
    boundaries), in any order with repeats, and any ISN (wrap-around included)."""
    data = draw(st.binary(min_size=1, max_size=3000))
    n = len(data)
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, n - 1)), max_size=12)) if n > 1 else []))
    bounds = [0, *cuts, n]
    segs = [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]
    extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(1, 400)), max_size=8))
    segs += [(a, min(n, a + k)) for a, k in extra]
    order = draw(st.permutations(segs))
    repeats = draw(st.lists(st.sampled_from(segs), max_size=5))
    isn = draw(st.integers(0, M - 1))
    return data, list(order) + repeats, isn


@given(shuffled_segments(), st.booleans())
@settings(max_examples=200, deadline=None)
def test_any_order_and_repeats_reassemble_to_the_same_bytes(case, fin):
    data, segs, isn = case
    f = Flow(isn_s=isn).handshake()
    for a, b in segs:
        f.add(SERVER, a, TCP_ACK | TCP_PSH, data[a:b], ack=0)
    if fin:
        f.add(SERVER, len(data), TCP_ACK | TCP_FIN, ack=0)
    (c,), sinks = run(f.packets)
    sink = sinks[0]
    assert sink.stream(SERVER) == data
    assert sink.closed[SERVER] == ("fin" if fin else "end-of-capture")
    s = c.server
    assert s.bytes == s.delivered_bytes == len(data) and s.missing_bytes == 0
    assert s.overlap_conflicts == 0
    # every segment after the first one to reach a byte range is late: all are accounted for
    late = s.retransmissions + s.out_of_order + s.duplicates + s.keepalives
    assert s.data_packets == len(segs) and late <= len(segs) - 1


@given(shuffled_segments(), st.data())
@settings(max_examples=100, deadline=None)
def test_bytes_never_captured_are_gaps_and_the_rest_is_intact(case, draw):
    data, segs, isn = case
    keep = [s for s in segs if draw.draw(st.booleans())]
    f = Flow(isn_s=isn).handshake()
    for a, b in keep:
        f.add(SERVER, a, TCP_ACK, data[a:b], ack=0)
    f.add(SERVER, len(data), TCP_ACK | TCP_FIN, ack=0)
    (c,), sinks = run(f.packets)
    got = sinks[0].stream(SERVER)
    covered = bytearray(len(data))
    for a, b in keep:
        covered[a:b] = b"\1" * (b - a)
    assert len(got) == len(data)
    assert all((x == y) if cov else (x == ord("?")) for x, y, cov in zip(got, data, covered))
    assert c.server.missing_bytes == covered.count(0)


# -- reassembly cases --------------------------------------------------------------------------


def test_in_order_bytes_reach_the_sink_at_once_and_a_hole_waits():
    f = Flow().handshake()
    f.add(CLIENT, 0, TCP_ACK | TCP_PSH, b"GET / HTTP/1.1\r\n\r\n", ack=0)
    p1 = f.add(SERVER, 0, TCP_ACK, b"a" * 100, ack=18)
    f.add(SERVER, 200, TCP_ACK, b"c" * 100, ack=18)  # bytes 100..199 not yet here
    p3 = f.add(SERVER, 100, TCP_ACK, b"b" * 100, ack=18, dt=10 * MS)  # fills the hole (late: a retransmission)
    (c,), sinks = run(f.packets)
    data = [x for x in sinks[0].calls if x[0] == "data" and x[1] == SERVER]
    assert [(x[3], len(x[4]), x[2]) for x in data] == [(0, 100, p1.ts_ns), (100, 100, p3.ts_ns), (200, 100, p3.ts_ns)]
    assert sinks[0].stream(SERVER) == b"a" * 100 + b"b" * 100 + b"c" * 100
    assert c.server.retransmissions == 1 and c.server.out_of_order == 0
    (e,) = c.retransmission_events
    assert (e.frame, e.offset, e.length, e.original_seen) == (p3.index, 100, 100, False)
    # the original's first chance: when the capture point saw bytes beyond it
    assert e.original_ts_ns == f.packets[5].ts_ns and e.delay_ns == p3.ts_ns - f.packets[5].ts_ns


def test_a_hole_filled_at_once_is_reordering_and_timestamps_decide_when_present():
    # handshake RTT is 2 ms: a hole filled 0.5 ms after it appeared is reordering
    f = Flow().handshake()
    f.add(SERVER, 100, TCP_ACK, b"y" * 100, ack=0)
    f.add(SERVER, 0, TCP_ACK, b"x" * 100, ack=0, dt=MS // 2)
    (c,), _ = run(f.packets)
    assert (c.server.out_of_order, c.server.retransmissions) == (1, 0)
    assert c.server.out_of_order_frames == (5,)
    # the same times, but the hole-filler's TSval is later than the segment beyond the hole:
    # it was sent after it, so it is a retransmission (RFC 7323 §3)
    f = Flow().handshake()
    f.add(SERVER, 100, TCP_ACK, b"y" * 100, ack=0, tsval=1000)
    f.add(SERVER, 0, TCP_ACK, b"x" * 100, ack=0, dt=MS // 2, tsval=1001)
    (c,), _ = run(f.packets)
    assert (c.server.out_of_order, c.server.retransmissions) == (0, 1)
    # and a much later filler with an older TSval is a reordered original
    f = Flow().handshake()
    f.add(SERVER, 100, TCP_ACK, b"y" * 100, ack=0, tsval=1000)
    f.add(SERVER, 0, TCP_ACK, b"x" * 100, ack=0, dt=50 * MS, tsval=999)
    (c,), _ = run(f.packets)
    assert (c.server.out_of_order, c.server.retransmissions) == (1, 0)


def test_overlapping_copies_that_differ_are_counted_and_the_first_wins():
    f = Flow().handshake()
    f.add(SERVER, 0, TCP_ACK, b"0123456789", ack=0)
    f.add(SERVER, 5, TCP_ACK, b"XXXXXabcde", ack=0, dt=300 * MS)  # 5..9 again, but other bytes
    (c,), sinks = run(f.packets)
    assert sinks[0].stream(SERVER) == b"0123456789abcde"
    s = c.server
    assert (s.overlaps, s.overlap_conflicts, s.retransmissions) == (1, 1, 1)
    # an overlap whose bytes agree is no conflict
    f = Flow().handshake()
    f.add(SERVER, 0, TCP_ACK, b"0123456789", ack=0)
    f.add(SERVER, 5, TCP_ACK, b"56789abcde", ack=0, dt=300 * MS)
    (c,), _ = run(f.packets)
    assert (c.server.overlaps, c.server.overlap_conflicts) == (1, 0)
    # out-of-order bytes held for a hole are compared too
    f = Flow().handshake()
    f.add(SERVER, 10, TCP_ACK, b"abcdefghij", ack=0)
    f.add(SERVER, 0, TCP_ACK, b"0123456789ABCDE", ack=0)  # 10..14 differ from what is held
    (c,), sinks = run(f.packets)
    assert sinks[0].stream(SERVER) == b"0123456789abcdefghij"
    assert c.server.overlap_conflicts == 1


def test_sequence_numbers_wrap():
    f = Flow(isn_s=M - 150).handshake()  # byte 149 has sequence number 2**32 - 1
    body = bytes(range(256)) * 2
    for a in (0, 100, 200, 300, 400):
        f.add(SERVER, a, TCP_ACK, body[a : a + 100], ack=0)
    f.add(SERVER, 500, TCP_ACK, body[500:], ack=0)
    f.add(CLIENT, 0, TCP_ACK, ack=512)
    (c,), sinks = run(f.packets)
    assert sinks[0].stream(SERVER) == body
    assert f.packets[4].tcp.seq > f.packets[5].tcp.seq  # it did wrap
    assert c.server.retransmissions == c.server.out_of_order == 0 and c.server.bytes == 512


def test_snap_length_truncation_is_a_gap_after_the_captured_part():
    f = Flow().handshake()
    f.add(SERVER, 0, TCP_ACK, b"x" * 30, data_len=1448, ack=0)
    f.add(SERVER, 1448, TCP_ACK, b"y" * 30, data_len=1448, ack=0)
    (c,), sinks = run(f.packets)
    assert sinks[0].stream(SERVER) == b"x" * 30 + b"?" * 1418 + b"y" * 30 + b"?" * 1418
    assert sinks[0].gaps(SERVER) == [(30, 1418), (1478, 1418)]
    assert (c.server.truncated_bytes, c.server.missing_bytes, c.server.delivered_bytes) == (2836, 0, 60)


def test_keepalives_and_captured_duplicates_are_not_retransmissions():
    f = Flow().handshake()
    f.add(SERVER, 0, TCP_ACK, b"x" * 100, ack=0)
    f.add(CLIENT, 0, TCP_ACK, ack=100)
    f.add(SERVER, 99, TCP_ACK, b"\0", ack=0, dt=7200 * 10**9)  # RFC 9293 §3.8.4 keep-alive
    f.add(SERVER, 99, TCP_ACK, b"", ack=0, dt=75 * 10**9)  # and the zero-length kind
    d = f.add(SERVER, 100, TCP_ACK, b"z" * 10, ack=0)
    f.packets.append(Packet(d.index + 1, d.ts_ns + 20_000, d.src, d.dst, 6, d.sport, d.dport, d.payload, d.tcp, 1,
                            d.wire_len))  # the same frame again, from another interface ("any")
    (c,), sinks = run(f.packets)
    s = c.server
    assert (s.keepalives, s.duplicates, s.retransmissions) == (1, 1, 0)
    assert sinks[0].stream(SERVER) == b"x" * 100 + b"z" * 10


def test_copies_are_told_from_retransmissions_by_tsval_and_time():
    # with timestamps: the same TSval 12 ms later is the same transmission (a router's egress copy)
    f = Flow().handshake()
    f.add(SERVER, 0, TCP_ACK, b"x" * 100, ack=0, tsval=7)
    f.add(SERVER, 0, TCP_ACK, b"x" * 100, ack=0, tsval=7, dt=12 * MS)
    f.add(SERVER, 0, TCP_ACK, b"x" * 100, ack=0, tsval=300, dt=300 * MS)  # a newer TSval: resent
    (c,), _ = run(f.packets)
    assert (c.server.duplicates, c.server.retransmissions) == (1, 1)
    # without: identical headers 300 ms apart are the sender's timer at work
    f = Flow().handshake()
    f.add(SERVER, 0, TCP_ACK, b"x" * 100, ack=0)
    f.add(SERVER, 0, TCP_ACK, b"x" * 100, ack=0, dt=300 * MS)
    (c,), _ = run(f.packets)
    assert (c.server.duplicates, c.server.retransmissions) == (0, 1)


def test_a_repeated_syn_ack_is_a_copy_at_once_and_a_transmission_ms_later():
    """A SYN-ACK sent again, then the same header once more (TSval, Identification 0 as Linux
    sends its SYN-ACKs): at the same time, a second capture of it; 2.4 ms later, as in a real
    capture (data/video/has/sessions/dash-step, the answers to a SYN and to its retransmission;
    tshark: two retransmissions), a transmission of its own. Either way after the client's
    ACK: the SYN-ACK's record is looked up though acknowledged (before, a copy after the ACK
    was always a retransmission; a capture holding every frame twice had more of them)."""
    got = []
    for dt in (0, int(2.4 * MS)):
        f = Flow()
        f.add(CLIENT, -1, TCP_SYN, tsval=1)
        f.add(CLIENT, -1, TCP_SYN, tsval=1001, dt=1000 * MS)  # the SYN again (its timer)
        f.add(SERVER, -1, TCP_SYN | TCP_ACK, ack=0, tsval=50)
        f.add(CLIENT, 0, TCP_ACK, ack=0, tsval=1002)
        f.add(SERVER, -1, TCP_SYN | TCP_ACK, ack=0, tsval=1050)  # the answer to the second SYN
        f.add(SERVER, -1, TCP_SYN | TCP_ACK, ack=0, tsval=1050, dt=dt)
        (c,), _ = run(f.packets)
        got.append((c.server.duplicates, c.server.retransmissions))
    assert got == [(1, 1), (0, 2)]


def test_an_ack_beyond_a_hole_makes_it_a_gap_at_once():
    f = Flow().handshake()
    f.add(SERVER, 0, TCP_ACK, b"a" * 100, ack=0)
    f.add(SERVER, 200, TCP_ACK, b"c" * 100, ack=0)  # 100..199 never captured
    ack = f.add(CLIENT, 0, TCP_ACK, ack=300)  # but the receiver has them
    f.add(SERVER, 300, TCP_ACK, b"d" * 10, ack=0)
    (c,), sinks = run(f.packets)
    calls = [x for x in sinks[0].calls if x[1] == SERVER]
    assert calls[1] == ("gap", SERVER, ack.ts_ns, 100, 100)
    assert calls[2] == ("data", SERVER, ack.ts_ns, 200, b"c" * 100)
    assert c.server.missing_bytes == 100 and c.server.retransmissions == 0


# -- connections, roles, closing -----------------------------------------------------------------


def test_roles_without_a_handshake():
    f = Flow(client=("192.0.2.2", 50000), server=("198.51.100.2", 443))
    f.add(SERVER, 0, TCP_ACK, b"x" * 10, ack=0)  # the first packet seen comes from the server
    (c,), _ = run(f.packets)
    assert c.id.server == ("198.51.100.2", 443) and not c.id.initiator_known
    assert c.syn_ts_ns is None and c.handshake_rtt_ns is None
    f = Flow(client=("192.0.2.2", 7000), server=("198.51.100.2", 7000))  # equal ports: the receiver
    f.add(SERVER, 0, TCP_ACK, b"x" * 10, ack=0)
    (c,), _ = run(f.packets)
    assert c.id.server == ("192.0.2.2", 7000)
    # a SYN/ACK fixes the roles even when the SYN was not captured
    f = Flow()
    f.add(SERVER, -1, TCP_SYN | TCP_ACK, ack=0)
    f.add(CLIENT, 0, TCP_ACK | TCP_PSH, b"hello", ack=0)
    (c,), sinks = run(f.packets)
    assert c.id.client == CLI and c.id.initiator_known and c.rtt_synack_ns == MS
    assert sinks[0].stream(CLIENT) == b"hello"


def test_fin_rst_and_port_reuse():
    f = Flow().handshake()
    f.add(CLIENT, 0, TCP_ACK, b"q", ack=0)
    f.add(SERVER, 0, TCP_ACK | TCP_FIN, b"r", ack=1)
    f.add(CLIENT, 1, TCP_ACK | TCP_FIN, ack=2)
    f.add(SERVER, 2, TCP_ACK, ack=2)
    g = Flow(isn_c=777_777, isn_s=888_888, t0=f.t + 10 * MS).handshake()  # same 4-tuple, new ISNs
    g.add(CLIENT, 0, TCP_ACK, b"q2", ack=0)
    g.add(SERVER, 0, TCP_RST | TCP_ACK, ack=2)
    for i, p in enumerate(g.packets):
        g.packets[i] = Packet(len(f.packets) + i + 1, *[getattr(p, k) for k in
                              ("ts_ns", "src", "dst", "proto", "sport", "dport", "payload", "tcp", "interface", "wire_len")])
    (a, b), sinks = run(f.packets + g.packets)
    assert a.id.client == b.id.client and (a.id.index, b.id.index) == (0, 1)
    assert (a.closed, b.closed) == ("fin", "rst")
    assert sinks[0].closed == ["fin", "fin"] and sinks[1].closed == ["rst", "rst"]
    assert a.fin_ts_ns == f.packets[4].ts_ns and b.rst_ts_ns == g.packets[-1].ts_ns
    assert sinks[1].stream(CLIENT) == b"q2"
    # a new SYN on a connection still open (another ISN) also starts a new one
    f = Flow().handshake()
    f.add(SERVER, 0, TCP_ACK, b"x", ack=0)
    f.add(CLIENT, -1, TCP_SYN, raw_seq=123)
    (a, b), _ = run(f.packets)
    assert a.closed == "reused" and b.syn_ts_ns == f.packets[-1].ts_ns


def test_a_repeated_syn_is_a_retransmission_and_timestamps_keep_the_handshake_rtt():
    f = Flow()
    f.add(CLIENT, -1, TCP_SYN, tsval=10)
    f.add(CLIENT, -1, TCP_SYN, tsval=1010, dt=1000 * MS)
    f.add(SERVER, -1, TCP_SYN | TCP_ACK, ack=0, tsval=5, tsecr=1010, dt=3 * MS)
    f.add(CLIENT, 0, TCP_ACK, ack=0, tsval=1014, tsecr=5, dt=MS)
    (c,), _ = run(f.packets)
    (e,) = c.retransmission_events
    assert (e.segment, e.kind, e.delay_ns, e.offset, e.length) == ("syn", "timeout", 1000 * MS, -1, 1)
    assert (c.rtt_syn_ns, c.rtt_synack_ns) == (3 * MS, MS)  # TSecr 1010: the second SYN's answer
    # without timestamps the SYN/ACK could answer either SYN: no sample (Karn, RFC 6298 §3)
    f = Flow()
    f.add(CLIENT, -1, TCP_SYN)
    f.add(CLIENT, -1, TCP_SYN, dt=1000 * MS)
    f.add(SERVER, -1, TCP_SYN | TCP_ACK, ack=0, dt=3 * MS)
    f.add(CLIENT, 0, TCP_ACK, ack=0, dt=MS)
    (c,), _ = run(f.packets)
    assert (c.rtt_syn_ns, c.rtt_synack_ns, c.handshake_rtt_ns) == (None, MS, None)


# -- RTT and retransmission kinds ---------------------------------------------------------------


def test_rtt_samples_follow_karn():
    f = Flow().handshake()
    f.add(SERVER, 0, TCP_ACK, b"a" * 100, ack=0)
    f.add(SERVER, 100, TCP_ACK, b"b" * 100, ack=0, dt=MS)
    f.add(CLIENT, 0, TCP_ACK, ack=200, dt=4 * MS)  # both: one sample, from the second (5 ms... 4 ms)
    f.add(SERVER, 200, TCP_ACK, b"c" * 100, ack=0, dt=MS)
    f.add(SERVER, 200, TCP_ACK, b"c" * 100, ack=0, dt=300 * MS)  # retransmitted
    f.add(CLIENT, 0, TCP_ACK, ack=300, dt=2 * MS)  # ambiguous: no sample
    f.add(SERVER, 300, TCP_ACK, b"d" * 50, ack=0, dt=MS)
    f.add(CLIENT, 0, TCP_ACK, ack=320, dt=MS)  # inside a segment: no sample
    f.add(CLIENT, 0, TCP_ACK, ack=350, dt=MS)  # its end: 2 ms
    (c,), _ = run(f.packets)
    r = c.server.rtt
    assert r.rtt_ns.tolist() == [MS, 4 * MS, 2 * MS]  # the SYN/ACK's ACK, then the data
    assert r.ts_ns.tolist() == [f.packets[2].ts_ns, f.packets[5].ts_ns, f.packets[-1].ts_ns]
    assert (r.count, r.min_ns, r.median_ns) == (3, MS, 2 * MS)
    assert c.client.rtt.rtt_ns.tolist() == [MS]  # the SYN's ACK (the SYN/ACK)
    assert (c.rtt_syn_ns, c.rtt_synack_ns, c.handshake_rtt_ns) == (MS, MS, 2 * MS)


def _lossy(dupacks: int, *, gap_ms: float = 1, sack: bool = False):
    """Server sends 5 segments, the 2nd is lost before the capture point; the client dup-ACKs."""
    f = Flow().handshake(dt=MS // 10)  # RTT 0.2 ms
    for i in range(5):
        if i != 1:
            f.add(SERVER, 100 * i, TCP_ACK, bytes([65 + i]) * 100, ack=0, dt=MS // 10)
            if i == 0:
                f.add(CLIENT, 0, TCP_ACK, ack=100, dt=MS // 10)
    for k in range(dupacks):
        f.add(CLIENT, 0, TCP_ACK, ack=100, dt=MS // 10, sack=((200, 200 + 100 * (k + 1)),) if sack else ())
    f.add(SERVER, 100, TCP_ACK, b"B" * 100, ack=0, dt=int(gap_ms * MS))
    return f


def test_fast_retransmit_after_three_duplicate_acks_or_sack():
    for f in (_lossy(3), _lossy(1, sack=True)):
        (c,), sinks = run(f.packets)
        (e,) = c.retransmission_events
        assert e.kind == "fast" and not e.original_seen and not e.spurious
        assert sinks[0].stream(SERVER) == b"A" * 100 + b"B" * 100 + b"C" * 100 + b"D" * 100 + b"E" * 100
    (c,), _ = run(_lossy(2).packets)  # two duplicates are not enough (RFC 5681 §3.2)
    assert c.retransmission_events[0].kind == "timeout"


def test_a_retransmission_long_after_the_last_ack_is_a_timeout():
    (c,), _ = run(_lossy(3, gap_ms=400).packets)  # 400 ms of silence > RTT + 200 ms
    (e,) = c.retransmission_events
    assert e.kind == "timeout" and e.delay_ns >= 400 * MS
    assert c.server.timeout_retransmissions == 1 and c.server.fast_retransmissions == 0


def test_spurious_retransmissions_cost_nothing_and_losses_are_not_counted_twice():
    f = Flow().handshake()
    f.add(SERVER, 0, TCP_ACK, b"a" * 100, ack=0)
    f.add(SERVER, 100, TCP_ACK, b"b" * 100, ack=0)
    f.add(CLIENT, 0, TCP_ACK, ack=200)
    f.add(SERVER, 0, TCP_ACK, b"a" * 100, ack=0, dt=300 * MS)  # already acknowledged: spurious
    (c,), _ = run(f.packets)
    (e,) = c.retransmission_events
    assert e.spurious and e.original_seen and c.server.spurious_retransmissions == 1
    assert c.server.time_lost_ns == 0
    # two retransmissions waiting at the same time: the union of their waits
    f = Flow().handshake()
    t0 = f.add(SERVER, 0, TCP_ACK, b"a" * 100, ack=0).ts_ns
    f.add(SERVER, 100, TCP_ACK, b"b" * 100, ack=0, dt=10 * MS)
    f.add(SERVER, 0, TCP_ACK, b"a" * 100, ack=0, dt=290 * MS)  # waited 300 ms
    t3 = f.add(SERVER, 100, TCP_ACK, b"b" * 100, ack=0, dt=20 * MS).ts_ns  # waited 310 ms, overlapping
    (c,), _ = run(f.packets)
    assert [e.delay_ns for e in c.retransmission_events] == [300 * MS, 310 * MS]
    assert c.server.time_lost_ns == t3 - t0 == 320 * MS


# -- limits ---------------------------------------------------------------------------------------


def test_out_of_order_bytes_beyond_the_limit_become_gaps_early():
    f = Flow().handshake()
    for i in range(1, 11):  # bytes 0..99 never come; 10 segments of 100 behind the hole
        f.add(SERVER, 100 * i, TCP_ACK, b"x" * 100, ack=0)
    with pytest.warns(QoEWarning, match=r"1 TCP connection\(s\) held more out-of-order bytes than max_buffered_bytes=500"):
        (c,), sinks = run(f.packets, limits=TcpLimits(max_buffered_bytes=500))
    g = sinks[0].gaps(SERVER)
    assert g == [(0, 100)]
    first_data = next(x for x in sinks[0].calls if x[0] == "data" and x[1] == SERVER)
    assert first_data[2] == f.packets[8].ts_ns  # the 6th segment crossed 500 bytes held
    assert c.server.missing_bytes == 100 and sinks[0].stream(SERVER) == b"?" * 100 + b"x" * 1000


def test_too_many_connections_evict_the_least_recently_active():
    pk = []
    for i in range(5):
        f = Flow(client=("192.0.2.2", 40000 + i), t0=1_700_000_000 * 10**9 + i * MS).handshake(dt=10)
        pk += f.packets
    pk.sort(key=lambda p: p.ts_ns)
    pk = [Packet(i + 1, *[getattr(p, k) for k in ("ts_ns", "src", "dst", "proto", "sport", "dport", "payload", "tcp",
                                                  "interface", "wire_len")]) for i, p in enumerate(pk)]
    with pytest.warns(QoEWarning, match="evicted as more than max_connections=2"):
        conns = connections(pk, limits=TcpLimits(max_connections=2))
    assert len(conns) == 5
    assert [c.closed for c in conns] == ["evicted"] * 3 + ["end-of-capture"] * 2


def test_rtt_samples_are_thinned_at_the_limit():
    f = Flow().handshake()
    for i in range(40):
        f.add(SERVER, 10 * i, TCP_ACK, b"x" * 10, ack=0)
        f.add(CLIENT, 0, TCP_ACK, ack=10 * (i + 1), dt=(i + 1) * 1000)
    with pytest.warns(QoEWarning, match="max_rtt_samples=8"):
        (c,), _ = run(f.packets, limits=TcpLimits(max_rtt_samples=8))
    r = c.server.rtt
    assert r.thinned and r.count == 41 and len(r.rtt_ns) < 8 and r.min_ns == 1000


def test_retransmission_records_and_tracked_segments_are_bounded():
    f = Flow().handshake()
    for i in range(20):
        f.add(SERVER, 10 * i, TCP_ACK, b"x" * 10, ack=0)
    for i in range(20):
        f.add(SERVER, 10 * i, TCP_ACK, b"x" * 10, ack=0, dt=300 * MS)
    with pytest.warns(QoEWarning) as w:
        (c,), _ = run(f.packets, limits=TcpLimits(max_retransmission_events=5, max_tracked_segments=10))
    text = " ".join(str(x.message) for x in w)
    assert "max_retransmission_events=5" in text and "max_tracked_segments=10" in text
    assert len(c.retransmission_events) == 5 and c.server.retransmissions == 20
    # the 10 oldest segments were forgotten: their retransmissions have no original time
    assert sum(e.original_ts_ns is None for e in c.retransmission_events) == 5


# -- streaming, results, input ----------------------------------------------------------------


def test_iter_connections_gives_a_closed_connection_after_its_close_delay():
    f = Flow().handshake()
    f.add(CLIENT, 0, TCP_ACK | TCP_FIN, ack=0)
    f.add(SERVER, 0, TCP_ACK | TCP_FIN, ack=1)
    f.add(CLIENT, 1, TCP_ACK, ack=1)
    g = Flow(client=("192.0.2.2", 40001), t0=f.t + 2 * 10**9).handshake()
    seen = []

    def feed():
        for p in f.packets + g.packets:
            seen.append(p)
            yield p

    it = iter_connections(feed(), limits=TcpLimits(close_delay_s=1.0))
    first = next(it)
    assert first.id.index == 0 and first.closed == "fin"
    assert len(seen) == len(f.packets) + 1  # given when the next SYN came, 2 s later
    assert [c.id.index for c in it] == [1]


def test_a_segment_past_a_closed_connections_close_delay_starts_a_new_connection():
    """Which connection a segment belongs to does not depend on when the reassembler looks at
    its closed connections: a segment on the 4-tuple of one closed more than
    ``close_delay_s`` before starts a new one (no handshake seen: ``initiator_known`` False),
    even with no new connection or sweep in between; one within the delay is a late packet."""
    f = Flow().handshake()
    f.add(CLIENT, 0, TCP_ACK | TCP_FIN, ack=0)
    f.add(SERVER, 0, TCP_ACK | TCP_FIN, ack=1)
    f.add(CLIENT, 1, TCP_ACK, ack=1)
    f.t += 10**9 // 2
    f.add(CLIENT, 1, TCP_ACK, ack=1)  # 0.5 s later: a late packet of the closed connection
    f.t += 2 * 10**9
    f.add(CLIENT, 1, TCP_ACK, ack=1)  # 2.5 s after the close: past the delay
    found = connections(f.packets, limits=TcpLimits(close_delay_s=1.0))
    assert [(c.id.index, c.packets, c.id.initiator_known) for c in found] == [
        (0, len(f.packets) - 1, True), (1, 1, False)]
    assert [c.packets for c in connections(f.packets, limits=TcpLimits(close_delay_s=5.0))] == [len(f.packets)]


def test_results_serialise_to_strict_json():
    (c,), _ = run(_lossy(3).packets)
    d = json.loads(to_json(c))
    assert d["client_address"] == "192.0.2.2:40000" and d["server_address"] == "198.51.100.2:80"
    assert d["handshake_rtt_ns"] == MS // 5 and d["closed"] == "end-of-capture"
    assert d["retransmission_events"][0]["kind"] == "fast"
    assert d["server"]["retransmissions"] == 1 and d["server"]["rtt"]["count"] == 2
    assert d["server"]["rtt"]["samples"][0] == [c.server.rtt.ts_ns[0], c.server.rtt.rtt_ns[0]]
    assert set(d) >= {"index", "initiator_known", "rtt_syn_ns", "rtt_synack_ns", "packets"}
    v6 = Flow(client=("2001:db8:1::2", 40000), server=("2001:db8:2::2", 443)).handshake()
    assert json.loads(to_json(connections(v6.packets)[0]))["server_address"] == "[2001:db8:2::2]:443"
    assert json.loads(to_json(TcpLimits()))["close_delay_s"] == 5.0
    assert c.direction(SERVER) is c.server and c.direction(CLIENT) is c.client
    with pytest.raises(IndexError):
        c.direction(2)


def test_no_sink_analyses_all_the_same():
    f = _lossy(3)
    with_sinks, _ = run(f.packets)
    without = connections(f.packets)
    assert with_sinks[0].retransmission_events == without[0].retransmission_events
    assert without[0].server.delivered_bytes == 500
    assert connections(f.packets, sinks=lambda cid: None)[0].server.delivered_bytes == 500


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"limits": {"max_connections": 2}}, "limits must be a qoe.web.tcp.TcpLimits"),
        ({"limits": TcpLimits(max_buffered_bytes=0)}, r"TcpLimits.max_buffered_bytes must be a positive integer, got 0"),
        ({"limits": TcpLimits(max_connections=1.5)}, r"max_connections must be a positive integer, got 1.5"),
        ({"limits": TcpLimits(close_delay_s=-1)}, r"close_delay_s must be >= 0 seconds, got -1"),
        ({"sinks": "http"}, "sinks must be a callable"),
    ],
)
def test_bad_options(kw, match):
    with pytest.raises(InputError, match=match):
        connections([], **kw)


def test_bad_files(tmp_path):
    with pytest.raises(CaptureError, match="nothere.pcap"):
        connections(tmp_path / "nothere.pcap")
    bad = tmp_path / "notes.pcap"
    bad.write_bytes(b"this is not a capture at all")
    with pytest.raises(CaptureError, match="notes.pcap"):
        connections(str(bad))


def test_empty_and_non_tcp_input():
    assert connections([]) == []
    udp = Packet(1, 0, "192.0.2.2", "198.51.100.2", 17, 5000, 5004, b"x", None, 0, 43)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert connections([udp]) == []


def test_the_docstring_examples_run():
    """(tests/test_doctests.py's list is shared; qoe.web.tcp's examples run here.)"""
    import doctest

    import qoe.web.tcp

    failed, tried = doctest.testmod(qoe.web.tcp, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert tried > 0 and failed == 0
