"""qoe on real WebRTC calls (data/video/webrtc) against the browsers' own getStats() and the router's log.

The calls are SRTP (DTLS-SRTP, BUNDLE: audio, video, RTX, RTCP, STUN and DTLS on one 5-tuple),
captured at peer B for every call and at peer A for some; the truth is each peer's
``pc.getStats()`` (Chromium 156) and, for the loss calls, the forwarder's log of every RTP packet
it dropped (tests/video/webrtc_truth.py; data/video/webrtc/README.md says what the counters
mean). A stream seen in a capture at its receiver is compared with the receiver's
``inbound-rtp``; a stream seen at its sender with the sender's ``outbound-rtp``.
"""

from __future__ import annotations

import struct
import warnings
from collections import Counter
from functools import cache
from pathlib import Path

import dpkt
import numpy as np
import pytest

import qoe
import qoe.rtp
from qoe.video.flows import rtx_partner
from qoe.video.headers import stream_header_facts
from video import webrtc_truth as truth

# Chromium reports jitter in whole milliseconds (RTCReceivedRtpStreamStats.jitter is a multiple
# of 0.001 s in every sample of these calls) from receive times taken after the socket: 1 ms
# covers the rounding and the ms-resolution receive clock.
JITTER_TOL_MS = 1.0


