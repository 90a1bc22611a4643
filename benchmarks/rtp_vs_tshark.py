"""Speed, memory and agreement of ``qoe streams`` against ``tshark -q -z rtp,streams``.

Builds a large capture by replicating a real sample from ``data/voice/captures`` (every
copy continues the streams: times, sequence numbers and RTP timestamps are shifted so
that the copies join into long streams, several calls run side by side on shifted
ports), writes it to a temporary directory, then in the same run times

* the library call ``qoe.rtp.scan_capture(path, keep_packets=False)`` and the CLI
  ``qoe streams CAPTURE --format csv``, each in a fresh process, and
* ``tshark -r CAPTURE -q --enable-heuristic rtp_udp -z rtp,streams``,

measuring wall time and peak resident memory (``resource.getrusage(RUSAGE_CHILDREN)``
after each child exits), checks that every stream's lost, max delta, max and mean
jitter agree to 0.01 ms, and prints a table. Memory flatness is checked by running the
library on a capture half the size as well.

Usage::

    python benchmarks/rtp_vs_tshark.py            # >= 1e6 packets
    python benchmarks/rtp_vs_tshark.py --short    # 2e5 packets (CI)
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import dpkt

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
# tshark prints milliseconds with 3 decimals; the issue asks for agreement to 0.01 ms.
TOLERANCE_MS = 0.01


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


def run_measured(cmd: list[str], **kw) -> tuple[float, float, str]:
    """Run ``cmd``; return (seconds, peak RSS of that child in MiB, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, check=True, **kw)
    dt = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of RUSAGE_CHILDREN is the max over all waited-for children: run the
    # smallest first or read it from the child itself. Each child here reports its own.
    peak = _child_peak(res.stdout) or max(after, before) / 1024.0
    return dt, peak, res.stdout


def _child_peak(text: str) -> float | None:
    m = re.search(r"^PEAK_RSS_KB (\d+)$", text, re.M)
    return int(m.group(1)) / 1024.0 if m else None


