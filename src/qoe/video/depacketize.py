"""Video bitstreams from RTP and UDP payloads: H.264 access units and MPEG-2 transport streams.

Pure functions over payload bytes: they know nothing of captures or decoders.

* H.264 over RTP (RFC 6184): single NAL unit packets, STAP-A aggregates and FU-A fragments
  (packetization modes 0 and 1) become Annex B access units, one per RTP timestamp, each
  marked complete or damaged (a fragment, a packet or the marker-bit end is missing).
* MPEG-2 transport streams (ISO/IEC 13818-1), carried in UDP datagrams or in RTP (RFC 2250
  §2: an integral number of 188-byte TS packets per RTP payload): the packets are checked
  for their sync byte and each PID's continuity counter, so that a loss is located in the
  elementary stream it hit.

References
----------
.. [1] RFC 6184, "RTP Payload Format for H.264 Video", §5.1 (one access unit per RTP
   timestamp; the marker bit on its last packet), §5.3 (NAL unit header), §5.4
   (packetization modes), §5.6 (single NAL unit packet), §5.7.1 (STAP-A), §5.8 (FU-A),
   §8.1 (``sprop-parameter-sets``).
.. [2] ITU-T H.264 (08/2021), §7.3.1 / §7.4.1 (nal_unit_type: 1 non-IDR slice, 5 IDR slice,
   7 SPS, 8 PPS), §7.3.3 (slice header: first_mb_in_slice, slice_type), §9.1 (Exp-Golomb
   codes), Annex B (byte stream: start code 0x000001).
.. [3] RFC 2250, "RTP Payload Format for MPEG1/MPEG2 Video", §2 (MPEG-2 transport streams:
   payload type 33, a whole number of 188-byte packets per RTP packet).
.. [4] ISO/IEC 13818-1 (ITU-T H.222.0, 06/2021), §2.4.3.2 (transport packet: sync byte
   0x47, payload_unit_start_indicator, PID, adaptation_field_control, continuity_counter),
   §2.4.3.3 (continuity_counter increments by one per packet with payload, modulo 16; a
   duplicate packet repeats it), §2.4.3.4 (adaptation field: discontinuity_indicator,
   random_access_indicator), §2.4.3.6-7 (PES packet header: PTS).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from qoe.errors import InputError

__all__ = [
    "ANNEXB_START",
    "TS_PACKET",
    "AccessUnit",
    "TsCheck",
    "h264_access_units",
    "sprop_parameter_sets",
    "nal_types",
    "slice_types",
    "check_transport_stream",
    "looks_like_h264",
]

# H.264 Annex B: a NAL unit in a byte stream is preceded by the start code 0x000001 (a
# zero_byte before it for SPS/PPS and the first NAL of an access unit; B.1.1).
ANNEXB_START = b"\x00\x00\x00\x01"
# RFC 6184 §5.2 Table 1 / §5.4: NAL unit types of the RTP payload structures.
_STAP_A, _STAP_B, _MTAP16, _MTAP24, _FU_A, _FU_B = 24, 25, 26, 27, 28, 29
# H.264 §7.4.1 Table 7-1: coded slices (non-IDR 1, data partition A 2, IDR 5).
_SLICE_NAL_TYPES = (1, 2, 5)
_IDR = 5
# ISO/IEC 13818-1 §2.4.3.2: transport packets are 188 bytes and start with 0x47.
TS_PACKET = 188
_TS_SYNC = 0x47


@dataclass(frozen=True, slots=True)
class AccessUnit:
    """One coded picture rebuilt from RTP packets (RFC 6184 §5.1).

    Attributes
    ----------
    timestamp : int
        Extended RTP timestamp (90 kHz) shared by the access unit's packets.
    data : bytes
        The NAL units that arrived whole, in Annex B byte-stream form.
    complete : bool
        Every packet of the access unit arrived: no sequence gap inside it, before it
        (after the previous access unit's marker-bit end), and its last packet has the
        marker bit.
    first_seq, last_seq : int
        Extended sequence numbers of its first and last received packet.
    packets : int
        Packets received for it.
    dropped_nals : int
        NAL units left out: FU-A fragments with a gap, or payload structures this reader
        does not take (the interleaved mode's STAP-B, MTAP and FU-B).
    nal_types : tuple of int
        Types of the NAL units in ``data``, in order (H.264, H.265; empty for VP8, VP9, AV1).
    key : bool or None
        VP8, VP9, H.265, AV1: the payload says it is a key frame (None for H.264: see ``idr``).
    layer_frames : int
        VP9 with spatial layers (RFC 9628 §4.2, the L bit): the layer frames of the picture
        (each from a packet with the B bit to one with the E bit), joined into one superframe
        (VP9 bitstream specification v0.6, Annex B); 1 otherwise.
    """

    timestamp: int
    data: bytes
    complete: bool
    first_seq: int
    last_seq: int
    packets: int
    dropped_nals: int
    nal_types: tuple[int, ...]
    key: bool | None = None
    layer_frames: int = 1

    @property
    def idr(self) -> bool:
        """A key picture: an IDR (H.264 nal_unit_type 5), or ``key`` for the other codecs."""
        return _IDR in self.nal_types if self.key is None else self.key


def sprop_parameter_sets(value: str | None) -> list[bytes]:
    """The NAL units of an SDP ``sprop-parameter-sets`` value (RFC 6184 §8.1).

    A comma-separated list of base64 NAL units (typically an SPS and a PPS).

    Raises
    ------
    InputError
        A piece is not valid base64.

    Examples
    --------
    >>> [n[0] & 0x1F for n in sprop_parameter_sets("Z2QAFKy0CwS2AiAAAAMAIAAABkHihVQ=,aO88sA==")]
    [7, 8]
    """
    if not value:
        return []
    out = []
    for piece in value.split(","):
        piece = piece.strip()
        if not piece:
            continue
        try:
            out.append(base64.b64decode(piece, validate=True))
        except (binascii.Error, ValueError) as exc:
            raise InputError(f"sprop-parameter-sets: {piece!r} is not base64 ({exc})") from None
    return out


class _UnitBuilder:
    """Rebuilds the NAL units of one access unit, packet by packet (RFC 6184 §5.6-5.8)."""

    def __init__(self, timestamp: int, seq: int, damaged: bool) -> None:
        self.timestamp = timestamp
        self.first = self.last = seq
        self.packets = 0
        self.nals: list[bytes] = []
        self.fu: list[bytes] | None = None  # pieces of the fragmented NAL unit in progress
        self.broken = False  # a fragmented NAL unit lost a piece: skip to its end
        self.dropped = 0
        self.damaged = damaged

    def gap(self) -> None:
        """Packets were lost inside the unit."""
        self.damaged = True
        if self.fu is not None:
            self.fu, self.broken = None, True

    def _lose_open(self) -> None:
        if self.fu is not None or self.broken:
            self.dropped += 1
        self.fu, self.broken = None, False

    def add(self, seq: int, payload: bytes) -> None:
        self.last = seq
        self.packets += 1
        if not payload:
            return
        ntype = payload[0] & 0x1F
        if ntype == _FU_A:
            self._fragment(payload)
            return
        self._lose_open()  # another packet type: a fragmented unit in progress lost its end
        if ntype == _STAP_A:
            i = 1
            while i + 2 <= len(payload):  # §5.7.1: 16-bit NALU size, then the NAL unit
                size = int.from_bytes(payload[i : i + 2], "big")
                if size == 0 or i + 2 + size > len(payload):
                    self.dropped += 1
                    break
                self.nals.append(payload[i + 2 : i + 2 + size])
                i += 2 + size
        elif ntype in (_STAP_B, _MTAP16, _MTAP24, _FU_B, 0, 30, 31):
            self.dropped += 1  # interleaved mode (§5.4) or reserved: not taken
        else:
            self.nals.append(payload)  # §5.6: a single NAL unit packet

    def _fragment(self, payload: bytes) -> None:
        if len(payload) < 2:
            self._lose_open()
            return
        header = payload[1]
        start, end = bool(header & 0x80), bool(header & 0x40)
        if start:
            self._lose_open()
            # §5.8: the NAL header is the FU indicator's F and NRI with the FU header's type
            self.fu = [bytes([(payload[0] & 0xE0) | (header & 0x1F)]), payload[2:]]
        elif self.fu is not None:
            self.fu.append(payload[2:])
        else:  # a fragment whose start was lost
            self.broken = True
        if end:
            if self.fu is not None:
                self.nals.append(b"".join(self.fu))
                self.fu = None
            else:
                self.dropped += 1
            self.broken = False

    def build(self, prefix: bytes, prefix_types: tuple[int, ...]) -> AccessUnit:
        self._lose_open()
        return AccessUnit(
            timestamp=self.timestamp,
            data=prefix + b"".join(ANNEXB_START + x for x in self.nals),
            complete=not self.damaged and self.dropped == 0,
            first_seq=self.first,
            last_seq=self.last,
            packets=self.packets,
            dropped_nals=self.dropped,
            nal_types=prefix_types + tuple(x[0] & 0x1F for x in self.nals),
        )


def h264_access_units(
    seq_ext: np.ndarray,
    timestamp: np.ndarray,
    marker: np.ndarray,
    payloads: Sequence[bytes],
    *,
    parameter_sets: Iterable[bytes] = (),
) -> list[AccessUnit]:
    """Rebuild H.264 access units from the RTP packets of one stream (RFC 6184).

    Parameters
    ----------
    seq_ext : numpy.ndarray of int64
        Extended sequence numbers of the packets to use (those a receiver kept).
    timestamp : numpy.ndarray of int64
        Their extended RTP timestamps.
    marker : numpy.ndarray of bool
        Their marker bits.
    payloads : sequence of bytes
        Their RTP payloads.
    parameter_sets : iterable of bytes, keyword-only
        NAL units to put before the first access unit (e.g. the SPS and PPS of the SDP's
        ``sprop-parameter-sets``), so that a stream whose in-band parameter sets were
        lost, or never sent, still decodes.

    Returns
    -------
    list of AccessUnit
        In sequence-number order (duplicates dropped), as a receiver's buffer orders
        packets. An access unit is damaged when packets are missing inside it; packets
        missing between two units damage the next one (its first packets may be the
        lost ones) and, when the previous unit did not end with the marker bit
        (§5.1), the previous one too.

    Notes
    -----
    A fragmented NAL unit (FU-A) that lost a fragment is left out whole: RFC 6184 §5.8 says
    a receiver SHOULD discard the fragments after a lost one, and MAY pass the first ones
    on only with the forbidden_zero_bit set, which FFmpeg's decoder then skips anyway; the
    decoder conceals the missing slice. FFmpeg's own RTP receiver (``rtpdec_h264``) does
    neither: it glues whatever fragments arrive onto the byte stream, so on a lossy
    capture some damaged pictures differ between the two (data/video h264-down-b64: 175 of
    198 decoded pictures are the same bit for bit, every intact one among them).
    """
    n = len(payloads)
    if not (seq_ext.shape[0] == timestamp.shape[0] == marker.shape[0] == n):
        raise InputError(
            f"h264_access_units: {seq_ext.shape[0]} sequence numbers, {timestamp.shape[0]} timestamps, "
            f"{marker.shape[0]} markers and {n} payloads"
        )
    if n == 0:
        return []
    order = np.argsort(seq_ext, kind="stable")
    seq_sorted = seq_ext[order]
    keep = np.ones(n, dtype=bool)
    keep[1:] = seq_sorted[1:] != seq_sorted[:-1]  # duplicates: the first copy
    order = order[keep]
    params = [p for p in parameter_sets if p]
    prefix = b"".join(ANNEXB_START + p for p in params)
    prefix_types = tuple(p[0] & 0x1F for p in params)
    out: list[AccessUnit] = []
    cur: _UnitBuilder | None = None
    prev_seq = prev_marker = None
    for i, s, t, m in zip(order.tolist(), seq_ext[order].tolist(), timestamp[order].tolist(), marker[order].tolist()):
        gap = prev_seq is not None and s != prev_seq + 1
        if cur is None or t != cur.timestamp:
            if cur is not None:
                if gap and not prev_marker:
                    cur.gap()  # lost packets may be this unit's tail
                out.append(cur.build(prefix, prefix_types))
                prefix, prefix_types = b"", ()
            cur = _UnitBuilder(t, s, damaged=gap)
        elif gap:
            cur.gap()
        cur.add(s, payloads[i])
        prev_seq, prev_marker = s, bool(m)
    if cur is not None:
        out.append(cur.build(prefix, prefix_types))
    return out


# RFC 6184 §5.2 Table 1: NAL unit types 1-23 are single NAL unit packets, 24 STAP-A, 28 FU-A
# (the non-interleaved modes; 25-27 and 29 belong to the interleaved mode).
_RTP_H264_TYPES = frozenset(range(1, 24)) | {24, 28}
# H.264 §7.4.1 Table 7-1: sequence and picture parameter sets.
_SPS, _PPS = 7, 8
# A stream is taken for H.264 when this share of its payloads has a valid RFC 6184 header.
_H264_SHARE = 0.98


def _carried_types(payload: bytes) -> list[int]:
    """NAL unit types a single NAL, STAP-A or FU-A start packet carries (RFC 6184 §5.6-5.8)."""
    t = payload[0] & 0x1F
    if t == 24:  # STAP-A: 16-bit size, NAL unit, ... (§5.7.1)
        out, i = [], 1
        while i + 2 < len(payload):
            n = int.from_bytes(payload[i : i + 2], "big")
            if n == 0 or i + 2 + n > len(payload):
                break
            out.append(payload[i + 2] & 0x1F)
            i += 2 + n
        return out
    if t == 28:  # FU-A: indicator, header (S E R type) (§5.8)
        return [payload[1] & 0x1F] if len(payload) > 1 and payload[1] & 0x80 else []
    return [t]


def looks_like_h264(payloads: list[bytes] | tuple[bytes, ...]) -> bool:
    """Whether RTP payloads are H.264 in RFC 6184's non-interleaved packetization.

    For streams no SDP describes (a dynamic payload type seen without signalling). True
    when at least 98 % of the payloads start with a valid RFC 6184 payload header
    (forbidden_zero_bit 0, type 1-23, STAP-A or FU-A; an FU-A's header not both start and
    end) and the stream carries both a sequence and a picture parameter set (in band), which
    a decoder needs anyway. Audio codecs' payloads pass the header test by chance often
    enough, but do not carry NAL units of types 7 and 8 in the right framing.

    References
    ----------
    .. [1] RFC 6184, §1.3 (NAL unit header), §5.2 Table 1, §5.7.1 (STAP-A), §5.8 (FU-A).
    .. [2] ITU-T H.264 (08/2021), §7.4.1 Table 7-1 (NAL unit types).
    """
    if not payloads:
        return False
    valid, seen = 0, set()
    for p in payloads:
        if not p or p[0] & 0x80 or (p[0] & 0x1F) not in _RTP_H264_TYPES:
            continue
        if p[0] & 0x1F == 28 and (len(p) < 2 or (p[1] & 0xC0) == 0xC0 or not 1 <= (p[1] & 0x1F) <= 23):
            continue
        valid += 1
        seen.update(_carried_types(p))
    return valid >= _H264_SHARE * len(payloads) and {_SPS, _PPS} <= seen


def nal_types(annexb: bytes) -> list[int]:
    """Types of the NAL units in an Annex B byte stream (H.264 §7.4.1, Annex B)."""
    out = []
    i = annexb.find(b"\x00\x00\x01")
    while i >= 0 and i + 3 < len(annexb):
        out.append(annexb[i + 3] & 0x1F)
        i = annexb.find(b"\x00\x00\x01", i + 3)
    return out


def _ue(bits: str, pos: int) -> tuple[int, int]:
    """One Exp-Golomb ue(v) code (H.264 §9.1) from a string of '0'/'1' at ``pos``."""
    zeros = 0
    while pos + zeros < len(bits) and bits[pos + zeros] == "0":
        zeros += 1
    if pos + 2 * zeros + 1 > len(bits):
        raise ValueError("truncated Exp-Golomb code")
    value = int(bits[pos + zeros : pos + 2 * zeros + 1], 2) - 1
    return value, pos + 2 * zeros + 1


def slice_types(annexb: bytes) -> list[int]:
    """slice_type (0-9, H.264 §7.4.3 Table 7-6) of every coded slice in a byte stream.

    Read from the start of each slice header (§7.3.3: first_mb_in_slice ue(v), slice_type
    ue(v)); types 2 and 7 are I slices. A header too short to read is left out.
    """
    out = []
    i = annexb.find(b"\x00\x00\x01")
    while i >= 0 and i + 3 < len(annexb):
        t = annexb[i + 3] & 0x1F
        if t in _SLICE_NAL_TYPES:
            head = annexb[i + 4 : i + 12]
            bits = "".join(f"{b:08b}" for b in head)
            try:
                _, pos = _ue(bits, 0)
                st, _ = _ue(bits, pos)
                out.append(st)
            except ValueError:
                pass
        i = annexb.find(b"\x00\x00\x01", i + 3)
    return out


@dataclass(frozen=True, slots=True)
class TsCheck:
    """What the transport-packet layer says about an MPEG-2 TS byte stream.

    Attributes
    ----------
    packets : int
        Whole 188-byte packets.
    bad_sync : int
        Packets without the 0x47 sync byte (ISO/IEC 13818-1 §2.4.3.2), left out.
    stray_bytes : int
        Bytes of datagrams whose length is not a multiple of 188.
    cc_errors : dict of int to int
        Continuity-counter discontinuities per PID (§2.4.3.3): each is one or more
        packets lost (or reordered) before a packet of that PID.
    lost_before : numpy.ndarray of bool
        Per packet: a discontinuity of its PID's counter right before it.
    pid : numpy.ndarray of int
        Per packet, its PID.
    """

    packets: int
    bad_sync: int
    stray_bytes: int
    cc_errors: dict[int, int]
    lost_before: np.ndarray
    pid: np.ndarray


def check_transport_stream(data: bytes | bytearray | memoryview) -> TsCheck:
    """Sync bytes and continuity counters of a transport stream (ISO/IEC 13818-1 §2.4.3).

    A PID's ``continuity_counter`` increases by one, modulo 16, from one packet with a
    payload to the next (``adaptation_field_control`` 01 or 11); a repeat of the previous
    value is a duplicate packet, allowed once (§2.4.3.3). A packet whose adaptation field
    sets ``discontinuity_indicator`` (§2.4.3.4) starts the count anew. The null PID 0x1FFF
    carries no count.
    """
    buf = np.frombuffer(bytes(data), dtype=np.uint8)
    n = buf.size // TS_PACKET
    stray = buf.size - n * TS_PACKET
    pk = buf[: n * TS_PACKET].reshape(n, TS_PACKET)
    good = pk[:, 0] == _TS_SYNC
    pk = pk[good]
    pid = ((pk[:, 1].astype(np.int64) & 0x1F) << 8) | pk[:, 2]
    afc = (pk[:, 3] >> 4) & 0x3
    cc = (pk[:, 3] & 0x0F).astype(np.int64)
    has_payload = (afc & 0x1) == 1
    disc = (afc >= 2) & (pk[:, 4] > 0) & ((pk[:, 5] & 0x80) != 0)
    lost_before = np.zeros(pk.shape[0], dtype=bool)
    errors: dict[int, int] = {}
    last: dict[int, tuple[int, bool]] = {}
    for i, (p, c, pay, d) in enumerate(zip(pid.tolist(), cc.tolist(), has_payload.tolist(), disc.tolist())):
        if p == 0x1FFF:
            continue
        prev = last.get(p)
        if prev is not None and not d:
            want = (prev[0] + 1) % 16 if pay else prev[0]
            duplicate = pay and c == prev[0] and not prev[1]
            if c != want and not duplicate:
                lost_before[i] = True
                errors[p] = errors.get(p, 0) + 1
            last[p] = (c, duplicate)
        else:
            last[p] = (c, False)
    return TsCheck(
        packets=int(pk.shape[0]), bad_sync=int(n - pk.shape[0]), stray_bytes=int(stray), cc_errors=errors,
        lost_before=lost_before, pid=pid,
    )
