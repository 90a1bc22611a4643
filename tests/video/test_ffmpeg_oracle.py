"""Our PSNR and block SSIM against FFmpeg's ``psnr`` and ``ssim`` filters on the same file pairs.

Oracle command (conftest.ffmpeg_scores), run on each pair of the ``clips`` fixture::

    ffmpeg -i DIST -i REF -lavfi "[0:v]split[a][b];[1:v]split[c][d];
        [a][c]ssim=stats_file=s.log;[b][d]psnr=stats_file=p.log" -f null -

FFmpeg 5.1 writes SSIM per frame with 6 decimals and PSNR/MSE with 2; its summary lines
(standard error) have 6 decimals.
"""

from __future__ import annotations

import numpy as np
import pytest

from qoe.video import compare

SSIM_TOL = 1e-5  # the bound; FFmpeg prints 6 decimals (rounding ≤ 5e-7)
PSNR_TOL = 0.01  # dB, the bound; FFmpeg's stats file prints 2 decimals (rounding ≤ 0.005)
SUMMARY_PSNR_TOL = 1e-4  # dB: the summary line has 6 decimals


@pytest.fixture(scope="module", params=["testsrc2", "mandelbrot"])
def scored(request, clips):
    c = clips[request.param]
    return c, compare(c.ref, c.dist, variant="ffmpeg", planes="yuv")


def column(rows, key):
    return np.array([r[key] for r in rows])


def test_block_ssim_per_frame_and_plane(scored):
    c, res = scored
    ff = c.ffmpeg.ssim
    assert len(ff) == res.n_frames == 20
    for plane, key in (("y", "Y"), ("u", "U"), ("v", "V")):
        np.testing.assert_allclose(res.ssim.plane_values[plane], column(ff, key), rtol=0, atol=SSIM_TOL)
    np.testing.assert_allclose(res.ssim.values, column(ff, "All"), rtol=0, atol=SSIM_TOL)


def test_block_ssim_clip_is_ffmpeg_summary(scored):
    c, res = scored
    assert res.ssim.summary().clip == pytest.approx(c.ffmpeg.ssim_summary["All"], abs=SSIM_TOL)
    assert float(np.mean(res.ssim.plane_values["y"])) == pytest.approx(c.ffmpeg.ssim_summary["Y"], abs=SSIM_TOL)


def test_psnr_per_frame_y_and_yuv(scored):
    c, res = scored
    ff = c.ffmpeg.psnr
    np.testing.assert_allclose(res.psnr.values, column(ff, "psnr_avg"), rtol=0, atol=PSNR_TOL)
    for plane in "yuv":
        np.testing.assert_allclose(res.psnr.plane_values[plane], column(ff, f"psnr_{plane}"), rtol=0, atol=PSNR_TOL)
    np.testing.assert_allclose(res.psnr.mse, column(ff, "mse_avg"), rtol=0, atol=0.005 + 1e-9)


def test_clip_psnr_is_psnr_of_mean_mse(scored, clips):
    # FFmpeg's summary "PSNR y:... average:..." is the PSNR of the mean MSE (per plane / weighted).
    c, res = scored
    assert res.psnr.summary().clip == pytest.approx(c.ffmpeg.psnr_summary["average"], abs=SUMMARY_PSNR_TOL)
    luma = compare(c.ref, c.dist)  # planes="y"
    assert luma.psnr.summary().clip == pytest.approx(c.ffmpeg.psnr_summary["y"], abs=SUMMARY_PSNR_TOL)
    # ... and it is not the mean of per-frame PSNR (EvalVid's), which we report beside it
    assert abs(luma.psnr.summary().mean - luma.psnr.summary().clip) > 1e-3
    np.testing.assert_allclose(luma.psnr.values, column(c.ffmpeg.psnr, "psnr_y"), rtol=0, atol=PSNR_TOL)
    assert min(res.psnr.values) == pytest.approx(c.ffmpeg.psnr_summary["min"], abs=SUMMARY_PSNR_TOL)
    assert max(res.psnr.values) == pytest.approx(c.ffmpeg.psnr_summary["max"], abs=SUMMARY_PSNR_TOL)


def test_wang_and_ffmpeg_ssim_differ(clip):
    # The two definitions are not interchangeable (DESIGN: up to 0.08 apart): the variant matters.
    wang = compare(clip.ref, clip.dist).ssim.values
    block = compare(clip.ref, clip.dist, variant="ffmpeg").ssim.values
    assert np.max(np.abs(wang - block)) > 1e-3


def test_identical_files_like_ffmpeg(clip, score_with_ffmpeg, tmp_path):
    # The oracle command above with REF as both inputs: FFmpeg prints psnr_y:inf per frame and in
    # its summary, and SSIM 1.000000.
    ff = score_with_ffmpeg(clip.ref, clip.ref, tmp_path)
    res = compare(clip.ref, clip.ref, variant="ffmpeg", planes="yuv")
    assert all(r["psnr_y"] == np.inf for r in ff.psnr) and np.all(res.psnr.values == np.inf)
    assert ff.psnr_summary["average"] == np.inf and res.psnr.summary().clip == np.inf
    assert all(r["All"] == 1.0 for r in ff.ssim) and np.all(res.ssim.values == 1.0)
    assert res.psnr.summary().identical_frames == 20
