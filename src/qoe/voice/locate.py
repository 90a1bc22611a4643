"""Find where a reference speech file was played inside a longer received recording.

A test call streams a reference file (often several times, or starting before the
capture did); a full-reference score needs each play cut out of the received audio
with the matching part of the reference. :func:`locate_reference` finds the plays by
correlating *onset envelopes*: the change of log energy from one 4 ms block to the
next (4 ms is the block length of P.862's envelope alignment), compared by the Pearson
correlation at every block lag over the part where the two overlap. The log-energy
envelope survives packet loss, concealment, level changes and the codec far better
than the waveform, and a few thousand blocks correlate in milliseconds by FFT. Its
*change* is used rather than the envelope itself because test speech files share a
layout (lead-in silence, sentences, pauses) that makes the envelopes of different
utterances correlate by up to 0.53, against at most 0.22 for their changes, while the
same utterance through a call with 40 % loss still reaches 0.67 (measured on the
``data/voice`` captures with repetition concealment, ``tests/voice/test_call_locate.py``). The fine alignment (within a block,
per utterance) is left to the perceptual scorer, which does its own.

References
----------
.. [1] ITU-T P.862 (02/2001), clause 10.1.3.1 (4 ms envelope blocks for the crude
   delay estimate) and 10.1.3.2 (envelope cross-correlation).
.. [2] J. P. Lewis, "Fast normalized cross-correlation", Vision Interface 1995 (the
   correlation coefficient at every lag from running sums and FFT products).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import scipy.signal

from qoe.errors import InputError

__all__ = ["Play", "envelope_db", "locate_reference"]

# P.862 (02/2001) clause 10.1.3.1: the envelope used for the crude alignment is computed
# on 4 ms blocks (32 samples at 8 kHz, 64 at 16 kHz).
_BLOCK_S = 0.004
# Blocks more than 50 dB below the loudest block of a signal are floored there: digital
# silence, idle-channel codes and concealment fades all become the same "silence".
# (Our choice; speech's dynamic range above the noise floor is about 40-50 dB.)
_FLOOR_DB = 50.0


@dataclass(frozen=True, slots=True)
class Play:
    """One play of the reference found in the received signal.

    Sample positions count from the start of the received signal; ``offset`` is where
    the reference's first sample falls and may be negative (the play began before the
    recording) or run past the end (the recording stopped during it).

    Attributes
    ----------
    offset : int
        Position of reference sample 0 in the received signal, in samples.
    start, end : int
        The part of the received signal the play covers (clipped to the signal).
    ref_start, ref_end : int
        The matching part of the reference: ``received[start:end]`` lines up with
        ``reference[ref_start:ref_end]``.
    coverage : float
        ``(ref_end - ref_start) / len(reference)``: 1.0 for a whole play.
    correlation : float
        Pearson correlation of the two onset envelopes over the overlap (-1..1).
    """

    offset: int
    start: int
    end: int
    ref_start: int
    ref_end: int
    coverage: float
    correlation: float

    def to_dict(self) -> dict[str, Any]:
        """Fields as plain Python values."""
        return asdict(self)


def envelope_db(x: np.ndarray, block: int) -> np.ndarray:
    """Log energy (dB) of consecutive blocks of ``x``, floored 50 dB below its maximum.

    Parameters
    ----------
    x : numpy.ndarray
        1-D signal (any scale).
    block : int
        Block length in samples; a last partial block is dropped.

    Returns
    -------
    numpy.ndarray of float64
        One value per whole block; all equal (the floor) for a silent signal.

    Examples
    --------
    >>> envelope_db(np.r_[np.zeros(4), np.ones(4)], 4).tolist()
    [-50.0, 0.0]
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0] // block
    if n == 0:
        return np.zeros(0)
    power = np.mean(x[: n * block].reshape(n, block) ** 2, axis=1)
    top = float(power.max())
    if top <= 0.0:
        return np.full(n, -_FLOOR_DB)
    floor = top * 10.0 ** (-_FLOOR_DB / 10.0)
    return 10.0 * np.log10(np.maximum(power, floor) / top)


