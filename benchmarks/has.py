"""Streaming sessions (DASH, HLS) from captures: accuracy against the players' own logs, speed against tshark.

Two parts.

1. Every bundled session of ``data/video/has/sessions`` (dash.js 5.2.1 and hls.js 1.7.4 in
   Debian's chromium through a tbf bottleneck, ``data/video/has/make_sessions.sh``; HTTPS ones
   read with their browser key log): ``qoe.video.has.sessions(capture, options=...)`` against
   the player's own event log (``.player.json``, the truth):

   * media segments completed in the capture and loaded in the log;
   * startup: qoe's playback start minus the video element's first ``playing`` (ms; the
     replay has no append delay, so it is a little early: the tolerances the tests hold it to
     are 100 ms for dash.js, 400 ms for hls.js, ``tests/video/has/test_sessions.py``);
   * stalls: how many each found, and the largest difference of start and of duration over
     the stalls paired in order (the two bulk sessions part ways with the players on purpose:
     ``docs/guide/streaming.md``, "Compared with the players");

   and qoe's CPU time (in this process, after a first run to load the modules) against
   tshark's on the same file with the tool a user would otherwise reach for to list a
   session's requests: ``tshark -q -z http,tree`` (HTTP/2: ``-z http2,tree``; HTTPS with
   ``-o tls.keylog_file:``; tshark 4.0 has no HTTP/3 statistics, so the QUIC session has no
   tshark time).

2. The hard case: ``--copies`` sessions one after the other in one capture (copies of
   ``dash-ample``, each from its own client address, 50 ms apart, ``tests/big_capture.py``; default 200,
   ``--short`` 20), ``qoe has sessions CAPTURE --format csv`` in a fresh process (wall, CPU,
   peak RSS) against ``tshark -q -z http,tree``, and the sessions and segments each found;
   then a quarter as many copies of ``dash-tls`` (the same over HTTPS; its key log opens every
   copy, the ClientHello randoms being the same) with ``--keylog`` against ``tshark -o
   tls.keylog_file:... -q -z http,tree``.

Usage::

    python benchmarks/has.py [--short] [--copies N]

Timings are taken on a shared machine: compare ratios of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SESSIONS = ROOT / "data" / "video" / "has" / "sessions"
sys.path.insert(0, str(ROOT / "tests"))
from big_capture import write  # noqa: E402 - the copy-with-a-new-client generator of the memory benchmark
from video.has.player_log import player_view  # noqa: E402 - the tests' reading of the players' logs

# Runs the command given in argv; prints its wall time, CPU time and peak RSS (a fresh process each).
WRAPPER = r"""
import json, resource, subprocess, sys, time
t = time.perf_counter()
rc = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": rc.returncode, "s": time.perf_counter() - t, "cpu": u.ru_utime + u.ru_stime,
                  "rss_kb": u.ru_maxrss, "out": rc.stdout, "err": rc.stderr[-2000:]}))
