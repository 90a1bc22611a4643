"""qoe.video.io.read_frames: true presentation times, exact planes, streaming, no timestamps."""

from __future__ import annotations

import types

import numpy as np
import pytest

from qoe.video import Frame, read_frames
from qoe.video.io import probe


def test_pts_are_the_files_own(clip, variants, probe_pts):
    # oracle: ffprobe -v error -select_streams v:0 -show_entries frame=pts_time -of csv=p=0 FILE
    for path in (clip.ref, variants["dropped"], variants["late"]):
        ours = [f.pts_s for f in read_frames(path)]
        np.testing.assert_allclose(ours, probe_pts(path), rtol=0, atol=1e-6)
    late = [f.pts_s for f in read_frames(variants["late"])]
    assert late[0] == pytest.approx(0.08)  # not renumbered from 0, unlike a position counter


def test_planes_equal_ffmpeg_decode(clips, decode_raw):
    # oracle: ffmpeg -i FILE -f rawvideo -pix_fmt yuv420p - (the files are yuv420p: no conversion)
    for c in clips.values():
        y, u, v = decode_raw(c.dist, c.width, c.height)
        frames = list(read_frames(c.dist))
        assert len(frames) == len(y) == 20
        for k, f in enumerate(frames):
            assert isinstance(f, Frame) and f.shape == (c.height, c.width)
            assert f.y.flags.c_contiguous and f.y.dtype == np.uint8
            assert f.u.shape == ((c.height + 1) // 2, (c.width + 1) // 2)
            np.testing.assert_array_equal(f.y, y[k])
            np.testing.assert_array_equal(f.u, u[k])
            np.testing.assert_array_equal(f.v, v[k])


def test_streaming_and_file_errors_at_call(clip):
    it = read_frames(clip.ref)
    assert isinstance(it, types.GeneratorType)
    first = next(it)
    assert first.pts_s == 0.0
    it.close()  # the container is closed with the generator


def test_annexb_has_no_timestamps(variants):
    frames = list(read_frames(variants["annexb"]))
    assert len(frames) == 20 and all(f.pts_s is None for f in frames)


def test_probe(clip):
    info = probe(clip.ref)
    assert (info.width, info.height, info.codec, info.pix_fmt) == (320, 240, "h264", "yuv420p")
    assert float(info.average_rate) == 25.0
