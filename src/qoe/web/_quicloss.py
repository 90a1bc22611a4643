"""QUIC loss recovery as a capture shows it (RFC 9002 §6), per connection and sender.

:mod:`qoe.web.quic` records, while it decrypts a connection, what loss recovery rests on: each
packet with its packet number space, number, capture time, whether it was ack-eliciting and
the STREAM/CRYPTO bytes it carried, and each ACK frame with its time. :func:`analyse` then
replays both senders' loss detection over that record, in capture order:

* **Packet threshold** (§6.1.1): an unacknowledged packet is lost once a packet at least
  ``kPacketThreshold`` = 3 numbers later in the same space is acknowledged.
* **Time threshold** (§6.1.2): an unacknowledged packet sent before the largest acknowledged
  one is lost once it was sent more than ``loss_delay = 9/8 × max(smoothed_rtt, latest_rtt)``
  (at least ``kGranularity`` = 1 ms) ago: at an ACK's arrival, or when the loss timer
  (§6.1.2: set for the rest of that time) would have fired, seen as the sender's next packet
  or the end of the capture. Appendix A.10 (``DetectAndRemoveLostPackets``) is the rule;
  every packet of the space is checked, as A.5 keeps every sent packet.
* **PTO** (§6.2.1): ``PTO = smoothed_rtt + max(4 × rttvar, kGranularity) + max_ack_delay``
  (``max_ack_delay`` for the application data space only, and 0 before the handshake is
  confirmed: §6.2.1), doubled at each consecutive expiry, ``kInitialRtt`` = 333 ms before
  any RTT sample (§6.2.2). A *PTO event* is a sender's ack-eliciting packet sent while it had
  ack-eliciting packets in flight, after neither sending one nor receiving an ACK for longer
  than its PTO: the probe of §6.2.4. (Chromium arms its handshake timer earlier than the RFC:
  its earlier probes are retransmissions, not PTO events here.)
* The sender's RTT (§5, the same steps as :mod:`qoe.web._quicrtt`) on its own clock. The
  capture point lies on the path: a packet passes it a one-way leg after its sender sent it,
  an ACK reaches the sender a leg after it passed. The sender's elapsed time between sending a
  packet and receiving an ACK is the capture's plus the RTT of the leg between the capture
  point and that sender (the other side's ACKs measure it: the least sample less the ACK Delay
  they report, :class:`~qoe.web._quicrtt.AckRtt`'s ``min_adjusted``), and its silence after an
  ACK the capture's minus that leg.

What a capture point cannot see and how it is read:

* Packets the far sender sent that were lost before the capture point never appear: their
  numbers are the gaps in that sender's packet numbers (numbers are never reused, RFC 9000
  §12.3), taken as packets sent at the capture time of the next packet seen (the latest
  they can have passed) whose content is unknown. Gaps in the near sender's numbers (the side
  with the shorter leg, whose every packet passes the capture point) are numbers it skipped
  (RFC 9000 §21.4 allows it; Chromium does it), counted as ``skipped_packet_numbers``. A leg
  no longer than the timer granularity (1 ms: the same host, a loopback) makes both sides near.
* **Retransmitted bytes** are STREAM (and CRYPTO) bytes a sender sends at offsets it had sent
  before: offsets seen already, or below the highest offset it had sent on that stream (a
  hole: bytes sent in a packet the capture point never saw; senders send a stream's new bytes
  in offset order). Each retransmission costs its bytes the time from their first chance at
  the capture point (the earlier copy, or when bytes beyond them first passed: the hole
  appeared) to the retransmission, as TCP's retransmissions do (``qoe.web.tcp``:
  ``Retransmission.original_ts_ns``); a *spurious* one re-sent bytes of a packet the receiver
  acknowledged (before or after: RFC 9002 §6.1's spurious retransmission), or a far sender's
  copy that passed the capture point towards the near side, next to it: the bytes had arrived
  and sending them again cost nothing (a sender's early probe on a slow path, an ACK lost or
  queued on the way back).

References
----------
.. [1] RFC 9002, "QUIC Loss Detection and Congestion Control" (2021): §5 (RTT), §6.1
   (acknowledgment-based detection), §6.2 (probe timeout), Appendix A (pseudocode).
.. [2] RFC 9000, "QUIC: A UDP-Based Multiplexed and Secure Transport" (2021): §2.2 (stream
   offsets), §12.3 (packet numbers), §13.2.1 (ack-eliciting), §19.3 (ACK), §21.4 (skipped
   packet numbers).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, replace
from typing import Any

from qoe.report import as_dict
from qoe.web._quicrtt import AckRtt

__all__ = ["QuicLoss", "QuicRetransmission", "LossRecord", "analyse",
           "K_PACKET_THRESHOLD", "K_TIME_THRESHOLD", "K_GRANULARITY_NS", "K_INITIAL_RTT_NS"]

#: RFC 9002 §6.1.1: kPacketThreshold.
K_PACKET_THRESHOLD = 3
#: RFC 9002 §6.1.2: kTimeThreshold = 9/8 (as a ratio).
K_TIME_THRESHOLD = (9, 8)
#: RFC 9002 §6.1.2: kGranularity, 1 ms.
K_GRANULARITY_NS = 1_000_000
#: RFC 9002 §6.2.2: kInitialRtt, 333 ms.
K_INITIAL_RTT_NS = 333_000_000
_APP = 2  # RFC 9000 §12.3: the application data space
_MAX_PACKETS = 200_000  # packets recorded per connection (beyond: a note, recovery not followed)
_IN_FLIGHT, _ACKED, _LOST, _DISCARDED = 0, 1, 2, 3


@dataclass(frozen=True, slots=True)
class QuicRetransmission:
    """Bytes a QUIC sender sent again (see the module notes).

    Attributes
    ----------
    ts_ns : int
        Capture time of the packet that carried them again.
    space : int
        Packet number space (0 Initial, 1 Handshake, 2 application data).
    packet_number : int
    stream_id : int or None
        The stream (None: CRYPTO bytes).
    offset, length : int
    original_seen : bool
        The earlier copy passed the capture point (else it was lost before it: a hole).
    original_ts_ns : int
        The bytes' first chance at the capture point.
    spurious : bool
        The earlier copy's packet was acknowledged (before or after this one), or it was the
        far sender's and passed the capture point: the bytes had arrived, and sending them
        again cost nothing.
    """

    ts_ns: int
    space: int
    packet_number: int
    stream_id: int | None
    offset: int
    length: int
    original_seen: bool
    original_ts_ns: int
    spurious: bool

    def to_dict(self) -> dict[str, Any]:
        return as_dict(self)


@dataclass(frozen=True, slots=True)
class QuicLoss:
    """One sender's loss recovery on one QUIC connection, as the capture shows it.

    Attributes
    ----------
    direction : {"client", "server"}
        The sender.
    packets : int
        QUIC packets it sent that passed the capture point and were decrypted (coalesced
        packets counted one by one).
    unseen_packets : int
        Packet numbers missing from the far sender's sequence: packets lost before the
        capture point.
    skipped_packet_numbers : int
        Packet numbers missing from the near sender's sequence (skipped, RFC 9000 §21.4).
    lost_packets : int
        Packets declared lost by the rules of RFC 9002 §6.1 (seen or unseen); of them
        ``lost_by_packet_threshold`` and ``lost_by_time_threshold`` (the packet threshold
        wins when both hold).
    spurious_losses : int
        Packets declared lost and acknowledged afterwards (RFC 9002 §6.1: a late ACK).
    lost_stream_bytes : int
        STREAM bytes the lost packets that passed the capture point carried.
    retransmissions : int
        STREAM/CRYPTO frames that carried bytes again; ``spurious_retransmissions`` of them
        re-sent acknowledged bytes only.
    retransmitted_stream_bytes, retransmitted_crypto_bytes : int
        The bytes they carried again (each time).
    pto_events : int
        Probes sent after the sender's probe timeout expired (RFC 9002 §6.2).
    time_lost_ns : int
        Length of the union of the intervals ``[original_ts_ns, ts_ns]`` of the
        non-spurious retransmissions (as TCP's ``Direction.time_lost_ns``).
    retransmission_events : tuple of QuicRetransmission
    pto_intervals : tuple of (int, int)
        Per PTO event, at the capture point: (the start of the sender's silence, the probe).
    lost : tuple of (int, int, bool)
        The packets declared lost: (space, packet number, passed the capture point).
    """

    direction: str
    packets: int
    unseen_packets: int
    skipped_packet_numbers: int
    lost_packets: int
    lost_by_packet_threshold: int
    lost_by_time_threshold: int
    spurious_losses: int
    lost_stream_bytes: int
    retransmissions: int
    spurious_retransmissions: int
    retransmitted_stream_bytes: int
    retransmitted_crypto_bytes: int
    pto_events: int
    time_lost_ns: int
    retransmission_events: tuple[QuicRetransmission, ...] = ()
    pto_intervals: tuple[tuple[int, int], ...] = ()
    lost: tuple[tuple[int, int, bool], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return as_dict(self)


class LossRecord:
    """What one connection's decryption records for :func:`analyse` (in capture order)."""

    __slots__ = ("events", "full")

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.full = False

    def packet(self, direction: int, space: int, pn: int, ts: int, eliciting: bool,
               data: list[tuple[int | None, int, int]]) -> None:
        """A decrypted packet: ``data`` its (stream id or None for CRYPTO, offset, end) ranges."""
        if len(self.events) >= _MAX_PACKETS * 2:
            self.full = True
            return
        self.events.append(("p", ts, direction, space, pn, eliciting, data))

    def ack(self, direction: int, space: int, ts: int, ranges: Any, ack_delay: int) -> None:
        """An ACK frame sent by ``direction`` (aioquic's RangeSet and encoded ACK Delay)."""
        if not self.full:
            self.events.append(("a", ts, direction, space, [(r.start, r.stop) for r in ranges], ack_delay))

    def confirmed(self, ts: int) -> None:
        """The handshake is confirmed (HANDSHAKE_DONE, RFC 9001 §4.1.2)."""
        self.events.append(("c", ts))


class _Sent:
    __slots__ = ("ts", "eliciting", "seen", "state", "acked_ts", "lost_ts", "lost_by_pn", "stream_bytes", "claimed")

    def __init__(self, ts: int, eliciting: bool, seen: bool, stream_bytes: int) -> None:
        self.ts, self.eliciting, self.seen, self.state = ts, eliciting, seen, _IN_FLIGHT
        self.acked_ts: int | None = None
        self.lost_ts: int | None = None  # when declared lost (the sender's clock)
        self.lost_by_pn = False
        self.claimed: int | None = None  # the packet taken as carrying its stream bytes again (unseen ones)
        self.stream_bytes = stream_bytes


class _Ranges:
    """First copies of one stream's (or CRYPTO space's) bytes: disjoint [start, end) by start."""

    __slots__ = ("starts", "ends", "meta", "top", "top_ts", "last_pn")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.meta: list[tuple[int, int, int]] = []  # (ts, space, pn) of the copy
        self.top = 0  # highest offset sent + 1
        self.top_ts: list[tuple[int, int]] = []  # (offset reached, when): when bytes beyond x first passed
        self.last_pn = -1  # the packet that last carried new bytes of it

    def beyond(self, offset: int) -> int:
        """When bytes beyond ``offset`` first passed the capture point."""
        k = bisect_right(self.top_ts, (offset, 1 << 62))
        return self.top_ts[k][1] if k < len(self.top_ts) else self.top_ts[-1][1]

    def add(self, a: int, b: int, ts: int, space: int, pn: int, holes: bool) -> list[tuple[int, int, bool, Any]]:
        """Record [a, b); the parts sent before: (start, end, seen, (ts, space, pn) or hole time).

        ``holes``: bytes below the highest offset sent that never passed count as sent before
        (the far sender's; the near one's pass the capture point in the order it sent them).
        """
        if a >= self.top:  # beyond every byte sent before (a stream's next bytes: the common case)
            if a < b:
                self.starts.append(a)
                self.ends.append(b)
                self.meta.append((ts, space, pn))
                self.last_pn = pn
            if b > self.top:
                self.top = b
                self.top_ts.append((b, ts))
            return []
        out: list[tuple[int, int, bool, Any]] = []
        pos = a
        k = bisect_right(self.ends, a)
        new: list[tuple[int, int]] = []
        while pos < b:
            if k < len(self.starts) and self.starts[k] <= pos:
                e = min(b, self.ends[k])
                out.append((pos, e, True, self.meta[k]))
                pos = e
                k += 1
                continue
            nxt = min(b, self.starts[k]) if k < len(self.starts) else b
            hole_end = min(nxt, self.top)
            if holes and pos < hole_end:  # below what was sent: a hole (its first copy never passed)
                out.append((pos, hole_end, False, self.beyond(pos)))
            if pos < nxt:
                new.append((pos, nxt))
            pos = nxt
        for s, e in new:
            i = bisect_right(self.starts, s)
            self.starts.insert(i, s)
            self.ends.insert(i, e)
            self.meta.insert(i, (ts, space, pn))
        if b > self.top:
            self.top = b
            self.top_ts.append((b, ts))
        if new:
            self.last_pn = pn
        return out


class _AckRanges:
    """The face of aioquic's RangeSet that :meth:`AckRtt.ack` reads, over (start, stop) pairs."""

    __slots__ = ("rs", "lo", "hi")

    def __init__(self, rs: list[tuple[int, int]]) -> None:
        self.rs = rs
        # one range (most ACK frames): its bounds, compared without a generator
        self.lo, self.hi = rs[0] if len(rs) == 1 else (None, None)

    def __len__(self) -> int:
        return len(self.rs)

    def __contains__(self, pn: int) -> bool:
        if self.lo is not None:
            return self.lo <= pn < self.hi  # type: ignore[operator]
        return any(a <= pn < b for a, b in self.rs)

    def bounds(self) -> range:
        return range(min(a for a, _ in self.rs), max(b for _, b in self.rs))


class _Sender:
    def __init__(self, direction: int, leg: int, near: bool, exponent: int, max_ack_delay: int) -> None:
        self.direction, self.leg, self.near = direction, leg, near
        self.sent: list[dict[int, _Sent]] = [{}, {}, {}]
        # per space, in packet number order: the packets in flight, and those declared lost and not
        # acknowledged since (what an ACK can still change; RFC 9002 A.10 walks the former)
        self.flight: list[dict[int, _Sent]] = [{}, {}, {}]
        self.lost_open: list[dict[int, _Sent]] = [{}, {}, {}]
        self.largest_pn = [-1, -1, -1]
        self.largest_acked = [-1, -1, -1]
        self.rtt = AckRtt()
        self.rtt.exponent, self.rtt.max_ack_delay = exponent, max_ack_delay
        self.ranges: dict[tuple[int, int | None], _Ranges] = {}
        self.packets = self.unseen = self.skipped = 0
        self.lost = self.by_pn = self.by_time = self.spurious_losses = self.lost_stream_bytes = 0
        self.events: list[QuicRetransmission] = []
        self.lost_list: list[tuple[int, int]] = []
        self.origins: list[_Sent | None] = []  # per event: the packet of the earlier copy, when known
        self.pto: list[tuple[int, int]] = []
        self.last_eliciting: int | None = None  # sender's clock = capture time of its packets
        self.last_ack: int | None = None  # the sender's clock
        self.pto_count = 0
        self.in_flight = 0  # ack-eliciting packets neither acknowledged nor lost
        self.probing = False  # the last ack-eliciting packet was a probe, no ACK since

    # RFC 9002 §6.1.2
    def loss_delay(self) -> int:
        r = self.rtt
        base = max(r.smoothed if r.smoothed is not None else K_INITIAL_RTT_NS, r.latest or 0)
        return max(base * K_TIME_THRESHOLD[0] // K_TIME_THRESHOLD[1], K_GRANULARITY_NS)

    # RFC 9002 §6.2.1
    def pto_ns(self, space: int) -> int:
        r = self.rtt
        smoothed = r.smoothed if r.smoothed is not None else K_INITIAL_RTT_NS
        rttvar = r.rttvar if r.rttvar is not None else K_INITIAL_RTT_NS // 2
        pto = smoothed + max(4 * rttvar, K_GRANULARITY_NS)
        if space == _APP and r.confirmed:
            pto += r.max_ack_delay
        return pto << min(self.pto_count, 16)

    def detect(self, space: int, now: int) -> None:
        """RFC 9002 Appendix A.10 at the sender's time ``now``."""
        largest = self.largest_acked[space]
        flight = self.flight[space]
        if largest < 0 or not flight or next(iter(flight)) > largest:
            return  # nothing in flight at or below the largest acknowledged (the common case)
        lost_before = now - self.loss_delay()
        gone = []
        for pn, p in flight.items():
            if pn > largest:
                break  # in packet number order
            by_pn = largest >= pn + K_PACKET_THRESHOLD  # §6.1.1
            if by_pn or p.ts <= lost_before:  # §6.1.2
                gone.append(pn)
                self.lost_open[space][pn] = p
                p.state, p.lost_ts, p.lost_by_pn = _LOST, now, by_pn
                self.lost_list.append((space, pn))
                self.in_flight -= p.eliciting
                self.lost += 1
                self.lost_stream_bytes += p.stream_bytes
                if by_pn:
                    self.by_pn += 1
                else:
                    self.by_time += 1
        for pn in gone:
            del flight[pn]

    def timer(self, now: int) -> None:
        """The loss timer (§6.1.2) would have fired by ``now`` (sender's clock)."""
        for space in range(3):
            flight = self.flight[space]
            if flight and 0 <= next(iter(flight)) <= self.largest_acked[space]:
                self.detect(space, now)  # (else nothing it could declare lost: the call saved)

    def packet(self, ts: int, space: int, pn: int, eliciting: bool, data: list[tuple[int | None, int, int]]) -> None:
        self.timer(ts)
        sent = self.sent[space]
        if pn in sent and not sent[pn].seen:  # an unseen number arrives after all (reordered)
            p = sent[pn]
            if p.state == _IN_FLIGHT and not eliciting:
                self.in_flight -= 1
            p.ts, p.eliciting, p.seen = ts, eliciting, True
            self.unseen -= 1
        else:
            for gap in range(self.largest_pn[space] + 1, pn):
                if any(gap in self.sent[o] for o in range(3) if o != space):
                    continue  # numbered in another space: one counter for all (aioquic, Chromium)
                if self.near:
                    self.skipped += 1
                else:
                    self.unseen += 1
                    sent[gap] = self.flight[space][gap] = _Sent(ts, True, False, 0)  # content unknown: ack-eliciting
                    self.in_flight += 1
            for o in range(3) if self.unseen else ():  # a number first taken for a gap of another space
                q = self.sent[o].get(pn) if o != space else None
                if q is not None and not q.seen:
                    del self.sent[o][pn]
                    self.flight[o].pop(pn, None)
                    self.lost_open[o].pop(pn, None)
                    self.unseen -= 1
                    self.in_flight -= q.state == _IN_FLIGHT
                    if q.state == _LOST:
                        self.lost_list.remove((o, pn))
                        self.lost -= 1
                        self.by_pn -= q.lost_by_pn
                        self.by_time -= not q.lost_by_pn
            stream_bytes = 0
            for sid, o, e in data:
                if sid is not None:
                    stream_bytes += e - o
            sent[pn] = self.flight[space][pn] = _Sent(ts, eliciting, True, stream_bytes)
            self.in_flight += eliciting
        self.largest_pn[space] = max(self.largest_pn[space], pn)
        self.packets += 1
        self.rtt.sent_packet(space, pn, ts, eliciting)
        quiet_since, last_ack = self.last_eliciting, self.last_ack
        if last_ack is not None and (quiet_since is None or last_ack > quiet_since):
            quiet_since = last_ack
        timer_expired = False
        if eliciting:
            if self.in_flight > (1 if sent[pn].state == _IN_FLIGHT else 0) and quiet_since is not None:
                expiry = quiet_since + self.pto_ns(space)  # §6.2.1: armed at the last send or ACK
                timer_expired = ts >= expiry
            self.last_eliciting = ts
        resent_unresolved = False
        for sid, a, b in data:
            key = (space if sid is None else -1, sid)
            r = self.ranges.get(key)
            if r is None:
                r = self.ranges[key] = _Ranges()
            prev = r.last_pn
            for s, e, seen, meta in r.add(a, b, ts, space, pn, not self.near):
                o = None
                if seen:
                    o_ts, o_space, o_pn = meta
                    o = self.sent[o_space].get(o_pn)
                    if o is not None and o.state == _IN_FLIGHT:
                        resent_unresolved = True  # neither acknowledged nor lost: only a probe re-sends it
                else:
                    o_ts = meta
                self.events.append(QuicRetransmission(ts, space, pn, sid, s, e - s, seen, min(o_ts, ts), False))
                self.origins.append(o)
            if not self.near and a == r.top - (b - a) and a > 0 and prev >= 0:
                u = self._tail(space, prev, pn, ts)
                if u is not None:
                    self.events.append(QuicRetransmission(ts, space, pn, sid, a, b - a, False, min(u.ts, ts), False))
                    self.origins.append(u)
        if not self.near and self.lost_open[space] and any(sid is not None for sid, _, _ in data):
            for u in self.lost_open[space].values():  # the first stream packet after a loss closes its claims
                if not u.seen and u.state == _LOST and u.claimed is None and u.lost_ts is not None and u.lost_ts <= ts:
                    u.claimed = -1
        if eliciting:
            self._probe(ts, quiet_since, timer_expired, resent_unresolved)

    def _probe(self, ts: int, quiet_since: int | None, timer_expired: bool, resent_unresolved: bool) -> None:
        """A PTO event (module notes): the timer expired, or bytes in flight sent again."""
        if not (timer_expired or resent_unresolved):
            self.probing = False
            return
        if self.probing:
            return  # the same expiry's second probe (RFC 9002 §6.2.4: up to two)
        self.probing = True
        self.pto.append((quiet_since if quiet_since is not None else ts, ts))
        self.pto_count += 1  # §6.2.1: the next PTO is doubled

    def _tail(self, space: int, prev: int, pn: int, ts: int) -> _Sent | None:
        """A stream's next bytes in packet ``pn`` after a packet lost before the capture point.

        When an unseen packet numbered between the stream's previous bytes (packet ``prev``)
        and these was declared lost before this packet was sent, these bytes are taken as its
        content sent again (senders send a stream's bytes in order and lost bytes first, RFC
        9000 §13.3): the tail of a stream lost before the capture point, which no offset
        shows. Returns the lost packet (its time: the estimated passage), else None.
        """
        for k, u in self.lost_open[space].items():
            if prev < k < pn and not u.seen and u.lost_ts is not None and u.lost_ts <= ts \
                    and u.claimed in (None, pn):
                u.claimed = pn  # only the first packet with stream bytes after the loss carries it again
                return u
        return None

    def ack(self, ts: int, space: int, ranges: list[tuple[int, int]], ack_delay: int) -> None:
        """An ACK of this sender's packets passed the capture point at ``ts``."""
        now = ts + self.leg  # the sender's clock (module notes)
        if not ranges:
            return
        self.rtt.ack(space, now, _AckRanges(ranges), ack_delay)
        largest = max(b for _, b in ranges) - 1
        lowest = min(a for a, _ in ranges)
        one = len(ranges) == 1  # (then [lowest, largest] is the range: no generator per packet)
        newly = False
        for group in (self.flight[space], self.lost_open[space]):
            done = []
            for pn, p in group.items():
                if pn > largest:
                    break
                if pn < lowest and group is self.lost_open[space]:
                    done.append(pn)  # below what the receiver still reports: no longer acknowledged
                    continue
                if one:
                    if pn < lowest:
                        continue
                elif not any(a <= pn < b for a, b in ranges):
                    continue
                if p.state == _LOST:
                    self.spurious_losses += 1
                else:
                    self.in_flight -= p.eliciting
                p.state, p.acked_ts = _ACKED, ts
                done.append(pn)
                newly = True
            for pn in done:
                del group[pn]
        if largest > self.largest_acked[space]:
            self.largest_acked[space] = largest
        if newly:
            self.pto_count = 0  # RFC 9002 A.7
            self.last_ack = now
            self.probing = False
        self.detect(space, now)

    def discard(self, space: int) -> None:
        """Keys of ``space`` discarded (RFC 9001 §4.9): its packets leave flight, neither
        acknowledged nor lost (RFC 9002 §6.4)."""
        for p in self.flight[space].values():
            self.in_flight -= p.eliciting
            p.state = _DISCARDED
        self.flight[space].clear()
        self.lost_open[space].clear()
        self.largest_acked[space] = -1

    def result(self, name: str) -> QuicLoss:
        # the earlier copy arrived: acknowledged, or (the far sender's) it passed the capture point,
        # next to the receiver (what passes it towards the near side arrives: module notes)
        ev = tuple(replace(e, spurious=True) if o is not None and (o.state == _ACKED or (not self.near and o.seen))
                   else e for e, o in zip(self.events, self.origins))
        ivs = sorted((e.original_ts_ns, e.ts_ns) for e in ev if not e.spurious and e.ts_ns > e.original_ts_ns)
        total, end = 0, None
        for a, b in ivs:
            if end is None or a > end:
                total += b - a
                end = b
            elif b > end:
                total += b - end
                end = b
        return QuicLoss(
            direction=name, packets=self.packets, unseen_packets=self.unseen, skipped_packet_numbers=self.skipped,
            lost_packets=self.lost, lost_by_packet_threshold=self.by_pn, lost_by_time_threshold=self.by_time,
            spurious_losses=self.spurious_losses, lost_stream_bytes=self.lost_stream_bytes,
            retransmissions=len(ev), spurious_retransmissions=sum(e.spurious for e in ev),
            retransmitted_stream_bytes=sum(e.length for e in ev if e.stream_id is not None),
            retransmitted_crypto_bytes=sum(e.length for e in ev if e.stream_id is None),
            pto_events=len(self.pto), time_lost_ns=total, retransmission_events=ev, pto_intervals=tuple(self.pto),
            lost=tuple((sp, pn, self.sent[sp][pn].seen) for sp, pn in self.lost_list if pn in self.sent[sp]))


def _event_ts(ev: tuple[Any, ...]) -> int:
    return ev[1]


def analyse(record: LossRecord, legs: tuple[int | None, int | None], params: tuple[AckRtt, AckRtt]
            ) -> tuple[QuicLoss, QuicLoss]:
    """Both senders' loss recovery (client, server) from one connection's record.

    ``legs``: the RTT of the leg between the capture point and each side (client, server),
    None when unknown (0 taken); ``params``: per side, the :class:`AckRtt` that carries its
    peer's ACK Delay exponent and ``max_ack_delay`` (the one measuring that side's packets).
    """
    lc, ls = (x or 0 for x in legs)
    # the far side: the longer leg, if longer than the timer granularity (on one host, or a
    # loopback, both sides are near: nothing is lost between them and the capture point)
    far_client, far_server = lc > ls and lc > K_GRANULARITY_NS, ls > lc and ls > K_GRANULARITY_NS
    senders = (_Sender(0, lc, not far_client, params[0].exponent, params[0].max_ack_delay),
               _Sender(1, ls, not far_server, params[1].exponent, params[1].max_ack_delay))
    last = 0
    initial_gone = False
    for ev in sorted(record.events, key=_event_ts):  # stable: 0-RTT packets opened late go in their place
        kind, ts = ev[0], ev[1]
        last = max(last, ts)
        if kind == "p":
            _, _, direction, space, pn, eliciting, data = ev
            if space == 1 and direction == 0 and not initial_gone:  # RFC 9001 §4.9.1
                initial_gone = True
                for s in senders:
                    s.discard(0)
            senders[direction].packet(ts, space, pn, eliciting, data)
        elif kind == "a":
            _, _, direction, space, ranges, delay = ev
            senders[1 - direction].ack(ts, space, ranges, delay)
        else:  # the handshake is confirmed: Handshake keys go (RFC 9001 §4.9.2)
            for s in senders:
                s.rtt.confirmed = True
                s.discard(1)
    for s in senders:
        s.timer(last + s.leg)
    return senders[0].result("client"), senders[1].result("server")
