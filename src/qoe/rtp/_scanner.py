"""The scanner: one pass's state over a capture's prepared batches (flows, streams, calls).

:class:`_Scanner` takes the capture's UDP datagrams batch by batch
(:func:`qoe.rtp._batchprep.prepare` has sorted them by kind and parsed their RTP headers):
SIP and SDP to its :class:`~qoe.rtp._sipbook.SipBook`, RTCP to its
:class:`~qoe.rtp._rtcpbook.RtcpBook`, RTP packets to flows (UDP direction, SSRC, tunnel)
that SDP announced or the heuristic accepts (``_decide``, ``_provisional``, ``_judge``,
``_accept``), each accepted flow's statistics computed as it goes
(:class:`qoe.rtp._stats.StreamStats`, all streams of a batch at once); streams end on a BYE
or a silence (``expire``, ``_end``) and are handed on by call (``ready``) or at the end
(``finish``). :mod:`qoe.rtp._scan` holds the public entry points that drive it.

The standards it follows are those of :mod:`qoe.rtp._scan`'s References (RFC 3550, 5761, 3261,
4566, 3605; tshark's frame numbering).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from qoe._records import builder
from qoe.errors import QoEWarning
from qoe.rtp._packet import (
    RTP_FIXED_HEADER,
    SEQ_MOD,
    STATIC_PAYLOAD_TYPES,
    TS_MOD,
    media_kind,
    parse_rtcp,
    wrapped_distance,
)
from qoe.rtp._batchprep import PreparedBatch, first_gap, prepare
from qoe.rtp._bundle import section_for, tie_rtx
from qoe.rtp._callgroups import Member, ready_groups
from qoe.rtp._demux import DemuxBook, mark_dtls
from qoe.rtp._headerbytes import HeaderByteBook
from qoe.rtp._flows import PROBE, REJECT, RTP, FlowTable, HeldPackets
from qoe.rtp._order import stable_order
from qoe.rtp._results import ACTIVE_AT_END_INTERVALS, RtpScan, RtpStream, StreamKey
from qoe.rtp._rtcpbook import RtcpBook, attach_feedback, feedback_kinds
from qoe.rtp._sipbook import SipBook
from qoe.rtp._spill import PacketStore
from qoe.rtp._srtpsample import SrtpSampler
from qoe.rtp._infer import infer_clock
from qoe.rtp._stats import (
    StreamStats,
    _Segments,
    clock_table,
    cn_table,
    is_telephone_event,
    rtp_stats,
    with_jitter,
)
from qoe.rtp.extensions import SDES_MID, extension_elements
from qoe.rtp.sip import SdpMedia, group_calls, sender_crypto
from qoe.rtp.srtp import SrtpInfo, bytes_per_tick, _looks_srtcp

# UDP ports whose traffic is never taken for RTP by the heuristic (it can look like RTP
# version 2 by chance): DNS 53, DHCP 67/68, NTP 123, NetBIOS 137/138, SNMP 161/162,
# QUIC/HTTP3 443, IKE 500/4500, syslog 514, SSDP 1900, mDNS 5353, LLMNR 5355 (IANA
# service-name registry). SDP-announced ports are always accepted.
_NOT_RTP_PORTS = np.array([53, 67, 68, 123, 137, 138, 161, 162, 443, 500, 514, 1900, 4500, 5353, 5355])

# Heuristic: packets looked at before a flow is accepted as RTP or rejected.
_PROBE_PACKETS = 16

# Packets with a header extension read per flow for the MID (RFC 8843 §15) when a user's
# SDP names its ID: browsers send it on a stream's first packets (Chromium: the first 5-124
# packets of each stream of the calls in data/video/webrtc), until the receiver acknowledges.
_MID_LOOK = 256

#: After an RTCP BYE of its SSRC (RFC 3550 §6.6) or a SIP BYE/CANCEL of its call (RFC 3261
#: §15), a stream ends once it has been silent this long: RFC 3550 §6.2.1 lets a receiver
#: keep a participant that sent a BYE "for an appropriate delay" since RTP packets may still
#: be on the way; 2 s is the RTCP BYE timer of Microsoft's RTP profile ([MS-RTPME] §3.2.2).
BYE_GRACE_S = 2.0

# a stream, its key: thousands at a trunk's end (qoe._records)
_make_stream, _make_key = builder(RtpStream), builder(StreamKey, positional=True)


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
    ``_first_copies``) are set aside first: a capture that holds every packet twice
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


class _Scanner:
    """Reads UDP batches once: SIP, RTCP and RTP flows, with statistics as it goes.

    RTP packets are grouped into flows (UDP direction and SSRC, :class:`FlowTable`). A
    flow is held while undecided (its packets in one shared buffer), then taken as RTP
    (announced by SDP, :class:`SipBook`, or its first packets pass the heuristic) or
    rejected. The packets of every accepted flow of a batch go to one
    :class:`StreamStats` update at once; per flow there is Python work only when it is
    first seen, decided and reported. RTCP goes to an :class:`RtcpBook`, and the first
    packets of each flow to the :class:`SrtpSampler`.
    """

    def __init__(self, *, keep_packets: bool, heuristic: bool, min_packets: int, reorder_window: int,
                 first_ns: int | None = None, event_jitter: bool = False, max_streams: int | None = None,
                 max_flows: int | None = None, loss_rule: str = "rfc3550", jitter_rule: str = "every-packet",
                 infer_clock: bool = True, sdp: Sequence[SdpMedia] = (), stream_timeout_s: float | None = None,
                 streaming: bool = False) -> None:
        # what was asked
        self.timeout_ns = None if stream_timeout_s is None else int(stream_timeout_s * 1e9)
        self.grace_ns = int(min(BYE_GRACE_S, stream_timeout_s) * 1e9) if stream_timeout_s is not None else None
        self.streaming = streaming  # hand on whole calls as they end (iter_scan), keep nothing of them
        # streams ended: (first frame, flow id, stream, its packet table or None, its MID or None)
        self.done: list[tuple[int, int, RtpStream, Any, str | None]] = []
        self.ended_streams = 0  # streams ended before the capture did
        self.out: list[tuple[list[RtpStream], list[Any]]] = []  # (streaming) groups ready, not yet handed on
        self.keep = keep_packets
        self.max_streams = max_streams
        self.max_flows = max_flows
        self.event_jitter = event_jitter
        self.heuristic = heuristic
        self.min_packets = min_packets
        self.probe_packets = max(_PROBE_PACKETS, min_packets)
        self.loss_rule = loss_rule
        self.jitter_rule = jitter_rule
        self.infer_clock = infer_clock
        self.reorder_window = reorder_window
        self.user_sdp = list(sdp)
        self.user_ssrcs = {x for m in self.user_sdp for x in m.ssrcs}
        # the MID header extension's IDs (a=extmap, RFC 8285 §5; RFC 8843 §15), and per flow
        # the MID its packets carry (flow id -> text) and the packets looked at for it
        self.mid_ids = frozenset(i for m in self.user_sdp for i, uri in m.extmap.items() if uri == SDES_MID)
        self.mid_of: dict[int, str] = {}
        self.mid_looked = np.zeros(0, dtype=np.int64)  # per flow; _MID_LOOK once its MID is known
        # the flows, their held packets, and the streams taken
        self.flows = FlowTable()
        self.held = HeldPackets.empty(keep_packets)  # packets of undecided flows
        self.n_streams = 0  # flows taken as RTP streams
        self.provisional: set[int] = set()  # flows taken at the end on probation (_provisional)
        self.over_limit = 0  # flows left out for max_streams
        self.flows_left_out = 0  # datagrams of flows left out for max_flows
        self.call_id: dict[int, str | None] = {}  # flow id -> its call (announced streams)
        self.media: dict[int, SdpMedia] = {}  # flow id -> its SDP media section (announced streams)
        # packets of accepted flows: in temporary files, not in memory. Without keep_packets
        # their headers only (no payloads) when the clock may be inferred or an SDP applied,
        # so that both read the same packets whichever way the scan was asked for
        self.store = PacketStore() if keep_packets or infer_clock or self.user_sdp or jitter_rule != "every-packet" else None
        # without keep_packets, an SDP of the user's or another jitter rule, the packet headers
        # serve only to infer the clock of a stream whose main payload type has none: only the
        # flows that carry such a type are stored (from their first packet, else marked partial)
        self.store_all = keep_packets or bool(self.user_sdp) or jitter_rule != "every-packet"
        self.stored = np.zeros(0, dtype=bool)  # flow id -> its headers are being stored
        self.partial: set[int] = set()  # flows whose headers were stored from a later packet on
        self.clocked: dict[int, np.ndarray] = {}  # announced flow id -> its payload types with a clock
        self.stats = StreamStats(reorder_window=reorder_window, loss_rule=loss_rule)
        # the other books: SIP, RTCP, SRTP samples
        self.sip = SipBook(keep_all=not streaming)
        self.rtcp = RtcpBook()
        self.srtp = SrtpSampler()
        self.demux = DemuxBook()  # STUN, DTLS, TURN beside RTP (RFC 7983)
        self.header_bytes = HeaderByteBook()  # RTP header and padding bytes per flow (headerBytesReceived)
        # the capture
        self.addresses: tuple[str, ...] = ()
        self.encaps: tuple[str, ...] = ()  # address code -> its encapsulation (() without tunnels)
        self.first_ns = first_ns  # the capture's frame 1; else the first UDP datagram's
        self.udp = 0
        self.last_ns: int | None = None  # the latest UDP datagram's time
        self.cut_packets = 0  # RTP packets a snap length cut
        self.snap = 0  # the longest such frame captured (bytes): the snap length, as near as it shows
        self.cut_of: dict[int, int] = {}  # flow id -> its packets a snap length cut

    # -- per batch ---------------------------------------------------------------
    def batch(self, b: Any) -> None:
        """Take one batch of UDP datagrams (a :class:`PreparedBatch`, or a UdpBatch prepared
        here). With a timeout, a flow that has a packet in the batch after its deadline
        (:meth:`_deadlines`) is ended at that packet first, so that the packet starts a new
        segment whatever the batch size."""
        pb = b if isinstance(b, PreparedBatch) else prepare(b, self.timeout_ns)
        if self.timeout_ns is not None:
            k = self._first_late(pb)
            while k is not None:
                b = pb.batch
                if k > 0:
                    self._batch(prepare(_rows(b, slice(0, k)), self.timeout_ns))
                pb = prepare(_rows(b, slice(k, len(b))), self.timeout_ns)
                self.expire(now=int(pb.batch.ts_ns[0]))
                if self.streaming:  # handed on before the late packet's new segment begins
                    self.out.extend(self.ready())
                k = self._first_late(pb)
        self._batch(pb)

    def _first_late(self, pb: PreparedBatch) -> int | None:
        """The first datagram of ``pb`` that may be RTP of a flow past its deadline: of a
        tracked flow (:meth:`_deadlines`), or of a flow whose previous packet in ``pb`` came
        more than the timeout before it (looked for only when ``pb`` spans that long)."""
        b = pb.batch
        if len(b) == 0:
            return None
        fl = self.flows
        ts = b.ts_ns
        t_max = int(ts.max())
        long_batch = t_max - int(ts.min()) > self.timeout_ns  # type: ignore[operator]
        tracked = np.flatnonzero((fl.state == RTP) | (fl.state == PROBE))
        dl = self._deadlines(tracked) if tracked.size else None
        known_late = dl is not None and t_max > dl.min()
        if not (known_late or long_batch):
            return None
        cand = pb.late_rows
        if cand.size == 0:
            return None
        first = None
        if known_late:
            fid = self._late_fids(pb)
            at = np.full(fl.state.size, np.inf)
            at[tracked] = dl
            late = (fid >= 0) & (ts[cand] > at[np.maximum(fid, 0)])
            if late.any():
                first = int(cand[late][0])
        if long_batch:  # a flow silent past the timeout between two of its packets of this batch
            k = pb.gap_row if pb.gap_for == self.timeout_ns else first_gap(pb, self.timeout_ns)  # type: ignore[arg-type]
            if k is not None:
                first = k if first is None else min(first, k)
        return first

    def _late_fids(self, pb: PreparedBatch) -> np.ndarray:
        """The flow of each of ``pb.late_rows`` (-1 where not known), looked up once per key
        and kept in ``pb`` for :meth:`_rtp` (the flow table does not change in between)."""
        if pb.late_fid is None:
            pb.late_fid = self.flows.known(pb.key1, pb.key2)[pb.late_key]
        return pb.late_fid

    def _deadlines(self, fids: np.ndarray) -> np.ndarray:
        """When tracked flows ``fids`` end if no packet of theirs comes first (ns; ended when
        a later datagram is seen). An undecided flow: its latest packet + the timeout. A
        stream: its latest packet + the timeout (:data:`BYE_GRACE_S` after an RTCP BYE of
        its SSRC or a SIP BYE/CANCEL of its call), and not before
        :data:`ACTIVE_AT_END_INTERVALS` mean packet intervals."""
        fl = self.flows
        out = (fl.last_ns[fids] + self.timeout_ns).astype(np.float64)
        rtp = fl.state[fids] == RTP
        if rtp.any():
            f = fids[rtp]
            st = self.stats
            sid = fl.sid[f]
            n = st.n[sid]
            last = st.last_arr[sid]
            interval = (last - st.first_arr[sid]) / np.maximum(n - 1, 1)
            bye = np.zeros(f.size, dtype=bool)
            if self.rtcp.bye:
                bye |= np.isin(fl.fk2[f] & 0xFFFFFFFF, np.fromiter(self.rtcp.bye, dtype=np.int64))
            if self.sip.ended:
                ended = self.sip.ended
                bye |= np.array([self.call_id.get(x) in ended for x in f.tolist()], dtype=bool)
            wait = np.where(bye, self.grace_ns, self.timeout_ns)
            out[rtp] = np.where(n > 0, last + np.maximum(wait, ACTIVE_AT_END_INTERVALS * interval), np.inf)
        return out

    def _batch(self, pb: PreparedBatch) -> None:
        b = pb.batch
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
        if b.data.size == 0 or not b.lengths.any():
            return
        addrs = b.addresses
        for i in pb.sip.tolist():
            self.sip.add(b.payload_of(i), time_ns=int(b.ts_ns[i]), frame=int(b.index[i]),
                         src=addrs[b.src[i]], sport=int(b.sport[i]), dst=addrs[b.dst[i]], dport=int(b.dport[i]))
        if pb.other.size:
            self.demux.add(b, pb.other)
        for i in pb.rtcp.tolist():
            data = b.payload_of(i)
            encrypted = _looks_srtcp(data)
            self.rtcp.add_feedback((int(b.src[i]), int(b.sport[i]), int(b.dst[i]), int(b.dport[i])),
                                   feedback_kinds(data, encrypted=encrypted))
            items = parse_rtcp(data)
            if items and encrypted:  # encrypted reports: only the sender's SSRC is in clear
                items = [{"type": items[0]["type"], "ssrc": items[0]["ssrc"]}]
            if items:
                self.rtcp.add(int(b.ts_ns[i]), items)
        if pb.rows.size:
            self._rtp(pb)
        elif self.sip.new_announcements:
            self._feed(self._decide(final=False))

    def _rtp(self, pb: PreparedBatch) -> None:
        b, h, rows = pb.batch, pb.h, pb.rows
        u8 = b.data  # payload i: u8[starts[i] : starts[i] + lengths[i]]
        s, ln = b.starts[rows], b.lengths[rows]
        fl = self.flows
        fid = self._late_fids(pb)[pb.in_late]
        miss = fid < 0
        new = np.zeros(0, dtype=np.int64)
        rank = None  # of the packets of flows first seen here: their place in their flow
        if miss.any():  # packets of flows first seen here (or whose hash collided): by key
            o = pb.rtp_order[miss[pb.rtp_order]]
            key = pb.late_key[pb.in_late[o]]
            starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
            first = o[starts]  # each key's first packet
            k1, k2 = pb.key1[key[starts]], pb.key2[key[starts]]
            ends = _KeyEnds(b, rows[first])
            found = fl.lookup(k1, k2)
            fresh = np.flatnonzero(found < 0)
            if fresh.size:
                fresh = self._admit(fresh, first, found, ends, lens=np.diff(np.append(starts, o.size)))
            if fresh.size:
                keys = [(int(a), int(c), int(d), int(e), int(f))
                        for a, c, d, e, f in zip(ends.src[fresh].tolist(), ends.dst[fresh].tolist(),
                                                 ends.sport[fresh].tolist(), ends.dport[fresh].tolist(),
                                                 h.ssrc[first[fresh]].tolist())]
                new = fl.add(keys, k1[fresh], k2[fresh], b.index[rows[first[fresh]]])
                self.srtp.grow(len(fl))
                found[fresh] = new
            lens = np.diff(np.append(starts, o.size))
            fid[o] = np.repeat(found, lens)
            rank = np.full(rows.size, -1, dtype=np.int64)
            rank[o] = np.arange(o.size) - np.repeat(starts, lens)
        if self.mid_ids:
            self._read_mids(u8, s, fid, h)
        if self.timeout_ns is not None:  # each flow's latest arrival, for the silence timeout
            np.maximum.at(fl.last_ns, fid, b.ts_ns[rows].astype(np.int64, copy=False))
        wire = h.payload_end - h.payload_start
        cut = None if b.cut is None else b.cut[rows]
        if cut is not None and cut.any():  # a snap length cut these: their padding count was not captured
            c = np.flatnonzero(cut)
            self.cut_packets += int(c.size)
            for f, k in zip(*np.unique(fid[c], return_counts=True)):
                self.cut_of[int(f)] = self.cut_of.get(int(f), 0) + int(k)
            self.snap = max(self.snap, int((b.wire_len[rows[c]] - cut[c]).max()))
            wire[c] = (s[c] + ln[c]) - h.payload_start[c] + cut[c]
            h.payload_end[c] = s[c] + ln[c]
        # RTP header and padding bytes (W3C headerBytesReceived); a cut packet's padding is unknown
        length = ln if cut is None else ln + cut
        self.header_bytes.add(fid, h.payload_start - s, s + ln - h.payload_end, h.padding, length, len(fl))
        self.srtp.sample(fid, h, u8, rank)
        cols = {
            "frame": b.index[rows].astype(np.int64, copy=False), "arr": b.ts_ns[rows].astype(np.int64, copy=False),
            "seq": h.seq, "ts": h.timestamp, "pt": h.payload_type, "mk": h.marker, "wire": wire,
        }
        st = fl.state[fid]
        pay = None
        if self.keep:  # payloads of flows taken or undecided go to the store, a flow's together
            pay = np.full((rows.size, 2), -1, dtype=np.int64)
            put = np.flatnonzero(st != REJECT)
            put = put[stable_order(fid[put], len(fl))]
            pay[put, 0] = self.store.put_payloads(u8.data, h.payload_start[put], h.payload_end[put])  # type: ignore[union-attr]
            pay[put, 1] = h.payload_end[put] - h.payload_start[put]
        pk = HeldPackets(fid, cols, pay)
        is_rtp = st == RTP
        if is_rtp.all():
            self._feed(pk)
            if self.sip.new_announcements:
                self._feed(self._decide(final=False))
            return
        to_stats = pk.take(np.flatnonzero(is_rtp))
        probing = np.flatnonzero(st == PROBE)
        # An undecided flow is judged on its first packets: those are held; its later
        # ones in this batch wait aside, and follow them if the flow is accepted.
        place = self._places(fid, probing, rank)
        early = probing[place < self.probe_packets]
        late = probing[place >= self.probe_packets]
        if early.size:
            self.held = HeldPackets.concat([self.held, pk.take(early)])
            fl.held_n += np.bincount(fid[early], minlength=fl.held_n.size)
        released = self._decide(final=False, new_flows=new if new.size else None)
        parts = [to_stats, released]
        if late.size:
            parts.append(pk.take(late[fl.state[fid[late]] == RTP]))
        self._feed(HeldPackets.concat([p for p in parts if len(p)]) if any(len(p) for p in parts) else to_stats)

    def _read_mids(self, u8: np.ndarray, starts: np.ndarray, fid: np.ndarray, h: Any) -> None:
        """The MID (RFC 8843 §15) of flows that have none yet, from their packets' RFC 8285
        header extension (after the CSRC list, RFC 3550 §5.3.1): the first one seen is kept."""
        n = len(self.flows)
        if self.mid_looked.size < n:
            self.mid_looked = np.concatenate((self.mid_looked, np.zeros(n - self.mid_looked.size, dtype=np.int64)))
        look = np.flatnonzero(h.extension & (self.mid_looked[fid] < _MID_LOOK))
        for i in look.tolist():
            f = int(fid[i])
            if self.mid_looked[f] >= _MID_LOOK:
                continue
            self.mid_looked[f] += 1
            at = int(starts[i]) + RTP_FIXED_HEADER + 4 * int(h.csrc_count[i])
            profile = int(u8[at]) << 8 | int(u8[at + 1])
            words = int(u8[at + 2]) << 8 | int(u8[at + 3])
            for ident, data in extension_elements(profile, u8[at + 4:at + 4 + 4 * words].tobytes()):
                if ident in self.mid_ids and data:
                    self.mid_of[f] = data.decode("ascii", "replace")
                    self.mid_looked[f] = _MID_LOOK
                    break

    def _admit(self, fresh: np.ndarray, first: np.ndarray, found: np.ndarray, ends: _KeyEnds, *,
               lens: np.ndarray) -> np.ndarray:
        """Of new flows ``fresh`` (indices into ``first``, their first packets, and into
        ``ends``, those packets' addresses and ports), those the scan tracks. Flows to or
        from a port that is never RTP (``_NOT_RTP_PORTS``: DNS, NTP, ...; one flow per query
        would fill the table) are not tracked; under ``max_flows`` (flows tracked that are
        not streams), the new flows first seen are tracked, and past it only those a SIP/SDP
        announcement names. The others get the rejected sink flow in ``found``; the
        datagrams of those left out for ``max_flows`` are counted."""
        a = self.addresses

        def announced(keys: np.ndarray) -> np.ndarray:
            if not self.sip.announced:
                return np.zeros(keys.size, dtype=bool)
            return np.array([self.sip.names(a[ends.src[i]], int(ends.sport[i]), a[ends.dst[i]], int(ends.dport[i]))
                             for i in keys.tolist()], dtype=bool)

        never = np.isin(ends.sport[fresh], _NOT_RTP_PORTS) | np.isin(ends.dport[fresh], _NOT_RTP_PORTS)
        if never.any():
            never[never] = ~announced(fresh[never])
        out = fresh[never]
        fresh = fresh[~never]
        room = None if self.max_flows is None else self.max_flows - (len(self.flows) - self.n_streams)
        if room is not None and fresh.size > room:
            fresh = fresh[np.argsort(first[fresh], kind="stable")]  # the first seen are kept
            take, late = fresh[:max(room, 0)], fresh[max(room, 0):]
            named = announced(late)  # an announced stream is never left out
            fresh = np.sort(np.concatenate((take, late[named])))
            late = late[~named]
            self.flows_left_out += int(lens[late].sum())
            out = np.concatenate((out, late))
        if out.size:
            found[out] = self.flows.sink_id()
            self.srtp.grow(len(self.flows))
        return fresh

    def _places(self, fid: np.ndarray, rows: np.ndarray, rank: np.ndarray | None) -> np.ndarray:
        """The place of packets ``rows`` among their undecided flow's packets (0 = its
        first): the flow's held packets come first, then its packets of this batch.
        ``rank`` (-1 where not known) ranks the packets already grouped by key."""
        f = fid[rows]
        place = self.flows.held_n[f].copy()
        ranked = np.zeros(rows.size, dtype=bool) if rank is None else rank[rows] >= 0
        if ranked.any():
            place[ranked] += rank[rows[ranked]]  # type: ignore[index]
        rest = np.flatnonzero(~ranked)
        if rest.size:  # flows held since an earlier batch: rank their packets here
            o = stable_order(f[rest], len(self.flows))
            place[rest[o]] += _Segments(f[rest][o]).pos
        return place

    def _ends(self, fid: int) -> tuple[str, int, str, int]:
        """(source address, source port, destination address, destination port) of flow ``fid``."""
        src, dst, sport, dport, _ = self.flows.keys[fid]
        a = self.addresses
        return a[src], sport, a[dst], dport

    def _announcement(self, fid: int) -> tuple[str | None, SdpMedia] | None:
        """(Call-ID, media) of the SDP announcement that flow ``fid`` follows (:meth:`SipBook.announcement`)."""
        if not self.sip.announced:
            return None
        return self.sip.announcement(*self._ends(fid), int(self.flows.first_frame[fid]))

    def _srtp(self, fid: int, pt: int, codec: str | None, media: SdpMedia | None) -> SrtpInfo | None:
        """Whether flow ``fid`` is SRTP (:mod:`qoe.rtp.srtp`), and the sender's SDES key.

        Announced as SRTP by either end's SDP (:meth:`SipBook.both_ends`); else, for a codec
        with a fixed number of payload bytes per tick, left to the payload heuristic
        (:class:`SrtpSampler`). The key is the sender's ``a=crypto`` (RFC 4568 §5.1,
        :func:`qoe.rtp.sip.sender_crypto`).
        """
        sdes = None
        if self.sip.announced:
            s_media, r_media = self.sip.both_ends(*self._ends(fid), int(self.flows.first_frame[fid]))
            sdes = sender_crypto(s_media, r_media)
            if (r_media is not None and r_media.secure) or (s_media is not None and s_media.secure):
                return SrtpInfo(found_by="sdp", sdes=sdes)
        channels = 1
        if media is not None and pt in media.rtpmap:
            channels = media.rtpmap[pt][2]
        per_tick = bytes_per_tick(pt, codec, channels)
        if per_tick is not None:
            self.srtp.judge_later(fid, per_tick, sdes)
        return None

    def _decide(self, *, final: bool, new_flows: np.ndarray | None = None, only: np.ndarray | None = None) -> HeldPackets:
        """Accept or reject undecided flows; the held packets of the accepted ones.

        SDP-announced flows are accepted at once (new flows, or all undecided ones when
        SIP announced something new); the heuristic judges a flow's first
        ``max(16, min_packets)`` packets when it has them (at the end of the capture,
        whatever it has, if at least ``min_packets``; the flows it leaves out then stay on
        probation, :meth:`_provisional`). ``only``: decide these undecided flows only, as at
        the end of the capture (they have been silent past the timeout).
        """
        fl = self.flows
        undecided = np.flatnonzero(fl.state == PROBE) if only is None else only
        if undecided.size == 0:
            if only is None:
                self.sip.new_announcements = False
            return HeldPackets.empty(self.keep)
        if final or self.sip.new_announcements:
            check = undecided
        elif new_flows is not None:
            check = new_flows[fl.state[new_flows] == PROBE]
        else:
            check = np.zeros(0, dtype=np.int64)
        if only is None:
            self.sip.new_announcements = False
        accept_sdp = [f for f in check.tolist() if self._announcement(f) is not None] if self.sip.announced else []
        for f in accept_sdp:
            self._accept(f)
        if final:
            judge = undecided[(fl.state[undecided] == PROBE) & (fl.held_n[undecided] >= self.min_packets)]
            short = undecided[(fl.state[undecided] == PROBE) & (fl.held_n[undecided] < self.min_packets)]
        else:
            judge = undecided[(fl.state[undecided] == PROBE) & (fl.held_n[undecided] >= self.probe_packets)]
        if judge.size:
            self._judge(judge, final=final)
        if final:  # after the flows the heuristic took, which come first under max_streams
            self._provisional(short)
        decided = fl.state[self.held.fid] != PROBE
        if not decided.any():
            return HeldPackets.empty(self.keep)
        out = self.held.take(np.flatnonzero(decided & (fl.state[self.held.fid] == RTP)))
        self.held = self.held.take(np.flatnonzero(~decided))
        return out

    def _provisional(self, fids: np.ndarray) -> None:
        """Flows ``fids`` that ended on probation: fewer than ``min_packets`` packets, or
        fewer than ``max(16, min_packets)`` that the heuristic did not take.

        An unknown flow stays on probation (RFC 3550 A.1: a source is valid after
        MIN_SEQUENTIAL = 2 packets in sequence; here ``min_packets`` and the heuristic):
        those are rejected, so that a few datagrams of another protocol are not taken for
        RTP. An RTX stream (RFC 4588) is not an unknown source, though: its media stream
        vouches for it, and a clean call's RTX stream holds a few bandwidth probes (one in
        ``vp8-two-video`` of data/video/webrtc; six with timestamps that jump, which the
        heuristic rejects, in ``vp8-clean``). So these flows are taken provisionally
        (:attr:`provisional`), with the heuristic on and off the never-RTP ports, and
        :meth:`finish` keeps one only if it is tied to a media stream as its RTX
        (:func:`qoe.rtp._bundle.tie_rtx`: the SDP's ``a=ssrc-group:FID``, its payload
        type's ``a=fmtp apt=``, or timestamps of the media stream) or the user's SDP lists
        its SSRC (``a=ssrc``: signalled, not unknown).
        """
        fl = self.flows
        if fids.size == 0:
            return
        if not self.heuristic:
            fl.state[fids] = REJECT
            return
        keys = np.asarray([fl.keys[f] for f in fids.tolist()], dtype=np.int64).reshape(-1, 5)
        ok = (fl.held_n[fids] >= 1) & ~(np.isin(keys[:, 2], _NOT_RTP_PORTS) | np.isin(keys[:, 3], _NOT_RTP_PORTS))
        # every tie is on a media stream's UDP direction (RFC 4588 §5.2, SSRC multiplexing): only
        # flows there can be one, so that a capture's many short UDP flows cost nothing here
        directions = {fl.keys[f][:4] for f in np.flatnonzero(fl.state == RTP).tolist()}
        ok &= np.array([tuple(k[:4]) in directions or k[4] in self.user_ssrcs for k in keys.tolist()], dtype=bool)
        fl.state[fids[~ok]] = REJECT
        take = fids[ok]
        if self.max_streams is not None:
            room = max(0, self.max_streams - self.n_streams)
            fl.state[take[room:]] = REJECT  # not counted as left out: most are not RTP at all
            take = take[:room]
        if take.size:
            self.n_streams += int(take.size)
            fl.state[take] = RTP
            fl.sid[take] = self.stats.add(int(take.size))
            self.provisional.update(take.tolist())

    def _judge(self, fids: np.ndarray, *, final: bool = False) -> None:
        """The heuristic verdict on flows ``fids`` (all undecided, none announced)."""
        fl = self.flows
        if not self.heuristic:
            fl.state[fids] = REJECT
            return
        keys = np.asarray([fl.keys[f] for f in fids.tolist()], dtype=np.int64).reshape(-1, 5)
        # well-known non-RTP ports, and announced RTCP ports (RFC 3550 §11, RFC 3605)
        ok = ~(np.isin(keys[:, 2], _NOT_RTP_PORTS) | np.isin(keys[:, 3], _NOT_RTP_PORTS))
        if self.sip.rtcp_ports:
            a = self.addresses
            rtcp_ports = self.sip.rtcp_ports
            ok &= np.array([(a[k[1]], k[3]) not in rtcp_ports and (a[k[0]], k[2]) not in rtcp_ports
                            for k in keys.tolist()], dtype=bool)
        rows = np.flatnonzero(np.isin(self.held.fid, fids))
        rows = rows[stable_order(self.held.fid[rows], len(self.flows))]
        seg = _Segments(self.held.fid[rows])
        first = rows[seg.pos < self.probe_packets]  # a flow's first packets only
        seg = _Segments(self.held.fid[first])
        looks = _looks_like_rtp(seg, self.held.seq[first], self.held.ts[first], self.held.pt[first])
        verdict = np.zeros(fids.size, dtype=bool)
        verdict[np.searchsorted(fids, seg.ids)] = looks & (seg.lens >= self.min_packets)
        if self.user_ssrcs:  # the user's SDP lists these SSRCs (a=ssrc): RTP whatever the heuristic says
            verdict |= np.isin(keys[:, 4], list(self.user_ssrcs)) & (fl.held_n[fids] >= 1)
        take = fids[verdict & ok]
        fl.state[fids[~(verdict & ok)]] = REJECT
        if self.max_streams is not None and self.n_streams + take.size > self.max_streams:
            room = max(0, self.max_streams - self.n_streams)
            self.over_limit += int(take.size) - room
            fl.state[take[room:]] = REJECT
            take = take[:room]
        self.n_streams += int(take.size)
        fl.state[take] = RTP
        if take.size:  # not announced: the static clock-rate and comfort-noise tables
            fl.sid[take] = self.stats.add(int(take.size))
        if final:  # on probation at the end of the capture: kept if it turns out to be an RTX stream
            self._provisional(fids[~verdict & ok])

    def _accept(self, fid: int) -> None:
        """Take flow ``fid`` as an SDP-announced RTP stream."""
        fl = self.flows
        if self.max_streams is not None and self.n_streams >= self.max_streams:
            fl.state[fid] = REJECT
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
        fl.state[fid] = RTP
        fl.sid[fid] = self.stats.add(clocks=clock_table(rates), cn=cn_table(cn))[0]
        self.clocked[fid] = np.array([p for p in range(128) if _codec_of(p, media)[1] is not None], dtype=np.int64)

    def _feed(self, pk: HeldPackets) -> None:
        if len(pk) == 0:
            return
        sid = self.flows.sid[pk.fid]
        put = pk if self.store is None or self.store_all else self._to_store(pk, sid)
        self.stats.update(sid, pk.arr, pk.seq, pk.ts, pk.pt, pk.mk)
        if self.store is not None and len(put):
            if put.pay is None:  # headers only: every payload empty
                off = length = np.zeros(len(put), dtype=np.int64)
            else:
                off, length = put.pay[:, 0], put.pay[:, 1]
            self.store.put_packets(put.fid, put.frame, put.arr, put.seq, put.ts, put.pt, put.mk, off, length, put.wire)

    def _to_store(self, pk: HeldPackets, sid: np.ndarray) -> HeldPackets:
        """Of packets ``pk`` (before the statistics take them), those of flows whose headers
        are stored for clock inference: flows that have carried a payload type without a
        clock rate (:func:`_codec_of`: none from their SDP, none static). A flow is stored
        from the batch it first carries one on; if it had packets before, it is partial
        (:attr:`partial`: its clock is not inferred from part of it)."""
        if self.stored.size < len(self.flows):
            self.stored = np.append(self.stored, np.zeros(len(self.flows) - self.stored.size, dtype=bool))
        fid, pt = pk.fid, pk.pt
        clockless = ~_STATIC_CLOCK[pt & 0x7F]
        if self.clocked:
            ann = np.flatnonzero(np.fromiter((f in self.clocked for f in fid.tolist()), dtype=bool, count=fid.size))
            if ann.size:  # announced flows: their SDP's rtpmap decides
                key = fid[ann] * 128 + pt[ann]
                flows = np.unique(fid[ann])
                ok = np.concatenate([f * 128 + self.clocked[f] for f in flows.tolist()])
                clockless[ann] = ~np.isin(key, ok)
        first = clockless & ~self.stored[fid]
        new = np.unique(fid[first]) if first.any() else np.zeros(0, dtype=np.int64)
        if new.size:
            self.stored[new] = True
            seen = new[self.stats.n[self.flows.sid[new]] > 0]  # packets of theirs were not stored
            self.partial.update(seen.tolist())
        keep = self.stored[fid]
        return pk if keep.all() else pk.take(np.flatnonzero(keep))

    # -- at the end --------------------------------------------------------------
    def tracked_flows(self) -> int:
        """UDP flows tracked now: undecided, or taken as RTP and not ended."""
        st = self.flows.state
        return int(np.count_nonzero((st == PROBE) | (st == RTP)))

    def finish(self, path: str) -> RtpScan:
        """The end of the capture: every flow decided, every stream still tracked built.
        Streaming (:func:`iter_scan`): the scan without streams or calls (they were handed
        on); else every stream and call of the capture."""
        self._feed(self._decide(final=True))
        if self.flows_left_out:
            warnings.warn(f"{path}: {self.flows_left_out} UDP datagram(s) not looked at for RTP: more than max_flows="
                          f"{self.max_flows} UDP flows that are not RTP streams were tracked (an RTP stream that started "
                          "after that without SIP/SDP announcing it is missed)", QoEWarning, stacklevel=3)
        if self.over_limit:
            warnings.warn(f"{path}: {self.over_limit} RTP stream(s) left out: more than max_streams="
                          f"{self.max_streams} streams (the first {self.max_streams} are reported)",
                          QoEWarning, stacklevel=3)
        if self.cut_packets:
            warnings.warn(f"{path}: {self.cut_packets} RTP packet(s) cut by the capture's snap length ({self.snap} bytes): "
                          "payloads are partial (sizes and bitrates use the lengths on the wire)", QoEWarning, stacklevel=3)
        fl = self.flows
        fids = np.flatnonzero(fl.state == RTP)
        self._end(fids[np.argsort(fl.first_frame[fids], kind="stable")])
        if self.streaming:
            return RtpScan(path=path, streams=(), calls=(), rtcp=self.rtcp.summaries(), first_ns=self.first_ns,
                           udp_packets=self.udp, rtcp_packets=self.rtcp.packets, last_ns=self.last_ns)
        self.done.sort(key=lambda x: (x[0], x[1]))  # in order of their first packet
        streams = self._complete(self.done)
        self.done = []
        return RtpScan(
            path=path,
            streams=tuple(streams),
            calls=tuple(group_calls(self.sip.messages)),
            rtcp=self.rtcp.summaries(),
            first_ns=self.first_ns,
            udp_packets=self.udp,
            rtcp_packets=self.rtcp.packets,
            last_ns=self.last_ns,
        )

    def _cut_note(self) -> str:
        return (f"the capture was cut at {self.snap} bytes per frame (a snap length): payloads are partial; "
                "payload sizes are the wire's (RFC 768 UDP length), RTP padding unknown on the cut packets")

    # -- streams that end ------------------------------------------------------------
    def expire(self, now: int | None = None) -> None:
        """End what has gone quiet by ``now`` (default: the latest datagram seen).

        A tracked flow whose deadline (:meth:`_deadlines`) is before ``now`` ends: an
        undecided one is decided as at the end of the capture; a stream is built
        (:meth:`_end`) and its state released, and a later packet of its flow starts a new
        stream (a second segment). A stream is never ended before
        :data:`ACTIVE_AT_END_INTERVALS` of its mean packet interval, so that it would not
        have been :attr:`RtpStream.active_at_end` at the end of the capture either.
        """
        if self.timeout_ns is None or self.last_ns is None:
            return
        now = self.last_ns if now is None else now
        fl = self.flows
        tracked = np.flatnonzero((fl.state == RTP) | (fl.state == PROBE))
        if tracked.size == 0:
            return
        gone = tracked[self._deadlines(tracked) < now]
        probe = gone[fl.state[gone] == PROBE]
        if probe.size:
            self._feed(self._decide(final=True, only=probe))
        fids = gone[fl.state[gone] == RTP]
        if fids.size:
            self.ended_streams += int(fids.size)
            self._end(fids[np.argsort(fl.first_frame[fids], kind="stable")])
        if self.streaming and self.sip.by_call:  # calls no stream follows, silent past the timeout
            keep = {c for c in (self.call_id.get(f) for f in np.flatnonzero(fl.state == RTP).tolist()) if c}
            keep.update(x[2].call_id for x in self.done if x[2].call_id)
            self.sip.forget_idle(now - self.timeout_ns, keep)

    def _end(self, fids: np.ndarray) -> None:
        """Build the streams of flows ``fids`` (in order of their first packet) into
        :attr:`done` and release their state (statistics row, flow key, per-flow books)."""
        if fids.size == 0:
            return
        fl = self.flows
        a = self.addresses
        sids = fl.sid[fids]
        stats = self.stats.results(sids)
        ranked = self.stats.payload_types_seen(sids)
        streams = []
        tables = []  # each stream's packets (headers only without keep_packets), for tie_rtx
        stored = self.store.packets_of(fids) if self.store is not None else [None] * fids.size
        header_bytes = self.header_bytes.settled(fids)
        for i, (fid, st) in enumerate(zip(fids.tolist(), stats)):
            media = self.media.get(fid)
            call_id = self.call_id.get(fid)
            found_by = "sdp" if media is not None else "heuristic"
            if media is None and self.sip.announced:  # SDP seen only after the flow was taken as RTP
                ann = self._announcement(fid)
                if ann is not None:
                    call_id, media = ann
            pts = ranked[i]
            main = pts[0]
            src, dst, sport, dport, ssrc = fl.keys[fid]
            packets = stored[i]  # headers only without keep_packets
            notes: tuple[str, ...] = ()
            if media is None and self.user_sdp:  # the user's SDP, matched under BUNDLE (not by port)
                match = section_for(ssrc, main, self.user_sdp, mid=self.mid_of.get(fid))
                if match is not None:
                    media = match[0]
                    notes = (f"described by the given SDP's {media.media} section"
                             f"{f' (mid {media.mid})' if media.mid else ''}, matched by {match[1]}",)
                    if packets is not None:  # the statistics again, with the section's clock rates
                        st = rtp_stats(packets, None, clock_rates={p: r for p, (_, r, _) in media.rtpmap.items() if r},
                                       reorder_window=self.reorder_window, loss_rule=self.loss_rule)
            codec, rate = _codec_of(main, media)
            kind = media_kind(codec, rate, media.media if media is not None else None)
            if rate is None and packets is not None and self.infer_clock and fid in self.partial:
                notes = (*notes, "clock rate not inferred: the stream's first packets carried payload types with a "
                                 "clock and were not kept (scan with keep_packets=True to infer it)")
            elif rate is None and packets is not None and self.infer_clock:
                guess = infer_clock(packets)
                if guess is not None:  # the statistics again, now with a clock for the jitter
                    rate, kind, notes = guess.clock_rate, guess.media, (*notes, guess.evidence)
                    st = rtp_stats(packets, rate, reorder_window=self.reorder_window, loss_rule=self.loss_rule)
            if packets is not None:
                st = with_jitter(st, packets, rate, self.jitter_rule)
            if fid in self.cut_of:
                notes = (*notes, f"{self._cut_note()} ({self.cut_of[fid]} of {st.packets} packets cut)")
            tables.append(packets)
            streams.append(
                _make_stream(
                    key=_make_key(a[src], sport, a[dst], dport, ssrc, self.encaps[src] if self.encaps else ""),
                    payload_type=main,
                    codec=codec,
                    clock_rate=rate,
                    packets=packets if self.keep else None,
                    stats=st,
                    call_id=call_id,
                    ptime_ms=media.ptime_ms if media is not None else None,
                    found_by=found_by,
                    payload_types=pts,
                    rtcp=self.rtcp.summary(ssrc),
                    media=kind,
                    srtp=self._srtp(fid, main, codec, media),
                    channels=_channels_of(main, media),
                    fmtp=dict(media.fmtp.get(main, {})) if media is not None else {},
                    active_at_end=self._active_at_end(st, ssrc),
                    notes=notes,
                    header_bytes=header_bytes[i],
                )
            )
        self.srtp.mark(streams, {int(f): i for i, f in enumerate(fids.tolist())})
        self.done.extend(zip(fl.first_frame[fids].tolist(), fids.tolist(), streams, tables,
                             [self.mid_of.get(f) for f in fids.tolist()]))
        self.stats.release(sids)
        fl.end(fids)
        for f in fids.tolist():
            self.call_id.pop(f, None)
            self.media.pop(f, None)
            self.cut_of.pop(f, None)
            self.clocked.pop(f, None)
            self.mid_of.pop(f, None)
            self.partial.discard(f)

    def ready(self, *, final: bool = False) -> list[tuple[list[RtpStream], list[Any]]]:
        """(Streaming) the ended streams that can be handed on, grouped into whole calls,
        with their SIP calls; forgotten here.

        Streams are joined when they share a Call-ID or a pair of UDP ends (symmetric
        RTP, RFC 4961), with every stream or undecided flow still tracked too: a group is
        ready when all its members have ended. Groups are given in order of their first
        packet, and one only when no group still live (or undecided flow) started before it.
        """
        if not self.done:
            return []
        fl = self.flows
        live = np.flatnonzero((fl.state == RTP) | (fl.state == PROBE)) if not final else np.zeros(0, dtype=np.int64)
        items: list[Member] = []  # (first frame, port pair, Call-ID, ended)
        a = self.addresses
        for ff, _, s, *_ in self.done:
            k = s.key
            items.append((ff, frozenset(((k.src, k.sport), (k.dst, k.dport))), s.call_id, True))
        for f in live.tolist():
            src, dst, sport, dport, _ = fl.keys[f]
            items.append((int(fl.first_frame[f]), frozenset(((a[src], sport), (a[dst], dport))),
                          self.call_id.get(f), False))
        out, taken = [], set()
        for g in ready_groups(items):
            taken.update(g)
            out.append(sorted((self.done[i] for i in g), key=lambda x: (x[0], x[1])))
        if not taken:
            return []
        self.done = [x for i, x in enumerate(self.done) if i not in taken]
        result = []
        code = {x: i for i, x in enumerate(self.addresses)}
        for entries in out:
            streams = self._complete(entries)
            call_ids = {s.call_id for s in streams if s.call_id}
            calls = group_calls(self.sip.pop_calls(call_ids)) if call_ids else []
            self.rtcp.forget({s.ssrc for s in streams},
                             {(code[s.key.dst], s.key.dport, code[s.key.src], s.key.sport) for s in streams})
            result.append((streams, calls))
        return result

    def _complete(self, entries: list[tuple[int, int, RtpStream, Any, str | None]]) -> list[RtpStream]:
        """The ended streams of ``entries`` (of :attr:`done`) with what is known of them only
        together: DTLS-SRTP marking, then header bytes (SRTP padding counted up to the tag),
        RTCP feedback and RTX ties; a provisional flow (:meth:`_provisional`) is kept only as
        a tied RTX stream or when the user's SDP lists its SSRC."""
        fids = [x[1] for x in entries]
        streams = [x[2] for x in entries]
        mark_dtls(streams, self.demux, self.addresses)
        for i, fid in enumerate(fids):
            if streams[i].header_bytes is None:  # not settled when the stream ended (_end)
                hb = self.header_bytes.result(fid, streams[i].srtp)
                streams[i] = dataclasses.replace(streams[i], header_bytes=hb.total,
                                                 notes=streams[i].notes + ((hb.note,) if hb.note else ()))
        attach_feedback(streams, self.rtcp, self.addresses)
        tied = tie_rtx(streams, self.user_sdp, tables=[x[3] for x in entries], mids=[x[4] for x in entries])
        # a short flow (_provisional) is a stream only as the RTX of a media stream, or when listed by a=ssrc
        return [st for i, (st, f) in enumerate(zip(streams, fids))
                if f not in self.provisional or i in tied or st.key.ssrc in self.user_ssrcs]

    def _active_at_end(self, st: Any, ssrc: int) -> bool:
        """Whether a stream (statistics ``st``) was still sending when the capture's UDP
        traffic ended (:attr:`RtpStream.active_at_end`)."""
        if self.last_ns is None or st.packets < 2 or ssrc in self.rtcp.bye:
            return False
        interval = (st.last_ns - st.first_ns) / (st.packets - 1)
        return self.last_ns - st.last_ns <= ACTIVE_AT_END_INTERVALS * interval


class _KeyEnds:
    """The address codes and ports (int64) of a batch's rows ``rows``: each new flow key's
    first packet, read from the batch's columns when a key is new, not for every packet."""

    __slots__ = ("src", "dst", "sport", "dport")

    def __init__(self, b: Any, rows: np.ndarray) -> None:
        self.src, self.dst = b.src[rows].astype(np.int64), b.dst[rows].astype(np.int64)
        self.sport, self.dport = b.sport[rows].astype(np.int64), b.dport[rows].astype(np.int64)


def _rows(b: Any, sl: slice) -> Any:
    """Datagrams ``sl`` of batch ``b`` (the same bytes, fewer rows)."""
    return dataclasses.replace(
        b, index=b.index[sl], ts_ns=b.ts_ns[sl], src=b.src[sl], dst=b.dst[sl], sport=b.sport[sl], dport=b.dport[sl],
        starts=b.starts[sl], lengths=b.lengths[sl], head=b.head[sl], interface=b.interface[sl],
        wire_len=b.wire_len[sl], cut=None if b.cut is None else b.cut[sl])


# payload types of RFC 3551 with a clock rate (STATIC_PAYLOAD_TYPES), as a table by type
_STATIC_CLOCK = np.zeros(128, dtype=bool)
_STATIC_CLOCK[[p for p, (_, r) in STATIC_PAYLOAD_TYPES.items() if r]] = True


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
