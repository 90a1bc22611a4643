"""RTP facts of the real Chromium calls in data/video/webrtc/calls, against the browsers' getStats().

The truth is each receiving browser's final ``inbound-rtp`` (``tests/video/webrtc_truth.py``
reads it; data/video/webrtc/README.md says what Chromium 156 counts), and the forwarder's log
of the packets it dropped or held. The captures are SRTP (DTLS-SRTP, BUNDLE): only the clear
RTP headers are read.
"""

from __future__ import annotations

import shutil
import subprocess
import warnings

import pytest

from qoe.errors import QoEWarning
from qoe.rtp import parse_sdp, scan_capture
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


@pytest.mark.parametrize("call", CALLS, ids=lambda c: c.name)
def test_every_stream_of_a_dtls_srtp_call_is_marked_with_a_note(call):
    # The calls are DTLS-SRTP (make_calls.py: Chromium, BUNDLE, rtcp-mux): one 5-tuple
    # carries STUN, DTLS and SRTP (RFC 7983).
    scan = scan_capture(call.capture("b"), keep_packets=False)
    assert scan.streams
    for s in scan.streams:
        assert s.srtp is not None and s.srtp.found_by == "dtls", s.key
        assert any("cannot be decoded" in n and "RFC 7983" in n for n in s.notes), s.notes
        assert s.to_dict()["srtp"] == "dtls"


TSHARK = shutil.which("tshark")


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
def test_stun_and_dtls_counts_equal_tsharks():
    # tshark 4.0 decodes STUN and DTLS 1.2 records; it leaves DTLS 1.3 unified-header
    # records (first byte 0b001xxxxx, RFC 9147 §4) undecoded as data: those are counted
    # from its data.data field. The note states the counts qoe found.
    cap = webrtc_truth.call("vp8-clean").capture("b")

    def frames(display_filter, field="frame.number"):
        out = subprocess.run([TSHARK, "-r", str(cap), "-Y", display_filter, "-T", "fields", "-e", field],
                             capture_output=True, text=True, check=True, timeout=120).stdout.split()
        return out

    stun = len(frames("stun"))
    dtls12 = len(frames("dtls"))
    undecoded = frames("udp && !stun && !rtp && !rtcp && !dtls", "data.data")
    dtls13 = sum(1 for d in undecoded if int(d[:2], 16) >> 5 == 1)
    (s, *_) = scan_capture(cap, keep_packets=False).streams
    note = next(n for n in s.notes if n.startswith("DTLS-SRTP"))
    assert f"{dtls12 + dtls13} DTLS record(s)" in note
    assert f"{dtls13} with DTLS 1.3's unified header" in note
    assert f"{stun} STUN message(s)" in note


@pytest.mark.parametrize("call", CALLS, ids=lambda c: c.name)
def test_nack_pli_fir_sent_back_equal_the_receivers_counters(call):
    # B sends its feedback as reduced-size SRTCP (RFC 5506), whose first 8 bytes are clear
    # (RFC 3711 §3.4): the NACKs counted on the reverse direction of A's video equal B's
    # inbound-rtp nackCount (and PLI/FIR its pliCount/firCount) in every call.
    scan = scan_capture(call.capture("b"), keep_packets=False)
    streams = {s.key.ssrc: s for s in scan.streams}
    d = call.direction("a", "video")
    fb = streams[d.ssrc].feedback
    assert (fb["nack"], fb["pli"], fb["fir"]) == (d.inbound["nackCount"], d.inbound["pliCount"], d.inbound["firCount"])
    assert fb["transport_cc"] > 100 and fb["rr"] > 0  # transport-wide feedback about every 60 ms, RRs every ~1 s
    assert streams[d.ssrc].to_dict()["feedback_nack"] == fb["nack"]


# getStats' jitter is in whole ms (data/video/webrtc/README.md), and the browser's receive
# times lag the capture's by scheduling delays on the loaded machine the calls were made on.
JITTER_TOL_MS = 1.5


