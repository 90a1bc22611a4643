"""Streams end (SIP BYE, RTCP BYE, silence past ``stream_timeout_s``) and the scan lets them go (issue 25).

Synthetic captures built here with dpkt (the truth is their construction: how many packets
each stream has, when each call ends); the statistics of the streams a streaming scan hands
on are compared with those of :func:`qoe.rtp.scan_capture` on the whole capture, which
``tests/rtp/test_rtp_tshark.py`` compares with tshark.
"""

from __future__ import annotations

import socket
import struct

import dpkt
import pytest

from qoe.errors import InputError
from qoe.rtp import BYE_GRACE_S, STREAM_TIMEOUT_S, iter_scan, scan_capture

A, B = "192.0.2.1", "198.51.100.2"
T0 = 1_700_000_000.0


def rtp(seq, ts, ssrc, pt=0, payload=b"\xff" * 160):
    return struct.pack("!BBHII", 0x80, pt, seq & 0xFFFF, ts & 0xFFFFFFFF, ssrc) + payload


def frame(src, sport, dst, dport, data):
    u = dpkt.udp.UDP(sport=sport, dport=dport, data=data)
    u.ulen = len(u)
    ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=17, data=u)
    ip.len = len(ip)
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x0800, data=ip))


def write(path, frames):
    with open(path, "wb") as fh:
        w = dpkt.pcap.Writer(fh, nano=True)
        for t, b in frames:
            w.writepkt(b, ts=t)
    return str(path)


def voice(n, ssrc, *, src=A, sport=5004, dst=B, dport=5006, t0=T0, pt=0, seq0=1000, ts0=5000):
    """n G.711 packets of 20 ms (160 ticks at 8 kHz), 20 ms apart."""
    return [(t0 + 0.02 * i, frame(src, sport, dst, dport, rtp(seq0 + i, ts0 + 160 * i, ssrc, pt))) for i in range(n)]


def sip_message(start, call_id, cseq, sdp=None):
    hdr = [start, f"Via: SIP/2.0/UDP {A}:5060;branch=z9hG4bK-1", f'From: "Alice" <sip:alice@{A}>;tag=1',
           f"To: <sip:bob@{B}>", f"Call-ID: {call_id}", f"CSeq: {cseq}"]
    body = b"" if sdp is None else sdp.encode()
    if sdp is not None:
        hdr.append("Content-Type: application/sdp")
    hdr.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(hdr) + "\r\n\r\n").encode() + body


def sdp(addr, port, pts, maps):
    lines = ["v=0", f"o=- 1 1 IN IP4 {addr}", "s=-", f"c=IN IP4 {addr}", "t=0 0",
             f"m=audio {port} RTP/AVP {' '.join(map(str, pts))}"] + [f"a=rtpmap:{m}" for m in maps] + ["a=ptime:20"]
    return "\r\n".join(lines) + "\r\n"


def _call(cid: str, t0: float, port_a: int, port_b: int, n: int, *, bye: bool = True) -> list:
    """A SIP call from A to B with SDP, n packets each way (20 ms apart), a BYE 50 ms after the last."""
    out = [
        (t0, frame(A, 5060, B, 5060, sip_message(f"INVITE sip:bob@{B} SIP/2.0", cid, "1 INVITE",
                                                 sdp(A, port_a, [0], ["0 PCMU/8000"])))),
        (t0 + 0.05, frame(B, 5060, A, 5060, sip_message("SIP/2.0 200 OK", cid, "1 INVITE",
                                                       sdp(B, port_b, [0], ["0 PCMU/8000"])))),
        (t0 + 0.06, frame(A, 5060, B, 5060, sip_message(f"ACK sip:bob@{B} SIP/2.0", cid, "1 ACK"))),
    ]
    out += voice(n, 0x100 + port_a, sport=port_a, dport=port_b, t0=t0 + 0.1, pt=0)
    out += voice(n, 0x200 + port_b, src=B, sport=port_b, dst=A, dport=port_a, t0=t0 + 0.101, pt=0)
    if bye:
        out.append((t0 + 0.15 + 0.02 * n, frame(A, 5060, B, 5060, sip_message(f"BYE sip:bob@{B} SIP/2.0", cid, "2 BYE"))))
    return out


def _capture(tmp_path, frames, name="c.pcap") -> str:
    return write(tmp_path / name, sorted(frames, key=lambda f: f[0]))


