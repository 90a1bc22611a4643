"""qoe.web.tcp on real captures: curl fetching files from Python's http.server through a tbf
bottleneck in network namespaces, captured by tcpdump (tests/tcp_testbed.py says how each
scenario is made), checked against the files served and against tshark on the same captures.

tshark's per-frame analysis (tests/tcp_testbed.py ``tshark_tcp`` gives the exact command):

- *late segments*: every frame tshark flags ``tcp.analysis.retransmission``,
  ``fast_retransmission``, ``out_of_order`` or ``spurious_retransmission`` is a segment that
  does not advance the sequence number; qoe's retransmission events plus its out-of-order
  frames must be exactly that set (the split inside it differs by definition: see
  ``test_out_of_order_segments_are_reordered_originals``);
- ``tcp.analysis.initial_rtt`` (SYN → ACK of the SYN/ACK) equals ``Connection.handshake_rtt_ns``;
- ``tcp.analysis.ack_rtt``: every qoe RTT sample equals tshark's value on the same ACK (qoe takes
  fewer: Karn's rule, and only ACKs that end exactly at a segment).
"""

from __future__ import annotations

import shutil
import subprocess
import warnings

import dpkt
import pytest

from qoe.errors import QoEWarning
from qoe.web.tcp import CLIENT, SERVER, Connection, connections
from tcp_testbed import BIG, REUSED_PORT, SMALL, epoch_ns, tcp_captures, tshark_of, tshark_tcp  # noqa: F401

# the quick tier (make check) leaves the module out: its captures are made live (curl through a tbf
# bottleneck in network namespaces, ~15 s)
pytestmark = pytest.mark.slow

ALL = ["loss", "loss-snap96", "loss-server", "loss6", "reorder", "reuse", "rst", "outage", "outage-server", "synloss"]


class Collect:
    """A ByteSink that keeps both directions (None for gap bytes) and checks the contract."""

    def __init__(self, cid):
        self.cid = cid
        self.bufs = (bytearray(), bytearray())
        self.holes: tuple[list, list] = ([], [])
        self.closed: list = [None, None]
        self.times: tuple[list, list] = ([], [])

    def _at(self, d, offset, ts):
        assert self.closed[d] is None, "bytes after close"
        assert offset == len(self.bufs[d]), f"offsets must be contiguous: {offset} after {len(self.bufs[d])}"
        assert not self.times[d] or ts >= self.times[d][-1], "delivery times go forward"

    def data(self, d, ts, offset, payload):
        self._at(d, offset, ts)
        assert payload
        self.bufs[d].extend(payload)
        self.times[d].append(ts)

    def gap(self, d, ts, offset, length):
        self._at(d, offset, ts)
        assert length > 0
        self.holes[d].append((offset, length))
        self.bufs[d].extend(b"\0" * length)
        self.times[d].append(ts)

    def close(self, d, ts, how):
        assert self.closed[d] is None, "closed twice"
        assert how in ("fin", "rst", "end-of-capture")
        self.closed[d] = how


def run(path, **kw) -> tuple[list[Connection], dict[int, Collect]]:
    sinks: dict[int, Collect] = {}

    def factory(cid):
        sinks[cid.index] = Collect(cid)
        return sinks[cid.index]

    with warnings.catch_warnings():
        warnings.simplefilter("error", QoEWarning)  # no limit is crossed by these captures
        conns = connections(path, sinks=factory, **kw)
    return conns, sinks


def body(stream: bytes) -> bytes:
    """The HTTP/1.0 response body: what follows the header block."""
    return stream[stream.index(b"\r\n\r\n") + 4 :]


def served(tcp_captures, n: int) -> bytes:
    return (tcp_captures["loss"].parent / "www" / "big.bin").read_bytes()[:n]


def late_frames(conns) -> set[int]:
    out = {e.frame for c in conns for e in c.retransmission_events}
    for c in conns:
        for d in (c.client, c.server):
            out |= set(d.out_of_order_frames)
    return out


# -- against tshark ---------------------------------------------------------------------------