def test_clock_rate_and_media_inferred_without_sdp_and_the_receivers_jitter():
    for call in CALLS:
        for side in ("a", "b"):
            if not call.has_capture(side):
                continue
            streams = {s.key.ssrc: s for s in scan_capture(call.capture(side), jitter_rule="in-order").streams}
            for d in call.directions():
                if d.receiver != side:
                    continue
                s = streams[d.ssrc]
                where = (call.name, side, d.kind)
                assert (s.clock_rate, s.media) == (d.codec["clockRate"], d.kind), where  # the browser's codec stats
                assert any(n.startswith(f"clock rate {s.clock_rate} Hz and media {d.kind} inferred") for n in s.notes)
                assert abs(s.stats.jitter_ms - d.inbound["jitter"] * 1000) <= JITTER_TOL_MS, where


def test_the_every_packet_rule_is_not_what_the_browser_reports_on_queued_video():
    # vp8-bulk, A's video behind the 0.77 s uplink queue: the receiver's rule gives the
    # browser's 157 ms; RFC 3550 A.8 on every packet (tshark's) gives far more.
    call = webrtc_truth.call("vp8-bulk")
    d = call.direction("a", "video")
    every = {s.key.ssrc: s for s in scan_capture(call.capture("b")).streams}[d.ssrc]
    in_order = {s.key.ssrc: s for s in scan_capture(call.capture("b"), jitter_rule="in-order").streams}[d.ssrc]
    truth = d.inbound["jitter"] * 1000
    assert abs(in_order.stats.jitter_ms - truth) <= JITTER_TOL_MS
    assert every.stats.jitter_ms > truth + 30


def _browser_sdp(call):
    return parse_sdp(call.offer.read_text()).media + parse_sdp(call.answer.read_text()).media


def test_the_browsers_sdp_applies_under_bundle_and_ties_rtx_to_its_media_stream():
    # One 5-tuple for audio and video (BUNDLE): the SDP is matched by a=ssrc, not by port;
    # a=ssrc-group:FID ties RTX to its media stream. Truth: the receiver's codec stats and
    # inbound-rtp rtxSsrc / retransmittedPacketsReceived (RTX packets received).
    for call in CALLS:
        for side in ("a", "b"):
            if not call.has_capture(side):
                continue
            streams = {s.key.ssrc: s for s in scan_capture(call.capture(side), sdp=_browser_sdp(call)).streams}
            for d in call.directions():
                if d.receiver != side:
                    continue
                s = streams[d.ssrc]
                where = (call.name, side, d.kind)
                assert f"{d.kind}/{s.codec}/{s.clock_rate}".lower() == f"{d.kind}/{d.codec['mimeType'].split('/')[1]}/{d.codec['clockRate']}".lower(), where
                # RFC 8843 §9.2: the MID the first packets carry comes first; the browser's mid
                assert any(f"(mid {d.inbound['mid']}), matched by MID '{d.inbound['mid']}'" in n for n in s.notes), where
                if d.kind == "video":
                    assert s.rtx is not None and s.rtx.ssrc == d.rtx_ssrc and s.rtx.found_by == "sdp", where
                    assert s.rtx.packets == d.inbound["retransmittedPacketsReceived"], where
                    assert s.rtx.repaired is None  # SRTP: the original sequence numbers are encrypted
                    assert s.stats.lost == d.inbound["packetsLost"], where  # RTX repair does not change RFC 3550 loss


def _sdp_text(call, *, ssrc_lines: bool = True, mid_extmap: bool = True, second_video: bool = False) -> str:
    """The browsers' offer and answer as one text, edited as other real descriptions are:
    without ``a=ssrc``/``a=ssrc-group`` lines (Chromium's unified plan may leave them out),
    without the MID header extension's ``a=extmap``, or with a second video section (mid 2)
    that maps the same payload types (a second video transceiver)."""
    out = []
    for path in (call.offer, call.answer):
        lines = path.read_text().splitlines()
        if not ssrc_lines:
            lines = [x for x in lines if not x.startswith(("a=ssrc:", "a=ssrc-group:"))]
        if not mid_extmap:
            lines = [x for x in lines if not (x.startswith("a=extmap:") and x.endswith("sdes:mid"))]
        if second_video:
            at = next(i for i, x in enumerate(lines) if x.startswith("m=video"))
            video = [x.replace("a=mid:1", "a=mid:2") for x in lines[at:]]
            lines = [x.replace("a=group:BUNDLE 0 1", "a=group:BUNDLE 0 1 2") for x in lines] + video
        out.append("\r\n".join(lines) + "\r\n")
    return out


def _matched(call, side, texts):
    sdp = tuple(m for text in texts for m in parse_sdp(text).media)
    return {s.key.ssrc: s for s in scan_capture(call.capture(side), sdp=sdp, keep_packets=False).streams}


