"""qoe.rtp as the public face of its private modules, and the pieces they share.

Expected values are written from RFC 3550's header layout (§5.1, §5.3.1) and its
modular sequence arithmetic (A.1), packet by packet, as the packets are built here.
Only public names are used: the capture scan's parser is reached through
``scan_capture`` on captures written here with dpkt.
"""

from __future__ import annotations

import doctest
import inspect
import socket
import struct

import dpkt
import numpy as np
import pytest

import qoe.rtp as rtp

SEQ_MOD, TS_MOD = 1 << 16, 1 << 32  # RFC 3550 §5.1: 16-bit sequence numbers, 32-bit timestamps
# What qoe.rtp exported when it was one module (its __all__ and the RTCP packet types).
PUBLIC = [
    "RtpPackets", "StreamKey", "RtpStats", "RtpStream", "RtcpSummary", "RtpScan", "RtpHeader",
    "STATIC_PAYLOAD_TYPES", "parse_rtp_header", "parse_rtcp", "rtp_stats", "make_packets",
    "extend_sequence", "find_streams", "scan_capture",
]
RTCP_TYPES = {"RTCP_SR": 200, "RTCP_RR": 201, "RTCP_SDES": 202, "RTCP_BYE": 203, "RTCP_APP": 204}


def test_public_face_exports_what_it_exported_and_nothing_private():
    assert set(PUBLIC) <= set(rtp.__all__)
    assert all(hasattr(rtp, name) for name in rtp.__all__)
    assert {k: getattr(rtp, k) for k in RTCP_TYPES} == RTCP_TYPES
    private = [n for n, v in vars(rtp).items()
               if n.startswith("_") and not n.startswith("__") and not inspect.ismodule(v)]
    assert private == []


def test_examples_of_the_public_names_run():
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = [t for name in rtp.__all__ for t in finder.find(getattr(rtp, name), name, globs={"np": np, **vars(rtp)})]
    for t in tests:
        runner.run(t)
    assert runner.failures == 0
    assert runner.tries >= 6  # parse_rtp_header, extend_sequence, media_kind carry examples


def _rtp(seq, *, csrc=0, ext_words=None, pad=0, payload=b"\xd5" * 20, b0_extra=0):
    """RFC 3550 §5.1 header (PT 8, ts 160*seq, SSRC 0x1234), CSRCs, §5.3.1 extension, padding."""
    b0 = 0x80 | csrc | (0x10 if ext_words is not None else 0) | (0x20 if pad else 0) | b0_extra
    out = struct.pack("!BBHII", b0, 8, seq, 160 * seq, 0x1234) + bytes(4 * csrc)
    if ext_words is not None:
        out += struct.pack("!HH", 0xBEDE, ext_words) + bytes(4 * ext_words)
    return out + payload + (bytes(pad - 1) + bytes([pad]) if pad else b"")


def _frame(data, sport=5004, dport=5006):
    u = dpkt.udp.UDP(sport=sport, dport=dport, data=data)
    u.ulen = len(u)
    ip = dpkt.ip.IP(src=socket.inet_aton("192.0.2.1"), dst=socket.inet_aton("198.51.100.2"), p=17, data=u)
    ip.len = len(ip)
    return bytes(dpkt.ethernet.Ethernet(type=0x0800, data=ip))


