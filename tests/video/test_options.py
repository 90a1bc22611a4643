"""The video scorers take their options as ``options=VideoOptions(...)`` (issue 21).

The per-field keywords of before keep working for one release with a DeprecationWarning that
names the new spelling; a keyword given beside ``options=`` is ambiguous and an InputError.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from qoe.errors import InputError
from qoe.video import VideoOptions, find_video, iter_score_capture, receive_rtp, score_capture

DATA = Path(__file__).resolve().parents[2] / "data" / "video" / "captures"
CAP = DATA / "h264-idle-b64_client.pcap"
SDP = DATA / "h264-idle-b64.sdp"


def test_keywords_still_work_with_a_warning_naming_options():
    with pytest.warns(DeprecationWarning, match=r"options=VideoOptions\(sdp=.*max_frames=5\)"):
        (old,) = score_capture(CAP, sdp=SDP, max_frames=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        (new,) = score_capture(CAP, options=VideoOptions(sdp=SDP, max_frames=5))
    assert old == new
    assert old.frames_decoded == 5 and old.notes[-1].startswith("partial:")  # the first max_frames frames


@pytest.mark.parametrize("func", [score_capture, lambda *a, **k: list(iter_score_capture(*a, **k))])
def test_keyword_and_options_together_is_ambiguous(func):
    with pytest.raises(InputError, match="ambiguous.*max_frames"):
        func(CAP, options=VideoOptions(sdp=SDP), max_frames=5)


def test_buffer_keyword_is_the_jitter_buffer_field():
    with pytest.raises(InputError, match="ambiguous.*jitter_buffer"):
        score_capture(CAP, options=VideoOptions(), buffer="fixed:200")


def test_options_must_be_video_options():
    with pytest.raises(InputError, match="VideoOptions"):
        score_capture(CAP, options={"sdp": SDP})  # type: ignore[arg-type]


def test_receive_rtp_old_buffer_keyword_and_attributes_warn_and_still_work():
    """Issue 21: ``buffer`` is ``jitter_buffer`` in receive_rtp, ReceivedVideo and StreamFacts
    (and the results' JSON key); the old names work for one release with a DeprecationWarning."""
    (src,) = find_video(CAP, sdp=SDP)
    new = receive_rtp(src.rtp, sdp=src.sdp, jitter_buffer="fixed:200")
    with pytest.warns(DeprecationWarning, match=r"receive_rtp\(buffer=\) is now receive_rtp\(jitter_buffer=\)"):
        old = receive_rtp(src.rtp, sdp=src.sdp, buffer="fixed:200")
    assert old.jitter_buffer == new.jitter_buffer == "fixed:200"
    assert (old.packets_received, old.packets_late) == (new.packets_received, new.packets_late)
    with pytest.warns(DeprecationWarning, match="ReceivedVideo.buffer is now ReceivedVideo.jitter_buffer"):
        assert new.buffer == "fixed:200"
    with pytest.raises(InputError, match="ambiguous jitter buffer"):
        receive_rtp(src.rtp, sdp=src.sdp, jitter_buffer="fixed:200", buffer="none")


def test_stream_facts_name_the_jitter_buffer():
    (facts,) = score_capture(CAP, options=VideoOptions(sdp=SDP, jitter_buffer="fixed:200", max_frames=5))
    assert facts.jitter_buffer == "fixed:200"
    assert facts.to_dict()["jitter_buffer"] == facts.to_record()["jitter_buffer"] == "fixed:200"
    assert "buffer" not in facts.to_dict()
    with pytest.warns(DeprecationWarning, match="StreamFacts.buffer is now StreamFacts.jitter_buffer"):
        assert facts.buffer == "fixed:200"
