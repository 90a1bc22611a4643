"""Multi-gigabyte captures written on the fly from the real samples in ``data/`` (never committed).

A capture of ``copies`` sequential copies of a sample: copy ``k`` is the sample's frames
with every capture time shifted to start ``gap`` after the previous copy ended, and the
sample's client IPv4 address (the source of its first IPv4 frame) replaced by one of its
own wherever it appears, so that each copy is a new call, video stream or page load with
the sample's packets, sizes, timing and payloads.

The address is changed so that no checksum changes: its first 16-bit word gains ``k`` and
its second loses ``k`` (modulo 0xFFFF, ones' complement), which leaves the ones'
complement sum of the header, hence the IPv4 header checksum (RFC 791 §3.1) and the
UDP/TCP checksums over the pseudo-header (RFC 768, RFC 9293 §3.1) valid, with no payload
byte touched. The file is written copy by copy: memory is one copy of the sample.

Used by ``tests/test_memory_flat.py`` and ``benchmarks/memory_flat.py``.
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

#: The samples each kind is built from (Ethernet pcaps, a client's end of the exchange).
SAMPLES = {
    "voice": ROOT / "data" / "voice" / "captures" / "down-b8_client.pcap",  # G.711 call, both directions
    "video": ROOT / "data" / "video" / "captures" / "h264-down-b64_client.pcap",  # RTP H.264 + RTP audio
    "udpts": ROOT / "data" / "video" / "captures" / "udpts-down-b64_client.pcap",  # MPEG-TS in plain UDP
    "web": ROOT / "data" / "web" / "captures" / "http11-idle-b64-curl-x3_client.pcap",  # three page loads
    "has": ROOT / "data" / "video" / "has" / "sessions" / "dash-ample.pcap.gz",  # a DASH session (dash.js)
    "has-tls": ROOT / "data" / "video" / "has" / "sessions" / "dash-tls.pcap.gz",  # the same over HTTPS (its key log beside)
    "quic": ROOT / "data" / "web" / "browser" / "captures" / "h3-idle.pcap",  # Chromium's HTTP/3 page load
    "browser-h1": ROOT / "data" / "web" / "browser" / "captures" / "h1-loss.pcap",  # Chromium, HTTP/1.1 and HTTPS, losses
}

_ETH = 14  # Ethernet II header (IEEE 802.3 §3.2.6 + the EtherType)


class Template:
    """One sample read once (a pcap, or a gzip-compressed one): its pcap records as bytes, and
    where to patch them per copy."""

    def __init__(self, sample: Path) -> None:
        raw = Path(sample).read_bytes()
        if Path(sample).suffix == ".gz":
            raw = gzip.decompress(raw)
        magic = struct.unpack_from("<I", raw, 0)[0]
        if magic not in (0xA1B2C3D4, 0xA1B23C4D):
            raise ValueError(f"{sample}: a little-endian pcap is needed")
        self.header = raw[:24]
        self.ns = magic == 0xA1B23C4D
        if struct.unpack_from("<I", raw, 20)[0] != 1:
            raise ValueError(f"{sample}: an Ethernet pcap is needed")
        recs, ips, times = [], [], []
        pos = 24
        while pos + 16 <= len(raw):
            sec, frac, incl, _ = struct.unpack_from("<IIII", raw, pos)
            recs.append(pos - 24)
            times.append(sec * 10**9 + frac * (1 if self.ns else 1000))
            frame = pos + 16
            is_v4 = incl >= _ETH + 20 and raw[frame + 12:frame + 14] == b"\x08\x00" and raw[frame + _ETH] >> 4 == 4
            ips.append(frame - 24 + _ETH if is_v4 else -1)
            pos = frame + incl
        self.body = np.frombuffer(raw[24:pos], dtype=np.uint8).copy()
        self.rec = np.asarray(recs, dtype=np.int64)
        self.times = np.asarray(times, dtype=np.int64)
        ip = np.asarray(ips, dtype=np.int64)
        first = ip[ip >= 0][0]
        self.client = bytes(self.body[first + 12:first + 16])
        at = []
        for field in (12, 16):  # RFC 791 §3.1: source, destination address
            off = ip[ip >= 0] + field
            same = np.all(self.body[off[:, None] + np.arange(4)] == np.frombuffer(self.client, np.uint8), axis=1)
            at.append(off[same])
        self.addr_at = np.concatenate(at)
        self.duration_ns = int(self.times.max() - self.times.min())

    def copy(self, k: int, start_ns: int) -> bytes:
        """Copy ``k`` of the sample, its first frame at ``start_ns``."""
        b = self.body.copy()
        t = self.times - self.times[0] + start_ns
        frac = t % 10**9 if self.ns else (t % 10**9) // 1000
        ts = np.stack([t // 10**9, frac], axis=1).astype("<u4").view(np.uint8).reshape(-1, 8)
        b[self.rec[:, None] + np.arange(8)] = ts
        # The address's two 16-bit words move in opposite directions, so the IPv4 header
        # checksum (RFC 791 §3.1: one's-complement sum) stays valid: the first word counts up
        # to 0xFFFF, then down below its start, for up to ~65,000 distinct copies (4 GB of voice).
        base1, base2 = int.from_bytes(self.client[:2], "big"), int.from_bytes(self.client[2:], "big")
        step = k if base1 + k <= 0xFFFF else -(k - (0xFFFF - base1))
        w1, w2 = base1 + step, (base2 - step) % 0xFFFF
        if not 0 < w1 <= 0xFFFF:
            raise ValueError(f"copy {k}: too many copies for client address {self.client.hex()}")
        b[self.addr_at[:, None] + np.arange(4)] = np.frombuffer(struct.pack(">HH", w1, w2), np.uint8)
        return b.tobytes()


def write(out: Path, kind: str, *, size_bytes: int | None = None, copies: int | None = None,
          gap_ns: int = 50_000_000) -> tuple[int, int]:
    """Write ``copies`` (or enough copies to reach ``size_bytes``) of the sample of ``kind``.

    Returns (copies, bytes written). ``kind="mixed"`` cycles voice, video and web copies.
    """
    kinds = ["voice", "video", "web"] if kind == "mixed" else [kind]
    tpl = [Template(SAMPLES[k]) for k in kinds]
    if (copies is None) == (size_bytes is None):
        raise ValueError("give copies or size_bytes")
    start = 1_700_000_000 * 10**9
    written = 24
    k = 0
    with open(out, "wb") as fh:
        fh.write(tpl[0].header[:4] + struct.pack("<HHiIII", 2, 4, 0, 0, 262144, 1))
        while k < copies if copies is not None else written < size_bytes:  # type: ignore[operator]
            t = tpl[k % len(tpl)]
            if t.ns != tpl[0].ns:
                raise ValueError("samples of mixed time resolution")
            chunk = t.copy(k + 1, start)
            fh.write(chunk)
            written += len(chunk)
            start += t.duration_ns + gap_ns
            k += 1
    return k, written


def write_udp_flood(out: Path, flows: int, *, seed: int = 0, start_ns: int = 1_800_000_000 * 10**9,
                    spacing_ns: int = 10_000) -> int:
    """A crafted capture of ``flows`` one-packet UDP flows that each look like the start of
    an RTP stream: Ethernet, IPv4 (checksum set, RFC 791 §3.1), UDP (checksum 0, which RFC
    768 allows) from 10.1.x.y to 10.2.0.1 with ports from the dynamic range, and a 12-byte
    RTP header (RFC 3550 §5.1: version 2, random payload type below 72, sequence number,
    timestamp and SSRC) and 20 payload bytes. Microsecond pcap, one frame per
    ``spacing_ns``. Returns the bytes written; memory is a few arrays of ``flows`` rows.
    """
    rng = np.random.default_rng(seed)
    i = np.arange(flows, dtype=np.int64)
    rtp = np.zeros((flows, 32), dtype=np.uint8)
    rtp[:, 0] = 0x80
    rtp[:, 1] = rng.integers(0, 72, flows)
    rtp[:, 2:12] = rng.integers(0, 256, (flows, 10))
    rtp[:, 12:] = rng.integers(0, 256, (flows, 20))
    udp = np.zeros((flows, 8), dtype=np.uint8)
    sport = 49152 + i % 16384
    dport = 49152 + (i // 16384) % 16384
    udp[:, 0], udp[:, 1] = sport >> 8, sport & 0xFF
    udp[:, 2], udp[:, 3] = dport >> 8, dport & 0xFF
    udp[:, 5] = 8 + 32
    ip = np.zeros((flows, 20), dtype=np.uint8)
    ip[:, 0], ip[:, 3], ip[:, 8], ip[:, 9] = 0x45, 20 + 8 + 32, 64, 17
    ip[:, 12], ip[:, 13] = 10, 1
    ip[:, 14], ip[:, 15] = (i >> 8) & 0xFF, i & 0xFF
    ip[:, 16:20] = (10, 2, 0, 1)
    words = ip.reshape(flows, 10, 2).astype(np.int64)
    total = (words[:, :, 0] << 8 | words[:, :, 1]).sum(axis=1)
    while (total >> 16).any():
        total = (total & 0xFFFF) + (total >> 16)
    csum = ~total & 0xFFFF  # RFC 1071 ones' complement of the ones' complement sum
    ip[:, 10], ip[:, 11] = csum >> 8, csum & 0xFF
    eth = np.zeros((flows, 14), dtype=np.uint8)
    eth[:, :6] = (2, 0, 0, 0, 0, 2)
    eth[:, 6:12] = (2, 0, 0, 0, 0, 1)
    eth[:, 12] = 8
    ts = start_ns + i * spacing_ns
    rec = np.zeros((flows, 16), dtype=np.uint8)
    head = np.stack([ts // 10**9, ts % 10**9 // 1000, np.full(flows, 74), np.full(flows, 74)], axis=1)
    rec[:] = head.astype("<u4").view(np.uint8).reshape(flows, 16)
    body = np.concatenate([rec, eth, ip, udp, rtp], axis=1)
    with open(out, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        fh.write(body.tobytes())
    return 24 + body.nbytes