"""


def _env() -> dict[str, str]:
    path = os.pathsep.join([str(ROOT / "src"), str(ROOT / "cli"), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


def _wrapped(cmd: list[str]) -> dict:
    out = subprocess.run([sys.executable, "-c", WRAPPER, *cmd], check=True, capture_output=True, text=True,
                         env=_env())
    r = json.loads(out.stdout)
    if r["rc"] != 0:
        raise SystemExit(f"{cmd[0]} failed: {r['err']}")
    return r


def _tshark_cpu(capture: Path, keylog: Path | None, tree: str) -> float:
    cmd = ["tshark", "-r", str(capture), "-q", "-z", tree]
    if keylog is not None:
        cmd[3:3] = ["-o", f"tls.keylog_file:{keylog}"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def accuracy(tshark: bool) -> None:
    from qoe.video.has import StreamingOptions, sessions  # noqa: PLC0415 - after the path is set

    names = sorted(p.name.removesuffix(".pcap.gz") for p in SESSIONS.glob("*.pcap.gz"))
    print("bundled sessions against the players' logs (startup and stalls: qoe minus the player)")
    print(f"{'session':18s} {'player':8s} {'segments qoe/log':>16s} {'startup ms':>10s} {'stalls qoe/log':>14s} "
          f"{'max |d start| s':>15s} {'max |d dur| s':>13s} {'qoe CPU s':>9s} {'tshark CPU s':>12s} {'x tshark':>8s}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sessions(SESSIONS / f"{names[0]}.pcap.gz")  # modules loaded before the first timing
        for name in names:
            cap = SESSIONS / f"{name}.pcap.gz"
            keylog = SESSIONS / f"{name}.keylog"
            keylog = keylog if keylog.is_file() else None
            log = json.loads((SESSIONS / f"{name}.player.json").read_text())
            c = time.process_time()
            found = sessions(cap, options=StreamingOptions(keylog=str(keylog)) if keylog else StreamingOptions())
            cpu = time.process_time() - c
            if len(found) != 1:
                print(f"{name:18s} {len(found)} sessions found (1 expected)")
                continue
            s = found[0]
            loaded = sum(1 for e in log["events"] if e["type"] == "segment_loaded"
                         and e["segment_type"] == "MediaSegment")
            done = sum(1 for r in s.segments if not r.init and not r.aborted)
            start, stalls = player_view(log)
            ours = [(s.start_ns / 1e9 + x.start_s, x.duration_s) for x in s.replay.stalls]
            pairs = list(zip(ours, stalls))
            d_start = max((abs(a - b) for (a, _), (b, _) in pairs), default=0.0)
            d_dur = max((abs(a - b) for (_, a), (_, b) in pairs), default=0.0)
            startup_ms = (s.start_ns / 1e9 + s.join_time_s - start) * 1e3
            ts_cpu = None
            if tshark and not name.endswith("-h3"):
                ts_cpu = _tshark_cpu(cap, keylog, "http2,tree" if name.endswith("-h2") else "http,tree")
            ts = f"{ts_cpu:12.2f} {ts_cpu / cpu:7.2f}x" if ts_cpu is not None else f"{'-':>12s} {'-':>8s}"
            print(f"{name:18s} {log['player']:8s} {f'{done}/{loaded}':>16s} {startup_ms:10.0f} "
                  f"{f'{len(ours)}/{len(stalls)}':>14s} {d_start:15.2f} {d_dur:13.2f} {cpu:9.2f} {ts}")
    print("(tshark's start-up, about 0.2 s, is most of its time on these small files: the scale part below "
          "compares the work)")
    print("(dash-bulk: dash.js replaces buffered video ahead of the playhead, the replay keeps it; hls-bulk: "
          "hls.js stalls at audio gaps, as the strict model video_underflow_s=0 has it; both compared in "
          "tests/video/has/test_sessions.py on the stalls before they part)")


def scale(copies: int, tshark: bool, kind: str = "has") -> None:
    tmp = Path(tempfile.mkdtemp(prefix="qoe-has-bench-"))
    try:
        cap = tmp / "sessions.pcap"
        write(cap, kind, copies=copies)
        mb = cap.stat().st_size / 1e6
        keylog = SESSIONS / "dash-tls.keylog" if kind == "has-tls" else None
        sample = "dash-tls over HTTPS, one key log for all" if keylog else "dash-ample"
        print(f"\n{copies} sessions one after the other (copies of {sample}, each its own client): {mb:.0f} MB")
        keys = ["--keylog", str(keylog)] if keylog else []
        qoe = _wrapped([sys.executable, "-c", "from qoe_cli.main import main; main()", "has", "sessions",
                        str(cap), *keys, "--format", "csv"])
        rows = [r for r in qoe["out"].splitlines()[1:] if r]
        print(f"{'tool':32s} {'wall s':>7s} {'CPU s':>7s} {'peak RSS MiB':>12s} {'x tshark CPU':>12s}")
        tls = ["-o", f"tls.keylog_file:{keylog}"] if keylog else []
        ts = _wrapped(["tshark", "-r", str(cap), *tls, "-q", "-z", "http,tree"]) if tshark else None
        labels = ("qoe has sessions --keylog" if keylog else "qoe has sessions --format csv",
                  "tshark tls.keylog_file http,tree" if keylog else "tshark -q -z http,tree")
        for label, r in ((labels[0], qoe), (labels[1], ts)):
            if r is None:
                continue
            ratio = f"{ts['cpu'] / r['cpu']:11.2f}x" if ts is not None else f"{'-':>12s}"
            print(f"{label:32s} {r['s']:7.2f} {r['cpu']:7.2f} {r['rss_kb'] / 1024:12.0f} {ratio}")
        print(f"qoe: {len(rows)} sessions")
        if ts is not None:
            counts = {ln.split("Packets")[0].strip(): ln.split("Packets")[1].split()[0]
                      for ln in ts["out"].splitlines() if "HTTP Re" in ln and "Packets" in ln}
            print(f"tshark http,tree: {counts.get('HTTP Request', '?')} HTTP requests, "
                  f"{counts.get('HTTP Response', '?')} responses (by default it does not reassemble a body "
                  "whose segments came out of order)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="CI's short mode: 20 copies")
    ap.add_argument("--copies", type=int, default=None, help="sessions in the scale part (default 200)")
    args = ap.parse_args(argv)
    tshark = shutil.which("tshark") is not None
    if not tshark:
        print("tshark not found: qoe's times only")
    sys.path.insert(0, str(ROOT / "src"))
    accuracy(tshark)
    copies = args.copies or (20 if args.short else 200)
    scale(copies, tshark)
    scale(max(1, copies // 4), tshark, "has-tls")  # (a quarter: each HTTPS copy is 1.8 MB)
    return 0


if __name__ == "__main__":
    sys.exit(main())
