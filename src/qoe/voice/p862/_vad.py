"""Speech envelope and voice activity of P.862 clause 10.1.3.1 (envelope-based alignment).

The filtered signal is cut into 4 ms blocks; each block's mean power is compared with a
threshold estimated from the noise floor; short bursts are dropped, close bursts joined and
the edges of each burst ramped. The result is an *envelope* that is zero outside speech and
the block power inside, and its logarithm relative to the threshold, which the crude delay
estimate cross-correlates.

References
----------
.. [1] ITU-T P.862 (02/2001), clause 10.1.3.1; Annex A reference software (values of the
   constants in :mod:`qoe.voice.p862._constants`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qoe.voice.p862 import _constants as C

__all__ = ["Envelope", "envelope"]


@dataclass(frozen=True)
class Envelope:
    """Voice activity of one signal, one value per 4 ms block.

    Attributes
    ----------
    vad : numpy.ndarray
        Block power inside speech (ramped at the edges), 0 outside.
    log_vad : numpy.ndarray
        ``log(vad / threshold)`` where ``vad`` exceeds the threshold, else 0.
    threshold : float
        The speech/noise threshold on block power.
    """

    vad: np.ndarray
    log_vad: np.ndarray
    threshold: float


def _runs(active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) indices of the runs of True in a boolean array."""
    edges = np.diff(active.astype(np.int8), prepend=0, append=0)
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)


def _noise_threshold(power: np.ndarray) -> float:
    """Iterated noise-floor threshold: mean + 2 standard deviations of the blocks below it."""
    thresh = float(power.mean())
    for _ in range(C.VAD_ITERATIONS):
        below = power[power <= thresh]
        if below.size:
            level = float(below.mean())
            spread = float(np.sqrt(np.mean((below - level) ** 2)))
        else:
            level = spread = 0.0
        thresh = C.VAD_THRESHOLD_MARGIN * (level + 2.0 * spread)
    return thresh


def envelope(x: np.ndarray, n_guarded: int, block: int) -> Envelope:
    """Voice-activity envelope of the first ``n_guarded`` samples of a filtered buffer.

    Parameters
    ----------
    x : numpy.ndarray
        The alignment copy of a guarded buffer (see :func:`._filters.alignment_copy`).
    n_guarded : int
        Signal length plus both guards; the trailing tail is not looked at.
    block : int
        Samples per 4 ms block.
    """
    n_blocks = n_guarded // block
    power = np.mean(x[: n_blocks * block].reshape(n_blocks, block) ** 2, axis=1)
    peak = float(power.max())
    floor = peak * C.VAD_FLOOR if peak > 0.0 else 1.0
    power = np.maximum(power, floor)

    thresh = _noise_threshold(power)
    speech = power > thresh
    level_speech = float(power[speech].mean()) if speech.any() else 0.0
    level_noise = float(power[~speech].mean()) if (~speech).any() else 1.0
    if not speech.any():
        thresh = -1.0
    speech[0] = speech[-1] = False

    # Bursts of at most 16 ms are noise.
    starts, ends = _runs(speech)
    for s, e in zip(starts, ends):
        if e - s <= C.VAD_MIN_BURST:
            speech[s:e] = False
    # In a clean signal, bursts whose mean power is below 3x the threshold are noise too.
    if level_speech >= level_noise * C.VAD_CLEAN_SNR:
        starts, ends = _runs(speech)
        for s, e in zip(starts, ends):
            if power[s:e].sum() < C.VAD_MIN_BURST_RATIO * thresh * (e - s):
                speech[s:e] = False

    vad = np.where(speech, power, 0.0)
    starts, ends = _runs(speech)
    if starts.size == 0:
        # No burst at all: every block but the first and last counts as speech.
        vad = power.copy()
        vad[0] = vad[-1] = 0.0
    else:
        # Gaps of at most 200 ms between bursts are filled at the floor level.
        for e, s in zip(ends[:-1], starts[1:]):
            if s - e <= C.VAD_JOIN_GAP:
                vad[e:s] = floor
        filled = vad > 0.0
        filled[0] = filled[-1] = False
        starts, ends = _runs(filled)
        # Two-block ramps before each burst (0.1, 0.3 of its first block) and after it
        # (0.3, 0.1 of its last block). Bursts begin and end inside the zero guards, more
        # than 200 ms apart, so the ramps never overlap.
        vad_edges = vad.copy()
        ok = (starts >= 3) & (starts < n_blocks - 2)
        for s in starts[ok]:
            vad_edges[s - 2] = 0.1 * vad[s]
            vad_edges[s - 1] = 0.3 * vad[s]
        ok = (ends >= 3) & (ends < n_blocks - 2)
        for e in ends[ok]:
            vad_edges[e] = 0.3 * vad[e - 1]
            vad_edges[e + 1] = 0.1 * vad[e - 1]
        vad = vad_edges

    if thresh <= 0.0:
        thresh = floor
    above = vad > thresh
    log_vad = np.zeros_like(vad)
    log_vad[above] = np.log(vad[above] / thresh)
    return Envelope(vad=vad, log_vad=log_vad, threshold=thresh)
