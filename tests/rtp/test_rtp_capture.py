"""Stream discovery on captures written here with dpkt: heuristic RTP, RTCP, SIP/SDP.

Every capture is built packet by packet in the test, so the expected values (frame
numbers, payload bytes, which flows are streams, RTT) follow from what was written.
"""

from __future__ import annotations

import gc
import os
import pickle
import socket
import struct
import tempfile
import warnings

import dpkt
import numpy as np
import pytest

from qoe.errors import QoEWarning
from qoe.rtp import RtpPackets, find_streams, make_packets, parse_rtcp, parse_rtp_header, parse_sdp, rtp_stats, scan_capture

A, B = "192.0.2.1", "198.51.100.2"
T0 = 1_700_000_000.0


def rtp(seq, ts, ssrc, pt=8, marker=False, payload=b"\xd5" * 160, csrc=(), ext=None, pad=0):
    b0 = 0x80 | len(csrc) | (0x10 if ext is not None else 0) | (0x20 if pad else 0)
    out = struct.pack("!BBHII", b0, (0x80 if marker else 0) | pt, seq & 0xFFFF, ts & 0xFFFFFFFF, ssrc)
    out += b"".join(struct.pack("!I", c) for c in csrc)
    if ext is not None:  # RFC 3550 §5.3.1: profile, length in 32-bit words, data
        out += struct.pack("!HH", 0xBEDE, len(ext) // 4) + ext
    out += payload
    if pad:
        out += b"\x00" * (pad - 1) + bytes([pad])
    return out


def frame(src, sport, dst, dport, data):
    u = dpkt.udp.UDP(sport=sport, dport=dport, data=data)
    u.ulen = len(u)
    ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=17, data=u)
    ip.len = len(ip)
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x0800, data=ip))


def write(path, frames, pcapng=False, nano=True):
    with open(path, "wb") as fh:
        w = dpkt.pcapng.Writer(fh) if pcapng else dpkt.pcap.Writer(fh, nano=nano)
        for t, b in frames:
            w.writepkt(b, ts=t)
    return str(path)


def voice(n, ssrc, *, src=A, sport=5004, dst=B, dport=5006, t0=T0, pt=8, seq0=1000, ts0=5000, **kw):
    return [(t0 + 0.02 * i, frame(src, sport, dst, dport, rtp(seq0 + i, ts0 + 160 * i, ssrc, pt, **kw))) for i in range(n)]