def _invite(port):
    """A SIP INVITE whose SDP (RFC 4566) offers PCMA at 198.51.100.2:port: the port's
    packets are then RTP whatever their headers look like (no heuristic involved)."""
    body = (f"v=0\r\no=- 1 1 IN IP4 198.51.100.2\r\ns=-\r\nc=IN IP4 198.51.100.2\r\nt=0 0\r\n"
            f"m=audio {port} RTP/AVP 8\r\na=rtpmap:8 PCMA/8000\r\n").encode()
    head = ("INVITE sip:bob@198.51.100.2 SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK-1\r\n"
            "From: <sip:alice@192.0.2.1>;tag=1\r\nTo: <sip:bob@198.51.100.2>\r\nCall-ID: hdr-1\r\nCSeq: 1 INVITE\r\n"
            f"Content-Type: application/sdp\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    return _frame(head + body, 5060, 5060)


def _capture(path, datagrams, port=5006):
    with open(path, "wb") as fh:
        w = dpkt.pcap.Writer(fh, nano=True)
        w.writepkt(_invite(port), ts=1_700_000_000.0)
        for i, d in enumerate(datagrams):
            w.writepkt(_frame(d, dport=port), ts=1_700_000_000.02 + 0.02 * i)
    return path


def test_scan_reads_csrc_extension_and_padding_of_many_packets(tmp_path):
    """The capture scan's header parser (all packets of a batch at once): payloads after
    the CSRC list and extension and without padding; a packet too short for what it
    announces is not RTP; a padding count larger than the payload is ignored."""
    pkts = [
        _rtp(1),  # plain: payload at 12
        _rtp(2, csrc=2, ext_words=1, pad=4),  # 12 + 8 + 4 + 4 = 28, 4 bytes of padding
        _rtp(3, payload=b""),  # header only: empty payload
        _rtp(4, csrc=15, payload=b"")[:22],  # 15 CSRCs announced, 22 bytes: dropped
        _rtp(5, ext_words=200)[:60],  # extension longer than the packet: dropped
        _rtp(6, payload=b"\x01\x02", b0_extra=0x20)[:-1] + b"\xff",  # padding count 255 > payload: ignored
    ]
    (s,) = rtp.scan_capture(_capture(tmp_path / "h.pcap", pkts), batch_size=4).streams
    assert s.found_by == "sdp"
    assert s.packets.seq.tolist() == [1, 2, 3, 6] and s.packets.timestamp.tolist() == [160, 320, 480, 960]
    assert s.packets.payloads == (b"\xd5" * 20, b"\xd5" * 20, b"", b"\x01\xff")
    assert rtp.parse_rtp_header(pkts[3]) is None and rtp.parse_rtp_header(pkts[4]) is None
    # headerBytesReceived (W3C webrtc-stats): header + CSRCs + extension, and padding read in
    # clear: 12, 28 + 4, 12, and 12 for the packet whose padding count is impossible
    assert s.header_bytes == 12 + (28 + 4) + 12 + 12
    assert s.to_dict()["header_bytes_received"] == s.header_bytes  # no RTX stream


@pytest.mark.parametrize("seed", range(3))
def test_one_packet_and_many_packet_parsers_agree(tmp_path, seed):
    """parse_rtp_header (one header, plain Python) and the capture scan (NumPy, a batch
    at once) state the same rules: random version-2 packets of one stream with random
    CSRC counts, extension lengths, padding bytes and sizes get the same verdict and the
    same payload."""
    rng = np.random.default_rng(seed)
    pkts = []
    for i in range(2000):
        n = int(rng.integers(12, 120))
        b = bytearray(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
        b[0] = 0x80 | (b[0] & 0x3F)  # version 2, random P, X and CSRC count
        b[1] = 8 | (b[1] & 0x80)  # PCMA, random marker (never RTCP's 200-204)
        b[2:12] = struct.pack("!HII", i, 160 * i, 0x1234)  # one stream, in order
        if rng.random() < 0.5 and n >= 16 + 4 * (b[0] & 0x0F):  # a plausible extension length
            at = 12 + 4 * (b[0] & 0x0F)
            b[at + 2 : at + 4] = int(rng.integers(0, 8)).to_bytes(2, "big")
        pkts.append(bytes(b))
    (s,) = rtp.scan_capture(_capture(tmp_path / "r.pcap", pkts), batch_size=500).streams
    ones = [(p, rtp.parse_rtp_header(p)) for p in pkts]
    want = [(o.seq, o.marker, p[o.payload_start:o.payload_end]) for p, o in ones if o is not None]
    assert 300 < len(want) < len(pkts)  # both verdicts are exercised
    got = list(zip(s.packets.seq.tolist(), s.packets.marker.tolist(), s.packets.payloads))
    assert got == want


def test_extend_sequence_takes_the_shortest_signed_step():
    """RFC 3550 A.1: a step of less than half the modulus either way; exactly half goes back."""
    steps = [0, 1, 32767, 32768, 32769, 65535]
    assert [rtp.extend_sequence(np.array([0, d], dtype=np.uint16), SEQ_MOD)[1] for d in steps] == [
        0, 1, 32767, -32768, -32767, -1]
    seq = rtp.extend_sequence(np.array([5, 4, 32771, 32772, 5], dtype=np.uint16), SEQ_MOD)
    assert seq.tolist() == [5, 4, 32771, 32772, 5]  # steps -1, +32767, +1, -32767
    assert rtp.extend_sequence(np.array([0, TS_MOD - 160], dtype=np.uint32), TS_MOD).tolist() == [0, -160]


def test_reorder_window_is_a_parameter(tmp_path):
    e = np.arange(1, 1000)
    table = rtp.make_packets(e, 1_700_000_000 * 10**9 + e * 20_000_000, e, 160 * e, np.zeros(e.size, bool),
                             np.full(e.size, 8))
    small, whole = rtp.rtp_stats(table, 8000, reorder_window=64), rtp.rtp_stats(table, 8000)
    assert small == whole


def test_scan_table_extends_across_wraps_and_batches(tmp_path):
    """Sequence numbers and timestamps wrap inside the stream, one packet comes late and
    one twice; read three datagrams per batch, the table's extended numbers are those
    of extend_sequence over the whole stream and its statistics those of rtp_stats."""
    seqs = [65530 + i for i in range(12)]
    seqs[7], seqs[8] = seqs[8], seqs[7]  # reordered across the wrap
    seqs.insert(5, seqs[3])  # a duplicate
    ts0 = TS_MOD - 800
    path = tmp_path / "wrap.pcap"
    with open(path, "wb") as fh:
        w = dpkt.pcap.Writer(fh, nano=True)
        for i, s in enumerate(seqs):
            data = struct.pack("!BBHII", 0x80, 0, s % SEQ_MOD, (ts0 + 160 * (s - 65530)) % TS_MOD, 7) + b"\xff" * 160
            u = dpkt.udp.UDP(sport=5004, dport=5006, data=data)
            u.ulen = len(u)
            ip = dpkt.ip.IP(src=socket.inet_aton("192.0.2.1"), dst=socket.inet_aton("198.51.100.2"), p=17, data=u)
            ip.len = len(ip)
            w.writepkt(bytes(dpkt.ethernet.Ethernet(type=0x0800, data=ip)), ts=1_700_000_000 + 0.02 * i)
    (s,) = rtp.scan_capture(path, batch_size=3).streams
    p = s.packets
    assert p.seq_ext.tolist() == seqs
    assert p.ts_ext.tolist() == [ts0 + 160 * (x - 65530) for x in seqs]
    assert np.array_equal(p.seq_ext, rtp.extend_sequence(p.seq, SEQ_MOD))
    # chunked and whole-table statistics differ by float rounding only
    assert s.stats.to_dict() == pytest.approx(rtp.rtp_stats(p, 8000).to_dict(), rel=1e-12)
    assert (s.stats.duplicates, s.stats.out_of_order, s.stats.lost) == (1, 1, -1)
