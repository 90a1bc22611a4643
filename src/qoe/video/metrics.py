"""Full-reference frame metrics: PSNR and SSIM of decoded frames, per frame and per clip.

Pure functions over NumPy arrays (no file I/O; computed in the private modules
:mod:`qoe.video._psnr` and :mod:`qoe.video._ssim`, as scikit-image keeps ``simple_metrics``
and ``_structural_similarity`` apart): :func:`psnr` and :func:`ssim` take one
frame (a 2-D plane) or a sequence of frames (``(N, H, W)``), on luma by default or on the
three planes of 4:2:0 video (``planes="yuv"``), and return a :class:`FrameScores` that holds
the per-frame values, says which definition it holds, and summarises the clip
(:meth:`FrameScores.summary`).

Definitions (tools disagree; each result carries its own in ``definition``):

* **PSNR** = 10·log10(MAX² / MSE) with MAX = ``data_range`` (255 for 8-bit video), as FFmpeg's
  ``psnr`` filter. With ``planes="yuv"`` the frame's MSE is the plane MSEs weighted by their
  pixel counts — (4·Y + U + V) / 6 for 4:2:0 — as FFmpeg's ``psnr_avg``. **Identical frames**
  have MSE 0 and PSNR = +inf (FFmpeg prints ``inf``; libvmaf would cap at 60 dB, EvalVid
  report 0): we keep +inf, count such frames (``identical_frames``), and write ``null`` in
  JSON. **A clip's PSNR** is reported two ways: FFmpeg's, the PSNR of the mean MSE over
  the frames (``clip``; finite unless every frame is identical), and the mean and median of
  the per-frame values (EvalVid's is the mean; it is +inf as soon as one frame is identical).
* **SSIM**, ``variant="wang"`` (default): Wang et al. 2004, eqs. (13)–(17): local statistics
  under an 11×11 circular Gaussian window (σ = 1.5, normalised to unit sum), K1 = 0.01,
  K2 = 0.03, population (co)variances, averaged over the windows that lie wholly inside the
  plane (Wang's ``ssim_index.m``). Equals scikit-image's ``structural_similarity(...,
  gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=...)``.
* ``variant="ssim.m"``: the same after the downsampling of Wang's later ``ssim.m`` (and
  VMAF's ``float_ssim``): f = max(1, round(min(H, W) / 256)); if f > 1 the plane is averaged
  over f×f (MATLAB ``imfilter(..., 'symmetric', 'same')``) and every f-th pixel kept. With
  ``planes="yuv"`` each plane gets the factor of its own size (VMAF scores luma only).
* ``variant="ffmpeg"``: FFmpeg's ``ssim`` filter, which is x264's block SSIM: sums over 4×4
  blocks, 8×8 windows (2×2 blocks) on a 4-pixel grid, no Gaussian, sample (co)variance
  (N − 1 = 63), C1 and C2 scaled and rounded as x264 does; pixels beyond the last whole 4×4
  block are ignored.
* With ``planes="yuv"`` a frame's SSIM is the per-plane SSIMs weighted by pixel counts, as
  FFmpeg's ``All``; a clip's SSIM (``clip``) is the mean of the per-frame values, as FFmpeg's
  summary.

Speed: SSIM works in float32 on bands of rows (so the temporaries stay in cache), with
OpenCV's separable filter for the Gaussian, four filterings per plane (x, y, x² + y², xy:
the two variances only appear as their sum), no Python loop over pixels, reductions in
float64. The inputs are shifted by ``data_range / 2`` before the products to keep float32
cancellation in σ² = E[x²] − μ² small. ``threads`` spreads the bands of a plane over
threads (OpenCV and NumPy release the GIL); the result does not depend on it.

References
----------
.. [1] Z. Wang, A. C. Bovik, H. R. Sheikh, E. P. Simoncelli, "Image quality assessment: from
   error visibility to structural similarity", IEEE Trans. Image Processing 13(4):600–612,
   2004, doi:10.1109/TIP.2003.819861 — §III-B eqs. (6)–(13), §III-C eqs. (14)–(17).
.. [2] Z. Wang, ``ssim.m`` (2009 revision of ``ssim_index.m``), downsampling step
   ``f = max(1, round(min(M, N) / 256))``; VMAF ``float_ssim`` uses the same rule.
.. [3] FFmpeg ``ssim`` filter (from x264's ``x264_pixel_ssim_wxh``) and ``psnr`` filter,
   FFmpeg Filters Documentation, https://ffmpeg.org/ffmpeg-filters.html#ssim and #psnr.
"""

from __future__ import annotations

import importlib
import warnings

from qoe.video._psnr import psnr
from qoe.video._scores import ClipSummary, FrameScores
from qoe.video._ssim import SSIM_VARIANTS, ssim, ssim_downsample_factor

__all__ = ["psnr", "ssim", "FrameScores", "ClipSummary", "SSIM_VARIANTS", "ssim_downsample_factor"]

# Plumbing that was public before issue 21: still reachable for one release, with a warning.
_MOVED = {"SsimEngine": "qoe.video._ssim", "make_scores": "qoe.video._scores", "plane_weights": "qoe.video._scores"}


def __getattr__(name: str) -> object:
    if name in _MOVED:
        warnings.warn(f"qoe.video.metrics.{name} is private now (issue 21) and goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
