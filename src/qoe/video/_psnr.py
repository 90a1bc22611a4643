"""PSNR of decoded frames, as FFmpeg's ``psnr`` filter (the definitions: :mod:`qoe.video.metrics`).

Private: :func:`qoe.video.metrics.psnr` is the public name.

References
----------
.. [1] FFmpeg Filters Documentation, ``psnr``, https://ffmpeg.org/ffmpeg-filters.html#psnr.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np
from numpy.typing import ArrayLike

from qoe.video._scores import (
    FrameScores,
    Planes,
    check_data_range,
    make_scores,
    pair_planes,
    pixel_counts,
    psnr_of_mse,
    weighted,
)

__all__ = ["psnr", "psnr_frame", "psnr_scores"]


def _psnr_definition(planes: Planes, data_range: float) -> str:
    what = ("luma (Y) only" if planes == "y" else
            "MSE of Y, U, V weighted by their pixel counts, (4·Y + U + V)/6 for 4:2:0 (FFmpeg psnr_avg)")
    return (f"PSNR = 10·log10(MAX²/MSE), MAX = {data_range:g}; {what}; as FFmpeg's psnr filter; "
            "identical frames (MSE 0) → +inf")


def _mse_plane(a: np.ndarray, b: np.ndarray) -> float:
    """Mean squared difference of two 2-D planes, exact for integer samples."""
    if a.dtype == b.dtype and a.dtype in (np.uint8, np.uint16):
        # OpenCV accumulates the squared differences of 8/16-bit integers exactly.
        return cv2.norm(np.ascontiguousarray(a), np.ascontiguousarray(b), cv2.NORM_L2SQR) / a.size
    d = a.astype(np.float64) - b.astype(np.float64)
    return float(np.dot(d.ravel(), d.ravel())) / d.size


def psnr_frame(ref: Sequence[np.ndarray], dist: Sequence[np.ndarray],
                data_range: float) -> tuple[float, float, list[float]]:
    """(PSNR, pixel-count weighted MSE, per-plane PSNR) of one frame given as 2-D planes."""
    mses = [_mse_plane(a, b) for a, b in zip(ref, dist)]
    mse = weighted(pixel_counts([a.shape for a in ref]), mses)
    return psnr_of_mse(mse, data_range), mse, [psnr_of_mse(m, data_range) for m in mses]


def psnr(ref: ArrayLike | Any, dist: ArrayLike | Any, *, data_range: float, planes: Planes = "y") -> FrameScores:
    """Peak signal-to-noise ratio of each frame, as FFmpeg's ``psnr`` filter.

    Parameters
    ----------
    ref, dist : array_like, (Y, U, V) triple or Frame
        With ``planes="y"``: one luma plane ``(H, W)`` or a sequence ``(N, H, W)``
        (a :class:`~qoe.video.io.Frame` gives its ``y``). With ``planes="yuv"``: a triple
        of such arrays (one per plane) or a ``Frame``.
    data_range : float
        MAX, the peak sample value: 255 for 8-bit video. Required (not guessed from dtype).
    planes : {"y", "yuv"}
        Luma only (default) or the three planes, MSEs weighted by pixel counts (FFmpeg's
        ``psnr_avg``: (4·Y + U + V) / 6 for 4:2:0).

    Returns
    -------
    FrameScores
        ``values`` in dB per frame (+inf for an identical frame), ``mse``, per-plane values;
        ``summary().clip`` is FFmpeg's clip PSNR (PSNR of the mean MSE).

    Raises
    ------
    InputError
        Shapes that differ, a bad ``data_range`` or ``planes``, non-numeric samples.

    References
    ----------
    .. [1] FFmpeg Filters Documentation, ``psnr``.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.full((4, 4), 100, np.uint8)
    >>> b = a.copy(); b[0, 0] = 104                      # MSE = 16 / 16 = 1
    >>> round(float(psnr(a, b, data_range=255).values[0]), 4)
    48.1308
    >>> psnr(a, a, data_range=255).values.tolist()       # identical frames
    [inf]
    """
    data_range = check_data_range(data_range)
    r, d = pair_planes(ref, dist, planes)
    n = r[0].shape[0]
    values = np.empty(n)
    mse = np.empty(n)
    per_plane = np.empty((len(r), n))
    for i in range(n):
        values[i], mse[i], per_plane[:, i] = psnr_frame([p[i] for p in r], [p[i] for p in d], data_range)
    return psnr_scores(values, per_plane, mse, planes=planes, data_range=data_range)


def psnr_scores(values: ArrayLike, plane_values: ArrayLike, mse: ArrayLike, *, planes: Planes,
                data_range: float) -> FrameScores:
    """A PSNR :class:`FrameScores` from per-frame arrays (``plane_values``: ``(n_planes, n_frames)``)."""
    return make_scores("psnr", values, plane_values, mse, planes=planes, variant="psnr", data_range=data_range,
                       definition=_psnr_definition(planes, data_range))
