"""Fixtures shared by the voice tests (PESQ fixtures are prefixed ``pesq_``)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal

# Vowel formants (F1, F2, F3 in Hz), typical adult values (Peterson & Barney 1952).
_VOWELS = ((730, 1090, 2440), (270, 2290, 3010), (530, 1840, 2480), (570, 840, 2410), (300, 870, 2240))


def _synthetic_speech(fs: int, seconds: float, seed: int) -> np.ndarray:
    """Speech-like test signal: voiced syllables and fricatives in talk spurts with pauses.

    A glottal pulse train (F0 100-220 Hz, slowly varying) excites three formant resonators
    that change vowel every syllable; fricatives are high-passed noise; talk spurts of
    1.5-2.5 s alternate with 0.4-0.8 s pauses, as in P.862.3's recommended material. The
    active level is set to -26 dBov (full scale 1.0).
    """
    rng = np.random.default_rng(seed)
    n = int(seconds * fs)
    out = np.zeros(n)
    t = int(0.4 * fs)
    while t < n - int(0.6 * fs):
        spurt_end = min(n - int(0.3 * fs), t + int(rng.uniform(1.5, 2.5) * fs))
        while t < spurt_end:
            length = int(rng.uniform(0.12, 0.25) * fs)
            idx = np.arange(length)
            if rng.random() < 0.2:  # fricative
                noise = rng.standard_normal(length)
                b, a = scipy.signal.butter(2, min(0.9, 2500 / (fs / 2)), "high")
                seg = 0.3 * scipy.signal.lfilter(b, a, noise)
            else:  # voiced syllable
                f0 = rng.uniform(100, 220) * (1 + 0.1 * np.sin(2 * np.pi * idx / length))
                phase = np.cumsum(f0 / fs)
                pulses = np.diff(np.floor(phase), prepend=0.0)
                seg = pulses
                for formant, bw in zip(_VOWELS[rng.integers(len(_VOWELS))], (80, 100, 150)):
                    if formant < fs / 2 - 200:
                        r = np.exp(-np.pi * bw / fs)
                        theta = 2 * np.pi * formant / fs
                        seg = scipy.signal.lfilter([1 - r], [1, -2 * r * np.cos(theta), r * r], seg)
            seg = seg * np.hanning(length)
            end = min(t + length, n)
            out[t:end] += seg[: end - t]
            t += int(length * rng.uniform(0.8, 1.0))
        t += int(rng.uniform(0.4, 0.8) * fs)
    active = np.abs(out) > 1e-3 * np.abs(out).max()
    level = np.sqrt(np.mean(out[active] ** 2))
    return out * (10 ** (-26 / 20) / level)


@pytest.fixture
def pesq_speech():
    """Factory ``pesq_speech(fs, seconds=8.0, seed=0)`` of synthetic speech at -26 dBov."""

    def make(fs: int, seconds: float = 8.0, seed: int = 0) -> np.ndarray:
        return _synthetic_speech(fs, seconds, seed)

    return make
