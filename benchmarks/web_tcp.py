"""Speed and memory of qoe.web.tcp on a large capture of many short connections, against tshark.

Writes a pcap (Ethernet/IPv4, µs) of N page loads (default 10^4; ``--short``: 10^3), each
four HTTP/1.0 connections from one client (the paper's page: 15 kB HTML, 5.8 kB CSS, two
30 kB JPEGs; handshake, request, response in 1448-byte segments with an ACK every second
segment, FIN both ways), page loads 50 ms apart, every connection with its own client port and
ISNs. The segments follow RFC 9293 (sequence numbers, SYN and FIN taking one each); in every
second page load the 5th segment of the first JPEG is lost before the capture point and
retransmitted one RTT (40 ms) after three duplicate ACKs. Then, each in a fresh subprocess
(peak RSS per run), on the whole capture and on its first half:

- ``read_packets(path, protocols=("tcp",))`` alone (the floor: decoding),
- ``connections(path)`` (no sinks) and ``connections(path, sinks=...)`` with a sink that only
  counts bytes,
- ``sum(1 for _ in iter_connections(path))`` (streaming: memory flat in the file size),
- ``tshark -r FILE -q -z conv,tcp`` (TCP dissection with its sequence analysis, the yardstick),

and prints packets per second, the ratio to tshark, and peak RSS. Timings on a shared
machine are noisy: compare the ratios of one run. Usage::

    python benchmarks/web_tcp.py [--short] [--pages N] [--keep FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OBJECTS = (15_000, 5_800, 30_000, 30_000)  # the paper's page (issue 10)
MSS = 1448


def _frame(src: bytes, dst: bytes, sport: int, dport: int, seq: int, ack: int, flags: int, payload: bytes) -> bytes:
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq % 2**32, ack % 2**32, 5 << 4, flags, 65535, 0, 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, src, dst)
    return b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02\x08\x00" + ip + tcp


def request_bytes(k: int) -> bytes:
    """The request for object ``k`` of a page (HTTP/1.0, RFC 1945 §5)."""
    return b"GET /obj%d HTTP/1.0\r\nHost: 198.51.100.2\r\n\r\n" % k


def response_bytes(size: int) -> bytes:
    """The response carrying an object of ``size`` bytes (RFC 1945 §6, Content-Length §10.4)."""
    return b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % size + bytes(size)


def _connection(
    t: int, cli: bytes, port: int, size: int, isn_c: int, isn_s: int, k: int, lose: bool
) -> list[tuple[int, bytes]]:
    """One HTTP/1.0 fetch of ``size`` bytes (its 5th segment lost if ``lose``): (ts_ns, frame) list."""
    srv = bytes([198, 51, 100, 2])
    out = []
    syn, ack_, psh, fin = 0x02, 0x10, 0x08, 0x01
    c = lambda dt, seq, ack, fl, data=b"": out.append((t + dt, _frame(cli, srv, port, 80, seq, ack, fl, data)))  # noqa: E731
    s = lambda dt, seq, ack, fl, data=b"": out.append((t + dt, _frame(srv, cli, 80, port, seq, ack, fl, data)))  # noqa: E731
    req = request_bytes(k)
    ms = 1_000_000
    c(0, isn_c, 0, syn)
    s(20 * ms, isn_s, isn_c + 1, syn | ack_)  # a 40 ms RTT, the capture point in the middle
    c(40 * ms, isn_c + 1, isn_s + 1, ack_)
    c(40 * ms + 50_000, isn_c + 1, isn_s + 1, ack_ | psh, req)
    cs = isn_c + 1 + len(req)
    body = response_bytes(size)
    dt = 60 * ms
    n = 0
    lost = None
    for off in range(0, len(body), MSS):
        chunk = body[off : off + MSS]
        seq = isn_s + 1 + off
        n += 1
        if lose and n == 5:
            lost = (seq, chunk)  # lost before the capture point
        else:
            s(dt, seq, cs, ack_, chunk)
        if lost is not None and lost[0] != seq:
            for _ in range(3):  # RFC 5681 §3.2: three duplicate ACKs, then the retransmission
                dt += 100_000
                c(dt, cs, lost[0], ack_)
            s(dt + 40 * ms, lost[0], cs, ack_, lost[1])
            dt += 40 * ms
            lost = None
        if n % 2 == 0:
            c(dt + 20 * ms, cs, seq + len(chunk), ack_)
        dt += 1_200_000  # 1448 bytes at about 10 Mbit/s
    end = isn_s + 1 + len(body)
    s(dt, end, cs, ack_ | fin)
    c(dt + 20 * ms, cs, end + 1, ack_ | fin)
    s(dt + 40 * ms, end + 1, cs + 1, ack_)
    return out


def write_capture(path: str, pages: int) -> int:
    """The capture described in the module docstring; returns its number of packets."""
    t0 = 1_700_000_000_000_000_000
    n = 0
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for p in range(pages):
            cli = bytes([10, (p >> 8) & 0xFF, p & 0xFF, 2])
            frames = []
            for k, size in enumerate(OBJECTS):
                port = 10_000 + (p * 4 + k) % 50_000
                isn_c, isn_s = (p * 7919 + k * 104729) % 2**32, (p * 15485863 + k * 32452843) % 2**32
                frames += _connection(t0 + p * 50_000_000 + k * 100_000, cli, port, size, isn_c, isn_s, k,
                                      k == 2 and p % 2 == 0)
            frames.sort(key=lambda x: x[0])
            for ts, fr in frames:
                us = ts // 1000
                fh.write(struct.pack("<IIII", us // 1_000_000, us % 1_000_000, len(fr), len(fr)) + fr)
            n += len(frames)
    return n


CHILD = r"""
import json, resource, sys, time
from qoe.capture import read_packets
from qoe.web.tcp import connections, iter_connections
path, what = sys.argv[1], sys.argv[2]
class Count:
    __slots__ = ("n",)
    def __init__(self): self.n = 0
    def data(self, d, ts, off, payload): self.n += len(payload)
    def gap(self, d, ts, off, length): pass
    def close(self, d, ts, how): pass
