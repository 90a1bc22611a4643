"""RTP audio payload formats: what each codec's RTP payload holds, split into decoder frames.

Each function takes one RTP payload and returns the frames an FFmpeg decoder takes, one
``bytes`` each, in playing order. They are pure and know nothing of the decoder: which
decoder gets the frames, and at what rate, is :mod:`qoe.voice.decode`'s business.

Formats
-------
G.722, G.726, GSM, G.723.1, G.729, L16
    RFC 3551 §4.5 (the audio encodings of the RTP/AVP profile).
iLBC
    RFC 3952 §4 (38-octet frames of 20 ms or 50-octet frames of 30 ms).
Speex
    RFC 5574 §3 (one or more Speex frames, passed whole to the decoder).
Opus
    RFC 7587 §4.2 (one Opus packet per RTP payload).
AMR, AMR-WB
    RFC 4867 §4.3 (bandwidth-efficient) and §4.4 (octet-aligned), converted to the
    storage format of RFC 4867 §5 that FFmpeg's AMR decoders read.

References
----------
.. [1] RFC 3551, "RTP Profile for Audio and Video Conferences with Minimal Control", §4.5.
.. [2] RFC 3952, "Real-time Transport Protocol (RTP) Payload Format for internet Low Bit
   Rate Codec (iLBC) Speech", §4 and §5.
.. [3] RFC 4867, "RTP Payload Format and File Storage Format for the Adaptive Multi-Rate
   (AMR) and Adaptive Multi-Rate Wideband (AMR-WB) Audio Codecs", §4.3, §4.4, §5.
.. [4] RFC 5574, "RTP Payload Format for the Speex Codec", §3.
.. [5] RFC 7587, "RTP Payload Format for the Opus Speech and Audio Codec", §4.2.
.. [6] RFC 6716, "Definition of the Opus Audio Codec", §3.1 (TOC byte) and §3.2.1.
.. [7] 3GPP TS 26.101 Table 1a and TS 26.201 Table 2 (bits per AMR / AMR-WB frame type),
   as repeated in RFC 4867 §3.6 and §4.3.2.
"""

from __future__ import annotations

from collections.abc import Mapping

from qoe.errors import InputError, UnsupportedCodecError

__all__ = [
    "amr_frames",
    "g723_frames",
]

# 3GPP TS 26.101 Table 1a (RFC 4867 §3.6): speech bits per AMR-NB frame type.
# FT 0..7: 4.75, 5.15, 5.90, 6.70, 7.40, 7.95, 10.2, 12.2 kbit/s; FT 8: AMR SID; 15: NO_DATA.
_AMR_FRAME_BITS: Mapping[int, int] = {0: 95, 1: 103, 2: 118, 3: 134, 4: 148, 5: 159, 6: 204, 7: 244, 8: 39, 15: 0}
# 3GPP TS 26.201 Table 2 (RFC 4867 §3.6): bits per AMR-WB frame type. FT 0..8: 6.60 .. 23.85
# kbit/s; FT 9: SID; 14: SPEECH_LOST; 15: NO_DATA.
_AMR_WB_FRAME_BITS: Mapping[int, int] = {
    0: 132, 1: 177, 2: 253, 3: 285, 4: 317, 5: 365, 6: 397, 7: 461, 8: 477, 9: 40, 14: 0, 15: 0,
}
# RFC 4867 §4.3.2 / §5.3: FT 15 is NO_DATA (nothing sent, e.g. a lost frame).
_AMR_NO_DATA = 15

# RFC 3551 §4.5.3: the two low bits of a G.723.1 frame's first octet give its kind and size:
# 00 = 6.3 kbit/s (24 octets), 01 = 5.3 kbit/s (20 octets), 10 = SID (4 octets),
# 11 = untransmitted (1 octet, never sent in RTP but tolerated).
_G723_SIZES = (24, 20, 4, 1)
# RFC 3551 §4.5.6: a G.729 frame is 10 octets (10 ms); Annex B adds a 2-octet SID frame,
# which may only come last in a packet.
_G729_FRAME = 10
_G729_SID = 2
# RFC 3952 §4.2 / §5: iLBC frames are 38 octets (20 ms mode) or 50 octets (30 ms mode).
_ILBC_BYTES = {20: 38, 30: 50}


