"""Bad input to the video metrics and readers: QoEError subclasses that name the problem."""

from __future__ import annotations

import numpy as np
import pytest

from qoe.errors import InputError, QoEError
from qoe.video import compare, psnr, psnr_to_mos, read_frames, ssim, ssim_to_mos


def test_shape_mismatch_quotes_both_shapes():
    with pytest.raises(InputError, match=r"ref \(1, 20, 30\), dist \(1, 20, 31\)"):
        psnr(np.zeros((20, 30)), np.zeros((20, 31)), data_range=255)
    with pytest.raises(InputError, match=r"\(1, 20, 30\).*\(1, 21, 30\)"):
        ssim(np.zeros((20, 30)), np.zeros((21, 30)), data_range=255)


@pytest.mark.parametrize("data_range", [0, -1, float("nan"), float("inf"), "x"])
def test_bad_data_range(data_range):
    with pytest.raises(InputError, match="data_range"):
        ssim(np.zeros((16, 16)), np.zeros((16, 16)), data_range=data_range)


def test_data_range_is_required():
    with pytest.raises(TypeError):
        psnr(np.zeros((16, 16)), np.zeros((16, 16)))  # type: ignore[call-arg]


def test_bad_options():
    a = np.zeros((16, 16), np.uint8)
    with pytest.raises(InputError, match="variant"):
        ssim(a, a, data_range=255, variant="skimage")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="planes"):
        psnr(a, a, data_range=255, planes="rgb")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"\(Y, U, V\) triple"):
        psnr(a, a, data_range=255, planes="yuv")


def test_bad_arrays():
    with pytest.raises(InputError, match="at least 11×11"):
        ssim(np.zeros((10, 40)), np.zeros((10, 40)), data_range=255)
    with pytest.raises(InputError, match="at least 8×8"):
        ssim(np.zeros((7, 40)), np.zeros((7, 40)), data_range=255, variant="ffmpeg")
    with pytest.raises(InputError, match=r"given shape \(4,\)"):
        psnr(np.zeros(4), np.zeros(4), data_range=255)
    with pytest.raises(InputError, match="NaN"):
        psnr(np.full((4, 4), np.nan), np.zeros((4, 4)), data_range=255)
    with pytest.raises(InputError, match="dtype"):
        psnr(np.zeros((4, 4), bool), np.zeros((4, 4), bool), data_range=1)


def test_unknown_mos_table():
    with pytest.raises(InputError, match="evalvid"):
        psnr_to_mos(30.0, table="vqeg")
    with pytest.raises(InputError, match="zinner2010"):
        ssim_to_mos(0.9, table="evalvid")


def test_missing_file_is_named(tmp_path):
    missing = tmp_path / "nope.mp4"
    with pytest.raises(InputError, match="nope.mp4: no such video file"):
        read_frames(missing)


def test_unreadable_files_are_named(variants):
    with pytest.raises(InputError, match=r"notes\.txt: cannot read as video"):
        read_frames(variants["text"])
    with pytest.raises(InputError, match=r"audio\.wav: holds no video stream"):
        read_frames(variants["audio"])


def test_compare_errors_are_qoe_errors(clip, variants):
    with pytest.raises(QoEError, match="notes.txt"):
        compare(clip.ref, variants["text"])
    # testsrc2 320x240 against a 352x288 encoding (ffmpeg -f lavfi -i testsrc2=size=352x288 ...)
    with pytest.raises(InputError, match=r"320x240 \(W×H\).*352x288 \(W×H\)"):
        compare(clip.ref, variants["small"])
    with pytest.raises(InputError, match="psnr_table"):
        compare(clip.ref, clip.dist, psnr_table="vqeg")
    with pytest.raises(InputError, match="pairing"):
        compare(clip.ref, clip.dist, pairing="dts")  # type: ignore[arg-type]


def test_no_overlap_in_time(clip, variants):
    # `shifted` starts at 5 s (ffmpeg -itsoffset 5 -i dist.mp4 -c copy shifted.mkv), the reference ends at 0.76 s
    with pytest.raises(InputError, match=r"shifted\.mkv: no frame of it was on screen.*ends at 0\.760 s"):
        compare(clip.ref, variants["shifted"])
    res = compare(clip.ref, variants["shifted"], pairing="index")  # the remedy the message names
    assert res.n_paired == 20
