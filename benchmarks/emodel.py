"""E-model throughput: one vectorised call over a delay × loss grid vs. point-by-point calls.

The tool people would otherwise use for an E-model sweep is a scalar implementation called
in a loop (as in most published E-model scripts); the point-by-point baseline here is the
same library called once per grid point, which is what such a loop costs in Python.

Run: ``python benchmarks/emodel.py`` (``--short`` for CI).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from qoe.voice import emodel


def _best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="small sizes, for CI")
    args = ap.parse_args(argv)

    sizes = [(100, 100), (1000, 1000)] if args.short else [(100, 100), (1000, 1000), (2000, 2000)]
    loop_points = 200 if args.short else 2000
    rows = []
    for n_delay, n_loss in sizes:
        d = np.linspace(0, 1000, n_delay)[:, None]
        p = np.linspace(0, 20, n_loss)

        def grid():
            return emodel.r_factor(ta=d, t=d, tr=2 * d, ppl=p, codec="G.711-plc", out_of_range="ignore").r

        secs = _best_of(grid, 3)
        rows.append(("vectorised grid", n_delay * n_loss, secs))

    dl = np.linspace(0, 1000, loop_points)
    pl = np.linspace(0, 20, loop_points)

    def loop():
        for di, pi in zip(dl, pl):
            emodel.r_factor(ta=di, t=di, tr=2 * di, ppl=pi, codec="G.711-plc", out_of_range="ignore")

    rows.append(("point-by-point loop", loop_points, _best_of(loop, 1)))

    flat = np.linspace(0, 1000, 1_000_000)

    def flat_call():
        return emodel.r_factor(ta=flat, t=flat, tr=2 * flat, ppl=flat / 50, codec="G.711-plc",
                               out_of_range="ignore").r

    rows.append(("vectorised, all inputs 1e6 long", flat.size, _best_of(flat_call, 3)))

    print(f"{'case':34s} {'points':>10s} {'seconds':>10s} {'evals/s':>14s}")
    for name, n, secs in rows:
        print(f"{name:34s} {n:10d} {secs:10.4f} {n / secs:14.0f}")
    loop_rate = rows[-2][1] / rows[-2][2]
    grid_rate = rows[1][1] / rows[1][2]
    print(f"\nspeed-up of one vectorised call over a Python loop: {grid_rate / loop_rate:.0f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