def _section_note(s):
    return next((n for n in s.notes if n.startswith("described by the given SDP")), None)


def test_the_mid_header_extension_names_the_section_when_payload_types_are_shared():
    # Two video sections with the same payload types and no a=ssrc lines: only the MID
    # (RFC 8843 §15, a=extmap ...sdes:mid) tells which one a stream belongs to. Truth: the
    # receiving browser's inbound-rtp mid, and its codec stats.
    rtx_checked = 0
    for call in CALLS:
        if call.name not in ("vp8-loss", "h264-clean", "av1-clean"):
            continue
        streams = _matched(call, "b", _sdp_text(call, ssrc_lines=False, second_video=True))
        for d in call.directions():
            if d.receiver != "b":
                continue
            s = streams[d.ssrc]
            note = _section_note(s)
            assert note is not None and f"(mid {d.inbound['mid']}), matched by MID" in note, (call.name, d.kind, s.notes)
            assert s.codec.lower() == d.codec["mimeType"].split("/")[1].lower()
            if d.kind == "video" and d.rtx_ssrc in streams:  # its RTX stream (when one was found)
                rtx = streams[d.rtx_ssrc]  # carries the same MID, and RTX's payload type
                rtx_checked += 1
                assert f"(mid {d.inbound['mid']}), matched by MID" in _section_note(rtx)
                assert rtx.codec == "rtx"
        # without the MID's extmap, the shared video payload types tell nothing (RFC 8843 §9.2)
        blind = _matched(call, "b", _sdp_text(call, ssrc_lines=False, mid_extmap=False, second_video=True))
        for d in call.directions():
            if d.receiver == "b":
                note = _section_note(blind[d.ssrc])
                if d.kind == "video":
                    assert note is None, note
                else:  # Opus's payload type is in one section only
                    assert "matched by payload type 111" in note
    assert rtx_checked >= 1


def test_the_sdp_matching_order_mid_then_ssrc_then_payload_type():
    # RFC 8843 §9.2: a packet's MID, else the SSRC table (a=ssrc), else a payload type that
    # one section maps. Truth: the browser's inbound-rtp mid in every case.
    call = webrtc_truth.call("vp9-loss")
    cases = {
        "MID": _sdp_text(call),
        "a=ssrc": _sdp_text(call, mid_extmap=False),
        "payload type": _sdp_text(call, ssrc_lines=False, mid_extmap=False),
    }
    for how, texts in cases.items():
        streams = _matched(call, "b", texts)
        for d in call.directions():
            if d.receiver == "b":
                note = _section_note(streams[d.ssrc])
                assert note is not None and f"(mid {d.inbound['mid']}), matched by {how}" in note, (how, note)


def test_rtx_is_recognised_by_its_timestamps_without_sdp():
    for name in ("vp8-loss", "h264-loss", "vp9-loss", "av1-loss", "vp8-reorder"):
        call = webrtc_truth.call(name)
        d = call.direction("a", "video")
        s = {s.key.ssrc: s for s in scan_capture(call.capture("b")).streams}[d.ssrc]
        assert s.rtx is not None and (s.rtx.ssrc, s.rtx.found_by) == (d.rtx_ssrc, "timestamps"), name
        assert s.rtx.packets == d.inbound["retransmittedPacketsReceived"], name


def test_the_table_path_without_packets_infers_the_same_clock_and_jitter():
    # `qoe streams` scans with keep_packets=False; the clock rate, media kind and jitter
    # must be those of the default scan, and the jitter the receiver's (in-order rule).
    # Truth: the receiver's codec stats (clockRate, kind) and inbound-rtp jitter.
    call = webrtc_truth.call("vp8-loss")
    kept = {s.key.ssrc: s for s in scan_capture(call.capture("b"), jitter_rule="in-order").streams}
    table = {s.key.ssrc: s for s in scan_capture(call.capture("b"), keep_packets=False, jitter_rule="in-order").streams}
    for d in call.directions():
        if d.receiver != "b":
            continue
        s = table[d.ssrc]
        assert s.packets is None
        assert (s.clock_rate, s.media) == (d.codec["clockRate"], d.kind), d.kind
        assert s.stats.jitter_ms == kept[d.ssrc].stats.jitter_ms
        assert abs(s.stats.jitter_ms - d.inbound["jitter"] * 1000) <= JITTER_TOL_MS, d.kind
    # the default (every-packet) rule, as the CLI table prints it: a number, the kept scan's
    every = {s.key.ssrc: s for s in scan_capture(call.capture("b"), keep_packets=False).streams}
    every_kept = {s.key.ssrc: s for s in scan_capture(call.capture("b")).streams}
    for d in call.directions():
        if d.receiver == "b":
            assert every[d.ssrc].stats.jitter_ms == every_kept[d.ssrc].stats.jitter_ms > 0


