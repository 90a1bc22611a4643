"""RTP facts of the real Chromium calls in data/video/webrtc/calls, against the browsers' getStats().

The truth is each receiving browser's final ``inbound-rtp`` (``tests/video/webrtc_truth.py``
reads it; data/video/webrtc/README.md says what Chromium 156 counts), and the forwarder's log
of the packets it dropped or held. The captures are SRTP (DTLS-SRTP, BUNDLE): only the clear
RTP headers are read.
"""

from __future__ import annotations

import pytest

from qoe.rtp import scan_capture
from video import webrtc_truth

CALLS = [c for c in webrtc_truth.calls() if c.has_capture("b")] if webrtc_truth.CALLS.is_dir() else []
pytestmark = pytest.mark.skipif(not CALLS, reason="no WebRTC calls in data/video/webrtc/calls")


def _received(call):
    """(direction, the stream as its receiver's capture holds it), for each direction whose
    receiver was captured."""
    out = []
    for side in ("a", "b"):
        if call.has_capture(side):
            scan = scan_capture(call.capture(side), keep_packets=False)
            streams = {s.key.ssrc: s for s in scan.streams}
            out += [(d, streams[d.ssrc]) for d in call.directions() if d.receiver == side]
    return out


@pytest.mark.parametrize("call", CALLS, ids=lambda c: c.name)
def test_lost_is_rfc3550_as_the_browser_counts_it(call):
    # inbound-rtp.packetsLost: RFC 3550 A.3 on the media SSRC (a packet older than the first
    # one received is received, not expected; tshark counts it as a 65,536-packet wrap).
    for d, s in _received(call):
        assert s.stats.lost == d.inbound["packetsLost"], (call.name, d.sender, d.kind)
        assert s.stats.packets == d.media_packets_received, (call.name, d.sender, d.kind)
        assert s.stats.lost <= s.stats.expected
