"""The same page loads captured another way give the same pages.

Chromium's loads of data/web/browser rewritten three ways, each of which changes nothing a
browser or server did: every capture time a million seconds later; every frame with an
802.1Q VLAN tag (IEEE 802.1Q §9: TPID 0x8100, VID 100); every IPv4 packet as IPv6 (RFC 8200
§3: the same payload, the addresses mapped into 2001:db8::/96; the TCP and UDP checksums not
recomputed, which qoe does not check). The pages, with the key log where there is one, must
be the same field by field: times moved by the shift, addresses aside for IPv6.
"""

from __future__ import annotations

import ipaddress
import struct
import warnings
from pathlib import Path

import pytest

from qoe.web import WebOptions, page_loads
from web.as_plain import pages_plain  # tests/web/as_plain.py

CAPTURES = Path(__file__).resolve().parents[2] / "data" / "web" / "browser" / "captures"
SHIFT_S = 1_000_000


def _records(path: Path) -> tuple[bytes, list[tuple[int, int, bytes, int]]]:
    """A little-endian pcap's header and (seconds, fraction, frame, original length) records."""
    raw = path.read_bytes()
    out, pos = [], 24
    while pos + 16 <= len(raw):
        sec, frac, incl, orig = struct.unpack_from("<IIII", raw, pos)
        out.append((sec, frac, raw[pos + 16:pos + 16 + incl], orig))
        pos += 16 + incl
    return raw[:24], out


def _write(path: Path, header: bytes, records) -> Path:
    path.write_bytes(header + b"".join(struct.pack("<IIII", s, f, len(d), o) + d for s, f, d, o in records))
    return path


def _v6(frame: bytes) -> bytes:
    """An Ethernet frame's IPv4 packet as IPv6 (RFC 8200 §3), other frames as they are."""
    if frame[12:14] != b"\x08\x00" or frame[14] >> 4 != 4:
        return frame
    ihl, total = (frame[14] & 15) * 4, struct.unpack_from("!H", frame, 16)[0]
    payload = frame[14 + ihl:14 + total]
    prefix = bytes.fromhex("20010db8000000000000ffff")
    header = struct.pack("!IHBB", 6 << 28, len(payload), frame[23], 64) + prefix + frame[26:30] + prefix + frame[30:34]
    return frame[:12] + b"\x86\xdd" + header + payload


@pytest.mark.parametrize("name", ["h1-loss", "h2-loss", "tls13-loss", "h3-loss"])
def test_shifted_tagged_and_ipv6_captures_give_the_same_pages(tmp_path, name):
    keylog = CAPTURES / f"{name}.keylog"
    opts = WebOptions(keylog=str(keylog) if keylog.stat().st_size else None)
    header, records = _records(CAPTURES / f"{name}.pcap")
    shifted = _write(tmp_path / "shifted.pcap", header, [(s + SHIFT_S, f, d, o) for s, f, d, o in records])
    tagged = _write(tmp_path / "tagged.pcap", header,
                    [(s, f, d[:12] + b"\x81\x00\x00\x64" + d[12:], o + 4) for s, f, d, o in records])
    v6 = _write(tmp_path / "v6.pcap", header,
                [(s, f, _v6(d), o + len(_v6(d)) - len(d)) for s, f, d, o in records])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = page_loads(CAPTURES / f"{name}.pcap", options=opts)
        variants = {k: page_loads(p, options=opts) for k, p in (("shifted", shifted), ("tagged", tagged), ("v6", v6))}
    assert base
    assert pages_plain(variants["shifted"], shift_ns=SHIFT_S * 10**9) == pages_plain(base)
    assert pages_plain(variants["tagged"]) == pages_plain(base)
    assert pages_plain(variants["v6"], addresses=False) == pages_plain(base, addresses=False)
    prefix = bytes.fromhex("20010db8000000000000ffff")
    assert [p.client for p in variants["v6"]] == \
        [str(ipaddress.IPv6Address(prefix + ipaddress.IPv4Address(p.client).packed)) for p in base]