@cache
def streams(capture: Path) -> dict[int, qoe.rtp.RtpStream]:
    """qoe's streams of one capture, by SSRC (the SRTP warning is not what is tested here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {s.key.ssrc: s for s in qoe.rtp.find_streams(capture)}


@cache
def rtp_counts(capture: Path) -> Counter:
    """RTP packets per SSRC, counted with dpkt (RFC 7983 §7 first byte 128-191, RTCP types 192-223 left out)."""
    counts: Counter = Counter()
    with open(capture, "rb") as f:
        for _, buf in dpkt.pcap.Reader(f):
            udp = dpkt.ethernet.Ethernet(buf).data.data
            p = bytes(udp.data)
            if len(p) >= 12 and 128 <= p[0] <= 191 and not 192 <= p[1] <= 223:
                counts[struct.unpack_from("!I", p, 8)[0]] += 1
    return counts


def _cases(where: str) -> list:
    """(call, capture side, direction) for every media stream, seen at its receiver or sender."""
    out = []
    for c in truth.calls():
        for d in c.directions():
            side = d.receiver if where == "receiver" else d.sender
            if c.has_capture(side):
                out.append(pytest.param(c, side, d, id=f"{c.name}-{side}.pcap-{d.sender}to{d.receiver}-{d.kind}"))
    return out


CAPTURES = [pytest.param(c, side, id=f"{c.name}-{side}.pcap") for c in truth.calls() for side in "ab"
            if c.has_capture(side)]


@pytest.mark.parametrize(("call", "side"), CAPTURES)
def test_find_streams_finds_every_media_ssrc_of_getstats(call, side):
    """Each peer's outbound-rtp SSRC (= the other's inbound-rtp SSRC) is a stream on the right addresses."""
    found = streams(call.capture(side))
    for d in call.directions():
        assert d.ssrc in found, f"{d.kind} {d.sender}->{d.receiver} SSRC {d.ssrc:#x} not found"
        key = found[d.ssrc].key
        assert (key.src, key.dst) == (d.src, d.dst)


@pytest.mark.parametrize(("call", "side", "d"), _cases("receiver"))
def test_packets_at_receiver_equal_getstats(call, side, d):
    """Media packets in the receiver's capture = inbound-rtp packetsReceived - retransmittedPacketsReceived.

    (Chromium counts the RTX packets of a stream in its packetsReceived.)
    """
    assert streams(call.capture(side))[d.ssrc].stats.packets == d.media_packets_received


@pytest.mark.parametrize(("call", "side", "d"), _cases("sender"))
def test_packets_at_sender_equal_getstats(call, side, d):
    """Media packets in the sender's capture = outbound-rtp packetsSent - the RTX packets sent.

    packetsSent counts every RTX packet, padding-only probes too (retransmittedPacketsSent does
    not), so the RTX packets are counted in the capture, independently of qoe (dpkt).
    """
    rtx = rtp_counts(call.capture(side))[d.rtx_ssrc] if d.rtx_ssrc else 0
    assert streams(call.capture(side))[d.ssrc].stats.packets == d.outbound["packetsSent"] - rtx


def test_sender_and_receiver_captures_hold_the_same_packets_on_a_clean_path():
    """Without loss, what A's capture sent is what B's received, RTX included (the captures are complete)."""
    c = truth.call("vp8-bulk")
    a, b = rtp_counts(c.capture("a")), rtp_counts(c.capture("b"))
    d = c.direction("b", "video")  # B -> A is the uncongested direction of the bulk call
    assert a[d.ssrc] == b[d.ssrc] == d.inbound["packetsReceived"] - d.inbound["retransmittedPacketsReceived"]
    assert a[d.rtx_ssrc] == b[d.rtx_ssrc] == d.inbound["retransmittedPacketsReceived"]


LOSS_CASES = [p for p in _cases("receiver") if p.values[0].condition in ("loss", "reorder", "bulk")]


@pytest.mark.parametrize(("call", "side", "d"), [p for p in LOSS_CASES if "forwarder" in p.values[0].meta])
def test_browser_loss_is_the_forwarders_drops(call, side, d):
    """The truth agrees with itself: packetsLost = the forwarder's drops of the media SSRC.

    Drops after the highest sequence number received are invisible to any receiver; RTX repair
    does not reduce packetsLost (RFC 3550 counts the media SSRC only).
    """
    pk = truth.rtp_headers(call.capture(side))[d.ssrc]  # dpkt, arrival order; no wrap within 10 s
    first, highest = pk[0][1], max(seq for _, seq, _, _ in pk)
    older = sum(1 for _, seq, _, _ in pk if seq < first)  # RFC 3550 A.3: received, not expected
    seen = [e["seq"] for e in call.dropped(d.ssrc) if first < e["seq"] < highest]
    assert d.inbound["packetsLost"] == len(seen) - older


def test_bulk_loss_is_what_the_sender_sent_and_the_receiver_missed():
    """In the bulk call, tbf's drops of A's media = packets in A's capture missing from B's = packetsLost."""
    c = truth.call("vp8-bulk")
    for kind in ("audio", "video"):
        d = c.direction("a", kind)
        sent = set(int(x) for x in streams(c.capture("a"))[d.ssrc].packets.seq_ext)
        got = set(int(x) for x in streams(c.capture("b"))[d.ssrc].packets.seq_ext)
        missing = {s for s in sent - got if s < max(got)}
        assert len(missing) == d.inbound["packetsLost"] > 0


@pytest.mark.parametrize(("call", "side", "d"), LOSS_CASES)
def test_loss_equals_getstats_packets_lost(call, side, d):
    """qoe's lost on the receiver's capture = inbound-rtp packetsLost (loss, reordering, RTX repair; bulk: tbf drops).

    Includes the cases tshark gets wrong: the highest sequence number arriving before its
    predecessor (vp8-loss a.pcap B->A video, av1-loss A->B audio: expected runs to the highest,
    RFC 3550 A.3) and packets older than the stream's first (vp8-reorder A->B video: received,
    not a wrap, RFC 3550 A.1; tshark says 131,074 lost).
    """
    assert streams(call.capture(side))[d.ssrc].stats.lost == d.inbound["packetsLost"]


CLEAN_AUDIO = [p for p in _cases("receiver") if p.values[0].condition == "clean" and p.values[2].kind == "audio"]


@pytest.mark.parametrize(("call", "side", "d"), CLEAN_AUDIO)
def test_audio_jitter_close_to_getstats_on_clean_calls(call, side, d):
    """RFC 3550 jitter of Opus (clock rate from the receiver's codec stats) within 1 ms of getStats' final jitter.

    On a clean path every packet is in order and each carries its own timestamp, so the
    every-packet rule and libwebrtc's (in-order packets whose timestamp changed) agree; on the
    loss calls they do not (README.md, "What getStats counts").
    """
    stats = qoe.rtp.rtp_stats(streams(call.capture(side))[d.ssrc].packets, d.codec["clockRate"])
    assert d.codec["clockRate"] == 48000
    assert stats.jitter_ms == pytest.approx(d.inbound["jitter"] * 1000, abs=JITTER_TOL_MS)


TWO_ENDED = [pytest.param(c, d, id=f"{c.name}-{d.sender}to{d.receiver}-{d.kind}") for c in truth.calls()
             if c.has_capture("a") and c.has_capture("b") for d in c.directions()]


@pytest.mark.parametrize(("call", "d"), TWO_ENDED)
def test_one_way_delay_from_both_captures(call, d):
    """qoe.rtp.stream_delay on the two captures = capture-time differences matched with dpkt (same clock);
    packets sent but never received = the forwarder's drops (loss calls) or inbound-rtp packetsLost (bulk).

    The bulk call's uplink queue (tbf, 64 x 1514 B at 1 Mbit/s = 775 ms) shows in A's media.
    """
    sent, got = streams(call.capture(d.sender))[d.ssrc], streams(call.capture(d.receiver))[d.ssrc]
    od = qoe.rtp.stream_delay(sent, got, clocks="same")
    want = truth.one_way_delays_ms(call, d)
    seqs = (od.seq_ext[od.received] & 0xFFFF).tolist()
    assert sorted(seqs) == sorted(want)
    assert od.delay_ms[od.received] == pytest.approx([want[s] for s in seqs], abs=0.002)  # pcap: µs stamps
    never = int((~od.received).sum())
    if "forwarder" in call.meta:
        # qoe counts loss inside the sequence range both captures hold (its documented "overlap");
        # a drop after the last packet received is "outside" (h264-loss B->A audio: seq 7376)
        lo, hi = min(want), max(want)
        inner = [e for e in call.dropped(d.ssrc) if lo < e["seq"] < hi]
        assert (never, od.outside) == (len(inner), len(call.dropped(d.ssrc)) - len(inner))
    else:
        assert (never, od.outside) == (d.inbound["packetsLost"], 0)
    if call.condition == "bulk" and d.sender == "a":
        assert 700 < max(want.values()) < 775  # queueing delay bounded by the buffer


@pytest.mark.parametrize(("call", "side"), CAPTURES)
def test_every_stream_is_said_to_be_srtp_from_the_dtls_handshake(call, side):
    """DTLS on the streams' 5-tuple (RFC 5764, demultiplexed per RFC 7983) marks them SRTP, and the
    record says that payloads cannot be decoded without keys (the browsers negotiated DTLS-SRTP:
    the SDPs carry a=fingerprint and no a=crypto)."""
    assert "a=fingerprint:" in call.offer.read_text() and "a=crypto:" not in call.offer.read_text()
    found = streams(call.capture(side))
    for d in call.directions():
        s = found[d.ssrc]
        assert s.srtp is not None and s.srtp.found_by == "dtls" and not s.srtp.decrypted
        assert any("cannot be decoded" in n for n in s.notes)


# The browser counts freezes on rendered frames, after a jitter buffer; the header facts on the
# times frames completed in the capture: within 1 freeze, and 1.2 s (vp8-bulk under the 775 ms
# uplink queue: 4.89 s from the headers, 4.285 s the browser's; as tests/video/test_headers.py)
FREEZE_TOL, FREEZE_S_TOL = 1, 1.2
VIDEO_AT_RECEIVER = [p for p in _cases("receiver") if p.values[2].kind == "video"]


@pytest.mark.parametrize(("call", "side", "d"), VIDEO_AT_RECEIVER)
def test_header_frames_and_freezes_against_getstats(call, side, d):
    """Header-only video facts (qoe.video.headers) of every video stream at its receiver, both
    directions (A's captures too): frames = framesDecoded, the RTX partner = rtxSsrc, frames
    repaired by RTX on the loss calls, freezes within the stated tolerance, no pause."""
    found = streams(call.capture(side))
    s = found[d.ssrc]
    rtx = rtx_partner(s, list(found.values()))
    h = stream_header_facts(s, rtx=rtx)
    assert h.frames_received == d.inbound["framesDecoded"]
    assert abs(h.frames_complete - d.inbound["framesDecoded"]) <= 1
    if rtx is not None:
        assert rtx.key.ssrc == d.rtx_ssrc
    if "forwarder" in call.meta and call.dropped(d.ssrc):
        assert rtx is not None and h.frames_repaired > 0
    assert abs(h.freeze_count - d.inbound["freezeCount"]) <= FREEZE_TOL
    assert h.total_freezes_duration_s == pytest.approx(d.inbound["totalFreezesDuration"], abs=FREEZE_S_TOL)
    assert h.pause_count == d.inbound["pauseCount"] == 0


@pytest.mark.parametrize(("call", "d"), TWO_ENDED)
def test_abs_send_time_delay_variation_against_both_captures(call, d):
    """One-way delay variation from the receiver's capture alone (arrival minus abs-send-time,
    qoe.rtp.extensions) against the true one from both captures, for every stream of the
    two-ended calls: audio and video, the loss calls' held packets (+30 ms), the bulk queue (~0.77 s).

    Each relative to its first packet. The estimate also holds the sender's own delay between
    stamping abs-send-time (at its pacer) and the packet reaching its interface (A's capture
    time minus abs-send-time): on this loaded machine up to 62 ms once (vp8-loss A->B audio),
    a few ms on a few packets of most streams. So the median within 0.2 ms and 95 % of the
    packets within 1 ms of the true network variation.
    """
    from qoe.rtp.extensions import read_header_extensions

    s = streams(call.capture(d.receiver))[d.ssrc]
    (e,) = read_header_extensions(call.capture(d.receiver), [s])
    send_ms = (e.abs_send_time_s() - e.abs_send_time_s()[0]) * 1e3
    est = (e.arrival_ns - e.arrival_ns[0]) / 1e6 - send_ms
    owd = truth.one_way_delays_ms(call, d)
    true = np.array([owd[q] for q in s.packets.seq.tolist()])  # KeyError: received, never sent
    err = np.abs(est - (true - true[0]))
    assert np.median(err) < 0.2 and np.percentile(err, 95) < 1.0
    if "forwarder" in call.meta and call.held(d.ssrc):
        assert np.max(true) - np.min(true) > 25  # the held packets are seen


@pytest.mark.parametrize("name", ["vp8-loss", "h264-loss", "av1-clean"])
def test_the_browsers_sdp_names_the_codecs_when_scoring(name):
    # VideoOptions(sdp=offer.sdp): the browser's SDP applies under BUNDLE (a=ssrc, or a payload
    # type only one section maps; its m= port is 9, no match by port). Truth: the receiver's
    # codec stats (mimeType) for each media SSRC; RTX (RFC 4588) is no video stream of its own.
    from qoe.video import VideoOptions  # noqa: PLC0415

    c = truth.call(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = qoe.score(str(c.capture("b")), kind="video", options=VideoOptions(sdp=str(c.offer)))
    got = {r.name.rsplit("ssrc=", 1)[1]: r.codec for r in report.results}
    # B's capture holds both directions: each stream's codec as its receiver's stats name it
    want = {f"0x{d.ssrc:08x}": d.codec["mimeType"].split("/")[1].lower() for d in c.directions() if d.kind == "video"}
    assert got == want


def test_score_and_streams_take_the_browsers_sdp_on_the_command_line():
    from click.testing import CliRunner  # noqa: PLC0415

    from qoe_cli.main import cli  # noqa: PLC0415

    c = truth.call("vp8-loss")
    run = CliRunner().invoke(cli, ["score", "--kind", "video", "--sdp", str(c.offer), "--format", "json",
                                   str(c.capture("b"))])
    assert run.exit_code == 0, run.output
    assert '"codec": "vp8"' in run.output and "pt 96" not in run.output
    run = CliRunner().invoke(cli, ["streams", "--sdp", str(c.offer), "--format", "json", str(c.capture("b"))])
    assert run.exit_code == 0, run.output
    for d in c.directions():
        assert f'"codec": "{d.codec["mimeType"].split("/")[1]}"' in run.output, d.kind
