"""Decrypted HTTP/2 page loads, end to end, against tshark's decrypted HTTP/2 statistics.

The capture: Chromium's HTTP/2 page load of data/web/browser/captures/h2-idle.pcap (TLS 1.3,
10 connections to 3 hosts, 41 objects; its key log beside it) repeated N times one after the
other, each copy from its own client address (10.x.y.z, checksums recomputed), so that every
copy is a page of its own and the one key log opens all of them (the same ClientHello randoms).
Default N = 200 (33 MB), ``--short``: 20. Each in a fresh subprocess (peak RSS per run):

- ``qoe.web.iter_page_loads(path, options=WebOptions(keylog=K))``: TCP reassembly, TLS 1.3
  decryption, HTTP/2 (hyperframe, hpack), DNS, pages, PLT, G.1030 per page; and the same with
  ``read_ahead=True`` (the connections split between two processes, each reassembling,
  decrypting and parsing its share, the child reading the file, the pages made here:
  ``qoe.web._split``; its CPU time is both processes');
- ``qoe.web.http.connection_results(path, keylog=K)``: the same without the pages;
- the pages again with a key log holding the TLS 1.3 secrets of :data:`OTHER_SESSIONS`
  connections not in the capture besides its own (a browser's ``SSLKEYLOGFILE`` kept for days):
  the time should not grow with them (each Chromium page holds six connections opened ahead
  and abandoned, with a GREASE ECH extension, whose keys are in no key log); and once (not
  repeated) with a key log of those other sessions only: another client's, which opens none
  of these connections, each of the four a page uses (GREASE ECH, its Finished sent) then
  searched in full for an Encrypted Client Hello entry (``qoe.web.decrypt``: each entry's
  cipher made once, kept for the next search);
- ``tshark -r F -o tls.keylog_file:K -o tcp.reassemble_out_of_order:TRUE -q -z http2,tree``
  (TLS decryption and HTTP/2 dissection; the option as DESIGN.md's traps say).

It prints wall-clock and CPU seconds, the ratio to tshark (target: parity), the ratio of each
repeat's split run to the tshark run made right after it (paired: the drift of a shared machine
over a minute cancels; their median is the figure to quote) and compares the number of HTTP/2
HEADERS frames tshark counts with qoe's (a request and a response each).

The floor rows show how close parity can get with the libraries the project mandates
(measured in a subprocess of their own, CPU seconds of the part named only):

- ``hpack alone``: ``hpack.Decoder.decode(block, raw=True)`` on every header block of the
  capture, in the order qoe fed them, one fresh decoder per connection direction as qoe
  keeps them (the blocks are collected first by recording what qoe's run gave hpack), with
  hpack's Huffman decoder memoized, its per-field debug calls silenced (DEBUG being off) and
  its decoded fields returned without a copy as ``qoe.web._h2`` leaves them (the memo emptied
  first), and
  without the memo (hpack as installed); with the share of Huffman-coded bytes that repeat a
  string met before, in this capture and in one copy (what the memo can save on one real load);
- ``reading alone``: ``qoe.capture.tcp_segment_rows`` over the file (pcap read, headers
  to rows), the least any pass over the packets costs;
- ``hyperframe alone``: ``Frame.parse_frame_header`` and ``parse_body`` on every frame of the
  plaintext streams qoe gave its HTTP/2 parser (recorded from its run);
- ``AES-GCM alone``: cryptography's ``AESGCM.decrypt`` once per record qoe decrypted, of the
  same lengths;
- their sums: what is left for TCP reassembly, TLS record handling, HTTP/2 bookkeeping and the
  transactions if qoe is to reach tshark's time.
Usage::

    python benchmarks/web_h2.py [--short] [--copies N] [--repeat R] [--keep FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from _child import child_json, page_run, print_runs  # noqa: E402 - benchmarks/_child.py
SOURCE = os.path.join(ROOT, "data", "web", "browser", "captures", "h2-idle.pcap")
KEYLOG = SOURCE[:-5] + ".keylog"
#: Connections not in the capture whose secrets the big key log holds besides the capture's.
OTHER_SESSIONS = 5000
SERVERS = {"198.51.100.2", "198.51.100.3", "198.51.100.4"}  # data/web/browser/README.md

CHILD = page_run("""
if what in ("pages", "ahead"):  # ahead: read, reassembled and decrypted in a child process
    for p in iter_page_loads(path, options=WebOptions(keylog=keylog, read_ahead=what == "ahead")):
        pages += 1
        tx += p.objects
