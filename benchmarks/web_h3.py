"""Decrypted HTTP/3 page loads over QUIC, end to end, against tshark's decrypted HTTP/3.

The capture: N page loads of 41 objects (200 kB) over HTTP/3, each one QUIC v1 connection
from its own client address, made in memory with aioquic's client and server
(``benchmarks/_h3_capture.py``: a simulated 20 ms round trip, no network), with the client's
key log. Unlike copies of a browser capture (``web_h2.py``'s way), every connection has its
own connection ids and keys: tshark tracks QUIC connections by their ids, and decrypts only
the first of copies that share them. Default N = 200 (about 45 MB), ``--short``: 20. Each in
a fresh subprocess (peak RSS per run):

- ``qoe.web.iter_page_loads(path, options=WebOptions(keylog=K))``: the QUIC connections (header
  protection, packet decryption, frames, streams), HTTP/3 with QPACK (``pylsqpack``), RTT and
  loss recovery (RFC 9002), pages, PLT and G.1030 per page; and the same with
  ``read_ahead=True`` (the QUIC connections read half in a child process; CPU: both);
- ``qoe.web.quic.quic_connections(path, keylog=K)``: the same without the pages, in one
  process and with ``read_ahead=True``;
- ``tshark -r F -o tls.keylog_file:K -q -z io,stat,0,COUNT(http3.frame_type)http3.frame_type``:
  every QUIC packet decrypted and its HTTP/3 frames dissected (tshark 4.0 has no QPACK: the
  header fields are not decoded, so tshark does less than qoe here), nothing printed per
  packet.

It prints wall-clock and CPU seconds, transactions per second, MB/s, the ratio to tshark and
peak RSS, and compares the HEADERS frames tshark finds (``-Y http3 -T fields -e
http3.frame_type``, not timed) with qoe's transactions (a request and a response each). Usage::

    python benchmarks/web_h3.py [--short] [--pages N] [--repeat R] [--keep FILE]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _child import child_json, page_run, print_runs  # noqa: E402 - benchmarks/_child.py
from _h3_capture import write_capture  # noqa: E402 - benchmarks/_h3_capture.py

CHILD = page_run("""
if what in ("pages", "ahead"):
    for p in iter_page_loads(path, options=WebOptions(keylog=keylog, read_ahead=what == "ahead")):
        pages += 1
        tx += p.objects
else:
    for q in quic_connections(path, keylog=keylog, read_ahead=what == "conns-ahead"):
        tx += len(q.transactions)
""", imports="from qoe.web.quic import quic_connections")


def _qoe(path: str, keylog: str, what: str) -> dict:
    return child_json(CHILD, path, keylog, what)


def _tshark(path: str, keylog: str) -> dict | None:
    if shutil.which("tshark") is None:
        return None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(["tshark", "-n", "-r", path, "-o", f"tls.keylog_file:{keylog}", "-q", "-z",
                          "io,stat,0,COUNT(http3.frame_type)http3.frame_type"],
                         check=True, capture_output=True, text=True)
    dt = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    m = re.search(r"<>\s*[\d.]+\s*\|\s*(\d+)", out.stdout)
    return {"s": dt, "cpu": cpu, "frames": int(m.group(1)) if m else None}


def _headers(path: str, keylog: str) -> int | None:
    """HTTP/3 HEADERS frames (type 0x01, RFC 9114 §7.2.2) in tshark's decrypted view."""
    if shutil.which("tshark") is None:
        return None
    out = subprocess.run(["tshark", "-n", "-r", path, "-o", f"tls.keylog_file:{keylog}", "-Y", "http3", "-T",
                          "fields", "-e", "http3.frame_type", "-E", "occurrence=a"],
                         check=True, capture_output=True, text=True).stdout
    return sum(1 for line in out.split() for v in line.split(",") if v == "1")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="20 page loads instead of 200")
    ap.add_argument("--pages", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=1, help="runs of each measurement; the least CPU is shown")
    ap.add_argument("--keep", default=None, help="write the capture here (and its key log beside it) and keep them")
    args = ap.parse_args(argv)
    n = args.pages or (20 if args.short else 200)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or os.path.join(tmp, "h3.pcap")
        keylog = os.path.splitext(path)[0] + ".keylog"
        t = time.perf_counter()
        packets = write_capture(path, keylog, n)
        size_mb = os.path.getsize(path) / 1e6
        print(f"HTTP/3 capture: {n} page loads made with aioquic in {time.perf_counter() - t:.1f} s, {packets} "
              f"datagrams, {size_mb:.1f} MB")
        runs: dict[str, list] = {"pages": [], "ahead": [], "conns": [], "conns-ahead": [], "ts": []}
        for _ in range(max(1, args.repeat)):
            for what in ("pages", "ahead", "conns", "conns-ahead"):
                runs[what].append(_qoe(path, keylog, what))
            runs["ts"].append(_tshark(path, keylog))
        best = {k: min((r for r in v if r is not None), key=lambda r: r["cpu"], default=None) for k, v in runs.items()}
        ts = best["ts"]
        print_runs([("qoe iter_page_loads(keylog=) [pages]", best["pages"]),
                    ("  same, reading ahead (a process; CPU: both)", best["ahead"]),
                    ("qoe quic.quic_connections(keylog=)", best["conns"]),
                    ("  same, read_ahead=True (CPU: both)", best["conns-ahead"])],
                   ts, "tshark -o tls.keylog_file -q -z io,stat (http3)", size_mb, best["conns"]["tx"])
        if ts:
            headers = _headers(path, keylog)
            agree = "equal" if headers == 2 * best["conns"]["tx"] else "DIFFERENT"
            print(f"tshark: {headers} HTTP/3 HEADERS frames; qoe: {best['conns']['tx']} transactions ({agree}: a "
                  f"request and a response each), {best['pages']['pages']} pages")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
