"""Run every benchmark script in this folder and print their tables.

``python benchmarks/run_all.py`` runs them in full; ``--short`` runs CI's short mode. A
campaign in a folder of its own is run by its ``run.py`` (``benchmarks/fuzz/run.py``).
Each script is a plain program that prints its own table; a script that fails (non-zero
exit) makes this runner fail.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="CI's short mode")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds allowed per script")
    ap.add_argument("only", nargs="*", help="run only these scripts (file stems)")
    args = ap.parse_args(argv)

    scripts = sorted(p for p in HERE.glob("*.py") if not p.name.startswith(("_", "run_all")))
    scripts += sorted(HERE.glob("*/run.py"))  # campaigns in their own folder (fuzz/)
    if args.only:
        scripts = [p for p in scripts if p.stem in args.only or p.parent.name in args.only]
    failed = []
    for script in scripts:
        cmd = [sys.executable, str(script)] + (["--short"] if args.short else [])
        print(f"\n### {script.name}  ({' '.join(cmd[1:])})", flush=True)
        t0 = time.perf_counter()
        try:
            # no stdin: ffmpeg reads commands from it and would take the caller's input
            rc = subprocess.run(cmd, timeout=args.timeout, stdin=subprocess.DEVNULL).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        print(f"### {script.name}: exit {rc} after {time.perf_counter() - t0:.1f} s", flush=True)
        if rc != 0:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
