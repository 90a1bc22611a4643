"""The `qoe` command: version, help, emodel, web g1030, demo, and its error policy."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

import qoe
from qoe_cli.main import cli


@pytest.fixture
def run():
    runner = CliRunner()

    def _run(*args):
        return runner.invoke(cli, list(args), catch_exceptions=False)

    return _run


def test_version(run):
    res = run("--version")
    assert res.exit_code == 0
    assert qoe.__version__ in res.output


def test_help_lists_commands(run):
    res = run("--help")
    assert res.exit_code == 0
    for name in ("emodel", "web", "demo"):
        assert name in res.output


def test_emodel_defaults(run):
    res = run("emodel")
    assert res.exit_code == 0
    assert "93.2062" in res.output and "4.4094" in res.output


def test_emodel_json_with_options(run):
    res = run("emodel", "--mouth-to-ear-ms", "300", "--delay-sensitivity", "low", "--format", "json")
    assert res.exit_code == 0
    out = json.loads(res.output)
    assert out["r"] == pytest.approx(77.3328, abs=5e-5)  # DESIGN.md facts, T = Ta = 300, Tr = 600


def test_emodel_codec_loss_burst(run):
    res = run("emodel", "--codec", "G.711-plc", "--ppl", "2", "--burst-r", "1", "--format", "json")
    assert json.loads(res.output)["ie_eff"] == pytest.approx(95 * 2 / 27.1, abs=1e-9)


def test_emodel_wideband_preset(run):
    # G.107.1 with a G.113 Appendix IV preset: Ie,eff,WB = 20 + 75 * 2 / (2 + 4.3), no BurstR
    res = run("emodel", "--band", "wb", "--codec", "G.722.2-12.65-diotic", "--ppl", "2", "--format", "json")
    out = json.loads(res.output)
    assert out["ie_eff"] == pytest.approx(20 + 75 * 2 / 6.3, abs=1e-9) and out["band"] == "wb"


def test_emodel_param_overrides(run):
    res = run("emodel", "--param", "a=10", "--format", "json")
    assert json.loads(res.output)["r"] == pytest.approx(103.2062, abs=5e-5)


def test_emodel_csv_to_file(run, tmp_path):
    out = tmp_path / "r.csv"
    res = run("emodel", "--format", "csv", "-o", str(out))
    assert res.exit_code == 0 and res.output == ""
    header, row = out.read_text().splitlines()
    assert header.startswith("r,mos,") and row.startswith("93.2062")


def test_web_g1030(run):
    res = run("web", "g1030", "0.85", "6", "--preset", "backbone", "--format", "json")
    assert res.exit_code == 0
    assert [r["mos"] for r in json.loads(res.output)] == [5.0, 1.0]


def test_demo_runs_on_bundled_data(run, data_dir, tmp_path):
    heat = tmp_path / "voice.png"
    res = run("demo", str(data_dir), "--heatmap", str(heat))
    assert res.exit_code == 0
    assert "E-model" in res.output and "G.1030" in res.output
    # the E-model sweep goes past G.107 Table 3's 500 ms on purpose: its note says so, no warning
    assert "qoe: warning" not in res.output and "outside G.107 Table 3's permitted range" in res.output
    if (data_dir / "voice" / "captures" / "scenarios.jsonl").is_file():
        assert heat.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"heatmap: {heat}" in res.output
    if (data_dir / "web" / "captures" / "scenarios.jsonl").is_file():
        # one page per curl/wget load; the uplink-loaded big buffer is RTT-dominated (seed paper §9.2)
        assert "Web page loads (data/web)" in res.output
        line = next(ln for ln in res.output.splitlines() if ln.strip().startswith("http11-up-b64-curl "))
        assert "rtt-dominated" in line
    if (data_dir / "video" / "captures" / "manifest.json").is_file():
        # one row per bundled video capture; the lossless ones equal the reference (PSNR inf)
        assert "RTP/UDP video (data/video)" in res.output and "udpts-idle-b64" in res.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("emodel", "--codec", "nope"), "unknown nb codec 'nope'"),
        (("emodel", "--param", "telr"), "--param expects NAME=VALUE"),
        (("emodel", "--param", "telr=abc"), "value must be a number"),
        (("emodel", "--mouth-to-ear-ms", "-5"), "must be >= 0"),
        (("web", "g1030", "--", "-1"), "must be >= 0"),
        (("demo", "/nonexistent/qoe-data"), "not a directory"),
    ],
)
def test_errors_are_one_line_exit_2(args, message):
    res = CliRunner().invoke(cli, list(args))
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("qoe: error:") and message in lines[0]
    assert "Traceback" not in res.output


def test_a_capture_cut_short_is_warned_about_once(run, data_dir, tmp_path):
    # qoe score reads the capture once per kind (RTP scan, then TCP for page loads): the reader
    # warns on each pass, the command prints each warning text once
    src = (data_dir / "voice" / "captures" / "down-b8_client.pcap").read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(src[: len(src) // 2 + 7])  # inside a record
    res = CliRunner().invoke(cli, ["score", str(cut), "--format", "csv"], catch_exceptions=False)
    assert res.exit_code == 0
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("qoe: warning:") and str(cut) in ln]
    assert len(lines) == 1, res.stderr


@pytest.mark.parametrize("args", [["emodel"], ["emodel", "--bogus"], ["--help"]])
def test_the_console_entry_runs_the_command_with_the_collector_on_and_leaves_the_heap_frozen(args):
    """qoe_cli.main.main (the `qoe` command) imports the command's modules with the garbage
    collector off, then freezes what they made and turns it back on for the command; when the
    command ends (succeeded or failed) what is alive is frozen too, so that the interpreter's
    shutdown runs no collection over it. Its output is whole, and a collector the caller had
    turned off stays off."""
    from fresh_python import run_fresh  # noqa: PLC0415 - tests/fresh_python.py, a helper module

    out = run_fresh('''
        import gc, sys
        import click
        import qoe_cli.emodel_cmd as cmd  # the emodel command's module: its callback is watched
        from qoe_cli.main import main
        seen = []
        callback = cmd.emodel.callback
        def watched(*a, **k):
            seen.append((gc.isenabled(), gc.get_freeze_count() > 1000))
            return callback(*a, **k)
        cmd.emodel.callback = watched
        sys.argv = ["qoe", *sys.argv[1:]]
        assert gc.get_freeze_count() == 0 and gc.isenabled()
        try:
            main()
        except SystemExit as e:
            print("exit", e.code)
        print("during", seen, "after", gc.isenabled(), gc.get_freeze_count() > 1000)
        gc.disable()
        try:
            main()
        except SystemExit:
            pass
        print("off stays off", not gc.isenabled())
    ''', *args)
    lines = [x for x in out.splitlines() if x.startswith(("exit ", "during ", "off "))]
    if args == ["emodel"]:
        assert out.startswith("r       93.2062\nmos     4.4094\n")  # as test_emodel_defaults
        assert lines == ["exit 0", "during [(True, True)] after True True", "off stays off True"]
    else:  # no command ran: the collector is back on all the same
        assert lines == [f"exit {0 if args == ['--help'] else 2}", "during [] after True True", "off stays off True"]


def test_the_command_sets_openblas_idle_workers_to_sleep_before_numpy_loads():
    """The qoe command puts NumPy's idle OpenBLAS workers to sleep at once
    (OPENBLAS_THREAD_TIMEOUT=4) unless the user set it: the variable is set before NumPy is
    imported (OpenBLAS reads it when it loads), and a user's value is kept."""
    from fresh_python import run_fresh  # noqa: PLC0415 - tests/fresh_python.py, a helper module

    code = "import os, sys, qoe_cli.main; print(os.environ['OPENBLAS_THREAD_TIMEOUT'], 'numpy' in sys.modules)"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    assert run_fresh(code, env=env).split() == ["4", "False"]
    assert run_fresh(code, env={**env, "OPENBLAS_THREAD_TIMEOUT": "12"}).split() == ["12", "False"]


