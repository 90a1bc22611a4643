"""The per-connection state machine of TCP reassembly: what each segment and ACK is, RTT, retransmissions.

Definitions are in :mod:`qoe.web.tcp`. One :class:`_Conn` per connection, one :class:`_Sender`
per direction. Each segment is classified here (new bytes, a retransmission, reordering, an
overlap, a keep-alive, a copy of a captured frame); each ACK gives RTT samples (Karn's rule)
and loss signals (duplicate ACKs, SACK, RACK) for the fast/timeout decision. What happens to
the bytes (held, delivered to the sink, forced as gaps) is ``qoe.web._delivery``'s job. Sequence numbers are
turned into stream offsets at once (offset 0 = the first byte after the SYN, or the first
byte seen) and unwrapped against the highest offset seen, so the 32-bit wrap-around
(RFC 9293 §3.4) never shows past :meth:`_Sender.offset`.

Per direction the state is: ``nxt`` (bytes before it went to the sink), ``high`` (bytes
before it were seen or declared missing), ``holes`` (never-seen ranges in
``[nxt, high)``), ``ooo`` (seen, undelivered ranges in ``[nxt, high)``: the complement
of the holes there) and ``sent`` (segments not yet acknowledged: transmission time,
retransmission count, payload). Everything below ``nxt`` was delivered or declared a gap.

References
----------
.. [1] RFC 9293 §3.4 (sequence numbers), §3.8.4 (keep-alives), §3.10.7.4 (segment text).
.. [2] RFC 5681 §2 (duplicate ACK), §3.2 (fast retransmit).
.. [3] RFC 6298 §3 (Karn), §5 (retransmission timer).
.. [4] RFC 2018 §3 (SACK), RFC 6675 §5 (SACK loss recovery), RFC 6582 §3.2 (partial ACKs).
.. [5] RFC 7323 §3 (TSval: when a segment was sent).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from typing import Any

import numpy as np

from qoe.capture import TCP_ACK, TCP_FIN, TCP_RST, TCP_SEGMENT_FIELDS, TCP_SYN
from qoe.web._connresults import (
    Connection, Direction, HalfView, Retransmission, RttSamples, TcpLimits, TcpView,
)
from qoe.web._delivery import _H_END, _H_START, _Delivery, _start
from qoe._records import builder
from qoe.web._sink import CLIENT, SERVER, ConnectionId

M32 = 0xFFFFFFFF
HALF32 = 0x80000000  # RFC 9293 §3.4: sequence comparisons are modulo 2**32 within 2**31
# Wireshark's own default for telling reordering from retransmission when a connection's
# RTT is unknown (used so that our out-of-order counts are comparable with tshark's).
DEFAULT_REORDER_NS = 3_000_000
# Without timestamps, how close two identical segments must be to be one frame captured twice:
# a sender repeats a segment unchanged only after dup ACKs (one RTT) or its timer (RFC 6298
# §2.4: >= 1 s; Linux: >= 200 ms); a copy on another interface comes microseconds later, or a
# queue later on a router. 1 ms keeps real retransmissions on LAN-scale RTTs out.
DUPLICATE_NS = 1_000_000
DUPTHRESH = 3  # RFC 5681 §3.2, RFC 6675 §2 DupThresh
# The smallest retransmission timeout of common stacks: Linux's TCP_RTO_MIN, 200 ms (RFC 6298
# §2.4 asks for 1 s). A retransmission more than one path RTT plus this after the receiver's
# last packet cannot have been prompted by an ACK: the sender's timer sent it.
MIN_RTO_NS = 200_000_000

# Fields of a segment row (qoe.capture.TCP_SEGMENT_FIELDS); a sent record keeps the header
# fields ``row[_HDR]`` (seq .. ip_id) of its latest transmission, not the row (and its payload).
_SEQ, _ACK, _FLAGS, _WIN, _DLEN, _MSS, _WSCALE, _SACK_OK, _SACK, _TSVAL, _TSECR, _IPID = (
    TCP_SEGMENT_FIELDS.index(f)
    for f in (
        "seq", "ack", "flags", "window", "data_len", "mss", "wscale", "sack_permitted", "sack", "tsval", "tsecr", "ip_id"
    )
)
_H0 = _SEQ
_HDR = slice(_SEQ, _IPID + 1)
assert _IPID == _TSECR + 1, "the header fields a copy repeats are contiguous in a row"

# The per-direction lists hold small mutable records (lists: cheaper to make than objects, and
# made once per segment); their fields by name:
# a sent record (``_Sender.sent``): a transmitted range until acknowledged
_R_START, _R_END, _R_FIRST_TS, _R_RETX, _R_PAYLOAD, _R_LAST_TS, _R_HDR = range(7)


class _Sender:
    """One direction of a connection (the bytes one side sends)."""

    __slots__ = (
        "d", "base", "isn", "syn_ts", "nxt", "high", "holes", "ooo",
        "ooo_bytes", "sent", "sent_head", "pl_head", "pl_bytes", "acked", "ack_raw", "ack_win", "dupacks",
        "sack_hi", "episode", "recover", "fin", "fin_ts", "closed", "gap_off", "gap_len",
        "gap_ts", "last_ts", "mss", "wscale", "sack_ok", "syn_tx", "rack_ts",
        # counters
        "packets", "data_packets", "wire_bytes", "delivered", "missing", "truncated",
        "retx", "retx_bytes", "fast", "timeout", "spurious", "ooo_count", "overlaps",
        "conflicts", "dups", "keepalives", "first_data_ts", "last_data_ts",
        "lost_total", "lost_iv", "rtt_ts", "rtt_v", "rtt_count", "rtt_min", "rtt_stride",
        "rtt_skip", "stalls", "stall_ns", "stall_iv",
    )

    def __init__(self, d: int) -> None:
        self.d = d
        self.stalls = 0  # silences of this sender mid-transfer (see Direction.stall_ns)
        self.stall_ns = 0
        self.stall_iv: list[tuple[int, int]] = []  # (start, end) of the first stalls' costs
        self.base: int | None = None  # raw sequence number of offset 0
        self.isn: int | None = None
        self.syn_ts: int | None = None
        self.nxt = 0
        self.high = 0
        self.holes: list[list[Any]] = []  # hole records (_H_* fields)
        self.ooo: list[list[Any]] = []  # held records (_O_* fields, qoe.web._delivery)
        self.ooo_bytes = 0
        # sent records (_R_* fields): start, end, first transmission ts, times retransmitted,
        # payload, last transmission ts, header fields of the last transmission
        self.sent: list[list[Any]] = []
        self.sent_head = 0
        self.pl_head = 0  # records before it have let go of their payload
        self.pl_bytes = 0
        self.acked: int | None = None  # highest cumulative ACK from the receiver (offset)
        self.ack_raw: int | None = None  # its raw acknowledgment number
        self.ack_win = -1
        self.dupacks = 0
        self.sack_hi: int | None = None
        self.rack_ts = 0  # latest transmission time among the segments acknowledged
        self.episode: str | None = None  # kind of the loss recovery under way
        self.recover = 0  # it lasts until the cumulative ACK reaches this offset
        self.fin: int | None = None
        self.fin_ts: int | None = None
        self.closed: str | None = None
        self.gap_off = 0
        self.gap_len = 0
        self.gap_ts = 0
        self.last_ts = 0
        self.mss: int | None = None
        self.wscale: int | None = None
        self.sack_ok = False
        self.syn_tx: list[tuple[int, int | None]] = []  # (ts, TSval) of each SYN sent
        self.packets = self.data_packets = self.wire_bytes = self.delivered = 0
        self.missing = self.truncated = self.retx = self.retx_bytes = 0
        self.fast = self.timeout = self.spurious = self.ooo_count = self.overlaps = 0
        self.conflicts = self.dups = self.keepalives = 0
        self.first_data_ts: int | None = None
        self.last_data_ts: int | None = None
        self.lost_total = 0
        self.lost_iv: list[list[int]] = []  # disjoint [start, end] of the latest loss episodes
        self.rtt_ts = array("q")
        self.rtt_v = array("q")
        self.rtt_count = 0
        self.rtt_min: int | None = None
        self.rtt_stride = 1
        self.rtt_skip = 0

    def offset(self, seq: int) -> int:
        """Stream offset of raw sequence number ``seq``: the one nearest ``high`` (mod 2**32)."""
        d = (seq - self.base - self.high) & M32
        return self.high + d - 0x100000000 if d >= HALF32 else self.high + d

    def add_lost(self, start: int, end: int) -> None:
        """Add ``[start, end]`` to the union of loss intervals (ends arrive in time order)."""
        iv = self.lost_iv
        while iv and start <= iv[-1][1]:
            s, e = iv.pop()
            start = min(start, s)
            end = max(end, e)
        iv.append([start, end])
        if len(iv) > 64:  # old episodes are settled: fold them into the total
            s, e = iv.pop(0)
            self.lost_total += e - s

    def time_lost(self) -> int:
        return self.lost_total + sum(e - s for s, e in self.lost_iv)


class _Conn(_Delivery):
    """One connection: both halves, the sink, and what the result needs."""

    __slots__ = (
        "cid", "sink", "halves", "limits", "packets", "syn_ts", "synack_ts", "est_ts",
        "first_data_ts", "last_ts", "fin_ts", "rst_ts", "rtt_syn", "rtt_synack", "state",
        "events", "hit", "keys", "closed_how", "closing", "ooo_frames", "rtt_neg",
    )

    def __init__(
        self, cid: ConnectionId, sink: Any, limits: TcpLimits, keys: tuple[Any, Any], closing: Any
    ) -> None:
        self.cid = cid
        self.closing = closing  # where the connection puts itself when it closes (a deque)
        self.ooo_frames: tuple[list[int], list[int]] = ([], [])
        self.sink = sink
        self.halves = (_Sender(CLIENT), _Sender(SERVER))
        self.limits = limits
        self.keys = keys
        self.packets = 0
        self.syn_ts: int | None = None
        self.synack_ts: int | None = None
        self.est_ts: int | None = None
        self.first_data_ts: int | None = None
        self.last_ts = cid.first_ts_ns
        self.fin_ts: int | None = None
        self.rst_ts: int | None = None
        self.rtt_syn: int | None = None
        self.rtt_synack: int | None = None
        self.state = "open"  # "open", "fin" (both FINs), "rst"
        self.events: list[Retransmission] = []
        self.hit: set[str] = set()  # limits crossed
        self.closed_how: str | None = None
        # an RTT sample below 0 was taken (capture timestamps going backwards): _reorder_ns
        # may then be negative, and a gap of MIN_RTO_NS or less may still be a stall
        self.rtt_neg = False

    # -- roles and the handshake ------------------------------------------------------------

    def accepts_syn(self, d: int, tcp: Any) -> bool:
        """Does a SYN (without ACK) from side ``d`` belong to this connection (a retransmission)?"""
        h = self.halves[d]
        return self.state == "open" and d == CLIENT and h.isn is not None and h.isn == tcp[_SEQ]

    def accepts_synack(self, d: int, tcp: Any) -> bool:
        """Does a SYN/ACK from side ``d`` belong to this connection?"""
        c, s = self.halves
        if self.state != "open" or d != SERVER or c.isn is None:
            return False
        if s.isn is not None:
            return s.isn == tcp[_SEQ]
        return s.base is None and s.packets == 0 and tcp[_ACK] == (c.isn + 1) & M32

    # -- one packet -------------------------------------------------------------------------

    def packet(self, d: int, tcp: tuple[Any, ...]) -> None:
        """Segment row ``tcp`` (fields: ``qoe.capture.TCP_SEGMENT_FIELDS``) from side ``d``."""
        index, ts, payload = tcp[0], tcp[1], tcp[6]
        self.packets += 1
        self.last_ts = ts
        h = self.halves[d]
        h.packets += 1
        flags = tcp[_FLAGS]
        dl = tcp[_DLEN]
        if flags & TCP_SYN:
            self._syn(h, d, index, tcp, ts, flags)
        if flags & TCP_ACK:
            o = self.halves[1 - d]
            if (dl and tcp[_ACK] == o.ack_raw and not tcp[_SACK]
                    and -HALF32 <= o.acked - o.high < HALF32):  # type: ignore[operator]
                o.ack_win = tcp[_WIN]  # _ack's common case, without the call (see there)
            else:
                self._ack(o, tcp, ts, flags)
        if dl or flags & TCP_FIN:
            if h.base is None:  # no SYN and no ACK from the peer yet: the stream starts here
                h.base = tcp[_SEQ]
            self._segment(h, d, index, payload, tcp, ts, dl, flags)
        if flags & TCP_RST and self.rst_ts is None:
            self._rst(ts)
        h.last_ts = ts

    def _syn(self, h: _Sender, d: int, index: int, tcp: Any, ts: int, flags: int) -> None:
        if h.isn is None:
            h.isn = tcp[_SEQ]
            h.base = (tcp[_SEQ] + 1) & M32
            h.ack_raw = None  # (offsets are counted from here now)
            h.syn_ts = ts
            h.mss, h.wscale, h.sack_ok = tcp[_MSS], tcp[_WSCALE], tcp[_SACK_OK]
            h.sent.append([-1, 0, ts, 0, b"", ts, tcp[_HDR]])  # the SYN takes sequence number ISN (offset -1)
            h.syn_tx.append((ts, tcp[_TSVAL]))
            if flags & TCP_ACK:
                if self.synack_ts is None:
                    self.synack_ts = ts
            elif self.syn_ts is None:
                self.syn_ts = ts
            return
        if tcp[_SEQ] != h.isn:  # another ISN on a connection we keep: ignore the SYN
            return
        # the SYN's record, acknowledged or not (a copy of a repeated SYN may come after the SYN-ACK)
        rec = h.sent[0] if h.sent and h.sent[0][_R_START] == -1 else None
        if not self._sent_again(h, rec, tcp, ts):
            return
        if len(h.syn_tx) < 16:
            h.syn_tx.append((ts, tcp[_TSVAL]))
        spurious = h.acked is not None and h.acked >= 0
        self._event(h, index=index, ts=ts, offset=-1, length=1, segment="syn", kind="timeout", seen=True,
                    original_ts=h.syn_ts, spurious=spurious)

    def _ack(self, h: _Sender, tcp: Any, ts: int, flags: int) -> None:
        """An ACK from the receiver of ``h``'s bytes."""
        if (tcp[_ACK] == h.ack_raw and tcp[_DLEN] and not tcp[_SACK]
                and -HALF32 <= h.acked - h.high < HALF32):  # type: ignore[operator]
            # the common case of a data segment repeating the highest ACK: the offset it
            # names is ``acked`` again (same number, within 2**31 of high), so of the steps
            # below only the window is kept (no new bytes acknowledged, not a duplicate ACK:
            # it carries data)
            h.ack_win = tcp[_WIN]
            return
        base = h.base
        if base is None:  # the receiver acknowledges a stream we have not seen: it starts there
            base = h.base = tcp[_ACK]
        high = h.high
        a = (tcp[_ACK] - base - high) & M32  # the offset nearest high (RFC 9293 §3.4, mod 2**32)
        a = high + a - 0x100000000 if a >= HALF32 else high + a
        acked = h.acked
        if acked is None or a > acked:
            h.acked = a
            h.ack_raw = tcp[_ACK]
            h.dupacks = 0
            sent = h.sent
            i = head = h.sent_head
            n = len(sent)
            last = None
            karn = False
            pl = h.pl_head
            rack = h.rack_ts
            while i < n:
                r = sent[i]
                if r[_R_END] > a:
                    if r[_R_START] < a and r[_R_RETX]:
                        karn = True
                    break
                last = r
                if r[_R_LAST_TS] > rack:
                    rack = r[_R_LAST_TS]
                if r[_R_RETX]:
                    karn = True
                if i >= pl:
                    h.pl_bytes -= len(r[_R_PAYLOAD])
                    r[_R_PAYLOAD] = b""
                i += 1
            if i > head:
                h.rack_ts = rack
                if i > pl:
                    h.pl_head = i
                h.sent_head = i
                if i > 256:
                    _compact(h)
                if last[_R_END] == a:
                    if not karn:
                        rtt = ts - last[_R_FIRST_TS]
                        if h.rtt_skip or rtt < 0 or last[_R_START] == -1:
                            self._rtt(h, ts, rtt, last[_R_START] == -1)
                        else:  # _rtt's common case, without the call (see there)
                            h.rtt_count += 1
                            if h.rtt_min is None or rtt < h.rtt_min:
                                h.rtt_min = rtt
                            h.rtt_ts.append(ts)
                            h.rtt_v.append(rtt)
                            h.rtt_skip = h.rtt_stride - 1
                            if len(h.rtt_v) >= self.limits.max_rtt_samples:
                                self._thin(h)
                    elif last[_R_START] == -1 and tcp[_TSECR] is not None:
                        # a repeated SYN: the TSecr of its ACK names the transmission it
                        # answers (RFC 7323 §4.1), unless two had the same TSval
                        sent_at = [t for t, v in h.syn_tx if v == tcp[_TSECR]]
                        if len(sent_at) == 1:
                            self._rtt(h, ts, ts - sent_at[0], True)
            if h.episode is not None and a >= h.recover:
                h.episode = None
            if a > h.nxt and h.closed is None:
                fin = h.fin
                self._force(h, a if fin is None or a <= fin else fin, ts)  # the FIN is no byte
        elif a == acked and not tcp[_DLEN] and not (flags & (TCP_SYN | TCP_FIN | TCP_RST)):
            # RFC 5681 §2: same ACK, no data, no SYN/FIN, same window, data outstanding
            # (an ACK captured twice counts twice: duplicate ACKs are identical by definition)
            if tcp[_WIN] == h.ack_win and high > a:
                h.dupacks += 1
        h.ack_win = tcp[_WIN]
        if tcp[_SACK]:
            a = h.acked
            for _, right in tcp[_SACK]:
                r = h.offset(right)
                if r > a and (h.sack_hi is None or r > h.sack_hi):
                    h.sack_hi = r

    def _rtt(self, h: _Sender, ts: int, rtt: int, handshake: bool) -> None:
        if rtt < 0:
            self.rtt_neg = True
        if handshake:  # the ACK of a SYN: the handshake's legs
            if h.d == CLIENT:
                self.rtt_syn = rtt
            else:
                self.rtt_synack = rtt
                self.est_ts = ts
        h.rtt_count += 1
        if h.rtt_min is None or rtt < h.rtt_min:
            h.rtt_min = rtt
        if h.rtt_skip:
            h.rtt_skip -= 1
            return
        h.rtt_ts.append(ts)
        h.rtt_v.append(rtt)
        h.rtt_skip = h.rtt_stride - 1
        if len(h.rtt_v) >= self.limits.max_rtt_samples:
            self._thin(h)

    def _thin(self, h: _Sender) -> None:
        """Keep every second RTT sample of ``h``, and one in twice as many from now on."""
        del h.rtt_ts[1::2]
        del h.rtt_v[1::2]
        h.rtt_stride *= 2
        h.rtt_skip = h.rtt_stride - 1
        self.hit.add("max_rtt_samples")

    def _copy_of_sent(self, h: _Sender, s: int, e: int, tcp: Any, ts: int) -> bool:
        """Is segment ``[s, e)`` a second capture of its latest transmission (see ``_copy``)?
        Its record is looked for among the acknowledged ones too (those ``_compact`` has not
        dropped yet): the second copy of a frame can come after the ACK of the first (two
        interfaces of a router or host, "any" device, where the ACK's copies come between)."""
        sent = h.sent
        i = bisect_right(sent, s, key=_start) - 1
        if i < 0:
            return False
        rec = sent[i]
        return rec[_R_START] == s and _copy(rec, tcp, ts)

    def _segment(self, h: _Sender, d: int, index: int, payload: bytes, tcp: Any, ts: int, dl: int, flags: int) -> None:
        """A segment with payload and/or FIN from side ``d``."""
        high = h.high
        s = (tcp[_SEQ] - h.base - high) & M32  # the offset nearest high (as _Sender.offset)
        s = high + s - 0x100000000 if s >= HALF32 else high + s
        if flags & TCP_SYN:
            s = max(s, 0)  # data on a SYN (TCP Fast Open) starts after the ISN
        e = s + dl
        prev = h.last_data_ts
        if dl:
            h.data_packets += 1
            h.wire_bytes += dl
            if h.first_data_ts is None:
                h.first_data_ts = ts
                if self.first_data_ts is None:
                    self.first_data_ts = ts
            h.last_data_ts = ts
        if s >= high and dl and prev is not None and (ts - prev > MIN_RTO_NS or self.rtt_neg):
            # (_reorder_ns() >= 0 unless an RTT sample was negative: no stall is shorter)
            self._stall(h, d, ts, prev)
        if s >= high and dl:
            # new bytes (the common case), possibly beyond a hole
            if s > high:
                h.holes.append([high, s, ts, tcp[_TSVAL]])
            h.high = e
            sent = h.sent
            sent.append([s, e, ts, 0, payload, ts, tcp[_HDR]])
            h.pl_bytes += len(payload)
            limits = self.limits
            if len(sent) - h.sent_head > limits.max_tracked_segments or h.pl_bytes > limits.max_buffered_bytes:
                self._trim_sent(h)
            if s == h.nxt and h.closed is None:
                if len(payload) == dl and not h.gap_len and h.fin is None:
                    h.delivered += dl
                    h.nxt = e
                    if self.sink is not None:
                        self.sink.data(d, ts, s, payload)
                else:
                    self._deliver(h, d, s, e, payload, ts)
            elif h.closed is None:
                h.ooo.append([s, e, payload, ts])
                h.ooo_bytes += e - s
                if h.ooo_bytes > self.limits.max_buffered_bytes:
                    self.hit.add("max_buffered_bytes")
                    self._shed(h, ts)
        elif dl:
            self._old(h, d, index, payload, tcp, ts, s, e, high)
        if flags & TCP_FIN:
            self._fin(h, d, index, tcp, ts, e, dl)

    def _old(
        self, h: _Sender, d: int, index: int, payload: bytes, tcp: Any, ts: int, s: int, e: int, high: int
    ) -> None:
        """A segment that starts below the highest byte seen: retransmission, reordering, overlap."""
        dl = e - s
        if dl <= 1 and s == high - 1:  # RFC 9293 §3.8.4 keep-alive / §3.8.6.1 zero-window probe
            h.keepalives += 1
            return
        if self._copy_of_sent(h, s, e, tcp, ts):
            h.dups += 1
            return
        hi = e if e < high else high
        # never-seen parts of [s, hi): its intersections with the holes
        parts: list[tuple[int, int]] = []
        hole_ts = None
        hole_tsval = None
        holes = h.holes
        k = 0
        while k < len(holes):
            hs, he, hts, htv = holes[k]
            if he <= s:
                k += 1
                continue
            if hs >= hi:
                break
            a = hs if hs > s else s
            b = he if he < hi else hi
            parts.append((a, b))
            if hole_ts is None or hts < hole_ts:
                hole_ts, hole_tsval = hts, htv
            if hs < a and he > b:  # split
                holes[k] = [hs, a, hts, htv]
                holes.insert(k + 1, [b, he, hts, htv])
                k += 2
            elif hs < a:
                holes[k][_H_END] = a
                k += 1
            elif he > b:
                holes[k][_H_START] = b
                k += 1
            else:
                del holes[k]
        new_below = sum(b - a for a, b in parts)
        old = (hi - s) - new_below
        new_above = e - hi
        original_ts = None
        conflict = False
        late = False
        if old:
            original_ts, conflict = self._seen_before(h, s, hi, payload)
            if conflict:
                h.conflicts += 1
            if new_below or new_above:
                h.overlaps += 1
        retransmitted = old > 0
        if new_below:
            tsval = tcp[_TSVAL]
            if old:
                late = True  # an original never repeats bytes: this is a retransmission
            elif tsval is not None and hole_tsval is not None and tsval != hole_tsval:
                late = ((tsval - hole_tsval) & M32) < HALF32  # RFC 7323 §5.2: sent after
            else:
                late = ts - hole_ts >= self._reorder_ns()
            if late:
                retransmitted = True
                if original_ts is None or hole_ts < original_ts:
                    original_ts = hole_ts
            else:
                h.ooo_count += 1
                frames = self.ooo_frames[d]
                if len(frames) < self.limits.max_retransmission_events:
                    frames.append(index)
            for a, b in parts:
                pa = payload[a - s : b - s]
                self._remember(h, a, b, ts, 1 if late else 0, pa, tcp)
                self._hold(h, a, b, pa, ts)
        if new_above:
            pa = payload[hi - s :]
            self._remember(h, hi, e, ts, 1 if old else 0, pa, tcp)
            self._hold(h, hi, e, pa, ts)
            h.high = e
        if retransmitted:
            if old:
                self._mark_retransmitted(h, s, hi, ts, tcp)
            spurious = not new_below and not new_above and h.acked is not None and h.acked >= e
            kind = self._kind(h, ts, s, e, spurious, old, original_ts)
            again = old + (new_below if late else 0)  # an overlap's new bytes are not resent
            self._event(h, index=index, ts=ts, offset=s, length=dl, segment="data", kind=kind, seen=old > 0,
                        original_ts=original_ts, spurious=spurious, again=again)
        if (new_below or new_above) and h.closed is None:
            self._drain(h, d, ts)
            if h.ooo_bytes > self.limits.max_buffered_bytes:
                self.hit.add("max_buffered_bytes")
                self._shed(h, ts)

    def _fin(self, h: _Sender, d: int, index: int, tcp: Any, ts: int, f: int, dl: int) -> None:
        if self.fin_ts is None:
            self.fin_ts = ts
        if h.fin is None:
            h.fin = f
            h.fin_ts = ts
            if f >= h.high:
                h.sent.append([f, f + 1, ts, 0, b"", ts, tcp[_HDR]])  # the FIN takes one sequence number
            self._maybe_close(h, d, ts)
            return
        if dl == 0 and f == h.fin:
            # its record, acknowledged or not (as _copy_of_sent looks for a data segment's)
            i = bisect_right(h.sent, f, key=_start) - 1
            rec = h.sent[i] if i >= 0 and h.sent[i][_R_START] == f else None
            if not self._sent_again(h, rec, tcp, ts):
                return
            spurious = h.acked is not None and h.acked > f
            kind = self._kind(h, ts, f, f + 1, spurious, 1, h.fin_ts)
            self._event(h, index=index, ts=ts, offset=f, length=1, segment="fin", kind=kind, seen=True,
                        original_ts=h.fin_ts, spurious=spurious)

    @staticmethod
    def _sent_again(h: _Sender, rec: list[Any] | None, tcp: Any, ts: int) -> bool:
        """A SYN or FIN sent again: False if it is its record's latest transmission captured twice
        (counted as a duplicate), else True with the record updated (when there is one)."""
        if rec is None:
            return True
        if _copy(rec, tcp, ts):
            h.dups += 1
            return False
        _again(rec, ts, tcp)
        return True

    def _kind(
        self, h: _Sender, ts: int, s: int, e: int, spurious: bool, old: int, original_ts: int | None = None
    ) -> str:
        """Fast retransmit or timeout (definitions: qoe.web.tcp, Retransmission.kind)."""
        acked = h.acked
        peer = self.halves[1 - h.d]
        if not peer.packets or ts - peer.last_ts > self._reorder_ns() + MIN_RTO_NS:
            kind = "timeout"  # no ACK from the receiver could have prompted it: the timer did
        elif h.episode is not None and (acked is None or acked < h.recover):
            return h.episode  # within a recovery episode (RFC 6675 §5, RFC 6582 §3.2)
        elif (
            (h.dupacks >= DUPTHRESH and (acked is None or acked <= s))
            or (h.sack_hi is not None and h.sack_hi > s)
            or (original_ts is not None and h.rack_ts > original_ts)
        ):
            # the receiver signalled the loss: 3 duplicate ACKs (RFC 5681 §3.2), a SACK block
            # above (RFC 6675 §5), or it acknowledged a segment sent after these bytes (RFC 8985 §6.2)
            kind = "fast"
        else:
            kind = "timeout"
        if not spurious:
            h.episode = kind
            h.recover = h.high
        return kind

    def _mark_retransmitted(self, h: _Sender, s: int, e: int, ts: int, tcp: Any) -> None:
        # acknowledged records too (a spurious retransmission): a second capture of this
        # transmission is then told by its header (_copy_of_sent)
        sent = h.sent
        i = max(0, bisect_right(sent, s, key=_start) - 1)
        while i < len(sent) and sent[i][_R_START] < e:
            if sent[i][_R_END] > s:
                _again(sent[i], ts, tcp)
            i += 1

    def _seen_before(self, h: _Sender, s: int, e: int, payload: bytes) -> tuple[int | None, bool]:
        """First transmission time of bytes ``[s, e)`` and whether the held copy differs."""
        sent = h.sent
        i = max(h.sent_head, bisect_right(sent, s, lo=h.sent_head, key=_start) - 1)
        first = None
        conflict = False
        while i < len(sent):
            a, b, t, _, p, _, _ = sent[i]  # (the _R_* fields)
            if a >= e:
                break
            if b > s:
                if first is None or t < first:
                    first = t
                x = a if a > s else s
                y = b if b < e else e
                # compare what both copies captured of [x, y)
                mine = p[x - a : y - a]
                theirs = payload[x - s : y - s]
                n = min(len(mine), len(theirs))
                if n and mine[:n] != theirs[:n]:
                    conflict = True
            i += 1
        return first, conflict

    def _stall(self, h: _Sender, d: int, ts: int, prev: int) -> None:
        """New bytes after a silence of their sender while its peer sent no data: a stall.

        A sender that goes quiet mid-transfer for longer than an RTO (path RTT + Linux's
        200 ms minimum, RFC 6298 §2.4 allows 1 s) with the peer only acknowledging was,
        as a rule, waiting for a timeout after losing the tail of a flight before the
        capture point: its retransmission then arrives as bytes the capture never saw and
        counts as new. The silence beyond one path RTT is its cost.
        """
        peer = self.halves[1 - d].last_data_ts
        if peer is not None and peer > prev:
            return  # the peer sent data (a new request) in between: not a stall
        rtt = self._reorder_ns()
        gap = ts - prev
        if gap > rtt + MIN_RTO_NS:
            h.stalls += 1
            h.stall_ns += gap - rtt
            if len(h.stall_iv) < self.limits.max_retransmission_events:
                h.stall_iv.append((prev + rtt, ts))

    def _reorder_ns(self) -> int:
        """How late a hole may be filled and still be reordering: one RTT of the whole path."""
        if self.rtt_syn is not None and self.rtt_synack is not None:
            return self.rtt_syn + self.rtt_synack
        a, b = self.halves[0].rtt_min, self.halves[1].rtt_min
        # one direction's samples cover one leg only (at a capture next to a host, ~0)
        return a + b if a is not None and b is not None else DEFAULT_REORDER_NS

    def _event(
        self, h: _Sender, *, index: int, ts: int, offset: int, length: int, segment: str, kind: str,
        seen: bool, original_ts: int | None, spurious: bool, again: int | None = None,
    ) -> None:
        """Count a retransmission of ``h``'s bytes and keep its record (see ``Retransmission``)."""
        h.retx += 1
        h.retx_bytes += length if again is None else again
        if kind == "fast":
            h.fast += 1
        else:
            h.timeout += 1
        delay = None if original_ts is None else ts - original_ts
        if spurious:
            h.spurious += 1
        elif original_ts is not None:
            h.add_lost(original_ts, ts)
        if len(self.events) < self.limits.max_retransmission_events:
            self.events.append(
                Retransmission(h.d, index, ts, offset, length, segment, kind, seen, original_ts, delay, spurious)
            )
        else:
            self.hit.add("max_retransmission_events")

    # -- sent records (holding, delivering and forcing bytes: qoe.web._delivery) ------------

    def _remember(self, h: _Sender, s: int, e: int, ts: int, retx: int, payload: bytes, tcp: Any) -> None:
        """Keep a transmitted range until acknowledged (RTT, originals, copy comparison)."""
        sent = h.sent
        rec = [s, e, ts, retx, payload, ts, tcp[_HDR]]
        if not sent or sent[-1][0] < s:
            sent.append(rec)
        else:  # a hole filled: keep the list sorted
            i = bisect_right(sent, s, lo=h.sent_head, key=_start)
            sent.insert(i, rec)
            if i < h.pl_head:
                h.pl_head += 1
                rec[4] = b""
                return
        h.pl_bytes += len(payload)
        limits = self.limits
        if len(sent) - h.sent_head > limits.max_tracked_segments or h.pl_bytes > limits.max_buffered_bytes:
            self._trim_sent(h)

    def _trim_sent(self, h: _Sender) -> None:
        """Hold ``sent`` to its limits: forget the oldest records; let go of the oldest copies."""
        limits = self.limits
        sent = h.sent
        if len(sent) - h.sent_head > limits.max_tracked_segments:
            self.hit.add("max_tracked_segments")
            if h.pl_head <= h.sent_head:
                h.pl_bytes -= len(sent[h.sent_head][4])
            h.sent_head += 1
            if h.pl_head < h.sent_head:
                h.pl_head = h.sent_head
            _compact(h)
        if h.pl_bytes > limits.max_buffered_bytes:  # silently: the copies only serve comparisons
            j = h.pl_head
            while h.pl_bytes > limits.max_buffered_bytes and j < len(sent):
                h.pl_bytes -= len(sent[j][4])
                sent[j][4] = b""
                j += 1
            h.pl_head = j

    def _maybe_close(self, h: _Sender, d: int, ts: int) -> None:
        if h.closed is None and h.fin is not None and h.nxt >= h.fin:
            self._close_half(h, d, ts, "fin")
            if self.state == "open" and all(x.closed is not None for x in self.halves):
                self.state = "fin"
                self.closing.append(self)
                self._release()

    def _rst(self, ts: int) -> None:
        if self.rst_ts is None:
            self.rst_ts = ts
        for h in self.halves:
            if h.closed is None:
                self._force(h, h.high, ts)
            if h.closed is None:
                self._close_half(h, h.d, ts, "rst")
        if self.state == "open":  # after both FINs a RST only answers stray segments
            self.closing.append(self)
            self.state = "rst"
            self._release()

    def _release(self) -> None:
        """Closed: keep only what late packets need (the unacknowledged records)."""
        for h in self.halves:
            del h.sent[: h.sent_head]
            h.pl_head = max(0, h.pl_head - h.sent_head)
            h.sent_head = 0

    def end(self, how: str) -> None:
        """The reassembler lets go: flush both directions and close them for the sink."""
        ts = self.last_ts
        for h in self.halves:
            if h.closed is None:
                self._force(h, h.high if h.fin is None else h.fin, ts)
            if h.closed is None:
                self._close_half(h, h.d, ts, "fin" if h.fin is not None else "end-of-capture")
        if self.closed_how is None:
            self.closed_how = {"open": how, "fin": "fin", "rst": "rst"}[self.state]

    # -- the result --------------------------------------------------------------------------

    def result(self) -> Connection:
        c, s = self.halves
        return _make_connection(
            id=self.cid,
            client=_direction(c, self.ooo_frames[CLIENT]),
            server=_direction(s, self.ooo_frames[SERVER]),
            packets=self.packets,
            syn_ts_ns=self.syn_ts,
            synack_ts_ns=self.synack_ts,
            established_ts_ns=self.est_ts,
            first_data_ts_ns=self.first_data_ts,
            last_ts_ns=self.last_ts,
            fin_ts_ns=self.fin_ts,
            rst_ts_ns=self.rst_ts,
            rtt_syn_ns=self.rtt_syn,
            rtt_synack_ns=self.rtt_synack,
            closed=self.closed_how or "end-of-capture",
            retransmission_events=tuple(self.events),
        )

    def view(self) -> TcpView:
        """What the page model reads of the connection (:class:`TcpView`, the same values as
        :meth:`result` gives under the same names): what the streaming page passes make."""
        c, s = self.halves
        rs, rsa = self.rtt_syn, self.rtt_synack
        return _make_view(self.cid, _half(c), _half(s), self.syn_ts, self.last_ts, self.fin_ts, self.rst_ts,
                          None if rs is None or rsa is None else rs + rsa, self.closed_how or "end-of-capture",
                          tuple(self.events))


