"""Level alignment and input filtering of P.862 (clauses 10.1.1, 10.1.2, 10.1.3) and P.862.2.

All functions work on a *guarded buffer*: the signal of ``n`` samples preceded by
``setup.guard`` zeros and followed by ``setup.guard + setup.tail`` zeros (the layout the
Recommendation's reference software uses, so that filters and searches may run past both
ends of the speech). :func:`guarded` builds one.

References
----------
.. [1] ITU-T P.862 (02/2001), clauses 10.1.1 (level alignment), 10.1.2 (IRS filtering) and
   10.1.3 (filtered copy used for time alignment); Annex A reference software.
.. [2] ITU-T P.862.2 (11/2007), clause 2 (wide-band input filter).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.fft
import scipy.signal

from qoe.voice.p862 import _constants as C
from qoe.voice.p862._constants import RateSetup

__all__ = [
    "guarded",
    "RegionSpectrum",
    "region_spectrum",
    "fft_filter",
    "band_power",
    "irs_receive",
    "wideband_input",
    "alignment_copy",
]


def guarded(x: np.ndarray, setup: RateSetup, length: int | None = None) -> np.ndarray:
    """Float64 guarded buffer holding ``x``; ``length`` (>= len(x)) zero-extends the signal.

    The buffer is ``guard`` zeros, the signal (zero-extended to ``length``), then
    ``guard + tail`` zeros.
    """
    n = x.size if length is None else length
    buf = np.zeros(n + 2 * setup.guard + setup.tail)
    buf[setup.guard : setup.guard + x.size] = x
    return buf


def _next_pow2(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


@dataclass(frozen=True)
class RegionSpectrum:
    """FFT of a signal and its tail, shared by the level measurement and the IRS filter.

    Attributes
    ----------
    spectrum : numpy.ndarray
        ``rfft`` of the ``n + tail`` samples after the guard, zero-padded to ``size``.
    size : int
        The FFT length: the next power of two.
    n : int
        Signal length in samples.
    """

    spectrum: np.ndarray
    size: int
    n: int


def region_spectrum(buf: np.ndarray, n: int, setup: RateSetup) -> RegionSpectrum:
    """One FFT over the signal and its tail (P.862 clause 10.1.2: "an FFT over the whole file").

    Computed in single precision, the precision of the reference software.
    """
    m = n + setup.tail
    size = _next_pow2(m)
    region = buf[setup.guard : setup.guard + m].astype(np.float32)
    return RegionSpectrum(scipy.fft.rfft(region, size), size, n)


def fft_filter(spec: RegionSpectrum, curve_db: tuple, setup: RateSetup) -> np.ndarray:
    """Zero-phase filtering by a piecewise-linear dB response; returns the signal and its tail.

    Each bin is scaled by the response interpolated linearly in dB between the given
    (Hz, dB) points, normalised to 0 dB at 1 kHz, and transformed back; the first
    ``n + tail`` samples are kept (P.862 clause 10.1.2).
    """
    points = np.asarray(curve_db, dtype=np.float64)
    freqs = np.arange(spec.size // 2 + 1) * (setup.fs / spec.size)
    gain_db = np.interp(freqs, points[:, 0], points[:, 1])
    gain_db -= np.interp(C.GAIN_REFERENCE_HZ, points[:, 0], points[:, 1])  # 10.1.2: 0 dB at 1 kHz
    gain = (10.0 ** (gain_db / 20.0)).astype(np.float32)
    out = scipy.fft.irfft(spec.spectrum * gain, spec.size)
    return out[: spec.n + setup.tail].astype(np.float64)


def band_power(spec: RegionSpectrum, n_max: int, setup: RateSetup) -> float:
    """Mean power of the 350-3250 Hz band of a signal, the quantity level alignment equalises.

    The sum of squares of the band-passed signal (and its tail) is divided by the length of
    the *longer* of the two signals plus the tail, as in the reference software, so that both
    signals of a pair are measured over the same duration (P.862 clause 10.1.1).
    """
    region = fft_filter(spec, C.LEVEL_FILTER_DB, setup)
    return float(np.square(region).sum()) / (n_max + setup.tail)


def irs_receive(spec: RegionSpectrum, scale: float, setup: RateSetup) -> np.ndarray:
    """Level-scaled, IRS receive-filtered guarded buffer (P.862 clauses 10.1.1, 10.1.2).

    Filtering is linear, so the spectrum of the unscaled signal is filtered and scaled.
    """
    region = fft_filter(spec, C.IRS_RECEIVE_DB, setup)
    buf = np.zeros(spec.n + 2 * setup.guard + setup.tail)
    buf[setup.guard : setup.guard + region.size] = scale * region
    return buf


def _sos(rows: tuple) -> np.ndarray:
    """Annex A sections (b0, b1, b2, a1, a2) as SciPy second-order sections."""
    arr = np.asarray(rows, dtype=np.float64)
    return np.column_stack([arr[:, :3], np.ones(len(arr)), arr[:, 3:]])


def wideband_input(buf: np.ndarray, n: int, setup: RateSetup) -> np.ndarray:
    """Wide-band input filter of P.862.2 clause 2: linear fades, then a 100 Hz high-pass.

    The first and last 15 samples are faded linearly over 16 steps, then the signal (not
    its guard or tail) is filtered by one biquad.

    The biquad runs in single precision in direct form II (poles first), as in the
    reference software. With a DC offset its state grows to a few hundred times the
    input, and the rounding of that state is a noise floor some 50-70 dB below the speech;
    on an otherwise noise-free degraded signal that floor is audible to the model (a
    0.03 DC offset costs about 0.08 raw), so it is kept rather than filtered away by a
    more exact double-precision filter.
    """
    g = setup.guard
    out = buf.copy()
    ramp = np.arange(1, C.WB_FADE_SAMPLES) / C.WB_FADE_SAMPLES  # 1/16 .. 15/16
    k = min(ramp.size, n)
    out[g : g + k] *= ramp[:k]
    out[g + n - k : g + n] *= ramp[:k][::-1]
    b0, b1, b2, a1, a2 = (np.float32(v) for v in C.WB_INPUT_SOS[setup.fs][0])
    state = scipy.signal.lfilter(
        np.ones(1, np.float32), np.array([1.0, a1, a2], np.float32), out[g : g + n].astype(np.float32)
    )
    state = np.concatenate([np.zeros(2, np.float32), state])
    out[g : g + n] = (b0 * state[2:] + b1 * state[1:-1]) + b2 * state[:-2]
    return out


def alignment_copy(buf: np.ndarray, n: int, setup: RateSetup) -> np.ndarray:
    """The filtered copy of a signal that the time alignment works on (P.862 clause 10.1.3).

    The mean of the signal is removed (the reference software divides the sum by the
    guarded length, which is kept), the first and last 4 ms block are faded in and out by
    half-sample-centred ramps, and the whole buffer is passed through the fixed IIR filter.
    """
    g, b = setup.guard, setup.block
    out = buf.copy()
    sig = out[g : g + n]
    sig -= sig.sum() / (n + 2 * g)
    ramp = (np.arange(b) + 0.5) / b
    k = min(b, n)
    sig[:k] *= ramp[:k]
    sig[n - k :] *= ramp[:k][::-1]
    return scipy.signal.sosfilt(_sos(C.ALIGN_IIR_SOS[setup.fs]), out)
