"""AV1 temporal units from RTP packets (AOMedia "RTP Payload Format for AV1", v1.0.0, 2021).

Each packet starts with the aggregation header (§4.4): ``Z Y W W N 0 0 0``. Z: the first OBU
element continues the last one of the previous packet; Y: the last element continues in the
next packet; W: the number of OBU elements (0: each element is preceded by its LEB128
length; 1-3: all but the last are); N: the first packet of a coded video sequence. OBUs in
RTP carry no ``obu_size`` (§5: ``obu_has_size_field`` 0), and temporal delimiters are not
sent; the receiver rebuilds the low-overhead bitstream format (AV1 §5.2: a temporal
delimiter, then every OBU with its size), which decoders read.

Loss: an OBU that lost a fragment is left out; a temporal unit with a loss is incomplete,
and it and those after it until the next key frame (a sequence header OBU, or N) are not
decoded (:func:`qoe.video._rtpframes.drop_until_key`), as for VP8 and VP9.

References
----------
.. [1] AOMedia, "RTP Payload Format For AV1", v1.0.0 (2021), §4.4, §5, §7.
.. [2] AV1 Bitstream & Decoding Process Specification (2019), §4.10.5 (leb128), §5.3.1-5.3.3
   (OBU header: type 4 bits, extension flag, has_size_field), §6.2.2 (OBU types: 1 sequence
   header, 2 temporal delimiter).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qoe.video._rtpframes import rtp_frames
from qoe.video.depacketize import AccessUnit

__all__ = ["av1_temporal_units", "leb128"]

_Z, _Y, _N = 0x80, 0x40, 0x08
_SEQUENCE_HEADER, _TEMPORAL_DELIMITER, _TILE_LIST = 1, 2, 8
_HAS_SIZE, _EXTENSION = 0x02, 0x04
# AV1 §5.3.1: a temporal delimiter OBU with obu_has_size_field = 1 and size 0.
_TD = bytes([(_TEMPORAL_DELIMITER << 3) | _HAS_SIZE, 0])


def leb128(value: int) -> bytes:
    """AV1 §4.10.5: little-endian base-128, 7 bits a byte, high bit: more follow."""
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        out.append(b | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _read_leb128(p: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    for k in range(8):
        b = p[i + k]
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i + k + 1
    raise IndexError("leb128 longer than 8 bytes")


def _elements(p: bytes) -> list[bytes]:
    """The OBU elements of a packet (§4.4); IndexError if truncated."""
    w = (p[0] >> 4) & 0x3
    i = 1
    out = []
    while i < len(p):
        if w == 0 or len(out) < w - 1:
            n, i = _read_leb128(p, i)
            if i + n > len(p):
                raise IndexError("OBU element past the packet")
            out.append(p[i : i + n])
            i += n
        else:
            out.append(p[i:])
            break
    return out


def _sized(obu: bytes) -> tuple[int, bytes]:
    """(type, the OBU with obu_has_size_field set and its size written)."""
    h = obu[0]
    t = (h >> 3) & 0xF
    if h & _HAS_SIZE:
        return t, obu
    head = 2 if h & _EXTENSION else 1
    return t, bytes([h | _HAS_SIZE]) + obu[1:head] + leb128(len(obu) - head) + obu[head:]


def av1_temporal_units(seq_ext: np.ndarray, timestamp: np.ndarray, marker: np.ndarray,
                       payloads: Sequence[bytes]) -> list[AccessUnit]:
    """Every AV1 temporal unit of the stream, complete or not, each with its key flag (the
    loss rule, :func:`qoe.video._rtpframes.drop_until_key`, is the receiver's)."""
    units = []
    for f in rtp_frames(seq_ext, timestamp, marker, payloads):
        obus: list[bytes] = []
        bad = f.gap_inside or (f.gap_before and f.prev_marker) or not f.marker
        open_obu: list[bytes] | None = None
        prev = None
        key = False
        for k, (s, p) in enumerate(zip(f.seqs, f.payloads)):
            if prev is not None and s != prev + 1:
                open_obu = None
            prev = s
            try:
                els = _elements(p)
            except IndexError:
                bad, open_obu = True, None
                continue
            if k == 0 and p[0] & _Z:
                bad = True  # the OBU's start belongs to a packet of another timestamp or was lost
            key |= bool(p[0] & _N)
            for j, e in enumerate(els):
                if j == 0 and p[0] & _Z:
                    if open_obu is None:
                        bad = True
                        continue
                    open_obu.append(e)
                else:
                    if open_obu is not None:
                        obus.append(b"".join(open_obu))
                    open_obu = [e]
                if j == len(els) - 1 and p[0] & _Y:
                    continue  # continues in the next packet
                obus.append(b"".join(open_obu))
                open_obu = None
        if open_obu is not None:
            bad = True  # the last OBU never ended
        data = [_TD]
        for o in obus:
            if not o:
                continue
            t, sized = _sized(o)
            if t in (_TEMPORAL_DELIMITER, _TILE_LIST):  # §5: not sent; a TD starts each unit here
                continue
            key |= t == _SEQUENCE_HEADER
            data.append(sized)
        units.append(AccessUnit(timestamp=f.timestamp, data=b"".join(data), complete=not bad and len(data) > 1,
                                first_seq=f.seqs[0], last_seq=f.seqs[-1], packets=len(f.seqs), dropped_nals=0,
                                nal_types=(), key=key))
    return units
