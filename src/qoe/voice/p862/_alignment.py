"""Time alignment of P.862 clause 10.1.3: a delay for each utterance of the reference.

Stages, each with its clause:

1. Crude delay of the whole file: the lag that maximises the cross-correlation of the two
   log-envelopes (10.1.3.1).
2. Utterances: bursts of reference speech of at least 200 ms, each searched within 300 ms of
   its ends (10.1.3.1); an envelope-based delay per utterance (10.1.3.1) refined to the
   sample by a weighted histogram of the peaks of 64 ms frame cross-correlations (10.1.3.2).
3. Utterance boundaries placed half-way between utterances and kept inside the degraded
   signal (10.1.3.1).
4. Splitting: each utterance of at least 800 ms is tried at up to 40 points; a split is kept
   when both halves align with more confidence than the whole and at delays at least one
   block (4 ms) apart (10.1.3.3). Halves are tried again.

Positions of utterances are in 4 ms blocks of the guarded buffer (block 75 is the first
sample of the signal); delays are in samples (positive: the degraded signal lags).

References
----------
.. [1] ITU-T P.862 (02/2001), clause 10.1.3; Annex A reference software.
.. [2] A. W. Rix, M. P. Hollier, A. P. Hekstra, J. G. Beerends, "Perceptual Evaluation of
   Speech Quality (PESQ), the new ITU standard for end-to-end speech quality assessment.
   Part I - Time-delay compensation", J. Audio Eng. Soc. 50(10), 2002.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.fft
import scipy.signal

from qoe.voice.p862 import _constants as C
from qoe.voice.p862._constants import RateSetup
from qoe.voice.p862._vad import Envelope

__all__ = ["Utterances", "align"]


def _next_pow2(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def tdiv(a: int, b: int) -> int:
    """Integer division truncating toward zero (the reference software's C semantics)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


@dataclass(frozen=True)
class Utterances:
    """Result of the time alignment.

    Attributes
    ----------
    start, end : numpy.ndarray
        First and last-plus-one 4 ms block of each utterance in the guarded reference.
    delay : numpy.ndarray
        Delay of the degraded signal for each utterance, in samples.
    confidence : numpy.ndarray
        Height of the normalised delay histogram peak of each utterance (0..1).
    crude_delay : int
        Whole-file delay from the envelopes (10.1.3.1), in samples.
    """

    start: np.ndarray
    end: np.ndarray
    delay: np.ndarray
    confidence: np.ndarray
    crude_delay: int

    def delay_at(self, samples: np.ndarray, block: int) -> np.ndarray:
        """Delay applying at reference sample positions of the guarded buffer.

        A position belongs to the last utterance starting at or before it, positions
        before the first utterance to the first (10.2.4).
        """
        # "Last utterance starting at or before" is the last index whose suffix minimum of
        # starts is at or before the position; suffix minima are sorted even if starts
        # are not.
        suffix_min = np.minimum.accumulate(self.start[::-1])[::-1] * block
        owner = np.searchsorted(suffix_min, samples, side="right") - 1
        return self.delay[np.maximum(owner, 0)]


@dataclass
class _Utt:
    start: int
    end: int
    estimate: int
    delay: int = 0
    confidence: float = 0.0


class _Aligner:
    """Holds the two filtered signals and envelopes while the stages run."""

    def __init__(
        self,
        ref: np.ndarray,
        deg: np.ndarray,
        env_ref: Envelope,
        env_deg: Envelope,
        n_deg: int,
        setup: RateSetup,
    ) -> None:
        self.ref, self.deg = ref, deg
        self.env_ref, self.env_deg = env_ref, env_deg
        self.setup = setup
        self.n_deg_g = n_deg + 2 * setup.guard  # guarded length (without the tail)
        self.nfft = setup.align_nfft
        self.hop = self.nfft // 4  # 10.1.3.2: 75 % overlap
        self.kernel = self.nfft // C.FINE_KERNEL_DIVISOR
        # Annex A: periodic Hann window over the 64 ms frame.
        self.window = 0.5 * (1.0 - np.cos(2.0 * np.pi * np.arange(self.nfft) / self.nfft))
        self.ref_frames = np.lib.stride_tricks.sliding_window_view(ref, self.nfft)
        self.deg_frames = np.lib.stride_tricks.sliding_window_view(deg, self.nfft)
        k = np.arange(1 - self.kernel, self.kernel)
        self.triangle = 1.0 - np.abs(k) / self.kernel
        self.triangle_shifts = k

    # -- 10.1.3.1: envelope cross-correlation -----------------------------------------
    def envelope_delay(self, first: int, last: int, base: int) -> int:
        """Delay (samples) of reference blocks [first, last) from envelopes, around ``base``."""
        return self.envelope_correlations([(first, last, base)])[0][0]

    def envelope_correlations(self, segments: list[tuple[int, int, int]]) -> list[tuple[int, np.ndarray | None]]:
        """:meth:`envelope_delay` of several (first, last, base) segments at once.

        The degraded envelope is read from ``base`` (truncated to whole blocks) later, over
        as many blocks as the reference segment where it has them. Returns, per segment, the
        delay and the full cross-correlation it maximised (None when a segment has fewer
        than two blocks), whose index i is the lag i - (reference blocks - 1).
        """
        b = self.setup.block
        n_deg = self.env_deg.log_vad.size
        geometry = []
        for first, last, base in segments:
            shift = tdiv(base, b)
            r0, d0 = (first, first + shift) if first + shift >= 0 else (-shift, 0)
            nr = last - r0
            geometry.append((r0, d0, nr, min(nr, n_deg - d0)))
        valid = [i for i, (_, _, nr, nd) in enumerate(geometry) if nr > 1 and nd > 1]
        out: list[tuple[int, np.ndarray | None]] = [(base, None) for _, _, base in segments]
        if not valid:
            return out
        r0, d0, nr, nd = (np.array([geometry[i][j] for i in valid]) for j in range(4))
        # Single precision and a power-of-two length of at least twice the longer segment,
        # as in the reference software: where the envelopes do not overlap the
        # correlation is zero up to the rounding noise of the transform, and that noise
        # can end up in the fine-alignment window (see best_split), where its size counts.
        size = 2 * _next_pow2(int(np.maximum(nr, nd).max()))
        span = np.arange(size)
        x = np.concatenate([self.env_ref.log_vad, np.zeros(size)]).astype(np.float32)
        y = np.concatenate([self.env_deg.log_vad, np.zeros(size)]).astype(np.float32)
        xs = np.where(span < nr[:, None], x[np.maximum(r0, 0)[:, None] + span], np.float32(0.0))
        ys = np.where(span < nd[:, None], y[d0[:, None] + span], np.float32(0.0))
        circ = scipy.fft.irfft(np.conj(scipy.fft.rfft(xs, axis=1)) * scipy.fft.rfft(ys, axis=1), size, axis=1)
        circ = circ.astype(np.float64)
        for row, i in enumerate(valid):
            n_full = int(nr[row] + nd[row] - 1)
            corr = circ[row, (np.arange(n_full) - (nr[row] - 1)) % size]
            k = int(np.argmax(corr))
            lag = k - int(nr[row] - 1) if corr[k] > 0.0 else 0
            out[i] = (segments[i][2] + lag * b, corr)
        return out

    # -- 10.1.3.2: fine alignment -----------------------------------------------------
    def votes(
        self, r_starts: np.ndarray, d_starts: np.ndarray, window: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Votes of frames: lags within 1 % of each frame's correlation peak, weighted.

        Frame k pairs the reference at ``r_starts[k]`` with the degraded signal at
        ``d_starts[k]`` (64 ms, Hann window). Every circular lag whose |cross-correlation|
        exceeds 0.99 of the frame maximum gets one vote of weight ``peak**0.125``, ``peak``
        being that 0.99 x maximum. Returns (frame, lag, weight) of every vote, ordered by
        frame.
        """
        if r_starts.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
        # Single precision, as in the reference software (and twice as fast).
        w = (self.window if window is None else window).astype(np.float32)
        x = self.ref_frames[r_starts].astype(np.float32) * w
        y = self.deg_frames[d_starts].astype(np.float32) * w
        spec = np.conj(scipy.fft.rfft(x, axis=1)) * scipy.fft.rfft(y, axis=1)
        corr = np.abs(scipy.fft.irfft(spec, self.nfft, axis=1))
        peak = np.float32(C.FINE_PEAK_FRACTION) * corr.max(axis=1)
        frame, lag = np.nonzero(corr > peak[:, None])
        return frame, lag, peak[frame].astype(np.float64) ** C.FINE_VOTE_POWER

    def histogram_peaks(self, frame: np.ndarray, lag: np.ndarray, weight: np.ndarray, counts) -> tuple:
        """Delay lag and confidence from the votes of the first ``counts[i]`` frames, for each i.

        Each vote is spread over neighbouring lags by a triangle of half-width nfft/64
        (circularly); the highest point of the smoothed histogram gives the lag (wrapped to
        [-nfft/2, nfft/2)) and, divided by the sum of the votes, the confidence (10.1.3.2).
        """
        counts = np.asarray(counts, dtype=np.int64)
        n_votes = np.searchsorted(frame, counts, side="left")
        width = self.triangle.size
        spread_lag = ((lag[:, None] + self.triangle_shifts) % self.nfft).ravel()
        spread_weight = (weight[:, None] * self.triangle).ravel()
        lags = np.zeros(counts.size, dtype=np.int64)
        conf = np.zeros(counts.size)
        for i, nv in enumerate(n_votes):
            if nv == 0:
                continue
            smooth = np.bincount(spread_lag[: nv * width], spread_weight[: nv * width], minlength=self.nfft)
            best = int(np.argmax(smooth))
            total = float(weight[:nv].sum())
            if smooth[best] > 0.0 and total > 0.0:
                conf[i] = smooth[best] / total
                lags[i] = best - self.nfft if best >= self.nfft // 2 else best
        return lags, conf

    def forward_frames(self, first_block: int, estimate: int) -> tuple[np.ndarray, np.ndarray]:
        """Frames stepping forward from reference block ``first_block`` at delay ``estimate``."""
        r = first_block * self.setup.block
        d = r + estimate
        if d < 0:
            r, d = -estimate, 0
        room = self.n_deg_g - self.nfft - d
        k = np.arange(room // self.hop + 1 if room >= 0 else 0)
        return r + k * self.hop, d + k * self.hop

    def backward_frames(self, last_block: int, estimate: int, lowest: int) -> tuple[np.ndarray, np.ndarray]:
        """Frames stepping backward from reference block ``last_block`` down to sample ``lowest``."""
        r = last_block * self.setup.block - self.nfft
        d = r + estimate
        if d + self.nfft > self.n_deg_g:
            d = self.n_deg_g - self.nfft
            r = d - estimate
        room = min(d, r - lowest)
        k = np.arange(room // self.hop + 1 if room >= 0 else 0)
        return r - k * self.hop, d - k * self.hop

    def fine_delay(self, search_first: int, search_last: int, estimate: int) -> tuple[int, float]:
        """Sample-accurate delay of reference blocks [search_first, search_last) (10.1.3.2)."""
        r_starts, d_starts = self.forward_frames(search_first, estimate)
        keep = r_starts + self.nfft <= search_last * self.setup.block
        frame, lag, weight = self.votes(r_starts[keep], d_starts[keep])
        lags, conf = self.histogram_peaks(frame, lag, weight, [int(keep.sum())])
        return estimate + int(lags[0]), float(conf[0])

    # -- 10.1.3.3: utterance splitting ------------------------------------------------
    def best_split(self, utt: _Utt, speech_first: int, speech_last: int) -> tuple | None:
        """Best split point of an utterance, or None when no split beats the whole."""
        b = self.setup.block
        length = speech_last - speech_first
        delta = self.nfft // (4 * b)
        step = int((0.801 * length + 40 * delta - 1) / (40 * delta)) * delta
        pad = max(length // 10, C.SPLIT_MIN_PAD)
        n_points = 1
        while n_points < C.SPLIT_MAX_POINTS and speech_first + pad + n_points * step <= speech_last - pad:
            n_points += 1
        points = speech_first + pad + step * np.arange(n_points)

        # Envelope delays of the two halves at every point. The reference software writes
        # each of these cross-correlations into the scratch memory that also holds the Hann
        # window of the fine search below, starting 3 * nfft + 6 values before it: a
        # correlation longer than that (an utterance of about 3 s at 8 kHz, 6 s at 16 kHz)
        # replaces the first window values with correlation values, the last writer
        # winning. Its scores, and so the conformance data, include that effect; it is
        # reproduced here. Where the two envelopes do not overlap at those lags the
        # values are the transform's rounding noise, which no other implementation can
        # reproduce bit for bit: for such long utterances, a split decided by a hair's
        # breadth can go the other way here, which is the main source of the (rare)
        # differences from the reference software.
        window = self.window.copy()
        offset = 3 * self.nfft + 6
        segments = []
        for p in points:
            segments += [(utt.start, int(p), utt.estimate), (int(p), utt.end, utt.estimate)]
        found = self.envelope_correlations(segments)
        for _, corr in found:
            if corr is not None and corr.size > offset:
                over = corr[offset : offset + self.nfft]
                window[: over.size] = over
        est1 = [delay for delay, _ in found[0::2]]
        est2 = [delay for delay, _ in found[1::2]]

        # First halves: frames forward from the utterance start, up to each point.
        d1 = np.zeros(n_points, dtype=np.int64)
        c1 = np.zeros(n_points)
        for estimate in set(est1):
            sel = np.array([i for i in range(n_points) if est1[i] == estimate])
            r_starts, d_starts = self.forward_frames(utt.start, estimate)
            keep = r_starts + self.nfft <= points[sel].max() * b
            r_starts, d_starts = r_starts[keep], d_starts[keep]
            counts = np.searchsorted(r_starts + self.nfft, points[sel] * b, side="right")
            lags, c1[sel] = self.histogram_peaks(*self.votes(r_starts, d_starts, window), counts)
            d1[sel] = estimate + lags

        # Second halves, only where the first half beats the whole: frames backward from
        # the utterance end, down to each point.
        d2 = np.zeros(n_points, dtype=np.int64)
        c2 = np.zeros(n_points)
        todo = [i for i in range(n_points) if c1[i] > utt.confidence]
        for estimate in {est2[i] for i in todo}:
            sel = np.array([i for i in todo if est2[i] == estimate])
            lowest = int(points[sel].min()) * b
            r_starts, d_starts = self.backward_frames(utt.end, estimate, lowest)
            counts = np.count_nonzero(r_starts[None, :] >= points[sel, None] * b, axis=1)
            lags, c2[sel] = self.histogram_peaks(*self.votes(r_starts, d_starts, window), counts)
            d2[sel] = estimate + lags

        best, best_sum = None, 0.0
        for i in range(n_points):
            if (
                abs(int(d2[i]) - int(d1[i])) >= b
                and c1[i] + c2[i] > best_sum
                and c1[i] > utt.confidence
                and c2[i] > utt.confidence
            ):
                best_sum = c1[i] + c2[i]
                best = (est1[i], int(d1[i]), float(c1[i]), est2[i], int(d2[i]), float(c2[i]), int(points[i]))
        return best


def _speech_runs(vad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    active = vad > 0.0
    edges = np.diff(active.astype(np.int8), prepend=0, append=0)
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    ends = np.minimum(ends, vad.size - 1)
    return starts, ends


def align(
    ref: np.ndarray,
    deg: np.ndarray,
    env_ref: Envelope,
    env_deg: Envelope,
    n_deg: int,
    setup: RateSetup,
) -> Utterances:
    """Delay per utterance of ``deg`` against ``ref`` (P.862 clause 10.1.3).

    Parameters
    ----------
    ref, deg : numpy.ndarray
        Alignment copies (:func:`._filters.alignment_copy`) of the two guarded buffers.
    env_ref, env_deg : Envelope
        Their voice-activity envelopes.
    n_deg : int
        Length of the degraded signal in samples (without guards).
    setup : RateSetup
        Rate-dependent constants.

    Returns
    -------
    Utterances
        Empty (no utterance) when the reference holds no speech burst of 200 ms that the
        degraded signal can cover.
    """
    al = _Aligner(ref, deg, env_ref, env_deg, n_deg, setup)
    b = setup.block
    n_blocks = env_ref.vad.size
    crude = _whole_file_delay(env_ref, env_deg, b)  # 10.1.3.1

    starts, ends = _speech_runs(env_ref.vad)
    first_ok = C.MIN_UTTERANCE_BLOCKS - tdiv(crude, b)
    last_ok = tdiv(al.n_deg_g - crude, b) - C.MIN_UTTERANCE_BLOCKS
    keep = (ends - starts >= C.MIN_UTTERANCE_BLOCKS) & (starts < last_ok) & (ends > first_ok)
    starts, ends = starts[keep], ends[keep]
    if starts.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Utterances(empty, empty, empty, np.zeros(0), crude)

    # 10.1.3.1 / 10.1.3.2: delay of each utterance within its search window.
    utts: list[_Utt] = []
    for s, e in zip(starts, ends):
        first = max(int(s) - C.GUARD_BLOCKS, 0)
        last = min(int(e) + C.GUARD_BLOCKS, n_blocks - 1)
        estimate = al.envelope_delay(first, last, crude)
        delay, conf = al.fine_delay(first, last, estimate)
        utts.append(_Utt(int(s), int(e), estimate, delay, conf))

    # 10.1.3.1: boundaries half-way between utterances, the outer ones at the guards.
    utts[0].start = C.GUARD_BLOCKS
    utts[-1].end = n_blocks - C.GUARD_BLOCKS
    for prev, cur in zip(utts[:-1], utts[1:]):
        mid = (cur.start + prev.end) // 2
        cur.start = prev.end = mid
    _clip_first(utts[0], al)
    _clip_last(utts[-1], al)
    for prev, cur in zip(utts[:-1], utts[1:]):
        this_start = cur.start * b + cur.delay
        last_end = prev.end * b + prev.delay
        if this_start < last_end:
            mid = tdiv(this_start + last_end, 2)
            cur.start = tdiv(b - 1 + mid - cur.delay, b)
            prev.end = tdiv(mid - prev.delay, b)

    # 10.1.3.3: split utterances while a split gives two better-aligned halves.
    i = 0
    while i < len(utts) and len(utts) < C.MAX_UTTERANCES:
        u = utts[i]
        speech_first, speech_last = _speech_extent(env_ref.vad, u.start, u.end)
        if speech_last - speech_first < C.SPLIT_MIN_BLOCKS:
            i += 1
            continue
        best = al.best_split(u, speech_first, speech_last)
        if best is None:
            i += 1
            continue
        est1, d1, c1, est2, d2, c2, point = best
        if d2 < d1:
            end1, start2 = point, point
        else:
            half = tdiv(d2 - d1, 2 * b)
            end1, start2 = point + half, point - half
        first = _Utt(u.start, end1, est1, d1, c1)
        second = _Utt(start2, u.end, est2, d2, c2)
        if (first.start - C.GUARD_BLOCKS) * b + d1 < 0:
            first.start = C.GUARD_BLOCKS + tdiv(b - 1 - d1, b)
        _clip_last(second, al)
        utts[i : i + 1] = [first, second]

    return Utterances(
        start=np.array([u.start for u in utts], dtype=np.int64),
        end=np.array([u.end for u in utts], dtype=np.int64),
        delay=np.array([u.delay for u in utts], dtype=np.int64),
        confidence=np.array([u.confidence for u in utts]),
        crude_delay=crude,
    )


def _speech_extent(vad: np.ndarray, start: int, end: int) -> tuple[int, int]:
    """First speech block in [start, end) and one past the last speech block in (start, end].

    Without speech the extent is empty (first = end, last = start + 1).
    """
    lo, hi = max(start, 0), min(end, vad.size - 1)
    head = np.flatnonzero(vad[lo:end] > 0.0)
    first = lo + int(head[0]) if head.size else end
    tail = np.flatnonzero(vad[lo + 1 : hi + 1] > 0.0)
    last = lo + 1 + int(tail[-1]) if tail.size else start
    return first, last + 1


def _whole_file_delay(env_ref: Envelope, env_deg: Envelope, block: int) -> int:
    """10.1.3.1: lag maximising the cross-correlation of the two whole log-envelopes."""
    x, y = env_ref.log_vad, env_deg.log_vad
    if x.size <= 1 or y.size <= 1:
        return 0
    corr = scipy.signal.fftconvolve(y, x[::-1], mode="full")
    i = int(np.argmax(corr))
    return (i - (x.size - 1)) * block if corr[i] > 0.0 else 0


def _clip_first(u: _Utt, al: _Aligner) -> None:
    """Start the first utterance where its delayed position is inside the degraded signal."""
    b = al.setup.block
    if u.start * b + u.delay < C.GUARD_BLOCKS * b:
        u.start = C.GUARD_BLOCKS + tdiv(b - 1 - u.delay, b)


def _clip_last(u: _Utt, al: _Aligner) -> None:
    """End the last utterance where its delayed position is still inside the degraded signal."""
    b = al.setup.block
    if u.end * b + u.delay > al.n_deg_g - C.GUARD_BLOCKS * b:
        u.end = tdiv(al.n_deg_g - u.delay, b) - C.GUARD_BLOCKS