def _fixed_frames(payload: bytes, size: int, *, codec: str) -> list[bytes]:
    """Split a payload of back-to-back frames of ``size`` octets (GSM: 33, RFC 3551 §4.5.8).

    Raises
    ------
    InputError
        The payload is not a whole number of frames.
    """
    if len(payload) % size:
        raise InputError(f"{codec}: a payload of {len(payload)} octets is not a whole number of {size}-octet frames")
    return [payload[i:i + size] for i in range(0, len(payload), size)]


def g723_frames(payload: bytes) -> list[bytes]:
    """The G.723.1 frames of a payload, sized by each frame's first octet (RFC 3551 §4.5.3)."""
    out, i = [], 0
    while i < len(payload):
        size = _G723_SIZES[payload[i] & 3]
        if i + size > len(payload):
            raise InputError(f"G723: a frame of {size} octets at offset {i} runs past the {len(payload)}-octet payload")
        out.append(payload[i:i + size])
        i += size
    return out


def _g729_frames(payload: bytes) -> tuple[list[bytes], bool]:
    """The 10-octet G.729 frames of a payload and whether an Annex B SID frame ends it.

    RFC 3551 §4.5.6: zero or more 10-octet frames, then at most one 2-octet SID frame.
    """
    n, rest = divmod(len(payload), _G729_FRAME)
    if rest not in (0, _G729_SID):
        raise InputError(f"G729: a payload of {len(payload)} octets is not 10-octet frames and a 2-octet SID frame")
    return [payload[i * _G729_FRAME:(i + 1) * _G729_FRAME] for i in range(n)], rest == _G729_SID


def _ilbc_frame_bytes(payload_len: int, mode: int | None) -> int:
    """Octets per iLBC frame: from the SDP ``mode`` (RFC 3952 §5), else from the payload size.

    RFC 3952 §5: a payload that is a multiple of both 38 and 50 octets is read in the mode
    SDP gave (30 ms when it gave none).
    """
    if mode is not None:
        if mode not in _ILBC_BYTES:
            raise InputError(f"iLBC: fmtp mode={mode} is neither 20 nor 30 (RFC 3952 §5)")
        size = _ILBC_BYTES[mode]
        if payload_len % size == 0:
            return size
    m20, m30 = payload_len % 38 == 0, payload_len % 50 == 0
    if m30:
        return 50
    if m20:
        return 38
    raise InputError(f"iLBC: a payload of {payload_len} octets is neither 38-octet nor 50-octet frames")


class _Bits:
    """Reads a payload MSB first (RFC 4867 §4.3: bits are sent most significant first)."""

    def __init__(self, data: bytes) -> None:
        self.value = int.from_bytes(data, "big")
        self.size = 8 * len(data)
        self.pos = 0

    def take(self, n: int) -> int:
        if self.pos + n > self.size:
            raise InputError(f"AMR: the payload ends {self.pos + n - self.size} bits early")
        v = (self.value >> (self.size - self.pos - n)) & ((1 << n) - 1)
        self.pos += n
        return v


