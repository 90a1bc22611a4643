"""What the web benchmarks share: a measurement run in a fresh Python, its result read as JSON.

Not a benchmark itself (``run_all.py`` skips files starting with ``_``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child_json(script: str, *args: str) -> dict:
    """Run ``script`` (``python -c``) with ``args`` in a fresh Python with this tree's ``src`` on
    the path; the last line it prints, as JSON (what it printed before is its own business)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(ROOT, "src"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", script, *args], check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def page_run(counting: str, imports: str = "") -> str:
    """The script of one timed page-load run (for :func:`child_json`): ``counting`` is the code
    that counts, with ``path``, ``keylog`` and ``what`` (``sys.argv[1:4]``) given, ``pages``
    and ``tx`` to add to, and ``qoe.web``'s ``WebOptions`` and ``iter_page_loads`` imported
    (``imports``: more lines run before the clock starts); warnings are silenced. It prints
    wall and CPU seconds (with any child process's: a process reading ahead), the counts and
    the peak RSS, as JSON."""
    body = "".join("    " + line + "\n" for line in counting.strip("\n").splitlines())
    return (
        "import json, resource, sys, time, warnings\n"
        "from qoe.web import WebOptions, iter_page_loads\n"
        + imports.strip("\n") + "\n"
        "path, keylog, what = sys.argv[1:4]\n"
        "t, c = time.perf_counter(), time.process_time()\n"
        "pages = tx = 0\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore')\n"
        + body +
        "dt, cpu = time.perf_counter() - t, time.process_time() - c\n"
        "kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # a process that read ahead, if any\n"
        "print(json.dumps({'s': dt, 'cpu': cpu + kids.ru_utime + kids.ru_stime, 'pages': pages, 'tx': tx,\n"
        "                  'rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))\n"
    )


def print_runs(rows: list[tuple[str, dict]], ts: dict | None, ts_label: str, size_mb: float, ts_tx: int) -> None:
    """The table of the page-load benchmarks: a row per ``(label, run)`` of :func:`page_run`
    (wall and CPU seconds, transactions and MB per second, the ratio to tshark's wall time,
    peak RSS), then tshark's row (``ts``: ``s`` and ``cpu``; ``ts_tx``: the transactions its
    rate is counted in), if it ran."""
    print(f"{'tool':46s} {'s':>7s} {'CPU s':>7s} {'tx/s':>8s} {'MB/s':>7s} {'vs tshark':>10s} {'peak RSS MB':>12s}")
    for label, r in rows:
        ratio = f"{ts['s'] / r['s']:9.2f}x" if ts else f"{'':>10s}"
        print(f"{label:46s} {r['s']:7.2f} {r['cpu']:7.2f} {r['tx'] / r['s']:8.0f} {size_mb / r['s']:7.1f} {ratio} "
              f"{r['rss_mb']:12.0f}")
    if ts:
        print(f"{ts_label:46s} {ts['s']:7.2f} {ts['cpu']:7.2f} {ts_tx / ts['s']:8.0f} {size_mb / ts['s']:7.1f} "
              f"{1.0:9.2f}x")
