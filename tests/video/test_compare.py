"""qoe.video.compare on real files: per-frame scores, pairing by PTS, fallbacks, JSON."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from skimage.metrics import structural_similarity

from qoe.report import to_json
from qoe.errors import QoEWarning
from qoe.video import compare, psnr, psnr_to_mos, ssim_to_mos

SKIMAGE_TOL = 1e-4
PSNR_TOL = 0.01


@pytest.fixture(scope="module")
def plain(clip):
    return compare(clip.ref, clip.dist)


def test_per_frame_scores_against_independent_tools(clip, plain, decode_raw):
    # SSIM oracle: skimage (Wang settings) on frames decoded by `ffmpeg -f rawvideo -pix_fmt yuv420p`;
    # PSNR oracle: FFmpeg's psnr stats file (conftest.ffmpeg_scores command).
    ref = decode_raw(clip.ref, clip.width, clip.height)[0]
    dist = decode_raw(clip.dist, clip.width, clip.height)[0]
    want = [structural_similarity(r, d, gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
                                  data_range=255) for r, d in zip(ref, dist)]
    np.testing.assert_allclose(plain.ssim.values, want, rtol=0, atol=SKIMAGE_TOL)
    np.testing.assert_allclose(plain.psnr.values, [r["psnr_y"] for r in clip.ffmpeg.psnr], rtol=0, atol=PSNR_TOL)
    assert plain.pairing == "pts" and plain.n_frames == plain.n_paired == 20
    assert plain.dist_index.tolist() == list(range(20))
    np.testing.assert_allclose(plain.ref_pts_s, np.arange(20) / 25, atol=1e-9)
    assert (plain.width, plain.height) == (320, 240)


def test_mos_per_frame_and_clip(plain):
    np.testing.assert_array_equal(plain.mos_psnr, psnr_to_mos(plain.psnr.values))
    np.testing.assert_array_equal(plain.mos_ssim, ssim_to_mos(plain.ssim.values))
    rec = plain.to_record()
    assert rec["mos_ssim"] == float(ssim_to_mos(np.median(plain.ssim.values)))
    assert rec["mos_psnr"] == float(psnr_to_mos(np.median(plain.psnr.values)))
    assert rec["psnr_db"] == pytest.approx(plain.psnr.summary().clip)
    evalvid = compare(plain.reference, plain.distorted, psnr_table="evalvid")
    np.testing.assert_array_equal(evalvid.mos_psnr, psnr_to_mos(plain.psnr.values, table="evalvid"))
    assert evalvid.to_dict(frames=False)["mos"]["psnr_table"]["name"] == "evalvid"


def test_lost_frames_freeze_the_last_one(clip, plain, variants, decode_raw):
    # `dropped`: distorted frames 5 and 6 removed, timestamps kept (see conftest); ref frames 5, 6
    # are compared with distorted frame 4, still on screen.
    res = compare(clip.ref, variants["dropped"])
    assert res.pairing == "pts"
    expected = [0, 1, 2, 3, 4, 4, 4] + list(range(5, 18))  # indices into the 18-frame file
    assert res.dist_index.tolist() == expected
    np.testing.assert_allclose(res.dist_pts_s[5:7], [0.16, 0.16], atol=1e-9)
    keep = [k for k in range(20) if k not in (5, 6)]
    np.testing.assert_array_equal(res.psnr.values[keep], plain.psnr.values[keep])  # bit-exact frames (-qp 0)
    ref = decode_raw(clip.ref, clip.width, clip.height)[0]
    dist = decode_raw(clip.dist, clip.width, clip.height)[0]
    frozen = psnr(ref[5:7], np.stack([dist[4], dist[4]]), data_range=255).values
    np.testing.assert_allclose(res.psnr.values[5:7], frozen, rtol=1e-12)
    assert np.all(res.psnr.values[5:7] < plain.psnr.values[5:7])  # a freeze costs quality


def test_late_start_leaves_first_frames_unpaired(clip, variants):
    with pytest.warns(QoEWarning, match="2 of 20 reference frame"):
        res = compare(clip.ref, variants["late"])
    assert res.dist_index[:3].tolist() == [-1, -1, 0]
    assert np.isnan(res.psnr.values[:2]).all() and np.isnan(res.ssim.values[:2]).all()
    assert np.isnan(res.mos_ssim[:2]).all()
    assert res.n_paired == 18 and res.psnr.summary().n_frames == 18
    assert any("no distorted frame" in n for n in res.notes)
    d = json.loads(to_json(res.to_dict()))  # the one serialiser: strict JSON, NaN -> null
    assert d["per_frame"][0]["psnr_db"] is None and d["per_frame"][0]["dist_pts_s"] is None
    assert d["per_frame"][2]["dist_pts_s"] == pytest.approx(0.08)


def test_no_timestamps_pairs_by_index(clip, plain, variants):
    with pytest.warns(QoEWarning, match="paired by index"):
        res = compare(clip.ref, variants["annexb"])
    assert res.pairing == "index" and res.dist_index.tolist() == list(range(20))
    np.testing.assert_array_equal(res.psnr.values, plain.psnr.values)  # same decoded frames
    assert np.isnan(res.dist_pts_s).all()


def test_identical_files(clip):
    res = compare(clip.ref, clip.ref)
    assert np.all(res.psnr.values == math.inf) and np.all(res.ssim.values == 1.0)
    rec = res.to_record()
    assert rec["identical_frames"] == 20 and rec["psnr_db"] == math.inf and rec["mos_psnr"] == 5.0
    text = to_json(res.to_dict())  # strict: no Infinity
    assert "Infinity" not in text and "NaN" not in text
    d = json.loads(text)
    assert d["psnr"]["summary"]["clip"] is None and d["psnr"]["summary"]["identical_frames"] == 20
    assert d["per_frame"][0]["psnr_db"] is None and d["per_frame"][0]["ssim"] == 1.0


def test_yuv_and_variants_in_records(clip):
    res = compare(clip.ref, clip.dist, planes="yuv", variant="ssim.m")
    row = res.frame_records()[0]
    assert {"psnr_y_db", "psnr_u_db", "psnr_v_db", "ssim_y", "ssim_u", "ssim_v"} <= set(row)
    assert res.to_record()["ssim_variant"] == "ssim.m" and res.to_record()["planes"] == "yuv"
    assert res.tables()["frames"] == res.frame_records()
    to_json(res.to_dict())
