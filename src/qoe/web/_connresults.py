"""What :func:`qoe.web.tcp.connections` returns: connections, directions, RTT samples, retransmissions.

Frozen records built once per connection when the reassembler lets go of it (documented,
with the definitions behind every number, in :mod:`qoe.web.tcp`).

References
----------
.. [1] RFC 9293, "Transmission Control Protocol (TCP)", §3.4 (sequence numbers), §3.10.7.
.. [2] RFC 6298, "Computing TCP's Retransmission Timer", §3 (Karn's algorithm).
.. [3] RFC 5681, "TCP Congestion Control", §3.2 (fast retransmit after 3 duplicate ACKs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from qoe.report import as_dict
from qoe.web._sink import CLIENT, SERVER, ConnectionId

__all__ = ["TcpLimits", "RttSamples", "Retransmission", "Direction", "Connection"]


@dataclass(frozen=True, slots=True)
class TcpLimits:
    """Bounds on what TCP reassembly holds in memory (documented defaults, all configurable).

    Crossing a bound never stops the analysis: the reassembler does what the attribute
    says, the result is partial in that respect, and one :class:`~qoe.errors.QoEWarning`
    per kind of bound says how many connections crossed it.

    Attributes
    ----------
    max_buffered_bytes : int
        Per direction: payload bytes held (out-of-order bytes waiting for a hole to be
        filled, and bytes kept until acknowledged to compare retransmitted copies with).
        When the out-of-order bytes alone exceed it, the oldest holes are given to the sink
        as gaps and the bytes after them delivered (a warning); bytes kept only for the
        comparison are let go first, silently (their copies are then not compared).
        Default 4 MiB.
    max_connections : int
        Connections tracked at once (live ones and closed ones within ``close_delay_s``).
        One more evicts the least recently active connection: it is closed for its sink
        as ``"end-of-capture"`` and reported with ``closed="evicted"`` (a warning).
        Default 65536.
    max_tracked_segments : int
        Per direction: transmitted segments remembered until acknowledged (for RTT samples,
        the original transmission time of a retransmission, and the copy comparison).
        The oldest are forgotten beyond it (a warning): no RTT sample or original time
        for them. Default 4096.
    max_rtt_samples : int
        Per direction: RTT samples kept. Beyond it the kept samples are thinned to every
        second one and later samples kept at the new stride (a warning); ``count`` and
        ``min_ns`` stay exact, ``median_ns`` is the median of the kept samples.
        Default 10000.
    max_retransmission_events : int
        Per connection: :class:`Retransmission` records kept; later ones are counted in
        the :class:`Direction` totals but not listed (a warning). Default 10000.
    close_delay_s : float
        How long (capture time) a closed connection (both FINs, or a RST) stays tracked
        for its late packets (the last ACK, FINs repeated on the retransmission timer:
        RFC 6298 §5.5 doubles it from 1 s, so 1 + 2 s) before its result is final and its
        memory freed. A later packet of its 4-tuple without SYN starts a new connection
        (``initiator_known=False``); a new SYN on it starts one at once whatever this is.
        Default 5 s (Zeek's ``tcp_close_delay`` has the same job and value). TCP's own
        TIME-WAIT (2 MSL = 4 minutes: RFC 9293 §3.4, §3.6) protects hosts from old
        duplicates and is much longer than a capture needs.
    """

    max_buffered_bytes: int = 4 * 1024 * 1024
    max_connections: int = 65536
    max_tracked_segments: int = 4096
    max_rtt_samples: int = 10000
    max_retransmission_events: int = 10000
    close_delay_s: float = 5.0

    def to_dict(self) -> dict[str, Any]:
        return as_dict(self)


@dataclass(frozen=True, slots=True, eq=False)
class RttSamples:
    """Round-trip time samples of one direction's data, and their summary.

    A sample is taken when an ACK from the receiver acknowledges new data up to exactly
    the end of a data segment (or SYN, or FIN) of this direction, and none of the newly
    acknowledged segments was ever retransmitted (Karn's rule, RFC 6298 §3): the time
    from that segment passing the capture point to the ACK passing it. It measures the
    path from the capture point to the *receiver* of this direction and back, plus the
    receiver's ACK delay (delayed ACKs, RFC 9293 §3.8.6.3).

    Attributes
    ----------
    ts_ns : numpy.ndarray of int64
        Capture time of the ACK that gave each kept sample.
    rtt_ns : numpy.ndarray of int64
        The samples, ns.
    count : int
        Samples taken (more than kept when thinned at ``TcpLimits.max_rtt_samples``).
    min_ns : int or None
        Smallest sample (exact even when thinned); None without samples.
    median_ns : float or None
        Median of the kept samples; None without samples.
    thinned : bool
        True when samples were thinned at the limit.
    """

    ts_ns: np.ndarray
    rtt_ns: np.ndarray
    count: int
    min_ns: int | None
    median_ns: float | None
    thinned: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "min_ns": self.min_ns,
            "median_ns": self.median_ns,
            "thinned": self.thinned,
            "samples": [[int(t), int(r)] for t, r in zip(self.ts_ns, self.rtt_ns)],
        }


@dataclass(frozen=True, slots=True)
class Retransmission:
    """One segment that carried bytes again (or late), as the capture point saw it.

    Attributes
    ----------
    direction : int
        :data:`~qoe.web.tcp.CLIENT` or :data:`~qoe.web.tcp.SERVER`: who sent it.
    frame : int
        Frame number of the retransmission (Wireshark's numbering, ``Packet.index``).
    ts_ns : int
        Its capture time.
    offset, length : int
        The bytes it carried: stream offset (as the sink's; -1 for a SYN) and length
        (sequence space: a SYN or a FIN counts 1).
    segment : {"data", "syn", "fin"}
        What was retransmitted.
    kind : {"fast", "timeout"}
        ``"timeout"``: no ACK from the receiver passed the capture point within one path
        RTT + 200 ms before it (the sender's timer, RFC 6298 §5, or a tail-loss probe,
        RFC 8985 §7), or a SYN. ``"fast"``: the receiver had signalled the loss (3
        duplicate ACKs, RFC 5681 §3.2; a SACK block above it, RFC 6675 §5; an ACK of a
        segment sent after its original, RFC 8985 §6.2), or it lies in a recovery episode
        that a fast one started. Full rules: :mod:`qoe.web.tcp`.
    original_seen : bool
        True when these bytes passed the capture point before (the copy was lost after
        it, or the retransmission is spurious); False when the original never passed it
        (lost before the capture point) and this segment filled a hole.
    original_ts_ns : int or None
        When the bytes had their first chance at the capture point: the original
        transmission if seen, else when the capture point first saw bytes beyond them
        (the hole appeared); None when no longer known (already acknowledged and let go).
    delay_ns : int or None
        ``ts_ns - original_ts_ns``: what the retransmission cost these bytes (how much
        later they passed the capture point than their first chance).
    spurious : bool
        The receiver had acknowledged every byte of it before it passed the capture
        point: it cost nothing (left out of ``Direction.time_lost_ns``).
    """

    direction: int
    frame: int
    ts_ns: int
    offset: int
    length: int
    segment: str
    kind: str
    original_seen: bool
    original_ts_ns: int | None
    delay_ns: int | None
    spurious: bool

    def to_dict(self) -> dict[str, Any]:
        return as_dict(self)


@dataclass(frozen=True, slots=True)
class Direction:
    """What one side of a connection sent, as the capture point saw it.

    Attributes
    ----------
    direction : int
        :data:`~qoe.web.tcp.CLIENT` (the initiator's bytes) or :data:`~qoe.web.tcp.SERVER`.
    packets : int
        Segments sent by this side (every one, pure ACKs included).
    data_packets : int
        Segments with payload (``TcpInfo.data_len > 0``), retransmissions included.
    bytes : int
        Length of the byte stream: offset of the highest byte seen or acknowledged, + 1
        (each byte once; missing bytes included).
    wire_bytes : int
        Payload bytes of every segment (retransmitted bytes counted each time).
    delivered_bytes : int
        Bytes given to the sink as data.
    missing_bytes : int
        Bytes given as gaps because the capture never held them (lost before the
        capture point and never retransmitted, the capture started late, or a limit).
    truncated_bytes : int
        Bytes given as gaps because the snap length cut them off (``data_len`` longer
        than the captured payload).
    retransmissions : int
        Retransmission events (segments; :class:`Retransmission`).
    retransmitted_bytes : int
        Bytes (sequence space: SYN and FIN count 1) they carried again: not the new bytes
        an overlapping one also carried, nor those of a reordered original.
    fast_retransmissions, timeout_retransmissions, spurious_retransmissions : int
        Events by kind (a spurious one is also fast or timeout).
    out_of_order : int
        Segments that filled a hole and were judged reordered originals, not
        retransmissions (see the module notes).
    out_of_order_frames : tuple of int
        Their frame numbers (at most ``TcpLimits.max_retransmission_events``).
    overlaps : int
        Segments that carried both bytes seen before and bytes never seen.
    overlap_conflicts : int
        Segments whose bytes seen before differ from the copy held (first copy wins).
    duplicates : int
        Segments with payload, SYN or FIN captured a second time (the same header as their
        latest transmission, TSval included, less than 200 ms later; without timestamps less
        than 1 ms later): not retransmissions. Pure ACKs captured twice are not told apart.
    keepalives : int
        Keep-alive and zero-window probes (RFC 9293 §3.8.4, §3.8.6.1): not retransmissions.
    time_lost_ns : int
        Time during which bytes were late because of loss: the length of the union of
        the intervals ``[original_ts_ns, ts_ns]`` of the non-spurious retransmissions.
    stalls, stall_ns : int
        Silences of this sender mid-transfer longer than an RTO (path RTT + 200 ms) while
        its peer sent no data, and their length beyond one path RTT: as a rule a timeout
        after the tail of a flight was lost before the capture point, whose
        retransmission the capture cannot tell from new data (an application that pauses
        mid-response looks the same).
    stall_intervals : tuple of (int, int)
        ``(start, end)`` capture times of each stall's cost (from one path RTT after the
        sender's last data to its next), the first ``TcpLimits.max_retransmission_events``.
    isn : int or None
        Initial sequence number (raw), when the SYN was captured.
    mss, wscale : int or None
        Options of the SYN (RFC 9293 §3.2, RFC 7323 §2).
    sack_permitted : bool
        SACK-permitted in the SYN (RFC 2018 §2).
    first_data_ts_ns, last_data_ts_ns : int or None
        First and last segment with payload.
    fin_ts_ns : int or None
        First FIN of this side.
    closed : str
        How the byte stream ended for the sink: ``"fin"``, ``"rst"`` or
        ``"end-of-capture"`` (also used when evicted at a limit).
    rtt : RttSamples
        RTT samples of this side's data (the path capture point → receiver → capture point).
    """

    direction: int
    packets: int
    data_packets: int
    bytes: int
    wire_bytes: int
    delivered_bytes: int
    missing_bytes: int
    truncated_bytes: int
    retransmissions: int
    retransmitted_bytes: int
    fast_retransmissions: int
    timeout_retransmissions: int
    spurious_retransmissions: int
    out_of_order: int
    out_of_order_frames: tuple[int, ...]
    overlaps: int
    overlap_conflicts: int
    duplicates: int
    keepalives: int
    time_lost_ns: int
    stalls: int
    stall_ns: int
    isn: int | None
    mss: int | None
    wscale: int | None
    sack_permitted: bool
    first_data_ts_ns: int | None
    last_data_ts_ns: int | None
    fin_ts_ns: int | None
    closed: str
    rtt: RttSamples
    stall_intervals: tuple[tuple[int, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return as_dict(self)


@dataclass(frozen=True, slots=True)
class Connection:
    """One TCP connection: who, how it went, both directions and its retransmissions.

    Attributes
    ----------
    id : ConnectionId
        Endpoints, roles (``initiator_known``), index and first packet time.
    client, server : Direction
        What the initiator sent and what the responder sent.
    packets : int
        Segments of the connection, both ways.
    syn_ts_ns, synack_ts_ns : int or None
        First SYN and first SYN/ACK captured.
    established_ts_ns : int or None
        The client's ACK of the SYN/ACK (the third packet of the handshake).
    first_data_ts_ns : int or None
        First segment with payload, either way.
    last_ts_ns : int
        Last packet of the connection.
    fin_ts_ns, rst_ts_ns : int or None
        First FIN and first RST, either way.
    rtt_syn_ns : int or None
        SYN → SYN/ACK: the leg capture point → server → capture point (at a client-side
        capture, nearly the whole path). None when not captured or the SYN was
        retransmitted (Karn's rule: ambiguous).
    rtt_synack_ns : int or None
        SYN/ACK → the client's ACK: the leg capture point → client → capture point.
        None likewise.
    closed : str
        ``"fin"`` (both sides sent FIN), ``"rst"``, ``"end-of-capture"`` (the capture
        ended first), ``"evicted"`` (``TcpLimits.max_connections``) or ``"reused"`` (a new
        SYN on the same 4-tuple started another connection first).
    retransmission_events : tuple of Retransmission
        Both directions, in capture order (at most ``TcpLimits.max_retransmission_events``).
    """

    id: ConnectionId
    client: Direction
    server: Direction
    packets: int
    syn_ts_ns: int | None
    synack_ts_ns: int | None
    established_ts_ns: int | None
    first_data_ts_ns: int | None
    last_ts_ns: int
    fin_ts_ns: int | None
    rst_ts_ns: int | None
    rtt_syn_ns: int | None
    rtt_synack_ns: int | None
    closed: str
    retransmission_events: tuple[Retransmission, ...]

    @property
    def handshake_rtt_ns(self) -> int | None:
        """SYN → ACK of the SYN/ACK (both legs: the whole path's RTT at any capture point)."""
        if self.rtt_syn_ns is None or self.rtt_synack_ns is None:
            return None
        return self.rtt_syn_ns + self.rtt_synack_ns

    @property
    def retransmissions(self) -> int:
        """Retransmission events, both directions."""
        return self.client.retransmissions + self.server.retransmissions

    def direction(self, which: int) -> Direction:
        """:attr:`client` for ``CLIENT`` (0), :attr:`server` for ``SERVER`` (1)."""
        if which == CLIENT:
            return self.client
        if which == SERVER:
            return self.server
        raise IndexError(f"direction must be CLIENT (0) or SERVER (1), got {which!r}")

    def to_dict(self) -> dict[str, Any]:
        out = as_dict(self, skip=("id",))
        i = self.id
        ident = {
            "index": i.index,
            "client_address": _endpoint(i.client),
            "server_address": _endpoint(i.server),
            "first_ts_ns": i.first_ts_ns,
            "initiator_known": i.initiator_known,
        }
        return {**ident, "handshake_rtt_ns": self.handshake_rtt_ns, **out}


def _endpoint(ep: tuple[str, int]) -> str:
    """``address:port``, IPv6 addresses in brackets (RFC 3986 §3.2.2)."""
    return f"[{ep[0]}]:{ep[1]}" if ":" in ep[0] else f"{ep[0]}:{ep[1]}"


# -- what a page reads of a TCP connection ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HalfView:
    """What the page model (``qoe.web._pagemodel``) reads of one :class:`Direction`: the same
    names, and its RTT figures (``count``, ``median_ns``, ``min_ns`` of :class:`RttSamples`)
    read through ``rtt`` as on a Direction (``rtt`` is the view itself)."""

    last_data_ts_ns: int | None
    fin_ts_ns: int | None
    mss: int | None
    retransmissions: int
    stall_intervals: tuple[tuple[int, int], ...]
    count: int
    median_ns: float | None
    min_ns: int | None
    truncated_bytes: int = 0
    first_data_ts_ns: int | None = None

    @property
    def rtt(self) -> HalfView:
        return self


@dataclass(frozen=True, slots=True)
class TcpView:
    """What the page model reads of a :class:`Connection`, by the same names: the record a
    streaming page pass (``qoe.web._stream``, ``qoe.web._split``) makes of each connection
    instead of the whole one (a third of the cost to make, and of the bytes and time to hand
    one from a child process; the pages are the same), as ``qoe.web.pages``' QUIC view
    stands for a QUIC connection in the loss accounting."""

    id: ConnectionId
    client: HalfView
    server: HalfView
    syn_ts_ns: int | None
    last_ts_ns: int
    fin_ts_ns: int | None
    rst_ts_ns: int | None
    handshake_rtt_ns: int | None
    closed: str
    retransmission_events: tuple[Retransmission, ...]