def _moving_sum(v: np.ndarray, m: int) -> np.ndarray:
    c = np.concatenate(([0.0], np.cumsum(v)))
    return c[m:] - c[:-m]


def _lag_correlation(x: np.ndarray, y: np.ndarray, min_overlap: int) -> tuple[np.ndarray, np.ndarray]:
    """Pearson correlation of ``x`` with ``y`` shifted by every lag, over the overlap only.

    Lag ``l`` compares ``x[j]`` with ``y[j + l]`` for every ``j`` where both exist,
    ``l = -(len(x) - 1) .. len(y) - 1``. Returns ``(r, overlap)`` per lag; ``r`` is NaN
    where the overlap is shorter than ``min_overlap`` or either side is constant.
    """
    m, n = x.shape[0], y.shape[0]
    pad = np.zeros(m - 1)
    yp = np.concatenate((pad, y, pad))
    mask = np.concatenate((pad, np.ones(n), pad))
    # Sums over the overlap at each lag (Lewis 1995): moving sums for y, FFT products
    # for the terms that pair x with the mask or with y.
    cnt = _moving_sum(mask, m)
    sy = _moving_sum(yp, m)
    syy = _moving_sum(yp * yp, m)
    sx = scipy.signal.correlate(mask, x, mode="valid", method="fft")
    sxx = scipy.signal.correlate(mask, x * x, mode="valid", method="fft")
    sxy = scipy.signal.correlate(yp, x, mode="valid", method="fft")
    cnt = np.rint(cnt)
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = cnt * sxy - sx * sy
        vx = cnt * sxx - sx * sx
        vy = cnt * syy - sy * sy
        r = cov / np.sqrt(vx * vy)
    tiny = 1e-9 * np.maximum(cnt, 1.0) ** 2
    r[(cnt < min_overlap) | (vx <= tiny) | (vy <= tiny)] = np.nan
    return r, cnt.astype(np.int64)


def _refine(x: np.ndarray, y: np.ndarray, offset: int, block: int) -> int:
    """Sample-exact offset near a block-exact one: the waveform correlation peak within ±block."""
    n, nx = y.shape[0], x.shape[0]
    lo, hi = offset - block, offset + block
    # the part of the reference that lies inside y for every shift in [lo, hi]
    r0, r1 = max(0, -lo), min(nx, n - hi)
    if r1 - r0 < block:
        return offset
    seg = y[r0 + lo : r1 + hi].astype(np.float64)
    ref = x[r0:r1].astype(np.float64)
    c = np.correlate(seg, ref, mode="valid")  # c[k]: shift lo + k
    if not np.any(c > 0):
        return offset
    return lo + int(np.argmax(c))


def _overlap_correlation(x: np.ndarray, y: np.ndarray, block: int, default: float) -> float:
    """Onset-envelope correlation of two aligned, equally long signals."""
    ex = np.diff(envelope_db(x, block))
    ey = np.diff(envelope_db(y, block))
    if ex.size < 2 or np.std(ex) == 0 or np.std(ey) == 0:
        return default
    return float(np.corrcoef(ex, ey)[0, 1])


