"""One pass over a capture: SIP calls, RTCP reports and RTP streams, found and measured.

:func:`scan_capture` reads a capture's UDP datagrams once, in NumPy batches
(:func:`qoe.capture.read_udp_batches`): it parses SIP and its SDP, RTCP compound packets
(and the round-trip times their LSR/DLSR give), and groups RTP packets into flows by
UDP direction and SSRC (and tunnel: inside a tunnel an address code stands for the
address in that encapsulation, :attr:`qoe.capture.UdpBatch.encapsulations`), accepting a
flow when SDP announced it or, by a heuristic, when its first packets progress like RTP;
each accepted flow's statistics are computed as it goes (:class:`qoe.rtp._stats.StreamStats`,
all streams of a batch at once). The public names are re-exported, and documented as a
whole, by :mod:`qoe.rtp`.

References
----------
.. [1] RFC 3550, "RTP: A Transport Protocol for Real-Time Applications", §5.1 (header),
   §6.4.1 (round-trip time from LSR/DLSR), §11 (RTP and RTCP ports).
.. [2] RFC 5761, "Multiplexing RTP Data and Control Packets on a Single Port", §4.
.. [3] RFC 3261, "SIP: Session Initiation Protocol", §7.1-§7.2 (start lines), §27.4
   (methods); RFC 4566, "SDP", §5; RFC 3605 (RTCP attribute in SDP).
.. [4] Wireshark and tshark number frames from 1 and time streams from frame 1
   (:attr:`qoe.capture.CaptureInfo.first_frame_ns`).
"""

from __future__ import annotations

import collections
import dataclasses
import os
import warnings
from typing import Any

import numpy as np

from qoe.errors import InputError, QoEWarning
from qoe.rtp._packet import (
    RTCP_APP,
    RTCP_BYE,
    RTCP_SR,
    RTP_FIXED_HEADER,
    RTP_VERSION,
    SEQ_MOD,
    STATIC_PAYLOAD_TYPES,
    TS_MOD,
    header_columns,
    media_kind,
    parse_rtcp,
    wrapped_distance,
)
from qoe.rtp._results import ACTIVE_AT_END_INTERVALS, RtcpSummary, RtpScan, RtpStream, StreamKey
from qoe.rtp._spill import PacketStore
from qoe.rtp._stats import REORDER_WINDOW, StreamStats, _Segments, clock_table, cn_table, is_telephone_event
from qoe.rtp.sip import SIP_METHODS, SdpMedia, SipMessage, group_calls, parse_sip, sender_crypto
from qoe.rtp.srtp import SrtpInfo, bytes_per_tick, encrypted_verdicts, looks_srtcp

# UDP ports whose traffic is never taken for RTP by the heuristic (it can look like RTP
# version 2 by chance): DNS 53, DHCP 67/68, NTP 123, NetBIOS 137/138, SNMP 161/162,
# QUIC/HTTP3 443, IKE 500/4500, syslog 514, SSDP 1900, mDNS 5353, LLMNR 5355 (IANA
# service-name registry). SDP-announced ports are always accepted.
_NOT_RTP_PORTS = np.array([53, 67, 68, 123, 137, 138, 161, 162, 443, 500, 514, 1900, 4500, 5353, 5355])

# First four bytes of a SIP message: a request method of RFC 3261 §27.4 and its extensions
# (qoe.rtp.sip.SIP_METHODS), or the "SIP/" of a status line (RFC 3261 §7.2).
_SIP_PREFIXES = np.array(
    [int.from_bytes((m + " ").encode()[:4], "big") for m in SIP_METHODS] + [int.from_bytes(b"SIP/", "big")]
)

# Heuristic: packets looked at before a flow is accepted as RTP or rejected.
_PROBE_PACKETS = 16
# SRTP heuristic (qoe.rtp.srtp.looks_encrypted): what is kept of each flow's first packets
# (sequence number, timestamp and payload length of each, and one histogram of the nibbles of
# their payloads' first 32 bytes, up to 512 bytes: 320 bytes per flow).
_SRTP_SAMPLE = 16
_SRTP_BYTES = 32
_SRTP_CHUNK = 4096  # rows whose bytes are counted at once
# A SIP message whose bytes equal one seen less than this long before is a copy of it (the
# capture saw the packet twice: Linux "any" device, span port), not a new message: a UA
# retransmits over UDP no earlier than T1 (RFC 3261 §17.1.1.2 Timer A, §17.1.2.2 Timer E,
# §13.3.1.4 for 2xx), whose default is 500 ms (§17.1.1.1).
_SIP_COPY_NS = 500_000_000

#: Default of ``scan_capture(max_streams=...)``: most RTP streams one scan takes.
MAX_STREAMS = 100_000
#: Default of ``scan_capture(max_flows=...)``: most UDP flows one scan tracks that are not
#: RTP streams (undecided by the heuristic, or rejected by it). Each takes about 1.2 KiB
#: (its key, its place in the flow index, its held first packet and the sample the SRTP
#: heuristic reads; ``benchmarks/rtp_flow_limit.py`` measures it), so the default bounds
#: them near 120 MB.
MAX_FLOWS = 100_000



class _RtcpBook:
    """RTCP seen in a capture: sender reports by NTP time, report blocks by source."""

    def __init__(self) -> None:
        self.sr_time: dict[tuple[int, int], int] = {}  # (sender ssrc, NTP middle 32 bits) -> capture ns
        self.sr_count: dict[int, int] = {}
        self.blocks: dict[int, list[tuple[int, dict[str, Any]]]] = {}  # source ssrc -> (ns, block)
        self.rtt: dict[int, list[float]] = {}
        self.bye: set[int] = set()  # SSRCs that sent an RTCP BYE (RFC 3550 §6.6)
        self.packets = 0

    def add(self, time_ns: int, items: list[dict[str, Any]]) -> None:
        self.packets += 1
        for it in items:
            if it["type"] == RTCP_BYE and it["ssrc"] is not None:
                self.bye.add(it["ssrc"])
            if it["type"] == RTCP_SR and "ntp" in it and it["ssrc"] is not None:
                self.sr_count[it["ssrc"]] = self.sr_count.get(it["ssrc"], 0) + 1
                # RFC 3550 §6.4.1: LSR is the middle 32 bits of the SR's NTP timestamp
                self.sr_time[(it["ssrc"], (it["ntp"] >> 16) & 0xFFFFFFFF)] = time_ns
            for b in it.get("blocks", ()):
                self.blocks.setdefault(b["ssrc"], []).append((time_ns, b))
                if b["lsr"]:
                    t_sr = self.sr_time.get((b["ssrc"], b["lsr"]))
                    if t_sr is not None:
                        # RFC 3550 §6.4.1: RTT = A - LSR - DLSR, DLSR in units of 1/65536 s
                        rtt = (time_ns - t_sr) / 1e6 - b["dlsr"] / 65.536
                        self.rtt.setdefault(b["ssrc"], []).append(rtt)

    def summaries(self) -> dict[int, RtcpSummary]:
        out = {}
        for ssrc in set(self.sr_count) | set(self.blocks):
            blocks = self.blocks.get(ssrc, [])
            last = blocks[-1][1] if blocks else None
            out[ssrc] = RtcpSummary(
                ssrc=ssrc,
                sender_reports=self.sr_count.get(ssrc, 0),
                reports=len(blocks),
                fraction_lost=last["fraction_lost"] if last else None,
                cumulative_lost=last["cumulative_lost"] if last else None,
                jitter_ticks=last["jitter"] if last else None,
                rtt_ms=tuple(self.rtt.get(ssrc, ())),
            )
        return out



