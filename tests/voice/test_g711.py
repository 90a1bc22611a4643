"""G.711 A-law / µ-law against the Recommendation's tables and two independent decoders.

Reference values:
* ITU-T G.711 (11/1988) Table 1a (A-law) and Table 2a (µ-law): quantized values at the
  segment ends, the even-bit / all-bit inversions, the polarity bit. The tables' values
  are on the 0..4096 (A-law) and 0..8159 (µ-law) scales; in int16 they are x8 and x4.
* Python 3.11's ``audioop`` (the C module from CPython; deprecated, removed in 3.13):
  ``audioop.alaw2lin(bytes(range(256)), 2)``, ``audioop.lin2alaw(x.tobytes(), 2)`` and
  the ulaw equivalents, on all 256 codes and all 65536 int16 values.
* SoX: ``sox -t raw -e a-law -r 8000 -b 8 -c 1 codes.raw -t raw -e signed-integer -b 16
  -L out.raw`` (and ``-e u-law``), decoding the 256 codes.
"""

from __future__ import annotations

import shutil
import subprocess
import warnings

import numpy as np
import pytest

from qoe.errors import InputError, UnsupportedCodecError
from qoe.voice import g711

ALL_CODES = bytes(range(256))
ALL_INT16 = np.arange(-32768, 32768, dtype=np.int64).astype(np.int16)


def _audioop():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import audioop  # noqa: PLC0415
        except ImportError:  # Python >= 3.13
            return None
    return audioop


# ---- G.711 Table 1a (A-law) ------------------------------------------------------------

# (character signal before even-bit inversion, quantized value on the 0..4096 scale)
# Table 1a: segment 1 starts at 1 (interval 0..2), segment 2 at 33 (32..34), segment 3 at
# 66 (64..68), segment 8 at 2112 (2048..2176) and ends at 4032 (3968..4096).
ALAW_TABLE_1A = [
    (0b1_000_0000, 1),
    (0b1_000_1111, 31),
    (0b1_001_0000, 33),
    (0b1_001_1111, 63),
    (0b1_010_0000, 66),
    (0b1_011_0000, 132),
    (0b1_111_0000, 2112),
    (0b1_111_1111, 4032),
]


@pytest.mark.parametrize("raw, value", ALAW_TABLE_1A)
def test_alaw_table_1a_quantized_values(raw, value):
    wire = raw ^ 0x55  # G.711 §3: even bits inverted for transmission
    assert g711.decode_alaw(bytes([wire])).tolist() == [value * 8]
    # Table 1b: the same interval with polarity bit 0 is the negative value.
    assert g711.decode_alaw(bytes([wire ^ 0x80])).tolist() == [-value * 8]


def test_alaw_even_bit_inversion():
    # The smallest positive and negative values: all-zero characters before inversion,
    # i.e. 0xD5 / 0x55 on the line (alternating bits, the point of the inversion).
    assert g711.decode_alaw(bytes([0xD5, 0x55])).tolist() == [8, -8]
    assert g711.encode_alaw(np.array([0, -1], dtype=np.int16)) == bytes([0xD5, 0x55])


@pytest.mark.parametrize(
    "x16, raw",
    [
        (255, 0b1_000_1111),  # just below decision value 32 (x8): segment 1, interval 15
        (256, 0b1_001_0000),  # decision value 32: first interval of segment 2
        (511, 0b1_001_1111),  # just below 64
        (512, 0b1_010_0000),  # decision value 64: segment 3
        (16384, 0b1_111_0000),  # decision value 2048: segment 8
        (32767, 0b1_111_1111),  # overload: last interval
        (-256, 0b0_000_1111),  # negative side: [-256, -240) is interval 15 of segment 1
        (-257, 0b0_001_0000),
    ],
)
def test_alaw_decision_values(x16, raw):
    assert g711.encode_alaw(np.array([x16], dtype=np.int16)) == bytes([raw ^ 0x55])


# ---- G.711 Table 2a (µ-law) ------------------------------------------------------------

# (character signal on the line, quantized value on the 0..8159 scale). Table 2a: the
# first interval 0..1 decodes to 0, segment 1 ends with 30, segment 2 starts at 33
# (31..35), segment 8 runs 4191 .. 8031 (4063 .. 8159).
ULAW_TABLE_2A = [
    (0xFF, 0),
    (0xF0, 30),
    (0xEF, 33),
    (0xE0, 93),
    (0xDF, 99),
    (0x8F, 4191),
    (0x80, 8031),
]


@pytest.mark.parametrize("wire, value", ULAW_TABLE_2A)
def test_ulaw_table_2a_quantized_values(wire, value):
    assert g711.decode_ulaw(bytes([wire])).tolist() == [value * 4]
    assert g711.decode_ulaw(bytes([wire ^ 0x80])).tolist() == [-value * 4]


def test_ulaw_all_bit_inversion():
    # +0 is the all-zero character with positive polarity, inverted: 0xFF; -0 is 0x7F.
    assert g711.decode_ulaw(bytes([0xFF, 0x7F])).tolist() == [0, 0]
    assert g711.encode_ulaw(np.array([0], dtype=np.int16)) == b"\xff"
    # The largest magnitudes: 0x80 (+8031) and 0x00 (-8031).
    assert g711.decode_ulaw(bytes([0x80, 0x00])).tolist() == [32124, -32124]


