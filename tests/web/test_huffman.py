"""HPACK Huffman decoding (RFC 7541 §5.2, Appendix B): qoe's byte-table decoder, which qoe installs
into ``hpack`` when it reads HTTP/2, gives what hpack's own decoder gives, on every input.

References: RFC 7541 Appendix C.4 and C.6 (the standard's examples of Huffman-coded header
blocks, decoded values as printed there); hpack 4.x's own ``hpack.huffman_table.decode_huffman``
(the oracle for arbitrary strings, valid or not).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

hpack = pytest.importorskip("hpack")
from hpack.exceptions import HPACKDecodingError  # noqa: E402
from hpack.huffman import HuffmanEncoder  # noqa: E402
from hpack.huffman_constants import REQUEST_CODES, REQUEST_CODES_LENGTH  # noqa: E402
from hpack.huffman_table import decode_huffman as hpack_decode_huffman  # noqa: E402

from qoe.web.http import connection_results  # noqa: E402

H2C = Path(__file__).resolve().parents[2] / "data" / "web" / "tls" / "h2c-prior.pcapng"


@pytest.fixture(scope="module")
def installed():
    """hpack's module-level decoder after qoe has read an HTTP/2 capture (the h2 parser loads then)."""
    results = connection_results(H2C)
    assert any(t.protocol == "h2" for r in results for t in r.transactions)
    import hpack.hpack

    return hpack.hpack.decode_huffman


def _outcome(fn, data):
    try:
        return fn(data)
    except HPACKDecodingError as e:
        return ("error", str(e))


def test_qoe_replaces_hpacks_huffman_decoder(installed):
    assert installed is not hpack_decode_huffman


def test_rfc7541_appendix_c4_huffman_requests(installed):
    # RFC 7541 Appendix C.4.1-C.4.3: requests with Huffman coding, one decoder (dynamic table kept)
    blocks = [
        ("828684418cf1e3c2e5f23a6ba0ab90f4ff",
         [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")]),
        ("828684be5886a8eb10649cbf",
         [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com"),
          ("cache-control", "no-cache")]),
        ("828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
         [(":method", "GET"), (":scheme", "https"), (":path", "/index.html"), (":authority", "www.example.com"),
          ("custom-key", "custom-value")]),
    ]
    dec = hpack.Decoder()
    for hexblock, expected in blocks:
        assert dec.decode(bytes.fromhex(hexblock)) == expected


def test_rfc7541_appendix_c6_huffman_responses(installed):
    # RFC 7541 Appendix C.6.1 and C.6.2: responses with Huffman coding, dynamic table of 256 octets
    dec = hpack.Decoder()
    dec.header_table_size = 256
    first = bytes.fromhex(
        "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3"
    )
    assert dec.decode(first) == [
        (":status", "302"), ("cache-control", "private"), ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
        ("location", "https://www.example.com"),
    ]
    assert dec.decode(bytes.fromhex("4883640effc1c0bf")) == [
        (":status", "307"), ("cache-control", "private"), ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
        ("location", "https://www.example.com"),
    ]


def test_same_result_as_hpack_on_valid_and_invalid_strings(installed):
    rng = random.Random(7541)
    enc = HuffmanEncoder(REQUEST_CODES, REQUEST_CODES_LENGTH)
    cases = [b"", b"\xff", b"\xff" * 4, b"\x00", b"\xfe", b"\x3f\xff\xff\xff"]  # EOS alone, too much padding, ...
    for _ in range(4000):
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 24)))
        coded = enc.encode(raw)
        cases.append(coded)
        cases.append(coded + bytes([rng.choice([0xFF, 0x7F, 0xFE, 0x00])]))  # padding too long or not ones
        cases.append(coded[:-1])  # cut inside a code
        cases.append(raw)  # arbitrary octets
        cases.append(bytes(rng.choice([0xFF, 0xFE, 0x3F, 0x7F]) for _ in range(rng.randrange(1, 6))))  # near EOS
    errors = 0
    for data in cases:
        expected = _outcome(hpack_decode_huffman, data)
        assert _outcome(installed, data) == expected, data.hex()
        errors += isinstance(expected, tuple)
    assert 0 < errors < len(cases)  # both valid and invalid strings were compared
