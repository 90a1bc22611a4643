"""File against file: PSNR, SSIM and MOS of every reference frame and of the clip.

:func:`compare` decodes the reference and the distorted file side by side (streaming,
:func:`qoe.video.io.read_frames`), pairs each reference frame with the distorted frame
shown at its presentation time (:mod:`qoe.video.align`: the last one with PTS ≤ t; by
index when the files carry no timestamps), scores each pair with
:func:`qoe.video.metrics.psnr` and :func:`~qoe.video.metrics.ssim` definitions, and maps
the scores to MOS (:mod:`qoe.video.mos`). The seed paper (Pujol et al., IMC 2014, §8)
reports the median over frames; the clip MOS here is the MOS of the median score.

A reference frame shown before any distorted frame has no partner: its scores are NaN
(``null`` in JSON), it is left out of the clip statistics, and a
:class:`~qoe.errors.QoEWarning` says how many there were.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from qoe.errors import InputError, QoEWarning
from qoe.video.align import DEFAULT_TOLERANCE_S, Pairing, pair_frames
from qoe.video.io import Frame, read_frames
from qoe.video._psnr import psnr_frame, psnr_scores
from qoe.video._scores import FrameScores, Planes, SsimVariant, check_choice
from qoe.video._ssim import SSIM_VARIANTS, SsimEngine, ssim_scores
from qoe.video.mos import PSNR_TABLES, SSIM_TABLES, psnr_to_mos, ssim_to_mos

__all__ = ["VideoComparison", "compare", "compare_frames"]

#: 8-bit samples (the planes :func:`read_frames` yields): MAX = L = 2⁸ − 1.
DATA_RANGE_8BIT = 255.0


@dataclass(frozen=True)
class VideoComparison:
    """Per-frame and per-clip scores of a distorted video against its reference.

    Attributes
    ----------
    reference, distorted : str
        The two files.
    pairing : {"pts", "index"}
        How frames were paired (see :mod:`qoe.video.align`).
    width, height : int
        Luma size of the frames.
    ref_pts_s : numpy.ndarray
        Presentation time of each reference frame, s (NaN without timestamps).
    dist_index : numpy.ndarray
        Index (presentation order) of the distorted frame shown at that time; −1: none.
    dist_pts_s : numpy.ndarray
        Its presentation time, s (NaN when none or without timestamps).
    psnr, ssim : FrameScores
        Per-frame scores (NaN for unpaired frames) and their definitions.
    mos_psnr, mos_ssim : numpy.ndarray
        MOS of each frame's PSNR and SSIM (tables ``psnr_table``, ``ssim_table``).
    psnr_table, ssim_table : str
        Names of the MOS tables in :data:`qoe.video.mos.PSNR_TABLES` / ``SSIM_TABLES``.
    notes : tuple of str
        What the reader should know (fallbacks, unpaired frames).
    """

    reference: str
    distorted: str
    pairing: Pairing
    width: int
    height: int
    ref_pts_s: NDArray[np.float64] = field(repr=False)
    dist_index: NDArray[np.int64] = field(repr=False)
    dist_pts_s: NDArray[np.float64] = field(repr=False)
    psnr: FrameScores = field(repr=False)
    ssim: FrameScores = field(repr=False)
    mos_psnr: NDArray[np.float64] = field(repr=False)
    mos_ssim: NDArray[np.float64] = field(repr=False)
    psnr_table: str = "zinner2010"
    ssim_table: str = "zinner2010"
    notes: tuple[str, ...] = ()

    @property
    def n_frames(self) -> int:
        """Reference frames compared (paired or not)."""
        return int(self.ref_pts_s.size)

    @property
    def n_paired(self) -> int:
        """Reference frames that had a distorted frame on screen."""
        return int(np.count_nonzero(self.dist_index >= 0))

    def _clip_mos(self) -> tuple[float, float]:
        p, s = self.psnr.summary(), self.ssim.summary()
        mp = float(psnr_to_mos(p.median, table=self.psnr_table))
        ms = float(ssim_to_mos(s.median, table=self.ssim_table))
        return mp, ms

    def to_record(self, brief: bool = False) -> dict[str, Any]:
        """One flat record of the clip (+inf kept: use :meth:`to_dict` for JSON)."""
        p, s = self.psnr.summary(), self.ssim.summary()
        mos_p, mos_s = self._clip_mos()
        rec: dict[str, Any] = {
            "reference": self.reference,
            "distorted": self.distorted,
            "frames": self.n_frames,
            "paired": self.n_paired,
            "psnr_db": p.clip,
            "psnr_median_db": p.median,
            "ssim": s.clip,
            "ssim_median": s.median,
            "mos_psnr": mos_p,
            "mos_ssim": mos_s,
        }
        if brief:
            return rec
        rec.update({
            "pairing": self.pairing,
            "width": self.width,
            "height": self.height,
            "planes": self.psnr.planes,
            "ssim_variant": self.ssim.variant,
            "psnr_mean_db": p.mean,
            "psnr_min_db": p.min,
            "psnr_max_db": p.max,
            "identical_frames": p.identical_frames,
            "ssim_mean": s.mean,
            "ssim_min": s.min,
            "ssim_max": s.max,
            "mos_psnr_mean": float(np.nanmean(self.mos_psnr)) if self.n_paired else math.nan,
            "mos_ssim_mean": float(np.nanmean(self.mos_ssim)) if self.n_paired else math.nan,
            "psnr_table": self.psnr_table,
            "ssim_table": self.ssim_table,
        })
        return rec

    def frame_records(self) -> list[dict[str, Any]]:
        """One flat record per reference frame (+inf and NaN kept)."""
        extra_planes = self.psnr.planes == "yuv"
        rows = []
        for i in range(self.n_frames):
            row: dict[str, Any] = {
                "frame": i,
                "ref_pts_s": float(self.ref_pts_s[i]),
                "dist_index": int(self.dist_index[i]),
                "dist_pts_s": float(self.dist_pts_s[i]),
                "psnr_db": float(self.psnr.values[i]),
                "ssim": float(self.ssim.values[i]),
                "mos_psnr": float(self.mos_psnr[i]),
                "mos_ssim": float(self.mos_ssim[i]),
            }
            if extra_planes:
                for k, v in self.psnr.plane_values.items():
                    row[f"psnr_{k}_db"] = float(v[i])
                for k, v in self.ssim.plane_values.items():
                    row[f"ssim_{k}"] = float(v[i])
            rows.append(row)
        return rows

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        """Detail tables: ``"frames"`` (see :meth:`frame_records`)."""
        return {"frames": self.frame_records()}

    def identity(self) -> dict[str, Any]:
        """The columns that name this comparison in detail tables."""
        return {"reference": self.reference, "distorted": self.distorted}

    def to_dict(self, *, frames: bool = True) -> dict[str, Any]:
        """Everything as plain Python (+inf and NaN kept: :func:`qoe.report.to_json` writes them as null)."""
        mos_p, mos_s = self._clip_mos()
        out: dict[str, Any] = {
            "reference": self.reference,
            "distorted": self.distorted,
            "pairing": self.pairing,
            "width": self.width,
            "height": self.height,
            "frames": self.n_frames,
            "paired": self.n_paired,
            "psnr": self.psnr.to_dict(frames=False),
            "ssim": self.ssim.to_dict(frames=False),
            "mos": {
                "psnr": mos_p,
                "ssim": mos_s,
                "definition": "MOS of the clip's median per-frame score (the seed paper reports medians)",
                "psnr_table": {"name": self.psnr_table, "source": PSNR_TABLES[self.psnr_table].source},
                "ssim_table": {"name": self.ssim_table, "source": SSIM_TABLES[self.ssim_table].source},
            },
            "notes": list(self.notes),
        }
        if frames:
            out["per_frame"] = self.frame_records()
        return out


def _shape_text(frame: Frame) -> str:
    h, w = frame.shape
    return f"{w}x{h} (W×H)"


def compare(
    ref_path: str | os.PathLike[str],
    dist_path: str | os.PathLike[str],
    *,
    variant: SsimVariant = "wang",
    planes: Planes = "y",
    pairing: Pairing = "pts",
    tolerance_s: float = DEFAULT_TOLERANCE_S,
    psnr_table: str = "zinner2010",
    ssim_table: str = "zinner2010",
    threads: int = 1,
) -> VideoComparison:
    """Score a distorted video file against its reference, frame by frame.

    Parameters
    ----------
    ref_path, dist_path : str or os.PathLike
        Any files FFmpeg reads; decoded to 8-bit Y, U, V planes (data range 255).
    variant : {"wang", "ssim.m", "ffmpeg"}
        SSIM definition (see :func:`qoe.video.metrics.ssim`).
    planes : {"y", "yuv"}
        Luma only (default) or Y, U, V weighted by pixel counts (as FFmpeg's averages).
    pairing : {"pts", "index"}
        By presentation time (default; falls back to index when a file has no timestamps)
        or by index.
    tolerance_s : float
        Timestamp slack of the PTS pairing (:data:`qoe.video.align.DEFAULT_TOLERANCE_S`).
    psnr_table : {"zinner2010", "evalvid"}
        PSNR → MOS table. ``ssim_table``: SSIM → MOS table (``"zinner2010"``).
    threads : int
        Threads per plane for SSIM (the scores do not depend on it).

    Returns
    -------
    VideoComparison

    Raises
    ------
    InputError
        An unreadable file (named), frames of different sizes (both quoted), no distorted
        frame shown during the reference, bad options.
    """
    ref_name, dist_name = os.fspath(ref_path), os.fspath(dist_path)
    return compare_frames(
        read_frames(ref_name), read_frames(dist_name), ref_name=ref_name, dist_name=dist_name, variant=variant,
        planes=planes, pairing=pairing, tolerance_s=tolerance_s, psnr_table=psnr_table, ssim_table=ssim_table,
        threads=threads,
    )


def compare_frames(
    ref_frames: Iterable[Frame],
    dist_frames: Iterable[Frame],
    *,
    ref_name: str,
    dist_name: str,
    variant: SsimVariant = "wang",
    planes: Planes = "y",
    pairing: Pairing = "pts",
    tolerance_s: float = DEFAULT_TOLERANCE_S,
    psnr_table: str = "zinner2010",
    ssim_table: str = "zinner2010",
    threads: int = 1,
) -> VideoComparison:
    """:func:`compare` on two streams of frames (each in presentation order).

    The received stream of a capture (:func:`qoe.video.score_capture`) is scored this way:
    its decoded frames, on the reference's time line, against the reference file's.
    ``ref_name`` and ``dist_name`` name the two in results and messages; the other
    parameters are :func:`compare`'s.
    """
    check_choice(variant, SSIM_VARIANTS, "variant")
    check_choice(planes, ("y", "yuv"), "planes")
    check_choice(psnr_table, tuple(PSNR_TABLES), "psnr_table")
    check_choice(ssim_table, tuple(SSIM_TABLES), "ssim_table")
    how, pairs = pair_frames(iter(ref_frames), iter(dist_frames), by=pairing, tolerance_s=tolerance_s)

    ref_pts: list[float] = []
    dist_idx: list[int] = []
    dist_pts: list[float] = []
    psnr_v: list[float] = []
    mse_v: list[float] = []
    psnr_planes: list[list[float]] = []
    ssim_v: list[float] = []
    ssim_planes: list[list[float]] = []
    n_planes = 1 if planes == "y" else 3
    nan_planes = [math.nan] * n_planes
    engine: SsimEngine | None = None
    shape: tuple[int, int] | None = None
    first: Frame | None = None
    try:
        for pair in pairs:
            r, d = pair.ref, pair.dist
            if first is None:
                first, shape = r, r.shape
                engine = SsimEngine([r.y.shape, r.u.shape, r.v.shape][:n_planes], data_range=DATA_RANGE_8BIT,
                                    variant=variant, threads=threads)
            if r.shape != shape:
                raise InputError(f"{ref_name}: frame {pair.ref_index} is {_shape_text(r)}, earlier frames "
                                 f"{_shape_text(first)}: a size change within the reference is not supported")
            ref_pts.append(math.nan if r.pts_s is None else r.pts_s)
            dist_idx.append(pair.dist_index)
            if d is None:
                dist_pts.append(math.nan)
                psnr_v.append(math.nan)
                mse_v.append(math.nan)
                psnr_planes.append(nan_planes)
                ssim_v.append(math.nan)
                ssim_planes.append(nan_planes)
                continue
            if d.shape != r.shape:
                raise InputError(f"frame size mismatch: {ref_name} frame {pair.ref_index} is {_shape_text(r)} but "
                                 f"{dist_name} frame {pair.dist_index} is {_shape_text(d)}; scale one to the "
                                 "other's size first")
            dist_pts.append(math.nan if d.pts_s is None else d.pts_s)
            rp = (r.y, r.u, r.v)[:n_planes]
            dp = (d.y, d.u, d.v)[:n_planes]
            p, m, pp = psnr_frame(rp, dp, DATA_RANGE_8BIT)
            psnr_v.append(p)
            mse_v.append(m)
            psnr_planes.append(pp)
            assert engine is not None
            s, sp = engine.frame(rp, dp)
            ssim_v.append(s)
            ssim_planes.append(sp)
    finally:
        if engine is not None:
            engine.close()
    if first is None:
        raise InputError(f"{ref_name}: no frame could be decoded")

    if not any(i >= 0 for i in dist_idx):
        last = ref_pts[-1]
        raise InputError(f"{dist_name}: no frame of it was on screen at any reference frame time (the reference "
                         f"{ref_name} ends at {last:.3f} s): it holds no decodable frame or starts later; "
                         "to ignore timestamps, pair by index")
    notes = []
    if pairing == "pts" and how == "index":
        notes.append("a file carries no timestamps: frames paired by index (EvalVid's rule)")
        warnings.warn(f"{ref_name} / {dist_name}: no presentation timestamps, frames paired by index",
                      QoEWarning, stacklevel=2)
    unpaired = sum(1 for i in dist_idx if i < 0)
    if unpaired:
        notes.append(f"{unpaired} reference frame(s) had no distorted frame on screen yet "
                     "(or beyond the distorted file's end, by index): left out of the clip statistics")
        warnings.warn(f"{dist_name}: {unpaired} of {len(dist_idx)} reference frame(s) have no distorted frame "
                      "to compare with; they are left out", QoEWarning, stacklevel=2)

    psnr_s = psnr_scores(psnr_v, np.array(psnr_planes).T, mse_v, planes=planes, data_range=DATA_RANGE_8BIT)
    ssim_s = ssim_scores(ssim_v, np.array(ssim_planes).T, planes=planes, variant=variant, data_range=DATA_RANGE_8BIT)
    assert shape is not None
    return VideoComparison(
        reference=ref_name,
        distorted=dist_name,
        pairing=how,
        width=int(shape[1]),
        height=int(shape[0]),
        ref_pts_s=np.array(ref_pts, dtype=np.float64),
        dist_index=np.array(dist_idx, dtype=np.int64),
        dist_pts_s=np.array(dist_pts, dtype=np.float64),
        psnr=psnr_s,
        ssim=ssim_s,
        mos_psnr=psnr_to_mos(psnr_s.values, table=psnr_table),
        mos_ssim=ssim_to_mos(ssim_s.values, table=ssim_table),
        psnr_table=psnr_table,
        ssim_table=ssim_table,
        notes=tuple(notes),
    )
