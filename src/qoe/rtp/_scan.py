"""One pass over a capture: SIP calls, RTCP reports and RTP streams, found and measured.

:func:`scan_capture` reads a capture's UDP datagrams once, in NumPy batches
(:func:`qoe.capture.read_udp_batches`): it parses SIP and its SDP, RTCP compound packets
(and the round-trip times their LSR/DLSR give), and groups RTP packets into flows by
UDP direction and SSRC, accepting a flow when SDP announced it or, by a heuristic, when
its first packets progress like RTP; each accepted flow's statistics are computed as it
goes (:class:`qoe.rtp._stats.Analyser`). The public names are re-exported, and
documented as a whole, by :mod:`qoe.rtp`.

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

import os
import warnings
from typing import Any

import numpy as np

from qoe.errors import InputError, QoEWarning
from qoe.rtp._packet import (
    RTCP_APP,
    RTCP_SR,
    RTP_FIXED_HEADER,
    RTP_VERSION,
    SEQ_MOD,
    STATIC_PAYLOAD_TYPES,
    TS_MOD,
    header_columns,
    make_packets,
    media_kind,
    parse_rtcp,
    wrapped_distance,
)
from qoe.rtp._results import RtcpSummary, RtpScan, RtpStream, StreamKey
from qoe.rtp._stats import Analyser, clock_table, cn_table
from qoe.rtp.sip import SIP_METHODS, SdpMedia, SipMessage, group_calls, parse_sip

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



class _RtcpBook:
    """RTCP seen in a capture: sender reports by NTP time, report blocks by source."""

    def __init__(self) -> None:
        self.sr_time: dict[tuple[int, int], int] = {}  # (sender ssrc, NTP middle 32 bits) -> capture ns
        self.sr_count: dict[int, int] = {}
        self.blocks: dict[int, list[tuple[int, dict[str, Any]]]] = {}  # source ssrc -> (ns, block)
        self.rtt: dict[int, list[float]] = {}
        self.packets = 0

    def add(self, time_ns: int, items: list[dict[str, Any]]) -> None:
        self.packets += 1
        for it in items:
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



def _looks_like_rtp(seq: np.ndarray, ts: np.ndarray, pt: np.ndarray) -> bool:
    """The heuristic for a flow without signalling: do these packets progress like RTP?

    Sequence numbers must move by small steps (RFC 3550 §5.1: +1 per packet; loss,
    reordering and duplicates make other small steps) and mostly forward, timestamps
    must move by less than 2**25 ticks (over 6 min at 90 kHz) either way, and one payload
    type must dominate. For random payloads each step passes by chance with probability
    below 2 %, so a handful of packets tells them apart.
    """
    n = seq.size
    if n < 2:
        return False
    ds = wrapped_distance(np.diff(seq.astype(np.int64)), SEQ_MOD)
    dt = wrapped_distance(np.diff(ts.astype(np.int64)), TS_MOD)
    steps = n - 1
    seq_ok = np.count_nonzero(np.abs(ds) <= 128) >= 0.9 * steps and np.count_nonzero(ds >= 1) >= 0.5 * steps
    ts_ok = np.count_nonzero(np.abs(dt) < (1 << 25)) >= 0.9 * steps
    pt_ok = np.bincount(pt.astype(np.intp), minlength=128).max() >= 0.5 * n
    return bool(seq_ok and ts_ok and pt_ok)


class _Flow:
    """One (src, dst, sport, dport, ssrc) group while the capture is read."""

    __slots__ = ("key", "state", "probe", "analyser", "chunks", "payloads", "media", "call_id", "first_frame")

    def __init__(self, key: tuple[int, int, int, int, int]) -> None:
        self.key = key
        self.state = "probe"  # -> "rtp" or "reject"
        self.probe: list[tuple[np.ndarray, ...]] = []
        self.analyser: Analyser | None = None
        self.chunks: list[tuple[np.ndarray, ...]] = []
        self.payloads: list[list[bytes]] = []
        self.media: SdpMedia | None = None
        self.call_id: str | None = None
        self.first_frame = 0

    def probe_len(self) -> int:
        return sum(c[0].shape[0] for c in self.probe)


class _Scanner:
    """Reads UDP batches once: SIP, RTCP and RTP flows, with statistics as it goes."""

    def __init__(self, *, keep_packets: bool, heuristic: bool, min_packets: int, first_ns: int | None = None) -> None:
        self.keep = keep_packets
        self.heuristic = heuristic
        self.min_packets = min_packets
        self.flows: dict[tuple[int, int, int, int, int], _Flow] = {}
        self.sip: list[SipMessage] = []
        self.announced: dict[tuple[str, int], tuple[str | None, SdpMedia]] = {}
        self.rtcp_ports: set[tuple[str, int]] = set()
        self.rtcp = _RtcpBook()
        self.addresses: tuple[str, ...] = ()
        self.first_ns = first_ns  # the capture's frame 1; else the first UDP datagram's
        self.udp = 0

    # -- per batch ---------------------------------------------------------------
    def batch(self, b: Any) -> None:
        n = len(b)
        if n == 0:
            return
        self.addresses = b.addresses
        self.udp += n
        if self.first_ns is None:
            self.first_ns = int(b.ts_ns[0])
        u8 = b.payload
        off = b.offsets
        start = off[:-1]
        length = np.diff(off)
        if u8.size == 0:
            return
        last = u8.size - 1
        b0 = u8[np.minimum(start, last)].astype(np.int64)
        b1 = u8[np.minimum(start + 1, last)].astype(np.int64)
        b0 = np.where(length >= 1, b0, 0)
        # SIP: text messages starting with a method or "SIP/2.0" (RFC 3261 §7.1, §7.2),
        # told apart by their first four bytes (never RTP/RTCP: "A"-"Z" is version 1).
        cand = np.flatnonzero((length >= 12) & (b0 >= 0x41) & (b0 <= 0x5A))
        sip_rows = cand
        if cand.size:
            s4 = start[cand][:, None] + np.arange(4)
            head = (u8[s4].astype(np.int64) * np.array([1 << 24, 1 << 16, 1 << 8, 1])).sum(axis=1)
            sip_rows = cand[np.isin(head, _SIP_PREFIXES)]
        for i in sip_rows.tolist():
            self._sip(b, i)
        v2 = (length >= 8) & ((b0 >> 6) == RTP_VERSION)
        is_rtcp = v2 & (b1 >= RTCP_SR) & (b1 <= RTCP_APP)
        for i in np.flatnonzero(is_rtcp).tolist():
            items = parse_rtcp(b.payload_of(i))
            if items:
                self.rtcp.add(int(b.ts_ns[i]), items)
        rows = np.flatnonzero(v2 & ~is_rtcp & (length >= RTP_FIXED_HEADER))
        if rows.size:
            self._rtp(b, u8, rows, start[rows], length[rows])

    def _sip(self, b: Any, i: int) -> None:
        addrs = b.addresses
        msg = parse_sip(
            b.payload_of(i), frame=int(b.index[i]), time_ns=int(b.ts_ns[i]),
            src=addrs[b.src[i]], sport=int(b.sport[i]), dst=addrs[b.dst[i]], dport=int(b.dport[i]),
        )
        if msg is None:
            return
        self.sip.append(msg)
        if msg.sdp is not None:
            for m in msg.sdp.media:
                if m.port and m.address:
                    self.announced[(m.address, m.port)] = (msg.call_id, m)
                    self.rtcp_ports.add((m.address, m.rtcp_port or (m.port + 1)))

    def _rtp(self, b: Any, u8: np.ndarray, rows: np.ndarray, s: np.ndarray, ln: np.ndarray) -> None:
        h = header_columns(u8, s, ln)
        if h.rows.size == 0:
            return
        rows = rows[h.rows]
        marker, ptype, seq, ts, ssrc = h.marker, h.payload_type, h.seq, h.timestamp, h.ssrc
        src = b.src[rows].astype(np.int64)
        dst = b.dst[rows].astype(np.int64)
        sport = b.sport[rows].astype(np.int64)
        dport = b.dport[rows].astype(np.int64)
        k1 = src << 32 | dst
        k2 = sport << 48 | dport << 32 | ssrc
        order = np.lexsort((rows, k2, k1))
        k1o, k2o = k1[order], k2[order]
        cut = np.flatnonzero((k1o[1:] != k1o[:-1]) | (k2o[1:] != k2o[:-1])) + 1
        bounds = np.concatenate(([0], cut, [order.size]))
        frame = b.index[rows]
        arr = b.ts_ns[rows]
        pstart, pend = h.payload_start, h.payload_end
        buf = u8.data if self.keep else None
        for g0, g1 in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            sel = order[g0:g1]
            i0 = sel[0]
            key = (int(src[i0]), int(dst[i0]), int(sport[i0]), int(dport[i0]), int(ssrc[i0]))
            flow = self.flows.get(key)
            if flow is None:
                flow = self.flows[key] = _Flow(key)
                flow.first_frame = int(frame[i0])
            if flow.state == "reject":
                continue
            cols = (frame[sel], arr[sel], seq[sel], ts[sel], ptype[sel], marker[sel])
            pays = [bytes(buf[a:e]) for a, e in zip(pstart[sel].tolist(), pend[sel].tolist())] if buf is not None else []
            self._feed(flow, cols, pays)

    def _feed(self, flow: _Flow, cols: tuple[np.ndarray, ...], pays: list[bytes]) -> None:
        if flow.state == "probe":
            flow.probe.append(cols + (pays,))  # type: ignore[operator]
            if self._announcement(flow) is not None:
                self._accept(flow, "sdp")
            elif flow.probe_len() >= _PROBE_PACKETS:
                self._decide(flow)
            return
        self._push(flow, cols, pays)

    def _announcement(self, flow: _Flow) -> tuple[str | None, SdpMedia] | None:
        src, dst, sport, dport, _ = flow.key
        a = self.addresses
        return self.announced.get((a[dst], dport)) or self.announced.get((a[src], sport))

    def _decide(self, flow: _Flow) -> None:
        if not self.heuristic:
            flow.state = "reject"
            flow.probe = []
            return
        src, dst, sport, dport, _ = flow.key
        a = self.addresses
        if (a[dst], dport) in self.rtcp_ports or (a[src], sport) in self.rtcp_ports:
            looks = False  # an announced RTCP port (RFC 3550 §11, RFC 3605) does not carry RTP
        elif np.isin([sport, dport], _NOT_RTP_PORTS).any():
            looks = False
        else:
            seq = np.concatenate([c[2] for c in flow.probe])
            ts = np.concatenate([c[3] for c in flow.probe])
            pt = np.concatenate([c[4] for c in flow.probe])
            looks = seq.size >= self.min_packets and _looks_like_rtp(seq, ts, pt)
        if looks:
            self._accept(flow, "heuristic")
        else:
            flow.state = "reject"
            flow.probe = []

    def _accept(self, flow: _Flow, found_by: str) -> None:
        ann = self._announcement(flow)
        rates: dict[int, int] = {}
        cn: list[int] = []
        if ann is not None:
            flow.call_id, flow.media = ann
            for pt, (name, rate, _) in flow.media.rtpmap.items():
                rates[pt] = rate
                if name.upper() == "CN":
                    cn.append(pt)
        flow.state = "rtp"
        flow.analyser = Analyser(clock_table(rates), cn_table(cn))
        probe, flow.probe = flow.probe, []
        for c in probe:
            self._push(flow, c[:6], c[6])

    def _push(self, flow: _Flow, cols: tuple[np.ndarray, ...], pays: list[bytes]) -> None:
        _frame, arr, seq, ts, pt, mk = cols
        flow.analyser.update(arr, seq, ts, pt, mk)  # type: ignore[union-attr]
        if self.keep:
            flow.chunks.append(cols)
            flow.payloads.append(pays)

    # -- at the end --------------------------------------------------------------
    def finish(self, path: str) -> RtpScan:
        for flow in self.flows.values():
            if flow.state == "probe":
                n = flow.probe_len()
                if self._announcement(flow) is not None:
                    self._accept(flow, "sdp")
                elif n >= self.min_packets:
                    self._decide(flow)
                else:
                    flow.state = "reject"
        rtcp = self.rtcp.summaries()
        calls = tuple(group_calls(self.sip))
        streams = []
        a = self.addresses
        for flow in sorted(self.flows.values(), key=lambda f: f.first_frame):
            if flow.state != "rtp" or flow.analyser is None:
                continue
            media = flow.media
            if media is None:  # SDP seen only after the flow was taken as RTP
                ann = self._announcement(flow)
                if ann is not None:
                    flow.call_id, media = ann
            an = flow.analyser
            stats = an.result()
            counts = an.pt_counts
            pts = tuple(int(p) for p in np.argsort(-counts, kind="stable") if counts[p] > 0)
            main = pts[0]
            codec, rate = _codec_of(main, media)
            src, dst, sport, dport, ssrc = flow.key
            packets = None
            if self.keep:
                frame, arr, seq, ts, pt, mk = (np.concatenate(c) for c in zip(*flow.chunks))
                packets = make_packets(frame, arr, seq, ts, mk, pt, [p for chunk in flow.payloads for p in chunk])
                flow.chunks, flow.payloads = [], []
            streams.append(
                RtpStream(
                    key=StreamKey(a[src], sport, a[dst], dport, ssrc),
                    payload_type=main,
                    codec=codec,
                    clock_rate=rate,
                    packets=packets,
                    stats=stats,
                    call_id=flow.call_id,
                    ptime_ms=media.ptime_ms if media is not None else None,
                    found_by="sdp" if flow.media is not None else "heuristic",
                    payload_types=pts,
                    rtcp=rtcp.get(ssrc),
                    media=media_kind(codec, rate, media.media if media is not None else None),
                )
            )
        return RtpScan(
            path=path,
            streams=tuple(streams),
            calls=calls,
            rtcp=rtcp,
            first_ns=self.first_ns,
            udp_packets=self.udp,
            rtcp_packets=self.rtcp.packets,
        )


def _codec_of(pt: int, media: SdpMedia | None) -> tuple[str | None, int | None]:
    """Encoding name and clock rate of a payload type: SDP rtpmap first, then RFC 3551."""
    if media is not None:
        enc = media.encoding(pt)
        if enc is not None:
            return enc[0], (enc[1] or None)
    if pt in STATIC_PAYLOAD_TYPES:
        return STATIC_PAYLOAD_TYPES[pt]
    return None, None


def scan_capture(
    path: str | os.PathLike[str],
    *,
    keep_packets: bool = True,
    heuristic: bool = True,
    min_packets: int = 4,
    batch_size: int = 65536,
) -> RtpScan:
    """Find every RTP stream, SIP call and RTCP report in a capture, in one pass.

    Parameters
    ----------
    path : str or os.PathLike
        A pcap or pcapng capture (read with :func:`qoe.capture.read_udp_batches`).
    keep_packets : bool, optional
        Keep each stream's per-packet table and payloads (:attr:`RtpStream.packets`).
        False computes the statistics only, with memory that does not grow with the
        number of packets (about one byte per sequence number per stream).
    heuristic : bool, optional
        Also accept flows that no SDP announced when their first packets progress like
        RTP (version 2, one SSRC, sequence numbers and timestamps moving forward, one
        dominant payload type). False keeps only SDP-announced streams.
    min_packets : int, optional
        Fewest packets for a flow to be taken as RTP by the heuristic.
    batch_size : int, optional
        Datagrams read per batch.

    Returns
    -------
    RtpScan

    Raises
    ------
    CaptureError
        The file cannot be read as a capture.
    InputError
        ``min_packets`` < 2 or ``batch_size`` < 1.

    References
    ----------
    RFC 3550 §5.1, §6.4, §11; RFC 5761 §4; RFC 3261 §7; RFC 4566 §5.
    """
    from qoe.capture import probe, read_udp_batches  # noqa: PLC0415 - the capture layer, imported when used

    if min_packets < 2:
        raise InputError(f"min_packets must be at least 2, given {min_packets}")
    name = os.fspath(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the read below reports a damaged file once
        # frame 1, even when a later frame has an earlier time (as tshark)
        first_ns = probe(name).first_frame_ns
    sc = _Scanner(keep_packets=keep_packets, heuristic=heuristic, min_packets=min_packets, first_ns=first_ns)
    for b in read_udp_batches(name, batch_size=batch_size):
        sc.batch(b)
    return sc.finish(name)


def find_streams(
    path: str | os.PathLike[str],
    *,
    keep_packets: bool = True,
    heuristic: bool = True,
    min_packets: int = 4,
) -> list[RtpStream]:
    """The RTP streams of a capture, with their packets and statistics.

    See :func:`scan_capture` (this returns its ``streams``); warns with
    :class:`~qoe.errors.QoEWarning` when the capture holds no RTP stream.

    Parameters
    ----------
    path : str or os.PathLike
        A pcap or pcapng capture.
    keep_packets, heuristic, min_packets
        As for :func:`scan_capture`.

    Returns
    -------
    list of RtpStream
        In order of their first packet.
    """
    scan = scan_capture(path, keep_packets=keep_packets, heuristic=heuristic, min_packets=min_packets)
    if not scan.streams:
        warnings.warn(f"{scan.path}: no RTP stream found in {scan.udp_packets} UDP datagrams", QoEWarning, stacklevel=2)
    return list(scan.streams)
