"""``qoe.score(kind="auto")`` on one capture scans it once, streaming (issue 25).

The capture holds sequential copies of real samples (``tests/big_capture.py``: the G.711
call ``data/voice/captures/down-b8_client.pcap``, the RTP H.264 stream of
``data/video/captures/h264-down-b64_client.pcap``, three page loads), each copy with its own
client address. The reference is qoe's own per-kind paths (``kind="voice"``,
``kind="video"``), whose numbers the voice and video tests compare with tshark, ffmpeg and
the browser.

``kind="auto"`` scans the RTP once (:func:`qoe.rtp.iter_scan`): voice calls are scored as
they end and only the streams video needs (:func:`qoe.video.flows.needed_for_video`) are
kept for the video pass. Before, it scanned the whole capture (:func:`qoe.rtp.scan_capture`)
and held every stream, of every call, until video was done: memory grew with the number of
calls of a voice trunk. What is counted here is the :class:`qoe.rtp.RtpStream` objects alive
while video results are given: with the whole-capture scan every stream of the capture
(5 here), now the video stream only.
"""

from __future__ import annotations

import gc
import json
import warnings

import pytest

from qoe.api import iter_score
from qoe.rtp import RtpStream
from qoe.video import StreamFacts, VideoScore

from big_capture import SAMPLES, write

COPIES = 4  # voice, video, web, voice: 5 RTP streams (2 calls of 2, 1 video)


def _text(result) -> str:
    return json.dumps(result.to_dict(), sort_keys=True, default=str)  # as text: NaN equals NaN there


def _alive_streams() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, RtpStream))


def test_auto_scores_voice_and_video_as_each_kind_does_and_holds_only_the_video_streams(tmp_path):
    if not all(SAMPLES[k].is_file() for k in ("voice", "video", "web")):
        pytest.skip("the samples of tests/big_capture.py are not in this checkout")
    cap = tmp_path / "mixed.pcap"
    write(cap, "mixed", copies=COPIES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        voice = [_text(r) for r in iter_score(cap, kind="voice")]
        video = [_text(r) for r in iter_score(cap, kind="video")]
        before = _alive_streams()  # what other tests of this process still hold
        stream = iter_score(cap)  # kind="auto", qoe score's default
        got, alive_at_video = [], []
        for r in stream:  # voice, then video, then page loads
            if isinstance(r, (VideoScore, StreamFacts)):
                alive_at_video.append(_alive_streams() - before)
            got.append(_text(r))
        report = stream.report()
    assert len(voice) == 2 * 2 and len(video) == 1  # two calls of two directions; one video stream
    assert got[:len(voice)] == voice and got[len(voice):len(voice) + len(video)] == video
    assert report.kind == "voice+video+web"
    # while video is scored: the video stream only (the whole-capture scan held all 5), over what
    # was alive before (other tests of the same worker may hold streams of their own)
    assert alive_at_video and max(alive_at_video) <= len(video), alive_at_video
