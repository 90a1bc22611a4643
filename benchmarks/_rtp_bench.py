"""What the RTP benchmarks share: running a tool measured, and reading and comparing
``tshark -z rtp,streams`` and ``qoe streams --format csv`` tables.

Not a benchmark itself (``run_all.py`` skips files starting with ``_``).
"""

from __future__ import annotations

import compileall
import csv
import io
import math
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

# tshark prints milliseconds with 3 decimals: equal as printed means within half a unit
# of the last decimal (plus float rounding).
TOL_MS = 0.0006

TSHARK_ROW = re.compile(
    r"^\s*(?P<start>-?[\d.]+)\s+(?P<end>-?[\d.]+)\s+(?P<src>\S+)\s+(?P<sport>\d+)\s+(?P<dst>\S+)\s+(?P<dport>\d+)\s+"
    r"0x(?P<ssrc>[0-9A-Fa-f]+)\s+(?P<payload>.+?)\s+(?P<pkts>\d+)\s+(?P<lost>-?\d+) \([-\d.]+%\)\s+"
    r"(?P<min_d>[-\d.]+)\s+(?P<mean_d>[-\d.]+)\s+(?P<max_d>[-\d.]+)\s+"
    r"(?P<min_j>[-\d.]+)\s+(?P<mean_j>[-\d.]+)\s+(?P<max_j>[-\d.]+)\s*(?P<problem>X?)\s*$"
)
# tshark's column -> qoe's CSV column
FLOAT_COLUMNS = {
    "min_d": "min_delta_ms", "mean_d": "mean_delta_ms", "max_d": "max_delta_ms",
    "min_j": "min_jitter_ms", "mean_j": "mean_jitter_ms", "max_j": "max_jitter_ms",
}

WRAPPER = """
import resource, subprocess, sys, time
t = time.perf_counter()
r = subprocess.run(sys.argv[2:], stdout=open(sys.argv[1], "wb"), stderr=subprocess.PIPE)
dt = time.perf_counter() - t
sys.stderr.write(r.stderr.decode(errors="replace")[-2000:])
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(dt, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, r.returncode)
"""

# The library call alone, in a fresh process (its stdout: streams found, seconds).
LIB_SNIPPET = """
import sys, time
t = time.perf_counter()
from qoe.rtp import scan_capture
scan = scan_capture(sys.argv[1], keep_packets=False)
print(len(scan.streams), time.perf_counter() - t)
"""


# Reading alone, in a fresh process: every UDP datagram of the capture in NumPy batches,
# nothing done with them (the floor under the scan: its stdout, datagrams and seconds),
# read as the scan reads them (a batch per chunk of qoe.rtp's CHUNK_BYTES).
READ_SNIPPET = """
import sys, time
t = time.perf_counter()
from qoe.capture import read_udp_batches
from qoe.rtp import CHUNK_BYTES
n = sum(len(b) for b in read_udp_batches(sys.argv[1], batch_size=None, chunk_size=CHUNK_BYTES))
print(n, time.perf_counter() - t)
"""


def tools() -> dict[str, str | None]:
    """The ``qoe`` command next to this Python and tshark, if installed.

    qoe's modules are byte-compiled first (what ``make bytecode`` does), as an install from a
    wheel leaves them: where ``PYTHONDONTWRITEBYTECODE`` is set, an editable install would
    otherwise compile every module again in every timed run (50 to 80 ms per command).
    """
    qoe = shutil.which("qoe") or str(Path(sys.executable).with_name("qoe"))
    if not Path(qoe).exists():
        raise SystemExit("the qoe command is not installed next to this Python")
    import qoe as package  # noqa: PLC0415
    import qoe_cli  # noqa: PLC0415

    for pkg in (package, qoe_cli):
        compileall.compile_dir(Path(pkg.__file__).parent, quiet=1)
    return {"qoe": qoe, "tshark": shutil.which("tshark")}


def measured(cmd: list[str], out: Path) -> tuple[float, float, float]:
    """Run ``cmd`` with its stdout to ``out`` under a wrapper process that reports the
    wall time, the command's CPU time (user + system) and its peak RSS (the wrapper's
    ``RUSAGE_CHILDREN`` holds only the command); return (seconds, CPU seconds, MiB)."""
    r = subprocess.run([sys.executable, "-c", WRAPPER, str(out), *cmd], capture_output=True, text=True, check=True)
    secs, cpu, kb, rc = r.stdout.split()
    if int(rc) != 0:
        raise SystemExit(f"{cmd[0]} failed ({rc}): {r.stderr}")
    return float(secs), float(cpu), int(kb) / 1024.0


def tshark_command(tshark: str, capture: Path) -> list[str]:
    return [tshark, "-r", str(capture), "-q", "--enable-heuristic", "rtp_udp", "-z", "rtp,streams"]


def parse_tshark(text: str) -> dict[tuple, dict[str, str]]:
    """Rows of tshark's ``-z rtp,streams`` table by (src, sport, dst, dport, ssrc)."""
    rows = {}
    for line in text.splitlines():
        m = TSHARK_ROW.match(line)
        if m:
            g = m.groupdict()
            rows[(g["src"], int(g["sport"]), g["dst"], int(g["dport"]), int(g["ssrc"], 16))] = g
    return rows


def parse_csv(text: str) -> dict[tuple, dict[str, str]]:
    """Rows of ``qoe streams --format csv`` by (src, sport, dst, dport, ssrc)."""
    return {(r["src"], int(r["sport"]), r["dst"], int(r["dport"]), int(r["ssrc"], 0)): r
            for r in csv.DictReader(io.StringIO(text))}


def _num(x: str) -> float:
    return float("nan") if x in ("", "None", "null", "nan") else float(x)