else:
    for r in connection_results(path, keylog=keylog):
        tx += len(r.transactions)
""", imports="from qoe.web.http import connection_results")

FLOOR = r"""
import json, os, sys, time, warnings
import hpack
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hyperframe.frame import Frame
from qoe.capture import tcp_segment_rows
from qoe.web import _h2, _tlsdecrypt
from qoe.web.http import connection_results
path, keylog = sys.argv[1:3]
blocks = []  # (the decoder qoe used, the block it was given), in the order qoe gave them
streams = {}  # (the HTTP/2 parser, direction) -> the plaintext qoe gave it
records = []  # the length of each record qoe decrypted (TLS 1.3 AES-128-GCM here)
_decode, _data, _open = hpack.Decoder.decode, _h2.H2Sink.data, _tlsdecrypt.RecordCipher.open
def _record(self, data, raw=False):
    blocks.append((self, bytes(data)))
    return _decode(self, data, raw=raw)
def _plain(self, direction, ts, offset, payload):
    streams.setdefault((id(self), direction), bytearray()).extend(payload)
    return _data(self, direction, ts, offset, payload)
def _sealed(self, ctype, version, body):
    records.append(len(body))
    return _open(self, ctype, version, body)
# recording only: the measurements below call the libraries unchanged
hpack.Decoder.decode, _h2.H2Sink.data, _tlsdecrypt.RecordCipher.open = _record, _plain, _sealed
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for _ in connection_results(path, keylog=keylog):
        pass
hpack.Decoder.decode, _h2.H2Sink.data, _tlsdecrypt.RecordCipher.open = _decode, _data, _open
# hyperframe alone: every frame of every plaintext stream, header and body, as qoe parses them
views = [memoryview(bytes(b[24:] if b[:24] == _h2.PREFACE else b)) for b in streams.values()]
frames = 0
c = time.process_time()
for v in views:
    i, n = 0, len(v)
    while n - i >= 9:
        length = v[i] << 16 | v[i + 1] << 8 | v[i + 2]
        if n - i < 9 + length:
            break
        f, _ = Frame.parse_frame_header(v[i:i + 9])
        f.parse_body(v[i + 9:i + 9 + length])
        i += 9 + length
        frames += 1
hf = time.process_time() - c
# the AEAD alone: one AES-GCM decryption per record, of the records' lengths
key, nonce, aad = AESGCM(os.urandom(16)), os.urandom(12), bytes(5)
sealed = {n: key.encrypt(nonce, bytes(n - 16), aad) for n in set(records) if n >= 16}
c = time.process_time()
for n in records:
    if n >= 16:
        key.decrypt(nonce, sealed[n], aad)
ae = time.process_time() - c
def decode_all():
    fresh = {}
    c = time.process_time()
    for owner, block in blocks:
        d = fresh.get(id(owner))
        if d is None:
            d = fresh[id(owner)] = hpack.Decoder()
            d.max_header_list_size = 1 << 20  # as qoe.web._h2 sets it
        d.decode(block, raw=True)
    return time.process_time() - c, len(fresh)
memo = hpack.hpack.decode_huffman  # as qoe.web._h2 leaves it: memoized
memo.cache_clear()
hp, decoders = decode_all()
hpack.hpack.decode_huffman = memo.__wrapped__  # hpack's own, every string decoded
hp_raw, _ = decode_all()
def met_before(p):  # the share of Huffman-coded bytes that are a string met before in capture p
    seen, n = set(), [0, 0]
    def count(s):
        n[0] += len(s)
        n[1] += len(s) if bytes(s) in seen else 0
        seen.add(bytes(s))
        return memo.__wrapped__(s)
    hpack.hpack.decode_huffman = count
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in connection_results(p, keylog=keylog):
            pass
    return n[1] / max(1, n[0])
again, again_one = met_before(path), met_before(sys.argv[3])
hpack.hpack.decode_huffman = memo
c = time.process_time()
n = 0
for _ in tcp_segment_rows(path):
    n += 1
