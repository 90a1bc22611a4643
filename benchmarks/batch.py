"""Rows per second of ``qoe.batch.run`` on the bundled samples: 1 and 2 local workers, and Dask.

The manifest is every bundled sample, scored as a study would (labels: buffer, workload):

- voice (``data/voice/captures/scenarios.jsonl``): the client capture with the server capture
  (one-way delays) and the reference speech of both directions (P.862 + E-model, the seed
  paper's z) — about 2 s a row on one core;
- video (``data/video/captures/manifest.json``): the receiver's capture against the reference
  clip (PSNR/SSIM per frame), with the SDP where one was written;
- web (``data/web/captures/scenarios.jsonl``): every page load of the client capture.

The samples take about 10 s on one core, little next to starting two interpreters and
their imports, so the full mode scores them three times (``--passes``; label ``run``).
Configurations, each on the same manifest, one after the other: ``workers=1`` and
``workers=2`` (local process pools: the time includes starting the worker processes and
their first imports, as a user sees it) and a Dask ``LocalCluster`` of two one-thread worker
processes (started before the clock, as a standing cluster would be; the workers' first
imports are timed). It prints rows per second, the speed-up over one worker, the sum of
the rows' own scoring times over the wall time (how busy the workers were: at most the
number of workers) and the CPU time the workers got over the wall time (the cores they
actually had: on a machine shared with other work, two workers can be busy all along yet
get about one core between them, and then no speed-up is possible). Before and after, it
measures how much more CPU two spinning processes get than one (2.0 on an idle 2-core
machine): the best speed-up the machine allowed then. Compare the ratios of one run, and
say what else was running.

``--short`` (CI): four voice rows without references and four web rows; the
ratios then mostly measure starting processes, not scoring. Usage::

    python benchmarks/batch.py [--short] [--repeat N] [--passes P]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

DATA = ROOT / "data"


def manifest(short: bool, passes: int = 1) -> list[dict]:
    """One row per bundled sample (see the module docstring), ``passes`` times (label ``run``)."""
    rows = []
    caps = DATA / "voice" / "captures"
    for line in (caps / "scenarios.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        sc = json.loads(line)
        row = {"capture": str(caps / sc["client_capture"]), "kind": "voice", "sample": sc["scenario"],
               "buffer": sc["buffer_packets"], "workload": sc["load"]}
        if not short:
            row["sender_capture"] = str(caps / sc["server_capture"])
            row["reference"] = [str(DATA / "voice" / st["reference"]) for st in sc["streams"]]
        rows.append(row)
    if not short:
        vcaps = DATA / "video" / "captures"
        meta = json.loads((vcaps / "manifest.json").read_text())
        for sc in meta["scenarios"]:
            row = {"capture": str(vcaps / sc["receiver_capture"]), "kind": "video", "sample": sc["scenario"],
                   "buffer": sc["buffer_packets"], "workload": sc["load"],
                   "reference": str(DATA / "video" / sc["reference"])}
            if sc.get("sdp"):
                row["video.sdp"] = str(vcaps / sc["sdp"])
            rows.append(row)
    wcaps = DATA / "web" / "captures"
    for line in (wcaps / "scenarios.jsonl").read_text().splitlines():
        if line.strip():
            sc = json.loads(line)
            rows.append({"capture": str(wcaps / sc["client_capture"]), "kind": "web", "sample": sc["scenario"],
                         "buffer": sc["buffer_packets"], "workload": sc["load"]})
    if short:  # a few of each kind
        voice = [r for r in rows if r["kind"] == "voice"][:4]
        web = [r for r in rows if r["kind"] == "web"][:4]
        rows = voice + web
    return [{**r, "run": k} for k in range(1, passes + 1) for r in rows]


def _spin(seconds: float) -> float:
    """CPU time one process gets while spinning for ``seconds`` of wall-clock time."""
    t, c = time.perf_counter(), time.process_time()
    while time.perf_counter() - t < seconds:
        pass
    return time.process_time() - c


def calibrate(seconds: float = 2.0) -> float:
    """How much more CPU two spinning processes get than one, now (2.0 on an idle 2-core machine)."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_spin, [0.1, 0.1])  # started and warm
        one = pool.apply(_spin, (seconds,))
        two = sum(pool.map(_spin, [seconds, seconds]))
    return two / one


def _timed(rows: list[dict], **kw) -> dict:
    import qoe.batch

    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = qoe.batch.run(rows, progress=False, **kw)
    wall = time.perf_counter() - t
    per_row = df.drop_duplicates("row")
    errors = per_row["error"].dropna()
    if len(errors):
        print(f"  {len(errors)} row(s) failed, e.g.: {errors.iloc[0]}", file=sys.stderr)
    return {"wall": wall, "rows": len(per_row), "busy": float(per_row["seconds"].sum()),
            "cpu": float(per_row["cpu_seconds"].sum()), "failed": len(errors)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="CI's short mode (quick rows, few of them)")
    ap.add_argument("--repeat", type=int, default=1, help="run the local configurations this many times, interleaved")
    ap.add_argument("--passes", type=int, default=None,
                    help="score every sample this many times (label run; default 3, --short 1): the samples take "
                         "about 10 s on one core, too little next to starting the workers")
    args = ap.parse_args(argv)

    rows = manifest(args.short, args.passes or (1 if args.short else 3))
    kinds = {k: sum(r["kind"] == k for r in rows) for k in ("voice", "video", "web")}
    print(f"manifest: {len(rows)} rows = {len({r['run'] for r in rows})} pass(es) over the samples ({', '.join(f'{n} {k}' for k, n in kinds.items() if n)}); "
          f"{os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.1f}")
    spin_s = 0.5 if args.short else 2.0
    print(f"machine now: two CPU-bound processes got {calibrate(spin_s):.2f}x the CPU of one (2.00 when idle)")
    results: dict[str, list[dict]] = {}
    for _ in range(max(1, args.repeat)):
        for name, kw in (("1 worker", {"workers": 1}), ("2 workers", {"workers": 2})):
            results.setdefault(name, []).append(_timed(rows, **kw))
    try:
        import distributed
    except ImportError:
        print("dask.distributed not installed: Dask row left out")
    else:
        logging.getLogger("distributed").setLevel(logging.ERROR)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster, set_as_default=False) as client:
            results["Dask LocalCluster, 2 processes"] = [_timed(rows, scheduler=client)]

    base = min(r["wall"] for r in results["1 worker"])
    print(f"{'configuration':32} {'wall s':>8} {'rows/s':>8} {'speed-up':>9} {'busy/wall':>10} {'cpu/wall':>9} "
          f"{'cpu s':>7} {'failed':>7}")
    for name, runs in results.items():
        best = min(runs, key=lambda r: r["wall"])  # the least disturbed run
        print(f"{name:32} {best['wall']:8.2f} {best['rows'] / best['wall']:8.2f} {base / best['wall']:8.2f}x "
              f"{best['busy'] / best['wall']:10.2f} {best['cpu'] / best['wall']:9.2f} {best['cpu']:7.1f} "
              f"{best['failed']:7d}")
    print(f"machine at end: two CPU-bound processes got {calibrate(spin_s):.2f}x the CPU of one")
    print(f"load average at end {os.getloadavg()[0]:.1f} (timings on a shared machine are noisy; the issue's "
          "target is 2 workers >= 1.7x one worker)")
    return 0 if all(r["failed"] == 0 for runs in results.values() for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
