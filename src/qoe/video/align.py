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
# Frames compared when matching by content (the first undamaged received frames).
_MATCH_FRAMES = 8


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
    method : {"pts", "content"}
        ``"pts"``: the stream kept the reference's timestamps; ``"content"``: the offset
        was found by matching the first received frames against the reference.
    match_error : float
        Mean squared difference of the matched thumbnails (0-255 scale): small for a
        true match.
    """

    ticks: int
    method: str
    match_error: float


def _mse_to_all(ref_thumbs: np.ndarray, t: np.ndarray) -> np.ndarray:
    d = ref_thumbs - t[None]
    return np.einsum("kij,kij->k", d, d) / t.size


def find_offset(
    ref_pts: np.ndarray,
    ref_thumbs: np.ndarray,
    dist_pts: np.ndarray,
    dist_thumbs: np.ndarray,
    *,
    usable: np.ndarray | None = None,
) -> Offset:
    """The offset from received to reference presentation times.

    Parameters
    ----------
    ref_pts, dist_pts : numpy.ndarray of int64
        Presentation times (90 kHz ticks) of the reference and received frames.
    ref_thumbs, dist_thumbs : numpy.ndarray of float32, shape (n, 18, 32)
        Their thumbnails (:func:`thumbnail`).
    usable : numpy.ndarray of bool, optional, keyword-only
        Received frames fit for matching (e.g. not damaged); default all.

    Returns
    -------
    Offset
        ``"pts"`` when the received frames at their own times match the reference
        frames at the same times at least as well as the best content match does;
        otherwise the content match's offset (the most common one over the first few
        usable frames).

    Raises
    ------
    AlignmentError
        No received or reference frames.
    """
    if ref_pts.size == 0 or dist_pts.size == 0:
        raise AlignmentError("no frames to align: the reference or the received stream decoded to nothing")
    cand = np.flatnonzero(usable) if usable is not None and usable.any() else np.arange(dist_pts.size)
    cand = cand[:_MATCH_FRAMES]
    offsets, errors = [], []
    for i in cand.tolist():
        e = _mse_to_all(ref_thumbs, dist_thumbs[i])
        j = int(np.argmin(e))
        offsets.append(int(ref_pts[j] - dist_pts[i]))
        errors.append(float(e[j]))
    # the same frames at their own times: equal pts in both
    at_pts = np.searchsorted(ref_pts, dist_pts[cand])
    same = (at_pts < ref_pts.size) & (ref_pts[np.minimum(at_pts, ref_pts.size - 1)] == dist_pts[cand])
    if same.all():
        e_pts = [float(_mse_to_all(ref_thumbs[j : j + 1], dist_thumbs[i])[0]) for i, j in zip(cand.tolist(), at_pts.tolist())]
        if np.mean(e_pts) <= np.mean(errors) * 1.05 + 1e-6:
            return Offset(ticks=0, method="pts", match_error=float(np.mean(e_pts)))
    vals, counts = np.unique(np.asarray(offsets, dtype=np.int64), return_counts=True)
    best = int(vals[np.argmax(counts)])
    err = float(np.mean([e for o, e in zip(offsets, errors) if o == best]))
    # the content agrees with the stream's own times: they were the reference's
    return Offset(ticks=best, method="pts" if best == 0 else "content", match_error=err)
