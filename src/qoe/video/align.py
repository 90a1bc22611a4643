"""Which distorted frame a viewer saw at each reference frame's time.

Rule (by presentation time): for each reference frame shown at time t, the distorted
frame on screen is the **last one whose PTS is ≤ t** — a late or lost frame leaves the
previous one on screen (a freeze repeats it), a frame that arrives early replaces it. A
reference frame earlier than every distorted frame has no partner (``-1``). Timestamps
written by different containers are rounded to their time bases (1001/30000 s is not a
whole number of 1/12800 s ticks), so "≤ t" is taken as "≤ t + tolerance" (1 ms by default,
far below a frame interval).

When either stream carries no timestamps (a raw H.264 elementary stream, say), frames are
paired by index instead, as EvalVid does: reference frame i with distorted frame i.

:func:`shown_index` does this on arrays of times; :func:`pair_frames` does the same on two
frame iterators, streaming (it keeps one distorted frame ahead).

A received stream's clock agrees with the reference's when the sender kept the reference's
timestamps (MPEG-TS with ``-copyts``); an RTP stream's timestamps start at a random offset
(RFC 3550 §5.1). :func:`find_offset` tells which case holds from the frames' content, on
small thumbnails, and finds the offset in the second.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, Literal, Protocol, TypeVar

import cv2
import numpy as np
from numpy.typing import ArrayLike, NDArray

from qoe.errors import AlignmentError, InputError

__all__ = ["DEFAULT_TOLERANCE_S", "shown_index", "pair_frames", "Pair", "Pairing", "THUMB_SIZE", "thumbnail", "Offset", "find_offset"]

Pairing = Literal["pts", "index"]

#: Slack on "PTS ≤ t", seconds: absorbs the rounding of timestamps to a container's time
#: base (at most half a tick: 39 µs for 1/12800 s, 5.6 µs for 1/90000 s), far below a frame
#: interval (≥ 4 ms up to 240 frames/s).
DEFAULT_TOLERANCE_S = 1e-3


class _Timed(Protocol):
    pts_s: float | None


F = TypeVar("F", bound=_Timed)


def shown_index(ref_pts_s: ArrayLike, dist_pts_s: ArrayLike, *, tolerance_s: float = DEFAULT_TOLERANCE_S) -> NDArray[np.int64]:
    """Index of the distorted frame on screen at each reference time (−1: none yet).

    Parameters
    ----------
    ref_pts_s, dist_pts_s : array_like
        Presentation times in seconds; ``dist_pts_s`` in decode (= presentation) order,
        non-decreasing.
    tolerance_s : float
        A distorted frame whose PTS is at most this much after t counts as shown at t.

    Examples
    --------
    >>> shown_index([0.00, 0.04, 0.08, 0.12, 0.16], [0.04, 0.0800004, 0.16]).tolist()
    [-1, 0, 1, 1, 2]
    """
    ref = np.asarray(ref_pts_s, dtype=np.float64)
    dist = np.asarray(dist_pts_s, dtype=np.float64)
    if np.isnan(ref).any() or np.isnan(dist).any():
        raise InputError("presentation times contain NaN; pair such streams by index")
    if dist.size and (np.diff(dist) < 0).any():
        raise InputError("distorted presentation times must be non-decreasing (presentation order)")
    if tolerance_s < 0:
        raise InputError(f"tolerance_s must be >= 0; given {tolerance_s!r}")
    return np.searchsorted(dist, ref + tolerance_s, side="right").astype(np.int64) - 1


@dataclass(frozen=True)
class Pair(Generic[F]):
    """A reference frame and the distorted frame shown at its time (``None``: none yet)."""

    ref: F
    dist: F | None
    ref_index: int
    dist_index: int  # −1 when dist is None


def pair_frames(
    ref: Iterable[F],
    dist: Iterable[F],
    *,
    by: Pairing = "pts",
    tolerance_s: float = DEFAULT_TOLERANCE_S,
) -> tuple[Pairing, Iterator[Pair[F]]]:
    """Pair two frame streams: by presentation time (the rule above), or by index.

    Parameters
    ----------
    ref, dist : iterables of objects with ``pts_s``
        Frames in presentation order (e.g. :func:`qoe.video.read_frames`).
    by : {"pts", "index"}
        ``"pts"`` falls back to ``"index"`` when the first frame of either stream has no
        timestamp.
    tolerance_s : float
        See :data:`DEFAULT_TOLERANCE_S`.

    Returns
    -------
    (pairing, pairs)
        The pairing actually used and an iterator of :class:`Pair`, one per reference frame
        (by index: one per reference frame too; those beyond the distorted stream's end
        get ``None``).

    Examples
    --------
    >>> from types import SimpleNamespace as F
    >>> ref = [F(pts_s=t) for t in (0.0, 0.04, 0.08, 0.12)]
    >>> dist = [F(pts_s=t) for t in (0.0, 0.08)]          # the 0.04 frame was lost
    >>> how, pairs = pair_frames(ref, dist)
    >>> how, [p.dist_index for p in pairs]
    ('pts', [0, 0, 1, 1])
    """
    if by not in ("pts", "index"):
        raise InputError(f"pairing must be 'pts' or 'index'; given {by!r}")
    if tolerance_s < 0:
        raise InputError(f"tolerance_s must be >= 0; given {tolerance_s!r}")
    ref_it, dist_it = iter(ref), iter(dist)
    first_ref = next(ref_it, None)
    first_dist = next(dist_it, None)
    if first_ref is None:
        return by, iter(())
    if by == "pts" and (first_dist is None or first_ref.pts_s is None or first_dist.pts_s is None):
        by = "index" if first_dist is not None else "pts"
    if by == "index":
        return "index", _by_index(first_ref, ref_it, first_dist, dist_it)
    return "pts", _by_pts(first_ref, ref_it, first_dist, dist_it, tolerance_s)


def _chain(first: F | None, rest: Iterator[F]) -> Iterator[F]:
    if first is not None:
        yield first
        yield from rest


def _by_index(first_ref: F, ref_it: Iterator[F], first_dist: F | None, dist_it: Iterator[F]) -> Iterator[Pair[F]]:
    dists = _chain(first_dist, dist_it)
    for i, r in enumerate(_chain(first_ref, ref_it)):
        d = next(dists, None)
        yield Pair(r, d, i, i if d is not None else -1)


def _by_pts(first_ref: F, ref_it: Iterator[F], first_dist: F | None, dist_it: Iterator[F],
            tolerance_s: float) -> Iterator[Pair[F]]:
    shown: F | None = None
    shown_i = -1
    ahead = first_dist  # the next distorted frame not yet on screen
    ahead_i = 0
    last_pts = -np.inf
    for i, r in enumerate(_chain(first_ref, ref_it)):
        t = r.pts_s
        if t is None:  # a reference frame without a timestamp: whatever is on screen stays
            yield Pair(r, shown, i, shown_i)
            continue
        while ahead is not None and (ahead.pts_s is None or ahead.pts_s <= t + tolerance_s):
            if ahead.pts_s is not None:
                if ahead.pts_s < last_pts:
                    raise InputError(f"distorted frame {ahead_i} has PTS {ahead.pts_s:.6f} s, before the previous "
                                     f"frame's {last_pts:.6f} s: not in presentation order; pair by index")
                last_pts = ahead.pts_s
            shown, shown_i = ahead, ahead_i
            ahead, ahead_i = next(dist_it, None), ahead_i + 1
        yield Pair(r, shown, i, shown_i)


# Thumbnails for content matching: 32 x 18 luma (16:9; other shapes are squeezed alike for
# both sides), area-averaged, so that coding noise and small damage average out.
THUMB_SIZE = (32, 18)
# Received frames sampled (evenly over the stream) when matching by content; each votes for
# the offset that puts it on its best-matching reference frame.
_MATCH_FRAMES = 256
# A content offset is convincing when at least this share of the sampled frames (and 3) vote
# for it and ...
_MIN_VOTE_SHARE = 0.05
# ... it has at least this many times the votes of the runner-up. Frames damaged by loss (or
# corrupt because they predict from a damaged frame, which no flag marks) vote at random;
# a neighbouring offset (one frame off) collects the votes of slow scenes. Chance does not
# give one offset twice the votes of every other.
_VOTE_MARGIN = 2.0


def thumbnail(y: np.ndarray) -> np.ndarray:
    """A small float32 luma thumbnail of a frame (area average, :data:`THUMB_SIZE`)."""
    return cv2.resize(np.ascontiguousarray(y), THUMB_SIZE, interpolation=cv2.INTER_AREA).astype(np.float32)


@dataclass(frozen=True, slots=True)
class Offset:
    """How received presentation times map onto the reference's.

    Attributes
    ----------
    ticks : int
        Add to a received pts (90 kHz ticks) to get the reference time of the same picture.
    method : {"pts", "content", "start"}
        ``"pts"``: the stream kept the reference's timestamps; ``"content"``: the offset
        was found by matching received frames against the reference; ``"start"``: no
        frame matched convincingly, the caller's fallback (the stream's start on the
        reference's start) was used.
    match_error : float
        Mean squared difference of the matched thumbnails (0-255 scale): small for a
        true match.
    """

    ticks: int
    method: str
    match_error: float


def _sq_dist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mean squared difference between every thumbnail of ``a`` and every one of ``b``."""
    a2 = a.reshape(a.shape[0], -1).astype(np.float64)
    b2 = b.reshape(b.shape[0], -1).astype(np.float64)
    d = (a2 * a2).sum(1)[:, None] + (b2 * b2).sum(1)[None, :] - 2.0 * (a2 @ b2.T)
    return np.maximum(d, 0.0) / a2.shape[1]


