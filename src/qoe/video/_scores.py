"""Per-frame scores of one metric and their clip summary; the input checks PSNR and SSIM share.

Private: :mod:`qoe.video.metrics` is the public face (:class:`FrameScores`,
:class:`ClipSummary`); :mod:`qoe.video._psnr` and :mod:`qoe.video._ssim` compute the values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from qoe.errors import InputError
from qoe.report import to_plain

FloatArray = NDArray[np.float64]
Planes = Literal["y", "yuv"]
SsimVariant = Literal["wang", "ssim.m", "ffmpeg"]

PLANE_NAMES = ("y", "u", "v")


@dataclass(frozen=True)
class ClipSummary:
    """Clip-level statistics of per-frame scores (frames without a score, NaN, left out).

    Attributes
    ----------
    n_frames : int
        Frames with a score.
    mean, median, min, max : float
        Of the per-frame values (+inf counts as a value: the mean PSNR is +inf as soon as
        one frame is identical to its reference). NaN when there is no frame.
    clip : float
        The clip's score as FFmpeg's summary forms it: for PSNR the PSNR of the mean MSE,
        for SSIM the mean of the per-frame values. See ``clip_definition``.
    clip_definition : str
        How ``clip`` was formed.
    identical_frames : int or None
        PSNR: frames with MSE 0 (PSNR +inf). ``None`` for SSIM.
    """

    n_frames: int
    mean: float
    median: float
    min: float
    max: float
    clip: float
    clip_definition: str
    identical_frames: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python view (+inf and NaN kept: :func:`qoe.report.to_json` writes them as null)."""
        return {
            "n_frames": self.n_frames,
            "mean": self.mean,
            "median": self.median,
            "min": self.min,
            "max": self.max,
            "clip": self.clip,
            "clip_definition": self.clip_definition,
            "identical_frames": self.identical_frames,
        }


@dataclass(frozen=True)
class FrameScores:
    """Per-frame scores of one metric over a sequence of frames, and how they were formed.

    Attributes
    ----------
    metric : {"psnr", "ssim"}
    values : numpy.ndarray
        One value per frame (float64): PSNR in dB (+inf for an identical frame) or SSIM.
        NaN marks a frame that has no score (e.g. a reference frame with no distorted frame
        shown yet, see :func:`qoe.video.compare`).
    plane_values : Mapping[str, numpy.ndarray]
        The same per plane: ``{"y": ...}`` or ``{"y": ..., "u": ..., "v": ...}``.
    mse : numpy.ndarray or None
        PSNR only: each frame's MSE (pixel-count weighted over the planes for ``"yuv"``).
    planes : {"y", "yuv"}
    variant : str
        ``"psnr"`` for PSNR; for SSIM one of :data:`SSIM_VARIANTS`.
    data_range : float
        MAX of the PSNR and L of SSIM's C1 = (K1·L)², C2 = (K2·L)².
    definition : str
        In words: the formula, the planes, how planes and identical frames count.
    """

    metric: Literal["psnr", "ssim"]
    values: FloatArray = field(repr=False)
    plane_values: Mapping[str, FloatArray] = field(repr=False)
    mse: FloatArray | None = field(repr=False)
    planes: Planes
    variant: str
    data_range: float
    definition: str

    def __len__(self) -> int:
        return int(self.values.size)

    def summary(self) -> ClipSummary:
        """Mean, median, min and max of the per-frame values and the clip value (FFmpeg's)."""
        v = self.values[~np.isnan(self.values)]
        n = int(v.size)
        stats = (float(np.mean(v)), float(np.median(v)), float(np.min(v)), float(np.max(v))) if n else (math.nan,) * 4
        if self.metric == "psnr":
            assert self.mse is not None
            m = self.mse[~np.isnan(self.mse)]
            clip = psnr_of_mse(float(np.mean(m)), self.data_range) if n else math.nan
            return ClipSummary(n, *stats, clip=clip, clip_definition="PSNR of the mean MSE over frames (FFmpeg)",
                               identical_frames=int(np.count_nonzero(m == 0)))
        return ClipSummary(n, *stats, clip=stats[0], clip_definition="mean of per-frame SSIM (FFmpeg)")

    def to_dict(self, *, frames: bool = True) -> dict[str, Any]:
        """Plain-Python view (+inf and NaN kept: :func:`qoe.report.to_json` writes them as null).

        ``frames=False``: the summary only."""
        out: dict[str, Any] = {
            "metric": self.metric,
            "variant": self.variant,
            "planes": self.planes,
            "data_range": self.data_range,
            "definition": self.definition,
            "summary": self.summary().to_dict(),
        }
        if frames:
            out["values"] = to_plain(self.values)
            out["plane_values"] = {k: to_plain(v) for k, v in self.plane_values.items()}
            if self.mse is not None:
                out["mse"] = to_plain(self.mse)
        return out


