"""The perceptual model of P.862 clause 10.2: from aligned signals to the raw PESQ score.

Every step works on all frames at once (frames x Bark bands arrays); only the bad-interval
realignment (10.2.13) loops, over the few intervals it finds.

References
----------
.. [1] ITU-T P.862 (02/2001), clause 10.2 (10.2.1-10.2.16); Annex A reference software.
.. [2] J. G. Beerends, A. P. Hekstra, A. W. Rix, M. P. Hollier, "Perceptual Evaluation of
   Speech Quality (PESQ), the new ITU standard for end-to-end speech quality assessment.
   Part II - Psychoacoustic model", J. Audio Eng. Soc. 50(10), 2002.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.fft
import scipy.signal

from qoe.voice.p862 import _constants as C
from qoe.voice.p862._alignment import Utterances, tdiv
from qoe.voice.p862._constants import RateSetup

__all__ = ["Disturbance", "perceive"]


@dataclass(frozen=True)
class Disturbance:
    """Output of the perceptual model.

    Attributes
    ----------
    raw : float
        4.5 - 0.1 d_sym - 0.0309 d_asym (10.2.16).
    d_sym, d_asym : float
        Symmetric and asymmetric disturbance aggregated over the file (10.2.15).
    first_frame : int
        First frame of the active interval (10.2.3); frame k starts ``k * hop`` samples into
        the reference signal.
    frame_sym, frame_asym : numpy.ndarray
        Per-frame disturbances of the active interval, after the soft-frame weighting and
        the limit of 45 (10.2.11), zeroed where the delay decreased (10.2.12).
    bad_intervals : int
        Number of intervals realigned in 10.2.13.
    """

    raw: float
    d_sym: float
    d_asym: float
    first_frame: int
    frame_sym: np.ndarray
    frame_asym: np.ndarray
    bad_intervals: int


class _Model:
    """Rate-dependent precomputed settings of 10.2.1."""

    def __init__(self, setup: RateSetup) -> None:
        self.setup = setup
        nf = setup.frame
        # 10.2.4: periodic Hann window of one frame.
        self.window = 0.5 * (1.0 - np.cos(2.0 * np.pi * np.arange(nf) / nf))
        self.band_first_bin = np.concatenate([[0], np.cumsum(setup.bins)[:-1]])
        self.pitch_scale = setup.correction * C.SP[setup.fs]  # 10.2.5, 10.2.1.3
        self.threshold = setup.threshold  # 10.2.1.2
        # 10.2.8: Zwicker exponent, raised below 4 Bark.
        h = np.where(setup.centre_bark < C.LOW_BARK, 6.0 / (setup.centre_bark + 2.0), 1.0)
        gamma = C.ZWICKER_POWER * np.minimum(h, 2.0) ** 0.15
        self.gamma = gamma
        self.loud_scale = C.SL * (self.threshold / 0.5) ** gamma
        self.width = setup.width_bark[1:]  # 10.2.11: band 0 is left out of the norms
        self.width_sum = float(self.width.sum())

    def pitch_power(self, buf: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """Pitch power densities (10.2.4-10.2.5) of frames starting at ``starts``."""
        nf = self.setup.frame
        frames = buf[starts[:, None] + np.arange(nf)] * self.window
        spec = scipy.fft.rfft(frames, axis=1)[:, : nf // 2]
        power = spec.real**2 + spec.imag**2
        power[:, 0] = 0.0  # the DC bin is not counted
        return np.add.reduceat(power, self.band_first_bin, axis=1) * self.pitch_scale

    def audible_power(self, pitch: np.ndarray, factor: float = 1.0) -> np.ndarray:
        """Per-frame sum over bands 1.. of the densities above ``factor`` x threshold."""
        p = pitch[:, 1:]
        return np.where(p > factor * self.threshold[1:], p, 0.0).sum(axis=1)

    def loudness(self, pitch: np.ndarray) -> np.ndarray:
        """Zwicker loudness densities (10.2.8), zero below the hearing threshold."""
        loud = self.loud_scale * ((0.5 + 0.5 * pitch / self.threshold) ** self.gamma - 1.0)
        return np.where(pitch > self.threshold, loud, 0.0)

    def lp_norm(self, dens: np.ndarray, p: float) -> np.ndarray:
        """Bark-width-weighted Lp norm over bands 1.. (10.2.11), per frame."""
        x = (np.abs(dens[:, 1:]) * self.width) ** p
        return (x.sum(axis=1) / self.width_sum) ** (1.0 / p) * self.width_sum

    def disturbances(
        self, ref_pitch: np.ndarray, deg_pitch: np.ndarray, first_scale: float | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Frame disturbances of consecutive frames (10.2.7-10.2.11, before the soft weighting).

        ``first_scale`` is the smoothed gain before the first frame, or None when the first
        frame is frame 0 (no smoothing). Returns (symmetric, asymmetric, audible reference
        power) per frame.
        """
        ref_total = self.audible_power(ref_pitch)
        deg_total = self.audible_power(deg_pitch)
        # 10.2.7: gain ratio smoothed by a first-order filter, then limited.
        ratio = (ref_total + C.GAIN_CONSTANT) / (deg_total + C.GAIN_CONSTANT)
        a = C.GAIN_SMOOTHING
        prev = ratio[0] if first_scale is None else first_scale
        scale, _ = scipy.signal.lfilter([1.0 - a], [1.0, -a], ratio, zi=[a * prev])
        scale = np.clip(scale, *C.GAIN_LIMITS)
        deg_pitch = deg_pitch * scale[:, None]

        loud_ref = self.loudness(ref_pitch)
        loud_deg = self.loudness(deg_pitch)
        # 10.2.9: signed difference with a dead zone of 0.25 x the smaller loudness.
        diff = loud_deg - loud_ref
        dead = C.DEADZONE * np.minimum(loud_deg, loud_ref)
        dist = np.where(diff > dead, diff - dead, np.where(diff < -dead, diff + dead, 0.0))
        sym = self.lp_norm(dist, C.FRAME_POW_SYM)
        # 10.2.10: asymmetry factor, for added (positive) distortion.
        asym_factor = ((deg_pitch + C.ASYM_CONSTANT) / (ref_pitch + C.ASYM_CONSTANT)) ** C.ASYM_POWER
        asym_factor = np.where(asym_factor < C.ASYM_LOW, 0.0, np.minimum(asym_factor, C.ASYM_HIGH))
        asym = self.lp_norm(dist * asym_factor, C.FRAME_POW_ASYM)
        return sym, asym, ref_total


