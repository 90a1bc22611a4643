"""TCP reassembly from a capture file and from packets already read agree on everything.

``qoe.web.tcp.iter_connections(path)`` reads a file with the columnar reader
(``qoe.capture.tcp_segment_rows``: header fields gathered in NumPy a chunk at a time);
``iter_connections(read_packets(path, protocols=("tcp",)))`` takes the per-packet decoder's
objects. The two must agree on every field of every Connection (RTT samples, retransmissions,
stalls included), on the order in which the connections are given, on every call to every
sink (bytes, offsets, timestamps, gaps, closes) in the same order overall, and on the
warnings of the TCP layer (limits crossed).

Inputs: every capture under data/ that holds TCP, and captures generated here with a seeded
generator (interleaved connections: losses before the capture point, reordering,
retransmissions, frames captured twice, SACK, duplicate ACKs, window changes, keep-alives,
zero windows, SYN and SYN/ACK sent again, sequence numbers wrapping, timestamps on or off,
capture clocks stepping back, FIN or RST, 4-tuples reused), written as pcap files, at the
default limits and at tiny ones.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import random
import struct
import warnings

import pytest
from web.as_plain import as_plain  # tests/web/as_plain.py

from qoe.capture import TCP_ACK, TCP_FIN, TCP_PSH, TCP_RST, TCP_SYN, read_packets
from qoe.errors import QoEError
from qoe.web.tcp import ConnectionId, TcpLimits, iter_connections

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
M = 2**32
MS = 1_000_000


class _Log:
    """A ByteSink that writes every call, with its connection's index, into one shared log."""

    def __init__(self, log: list, cid: ConnectionId) -> None:
        self.log, self.i = log, cid.index

    def data(self, d, ts, offset, payload):  # type: ignore[no-untyped-def]
        self.log.append((self.i, "data", d, ts, offset, bytes(payload)))

    def gap(self, d, ts, offset, length):  # type: ignore[no-untyped-def]
        self.log.append((self.i, "gap", d, ts, offset, length))

    def close(self, d, ts, how):  # type: ignore[no-untyped-def]
        self.log.append((self.i, "close", d, ts, how))


def _run(capture, limits: TcpLimits = TcpLimits()):  # type: ignore[no-untyped-def]
    log: list = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        conns = [as_plain(c) for c in iter_connections(capture, sinks=lambda cid: _Log(log, cid), limits=limits)]
    # (the TCP layer's own warnings: the limits crossed; a reader's warnings are the reader's)
    return conns, log, sorted(str(w.message).split(": ", 1)[-1] for w in caught if "TCP connection" in str(w.message))


def _same_both_ways(path: str, limits: TcpLimits = TcpLimits()) -> list:
    """Compare the file path with the packets path; the connections (as plain tuples)."""
    by_file = _run(path, limits)
    by_packets = _run(read_packets(path, protocols=("tcp",)), limits)
    assert by_file[0] == by_packets[0], f"{path}: the connections differ"
    assert by_file[1] == by_packets[1], f"{path}: the sink calls differ"
    assert by_file[2] == by_packets[2], f"{path}: the warnings differ"
    return by_file[0]


def _captures() -> list[str]:
    out = []
    for p in sorted(glob.glob(os.path.join(ROOT, "data", "**", "*"), recursive=True)):
        if p.endswith((".pcap", ".pcapng")):
            out.append(p)
    return out


def test_every_capture_with_tcp_gives_the_same_by_both_paths():
    n = segments = 0
    for path in _captures():
        try:
            conns = _same_both_ways(path)
        except QoEError:
            continue  # not a capture qoe reads (each has its own test)
        n += bool(conns)
        segments += sum(_field(c, "packets") for c in conns)
    assert n >= 50, "fewer captures with TCP under data/ than expected"
    assert segments > 10_000, "fewer TCP segments under data/ than expected"


def _field(plain: tuple, name: str):  # type: ignore[no-untyped-def]
    """Field ``name`` of a dataclass given as ``_plain`` tuples."""
    return dict(plain)[name]


# -- generated captures ---------------------------------------------------------------------------


def _options(tsval: int | None, tsecr: int | None, syn: bool, sack: tuple) -> bytes:
    """TCP options (RFC 9293 §3.2; RFC 7323 Appendix A layout for Timestamps; RFC 2018 SACK)."""
    o = b""
    if syn:
        o += struct.pack("!BBH", 2, 4, 1460) + b"\x01\x03\x03\x07" + b"\x01\x01\x04\x02"  # MSS, WS 7, SACK-permitted
    if tsval is not None:
        o += b"\x01\x01" + struct.pack("!BBII", 8, 10, tsval % M, (tsecr or 0) % M)
    if sack:
        o += b"\x01\x01" + struct.pack("!BB", 5, 2 + 8 * len(sack)) + b"".join(
            struct.pack("!II", a % M, b % M) for a, b in sack)
    return o + b"\x00" * (-len(o) % 4)


