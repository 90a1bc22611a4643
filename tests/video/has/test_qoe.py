"""The linear QoE (Yin et al. 2015) against hand-worked examples, and its parameter sets."""

from __future__ import annotations

import math

import pytest

from qoe.errors import InputError
from qoe.video.has import PRESETS, StreamingOptions, linear_qoe
from qoe.video.has.yin import quality


def test_hand_worked_yin_balanced():
    """Four 2 s chunks at 300, 600, 600, 150 kbit/s, 1.5 s of stalls, 0.8 s startup, Yin et al.
    "Balanced" (q(R) = R in kbit/s, λ = 1, μ = μ_s = 3000), by hand:
    Σq = 300 + 600 + 600 + 150 = 1650; Σ|Δq| = 300 + 0 + 450 = 750;
    QoE = 1650 − 1·750 − 3000·1.5 − 3000·0.8 = −6000."""
    qoe = linear_qoe([300e3, 600e3, 600e3, 150e3], 1.5, 0.8, params=PRESETS["yin-balanced"])
    assert qoe == pytest.approx(-6000.0)


def test_hand_worked_pensieve_log_and_hd():
    """QoE_log with R_min = 0.3 Mbit/s: chunks 0.3, 1.2, 1.2 Mbit/s, no stall, no startup:
    Σq = 0 + ln 4 + ln 4 = 2.7726; Σ|Δq| = ln 4 = 1.3863; QoE = 1.3863.
    QoE_hd on 0.75, 1.85, 4.3 Mbit/s: q = 2, 12, 20; Σq = 34, Σ|Δq| = 10 + 8 = 18; a 0.5 s stall
    costs 8 × 0.5 = 4; startup 0: QoE = 34 − 18 − 4 = 12."""
    log = linear_qoe([0.3e6, 1.2e6, 1.2e6], 0.0, 0.0, params=PRESETS["pensieve-log"], r_min_bps=0.3e6)
    assert log == pytest.approx(math.log(4))
    hd = linear_qoe([0.75e6, 1.85e6, 4.3e6], 0.5, 0.0, params=PRESETS["pensieve-hd"])
    assert hd == pytest.approx(12.0)


def test_hd_table_is_a_step_function():
    assert quality([0.2e6, 0.3e6, 1.0e6, 1.85e6, 10e6], PRESETS["pensieve-hd"]) == [0.0, 1.0, 2.0, 12.0, 20.0]


@pytest.mark.parametrize(("name", "lam", "mu", "unit"), [
    ("yin-balanced", 1, 3000, 1e3), ("yin-avoid-instability", 3, 3000, 1e3), ("yin-avoid-rebuffering", 1, 6000, 1e3),
    ("pensieve-lin", 1, 4.3, 1e6), ("pensieve-log", 1, 2.66, 1e6), ("pensieve-hd", 1, 8, 1e6)])
def test_published_parameter_sets(name, lam, mu, unit):
    p = PRESETS[name]
    assert (p.smooth_penalty, p.rebuffer_penalty, p.unit_bps) == (lam, mu, unit)
    assert p.source


def test_override_through_options():
    opts = StreamingOptions(qoe_preset="yin-balanced", rebuffer_penalty=100.0)
    p = opts.qoe_params()
    assert p.rebuffer_penalty == 100.0 and p.smooth_penalty == 1.0 and "overridden" in p.name
    assert linear_qoe([1e6], 1.0, 0.0, params=p) == pytest.approx(1000 - 100)


@pytest.mark.parametrize("bad", [{"qoe_preset": "nope"}, {"startup_threshold_s": -1}, {"rebuffer_penalty": math.nan},
                                 {"p1203_display": "big"}, {"tick_s": 0}])
def test_bad_options(bad):
    with pytest.raises(InputError):
        StreamingOptions(**bad)