def test_a_command_without_blas_work_loads_numpy_with_one_openblas_thread():
    """``qoe streams`` (no BLAS in its work) sets OPENBLAS_NUM_THREADS=1 before NumPy loads, so
    OpenBLAS starts no worker threads; ``qoe video`` (frame alignment and PSNR use BLAS) does
    not; a user's value is kept. Read back after the command ran, in a fresh interpreter."""
    from fresh_python import run_fresh  # noqa: PLC0415 - tests/fresh_python.py, a helper module

    code = """
        import os, sys
        from qoe_cli.main import main
        sys.argv = ['qoe', *sys.argv[1:]]
        try:
            main()
        except SystemExit:
            pass
        print('BLAS', os.environ.get('OPENBLAS_NUM_THREADS'), 'numpy' in sys.modules)
    """
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    voice = str(Path(__file__).resolve().parents[1] / "data" / "voice" / "field" / "dtmf.pcap")

    def blas(*args: str, **extra: str) -> list[str]:
        out = run_fresh(code, *args, env={**env, **extra})
        return next(line for line in out.splitlines() if line.startswith("BLAS ")).split()[1:]

    assert blas("streams", voice, "--format", "csv") == ["1", "True"]
    assert blas("streams", voice, "--format", "csv", OPENBLAS_NUM_THREADS="3") == ["3", "True"]
    assert blas("video", "--help")[0] == "None"


def test_a_capture_on_standard_input(data_dir):
    """``-`` reads the capture from standard input (tcpdump -w - | qoe streams -), gzip too, and
    a HAR for ``qoe web pages -``: the same output as from the file (but the file's name), and the
    spooled copy is removed when the command ends."""
    import glob
    import gzip
    import tempfile

    cap = data_dir / "voice" / "captures" / "down-b8_client.pcap"
    har = data_dir / "web" / "browser" / "captures" / "h2-idle.har"
    if not (cap.is_file() and har.is_file()):
        pytest.skip("bundled samples not present")
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "qoe-stdin-*")))
    runner = CliRunner()
    want = runner.invoke(cli, ["streams", str(cap), "--format", "json"], catch_exceptions=False)
    for data in (cap.read_bytes(), gzip.compress(cap.read_bytes())):
        got = runner.invoke(cli, ["streams", "-", "--format", "json"], input=data, catch_exceptions=False)
        assert got.exit_code == 0, got.output
        assert json.loads(got.stdout)["streams"] == json.loads(want.stdout)["streams"]
    pages = runner.invoke(cli, ["web", "pages", "-", "--format", "json"], input=har.read_bytes(), catch_exceptions=False)
    assert pages.exit_code == 0, pages.output
    assert json.loads(pages.stdout) == json.loads(runner.invoke(cli, ["web", "pages", str(har), "--format", "json"]).stdout)
    assert set(glob.glob(os.path.join(tempfile.gettempdir(), "qoe-stdin-*"))) == before
    empty = runner.invoke(cli, ["streams", "-"], input=b"")
    assert empty.exit_code == 2 and "standard input held no bytes" in empty.output
