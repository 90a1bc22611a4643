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

Spatial layers (SVC, §4 and §4.2: the L bit and the layer indices; W3C webrtc-svc modes such
as ``L2T2``): a picture is one layer frame per spatial layer, all under the picture's RTP
timestamp, each from a packet with B to one with E, the marker bit on the picture's last
packet. The layer frames of one picture are joined into a superframe (VP9 bitstream
specification v0.6, Annex B: the frames, then an index of their sizes between two copies of
its header byte) so that the decoder takes the picture at once and shows its top layer, as a
WebRTC receiver does: its ``framesDecoded``/``framesReceived`` count pictures (one per RTP
timestamp), while the sender's ``framesSent``/``framesEncoded`` count layer frames
(:attr:`~qoe.video.depacketize.AccessUnit.layer_frames`; data/video/webrtc ``vp9-svc-plain``).

Loss: as VP8 (:func:`qoe.video._rtpframes.drop_until_key`): an incomplete frame and those
after it until the next key frame are not decoded.

References
----------
.. [1] RFC 9628, "RTP Payload Format for VP9 Video", §4.2, §4.2.1, §4.4 (frame boundaries).
.. [2] VP9 Bitstream & Decoding Process Specification v0.6 (2016), §6.2 (uncompressed header),
   Annex B (superframes: B.2 syntax, B.3 semantics).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qoe.video._rtpframes import rtp_frames
from qoe.video.depacketize import AccessUnit

__all__ = ["vp9_frames", "vp9_descriptor_size", "vp9_key_frame", "vp9_superframe"]

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


# VP9 spec Annex B.3: superframe_marker 0b110 in the header byte's top 3 bits; at most 8 frames
# (frames_in_superframe_minus_1: 3 bits), sizes in 1-4 little-endian bytes (bytes_per_framesize_minus_1: 2 bits).
_SUPERFRAME_MARKER = 0b110
_MAX_SUPERFRAME = 8


def vp9_superframe(frames: Sequence[bytes]) -> bytes:
    """Frames joined into one VP9 superframe (VP9 bitstream specification v0.6, Annex B).

    One frame is returned as it is. Otherwise the frames, then the superframe index: the
    header byte (``superframe_marker`` 0b110, ``bytes_per_framesize_minus_1``,
    ``frames_in_superframe_minus_1``), each frame's size in that many little-endian bytes
    (``le(SzBytes)``), and the header byte again (B.2, B.3).

    Examples
    --------
    >>> vp9_superframe([b"\\x82\\x49", b"\\x86"]).hex()
    '824986c10201c1'
    """
    if len(frames) == 1:
        return bytes(frames[0])
    if not 1 < len(frames) <= _MAX_SUPERFRAME:
        raise ValueError(f"a VP9 superframe holds 1-{_MAX_SUPERFRAME} frames, not {len(frames)}")
    size = max(len(f) for f in frames)
    nbytes = next(n for n in (1, 2, 3, 4) if size < 1 << (8 * n))
    head = bytes([_SUPERFRAME_MARKER << 5 | (nbytes - 1) << 3 | (len(frames) - 1)])
    return b"".join(frames) + head + b"".join(len(f).to_bytes(nbytes, "little") for f in frames) + head


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
        layers: list[list[bytes]] = []  # the picture's layer frames (spatial layers: several, §4.2)
        bad = f.gap_inside or (f.gap_before and f.prev_marker)
        first = f.payloads[0][0] if f.payloads[0] else 0
        last = f.payloads[-1][0] if f.payloads[-1] else 0
        for p in f.payloads:
            n = vp9_descriptor_size(p)
            if n < 0:
                bad = True
                continue
            if p[0] & _B or not layers:  # B: a layer frame begins (§4.2)
                layers.append([])
            layers[-1].append(p[n:])
        frames = [b"".join(x) for x in layers if any(x)]
        if len(frames) > _MAX_SUPERFRAME:  # more layer frames than a superframe holds: not a picture
            bad, frames = True, frames[:1]
        data = vp9_superframe(frames) if frames else b""
        complete = not bad and bool(first & _B) and bool(last & _E) and bool(data)
        key = bool(first & _B) and bool(frames) and vp9_key_frame(frames[0])
        units.append(AccessUnit(timestamp=f.timestamp, data=data, complete=complete, first_seq=f.seqs[0],
                                last_seq=f.seqs[-1], packets=len(f.seqs), dropped_nals=0, nal_types=(), key=key,
                                layer_frames=max(1, len(frames))))
    return units
