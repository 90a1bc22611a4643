"""TCP from captures: reassembly, round-trip times and retransmissions, per connection.

:func:`connections` (and :func:`iter_connections`, its streaming form) reads the TCP
segments of a capture once (:func:`qoe.capture.tcp_segment_rows`, the same segments as
:func:`qoe.capture.read_packets` with headers read in NumPy columns: pcap/pcapng, every link
type qoe reads, IPv4/IPv6) and, per connection, hands each direction's bytes in order
to a :class:`ByteSink` (the contract with HTTP/TLS above, see ``qoe.web._sink``) and
returns a :class:`Connection` with what happened to them.

Definitions
-----------
Everything is as seen at the *capture point*; a capture cannot see what either host saw.

Connection
    A 4-tuple (addresses and ports) from its first packet until a FIN from both sides or
    a RST (a RST after both FINs only answers stray segments: the connection stays
    ``closed="fin"``). A SYN (without ACK) on a 4-tuple that is closed, or that carries
    another ISN than the connection's, starts a new connection (port reuse); so does a
    SYN/ACK that belongs to no SYN seen. A closed connection stays tracked
    ``TcpLimits.close_delay_s`` for its late packets (still analysed, no longer delivered).
Roles
    The client (initiator) sent the SYN without ACK, or received the SYN/ACK
    (``initiator_known=True``). Without a handshake in the capture the server is the side
    with the lower port (services listen on system and user ports, clients on ephemeral
    ones: RFC 6335 §6), and with equal ports the receiver of the first packet seen;
    ``initiator_known=False`` then.
Offsets
    Byte ``k`` of a direction has offset ``k``: 0 is the byte after the SYN's sequence
    number (RFC 9293 §3.4: the ISN is taken by the SYN), or, without a SYN, the first
    byte the capture shows (or the receiver's first acknowledgment number, if that came
    first). Sequence numbers wrap modulo 2**32; offsets do not (each is unwrapped to the
    value nearest the highest offset seen).
Delivery
    Bytes reach the sink in order, at the time of the packet that made them contiguous.
    A hole waits until it is filled, until the receiver acknowledges bytes beyond it (the
    receiver has them, so the capture missed them: a gap at once), until
    ``TcpLimits.max_buffered_bytes`` of out-of-order bytes pile up behind it, or until the
    connection ends (RST, or the reassembler lets go). Bytes that the snap length cut
    off (``TcpInfo.data_len`` longer than the captured payload) are a gap right after the
    captured part. When two copies of the same bytes differ, the first one wins (and
    ``overlap_conflicts`` counts it).
Retransmission, out of order, overlap
    Let *high* be the end of the highest byte seen in a direction. A segment with
    payload that starts at or above *high* is new. One that starts below it is:

    - a *retransmission* if any of its bytes was seen before (or declared missing);
    - a *retransmission* as well if it fills a hole and was sent after the segment that
      revealed the hole (its TCP timestamp TSval is later, RFC 7323 §3; without
      timestamps or with equal ones: it came at least one round-trip time of the
      whole path after the hole appeared, the handshake RTT, else the sum of the smallest
      ACK RTTs both ways (one way alone is one leg only), else 3 ms, Wireshark's default
      for the same decision): the
      original was lost before the capture point;
    - *out of order* (a reordered original) if it only fills a hole otherwise;
    - an *overlap* as well if it carries both bytes seen before and bytes never seen.

    Not retransmissions: keep-alives and zero-window probes (one byte or none, just
    below *high*; RFC 9293 §3.8.4), and a segment the capture holds twice (the same
    header as its latest transmission, TSval included, < 200 ms later, or < 1 ms without
    timestamps: Linux's "any" device on a router, span ports; ``duplicates``). A repeated SYN, SYN/ACK or FIN
    is a retransmission. tshark flags the same set of segments
    (``tcp.analysis.retransmission``, ``fast_retransmission``, ``out_of_order``,
    ``spurious_retransmission`` together); it splits it otherwise (time only, no TSval).
Fast retransmit or timeout
    ``"timeout"`` when the receiver's last packet passed the capture point more than
    one path RTT + 200 ms before the retransmission (no ACK can have prompted it: the
    sender's timer did, RFC 6298 §5; 200 ms is the smallest minimum RTO in common use,
    Linux's; RFC 6298 §2.4 asks for 1 s), and for SYNs. Otherwise ``"fast"`` when the
    receiver had signalled the loss: 3 duplicate ACKs (RFC 5681 §2 definition, §3.2), a
    SACK block above the retransmitted bytes (RFC 2018, RFC 6675 §5), or an ACK of
    a segment sent after these bytes' original (RACK, RFC 8985 §6.2); and every
    retransmission inside the recovery episode that a first one started (until the
    cumulative ACK reaches the highest byte sent when it began: RFC 6675 §5, RFC 6582
    §3.2) has that first one's kind. Else ``"timeout"`` (a tail-loss probe, RFC 8985 §7,
    looks the same from outside). A stack whose minimum RTO is below 200 ms (FreeBSD's
    30 ms) has some of its timeouts counted as fast.
Time a retransmission cost
    ``delay_ns`` = its capture time − the bytes' first chance at the capture point: the
    original transmission when the capture saw it, else the time the capture point first
    saw bytes beyond them (when the hole appeared). Per direction ``time_lost_ns`` is the
    length of the union of these intervals over the non-spurious retransmissions (so
    overlapping losses are not counted twice); a retransmission is *spurious* when the
    receiver had acknowledged all its bytes before it passed the capture point.
RTT
    The handshake gives two legs: SYN → SYN/ACK (capture point → server → capture point;
    ``rtt_syn_ns``) and SYN/ACK → the client's ACK (capture point → client → capture
    point; ``rtt_synack_ns``); their sum ``handshake_rtt_ns`` is the path's RTT at any
    capture point (tshark's ``tcp.analysis.initial_rtt``). Data/ACK samples
    (:class:`RttSamples`): an ACK that acknowledges new data up to exactly the end of a
    segment gives ACK time − that segment's time, unless a newly acknowledged segment
    was ever retransmitted (Karn's rule, RFC 6298 §3); a direction's samples measure the
    path to its *receiver* and back, delayed ACKs included. With a repeated SYN or
    SYN/ACK the ACK's TSecr says which transmission it answers (RFC 7323 §4.1); without
    timestamps there is no handshake sample then (Karn's rule again).

Memory
    Bounded per connection by :class:`TcpLimits` (out-of-order bytes, tracked segments,
    RTT samples, retransmission records) and in number of connections tracked at once;
    a finished connection lets go of its buffers when it closes and of everything once
    reported. :func:`iter_connections` gives each :class:`Connection` as soon as it is
    final, so memory stays flat in the capture's size; :func:`connections` collects them.

Not seen from a capture: a retransmission whose original was lost before the capture
point and that fills no hole visible there (the last segment of a burst lost before
the capture point) looks like new data; the receiver's own reordering tolerance; losses
behind a capture point that sees only one direction (no ACKs: no RTT, no spurious or
fast classification, holes wait until the end).

References
----------
.. [1] RFC 9293, "Transmission Control Protocol (TCP)", §3.4, §3.8.4, §3.10.7.
.. [2] RFC 5681, "TCP Congestion Control", §2 (duplicate ACK), §3.2 (fast retransmit).
.. [3] RFC 6298, "Computing TCP's Retransmission Timer", §3 (Karn's algorithm), §5.
.. [4] RFC 2018 (SACK); RFC 6675 (SACK-based loss recovery); RFC 6582 (NewReno).
.. [5] RFC 7323, "TCP Extensions for High Performance", §3 (timestamps).
.. [6] RFC 8985, "The RACK-TLP Loss Detection Algorithm for TCP", §6.2 (RACK), §7 (TLP).
.. [7] RFC 6335 §6 (port number ranges).
"""

