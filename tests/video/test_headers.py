"""Video facts from RTP headers (qoe.video.headers) against the browsers' own getStats().

Data: the real Chromium calls of data/video/webrtc/calls (DTLS-SRTP: the payloads are
encrypted, the headers are not), their getStats() series and the forwarder's drop log
(``tests/video/webrtc_truth.py``). Each test reads B's capture and A's video sent to B.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import qoe.rtp
from qoe.video.flows import rtx_partner
from qoe.video.headers import HeaderFacts, header_facts, stream_header_facts
from video import webrtc_truth as wt

CALLS = [c.name for c in wt.calls()]
# Freezes: the browser counts them on rendered frames, after a jitter buffer that absorbs some
# gaps; qoe on the times frames completed in the capture (README of data/video/webrtc):
FREEZE_TOL = 1  # freezes
FREEZE_S_TOL = 1.2  # s (vp8-bulk, under a 775 ms uplink queue: 4.89 s here, 4.29 s the browser's)
# SRTP's authentication tag (AES_CM_128_HMAC_SHA1_80, what Chromium negotiates): 10 bytes a packet.
SRTP_TAG = 10


def _facts(name: str) -> tuple[wt.Call, wt.Direction, HeaderFacts, object]:
    c = wt.call(name)
    d = c.direction("a", "video")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scan = qoe.rtp.scan_capture(str(c.capture("b")), keep_packets=True)
    s = next(x for x in scan.streams if x.ssrc == d.ssrc)
    rtx = rtx_partner(s, scan.streams)
    return c, d, stream_header_facts(s, rtx=rtx), rtx


@pytest.fixture(scope="module", params=CALLS)
def call(request):
    return _facts(request.param)


def test_frames_received_are_the_browsers_frames_decoded(call):
    # README: every frame reached the decoder (RTX repaired each loss); a frame = an RTP timestamp
    c, d, h, _ = call
    assert h.frames_received == d.inbound["framesDecoded"]


def test_complete_or_repaired_frames_within_one_of_frames_decoded(call):
    c, d, h, _ = call
    assert abs(h.frames_complete - d.inbound["framesDecoded"]) <= 1
    assert h.frames_complete == h.frames_received - h.frames_incomplete


def test_rtx_stream_is_the_one_getstats_names(call):
    c, d, h, rtx = call
    if rtx is not None:
        assert rtx.ssrc == d.rtx_ssrc
    if c.condition == "loss":  # the forwarder dropped media packets: RTX repaired them
        assert rtx is not None and h.frames_repaired > 0


def test_freezes_by_the_w3c_rule_close_to_the_browsers(call):
    c, d, h, _ = call
    assert abs(h.freeze_count - d.inbound["freezeCount"]) <= FREEZE_TOL
    assert abs(h.total_freezes_duration_s - d.inbound["totalFreezesDuration"]) <= FREEZE_S_TOL
    assert h.pause_count == d.inbound.get("pauseCount", 0) == 0


def test_frame_rate_close_to_the_browsers_frames_per_second(call):
    # framesPerSecond is the decoded frames of the last second, sampled once a second: its
    # median over the call against frames per second over the call (15 fps sent, 5 in vp8-bulk)
    c, d, h, _ = call
    fps = [s["framesPerSecond"] for _, s in wt.samples(c, "b", d.ssrc) if "framesPerSecond" in s]
    assert h.frames_per_second == pytest.approx(float(np.median(fps)), abs=2.0)


# getStats' jitter is in seconds at millisecond resolution, sampled after the call ended
JITTER_TOL_MS = 1.5  # h264-clean: 4.40 ms here, 0.003 s the browser's


def test_jitter_by_the_receivers_rule_close_to_getstats(call):
    c, d, h, _ = call
    assert h.jitter_ms == pytest.approx(d.inbound["jitter"] * 1e3, abs=JITTER_TOL_MS)


def test_payload_bytes_equal_bytes_received_on_a_whole_packet_capture():
    # vp8-clean's b.pcap holds whole packets (the others are cut at a snap length)
    c, d, h, _ = _facts("vp8-clean")
    packets = d.media_packets_received
    assert h.bytes_received - SRTP_TAG * packets == d.inbound["bytesReceived"] - d.inbound["retransmittedBytesReceived"]


def test_payload_bytes_on_the_wire_equal_bytes_received_on_cut_captures(call):
    # the other calls' b.pcap are cut at a snap length (README of data/video/webrtc): the frame
    # sizes are the wire's (UDP length, RFC 768), not the captured bytes. Truth: the
    # receiver's inbound-rtp bytesReceived - retransmittedBytesReceived.
    c, d, h, _ = call
    packets = d.media_packets_received
    assert h.bytes_received - SRTP_TAG * packets == d.inbound["bytesReceived"] - d.inbound["retransmittedBytesReceived"]


def test_w3c_freeze_rule_on_a_made_up_stream():
    # 30 frames at 40 ms, then a 200 ms gap (>= max(3 x 40, 40 + 150) = 190 ms: a freeze),
    # then 6 s (> 5 s: a pause, not a freeze), then 5 frames at 40 ms
    gaps_ms = [40] * 30 + [200] + [40] * 5 + [6000] + [40] * 5
    t_ms = np.concatenate([[0], np.cumsum(gaps_ms)])
    n = t_ms.size
    h = header_facts(np.arange(n), np.arange(n) * 3600, np.ones(n, bool), (t_ms * 1e6).astype(np.int64),
                     np.full(n, 1000))
    assert (h.freeze_count, h.pause_count) == (1, 1)
    assert h.total_freezes_duration_s == pytest.approx(0.2) and h.total_pauses_duration_s == pytest.approx(6.0)
    assert h.frames_received == h.frames_complete == n and h.key_frames == 0 and h.key_rule == "size"


def test_loss_marks_the_frame_that_lost_it_and_size_guesses_key_frames():
    # frames of 3 packets; packet 4 (frame 1's second) lost; frame 0 is 5x larger (a key frame)
    seq = np.array([0, 1, 2, 3, 5, 6, 7, 8])
    ts = np.array([0, 0, 0, 3000, 3000, 6000, 6000, 6000])
    mk = np.array([0, 0, 1, 0, 1, 0, 0, 1], bool)
    sizes = np.array([5000, 5000, 5000, 1000, 1000, 1000, 1000, 1000])
    arr = np.arange(8) * 1_000_000
    h = header_facts(seq, ts, mk, arr, sizes)
    assert [f.complete for f in h.frames] == [True, False, True]
    assert [f.key for f in h.frames] == [True, False, False] and h.key_frames == 1
    # its RTX arrived (original timestamp 3000): repaired
    r = header_facts(seq, ts, mk, arr, sizes, rtx_timestamps=[3000], rtx_arrival_ns=[20_000_000])
    assert [f.repaired for f in r.frames] == [False, True, False] and r.frames_complete == 3
    assert r.frames[1].spread_ms == pytest.approx(17.0)
    assert math.isnan(header_facts([], [], [], [], []).frames_per_second)


# abs-send-time is the time the sender's pacer let the packet go; the truth is the sender's
# capture time (README of data/video/webrtc): a packet can wait in the sender's own socket.
QUEUE_MAX_TOL_MS = 2.0
QUEUE_P95_TOL_MS = 10.0  # vp8-loss: 13.2 ms here, 6.8 ms true (the forwarder's 30 ms holds)


@pytest.mark.parametrize("name", ["vp8-bulk", "vp8-loss", "h264-loss"])
def test_queueing_delay_from_abs_send_time_matches_both_captures(name):
    # truth: receiver minus sender capture time of each media packet (both captures, one clock),
    # less its smallest value; qoe reads B's capture alone (SRTP: the payloads stay encrypted)
    from qoe.video import StreamFacts, score_capture

    c = wt.call(name)
    d = c.direction("a", "video")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = [r for r in score_capture(c.capture("b")) if r.name.endswith(f"ssrc=0x{d.ssrc:08x}")]
    (facts,) = res
    assert isinstance(facts, StreamFacts) and facts.frames_decoded == 0
    assert any("SRTP" in n for n in facts.notes)  # encrypted, said so; the header facts stay
    h = facts.headers
    truth = np.array(list(wt.one_way_delays_ms(c, d).values()))
    truth -= truth.min()
    assert h.queue_delay_source == "abs-send-time"
    assert h.queue_delay_max_ms == pytest.approx(truth.max(), abs=QUEUE_MAX_TOL_MS)
    assert h.queue_delay_p95_ms == pytest.approx(np.percentile(truth, 95), abs=QUEUE_P95_TOL_MS)
    rec = facts.to_record()
    assert rec["queue_delay_p95_ms"] == h.queue_delay_p95_ms and rec["frames_received"] == h.frames_received
    if name == "vp8-bulk":  # the 775 ms uplink buffer (tbf limit), seen from the receiver alone
        assert 650 < h.queue_delay_max_ms < 800


@pytest.mark.slow
def test_header_facts_reach_the_batch_results_and_frames_tables(tmp_path):
    # qoe.batch on the SRTP call under bulk load: its results rows carry the header facts,
    # its 'frames' table one row per RTP frame (= framesDecoded of getStats)
    import qoe.batch

    c = wt.call("vp8-bulk")
    d = c.direction("a", "video")
    rows = [{"capture": str(c.capture("b")), "kind": "video"}]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = qoe.batch.run(rows, workers=0, progress=False)
        frames = qoe.batch.run(rows, workers=0, progress=False, table="frames")
    row = df[df["stream"].str.endswith(f"ssrc=0x{d.ssrc:08x}")].iloc[0]
    assert row["frames_received"] == d.inbound["framesDecoded"]
    assert abs(row["freeze_count"] - d.inbound["freezeCount"]) <= FREEZE_TOL
    assert row["queue_delay_max_ms"] > 650
    assert (frames["stream"] == row["stream"]).sum() == d.inbound["framesDecoded"]
