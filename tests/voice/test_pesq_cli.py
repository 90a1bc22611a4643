"""``qoe pesq`` on the command line (Click's CliRunner)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile
from click.testing import CliRunner

from qoe.voice import pesq
from qoe_cli.main import cli


@pytest.fixture
def pair(tmp_path, pesq_speech):
    x = pesq_speech(16000, seconds=5.0, seed=9)
    rng = np.random.default_rng(2)
    y = x + 0.002 * rng.standard_normal(x.size)
    ref, deg = tmp_path / "ref.wav", tmp_path / "deg.wav"
    soundfile.write(ref, x, 16000, subtype="FLOAT")
    soundfile.write(deg, y, 16000, subtype="FLOAT")
    return ref, deg, x, y


def test_summary_json(pair):
    ref, deg, x, y = pair
    out = CliRunner().invoke(cli, ["pesq", str(ref), str(deg), "--format", "json"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.output)
    assert got["mos_lqo"] == pytest.approx(pesq(x, y, fs=16000).mos_lqo)
    assert got["mode"] == "nb" and "frame_disturbance" not in got


def test_wide_band_table(pair):
    ref, deg, x, y = pair
    out = CliRunner().invoke(cli, ["pesq", str(ref), str(deg), "--mode", "wb"])
    assert out.exit_code == 0, out.output
    line = next(l for l in out.output.splitlines() if l.startswith("mos_lqo"))
    assert float(line.split()[1]) == pytest.approx(pesq(x, y, fs=16000, mode="wb").mos_lqo, abs=5e-4)


def test_frames_csv_and_resampling(pair, tmp_path):
    ref, deg, _, _ = pair
    target = tmp_path / "frames.csv"
    out = CliRunner().invoke(cli, ["pesq", str(ref), str(deg), "--fs", "8000", "--frames", "--format", "csv",
                                   "-o", str(target)])
    assert out.exit_code == 0, out.output
    lines = target.read_text().splitlines()
    assert lines[0] == "time_s,disturbance,disturbance_asym"
    assert len(lines) > 100  # 16 ms frames over ~4 s of active signal


def test_error_is_one_line_exit_2(pair, tmp_path):
    ref, _, x, _ = pair
    stereo = tmp_path / "stereo.wav"
    soundfile.write(stereo, np.column_stack([x, x]), 16000)
    out = CliRunner().invoke(cli, ["pesq", str(ref), str(stereo)])
    assert out.exit_code == 2
    assert "has 2 channels" in out.output and "Traceback" not in out.output