from __future__ import annotations

import os
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain
from typing import Any


from qoe.capture import (TCP_ACK, TCP_SEGMENT_FIELDS, TCP_SYN, Packet, relaxed_gc, tcp_segment_chunks, tcp_segment_row,
                         tcp_segment_rows, time_spans, TimeSpans)
from qoe.errors import InputError, QoEWarning
from qoe.web._sink import CLIENT, SERVER, ByteSink, ConnectionId, SinkFactory
from qoe.web._conntrack import _Conn
from qoe.web._connresults import Connection, Direction, Retransmission, RttSamples, TcpLimits, TcpView

__all__ = [
    "connections",
    "iter_connections",
    "TcpLimits",
    "Connection",
    "Direction",
    "Retransmission",
    "RttSamples",
    "ConnectionId",
    "ByteSink",
    "SinkFactory",
    "CLIENT",
    "SERVER",
]

_FLAGS = TCP_SEGMENT_FIELDS.index("flags")
_SRC, _SPORT, _DST, _DPORT = (TCP_SEGMENT_FIELDS.index(f) for f in ("src", "sport", "dst", "dport"))
_SWEEP_EVERY = 4096  # packets between looks at the closed connections past their close delay

_LIMIT_TEXT = {
    "max_buffered_bytes": "held more out-of-order bytes than max_buffered_bytes={v} in a direction: "
    "the oldest holes were given to the sink as gaps early",
    "max_tracked_segments": "had more than max_tracked_segments={v} unacknowledged segments in a direction: "
    "the oldest were forgotten (no RTT sample or original time for them)",
    "max_rtt_samples": "had more than max_rtt_samples={v} RTT samples in a direction: the kept samples "
    "were thinned (count and min exact, median over the kept ones)",
    "max_retransmission_events": "had more than max_retransmission_events={v} retransmissions: "
    "the later ones are counted but not listed",
    "max_connections": "were evicted as more than max_connections={v} were tracked at once: "
    "they are reported as closed='evicted' and a later packet of theirs starts a new connection",
}