# SRTP's authentication tag (RFC 3711 §3.1; AES_CM_128_HMAC_SHA1_80, RFC 3711 §5.2: 80 bits)
# ends every packet's payload in the capture; getStats' bytesReceived counts the payload without it.
SRTP_TAG = 10


@pytest.mark.skipif(shutil.which("editcap") is None, reason="needs editcap (Wireshark)")
def test_a_cut_capture_counts_payload_bytes_on_the_wire(tmp_path):
    # `editcap -s 160` keeps 160 bytes of each frame (as `tcpdump -s 160` would); the payload
    # sizes come from the UDP length (RFC 768), so they equal the receiver's
    # bytesReceived - retransmittedBytesReceived (media SSRC, RTX left out) as on the whole capture.
    call = webrtc_truth.call("vp8-clean")
    cut = tmp_path / "cut.pcap"
    subprocess.run(["editcap", "-s", "160", str(call.capture("b")), str(cut)], check=True, capture_output=True)
    with pytest.warns(QoEWarning, match="cut by the capture's snap length \\(160 bytes\\)") as rec:
        scan = scan_capture(cut)
    assert sum("snap length" in str(w.message) for w in rec) == 1
    streams = {s.key.ssrc: s for s in scan.streams}
    for d in call.directions():
        if d.receiver != "b":
            continue
        s = streams[d.ssrc]
        truth = d.inbound["bytesReceived"] - d.inbound.get("retransmittedBytesReceived", 0)
        assert int(s.packets.sizes().sum()) - SRTP_TAG * len(s.packets) == truth, d.kind
        assert sum(len(p) for p in s.packets.payloads) < int(s.packets.sizes().sum())  # the capture holds part
        assert any("cut at 160 bytes" in n for n in s.notes), s.notes
    table = {s.key.ssrc: s for s in scan_capture(cut, keep_packets=False).streams}
    assert all(any("cut at 160 bytes" in n for n in s.notes) for s in table.values())


def _until_last_report(call, side, d, tmp_path):
    """The receiver's capture, cut after the browser's last fresh report of stream ``d`` when
    the capture holds packets of it (media or RTX) that arrived later; and whether it was cut.

    The last getStats sample of a call can repeat the one before it (taken 38 ms earlier in
    vp9-svc: Chromium answers from its 50 ms stats cache), so the first sample with the final
    counters is when the browser last counted. The capture and the browser share the host's
    clock (TESTBED.md). Written with dpkt, independently of qoe.
    """
    import dpkt

    series = webrtc_truth.samples(call, side, d.ssrc)
    names = ("packetsReceived", "retransmittedPacketsReceived", "headerBytesReceived")
    final = [series[-1][1].get(k) for k in names]
    fresh_ms = min(w for w, s in series if [s.get(k) for k in names] == final)
    headers = webrtc_truth.rtp_headers(call.capture(side))
    ssrcs = (d.ssrc, d.rtx_ssrc)
    if not any(t * 1000 > fresh_ms for x in ssrcs if x in headers for t, _, _, _ in headers[x]):
        return call.capture(side), False
    out = tmp_path / f"{call.name}-{side}-until-last-report.pcap"
    with open(call.capture(side), "rb") as f, open(out, "wb") as g:
        r = dpkt.pcap.Reader(f)
        w = dpkt.pcap.Writer(g, snaplen=r.snaplen, linktype=r.datalink())
        for ts, buf in r:
            if ts * 1000 <= fresh_ms:
                w.writepkt(buf, ts)
    return out, True


# Every video stream of all 13 calls (the three calls made with more than the defaults too),
# at each receiver captured.
RECEIVED_VIDEO = [pytest.param(c, d.receiver, d, id=f"{c.name}-{d.receiver}.pcap-{d.sender}to{d.receiver}")
                  for c in webrtc_truth.all_calls() for d in c.directions()
                  if d.kind == "video" and c.has_capture(d.receiver)]


