"""G.1030 one-page web model with the seed paper's bounds (IMC 2014 §9.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from qoe.errors import InputError
from qoe.web import g1030


@pytest.mark.parametrize(("preset", "t_min"), [("access", 0.56), ("backbone", 0.85)])
def test_bounds_map_to_ends_of_scale(preset, t_min):
    # Pujol et al. §9.1: t_min → 5 (excellent), 6 s → 1 (bad).
    got = g1030.mos([t_min, 6.0], preset=preset)
    assert got.tolist() == [5.0, 1.0]


def test_logarithmic_midpoint():
    # The geometric mean of the bounds lies half-way on a log scale → MOS 3.
    mid = math.sqrt(0.56 * 6.0)
    assert float(g1030.mos(mid)) == pytest.approx(3.0, abs=1e-12)


def test_worked_value():
    # 5 - 4 ln(1/0.56) / ln(6/0.56), worked by hand.
    expected = 5 - 4 * math.log(1 / 0.56) / math.log(6 / 0.56)
    assert float(g1030.mos(1.0)) == pytest.approx(expected, abs=1e-12)


def test_clipped_outside_bounds():
    assert g1030.mos([0.0, 0.1, 60.0]).tolist() == [5.0, 5.0, 1.0]


def test_seed_paper_examples_stay_bad():
    # §9.4: 9 s and 5 s both map to "bad"/"poor" territory; 9 s is clipped to 1.
    assert float(g1030.mos(9.0)) == 1.0
    assert float(g1030.mos(5.0)) < 1.5


def test_custom_bounds_and_vectorised():
    t = np.array([[1.0, 2.0], [4.0, 8.0]])
    got = g1030.mos(t, preset=None, t_min=1.0, t_max=8.0)
    assert got.shape == (2, 2)
    assert np.allclose(got, [[5.0, 5 - 4 / 3], [5 - 8 / 3, 1.0]])


def test_inverse():
    m = np.linspace(1, 5, 17)
    for preset in g1030.PRESETS:
        assert np.allclose(g1030.mos(g1030.plt_for_mos(m, preset=preset), preset=preset), m, atol=1e-12)


def test_monotone_decreasing():
    t = np.geomspace(0.56, 6.0, 100)
    assert np.all(np.diff(g1030.mos(t)) < 0)


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ([-1.0], {}, "must be >= 0"),
        ([float("nan")], {}, "NaN"),
        ([1.0], {"preset": "mobile"}, "unknown G.1030 preset 'mobile'"),
        ([1.0], {"preset": None}, "give a preset or both"),
        ([1.0], {"preset": None, "t_min": 5.0, "t_max": 2.0}, "0 < t_min < t_max"),
    ],
)
def test_bad_input(args, kwargs, match):
    with pytest.raises(InputError, match=match):
        g1030.mos(*args, **kwargs)
