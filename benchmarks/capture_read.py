"""Speed and memory of qoe.capture's two readers on a large capture.

Builds a capture of N packets (default 10^6; ``--short``: 10^5; a µs pcap, or with
``--format pcapng`` one section of Enhanced Packet Blocks) by replicating a real
voice capture from data/voice/**/*.pcap (the largest Ethernet one; times shifted so the
copies follow each other);
when none exists yet, it writes a synthetic one like them: two G.711 RTP streams
(20 ms, 160-byte payloads) over Ethernet/IPv4/UDP with 1 in 5 frames bulk TCP. Then times

- ``read_packets(path)`` (every UDP and TCP packet as a Packet object),
- ``read_packets(path, protocols=("udp",))``,
- ``read_udp_batches(path)`` (columns),

each in a fresh subprocess so peak memory (ru_maxrss) is per reader, and prints frames
per second and peak RSS, on the full capture and on its first half (same peak memory on
both = memory flat in the file size; read_udp_batches plateaus after a few batches, at
about five batches' worth of payload). When tshark is installed, the time of
``tshark -r FILE -q -z rtp,streams`` on the same file is printed as a yardstick. Usage::

    python benchmarks/capture_read.py [--short] [--packets N] [--capture FILE] [--format pcapng]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import BinaryIO

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _records_of(path: str) -> list[tuple[int, int, bytes]]:
    """(ts_ns, wire_len, frame bytes) of every record of an Ethernet-or-other capture."""
    from qoe.capture._files import records

    return [(ts, wire, data) for _i, ts, _if, _lt, wire, data in records(path)]


def _synthetic(n: int) -> tuple[int, list[tuple[int, int, bytes]]]:
    """One period (1 s) of two RTP G.711 streams + some TCP, Ethernet/IPv4."""
    rng = np.random.default_rng(1)
    out = []
    t0 = 1_700_000_000_000_000_000

    def eth_ip(src: bytes, dst: bytes, proto: int, l4: bytes, ident: int) -> bytes:
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), ident & 0xFFFF, 0x4000, 64, proto, 0, src, dst)
        return b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02\x08\x00" + ip + l4

    a, b = bytes([192, 0, 2, 1]), bytes([198, 51, 100, 2])
    seq = [100, 5000]
    for k in range(50):  # 50 packets per stream per second
        for s, (src, dst, sp, dp) in enumerate(((a, b, 40000, 50000), (b, a, 50000, 40000))):
            rtp = struct.pack("!BBHII", 0x80, 8, (seq[s] + k) & 0xFFFF, 160 * k, 0x1234 + s) + bytes(
                rng.integers(0, 256, 160, dtype=np.uint8)
            )
            udp = struct.pack("!HHHH", sp, dp, 8 + len(rtp), 0) + rtp
            out.append((t0 + k * 20_000_000 + s * 7_000 + int(rng.integers(0, 2_000_000)), eth_ip(src, dst, 17, udp, k), 0))
        if k % 2 == 0:
            tcp = struct.pack("!HHIIHHHH", 80, 33000, 1000 + k * 1448, 1, 0x5010, 65535, 0, 0) + bytes(1448)
            out.append((t0 + k * 20_000_000 + 500_000, eth_ip(b, a, 6, tcp, k), 0))
    out.sort()
    return 1_000_000_000, [(ts, len(fr), fr) for ts, fr, _ in out]


def _pcap_writer(f: BinaryIO) -> Callable[[int, int, bytes], bytes]:
    """draft-ietf-opsawg-pcap §4 file header (µs, little-endian, Ethernet); returns the
    §5 record packer ``(ts_ns, wire, data) -> bytes``."""
    f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    hdr = struct.Struct("<IIII")

    def record(t: int, wire: int, data: bytes) -> bytes:
        return hdr.pack(t // 1_000_000_000, (t % 1_000_000_000) // 1000, len(data), wire) + data

    return record


def _pcapng_writer(f: BinaryIO) -> Callable[[int, int, bytes], bytes]:
    """draft-ietf-opsawg-pcapng §4.1 Section Header Block and §4.2 Interface Description
    Block (Ethernet, default µs resolution), little-endian; returns the §4.3 Enhanced
    Packet Block packer ``(ts_ns, wire, data) -> bytes``."""
    shb = struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28)
    idb = struct.pack("<IIHHI", 1, 20, 1, 0, 0) + struct.pack("<I", 20)
    f.write(shb + idb)
    epb = struct.Struct("<IIIIIII")

    def record(t: int, wire: int, data: bytes) -> bytes:
        us = t // 1000
        pad = -len(data) % 4
        blen = 32 + len(data) + pad
        return epb.pack(6, blen, 0, us >> 32, us & 0xFFFFFFFF, len(data), wire) + data + bytes(pad) + struct.pack("<I", blen)

    return record


def build_capture(path: str, n: int, source: str | None, fmt: str = "pcap") -> str:
    """Write ``n`` packets into a µs pcap (or pcapng) at ``path``; return a description of the source."""
    if source is None:
        cands = sorted(glob.glob(os.path.join(ROOT, "data", "voice", "**", "*.pcap"), recursive=True))
        cands = [c for c in cands if _linktype(c) == 1]
        source = max(cands, key=os.path.getsize) if cands else None
    if source:
        recs = _records_of(source)
        if not recs:
            raise SystemExit(f"{source}: no packets")
        period = recs[-1][0] - recs[0][0] + 20_000_000
        desc = f"{os.path.relpath(source, ROOT)} ({len(recs)} packets) replicated"
        base = recs[0][0]
        recs = [(ts - base + 1_700_000_000_000_000_000, w, d) for ts, w, d in recs]
    else:
        period, recs = _synthetic(n)
        desc = f"synthetic RTP G.711 + TCP ({len(recs)} packets/s) replicated"
    with open(path, "wb") as f:
        record = _pcapng_writer(f) if fmt == "pcapng" else _pcap_writer(f)
        written = 0
        k = 0
        chunk = []
        while written < n:
            shift = k * period
            for ts, wire, data in recs:
                if written >= n:
                    break
                t = ts + shift
                chunk.append(record(t, wire, data))
                written += 1
            f.write(b"".join(chunk))
            chunk = []
            k += 1
    return desc


def _linktype(path: str) -> int:
    from qoe.capture import probe

    try:
        return probe(path).interfaces[0].linktype
    except Exception:
        return -1


_CHILD = r"""
import json, resource, sys, time
from qoe.capture import read_packets, read_udp_batches
path, mode = sys.argv[1], sys.argv[2]
t = time.perf_counter()
c = time.process_time()
n = 0
nbytes = 0
if mode == "packets":
    for p in read_packets(path):
        n += 1
