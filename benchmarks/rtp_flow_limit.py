"""Memory of the RTP scan on a crafted flood of one-packet UDP flows, with and without ``max_flows``.

Each flow of the flood (``tests/big_capture.py``, :func:`write_udp_flood`) is one datagram
whose first 12 bytes look like the start of an RTP stream, so the heuristic cannot decide it
(it waits for 16 packets) and, without a limit, remembers every one until the end of the
capture. For each ``max_flows`` this prints, each run in a fresh process, the peak resident
memory of ``qoe.rtp.scan_capture(FLOOD, keep_packets=False, max_flows=...)`` (``ru_maxrss``),
the memory held per flow over the baseline of the smallest limit, the wall time and the
datagrams the warning says were not looked at.

Usage::

    python benchmarks/rtp_flow_limit.py               # 1,000,000 flows
    python benchmarks/rtp_flow_limit.py --short       # 100,000 flows (CI)

Timings are wall-clock on a shared machine: compare within one run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = """
import json, re, resource, sys, time, warnings
from qoe.rtp import scan_capture
path, limit = sys.argv[1], (None if sys.argv[2] == "none" else int(sys.argv[2]))
t = time.perf_counter()
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    scan = scan_capture(path, keep_packets=False, max_flows=limit)
left = [int(m.group(1)) for x in w for m in [re.search(r"(\\d+) UDP datagram", str(x.message))] if m]
print(json.dumps({"s": time.perf_counter() - t, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "streams": len(scan.streams), "left_out": left[0] if left else 0}))
"""


_WRITER = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from big_capture import write_udp_flood
print(write_udp_flood(Path(sys.argv[1]), int(sys.argv[2])))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="100,000 flows (CI)")
    ap.add_argument("--flows", type=int, default=None)
    args = ap.parse_args()
    flows = args.flows or (100_000 if args.short else 1_000_000)
    limits = ["1000", "10000", "100000", "200000", "none"]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "flood.pcap"
        # written by a child: Linux keeps a process's peak RSS across exec, so the flood's
        # arrays must not be in the parent that starts the measured children
        size = int(subprocess.run([sys.executable, "-c", _WRITER, str(path), str(flows), str(ROOT / "tests")],
                                  capture_output=True, text=True, check=True).stdout)
        print(f"flood: {flows:,} one-packet UDP flows, {size / 2**20:.1f} MiB")
        print(f"{'max_flows':>10} {'peak RSS MiB':>13} {'KiB per flow':>13} {'time s':>7} {'left out':>10} {'streams':>8}")
        base = None
        for limit in limits:
            out = subprocess.run([sys.executable, "-c", _CHILD, str(path), limit], capture_output=True, text=True,
                                 check=True, env={"PYTHONPATH": str(ROOT / "src")})
            r = json.loads(out.stdout.strip().splitlines()[-1])
            tracked = min(flows, int(limit)) if limit != "none" else flows
            if base is None:
                base = (r["rss_mib"], tracked)
                per = float("nan")
            else:
                per = (r["rss_mib"] - base[0]) * 1024 / max(1, tracked - base[1])
            print(f"{limit:>10} {r['rss_mib']:>13.1f} {per:>13.2f} {r['s']:>7.2f} {r['left_out']:>10,} {r['streams']:>8}")


if __name__ == "__main__":
    main()
