"""qoe.video.metrics on arrays: Wang SSIM against scikit-image, PSNR, identical frames, clip summaries."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from skimage.metrics import peak_signal_noise_ratio, structural_similarity

from qoe.report import to_json
from qoe.video import metrics
from qoe.video.metrics import psnr, ssim, ssim_downsample_factor

# The bound for Wang SSIM against scikit-image (float64 there, float32 here).
SKIMAGE_TOL = 1e-4
WANG = dict(gaussian_weights=True, sigma=1.5, use_sample_covariance=False)


def smooth_pair(rng, shape, noise=12, dtype=np.uint8):
    """A smooth random image and a noisy copy (values 0..255)."""
    import cv2

    a = cv2.GaussianBlur(rng.integers(0, 256, shape).astype(np.float32), (0, 0), 2.0)
    a = np.clip((a - a.min()) / (np.ptp(a) + 1e-9) * 255, 0, 255)
    b = np.clip(a + rng.normal(0, noise, shape), 0, 255)
    if dtype == np.uint8:
        return a.round().astype(np.uint8), b.round().astype(np.uint8)
    return a.astype(dtype), b.astype(dtype)


def test_wang_ssim_equals_skimage_on_decoded_frames(clip, decode_raw):
    # Frames decoded by ffmpeg itself (`ffmpeg -i X -f rawvideo -pix_fmt yuv420p -`), luma;
    # oracle: skimage structural_similarity(gaussian_weights=True, sigma=1.5,
    # use_sample_covariance=False, data_range=255) on the same frames.
    ref = decode_raw(clip.ref, clip.width, clip.height)[0]
    dist = decode_raw(clip.dist, clip.width, clip.height)[0]
    ours = ssim(ref, dist, data_range=255).values
    want = [structural_similarity(r, d, data_range=255, **WANG) for r, d in zip(ref, dist)]
    assert len(ours) == len(want) == 20
    np.testing.assert_allclose(ours, want, rtol=0, atol=SKIMAGE_TOL)
    assert np.ptp(want) > 1e-3  # the frames differ from each other: a real per-frame test


@pytest.mark.parametrize("shape", [(11, 11), (37, 53), (120, 161), (288, 352)])
@pytest.mark.parametrize("dtype", [np.uint8, np.float64])
def test_wang_ssim_equals_skimage_on_arrays(rng, shape, dtype):
    a, b = smooth_pair(rng, shape, dtype=dtype)
    want = structural_similarity(a, b, data_range=255, **WANG)
    assert float(ssim(a, b, data_range=255).values[0]) == pytest.approx(want, abs=SKIMAGE_TOL)


def test_wang_ssim_other_data_range(rng):
    a, b = smooth_pair(rng, (64, 80))
    a16, b16 = a.astype(np.uint16) * 4, b.astype(np.uint16) * 4  # 10-bit-like samples
    want = structural_similarity(a16, b16, data_range=1023, **WANG)
    assert float(ssim(a16, b16, data_range=1023).values[0]) == pytest.approx(want, abs=SKIMAGE_TOL)


def test_threads_do_not_change_the_value(rng):
    a, b = smooth_pair(rng, (300, 200))
    one = ssim(a, b, data_range=255).values[0]
    assert ssim(a, b, data_range=255, threads=3).values[0] == one


def test_sequence_equals_frame_by_frame(rng):
    pairs = [smooth_pair(rng, (40, 48)) for _ in range(4)]
    a = np.stack([p[0] for p in pairs])
    b = np.stack([p[1] for p in pairs])
    seq = ssim(a, b, data_range=255).values
    single = [ssim(x, y, data_range=255).values[0] for x, y in pairs]
    np.testing.assert_array_equal(seq, single)
    np.testing.assert_allclose(psnr(a, b, data_range=255).values,
                               [peak_signal_noise_ratio(x, y, data_range=255) for x, y in pairs], rtol=1e-12)


def test_identical_frames(rng):
    a, b = smooth_pair(rng, (48, 64))
    seq_ref = np.stack([a, a, a])
    seq_dist = np.stack([a, b, a])  # frames 0 and 2 identical
    p = psnr(seq_ref, seq_dist, data_range=255)
    s = ssim(seq_ref, seq_dist, data_range=255)
    assert p.values[0] == math.inf and p.values[2] == math.inf and math.isfinite(p.values[1])
    assert s.values[0] == 1.0 and s.values[2] == 1.0 and s.values[1] < 1.0
    summary = p.summary()
    assert summary.identical_frames == 2
    assert summary.mean == math.inf  # EvalVid-style mean of per-frame PSNR: +inf with any identical frame
    assert summary.median == math.inf  # two of three frames are +inf
    assert summary.min == pytest.approx(p.values[1])
    # FFmpeg's clip PSNR: PSNR of the mean MSE, finite (one frame of three has an error)
    mse1 = float(np.mean((a.astype(float) - b) ** 2))
    assert summary.clip == pytest.approx(10 * math.log10(255**2 / (mse1 / 3)), rel=1e-12)
    assert psnr(a, a, data_range=255).summary().clip == math.inf
    # strict JSON: +inf becomes null
    d = json.loads(to_json(p.to_dict()))
    assert p.to_dict()["values"][0] == math.inf  # kept in Python; the serialiser writes null
    assert d["values"][0] is None and d["summary"]["mean"] is None and d["summary"]["clip"] is not None
    assert ssim(seq_ref, seq_dist, data_range=255).summary().identical_frames is None


def test_psnr_value_by_hand():
    a = np.full((8, 8), 50, np.uint8)
    b = a.copy()
    b[:2, :] = 60  # 16 of 64 pixels off by 10: MSE = 25
    assert float(psnr(a, b, data_range=255).values[0]) == pytest.approx(10 * math.log10(255**2 / 25), abs=1e-12)
    assert float(psnr(a.astype(float), b.astype(float), data_range=255).values[0]) == pytest.approx(
        10 * math.log10(255**2 / 25), abs=1e-12)


def test_yuv_planes_weighted_by_pixel_count(rng):
    y, y2 = smooth_pair(rng, (32, 48))
    u, u2 = smooth_pair(rng, (16, 24), noise=3)
    v, v2 = smooth_pair(rng, (16, 24), noise=30)
    p = psnr((y, u, v), (y2, u2, v2), data_range=255, planes="yuv")
    mse = [np.mean((a.astype(float) - b) ** 2) for a, b in ((y, y2), (u, u2), (v, v2))]
    want = 10 * math.log10(255**2 / ((4 * mse[0] + mse[1] + mse[2]) / 6))
    assert float(p.values[0]) == pytest.approx(want, abs=1e-9)
    assert set(p.plane_values) == {"y", "u", "v"}
    s = ssim((y, u, v), (y2, u2, v2), data_range=255, planes="yuv")
    sy, su, sv = (s.plane_values[k][0] for k in "yuv")
    assert float(s.values[0]) == pytest.approx((4 * sy + su + sv) / 6, abs=1e-12)
    assert "pixel counts" in p.definition and "pixel counts" in s.definition


def test_results_say_their_definition(rng):
    a, b = smooth_pair(rng, (64, 64))
    assert "FFmpeg" in psnr(a, b, data_range=255).definition
    assert "Wang" in ssim(a, b, data_range=255).definition
    assert "ssim.m" in ssim(a, b, data_range=255, variant="ssim.m").definition
    assert "x264" in ssim(a, b, data_range=255, variant="ffmpeg").definition
    assert ssim(a, b, data_range=255, variant="ffmpeg").variant == "ffmpeg"


# ssim.m: factor = max(1, round(min(H, W) / 256)) with MATLAB's round (halves away from zero)
@pytest.mark.parametrize("h, w, f", [(240, 320, 1), (383, 1000, 1), (384, 1000, 2), (576, 720, 2), (639, 700, 2),
                                     (640, 700, 3), (720, 1280, 3), (1080, 1920, 4), (2160, 3840, 8)])
def test_ssim_m_factor(h, w, f):
    assert ssim_downsample_factor(h, w) == f


def wang_ssim_m_downsample(img, f):
    """ssim.m's step written out from its text: lpf = ones(f,f)/f²; imfilter(img, lpf, 'symmetric',
    'same') (MATLAB centres an even kernel at floor((f+1)/2)); then img(1:f:end, 1:f:end)."""
    before = (f - 1) // 2
    after = f - 1 - before
    padded = np.pad(img.astype(np.float64), ((before, after), (before, after)), mode="symmetric")
    h, w = img.shape
    acc = sum(padded[i : i + h, j : j + w] for i in range(f) for j in range(f)) / (f * f)
    return acc[::f, ::f]


@pytest.mark.parametrize("shape", [(576, 720), (720, 960)])
def test_ssim_m_variant_is_skimage_after_downsampling(rng, shape):
    a, b = smooth_pair(rng, shape, noise=20)
    f = ssim_downsample_factor(*shape)
    assert f in (2, 3)
    da, db = wang_ssim_m_downsample(a, f), wang_ssim_m_downsample(b, f)
    want = structural_similarity(da, db, data_range=255, **WANG)
    assert float(ssim(a, b, data_range=255, variant="ssim.m").values[0]) == pytest.approx(want, abs=SKIMAGE_TOL)
    # and it differs from the full-resolution value: the option does something
    assert abs(float(ssim(a, b, data_range=255).values[0]) - want) > 1e-3


def test_summary_statistics(rng):
    pairs = [smooth_pair(rng, (32, 32), noise=n) for n in (2, 8, 20, 40, 5)]
    a = np.stack([p[0] for p in pairs])
    b = np.stack([p[1] for p in pairs])
    s = ssim(a, b, data_range=255)
    sm = s.summary()
    assert sm.n_frames == 5
    assert sm.mean == pytest.approx(np.mean(s.values)) and sm.median == pytest.approx(np.median(s.values))
    assert sm.min == s.values.min() and sm.max == s.values.max() and sm.clip == sm.mean
    assert "mean" in sm.clip_definition
    to_json(s.to_dict())


def test_yuv_mse_weights_planes_by_pixel_count():
    # FFmpeg psnr_avg: (4·MSE_Y + MSE_U + MSE_V) / 6 for 4:2:0; Y identical, U off by sqrt(6) everywhere
    y = np.zeros((2, 2), np.float64)
    u_ref, u_dist = np.zeros((1, 1)), np.full((1, 1), math.sqrt(6))
    s = psnr((y, u_ref, u_ref), (y, u_dist, u_ref), data_range=255, planes="yuv")
    assert s.mse.tolist() == pytest.approx([1.0])


def test_moved_plumbing_warns():
    with pytest.warns(DeprecationWarning, match="private"):
        assert callable(metrics.SsimEngine)
