"""The video scorers take their options as ``options=VideoOptions(...)`` (issue 21).

The per-field keywords of before keep working for one release with a DeprecationWarning that
names the new spelling; a keyword given beside ``options=`` is ambiguous and an InputError.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from qoe.errors import InputError
from qoe.video import VideoOptions, iter_score_capture, score_capture

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
