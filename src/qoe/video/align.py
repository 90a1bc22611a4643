"""Which received frame a viewer saw at each reference frame's time.

A player shows each decoded frame from its presentation time until the next one's: for a
reference frame at time ``t`` the frame on screen is the last decoded frame with
``pts <= t``; a frame that was lost or could not be decoded leaves the previous one on
screen (a freeze). EvalVid pairs frames by index instead, which misaligns every frame after
the first loss; this module pairs them by time.

The received stream's clock and the reference's agree when the sender kept the
reference's timestamps (MPEG-TS with ``-copyts``); an RTP stream's timestamps start at a
random offset (RFC 3550 §5.1). :func:`find_offset` tells which case holds from the frames'
content, on small thumbnails, and finds the offset in the second.

References
----------
.. [1] RFC 3550, §5.1 (the initial RTP timestamp is random).
.. [2] J. Klaue, B. Rathke, A. Wolisz, "EvalVid - A Framework for Video Transmission and
   Quality Evaluation", Computer Performance Evaluation, LNCS 2794, 2003 (frame-index
   alignment, §3).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from qoe.errors import AlignmentError

__all__ = ["THUMB_SIZE", "thumbnail", "Offset", "find_offset", "shown_frames"]

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
    return Offset(ticks=best, method="content", match_error=err)


def shown_frames(ref_pts: np.ndarray, dist_pts: np.ndarray) -> np.ndarray:
    """For each reference time, the index of the received frame on screen (-1: none yet).

    ``dist_pts`` must be in reference time (offset applied) and ascending: the frame
    shown at ``t`` is the last with ``pts <= t``.

    Examples
    --------
    >>> shown_frames(np.array([0, 40, 80, 120, 160]), np.array([0, 40, 120]))
    array([0, 1, 1, 2, 2])
    """
    return np.searchsorted(dist_pts, ref_pts, side="right") - 1
