"""The RTP and RTCP wire formats: headers, static payload types, sequence numbers.

What :mod:`qoe.rtp` reads from each datagram: the RTP fixed header (of one packet,
or of many at once for the capture scan), RTCP compound packets, and 16-bit sequence
numbers and 32-bit timestamps extended across their wraps; and the per-packet table
(:class:`RtpPackets`) that the statistics, the jitter buffer and the decoder work on.
The public names are re-exported, and documented as a whole, by :mod:`qoe.rtp`.

References
----------
.. [1] RFC 3550, "RTP: A Transport Protocol for Real-Time Applications", §5.1 (header),
   §5.3.1 (header extension), §6.1 (compound RTCP packets), §6.4 (SR/RR), §12.1 (RTCP
   packet types), Appendix A.1 (sequence numbers), A.2 (RTCP header validity).
.. [2] RFC 3551, "RTP Profile for Audio and Video Conferences with Minimal Control",
   §6 Tables 4 and 5 (static payload types and clock rates).
.. [3] RFC 5761, "Multiplexing RTP Data and Control Packets on a Single Port", §4
   (RTCP packet types 200-204 look like RTP payload types 72-76 with the marker bit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from qoe.errors import InputError

# RFC 3550 §5.1: sequence numbers are 16 bits, RTP timestamps 32 bits; A.1 extends both.
SEQ_MOD = 1 << 16
TS_MOD = 1 << 32
# RFC 3550 §5.1: the fixed header is 12 bytes; version 2.
RTP_FIXED_HEADER = 12
RTP_VERSION = 2
# RFC 3550 §12.1: RTCP packet types SR 200, RR 201, SDES 202, BYE 203, APP 204; RFC 5761 §4
# reserves exactly these (as RTP payload types 72-76 with the marker bit) for RTCP.
RTCP_SR, RTCP_RR, RTCP_SDES, RTCP_BYE, RTCP_APP = 200, 201, 202, 203, 204
RTCP_TYPES = range(RTCP_SR, RTCP_APP + 1)
# RFC 4585 §6.1: transport-layer (RTPFB, 205) and payload-specific (PSFB, 206) feedback;
# RFC 3611 §2: extended reports (XR, 207). With RFC 5761 §4 these are RTCP, never RTP.
RTCP_RTPFB, RTCP_PSFB, RTCP_XR = 205, 206, 207

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


# Which payloads are audio and which video. RFC 3551 §6 Tables 4 (audio) and 5 (video:
# CelB, JPEG, nv, H261, MPV, MP2T, H263; MP2T is an MPEG-2 transport stream, RFC 2250,
# taken as video) name the static ones; the dynamic encodings are those of the IANA "RTP
# Payload Format media types" registry, as named in SDP a=rtpmap (RFC 4566 §6), matched
# without regard to case.
AUDIO_ENCODINGS = frozenset({
    "PCMU", "PCMA", "GSM", "G723", "DVI4", "LPC", "G722", "L16", "L8", "L20", "L24", "QCELP",
    "CN", "MPA", "G728", "G729", "G729D", "G729E", "G7221", "G726-16", "G726-24", "G726-32",
    "G726-40", "AAL2-G726-16", "AAL2-G726-24", "AAL2-G726-32", "AAL2-G726-40", "ILBC", "OPUS",
    "SPEEX", "AMR", "AMR-WB", "EVS", "GSM-EFR", "GSM-HR-08", "SILK", "MP4A-LATM", "MPEG4-GENERIC",
    "TELEPHONE-EVENT", "RED", "PCMA-WB", "PCMU-WB", "G719", "EVRC", "SMV",
})
VIDEO_ENCODINGS = frozenset({
    "CELB", "JPEG", "NV", "H261", "MPV", "MP2T", "H263", "H263-1998", "H263-2000", "H264",
    "H264-SVC", "H265", "H266", "VP8", "VP9", "AV1", "MP4V-ES", "THEORA", "RAW", "JPEG2000",
})
# RFC 3551 §5 / §6 Table 5: video payloads use a 90 kHz clock; an unnamed payload with it
# is taken as video.
VIDEO_CLOCK_HZ = 90_000


def media_kind(encoding: str | None, clock_rate: int | None, sdp_media: str | None = None) -> str | None:
    """``"audio"``, ``"video"`` or None (not known) for a payload.

    The SDP ``m=`` line's media type wins when it says audio or video (RFC 4566 §5.14);
    then the encoding name (:data:`AUDIO_ENCODINGS`, :data:`VIDEO_ENCODINGS`); then the
    clock rate (90 kHz: video, any other known rate: audio).

    Examples
    --------
    >>> media_kind("PCMA", 8000), media_kind("H264", 90000), media_kind(None, 90000)
    ('audio', 'video', 'video')
    >>> media_kind("x-custom", 48000, "video"), media_kind(None, None)
    ('video', None)
    """
    if sdp_media in ("audio", "video"):
        return sdp_media
    if encoding:
        name = encoding.upper()
        if name in AUDIO_ENCODINGS:
            return "audio"
        if name in VIDEO_ENCODINGS:
            return "video"
    if clock_rate:
        return "video" if clock_rate == VIDEO_CLOCK_HZ else "audio"
    return None


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
    payload_sizes : numpy.ndarray of int64 or None
        Each payload's length on the wire (bytes), which is ``len(payloads[i])`` unless
        the capture's snap length cut the packet (then its padding is not known and is
        counted); None when not known (the payloads' lengths then). See :meth:`sizes`.
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
    payload_sizes: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.frame.shape[0])

    def sizes(self) -> np.ndarray:
        """Each payload's length on the wire (:attr:`payload_sizes`, else the kept payloads'
        lengths, else zeros)."""
        if self.payload_sizes is not None:
            return np.asarray(self.payload_sizes, dtype=np.int64)
        if self.payloads:
            return np.fromiter((len(x) for x in self.payloads), dtype=np.int64, count=len(self.payloads))
        return np.zeros(len(self), dtype=np.int64)

    def cut_payloads(self) -> int:
        """How many kept payloads are shorter than on the wire: the capture's snapshot length
        cut them (what is left cannot be decoded as the media sent). 0 when no payload was
        kept or their lengths on the wire are not known."""
        if not self.payloads or self.payload_sizes is None:
            return 0
        kept = np.fromiter((len(x) for x in self.payloads), dtype=np.int64, count=len(self.payloads))
        return int(np.count_nonzero(kept < np.asarray(self.payload_sizes, dtype=np.int64)[:len(kept)]))


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


class RtpHeaderColumns(NamedTuple):
    """The RTP fixed headers of many packets (:func:`header_columns`), one entry per kept row."""

    rows: np.ndarray  # indices (into the packets given) of the headers that fit their packet
    csrc_count: np.ndarray
    extension: np.ndarray
    padding: np.ndarray
    marker: np.ndarray
    payload_type: np.ndarray
    seq: np.ndarray
    timestamp: np.ndarray
    ssrc: np.ndarray
    payload_start: np.ndarray  # absolute offsets into the buffer
    payload_end: np.ndarray


def header_columns(
    u8: np.ndarray, starts: np.ndarray, lengths: np.ndarray, *, head: np.ndarray | None = None
) -> RtpHeaderColumns:
    """Parse the RTP fixed headers of many packets in one buffer at once.

    The packets must already be known to be version 2, not RTCP and at least 12 bytes
    long (the capture scan checks that first); :func:`parse_rtp_header` applies the
    same rules to one packet. A packet too
    short for the CSRC list and header extension it announces is dropped; a padding
    count larger than the payload is ignored rather than rejected.

    Parameters
    ----------
    u8 : numpy.ndarray of uint8
        The bytes holding the packets.
    starts, lengths : numpy.ndarray of int64
        Where each packet starts in ``u8`` and how long it is.
    head : numpy.ndarray of uint8, optional
        Each packet's first 12 (or more) bytes as a row, when the caller has them at
        hand (:attr:`qoe.capture.UdpBatch.head`): read instead of gathering them from
        ``u8``.

    Returns
    -------
    RtpHeaderColumns
        The header fields of the packets that hold a whole header, and where their
        payloads lie in ``u8`` (after the CSRC list and extension, without padding).

    References
    ----------
    RFC 3550 §5.1 (fixed header, padding, CSRC count), §5.3.1 (header extension: a
    16-bit profile word, then its length in 32-bit words).
    """
    # RFC 3550 §5.1: the fixed header is three 32-bit words in network byte order. Each
    # packet's 12 bytes are taken as one row (from ``head``, or gathered as a row of the
    # buffer, whatever their alignment: qoe.capture.byte_rows), then read as big-endian
    # words.
    if head is None:
        from qoe.capture import byte_rows  # noqa: PLC0415 - the capture layer is not loaded with qoe.rtp

        head = byte_rows(u8, starts, RTP_FIXED_HEADER)
    # the three words as three contiguous rows (a column of an n x 3 array is strided: a
    # strided array is copied into the pickle that hands a batch to a read-ahead parent)
    words = np.ascontiguousarray(np.ascontiguousarray(head[:, :RTP_FIXED_HEADER]).view(">u4").T, dtype=np.int64)
    w0 = words[0]  # V P X CC | M PT | sequence number
    b0 = w0 >> 24
    cc = b0 & 0x0F
    has_x = (b0 & 0x10) != 0
    has_p = (b0 & 0x20) != 0
    hdr = RTP_FIXED_HEADER + 4 * cc
    xi = np.flatnonzero(has_x & (hdr + 4 <= lengths))
    if xi.size:  # RFC 3550 §5.3.1: 16-bit profile word, 16-bit length in 32-bit words
        at = starts[xi] + hdr[xi]
        hdr[xi] += 4 + 4 * (u8[at + 2].astype(np.int64) << 8 | u8[at + 3])
    valid = (hdr <= lengths) & ~(has_x & (RTP_FIXED_HEADER + 4 * cc + 4 > lengths))
    rows = np.flatnonzero(valid)
    if rows.size < valid.size:
        starts, lengths, words, w0, hdr, cc, has_x, has_p = (
            starts[rows], lengths[rows], np.take(words, rows, axis=1), w0[rows], hdr[rows], cc[rows], has_x[rows],
            has_p[rows]
        )
    pad = np.zeros(starts.size, dtype=np.int64)
    pi = np.flatnonzero(has_p)
    if pi.size:  # RFC 3550 §5.1: the last octet counts the padding octets, itself included
        pad[pi] = u8[starts[pi] + lengths[pi] - 1]
        pad = np.where(pad <= lengths - hdr, pad, 0)
    return RtpHeaderColumns(
        rows=rows,
        csrc_count=cc,
        extension=has_x,
        padding=has_p,
        marker=(w0 & 0x800000) != 0,
        payload_type=(w0 >> 16) & 0x7F,
        seq=w0 & 0xFFFF,
        timestamp=words[1],
        ssrc=words[2],
        payload_start=starts + hdr,
        payload_end=starts + lengths - pad,
    )


def parse_rtp_header(data: bytes) -> RtpHeader | None:
    """Parse the RTP header of a UDP payload; None if it cannot be RTP.

    RTCP (second byte 200-204, RFC 5761 §4) and packets too short for the header,
    CSRC list and extension they announce are rejected. Invalid padding (a count larger
    than the payload) is ignored rather than rejected. These are the rules of
    :func:`header_columns` for one packet, written out so that one header costs a few
    microseconds rather than NumPy's per-call overhead (a test keeps the two equal).

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
    if n < RTP_FIXED_HEADER or data[0] >> 6 != RTP_VERSION or data[1] in RTCP_TYPES:
        return None
    b0 = data[0]
    cc = b0 & 0x0F
    hdr = RTP_FIXED_HEADER + 4 * cc
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
        version=RTP_VERSION,
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
    if n < 8 or data[0] >> 6 != RTP_VERSION or data[1] not in RTCP_TYPES:
        return None
    out: list[dict[str, Any]] = []
    pos = 0
    while pos + 4 <= n:
        b0, ptype = data[pos], data[pos + 1]
        length = (int.from_bytes(data[pos + 2 : pos + 4], "big") + 1) * 4  # §6.4.1 "length"
        if b0 >> 6 != RTP_VERSION or ptype not in RTCP_TYPES or pos + length > n:
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
    return unwrap(v, int(v[0]), int(v[0]), modulus)


