"""VP9 frames from RTP packets (RFC 9628).

Each packet starts with the VP9 payload descriptor (RFC 9628 §4.2): a first byte
``I P L F B E V Z``; then the picture ID when I (7 or 15 bits by its M bit), the layer
indices when L (one byte, plus TL0PICIDX in non-flexible mode, F = 0), up to three
reference indices P_DIFF when F and P (each byte's low bit N says another follows), and the
scalability structure when V (§4.2.1: N_S, Y, G; (N_S + 1) × 4 bytes of sizes when Y; N_G
and the picture groups when G). A frame runs from the packet with B (beginning of a frame)
to the one with E (end of a frame). A key frame is read from the frame's uncompressed
header (VP9 bitstream specification v0.6, §6.2: frame_marker, profile, show_existing_frame,
frame_type 0 = KEY_FRAME), not from the descriptor's P bit, which FFmpeg's packetizer (the
draft's) leaves at 0 on every frame.

Loss: as VP8 (:func:`qoe.video._rtpframes.drop_until_key`): an incomplete frame and those
after it until the next key frame are not decoded.

References
----------
.. [1] RFC 9628, "RTP Payload Format for VP9 Video", §4.2, §4.2.1, §4.4 (frame boundaries).
.. [2] VP9 Bitstream & Decoding Process Specification v0.6 (2016), §6.2 (uncompressed header).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qoe.video._rtpframes import rtp_frames
from qoe.video.depacketize import AccessUnit

__all__ = ["vp9_frames", "vp9_descriptor_size", "vp9_key_frame"]

# RFC 9628 §4.2: the bits of the first byte.
_I, _P, _L, _F, _B, _E, _V = 0x80, 0x40, 0x20, 0x10, 0x08, 0x04, 0x02
_M = 0x80  # picture ID: 15 bits when set
_N = 0x01  # P_DIFF: another follows


def vp9_descriptor_size(payload: bytes) -> int:
    """Bytes of the payload descriptor at the start of ``payload`` (RFC 9628 §4.2); -1 if truncated."""
    try:
        b0 = payload[0]
        i = 1
        if b0 & _I:
            i += 2 if payload[i] & _M else 1
        if b0 & _L:
            i += 1 if b0 & _F else 2  # layer indices, + TL0PICIDX when not flexible
        if b0 & _F and b0 & _P:
            for _ in range(3):
                more = payload[i] & _N
                i += 1
                if not more:
                    break
        if b0 & _V:  # §4.2.1 scalability structure
            ss = payload[i]
            i += 1
            n_s = (ss >> 5) + 1
            if ss & 0x10:  # Y: widths and heights
                i += 4 * n_s
            if ss & 0x08:  # G: picture groups
                n_g = payload[i]
                i += 1
                for _ in range(n_g):
                    r = (payload[i] >> 2) & 0x3
                    i += 1 + r
        if i > len(payload):
            return -1
        return i
    except IndexError:
        return -1


def vp9_key_frame(data: bytes) -> bool:
    """Whether a VP9 frame is a key frame, from its uncompressed header (VP9 spec §6.2)."""
    if not data:
        return False
    b = data[0]

    def bit(i: int) -> int:  # i = 0: the most significant bit
        return (b >> (7 - i)) & 1

    if b >> 6 != 2:  # frame_marker
        return False
    profile = bit(2) | (bit(3) << 1)  # profile_low_bit, profile_high_bit
    nxt = 5 if profile == 3 else 4  # profile 3 has a reserved_zero bit
    if bit(nxt):  # show_existing_frame: no new frame
        return False
    return bit(nxt + 1) == 0  # frame_type 0: KEY_FRAME


def vp9_frames(seq_ext: np.ndarray, timestamp: np.ndarray, marker: np.ndarray,
               payloads: Sequence[bytes]) -> list[AccessUnit]:
    """Every VP9 frame of the stream, complete or not, each with its key flag (the
    loss rule, :func:`qoe.video._rtpframes.drop_until_key`, is the receiver's)."""
    units = []
    for f in rtp_frames(seq_ext, timestamp, marker, payloads):
        parts = []
        bad = f.gap_inside or (f.gap_before and f.prev_marker)
        first = f.payloads[0][0] if f.payloads[0] else 0
        last = f.payloads[-1][0] if f.payloads[-1] else 0
        for p in f.payloads:
            n = vp9_descriptor_size(p)
            if n < 0:
                bad = True
                continue
            parts.append(p[n:])
        data = b"".join(parts)
        complete = not bad and bool(first & _B) and bool(last & _E) and bool(data)
        key = bool(first & _B) and vp9_key_frame(data)
        units.append(AccessUnit(timestamp=f.timestamp, data=data, complete=complete, first_seq=f.seqs[0],
                                last_seq=f.seqs[-1], packets=len(f.seqs), dropped_nals=0, nal_types=(), key=key))
    return units