@pytest.mark.parametrize(
    "x16, wire",
    [
        (123, 0xF0),  # 30.75 on the 8159 scale: below decision value 31, segment 1 end
        (124, 0xEF),  # decision value 31: segment 2
        (32767, 0x80),  # overload (>= 8159): last interval
    ],
)
def test_ulaw_decision_values(x16, wire):
    assert g711.encode_ulaw(np.array([x16], dtype=np.int16)) == bytes([wire])


# ---- properties of both laws -------------------------------------------------------------


@pytest.mark.parametrize("law", ["PCMA", "PCMU"])
def test_symmetric_and_monotonic(law):
    table = g711.ALAW_DECODE if law == "PCMA" else g711.ULAW_DECODE
    codes = np.arange(256)
    # Flipping the polarity bit negates the value.
    assert np.array_equal(table[codes ^ 0x80], -table[codes].astype(np.int32))
    # Encoding every int16 value gives codes whose decoded values never decrease.
    enc = np.frombuffer(g711.encode(ALL_INT16, law), dtype=np.uint8)
    assert np.all(np.diff(table[enc].astype(np.int32)) >= 0)


@pytest.mark.parametrize("law", ["PCMA", "PCMU"])
def test_round_trip_codes(law):
    decoded = g711.decode(ALL_CODES, law)
    back = g711.encode(decoded, law)
    if law == "PCMA":
        assert back == ALL_CODES
    else:  # -0 (0x7F) decodes to 0, which encodes as +0 (0xFF): the only exception.
        diff = [i for i in range(256) if back[i] != ALL_CODES[i]]
        assert diff == [0x7F] and back[0x7F] == 0xFF


@pytest.mark.parametrize("law, scale", [("PCMA", 8), ("PCMU", 4)])
def test_quantisation_error_within_one_step(law, scale):
    y = g711.decode(g711.encode(ALL_INT16, law), law).astype(np.int64)
    err = np.abs(y - ALL_INT16.astype(np.int64))
    # The largest interval: 128 (A-law) / 256 (µ-law) on the table scale; overload
    # beyond the last decision value is excluded.
    inside = np.abs(ALL_INT16.astype(np.int64)) < (4096 * 8 if law == "PCMA" else 8159 * 4)
    assert err[inside].max() <= (128 * 8 if law == "PCMA" else 256 * 4)
    # Small signals are fine-grained: in the first segment (interval width 2 on the
    # table scale) the error is at most one interval plus what the shift to 13/14 bits
    # drops (scale - 1).
    small = np.abs(ALL_INT16.astype(np.int64)) < 32 * scale
    assert err[small].max() <= 2 * scale + scale - 1


def test_float_output_and_input():
    x = g711.decode_alaw(ALL_CODES, dtype="float32")
    assert x.dtype == np.float32
    assert np.array_equal(x, g711.ALAW_DECODE.astype(np.float32) / 32768)
    assert g711.encode_alaw(x) == ALL_CODES  # floats at full scale 1.0 encode back


# ---- independent decoders ----------------------------------------------------------------


def test_against_audioop():
    audioop = _audioop()
    if audioop is None:
        pytest.skip("audioop not available (Python >= 3.13)")
    a = np.frombuffer(audioop.alaw2lin(ALL_CODES, 2), dtype="<i2")
    u = np.frombuffer(audioop.ulaw2lin(ALL_CODES, 2), dtype="<i2")
    assert np.array_equal(a, g711.ALAW_DECODE)
    assert np.array_equal(u, g711.ULAW_DECODE)
    pcm = ALL_INT16.astype("<i2").tobytes()
    assert g711.encode_alaw(ALL_INT16) == audioop.lin2alaw(pcm, 2)
    assert g711.encode_ulaw(ALL_INT16) == audioop.lin2ulaw(pcm, 2)


@pytest.mark.skipif(shutil.which("sox") is None, reason="sox not installed")
@pytest.mark.parametrize("law, encoding", [("PCMA", "a-law"), ("PCMU", "u-law")])
def test_against_sox(tmp_path, law, encoding):
    src, dst = tmp_path / "codes.raw", tmp_path / "out.raw"
    src.write_bytes(ALL_CODES)
    cmd = ["sox", "-t", "raw", "-e", encoding, "-r", "8000", "-b", "8", "-c", "1", str(src),
           "-t", "raw", "-e", "signed-integer", "-b", "16", "-L", str(dst)]
    subprocess.run(cmd, check=True, capture_output=True)
    assert np.array_equal(np.fromfile(dst, dtype="<i2"), g711.decode(ALL_CODES, law))


# ---- codec names and bad input -----------------------------------------------------------


def test_codec_names():
    assert g711.g711_codec(0) == "PCMU"
    assert g711.g711_codec(8) == "PCMA"
    assert g711.g711_codec(96, "pcma") == "PCMA"  # dynamic type announced by SDP


@pytest.mark.parametrize("pt, codec", [(9, None), (96, "opus"), (96, None), (18, "G729")])
def test_unsupported_codec_names_the_payload_type(pt, codec):
    with pytest.raises(UnsupportedCodecError, match=f"payload type {pt}"):
        g711.g711_codec(pt, codec)


def test_bad_input():
    with pytest.raises(InputError, match="dtype=int64"):
        g711.decode_alaw(np.arange(4))
    with pytest.raises(InputError, match="16-bit samples"):
        g711.encode_ulaw(np.array([40000]))
    with pytest.raises(InputError, match="dtype must be"):
        g711.decode_ulaw(b"\x00", dtype="int8")
    with pytest.raises(InputError, match="law must be"):
        g711.decode(b"\x00", "G722")  # type: ignore[arg-type]