def test_a_call_ended_by_sip_bye_is_handed_on_while_the_capture_goes_on(tmp_path):
    # call 1: 1 s, BYE at ~1.2 s; call 2 starts at 0.5 s and lasts 10 s (no BYE: the capture cuts it)
    path = _capture(tmp_path, _call("one@x", T0, 7000, 9000, 50) + _call("two@x", T0 + 0.5, 7002, 9002, 500, bye=False))
    stream = iter_scan(path, batch_size=64)
    got = []
    for streams, calls in stream:
        got.append(([s.key.ssrc for s in streams], [c.call_id for c in calls], stream.live_streams,
                    stream.ended_streams, stream.tracked_flows))
    # call 1 comes first, its two streams released while call 2's two are still tracked
    assert got[0] == ([0x100 + 7000, 0x200 + 9000], ["one@x"], 2, 2, 2)
    assert got[1][:2] == ([0x100 + 7002, 0x200 + 9002], ["two@x"])
    assert stream.live_streams == 0 and stream.tracked_flows == 0 and stream.waiting_streams == 0
    assert stream.scan is not None and stream.scan.streams == ()
    # the same streams and statistics as a scan of the whole capture
    whole = scan_capture(path, batch_size=64)  # (other batch sizes: the same floats up to rounding)
    again = [s for streams, _ in iter_scan(path, batch_size=64) for s in streams]
    assert [(s.key, s.stats, s.call_id, s.codec, s.active_at_end) for s in again] == \
        [(s.key, s.stats, s.call_id, s.codec, s.active_at_end) for s in whole.streams]
    assert [s.stats.packets for s in again] == [50, 50, 500, 500]
    assert [s.active_at_end for s in again] == [False, False, True, True]


def test_the_bye_grace_and_the_timeout(tmp_path):
    # a stream without SIP, then 2.5 s of silence while another stream goes on: not ended
    # (no BYE, 2.5 s < 25 s); the same after an RTCP BYE of its SSRC: ended (2.5 s > 2 s)
    assert BYE_GRACE_S == 2.0 and STREAM_TIMEOUT_S == 25.0
    base = voice(50, 0x11, sport=6000, dport=6002) + voice(300, 0x22, sport=6010, dport=6012, t0=T0 + 0.5)
    bye = struct.pack("!BBHI", 0x81, 203, 1, 0x11)  # RFC 3550 §6.6: BYE, one SSRC
    for frames, ended in ((base, 0), (base + [(T0 + 1.01, frame(A, 6001, B, 6003, bye))], 1)):
        stream = iter_scan(_capture(tmp_path, frames), batch_size=32)
        first = next(stream)
        assert (first[0][0].key.ssrc, stream.ended_streams) == (0x11, ended)
        # with the BYE, 0x11 comes while 0x22 is still tracked; without, at the end of the capture
        assert stream.live_streams == ended
        list(stream)


def test_a_stream_that_resumes_after_the_timeout_is_a_second_segment(tmp_path):
    # 50 packets, 30 s of silence, 50 more (sequence numbers and timestamps go on)
    first = voice(50, 0x33)
    second = [(t + 31.0, f) for t, f in voice(50, 0x33, seq0=1050, ts0=5000 + 160 * 50 + 8000 * 31)]
    path = _capture(tmp_path, first + second + voice(4, 0x44, sport=6100, t0=T0 + 40))
    for batch in (16, 65536):  # the silence across batches, or inside one
        segs = [s for s in scan_capture(path, batch_size=batch).streams if s.key.ssrc == 0x33]
        assert [(s.stats.packets, s.stats.lost) for s in segs] == [(50, 0), (50, 0)]
        assert segs[0].key == segs[1].key and segs[1].stats.first_ns > segs[0].stats.last_ns + 30e9
    # no timeout (or one longer than the silence): one stream of 100 packets, as before
    for timeout in (None, 60.0):
        (whole,) = [s for s in scan_capture(path, batch_size=16, stream_timeout_s=timeout).streams if s.key.ssrc == 0x33]
        assert whole.stats.packets == 100
    # the streaming scan gives the same two segments, each in its own group
    groups = [[s.stats.packets for s in streams if s.key.ssrc == 0x33] for streams, _ in iter_scan(path, batch_size=16)]
    assert [g for g in groups if g] == [[50], [50]]