def _half(h: _Sender) -> HalfView:
    return _make_half(h.last_data_ts, h.fin_ts, h.mss, h.retx, tuple(h.stall_iv), h.rtt_count, _median(h.rtt_v),
                      h.rtt_min, h.truncated, h.first_data_ts)


def _median(v: Any) -> float | None:
    """The median of the kept RTT samples ``v`` (the mean of the middle two), None without any
    (a sort of a few samples is cheaper than numpy's median)."""
    n = len(v)
    if not n:
        return None
    o = sorted(v)
    return (o[n // 2] + o[(n - 1) // 2]) / 2


# the result records of every connection, built without a frozen __init__'s per-field
# object.__setattr__ (qoe._records): two Directions and a Connection per connection
_make_connection = builder(Connection)
_make_direction = builder(Direction)
_make_rtt = builder(RttSamples)
_make_view = builder(TcpView, positional=True)  # (fields in the order of TcpView and HalfView)
_make_half = builder(HalfView, positional=True)

_EMPTY = np.zeros(0, np.int64)
_EMPTY.setflags(write=False)




def _same(hdr: tuple[Any, ...], tcp: tuple[Any, ...]) -> bool:
    """Identical TCP headers, as far as a copy of one transmission must be (``hdr``: the
    header fields of a sent record, ``tcp[_HDR]`` of its segment row)."""
    return (
        hdr[_SEQ - _H0] == tcp[_SEQ]
        and hdr[_ACK - _H0] == tcp[_ACK]
        and hdr[_FLAGS - _H0] == tcp[_FLAGS]
        and hdr[_WIN - _H0] == tcp[_WIN]
        and hdr[_DLEN - _H0] == tcp[_DLEN]
        and hdr[_TSVAL - _H0] == tcp[_TSVAL]
        and hdr[_SACK - _H0] == tcp[_SACK]
        and hdr[_IPID - _H0] == tcp[_IPID]
    )


def _copy(rec: list[Any], tcp: tuple[Any, ...], ts: int) -> bool:
    """Is ``tcp`` the latest transmission of record ``rec`` captured a second time?

    A frame captured twice (Linux's "any" device on a router: on the way in and, after the
    queue, on the way out; span ports) repeats the header exactly, the IPv4 Identification
    included. A retransmission carries a new Identification on stacks that count it per
    packet (Linux, Windows, BSDs; RFC 6864 §4.1), and a newer TSval unless sent within the
    same tick of the sender's timestamp clock (RFC 7323 §5.4: 1 ms to 1 s; Linux: 1 ms, yet
    a real capture here shows a Linux retransmission 4.5 ms after the original with the same
    TSval and a new Identification, ``data/web/field/``); without timestamps it repeats the
    TCP header, after dup ACKs (an RTT) or its timer. So: the same header and Identification
    and, with timestamps, less than the smallest RTO (200 ms) later; without, less than
    ``DUPLICATE_NS``. Over IPv6 (no Identification), or from a stack that sends 0, a
    retransmission within the tick can still be taken for a copy, but for a SYN: Linux sends
    its SYN-ACKs with Identification 0, and a real capture (``data/video/has/sessions/
    dash-step``) holds two of them 2.4 ms apart with the same TSval, two transmissions (the
    answers to a SYN and to its retransmission; tshark: two retransmissions): a SYN without an
    Identification is a copy only within ``DUPLICATE_NS``.
    """
    strict = tcp[_TSVAL] is None or (tcp[_FLAGS] & TCP_SYN and not tcp[_IPID])
    return _same(rec[_R_HDR], tcp) and ts - rec[_R_LAST_TS] < (DUPLICATE_NS if strict else MIN_RTO_NS)


def _again(rec: list[Any], ts: int, tcp: tuple[Any, ...]) -> None:
    """Sent record ``rec`` was transmitted once more, at ``ts`` with header ``tcp``."""
    rec[_R_RETX] += 1
    rec[_R_LAST_TS] = ts
    rec[_R_HDR] = tcp[_HDR]


def _compact(h: _Sender) -> None:
    """Drop the acknowledged records at the head of ``sent`` once they are half the list."""
    i = h.sent_head
    if i > 256 and i * 2 > len(h.sent):
        del h.sent[:i]
        h.sent_head = 0
        h.pl_head = max(0, h.pl_head - i)


def _direction(h: _Sender, ooo_frames: list[int]) -> Direction:
    if len(h.rtt_v):
        ts = np.frombuffer(h.rtt_ts, dtype=np.int64).copy()
        v = np.frombuffer(h.rtt_v, dtype=np.int64).copy()
    else:
        ts = v = _EMPTY
    rtt = _make_rtt(
        ts_ns=ts,
        rtt_ns=v,
        count=h.rtt_count,
        min_ns=h.rtt_min,
        median_ns=_median(h.rtt_v),
        thinned=h.rtt_stride > 1,
    )
    return _make_direction(
        direction=h.d,
        packets=h.packets,
        data_packets=h.data_packets,
        bytes=max(h.high, min(h.acked or 0, h.fin if h.fin is not None else h.high + (h.acked or 0)), 0),
        wire_bytes=h.wire_bytes,
        delivered_bytes=h.delivered,
        missing_bytes=h.missing,
        truncated_bytes=h.truncated,
        retransmissions=h.retx,
        retransmitted_bytes=h.retx_bytes,
        fast_retransmissions=h.fast,
        timeout_retransmissions=h.timeout,
        spurious_retransmissions=h.spurious,
        out_of_order=h.ooo_count,
        out_of_order_frames=tuple(ooo_frames),
        overlaps=h.overlaps,
        overlap_conflicts=h.conflicts,
        duplicates=h.dups,
        keepalives=h.keepalives,
        time_lost_ns=h.time_lost(),
        stalls=h.stalls,
        stall_ns=h.stall_ns,
        isn=h.isn,
        mss=h.mss,
        wscale=h.wscale,
        sack_permitted=h.sack_ok,
        first_data_ts_ns=h.first_data_ts,
        last_data_ts_ns=h.last_data_ts,
        fin_ts_ns=h.fin_ts,
        closed=h.closed or "end-of-capture",
        rtt=rtt,
        stall_intervals=tuple(h.stall_iv),
    )