def _frame(src: bytes, dst: bytes, sport: int, dport: int, seq: int, ack: int, flags: int, win: int,
           payload: bytes, opts: bytes, ident: int) -> bytes:
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq % M, ack % M, (5 + len(opts) // 4) << 4, flags, win, 0, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(opts) + len(payload), ident, 0x4000, 64, 6, 0,
                     src, dst)
    return b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02\x08\x00" + ip + tcp + opts + payload


def _connection(rng: random.Random, t0: int, port: int, cli: bytes, srv: bytes) -> list[tuple[int, bytes]]:
    """One connection's frames as the capture point sees them: (ts_ns, frame)."""
    use_ts = rng.random() < 0.6
    near_wrap = rng.random() < 0.4
    isn = {0: (M - rng.randrange(1, 3000)) if near_wrap else rng.randrange(M), 1: rng.randrange(M)}
    ends = {0: (cli, port), 1: (srv, 80)}
    nxt = {0: isn[0] + 1, 1: isn[1] + 1}  # next sequence number each side sends
    rcv = {0: isn[1] + 1, 1: isn[0] + 1}  # what each side acknowledges
    t = t0
    ident = rng.randrange(65536)
    last_tsval = {0: 0, 1: 0}  # echoed as TSecr (RFC 7323 §4.3)
    out: list[tuple[int, bytes]] = []

    def emit(d: int, seq: int, flags: int, data: bytes = b"", *, ack: int | None = None, win: int | None = None,
             sack: tuple = (), dt: int = MS, tsval: int | None = None) -> None:
        nonlocal t, ident
        t += dt
        ident += 1
        (s, sp), (r, rp) = ends[d], ends[1 - d]
        ackno = rcv[d] if ack is None else ack
        tv = (t // MS + 7 * d) if tsval is None else tsval
        last_tsval[d] = tv
        if win is None:
            win = rng.choice([65535, 65535, 29200])
        opts = _options(tv if use_ts else None, last_tsval[1 - d] if use_ts else None, bool(flags & TCP_SYN), sack)
        out.append((t, _frame(s, r, sp, rp, seq, ackno if flags & TCP_ACK else 0, flags, win, data, opts,
                              ident % 65536)))

    emit(0, isn[0], TCP_SYN)
    if rng.random() < 0.1:
        emit(0, isn[0], TCP_SYN, dt=rng.choice([3, 1000]) * MS)  # a SYN sent again
    emit(1, isn[1], TCP_SYN | TCP_ACK)
    if rng.random() < 0.1:
        emit(1, isn[1], TCP_SYN | TCP_ACK, dt=rng.choice([3, 1000]) * MS)  # a SYN/ACK sent again
    emit(0, nxt[0], TCP_ACK)
    for _ in range(rng.randrange(1, 4)):  # request / response exchanges
        for d, size in ((0, rng.randrange(1, 600)), (1, rng.randrange(1, 12_000))):
            data = bytes(rng.randrange(256) for _ in range(64)) * (size // 64 + 1)
            data = data[:size]
            mss = rng.choice([100, 536, 1448])
            segs = [(nxt[d] + k, data[k : k + mss]) for k in range(0, size, mss)]
            nxt[d] += size
            pending: list[tuple[int, bytes]] = []
            lost: list[tuple[int, bytes]] = []
            for j, (seq, chunk) in enumerate(segs):
                r = rng.random()
                if r < 0.08:
                    lost.append((seq, chunk))  # lost before the capture point
                    continue
                if r < 0.14 and j + 1 < len(segs):
                    pending.append((seq, chunk))  # overtaken by the next one (reordering)
                    continue
                emit(d, seq, TCP_ACK | TCP_PSH, chunk, dt=rng.choice([50_000, MS, 3 * MS]))
                if rng.random() < 0.05:
                    t += 10_000
                    out.append((t, out[-1][1]))  # the frame captured twice
                if rng.random() < 0.03:  # the same bytes again (a retransmission, or a dup with a new TSval)
                    emit(d, seq, TCP_ACK | TCP_PSH, chunk, dt=rng.choice([MS, 250 * MS]))
                for p in pending:
                    emit(d, p[0], TCP_ACK | TCP_PSH, p[1], dt=rng.choice([20_000, 5 * MS]))
                pending.clear()
                if j % 2 or j + 1 == len(segs):  # the receiver's ACK, every second segment
                    top = seq + len(chunk) - isn[d] - 1
                    got = min([s - isn[d] - 1 for s, _ in lost] + [top])
                    sack = ()
                    if lost and use_ts and rng.random() < 0.7:
                        sack = ((isn[d] + 1 + got + len(lost[0][1]), seq + len(chunk)),)
                    rcv[1 - d] = isn[d] + 1 + got
                    win = 0 if rng.random() < 0.05 else rng.choice([65535, 29200])
                    if rng.random() < 0.1:  # the ACK carries data the other way
                        extra = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 50)))
                        emit(1 - d, nxt[1 - d], TCP_ACK | TCP_PSH, extra, win=win, dt=30_000)
                        nxt[1 - d] += len(extra)
                        win = rng.choice([65535, 29200])
                    emit(1 - d, nxt[1 - d], TCP_ACK, sack=sack, win=win, dt=rng.choice([30_000, 2 * MS]))
                    if lost and rng.random() < 0.6:
                        for _ in range(rng.randrange(2, 5)):  # duplicate ACKs (a window change ends a run)
                            emit(1 - d, nxt[1 - d], TCP_ACK, sack=sack, win=win if rng.random() < 0.9 else 29200,
                                 dt=100_000)
            for p in pending:
                emit(d, p[0], TCP_ACK | TCP_PSH, p[1])
            for seq, chunk in lost:  # retransmissions, after dup ACKs or a timeout
                emit(d, seq, TCP_ACK | TCP_PSH, chunk, dt=rng.choice([2 * MS, 300 * MS]))
            rcv[1 - d] = nxt[d]
            emit(1 - d, nxt[1 - d], TCP_ACK, dt=rng.choice([100_000, 2 * MS]))
            if rng.random() < 0.1:  # a keep-alive (one byte below, or none) and its ACK
                emit(d, nxt[d] - 1, TCP_ACK, b"\0" if rng.random() < 0.5 else b"", dt=rng.choice([5, 800]) * MS)
                emit(1 - d, nxt[1 - d], TCP_ACK)
            if rng.random() < 0.05:  # a zero-window probe after a zero window
                emit(1 - d, nxt[1 - d], TCP_ACK, win=0)
                emit(d, nxt[d], TCP_ACK, data[:1] if data else b"x", dt=200 * MS)
                emit(1 - d, nxt[1 - d], TCP_ACK, win=0)
    if rng.random() < 0.15:
        emit(rng.randrange(2), nxt[0], TCP_RST | TCP_ACK)
        return out
    for d in (1, 0) if rng.random() < 0.5 else (0, 1):
        emit(d, nxt[d], TCP_FIN | TCP_ACK)
        nxt[d] += 1
        rcv[1 - d] = nxt[d]
        emit(1 - d, nxt[1 - d], TCP_ACK)
    return out


