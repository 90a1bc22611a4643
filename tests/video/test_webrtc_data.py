"""The WebRTC call samples (data/video/webrtc) are what their README says they are.

Checked with dpkt and the stored files only (no qoe): every call has its truth files, the
captures hold only the call (one BUNDLEd 5-tuple, RFC 7983's STUN/DTLS/RTP ranges), the SDPs
announce the SSRCs the browsers report, and the folder fits its size budget.
"""

from __future__ import annotations

import re
from pathlib import Path

import dpkt
import pytest

from video import webrtc_truth as truth

FOLDER = truth.CALLS.parent
# issue 23: "keep it small"; the helpers' data budgets for this folder (5.7 MB, then 3 MB more for
# the VP9 SVC and two-video calls)
BUDGET_BYTES = 8_800_000
CALLS = [pytest.param(c, id=c.name) for c in truth.all_calls()]


def test_folder_fits_its_budget():
    size = sum(p.stat().st_size for p in FOLDER.rglob("*") if p.is_file())
    assert 0 < size < BUDGET_BYTES


@pytest.mark.parametrize("call", CALLS)
def test_each_call_has_its_truth_files_and_is_in_the_readme(call):
    names = {p.name for p in call.path.iterdir()}
    assert {"b.pcap", "offer.sdp", "answer.sdp", "stats_a.json.gz", "stats_b.json.gz", "call.json"} <= names
    assert ("forwarder.jsonl" in names) == (call.condition in ("loss", "reorder"))
    assert ("iperf3.json" in names) == (call.condition == "bulk")
    assert f"| `{call.name}` |" in (FOLDER / "README.md").read_text()
    assert call.series("a")[-1]["label"] == call.series("b")[-1]["label"] == "final"
    assert call.codec.lower() == call.direction("a", "video").codec["mimeType"].lower()


@pytest.mark.parametrize(("call", "side"), [pytest.param(c, s, id=f"{c.name}-{s}.pcap") for c in truth.all_calls()
                                            for s in "ab" if c.has_capture(s)])
def test_capture_holds_only_the_call(call, side):
    """One UDP 5-tuple between the peers; every datagram STUN (0-3), DTLS (20-63) or RTP/RTCP (128-191), RFC 7983 §7."""
    tuples, first_bytes = set(), set()
    with open(call.capture(side), "rb") as f:
        for _, buf in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            assert isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.udp.UDP)
            ends = sorted([(dpkt.utils.inet_to_str(ip.src), ip.data.sport), (dpkt.utils.inet_to_str(ip.dst), ip.data.dport)])
            tuples.add(tuple(ends))
            first_bytes.add(bytes(ip.data.data)[0])
    assert len(tuples) == 1
    assert {addr for addr, _ in next(iter(tuples))} == set(truth.PEERS.values())
    assert all(b <= 3 or 20 <= b <= 63 or 128 <= b <= 191 for b in first_bytes)
    assert any(b <= 3 for b in first_bytes)  # STUN seen
    assert any(20 <= b <= 63 for b in first_bytes) == call.encrypted  # DTLS seen, but in the plain call


@pytest.mark.parametrize("call", CALLS)
def test_sdp_announces_the_ssrcs_getstats_reports(call):
    """The offer (A) and the answer (B) carry each sender's a=ssrc-group:FID <media> <rtx> (RFC 5576, RFC 4588)."""
    for sdp, sender in ((call.offer, "a"), (call.answer, "b")):
        text = sdp.read_text()
        assert "a=group:BUNDLE 0 1" in text
        d = call.direction(sender, "video")
        assert re.search(rf"^a=ssrc-group:FID {d.ssrc} {d.rtx_ssrc}\r?$", text, re.M)
        audio = call.direction(sender, "audio")
        assert re.search(rf"^a=ssrc:{audio.ssrc} ", text, re.M)
        assert re.search(rf"^a=rtpmap:{d.codec['payloadType']} ", text, re.M)


def test_readme_lists_no_call_that_is_absent():
    listed = set(re.findall(r"^\| `([a-z0-9-]+)` \|", (FOLDER / "README.md").read_text(), re.M))
    assert listed == {c.name for c in truth.all_calls()}
