"""SSIM of decoded frames: Wang et al. 2004 and its named variants (the definitions: :mod:`qoe.video.metrics`).

Private: :func:`qoe.video.metrics.ssim` is the public name; :class:`SsimEngine` keeps its
buffers between frames for :func:`qoe.video.compare`.

References
----------
.. [1] Z. Wang, A. C. Bovik, H. R. Sheikh, E. P. Simoncelli, "Image quality assessment: from
   error visibility to structural similarity", IEEE Trans. Image Processing 13(4):600–612,
   2004, doi:10.1109/TIP.2003.819861 — §III-B eqs. (6)–(13), §III-C eqs. (14)–(17).
.. [2] Z. Wang, ``ssim.m`` (2009 revision of ``ssim_index.m``), downsampling step
   ``f = max(1, round(min(M, N) / 256))``; VMAF ``float_ssim`` uses the same rule.
.. [3] FFmpeg ``ssim`` filter (from x264's ``x264_pixel_ssim_wxh``),
   https://ffmpeg.org/ffmpeg-filters.html#ssim.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import cv2
import numpy as np
from numpy.typing import ArrayLike

from qoe.errors import InputError
from qoe.video._scores import (
    FrameScores,
    Planes,
    SsimVariant,
    check_choice,
    check_data_range,
    make_scores,
    pair_planes,
    pixel_counts,
    weighted,
)

__all__ = ["SSIM_VARIANTS", "SsimEngine", "ssim", "ssim_downsample_factor", "ssim_scores"]

#: The SSIM definitions :func:`ssim` implements, each named after its source.
SSIM_VARIANTS: tuple[str, ...] = ("wang", "ssim.m", "ffmpeg")

# Wang et al. 2004, §III-B: C1 = (K1·L)², eq. (7); C2 = (K2·L)², eq. (9); §III-C: K1 = 0.01, K2 = 0.03.
_K1, _K2 = 0.01, 0.03
# Wang et al. 2004, §III-C: "an 11 × 11 circular-symmetric Gaussian weighting function
# w = {w_i | i = 1, ..., N}, with standard deviation of 1.5 samples, normalized to unit sum".
_GAUSS_RADIUS, _GAUSS_SIGMA = 5, 1.5
# Wang's ssim.m (2009): downsampling factor f = max(1, round(min(M, N) / 256)).
_SSIM_M_SCALE = 256
# x264 / FFmpeg ssim: 4×4 block sums, 8×8 windows = 2×2 blocks on a 4-pixel grid.
_FF_BLOCK, _FF_WINDOW_PIXELS = 4, 64
# Rows of output SSIM map per band: 32 keeps the band's float32 buffers (about 1.5 MB at
# 1920 pixels a row) in cache; measured fastest of 16..128 at 1080p (benchmarks/video_metrics.py).
_BAND_ROWS = 32


def _ssim_definition(variant: SsimVariant, planes: Planes, data_range: float) -> str:
    base = {
        "wang": ("SSIM of Wang et al. 2004 (ssim_index.m): 11×11 Gaussian window σ=1.5, K1=0.01, K2=0.03, "
                 "population (co)variances, mean over windows inside the plane; = scikit-image "
                 "structural_similarity(gaussian_weights=True, sigma=1.5, use_sample_covariance=False)"),
        "ssim.m": ("SSIM of Wang et al. 2004 after Wang's ssim.m downsampling (f = max(1, round(min(H,W)/256)), "
                   "f×f mean with symmetric border, every f-th pixel), as VMAF float_ssim; 11×11 Gaussian σ=1.5, "
                   "K1=0.01, K2=0.03"),
        "ffmpeg": ("SSIM of FFmpeg's ssim filter (x264 block SSIM): 4×4 block sums, 8×8 windows on a 4-pixel "
                   "grid, no Gaussian, sample (co)variance, x264's C1/C2 scaling"),
    }[variant]
    what = "luma (Y) only" if planes == "y" else "Y, U, V weighted by their pixel counts (FFmpeg All)"
    return f"{base}; L = {data_range:g}; {what}"


def _gaussian_taps() -> np.ndarray:
    """1-D factor of Wang's window: exp(−k²/2σ²), k = −5..5, σ = 1.5, unit sum (float32)."""
    k = np.arange(-_GAUSS_RADIUS, _GAUSS_RADIUS + 1, dtype=np.float64)
    g = np.exp(-(k * k) / (2.0 * _GAUSS_SIGMA * _GAUSS_SIGMA))
    return (g / g.sum()).astype(np.float32)  # the 2-D window g gᵀ then sums to 1 too