LIB_SNIPPET = """
import resource, sys, time
t0 = time.perf_counter()
from qoe.rtp import scan_capture
t1 = time.perf_counter()
scan = scan_capture(sys.argv[1], keep_packets=False)
t2 = time.perf_counter()
print("IMPORT_SECONDS", t1 - t0)
print("SCAN_SECONDS", t2 - t1)
for s in scan.streams:
    st = s.stats
    print("STREAM", s.key.src, s.key.sport, s.key.dst, s.key.dport, s.key.ssrc, st.packets, st.lost,
          repr(st.max_delta_ms), repr(st.max_jitter_ms), repr(st.mean_jitter_ms))
print("PEAK_RSS_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

TSHARK_ROW = re.compile(
    r"^\s*-?[\d.]+\s+-?[\d.]+\s+(\S+)\s+(\d+)\s+(\S+)\s+(\d+)\s+0x([0-9A-Fa-f]+)\s+.+?\s+(\d+)\s+(-?\d+) \([-\d.]+%\)"
    r"\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)"
)


def parse_tshark(text: str) -> dict[tuple, dict[str, float]]:
    out = {}
    for line in text.splitlines():
        m = TSHARK_ROW.match(line)
        if m:
            g = m.groups()
            out[(g[0], int(g[1]), g[2], int(g[3]), int(g[4], 16))] = {
                "packets": int(g[5]), "lost": int(g[6]), "max_delta": float(g[9]),
                "mean_jitter": float(g[11]), "max_jitter": float(g[12]),
            }
    return out


def parse_lib(text: str) -> dict[tuple, dict[str, float]]:
    out = {}
    for line in text.splitlines():
        if line.startswith("STREAM "):
            f = line.split()[1:]
            out[(f[0], int(f[1]), f[2], int(f[3]), int(f[4]))] = {
                "packets": int(f[5]), "lost": int(f[6]), "max_delta": float(f[7]),
                "max_jitter": float(f[8]), "mean_jitter": float(f[9]),
            }
    return out


def compare(ts: dict, lib: dict) -> tuple[int, list[str]]:
    problems = []
    for key, t in ts.items():
        m = lib.get(key)
        if m is None:
            problems.append(f"{key}: not found by qoe")
            continue
        for f in ("packets", "lost"):
            if t[f] != m[f]:
                problems.append(f"{key}: {f} tshark {t[f]} qoe {m[f]}")
        for f in ("max_delta", "max_jitter", "mean_jitter"):
            if not abs(t[f] - m[f]) <= TOLERANCE_MS:
                problems.append(f"{key}: {f} tshark {t[f]} qoe {m[f]:.4f}")
    for key in lib.keys() - ts.keys():
        problems.append(f"{key}: found by qoe only")
    return len(ts), problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--short", action="store_true", help="smaller capture (2e5 packets) for CI")
    ap.add_argument("--packets", type=int, default=None, help="packets in the large capture (default 1.2e6)")
    ap.add_argument("--sample", type=Path, default=None, help="capture to replicate (default: a lossy one from data/voice)")
    ap.add_argument("--keep", type=Path, default=None, help="directory to keep the capture in (default: a temp dir)")
    args = ap.parse_args(argv)
    n = args.packets or (200_000 if args.short else 1_200_000)
    args.sample = args.sample or default_sample()
    tshark = shutil.which("tshark")
    qoe_cli = shutil.which("qoe") or str(Path(sys.executable).with_name("qoe"))
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
        rows = []
        env = dict(os.environ)
        lib_half_t, lib_half_m, _ = run_measured([sys.executable, "-c", LIB_SNIPPET, str(half)], env=env)
        rows.append(("qoe library (half size)", n_half, lib_half_t, lib_half_m))
        lib_t, lib_m, lib_out = run_measured([sys.executable, "-c", LIB_SNIPPET, str(big)], env=env)
        rows.append(("qoe library (process)", n_big, lib_t, lib_m))
        scan_t = float(re.search(r"^SCAN_SECONDS (\S+)$", lib_out, re.M).group(1))
        import_t = float(re.search(r"^IMPORT_SECONDS (\S+)$", lib_out, re.M).group(1))
        rows.append(("  of which scan_capture", n_big, scan_t, float("nan")))
        if Path(qoe_cli).exists():
            wrapper = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True); "
                       "print('PEAK_RSS_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
            cli_t, cli_m, _ = run_measured([sys.executable, "-c", wrapper, qoe_cli, "streams", str(big), "--format", "csv"])
            rows.append(("qoe streams (CLI)", n_big, cli_t, cli_m))
        if tshark:
            wrapper = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
                       "print(r.stdout); print('PEAK_RSS_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
            ts_t, ts_m, ts_out = run_measured(
                [sys.executable, "-c", wrapper, tshark, "-r", str(big), "-q", "--enable-heuristic", "rtp_udp", "-z", "rtp,streams"]
            )
            rows.append(("tshark -z rtp,streams", n_big, ts_t, ts_m))
        print()
        print(f"{'tool':<28} {'packets':>9} {'seconds':>8} {'packets/s':>11} {'peak RSS MiB':>13}")
        for name, npk, secs, mem in rows:
            print(f"{name:<28} {npk:>9} {secs:>8.2f} {npk / secs:>11.0f} {mem:>13.1f}".replace("nan", "  -"))
        if tshark:
            print(f"\nspeed-up over tshark: library process {ts_t / lib_t:.1f}x, scan_capture alone {ts_t / scan_t:.1f}x"
                  + (f", CLI {ts_t / cli_t:.1f}x" if Path(qoe_cli).exists() else "")
                  + f" (importing qoe.voice took {import_t:.2f} s of the library process)")
            count, problems = compare(parse_tshark(ts_out), parse_lib(lib_out))
            print(f"agreement: {count} streams compared (packets, lost exact; max delta, max and mean "
                  f"jitter within {TOLERANCE_MS} ms): {'all agree' if not problems else f'{len(problems)} differences'}")
            for p in problems[:20]:
                print("  ", p)
            print(f"memory: half-size capture {lib_half_m:.1f} MiB, full size {lib_m:.1f} MiB")
            return 1 if problems else 0
        print("tshark not installed: no comparison")
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