def amr_frames(payload: bytes, *, wideband: bool, octet_aligned: bool) -> list[bytes]:
    """An AMR or AMR-WB RTP payload as frames in the RFC 4867 §5 storage format.

    Parameters
    ----------
    payload : bytes
        One RTP payload.
    wideband : bool, keyword-only
        AMR-WB (TS 26.201 frame types) instead of AMR.
    octet_aligned : bool, keyword-only
        Octet-aligned mode (RFC 4867 §4.4, SDP ``octet-align=1``); otherwise
        bandwidth-efficient (§4.3). Interleaving and frame CRCs (§4.4.2, §4.4.2.1) are not
        read: :mod:`qoe.voice.decode` refuses streams whose SDP asks for them.

    Returns
    -------
    list of bytes
        One storage-format frame per ToC entry: the header octet ``0 FT Q 0 0``
        (§5.3) and the speech bits, MSB first, zero-padded to an octet.

    Notes
    -----
    The payload's CMR (codec mode request, §4.3.1) is a request to the far end and does
    not change how this payload is decoded: it is skipped. The speech bits keep the order
    they have in the payload, which is the order of the storage format (both carry the
    bits sorted by importance, §4.3.2 and §5.3).
    """
    table = _AMR_WB_FRAME_BITS if wideband else _AMR_FRAME_BITS
    bits = _Bits(payload)
    bits.take(8 if octet_aligned else 4)  # §4.4.1 / §4.3.1: CMR (+ 4 reserved bits when octet-aligned)
    toc: list[tuple[int, int]] = []
    while True:
        # §4.3.2 ToC entry: F (1 bit, more entries follow), FT (4), Q (1); octet-aligned adds 2 pad bits (§4.4.2).
        more, ft, q = bits.take(1), bits.take(4), bits.take(1)
        if octet_aligned:
            bits.take(2)
        if ft not in table:
            raise InputError(f"AMR{'-WB' if wideband else ''}: frame type {ft} is reserved (RFC 4867 §4.3.2)")
        toc.append((ft, q))
        if not more:
            break
    out = []
    for ft, q in toc:
        n = table[ft]
        speech = bits.take(n) if n else 0
        if octet_aligned and n % 8:
            bits.take(8 - n % 8)  # §4.4.2: each frame is padded to an octet
        pad = -n % 8
        body = (speech << pad).to_bytes((n + pad) // 8, "big") if n else b""
        out.append(bytes([(ft << 3) | (q << 2)]) + body)  # §5.3 frame header: 0 FT(4) Q 0 0
    return out


def _amr_no_data() -> bytes:
    """A storage-format NO_DATA frame (RFC 4867 §5.3, FT 15): what a lost AMR frame is."""
    return bytes([_AMR_NO_DATA << 3])


# RFC 6716 §3.1 Table 2: TOC config -> audio bandwidth. 0-3 SILK NB, 4-7 SILK MB, 8-11 SILK
# WB, 12-13 Hybrid SWB, 14-15 Hybrid FB, 16-19 CELT NB, 20-23 CELT WB, 24-27 CELT SWB,
# 28-31 CELT FB.
_OPUS_BANDWIDTH = (
    ["NB"] * 4 + ["MB"] * 4 + ["WB"] * 4 + ["SWB"] * 2 + ["FB"] * 2
    + ["NB"] * 4 + ["WB"] * 4 + ["SWB"] * 4 + ["FB"] * 4
)


def _opus_bandwidth(payload: bytes) -> str | None:
    """The audio bandwidth an Opus packet's TOC byte announces (RFC 6716 §3.1, Table 2)."""
    if not payload:
        return None
    return _OPUS_BANDWIDTH[payload[0] >> 3]


def _opus_lost(previous: bytes) -> bytes:
    """A TOC-only Opus packet standing for one lost packet like ``previous``.

    RFC 6716 §3.2.1: a code-0 packet holds one frame, its length the rest of the packet; a
    zero-length frame tells the decoder to conceal (as for a lost frame). The TOC keeps
    ``previous``'s configuration (and so its frame duration) and stereo flag, with frame
    count code 0.
    """
    if not previous:
        raise InputError("Opus: no previous packet to take the frame duration from")
    return bytes([previous[0] & 0xFC])


def _check_amr_params(fmtp: Mapping[str, str], *, codec: str) -> bool:
    """Whether an AMR stream is octet-aligned (RFC 4867 §8.1 ``octet-align``); refuse what is not read.

    Raises
    ------
    UnsupportedCodecError
        Interleaving (``interleaving``), frame CRCs (``crc=1``) or robust sorting
        (``robust-sorting=1``), which imply the octet-aligned extensions of §4.4.2-§4.4.5.
    """
    params = {k.lower(): v.strip() for k, v in fmtp.items()}
    for key in ("crc", "robust-sorting"):
        if params.get(key) == "1":
            raise UnsupportedCodecError(f"{codec}: SDP fmtp {key}=1 (RFC 4867 §4.4.2) is not supported")
    if "interleaving" in params:
        raise UnsupportedCodecError(f"{codec}: SDP fmtp interleaving (RFC 4867 §4.4.1) is not supported")
    return params.get("octet-align") == "1"