def unwrap(v: np.ndarray, prev_raw: int, prev_ext: int, modulus: int) -> np.ndarray:
    """Extend ``v`` (int64 raw values) continuing from a previous (raw, extended) pair."""
    return prev_ext + np.cumsum(wrapped_distance(np.diff(v, prepend=prev_raw), modulus))


def wrapped_distance(d: np.ndarray, modulus: int) -> np.ndarray:
    """Counter differences ``d`` as the shortest signed distance modulo ``modulus``.

    The result lies in ``[-modulus/2, modulus/2)``: RFC 3550 A.1's way of telling a
    wrap (a small step forward across ``modulus``) from a reordering (a small step back).
    """
    half = modulus // 2
    if modulus & (modulus - 1) == 0:  # a power of two: the remainder is a mask (two's complement)
        return ((d + half) & (modulus - 1)) - half
    return (d + half) % modulus - half


def make_packets(
    frame: np.ndarray,
    arrival_ns: np.ndarray,
    seq: np.ndarray,
    timestamp: np.ndarray,
    marker: np.ndarray,
    payload_type: np.ndarray,
    payloads: tuple[bytes, ...] | list[bytes] = (),
    payload_sizes: np.ndarray | None = None,
) -> RtpPackets:
    """Build an :class:`RtpPackets` table from raw columns, extending seq and timestamp.

    Parameters
    ----------
    frame, arrival_ns, seq, timestamp, marker, payload_type : array_like
        One value per packet in arrival order (see :class:`RtpPackets`).
    payloads : sequence of bytes, optional
        The RTP payloads; empty when not kept.
    payload_sizes : array_like, optional
        Their lengths on the wire (:attr:`RtpPackets.payload_sizes`).

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
        seq_ext=extend_sequence(seq, SEQ_MOD),
        timestamp=timestamp,
        ts_ext=extend_sequence(timestamp, TS_MOD),
        marker=np.asarray(marker, dtype=bool),
        payload_type=np.asarray(payload_type).astype(np.uint8),
        payloads=payloads,
        payload_sizes=None if payload_sizes is None else np.asarray(payload_sizes, dtype=np.int64),
    )

