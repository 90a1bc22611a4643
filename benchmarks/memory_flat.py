"""Peak memory of ``qoe score`` against the size of the capture, per kind (issue 13).

For each kind it writes, in a temporary directory and without holding it in memory, a
capture of sequential copies of one real sample of ``data/`` (``tests/big_capture.py``:
each copy a new call, video stream or page load with its own client address):

* ``voice``: the G.711 call ``data/voice/captures/down-b8_client.pcap`` (both directions);
* ``video``: the RTP H.264 stream ``data/video/captures/h264-down-b64_client.pcap``;
* ``web``: the three page loads of ``data/web/captures/http11-idle-b64-curl-x3_client.pcap``;
* ``mixed``: the three in turn, scored with ``--kind auto``;
* ``quic``: Chromium's HTTP/3 page load ``data/web/browser/captures/h3-idle.pcap``, scored with
  ``--kind web --keylog`` its key log (every copy decrypts with it: the same hello randoms);
  each copy 50 ms after the one before, so that the 30 s a QUIC connection stays tracked after
  its last packet holds some 55 loads;

then runs ``qoe score CAPTURE --kind KIND --format csv`` (output to /dev/null) in a fresh
process, each under a wrapper process that reads the child's peak resident set size
(``ru_maxrss`` of ``RUSAGE_CHILDREN``), and prints one row per (kind, size): MB of
capture, items, seconds, peak RSS, and the growth of RSS per GB of capture between the
smallest and the largest size (flat memory: close to 0). Below a few hundred MB that
figure overstates the growth: the first full batch of the UDP reader (65,536 datagrams,
some 60 MB of transient memory in the RTP scan) is only reached past ~15 MB of voice,
so compare sizes of 250 MB and more.

Usage::

    python benchmarks/memory_flat.py                   # 0.25, 1 and 2 GB per kind
    python benchmarks/memory_flat.py --short           # 25 and 100 MB per kind (CI)
    python benchmarks/memory_flat.py --sizes 0.5 --kinds video --trace   # + tracemalloc top lines
    python benchmarks/memory_flat.py --sizes 0.25 1 --kinds voice --score-kind auto   # a voice trunk, qoe score's default kind

Timings are wall-clock on a shared machine; RSS is what matters here.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
from big_capture import write  # noqa: E402 - the generator the memory test uses too

# Runs the command given in argv and prints its peak RSS (kB on Linux) and wall time.
WRAPPER = r"""
import json, resource, subprocess, sys, time
t = time.perf_counter()
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
print(json.dumps({"rc": rc.returncode, "s": time.perf_counter() - t, "err": rc.stderr[-2000:],
                  "rss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""

# tracemalloc's top allocation sites at the peak of one score() call.
TRACE = r"""
import sys, tracemalloc, warnings
import qoe
tracemalloc.start(8)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    r = qoe.score(sys.argv[1], kind=sys.argv[2])
cur, peak = tracemalloc.get_traced_memory()
print(f"traced: {cur / 2**20:.0f} MiB held after scoring, {peak / 2**20:.0f} MiB at the peak")
for st in tracemalloc.take_snapshot().statistics("lineno")[:8]:
    print(f"  held {st.size / 2**20:8.1f} MiB  {st.traceback}")
"""


def env() -> dict[str, str]:
    path = os.pathsep.join([str(ROOT / "src"), str(ROOT / "cli"), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


#: What a kind is scored as, and with which options, unless ``--score-kind`` says otherwise.
SCORED = {"mixed": ("auto", []),
          "quic": ("web", ["--keylog", str(ROOT / "data" / "web" / "browser" / "captures" / "h3-idle.keylog")])}


def measure(capture: Path, kind: str, extra: list[str] = ()) -> dict:  # type: ignore[assignment]
    cmd = [sys.executable, "-c", WRAPPER, sys.executable, "-c", "from qoe_cli.main import main; main()", "score", str(capture),
           "--kind", kind, "--format", "csv", *extra]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env())
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="CI's short mode: 25 and 100 MB")
    ap.add_argument("--sizes", type=float, nargs="*", default=None, help="capture sizes in GB (0.25 1 2)")
    ap.add_argument("--kinds", nargs="*", default=["voice", "video", "web", "mixed", "quic"],
                    choices=("voice", "video", "web", "mixed", "quic"))
    ap.add_argument("--score-kind", default=None, choices=("auto", "voice", "video", "web"),
                    help="score every capture with --kind SCORE_KIND (default: the capture's kind; auto for mixed)")
    ap.add_argument("--trace", action="store_true", help="also print tracemalloc's top lines at the largest size")
    args = ap.parse_args(argv)
    sizes = args.sizes or ([0.025, 0.1] if args.short else [0.25, 1.0, 2.0])
    tmp = Path(tempfile.mkdtemp(prefix="qoe-memflat-"))
    rows, failed = [], []
    try:
        for kind in args.kinds:
            got = []
            for gb in sizes:
                cap = tmp / f"{kind}.pcap"
                t = time.perf_counter()
                copies, nbytes = write(cap, kind, size_bytes=int(gb * 1e9))
                built = time.perf_counter() - t
                scored, extra = SCORED.get(kind, (kind, []))
                if args.score_kind:
                    scored, extra = args.score_kind, []
                m = measure(cap, scored, extra)
                if m["rc"] != 0:
                    failed.append(f"{kind} {gb} GB: exit {m['rc']}: {m['err'].strip()[-300:]}")
                got.append((nbytes, m["rss_kb"]))
                rows.append((f"{kind}/{scored}" if scored != kind else kind, nbytes / 1e6, copies, built, m["s"], m["rss_kb"] / 1024))
                print(f"{kind:6s} --kind {scored:5s} {nbytes / 1e6:8.0f} MB  {copies:6d} copies  built {built:5.1f} s  "
                      f"scored {m['s']:6.1f} s  peak RSS {m['rss_kb'] / 1024:7.0f} MiB", flush=True)
                if args.trace and gb == sizes[-1]:
                    tr = subprocess.run([sys.executable, "-c", TRACE, str(cap), scored],
                                        capture_output=True, text=True, env=env())
                    print(tr.stdout, tr.stderr[-500:], flush=True)
                cap.unlink()
            if len(got) > 1:
                (b0, r0), (b1, r1) = got[0], got[-1]
                print(f"{kind:6s} growth: {(r1 - r0) / 1024 / ((b1 - b0) / 1e9):+.0f} MiB of peak RSS per GB of capture",
                      flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    print(f"{'kind':11s} {'MB':>8s} {'copies':>7s} {'build s':>8s} {'score s':>8s} {'peak RSS MiB':>13s}")
    for kind, mb, copies, built, s, rss in rows:
        print(f"{kind:11s} {mb:8.0f} {copies:7d} {built:8.1f} {s:8.1f} {rss:13.0f}")
    for f in failed:
        print("FAILED:", f)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
