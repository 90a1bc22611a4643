"""Limits that hold for crafted input (issue 13): each configurable, each crossing warned, each
result partial but correct for what it keeps.

The inputs are written on the fly (``tests/big_capture.py``): sequential copies of real
samples of ``data/``, each copy with its own client address.
"""

from __future__ import annotations

import warnings

import pytest

import qoe
import shutil
import subprocess

from big_capture import write, write_udp_flood
from qoe.errors import InputError, QoEWarning
from qoe.rtp import MAX_FLOWS, MAX_STREAMS, scan_capture
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
def flood(tmp_path_factory):
    """20,000 one-packet UDP flows, each looking like the start of an RTP stream (undecided)."""
    path = tmp_path_factory.mktemp("limits") / "flood.pcap"
    write_udp_flood(path, 20_000)
    return path


def test_undecided_flows_are_bounded_by_max_flows_and_said(flood):
    """Past ``max_flows`` flows that are not streams, new flows are not looked at: the
    warning counts their datagrams (20,000 - 1,500, one per flow); without the limit every
    flow is tracked and none is an RTP stream either way (one packet is never a stream)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        every = scan_capture(flood, keep_packets=False, max_flows=None)
    assert every.streams == () and every.udp_packets == 20_000
    with pytest.warns(QoEWarning, match=r"18500 UDP datagram\(s\) not looked at for RTP: more than max_flows=1500"):
        some = scan_capture(flood, keep_packets=False, max_flows=1500)
    assert some.streams == () and some.udp_packets == 20_000


@pytest.mark.skipif(shutil.which("mergecap") is None, reason="needs mergecap (Wireshark)")
def test_streams_before_the_flood_are_kept_whole(five_calls, flood, tmp_path):
    """``mergecap -a -w both.pcap calls.pcap flood.pcap``: the calls, then the flood. With a
    limit the flood crosses, the ten streams are found with the same statistics."""
    both = tmp_path / "both.pcap"
    subprocess.run(["mergecap", "-a", "-w", str(both), str(five_calls), str(flood)], check=True, capture_output=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        every = scan_capture(five_calls, keep_packets=False)
    with pytest.warns(QoEWarning, match="max_flows=100"):
        some = scan_capture(both, keep_packets=False, max_flows=100)
    assert {s.key: s.stats for s in some.streams} == {s.key: s.stats for s in every.streams}


def test_flow_limit_is_checked_and_defaults_to_a_number():
    assert MAX_FLOWS >= 10_000
    with pytest.raises(InputError, match="max_flows"):
        scan_capture("unused.pcap", max_flows=0)


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
    # (its stream ends with the capture, so it may carry the "still sending" partial note)
    assert shown > 40 and not any(n.startswith("partial:") and "max_frames" in n for n in whole.notes)
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
