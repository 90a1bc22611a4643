"""qoe.voice.pesq against the ITU-T P.862 reference code: agreement and CPU time per file.

Reference: the PyPI package ``pesq`` 0.0.4, which wraps the ITU-T P.862 / P.862.2 ANSI-C
software (2.0, 10/2005); its narrow-band output is P.862.1 MOS-LQO, its wide-band output
P.862.2 MOS-LQO, so both are compared on the raw scale by inverting the mapping
(``qoe.mos.mos_lqo_to_raw``), the scale of P.862 Annex A's tolerance (clause A.3.2: at least
95 % of pairs within 0.05).

Corpus: ``benchmarks/_pesq_corpus.py`` (espeak-ng speech in 8 voices/languages, 8 s at
-26 dBov, through codecs, packet loss with and without concealment, noise, band limits,
level changes, clipping, constant and variable delay), at 8 kHz (scored nb) and 16 kHz
(scored nb and wb); plus the 40 Annex A VoIP pairs when ``../shared/conformance/p862`` is
present. Timing: CPU time (``time.process_time``) of each call, both implementations
alternating first, one thread (BLAS threads would bill idle spinning as CPU time).

Run: ``python benchmarks/pesq_vs_itu.py`` (``--short`` for CI; ``--cache DIR``).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import soundfile  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _pesq_corpus as corpus  # noqa: E402

from qoe.errors import NoSpeechError  # noqa: E402
from qoe.mos import mos_lqo_to_raw  # noqa: E402
from qoe.voice import pesq  # noqa: E402

try:
    from pesq import NoUtterancesError
    from pesq import pesq as itu_pesq
except ImportError:  # pragma: no cover - the test extra provides it
    raise SystemExit("the ITU reference wrapper is missing: pip install pesq==0.0.4 (qoe[test])") from None

TOLERANCE = 0.05  # P.862 Annex A, clause A.3.2
CONFORMANCE = Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "p862"


def _ours(x, y, fs, mode):
    t = time.process_time()
    try:
        r = pesq(x, y, fs=fs, mode=mode)
        raw = r.raw if mode == "nb" else 4.5 - 0.1 * r.d_sym - 0.0309 * r.d_asym
    except NoSpeechError:
        raw = None
    return raw, time.process_time() - t


def _itu(x, y, fs, mode):
    t = time.process_time()
    try:
        raw = float(mos_lqo_to_raw(itu_pesq(fs, x, y, mode), mode))
    except NoUtterancesError:
        raw = None
    return raw, time.process_time() - t


def _measure(pairs, mode):
    rows = []
    for i, (ref, deg, fs, label, category) in enumerate(pairs):
        x, fx = soundfile.read(ref)
        y, fy = soundfile.read(deg)
        assert fx == fy == fs
        if i % 2:
            (a, ta), (b, tb) = _ours(x, y, fs, mode), _itu(x, y, fs, mode)
        else:
            (b, tb), (a, ta) = _itu(x, y, fs, mode), _ours(x, y, fs, mode)
        rows.append(dict(label=label, category=category, ours=a, itu=b, t_ours=ta, t_itu=tb, seconds=y.size / fs))
    return rows


def _summary(name, rows):
    both = [r for r in rows if r["ours"] is not None and r["itu"] is not None]
    refused = sum(r["ours"] is None and r["itu"] is None for r in rows)
    disagree = len(rows) - len(both) - refused
    d = np.array([abs(r["ours"] - r["itu"]) for r in both]) if both else np.zeros(1)
    within = int(np.sum(d <= TOLERANCE))
    t_o = np.median([r["t_ours"] for r in rows]) * 1000
    t_i = np.median([r["t_itu"] for r in rows]) * 1000
    return (name, len(rows), within, 100.0 * within / max(len(both), 1), float(d.max()), float(d.mean()),
            refused, disagree, t_o, t_i, t_o / t_i)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="2 voices x 11 conditions, for CI")
    ap.add_argument("--cache", default=None, help="corpus cache folder (default $QOE_CACHE or ~/.cache/qoe)")
    args = ap.parse_args(argv)

    try:
        built = corpus.build(args.cache, short=args.short)
    except FileNotFoundError as exc:  # no espeak-ng / ffmpeg: the conformance set only
        print(f"corpus skipped: {exc}")
        built = []
    sets = {
        "nb  8 kHz": ("nb", [p for p in built if p.fs == 8000]),
        "nb 16 kHz": ("nb", [p for p in built if p.fs == 16000]),
        "wb 16 kHz": ("wb", [p for p in built if p.fs == 16000]),
    }
    results = {}
    for name, (mode, pairs) in sets.items():
        if not pairs:
            continue
        items = [(p.ref, p.deg, p.fs, f"{p.voice}/{p.condition}", p.category) for p in pairs]
        results[name] = _measure(items, mode)
    if (CONFORMANCE / "voipref_8k.txt").is_file():
        items = []
        for line in (CONFORMANCE / "voipref_8k.txt").read_text().strip().splitlines()[1:]:
            ref, deg, fs, _ = line.split("\t")
            items.append((CONFORMANCE / ref.split("/")[-1], CONFORMANCE / deg.split("/")[-1], int(fs),
                          deg.split("/")[-1], "Annex A VoIP"))
        results["Annex A 2(b) VoIP"] = _measure(items, "nb")

    head = ("set", "pairs", "within 0.05", "%", "max |d|", "mean |d|", "both refuse", "refusal differs",
            "ours ms", "ITU ms", "CPU ratio")
    if not results:
        print("nothing to measure: no corpus and no conformance data")
        return 0
    table = [_summary(name, rows) for name, rows in results.items()]
    every = [r for rows in results.values() for r in rows]
    table.append(_summary("all", every))
    print("Agreement of raw P.862 scores with the ITU reference, and median CPU time per pair")
    print(f"(tolerance {TOLERANCE}, P.862 Annex A A.3.2; files ~{np.median([r['seconds'] for r in every]):.1f} s)\n")
    fmt = "{:<18} {:>5} {:>11} {:>6} {:>8} {:>9} {:>11} {:>15} {:>8} {:>7} {:>9}"
    print(fmt.format(*head))
    for row in table:
        print(fmt.format(row[0], row[1], row[2], f"{row[3]:.1f}", f"{row[4]:.4f}", f"{row[5]:.5f}", row[6], row[7],
                         f"{row[8]:.1f}", f"{row[9]:.1f}", f"{row[10]:.2f}"))

    print("\nBy condition category (all sets): pairs, within 0.05, max |d|")
    cats = defaultdict(list)
    for r in every:
        if r["ours"] is not None and r["itu"] is not None:
            cats[r["category"]].append(abs(r["ours"] - r["itu"]))
    for cat, d in sorted(cats.items()):
        print(f"  {cat:<16} {len(d):>4} {sum(x <= TOLERANCE for x in d):>4} {max(d):.4f}")

    worst = sorted((r for r in every if r["ours"] is not None and r["itu"] is not None),
                   key=lambda r: -abs(r["ours"] - r["itu"]))[:8]
    print("\nLargest differences:")
    for name, rows in results.items():
        for r in rows:
            if r in worst:
                print(f"  {name:<18} {r['label']:<32} ours {r['ours']:.4f}  ITU {r['itu']:.4f}")
    for name, rows in results.items():
        for r in rows:
            if (r["ours"] is None) != (r["itu"] is None):
                print(f"  refusal differs: {name} {r['label']} ours={r['ours']} ITU={r['itu']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