def compare(tshark: dict, qoe: dict) -> list[str]:
    """Every difference between tshark's rows and qoe's, in what tshark prints: the
    streams, packets, lost and Problems exactly, min/mean/max delta and jitter to its
    3 decimals (no clock rate: tshark prints -1/0/0 and qoe leaves the jitter empty)."""
    problems = [f"{k}: listed by qoe only" for k in qoe.keys() - tshark.keys()]
    for key, g in tshark.items():
        r = qoe.get(key)
        if r is None:
            problems.append(f"{key}: listed by tshark only")
            continue
        if (int(r["packets"]), int(r["lost"])) != (int(g["pkts"]), int(g["lost"])):
            problems.append(f"{key}: packets/lost tshark {g['pkts']}/{g['lost']} qoe {r['packets']}/{r['lost']}")
        if (r["problems"].strip().lower() in ("true", "yes", "1")) != (g["problem"] == "X"):
            problems.append(f"{key}: problems tshark {g['problem']!r} qoe {r['problems']}")
        for tcol, qcol in FLOAT_COLUMNS.items():
            want, got = float(g[tcol]), _num(r[qcol])
            if tcol.endswith("_j") and float(g["min_j"]) == -1.0:
                ok = math.isnan(got)
            else:
                ok = abs(want - got) <= TOL_MS
            if not ok:
                problems.append(f"{key}: {qcol} tshark {want} qoe {got}")
    return problems


def verdict(problems: list[str], compared: int, expected: int | None = None) -> str:
    if problems:
        return f"{len(problems)} differ"
    if expected is not None and compared != expected:
        return f"{compared} of {expected} listed"
    return f"all {compared} agree"


def print_table(rows: list[tuple]) -> None:
    """rows: (capture, streams, packets, tool, wall s, CPU s, MiB, x tshark wall, x tshark CPU, agreement)."""
    head = (f"{'capture':<14} {'streams':>7} {'packets':>9} {'tool':<23} {'wall s':>7} {'CPU s':>7} "
            f"{'peak RSS MiB':>12} {'x tshark':>8} {'x (CPU)':>8}  agreement with tshark")
    print(head)
    print("-" * len(head))
    for kind, streams, packets, tool, secs, cpu, mem, ratio, cpu_ratio, agree in rows:
        print(f"{kind:<14} {streams:>7} {packets:>9} {tool:<23} {secs:>7.2f} {cpu:>7.2f} {mem:>12.1f} "
              f"{ratio:>8.2f} {cpu_ratio:>8.2f}  {agree}".replace("nan", "  -"))
    print("(x tshark: tshark's time / this tool's time in the same round, wall clock and CPU (user + system),\n"
          " the median over the rounds; the times are medians too;\n"
          " peak RSS: the process's own ru_maxrss; wall clock suffers most when other processes share the CPUs)")


def run_tools(kind: str, capture: Path, tmp: Path, tl: dict[str, str | None], streams: int, packets: int,
              repeat: int = 1) -> list[tuple]:
    """Time ``qoe streams`` (CLI, which reads ahead in a second thread when it has two cores;
    also with ``--no-read-ahead``), ``scan_capture`` (library, one thread),
    reading alone and tshark on
    ``capture``, ``repeat`` rounds of one run each (in that order); compare the CLI's CSV
    with tshark's table; the table rows. Times are the median over the rounds, and each
    ratio to tshark the median of the rounds' ratios (paired runs)."""
    cli_out = tmp / f"{kind}.qoe.csv"
    cmds = {
        "qoe streams (CLI)": ([tl["qoe"], "streams", str(capture), "--format", "csv"], cli_out),
        "  --no-read-ahead": ([tl["qoe"], "streams", str(capture), "--format", "csv", "--no-read-ahead"],
                              tmp / f"{kind}.qoe-one-thread.csv"),
        "scan_capture (process)": ([sys.executable, "-c", LIB_SNIPPET, str(capture)], tmp / f"{kind}.lib.txt"),
        "floor: reading alone": ([sys.executable, "-c", READ_SNIPPET, str(capture)], tmp / f"{kind}.read.txt"),
    }
    if tl["tshark"]:
        cmds["tshark -z rtp,streams"] = (tshark_command(tl["tshark"], capture), tmp / f"{kind}.tshark.txt")
    runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in cmds}
    for _ in range(repeat):
        for name, (cmd, out) in cmds.items():
            runs[name].append(measured(cmd, out))  # type: ignore[arg-type]
    agree = "tshark not installed"
    if tl["tshark"]:
        ts_rows = parse_tshark(cmds["tshark -z rtp,streams"][1].read_text())
        problems = compare(ts_rows, parse_csv(cli_out.read_text()))
        problems += [f"--no-read-ahead: {p}"
                     for p in compare(ts_rows, parse_csv(cmds["  --no-read-ahead"][1].read_text()))]
        agree = verdict(problems, len(ts_rows), streams)
        for p in problems[:10]:
            print("   ", p)
    ts = runs.get("tshark -z rtp,streams")
    rows = []
    for name, got in runs.items():
        wall, cpu, mem = (statistics.median(x[i] for x in got) for i in range(3))
        if ts is None:
            ratio = cpu_ratio = float("nan")
        else:
            ratio = statistics.median(t[0] / x[0] for t, x in zip(ts, got))
            cpu_ratio = statistics.median(t[1] / x[1] for t, x in zip(ts, got))
        rows.append((kind, streams, packets, name, wall, cpu, mem, ratio, cpu_ratio,
                     agree if name == "qoe streams (CLI)" else ""))
    return rows


def failed(rows: list[tuple]) -> bool:
    return any(r[9] and not r[9].startswith(("all", "tshark not")) for r in rows)