def sr(ssrc, ntp, rtp_ts=0, blocks=()):
    body = struct.pack("!IQIII", ssrc, ntp, rtp_ts, 10, 1600) + b"".join(blocks)
    return struct.pack("!BBH", 0x80 | len(blocks), 200, len(body) // 4) + body


def rr(ssrc, blocks):
    body = struct.pack("!I", ssrc) + b"".join(blocks)
    return struct.pack("!BBH", 0x80 | len(blocks), 201, len(body) // 4) + body


def block(ssrc, lsr, dlsr, fraction=0.25, cum=-3, highest=1049, jitter=40):
    return struct.pack("!IB", ssrc, int(fraction * 256)) + (cum & 0xFFFFFF).to_bytes(3, "big") + struct.pack(
        "!IIII", highest, jitter, lsr, dlsr)


def sdes(ssrc, cname=b"user@host"):
    chunk = struct.pack("!IBB", ssrc, 1, len(cname)) + cname + b"\x00"
    chunk += b"\x00" * (-len(chunk) % 4)
    return struct.pack("!BBH", 0x81, 202, len(chunk) // 4) + chunk


# ------------------------------------------------------------------------ headers


def test_header_with_csrc_extension_and_padding():
    payload = bytes(range(160))
    data = rtp(7, 960, 0x1234, pt=0, marker=True, payload=payload, csrc=(1, 2), ext=b"\x10\x20\x30\x40", pad=4)
    h = parse_rtp_header(data)
    assert (h.payload_type, h.marker, h.seq, h.timestamp, h.ssrc, h.csrc_count) == (0, True, 7, 960, 0x1234, 2)
    assert data[h.payload_start : h.payload_end] == payload


@pytest.mark.parametrize(
    "data",
    [b"\x80\x08\x00", bytes([0x40, 8]) + bytes(10), bytes([0x8F, 8]) + bytes(20), sr(1, 2)],
    ids=["short", "version1", "csrc-beyond-end", "rtcp-sr"],
)
def test_not_rtp(data):
    assert parse_rtp_header(data) is None


def test_rtcp_compound_sr_sdes():
    items = parse_rtcp(sr(0xAA, 0x1122334455667788, blocks=[block(0xBB, 0x33445566, 6554)]) + sdes(0xAA))
    assert [i["type"] for i in items] == [200, 202]
    b = items[0]["blocks"][0]
    assert (b["ssrc"], b["fraction_lost"], b["cumulative_lost"], b["lsr"], b["dlsr"]) == (0xBB, 0.25, -3, 0x33445566, 6554)
    assert parse_rtcp(rtp(1, 2, 3)) is None


# ------------------------------------------------------------------------ discovery


def test_heuristic_stream_table_and_payloads(tmp_path):
    payloads = [bytes([i]) * 160 for i in range(30)]
    frames = []
    for i in range(30):
        t = T0 + 0.02 * i
        frames.append((t, frame(A, 5004, B, 5006, rtp(100 + i, 160 * i, 0xCAFE, payload=payloads[i], csrc=(9,), pad=4 if i % 3 else 0))))
        if i % 10 == 0:  # non-RTP UDP in between: frame numbers must count it
            frames.append((t + 0.001, frame(A, 40000, B, 53, b"\x12\x34\x01\x00" + bytes(20))))
    path = write(tmp_path / "a.pcap", frames)
    (s,) = find_streams(path)
    assert str(s.key) == f"{A}:5004 -> {B}:5006 ssrc=0x0000cafe"
    assert (s.payload_type, s.codec, s.clock_rate, s.found_by, s.call_id) == (8, "PCMA", 8000, "heuristic", None)
    p = s.packets
    assert p.payloads == tuple(payloads)
    expected_frames = [i + 1 + (i // 10 + 1) - (1 if i % 10 == 0 else 0) for i in range(30)]
    assert p.frame.tolist() == expected_frames
    assert p.seq.tolist() == list(range(100, 130)) and p.ts_ext.tolist() == [160 * i for i in range(30)]
    assert abs(p.arrival_ns[1] - p.arrival_ns[0] - 20_000_000) < 1000  # dpkt writes float seconds
    # the scanned statistics are those of the table
    assert s.stats == rtp_stats(p, 8000)


def test_statistics_only_scan_gives_the_same_numbers(tmp_path):
    frames = voice(200, 1)
    frames = [f for i, f in enumerate(frames) if i % 17 != 5]
    path = write(tmp_path / "a.pcap", frames)
    full = scan_capture(path).streams[0]
    lean = scan_capture(path, keep_packets=False).streams[0]
    assert lean.packets is None and lean.stats == full.stats
    assert full.stats.lost == 12


def test_pcapng_and_small_batches_give_the_same_streams(tmp_path):
    frames = sorted(voice(100, 1) + voice(100, 2, src=B, sport=6000, dst=A, dport=6002, t0=T0 + 0.005), key=lambda f: f[0])
    a = scan_capture(write(tmp_path / "a.pcap", frames, nano=False), keep_packets=False)  # pcapng: µs too
    b = scan_capture(write(tmp_path / "a.pcapng", frames, pcapng=True), keep_packets=False, batch_size=7)
    for x, y in zip(a.streams, b.streams, strict=True):  # chunking changes float rounding only
        assert y.stats.to_dict() == pytest.approx(x.stats.to_dict(), rel=1e-12)
    assert [s.key.ssrc for s in a.streams] == [1, 2]


def test_ssrc_change_on_one_port_pair_makes_two_streams(tmp_path):
    frames = voice(50, 0x111) + voice(50, 0x222, t0=T0 + 1.0, seq0=7, ts0=99)
    streams = find_streams(write(tmp_path / "a.pcap", frames))
    assert [(s.key.ssrc, s.stats.packets, s.stats.lost) for s in streams] == [(0x111, 50, 0), (0x222, 50, 0)]


def test_rtcp_is_not_rtp_and_gives_round_trip_time(tmp_path):
    ntp = (3_900_000_000 << 32) | 0x80000000
    lsr = (ntp >> 16) & 0xFFFFFFFF
    frames = voice(100, 0xA)
    # SR from A on port+1 at t=0.5 s; RR from B at 0.9 s after holding it 0.1 s (DLSR
    # 6554/65536 s): RTT = 0.9 - 0.5 - 0.1 = 0.3 s (RFC 3550 §6.4.1).
    frames.append((T0 + 0.5, frame(A, 5005, B, 5007, sr(0xA, ntp) + sdes(0xA))))
    frames.append((T0 + 0.9, frame(B, 5007, A, 5005, rr(0xB, [block(0xA, lsr, 6554)]) + sdes(0xB))))
    # rtcp-mux (RFC 5761): RTCP on the RTP port itself
    frames.append((T0 + 1.0, frame(A, 5004, B, 5006, sr(0xA, ntp + (1 << 32)))))
    scan = scan_capture(write(tmp_path / "a.pcap", sorted(frames, key=lambda f: f[0])))
    assert [s.key.ssrc for s in scan.streams] == [0xA]
    assert scan.streams[0].stats.packets == 100 and scan.rtcp_packets == 3
    r = scan.streams[0].rtcp
    assert (r.sender_reports, r.reports, r.fraction_lost, r.cumulative_lost) == (2, 1, 0.25, -3)
    assert r.rtt_ms == pytest.approx((400.0 - 6554 / 65.536,), abs=1e-3)  # dpkt stores float seconds


def test_random_udp_and_dns_are_not_streams(tmp_path):
    rng = np.random.default_rng(0)
    frames = []
    for i in range(200):
        junk = bytes([0x80 | int(rng.integers(0, 16))]) + rng.bytes(100)  # looks like version 2
        frames.append((T0 + 0.01 * i, frame(A, 33333, B, 44444, junk)))
        frames.append((T0 + 0.01 * i + 0.001, frame(A, 40000 + i, B, 53, bytes([0x80, 0]) + rng.bytes(40))))
    path = write(tmp_path / "a.pcap", frames)
    with pytest.warns(QoEWarning, match="no RTP stream found in 400 UDP datagrams"):
        assert find_streams(path) == []


def test_a_dns_datagram_that_looks_like_rtp_before_a_stream(tmp_path):
    # A datagram to port 53 that parses as RTP version 2 is not tracked (it goes to the
    # scan's one "left out" flow); the streams after it are still found whole. The scan
    # used to fail here with an IndexError (the flow table's key arrays were shifted by one).
    frames = [(T0, frame(A, 40000, B, 53, rtp(1, 1, 7)))]
    frames += voice(40, 0x1111, t0=T0 + 0.01) + voice(40, 0x2222, src=B, sport=5006, dst=A, dport=5004, t0=T0 + 0.011)
    path = write(tmp_path / "a.pcap", frames)
    for batch_size in (4, 65536):
        streams = scan_capture(path, batch_size=batch_size).streams
        assert [(s.key.ssrc, s.stats.packets, s.stats.lost) for s in streams] == [(0x1111, 40, 0), (0x2222, 40, 0)]


def test_minimum_packet_count(tmp_path):
    path = write(tmp_path / "a.pcap", voice(3, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        assert find_streams(path) == []
    assert [s.stats.packets for s in find_streams(path, min_packets=2)] == [3]


def test_heavy_reordering_is_still_rtp(tmp_path):
    rng = np.random.default_rng(1)
    frames = [(T0 + 0.02 * i + rng.uniform(0, 0.05), f) for i, (_, f) in enumerate(voice(100, 9))]
    (s,) = find_streams(write(tmp_path / "a.pcap", sorted(frames, key=lambda f: f[0])))
    assert s.stats.packets == 100 and s.stats.out_of_order > 10


# ------------------------------------------------------------------------ SIP/SDP


def sip_message(start, call_id, cseq, sdp=None, compact=False):
    hdr = [start, f"Via: SIP/2.0/UDP {A}:5060;branch=z9hG4bK-1",
           f'{"f" if compact else "From"}: "Alice" <sip:alice@{A}>;tag=1',
           f'{"t" if compact else "To"}: <sip:bob@{B}>',
           f'{"i" if compact else "Call-ID"}: {call_id}', f"CSeq: {cseq}"]
    body = b""
    if sdp is not None:
        body = sdp.encode()
        hdr.append(f'{"c" if compact else "Content-Type"}: application/sdp')
    hdr.append(f'{"l" if compact else "Content-Length"}: {len(body)}')
    return ("\r\n".join(hdr) + "\r\n\r\n").encode() + body


def sdp(addr, port, pts, maps):
    lines = ["v=0", f"o=- 1 1 IN IP4 {addr}", "s=-", f"c=IN IP4 {addr}", "t=0 0",
             f"m=audio {port} RTP/AVP {' '.join(map(str, pts))}"] + [f"a=rtpmap:{m}" for m in maps] + ["a=ptime:20"]
    return "\r\n".join(lines) + "\r\n"


def test_sip_call_names_codec_clock_and_both_directions(tmp_path):
    cid = "abc123@192.0.2.1"
    frames = [
        (T0, frame(A, 5060, B, 5060, sip_message(f"INVITE sip:bob@{B} SIP/2.0", cid, "1 INVITE",
                                                 sdp(A, 7000, [96, 101], ["96 opus/48000/2", "101 telephone-event/8000"])))),
        (T0 + 0.05, frame(B, 5060, A, 5060, sip_message("SIP/2.0 200 OK", cid, "1 INVITE",
                                                        sdp(B, 9000, [96], ["96 opus/48000/2"]), compact=True))),
        (T0 + 0.06, frame(A, 5060, B, 5060, sip_message(f"ACK sip:bob@{B} SIP/2.0", cid, "1 ACK"))),
    ]
    # Opus at 48 kHz: 960 ticks per 20 ms. Packets 10 ms late every 7th.
    for i in range(60):
        late = 0.01 if i % 7 == 3 else 0.0
        frames.append((T0 + 0.1 + 0.02 * i + late, frame(A, 7000, B, 9000, rtp(i, 960 * i, 0x51, pt=96, payload=b"o" * 80))))
        frames.append((T0 + 0.101 + 0.02 * i, frame(B, 9000, A, 7000, rtp(500 + i, 960 * i, 0x52, pt=96, payload=b"p" * 80))))
    frames.append((T0 + 2, frame(A, 5060, B, 5060, sip_message(f"BYE sip:bob@{B} SIP/2.0", cid, "2 BYE"))))
    scan = scan_capture(write(tmp_path / "call.pcap", sorted(frames, key=lambda f: f[0])))
    (call,) = scan.calls
    assert (call.call_id, call.from_uri, call.to_uri, call.status) == (cid, f"sip:alice@{A}", f"sip:bob@{B}", 200)
    assert call.setup_s == pytest.approx(0.05) and call.end_ns == int(round((T0 + 2) * 1e9))
    assert [(m.address, m.port) for m in call.media] == [(A, 7000), (B, 9000)]
    assert [(s.key.ssrc, s.found_by, s.call_id, s.codec, s.clock_rate, s.ptime_ms) for s in scan.streams] == [
        (0x51, "sdp", cid, "opus", 48000, 20.0), (0x52, "sdp", cid, "opus", 48000, 20.0)]
    # jitter computed with the SDP clock rate, as rtp_stats would with clock_rates={96: 48000}
    s = scan.streams[0]
    assert s.stats == rtp_stats(s.packets, None, clock_rates={96: 48000})
    assert s.stats.max_jitter_ms > 0.5
    records = scan.stream_records()
    assert records[0]["call_from"] == f"sip:alice@{A}" and scan.call_records()[0]["streams"] == 2


def test_sdp_only_scan_ignores_unannounced_rtp(tmp_path):
    path = write(tmp_path / "a.pcap", voice(50, 1))
    assert scan_capture(path, heuristic=False).streams == ()


def test_payload_type_counts(tmp_path):
    frames = voice(40, 3)
    frames += [(T0 + 0.81 + 0.02 * i, frame(A, 5004, B, 5006, rtp(1040 + i, 5000 + 160 * 40, 3, pt=101, payload=b"\x01\x0a\x00\xa0")))
               for i in range(5)]
    (s,) = find_streams(write(tmp_path / "a.pcap", frames))
    assert s.payload_types == (8, 101) and s.payload_type == 8


def test_make_packets_round_trip_with_find_streams(tmp_path):
    (s,) = find_streams(write(tmp_path / "a.pcap", voice(20, 4)))
    p = s.packets
    q = make_packets(p.frame, p.arrival_ns, p.seq, p.timestamp, p.marker, p.payload_type, p.payloads)
    assert all(np.array_equal(getattr(p, f), getattr(q, f)) for f in ("seq_ext", "ts_ext", "frame", "arrival_ns"))


def test_sdp_seen_after_the_stream_started_still_names_the_call(tmp_path):
    cid = "late@192.0.2.1"
    frames = voice(40, 0x77, dport=9000)
    frames.append((T0 + 0.5, frame(B, 5060, A, 5060, sip_message("SIP/2.0 200 OK", cid, "1 INVITE", sdp(B, 9000, [8], ["8 PCMA/8000"])))))
    frames.insert(0, (T0 - 0.1, frame(A, 5060, B, 5060, sip_message(f"INVITE sip:bob@{B} SIP/2.0", cid, "1 INVITE"))))
    # small batches: the 200 OK is read after the flow was accepted by the heuristic
    scan = scan_capture(write(tmp_path / "a.pcap", sorted(frames, key=lambda f: f[0])), batch_size=8)
    (s,) = scan.streams
    assert (s.call_id, s.found_by, s.ptime_ms) == (cid, "heuristic", 20.0)
    (c,) = scan.call_records(brief=True)
    assert (c["call_id"], c["streams"], c["start_s"]) == (cid, 1, 0.0)


@pytest.mark.parametrize("batch_size", [1, 3, 6, 7, 65536])
def test_sdp_announcing_a_held_flow_loses_none_of_its_packets(tmp_path, batch_size):
    """Five packets of an unannounced flow (too few for the heuristic), then a 200 OK
    whose SDP announces its port, then 20 more: all 25 are the stream's, found by SDP,
    whatever batches the capture is read in (a batch may hold only the SIP message)."""
    cid = "held@192.0.2.1"
    frames = voice(25, 0x78, dport=9000)
    frames.insert(5, (T0 + 0.09, frame(B, 5060, A, 5060, sip_message("SIP/2.0 200 OK", cid, "1 INVITE",
                                                                       sdp(B, 9000, [8], ["8 PCMA/8000"])))))
    (s,) = scan_capture(write(tmp_path / "a.pcap", frames), batch_size=batch_size).streams
    assert (s.found_by, s.call_id, s.stats.packets, len(s.packets)) == ("sdp", cid, 25, 25)
    assert s.packets.seq.tolist() == list(range(1000, 1025))


# ------------------------------------------------------- packets kept on disk (issue 13)


def _open_in(directory):
    """How many files this process holds open that were made in ``directory`` (Linux names
    an unlinked file's link "PATH (deleted)")."""
    links = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            links.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # closed meanwhile (the listing's own descriptor)
            pass
    return sum(link.startswith(str(directory) + os.sep) for link in links)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts open files through /proc")
def test_packets_live_in_unnamed_temporary_files_and_read_back_whole(tmp_path, monkeypatch):
    # Two streams interleaved over many small batches (a flow is held undecided, then
    # taken): each packet's payload says which packet it is, so every payload read back
    # from the temporary files is checked against the one written.
    def pay(ssrc, i):
        return struct.pack("!II", ssrc, i) * (10 + i % 7)  # lengths vary

    frames = [(T0 + 0.02 * i + (0.005 if s == 0x2222 else 0),
               frame(A, 5004 if s == 0x1111 else 6004, B, 5006 if s == 0x1111 else 6006,
                     rtp(1000 + i, 5000 + 160 * i, s, payload=pay(s, i))))
              for i in range(300) for s in (0x1111, 0x2222)]
    path = write(tmp_path / "two.pcap", frames)
    spill = tmp_path / "spill"
    spill.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spill))  # where tempfile makes files (stdlib)
    scan = scan_capture(path, batch_size=7)
    assert list(spill.iterdir()) == []  # the files have no name: nothing is left behind, even on a crash
    assert _open_in(spill) == 2  # payloads and per-packet columns
    assert [s.ssrc for s in scan.streams] == [0x1111, 0x2222]
    for s in scan.streams:
        p = s.packets
        assert isinstance(p, RtpPackets) and len(p) == 300
        assert p.payloads == tuple(pay(s.ssrc, i) for i in range(300))
        np.testing.assert_array_equal(p.seq, 1000 + np.arange(300))
        np.testing.assert_array_equal(p.ts_ext, 5000 + 160 * np.arange(300))
        assert p.frame.tolist() == list(range(1 if s.ssrc == 0x1111 else 2, 601, 2))
        again = pickle.loads(pickle.dumps(p))  # pickles as the plain table
        assert type(again) is RtpPackets and again.payloads == p.payloads
        for name in ("frame", "arrival_ns", "seq", "seq_ext", "timestamp", "ts_ext", "marker", "payload_type"):
            np.testing.assert_array_equal(getattr(again, name), getattr(p, name))
    del scan, s, p
    gc.collect()
    assert _open_in(spill) == 0  # closed when the last stream that needs them is gone


def test_plain_rtx_repairs_are_read_from_the_original_sequence_numbers(tmp_path):
    # RFC 4588 §4: an RTX packet keeps its original's timestamp and starts its payload with
    # the original sequence number. Video (90 kHz, 3 packets per frame, marker on the last)
    # loses numbers 1005 and 1010; the RTX stream (its own SSRC and PT) resends both, and one
    # that was not lost (1003). Built here, so the truth is what was written.
    frames, t = [], T0
    for n in range(60):
        seq, ts = 1000 + n, 9000 + 3000 * (n // 3)
        t += 0.011
        if seq in (1005, 1010):
            continue
        frames.append((t, frame(A, 5004, B, 5006, rtp(seq, ts, 0xAAAA, 96, marker=n % 3 == 2, payload=bytes(900)))))
    for k, osn in enumerate((1005, 1010, 1003)):
        ts = 9000 + 3000 * ((osn - 1000) // 3)
        frames.append((T0 + 0.5 + 0.05 * k, frame(A, 5004, B, 5006, rtp(200 + k, ts, 0xBBBB, 97,
                                                                     payload=osn.to_bytes(2, "big") + bytes(900)))))
    frames.sort(key=lambda f: f[0])
    path = write(tmp_path / "rtx.pcap", frames)
    streams = {s.key.ssrc: s for s in scan_capture(path, min_packets=2).streams}
    media = streams[0xAAAA]
    assert (media.clock_rate, media.media) == (90000, "video")  # inferred: no SDP
    assert media.stats.lost == 2
    assert media.rtx is not None
    assert (media.rtx.ssrc, media.rtx.packets, media.rtx.repaired, media.rtx.found_by) == (0xBBBB, 3, 2, "timestamps")
    assert any("RTX (RFC 4588) of stream 0x0000aaaa" in n for n in streams[0xBBBB].notes)


def test_rfc7983_demux_marks_dtls_srtp_and_leaves_stun_only_alone(tmp_path):
    # RFC 7983 §7 / RFC 9443 §4: a DTLS 1.3 ciphertext record (unified header, first byte
    # 0b001xxxxx, RFC 9147 §4) and a STUN Binding request (RFC 8489 §5: magic cookie) on
    # the 5-tuple of one stream; another stream's 5-tuple carries STUN only.
    stun = bytes([0x00, 0x01, 0x00, 0x00]) + (0x2112A442).to_bytes(4, "big") + bytes(12)
    dtls13 = bytes([0x2F, 0x12, 0x34]) + bytes(40)
    frames = [(T0, frame(A, 5004, B, 5006, stun)), (T0 + 0.001, frame(B, 5006, A, 5004, dtls13)),
              (T0 + 0.002, frame(A, 6004, B, 6006, stun))]
    frames += voice(30, 0x1111, t0=T0 + 0.01) + voice(30, 0x2222, sport=6004, dport=6006, t0=T0 + 0.011)
    path = write(tmp_path / "a.pcap", sorted(frames, key=lambda f: f[0]))
    streams = {s.key.ssrc: s for s in scan_capture(path).streams}
    dtls, plain = streams[0x1111], streams[0x2222]
    assert dtls.srtp is not None and dtls.srtp.found_by == "dtls"
    assert any("1 DTLS record(s) (0 handshake, 1 with DTLS 1.3's unified header) and 1 STUN" in n for n in dtls.notes)
    assert plain.srtp is None and not plain.notes
    assert dtls.stats.packets == plain.stats.packets == 30  # neither STUN nor DTLS is taken for RTP


def _video_with_rtx(rtx_packets, *, lost=31):
    """A 90 kHz video stream (SSRC 0x1111, PT 96, 20 frames of 3 packets, ~30 fps) with
    packet ``lost`` missing, and ``rtx_packets`` (ssrc, pt, seq, ts, payload) sent after it on
    the same 5-tuple: the capture's frames, in time order."""
    out = []
    for i in range(60):
        if i == lost:
            continue
        f, k = divmod(i, 3)
        t = T0 + f / 30 + k * 0.002
        out.append((t, frame(A, 50000, B, 50002, rtp(2000 + i, 900_000 + 3000 * f, 0x1111, 96, marker=k == 2,
                                                     payload=b"\x10" * 900))))
    for n, (ssrc, pt, seq, ts, payload) in enumerate(rtx_packets):
        out.append((T0 + 1.5 + 0.01 * n, frame(A, 50000, B, 50002, rtp(seq, ts, ssrc, pt, payload=payload))))
    return sorted(out, key=lambda x: x[0])


@pytest.mark.parametrize("keep", [True, False])
def test_a_one_packet_rtx_stream_is_kept_as_the_repair_of_its_media_stream(tmp_path, keep):
    # RFC 4588 §4: the retransmission of packet 2031 on its own SSRC and payload type, with the
    # original's timestamp and its sequence number (OSN) first in the payload. One packet is
    # below min_packets (RFC 3550 A.1 probation), but it carries a timestamp of the video
    # stream: it is that stream's RTX, counted as its repair (with its 12 header bytes).
    # By construction: 59 media packets, 1 RTX packet that repaired 1 missing number.
    # A datagram that looks like RTP on the same 5-tuple with a timestamp of its own, and a
    # short burst of RTP-looking noise on another port pair, stay out (probation).
    rng = np.random.default_rng(7)
    rtx = [(0x2222, 97, 40, 900_000 + 3000 * 10, struct.pack("!H", 2031) + b"\x10" * 900)]
    stray = [(0x3333, 97, 41, 123_456_789, b"\x10" * 200)]
    noise = [(T0 + 0.5 + 0.01 * i, frame(A, 40000, B, 40002, bytes([0x80, int(rng.integers(0, 128))])
                                         + rng.integers(0, 256, 100, dtype=np.uint8).tobytes()))
             for i in range(5)]
    path = write(tmp_path / "rtx.pcap", sorted(_video_with_rtx(rtx + stray) + noise, key=lambda x: x[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        streams = {s.key.ssrc: s for s in scan_capture(path, keep_packets=keep).streams}
    assert set(streams) == {0x1111, 0x2222}
    video = streams[0x1111]
    assert video.media == "video" and video.stats.packets == 59 and video.stats.lost == 1
    assert (video.rtx.ssrc, video.rtx.packets, video.rtx.found_by) == (0x2222, 1, "timestamps")
    assert video.rtx.repaired == (1 if keep else None)  # the OSN is in the payload
    assert video.to_dict()["header_bytes_received"] == 12 * 59 + 12


def test_a_short_rtx_stream_is_tied_by_the_sdps_apt_or_fid(tmp_path):
    # Two padding-only probes (timestamps of their own, as libwebrtc's bandwidth probes) on the
    # RTX payload type: nothing in the packets ties them to the video stream, the SDP does
    # (RFC 4588 §8: apt=96; RFC 5576 §4.2 a=ssrc-group:FID). Without an SDP they stay out.
    probe = b""
    rtx = [(0x2222, 97, 40 + n, 77_000 + n, probe) for n in range(2)]
    frames = _video_with_rtx([])
    for n, (ssrc, pt, seq, ts, _) in enumerate(rtx):  # RFC 3550 §5.1: P bit, 200 bytes of padding
        frames.append((T0 + 1.5 + 0.01 * n, frame(A, 50000, B, 50002, rtp(seq, ts, ssrc, pt, payload=b"", pad=200))))
    path = write(tmp_path / "probe.pcap", sorted(frames, key=lambda x: x[0]))
    section = ("v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=video 9 RTP/AVPF 96 97\r\nc=IN IP4 0.0.0.0\r\n"
               "a=rtpmap:96 VP8/90000\r\na=rtpmap:97 rtx/90000\r\na=fmtp:97 apt=96\r\n")
    fid = "a=ssrc-group:FID 4369 8738\r\na=ssrc:4369 cname:x\r\na=ssrc:8738 cname:x\r\n"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        bare = {s.key.ssrc for s in scan_capture(path, keep_packets=False).streams}
        by = {}
        for how, text in (("apt", section), ("sdp", section + fid)):
            streams = {s.key.ssrc: s for s in scan_capture(path, keep_packets=False, sdp=parse_sdp(text).media).streams}
            by[how] = streams[0x1111].rtx
            assert streams[0x1111].to_dict()["header_bytes_received"] == 12 * 59 + 2 * (12 + 200)
    assert bare == {0x1111}
    assert {k: (v.ssrc, v.packets, v.found_by) for k, v in by.items()} == {
        "apt": (0x2222, 2, "apt"), "sdp": (0x2222, 2, "sdp")}
