"""RTP streams in a capture: discovery, per-packet tables and RFC 3550 statistics.

A stream is one synchronisation source (SSRC) on one UDP direction (source address and
port, destination address and port). For each stream this module gives

* a columnar table of the received packets (:class:`RtpPackets`), in arrival order, that
  the jitter buffer, the G.711 decoder and the one-way delay matcher work on;
* receiver statistics (:class:`RtpStats`): packets, expected, lost, duplicates,
  reordering, interarrival jitter, arrival deltas and a loss-burst profile for the
  E-model's BurstR;
* what RTCP said about it (:class:`RtcpSummary`: reports, and the round-trip time from
  LSR/DLSR), and which SIP call announced it.

Streams are found from SIP/SDP when the capture has the signalling
(:mod:`qoe.voice.sip`), and otherwise by a heuristic (version 2, one SSRC, sequence
numbers and timestamps that progress, a dominant payload type), so that captures of
ffmpeg, GStreamer or VLC streams need no options. RTCP (packet types 200-204, compound
packets, also multiplexed on the RTP port) is recognised and never taken for RTP.

Wireshark compatibility
-----------------------
The loss, delta and jitter figures equal what ``tshark -q -z rtp,streams`` prints for
the same capture. Its conventions, established by experiment against TShark 4.0 on
crafted captures (``tests/voice/test_rtp_tshark.py``) and written here from RFC 3550
and that observed behaviour:

* ``lost = expected - received`` with ``expected = cycles * 65536 + last - first + 1``,
  where *first* and *last* are the sequence numbers of the first and of the **last
  received** packet (not the highest), and a sequence cycle is counted when a sequence
  number falls below the first one (once, until one rises above it again) or when 0
  follows 65535. ``lost`` is negative when duplicates outnumber losses.
* A packet whose RTP timestamp is earlier than the first packet's (signed 32-bit
  distance) is a "wrong timestamp": it is counted as received and nothing else.
* Jitter is RFC 3550 §6.4.1's ``J += (|D| - J) / 16`` with ``D`` the difference of
  arrival spacing and timestamp spacing (in ms, timestamps converted with the payload
  type's clock rate) from the previous packet; packets whose payload type has no known
  clock rate leave ``J`` alone (their arrival time still counts as "previous").
* Packets with the marker bit, comfort noise (PT 13 or 19, or ``CN`` in SDP) and the
  packet right after comfort noise still update ``J`` but are left out of the minimum,
  maximum and mean of delta and jitter.
* The means are running means updated as ``mean += (x - mean) / k`` where ``k`` counts
  every packet after the first, including the left-out ones (which skip the update).
* Without a known clock rate the jitter figures are NaN (tshark prints -1/0/0).

References
----------
.. [1] RFC 3550, "RTP: A Transport Protocol for Real-Time Applications", §5.1 (header),
   §6.4 (SR/RR), §6.4.1 (interarrival jitter, round-trip time from LSR/DLSR), §11 (ports),
   Appendix A.1 (sequence numbers), A.3 (expected and lost packets), A.8 (jitter).
.. [2] RFC 3551, "RTP Profile for Audio and Video Conferences with Minimal Control",
   §6 Tables 4 and 5 (static payload types and clock rates).
.. [3] RFC 5761, "Multiplexing RTP Data and Control Packets on a Single Port", §4
   (RTCP packet types 200-204 look like RTP payload types 72-76 with the marker bit).
.. [4] RFC 3389, "RTP Payload for Comfort Noise", §5 (payload type 13).
.. [5] Wireshark User's Guide, §9.11 "RTP" (RTP Streams window, columns Lost, Max Delta,
   Max Jitter, Mean Jitter, Problems).
.. [6] ITU-T G.107 (06/2015), §7.5, eq. (7-32): BurstR (see :mod:`qoe.voice.lossmodel`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from qoe.errors import InputError, QoEWarning
from qoe.voice.sip import SIP_METHODS, SdpMedia, SipCall, SipMessage, group_calls, parse_sip

__all__ = [
    "RtpPackets",
    "StreamKey",
    "RtpStats",
    "RtpStream",
    "RtcpSummary",
    "RtpScan",
    "RtpHeader",
    "STATIC_PAYLOAD_TYPES",
    "parse_rtp_header",
    "parse_rtcp",
    "rtp_stats",
    "make_packets",
    "extend_sequence",
    "find_streams",
    "scan_capture",
]

# RFC 3550 §5.1: sequence numbers are 16 bits, RTP timestamps 32 bits; A.1 extends both.
_SEQ_MOD = 1 << 16
_TS_MOD = 1 << 32
# RFC 3550 §5.1: the fixed header is 12 bytes; version 2.
_RTP_HEADER = 12
_RTP_VERSION = 2
# RFC 3550 §6.4.1: the jitter estimate's gain parameter 1/16.
_JITTER_GAIN = 1.0 / 16.0
# RFC 3550 §12.1: RTCP packet types SR 200, RR 201, SDES 202, BYE 203, APP 204; RFC 5761 §4
# reserves exactly these (as RTP payload types 72-76 with the marker bit) for RTCP.
RTCP_SR, RTCP_RR, RTCP_SDES, RTCP_BYE, RTCP_APP = 200, 201, 202, 203, 204
_RTCP_TYPES = range(RTCP_SR, RTCP_APP + 1)
# RFC 3389 §5 / RFC 3551 Table 4: PT 13 is comfort noise; 19 was comfort noise in RFC 1890
# and is still treated so by Wireshark.
_COMFORT_NOISE_PTS = (13, 19)
# Sequence-number bookkeeping compatible with Wireshark (see the module docstring): a drop
# of more than this below the tracked number is taken as a wrap, not a late packet.
_WS_WRAP_GAP = 0xFF00

# RFC 3551 §6, Table 4 (audio) and Table 5 (video): static payload type -> (encoding, clock rate).
# PT 9 (G722) is sampled at 16 kHz but its RTP clock runs at 8000 Hz (RFC 3551 §4.5.2).
STATIC_PAYLOAD_TYPES: dict[int, tuple[str, int]] = {
    0: ("PCMU", 8000),
    3: ("GSM", 8000),
    4: ("G723", 8000),
    5: ("DVI4", 8000),
    6: ("DVI4", 16000),
    7: ("LPC", 8000),
    8: ("PCMA", 8000),
    9: ("G722", 8000),
    10: ("L16", 44100),
    11: ("L16", 44100),
    12: ("QCELP", 8000),
    13: ("CN", 8000),
    14: ("MPA", 90000),
    15: ("G728", 8000),
    16: ("DVI4", 11025),
    17: ("DVI4", 22050),
    18: ("G729", 8000),
    25: ("CelB", 90000),
    26: ("JPEG", 90000),
    28: ("nv", 90000),
    31: ("H261", 90000),
    32: ("MPV", 90000),
    33: ("MP2T", 90000),
    34: ("H263", 90000),
}

# UDP ports whose traffic is never taken for RTP by the heuristic (it can look like RTP
# version 2 by chance): DNS 53, DHCP 67/68, NTP 123, NetBIOS 137/138, SNMP 161/162,
# QUIC/HTTP3 443, IKE 500/4500, syslog 514, SSDP 1900, mDNS 5353, LLMNR 5355 (IANA
# service-name registry). SDP-announced ports are always accepted.
_NOT_RTP_PORTS = np.array([53, 67, 68, 123, 137, 138, 161, 162, 443, 500, 514, 1900, 4500, 5353, 5355])

# First four bytes of a SIP message: a request method of RFC 3261 §27.4 and its extensions
# (qoe.voice.sip.SIP_METHODS), or the "SIP/" of a status line (RFC 3261 §7.2).
_SIP_PREFIXES = np.array(
    [int.from_bytes((m + " ").encode()[:4], "big") for m in SIP_METHODS] + [int.from_bytes(b"SIP/", "big")]
)

# Heuristic: packets looked at before a flow is accepted as RTP or rejected.
_PROBE_PACKETS = 16


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class RtpPackets:
    """The received packets of one RTP stream, one row per packet, in arrival order.

    Attributes
    ----------
    frame : numpy.ndarray of int64
        1-based frame number of the packet in the capture (as Wireshark numbers frames).
    arrival_ns : numpy.ndarray of int64
        Capture timestamp, integer nanoseconds since the Unix epoch.
    seq : numpy.ndarray of uint16
        Sequence number as on the wire (RFC 3550 §5.1).
    seq_ext : numpy.ndarray of int64
        Extended sequence number ``cycles * 65536 + seq`` (RFC 3550 A.1); the first
        packet's cycle is 0, each later packet is placed at the shortest distance from
        the one before it (a packet reordered across a wrap may get cycle -1).
    timestamp : numpy.ndarray of uint32
        RTP timestamp as on the wire.
    ts_ext : numpy.ndarray of int64
        RTP timestamp unwrapped across 2**32 the same way as ``seq_ext``.
    marker : numpy.ndarray of bool
        Marker bit (RFC 3550 §5.1; for audio, the first packet of a talkspurt).
    payload_type : numpy.ndarray of uint8
        Payload type (7 bits).
    payloads : tuple of bytes
        RTP payloads, after the CSRC list and header extension and without padding;
        empty when the stream was read for statistics only.
    """

    frame: np.ndarray
    arrival_ns: np.ndarray
    seq: np.ndarray
    seq_ext: np.ndarray
    timestamp: np.ndarray
    ts_ext: np.ndarray
    marker: np.ndarray
    payload_type: np.ndarray
    payloads: tuple[bytes, ...] = ()

    def __len__(self) -> int:
        return int(self.frame.shape[0])


@dataclass(frozen=True, slots=True, order=True)
class StreamKey:
    """What identifies one RTP stream: the UDP direction and the SSRC (RFC 3550 §3)."""

    src: str
    sport: int
    dst: str
    dport: int
    ssrc: int

    def __str__(self) -> str:
        return f"{self.src}:{self.sport} -> {self.dst}:{self.dport} ssrc=0x{self.ssrc:08x}"


@dataclass(frozen=True, slots=True)
class RtpStats:
    """Receiver statistics of one RTP stream (RFC 3550 §6.4.1, A.3, A.8).

    ``lost``, the deltas and the jitter follow Wireshark's conventions (module
    docstring), so they equal ``tshark -q -z rtp,streams``. Times are in milliseconds
    unless the name says otherwise.

    Attributes
    ----------
    first_ns, last_ns : int
        Arrival time of the first and last packet (ns since the epoch).
    packets : int
        Packets received (duplicates included).
    expected : int
        Packets expected from the first and last sequence numbers and the cycles.
    lost : int
        ``expected - packets`` (RFC 3550 A.3); negative with duplicates.
    loss_fraction : float
        ``lost / expected`` (0 when nothing was expected).
    duplicates : int
        Packets whose extended sequence number had already been received.
    out_of_order : int
        Packets (not duplicates) that arrived after one with a higher extended sequence
        number.
    sequence_errors : int
        Packets that were not the successor of the sequence number tracked so far
        (Wireshark's "wrong sequence number" count: losses, reordering, duplicates).
    wrong_timestamps : int
        Packets with a timestamp earlier than the first packet's (ignored by the stats).
    problems : bool
        Sequence errors or wrong timestamps were seen (tshark's "Problems?" column).
    min_delta_ms, mean_delta_ms, max_delta_ms : float
        Arrival spacing from the previous packet (NaN for a one-packet stream).
    min_jitter_ms, mean_jitter_ms, max_jitter_ms : float
        RFC 3550 §6.4.1 interarrival jitter after each packet (NaN without a clock rate).
    jitter_ms : float
        The jitter estimate after the last packet (what an RTCP receiver report carries).
    loss_bursts : int
        Runs of consecutive sequence numbers, between the lowest and highest received,
        that never arrived.
    mean_burst_length : float
        Mean length of those runs (0 without loss).
    max_burst_length : int
        Longest run.
    mean_gap_length : float
        Mean number of sequence numbers received between two loss runs (0 with fewer
        than two runs).
    burst_ratio : float
        G.107 BurstR (eq. 7-32) of the loss pattern, see :func:`qoe.voice.lossmodel.loss_pattern`.
    """

    first_ns: int
    last_ns: int
    packets: int
    expected: int
    lost: int
    loss_fraction: float
    duplicates: int
    out_of_order: int
    sequence_errors: int
    wrong_timestamps: int
    problems: bool
    min_delta_ms: float
    mean_delta_ms: float
    max_delta_ms: float
    min_jitter_ms: float
    mean_jitter_ms: float
    max_jitter_ms: float
    jitter_ms: float
    loss_bursts: int
    mean_burst_length: float
    max_burst_length: int
    mean_gap_length: float
    burst_ratio: float

    @property
    def duration_s(self) -> float:
        """Time from the first to the last packet, in seconds."""
        return (self.last_ns - self.first_ns) / 1e9

    def to_dict(self) -> dict[str, Any]:
        """The statistics as a flat dict of Python numbers."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class RtcpSummary:
    """What the RTCP of a capture said about one SSRC (RFC 3550 §6.4).

    Attributes
    ----------
    ssrc : int
        The synchronisation source the reports are about (the media sender).
    sender_reports : int
        Sender reports (SR) sent by this SSRC.
    reports : int
        Reception report blocks about this SSRC (in SRs or RRs of its peers).
    fraction_lost : float or None
        Fraction lost of the last report block (0..1, RFC 3550 §6.4.1).
    cumulative_lost : int or None
        Cumulative number of packets lost, from the last report block.
    jitter_ticks : int or None
        Interarrival jitter of the last report block, in timestamp units.
    rtt_ms : tuple of float
        Round-trip times between the capture point and the reporter, one per report
        block whose LSR matched a sender report seen in the capture:
        ``t(RR) - t(SR) - DLSR`` (RFC 3550 §6.4.1, with capture times for A and the
        SR's sending time).
    """

    ssrc: int
    sender_reports: int
    reports: int
    fraction_lost: float | None
    cumulative_lost: int | None
    jitter_ticks: int | None
    rtt_ms: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        """Flat record with the RTT summarised (count, mean, min, max)."""
        rtt = np.asarray(self.rtt_ms, dtype=float)
        return {
            "rtcp_sender_reports": self.sender_reports,
            "rtcp_reports": self.reports,
            "rtcp_fraction_lost": self.fraction_lost,
            "rtcp_cumulative_lost": self.cumulative_lost,
            "rtcp_jitter_ticks": self.jitter_ticks,
            "rtt_count": int(rtt.size),
            "rtt_mean_ms": float(rtt.mean()) if rtt.size else None,
            "rtt_min_ms": float(rtt.min()) if rtt.size else None,
            "rtt_max_ms": float(rtt.max()) if rtt.size else None,
        }


@dataclass(frozen=True)
class RtpStream:
    """One RTP stream found in a capture.

    Attributes
    ----------
    key : StreamKey
        Addresses, ports and SSRC.
    payload_type : int
        The most frequent payload type of the stream.
    codec : str or None
        Encoding name from SDP ``a=rtpmap`` or RFC 3551's static table, else None.
    clock_rate : int or None
        RTP clock rate of ``payload_type`` in Hz; None when unknown (no jitter then).
    packets : RtpPackets or None
        The per-packet table; None when the stream was scanned for statistics only.
    stats : RtpStats
        Receiver statistics.
    call_id : str or None
        SIP Call-ID of the call whose SDP announced this stream.
    ptime_ms : float or None
        Packetisation time from SDP ``a=ptime``.
    found_by : str
        ``"sdp"`` when SIP/SDP announced the stream, ``"heuristic"`` otherwise.
    payload_types : tuple of int
        Every payload type seen in the stream, most frequent first.
    rtcp : RtcpSummary or None
        RTCP reports about this SSRC, if the capture has any.
    """

    key: StreamKey
    payload_type: int
    codec: str | None
    clock_rate: int | None
    packets: RtpPackets | None
    stats: RtpStats
    call_id: str | None = None
    ptime_ms: float | None = None
    found_by: str = "heuristic"
    payload_types: tuple[int, ...] = ()
    rtcp: RtcpSummary | None = None

    @property
    def ssrc(self) -> int:
        return self.key.ssrc

    def to_dict(self) -> dict[str, Any]:
        """One flat record: identification, codec, statistics, RTCP summary."""
        k = self.key
        out: dict[str, Any] = {
            "src": k.src,
            "sport": k.sport,
            "dst": k.dst,
            "dport": k.dport,
            "ssrc": f"0x{k.ssrc:08x}",
            "payload_type": self.payload_type,
            "codec": self.codec,
            "clock_rate": self.clock_rate,
            "call_id": self.call_id,
            "found_by": self.found_by,
        }
        out.update(self.stats.to_dict())
        if self.rtcp is not None:
            out.update(self.rtcp.to_dict())
        return out


@dataclass(frozen=True)
class RtpScan:
    """Everything :func:`scan_capture` found: RTP streams, SIP calls, RTCP.

    Attributes
    ----------
    path : str
        The capture.
    streams : tuple of RtpStream
        In order of their first packet.
    calls : tuple of SipCall
        SIP calls (by Call-ID) in order of their first INVITE.
    rtcp : dict of int to RtcpSummary
        RTCP reports by the SSRC they describe (also attached to the streams).
    first_ns : int or None
        Time of the capture's frame 1, whatever its protocol (what tshark's "Start
        time" is relative to, so a stream can start at a negative time when the file is
        not in time order); the first UDP datagram's if that cannot be read.
    udp_packets : int
        UDP datagrams read.
    rtcp_packets : int
        UDP datagrams recognised as RTCP.
    """

    path: str
    streams: tuple[RtpStream, ...]
    calls: tuple[SipCall, ...]
    rtcp: dict[int, RtcpSummary]
    first_ns: int | None
    udp_packets: int
    rtcp_packets: int

    def stream_records(self, *, brief: bool = False) -> list[dict[str, Any]]:
        """One flat record per stream (with its call's From/To), for tables and CSV.

        Parameters
        ----------
        brief : bool, optional
            Only the columns that fit a terminal table (stream, codec, call, packets,
            loss, delta, jitter, bursts, problems) instead of every field.
        """
        calls = {c.call_id: c for c in self.calls}
        rows = []
        for s in self.streams:
            d = s.to_dict()
            c = calls.get(s.call_id) if s.call_id else None
            d["call_from"] = c.from_uri if c else None
            d["call_to"] = c.to_uri if c else None
            d["start_s"] = (s.stats.first_ns - self.first_ns) / 1e9 if self.first_ns is not None else None
            if brief:
                st = s.stats
                d = {
                    "source": f"{s.key.src}:{s.key.sport}",
                    "destination": f"{s.key.dst}:{s.key.dport}",
                    "ssrc": d["ssrc"],
                    "codec": s.codec if s.codec else f"PT{s.payload_type}",
                    "call_id": s.call_id,
                    "start_s": d["start_s"],
                    "duration_s": st.duration_s,
                    "packets": st.packets,
                    "lost": st.lost,
                    "loss_%": 100.0 * st.loss_fraction,
                    "max_delta_ms": st.max_delta_ms,
                    "mean_jitter_ms": st.mean_jitter_ms,
                    "max_jitter_ms": st.max_jitter_ms,
                    "bursts": st.loss_bursts,
                    "max_burst": st.max_burst_length,
                    "problems": st.problems,
                }
            rows.append(d)
        return rows

    def call_records(self, *, brief: bool = False) -> list[dict[str, Any]]:
        """One flat record per SIP call, with the number of streams found for it.

        Parameters
        ----------
        brief : bool, optional
            Times relative to the capture's first UDP datagram (``start_s``) and the
            call's duration instead of the absolute nanosecond times.
        """
        out = []
        for c in self.calls:
            d = c.to_dict()
            d["streams"] = sum(1 for s in self.streams if s.call_id == c.call_id)
            if brief:
                rel = None if c.invite_ns is None or self.first_ns is None else (c.invite_ns - self.first_ns) / 1e9
                dur = None if c.answer_ns is None or c.end_ns is None else (c.end_ns - c.answer_ns) / 1e9
                d = {"call_id": d["call_id"], "from": d["from"], "to": d["to"], "status": d["status"],
                     "start_s": rel, "setup_s": d["setup_s"], "duration_s": dur, "offer": d["offer"],
                     "answer": d["answer"], "messages": d["messages"], "streams": d["streams"]}
            out.append(d)
        return out

    def to_dict(self) -> dict[str, Any]:
        """``{"streams": [...], "calls": [...]}`` of flat records."""
        return {"streams": self.stream_records(), "calls": self.call_records()}


# --------------------------------------------------------------------------- headers


@dataclass(frozen=True, slots=True)
class RtpHeader:
    """The RTP fixed header of one packet (RFC 3550 §5.1) and where its payload lies."""

    version: int
    padding: bool
    extension: bool
    csrc_count: int
    marker: bool
    payload_type: int
    seq: int
    timestamp: int
    ssrc: int
    payload_start: int
    payload_end: int


def parse_rtp_header(data: bytes) -> RtpHeader | None:
    """Parse the RTP header of a UDP payload; None if it cannot be RTP.

    RTCP (second byte 200-204, RFC 5761 §4) and packets too short for the header,
    CSRC list and extension they announce are rejected. Invalid padding (a count larger
    than the payload) is ignored rather than rejected.

    Parameters
    ----------
    data : bytes
        The UDP payload.

    Returns
    -------
    RtpHeader or None

    References
    ----------
    RFC 3550 §5.1 (fixed header, padding, CSRC), §5.3.1 (header extension).

    Examples
    --------
    >>> h = parse_rtp_header(bytes([0x80, 0x88, 0, 7, 0, 0, 3, 0xC0, 0, 0, 0x12, 0x34]) + b"x" * 160)
    >>> (h.payload_type, h.marker, h.seq, h.timestamp, hex(h.ssrc), h.payload_end - h.payload_start)
    (8, True, 7, 960, '0x1234', 160)
    """
    n = len(data)
    if n < _RTP_HEADER or data[0] >> 6 != _RTP_VERSION or data[1] in _RTCP_TYPES:
        return None
    b0 = data[0]
    cc = b0 & 0x0F
    hdr = _RTP_HEADER + 4 * cc
    ext = bool(b0 & 0x10)
    if ext:
        if hdr + 4 > n:
            return None
        hdr += 4 + 4 * int.from_bytes(data[hdr + 2 : hdr + 4], "big")  # RFC 3550 §5.3.1
    if hdr > n:
        return None
    pad = data[-1] if b0 & 0x20 else 0
    if pad > n - hdr:
        pad = 0
    return RtpHeader(
        version=_RTP_VERSION,
        padding=bool(b0 & 0x20),
        extension=ext,
        csrc_count=cc,
        marker=bool(data[1] & 0x80),
        payload_type=data[1] & 0x7F,
        seq=int.from_bytes(data[2:4], "big"),
        timestamp=int.from_bytes(data[4:8], "big"),
        ssrc=int.from_bytes(data[8:12], "big"),
        payload_start=hdr,
        payload_end=n - pad,
    )


def parse_rtcp(data: bytes) -> list[dict[str, Any]] | None:
    """Parse an RTCP compound packet (RFC 3550 §6.1, §6.4); None if it is not RTCP.

    Parameters
    ----------
    data : bytes
        The UDP payload.

    Returns
    -------
    list of dict or None
        One dict per RTCP packet: ``type`` (200-204) and ``ssrc``; SRs add ``ntp``
        (64-bit NTP timestamp), ``rtp_ts``, ``packet_count``, ``octet_count``; SRs and
        RRs add ``blocks``, each with ``ssrc``, ``fraction_lost`` (0..1),
        ``cumulative_lost`` (signed), ``highest_seq``, ``jitter``, ``lsr``, ``dlsr``.

    References
    ----------
    RFC 3550 §6.4.1 (SR), §6.4.2 (RR), §6.1 (compound packets), §A.2 (validity checks:
    version 2, lengths that add up to the datagram).
    """
    n = len(data)
    if n < 8 or data[0] >> 6 != _RTP_VERSION or data[1] not in _RTCP_TYPES:
        return None
    out: list[dict[str, Any]] = []
    pos = 0
    while pos + 4 <= n:
        b0, ptype = data[pos], data[pos + 1]
        length = (int.from_bytes(data[pos + 2 : pos + 4], "big") + 1) * 4  # §6.4.1 "length"
        if b0 >> 6 != _RTP_VERSION or ptype not in _RTCP_TYPES or pos + length > n:
            return out or None
        body = data[pos + 4 : pos + length]
        count = b0 & 0x1F
        item: dict[str, Any] = {"type": ptype, "ssrc": int.from_bytes(body[0:4], "big") if len(body) >= 4 else None}
        blocks_at = None
        if ptype == RTCP_SR and len(body) >= 24:
            item["ntp"] = int.from_bytes(body[4:12], "big")
            item["rtp_ts"] = int.from_bytes(body[12:16], "big")
            item["packet_count"] = int.from_bytes(body[16:20], "big")
            item["octet_count"] = int.from_bytes(body[20:24], "big")
            blocks_at = 24
        elif ptype == RTCP_RR:
            blocks_at = 4
        if blocks_at is not None:
            blocks = []
            for i in range(count):
                b = body[blocks_at + 24 * i : blocks_at + 24 * (i + 1)]
                if len(b) < 24:
                    break
                cum = int.from_bytes(b[5:8], "big")
                if cum & 0x800000:  # 24-bit signed (RFC 3550 §6.4.1 "cumulative number of packets lost")
                    cum -= 1 << 24
                blocks.append(
                    {
                        "ssrc": int.from_bytes(b[0:4], "big"),
                        "fraction_lost": b[4] / 256.0,  # §6.4.1: fixed point, binary point at the left
                        "cumulative_lost": cum,
                        "highest_seq": int.from_bytes(b[8:12], "big"),
                        "jitter": int.from_bytes(b[12:16], "big"),
                        "lsr": int.from_bytes(b[16:20], "big"),
                        "dlsr": int.from_bytes(b[20:24], "big"),
                    }
                )
            item["blocks"] = blocks
        out.append(item)
        pos += length
    return out or None


# --------------------------------------------------------------------------- statistics


def extend_sequence(values: np.ndarray, modulus: int) -> np.ndarray:
    """Unwrap a wrapping counter (RTP sequence numbers or timestamps) to int64.

    Each value is placed at the distance from its predecessor that is shortest modulo
    ``modulus`` (at most half a cycle either way, RFC 3550 A.1's way of telling a wrap
    from a reordering), so the first value keeps cycle 0 and later ones count cycles.

    Parameters
    ----------
    values : numpy.ndarray
        Counter values as on the wire, in arrival order.
    modulus : int
        ``2**16`` for sequence numbers, ``2**32`` for timestamps.

    Returns
    -------
    numpy.ndarray of int64

    Examples
    --------
    >>> extend_sequence(np.array([65534, 65535, 0, 1], dtype=np.uint16), 1 << 16).tolist()
    [65534, 65535, 65536, 65537]
    """
    v = np.asarray(values).astype(np.int64)
    if v.size == 0:
        return v
    return _unwrap(v, int(v[0]), int(v[0]), modulus)


def _unwrap(v: np.ndarray, prev_raw: int, prev_ext: int, modulus: int) -> np.ndarray:
    """Extend ``v`` (int64 raw values) continuing from a previous (raw, extended) pair."""
    half = modulus // 2
    d = np.diff(v, prepend=prev_raw)
    d = (d + half) % modulus - half  # shortest signed distance modulo `modulus`
    return prev_ext + np.cumsum(d)


def make_packets(
    frame: np.ndarray,
    arrival_ns: np.ndarray,
    seq: np.ndarray,
    timestamp: np.ndarray,
    marker: np.ndarray,
    payload_type: np.ndarray,
    payloads: tuple[bytes, ...] | list[bytes] = (),
) -> RtpPackets:
    """Build an :class:`RtpPackets` table from raw columns, extending seq and timestamp.

    Parameters
    ----------
    frame, arrival_ns, seq, timestamp, marker, payload_type : array_like
        One value per packet in arrival order (see :class:`RtpPackets`).
    payloads : sequence of bytes, optional
        The RTP payloads; empty when not kept.

    Returns
    -------
    RtpPackets
    """
    seq = np.asarray(seq).astype(np.uint16)
    timestamp = np.asarray(timestamp).astype(np.uint32)
    n = seq.shape[0]
    payloads = tuple(payloads)
    if payloads and len(payloads) != n:
        raise InputError(f"make_packets: {len(payloads)} payloads for {n} packets")
    return RtpPackets(
        frame=np.asarray(frame, dtype=np.int64),
        arrival_ns=np.asarray(arrival_ns, dtype=np.int64),
        seq=seq,
        seq_ext=extend_sequence(seq, _SEQ_MOD),
        timestamp=timestamp,
        ts_ext=extend_sequence(timestamp, _TS_MOD),
        marker=np.asarray(marker, dtype=bool),
        payload_type=np.asarray(payload_type).astype(np.uint8),
        payloads=payloads,
    )


def _clock_table(clock_rates: dict[int, int] | None = None) -> np.ndarray:
    """Clock rate per payload type 0..127 (NaN: unknown), static table then overrides."""
    table = np.full(128, np.nan)
    for pt, (_, rate) in STATIC_PAYLOAD_TYPES.items():
        table[pt] = rate
    for pt, rate in (clock_rates or {}).items():
        if 0 <= pt < 128:
            table[pt] = rate if rate and rate > 0 else np.nan
    return table


def _cn_table(extra: Iterable[int] = ()) -> np.ndarray:
    """Comfort-noise flag per payload type (RFC 3389 §5), plus SDP-mapped ``CN`` types."""
    table = np.zeros(128, dtype=bool)
    table[list(_COMFORT_NOISE_PTS)] = True
    for pt in extra:
        if 0 <= pt < 128:
            table[pt] = True
    return table


_JITTER_BLOCK = 256
# (1 - 1/16)**-256 is about 1.5e7: block-local sums stay far from overflow and lose no
# precision that matters, while whole-array powers of 15/16 would underflow.
_JITTER_POW = (1.0 - _JITTER_GAIN) ** np.arange(_JITTER_BLOCK + 1)


def _jitter_filter(abs_d: np.ndarray, j0: float) -> np.ndarray:
    """RFC 3550 §6.4.1 / A.8 recursion ``J(i) = J(i-1) + (|D(i)| - J(i-1)) / 16`` for all i.

    Vectorised in blocks of 256: inside a block ``J(k) = a**(k+1) * J(start) +
    sum_j a**(k-j) * |D(j)| / 16`` with ``a = 15/16``, the sum taken as a cumulative sum of
    ``a**-j``-weighted terms; block starts are chained in a short Python loop.
    """
    m = abs_d.size
    nb = -(-m // _JITTER_BLOCK)
    x = np.zeros(nb * _JITTER_BLOCK)
    x[:m] = abs_d * _JITTER_GAIN
    x = x.reshape(nb, _JITTER_BLOCK)
    up = _JITTER_POW[:_JITTER_BLOCK]  # a**k
    local = np.cumsum(x / up, axis=1) * up  # zero-start response inside each block
    starts = np.empty(nb)
    j = j0
    a_block = _JITTER_POW[_JITTER_BLOCK]
    for i in range(nb):
        starts[i] = j
        j = a_block * j + local[i, -1]
    out = local + starts[:, None] * _JITTER_POW[1:]
    return out.reshape(-1)[:m]


def _running_mean(mean: float, values: np.ndarray, ks: np.ndarray) -> float:
    """Apply ``mean += (v - mean) / k`` for each (v, k) in order, in closed form.

    ``mean_after = mean * prod(1 - 1/k) + sum_i v_i / k_i * prod_{j > i}(1 - 1/k_j)``;
    the suffix products stay >= k_first / k_last, so nothing underflows.
    """
    if values.size == 0:
        return mean
    f = 1.0 - 1.0 / ks
    suffix = np.cumprod(f[::-1])[::-1]  # suffix[i] = prod f[i:]
    after = np.empty_like(suffix)
    after[:-1] = suffix[1:]
    after[-1] = 1.0
    return float(mean * suffix[0] + np.sum(values / ks * after))


# A packet may arrive this many sequence numbers behind the highest one and still be
# told apart as a duplicate or a late packet: the presence map keeps 2 * 2**16 of them
# (128 KiB per stream), so its memory does not grow with the stream. A whole sequence
# cycle (RFC 3550 A.1) is far beyond any real reordering; RFC 3550 A.1's MAX_DROPOUT is 3000.
_PRESENCE_WINDOW = 1 << 16


class _RunStats:
    """Loss-run statistics of a received/lost sequence fed in pieces.

    The definitions are those of :func:`qoe.voice.lossmodel.loss_pattern` (G.107 (06/2015)
    §7.5, eq. 7-32: p, q, BurstR = 1/(p + q), loss runs and the gaps between them), kept
    as counts so that the sequence never has to be held whole.
    """

    def __init__(self) -> None:
        self.n = 0
        self.lost = 0
        self.last: bool | None = None
        self.rx_to_lost = self.lost_to_rx = self.from_rx = self.from_lost = 0
        self.bursts = self.burst_sum = self.burst_max = 0
        self.gaps = self.gap_sum = 0
        self.open_val: bool | None = None
        self.open_len = 0
        self.pending_gap: int | None = None

    def add(self, m: np.ndarray) -> None:
        """Append ``m`` (True = lost) to the sequence."""
        if m.size == 0:
            return
        self.n += int(m.size)
        self.lost += int(np.count_nonzero(m))
        seq = m if self.last is None else np.concatenate(([self.last], m))
        prev, nxt = seq[:-1], seq[1:]
        lost_prev = int(np.count_nonzero(prev))
        self.from_lost += lost_prev
        self.from_rx += int(prev.size) - lost_prev
        self.rx_to_lost += int(np.count_nonzero(~prev & nxt))
        self.lost_to_rx += int(np.count_nonzero(prev & ~nxt))
        self.last = bool(m[-1])
        starts = np.concatenate(([0], np.flatnonzero(m[1:] != m[:-1]) + 1))
        lengths = np.diff(np.concatenate((starts, [m.size])))
        for v, n in zip(m[starts].tolist(), lengths.tolist()):
            if v == self.open_val:
                self.open_len += n
            else:
                self._close()
                self.open_val, self.open_len = v, n

    def add_run(self, value: bool, n: int) -> None:
        """Append ``n`` copies of ``value`` without building them."""
        if n <= 0:
            return
        self.n += n
        self.lost += n if value else 0
        if self.last is not None:
            if self.last:
                self.from_lost += 1
                self.lost_to_rx += 0 if value else 1
            else:
                self.from_rx += 1
                self.rx_to_lost += 1 if value else 0
        if value:
            self.from_lost += n - 1
        else:
            self.from_rx += n - 1
        self.last = value
        if value == self.open_val:
            self.open_len += n
        else:
            self._close()
            self.open_val, self.open_len = value, n

    def _close(self) -> None:
        if self.open_val is None:
            return
        if self.open_val:  # a loss run ends; a received run before it, after a burst, is a gap
            if self.pending_gap is not None:
                self.gaps += 1
                self.gap_sum += self.pending_gap
                self.pending_gap = None
            self.bursts += 1
            self.burst_sum += self.open_len
            self.burst_max = max(self.burst_max, self.open_len)
        elif self.bursts:
            self.pending_gap = self.open_len

    def result(self) -> dict[str, Any]:
        """bursts, mean/max burst, mean gap and BurstR, as loss_pattern defines them."""
        bursts, burst_sum, burst_max, gaps, gap_sum = self.bursts, self.burst_sum, self.burst_max, self.gaps, self.gap_sum
        if self.open_val:  # the sequence ends inside a loss run
            if self.pending_gap is not None:
                gaps, gap_sum = gaps + 1, gap_sum + self.pending_gap
            bursts, burst_sum, burst_max = bursts + 1, burst_sum + self.open_len, max(burst_max, self.open_len)
        mean_burst = burst_sum / bursts if bursts else 0.0
        p = self.rx_to_lost / self.from_rx if self.from_rx else 0.0
        if self.lost == 0:
            burst_r = 1.0
        elif self.lost == self.n:
            burst_r = float("inf")
        else:
            q = self.lost_to_rx / self.from_lost if self.from_lost else 0.0
            if q == 0.0:  # the only loss run is still open at the end
                q = 1.0 / mean_burst
            burst_r = 1.0 / (p + q)  # G.107 (06/2015) eq. (7-32)
        return {
            "loss_bursts": bursts,
            "mean_burst_length": float(mean_burst),
            "max_burst_length": int(burst_max),
            "mean_gap_length": gap_sum / gaps if gaps else 0.0,
            "burst_ratio": float(burst_r),
        }


class _Presence:
    """Which extended sequence numbers arrived: duplicates, reordering, loss runs.

    Keeps a window of ``2 * _PRESENCE_WINDOW`` sequence numbers; numbers more than
    ``_PRESENCE_WINDOW`` below the highest are settled into :class:`_RunStats` and
    dropped. A packet arriving after its number was settled counts as out of order.
    """

    def __init__(self, first: int) -> None:
        self.cap = 2 * _PRESENCE_WINDOW
        self.margin = max(1, self.cap // 128)  # room below the first number for early-reordered ones
        self.base = first - self.margin
        self.have = np.zeros(self.cap, dtype=bool)
        self.have[first - self.base] = True
        self.lo = self.hi = self.max_ext = first
        self.settled: int | None = None  # numbers below this are in self.runs
        self.runs = _RunStats()
        self.dups = 0
        self.ooo = 0

    def add(self, e: np.ndarray) -> None:
        """Mark extended sequence numbers ``e`` (arrival order) as received."""
        step, half = _PRESENCE_WINDOW // 4, _PRESENCE_WINDOW // 2
        i, n = 0, e.size
        while i < n:  # pieces that never move the highest number by more than half a window
            j = min(i + step, n)
            cm = np.maximum.accumulate(e[i:j])
            over = np.flatnonzero(cm > max(self.max_ext, int(e[i])) + half)
            if over.size:
                j = i + int(over[0])
            self._add(e[i:j])
            i = j

    def _add(self, e: np.ndarray) -> None:
        run_max = np.maximum.accumulate(np.concatenate(([self.max_ext], e)))[:-1]
        self.max_ext = max(self.max_ext, int(e.max()))
        hi = max(self.hi, int(e.max()))
        if hi - self.base >= self.cap:  # slide: settle what is far behind the highest
            keep_from = hi - _PRESENCE_WINDOW
            if keep_from > self.lo:
                top = min(keep_from, self.hi + 1)
                self.runs.add(~self.have[self.lo - self.base : top - self.base])
                self.runs.add_run(True, keep_from - top)  # numbers jumped over: missing
                self.settled = keep_from
                self._rebase(keep_from, keep_from, self.hi)
                self.lo = keep_from
            else:
                self._rebase(self.lo, self.lo, self.hi)
        floor = hi - self.cap + 1 if self.settled is None else max(self.settled, hi - self.cap + 1)
        too_late = e < floor
        ok = ~too_late
        lo = min(self.lo, int(e[ok].min())) if ok.any() else self.lo
        if lo < self.base:
            self._rebase(max(lo - self.margin, hi - self.cap + 1), self.lo, self.hi)
        self.lo, self.hi = lo, hi
        idx = e[ok] - self.base
        order = np.argsort(idx, kind="stable")
        srt = idx[order]
        first_in_piece = np.ones(idx.size, dtype=bool)
        first_in_piece[order[1:]] = srt[1:] != srt[:-1]
        dup = ~first_in_piece | self.have[idx]
        self.have[idx] = True
        self.dups += int(np.count_nonzero(dup))
        self.ooo += int(np.count_nonzero(~dup & (e[ok] < run_max[ok]))) + int(np.count_nonzero(too_late))

    def _rebase(self, base: int, a: int, b: int) -> None:
        """Move the map to start at ``base``, keeping the numbers ``a``..``b``."""
        moved = np.zeros(self.cap, dtype=bool)
        if b >= a:
            moved[a - base : b - base + 1] = self.have[a - self.base : b - self.base + 1]
        self.have, self.base = moved, base

    def loss_runs(self) -> dict[str, Any]:
        runs = _RunStats()
        runs.__dict__.update({k: v for k, v in self.runs.__dict__.items()})
        runs.add(~self.have[self.lo - self.base : self.hi - self.base + 1])
        return runs.result()


class _Analyser:
    """Streaming receiver statistics of one stream, fed chunk by chunk in arrival order.

    Keeps O(1) state plus one byte per sequence number spanned (to count duplicates and
    loss bursts), so the memory does not grow with the number of streams' packets held.
    Chunked and one-shot updates give identical results.
    """

    def __init__(self, clocks: np.ndarray, cn: np.ndarray) -> None:
        self.clocks = clocks
        self.cn = cn
        self.n = 0
        self.j = 0.0
        self.any_clock = False
        self.min_d = np.inf
        self.max_d = -np.inf
        self.mean_d = 0.0
        self.n_d = 0
        self.min_j = np.inf
        self.max_j = -np.inf
        self.mean_j = 0.0
        self.n_j = 0
        self.cycles = 0
        self.under = False
        self.seq_errors = 0
        self.wrong_ts = 0
        self.pt_counts = np.zeros(128, dtype=np.int64)
        self.presence: _Presence | None = None

    # -- one chunk ---------------------------------------------------------------
    def update(
        self, arr: np.ndarray, seq: np.ndarray, ts: np.ndarray, pt: np.ndarray, mk: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Add packets (arrival order); return their extended sequence numbers and timestamps."""
        arr = np.asarray(arr, dtype=np.int64)
        seq = np.asarray(seq).astype(np.int64)
        ts = np.asarray(ts).astype(np.int64)
        pt = np.asarray(pt).astype(np.intp)
        mk = np.asarray(mk, dtype=bool)
        m = arr.shape[0]
        if m == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        self.pt_counts += np.bincount(pt, minlength=128)
        if self.n == 0:
            self._first(int(arr[0]), int(seq[0]), int(ts[0]), int(pt[0]))
            if m == 1:
                return seq[:1].copy(), ts[:1].copy()
            se, te = self._rest(arr[1:], seq[1:], ts[1:], pt[1:], mk[1:])
            return np.concatenate((seq[:1], se)), np.concatenate((ts[:1], te))
        return self._rest(arr, seq, ts, pt, mk)

    def _first(self, arr: int, seq: int, ts: int, pt: int) -> None:
        self.n = 1
        self.first_arr = arr
        self.start = seq
        self.first_ts = ts
        self.last_seq = seq
        self.last_seq_ext = seq
        self.last_ts = ts
        self.last_ts_ext = ts
        self.ref_arr = arr
        self.ref_nom = 0.0  # nominal time (ms since the first packet's timestamp) of the reference
        self.prev_cn = bool(self.cn[pt])
        self.track = seq
        self.last_arr = arr
        self.presence = _Presence(seq)

    def _rest(self, arr, seq, ts, pt, mk):  # noqa: ANN001, ANN202 - internal, arrays
        m = arr.shape[0]
        seq_ext = _unwrap(seq, self.last_seq, self.last_seq_ext, _SEQ_MOD)
        ts_ext = _unwrap(ts, self.last_ts, self.last_ts_ext, _TS_MOD)
        ks = (self.n + np.arange(m)).astype(np.float64)  # k: packets before this one
        rel_ts = ts_ext - self.first_ts
        ok = rel_ts >= 0  # else a "wrong timestamp": counted, otherwise ignored
        self.wrong_ts += int(m - np.count_nonzero(ok))
        cn = self.cn[pt]
        prev_cn = np.empty(m, dtype=bool)
        prev_cn[0] = self.prev_cn
        prev_cn[1:] = cn[:-1]
        clk = self.clocks[pt]
        known = ~np.isnan(clk)
        left_out = mk | cn | prev_cn

        oi = np.flatnonzero(ok)
        if oi.size:
            a_ok = arr[oi]
            prev_a = np.empty_like(a_ok)
            prev_a[0] = self.ref_arr
            prev_a[1:] = a_ok[:-1]
            delta_ms = (a_ok - prev_a) / 1e6
            inc_d = ~left_out[oi]
            if inc_d.any():
                d = delta_ms[inc_d]
                self.min_d = min(self.min_d, float(d.min()))
                self.max_d = max(self.max_d, float(d.max()))
                self.mean_d = _running_mean(self.mean_d, d, ks[oi][inc_d])
                self.n_d += int(d.size)
            jpos = np.flatnonzero(known[oi])
            if jpos.size:
                self.any_clock = True
                ji = oi[jpos]
                nom = rel_ts[ji] * (1000.0 / clk[ji])  # RFC 3550 §6.4.1: timestamps in ms
                prev_nom = np.empty_like(nom)
                prev_nom[0] = self.ref_nom
                prev_nom[1:] = nom[:-1]
                dd = np.abs(delta_ms[jpos] - (nom - prev_nom))  # |D(i-1, i)|
                # RFC 3550 §6.4.1 / A.8: J(i) = J(i-1) + (|D| - J(i-1)) / 16
                jit = _jitter_filter(dd, self.j)
                self.j = float(jit[-1])
                self.ref_nom = float(nom[-1])
                inc_j = inc_d[jpos]
                if inc_j.any():
                    jv = jit[inc_j]
                    self.min_j = min(self.min_j, float(jv.min()))
                    self.max_j = max(self.max_j, float(jv.max()))
                    self.mean_j = _running_mean(self.mean_j, jv, ks[ji][inc_j])
                    self.n_j += int(jv.size)
            self.ref_arr = int(a_ok[-1])

        # Wireshark-compatible cycle count (module docstring), over the packets with a
        # usable timestamp; "last" is the last packet's sequence number, whatever it was.
        stop_prev = np.empty(m, dtype=np.int64)
        stop_prev[0] = self.last_seq
        stop_prev[1:] = seq[:-1]
        set_ev = ok & ((seq < self.start) | ((seq == 0) & (stop_prev == _SEQ_MOD - 1)))
        clr_ev = ok & (seq > self.start)
        if set_ev.any() or (self.under and clr_ev.any()):
            idx = np.where(set_ev | clr_ev, np.arange(m), -1)
            last_ev = np.maximum.accumulate(idx)
            after = np.where(last_ev >= 0, set_ev[np.maximum(last_ev, 0)], self.under)
            before = np.empty(m, dtype=bool)
            before[0] = self.under
            before[1:] = after[:-1]
            self.cycles += int(np.count_nonzero(set_ev & ~before))
            self.under = bool(after[-1])

        self._sequence_errors(seq, seq_ext)
        self.presence.add(seq_ext)  # type: ignore[union-attr]

        self.n += m
        self.prev_cn = bool(cn[-1])
        self.last_seq = int(seq[-1])
        self.last_seq_ext = int(seq_ext[-1])
        self.last_ts = int(ts[-1])
        self.last_ts_ext = int(ts_ext[-1])
        self.last_arr = int(arr[-1])
        return seq_ext, ts_ext

    def _sequence_errors(self, seq: np.ndarray, seq_ext: np.ndarray) -> None:
        """Count packets that are not the successor of the tracked sequence number.

        The tracked number follows in-order packets and forward jumps (also a drop of
        more than 0xFF00, taken as a wrap) but not late or duplicate packets.
        """
        d = np.diff(seq_ext, prepend=self.last_seq_ext)
        wrapped = seq < np.concatenate(([self.last_seq], seq[:-1]))
        if self.track == self.last_seq and bool(np.all(d >= 1)) and not bool(np.any(wrapped & (d >= _SEQ_MOD - _WS_WRAP_GAP))):
            # every packet moves forward: the tracked number is always the previous one
            self.seq_errors += int(np.count_nonzero(d != 1))
            self.track = int(seq[-1])
            return
        s = self.track
        errors = 0
        for x in seq.tolist():
            if x == (s + 1) % _SEQ_MOD:
                s = x
            elif x > s + 1 or s - x > _WS_WRAP_GAP:
                s = x
                errors += 1
            else:  # late or duplicated
                errors += 1
        self.seq_errors += errors
        self.track = s

    # -- the result --------------------------------------------------------------
    def result(self) -> RtpStats:
        if self.n == 0:
            raise InputError("rtp_stats: the stream has no packets")
        expected = self.cycles * _SEQ_MOD + self.last_seq - self.start + 1
        lost = expected - self.n
        pres = self.presence
        runs = pres.loss_runs()  # type: ignore[union-attr]
        nan = float("nan")
        has_d = self.n_d > 0
        has_j = self.n_j > 0
        return RtpStats(
            first_ns=int(self.first_arr),
            last_ns=int(self.last_arr),
            packets=int(self.n),
            expected=int(expected),
            lost=int(lost),
            loss_fraction=lost / expected if expected > 0 else 0.0,
            duplicates=pres.dups,  # type: ignore[union-attr]
            out_of_order=pres.ooo,  # type: ignore[union-attr]
            sequence_errors=self.seq_errors,
            wrong_timestamps=self.wrong_ts,
            problems=bool(self.seq_errors or self.wrong_ts),
            min_delta_ms=self.min_d if has_d else nan,
            mean_delta_ms=self.mean_d if has_d else nan,
            max_delta_ms=self.max_d if has_d else nan,
            min_jitter_ms=self.min_j if has_j else nan,
            mean_jitter_ms=self.mean_j if has_j else nan,
            max_jitter_ms=self.max_j if has_j else nan,
            jitter_ms=self.j if self.any_clock else nan,
            **runs,
        )


def rtp_stats(
    packets: RtpPackets,
    clock_rate: int | None,
    *,
    clock_rates: dict[int, int] | None = None,
    comfort_noise: Iterable[int] = (),
) -> RtpStats:
    """Receiver statistics of one stream, computed from its packet table.

    Parameters
    ----------
    packets : RtpPackets
        The received packets of one stream in arrival order.
    clock_rate : int or None
        RTP clock rate in Hz of the stream's payload types that are not in
        ``clock_rates`` nor in RFC 3551's static table (e.g. 48000 for a dynamic Opus
        type); None leaves those packets out of the jitter.
    clock_rates : dict of int to int, optional
        Clock rate per payload type (e.g. from SDP ``a=rtpmap``); overrides the rest.
    comfort_noise : iterable of int, optional
        Payload types that carry comfort noise besides 13 and 19 (e.g. a dynamic ``CN``).

    Returns
    -------
    RtpStats

    Notes
    -----
    The conventions (which packets count for delta and jitter, how ``lost`` and the
    means are computed) are Wireshark's, listed in the module docstring, so the result
    equals ``tshark -q -z rtp,streams`` for the same packets.

    References
    ----------
    RFC 3550 §6.4.1 (jitter), A.1 (sequence numbers), A.3 (expected, lost), A.8.
    """
    if len(packets) == 0:
        raise InputError("rtp_stats: the stream has no packets")
    clocks = _clock_table(clock_rates)
    if clock_rate:
        pts = np.unique(packets.payload_type)
        for p in pts.tolist():
            if np.isnan(clocks[p]) and (clock_rates is None or p not in clock_rates):
                clocks[p] = clock_rate
    an = _Analyser(clocks, _cn_table(comfort_noise))
    an.update(packets.arrival_ns, packets.seq, packets.timestamp, packets.payload_type, packets.marker)
    return an.result()


# --------------------------------------------------------------------------- RTCP


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


# --------------------------------------------------------------------------- discovery


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
    ds = (np.diff(seq.astype(np.int64)) + 32768) % _SEQ_MOD - 32768
    dt = (np.diff(ts.astype(np.int64)) + (1 << 31)) % _TS_MOD - (1 << 31)
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
        self.analyser: _Analyser | None = None
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
        v2 = (length >= 8) & ((b0 >> 6) == _RTP_VERSION)
        is_rtcp = v2 & (b1 >= RTCP_SR) & (b1 <= RTCP_APP)
        for i in np.flatnonzero(is_rtcp).tolist():
            items = parse_rtcp(b.payload_of(i))
            if items:
                self.rtcp.add(int(b.ts_ns[i]), items)
        rows = np.flatnonzero(v2 & ~is_rtcp & (length >= _RTP_HEADER))
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
        h = u8[s[:, None] + np.arange(_RTP_HEADER)].astype(np.int64)
        cc = h[:, 0] & 0x0F
        has_x = (h[:, 0] & 0x10) != 0
        has_p = (h[:, 0] & 0x20) != 0
        hdr = _RTP_HEADER + 4 * cc
        xi = np.flatnonzero(has_x & (hdr + 4 <= ln))
        if xi.size:  # RFC 3550 §5.3.1: 16-bit profile word, 16-bit length in 32-bit words
            at = s[xi] + hdr[xi]
            hdr[xi] += 4 + 4 * (u8[at + 2].astype(np.int64) << 8 | u8[at + 3])
        valid = (hdr <= ln) & ~(has_x & (_RTP_HEADER + 4 * cc + 4 > ln))
        if not valid.all():
            keep = np.flatnonzero(valid)
            rows, s, ln, h, hdr, has_p = rows[keep], s[keep], ln[keep], h[keep], hdr[keep], has_p[keep]
            if rows.size == 0:
                return
        pad = np.where(has_p, u8[s + ln - 1], 0).astype(np.int64)
        pad = np.where(pad <= ln - hdr, pad, 0)
        marker = (h[:, 1] & 0x80) != 0
        ptype = h[:, 1] & 0x7F
        seq = h[:, 2] << 8 | h[:, 3]
        ts = h[:, 4] << 24 | h[:, 5] << 16 | h[:, 6] << 8 | h[:, 7]
        ssrc = h[:, 8] << 24 | h[:, 9] << 16 | h[:, 10] << 8 | h[:, 11]
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
        pstart = s + hdr
        pend = s + ln - pad
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
        flow.analyser = _Analyser(_clock_table(rates), _cn_table(cn))
        probe, flow.probe = flow.probe, []
        for c in probe:
            self._push(flow, c[:6], c[6])

    def _push(self, flow: _Flow, cols: tuple[np.ndarray, ...], pays: list[bytes]) -> None:
        frame, arr, seq, ts, pt, mk = cols
        se, te = flow.analyser.update(arr, seq, ts, pt, mk)  # type: ignore[union-attr]
        if self.keep:
            flow.chunks.append((frame, arr, seq, se, ts, te, mk, pt))
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
            if flow.media is None:  # SDP seen only after the flow was taken as RTP
                ann = self._announcement(flow)
                if ann is not None:
                    flow.call_id = ann[0]
                    late_media = ann[1]
                else:
                    late_media = None
            else:
                late_media = None
            an = flow.analyser
            stats = an.result()
            counts = an.pt_counts
            pts = tuple(int(p) for p in np.argsort(-counts, kind="stable") if counts[p] > 0)
            main = pts[0]
            codec, rate = _codec_of(main, flow.media or late_media)
            src, dst, sport, dport, ssrc = flow.key
            packets = None
            if self.keep:
                packets = _concat_packets(flow.chunks, flow.payloads)
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
                    ptime_ms=(flow.media or late_media).ptime_ms if (flow.media or late_media) else None,
                    found_by="sdp" if flow.media is not None else "heuristic",
                    payload_types=pts,
                    rtcp=rtcp.get(ssrc),
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


def _concat_packets(chunks: list[tuple[np.ndarray, ...]], payloads: list[list[bytes]]) -> RtpPackets:
    cols = [np.concatenate([c[i] for c in chunks]) for i in range(8)]
    frame, arr, seq, se, ts, te, mk, pt = cols
    return RtpPackets(
        frame=frame.astype(np.int64),
        arrival_ns=arr.astype(np.int64),
        seq=seq.astype(np.uint16),
        seq_ext=se.astype(np.int64),
        timestamp=ts.astype(np.uint32),
        ts_ext=te.astype(np.int64),
        marker=mk.astype(bool),
        payload_type=pt.astype(np.uint8),
        payloads=tuple(p for chunk in payloads for p in chunk),
    )


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
