"""PSNR/SSIM → MOS tables at their boundaries (values from the tables' sources, see qoe.video.mos)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from qoe.video import PSNR_TABLES, SSIM_TABLES, psnr_to_mos, ssim_to_mos

EPS = 1e-9


# Zinner et al. 2010: PSNR ≥ 45 → 5, ≥ 33 → 4, ≥ 27.4 → 3, ≥ 18.7 → 2, else 1
@pytest.mark.parametrize("bound, mos", [(45.0, 5), (33.0, 4), (27.4, 3), (18.7, 2)])
def test_zinner_psnr_boundaries(bound, mos):
    assert psnr_to_mos(bound) == mos
    assert psnr_to_mos(bound - EPS) == mos - 1


# Zinner et al. 2010: SSIM ≥ 0.99 → 5, ≥ 0.95 → 4, ≥ 0.88 → 3, ≥ 0.5 → 2, else 1
@pytest.mark.parametrize("bound, mos", [(0.99, 5), (0.95, 4), (0.88, 3), (0.5, 2)])
def test_zinner_ssim_boundaries(bound, mos):
    assert ssim_to_mos(bound) == mos
    assert ssim_to_mos(bound - EPS) == mos - 1


# EvalVid (Klaue et al. 2003): > 37 → 5, 31–37 → 4, 25–31 → 3, 20–25 → 2, < 20 → 1; "> 37" is
# strict, so a boundary value takes the lower score.
@pytest.mark.parametrize("bound, mos", [(37.0, 5), (31.0, 4), (25.0, 3), (20.0, 2)])
def test_evalvid_psnr_boundaries(bound, mos):
    assert psnr_to_mos(bound, table="evalvid") == mos - 1
    assert psnr_to_mos(bound + EPS, table="evalvid") == mos


def test_extremes_nan_and_shape():
    assert psnr_to_mos(math.inf) == 5 and psnr_to_mos(math.inf, table="evalvid") == 5  # identical frames
    assert psnr_to_mos(0.0) == 1 and ssim_to_mos(-0.3) == 1 and ssim_to_mos(1.0) == 5
    assert math.isnan(float(psnr_to_mos(math.nan)))
    out = ssim_to_mos(np.array([[0.2, 0.9], [0.97, 0.995]]))
    assert out.shape == (2, 2) and out.dtype == np.float64
    assert out.tolist() == [[1, 3], [4, 5]]


def test_tables_cite_their_source():
    assert "Zinner" in PSNR_TABLES["zinner2010"].source and "EvalVid" in PSNR_TABLES["evalvid"].source
    assert "Zinner" in SSIM_TABLES["zinner2010"].source