def ssim_downsample_factor(height: int, width: int) -> int:
    """Downsampling factor of Wang's ``ssim.m``: max(1, round(min(H, W) / 256)).

    MATLAB's ``round`` takes halves away from zero (640 → 2.5 → 3), unlike Python's.

    Examples
    --------
    >>> [ssim_downsample_factor(h, w) for h, w in [(240, 320), (576, 720), (720, 1280), (1080, 1920)]]
    [1, 2, 3, 4]
    """
    return max(1, math.floor(min(height, width) / _SSIM_M_SCALE + 0.5))


def _ssim_m_downsample(plane: np.ndarray) -> np.ndarray:
    """Wang's ssim.m step: f×f mean (``imfilter(img, ones(f)/f², 'symmetric', 'same')``), keep every f-th pixel."""
    f = ssim_downsample_factor(*plane.shape)
    if f == 1:
        return plane
    # MATLAB centres an even-sized kernel at floor((f + 1) / 2) (1-based), so the mean spans
    # offsets −(f−1)//2 … f//2; OpenCV's anchor is that centre, 0-based. 'symmetric' padding
    # repeats the edge pixel: OpenCV's BORDER_REFLECT.
    anchor = ((f - 1) // 2, (f - 1) // 2)
    mean = cv2.boxFilter(plane.astype(np.float32), -1, (f, f), anchor=anchor, normalize=True,
                         borderType=cv2.BORDER_REFLECT)
    return np.ascontiguousarray(mean[::f, ::f])


class _WangSsim:
    """Mean SSIM (Wang et al. 2004) of 2-D planes of one shape, band by band.

    Each band of ``_BAND_ROWS`` output rows reads that many rows plus the window radius
    above and below, converts them to float32 (shifted by L/2), filters x, y, x²+y² and xy
    with the separable Gaussian, and reduces the SSIM map of its valid part to a float64 sum.
    Buffers are allocated once per worker and reused for every band and frame.
    """

    def __init__(self, shape: tuple[int, int], data_range: float, threads: int = 1) -> None:
        h, w = shape
        r = _GAUSS_RADIUS
        if h < 2 * r + 1 or w < 2 * r + 1:
            raise InputError(f"SSIM needs planes of at least 11×11 pixels (the Gaussian window); given {h}×{w}")
        self.shape = shape
        self.taps = _gaussian_taps()
        self.offset = np.float32(data_range / 2.0)
        self.c1 = (_K1 * data_range) ** 2  # Wang et al. 2004 eq. (7)
        self.c2 = (_K2 * data_range) ** 2  # Wang et al. 2004 eq. (9)
        rows_out = h - 2 * r
        self.bands = [(o, min(o + _BAND_ROWS, rows_out)) for o in range(0, rows_out, _BAND_ROWS)]
        self.count = rows_out * (w - 2 * r)
        self.threads = max(1, min(int(threads), len(self.bands)))
        rows_in = min(_BAND_ROWS, rows_out) + 2 * r
        self.buffers = [np.empty((8, rows_in, w), np.float32) for _ in range(self.threads)]
        self.pool = ThreadPoolExecutor(self.threads) if self.threads > 1 else None

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None

    def __enter__(self) -> _WangSsim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _band(self, a: np.ndarray, b: np.ndarray, o0: int, o1: int, buf: np.ndarray) -> float:
        r = _GAUSS_RADIUS
        n = o1 - o0 + 2 * r
        x, y, t, u, mx, my, sq, sxy = (buf[k, :n] for k in range(8))
        off = self.offset
        np.subtract(a[o0 : o0 + n], off, out=x, dtype=np.float32)
        np.subtract(b[o0 : o0 + n], off, out=y, dtype=np.float32)
        g = self.taps
        # Wang et al. 2004 eqs. (14)-(16): Gaussian-weighted means, E[x²] + E[y²] and E[xy].
        cv2.sepFilter2D(x, cv2.CV_32F, g, g, dst=mx, borderType=cv2.BORDER_REFLECT)
        cv2.sepFilter2D(y, cv2.CV_32F, g, g, dst=my, borderType=cv2.BORDER_REFLECT)
        np.multiply(x, x, out=t)
        np.multiply(y, y, out=u)
        t += u
        cv2.sepFilter2D(t, cv2.CV_32F, g, g, dst=sq, borderType=cv2.BORDER_REFLECT)
        np.multiply(x, y, out=t)
        cv2.sepFilter2D(t, cv2.CV_32F, g, g, dst=sxy, borderType=cv2.BORDER_REFLECT)
        # Keep the rows whose window lies inside the band (and so inside the plane).
        rows = slice(r, n - r)
        mx, my, sq, sxy, p, q, s = mx[rows], my[rows], sq[rows], sxy[rows], t[rows], u[rows], x[rows]
        np.multiply(mx, my, out=p)  # μx'μy' (shifted means)
        np.multiply(mx, mx, out=q)
        np.multiply(my, my, out=s)
        q += s  # μx'² + μy'²
        # 2σxy + C2 and σx² + σy² + C2 (the shift cancels in (co)variances)
        sxy -= p
        sxy *= 2.0
        sxy += self.c2
        sq -= q
        sq += self.c2
        # the true means μ = μ' + L/2, for 2μxμy + C1 and μx² + μy² + C1
        mx += off
        my += off
        np.multiply(mx, my, out=p)
        p *= 2.0
        p += self.c1
        np.multiply(mx, mx, out=q)
        np.multiply(my, my, out=s)
        q += s
        q += self.c1
        p *= sxy
        q *= sq
        p /= q  # SSIM map, eq. (13)
        return cv2.sumElems(p[:, r : p.shape[1] - r])[0]  # float64 sum of the valid columns

    def __call__(self, a: np.ndarray, b: np.ndarray) -> float:
        if self.pool is None:
            total = sum(self._band(a, b, o0, o1, self.buffers[0]) for o0, o1 in self.bands)
        else:
            chunks = [self.bands[k :: self.threads] for k in range(self.threads)]

            def work(k: int) -> list[float]:
                return [self._band(a, b, o0, o1, self.buffers[k]) for o0, o1 in chunks[k]]

            parts = list(self.pool.map(work, range(self.threads)))
            # add the bands in frame order, whatever the thread count
            order = {band: s for k, chunk in enumerate(chunks) for band, s in zip(chunk, parts[k])}
            total = sum(order[band] for band in self.bands)
        return total / self.count  # eq. (17): the mean over all windows


def _block_sums(x: np.ndarray, h4: int, w4: int) -> np.ndarray:
    """Sums over the 4×4 blocks of the top-left (4·h4)×(4·w4) part of a plane."""
    x = x[: 4 * h4, : 4 * w4].reshape(h4, 4, 4 * w4)
    rows = x[:, 0] + x[:, 1] + x[:, 2] + x[:, 3]
    cols = rows.reshape(h4, w4, 4)
    return cols[..., 0] + cols[..., 1] + cols[..., 2] + cols[..., 3]


def _ffmpeg_ssim_plane(a: np.ndarray, b: np.ndarray, data_range: float) -> float:
    """Block SSIM of FFmpeg's ssim filter (x264) of two 2-D planes, in bands of block rows."""
    h4, w4 = a.shape[0] // _FF_BLOCK, a.shape[1] // _FF_BLOCK
    if h4 < 2 or w4 < 2:
        raise InputError(f"FFmpeg's block SSIM needs planes of at least 8×8 pixels; given {a.shape[0]}×{a.shape[1]}")
    # Sums of integer samples are exact in float32 for 8 bit (a window's Σ(x² + y²) ≤ 64·2·255²
    # < 2²⁴) and in float64 beyond; float products are much faster than NumPy's integer ones.
    exact = np.float32 if data_range <= 255 else np.float64
    sums = np.empty((4, h4, w4), exact)  # Σx, Σy, Σ(x² + y²), Σxy over each 4×4 block
    band = _BAND_ROWS // 2  # block rows per band (64 pixel rows)
    for r0 in range(0, h4, band):
        r1 = min(r0 + band, h4)
        rows = slice(_FF_BLOCK * r0, _FF_BLOCK * r1)
        x = a[rows].astype(exact)
        y = b[rows].astype(exact)
        n = r1 - r0
        sums[0, r0:r1] = _block_sums(x, n, w4)
        sums[1, r0:r1] = _block_sums(y, n, w4)
        sums[3, r0:r1] = _block_sums(x * y, n, w4)
        x *= x
        y *= y
        x += y
        sums[2, r0:r1] = _block_sums(x, n, w4)
    # x264: C1 = K1²·L²·64 and C2 = K2²·L²·64·63, rounded to integers; sums stand for N·μ and
    # N²·σ, so C1 acts as C1/64 and the variances are sample variances (N − 1 = 63).
    npix = _FF_WINDOW_PIXELS
    c1 = math.floor(_K1 * _K1 * data_range * data_range * npix + 0.5)
    c2 = math.floor(_K2 * _K2 * data_range * data_range * npix * (npix - 1) + 0.5)
    total = 0.0
    for r0 in range(0, h4 - 1, band):
        r1 = min(r0 + band, h4 - 1)
        blk = sums[:, r0 : r1 + 1].astype(np.float64)
        # 8×8 windows = 2×2 blocks, on the 4-pixel grid
        s1, s2, ss, s12 = blk[:, :-1, :-1] + blk[:, 1:, :-1] + blk[:, :-1, 1:] + blk[:, 1:, 1:]
        var = ss * npix - s1 * s1 - s2 * s2
        covar = s12 * npix - s1 * s2
        ssim_map = ((2 * s1 * s2 + c1) * (2 * covar + c2)) / ((s1 * s1 + s2 * s2 + c1) * (var + c2))
        total += float(ssim_map.sum())
    return total / ((h4 - 1) * (w4 - 1))


class SsimEngine:
    """Reusable SSIM computer for frames of fixed plane shapes (buffers kept between frames).

    :func:`ssim` uses one per call; :func:`qoe.video.compare` one per comparison. Use it as
    a context manager (it may own a thread pool).

    Parameters
    ----------
    shapes : sequence of (H, W)
        Shape of each plane (one for luma only, three for Y, U, V).
    data_range : float
        L of C1 = (K1·L)², C2 = (K2·L)².
    variant : {"wang", "ssim.m", "ffmpeg"}
    threads : int
        Threads per plane for the Wang variants (bands of rows in parallel).
    """

    def __init__(self, shapes: Sequence[tuple[int, int]], *, data_range: float, variant: SsimVariant = "wang",
                 threads: int = 1) -> None:
        check_choice(variant, SSIM_VARIANTS, "variant")
        self.data_range = check_data_range(data_range)
        self.variant = variant
        self.counts = pixel_counts(shapes)
        self._engines: list[_WangSsim | None] = []
        for s in shapes:
            if variant == "ffmpeg":
                self._engines.append(None)
            else:
                if variant == "ssim.m":
                    f = ssim_downsample_factor(*s)
                    s = (-(-s[0] // f), -(-s[1] // f))
                self._engines.append(_WangSsim(tuple(s), self.data_range, threads))  # type: ignore[arg-type]

    def close(self) -> None:
        """Stop the worker threads."""
        for e in self._engines:
            if e is not None:
                e.close()

    def __enter__(self) -> SsimEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def frame(self, ref: Sequence[np.ndarray], dist: Sequence[np.ndarray]) -> tuple[float, list[float]]:
        """(SSIM, per-plane SSIM) of one frame given as matching lists of 2-D planes."""
        values = []
        for engine, a, b in zip(self._engines, ref, dist):
            if engine is None:
                values.append(_ffmpeg_ssim_plane(a, b, self.data_range))
            else:
                if self.variant == "ssim.m":
                    a, b = _ssim_m_downsample(a), _ssim_m_downsample(b)
                values.append(engine(a, b))
        return weighted(self.counts, values), values


def ssim(
    ref: ArrayLike | Any,
    dist: ArrayLike | Any,
    *,
    data_range: float,
    planes: Planes = "y",
    variant: SsimVariant = "wang",
    threads: int = 1,
) -> FrameScores:
    """Structural similarity of each frame (Wang et al. 2004, or a named variant).

    Parameters
    ----------
    ref, dist : array_like, (Y, U, V) triple or Frame
        As for :func:`psnr`: a plane ``(H, W)``, a sequence ``(N, H, W)``, or with
        ``planes="yuv"`` a triple of them or a :class:`~qoe.video.io.Frame`.
    data_range : float
        L, the dynamic range of the samples: 255 for 8-bit video. Required.
    planes : {"y", "yuv"}
        Luma only (default) or the three planes weighted by pixel counts (FFmpeg's ``All``).
    variant : {"wang", "ssim.m", "ffmpeg"}
        ``"wang"``: Wang et al. 2004 / ``ssim_index.m`` (= scikit-image with Wang's settings);
        ``"ssim.m"``: after Wang's ``ssim.m`` downsampling (as VMAF ``float_ssim``);
        ``"ffmpeg"``: FFmpeg's ``ssim`` filter (x264 8×8 block SSIM). See the module notes.
    threads : int
        Threads for the bands of one plane (Wang variants); 1 by default. The value does not
        depend on it.

    Returns
    -------
    FrameScores
        SSIM per frame (1.0 exactly for identical frames), per plane, and the definition;
        ``summary().clip`` is the mean over frames (FFmpeg's summary).

    Raises
    ------
    InputError
        Shapes that differ, planes smaller than the window (11×11, or 8×8 for ``"ffmpeg"``),
        a bad option.

    References
    ----------
    .. [1] Wang et al., IEEE TIP 13(4), 2004, eqs. (13)–(17), doi:10.1109/TIP.2003.819861.
    .. [2] FFmpeg Filters Documentation, ``ssim``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 256, (32, 32), dtype=np.uint8)
    >>> ssim(a, a, data_range=255).values.tolist()
    [1.0]
    >>> b = np.clip(a.astype(int) + rng.integers(-20, 21, a.shape), 0, 255).astype(np.uint8)
    >>> 0.8 < float(ssim(b, a, data_range=255).values[0]) < 1.0
    True
    """
    check_choice(variant, SSIM_VARIANTS, "variant")
    data_range = check_data_range(data_range)
    r, d = pair_planes(ref, dist, planes)
    n = r[0].shape[0]
    values = np.empty(n)
    per_plane = np.empty((len(r), n))
    with SsimEngine([p.shape[1:] for p in r], data_range=data_range, variant=variant, threads=threads) as engine:
        for i in range(n):
            values[i], per_plane[:, i] = engine.frame([p[i] for p in r], [p[i] for p in d])
    return ssim_scores(values, per_plane, planes=planes, variant=variant, data_range=data_range)


def ssim_scores(values: ArrayLike, plane_values: ArrayLike, *, planes: Planes, variant: SsimVariant,
                data_range: float) -> FrameScores:
    """An SSIM :class:`FrameScores` from per-frame arrays (``plane_values``: ``(n_planes, n_frames)``)."""
    return make_scores("ssim", values, plane_values, None, planes=planes, variant=variant, data_range=data_range,
                       definition=_ssim_definition(variant, planes, data_range))