rd = time.process_time() - c
print(json.dumps({"hpack_cpu": hp, "hpack_raw_cpu": hp_raw, "again": again, "again_one": again_one, "blocks": len(blocks), "decoders": decoders, "read_cpu": rd, "segments": n,
                  "frames_cpu": hf, "frames": frames, "aead_cpu": ae, "records": len(records)}))
"""


def write_capture(out: str, copies: int) -> int:
    """``copies`` copies of :data:`SOURCE`, one after the other, each from its own client address."""
    import socket

    import dpkt

    with open(SOURCE, "rb") as f:
        packets = list(dpkt.pcap.Reader(f))
    span = packets[-1][0] - packets[0][0] + 1.0
    n = 0
    with open(out, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB, nano=False)
        for i in range(copies):
            client = socket.inet_aton(f"10.{i // 250}.{i % 250 + 1}.2")
            for ts, raw in packets:
                eth = dpkt.ethernet.Ethernet(raw)
                ip = eth.data
                if not isinstance(ip, dpkt.ip.IP):
                    continue
                if socket.inet_ntoa(ip.src) not in SERVERS:
                    ip.src = client
                if socket.inet_ntoa(ip.dst) not in SERVERS:
                    ip.dst = client
                ip.sum = 0
                if isinstance(ip.data, (dpkt.tcp.TCP, dpkt.udp.UDP)):
                    ip.data.sum = 0  # recomputed (RFC 9293 §3.1 pseudo-header) when packed
                w.writepkt(bytes(eth), ts=ts + i * span)
                n += 1
    return n


def _qoe(path: str, what: str, keylog: str = KEYLOG) -> dict:
    return child_json(CHILD, path, keylog, what)


def write_big_keylog(out: str, others: int, own: bool = True) -> None:
    """:data:`KEYLOG` (``own``) and the TLS 1.3 secrets of ``others`` connections not in the
    capture (random client randoms and secrets): an ``SSLKEYLOGFILE`` that a browser kept
    writing for days; without ``own``, another client's, none of the capture's connections in it."""
    rng = random.Random(2811)
    with open(KEYLOG) as f, open(out, "w") as g:
        if own:
            g.write(f.read())
        for _ in range(others):
            cr = rng.randbytes(32).hex()
            for label in ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET",
                          "CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0"):
                g.write(f"{label} {cr} {rng.randbytes(32).hex()}\n")


def _floor(path: str) -> dict:
    return child_json(FLOOR, path, KEYLOG, SOURCE)


def _tshark(path: str) -> dict | None:
    if shutil.which("tshark") is None:
        return None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(["tshark", "-r", path, "-o", f"tls.keylog_file:{KEYLOG}", "-o",
                          "tcp.reassemble_out_of_order:TRUE", "-q", "-z", "http2,tree"],
                         check=True, capture_output=True, text=True)
    dt = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    m = re.search(r"^\s+HEADERS\s+(\d+)", out.stdout, re.M)
    return {"s": dt, "cpu": cpu, "headers": int(m.group(1)) if m else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="20 copies instead of 200")
    ap.add_argument("--copies", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=1, help="runs of each measurement; the least CPU is shown")
    ap.add_argument("--keep", default=None, help="write the capture here and keep it")
    args = ap.parse_args(argv)
    if not os.path.exists(SOURCE):
        print(f"{SOURCE} is missing: no HTTP/2 benchmark")
        return 0
    n = args.copies or (20 if args.short else 200)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or os.path.join(tmp, "h2.pcap")
        packets = write_capture(path, n)
        size_mb = os.path.getsize(path) / 1e6
        print(f"HTTP/2 capture: {n} copies of {os.path.basename(SOURCE)}, {packets} packets, {size_mb:.1f} MB")
        big_keylog = os.path.join(tmp, "big.keylog")
        write_big_keylog(big_keylog, OTHER_SESSIONS)
        foreign_keylog = os.path.join(tmp, "foreign.keylog")
        write_big_keylog(foreign_keylog, OTHER_SESSIONS, own=False)
        runs: dict[str, list] = {"pages": [], "ahead": [], "conns": [], "ts": [], "bigkeys": []}
        floors = []
        for _ in range(max(1, args.repeat)):
            runs["pages"].append(_qoe(path, "pages"))
            runs["ahead"].append(_qoe(path, "ahead"))
            runs["conns"].append(_qoe(path, "conns"))
            runs["ts"].append(_tshark(path))
            runs["bigkeys"].append(_qoe(path, "pages", big_keylog))
            floors.append(_floor(path))
        foreign = _qoe(path, "pages", foreign_keylog)  # (once: every ECH connection searched, seconds)
        best = {k: min((r for r in v if r is not None), key=lambda r: r["cpu"], default=None) for k, v in runs.items()}
        floor = {"hpack": min(r["hpack_cpu"] for r in floors), "hpack_raw": min(r["hpack_raw_cpu"] for r in floors),
                 "read": min(r["read_cpu"] for r in floors),
                 "frames": min(r["frames_cpu"] for r in floors), "aead": min(r["aead_cpu"] for r in floors),
                 "blocks": floors[0]["blocks"], "n_frames": floors[0]["frames"], "records": floors[0]["records"]}
        libs = floor["hpack"] + floor["frames"] + floor["aead"] + floor["read"]
        ts = best["ts"]
        print_runs([("qoe iter_page_loads(keylog=) [pages]", best["pages"]),
                    ("  same, read_ahead (2 processes; CPU: both)", best["ahead"]),
                    ("qoe http.connection_results(keylog=)", best["conns"]),
                    (f"  pages, key log + {OTHER_SESSIONS} other sessions", best["bigkeys"]),
                    (f"  pages, {OTHER_SESSIONS} other sessions only", foreign)],
                   ts, "tshark -o tls.keylog_file -q -z http2,tree", size_mb, best["conns"]["tx"])
        for label, cpu in ((f"floor: hpack alone ({floor['blocks']} blocks)", floor["hpack"]),
                           ("  hpack alone, Huffman strings not memoized", floor["hpack_raw"]),
                           (f"floor: hyperframe alone ({floor['n_frames']} frames)", floor["frames"]),
                           (f"floor: AES-GCM alone ({floor['records']} records)", floor["aead"]),
                           ("floor: reading alone (tcp_segment_rows)", floor["read"]),
                           ("floor: hpack + reading", floor["hpack"] + floor["read"]),
                           ("floor: the four (mandated libraries + reading)", libs)):
            ratio = f"{ts['cpu'] / cpu:9.2f}x" if ts else f"{'':>10s}"
            print(f"{label:46s} {'':>7s} {cpu:7.2f} {'':>8s} {size_mb / cpu:7.1f} {ratio}")
        if ts:
            left = ts["cpu"] - floor["hpack"] - floor["read"]
            spent = best["conns"]["cpu"] - floor["hpack"] - floor["read"]
            print(f"left for TCP, TLS, HTTP/2 framing and transactions at parity: {left:.2f} CPU s "
                  f"(qoe spends {spent:.2f}); floor ratios are CPU ones")
            print(f"the mandated libraries' own work and reading take {libs:.2f} CPU s of tshark's {ts['cpu']:.2f}: "
                  f"parity in one process {'is out of reach' if libs >= ts['cpu'] else 'leaves ' + format(ts['cpu'] - libs, '.2f') + ' s'}"
                  f" for TCP reassembly, TLS records, frame and stream bookkeeping and the transactions")
            print(f"Huffman-coded bytes that repeat a string met before: {floors[0]['again']:.1%} in this capture "
                  f"(its copies are alike), {floors[0]['again_one']:.1%} in one copy (one real page load): the "
                  f"memo in qoe.web._h2 saves less on captures of different pages")
            paired = sorted(t["s"] / a["s"] for a, t in zip(runs["ahead"], runs["ts"]) if t is not None)
            print(f"read_ahead against tshark run beside it (wall, each repeat; the machine's drift cancels): "
                  f"{', '.join(f'{x:.2f}x' for x in paired)}; median {paired[len(paired) // 2]:.2f}x")
            agree = "equal" if ts["headers"] == 2 * best["conns"]["tx"] else "DIFFERENT"
            print(f"tshark http2,tree: {ts['headers']} HEADERS frames; qoe: {best['conns']['tx']} transactions "
                  f"({agree}: a request and a response each), {best['pages']['pages']} pages")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
