"""An RTP video stream whose payloads the capture's snapshot length cut is not decoded: its
packet facts stay, a note says why (it was decoded from the cut NAL units: PSNR 12.95 dB with
"the decoder rejected 143 packet(s)" against 15.26 dB for the whole capture)."""

from __future__ import annotations

from pathlib import Path

import dpkt
import pytest
from snapshot_cut import cut_capture

import qoe
from qoe.video import StreamFacts, VideoScore

VIDEO = Path(__file__).resolve().parents[2] / "data" / "video"


def test_a_cut_rtp_video_stream_is_not_decoded_and_says_why(tmp_path):
    source = VIDEO / "captures" / "h264-down-b8_client.pcap"
    cut = tmp_path / "cut.pcap"
    cut_capture(source, cut, 100)
    sdp = VIDEO / "captures" / "h264-down-b8.sdp"
    whole = qoe.score(source, reference=VIDEO / "reference" / "clip.ts", sdp=sdp)
    with pytest.warns(Warning, match="snap length"):
        report = qoe.score(cut, reference=VIDEO / "reference" / "clip.ts", sdp=sdp)
    (w,) = whole.results
    (c,) = report.results
    assert isinstance(w, VideoScore) and w.facts.frames_decoded > 0
    assert isinstance(c, StreamFacts) and c.frames_decoded == 0 and c.packets_lost == w.facts.packets_lost
    assert any("not decoded: the capture's snapshot length cut" in n for n in report.note_lines())


def test_a_cut_mpeg_ts_flow_is_named_as_the_reason_nothing_was_found(tmp_path):
    """MPEG-TS in plain UDP is told by whole 188-byte packets (ISO/IEC 13818-1 §2.4.3.2): cut at
    100 bytes, no datagram shows that, and the capture scores nothing; the warning says the
    snapshot length cut its UDP datagrams (it said only "nothing scorable found"). The count is
    the capture's UDP datagrams longer than the 58 bytes of payload 100 bytes leave (dpkt)."""
    source = VIDEO / "captures" / "udpts-down-b64_client.pcap"
    cut = tmp_path / "cut.pcap"
    cut_capture(source, cut, 100)
    with source.open("rb") as f:
        udp = [dpkt.ethernet.Ethernet(buf).data.data for _, buf in dpkt.pcap.Reader(f)]
    udp = [u for u in udp if isinstance(u, dpkt.udp.UDP)]
    longer = sum(1 for u in udp if len(u.data) > 100 - 42)
    assert qoe.score(source).results
    with pytest.warns(Warning, match=f"snapshot length cut {longer} of its {len(udp)} UDP datagrams"):
        report = qoe.score(cut)
    assert not report.results


def test_rtp_mpeg_ts_header_facts_take_each_timestamp_group_whole():
    """rtpts-down-b64_server.pcap: the sender's side of an MPEG-TS-over-RTP stream, captured with
    a 96-byte snapshot length (so not decoded). RFC 2250 §2 sets the marker bit only where the
    timestamp is discontinuous, never at a frame's end, so the header facts take each RTP
    timestamp group on its own: all of them complete at the sender (they were all incomplete,
    for want of a marker). The count of groups is the distinct RTP timestamps read with dpkt."""
    source = VIDEO / "captures" / "rtpts-down-b64_server.pcap"
    stamps = set()
    with source.open("rb") as f:
        for _, buf in dpkt.pcap.Reader(f):
            udp = dpkt.ethernet.Ethernet(buf).data.data
            if isinstance(udp, dpkt.udp.UDP) and udp.sport == 6004 and len(udp.data) >= 12:
                stamps.add(int.from_bytes(bytes(udp.data[4:8]), "big"))
    with pytest.warns(Warning, match="snap length"):
        (facts,) = qoe.score(source).results
    assert isinstance(facts, StreamFacts) and facts.packets_lost == 0
    h = facts.headers
    assert h.frames_received == len(stamps) == h.frames_complete and h.frames_incomplete == 0
