"""``qoe streams`` against ``tshark -z rtp,streams`` on trunk-sized captures: many streams.

The 8-stream benchmark (``rtp_vs_tshark.py``) has few long streams; a SIP trunk capture
holds thousands of calls. This script builds, in a temporary directory and from the RTP
frames of a real capture in ``data/voice/captures`` (one G.711 call, both directions, with
loss bursts in one), three captures:

* ``concurrent``: ``--calls`` copies of the call running at once, each with its own
  client address (10.0.0.1, 10.0.0.2, ...) and SSRCs, starting at random times within
  one second, so that their packets interleave;
* ``sequential``: the same copies one after the other (each starts 20 ms after the
  previous one ended);
* ``short-streams``: ``--streams`` streams of 50 packets (the first 50 of the sample's
  first stream), all at once, each with its own address and SSRC: peak memory per
  live stream.

Calls differ by address rather than by UDP port because tshark hands some ports to
other dissectors (with ports 10000 + k, a few streams were decoded as EAPOL or
Vuze-DHT and left out of its RTP table). Frames are rewritten on their raw bytes with
NumPy (address, IPv4 header checksum, SSRC, capture time; the UDP checksum is zeroed,
which RFC 768 allows); sequence numbers, RTP timestamps and
arrival spacing are the sample's, so every copy has the sample's statistics. For each
capture, in the same run and each in a fresh process, it times

* ``qoe streams CAPTURE --format csv`` (the CLI, what a user runs: with two cores it reads
  the capture in a second thread), and the same with ``--no-read-ahead`` (one thread),
* the library call ``qoe.rtp.scan_capture(CAPTURE, keep_packets=False)``,
* reading alone, ``qoe.capture.read_udp_batches(CAPTURE, batch_size=None,
  chunk_size=qoe.rtp.CHUNK_BYTES)`` (as the scan reads) with nothing done with the
  batches (the floor under the scan), and
* ``tshark -r CAPTURE -q --enable-heuristic rtp_udp -z rtp,streams``,

measuring wall time and the child's peak resident memory (``ru_maxrss`` of
``RUSAGE_CHILDREN`` read by a wrapper process around each one), and checks that every
stream tshark lists has the same packets, lost and Problems and the same min/mean/max
delta and jitter to tshark's printed precision (3 decimals: within 0.0006 ms) in the
CLI's CSV, and that no stream is listed by one tool only.

Usage::

    python benchmarks/rtp_many_streams.py            # 2,000 calls; 20,000 short streams
    python benchmarks/rtp_many_streams.py --short    # 150 calls; 2,000 short streams (CI)

Each is run ``--repeat`` times (default 5) in rounds, one run of each tool per round; the
table shows the median times and the median of the rounds' ratios to tshark. Reading
ahead, the scan reads the capture one batch ahead in a second thread
(``qoe.capture.read_ahead``): its wall time gains from a second core, its CPU time grows.
Timings are taken on a shared machine: compare ratios measured in the same run.
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
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _rtp_bench import failed, print_table, run_tools, tools  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CAPTURES = ROOT / "data" / "voice" / "captures"
DEFAULT_SAMPLE = CAPTURES / "down-b8_client.pcap"
# Ethernet (14) + IPv4 without options (20) + UDP (8): where the UDP header and RTP start.
UDP_AT, RTP_AT = 34, 42
STREAM_PACKETS = 50


# ----------------------------------------------------------------------------- captures


def sample_frames(sample: Path) -> tuple[np.ndarray, np.ndarray]:
    """The sample's Ethernet/IPv4/UDP RTP frames of its most common length, and their times (ns)."""
    frames, times = [], []
    with open(sample, "rb") as fh:
        for ts, buf in dpkt.pcap.Reader(fh):
            eth = dpkt.ethernet.Ethernet(buf)
            ip = eth.data
            if not (isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.udp.UDP) and ip.hl == 5):
                continue
            p = buf[RTP_AT:]
            if len(p) >= 12 and p[0] >> 6 == 2 and not 200 <= p[1] <= 204:  # RTP, not RTCP (RFC 5761 §4)
                frames.append(buf)
                times.append(int(Decimal(ts) * 10**9))
    if not frames:
        raise SystemExit(f"{sample}: no Ethernet/IPv4/UDP RTP frames")
    lengths = np.array([len(f) for f in frames])
    common = np.bincount(lengths).argmax()
    keep = np.flatnonzero(lengths == common)
    arr = np.frombuffer(b"".join(frames[i] for i in keep), dtype=np.uint8).reshape(keep.size, common)
    return arr.copy(), np.asarray(times, dtype=np.int64)[keep]


def ipv4_checksum(headers: np.ndarray) -> np.ndarray:
    """RFC 791 §3.1 header checksum of 20-byte headers (rows) whose checksum field is zero:
    the ones' complement of the ones' complement sum of the 16-bit words."""
    words = headers.reshape(headers.shape[0], -1, 2).astype(np.int64)
    total = (words[:, :, 0] << 8 | words[:, :, 1]).sum(axis=1)
    while (total >> 16).any():
        total = (total & 0xFFFF) + (total >> 16)
    return (~total) & 0xFFFF