@pytest.mark.tshark
@pytest.mark.parametrize("name", ALL)
def test_late_segments_are_the_frames_tshark_flags(tcp_captures, tshark_of, name):
    conns, _ = run(tcp_captures[name])
    ts = tshark_of(name)
    theirs = ts.retransmission | ts.fast_retransmission | ts.out_of_order | ts.spurious
    mine = late_frames(conns)
    assert mine == theirs
    # the counters agree with the records
    assert sum(c.client.retransmissions + c.server.retransmissions for c in conns) == sum(
        len(c.retransmission_events) for c in conns
    )
    assert sum(c.client.out_of_order + c.server.out_of_order for c in conns) == len(
        {f for c in conns for d in (c.client, c.server) for f in d.out_of_order_frames}
    )


@pytest.mark.tshark
@pytest.mark.parametrize("name", ALL)
def test_handshake_rtt_is_tsharks_initial_rtt(tcp_captures, tshark_of, name):
    conns, _ = run(tcp_captures[name])
    ts = tshark_of(name)
    assert ts.streams == len(conns)
    assert {c.id.index: c.handshake_rtt_ns for c in conns} == ts.initial_rtt_ns
    for c in conns:
        assert c.rtt_syn_ns + c.rtt_synack_ns == c.handshake_rtt_ns
        assert c.established_ts_ns - c.synack_ts_ns == c.rtt_synack_ns


@pytest.mark.tshark
@pytest.mark.parametrize("name", ALL)
def test_ack_rtt_samples_are_tsharks(tcp_captures, tshark_of, name):
    conns, _ = run(tcp_captures[name])
    ts = tshark_of(name)
    mine = {}
    for c in conns:
        for d in (c.client, c.server):
            assert d.rtt.count == len(d.rtt.rtt_ns)  # not thinned
            mine.update(zip(d.rtt.ts_ns.tolist(), d.rtt.rtt_ns.tolist()))
    assert mine
    differ = {t: (r, ts.ack_rtt_ns.get(t)) for t, r in mine.items() if ts.ack_rtt_ns.get(t) != r}
    if name == "synloss":
        # the SYN/ACK: tshark measures from the first SYN (lost, 1 s earlier); qoe from the SYN
        # that the SYN/ACK's TSecr echoes (RFC 7323 §4.1), the retransmission
        (c,) = conns
        assert list(differ) == [c.synack_ts_ns]
        mine_rtt, tshark_rtt = differ[c.synack_ts_ns]
        assert mine_rtt == c.rtt_syn_ns and tshark_rtt == c.synack_ts_ns - c.syn_ts_ns
    else:
        assert differ == {}
    assert len(mine) <= len(ts.ack_rtt_ns)


# -- bytes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["loss", "loss-server", "loss6", "reorder", "outage", "outage-server", "synloss"])
def test_reassembled_bytes_are_the_files_served(tcp_captures, name):
    conns, sinks = run(tcp_captures[name])
    (c,) = conns
    sink = sinks[0]
    size = {"reorder": 300_000, "synloss": SMALL}.get(name, BIG)
    assert body(bytes(sink.bufs[SERVER])) == served(tcp_captures, size)
    assert sink.bufs[CLIENT].startswith(b"GET /")
    assert sink.holes == ([], []) and sink.closed == ["fin", "fin"]
    assert c.closed == "fin" and c.id.initiator_known
    for d in (c.client, c.server):
        assert d.missing_bytes == d.truncated_bytes == 0
        assert d.delivered_bytes == d.bytes == len(sink.bufs[d.direction])
        if d.overlaps == d.duplicates == d.keepalives == 0:
            # every byte passed once, and again in each retransmission whose original was seen
            again = sum(e.length for e in c.retransmission_events
                        if e.direction == d.direction and e.segment == "data" and e.original_seen)
            assert d.wire_bytes == d.bytes + again


def test_ipv6(tcp_captures):
    (c,) = connections(tcp_captures["loss6"])
    assert c.id.client[0] == "2001:db8:1::2" and c.id.server == ("2001:db8:2::2", 8000)
    assert c.server.retransmissions > 0  # an 8-frame buffer at 8 Mbit/s drops part of the 1 MB


