"""SIP message and SDP parsing (qoe.rtp.sip) on messages written from RFC examples.

The INVITE and 200 OK below follow RFC 3261 §24.2 (Alice calls Bob) and RFC 4566 §5's
example session description, with documentation addresses.
"""

from __future__ import annotations

import pytest

from qoe.rtp.sip import group_calls, parse_sdp, parse_sip

SDP_OFFER = (
    "v=0\r\no=alice 2890844526 2890844526 IN IP4 192.0.2.101\r\ns=-\r\nc=IN IP4 192.0.2.101\r\nt=0 0\r\n"
    "m=audio 49172 RTP/AVP 0 8 97 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:97 iLBC/8000\r\n"
    "a=rtpmap:101 telephone-event/8000\r\na=ptime:30\r\na=sendrecv\r\n"
    "m=video 51372 RTP/AVP 31\r\nc=IN IP4 192.0.2.102/127\r\na=rtpmap:31 H261/90000\r\na=rtcp:53020\r\n"
)

INVITE = (
    "INVITE sip:bob@biloxi.example.com SIP/2.0\r\n"
    "Via: SIP/2.0/UDP pc33.atlanta.example.com;branch=z9hG4bK776asdhds\r\n"
    "Max-Forwards: 70\r\n"
    "To: Bob <sip:bob@biloxi.example.com>\r\n"
    "From: Alice <sip:alice@atlanta.example.com>;tag=1928301774\r\n"
    "Call-ID: a84b4c76e66710@pc33.atlanta.example.com\r\n"
    "CSeq: 314159 INVITE\r\n"
    "Contact: <sip:alice@pc33.atlanta.example.com>\r\n"
    "Subject: a header folded\r\n  over two lines\r\n"
    "Content-Type: application/sdp\r\n"
    f"Content-Length: {len(SDP_OFFER)}\r\n\r\n{SDP_OFFER}"
)

OK = (
    "SIP/2.0 200 OK\r\n"
    "v: SIP/2.0/UDP pc33.atlanta.example.com;branch=z9hG4bK776asdhds\r\n"
    "t: Bob <sip:bob@biloxi.example.com>;tag=a6c85cf\r\n"
    "f: Alice <sip:alice@atlanta.example.com>;tag=1928301774\r\n"
    "i: a84b4c76e66710@pc33.atlanta.example.com\r\n"
    "CSeq: 314159 INVITE\r\n"
    "c: application/sdp\r\n"
    "l: 131\r\n\r\n"
    "v=0\r\no=bob 1 1 IN IP4 198.51.100.7\r\ns=-\r\nc=IN IP4 198.51.100.7\r\nt=0 0\r\n"
    "m=audio 3456 RTP/AVP 8\r\na=rtpmap:8 PCMA/8000\r\na=ptime:20\r\nGARBAGE AFTER CONTENT-LENGTH"
)


def test_sdp_media_sections():
    sd = parse_sdp(SDP_OFFER)
    audio, video = sd.media
    assert sd.origin.startswith("alice") and sd.address == "192.0.2.101"
    assert (audio.media, audio.address, audio.port, audio.protocol) == ("audio", "192.0.2.101", 49172, "RTP/AVP")
    assert audio.payload_types == (0, 8, 97, 101)
    assert audio.encoding(97) == ("iLBC", 8000) and audio.encoding(8) is None  # static type, no rtpmap
    assert (audio.ptime_ms, audio.direction, audio.rtcp_port) == (30.0, "sendrecv", None)
    assert (video.address, video.port, video.encoding(31), video.rtcp_port) == ("192.0.2.102", 51372, ("H261", 90000), 53020)


def test_invite_request():
    m = parse_sip(INVITE.encode(), frame=3, time_ns=5, src="192.0.2.101", sport=5060, dst="198.51.100.7", dport=5060)
    assert (m.method, m.status, m.call_id, m.cseq, m.cseq_method) == (
        "INVITE", None, "a84b4c76e66710@pc33.atlanta.example.com", 314159, "INVITE")
    assert (m.from_uri, m.to_uri) == ("sip:alice@atlanta.example.com", "sip:bob@biloxi.example.com")
    assert (m.frame, m.time_ns, m.src) == (3, 5, "192.0.2.101")
    assert m.sdp.media[0].port == 49172


def test_response_with_compact_headers_and_content_length():
    m = parse_sip(OK.encode())
    assert (m.method, m.status, m.reason, m.call_id, m.cseq_method) == (
        None, 200, "OK", "a84b4c76e66710@pc33.atlanta.example.com", "INVITE")
    (audio,) = m.sdp.media
    assert (audio.address, audio.port, audio.encoding(8), audio.ptime_ms) == ("198.51.100.7", 3456, ("PCMA", 8000), 20.0)


@pytest.mark.parametrize("data", [b"", b"\x80\x08" + bytes(30), b"HTTP/1.1 200 OK\r\n\r\n", b"FOO sip:x SIP/2.0\r\n\r\n"])
def test_not_sip(data):
    assert parse_sip(data) is None


def _msg(text, t, src="192.0.2.101", dst="198.51.100.7"):
    return parse_sip(text.encode(), time_ns=t, src=src, dst=dst)


def test_calls_grouped_by_call_id():
    bye = INVITE.replace("INVITE sip", "BYE sip").replace("314159 INVITE", "314160 BYE").split("Content-Type")[0] + "\r\n"
    other = INVITE.replace("a84b4c76e66710", "zzz").replace("49172", "40000")
    ringing = OK.replace("200 OK", "180 Ringing").split("c: application")[0] + "l: 0\r\n\r\n"
    calls = group_calls([_msg(INVITE, 10), _msg(ringing, 15, "198.51.100.7", "192.0.2.101"),
                         _msg(OK, 30, "198.51.100.7", "192.0.2.101"), _msg(other, 40), _msg(bye, 90)])
    assert [c.call_id.split("@")[0] for c in calls] == ["a84b4c76e66710", "zzz"]
    c = calls[0]
    assert (c.status, c.invite_ns, c.answer_ns, c.end_ns, c.messages) == (200, 10, 30, 90, 4)
    assert c.setup_s == pytest.approx(20e-9)
    assert [(m.address, m.port) for m in c.media] == [("192.0.2.101", 49172), ("192.0.2.102", 51372), ("198.51.100.7", 3456)]
    assert (calls[1].status, calls[1].answer_ns, calls[1].offer[0].port) == (None, None, 40000)
    assert c.to_dict()["answer"] == "198.51.100.7:3456/8"


def test_late_offer_in_the_answer():
    invite = INVITE.split("Content-Type")[0] + "Content-Length: 0\r\n\r\n"
    ack = INVITE.replace("INVITE sip", "ACK sip").replace("314159 INVITE", "314159 ACK").replace("49172", "49999")
    (c,) = group_calls([_msg(invite, 1), _msg(OK, 2, "198.51.100.7", "192.0.2.101"), _msg(ack, 3)])
    assert [m.port for m in c.offer] == [3456] and [m.port for m in c.answer] == [49999, 51372]


@pytest.mark.parametrize("name", ["qoe.rtp.sip", "qoe.rtp"])
def test_examples_run_as_doctests(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
