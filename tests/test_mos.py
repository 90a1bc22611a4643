"""MOS scales: G.107 Annex B and Appendix I, P.862.1/.2, category labels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qoe import mos
from qoe.errors import InputError

# Round trips are algebraic identities; 1e-9 leaves room for float64 rounding only.
EXACT = 1e-9


def test_r_to_mos_default_case():
    # G.107 (06/2015) clause 7.7: all defaults give R = 93.2 and MOS 4.41 (Annex B).
    assert float(mos.r_to_mos(93.2062)) == pytest.approx(4.4094, abs=5e-5)


@pytest.mark.parametrize(
    ("r", "expected"),
    [
        # Annex B eq. (B-4) worked by hand: 1 + 0.035 R + R (R-60)(100-R) 7e-6.
        (-10.0, 1.0),
        (0.0, 1.0),
        (50.0, 1.0 + 1.75 + 50 * -10 * 50 * 7e-6),
        (60.0, 1.0 + 2.1),
        (80.0, 1.0 + 2.8 + 80 * 20 * 20 * 7e-6),
        (100.0, 4.5),
        (120.0, 4.5),
    ],
)
def test_r_to_mos_annex_b(r, expected):
    assert float(mos.r_to_mos(r)) == pytest.approx(expected, abs=1e-12)


def test_mos_to_r_round_trip_over_whole_scale():
    m = np.linspace(1.0, 4.5, 200_001)
    back = mos.r_to_mos(mos.mos_to_r(m))
    assert np.max(np.abs(back - m)) < EXACT


def test_mos_to_r_uses_spreadsheet_arctan2_order():
    # G.107 Appendix I writes arctan2(x, y) spreadsheet-style. With NumPy's (y, x) order
    # swapped the formula lands on another root: check that the implemented inverse is
    # the right one on the monotone part of the curve (R in [6.5, 100]).
    r = np.linspace(6.6, 100.0, 1001)
    assert np.allclose(mos.mos_to_r(mos.r_to_mos(r)), r, atol=1e-7)
    m = 4.0
    x = 18566 - 6750 * m
    y = 15 * math.sqrt(-903522 + 1113960 * m - 202500 * m * m)
    wrong = 20 / 3 * (8 - math.sqrt(226) * math.cos(math.atan2(x, y) / 3 + math.pi / 3))
    assert abs(float(mos.r_to_mos(wrong)) - m) > 0.01  # the trap is real


def test_mos_to_r_limits():
    assert float(mos.mos_to_r(4.5)) == 100.0
    assert float(mos.mos_to_r(5.0)) == 100.0
    assert float(mos.mos_to_r(1.0)) == 0.0
    assert float(mos.mos_to_r(0.5)) == 0.0


@given(st.floats(min_value=1.0, max_value=4.5))
def test_mos_to_r_round_trip_property(m):
    assert abs(float(mos.r_to_mos(mos.mos_to_r(m))) - m) < EXACT


def test_vectorised_shapes():
    grid = np.linspace(0, 100, 12).reshape(3, 4)
    assert mos.r_to_mos(grid).shape == (3, 4)
    assert mos.mos_to_r(mos.r_to_mos(grid)).shape == (3, 4)
    assert mos.r_to_mos(50.0).shape == ()


@pytest.mark.parametrize(
    ("mode", "slope", "offset"),
    [("nb", -1.4945, 4.6607), ("wb", -1.3669, 3.8224)],  # P.862.1 eq. (1); P.862.2 eq. (1)
)
def test_p862_mapping_equations(mode, slope, offset):
    raw = np.array([-0.5, 0.0, 1.0, 2.5, 4.5])
    expected = 0.999 + 4.0 / (1.0 + np.exp(slope * raw + offset))
    assert np.allclose(mos.raw_to_mos_lqo(raw, mode), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("mode", ["nb", "wb"])
def test_p862_inverse_round_trip(mode):
    raw = np.linspace(-0.5, 4.5, 1001)
    assert np.max(np.abs(mos.mos_lqo_to_raw(mos.raw_to_mos_lqo(raw, mode), mode) - raw)) < 1e-9


def test_p862_nb_top_of_scale():
    # P.862.1 clause 1: a raw 4.5 maps to MOS-LQO 4.55 (the highest raw score PESQ gives).
    assert float(mos.raw_to_mos_lqo(4.5, "nb")) == pytest.approx(4.5486, abs=1e-4)


def test_p862_inverse_outside_range():
    with pytest.raises(InputError, match="strictly between"):
        mos.mos_lqo_to_raw(5.0)


def test_acr_labels():
    got = mos.acr_label([1.0, 1.49, 1.5, 2.6, 3.49, 3.5, 4.41, 4.5, 5.0])
    assert got.tolist() == ["bad", "bad", "poor", "fair", "fair", "good", "good", "excellent", "excellent"]


def test_g109_categories():
    # G.109 Table 1: 90-100 best, 80-90 high, 70-80 medium, 60-70 low, 50-60 poor.
    got = mos.g109_category([100, 90, 89.99, 80, 70, 60, 50, 49.9])
    assert got.tolist() == ["best", "best", "high", "high", "medium", "low", "poor", "not recommended"]


def test_g114_classes():
    # G.114 clause 3: < 150 ms acceptable; 150–400 ms with care; > 400 ms not for planning.
    got = mos.g114_delay_class([0, 149.9, 150, 400, 400.1, 3000])
    assert got.tolist() == ["acceptable", "acceptable", "problematic", "problematic", "unacceptable", "unacceptable"]


def test_nan_is_refused():
    with pytest.raises(InputError, match="NaN"):
        mos.r_to_mos([1.0, float("nan")])


def test_mos_is_never_below_one():
    """G.107 (06/2015) eq. (B-4) dips to 0.9916 at R = 3.1 (1 + 0.1085 - 3.1*56.9*96.9*7e-6); a MOS
    is read on the 1-5 scale, so qoe clamps it there (issue 11, point 10)."""
    r = np.linspace(0.0, 6.5, 651)
    raw = 1 + 0.035 * r + r * (r - 60) * (100 - r) * 7e-6
    assert raw.min() < 0.992  # the Recommendation's own curve does dip
    out = mos.r_to_mos(r)
    assert out.min() == 1.0 and np.all(out[raw >= 1] == raw[raw >= 1])
    assert mos.mos_to_r(1.0) == 0.0 and float(mos.mos_to_r(mos.r_to_mos(7.0))) == pytest.approx(7.0, abs=1e-9)