def test_loss_costs_time_and_is_classified(tcp_captures):
    (c,) = connections(tcp_captures["loss"])
    s = c.server
    assert s.retransmissions > 0 and s.fast_retransmissions == s.retransmissions  # SACK recovery
    ev = [e for e in c.retransmission_events if e.direction == SERVER]
    # at the client the originals never passed the capture point: each retransmission filled a hole
    assert all(not e.original_seen and e.delay_ns > 0 for e in ev)
    assert 0 < s.time_lost_ns <= sum(e.delay_ns for e in ev)
    # seen at the server, the same transfer's originals did pass the capture point
    (cs,) = connections(tcp_captures["loss-server"])
    evs = [e for e in cs.retransmission_events if e.direction == SERVER]
    assert evs and all(e.original_seen and e.delay_ns > 0 for e in evs)


def test_snap_length_cut_bytes_are_gaps(tcp_captures):
    conns, sinks = run(tcp_captures["loss-snap96"])
    (c,) = conns
    s = c.server
    sink = sinks[0]
    assert s.truncated_bytes > 0 and s.missing_bytes == 0
    assert s.delivered_bytes + s.truncated_bytes == s.bytes == len(sink.bufs[SERVER])
    # tcpdump -s 96 on Ethernet: 96 - 14 (Ethernet) - 20 (IPv4) - 32 (TCP with timestamps) = 30
    # bytes of each full-size segment kept; they are the file's bytes at the same offsets
    stream = bytes(sink.bufs[SERVER])
    # the header block was cut too: its length is that of the full capture's (same server, file)
    _, full = run(tcp_captures["loss"])
    head = len(full[0].bufs[SERVER]) - BIG
    data = served(tcp_captures, BIG)
    kept = 0
    gaps = sink.holes[SERVER]
    assert gaps and all(length > 0 for _, length in gaps)
    pos = 0
    for off, length in gaps:  # the delivered runs between gaps are the file's bytes
        run_ = stream[pos:off]
        if pos >= head:
            assert run_ == data[pos - head : off - head]
            kept += len(run_)
        pos = off + length
    assert kept > 0
    # about 30 of every 1448 bytes kept
    assert 0.015 < s.delivered_bytes / s.bytes < 0.03


