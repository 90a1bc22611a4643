"""Speed, memory and agreement of ``qoe streams`` against ``tshark -q -z rtp,streams``.

Builds a large capture by replicating a real sample from ``data/voice/captures`` (every
copy continues the streams: times, sequence numbers and RTP timestamps are shifted so
that the copies join into long streams, several calls run side by side on shifted
ports), writes it to a temporary directory, then in the same run times, each in a fresh
process,

* the CLI ``qoe streams CAPTURE --format csv``,
* the library call ``qoe.rtp.scan_capture(path, keep_packets=False)``, and
* ``tshark -r CAPTURE -q --enable-heuristic rtp_udp -z rtp,streams``,

measuring wall time, CPU time and peak resident memory (``RUSAGE_CHILDREN`` of a
wrapper process around each), checks that every stream's packets, lost, Problems and
min/mean/max delta and jitter agree with tshark to its printed precision, and prints a
table. Memory flatness in the streams' length is checked by running the library on a
capture half the size as well. ``rtp_many_streams.py`` has the many-streams cases.

Usage::

    python benchmarks/rtp_vs_tshark.py            # >= 1.2e6 packets, 8 streams
    python benchmarks/rtp_vs_tshark.py --short    # 2e5 packets (CI)
"""

from __future__ import annotations

import argparse
import shutil
import struct
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import dpkt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _rtp_bench import LIB_SNIPPET, failed, measured, print_table, run_tools, tools  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CAPTURES = ROOT / "data" / "voice" / "captures"
# A receiver-side capture behind an 8-packet downlink buffer: one stream with loss bursts.
PREFERRED_SAMPLES = ("down-b8_client.pcap", "noload-b64-pcmu_client.pcap")


def default_sample() -> Path:
    for name in PREFERRED_SAMPLES:
        if (CAPTURES / name).exists():
            return CAPTURES / name
    found = sorted(CAPTURES.glob("*.pcap"))
    if not found:
        raise SystemExit(f"no sample capture in {CAPTURES}; give --sample")
    return found[0]


def build_capture(sample: Path, out: Path, packets: int, calls: int = 4) -> int:
    """Write a pcap of at least ``packets`` frames by replicating ``sample``'s UDP frames.

    Every copy is shifted in time by the sample's duration (+ 20 ms), RTP sequence
    numbers by the number of packets per stream and RTP timestamps by the timestamp
    span (+ 160), so the copies join into continuous streams (with sequence and
    timestamp wrap-arounds). ``calls`` parallel calls are made by shifting the UDP ports
    by 2 per call and changing the SSRCs. Only Ethernet/IPv4/UDP frames are used; UDP
    checksums are zeroed (RFC 768: 0 = not computed).
    """
    frames = []
    with open(sample, "rb") as fh:
        for ts, buf in dpkt.pcap.Reader(fh):
            eth = dpkt.ethernet.Ethernet(buf)
            ip = eth.data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.udp.UDP) and ip.hl == 5:
                frames.append((int(Decimal(ts) * 10**9), bytearray(buf)))
    if not frames:
        raise SystemExit(f"{sample}: no Ethernet/IPv4/UDP frames")
    t0 = frames[0][0]
    span_ns = frames[-1][0] - t0 + 20_000_000
    # per-SSRC sequence and timestamp advance per copy
    adv: dict[int, tuple[int, int]] = {}
    first: dict[int, tuple[int, int]] = {}
    last: dict[int, tuple[int, int]] = {}
    for _, b in frames:
        p = bytes(b[42:])
        if len(p) >= 12 and p[0] >> 6 == 2 and not 200 <= p[1] <= 204:
            ssrc, seq, tsr = struct.unpack("!I", p[8:12])[0], struct.unpack("!H", p[2:4])[0], struct.unpack("!I", p[4:8])[0]
            first.setdefault(ssrc, (seq, tsr))
            last[ssrc] = (seq, tsr)
    for ssrc in first:
        adv[ssrc] = ((last[ssrc][0] - first[ssrc][0]) % 65536 + 1, (last[ssrc][1] - first[ssrc][1]) % 2**32 + 160)
    per_copy = len(frames) * calls
    copies = -(-packets // per_copy)
    written = 0
    with open(out, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1))  # pcap, ns resolution
        pack = struct.Struct("<IIII").pack
        for c in range(copies):
            for t, b in frames:
                p = b[42:]
                is_rtp = len(p) >= 12 and p[0] >> 6 == 2 and not 200 <= p[1] <= 204
                if is_rtp:
                    ssrc = struct.unpack_from("!I", p, 8)[0]
                    dseq, dts = adv[ssrc]
                    seq = (struct.unpack_from("!H", p, 2)[0] + c * dseq) % 65536
                    tsr = (struct.unpack_from("!I", p, 4)[0] + c * dts) % 2**32
                for k in range(calls):
                    q = bytearray(b)
                    sport, dport = struct.unpack_from("!HH", q, 34)
                    struct.pack_into("!HH", q, 34, sport + 2 * k, dport + 2 * k)
                    struct.pack_into("!H", q, 40, 0)
                    if is_rtp:
                        struct.pack_into("!HII", q, 44, seq, tsr, ssrc ^ (k << 24))
                    tt = t + c * span_ns + k * 1000
                    fh.write(pack(tt // 1_000_000_000, tt % 1_000_000_000, len(q), len(q)))
                    fh.write(q)
                    written += 1
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--short", action="store_true", help="smaller capture (2e5 packets) for CI")
    ap.add_argument("--packets", type=int, default=None, help="packets in the large capture (default 1.2e6)")
    ap.add_argument("--sample", type=Path, default=None, help="capture to replicate (default: a lossy one from data/voice)")
    ap.add_argument("--keep", type=Path, default=None, help="directory to keep the capture in (default: a temp dir)")
    args = ap.parse_args(argv)
    n = args.packets or (200_000 if args.short else 1_200_000)
    args.sample = args.sample or default_sample()
    tl = tools()
    tmp = Path(tempfile.mkdtemp(prefix="qoe-bench-")) if args.keep is None else args.keep
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        big = tmp / "big.pcap"
        half = tmp / "half.pcap"
        t = time.perf_counter()
        n_big = build_capture(args.sample, big, n)
        n_half = build_capture(args.sample, half, n // 2)
        print(f"built {big} ({n_big} packets, {big.stat().st_size / 2**20:.0f} MiB) and a half-size copy "
              f"({n_half} packets) in {time.perf_counter() - t:.1f} s from {args.sample.name}")
        half_t, half_cpu, half_m = measured([sys.executable, "-c", LIB_SNIPPET, str(half)], tmp / "half.lib.txt")
        rows = run_tools("8 streams", big, tmp, tl, 8, n_big)
        lib_at = next(i for i, r in enumerate(rows) if r[3] == "scan_capture (process)")
        rows.insert(lib_at + 1, ("8 streams", 8, n_half, "scan_capture, half size", half_t, half_cpu, half_m,
                        float("nan"), float("nan"), ""))
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
    print()
    print_table(rows)
    print(f"memory flat in the streams' length: half-size capture {half_m:.1f} MiB, full size {next(r[6] for r in rows if r[3] == 'scan_capture (process)'):.1f} MiB")
    return 1 if failed(rows) else 0


if __name__ == "__main__":
    sys.exit(main())
