"""RFC 8285 header extensions: the element parser, and abs-send-time / transport-wide-cc on real calls.

Truths: RFC 8285's own layouts (§4.2, §4.3) for the parser; for the WebRTC calls of
data/video/webrtc/calls, the browsers' SDP (``a=extmap``: which ID is which), the
transport-wide-cc definition (one counter for every stream the sender sends on the
transport, draft-holmer-rmcat-transport-wide-cc-extensions-01 §2) and the true one-way
delays from the captures at both peers (same host clock; tests/video/webrtc_truth.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from qoe.rtp import parse_sdp, scan_capture
from qoe.rtp.extensions import (
    ABS_SEND_TIME,
    SDES_MID,
    TRANSPORT_WIDE_CC,
    extension_elements,
    read_header_extensions,
)
from video import webrtc_truth

HAVE_CALLS = webrtc_truth.CALLS.is_dir()
needs_calls = pytest.mark.skipif(not HAVE_CALLS, reason="no WebRTC calls in data/video/webrtc/calls")


def test_one_byte_form_with_padding_and_the_reserved_id():
    # RFC 8285 §4.2: ID 4 bits, length - 1 in 4 bits; 0 is a padding byte; 15 stops the parse.
    block = bytes([0x10, 0xAA, 0x00, 0x00, 0x22, 1, 2, 3, 0xF0, 0x51, 9, 9])
    assert extension_elements(0xBEDE, block) == [(1, b"\xaa"), (2, b"\x01\x02\x03")]


def test_two_byte_form_with_empty_and_long_elements():
    # RFC 8285 §4.3: profile 0x100 + 4 appbits; ID and length one byte each; length 0 allowed.
    block = bytes([0x07, 0x00, 0x00, 0xFE, 0x03, 1, 2, 3]) + bytes([0x10, 20]) + bytes(range(20))
    assert extension_elements(0x1003, block) == [(7, b""), (254, b"\x01\x02\x03"), (16, bytes(range(20)))]


def test_other_profiles_and_cut_elements():
    assert extension_elements(0x1234, b"\x10\xaa") == []  # not RFC 8285 (RFC 3550 §5.3.1 profile-specific)
    assert extension_elements(0xBEDE, bytes([0x23, 1, 2])) == []  # announces 4 bytes, holds 2


@needs_calls
def test_names_inferred_without_sdp_are_the_browsers_extmap():
    c = webrtc_truth.call("vp8-bulk")
    scan = scan_capture(c.capture("b"))
    offer = {i: uri for m in parse_sdp(c.offer.read_text()).media for i, uri in m.extmap.items()}
    media = {d.ssrc for d in c.directions()}  # the RTX stream's 8 probes are too few to infer from
    for s, e in zip(scan.streams, read_header_extensions(c.capture("b"), scan.streams)):
        if s.key.ssrc not in media:
            continue
        for uri in (ABS_SEND_TIME, TRANSPORT_WIDE_CC, SDES_MID):
            ident = e.id_of(uri)
            assert ident is not None and offer[ident] == uri, (s.key, uri, e.names)
            assert e.names[ident].startswith("inferred: ")
        assert e.mid() in {m.mid for m in parse_sdp(c.offer.read_text()).media}


@needs_calls
def test_given_sdp_names_the_ids():
    c = webrtc_truth.call("vp8-clean")
    media = parse_sdp(c.answer.read_text()).media
    scan = scan_capture(c.capture("b"))
    for e in read_header_extensions(c.capture("b"), scan.streams, sdp=media):
        assert e.id_of(ABS_SEND_TIME) is not None and not e.names[e.id_of(ABS_SEND_TIME)].startswith("inferred")


@needs_calls
def test_transport_wide_sequence_is_one_counter_over_the_senders_streams():
    # At B's interface, B's own packets are as sent: the transport-wide numbers of all of
    # B's streams together are consecutive (draft-holmer §2: one counter per transport).
    c = webrtc_truth.call("vp8-clean")
    scan = scan_capture(c.capture("b"))
    ext = read_header_extensions(c.capture("b"), scan.streams)
    mine = np.concatenate([e.transport_seq() for s, e in zip(scan.streams, ext) if s.key.src == webrtc_truth.PEERS["b"]])
    mine = np.sort(mine[mine >= 0])
    assert mine.size > 500
    assert np.unique(mine).size == mine.size
    # the numbers between are B's RTX padding probes, too few (5-6 packets, timestamp 0
    # first) for the stream heuristic: counted from the capture with dpkt alone
    found = {s.key.ssrc for s in scan.streams}
    headers = webrtc_truth.rtp_headers(c.capture("b"))
    rtx = [d.rtx_ssrc for d in c.directions() if d.sender == "b" and d.rtx_ssrc and d.rtx_ssrc not in found]
    assert mine[-1] - mine[0] + 1 == mine.size + sum(len(headers[x]) for x in rtx)


@needs_calls
def test_abs_send_time_gives_the_true_one_way_delay_variation():
    # vp8-bulk: A's video waits up to ~0.77 s in the uplink buffer. Delay variation from
    # one capture, (arrival - first arrival) - (abs-send-time - first), against the true
    # one-way delay from both captures, each relative to its first packet.
    TOL_MS = 2.0  # the sender stamps abs-send-time at its pacer, a little before A's interface
    c = webrtc_truth.call("vp8-bulk")
    d = c.direction("a", "video")
    scan = scan_capture(c.capture("b"))
    (s,) = [s for s in scan.streams if s.key.ssrc == d.ssrc]
    (e,) = read_header_extensions(c.capture("b"), [s])
    send = e.abs_send_time_s()
    est = (e.arrival_ns - e.arrival_ns[0]) / 1e6 - (send - send[0]) * 1e3
    owd = webrtc_truth.one_way_delays_ms(c, d)
    true = np.array([owd.get(q, np.nan) for q in s.packets.seq.tolist()])
    ok = ~np.isnan(true)
    assert ok.sum() >= 0.95 * len(s.packets)
    err = (est[ok] - est[ok][0]) - (true[ok] - true[ok][0])
    assert np.max(np.abs(err)) < TOL_MS
    assert np.max(true[ok]) - np.min(true[ok]) > 500  # the case is a real queue
