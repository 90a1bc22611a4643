"""Every flag of every ``qoe`` command is the name of what it sets (issue 21).

A flag is the name of the option field it sets (CallOptions, VideoOptions, WebOptions,
StreamingOptions) or, for commands with no options class, of the library function's keyword
it is passed to (``qoe emodel --ppl`` is ``r_factor(ppl=)``); a flag repeated for a tuple
field may be its singular (``--srtp-key`` for ``srtp_keys``). The few flags that set no option
(input files, which table to print, where to write it) are listed in :data:`NOT_OPTIONS` with
what they are. Old spellings stay, hidden, for one release: they print a deprecation naming the
new flag on standard error, and given beside the new flag they are a usage error.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import qoe
import qoe.batch
import qoe.plot
from qoe.rtp import scan_capture
from qoe.video import VideoOptions, compare
from qoe.video.has import StreamingOptions
from qoe.voice import CallOptions
from qoe.voice import emodel as em
from qoe.voice.io import capture_delays, extract_wav
from qoe.voice.p862 import pesq_files
from qoe.web import WebOptions, g1030
from qoe_cli.main import cli

DATA = Path(__file__).resolve().parents[1] / "data"
VIDEO = DATA / "video" / "captures" / "h264-idle-b64_client.pcap"


def _fields(*classes: type) -> set[str]:
    return {name for cls in classes for name in cls.names()}


def _params(*funcs) -> set[str]:
    return {name for f in funcs for name in inspect.signature(f).parameters}


#: What each command's flags are named after: the options it builds, the function it calls.
VOCABULARY: dict[str, set[str]] = {
    "score": _fields(CallOptions, VideoOptions, WebOptions, StreamingOptions) | _params(qoe.api.iter_score),
    "plot": _fields(CallOptions, VideoOptions, WebOptions) | _params(qoe.score),
    "report": _params(qoe.plot.heatmap),
    "batch": _params(qoe.batch.run),
    "delay": _params(capture_delays),
    "extract": _params(extract_wav),
    "emodel": _params(em.r_factor) | set(em.G107_DEFAULTS),
    "pesq": _params(pesq_files),
    "streams": _params(scan_capture),
    "demo": set(),
    "video compare": _params(compare),
    "web g1030": _params(g1030.mos),
    "web pages": _fields(WebOptions),
    "web har": _fields(WebOptions),
    "has sessions": _fields(StreamingOptions),
    "has plot": _fields(StreamingOptions),
    "has p1203-input": _fields(StreamingOptions),
}

#: Flags that set no option, per command ("*": every command), and what they are.
NOT_OPTIONS: dict[str, dict[str, str]] = {
    "*": {"--format": "output format", "--output": "output file", "-o": "output file"},
    "score": {"--ref": "reference files (qoe.score's reference)", "--details": "the table to print"},
    "plot": {"--ref": "reference files (qoe.score's reference)", "--max-figures": "how many figures to draw"},
    "emodel": {"--param": "any G.107 Table 3 parameter as NAME=VALUE"},
    "pesq": {"--frames": "print the per-frame table"},
    "streams": {"--sdp-only": "scan_capture(heuristic=False)", "--all-columns": "the table's columns"},
    "demo": {"--heatmap": "figure path"},
    "video compare": {"--per-frame": "print the per-frame table"},
    "web pages": {"--objects": "print one row per object"},
    "has sessions": {"--details": "the table to print"},
    "has p1203-input": {"--session": "which session of the capture"},
}


def _commands(group: click.Group = cli, prefix: str = "") -> dict[str, click.Command]:
    ctx = click.Context(group)
    out: dict[str, click.Command] = {}
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        path = f"{prefix} {name}".strip()
        if isinstance(cmd, click.Group):
            out.update(_commands(cmd, path))
        else:
            out[path] = cmd
    return out


COMMANDS = _commands()


def test_every_command_is_checked():
    assert sorted(COMMANDS) == sorted(VOCABULARY)


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_each_flag_is_an_option_field_or_a_documented_non_option(path):
    vocab = VOCABULARY[path]
    documented = {**NOT_OPTIONS["*"], **NOT_OPTIONS.get(path, {})}
    bad = []
    for p in COMMANDS[path].params:
        if not isinstance(p, click.Option) or getattr(p, "renamed_to", None):
            continue
        for flag in p.opts + p.secondary_opts:
            name = flag.lstrip("-").replace("-", "_")
            if flag in documented or name in vocab:
                continue
            if p.multiple and name + "s" in vocab:  # --srtp-key, repeated: srtp_keys
                continue
            if flag.startswith("--no-") and name[3:] in vocab:  # --no-show-counts
                continue
            bad.append(flag)
    assert not bad, f"qoe {path}: flags that name no option field or keyword of what it calls: {bad}"


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_old_spellings_are_hidden_and_name_a_flag_of_the_command(path):
    flags = {f for p in COMMANDS[path].params if isinstance(p, click.Option) for f in p.opts}
    for p in COMMANDS[path].params:
        new = getattr(p, "renamed_to", None)
        if new is not None:
            assert p.hidden and new.split("/")[0] in flags, (path, p.opts, new)


def _run(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_emodel_old_flags_still_work_with_a_deprecation_naming_the_new_one():
    new = _run("emodel", "--mouth-to-ear-ms", "300", "--ppl", "2", "--burst-r", "1.5", "--format", "json")
    old = _run("emodel", "--delay-ms", "300", "--loss-pct", "2", "--burst-ratio", "1.5", "--format", "json")
    assert new.exit_code == old.exit_code == 0
    assert json.loads(old.stdout) == json.loads(new.stdout)
    for o, n in (("--delay-ms", "--mouth-to-ear-ms"), ("--loss-pct", "--ppl"), ("--burst-ratio", "--burst-r")):
        assert f"qoe: warning: {o} is deprecated: use {n}" in old.stderr
    assert "deprecated" not in new.stderr


def test_old_and_new_spelling_together_is_a_usage_error():
    res = _run("emodel", "--delay-ms", "300", "--mouth-to-ear-ms", "200")
    assert res.exit_code == 2 and "--delay-ms is the old spelling of --mouth-to-ear-ms" in res.stderr


def test_old_boolean_pair_still_works(tmp_path):
    pytest.importorskip("matplotlib")
    table = tmp_path / "r.csv"
    table.write_text("buffer,workload,mos\n8,up,3.5\n64,up,2.0\n")
    res = _run("report", str(table), "--x", "buffer", "--y", "workload", "--counts", "-o", str(tmp_path / "h.png"))
    assert res.exit_code == 0, res.output
    assert "--counts/--no-counts is deprecated: use --show-counts/--no-show-counts" in res.stderr and (tmp_path / "h.png").stat().st_size > 0


needs_video = pytest.mark.skipif(not VIDEO.is_file(), reason="bundled video sample not present")


def _inputs(*args: str) -> dict:
    res = _run("score", str(VIDEO), "--kind", "video", "--format", "json", *args)
    assert res.exit_code == 0, res.output
    return res, json.loads(res.stdout)["inputs"]


@needs_video
def test_score_flags_are_the_video_option_fields_and_the_old_ones_still_work():
    res, new = _inputs("--jitter-buffer", "fixed:200", "--variant", "ffmpeg")
    assert (new["jitter_buffer"], new["variant"]) == ("fixed:200", "ffmpeg")
    assert "deprecated" not in res.stderr
    res, old = _inputs("--video-jitter-buffer", "fixed:200", "--ssim-variant", "ffmpeg")
    assert old == new
    assert "--video-jitter-buffer is deprecated: use --jitter-buffer with --kind video" in res.stderr
    assert "--ssim-variant is deprecated: use --variant" in res.stderr


@needs_video
def test_score_jitter_buffer_without_a_kind_that_has_one_is_ambiguous():
    """As ``qoe.score(jitter_buffer=...)`` without ``kind=``: an option of voice and video."""
    for kind in ("auto", "web"):
        res = _run("score", str(VIDEO), "--kind", kind, "--jitter-buffer", "fixed:60")
        assert res.exit_code == 2
        assert f"--jitter-buffer is ambiguous with --kind {kind}" in res.stderr and "--kind voice" in res.stderr
    with pytest.raises(qoe.InputError, match="ambiguous"):
        qoe.score(VIDEO, jitter_buffer="fixed:60")