def _active_interval(ref: np.ndarray, m_guarded: int, setup: RateSetup) -> tuple[int, int]:
    """First and last frame of the active interval of the reference (10.2.3).

    The interval starts at the first 5 consecutive samples whose magnitudes sum to 500 or
    more, and ends at the last such 5, searched from the far end of the tail.
    """
    g, hop = setup.guard, setup.hop
    cap = m_guarded // 2
    csum = np.concatenate([[0.0], np.cumsum(np.abs(ref))])
    t = g + np.arange(cap)
    loud = np.flatnonzero(csum[t + 5] - csum[t] >= C.SILENCE_5_SAMPLES)
    skip_start = int(loud[0]) if loud.size else cap
    last = m_guarded - g + setup.tail - 1
    t = last - np.arange(cap) - 4
    loud = np.flatnonzero(csum[t + 5] - csum[t] >= C.SILENCE_5_SAMPLES)
    skip_end = int(loud[0]) if loud.size else cap
    first_frame = skip_start // hop
    stop_frame = (m_guarded - 2 * g + setup.tail - skip_end) // hop - 1
    return first_frame, stop_frame


def _lpq(frames: np.ndarray, first: int, weight: np.ndarray, p_interval: float, p_time: float) -> float:
    """Split-second (10.2.14) then whole-file (10.2.15) aggregation of frame disturbances.

    Intervals of 20 frames start every 10 frames from ``first``; frames past the end count
    as zero. ``weight`` is indexed by interval start minus ``first``.
    """
    n = frames.size
    starts = np.arange(first, n, C.SPLIT_SECOND_FRAMES // 2)
    padded = np.concatenate([frames, np.zeros(C.SPLIT_SECOND_FRAMES)]) ** p_interval
    csum = np.concatenate([[0.0], np.cumsum(padded)])
    per_interval = ((csum[starts + C.SPLIT_SECOND_FRAMES] - csum[starts]) / C.SPLIT_SECOND_FRAMES) ** (
        1.0 / p_interval
    )
    w = weight[starts - first]
    return float((np.sum((w * per_interval) ** p_time) / np.sum(w**p_time)) ** (1.0 / p_time))


def _cross_delay(x: np.ndarray, y: np.ndarray, search: int) -> tuple[int, float]:
    """Lag in [-search, search) maximising the normalised correlation of |x| and |y| (10.2.13)."""
    size = 1 << int(2 * x.size - 1).bit_length()
    e1, e2 = float(np.dot(x, x)), float(np.dot(y, y))
    if e1 / size <= 1e-6 or e2 / size <= 1e-6:
        return 0, 0.0
    corr = scipy.signal.fftconvolve(np.abs(y), np.abs(x)[::-1], mode="full")
    centre = x.size - 1
    window = np.abs(corr[centre - search : centre + search]) / np.sqrt(e1 * e2)
    i = int(np.argmax(window))
    if window[i] <= 0.0:
        return 0, 0.0
    return i - search, float(window[i])


def perceive(
    ref: np.ndarray, deg: np.ndarray, utts: Utterances, n_max: int, setup: RateSetup
) -> Disturbance:
    """Raw PESQ score of two level-aligned, receive-filtered guarded buffers of equal length.

    Parameters
    ----------
    ref, deg : numpy.ndarray
        Guarded buffers holding ``n_max`` signal samples each (the shorter signal
        zero-extended).
    utts : Utterances
        Time alignment (10.1.3).
    n_max : int
        Length of the longer signal in samples.
    setup : RateSetup
        Rate-dependent constants.
    """
    model = _Model(setup)
    g, hop, nf = setup.guard, setup.hop, setup.frame
    m = n_max + 2 * g  # guarded length without the tail
    first_frame, stop_frame = _active_interval(ref, m, setup)
    frames = np.arange(stop_frame + 1)

    # 10.2.4-10.2.5: pitch power densities; the degraded frame is shifted by its
    # utterance's delay, and left silent where it would fall outside the signal.
    ref_starts = g + frames * hop
    deg_starts = ref_starts + utts.delay_at(ref_starts, setup.block)
    inside = (deg_starts > 0) & (deg_starts + nf < m + setup.tail)
    ref_pitch = model.pitch_power(ref, ref_starts)
    deg_pitch = np.zeros_like(ref_pitch)
    deg_pitch[inside] = model.pitch_power(deg, deg_starts[inside])

    # 10.2.6: equalise the reference to the degraded long-term spectrum over speech frames.
    silent = model.audible_power(ref_pitch, C.SILENT_FRAME_THRESHOLD_FACTOR) < C.SILENT_FRAME_POWER
    n_total = (m - 2 * g + setup.tail) // hop - 1

    def average(pitch: np.ndarray) -> np.ndarray:
        speech = pitch[~silent]
        loud = speech > C.SILENT_FRAME_THRESHOLD_FACTOR * model.threshold
        return np.where(loud, speech, 0.0).sum(axis=0) / n_total

    eq = (average(deg_pitch) + C.EQ_CONSTANT) / (average(ref_pitch) + C.EQ_CONSTANT)
    ref_pitch = ref_pitch * np.clip(eq, *C.EQ_LIMITS)

    # 10.2.7-10.2.11: gain compensation, loudness, disturbances per frame.
    sym, asym, ref_total = model.disturbances(ref_pitch, deg_pitch, None)
    any_bad = bool(np.any(sym > C.BAD_FRAME_THRESHOLD))

    # 10.2.12: zero the frames skipped where the delay decreases by more than half a frame.
    for k in range(1, utts.start.size):
        d_prev, d_cur = int(utts.delay[k - 1]), int(utts.delay[k])
        a = tdiv((int(utts.start[k]) - C.GUARD_BLOCKS) * setup.block + d_cur, hop)
        b = tdiv((int(utts.end[k - 1]) - C.GUARD_BLOCKS) * setup.block + d_prev, hop)
        lo = max(min(a, b), 0)
        jump = d_cur - d_prev
        if jump < -hop:
            hi = tdiv((int(utts.start[k]) - C.GUARD_BLOCKS) * setup.block + abs(jump), hop) + 1
            sel = slice(lo, max(lo, min(hi + 1, stop_frame)))
            sym[sel] = 0.0
            asym[sel] = 0.0

    n_bad = 0
    if any_bad:
        n_bad = _realign_bad_intervals(
            model, ref, deg, utts, ref_pitch, sym, asym, stop_frame, m, setup
        )

    # 10.2.15: later frames of long files weigh more.
    weight = np.ones(stop_frame + 1)
    if stop_frame + 1 > C.LONG_FILE_FRAMES:
        n = (m - 2 * g) // hop - 1
        factor = min((n - C.LONG_FILE_FRAMES) / C.LONG_FILE_SLOPE_FRAMES, C.LONG_FILE_MAX_FACTOR)
        weight = (1.0 - factor) + factor * frames / n

    # 10.2.11: emphasise soft parts of the reference, limit to 45.
    soft = ((ref_total + C.SOFT_WEIGHT_OFFSET) / C.SOFT_WEIGHT_SCALE) ** C.SOFT_WEIGHT_POWER
    sym = np.minimum(sym / soft, C.FRAME_DISTURBANCE_MAX)
    asym = np.minimum(asym / soft, C.FRAME_DISTURBANCE_MAX)

    d_sym = _lpq(sym, first_frame, weight, C.SPLIT_SECOND_POW_SYM, C.TIME_POW)
    d_asym = _lpq(asym, first_frame, weight, C.SPLIT_SECOND_POW_ASYM, C.TIME_POW)
    raw = C.SCORE_OFFSET - C.SCORE_SYM * d_sym - C.SCORE_ASYM * d_asym  # 10.2.16
    return Disturbance(
        raw=float(raw),
        d_sym=d_sym,
        d_asym=d_asym,
        first_frame=first_frame,
        frame_sym=sym[first_frame:],
        frame_asym=asym[first_frame:],
        bad_intervals=n_bad,
    )


def _realign_bad_intervals(
    model: _Model,
    ref: np.ndarray,
    deg: np.ndarray,
    utts: Utterances,
    ref_pitch: np.ndarray,
    sym: np.ndarray,
    asym: np.ndarray,
    stop_frame: int,
    m: int,
    setup: RateSetup,
) -> int:
    """10.2.13: realign intervals of bad frames and keep the smaller disturbances (in place).

    Returns the number of intervals found.
    """
    g, hop, nf = setup.guard, setup.hop, setup.frame
    bad = sym > C.BAD_FRAME_THRESHOLD
    bad[0] = False
    r = C.BAD_SMEAR
    smeared = np.zeros_like(bad)
    if stop_frame - r > r:
        win = np.lib.stride_tricks.sliding_window_view(bad, r + 1)  # win[i] = bad[i : i + r + 1]
        left = win[: stop_frame - 2 * r].any(axis=1)  # frames r .. stop_frame - r - 1
        right = win[r : stop_frame - r].any(axis=1)
        smeared[r : stop_frame - r] = left & right
    edges = np.diff(smeared.astype(np.int8), prepend=0, append=0)
    starts = np.flatnonzero(edges == 1)
    stops = np.flatnonzero(edges == -1)
    keep = (stops <= stop_frame) & (stops - starts >= C.BAD_MIN_FRAMES)
    starts, stops = starts[keep], stops[keep]
    if starts.size == 0:
        return 0

    # The degraded signal with each utterance's delay applied, clamped to the signal.
    nn = m + setup.tail
    pos = np.arange(g, nn - g)
    src = np.clip(pos + utts.delay_at(pos, setup.block), g, nn - g - 1)
    shifted = np.zeros(nn)
    shifted[g : nn - g] = deg[src]

    search = C.BAD_SEARCH_FRAMES * nf
    realigned = shifted.copy()
    spans = []
    for f0, f1 in zip(starts, stops):
        s0 = int(f0) * hop + g
        s1 = int(f1) * hop + nf + g
        n = s1 - s0
        x = np.concatenate([np.zeros(search), ref[s0:s1], np.zeros(search)])
        idx = np.clip(s0 - search + np.arange(2 * search + n), g, m - g + setup.tail - 1)
        lag, corr = _cross_delay(x, shifted[idx], search)
        if corr < C.BAD_MIN_CORRELATION:
            lag = 0
        src = np.clip(np.arange(s0, s1) + lag, 0, m - 1)
        realigned[s0:s1] = shifted[src]
        spans.append((int(f0), min(int(f1), stop_frame)))

    for f0, f1 in spans:
        if f1 <= f0:
            continue
        fr = np.arange(f0, f1)
        deg_pitch = model.pitch_power(realigned, g + fr * hop)
        new_sym, new_asym, _ = model.disturbances(ref_pitch[f0:f1], deg_pitch, 1.0)
        sym[f0:f1] = np.minimum(sym[f0:f1], new_sym)
        asym[f0:f1] = np.minimum(asym[f0:f1], new_asym)
    return int(starts.size)