def write_copies(out: Path, frames: np.ndarray, times: np.ndarray, starts: np.ndarray, hosts: np.ndarray,
                 ssrc_xor: np.ndarray, *, chunk: int = 200_000) -> int:
    """Write ``len(starts)`` copies of ``frames`` into a nanosecond pcap, in time order.

    Copy ``k`` has its frames at ``times - times[0] + starts[k]``, the sample's client
    address (the source of its first frame) replaced by the IPv4 address ``hosts[k]``
    wherever it appears (the IPv4 header checksum recomputed, the UDP checksum zeroed:
    RFC 768 allows 0 for "not computed") and its SSRCs XORed with ``ssrc_xor[k]``.
    Returns the number of frames written.
    """
    n_f, flen = frames.shape
    t = (times - times[0])[None, :] + starts[:, None]  # (copies, frames)
    order = np.argsort(t, axis=None, kind="stable")
    t_flat = t.reshape(-1)
    addr = frames[:, 26:34].copy().view(">u4").astype(np.int64)  # (frames, 2): source, destination
    client = addr[0, 0]
    ssrc = frames[:, RTP_AT + 8:RTP_AT + 12].copy().view(">u4").astype(np.int64)[:, 0]
    with open(out, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1))  # pcap, ns resolution, Ethernet
        for a in range(0, order.size, chunk):
            idx = order[a:a + chunk]
            c, f = idx // n_f, idx % n_f
            tt = t_flat[idx]
            hdr = np.empty((idx.size, 4), dtype="<u4")
            hdr[:, 0], hdr[:, 1], hdr[:, 2], hdr[:, 3] = tt // 10**9, tt % 10**9, flen, flen
            body = frames[f]
            ad = np.where(addr[f] == client, hosts[c][:, None], addr[f])
            body[:, 26:34] = ad.astype(">u4").view(np.uint8).reshape(-1, 8)
            body[:, 24:26] = 0
            body[:, 24:26] = ipv4_checksum(body[:, 14:34]).astype(">u2").view(np.uint8).reshape(-1, 2)
            body[:, UDP_AT + 6:UDP_AT + 8] = 0
            body[:, RTP_AT + 8:RTP_AT + 12] = (ssrc[f] ^ ssrc_xor[c]).astype(">u4").view(np.uint8).reshape(-1, 4)
            rec = np.empty((idx.size, 16 + flen), dtype=np.uint8)
            rec[:, :16] = hdr.view(np.uint8)
            rec[:, 16:] = body
            fh.write(rec.tobytes())
    return int(order.size)


def build(kind: str, sample: Path, out: Path, count: int, seed: int = 1) -> tuple[int, int]:
    """Write the capture ``kind`` with ``count`` calls (or streams); return (packets, streams)."""
    frames, times = sample_frames(sample)
    rng = np.random.default_rng(seed)
    k = np.arange(count, dtype=np.int64)
    hosts = (10 << 24) + 1 + k  # 10.0.0.1, 10.0.0.2, ... (RFC 1918)
    ssrcs = frames[:, RTP_AT + 8:RTP_AT + 12].copy().view(">u4")[:, 0]
    if kind in ("concurrent", "sequential"):
        if kind == "concurrent":  # all start within a second: all live at once
            starts = np.sort(rng.integers(0, 10**9, count))
        else:  # each starts 20 ms after the previous one's last packet
            starts = k * (int(times.max() - times.min()) + 20_000_000)
        packets = write_copies(out, frames, times, starts, hosts, k << 16)
        return packets, count * len(np.unique(ssrcs))
    if kind == "short-streams":  # the first 50 packets of the sample's first stream
        first = np.flatnonzero(ssrcs == ssrcs[0])[:STREAM_PACKETS]
        starts = rng.integers(0, 20_000_000, count)  # within one packet interval: all live at once
        packets = write_copies(out, frames[first], times[first], starts, hosts, k << 8)
        return packets, count
    raise ValueError(kind)


# ----------------------------------------------------------------------------- running


def run_case(kind: str, count: int, sample: Path, tmp: Path, tl: dict[str, str | None], repeat: int) -> list[tuple]:
    cap = tmp / f"{kind}.pcap"
    t = time.perf_counter()
    packets, streams = build(kind, sample, cap, count)
    print(f"{kind}: {packets} packets, {streams} streams, {cap.stat().st_size / 2**20:.0f} MiB, "
          f"built in {time.perf_counter() - t:.1f} s", flush=True)
    rows = run_tools(kind, cap, tmp, tl, streams, packets, repeat)
    cap.unlink()  # the next capture's room
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--short", action="store_true", help="CI's short mode: 150 calls, 2,000 short streams")
    ap.add_argument("--calls", type=int, default=None, help="calls in the concurrent and sequential captures (2000)")
    ap.add_argument("--streams", type=int, default=None, help="streams of 50 packets in the short-streams capture (20000)")
    ap.add_argument("--sample", type=Path, default=DEFAULT_SAMPLE, help="capture whose RTP frames are copied")
    ap.add_argument("--only", nargs="*", default=None, choices=("concurrent", "sequential", "short-streams"))
    ap.add_argument("--keep", type=Path, default=None, help="keep the outputs in this directory")
    ap.add_argument("--repeat", type=int, default=None,
                    help="rounds of paired runs; the medians are shown (default 5, --short: 1)")
    args = ap.parse_args(argv)
    repeat = args.repeat or (1 if args.short else 5)
    calls = args.calls or (150 if args.short else 2000)
    n_short = args.streams or (2000 if args.short else 20000)
    tl = tools()
    tmp = Path(tempfile.mkdtemp(prefix="qoe-many-")) if args.keep is None else args.keep
    tmp.mkdir(parents=True, exist_ok=True)
    cases = [("concurrent", calls), ("sequential", calls), ("short-streams", n_short)]
    rows: list[tuple] = []
    try:
        for kind, count in cases:
            if args.only is None or kind in args.only:
                rows += run_case(kind, count, args.sample, tmp, tl, repeat)
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
    print()
    print_table(rows)
    return 1 if failed(rows) else 0


if __name__ == "__main__":
    sys.exit(main())
