"""What a scan of a capture found: streams, their keys and RTCP summaries, and the scan.

The result records of :func:`qoe.rtp.scan_capture` and their flat views for tables,
CSV and JSON (re-exported, and documented as a whole, by :mod:`qoe.rtp`).

References
----------
.. [1] RFC 3550, "RTP: A Transport Protocol for Real-Time Applications", §3 (SSRC),
   §6.4 (sender and receiver reports), §6.4.1 (round-trip time from LSR and DLSR).
.. [2] RFC 3261 §20 (the Call-ID, From and To header fields of a SIP call).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from qoe.report import brief as brief_view
from qoe.rtp._bundle import RtxInfo
from qoe.rtp._packet import RtpPackets, media_kind
from qoe.rtp._stats import RtpStats
from qoe.rtp.sip import SipCall
from qoe.rtp.srtp import SrtpInfo

#: The RTCP counters of :attr:`RtpStream.feedback`: sender and receiver reports (RFC 3550
#: §6.4), Generic NACK (RFC 4585 §6.2.1), PLI (§6.3.1), FIR (RFC 5104 §4.3.1) and
#: transport-wide feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1).
FEEDBACK_KINDS = ("sr", "rr", "nack", "pli", "fir", "transport_cc")
_FEEDBACK_COLUMNS = tuple((f"feedback_{k}", k) for k in FEEDBACK_KINDS)
_NO_FEEDBACK = {c: 0 for c, _ in _FEEDBACK_COLUMNS}

#: How close to the capture's end (in the stream's own mean packet intervals) a stream's last
#: packet must be for the stream to count as still sending when the capture ended
#: (:attr:`RtpStream.active_at_end`): a live voice stream misses a packet or two to loss or
#: jitter, so one interval would miss streams that were cut; three keeps a stream that
#: ended a fraction of a second before the capture stopped out at 20 ms packets.
ACTIVE_AT_END_INTERVALS = 3


@dataclass(frozen=True, slots=True, order=True)
class StreamKey:
    """What identifies one RTP stream: the UDP direction and the SSRC (RFC 3550 §3), and the
    tunnels it was carried in.

    ``encapsulation`` is :attr:`qoe.capture.Packet.encapsulation` of the stream's packets
    (outermost first, with the tunnels' identifiers: "gtp-u[teid=0x00001001]",
    "vxlan[vni=42]", "gre[key=7]", "mpls[labels=16001,24005]"; "" outside any tunnel). Two
    subscribers whose tunnels carry the same inner addresses, ports and SSRC are two
    streams, told apart by it; its text follows the addresses in ``str(key)`` ("... via
    gtp-u[teid=0x00001001]").
    """

    src: str
    sport: int
    dst: str
    dport: int
    ssrc: int
    encapsulation: str = ""

    def __str__(self) -> str:
        via = f" via {self.encapsulation}" if self.encapsulation else ""
        return f"{self.src}:{self.sport} -> {self.dst}:{self.dport} ssrc=0x{self.ssrc:08x}{via}"



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
        Addresses, ports, SSRC and the tunnels the stream came through
        (:attr:`StreamKey.encapsulation`).
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
    media : {"audio", "video"} or None
        What the main payload carries (:func:`qoe.rtp.media_kind`: the SDP ``m=`` line,
        else the encoding name, else the clock rate); None when nothing tells. Left out,
        it is derived from ``codec`` and ``clock_rate``.
    srtp : SrtpInfo or None
        Set when the stream is SRTP (RFC 3711: payload encrypted): how that was found, the
        sender's SDES key if the SDP had one, and, after :func:`qoe.rtp.decrypt.decrypt_streams`,
        what decryption did. None: plain RTP as far as the capture tells.
    channels : int
        Audio channels of ``payload_type`` (SDP ``a=rtpmap``'s encoding parameters, RFC
        4566 §6; 1 when not given, RFC 3551 §4.1).
    fmtp : dict of str to str
        SDP ``a=fmtp`` parameters of ``payload_type`` (RFC 4566 §6; empty when none).
    active_at_end : bool
        The stream was still sending when the capture's UDP traffic ended, so the capture
        may have cut it: its last packet arrived within :data:`ACTIVE_AT_END_INTERVALS`
        (3) of its mean packet intervals of the capture's last UDP datagram, and no RTCP
        BYE from its SSRC was seen (RFC 3550 §6.6: a source leaving says so). A capture
        stopped right after a stream's last packet looks the same: this is a "may", and
        SIP's BYE (:class:`qoe.rtp.sip.SipCall`) is the firmer signal where there is one.
    feedback : dict of str to int
        RTCP the stream's receiver sent back on the reverse UDP direction (its destination
        address and port to its source's), counted by kind (:data:`FEEDBACK_KINDS`: ``sr``,
        ``rr``, ``nack``, ``pli``, ``fir``, ``transport_cc``). Under BUNDLE every stream of
        the 5-tuple shares these counts (SRTCP hides which stream a message is about).
        SRTCP leaves only a compound packet's first header in clear (RFC 3711 §3.4): a
        feedback message behind a report in an encrypted compound packet is not counted.
        Empty when no RTCP went back.
    rtx : RtxInfo or None
        The RTX stream (RFC 4588) that repairs this one, when the capture has it: its SSRC,
        packets and the missing packets it repaired (a retransmitted packet is a repair,
        counted here; ``stats.lost`` stays RFC 3550's, as the browser's ``packetsLost``).
    header_bytes : int or None
        RTP header bytes (RFC 3550 §5.1: 12, the CSRC list, the header extension of
        §5.3.1) and padding bytes of this SSRC's packets; in SRTP, a packet with the padding
        bit is taken as padding-only (a note says so). The record's
        ``header_bytes_received`` adds the RTX stream's: W3C webrtc-stats
        ``RTCInboundRtpStreamStats.headerBytesReceived`` (retransmissions included). None
        when not counted (a stream built by hand).
    notes : tuple of str
        What the user should know about how the stream was read: for DTLS-SRTP, that its
        payloads cannot be decoded without keys and what is measured instead; an inferred
        clock rate and media kind with their evidence. Empty for a plain announced stream.
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
    media: str | None = None
    srtp: SrtpInfo | None = None
    channels: int = 1
    fmtp: Mapping[str, str] = field(default_factory=dict)
    active_at_end: bool = False
    notes: tuple[str, ...] = ()
    feedback: Mapping[str, int] = field(default_factory=dict)
    rtx: RtxInfo | None = None
    header_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.media is None:  # not given: from the codec's name and clock rate
            object.__setattr__(self, "media", media_kind(self.codec, self.clock_rate))

    @property
    def ssrc(self) -> int:
        return self.key.ssrc

    def to_dict(self) -> dict[str, Any]:
        """One flat record: identification, codec, statistics, RTCP summary."""
        return self._record({})

    def _record(self, out: dict[str, Any]) -> dict[str, Any]:
        """:meth:`to_dict`'s fields added to ``out`` (after what it holds): a table's record
        starts with its own columns without copying this one into it."""
        k = self.key
        out.update({
            "src": k.src,
            "sport": k.sport,
            "dst": k.dst,
            "dport": k.dport,
            "ssrc": f"0x{k.ssrc:08x}",
            "encapsulation": k.encapsulation,
            "payload_type": self.payload_type,
            "codec": self.codec,
            "clock_rate": self.clock_rate,
            "media": self.media,
            "call_id": self.call_id,
            "found_by": self.found_by,
            "active_at_end": self.active_at_end,
        })
        out.update(SrtpInfo.record(self.srtp))
        out["notes"] = "; ".join(self.notes) if self.notes else None
        fb = self.feedback
        out.update({c: fb.get(k, 0) for c, k in _FEEDBACK_COLUMNS} if fb else _NO_FEEDBACK)
        out.update(RtxInfo.record(self.rtx))
        out["header_bytes"] = self.header_bytes
        out["header_bytes_received"] = (None if self.header_bytes is None else self.header_bytes + (
            self.rtx.header_bytes or 0 if self.rtx is not None else 0))
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
    last_ns : int or None
        Time of the capture's last UDP datagram (the latest ``ts_ns`` read), None when it
        holds none: the end against which :attr:`RtpStream.active_at_end` is judged.
    """

    path: str
    streams: tuple[RtpStream, ...]
    calls: tuple[SipCall, ...]
    rtcp: dict[int, RtcpSummary]
    first_ns: int | None
    udp_packets: int
    rtcp_packets: int
    last_ns: int | None = None

    #: Columns of ``stream_records(brief=True)`` (a subset of the full record's, same names).
    STREAM_BRIEF_COLUMNS: ClassVar[tuple[str, ...]] = (
        "source", "destination", "encapsulation", "ssrc", "codec", "call_id", "start_s", "duration_s", "packets", "lost", "loss_%",
        "duplicates", "max_delta_ms", "mean_jitter_ms", "max_jitter_ms", "loss_bursts", "max_burst_length", "problems",
        "srtp",
    )
    #: Columns of ``call_records(brief=True)`` (a subset of the full record's, same names).
    CALL_BRIEF_COLUMNS: ClassVar[tuple[str, ...]] = (
        "call_id", "from", "to", "status", "start_s", "setup_s", "duration_s", "offer", "answer", "messages",
        "streams",
    )

    def stream_records(self, *, brief: bool = False) -> list[dict[str, Any]]:
        """One flat record per stream (with its call's From/To), for tables and CSV.

        Besides :meth:`RtpStream.to_dict`: ``source`` and ``destination`` (``addr:port``),
        the call's ``call_from``/``call_to``, ``start_s`` (from the capture's first
        frame), ``duration_s`` and ``loss_%``.

        Parameters
        ----------
        brief : bool, optional
            Only the columns that fit a terminal table (:attr:`STREAM_BRIEF_COLUMNS`:
            stream, codec, call, packets, loss, duplicates (which make ``lost``
            negative), delta, jitter, bursts, problems); ``encapsulation`` only when a
            stream came through a tunnel.
        """
        calls = {c.call_id: c for c in self.calls}
        rows = []
        names = self.STREAM_BRIEF_COLUMNS
        if not any(s.key.encapsulation for s in self.streams):  # no tunnel: no empty column
            names = tuple(n for n in names if n != "encapsulation")
        for s in self.streams:
            c = calls.get(s.call_id) if s.call_id else None
            d = s._record({"source": f"{s.key.src}:{s.key.sport}", "destination": f"{s.key.dst}:{s.key.dport}"})
            d["call_from"] = c.from_uri if c else None
            d["call_to"] = c.to_uri if c else None
            d["start_s"] = (s.stats.first_ns - self.first_ns) / 1e9 if self.first_ns is not None else None
            d["duration_s"] = s.stats.duration_s
            d["loss_%"] = 100.0 * s.stats.loss_fraction
            rows.append(brief_view(d, names) if brief else d)
        return rows

    def call_records(self, *, brief: bool = False) -> list[dict[str, Any]]:
        """One flat record per SIP call, with the number of streams found for it.

        Besides :meth:`SipCall.to_dict <qoe.rtp.sip.SipCall.to_dict>`: ``streams``,
        ``start_s`` (the INVITE, from the capture's first frame) and ``duration_s`` (from
        the answer to the end).

        Parameters
        ----------
        brief : bool, optional
            Only :attr:`CALL_BRIEF_COLUMNS`: relative times instead of the absolute
            nanosecond ones, no caller/callee addresses.
        """
        out = []
        for c in self.calls:
            d = c.to_dict()
            d["streams"] = sum(1 for s in self.streams if s.call_id == c.call_id)
            d["start_s"] = None if c.invite_ns is None or self.first_ns is None else (c.invite_ns - self.first_ns) / 1e9
            d["duration_s"] = None if c.answer_ns is None or c.end_ns is None else (c.end_ns - c.answer_ns) / 1e9
            out.append(brief_view(d, self.CALL_BRIEF_COLUMNS) if brief else d)
        return out

    def to_dict(self) -> dict[str, Any]:
        """``{"streams": [...], "calls": [...]}`` of flat records."""
        return {"streams": self.stream_records(), "calls": self.call_records()}
