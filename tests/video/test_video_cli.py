"""``qoe video compare`` through Click's CliRunner."""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from qoe.video import compare
from qoe_cli.main import cli


def invoke(*args):
    return CliRunner().invoke(cli, ["video", "compare", *map(str, args)])


def test_summary_table(clip):
    out = invoke(clip.ref, clip.dist)
    assert out.exit_code == 0, out.output
    lines = dict(l.split(None, 1) for l in out.output.splitlines())
    want = compare(clip.ref, clip.dist)
    assert float(lines["psnr_db"]) == pytest.approx(want.psnr.summary().clip, abs=1e-4)
    assert float(lines["ssim"]) == pytest.approx(want.ssim.summary().clip, abs=1e-4)


def test_json_is_strict_and_per_frame(clip):
    out = invoke(clip.ref, clip.ref, "--format", "json", "--per-frame")
    assert out.exit_code == 0, out.output
    assert "Infinity" not in out.output
    got = json.loads(out.output)
    assert len(got["per_frame"]) == 20 and got["per_frame"][0]["psnr_db"] is None
    assert got["psnr"]["summary"]["identical_frames"] == 20


def test_csv_per_frame_with_options(clip, tmp_path):
    target = tmp_path / "frames.csv"
    out = invoke(clip.ref, clip.dist, "--per-frame", "--variant", "ffmpeg", "--planes", "yuv", "--format", "csv",
                 "-o", target)
    assert out.exit_code == 0, out.output
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    assert len(rows) == 20
    ff = clip.ffmpeg.ssim  # FFmpeg's ssim stats file (conftest.ffmpeg_scores command)
    assert float(rows[3]["ssim"]) == pytest.approx(ff[3]["All"], abs=1e-5)


def test_bad_input_is_one_line_exit_2(clip, variants):
    out = invoke(clip.ref, variants["small"])
    assert out.exit_code == 2
    assert "320x240" in out.output and "352x288" in out.output
    out = invoke(clip.ref, variants["text"])
    assert out.exit_code == 2 and "notes.txt" in out.output
    out = invoke(clip.ref, clip.dist, "--variant", "nope")
    assert out.exit_code == 2  # Click's own usage error