def connections(
    capture: Any,
    *,
    sinks: SinkFactory | None = None,
    limits: TcpLimits = TcpLimits(),
    endpoints: Iterable[tuple[tuple[str, int], tuple[str, int]]] | None = None,
    times: Sequence[tuple[int, int]] | None = None,
) -> list[Connection]:
    """Every TCP connection of a capture, reassembled, in order of first packet.

    Parameters
    ----------
    capture : str, os.PathLike, binary file object, or iterable of Packet
        A pcap/pcapng file (read with ``qoe.capture.tcp_segment_rows(capture)``: the
        segments of ``qoe.capture.read_packets(capture, protocols=("tcp",))``), or
        packets already read (non-TCP ones are skipped), in capture order.
    sinks : callable, optional
        ``sinks(connection_id)`` is called once per new connection and returns the
        :class:`ByteSink` that receives its bytes, or None. Default: no sinks (the
        connections are analysed, their bytes not kept).
    limits : TcpLimits, optional
        Memory bounds (see :class:`TcpLimits` for the defaults).
    endpoints : iterable of ((address, port), (address, port)), optional
        Only the connections between these pairs of endpoints (either way round): the
        segments of every other connection are left out before reassembly, as if they
        had not been captured, which makes reading a few connections of a large capture
        again (a streaming session's manifests) cost little more than reading the file.
        The connections kept, and what their sinks are given, are the same as without it,
        but for ``id.index``, which numbers the connections read. Default: every connection.
    times : sequence of (int, int), optional
        Only the segments captured within one of these ``(start_ns, end_ns)`` spans (ends
        included), the others left out before reassembly as if they had not been captured:
        for a capture file, their rows are not even built
        (``qoe.capture.SegmentChunk.rows(times=...)``). With ``endpoints``, what a reader of
        a few connections' first moments needs (a streaming session's manifests: from each
        connection's start to its last manifest's end). A connection cut short this way ends
        as the capture does. Default: every segment.

    Returns
    -------
    list of Connection
        Sorted by ``connection.id.index``.

    Raises
    ------
    CaptureError
        The file cannot be read as a capture (from :func:`qoe.capture.tcp_segment_rows`).
    InputError
        ``limits`` is not a TcpLimits with positive bounds, ``sinks`` is not callable, or
        ``endpoints`` / ``times`` are not what they should be.

    Warns
    -----
    QoEWarning
        A limit of ``limits`` was crossed (once per kind, with the number of connections);
        the capture ends inside a record (from the reader).

    Examples
    --------
    >>> from qoe.capture import Packet, TcpInfo, TCP_SYN, TCP_ACK
    >>> def seg(i, src, sp, dst, dp, seq, ack, flags, data=b""):
    ...     return Packet(i, i * 1000, src, dst, 6, sp, dp, data,
    ...                   TcpInfo(seq, ack, flags, 65535, data_len=len(data)), 0, 60)
    >>> pkts = [seg(1, "192.0.2.2", 40000, "198.51.100.2", 80, 100, 0, TCP_SYN),
    ...         seg(2, "198.51.100.2", 80, "192.0.2.2", 40000, 900, 101, TCP_SYN | TCP_ACK),
    ...         seg(3, "192.0.2.2", 40000, "198.51.100.2", 80, 101, 901, TCP_ACK, b"GET / HTTP/1.0\\r\\n\\r\\n")]
    >>> (c,) = connections(pkts)
    >>> c.id.server, c.client.bytes, c.rtt_syn_ns, c.rtt_synack_ns
    (('198.51.100.2', 80), 18, 1000, 1000)
    """
    return sorted(iter_connections(capture, sinks=sinks, limits=limits, endpoints=endpoints, times=times), key=_index)


