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
    rows = {int(r["ssrc"], 16): r for r in json.loads(res.output)["streams"]}
    rtx = truth.rtp_headers(call.capture("b"))
    for d in call.directions():
        r = rows[int(d.ssrc)]
        assert (r["src"], r["dst"], r["srtp"]) == (d.src, d.dst, "dtls")
        if d.receiver == "b":
            assert (r["packets"], r["lost"]) == (d.media_packets_received, d.inbound["packetsLost"])
        else:  # sent by B: packetsSent counts RTX packets too (README of data/video/webrtc)
            assert (r["packets"], r["lost"]) == (d.outbound["packetsSent"] - len(rtx.get(d.rtx_ssrc, [])), 0)