def test_a_router_capture_on_the_any_device_holds_every_packet_twice(tcp_captures, tshark_of):
    """In the router, tcpdump -i any sees each forwarded packet on the way in and again after
    the queue (the dropped ones once). The copies are not retransmissions: qoe finds the
    sender's retransmissions, the same byte ranges as the capture at the server shows; tshark
    flags every copy (its count is what the capture holds twice, not what TCP resent)."""
    (r,) = connections(tcp_captures["loss-router-any"])
    (s,) = connections(tcp_captures["loss-server"])
    mine, server = [sorted(e.offset for e in c.retransmission_events) for c in (r, s)]
    # (tcpdump on "any" in a busy router namespace may miss a packet of a burst now and then)
    assert len(set(mine) ^ set(server)) <= max(2, len(server) // 20) and len(server) > 10
    # every segment that got through the queue is there twice (pure ACKs are not told apart:
    # duplicate ACKs are identical by definition)
    assert r.server.duplicates > 0.8 * s.server.data_packets and r.client.duplicates >= 2
    ts = tshark_of("loss-router-any")
    assert len(ts.retransmission) > 5 * len(r.retransmission_events)
    assert r.handshake_rtt_ns == r.rtt_syn_ns + r.rtt_synack_ns and r.rtt_syn_ns < s.handshake_rtt_ns * 100


def test_port_reuse_makes_two_connections(tcp_captures, tshark_of):
    conns, sinks = run(tcp_captures["reuse"])
    assert [c.id.index for c in conns] == [0, 1]
    a, b = conns
    assert a.id.client == b.id.client == ("192.0.2.2", REUSED_PORT)
    assert a.id.server == b.id.server
    assert a.client.isn != b.client.isn
    assert a.closed == "fin" and b.closed == "fin"
    for i in (0, 1):
        assert body(bytes(sinks[i].bufs[SERVER])) == served(tcp_captures, SMALL)


def test_rst_closes_both_directions(tcp_captures):
    conns, sinks = run(tcp_captures["rst"])
    (c,) = conns
    assert c.closed == "rst" and c.rst_ts_ns is not None
    assert sinks[0].closed == ["rst", "rst"] or sinks[0].closed[CLIENT] == "fin"
    got = body(bytes(sinks[0].bufs[SERVER]))
    assert 0 < len(got) < BIG
    holes = sinks[0].holes[SERVER]
    # what arrived before the reset is the file's beginning (holes, if the RST cut a loss
    # recovery short, are zeros here)
    data = served(tcp_captures, len(got))
    head = len(sinks[0].bufs[SERVER]) - len(got)
    mask = bytearray(len(got))
    for off, length in holes:
        for i in range(max(off - head, 0), min(off - head + length, len(got))):
            mask[i] = 1
    assert all(m or x == y for x, y, m in zip(got, data, mask))


def test_a_timeout_is_told_from_fast_retransmits(tcp_captures):
    # at the server the 1.2 s outage shows as retransmissions with no ACK to prompt them
    (c,) = connections(tcp_captures["outage-server"])
    ev = [e for e in c.retransmission_events if e.direction == SERVER]
    to = [e for e in ev if e.kind == "timeout"]
    assert to and any(e.kind == "fast" for e in ev)
    first = to[0]
    assert first.original_seen and first.delay_ns >= 200_000_000  # Linux's minimum RTO, 200 ms
    assert c.server.time_lost_ns >= 1_000_000_000  # bytes waited at least the outage (1.2 s) - RTT
    # at the client, RTO retransmissions that fill visible holes are timeouts; when the outage took
    # a flight's tail (no hole visible at the client: which one happens depends on the run's
    # timing), the retransmission looks new and the silence before it is a stall
    (cc,) = connections(tcp_captures["outage"])
    assert cc.server.timeout_retransmissions + cc.server.stalls > 0
    assert cc.server.time_lost_ns + cc.server.stall_ns >= 1_000_000_000


def test_a_lost_syn_is_a_timeout_retransmission(tcp_captures, tshark_of):
    (c,) = connections(tcp_captures["synloss"])
    syn = [e for e in c.retransmission_events if e.segment == "syn"]
    assert len(syn) == 1
    e = syn[0]
    assert e.kind == "timeout" and e.direction == CLIENT and e.original_ts_ns == c.syn_ts_ns
    # RFC 6298 §2.1 (and Linux): the initial RTO is 1 s
    assert 1_000_000_000 <= e.delay_ns < 1_100_000_000
    assert e.frame in tshark_of("synloss").retransmission


def test_out_of_order_segments_are_reordered_originals(tcp_captures, tshark_of):
    """Each frame qoe calls out of order carries an older TSval than a segment with a higher
    sequence number captured before it (RFC 7323 §3: it was sent earlier, so it is no
    retransmission); tshark's fields give seq_raw, len and tsval."""
    conns, sinks = run(tcp_captures["reorder"])
    (c,) = conns
    ooo = set(c.server.out_of_order_frames)
    assert len(ooo) == c.server.out_of_order > 0
    rows = [r for r in tshark_of("reorder").rows if r["tcp.srcport"] == "8000" and r["tcp.len"] != "0"]
    best: tuple[int, int] | None = None  # (highest seq end so far, tsval of that segment)
    checked = 0
    for r in rows:
        frame, seq, n, tsval = int(r["frame.number"]), int(r["tcp.seq_raw"]), int(r["tcp.len"]), int(
            r["tcp.options.timestamp.tsval"])
        rel = (seq - c.server.isn - 1) % 2**32
        if frame in ooo:
            assert best is not None and rel + n <= best[0] and tsval <= best[1]
            checked += 1
        if best is None or rel + n > best[0]:
            best = (rel + n, tsval)
    assert checked == len(ooo)
    # the sender took many of them for lost and retransmitted them: spurious (the receiver had
    # acknowledged them), as tshark says, but for the segments after the client's RST
    assert c.server.spurious_retransmissions > 0
    spur = {e.frame for e in c.retransmission_events if e.spurious}
    assert tshark_of("reorder").spurious <= spur
    assert all(e.ts_ns > c.rst_ts_ns for e in c.retransmission_events if e.frame in spur - tshark_of("reorder").spurious)
    assert body(bytes(sinks[0].bufs[SERVER])) == served(tcp_captures, 300_000)


# -- derived captures: the handshake cut off, sequence numbers shifted to wrap ------------------


@pytest.fixture(scope="module")
def midstream(tcp_captures, tmp_path_factory):
    """``editcap -r loss.pcap mid.pcap 40-1000000``: frames 40 onwards (no SYN, in a loss episode)."""
    if shutil.which("editcap") is None:
        pytest.skip("needs editcap")
    out = tmp_path_factory.mktemp("mid") / "mid.pcap"
    subprocess.run(["editcap", "-r", str(tcp_captures["loss"]), str(out), "40-1000000"], check=True, capture_output=True)
    return out


@pytest.mark.tshark
def test_a_capture_without_the_handshake(midstream, tcp_captures):
    conns, sinks = run(midstream)
    (c,) = conns
    assert not c.id.initiator_known
    assert c.id.server == ("198.51.100.2", 8000)  # the lower port
    assert c.syn_ts_ns is None and c.handshake_rtt_ns is None and c.closed == "fin"
    ts = tshark_tcp(midstream)
    theirs = ts.retransmission | ts.fast_retransmission | ts.out_of_order | ts.spurious
    assert late_frames(conns) == theirs
    # the server's stream starts where the client's first acknowledgment in the cut capture
    # points (inside a loss episode: the holes are filled by the retransmissions), and is the
    # file's tail from there on
    got = bytes(sinks[0].bufs[SERVER])
    data = served(tcp_captures, BIG)
    assert sinks[0].holes == ([], []) and c.server.missing_bytes == 0
    assert 0 < len(got) == c.server.bytes < BIG
    assert got == data[BIG - len(got) :]


def _shift(src, dst, k):
    """Add ``k`` (mod 2**32) to the server's sequence numbers and to the client's ACK and SACK
    numbers (RFC 9293 §3.1, RFC 2018 §3); checksums are left stale (neither reader checks)."""
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        r = dpkt.pcap.Reader(fi)
        w = dpkt.pcap.Writer(fo, linktype=r.datalink(), nano=False)
        for ts, buf in r:
            eth = dpkt.ethernet.Ethernet(buf)
            tcp = eth.data.data
            if tcp.sport == 8000:
                tcp.seq = (tcp.seq + k) % 2**32
            else:
                if tcp.flags & dpkt.tcp.TH_ACK:
                    tcp.ack = (tcp.ack + k) % 2**32
                opts = b""
                for kind, data in dpkt.tcp.parse_opts(tcp.opts):
                    if kind in (0, 1):
                        opts += bytes([kind])
                        continue
                    if kind == 5:
                        vals = [int.from_bytes(data[i : i + 4], "big") for i in range(0, len(data), 4)]
                        data = b"".join(((v + k) % 2**32).to_bytes(4, "big") for v in vals)
                    opts += bytes([kind, len(data) + 2]) + data
                assert len(opts) == len(tcp.opts)
                tcp.opts = opts
            w.writepkt(bytes(eth), ts)


@pytest.mark.tshark
def test_sequence_numbers_wrap_around(tcp_captures, tmp_path):
    """The server's ISN moved to 2**32 - 400000: its sequence numbers wrap 400 kB into the 1 MB."""
    src = tcp_captures["loss"]
    (c,) = connections(src)
    k = (2**32 - 400_000 - c.server.isn) % 2**32
    wrapped = tmp_path / "wrapped.pcap"
    _shift(src, wrapped, k)
    conns, sinks = run(wrapped)
    (w,) = conns
    assert w.server.isn == 2**32 - 400_000
    assert w.retransmission_events == c.retransmission_events
    assert (w.server.bytes, w.server.retransmitted_bytes, w.server.time_lost_ns) == (
        c.server.bytes, c.server.retransmitted_bytes, c.server.time_lost_ns)
    assert w.server.rtt.rtt_ns.tolist() == c.server.rtt.rtt_ns.tolist()
    assert body(bytes(sinks[0].bufs[SERVER])) == served(tcp_captures, BIG)
    ts = tshark_tcp(wrapped)
    assert late_frames(conns) == ts.retransmission | ts.fast_retransmission | ts.out_of_order | ts.spurious
