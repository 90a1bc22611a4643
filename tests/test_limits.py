"""Limits that hold for crafted input (issue 13): each configurable, each crossing warned, each
result partial but correct for what it keeps.

The inputs are written on the fly (``tests/big_capture.py``): sequential copies of real
samples of ``data/``, each copy with its own client address.
"""

from __future__ import annotations

import warnings

import pytest

import qoe
from big_capture import write
from qoe.errors import InputError, QoEWarning
from qoe.rtp import MAX_STREAMS, scan_capture
from qoe.video import MAX_FRAMES, VideoOptions, score_capture


@pytest.fixture(scope="module")
def five_calls(tmp_path_factory):
    """Five copies of a two-way G.711 call: ten RTP streams."""
    path = tmp_path_factory.mktemp("limits") / "calls.pcap"
    write(path, "voice", copies=5)
    return path


def test_rtp_scan_takes_at_most_max_streams_and_says_so(five_calls):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning without the limit
        every = scan_capture(five_calls, keep_packets=False)
    assert len(every.streams) == 10
    with pytest.warns(QoEWarning, match=r"7 RTP stream\(s\) left out: more than max_streams=3"):
        some = scan_capture(five_calls, keep_packets=False, max_streams=3)
    assert len(some.streams) == 3
    # the streams kept are whole: the same statistics as without the limit
    full = {s.key: s.stats for s in every.streams}
    for s in some.streams:
        assert s.stats == full[s.key]


def test_rtp_scan_limit_is_checked_and_defaults_to_a_number():
    assert MAX_STREAMS >= 10_000
    with pytest.raises(InputError, match="max_streams"):
        scan_capture("unused.pcap", max_streams=0)


@pytest.fixture(scope="module")
def video_capture(tmp_path_factory):
    path = tmp_path_factory.mktemp("limits") / "video.pcap"
    write(path, "video", copies=1)
    return path


def test_video_stream_is_scored_on_its_first_max_frames_with_a_warning(video_capture):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (whole,) = score_capture(video_capture)
    shown = whole.frames_decoded - whole.frames_untimed
    assert shown > 40 and not any(n.startswith("partial:") for n in whole.notes)
    with pytest.warns(QoEWarning, match="max_frames=40"):
        report = qoe.score(video_capture, kind="video", options=VideoOptions(max_frames=40))
    (cut,) = report.results
    assert cut.frames_decoded - cut.frames_untimed == 40
    assert any(n.startswith("partial:") and "max_frames=40" in n for n in cut.notes)
    assert cut.first_pts == whole.first_pts and cut.last_pts < whole.last_pts


def test_video_frame_limit_is_checked_and_defaults_to_a_number():
    assert VideoOptions().max_frames == MAX_FRAMES >= 10_000
    for bad in (0, -1, 2.5, True):
        with pytest.raises(InputError, match="max_frames"):
            VideoOptions(max_frames=bad)
    assert VideoOptions(max_frames=None).max_frames is None
