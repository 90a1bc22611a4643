"""qoe.web.tcp against tshark's TCP analysis, capture by capture: late segments, handshake and ACK RTTs.

Captures: every ``*.pcap``/``*.pcapng`` given (files or folders), else those that
``tests/tcp_testbed.py`` makes through a real tbf bottleneck (needs root, ip, tc, tcpdump,
curl; about 15 s). For each, ``tshark -r FILE -T fields ...`` (the command is
``tcp_testbed.tshark_tcp``'s) and ``qoe.web.tcp.connections(FILE)``; the table gives

- *late*: frames tshark flags ``tcp.analysis.retransmission``/``fast_retransmission``/
  ``out_of_order``/``spurious_retransmission`` against qoe's retransmission events plus its
  out-of-order frames (= when the two sets are equal), and how each splits them;
- *init RTT*: connections whose ``handshake_rtt_ns`` equals tshark's ``tcp.analysis.initial_rtt``;
- *ACK RTT*: qoe's samples, how many equal tshark's ``tcp.analysis.ack_rtt`` on the same ACK,
  and tshark's count (qoe takes fewer: Karn's rule and exact segment ends).

Usage::

    python benchmarks/web_tcp_vs_tshark.py [--short] [CAPTURE_OR_FOLDER ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]


def _files(args: list[str]) -> list[Path]:
    out: list[Path] = []
    for a in args:
        p = Path(a)
        if p.is_dir():
            out += sorted(q for q in p.rglob("*") if q.suffix in (".pcap", ".pcapng"))
        else:
            out.append(p)
    return out


def compare(path: Path) -> dict:
    import warnings

    from qoe.web.tcp import connections
    from tcp_testbed import tshark_tcp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        conns = connections(path)
    ts = tshark_tcp(path)
    theirs = ts.retransmission | ts.fast_retransmission | ts.out_of_order | ts.spurious
    events = [e for c in conns for e in c.retransmission_events]
    ooo = {f for c in conns for d in (c.client, c.server) for f in d.out_of_order_frames}
    mine = {e.frame for e in events} | ooo
    samples = {}
    for c in conns:
        for d in (c.client, c.server):
            samples.update(zip(d.rtt.ts_ns.tolist(), d.rtt.rtt_ns.tolist()))
    init = {c.id.index: c.handshake_rtt_ns for c in conns}
    return {
        "name": path.name,
        "conns": len(conns),
        "tshark_late": len(theirs),
        "qoe_late": len(mine),
        "same": mine == theirs,
        "tshark_split": f"{len(ts.retransmission - ts.fast_retransmission - ts.spurious)}/{len(ts.fast_retransmission)}"
        f"/{len(ts.out_of_order)}/{len(ts.spurious)}",
        "qoe_split": f"{sum(e.kind == 'timeout' for e in events)}/{sum(e.kind == 'fast' for e in events)}"
        f"/{len(ooo)}/{sum(e.spurious for e in events)}",
        "init": f"{sum(init.get(k) == v for k, v in ts.initial_rtt_ns.items())}/{len(ts.initial_rtt_ns)}",
        "ack": f"{sum(ts.ack_rtt_ns.get(t) == r for t, r in samples.items())}/{len(samples)}/{len(ts.ack_rtt_ns)}",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="(the same: the testbed captures are small)")
    ap.add_argument("captures", nargs="*")
    args = ap.parse_args(argv)
    if shutil.which("tshark") is None:
        print("tshark not installed: nothing to compare")
        return 0
    files = _files(args.captures)
    tmp = None
    if not files:
        import tcp_testbed

        why = tcp_testbed.available()
        if why:
            print(f"no captures given and no testbed ({why}): nothing to compare")
            return 0
        tmp = tempfile.mkdtemp(prefix="tcpcmp")
        files = list(tcp_testbed.make_tcp_captures(Path(tmp)).values())
    try:
        print(f"{'capture':<22}{'conns':>6}{'late tshark':>12}{'late qoe':>9}{'same':>6}"
              f"{'tshark r/f/o/s':>16}{'qoe t/f/o/s':>14}{'init RTT':>10}{'ACK RTT =/qoe/tshark':>22}")
        for f in files:
            r = compare(f)
            print(f"{r['name']:<22}{r['conns']:>6}{r['tshark_late']:>12}{r['qoe_late']:>9}{'yes' if r['same'] else 'NO':>6}"
                  f"{r['tshark_split']:>16}{r['qoe_split']:>14}{r['init']:>10}{r['ack']:>22}")
        print("tshark r/f/o/s: retransmission (not fast, not spurious) / fast_retransmission / out_of_order /"
              " spurious_retransmission; qoe t/f/o/s: timeout / fast / out of order / spurious (also in t or f)")
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