def _first_copies(seg: _Segments, seq: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """Which packets are the first of their segment with their sequence number and timestamp.

    A later packet with both the same is a copy of that one: an RTP sender never reuses
    a sequence number within a stream (RFC 3550 §5.1, "increments by one for each RTP
    data packet sent"), but a capture holds every packet twice when it sees it on two
    interfaces (Linux ``any`` device: in on one, out on the other) or through a span
    port mirroring both sides, and the network itself may duplicate one (RFC 3550
    A.1, "duplicates"). The copies need not be adjacent (several packets may cross a
    router's queue between a packet's two sightings).
    """
    v = (seq.astype(np.int64) << 32) | (ts.astype(np.int64) & 0xFFFFFFFF)
    o = np.lexsort((np.arange(seg.n), v, seg.g))  # by segment, then value, then arrival
    first = np.ones(seg.n, dtype=bool)
    first[o[1:]] = (seg.g[o[1:]] != seg.g[o[:-1]]) | (v[o[1:]] != v[o[:-1]])
    return first


def _looks_like_rtp(seg: _Segments, seq: np.ndarray, ts: np.ndarray, pt: np.ndarray) -> np.ndarray:
    """The heuristic for flows without signalling: do their packets progress like RTP?

    One verdict per segment (a flow's first packets, grouped). Copies of a packet (the
    same sequence number and timestamp as an earlier one of the flow,
    :func:`_first_copies`) are set aside first: a capture that holds every packet twice
    would otherwise show a step of 0 for every other packet. Over the first copies,
    sequence numbers must move by small steps (RFC 3550 §5.1: +1 per packet; loss and
    reordering make other small steps) and mostly forward, timestamps must move by less
    than 2**25 ticks (over 6 min at 90 kHz) either way, and one payload type must
    dominate; a flow needs two distinct packets. For random payloads each step passes by
    chance with probability below 2 %, so a handful of packets tells them apart; a flow
    repeating one datagram has a single distinct packet and is rejected.
    """
    keep = np.flatnonzero(_first_copies(seg, seq, ts))
    if keep.size < seg.n:  # segments keep their order: each keeps its first packet
        seg, seq, ts, pt = seg.sub(keep), seq[keep], ts[keep], pt[keep]
    step = np.ones(seg.n, dtype=bool)
    step[seg.starts] = False  # a segment's first packet has no step before it
    ds = wrapped_distance(seq - seg.prev(seq, seq[seg.starts]), SEQ_MOD)
    dt = wrapped_distance(ts - seg.prev(ts, ts[seg.starts]), TS_MOD)
    steps = seg.lens - 1
    seq_ok = (seg.count(step & (np.abs(ds) <= 128)) >= 0.9 * steps) & (seg.count(step & (ds >= 1)) >= 0.5 * steps)
    ts_ok = seg.count(step & (np.abs(dt) < (1 << 25))) >= 0.9 * steps
    key, counts = np.unique(seg.g * 128 + pt, return_counts=True)
    first_of_seg = np.flatnonzero(np.concatenate(([True], key[1:] // 128 != key[:-1] // 128)))
    pt_ok = np.maximum.reduceat(counts, first_of_seg) >= 0.5 * seg.lens
    return (seg.lens >= 2) & seq_ok & ts_ok & pt_ok


def _group(rows: np.ndarray, k1: np.ndarray, k2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` ordered by flow key (k1, k2), frame order kept within a key; and where
    each key's run starts. One stable sort of the keys' hashes; a hash shared by two
    keys (checked) falls back to sorting the keys themselves."""
    o = rows[np.argsort(_flow_hash(k1[rows], k2[rows]), kind="stable")]
    a1, a2 = k1[o], k2[o]
    same1, same2 = a1[1:] == a1[:-1], a2[1:] == a2[:-1]
    h = _flow_hash(a1, a2)
    if bool(np.any((h[1:] == h[:-1]) & ~(same1 & same2))):  # a collision: sort by the keys
        o = rows[np.lexsort((k2[rows], k1[rows]))]
        a1, a2 = k1[o], k2[o]
        same1, same2 = a1[1:] == a1[:-1], a2[1:] == a2[:-1]
    brk = np.ones(o.size, dtype=bool)
    brk[1:] = ~(same1 & same2)
    return o, np.flatnonzero(brk)


def _flow_hash(k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
    """A 64-bit hash of a flow's two key words (int64 arithmetic wraps around; the caller
    checks every match against the key, so collisions cost a dict lookup, not an error)."""
    return k1 * np.int64(-0x61C8864680B583EB) ^ k2  # 2**64 / golden ratio, as a signed word


def _slot(h: np.ndarray, size: int) -> np.ndarray:
    """Slots of hashes ``h`` in a table of ``size`` (a power of two) slots: the top bits
    of ``h`` times 2**64 / golden ratio (Knuth's multiplicative hashing, TAOCP vol. 3
    §6.4), so that every bit of the hash counts."""
    bits = size.bit_length() - 1
    return ((h.view(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits)).astype(np.int64)


# The flow table of _Scanner: at least this many slots, and this many per known flow
# (a flow shares its slot with another with probability about 1/16).
_MIN_SLOTS = 1 << 12
_SLOTS_PER_FLOW = 16

_PROBE, _RTP, _REJECT = 0, 1, 2
# The columns of a packet held for a flow: frame, arrival, seq, timestamp, payload type, marker.
_COLUMNS = ("frame", "arr", "seq", "ts", "pt", "mk")


class _Packets:
    """Columns of RTP packets tagged with their flow, appended batch by batch."""

    __slots__ = ("fid",) + _COLUMNS + ("pay",)

    def __init__(self, fid: np.ndarray, cols: dict[str, np.ndarray], pay: np.ndarray | None) -> None:
        self.fid = fid
        for c in _COLUMNS:
            setattr(self, c, cols[c])
        self.pay = pay  # (keep_packets) each payload's offset and length in the PacketStore, else None

    @classmethod
    def empty(cls, keep: bool) -> _Packets:
        z = np.zeros(0, dtype=np.int64)
        return cls(z, {c: (np.zeros(0, dtype=bool) if c == "mk" else z) for c in _COLUMNS},
                   np.zeros((0, 2), dtype=np.int64) if keep else None)

    def take(self, rows: np.ndarray) -> _Packets:
        return _Packets(self.fid[rows], {c: getattr(self, c)[rows] for c in _COLUMNS},
                        None if self.pay is None else self.pay[rows])

    def __len__(self) -> int:
        return int(self.fid.size)

    @staticmethod
    def concat(parts: list[_Packets]) -> _Packets:
        keep = parts[0].pay is not None
        return _Packets(np.concatenate([p.fid for p in parts]),
                        {c: np.concatenate([getattr(p, c) for p in parts]) for c in _COLUMNS},
                        np.concatenate([p.pay for p in parts]) if keep else None)


class _Scanner:
    """Reads UDP batches once: SIP, RTCP and RTP flows, with statistics as it goes.

    RTP packets are grouped into flows (UDP direction and SSRC). A flow is held while
    undecided (its packets in one shared buffer), then taken as RTP (announced by SDP, or
    its first packets pass the heuristic) or rejected. The packets of every accepted
    flow of a batch go to one :class:`StreamStats` update at once; per flow there is
    Python work only when it is first seen, decided and reported.
    """

    def __init__(self, *, keep_packets: bool, heuristic: bool, min_packets: int, reorder_window: int,
                 first_ns: int | None = None, event_jitter: bool = False, max_streams: int | None = None,
                 max_flows: int | None = None) -> None:
        self.keep = keep_packets
        self.max_streams = max_streams
        self.max_flows = max_flows
        self.sink = -1  # the one flow that stands for every flow left out for max_flows (rejected)
        self.flows_left_out = 0  # datagrams of flows left out for max_flows
        self.n_streams = 0  # flows taken as RTP streams
        self.over_limit = 0  # flows left out for max_streams
        self.event_jitter = event_jitter
        self.heuristic = heuristic
        self.min_packets = min_packets
        self.probe_packets = max(_PROBE_PACKETS, min_packets)
        self.index: dict[tuple[int, int], int] = {}  # (src<<32|dst, sport<<48|dport<<32|ssrc) -> flow id
        self.fk1 = np.zeros(0, dtype=np.int64)  # flow id -> its two key words
        self.fk2 = np.zeros(0, dtype=np.int64)
        self.slot_fid = np.full(_MIN_SLOTS, -1, dtype=np.int32)  # a direct-mapped table: slot -> flow id
        self.keys: list[tuple[int, int, int, int, int]] = []  # flow id -> (src, dst, sport, dport, ssrc)
        self.state = np.zeros(0, dtype=np.int8)
        self.first_frame = np.zeros(0, dtype=np.int64)
        self.held_n = np.zeros(0, dtype=np.int64)
        self.sid = np.zeros(0, dtype=np.int64)  # flow id -> stream id (-1: not a stream)
        self.call_id: dict[int, str | None] = {}
        self.media: dict[int, SdpMedia] = {}
        self.held = _Packets.empty(keep_packets)  # packets of undecided flows
        # packets of accepted flows (keep_packets): in temporary files, not in memory
        self.store = PacketStore() if keep_packets else None
        self.stats = StreamStats(reorder_window=reorder_window)
        self.sip: list[SipMessage] = []
        self.sip_seen: dict[bytes, int] = {}  # SIP messages of the last _SIP_COPY_NS: bytes -> when seen
        self.sip_order: collections.deque[tuple[int, bytes]] = collections.deque()  # the same, in arrival order
        self.sip_copies = 0
        # (address, port) -> its announcements in capture order: (frame, Call-ID, media)
        self.announced: dict[tuple[str, int], list[tuple[int, str | None, SdpMedia]]] = {}
        self.new_announcements = False
        self.rtcp_ports: set[tuple[str, int]] = set()
        self.rtcp = _RtcpBook()
        self.addresses: tuple[str, ...] = ()
        self.encaps: tuple[str, ...] = ()  # address code -> its encapsulation (() without tunnels)
        self.first_ns = first_ns  # the capture's frame 1; else the first UDP datagram's
        self.udp = 0
        self.last_ns: int | None = None  # the latest UDP datagram's time
        # flow id -> packets sampled for the SRTP heuristic, their (seq, timestamp, length), nibble counts
        self.sampled = np.zeros(0, dtype=np.int64)
        self.sample_seq = np.zeros((0, _SRTP_SAMPLE), dtype=np.int32)
        self.sample_ts = np.zeros((0, _SRTP_SAMPLE), dtype=np.int64)
        self.sample_len = np.zeros((0, _SRTP_SAMPLE), dtype=np.int32)
        self.nibbles = np.zeros((0, 32), dtype=np.int32)
        self.srtp_pending: list[tuple[int, int, int, Any]] = []  # flows the payload heuristic judges at the end

    # -- per batch ---------------------------------------------------------------
    def batch(self, b: Any) -> None:
        n = len(b)
        if n == 0:
            return
        self.addresses = b.addresses
        self.encaps = b.encapsulations
        self.udp += n
        if self.first_ns is None:
            self.first_ns = int(b.ts_ns[0])
        last = int(b.ts_ns.max())
        self.last_ns = last if self.last_ns is None or last > self.last_ns else self.last_ns
        u8 = b.data  # payload i: u8[start[i] : start[i] + length[i]]
        start = b.starts
        length = b.lengths
        if u8.size == 0 or not length.any():
            return
        head = b.head  # each payload's first 16 bytes, zeros past its end
        b0 = head[:, 0].astype(np.int64)
        b1 = head[:, 1].astype(np.int64)
        # SIP: text messages starting with a method or "SIP/2.0" (RFC 3261 §7.1, §7.2),
        # told apart by their first four bytes (never RTP/RTCP: "A"-"Z" is version 1).
        cand = np.flatnonzero((length >= 12) & (b0 >= 0x41) & (b0 <= 0x5A))
        sip_rows = cand
        if cand.size:
            first4 = head[cand, :4].view(">u4")[:, 0].astype(np.int64)
            sip_rows = cand[np.isin(first4, _SIP_PREFIXES)]
        for i in sip_rows.tolist():
            self._sip(b, i)
        v2 = (length >= 8) & ((b0 >> 6) == RTP_VERSION)
        is_rtcp = v2 & (b1 >= RTCP_SR) & (b1 <= RTCP_APP)
        for i in np.flatnonzero(is_rtcp).tolist():
            data = b.payload_of(i)
            items = parse_rtcp(data)
            if items and looks_srtcp(data):  # encrypted reports: only the sender's SSRC is in clear
                items = [{"type": items[0]["type"], "ssrc": items[0]["ssrc"]}]
            if items:
                self.rtcp.add(int(b.ts_ns[i]), items)
        rows = np.flatnonzero(v2 & ~is_rtcp & (length >= RTP_FIXED_HEADER))
        if rows.size:
            self._rtp(b, u8, rows, start[rows], length[rows], head[rows])
        elif self.new_announcements:
            self._feed(self._decide(final=False))

    def _sip(self, b: Any, i: int) -> None:
        addrs = b.addresses
        data, t = b.payload_of(i), int(b.ts_ns[i])
        seen = self.sip_seen.get(data)
        if seen is not None and abs(t - seen) < _SIP_COPY_NS:  # a copy of a message already taken
            self.sip_copies += 1
            return
        self.sip_seen[data] = t
        self.sip_order.append((t, data))
        while self.sip_order and t - self.sip_order[0][0] >= _SIP_COPY_NS:  # forget what is out of the window
            t0, d0 = self.sip_order.popleft()
            if self.sip_seen.get(d0) == t0:
                del self.sip_seen[d0]
        msg = parse_sip(
            data, frame=int(b.index[i]), time_ns=t,
            src=addrs[b.src[i]], sport=int(b.sport[i]), dst=addrs[b.dst[i]], dport=int(b.dport[i]),
        )
        if msg is None:
            return
        self.sip.append(msg)
        if msg.sdp is not None:
            for m in msg.sdp.media:
                if m.port and m.address:
                    # each announcement holds from its frame until the next one for the
                    # same address and port (a later call or a re-INVITE, RFC 3264 §8)
                    self.announced.setdefault((m.address, m.port), []).append((msg.frame, msg.call_id, m))
                    self.rtcp_ports.add((m.address, m.rtcp_port or (m.port + 1)))
                    self.new_announcements = True

    def _rtp(self, b: Any, u8: np.ndarray, rows: np.ndarray, s: np.ndarray, ln: np.ndarray, first: np.ndarray) -> None:
        h = header_columns(u8, s, ln, head=first)
        if h.rows.size == 0:
            if self.new_announcements:
                self._feed(self._decide(final=False))
            return
        rows = rows[h.rows]
        src = b.src[rows].astype(np.int64)
        dst = b.dst[rows].astype(np.int64)
        sport = b.sport[rows].astype(np.int64)
        dport = b.dport[rows].astype(np.int64)
        k1 = src << 32 | dst
        k2 = sport << 48 | dport << 32 | h.ssrc
        fid = self._known_flows(k1, k2)
        miss = np.flatnonzero(fid < 0)
        new = np.zeros(0, dtype=np.int64)
        rank = None  # of the packets of flows first seen here: their place in their flow
        if miss.size:  # packets of flows first seen here (or whose hash collided): by key
            o, starts = _group(miss, k1, k2)
            first = o[starts]  # each key's first packet
            found = np.array([self.index.get(k, -1) for k in zip(k1[first].tolist(), k2[first].tolist())],
                             dtype=np.int64)
            fresh = np.flatnonzero(found < 0)
            if fresh.size:
                fresh = self._admit(fresh, first, found, src, dst, sport, dport, lens=np.diff(np.append(starts, o.size)))
            if fresh.size:
                base = len(self.keys)
                new = np.arange(base, base + fresh.size)
                for j, r in enumerate(first[fresh].tolist()):
                    self.keys.append((int(src[r]), int(dst[r]), int(sport[r]), int(dport[r]), int(h.ssrc[r])))
                    self.index[(int(k1[r]), int(k2[r]))] = base + j
                found[fresh] = new
                self._grow(len(self.keys))
                self.first_frame[new] = b.index[rows[first[fresh]]]
                self._index_flows(k1[first[fresh]], k2[first[fresh]], new)
            lens = np.diff(np.append(starts, o.size))
            fid[o] = np.repeat(found, lens)
            rank = np.full(rows.size, -1, dtype=np.int64)
            rank[o] = np.arange(o.size) - np.repeat(starts, lens)
        self._sample(fid, h, u8)
        cols = {
            "frame": b.index[rows].astype(np.int64, copy=False), "arr": b.ts_ns[rows].astype(np.int64, copy=False),
            "seq": h.seq, "ts": h.timestamp, "pt": h.payload_type, "mk": h.marker,
        }
        st = self.state[fid]
        pay = None
        if self.keep:  # payloads of flows taken or undecided go to the store, a flow's together
            pay = np.full((rows.size, 2), -1, dtype=np.int64)
            put = np.flatnonzero(st != _REJECT)
            put = put[np.argsort(fid[put], kind="stable")]
            pay[put, 0] = self.store.put_payloads(u8.data, h.payload_start[put], h.payload_end[put])  # type: ignore[union-attr]
            pay[put, 1] = h.payload_end[put] - h.payload_start[put]
        pk = _Packets(fid, cols, pay)
        is_rtp = st == _RTP
        if is_rtp.all():
            self._feed(pk)
            if self.new_announcements:
                self._feed(self._decide(final=False))
            return
        to_stats = pk.take(np.flatnonzero(is_rtp))
        probing = np.flatnonzero(st == _PROBE)
        # An undecided flow is judged on its first packets: those are held; its later
        # ones in this batch wait aside, and follow them if the flow is accepted.
        place = self._places(fid, probing, rank)
        early = probing[place < self.probe_packets]
        late = probing[place >= self.probe_packets]
        if early.size:
            self.held = _Packets.concat([self.held, pk.take(early)])
            self.held_n += np.bincount(fid[early], minlength=self.held_n.size)
        released = self._decide(final=False, new_flows=new if new.size else None)
        parts = [to_stats, released]
        if late.size:
            parts.append(pk.take(late[self.state[fid[late]] == _RTP]))
        self._feed(_Packets.concat([p for p in parts if len(p)]) if any(len(p) for p in parts) else to_stats)

    def _admit(self, fresh: np.ndarray, first: np.ndarray, found: np.ndarray, src: np.ndarray, dst: np.ndarray,
               sport: np.ndarray, dport: np.ndarray, *, lens: np.ndarray) -> np.ndarray:
        """Of new flows ``fresh`` (indices into ``first``, their first rows), those the scan
        tracks. Flows to or from a port that is never RTP (:data:`_NOT_RTP_PORTS`: DNS, NTP,
        ...; one flow per query would fill the table) are not tracked; under ``max_flows``
        (flows tracked that are not streams), the new flows first seen are tracked, and past
        it only those a SIP/SDP announcement names. The others get the rejected sink flow in
        ``found``; the datagrams of those left out for ``max_flows`` are counted."""
        a = self.addresses
        r = first[fresh]

        def announced(rows: np.ndarray) -> np.ndarray:
            if not self.announced:
                return np.zeros(rows.size, dtype=bool)
            return np.array([(a[dst[i]], int(dport[i])) in self.announced or (a[src[i]], int(sport[i])) in self.announced
                             for i in rows.tolist()], dtype=bool)

        never = np.isin(sport[r], _NOT_RTP_PORTS) | np.isin(dport[r], _NOT_RTP_PORTS)
        if never.any():
            never[never] = ~announced(r[never])
        out = fresh[never]
        fresh = fresh[~never]
        room = None if self.max_flows is None else self.max_flows - (len(self.keys) - self.n_streams)
        if room is not None and fresh.size > room:
            fresh = fresh[np.argsort(first[fresh], kind="stable")]  # the first seen are kept
            take, late = fresh[:max(room, 0)], fresh[max(room, 0):]
            named = announced(first[late])  # an announced stream is never left out
            fresh = np.sort(np.concatenate((take, late[named])))
            late = late[~named]
            self.flows_left_out += int(lens[late].sum())
            out = np.concatenate((out, late))
        if out.size:
            if self.sink < 0:
                self.sink = len(self.keys)
                self.keys.append((-1, -1, -1, -1, -1))
                self._grow(len(self.keys))
                self.state[self.sink] = _REJECT
            found[out] = self.sink
        return fresh

    def _sample(self, fid: np.ndarray, h: Any, u8: np.ndarray) -> None:
        """Take what the SRTP heuristic needs from each flow's first :data:`_SRTP_SAMPLE` packets."""
        r = np.flatnonzero(self.sampled[fid] < _SRTP_SAMPLE)
        if r.size == 0:
            return
        o = r[np.argsort(fid[r], kind="stable")]  # by flow, arrival order kept
        f = fid[o]
        start = np.flatnonzero(np.concatenate(([True], f[1:] != f[:-1])))
        place = np.arange(o.size) - np.repeat(start, np.diff(np.append(start, o.size))) + self.sampled[f]
        keep = place < _SRTP_SAMPLE
        o, f, place = o[keep], f[keep], place[keep]
        self.sample_seq[f, place] = h.seq[o]
        self.sample_ts[f, place] = h.timestamp[o]
        n = (h.payload_end[o] - h.payload_start[o]).astype(np.int64)
        self.sample_len[f, place] = n
        flows, local = np.unique(f, return_inverse=True)
        self.sampled[flows] += np.bincount(local, minlength=flows.size)
        # the first _SRTP_BYTES bytes of each of those payloads: their nibbles, counted per flow
        # (in chunks of rows, so that the temporaries stay small)
        w = np.minimum(n, _SRTP_BYTES)
        cols = np.arange(_SRTP_BYTES)
        first = h.payload_start[o].astype(np.int64)
        counts = np.zeros(flows.size * 32, dtype=np.int64)
        for c in range(0, o.size, _SRTP_CHUNK):
            wc = w[c:c + _SRTP_CHUNK]
            inside = cols[None, :] < wc[:, None]
            b = u8[(first[c:c + _SRTP_CHUNK, None] + cols[None, :])[inside]].astype(np.int64)
            at = np.repeat(local[c:c + _SRTP_CHUNK] * 32, wc)
            counts += np.bincount(np.concatenate((at + (b >> 4), at + 16 + (b & 15))), minlength=counts.size)
        self.nibbles[flows] += counts.reshape(flows.size, 32).astype(np.int32)

    def _places(self, fid: np.ndarray, rows: np.ndarray, rank: np.ndarray | None) -> np.ndarray:
        """The place of packets ``rows`` among their undecided flow's packets (0 = its
        first): the flow's held packets come first, then its packets of this batch.
        ``rank`` (-1 where not known) ranks the packets already grouped by key."""
        f = fid[rows]
        place = self.held_n[f].copy()
        ranked = np.zeros(rows.size, dtype=bool) if rank is None else rank[rows] >= 0
        if ranked.any():
            place[ranked] += rank[rows[ranked]]  # type: ignore[index]
        rest = np.flatnonzero(~ranked)
        if rest.size:  # flows held since an earlier batch: rank their packets here
            o = np.argsort(f[rest], kind="stable")
            place[rest[o]] += _Segments(f[rest][o]).pos
        return place

    def _known_flows(self, k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
        """Flow id of each packet's key (k1, k2); -1 where the table does not know it.

        A direct-mapped table (one flow per slot of a hash of the key, the last flow
        indexed in a slot keeping it) answers with a few gathers per packet; the flow
        found is checked against the key, so a flow that lost its slot only sends its
        packets to the caller's dict lookup.
        """
        if self.fk1.size == 0:
            return np.full(k1.size, -1, dtype=np.int64)
        cand = self.slot_fid[_slot(_flow_hash(k1, k2), self.slot_fid.size)]
        known = np.maximum(cand, 0)
        hit = (cand >= 0) & (self.fk1[known] == k1) & (self.fk2[known] == k2)
        return np.where(hit, cand, -1).astype(np.int64)

    def _index_flows(self, k1: np.ndarray, k2: np.ndarray, fids: np.ndarray) -> None:
        self.fk1 = np.append(self.fk1, k1)
        self.fk2 = np.append(self.fk2, k2)
        size = self.slot_fid.size
        if self.fk1.size * _SLOTS_PER_FLOW > size:  # keep the table sparse: rebuild it larger
            while self.fk1.size * _SLOTS_PER_FLOW > size:
                size *= 2
            self.slot_fid = np.full(size, -1, dtype=np.int32)
            k1, k2, fids = self.fk1, self.fk2, np.arange(self.fk1.size)
        self.slot_fid[_slot(_flow_hash(k1, k2), size)] = fids

    def _grow(self, n: int) -> None:
        extra = n - self.state.size
        self.state = np.append(self.state, np.full(extra, _PROBE, dtype=np.int8))
        self.first_frame = np.append(self.first_frame, np.zeros(extra, dtype=np.int64))
        self.held_n = np.append(self.held_n, np.zeros(extra, dtype=np.int64))
        self.sid = np.append(self.sid, np.full(extra, -1, dtype=np.int64))
        self.sampled = np.append(self.sampled, np.zeros(extra, dtype=np.int64))
        self.sample_seq = np.concatenate((self.sample_seq, np.zeros((extra, _SRTP_SAMPLE), dtype=np.int32)))
        self.sample_ts = np.concatenate((self.sample_ts, np.zeros((extra, _SRTP_SAMPLE), dtype=np.int64)))
        self.sample_len = np.concatenate((self.sample_len, np.zeros((extra, _SRTP_SAMPLE), dtype=np.int32)))
        self.nibbles = np.concatenate((self.nibbles, np.zeros((extra, 32), dtype=np.int32)))

    def _announcement(self, fid: int) -> tuple[str | None, SdpMedia] | None:
        """(Call-ID, media) of the SDP announcement that flow ``fid`` follows.

        The announcement of the flow's receiving address and port (else of its sending
        one, for symmetric RTP) in force at the flow's first packet: the last one seen
        before it. A flow that starts before any announcement of its port takes the
        first one made after it.
        """
        src, dst, sport, dport, _ = self.keys[fid]
        a = self.addresses
        seen = self.announced.get((a[dst], dport)) or self.announced.get((a[src], sport))
        if not seen:
            return None
        first = int(self.first_frame[fid])
        pick = seen[0]
        for ann in seen:  # in capture order; a port is rarely announced more than a few times
            if ann[0] > first:
                break
            pick = ann
        return pick[1], pick[2]

    def _srtp(self, fid: int, call_id: str | None, pt: int, codec: str | None, media: SdpMedia | None) -> SrtpInfo | None:
        """Whether flow ``fid`` is SRTP (:mod:`qoe.rtp.srtp`), and the sender's SDES key.

        The receiving side's announcement is the one of the flow's destination address and
        port; the sender's, of its source address and port (symmetric RTP, RFC 4961), else
        the other party's media section of the same call (RFC 3264 §6). The key is the
        sender's ``a=crypto`` (RFC 4568 §5.1, :func:`qoe.rtp.sip.sender_crypto`).
        """
        src, dst, sport, dport, _ = self.keys[fid]
        a = self.addresses
        first = int(self.first_frame[fid])
        recv = _in_force(self.announced.get((a[dst], dport)), first)
        send = _in_force(self.announced.get((a[src], sport)), first)
        if send is not None and recv is not None and send[1] != recv[1]:
            send = None  # the source port was announced by another call
        if send is None and recv is not None and recv[1] is not None:
            other = [ann for (addr, port), seen in self.announced.items() if (addr, port) != (a[dst], dport)
                     for ann in seen if ann[1] == recv[1] and ann[2].media == recv[2].media]
            send = _in_force(sorted(other, key=lambda x: x[0]), first) if other else None
        r_media = recv[2] if recv is not None else None
        s_media = send[2] if send is not None else None
        sdes = sender_crypto(s_media, r_media)
        if any(m is not None and m.secure for m in (r_media, s_media)):
            return SrtpInfo(found_by="sdp", sdes=sdes)
        channels = 1
        if media is not None and pt in media.rtpmap:
            channels = media.rtpmap[pt][2]
        per_tick = bytes_per_tick(pt, codec, channels)
        if per_tick is not None and self.sampled[fid]:
            self.srtp_pending.append((len(self.srtp_pending), fid, per_tick, sdes))
        return None

    def _srtp_heuristic(self, streams: list[RtpStream], at: dict[int, int]) -> None:
        """Apply the payload heuristic (:func:`qoe.rtp.srtp.encrypted_verdicts`) to the
        pending flows at once; mark the streams (``at``: flow id -> index in ``streams``)."""
        if not self.srtp_pending:
            return
        fids = np.array([p[1] for p in self.srtp_pending], dtype=np.int64)
        per_tick = np.array([p[2] for p in self.srtp_pending], dtype=np.int64)
        hits = encrypted_verdicts(self.sample_seq[fids], self.sample_ts[fids], self.sample_len[fids],
                                  self.sampled[fids], self.nibbles[fids], per_tick)
        for i in np.flatnonzero(hits).tolist():
            _, fid, _, sdes = self.srtp_pending[i]
            j = at[fid]
            streams[j] = dataclasses.replace(streams[j], srtp=SrtpInfo(found_by="heuristic", sdes=sdes))
        self.srtp_pending = []

    def _decide(self, *, final: bool, new_flows: np.ndarray | None = None) -> _Packets:
        """Accept or reject undecided flows; the held packets of the accepted ones.

        SDP-announced flows are accepted at once (new flows, or all undecided ones when
        SIP announced something new); the heuristic judges a flow's first
        ``max(16, min_packets)`` packets when it has them (at the end of the capture,
        whatever it has, if at least ``min_packets``).
        """
        undecided = np.flatnonzero(self.state == _PROBE)
        if undecided.size == 0:
            self.new_announcements = False
            return _Packets.empty(self.keep)
        if final or self.new_announcements:
            check = undecided
        elif new_flows is not None:
            check = new_flows[self.state[new_flows] == _PROBE]
        else:
            check = np.zeros(0, dtype=np.int64)
        self.new_announcements = False
        accept_sdp = [f for f in check.tolist() if self._announcement(f) is not None] if self.announced else []
        for f in accept_sdp:
            self._accept(f)
        if final:
            judge = undecided[(self.state[undecided] == _PROBE) & (self.held_n[undecided] >= self.min_packets)]
            self.state[undecided[(self.state[undecided] == _PROBE) & (self.held_n[undecided] < self.min_packets)]] = _REJECT
        else:
            judge = undecided[(self.state[undecided] == _PROBE) & (self.held_n[undecided] >= self.probe_packets)]
        if judge.size:
            self._judge(judge)
        decided = self.state[self.held.fid] != _PROBE
        if not decided.any():
            return _Packets.empty(self.keep)
        out = self.held.take(np.flatnonzero(decided & (self.state[self.held.fid] == _RTP)))
        self.held = self.held.take(np.flatnonzero(~decided))
        return out

    def _judge(self, fids: np.ndarray) -> None:
        """The heuristic verdict on flows ``fids`` (all undecided, none announced)."""
        if not self.heuristic:
            self.state[fids] = _REJECT
            return
        keys = np.asarray([self.keys[f] for f in fids.tolist()], dtype=np.int64).reshape(-1, 5)
        # well-known non-RTP ports, and announced RTCP ports (RFC 3550 §11, RFC 3605)
        ok = ~(np.isin(keys[:, 2], _NOT_RTP_PORTS) | np.isin(keys[:, 3], _NOT_RTP_PORTS))
        if self.rtcp_ports:
            a = self.addresses
            ok &= np.array([(a[k[1]], k[3]) not in self.rtcp_ports and (a[k[0]], k[2]) not in self.rtcp_ports
                            for k in keys.tolist()], dtype=bool)
        rows = np.flatnonzero(np.isin(self.held.fid, fids))
        rows = rows[np.argsort(self.held.fid[rows], kind="stable")]
        seg = _Segments(self.held.fid[rows])
        first = rows[seg.pos < self.probe_packets]  # a flow's first packets only
        seg = _Segments(self.held.fid[first])
        looks = _looks_like_rtp(seg, self.held.seq[first], self.held.ts[first], self.held.pt[first])
        verdict = np.zeros(fids.size, dtype=bool)
        verdict[np.searchsorted(fids, seg.ids)] = looks & (seg.lens >= self.min_packets)
        take = fids[verdict & ok]
        self.state[fids[~(verdict & ok)]] = _REJECT
        if self.max_streams is not None and self.n_streams + take.size > self.max_streams:
            room = max(0, self.max_streams - self.n_streams)
            self.over_limit += int(take.size) - room
            self.state[take[room:]] = _REJECT
            take = take[:room]
        self.n_streams += int(take.size)
        self.state[take] = _RTP
        if take.size:  # not announced: the static clock-rate and comfort-noise tables
            self.sid[take] = self.stats.add(int(take.size))

    def _accept(self, fid: int) -> None:
        """Take flow ``fid`` as an SDP-announced RTP stream."""
        if self.max_streams is not None and self.n_streams >= self.max_streams:
            self.state[fid] = _REJECT
            self.over_limit += 1
            return
        self.n_streams += 1
        call_id, media = self._announcement(fid)  # type: ignore[misc]
        rates: dict[int, int] = {}
        cn: list[int] = []
        self.call_id[fid], self.media[fid] = call_id, media
        for pt, (name, rate, _) in media.rtpmap.items():
            rates[pt] = rate
            if name.upper() == "CN":
                cn.append(pt)
            elif not self.event_jitter and is_telephone_event(name):
                # RFC 4733 §2.3: an event packet carries its event's start timestamp, not
                # its own sampling instant, so it has no place in the jitter (as Wireshark)
                rates[pt] = 0
        self.state[fid] = _RTP
        self.sid[fid] = self.stats.add(clocks=clock_table(rates), cn=cn_table(cn))[0]

    def _feed(self, pk: _Packets) -> None:
        if len(pk) == 0:
            return
        self.stats.update(self.sid[pk.fid], pk.arr, pk.seq, pk.ts, pk.pt, pk.mk)
        if self.store is not None:
            self.store.put_packets(pk.fid, pk.frame, pk.arr, pk.seq, pk.ts, pk.pt, pk.mk, pk.pay[:, 0], pk.pay[:, 1])  # type: ignore[index]

    # -- at the end --------------------------------------------------------------
    def finish(self, path: str) -> RtpScan:
        self._feed(self._decide(final=True))
        if self.flows_left_out:
            warnings.warn(f"{path}: {self.flows_left_out} UDP datagram(s) not looked at for RTP: more than max_flows="
                          f"{self.max_flows} UDP flows that are not RTP streams were tracked (an RTP stream that started "
                          "after that without SIP/SDP announcing it is missed)", QoEWarning, stacklevel=3)
        if self.over_limit:
            warnings.warn(f"{path}: {self.over_limit} RTP stream(s) left out: more than max_streams="
                          f"{self.max_streams} streams (the first {self.max_streams} are reported)",
                          QoEWarning, stacklevel=3)
        rtcp = self.rtcp.summaries()
        calls = tuple(group_calls(self.sip))
        a = self.addresses
        fids = np.flatnonzero(self.state == _RTP)
        fids = fids[np.argsort(self.first_frame[fids], kind="stable")]
        sids = self.sid[fids]
        stats = self.stats.results(sids)
        ranked = _payload_types_seen(self.stats.pt_counts[sids])
        streams = []
        for i, (fid, st) in enumerate(zip(fids.tolist(), stats)):
            media = self.media.get(fid)
            call_id = self.call_id.get(fid)
            found_by = "sdp" if media is not None else "heuristic"
            if media is None and self.announced:  # SDP seen only after the flow was taken as RTP
                ann = self._announcement(fid)
                if ann is not None:
                    call_id, media = ann
            pts = ranked[i]
            main = pts[0]
            codec, rate = _codec_of(main, media)
            src, dst, sport, dport, ssrc = self.keys[fid]
            packets = self.store.packets(fid) if self.store is not None else None
            streams.append(
                RtpStream(
                    key=StreamKey(a[src], sport, a[dst], dport, ssrc, self.encaps[src] if self.encaps else ""),
                    payload_type=main,
                    codec=codec,
                    clock_rate=rate,
                    packets=packets,
                    stats=st,
                    call_id=call_id,
                    ptime_ms=media.ptime_ms if media is not None else None,
                    found_by=found_by,
                    payload_types=pts,
                    rtcp=rtcp.get(ssrc),
                    media=media_kind(codec, rate, media.media if media is not None else None),
                    srtp=self._srtp(fid, call_id, main, codec, media),
                    channels=_channels_of(main, media),
                    fmtp=dict(media.fmtp.get(main, {})) if media is not None else {},
                    active_at_end=self._active_at_end(st, ssrc),
                )
            )
        self._srtp_heuristic(streams, {int(f): i for i, f in enumerate(fids.tolist())})
        return RtpScan(
            path=path,
            streams=tuple(streams),
            calls=calls,
            rtcp=rtcp,
            first_ns=self.first_ns,
            udp_packets=self.udp,
            rtcp_packets=self.rtcp.packets,
            last_ns=self.last_ns,
        )

    def _active_at_end(self, st: Any, ssrc: int) -> bool:
        """Whether a stream (statistics ``st``) was still sending when the capture's UDP
        traffic ended (:attr:`RtpStream.active_at_end`)."""
        if self.last_ns is None or st.packets < 2 or ssrc in self.rtcp.bye:
            return False
        interval = (st.last_ns - st.first_ns) / (st.packets - 1)
        return self.last_ns - st.last_ns <= ACTIVE_AT_END_INTERVALS * interval


def _in_force(seen: list[tuple[int, str | None, SdpMedia]] | None, frame: int) -> tuple[int, str | None, SdpMedia] | None:
    """The announcement (of one address and port, in capture order) in force at ``frame``:
    the last one before it, else the first one after it."""
    if not seen:
        return None
    pick = seen[0]
    for ann in seen:
        if ann[0] > frame:
            break
        pick = ann
    return pick


def _payload_types_seen(counts: np.ndarray) -> list[tuple[int, ...]]:
    """Each stream's payload types seen, most frequent first (ties: lower type first),
    from its packet counts per type (a row of ``counts``). Most streams carry one type:
    only the others are sorted."""
    main = np.argmax(counts, axis=1)  # the first of the most frequent: the lowest type
    out = [(p,) for p in main.tolist()]
    seen = np.count_nonzero(counts, axis=1)
    mixed = np.flatnonzero(seen > 1)
    if mixed.size:
        ranked = np.argsort(-counts[mixed], axis=1, kind="stable")
        for i, row, k in zip(mixed.tolist(), ranked.tolist(), seen[mixed].tolist()):
            out[i] = tuple(row[:k])
    return out


def _codec_of(pt: int, media: SdpMedia | None) -> tuple[str | None, int | None]:
    """Encoding name and clock rate of a payload type: SDP rtpmap first, then RFC 3551."""
    if media is not None:
        enc = media.encoding(pt)
        if enc is not None:
            return enc[0], (enc[1] or None)
    if pt in STATIC_PAYLOAD_TYPES:
        return STATIC_PAYLOAD_TYPES[pt]
    return None, None


def _channels_of(pt: int, media: SdpMedia | None) -> int:
    """Audio channels of a payload type: SDP rtpmap's encoding parameters, else 1 (RFC 3551 §4.1)."""
    m = media.rtpmap.get(pt) if media is not None else None
    return int(m[2]) if m is not None and m[2] else 1


def scan_capture(
    path: str | os.PathLike[str],
    *,
    keep_packets: bool = True,
    heuristic: bool = True,
    min_packets: int = 4,
    batch_size: int = 65536,
    reorder_window: int = REORDER_WINDOW,
    event_jitter: bool = False,
    max_streams: int | None = MAX_STREAMS,
    max_flows: int | None = MAX_FLOWS,
) -> RtpScan:
    """Find every RTP stream, SIP call and RTCP report in a capture, in one pass.

    Parameters
    ----------
    path : str or os.PathLike
        A pcap or pcapng capture (read with :func:`qoe.capture.read_udp_batches`).
    keep_packets : bool, optional
        Keep each stream's per-packet table and payloads (:attr:`RtpStream.packets`).
        They are kept on disk, not in memory: appended as the capture is read to two
        temporary files that have no name (made in ``TMPDIR``, unlinked at once: the
        space, the RTP payload bytes plus 36 bytes per packet, is freed when the last
        stream that needs them is gone, or the process ends), and a stream's table is
        read back when it is used (a few recently used tables, up to 16 MiB, are
        cached). Memory then grows with the number of streams, not with their length.
        False computes the statistics only (about 1.5 KiB per stream with the default
        ``reorder_window``).
    heuristic : bool, optional
        Also accept flows that no SDP announced when their first packets progress like
        RTP (version 2, one SSRC, sequence numbers and timestamps moving forward, one
        dominant payload type): judged on a flow's first ``max(16, min_packets)``
        packets, or at the end of the capture on all of them. False keeps only
        SDP-announced streams.
    min_packets : int, optional
        Fewest packets for a flow to be taken as RTP by the heuristic.
    batch_size : int, optional
        Datagrams read per batch. The statistics do not depend on it (but for float
        rounding); larger batches are faster and take more memory.
    reorder_window : int, optional
        How many sequence numbers behind a stream's highest one a packet may arrive and
        still be told apart as a duplicate or a late packet (default 4096; see
        :func:`rtp_stats`). Each stream keeps one bit per number of it.
    event_jitter : bool, optional
        Count RFC 4733 event packets (payload types that SDP maps to
        ``telephone-event``) in the jitter as if they were audio samples at their
        rtpmap clock rate. False (the default, as Wireshark) leaves them out of the
        jitter: they still count in the arrival deltas, and the next audio packet's
        transit difference is taken from the last event packet's arrival and the last
        audio packet's timestamp (see :func:`rtp_stats`, ``telephone_events``).
    max_streams : int or None, optional
        Most RTP streams taken (default :data:`MAX_STREAMS`, 100,000; None: no limit):
        the statistics of a stream take about 1.5 KiB, so a capture crafted with millions
        of SSRCs cannot exhaust memory. Flows that would be taken past the limit are left
        out, in the order they are decided, with a :class:`~qoe.errors.QoEWarning`; the
        streams kept are reported whole.
    max_flows : int or None, optional
        Most UDP flows (by direction and SSRC) tracked that are not RTP streams: those the
        heuristic has not decided yet (fewer than ``max(16, min_packets)`` packets) and
        those it rejected, remembered so that their later packets are passed over (default
        :data:`MAX_FLOWS`, 100,000; None: no limit). A flow takes about 1.2 KiB, so a capture
        crafted with millions of one-packet flows cannot exhaust memory. Past the limit, new
        flows are not looked at (their datagrams are counted and a
        :class:`~qoe.errors.QoEWarning` says how many) unless SIP/SDP announced them: an RTP
        stream that starts after that without signalling is missed. Flows to or from ports
        that are never RTP (DNS, NTP, DHCP, ...) are not tracked and do not count.

    Returns
    -------
    RtpScan

    Raises
    ------
    CaptureError
        The file cannot be read as a capture.
    InputError
        ``min_packets`` < 2, ``batch_size`` < 1, ``reorder_window`` < 1, ``max_streams`` or
        ``max_flows`` < 1.

    References
    ----------
    RFC 3550 §5.1, §6.4, §11; RFC 5761 §4; RFC 3261 §7; RFC 4566 §5; RFC 3264 §8
    (an announcement holds until the next one for its address and port: a stream
    follows the one in force at its first packet); RFC 4733 §2.3.
    """
    from qoe.capture import probe, read_udp_batches  # noqa: PLC0415 - the capture layer, imported when used

    if min_packets < 2:
        raise InputError(f"min_packets must be at least 2, given {min_packets}")
    if max_streams is not None and max_streams < 1:
        raise InputError(f"max_streams must be at least 1 (or None: no limit), given {max_streams}")
    if max_flows is not None and max_flows < 1:
        raise InputError(f"max_flows must be at least 1 (or None: no limit), given {max_flows}")
    name = os.fspath(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the read below reports a damaged file once
        # frame 1, even when a later frame has an earlier time (as tshark)
        first_ns = probe(name).first_frame_ns
    sc = _Scanner(keep_packets=keep_packets, heuristic=heuristic, min_packets=min_packets,
                  reorder_window=reorder_window, first_ns=first_ns, event_jitter=event_jitter,
                  max_streams=max_streams, max_flows=max_flows)
    for b in read_udp_batches(name, batch_size=batch_size):
        sc.batch(b)
        del b  # not held while the next batch is read: one batch in memory at a time
    return sc.finish(name)


def find_streams(
    path: str | os.PathLike[str],
    *,
    keep_packets: bool = True,
    heuristic: bool = True,
    min_packets: int = 4,
    reorder_window: int = REORDER_WINDOW,
) -> list[RtpStream]:
    """The RTP streams of a capture, with their packets and statistics.

    See :func:`scan_capture` (this returns its ``streams``); warns with
    :class:`~qoe.errors.QoEWarning` when the capture holds no RTP stream.

    Parameters
    ----------
    path : str or os.PathLike
        A pcap or pcapng capture.
    keep_packets, heuristic, min_packets, reorder_window
        As for :func:`scan_capture`.

    Returns
    -------
    list of RtpStream
        In order of their first packet.
    """
    scan = scan_capture(path, keep_packets=keep_packets, heuristic=heuristic, min_packets=min_packets,
                        reorder_window=reorder_window)
    if not scan.streams:
        warnings.warn(f"{scan.path}: no RTP stream found in {scan.udp_packets} UDP datagrams", QoEWarning, stacklevel=2)
    return list(scan.streams)