@pytest.mark.parametrize(("call", "side", "d"), RECEIVED_VIDEO)
def test_rtx_packets_and_header_bytes_equal_getstats_on_every_call(call, side, d, tmp_path):
    # With the browsers' SDP (a=ssrc-group:FID): the RTX packets counted as the video stream's
    # repair = inbound-rtp retransmittedPacketsReceived, and its header bytes with the RTX
    # stream's = headerBytesReceived, exactly; also when the RTX stream holds a single
    # padding-only probe (vp8-two-video: below min_packets, RFC 3550 A.1 probation).
    # vp9-svc: B's capture holds 8 RTX probes after the browser's last report (280 counted,
    # 288 captured): the capture is cut there (_until_last_report), and only there.
    capture, cut = _until_last_report(call, side, d, tmp_path)
    assert cut == (call.name == "vp9-svc")
    sdp = _browser_sdp(call)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        streams = {s.key.ssrc: s for s in scan_capture(capture, sdp=sdp, keep_packets=False).streams}
        if cut:  # what the whole capture holds beyond the report: RTX probes only
            whole = {s.key.ssrc: s for s in scan_capture(call.capture(side), sdp=sdp, keep_packets=False).streams}
            later = (len(webrtc_truth.rtp_headers(call.capture(side))[d.rtx_ssrc])
                     - len(webrtc_truth.rtp_headers(capture)[d.rtx_ssrc]))  # dpkt
            assert (whole[d.ssrc].rtx.packets, whole[d.ssrc].stats.packets) == (
                d.inbound["retransmittedPacketsReceived"] + later, d.media_packets_received)
            assert later == 8
    s = streams[d.ssrc]
    assert s.rtx is not None and (s.rtx.ssrc, s.rtx.found_by) == (d.rtx_ssrc, "sdp")
    assert s.rtx.packets == d.inbound["retransmittedPacketsReceived"]
    assert s.to_dict()["header_bytes_received"] == d.inbound["headerBytesReceived"]
    assert s.stats.packets == d.media_packets_received


def _without_ssrc_lines(call, *, mid_extmap=True):
    return tuple(m for t in _sdp_text(call, ssrc_lines=False, mid_extmap=mid_extmap) for m in parse_sdp(t).media)


