"""Network-side per-window voice scores."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from qoe.errors import InputError
from qoe.voice import emodel
from qoe.voice.netscore import window_ranges, windowed_scores


def _stream(seconds=30, ptime=0.02):
    t = np.arange(0, seconds, ptime)
    return t, np.zeros(t.size, bool), np.full(t.size, 40.0)


def test_clean_stream_scores_like_the_emodel():
    t, lost, d = _stream()
    ws = windowed_scores(t, lost, d)
    assert ws.start_s.tolist() == [0.0, 10.0, 20.0]
    ref = emodel.r_factor(codec="G.711-plc", ta=40, t=40, tr=80)
    assert np.allclose(ws.r, float(ref.r)) and ws.overall["r"] == pytest.approx(float(ref.r))
    assert ws.packets.tolist() == [500, 500, 500] and ws.lost.tolist() == [0, 0, 0]


def test_a_bad_window_shows_in_min_not_in_mean():
    t, lost, d = _stream()
    bad = (t >= 10) & (t < 20)
    lost[bad] = np.arange(bad.sum()) % 10 < 3  # 30 % loss in runs of 3, only in window 2
    d[bad] = 800.0
    ws = windowed_scores(t, lost, d)
    assert ws.ppl.tolist() == pytest.approx([0.0, 30.0, 0.0])
    assert ws.mos[1] < ws.mos[0] - 1.5
    assert ws.overall["mos_min"] == pytest.approx(ws.mos[1])
    assert ws.overall["mos_mean"] > ws.overall["mos_min"] + 1.0
    assert ws.burst_r[1] > 1.5  # runs of 3 are burstier than random
    # the window's R is the E-model of that window's own Ppl, BurstR and delay
    ref = emodel.r_factor(codec="G.711-plc", ppl=30.0, burst_r=ws.burst_r[1], ta=800, t=800, tr=1600)
    assert ws.r[1] == pytest.approx(float(ref.r))


def test_simplified_estimate_present_for_g711_only():
    t, lost, d = _stream(10)
    assert np.isfinite(windowed_scores(t, lost, d).mos_simplified).all()
    assert np.isnan(windowed_scores(t, lost, d, codec="GSM-EFR").mos_simplified).all()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"window_s": 0}, "window_s must be > 0"), ({"codec": "nope"}, "unknown nb codec")],
)
def test_bad_options(kwargs, match):
    t, lost, d = _stream(1)
    with pytest.raises(InputError, match=match):
        windowed_scores(t, lost, d, **kwargs)


def test_bad_shapes():
    with pytest.raises(InputError, match="equal length"):
        windowed_scores([0, 1], [False], [1.0, 2.0])
    with pytest.raises(InputError, match="no packets"):
        windowed_scores([], [], [])


def test_wide_band_windows_use_g107_1():
    # band="wb": each window is r_factor(band="wb") of its loss and delay; BurstR is measured and
    # reported but not used (G.107.1 7.5), so bursty loss raises no burst_r warning.
    import warnings

    from qoe.errors import QoEWarning
    from qoe.voice import emodel

    t = np.arange(1000) * 0.02
    lost = np.zeros(1000, dtype=bool)
    lost[100:106] = True  # one burst
    d = np.full(1000, 150.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", QoEWarning)
        ws = windowed_scores(t, lost, d, codec="G.722.2-23.85-diotic", band="wb")
    assert ws.band == "wb" and ws.codec == "G.722.2-23.85-diotic"
    assert ws.overall["burst_r"] > 1
    ref = emodel.r_factor(band="wb", codec="G.722.2-23.85-diotic", ppl=0.6, mouth_to_ear_ms=150.0)
    assert ws.overall["r"] == pytest.approx(float(ref.r), abs=1e-9)
    assert np.isnan(ws.mos_simplified).all()  # Cole & Rosenbluth is a narrow-band fit


def test_inputs_past_table_3_warn_once_per_parameter_for_the_whole_stream():
    # 30 windows of 10 s at 800 ms: every one is past G.107 Table 3's T, Tr, Ta (0..500, 0..1000, 0..500 ms)
    t = np.arange(15000) * 0.02
    lost = np.zeros(t.size, dtype=bool)
    delay = np.full(t.size, 800.0)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        ws = windowed_scores(t, lost, delay)
    assert sorted(str(w.message).split("=")[0] for w in rec) == ["t", "ta", "tr"]
    assert window_ranges(ws) == tuple(str(w.message) for w in rec)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = windowed_scores(t, lost, delay, out_of_range="ignore")
    np.testing.assert_array_equal(quiet.r, ws.r)
    assert window_ranges(windowed_scores(t, lost, np.full(t.size, 150.0))) == ()