t = time.perf_counter()
if what == "read":
    k = sum(1 for _ in read_packets(path, protocols=("tcp",)))
elif what == "connections":
    k = len(connections(path))
elif what == "sinks":
    k = len(connections(path, sinks=lambda cid: Count()))
else:
    k = sum(1 for _ in iter_connections(path))
dt = time.perf_counter() - t
print(json.dumps({"s": dt, "n": k, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _child(path: str, what: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(ROOT, "src"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", CHILD, path, what], check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout)


def _tshark(path: str) -> dict | None:
    if shutil.which("tshark") is None:
        return None
    t = time.perf_counter()
    subprocess.run(["tshark", "-r", path, "-q", "-z", "conv,tcp"], check=True, capture_output=True)
    return {"s": time.perf_counter() - t}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="10^3 page loads instead of 10^4")
    ap.add_argument("--pages", type=int, default=None)
    ap.add_argument("--keep", default=None, help="write the capture here and keep it")
    args = ap.parse_args(argv)
    pages = args.pages or (1_000 if args.short else 10_000)
    with tempfile.TemporaryDirectory() as tmp:
        full = args.keep or os.path.join(tmp, "pages.pcap")
        half = os.path.join(tmp, "half.pcap")
        n_full = write_capture(full, pages)
        n_half = write_capture(half, pages // 2)
        print(f"{pages} page loads, {4 * pages} connections, {n_full} packets, "
              f"{os.path.getsize(full) / 1e6:.1f} MB (half: {n_half} packets)")
        print(f"{'run':<34}{'packets/s':>12}{'us/packet':>11}{'x tshark':>10}{'RSS MB':>9}{'RSS MB (half)':>15}")
        ts_full, ts_half = _tshark(full), _tshark(half)
        rows = [("read_packets (decode only)", "read"), ("connections, no sinks", "connections"),
                ("connections, counting sinks", "sinks"), ("iter_connections (streaming)", "iter")]
        for label, what in rows:
            r, h = _child(full, what), _child(half, what)
            ratio = f"{ts_full['s'] / r['s']:.2f}" if ts_full else "-"
            print(f"{label:<34}{n_full / r['s']:>12.0f}{r['s'] / n_full * 1e6:>11.2f}{ratio:>10}"
                  f"{r['rss_mb']:>9.0f}{h['rss_mb']:>15.0f}")
        if ts_full:
            print(f"{'tshark -q -z conv,tcp':<34}{n_full / ts_full['s']:>12.0f}{ts_full['s'] / n_full * 1e6:>11.2f}"
                  f"{1:>10.2f}{'-':>9}{'-':>15}")
            print(f"(tshark on the half capture: {ts_half['s']:.2f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