def _index(c: Connection) -> int:
    return c.id.index


def _last_ts(c: _Conn) -> int:
    return c.last_ts


def iter_connections(
    capture: Any,
    *,
    sinks: SinkFactory | None = None,
    limits: TcpLimits = TcpLimits(),
    endpoints: Iterable[tuple[tuple[str, int], tuple[str, int]]] | None = None,
    times: Sequence[tuple[int, int]] | None = None,
) -> Iterator[Connection]:
    """Like :func:`connections`, but each Connection as soon as it is final (streaming).

    A connection is final when it closed and ``limits.close_delay_s`` of capture time
    passed, when a new connection takes its 4-tuple, when it is evicted at
    ``limits.max_connections``, or at the end of the capture; so the order is not the
    order of first packets. Memory stays flat in the capture's size. Parameters,
    exceptions and warnings: see :func:`connections`.
    """
    if not isinstance(limits, TcpLimits):
        raise InputError(f"limits must be a qoe.web.tcp.TcpLimits, got {type(limits).__name__}")
    for name in ("max_buffered_bytes", "max_connections", "max_tracked_segments", "max_rtt_samples",
                 "max_retransmission_events"):
        v = getattr(limits, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InputError(f"TcpLimits.{name} must be a positive integer, got {v!r}")
    if not (limits.close_delay_s >= 0):
        raise InputError(f"TcpLimits.close_delay_s must be >= 0 seconds, got {limits.close_delay_s!r}")
    if sinks is not None and not callable(sinks):
        raise InputError(f"sinks must be a callable (ConnectionId -> ByteSink | None), got {type(sinks).__name__}")
    pairs = None if endpoints is None else _endpoint_pairs(endpoints)
    spans = None if times is None else time_spans(times)
    # (the collector's young generation relaxed while the pass works: qoe.capture.relaxed_gc)
    return relaxed_gc(_iter_connections(capture, sinks, limits, pairs=pairs, times=spans))


def _endpoint_pairs(endpoints: Any) -> frozenset[tuple[str, int, str, int]]:
    """``(src, sport, dst, dport)`` of both directions of each pair of ``endpoints``."""
    out = set()
    try:
        for (a, p), (b, q) in endpoints:
            if not (isinstance(a, str) and isinstance(b, str) and isinstance(p, int) and isinstance(q, int)):
                raise TypeError
            out.update(((a, p, b, q), (b, q, a, p)))
    except (TypeError, ValueError):
        raise InputError("endpoints must be pairs of (address, port), e.g. [(('192.0.2.1', 40000), "
                         f"('198.51.100.2', 443))], got {endpoints!r}"[:300]) from None
    return frozenset(out)


def _is_file(capture: Any) -> bool:
    """Is ``capture`` a capture file (a path or a binary file object), not packets already read?"""
    return isinstance(capture, (str, bytes, os.PathLike)) or hasattr(capture, "read")


def _iter_connections(
    capture: Any, sinks: SinkFactory | None, limits: TcpLimits, udp: Any = None,
    pairs: frozenset[tuple[str, int, str, int]] | None = None, read_ahead: bool | None = False,
    view: bool = False, times: TimeSpans | None = None,
) -> Iterator[Connection | TcpView]:
    """:func:`iter_connections` without the checks; ``udp``, for a capture file: called with the
    UDP datagrams of each chunk as the file is read (``qoe.capture.tcp_segment_rows``: one pass
    gives the page reader its TCP and its DNS); ``pairs``: only segments whose ``(src, sport,
    dst, dport)`` is one of these; ``read_ahead``: a capture file is read in a child process
    (:func:`qoe.capture.tcp_segment_rows`); ``view``: each connection as the page model reads it
    (``qoe.web._connresults.TcpView``), not the whole :class:`Connection`; ``times``: only
    segments captured within these spans (:func:`connections`, checked)."""
    if _is_file(capture):
        name = os.fspath(capture) if isinstance(capture, (str, os.PathLike)) else "the capture"
        if times is not None:
            chunks = tcp_segment_chunks(capture, udp=udp is not None)
            rows: Iterable[tuple[Any, ...]] = chain.from_iterable(c.rows(udp=udp, times=times) for c in chunks)
        else:
            rows = tcp_segment_rows(capture, udp=udp, read_ahead=read_ahead)
    else:
        name = "the packets"
        rows = _rows(capture)
        if times is not None:
            rows = _within(rows, times)
    if pairs is not None:
        rows = (r for r in rows if (r[_SRC], r[_SPORT], r[_DST], r[_DPORT]) in pairs)
    return _track(rows, sinks, limits, str(name), view=view)


def _within(rows: Iterable[tuple[Any, ...]], spans: TimeSpans) -> Iterator[tuple[Any, ...]]:
    """The rows captured within ``spans`` (packets already read)."""
    for r in rows:
        if spans.holds(r[1]):
            yield r


def _rows(packets: Iterable[Packet]) -> Iterator[tuple[Any, ...]]:
    """Packets as the rows of :func:`qoe.capture.tcp_segment_rows` (non-TCP ones left out)."""
    for p in packets:
        if p.tcp is not None:
            yield tcp_segment_row(p)


def _track(
    rows: Iterable[tuple[Any, ...] | None], sinks: SinkFactory | None, limits: TcpLimits, name: str, *,
    number: Callable[[], int] | None = None, hits: dict[str, int] | None = None, view: bool = False,
) -> Iterator[Connection | TcpView | None]:
    """The reassembly of ``rows`` (segment rows in frame order), each connection as it is final.

    ``number``: called for the index of each new connection (default: 0, 1, 2... in order);
    ``hits``: where the limits crossed are counted (``{kind: connections}``), the caller
    then warning of them (:func:`_warn_hits`; default: warned of here, at the end). A
    ``None`` among the rows is given back as ``None`` once every row before it is done
    (a mark of progress for a caller that feeds the rows, ``qoe.web._split``).

    A closed connection is let go when a segment of its 4-tuple comes more than
    ``limits.close_delay_s`` after its last one (that segment starts a new connection), or
    when a look at the closed connections (at each new connection, and every
    ``_SWEEP_EVERY`` segments) finds it so long past: which connection a segment belongs to
    does not depend on when the looks happen, only when results are given does.
    """
    table: dict[tuple[str, int, str, int], tuple[_Conn, int]] = {}
    live: dict[int, _Conn] = {}  # every tracked connection, by index
    closing: deque[_Conn] = deque()  # closed connections within their close delay, in closing order
    out: list[Connection | TcpView] = []
    warn = hits is None
    if hits is None:
        hits = {}
    counter = 0
    tw_ns = int(limits.close_delay_s * 1e9)
    max_conn = limits.max_connections

    def finish(conn: _Conn, how: str) -> None:
        conn.end(how)
        for key in conn.keys:
            ent = table.get(key)
            if ent is not None and ent[0] is conn:
                del table[key]
        del live[conn.cid.index]
        for h in conn.hit:
            hits[h] = hits.get(h, 0) + 1
        out.append(conn.view() if view else conn.result())

    def sweep(now: int) -> None:
        while closing and closing[0].last_ts + tw_ns < now:
            c = closing.popleft()
            if c.cid.index in live:
                finish(c, c.state)

    def evict() -> None:
        # the least recently active eighth goes at once, so that eviction stays cheap per connection
        victims = sorted(live.values(), key=_last_ts)[: max(1, len(live) // 8)]
        for conn in victims:
            if conn.state == "open":  # a closed one within its close delay loses nothing
                hits["max_connections"] = hits.get("max_connections", 0) + 1
            finish(conn, "evicted")

    n = 0
    for tcp in rows:
        if tcp is None:
            yield None
            continue
        key = tcp[2:6]  # (src, sport, dst, dport)
        ent = table.get(key)
        flags = tcp[_FLAGS]
        if ent is not None and ent[0].state != "open" and tcp[1] - ent[0].last_ts > tw_ns:
            finish(ent[0], ent[0].state)  # closed, and past its close delay: the 4-tuple is free
            ent = None
        if flags & TCP_SYN or ent is None:
            ts, src, sport, dst, dport = tcp[1], tcp[2], tcp[3], tcp[4], tcp[5]
            if flags & TCP_SYN:
                if flags & TCP_ACK:
                    fresh = ent is None or not ent[0].accepts_synack(ent[1], tcp)
                    client_is_src = False
                else:
                    fresh = ent is None or not ent[0].accepts_syn(ent[1], tcp)
                    client_is_src = True
                known = True
            else:
                # no handshake: the lower port is the server's (RFC 6335 §6); equal: the receiver
                fresh, known = True, False
                client_is_src = sport >= dport
            if fresh:
                if ent is not None:
                    finish(ent[0], "reused")
                sweep(ts)  # a new connection: closed ones past their delay go first
                if len(live) >= max_conn:
                    evict()
                rev = (dst, dport, src, sport)
                a, b = (src, sport), (dst, dport)
                cid = ConnectionId(
                    client=a if client_is_src else b,
                    server=b if client_is_src else a,
                    index=counter if number is None else number(),
                    first_ts_ns=ts,
                    initiator_known=known,
                )
                counter += 1
                conn = _Conn(cid, sinks(cid) if sinks is not None else None, limits, (key, rev), closing)
                d = CLIENT if client_is_src else SERVER
                ent = table[key] = (conn, d)
                table[rev] = (conn, 1 - d)
                live[cid.index] = conn
        conn, d = ent
        conn.packet(d, tcp)
        n += 1
        if n >= _SWEEP_EVERY:
            n = 0
            sweep(tcp[1])
        if out:
            yield from out
            out.clear()
    while closing:
        c = closing.popleft()
        if c.cid.index in live:
            finish(c, c.state)
    for conn in list(live.values()):
        finish(conn, "end-of-capture")
    yield from out
    out.clear()
    if warn:
        _warn_hits(hits, limits, name, stacklevel=3)


def _warn_hits(hits: dict[str, int], limits: TcpLimits, name: str, stacklevel: int = 2) -> None:
    """Warn of the limits crossed (``{kind: connections}``, as :func:`_track` counts them)."""
    for kind, count in sorted(hits.items()):
        text = _LIMIT_TEXT[kind].format(v=getattr(limits, kind))
        warnings.warn(f"{name}: {count} TCP connection(s) {text}", QoEWarning, stacklevel=stacklevel)