def test_a_timeout_must_be_positive(tmp_path):
    path = _capture(tmp_path, voice(10, 0x55))
    with pytest.raises(InputError, match="stream_timeout_s"):
        scan_capture(path, stream_timeout_s=0)
    with pytest.raises(InputError, match="stream_timeout_s"):
        iter_scan(path, stream_timeout_s=None)


def test_without_packets_only_flows_of_a_clockless_type_are_kept_for_the_clock(tmp_path):
    # (speed, issue 25) keep_packets=False keeps packet headers only for streams whose payload
    # type has no clock (a dynamic type without SDP), for the clock inference: a G.711 stream
    # (static type 0, 8000 Hz: RFC 3551 Table 4) needs none. A stream that switches to a
    # dynamic type after its first packets were taken (here the 40th) would be inferred from part of its packets: it is not,
    # and a note says so; with keep_packets=True it is inferred (48 kHz, 960 ticks per 20 ms).
    static = voice(60, 0x61, sport=6200)
    switch = [(T0 + 0.02 * i, frame(A, 6300, B, 6302, rtp(1000 + i, 5000 + (160 * i if i < 40 else 6400 + 960 * (i - 40)),
                                                         0x62, pt=0 if i < 40 else 111))) for i in range(200)]
    path = _capture(tmp_path, static + switch)
    light = {s.key.ssrc: s for s in scan_capture(path, keep_packets=False, batch_size=16).streams}
    full = {s.key.ssrc: s for s in scan_capture(path, keep_packets=True, batch_size=16).streams}
    assert light[0x61].stats == full[0x61].stats and light[0x61].clock_rate == 8000
    assert full[0x62].payload_type == 111 and full[0x62].clock_rate == 48000
    assert light[0x62].clock_rate is None and any("clock rate not inferred" in n for n in light[0x62].notes)


def test_qoe_streams_takes_the_timeout(tmp_path):
    from click.testing import CliRunner

    from qoe_cli.main import cli

    first = voice(50, 0x33)
    second = [(t + 31.0, f) for t, f in voice(50, 0x33, seq0=1050, ts0=5000 + 160 * 50 + 8000 * 31)]
    path = _capture(tmp_path, first + second)
    rows = {}
    for timeout in ("25", "60"):
        res = CliRunner().invoke(cli, ["streams", path, "--format", "csv", "--stream-timeout-s", timeout])
        assert res.exit_code == 0, res.output
        rows[timeout] = res.stdout.strip().splitlines()[1:]
    assert (len(rows["25"]), len(rows["60"])) == (2, 1)  # two segments, or one stream of 100 packets
    # the default reads ahead when the process has two cores: either way, the same streams
    for flag in ("--read-ahead", "--no-read-ahead"):
        other = CliRunner().invoke(cli, ["streams", path, "--format", "csv", flag])
        assert other.exit_code == 0 and other.stdout.strip().splitlines()[1:] == rows["25"], flag


def test_a_scan_reading_ahead_gives_the_same_streams_and_calls(tmp_path):
    # read_ahead=True reads and prepares batches in a second thread (qoe.capture.read_ahead):
    # the streams, their statistics and the calls handed on must be those of the plain scan,
    # also with a stream that resumes after the timeout (a split of a batch) and small batches
    first = voice(50, 0x33)
    second = [(t + 31.0, f) for t, f in voice(50, 0x33, seq0=1050, ts0=5000 + 160 * 50 + 8000 * 31)]
    calls = _call("one@x", T0 + 40, 7000, 9000, 50) + _call("two@x", T0 + 40.5, 7002, 9002, 120, bye=False)
    path = _capture(tmp_path, first + second + voice(4, 0x44, sport=6100, t0=T0 + 40) + calls)
    for batch in (7, 64, 65536):
        plain = scan_capture(path, batch_size=batch)
        for how in (True, None):  # None: when there is a second core
            ahead = scan_capture(path, batch_size=batch, read_ahead=how)
            assert [s.to_dict() for s in ahead.streams] == [s.to_dict() for s in plain.streams]
        assert len(plain.streams) == 7 and [c.call_id for c in ahead.calls] == [c.call_id for c in plain.calls]

        def handed(**kw):  # type: ignore[no-untyped-def]
            return [([s.to_dict() for s in streams], [c.call_id for c in cs]) for streams, cs in iter_scan(path, **kw)]

        assert handed(batch_size=batch, read_ahead=True) == handed(batch_size=batch)
