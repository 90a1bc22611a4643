"""VP8 frames from RTP packets (RFC 7741).

Each packet starts with the VP8 payload descriptor (RFC 7741 §4.2): a first byte
``X R N S R PID``, then when X is set a byte ``I L T K``, followed by the PictureID (7 or 15
bits, by its M bit) when I, TL0PICIDX when L, and a TID/Y/KEYIDX byte when T or K. The rest
is VP8 data; a frame is the data of its packets in order, from the packet with S = 1 and
PID = 0 (the start of partition 0) to the one with the marker bit (§4.1). The first byte of
the frame (the VP8 payload header, §4.3) has the inverse key frame flag P in its low bit:
0 is a key frame.

Loss: §4.5 leaves the repair to the receiver; qoe drops an incomplete frame and the frames
after it until the next key frame (:func:`qoe.video._rtpframes.drop_until_key`), as a WebRTC
receiver does without temporal layers (every frame refers to the one before).

References
----------
.. [1] RFC 7741, "RTP Payload Format for VP8 Video", §4.1-4.3, §4.5.
.. [2] RFC 6386, "VP8 Data Format and Decoding Guide", §9.1 (key frame start code).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qoe.video._rtpframes import rtp_frames
from qoe.video.depacketize import AccessUnit

__all__ = ["vp8_frames", "vp8_descriptor_size"]

# RFC 7741 §4.2: X, S bits and the PID field of the first byte; I, L, T, K of the extension byte.
_X, _S, _PID = 0x80, 0x10, 0x07
_I, _L, _T, _K = 0x80, 0x40, 0x20, 0x10
_M = 0x80  # PictureID: 15 bits when set
_START_CODE = b"\x9d\x01\x2a"


def vp8_descriptor_size(payload: bytes) -> int:
    """Bytes of the payload descriptor at the start of ``payload`` (RFC 7741 §4.2); -1 if truncated."""
    if not payload:
        return -1
    i = 1
    if payload[0] & _X:
        if len(payload) < 2:
            return -1
        ext = payload[1]
        i = 2
        if ext & _I:
            if len(payload) <= i:
                return -1
            i += 2 if payload[i] & _M else 1
        if ext & _L:
            i += 1
        if ext & (_T | _K):
            i += 1
    return i if i <= len(payload) else -1


def vp8_frames(seq_ext: np.ndarray, timestamp: np.ndarray, marker: np.ndarray,
               payloads: Sequence[bytes]) -> list[AccessUnit]:
    """Every VP8 frame of the stream, complete or not, each with its key flag (the
    loss rule, :func:`qoe.video._rtpframes.drop_until_key`, is the receiver's)."""
    units = []
    for f in rtp_frames(seq_ext, timestamp, marker, payloads):
        parts = []
        bad = f.gap_inside or (f.gap_before and f.prev_marker) or not f.marker
        started = False
        for k, p in enumerate(f.payloads):
            n = vp8_descriptor_size(p)
            if n < 0:
                bad = True
                continue
            if k == 0:
                started = bool(p[0] & _S) and (p[0] & _PID) == 0
            parts.append(p[n:])
        data = b"".join(parts)
        complete = not bad and started and bool(data)
        # §4.3: P = 0 is a key frame; RFC 6386 §9.1: a key frame's start code 9d 01 2a after 3 bytes
        key = started and len(data) >= 6 and not (data[0] & 0x01) and data[3:6] == _START_CODE
        units.append(AccessUnit(timestamp=f.timestamp, data=data, complete=complete, first_seq=f.seqs[0],
                                last_seq=f.seqs[-1], packets=len(f.seqs), dropped_nals=0, nal_types=(), key=key))
    return units
