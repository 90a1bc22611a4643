"""Fuzz campaign: damaged captures, SDP and speech files against qoe's public entry points.

Each input is a real sample from ``data/`` damaged as field captures are (cut short, bytes
flipped, inserted, removed or repeated, a length field set to an extreme; see
``tests/fuzz_targets.py``) and given to a public function. The contract: a result or a
``qoe.QoEError``; anything else, or an input that runs longer than ``--timeout`` seconds, is
a failure. Prints, per target, the inputs tried and the distinct failures found (type and
the innermost qoe frame), and writes each failing input to ``--out``.

Engines: ``random`` (default; reproducible with ``--seed``) mutates the seeds directly;
``atheris`` (``pip install atheris``) lets libFuzzer steer the mutations by the coverage of
the instrumented ``qoe`` code, one target per run.

Usage::

    python benchmarks/fuzz/run.py                      # every target, 200 inputs each
    python benchmarks/fuzz/run.py --short              # CI: 25 inputs each
    python benchmarks/fuzz/run.py --target web-pages --inputs 5000 --out /tmp/fuzz
    python benchmarks/fuzz/run.py --engine atheris --target capture-packets -- -runs=20000
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from fuzz_targets import TARGETS, Target, check, mutate  # noqa: E402


class Hang(Exception):
    """An input ran past the time limit."""


def _alarm(_sig, _frame):  # noqa: ANN001
    raise Hang


def _where(exc: BaseException) -> str:
    """The innermost frame of qoe's own code in the traceback (file:line)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/qoe/" in f.filename]
    f = frames[-1] if frames else traceback.extract_tb(exc.__traceback__)[-1]
    return f"{Path(f.filename).name}:{f.lineno}"


def _run_one(target: Target, data: bytes, tmp: Path, timeout: float) -> BaseException | None:
    path = tmp / f"input{target.suffix}"
    path.write_bytes(data)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return check(target, path)
    except Hang as exc:
        return exc
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def campaign(target: Target, n: int, rnd: random.Random, timeout: float, out: Path | None) -> tuple[int, Counter, float]:
    seeds = target.seed_bytes()
    failures: Counter = Counter()
    t0 = time.perf_counter()
    if not seeds:
        return 0, failures, 0.0
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for i in range(n):
            data = mutate(rnd.choice(seeds), rnd)
            exc = _run_one(target, data, tmp, timeout)
            if exc is None:
                continue
            key = "hang" if isinstance(exc, Hang) else f"{type(exc).__name__} at {_where(exc)}"
            if out is not None and key not in failures:
                out.mkdir(parents=True, exist_ok=True)
                (out / f"{target.name}-{len(failures)}{target.suffix}").write_bytes(data)
            failures[key] += 1
    return n, failures, time.perf_counter() - t0


def _atheris(target: Target, args: list[str]) -> None:
    import atheris  # noqa: PLC0415

    import importlib  # noqa: PLC0415
    import pkgutil  # noqa: PLC0415

    # every qoe module is imported here, so that each is instrumented: the packages import their
    # submodules lazily, and a module first imported later (qoe.capture, qoe.web.tcp, ...) would
    # give libFuzzer no coverage to steer by
    with atheris.instrument_imports(include=["qoe"]):
        import qoe  # noqa: PLC0415

        for mod in pkgutil.walk_packages(qoe.__path__, "qoe."):
            if not mod.name.startswith("qoe.plot"):  # matplotlib: not on any target's path
                importlib.import_module(mod.name)
    tmp = Path(tempfile.mkdtemp())
    seeds = target.seed_bytes()
    corpus = tmp / "corpus"
    corpus.mkdir()
    for i, s in enumerate(seeds):
        (corpus / f"seed{i}").write_bytes(s)
    found: Counter = Counter()
    runs = [0]

    def one(data: bytes) -> None:
        runs[0] += 1
        if runs[0] % 2000 == 0:
            print(f"{target.name}: {runs[0]} inputs, {sum(found.values())} failing, {len(found)} distinct", flush=True)
        exc = _run_one(target, data, tmp, 10.0)
        if exc is not None:
            key = "hang" if isinstance(exc, Hang) else f"{type(exc).__name__} at {_where(exc)}"
            if key not in found:
                print(f"FAILURE {key}: {exc!r}", flush=True)
                (tmp / f"failure-{len(found)}{target.suffix}").write_bytes(data)
            found[key] += 1

    print(f"{target.name}: failing inputs are written to {tmp}", flush=True)
    atheris.Setup([sys.argv[0], *args, str(corpus)], one)
    atheris.Fuzz()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", choices=sorted(TARGETS), action="append")
    ap.add_argument("--inputs", type=int, default=200)
    ap.add_argument("--short", action="store_true", help="25 inputs per target (CI)")
    ap.add_argument("--seed", type=int, default=2014)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds before an input counts as a hang")
    ap.add_argument("--out", type=Path, default=None, help="folder for the failing inputs")
    ap.add_argument("--engine", choices=("random", "atheris"), default="random")
    args, rest = ap.parse_known_args()
    signal.signal(signal.SIGALRM, _alarm)
    names = args.target or sorted(TARGETS)
    if args.engine == "atheris":
        if len(names) != 1:
            ap.error("atheris runs one --target at a time")
        _atheris(TARGETS[names[0]], [a for a in rest if a != "--"])
        return
    n = 25 if args.short else args.inputs
    rnd = random.Random(args.seed)
    print(f"{'target':<22} {'inputs':>7} {'failing':>8} {'distinct':>9} {'s/input':>8}")
    total = 0
    details = []
    for name in names:
        tried, failures, secs = campaign(TARGETS[name], n, rnd, args.timeout, args.out)
        total += sum(failures.values())
        print(f"{name:<22} {tried:>7} {sum(failures.values()):>8} {len(failures):>9} {secs / max(tried, 1):>8.3f}",
              flush=True)
        details += [f"  {name}: {k} (x{v})" for k, v in failures.most_common()]
    if details:
        print("failures:")
        print("\n".join(details))
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
