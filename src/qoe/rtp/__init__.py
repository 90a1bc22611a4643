"""RTP in a capture, for voice and video alike: discovery, statistics, playout, delay.

This layer sits between :mod:`qoe.capture` (packets) and the media scorers
(:mod:`qoe.voice`, :mod:`qoe.video`); it imports neither of them. It holds:

* SIP and SDP parsing (:mod:`qoe.rtp.sip`), which announce streams (and their SDES keys);
* SRTP (:mod:`qoe.rtp.srtp`): which streams are encrypted, and their packets' decryption;
  :mod:`qoe.rtp.decrypt` decrypts the SRTP streams a scan found;
* the one-pass scan (:func:`scan_capture`, :func:`find_streams`) and RFC 3550
  receiver statistics (:func:`rtp_stats`), below;
* loss-run statistics for G.107's Ppl and BurstR (:mod:`qoe.rtp.lossmodel`);
* receiver jitter buffers (:mod:`qoe.rtp.jitterbuffer`) and one-way delay from two
  captures (:mod:`qoe.rtp.delay`);
* which payloads are audio and which video (:func:`media_kind`);
* RFC 8285 header extensions of every packet (:mod:`qoe.rtp.extensions`,
  :func:`read_header_extensions`): abs-send-time and transport-wide-cc for one-way delay
  variation from one capture, the MID that names a stream under BUNDLE.

A stream is one synchronisation source (SSRC) on one UDP direction (source address and
port, destination address and port), from its first packet until it ends: silent for
``stream_timeout_s`` (:data:`STREAM_TIMEOUT_S`, 25 s: RFC 3550 §6.3.5), or for
:data:`BYE_GRACE_S` (2 s) after an RTCP BYE of its SSRC or a SIP BYE/CANCEL of its call; a
later packet of the same flow starts a second stream (a segment). :func:`iter_scan` hands on
each call's streams as soon as they have ended and releases them, so that a scan of a trunk
capture holds the calls in progress only (docs/memory.md). For each stream this module gives

* a columnar table of the received packets (:class:`RtpPackets`), in arrival order, that
  the jitter buffer, the G.711 decoder and the one-way delay matcher work on;
* receiver statistics (:class:`RtpStats`): packets, expected, lost, duplicates,
  reordering, interarrival jitter, arrival deltas and a loss-burst profile for the
  E-model's BurstR;
* what RTCP said about it (:class:`RtcpSummary`: reports, and the round-trip time from
  LSR/DLSR), and which SIP call announced it.

Streams are found from SIP/SDP when the capture has the signalling
(:mod:`qoe.rtp.sip`), and otherwise by a heuristic (version 2, one SSRC, sequence
numbers and timestamps that progress, a dominant payload type), so that captures of
ffmpeg, GStreamer or VLC streams need no options. RTCP (packet types 200-204, compound
packets, also multiplexed on the RTP port) is recognised and never taken for RTP.

Wireshark compatibility
-----------------------
The delta and jitter figures, and with ``loss_rule="tshark"`` the loss, equal what
``tshark -q -z rtp,streams`` prints for the same capture. Its conventions, established by experiment against TShark 4.0 on
crafted captures (``tests/voice/test_rtp_tshark.py``) and written here from RFC 3550
and that observed behaviour:

* ``lost = expected - received``. By default ``expected`` is RFC 3550 A.3's: the highest
  extended sequence number received minus the first packet's, plus one (each packet's
  number is extended at the shortest distance from the one before it). With
  ``loss_rule="tshark"`` it is tshark's: ``cycles * 65536 + last - first + 1``, where
  *first* and *last* are the sequence numbers of the first and of the **last received**
  packet (not the highest), and a sequence cycle is counted when a sequence number falls
  below the first one (once, until one rises above it again) or when 0 follows 65535.
  ``lost`` is negative when duplicates outnumber losses.

  **Where qoe differs from tshark by default, and why**: a packet older than the first one
  received (reordered across the stream's start, as a WebRTC forwarder or a bonded link
  does) is, for tshark, a sequence wrap: 65,536 packets "lost" each time
  (``data/video/webrtc/calls/vp8-reorder/b.pcap``, video A→B: tshark 131,074 lost of 373
  received; qoe 2, the browser's own ``inbound-rtp.packetsLost`` 2). RFC 3550 A.1 keeps
  such a packet as received and not expected, and so do receivers (libwebrtc). And when
  the last packet received is not the highest (a late packet at the end), tshark's count
  stops short (``vp8-loss/a.pcap``: 14 where 15 were dropped, the browser says 15).
* A packet whose RTP timestamp is earlier than the first packet's (signed 32-bit
  distance) is a "wrong timestamp": it is counted as received and nothing else.
* Jitter is RFC 3550 §6.4.1's ``J += (|D| - J) / 16`` with ``D`` the difference of
  arrival spacing and timestamp spacing (in ms, timestamps converted with the payload
  type's clock rate) from the previous packet; packets whose payload type has no known
  clock rate leave ``J`` alone (their arrival time still counts as "previous").
* RFC 4733 event packets (a payload type SDP maps to ``telephone-event``) have no clock
  rate for the jitter whatever their rtpmap says: each carries its event's start
  timestamp (RFC 4733 §2.3), not its own sampling instant. They count in the deltas
  (the first of an event has the marker bit: left out of them as below), and the next
  audio packet's ``D`` is taken from the last event packet's arrival. Checked on
  ``data/voice/field/dtmf.pcap``; ``scan_capture(..., event_jitter=True)`` counts them
  at their rtpmap rate instead, and :func:`rtp_stats` takes them as ``telephone_events``.
* An SDP announcement holds from its frame until the next one for the same address and
  port (a later call, or a re-INVITE, RFC 3264 §8): a stream takes its clock rates and
  its call from the announcement in force at its first packet, as Wireshark's
  conversations do (``data/voice/field/reused_port.pcap``).
* Packets with the marker bit, comfort noise (PT 13 or 19, or ``CN`` in SDP) and the
  packet right after comfort noise still update ``J`` but are left out of the minimum,
  maximum and mean of delta and jitter.
* The means are running means updated as ``mean += (x - mean) / k`` where ``k`` counts
  every packet after the first, including the left-out ones (which skip the update).
* Without a known clock rate the jitter figures are NaN (tshark prints -1/0/0).
* Duplicates count as received everywhere (RFC 3550 A.1 counts them in ``received``,
  A.8 updates the jitter with them): a capture holding every packet twice (Linux's
  ``any`` device sees a routed packet in on one interface and out on another; a span
  port mirrors both sides of a switch) has twice the packets, ``lost`` about
  ``-expected`` (RFC 3550 §6.4.1: "the loss may be negative if there are
  duplicates"), deltas of a few microseconds between copies and a lower jitter, all
  as tshark prints them (checked on ``data/voice/field/doubled_*.pcap``).
  :attr:`RtpStats.duplicates` counts the copies and the loss runs count the numbers
  never received; the stream heuristic sets copies (the same sequence number and
  timestamp) aside before judging a flow, and the jitter buffer plays each number
  once (:func:`qoe.rtp.jitterbuffer.simulate`).

Duplicates, reordering and the loss runs (which tshark does not print) are told apart
within a window of sequence numbers behind the highest one received, ``reorder_window``
of :func:`rtp_stats` and :func:`scan_capture` (default 4096, beyond RFC 3550 A.1's
MAX_DROPOUT = 3000 and MAX_MISORDER = 100): a packet arriving later than that counts as
out of order only, and its number stays lost in the loss runs. Each stream keeps one
bit per number of the window, so a scan's memory grows with the number of streams and
not with their length.

WebRTC calls and encrypted streams
----------------------------------
A WebRTC capture holds STUN, DTLS and SRTP/SRTCP on one 5-tuple, no SDP, dynamic payload
types. What qoe reads from it, each against the browser's ``getStats()`` on the real calls of
``data/video/webrtc`` (``tests/rtp/test_rtp_webrtc.py``):

* RFC 7983 demultiplexing (RFC 9443 ranges, DTLS 1.3's unified header of RFC 9147 §4):
  STUN, DTLS, TURN-channel and ZRTP datagrams are counted per 5-tuple; an RTP stream whose
  5-tuple carried DTLS is SRTP (``srtp.found_by == "dtls"``), and its :attr:`RtpStream.notes`
  say that the payloads cannot be decoded without keys and what is measured instead.
* ``stats.lost`` = ``inbound-rtp.packetsLost`` (RFC 3550 A.3, the default ``loss_rule``);
  ``stats.packets`` = ``packetsReceived - retransmittedPacketsReceived``.
* Clock rate and media kind inferred from the timestamps' rate against arrival time
  (``codec.clockRate``, ``kind``), said in :attr:`RtpStream.notes` with the evidence.
* ``jitter_rule="in-order"``: ``stats.jitter_ms`` = ``inbound-rtp.jitter`` (x 1000) within
  1.5 ms; the default every-packet rule is tshark's (RFC 3550 A.8 on every packet).
* :attr:`RtpStream.feedback` (``feedback_nack``, ``_pli``, ``_fir``): what the receiver sent
  back, from SRTCP's clear first 8 bytes = ``nackCount``, ``pliCount``, ``firCount`` (RFC
  5506 reduced-size feedback; a NACK behind a report in an encrypted compound packet is not
  seen); ``transport_cc``, ``sr``, ``rr`` too.
* :attr:`RtpStream.header_bytes`: RTP header (CSRCs, extensions) and padding bytes; the record's
  ``header_bytes_received`` (RTX stream's included) = ``headerBytesReceived``.
* :attr:`RtpStream.rtx`: the RTX stream (RFC 4588) that repairs a video stream, by
  ``a=ssrc-group:FID`` or by its timestamps; ``rtx.packets`` = ``retransmittedPacketsReceived``.
* ``scan_capture(sdp=...)``: the browser's offer/answer, matched under BUNDLE by the MID
  header extension (RFC 8843 §9.2's order: MID, else ``a=ssrc``, else a payload type only one
  section maps), names codecs and RTX; the section's ``a=mid`` = ``inbound-rtp.mid``.
* :func:`read_header_extensions`: RFC 8285 elements of every packet; ``abs_send_time_s()``
  and ``transport_seq()`` give one-way delay variation from one capture (within 2 ms of the
  true one-way delay from captures at both ends, 0.77 s queue), ``mid()`` the MID.

Layout
------
The scan and the statistics live in private modules, one job each, and every public name
is importable from here: ``_packet`` (RTP and RTCP headers, payload types, sequence
numbers, the packet table), ``_stats`` (the statistics and their conventions above),
``_results`` (the result records) and ``_scan`` (the one-pass capture scan and stream
discovery), which drives four small books: ``_flows`` (the flow table: flows by direction
and SSRC, their state and held packets), ``_sipbook`` (SIP messages de-duplicated and the
SDP announcements by address and port), ``_rtcpbook`` (sender reports, report blocks,
round-trip times) and ``_srtpsample`` (what the SRTP payload heuristic needs of each
flow's first packets). :mod:`qoe.rtp.sip`, :mod:`qoe.rtp.srtp` (SRTP streams recognised, packets decrypted with libsrtp),
:mod:`qoe.rtp.decrypt` (a scan's SRTP streams decrypted),
:mod:`qoe.rtp.lossmodel`, :mod:`qoe.rtp.jitterbuffer` and :mod:`qoe.rtp.delay` are public
modules.

Examples
--------
Ten G.711 A-law packets 20 ms (160 ticks) apart, the fifth lost and the seventh 5 ms
late: one loss run; the largest arrival gap is the 40 ms across the loss (its timestamp
gap is 40 ms too, so no jitter there); the late packet gives ``|D| = 5`` ms, so
``J = 5/16``, and the next one, 15 ms after it, ``J = 5/16 + (5 - 5/16)/16 = 0.605`` ms.

>>> import numpy as np
>>> seq = np.array([0, 1, 2, 3, 5, 6, 7, 8, 9])
>>> arrival_ns = 1_700_000_000 * 10**9 + seq * 20_000_000 + np.where(seq == 6, 5_000_000, 0)
>>> packets = make_packets(np.arange(1, 10), arrival_ns, seq, seq * 160, np.zeros(9, bool), np.full(9, 8))
>>> st = rtp_stats(packets, 8000)
>>> st.expected, st.lost, st.loss_bursts, st.max_delta_ms, round(st.max_jitter_ms, 3)
(10, 1, 1, 40.0, 0.605)

The streams of a capture, with their packets, statistics, codec and SIP call:

>>> for s in find_streams("call.pcap"):  # doctest: +SKIP
...     print(s.key, s.codec, s.stats.lost, s.stats.max_jitter_ms)

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
.. [6] ITU-T G.107 (06/2015), §7.5, eq. (7-32): BurstR (see :mod:`qoe.rtp.lossmodel`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from qoe.rtp._packet import (
    AUDIO_ENCODINGS,
    RTCP_APP,
    RTCP_BYE,
    RTCP_RR,
    RTCP_SDES,
    RTCP_SR,
    STATIC_PAYLOAD_TYPES,
    VIDEO_CLOCK_HZ,
    VIDEO_ENCODINGS,
    RtpHeader,
    RtpPackets,
    extend_sequence,
    make_packets,
    media_kind,
    parse_rtcp,
    parse_rtp_header,
)
from qoe.rtp._results import ACTIVE_AT_END_INTERVALS, RtcpSummary, RtpScan, RtpStream, StreamKey
from qoe.rtp._scanner import BYE_GRACE_S
from qoe.rtp._scan import (
    CHUNK_BYTES,
    MAX_FLOWS,
    MAX_STREAMS,
    STREAM_TIMEOUT_S,
    ScanStream,
    find_streams,
    iter_scan,
    scan_capture,
)
from qoe.rtp._stats import JITTER_RULES, LOSS_RULES, RtpStats, in_order_jitter_ms, rtp_stats
from qoe.rtp.extensions import HeaderExtensions, read_header_extensions
from qoe.rtp.lossmodel import LossPattern, loss_pattern
from qoe.rtp.sip import SdpMedia, SipCall, group_calls, parse_sdp, parse_sip

if TYPE_CHECKING:
    from qoe.rtp.delay import OneWayDelay, delays_between, one_way_delay, stream_delay
    from qoe.rtp.jitterbuffer import (
        AdaptiveBuffer,
        FixedBuffer,
        JitterBuffer,
        NoBuffer,
        PlayoutResult,
        parse_jitter_buffer,
        simulate,
    )

# Loaded when first used (PEP 562): a scan needs neither the jitter buffers nor the one-way
# delay matcher, and their modules cost 3.7 ms of the import of ``qoe streams`` (eight frozen
# dataclasses at about 0.4 ms each to make, on Python 3.11).
def __getattr__(name: str) -> Any:
    """A name of :mod:`qoe.rtp.delay` or :mod:`qoe.rtp.jitterbuffer`, from its module
    (imported at the first use of one of its names)."""
    if name in ("OneWayDelay", "delays_between", "one_way_delay", "stream_delay"):
        module = "qoe.rtp.delay"
    elif name in ("AdaptiveBuffer", "FixedBuffer", "JitterBuffer", "NoBuffer", "PlayoutResult", "parse_jitter_buffer",
                  "simulate"):
        module = "qoe.rtp.jitterbuffer"
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "MAX_STREAMS",
    "MAX_FLOWS",
    "ACTIVE_AT_END_INTERVALS",
    "STREAM_TIMEOUT_S",
    "BYE_GRACE_S",
    "CHUNK_BYTES",
    # streams and statistics
    "RtpPackets",
    "StreamKey",
    "RtpStats",
    "RtpStream",
    "RtcpSummary",
    "RtpScan",
    "RtpHeader",
    "STATIC_PAYLOAD_TYPES",
    "AUDIO_ENCODINGS",
    "VIDEO_ENCODINGS",
    "VIDEO_CLOCK_HZ",
    "RTCP_SR",
    "RTCP_RR",
    "RTCP_SDES",
    "RTCP_BYE",
    "RTCP_APP",
    "media_kind",
    "parse_rtp_header",
    "parse_rtcp",
    "rtp_stats",
    "in_order_jitter_ms",
    "JITTER_RULES",
    "LOSS_RULES",
    "make_packets",
    "extend_sequence",
    "find_streams",
    "scan_capture",
    "iter_scan",
    "ScanStream",
    # RFC 8285 header extensions (abs-send-time, transport-wide-cc, MID)
    "HeaderExtensions",
    "read_header_extensions",
    # SIP / SDP
    "SdpMedia",
    "SipCall",
    "parse_sdp",
    "parse_sip",
    "group_calls",
    # loss runs, jitter buffers, one-way delay
    "LossPattern",
    "loss_pattern",
    "FixedBuffer",
    "AdaptiveBuffer",
    "NoBuffer",
    "JitterBuffer",
    "PlayoutResult",
    "parse_jitter_buffer",
    "simulate",
    "OneWayDelay",
    "one_way_delay",
    "stream_delay",
    "delays_between",
]
