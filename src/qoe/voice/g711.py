"""ITU-T G.711 A-law and µ-law: vectorised encode and decode through 256-entry tables.

G.711 describes each law by its segment rules (Table 1a/1b for A-law, Table 2a/2b for
µ-law): 8 segments per sign, 16 equal intervals per segment, the step doubling from one
segment to the next, and the decoder output ("quantized value") in the middle of each
interval. This module computes the two 256-entry decode tables from those rules (it does
not copy a printed table) and encodes by the same rules, so that both directions are
array operations.

Scales
------
The tables are stated on a normalised uniform scale: A-law magnitudes 0..4096 (a 13-bit
code: sign + 12 bits), µ-law magnitudes 0..8159 (a 14-bit code: sign + 13 bits). The
16-bit linear samples used here put those codes left-aligned in an ``int16``: A-law values
are multiplied by 8 (2**(16-13)), µ-law values by 4 (2**(16-14)). The largest decoded
magnitudes are therefore 4032 * 8 = 32256 and 8031 * 4 = 32124.

References
----------
.. [1] ITU-T Recommendation G.711 (11/1988), "Pulse code modulation (PCM) of voice
   frequencies", §3 and Tables 1a/1b (A-law), §4 and Tables 2a/2b (µ-law).
.. [2] RFC 3551, "RTP Profile for Audio and Video Conferences with Minimal Control",
   §4.5.14 (PCMA and PCMU: 8000 Hz, one octet per sample, octets sent MSB first).

Examples
--------
>>> decode_alaw(bytes([0xD5, 0x55])).tolist()  # the two codes nearest to zero
[8, -8]
>>> decode_ulaw(bytes([0xFF, 0x7F])).tolist()  # +0 and -0
[0, 0]
>>> encode_alaw(decode_alaw(bytes(range(256)))) == bytes(range(256))
True
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from qoe.errors import InputError, UnsupportedCodecError

__all__ = [
    "ALAW_DECODE",
    "ULAW_DECODE",
    "decode_alaw",
    "decode_ulaw",
    "encode_alaw",
    "encode_ulaw",
    "decode",
    "encode",
    "g711_codec",
]

Law = Literal["PCMA", "PCMU"]

# RFC 3551 §6 Table 4: static payload types of G.711.
_G711_PAYLOAD_TYPES: dict[int, str] = {0: "PCMU", 8: "PCMA"}

# G.711 (11/1988) §3.2 and Table 1a note: A-law character signals have their even bits
# (bits 2, 4, 6 and 8, bit 1 being the sign) inverted before transmission: XOR 0b01010101.
_ALAW_EVEN_BITS = 0x55
# G.711 (11/1988) §4.2 and Table 2a note: µ-law character signals are sent with all bits
# inverted: XOR 0b11111111.
_ULAW_ALL_BITS = 0xFF
# G.711 Table 1a: A-law normalised scale spans 4096 per sign (13-bit code); to int16: * 8.
_ALAW_SCALE = 8
_ALAW_MAX = 4096
# G.711 Table 2a: µ-law normalised scale spans 8159 per sign (14-bit code); to int16: * 4.
_ULAW_SCALE = 4
_ULAW_MAX = 8159
# G.711 Table 2a: the µ-law segment ends are 2**(s+5) - 33 (31, 95, 223, ..., 8159): a
# bias of 33 turns the µ-law segments into powers of two.
_ULAW_BIAS = 33


def _alaw_magnitude(segment: np.ndarray, interval: np.ndarray) -> np.ndarray:
    """Decoder output magnitude of G.711 Table 1a, on the 0..4096 scale.

    Segment 1 (code segment 0) runs 0..32 in steps of 2; segment n >= 2 (code segment
    s = n - 1 >= 1) runs 2**(s+4)..2**(s+5) in steps of 2**s. The quantized value is the
    middle of the interval (Table 1a, column "value at decoder output").
    """
    s = segment.astype(np.int64)
    q = interval.astype(np.int64)
    step = np.where(s == 0, 2, 1 << np.maximum(s, 1))
    start = np.where(s == 0, 0, 1 << (s + 4))
    return start + q * step + step // 2


def _ulaw_magnitude(segment: np.ndarray, interval: np.ndarray) -> np.ndarray:
    """Decoder output magnitude of G.711 Table 2a, on the 0..8159 scale.

    Segment s (0-based) runs from 2**(s+5) - 33 in 16 steps of 2**(s+1); the first
    interval of segment 0 is the half interval 0..1 whose output is 0. Outputs are the
    interval middles: 2**s * (2q + 33) - 33.
    """
    s = segment.astype(np.int64)
    q = interval.astype(np.int64)
    return (1 << s) * (2 * q + _ULAW_BIAS) - _ULAW_BIAS


def _decode_table(law: Law) -> np.ndarray:
    codes = np.arange(256, dtype=np.int64)
    if law == "PCMA":
        raw = codes ^ _ALAW_EVEN_BITS
        mag = _alaw_magnitude((raw >> 4) & 7, raw & 15) * _ALAW_SCALE
    else:
        raw = codes ^ _ULAW_ALL_BITS
        mag = _ulaw_magnitude((raw >> 4) & 7, raw & 15) * _ULAW_SCALE
    # G.711 Table 1a: the A-law polarity bit (bit 1, the MSB) is 1 for positive values and
    # is not among the inverted even bits. G.711 Table 2a: the µ-law polarity bit is 0 for
    # positive values before the inversion of all bits. Either way a positive sample is
    # sent with its MSB set (0xD5 and 0xFF are the smallest positive codes).
    if law == "PCMA":
        sign = np.where(raw & 0x80, 1, -1)
    else:
        sign = np.where(raw & 0x80, -1, 1)
    return (sign * mag).astype(np.int16)


ALAW_DECODE: np.ndarray = _decode_table("PCMA")
"""int16[256]: the A-law code (as sent, even bits inverted) -> linear sample."""
ALAW_DECODE.setflags(write=False)
ULAW_DECODE: np.ndarray = _decode_table("PCMU")
"""int16[256]: the µ-law code (as sent, all bits inverted) -> linear sample."""
ULAW_DECODE.setflags(write=False)


def _as_codes(data: bytes | bytearray | memoryview | np.ndarray) -> np.ndarray:
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8:
            raise InputError(f"G.711 codes must be bytes or a uint8 array, given dtype={data.dtype}")
        return data
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(data, dtype=np.uint8)
    raise InputError(f"G.711 codes must be bytes or a uint8 array, given {type(data).__name__}")


def _finish(samples: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "int16":
        return samples
    if dtype in ("float32", "float64"):
        # Full scale 1.0 = 32768, the usual convention for 16-bit audio (soundfile's).
        return samples.astype(dtype) / 32768.0
    raise InputError(f"dtype must be 'int16', 'float32' or 'float64', given dtype={dtype!r}")


def decode_alaw(data: bytes | np.ndarray, *, dtype: str = "int16") -> np.ndarray:
    """Decode A-law octets (G.711 Table 1a/1b) to linear samples.

    Parameters
    ----------
    data : bytes or numpy.ndarray of uint8
        A-law character signals as transmitted (even bits inverted).
    dtype : {"int16", "float32", "float64"}, keyword-only
        int16 samples, or floats with full scale 1.0 (= 32768).

    Returns
    -------
    numpy.ndarray
        One sample per octet.

    References
    ----------
    ITU-T G.711 (11/1988) §3, Tables 1a and 1b.
    """
    return _finish(ALAW_DECODE[_as_codes(data)], dtype)


def decode_ulaw(data: bytes | np.ndarray, *, dtype: str = "int16") -> np.ndarray:
    """Decode µ-law octets (G.711 Table 2a/2b) to linear samples.

    Parameters
    ----------
    data : bytes or numpy.ndarray of uint8
        µ-law character signals as transmitted (all bits inverted).
    dtype : {"int16", "float32", "float64"}, keyword-only
        int16 samples, or floats with full scale 1.0 (= 32768).

    Returns
    -------
    numpy.ndarray
        One sample per octet.

    References
    ----------
    ITU-T G.711 (11/1988) §4, Tables 2a and 2b.
    """
    return _finish(ULAW_DECODE[_as_codes(data)], dtype)


def _as_int16(samples: np.ndarray) -> np.ndarray:
    x = np.asarray(samples)
    if x.dtype.kind == "f":
        # Full scale 1.0 = 32768; values beyond it saturate (G.711's overload, §3/§4).
        return np.clip(np.floor(x * 32768.0), -32768, 32767).astype(np.int64)
    if x.dtype.kind in "iu":
        if x.size and (x.min() < -32768 or x.max() > 32767):
            raise InputError(
                f"G.711 encode expects 16-bit samples, given values in [{x.min()}, {x.max()}]"
            )
        return x.astype(np.int64)
    raise InputError(f"G.711 encode expects int16 or float samples, given dtype={x.dtype}")


def encode_alaw(samples: np.ndarray) -> bytes:
    """Encode linear samples to A-law octets (G.711 Table 1a/1b).

    Each int16 sample is reduced to the standard's 13-bit code by an arithmetic shift
    (floor division by 8); negative codes are taken by their one's complement, so that
    the 8192 codes split 4096 per sign exactly as Table 1 covers 0..4096 per sign. A
    value that lies on a decision value goes to the interval above it (G.711 leaves the
    boundary to the implementation; this is also the choice of common codecs, e.g.
    Python's ``audioop``).

    Parameters
    ----------
    samples : numpy.ndarray
        int16 (or any integer within int16) samples, or floats with full scale 1.0.

    Returns
    -------
    bytes
        One A-law octet per sample, as transmitted (even bits inverted).

    References
    ----------
    ITU-T G.711 (11/1988) §3, Tables 1a and 1b.
    """
    x = _as_int16(samples) >> 3  # to the 13-bit scale of Table 1 (floor)
    positive = x >= 0
    mag = np.where(positive, x, -x - 1)  # 0..4095 on either side
    # Table 1a: segment 1 = 0..32 (code segment 0), segment n = 2**(n+3)..2**(n+4).
    seg = np.zeros_like(mag)
    big = mag >= 32
    seg[big] = np.floor(np.log2(mag[big])).astype(np.int64) - 4
    step_shift = np.where(seg == 0, 1, seg)
    start = np.where(seg == 0, 0, 1 << (seg + 4))
    interval = (mag - start) >> step_shift
    raw = (positive.astype(np.int64) << 7) | (seg << 4) | interval
    return (raw ^ _ALAW_EVEN_BITS).astype(np.uint8).tobytes()


def encode_ulaw(samples: np.ndarray) -> bytes:
    """Encode linear samples to µ-law octets (G.711 Table 2a/2b).

    Each int16 sample is reduced to the standard's 14-bit code by an arithmetic shift
    (floor division by 4); magnitudes beyond 8159 saturate (Table 2a's last decision
    value). A value on a decision value goes to the interval above it.

    Parameters
    ----------
    samples : numpy.ndarray
        int16 (or any integer within int16) samples, or floats with full scale 1.0.

    Returns
    -------
    bytes
        One µ-law octet per sample, as transmitted (all bits inverted).

    References
    ----------
    ITU-T G.711 (11/1988) §4, Tables 2a and 2b.
    """
    x = _as_int16(samples) >> 2  # to the 14-bit scale of Table 2
    positive = x >= 0
    mag = np.minimum(np.abs(x), _ULAW_MAX)
    biased = mag + _ULAW_BIAS  # 33..8192: segment s holds 2**(s+5) .. 2**(s+6) - 1
    seg = np.floor(np.log2(biased)).astype(np.int64) - 5
    seg = np.clip(seg, 0, 7)
    interval = np.minimum((biased >> (seg + 1)) - 16, 15)
    raw = ((~positive).astype(np.int64) << 7) | (seg << 4) | interval  # Table 2a: 0 = positive
    return (raw ^ _ULAW_ALL_BITS).astype(np.uint8).tobytes()


def g711_codec(payload_type: int | None = None, codec: str | None = None) -> Law:
    """The G.711 law of a stream, from its encoding name or static payload type.

    Parameters
    ----------
    payload_type : int, optional
        RTP payload type (0 = PCMU, 8 = PCMA by RFC 3551 Table 4).
    codec : str, optional
        Encoding name from SDP (``"PCMA"``, ``"PCMU"``, any case); wins over the type.

    Returns
    -------
    {"PCMA", "PCMU"}

    Raises
    ------
    UnsupportedCodecError
        When the stream is not G.711; the message names the payload type and codec.
    """
    if codec is not None and codec.upper() in ("PCMA", "PCMU"):
        return codec.upper()  # type: ignore[return-value]
    if codec is None and payload_type in _G711_PAYLOAD_TYPES:
        return _G711_PAYLOAD_TYPES[payload_type]  # type: ignore[return-value]
    raise UnsupportedCodecError(
        f"payload type {payload_type} (codec {codec or 'unknown'}) is not G.711 (PCMU = payload type 0, "
        "PCMA = payload type 8); qoe.voice.decode decodes the other codecs"
    )


def decode(data: bytes | np.ndarray, law: Law, *, dtype: str = "int16") -> np.ndarray:
    """Decode G.711 octets with the law named ``"PCMA"`` (A-law) or ``"PCMU"`` (µ-law)."""
    if law == "PCMA":
        return decode_alaw(data, dtype=dtype)
    if law == "PCMU":
        return decode_ulaw(data, dtype=dtype)
    raise InputError(f"law must be 'PCMA' or 'PCMU', given law={law!r}")


def encode(samples: np.ndarray, law: Law) -> bytes:
    """Encode linear samples with the law named ``"PCMA"`` (A-law) or ``"PCMU"`` (µ-law)."""
    if law == "PCMA":
        return encode_alaw(samples)
    if law == "PCMU":
        return encode_ulaw(samples)
    raise InputError(f"law must be 'PCMA' or 'PCMU', given law={law!r}")