def check_data_range(data_range: float) -> float:
    try:
        value = float(data_range)
    except (TypeError, ValueError):
        raise InputError(f"data_range must be a number (255 for 8-bit video); given {data_range!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"data_range must be finite and > 0 (255 for 8-bit video); given {data_range!r}")
    return value


def check_choice(value: str, choices: Sequence[str], name: str) -> None:
    if value not in choices:
        raise InputError(f"{name} must be one of {', '.join(map(repr, choices))}; given {value!r}")


# An image with its colour channels last (OpenCV's BGR, scikit-image's RGB) is no plane: qoe
# scores planes of samples, luma by default (the seed paper's PSNR/SSIM, on Y).
_CHANNELS = ("; an image with its colour channels last (H, W, 3)? give its luma plane Y, e.g. "
             "cv2.cvtColor(img, cv2.COLOR_BGR2YUV)[..., 0], or the Y, U, V planes with planes='yuv'")


def _plane_stack(x: Any, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise InputError(f"{name} must hold integer or float samples; given dtype {arr.dtype}")
    if arr.ndim == 2:
        arr = arr[np.newaxis]
    if arr.ndim != 3:
        raise InputError(f"{name} must be a frame (H, W) or a sequence of frames (N, H, W); given shape {arr.shape}"
                         + (_CHANNELS if arr.ndim == 4 and arr.shape[-1] in (3, 4) else ""))
    if arr.shape[-1] in (3, 4) and arr.shape[-2] > 4:  # (H, W, 3): read as N = H frames of W × 3, too narrow to score
        raise InputError(f"{name} has shape {arr.shape}, read as {arr.shape[0]} frames of "
                         f"{arr.shape[1]}×{arr.shape[2]} pixels" + _CHANNELS)
    if np.issubdtype(arr.dtype, np.floating) and not np.isfinite(arr).all():
        raise InputError(f"{name} contains NaN or infinite samples")
    return arr


def _as_planes(x: Any, planes: Planes, name: str) -> tuple[np.ndarray, ...]:
    """A frame, sequence or (Y, U, V) triple → one (N, H, W) array per plane."""
    if all(hasattr(x, p) for p in PLANE_NAMES):  # a qoe.video.io.Frame (or alike)
        parts: tuple[Any, ...] = tuple(getattr(x, p) for p in PLANE_NAMES)
    elif planes == "yuv":
        if not (isinstance(x, (tuple, list)) and len(x) == 3):
            raise InputError(f"planes='yuv' needs {name} as a (Y, U, V) triple of arrays or a Frame; "
                             f"given {type(x).__name__}")
        parts = tuple(x)
    else:
        parts = (x,)
    if planes == "y":
        parts = parts[:1]
    arrs = tuple(_plane_stack(p, f"{name} plane {n.upper()}" if planes == "yuv" else name)
                 for p, n in zip(parts, PLANE_NAMES))
    n_frames = {a.shape[0] for a in arrs}
    if len(n_frames) != 1:
        raise InputError(f"{name}: the planes hold different numbers of frames: {[a.shape for a in arrs]}")
    return arrs


def pair_planes(ref: Any, dist: Any, planes: Planes) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    check_choice(planes, ("y", "yuv"), "planes")
    r = _as_planes(ref, planes, "ref")
    d = _as_planes(dist, planes, "dist")
    for a, b, n in zip(r, d, PLANE_NAMES):
        if a.shape != b.shape:
            raise InputError(f"ref and dist differ in shape (plane {n.upper()}): ref {a.shape}, dist {b.shape}")
    return r, d


def plane_weights(shapes: Sequence[tuple[int, ...]]) -> FloatArray:
    """Weights of planes by their pixel counts, as FFmpeg's ``psnr_avg`` and ssim ``All``.

    Examples
    --------
    >>> plane_weights([(240, 320), (120, 160), (120, 160)]).tolist()  # 4:2:0 → (4, 1, 1) / 6
    [0.6666666666666666, 0.16666666666666666, 0.16666666666666666]
    """
    counts = pixel_counts(shapes)
    return counts / counts.sum()


def pixel_counts(shapes: Sequence[tuple[int, ...]]) -> FloatArray:
    return np.array([float(np.prod(s[-2:])) for s in shapes])


def weighted(counts: FloatArray, values: Sequence[float]) -> float:
    """Σ countᵢ·valueᵢ / Σ countᵢ: equal values give that value exactly (SSIM 1 stays 1)."""
    return float(np.dot(counts, values) / counts.sum()) if len(values) > 1 else float(values[0])


def psnr_of_mse(mse: float, data_range: float) -> float:
    """10·log10(MAX²/MSE); +inf for MSE 0 (FFmpeg prints ``inf`` too)."""
    if mse == 0:
        return math.inf
    return 10.0 * math.log10(data_range * data_range / mse)


def make_scores(metric: Literal["psnr", "ssim"], values: ArrayLike, plane_values: ArrayLike, mse: ArrayLike | None,
                *, planes: Planes, variant: str, data_range: float, definition: str) -> FrameScores:
    """Assemble a :class:`FrameScores` from per-frame arrays.

    ``plane_values`` is ``(n_planes, n_frames)``; ``definition`` says in words how the
    values were formed (:func:`qoe.video._psnr.psnr_scores`, :func:`qoe.video._ssim.ssim_scores`).
    """
    pv = np.atleast_2d(np.asarray(plane_values, dtype=np.float64))
    return FrameScores(
        metric=metric,
        values=np.asarray(values, dtype=np.float64),
        plane_values=MappingProxyType({n: pv[k] for k, n in enumerate(PLANE_NAMES[: pv.shape[0]])}),
        mse=None if mse is None else np.asarray(mse, dtype=np.float64),
        planes=planes,
        variant=variant,
        data_range=data_range,
        definition=definition,
    )