elif mode == "packets-udp":
    for p in read_packets(path, protocols=("udp",)):
        n += 1
else:
    for b in read_udp_batches(path):
        n += len(b)
dt = time.perf_counter() - t
cpu = time.process_time() - c
print(json.dumps({"n": n, "s": dt, "cpu": cpu, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run(path: str, mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, path, mode], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def run_tshark(path: str) -> dict | None:
    import resource
    import shutil

    tshark = shutil.which("tshark")
    if tshark is None:
        return None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([tshark, "-r", path, "-q", "-z", "rtp,streams"], capture_output=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"s": time.perf_counter() - t, "cpu": cpu, "rss_mb": after.ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--short", action="store_true", help="10^5 packets instead of 10^6")
    ap.add_argument("--packets", type=int, default=None)
    ap.add_argument("--capture", default=None, help="real capture to replicate (Ethernet pcap)")
    ap.add_argument("--format", choices=("pcap", "pcapng"), default="pcap", help="file format written (default pcap)")
    ap.add_argument("--no-tshark", action="store_true", help="skip the tshark yardstick")
    args = ap.parse_args()
    n = args.packets or (100_000 if args.short else 1_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big." + args.format)
        small = os.path.join(tmp, "half." + args.format)
        t = time.perf_counter()
        desc = build_capture(path, n, args.capture, args.format)
        build_capture(small, n // 2, args.capture, args.format)
        size = os.path.getsize(path)
        print(f"capture: {args.format}, {n} frames, {size / 1e6:.1f} MB, {desc} (built in {time.perf_counter() - t:.1f} s)")
        print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} CPUs")
        print()
        head = (
            f"{'reader':<36} {'returned':>9} {'wall s':>7} {'frames/s':>11} {'CPU s':>6} {'frames/CPU s':>12}"
            f" {'peak RSS MB':>12} {'RSS MB (N/2)':>13}"
        )
        print(head)
        print("-" * len(head))
        for mode, label in (
            ("packets", "read_packets (udp+tcp)"),
            ("packets-udp", "read_packets(protocols=('udp',))"),
            ("batches", "read_udp_batches"),
        ):
            r = run(path, mode)
            r10 = run(small, mode)
            print(
                f"{label:<36} {r['n']:>9} {r['s']:>7.2f} {n / r['s']:>11,.0f} {r['cpu']:>6.2f} {n / r['cpu']:>12,.0f}"
                f" {r['rss_mb']:>12.1f} {r10['rss_mb']:>13.1f}"
            )
        ts = None if args.no_tshark else run_tshark(path)
        if ts is not None:
            print(
                f"{'tshark -q -z rtp,streams':<36} {'':>9} {ts['s']:>7.2f} {n / ts['s']:>11,.0f} {ts['cpu']:>6.2f}"
                f" {n / ts['cpu']:>12,.0f} {ts['rss_mb']:>12.1f}"
            )


if __name__ == "__main__":
    main()
