"""Every output of ``qoe score`` over every capture in ``data/``, written to a folder, to compare two versions.

Runs the CLI in this process (``click.testing.CliRunner``) on each pcap/pcapng under
``data/`` (gzip-compressed ones too), with every ``--format`` (json written with ``-o`` to
a file, csv and table to standard output) and each ``--details`` table (csv and table; a
table the report does not have gives its error), plus a few runs with reference speech or video (the ``plays`` and
``frames`` tables). For each run it writes the output, the standard error (warnings and
errors) and the exit code to ``OUT/<n>.out`` and ``OUT/<n>.err`` (the checkout's own path
written ``ROOT``, so that two checkouts compare), and the command line to
``OUT/index.txt``; each run starts with the warning registries cleared, as a fresh
process would. Then compare two folders::

    PYTHONPATH=<old>/src:<old>/cli python tools/score_outputs.py /tmp/old
    PYTHONPATH=$PWD/src:$PWD/cli  python tools/score_outputs.py /tmp/new
    python tools/score_outputs.py --compare /tmp/old /tmp/new

``--compare`` prints the number of runs compared and each one that differs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
DETAILS = ("windows", "plays", "frames", "objects")
SPEECH = DATA / "voice" / "speech" / "en_us_male_8k.wav"
VIDEO_REF = DATA / "video" / "reference" / "clip.ts"


_SUFFIXES = (".pcap", ".pcapng", ".pcap.gz", ".pcapng.gz")  # (the streaming sessions are gzip-compressed)


def _captures(under: str | None = None) -> list[Path]:
    top = DATA / under if under else DATA
    return sorted(p for p in top.rglob("*") if p.name.endswith(_SUFFIXES) and p.is_file())


def _cases(under: str | None = None, kind: str | None = None) -> list[list[str]]:
    """The argument lists (after ``score``), without the format."""
    out: list[list[str]] = []
    for cap in _captures(under):
        out.append([str(cap)] + (["--kind", kind] if kind else []))
    if under or kind:  # a part of data/: the captures alone
        return out
    for name in ("up-b256", "down-b8"):
        client = DATA / "voice" / "captures" / f"{name}_client.pcap"
        server = DATA / "voice" / "captures" / f"{name}_server.pcap"
        if client.is_file():
            out.append([str(client), "--ref", str(SPEECH), "--sender-capture", str(server)])
    for name in ("h264-down-b8", "udpts-down-b64"):
        client = DATA / "video" / "captures" / f"{name}_client.pcap"
        if client.is_file():
            out.append([str(client), "--ref", str(VIDEO_REF)])
    return out


def _runs(under: str | None = None, kind: str | None = None, json_only: bool = False) -> list[list[str]]:
    runs = []
    for args in _cases(under, kind):
        runs += [[*args, "--format", "json"]]
        if json_only:
            continue
        runs += [[*args, "--format", "csv"], [*args, "--format", "table"]]
        for table in DETAILS:
            runs += [[*args, "--format", fmt, "--details", table] for fmt in ("csv", "table")]
    return runs


def write(out: Path, under: str | None = None, kind: str | None = None, json_only: bool = False) -> int:
    """Run every case (of ``data/<under>``, with ``--kind kind``); return the number of runs."""
    from click.testing import CliRunner  # noqa: PLC0415

    from qoe_cli.main import cli  # noqa: PLC0415

    out.mkdir(parents=True, exist_ok=True)
    runner = CliRunner()
    index = []
    runs = _runs(under, kind, json_only)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for n, args in enumerate(runs):
            warnings.simplefilter("ignore", ImportWarning)  # changes no filter; clears every warning registry
            dest = None
            if args[-1] == "json":
                dest = Path(tmp) / "out.json"
                args = [*args, "-o", str(dest)]
            res = runner.invoke(cli, ["score", *args], catch_exceptions=True)
            text = res.stdout + (dest.read_text() if dest is not None and dest.exists() else "")
            if dest is not None:
                dest.unlink(missing_ok=True)
            exc = "" if res.exception is None or isinstance(res.exception, SystemExit) else repr(res.exception)
            # the tree's own path (in JSON's file names, messages) as ROOT: two checkouts compare
            (out / f"{n}.out").write_text(text.replace(str(ROOT), "ROOT"))
            (out / f"{n}.err").write_text(f"exit {res.exit_code} {exc}\n{res.stderr}".replace(str(ROOT), "ROOT"))
            index.append(" ".join(a.replace(str(ROOT) + "/", "").replace(tmp, "TMP") for a in args))
            print(f"{n + 1}/{len(runs)} {time.perf_counter() - t0:.0f}s {index[-1]}", file=sys.stderr, flush=True)
    (out / "index.txt").write_text("\n".join(index) + "\n")
    return len(runs)


def compare(a: Path, b: Path) -> int:
    """Print the runs whose output or standard error differ, matched by their command (a
    capture added to data/ since the first folder was written is listed as new, not
    compared); return how many differ."""
    runs_a = {cmd: n for n, cmd in enumerate((a / "index.txt").read_text().splitlines())}
    runs_b = {cmd: n for n, cmd in enumerate((b / "index.txt").read_text().splitlines())}
    for cmd in runs_a.keys() - runs_b.keys():
        print(f"only in {a}: qoe score {cmd}")
    for cmd in runs_b.keys() - runs_a.keys():
        print(f"only in {b}: qoe score {cmd}")
    both = [cmd for cmd in runs_a if cmd in runs_b]
    bad = 0
    for cmd in both:
        for ext in ("out", "err"):
            if (a / f"{runs_a[cmd]}.{ext}").read_bytes() != (b / f"{runs_b[cmd]}.{ext}").read_bytes():
                bad += 1
                print(f"differs ({ext}): qoe score {cmd}")
    errors = sum(1 for cmd in both if not (a / f"{runs_a[cmd]}.err").read_text().startswith("exit 0"))
    print(f"{len(both)} runs compared (output and standard error; {errors} of them end in an error): "
          f"{bad} difference(s); {len(runs_b.keys() - runs_a.keys())} new, {len(runs_a.keys() - runs_b.keys())} gone")
    return bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--compare", action="store_true", help="compare two folders written before")
    ap.add_argument("--under", help="only the captures under data/UNDER (e.g. voice), without the reference runs")
    ap.add_argument("--kind", help="score with --kind KIND (e.g. voice)")
    ap.add_argument("--json-only", action="store_true", help="only --format json")
    a = ap.parse_args()
    if a.compare:
        sys.exit(1 if compare(*a.folders) else 0)
    print(f"{write(a.folders[0], a.under, a.kind, a.json_only)} runs")


if __name__ == "__main__":
    main()