def _write_capture(path: str, seed: int, connections: int, *, ports: int = 1000) -> None:
    """``connections`` connections from ``ports`` client ports (few ports: 4-tuples reused,
    by connections one after the other or at the same time)."""
    rng = random.Random(seed)
    frames: list[tuple[int, bytes]] = []
    t0 = 1_700_000_000 * 10**9
    for k in range(connections):
        cli = bytes([192, 0, 2, 2 + k % 3])
        port = 40000 + k % ports
        frames += _connection(rng, t0 + k * rng.choice([2, 30, 200]) * MS, port, cli, bytes([198, 51, 100, 2]))
    frames.sort(key=lambda f: f[0])  # (stable: a connection's own frames keep their order)
    for i in rng.sample(range(1, len(frames)), len(frames) // 50):  # capture clocks that step back
        frames[i] = (frames[i - 1][0] - rng.choice([1, 50_000, 3 * MS, 400 * MS]), frames[i][1])
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))  # pcap, ns, Ethernet
        for ts, frame in frames:
            f.write(struct.pack("<IIII", ts // 10**9, ts % 10**9, len(frame), len(frame)) + frame)


@pytest.mark.parametrize("seed", range(12))
def test_generated_captures_give_the_same_by_both_paths(tmp_path, seed):
    path = str(tmp_path / f"gen{seed}.pcap")
    _write_capture(path, seed, connections=40, ports=1000 if seed % 3 else 4)
    conns = _same_both_ways(path)
    assert len(conns) >= 30
    # what the generator is for: each of these happened in the capture
    sides = [dict(_field(c, side)) for c in conns for side in ("client", "server")]
    for name in ("retransmissions", "fast_retransmissions", "timeout_retransmissions", "out_of_order",
                 "duplicates", "delivered_bytes"):
        assert sum(h[name] for h in sides) > 0, name
    assert any(h["isn"] is not None and h["isn"] > M - 3000 for h in sides), "no sequence number wraps"
    assert sum(dict(h["rtt"])["count"] for h in sides) > 100


def test_the_same_at_small_limits(tmp_path):
    """Limits crossed inside the in-order path (tracked segments, buffered bytes, RTT samples,
    connections at once) are crossed at the same segment by both paths."""
    path = str(tmp_path / "limits.pcap")
    _write_capture(path, 99, connections=40)
    limits = TcpLimits(max_buffered_bytes=3000, max_tracked_segments=4, max_rtt_samples=4,
                       max_retransmission_events=2, max_connections=3, close_delay_s=0.01)
    _same_both_ways(path, limits)


@pytest.mark.parametrize("seed", [1, 3])  # 3: four ports, so 4-tuples are reused
def test_only_the_connections_between_given_endpoints(tmp_path, seed):
    """iter_connections(..., endpoints=pairs) gives the connections between those endpoints
    (either way round) and the sink calls for them exactly as the whole capture's run does,
    but for ``id.index``, which numbers the connections read."""
    path = str(tmp_path / f"gen{seed}.pcap")
    _write_capture(path, seed, connections=40, ports=1000 if seed % 3 else 4)
    whole: list = []
    every = list(iter_connections(path, sinks=lambda cid: _Log(whole, cid)))
    chosen = every[::7]
    pairs = [(c.id.client, c.id.server) for c in chosen]
    pairs = [p if i % 2 else (p[1], p[0]) for i, p in enumerate(pairs)]  # either way round
    keys = {frozenset(p) for p in pairs}
    mine = [c for c in every if frozenset((c.id.client, c.id.server)) in keys]
    assert len(chosen) >= 5 and len(mine) >= len(chosen)
    log: list = []
    got = list(iter_connections(path, sinks=lambda cid: _Log(log, cid), endpoints=pairs))
    assert [c.id.index for c in got] != [c.id.index for c in mine]  # (so the test below means something)
    renumbered = [dataclasses.replace(c, id=dataclasses.replace(c.id, index=m.id.index)) for c, m in zip(got, mine)]
    assert [as_plain(c) for c in renumbered] == [as_plain(c) for c in mine]
    index = {c.id.index: m.id.index for c, m in zip(got, mine)}
    assert [(index[e[0]], *e[1:]) for e in log] == [e for e in whole if e[0] in set(index.values())]


@pytest.mark.parametrize("bad", [[("192.0.2.1", 80)], [(("192.0.2.1", "80"), ("192.0.2.2", 1))], 5])
def test_endpoints_must_be_pairs_of_address_and_port(bad):
    with pytest.raises(QoEError, match="endpoints must be pairs of"):
        iter_connections("x.pcap", endpoints=bad)


@pytest.mark.parametrize("seed", [1, 3])
def test_only_the_segments_within_given_times(tmp_path, seed):
    """iter_connections(..., times=spans) on a file gives what the same pass gives on the file's
    packets with those captured outside every span left out (read_packets, filtered by time
    here), connections and sink calls alike; the packets path takes ``times`` too. Bad spans are
    refused."""
    path = str(tmp_path / f"gen{seed}.pcap")
    _write_capture(path, seed, connections=40, ports=1000 if seed % 3 else 4)
    packets = list(read_packets(path, protocols=("tcp",)))
    ts = sorted(p.ts_ns for p in packets)
    spans = [(ts[len(ts) // 2], ts[3 * len(ts) // 4]), (ts[10], ts[len(ts) // 5]), (ts[len(ts) // 6], ts[len(ts) // 4])]
    kept = [p for p in packets if any(a <= p.ts_ns <= b for a, b in spans)]
    assert 0 < len(kept) < len(packets)
    want_log: list = []
    want = list(iter_connections(kept, sinks=lambda cid: _Log(want_log, cid)))
    for source in (path, packets):
        log: list = []
        got = list(iter_connections(source, sinks=lambda cid: _Log(log, cid), times=spans))
        assert [as_plain(c) for c in got] == [as_plain(c) for c in want] and got
        assert log == want_log
    for bad in ([(5, 1)], [(1.5, 2)], [("1", "2")], [(1, 2, 3)], 5):
        with pytest.raises(QoEError, match="times must be"):
            iter_connections(path, times=bad)
