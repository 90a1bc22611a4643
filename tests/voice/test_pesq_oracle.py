"""qoe.voice.pesq against the ITU-T P.862 reference implementation on generated pairs.

Oracle: the PyPI package ``pesq`` 0.0.4 (test extra), which wraps the ITU-T P.862 / P.862.2
ANSI-C reference software (version 2.0, 10/2005):
``pesq.pesq(fs, ref, deg, "nb" | "wb")`` returns P.862.1 MOS-LQO (nb) or P.862.2 MOS-LQO
(wb); the raw P.862 score is its inverse P.862.1 mapping (``qoe.mos.mos_lqo_to_raw``).

The larger corpus (espeak-ng speech, codecs, >= 150 pairs per mode) is a benchmark, not a
test: ``python benchmarks/pesq_vs_itu.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal

from qoe.mos import mos_lqo_to_raw
from qoe.voice import pesq

itu = pytest.importorskip("pesq")

# P.862 Annex A, clause A.3.2: a conformant implementation lies within 0.05 raw PESQ of the
# reference implementation.
ANNEX_A_TOLERANCE = 0.05


def _mu_law(x: np.ndarray) -> np.ndarray:
    """8-bit mu-law companding (mu = 255), the curve G.711 approximates with segments."""
    mu = 255.0
    y = np.sign(x) * np.log1p(mu * np.minimum(np.abs(x), 1.0)) / np.log1p(mu)
    y = np.round(y * 127.0) / 127.0
    return np.sign(y) * np.expm1(np.abs(y) * np.log1p(mu)) / mu


def _frame_loss(x: np.ndarray, fs: int, rate: float, seed: int, conceal: bool) -> np.ndarray:
    """Drop 20 ms frames at random: silence, or (conceal) a repeat of the last good frame."""
    rng = np.random.default_rng(seed)
    n = int(0.02 * fs)
    y = x.copy()
    last = np.zeros(n)
    for start in range(0, x.size - n, n):
        if rng.random() < rate:
            y[start : start + n] = 0.5 * last if conceal else 0.0
        else:
            last = x[start : start + n]
    return y


def _jump(x: np.ndarray, fs: int) -> np.ndarray:
    """A delay step of +40 ms half-way through (as a jitter buffer grows in a pause)."""
    half = x.size // 2
    return np.concatenate([x[:half], np.zeros(int(0.04 * fs)), x[half:]])


def _degrade(kind: str, x: np.ndarray, fs: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    if kind == "identical":
        return x.copy()
    if kind == "scaled":
        return 0.3 * x
    if kind == "delayed":
        return np.concatenate([np.zeros(int(0.123 * fs)), x])[: x.size]
    if kind == "noisy":
        return x + 10 ** (-50 / 20) * rng.standard_normal(x.size)
    if kind == "g711":
        return _mu_law(x)
    if kind == "loss":
        return _frame_loss(x, fs, 0.05, seed=3, conceal=False)
    if kind == "loss_plc":
        return _frame_loss(x, fs, 0.05, seed=3, conceal=True)
    if kind == "lowpass":
        b, a = scipy.signal.butter(6, 2000 / (fs / 2))
        return scipy.signal.lfilter(b, a, x)
    if kind == "delay_jump":
        return _jump(x, fs)
    if kind == "dc_offset":
        # noise-free apart from a DC offset: in wb mode the reference code's single-precision
        # high-pass leaves a noise floor that the score feels (see _filters.wideband_input)
        return x + 0.03
    raise AssertionError(kind)


KINDS = ["identical", "scaled", "delayed", "noisy", "g711", "loss", "loss_plc", "lowpass", "delay_jump", "dc_offset"]


def _oracle_raw(fs: int, x: np.ndarray, y: np.ndarray, mode: str) -> float:
    return float(mos_lqo_to_raw(itu.pesq(fs, x, y, mode), mode))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fs", [8000, 16000])
def test_narrow_band_agrees_with_itu(pesq_speech, kind, fs):
    x = pesq_speech(fs, seed=fs)
    y = _degrade(kind, x, fs)
    ours = pesq(x, y, fs=fs, mode="nb")
    assert abs(ours.raw - _oracle_raw(fs, x, y, "nb")) <= ANNEX_A_TOLERANCE


@pytest.mark.parametrize("kind", KINDS)
def test_wide_band_agrees_with_itu(pesq_speech, kind):
    x = pesq_speech(16000, seed=5)
    y = _degrade(kind, x, 16000)
    ours = pesq(x, y, fs=16000, mode="wb")
    # compare on the raw scale of P.862.2's mapping, where the tolerance is stated
    ours_raw = float(mos_lqo_to_raw(ours.mos_lqo, "wb"))
    assert abs(ours_raw - _oracle_raw(16000, x, y, "wb")) <= ANNEX_A_TOLERANCE


def test_identical_signals_score_the_maximum(pesq_speech):
    # With no difference every disturbance is 0: raw = 4.5 (P.862 clause 10.2.16), and
    # P.862.1 maps 4.5 to 4.549; the oracle agrees.
    x = pesq_speech(8000, seed=11)
    res = pesq(x, x, fs=8000)
    assert res.raw == pytest.approx(4.5, abs=1e-9)
    assert res.mos_lqo == pytest.approx(itu.pesq(8000, x, x, "nb"), abs=1e-4)