def _median_error(err: np.ndarray, ref_pts: np.ndarray, dist_pts: np.ndarray, offset: int, tol: int) -> tuple[float, int]:
    """(median error, frames placed) of the sampled frames put at ``dist_pts + offset``."""
    t = dist_pts + offset
    j = np.clip(np.searchsorted(ref_pts, t), 1, max(1, ref_pts.size - 1))
    j = np.minimum(np.where(np.abs(ref_pts[j - 1] - t) <= np.abs(ref_pts[np.minimum(j, ref_pts.size - 1)] - t),
                            j - 1, j), ref_pts.size - 1)
    hit = np.abs(ref_pts[j] - t) <= tol
    if not hit.any():
        return float("inf"), 0
    return float(np.median(err[np.flatnonzero(hit), j[hit]])), int(np.count_nonzero(hit))


def find_offset(
    ref_pts: np.ndarray,
    ref_thumbs: np.ndarray,
    dist_pts: np.ndarray,
    dist_thumbs: np.ndarray,
    *,
    usable: np.ndarray | None = None,
    start_ticks: int | None = None,
) -> Offset:
    """The offset from received to reference presentation times.

    Parameters
    ----------
    ref_pts, dist_pts : numpy.ndarray of int64
        Presentation times (90 kHz ticks) of the reference and received frames, ascending.
    ref_thumbs, dist_thumbs : numpy.ndarray of float32, shape (n, 18, 32)
        Their thumbnails (:func:`thumbnail`).
    usable : numpy.ndarray of bool, optional, keyword-only
        Received frames fit for matching (e.g. not decoded from damaged data); default
        all. When none is usable, all are used.
    start_ticks : int, optional, keyword-only
        The offset to use when neither the stream's own times nor any content match is
        convincing (method ``"start"``): e.g. the one that puts the stream's first RTP
        timestamp on the reference's first frame, right when the capture holds the
        stream from its start.

    Returns
    -------
    Offset
        ``"pts"`` when the received frames at their own times fall on reference frames
        (at least half of them) and no content offset is clearly better; otherwise the
        best content offset if it is clearly better than chance; otherwise
        ``start_ticks`` (``"start"``) when given, else the best content offset.

    Notes
    -----
    Up to 256 usable received frames, spread evenly over the stream, are each compared with
    every reference frame (thumbnails) and vote for the offset that puts them on their
    closest reference frame. The offset with most votes is *convincing* when at least 5 %
    of the sampled frames (and 3) voted for it and it has at least twice the votes of any
    other: a frame matched alone can be fooled (a frame corrupted by a lost key frame, a
    still scene), a majority of the stream is not.

    The stream's own times win when at least half the sampled frames fall on reference
    frames under them, unless a convincing content offset puts them closer (smaller
    median thumbnail error). Otherwise a convincing content offset wins; when there is
    none (a stream damaged beyond recognition), ``start_ticks`` if given, else the offset
    with most votes.

    Raises
    ------
    AlignmentError
        No received or reference frames.
    """
    if ref_pts.size == 0 or dist_pts.size == 0:
        raise AlignmentError("no frames to align: the reference or the received stream decoded to nothing")
    cand = np.flatnonzero(usable) if usable is not None and usable.any() else np.arange(dist_pts.size)
    if cand.size > _MATCH_FRAMES:
        cand = cand[np.linspace(0, cand.size - 1, _MATCH_FRAMES).round().astype(np.int64)]
    err = _sq_dist(dist_thumbs[cand], ref_thumbs)  # (sampled, reference)
    sub_pts = dist_pts[cand]
    vals, counts = np.unique(ref_pts[np.argmin(err, axis=1)] - sub_pts, return_counts=True)
    steps = np.diff(ref_pts)
    tol = int(np.median(steps[steps > 0]) // 2) if (steps > 0).any() else 0
    order = np.argsort(-counts, kind="stable")
    best, votes = int(vals[order[0]]), int(counts[order[0]])
    runner_up = int(counts[order[1]]) if order.size > 1 else 0
    convincing = votes >= max(3, _MIN_VOTE_SHARE * cand.size) and votes >= _VOTE_MARGIN * runner_up
    e_best, _ = _median_error(err, ref_pts, sub_pts, best, tol)
    e0, n0 = _median_error(err, ref_pts, sub_pts, 0, tol)
    if best == 0 or (n0 >= cand.size / 2 and not (convincing and e_best < e0)):
        return Offset(ticks=0, method="pts", match_error=e0)
    if not convincing and start_ticks is not None:
        e_start, _ = _median_error(err, ref_pts, sub_pts, int(start_ticks), tol)
        return Offset(ticks=int(start_ticks), method="start", match_error=e_start)
    return Offset(ticks=best, method="content", match_error=e_best)