def locate_reference(
    received: np.ndarray,
    reference: np.ndarray,
    *,
    fs: int,
    min_correlation: float = 0.4,
    min_coverage: float = 0.5,
    max_plays: int | None = None,
) -> tuple[Play, ...]:
    """Every play of ``reference`` inside ``received``, in time order.

    Parameters
    ----------
    received : numpy.ndarray
        The received signal (1-D, int16 or float).
    reference : numpy.ndarray
        The reference signal at the same sample rate.
    fs : int, keyword-only
        Sample rate of both, Hz.
    min_correlation : float, keyword-only
        Least onset-envelope correlation for a play to count (0.4 by default: different
        utterances stay below about 0.25, the same utterance through a call with heavy
        loss above 0.5; see the module docstring).
    min_coverage : float, keyword-only
        Least fraction of the reference a play must overlap the received signal by
        (plays cut by the start or end of the recording).
    max_plays : int, optional, keyword-only
        Stop after this many plays (best first). Default: no limit.

    Returns
    -------
    tuple of Play
        Sorted by position; empty when the reference was not found.

    Raises
    ------
    InputError
        Not 1-D, a bad sample rate or threshold, or a reference shorter than 0.25 s.

    Notes
    -----
    The envelope lag is then refined to the sample by the waveform cross-correlation
    within one block either way. Plays are picked greedily: the lag with the highest correlation, then the next
    highest at least 3/4 of a reference length away from every play already taken
    (two plays of one file cannot overlap by more than a quarter), and so on, while
    the correlation stays above ``min_correlation`` and above 0.7 times the best one.

    Examples
    --------
    A noise burst pattern played twice, the first time cut by the recording's start:

    >>> rng = np.random.default_rng(0)
    >>> ref = rng.standard_normal(8000) * np.repeat(rng.random(20) > 0.5, 400)
    >>> rec = np.concatenate((ref[3000:], np.zeros(4000), ref, np.zeros(2000)))
    >>> [(p.offset, p.coverage) for p in locate_reference(rec, ref, fs=8000)]
    [(-3000, 0.625), (9000, 1.0)]
    """
    x = np.asarray(reference)
    y = np.asarray(received)
    if x.ndim != 1 or y.ndim != 1:
        raise InputError(f"locate_reference: signals must be 1-D; given shapes {x.shape} (reference), {y.shape} (received)")
    if isinstance(fs, bool) or not isinstance(fs, (int, np.integer)) or fs <= 0:
        raise InputError(f"fs must be a positive integer sample rate; given fs={fs!r}")
    if not (0.0 < min_coverage <= 1.0):
        raise InputError(f"min_coverage must be in (0, 1]; given {min_coverage!r}")
    if not (-1.0 <= min_correlation <= 1.0):
        raise InputError(f"min_correlation must be in [-1, 1]; given {min_correlation!r}")
    block = max(1, int(round(_BLOCK_S * fs)))
    if x.shape[0] < 0.25 * fs:
        raise InputError(f"reference is {x.shape[0] / fs:.3f} s long; need at least 0.25 s to locate it")
    ex = np.diff(envelope_db(x, block))
    ey = np.diff(envelope_db(y, block))
    m = ex.shape[0]
    if ey.shape[0] < 2:
        return ()
    min_overlap = max(2, int(math.ceil(min_coverage * m)))
    r, _ = _lag_correlation(ex, ey, min_overlap)
    lags = np.arange(-(m - 1), ey.shape[0])
    order = np.argsort(np.where(np.isnan(r), -np.inf, r))[::-1]
    taken: list[tuple[int, float]] = []
    best = None
    keep_apart = 0.75 * m
    for k in order.tolist():
        rk = r[k]
        if not np.isfinite(rk) or rk < min_correlation or (best is not None and rk < 0.7 * best):
            break
        lag = int(lags[k])
        if any(abs(lag - t) < keep_apart for t, _ in taken):
            continue
        taken.append((lag, float(rk)))
        best = rk if best is None else best
        if max_plays is not None and len(taken) >= max_plays:
            break
    n, nx = y.shape[0], x.shape[0]
    plays = []
    for lag, rk in sorted(taken):
        offset = _refine(x, y, lag * block, block)
        start, end = max(0, offset), min(n, offset + nx)
        if offset != lag * block:  # blocks aligned on the refined offset: the correlation there
            rk = _overlap_correlation(x[start - offset : end - offset], y[start:end], block, rk)
        plays.append(
            Play(
                offset=offset,
                start=start,
                end=end,
                ref_start=start - offset,
                ref_end=end - offset,
                coverage=(end - start) / nx,
                correlation=rk,
            )
        )
    return tuple(p for p in plays if p.end > p.start)
