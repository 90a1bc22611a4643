"""P.862 on the other ITU-supplied pairs of the conformance folder (``u_a*``), against the oracle.

The conformance folder's ``u_a[fm]1sNN.wav`` references and ``...bXcY.wav`` degraded files
(8 kHz, 8 s) come without listed scores, so the reference values here come from the ITU
code itself, run on the same files through the PyPI ``pesq`` package (test extra only):
``pesq.pesq(8000, ref, deg, "nb")``. Compared on the raw scale, where Annex A states its
0.05 tolerance. Skipped when ``../shared/conformance/p862`` is absent; the files are read
from there, never copied.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import soundfile

from qoe.mos import mos_lqo_to_raw
from qoe.voice import pesq

itu = pytest.importorskip("pesq")

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("QOE_P862_CONFORMANCE", ROOT.parent / "shared" / "conformance" / "p862"))
PAIRS = sorted(DATA.glob("u_a*b*c*.wav")) if DATA.is_dir() else []

# P.862 Annex A §A.3.2: a conformant implementation lies within 0.05 raw of the reference.
ANNEX_A = 0.05


@pytest.mark.skipif(not PAIRS, reason=f"no u_a* conformance pairs in {DATA}")
@pytest.mark.parametrize("deg_path", PAIRS, ids=lambda p: p.stem)
def test_agrees_with_itu_code(deg_path):
    ref_path = deg_path.with_name(deg_path.stem[: deg_path.stem.rindex("b")] + ".wav")
    x, fs = soundfile.read(ref_path, dtype="int16")
    y, fs_y = soundfile.read(deg_path, dtype="int16")
    assert fs == fs_y == 8000
    oracle_raw = float(mos_lqo_to_raw(itu.pesq(fs, x, y, "nb")))
    ours = pesq(x, y, fs=fs)
    assert abs(ours.raw - oracle_raw) <= ANNEX_A