@pytest.mark.parametrize(("call", "side", "d"), RECEIVED_VIDEO)
def test_rtx_is_tied_by_its_payload_types_apt_without_ssrc_lines(call, side, d, tmp_path):
    # Chromium's unified-plan SDP may have no a=ssrc lines: the RTX payload type's
    # a=fmtp apt= (RFC 4588 §8) names the media payload type, and on one 5-tuple (BUNDLE)
    # the MID (RFC 8843 §15) the RTX packets carry picks the transceiver (vp8-two-video: two
    # video sections with payload types 96/97 each). Same truth as above.
    capture, _ = _until_last_report(call, side, d, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        streams = {s.key.ssrc: s for s in scan_capture(capture, sdp=_without_ssrc_lines(call), keep_packets=False).streams}
    s = streams[d.ssrc]
    assert s.rtx is not None and (s.rtx.ssrc, s.rtx.found_by) == (d.rtx_ssrc, "apt")
    assert s.rtx.packets == d.inbound["retransmittedPacketsReceived"]
    assert s.to_dict()["header_bytes_received"] == d.inbound["headerBytesReceived"]


def test_two_transceivers_rtx_is_not_guessed_without_mid_or_ssrc_lines():
    # vp8-two-video without a=ssrc lines and without the MID's a=extmap: two video streams of
    # payload type 96 on one 5-tuple, and RTX packets of payload type 97 that carry nothing
    # else that names their stream (padding-only probes, timestamps of their own): the RTX
    # is tied to neither (RFC 8843 §9.2: a shared payload type tells nothing), so
    # header_bytes_received lacks the probe's 283 bytes (283 = the browser's
    # headerBytesReceived minus the media SSRC's header bytes).
    call = webrtc_truth.call("vp8-two-video")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        streams = {s.key.ssrc: s for s in scan_capture(call.capture("b"), sdp=_without_ssrc_lines(call, mid_extmap=False),
                                                       keep_packets=False).streams}
    for d in call.directions():
        if d.receiver == "b" and d.kind == "video":
            s = streams[d.ssrc]
            assert s.rtx is None and d.rtx_ssrc not in streams
            assert d.inbound["headerBytesReceived"] - s.to_dict()["header_bytes_received"] == 283


@pytest.mark.parametrize(("call", "side", "d"), RECEIVED_VIDEO)
def test_without_sdp_rtx_is_tied_when_it_carries_the_media_timestamps(call, side, d):
    # Without an SDP only a retransmission ties an RTX stream to its media stream (it keeps
    # its original's timestamp, RFC 4588 §4). Clean calls' RTX streams hold bandwidth probes
    # with timestamps of their own (counted here with dpkt: 0 to 2 of the media's): nothing
    # in the capture says whose they are, so they stay untied and header_bytes_received lacks
    # their bytes (the SDP ties them, above). Where retransmissions carry the media's
    # timestamps (the loss calls), the counts equal the browser's.
    headers = webrtc_truth.rtp_headers(call.capture(side))
    media_ts = {ts for _, _, ts, _ in headers[d.ssrc]}
    rtx = headers.get(d.rtx_ssrc, [])
    shared = sum(ts in media_ts for _, _, ts, _ in rtx)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        streams = {s.key.ssrc: s for s in scan_capture(call.capture(side)).streams}
    s = streams[d.ssrc]
    if shared >= min(3, len(rtx)) and shared >= 0.1 * len(rtx):
        assert s.rtx is not None and (s.rtx.ssrc, s.rtx.found_by) == (d.rtx_ssrc, "timestamps")
        assert s.rtx.packets == d.inbound["retransmittedPacketsReceived"]
        assert s.to_dict()["header_bytes_received"] == d.inbound["headerBytesReceived"]
    else:
        assert call.condition in ("clean", "bulk") and shared <= 2
        assert s.rtx is None
        assert s.to_dict()["header_bytes_received"] < d.inbound["headerBytesReceived"]


def test_header_bytes_are_the_browsers_header_bytes_received():
    # W3C webrtc-stats headerBytesReceived: RTP header (12 + CSRCs + RFC 8285 extensions) and
    # padding bytes of the SSRC, retransmissions (its RTX stream) included. Truth: the receiving
    # browser's final inbound-rtp, exact for every stream of every capture (the padding-only
    # RTX probes' padding counted up to SRTP's 10-byte tag: transport.srtpCipher is
    # SRTP_AES128_CM_HMAC_SHA1_80 in every call).
    checked = 0
    for call in CALLS:
        for side in ("a", "b"):
            if not call.has_capture(side):
                continue
            streams = {s.key.ssrc: s for s in scan_capture(call.capture(side), sdp=_browser_sdp(call),
                                                           keep_packets=False).streams}
            for d in call.directions():
                if d.receiver != side:
                    continue
                s = streams[d.ssrc]
                assert s.to_dict()["header_bytes_received"] == d.inbound["headerBytesReceived"], (call.name, side, d.kind)
                assert s.header_bytes >= 12 * d.media_packets_received
                if d.kind == "video":
                    rtx = streams[d.rtx_ssrc]
                    assert any("taken as padding-only" in n and "10-byte SRTP tag assumed" in n for n in rtx.notes)
                checked += 1
    assert checked == 26


def test_two_video_transceivers_are_told_apart_by_their_mid():
    # A real call with two video transceivers (vp8-two-video): two m=video sections with the same
    # payload types 96/97. Without a=ssrc lines only the MID header extension names each stream's
    # section. Truth: each receiving browser's inbound-rtp mid for that SSRC.
    call = webrtc_truth.call("vp8-two-video")
    seen = set()
    for side in ("b",):
        for texts in (_sdp_text(call), _sdp_text(call, ssrc_lines=False)):
            streams = _matched(call, side, texts)
            for d in call.directions():
                if d.receiver != side or d.kind != "video":
                    continue
                note = _section_note(streams[d.ssrc])
                assert note is not None and f"(mid {d.inbound['mid']}), matched by MID" in note, note
                seen.add(d.inbound["mid"])
        blind = _matched(call, side, _sdp_text(call, ssrc_lines=False, mid_extmap=False))
        assert all(_section_note(blind[d.ssrc]) is None for d in call.directions()
                   if d.receiver == side and d.kind == "video")
    assert seen == {"1", "2"}
