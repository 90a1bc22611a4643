"""`qoe streams` on the real WebRTC calls, as a user runs it, against the browsers' getStats().

B's capture of each call (data/video/webrtc) holds both directions: A's media as B received it
(compared with B's inbound-rtp) and B's media as B sent it (B's outbound-rtp).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from qoe_cli.main import cli
from video import webrtc_truth as truth

CALLS = [pytest.param(c, id=c.name) for c in truth.calls()]


@pytest.mark.parametrize("call", CALLS)
def test_qoe_streams_json_agrees_with_getstats(call):
    res = CliRunner().invoke(cli, ["streams", "--format", "json", str(call.capture("b"))], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output[res.output.index("{"):])  # the snap-length warning goes before the JSON
    rows = {int(r["ssrc"], 16): r for r in doc["streams"]}
    rtx = truth.rtp_headers(call.capture("b"))
    for d in call.directions():
        r = rows[int(d.ssrc)]
        assert (r["src"], r["dst"], r["srtp"]) == (d.src, d.dst, "dtls")
        if d.receiver == "b":
            assert (r["packets"], r["lost"]) == (d.media_packets_received, d.inbound["packetsLost"])
        else:  # sent by B: packetsSent counts RTX packets too (README of data/video/webrtc)
            assert (r["packets"], r["lost"]) == (d.outbound["packetsSent"] - len(rtx.get(d.rtx_ssrc, [])), 0)


@pytest.mark.parametrize("name", ["vp8-loss", "vp8-reorder", "vp8-bulk"])
def test_qoe_score_json_agrees_with_getstats(name):
    """`qoe score --format json` on B's capture: the streams B received (A's audio and video) are
    scored from their headers, with the browser's loss, frames and freezes, and the output says
    the payloads are SRTP-encrypted (the W3C freeze tolerance as in test_webrtc_calls.py)."""
    call = truth.call(name)
    res = CliRunner().invoke(cli, ["score", "--format", "json", str(call.capture("b"))], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    report = json.loads(res.output[res.output.index("{"):])  # warnings go before the JSON
    audio, video = call.direction("a", "audio"), call.direction("a", "video")
    (voice,) = [r for r in report["results"] if r.get("ssrc") == f"{audio.ssrc:#010x}"]
    assert (voice["clock_rate"], voice["received"], voice["network_lost"]) == (
        48000, audio.media_packets_received, audio.inbound["packetsLost"])
    (vid,) = [r for r in report["results"] if f"ssrc={video.ssrc:#010x}" in r.get("name", "")]
    assert (vid["packets_received"], vid["packets_lost"]) == (video.media_packets_received, video.inbound["packetsLost"])
    assert vid["headers"]["frames_received"] == video.inbound["framesDecoded"]
    assert abs(vid["headers"]["freeze_count"] - video.inbound["freezeCount"]) <= 1
    assert any("SRTP" in n for n in vid["notes"]) and any("SRTP" in n for n in report["notes"])
