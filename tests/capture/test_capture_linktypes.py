"""Link layers, IPv4/IPv6 headers (with options / extension headers), UDP and TCP."""

from __future__ import annotations

import struct

import pytest

from qoe.capture import TCP_ACK, TCP_SYN, read_packets

SRC6, DST6 = "2001:db8::1", "2001:db8:0:1::2"


def _udp4(cap, payload=b"voice"):  # type: ignore[no-untyped-def]
    return cap.ipv4("192.0.2.1", "198.51.100.2", 17, cap.udp(40000, 50000, payload))


def _udp6(cap, payload=b"voice"):  # type: ignore[no-untyped-def]
    return cap.ipv6(SRC6, DST6, 17, cap.udp(40000, 50000, payload))


def _null(af: int, ip: bytes, bo: str) -> bytes:
    return struct.pack(bo + "I", af) + ip


@pytest.mark.parametrize(
    ("linktype", "frame", "v6"),
    [
        (1, lambda c: c.eth(_udp4(c)), False),
        (1, lambda c: c.eth(_udp6(c), 0x86DD), True),
        (1, lambda c: c.eth(_udp4(c), vlans=(0x8100,)), False),  # 802.1Q
        (1, lambda c: c.eth(_udp4(c), vlans=(0x88A8, 0x8100)), False),  # 802.1ad QinQ
        (1, lambda c: c.eth(_udp6(c), 0x86DD, vlans=(0x9100, 0x8100)), True),  # old QinQ TPID
        (1, lambda c: c.eth(_udp4(c), pad_to=200), False),  # padding after the datagram
        # 802.3 length + LLC/SNAP (RFC 1042): DSAP AA, SSAP AA, UI, OUI 0, EtherType.
        (1, lambda c: c.eth(b"\xaa\xaa\x03\0\0\0\x08\x00" + _udp4(c), 8 + len(_udp4(c))), False),
        # PPPoE session (RFC 2516 §4): ver/type 0x11, code 0, session, length, PPP 0x0021.
        (1, lambda c: c.eth(struct.pack("!BBHHH", 0x11, 0, 1, len(_udp4(c)) + 2, 0x21) + _udp4(c), 0x8864), False),
        (113, lambda c: c.sll(_udp4(c)), False),
        (113, lambda c: c.sll(_udp6(c), 0x86DD), True),
        (276, lambda c: c.sll2(_udp4(c)), False),
        (276, lambda c: c.sll2(_udp6(c), 0x86DD), True),
        (101, lambda c: _udp4(c), False),
        (101, lambda c: _udp6(c), True),
        (12, lambda c: _udp4(c), False),
        (14, lambda c: _udp6(c), True),
        (228, lambda c: _udp4(c), False),
        (229, lambda c: _udp6(c), True),
        (0, lambda c: _null(2, _udp4(c), "<"), False),  # written on a little-endian host
        (0, lambda c: _null(2, _udp4(c), ">"), False),  # on a big-endian host
        (0, lambda c: _null(24, _udp6(c), "<"), True),  # NetBSD/OpenBSD AF_INET6
        (0, lambda c: _null(28, _udp6(c), ">"), True),  # FreeBSD
        (0, lambda c: _null(30, _udp6(c), "<"), True),  # macOS
        (108, lambda c: _null(2, _udp4(c), ">"), False),  # OpenBSD LOOP: network order
        (108, lambda c: _null(24, _udp6(c), ">"), True),
    ],
)
def test_link_layers(cap, write, udp_both, linktype, frame, v6):  # type: ignore[no-untyped-def]
    data = frame(cap)
    pkts = udp_both(write(cap.pcap([(cap.T0, 1, data), (cap.T0, 2, data)], linktype=linktype)))
    assert len(pkts) == 2
    p = pkts[0]
    assert (p.src, p.dst) == ((SRC6, DST6) if v6 else ("192.0.2.1", "198.51.100.2"))
    assert (p.proto, p.sport, p.dport, p.payload, p.tcp) == (17, 40000, 50000, b"voice", None)
    assert p.wire_len == len(data)


@pytest.mark.parametrize(
    ("linktype", "frame"),
    [
        (1, lambda c: c.eth(b"\0" * 28, 0x0806)),  # ARP
        (1, lambda c: c.eth(b"\xaa\xaa\x03\0\0\0\x08\x06" + bytes(28), 36)),  # SNAP ARP
        (1, lambda c: c.eth(b"\x42\x42\x03" + bytes(40), 43)),  # 802.2 STP
        (1, lambda c: c.eth(b"")[:10]),  # runt
        (113, lambda c: c.sll(b"\0" * 28, 0x0806)),
        (0, lambda c: _null(7, b"\0" * 40, "<")),  # unknown address family
        (101, lambda c: b"\x10" + bytes(30)),  # not IP version 4/6
        (1, lambda c: c.eth(c.ipv4("192.0.2.1", "198.51.100.2", 1, bytes(16)))),  # ICMP
        (1, lambda c: c.eth(c.ipv4("192.0.2.1", "198.51.100.2", 17, b"\0\1"))),  # UDP cut short
        (1, lambda c: c.eth(c.ipv6(SRC6, DST6, 50, bytes(40)), 0x86DD)),  # ESP
        (1, lambda c: c.eth(c.ipv6(SRC6, DST6, 59, b""), 0x86DD)),  # No Next Header
    ],
)
def test_frames_without_udp_or_tcp_are_skipped(cap, write, udp_both, linktype, frame):  # type: ignore[no-untyped-def]
    path = write(cap.pcap([(cap.T0, 0, frame(cap))], linktype=linktype))
    assert list(read_packets(path)) == []
    assert udp_both(path) == []


def test_ipv4_options_and_udp_length(cap, write, udp_both):  # type: ignore[no-untyped-def]
    # IHL 7 (8 bytes of options: Router Alert RFC 2113 + padding); UDP length says 8 + 3
    # bytes although 6 follow: the payload is what the UDP length covers (RFC 768).
    opts = b"\x94\x04\0\0" + b"\x01\x01\x01\0"
    ip = cap.ipv4("192.0.2.1", "198.51.100.2", 17, cap.udp(1, 2, b"abcdef", length=11), options=opts)
    (p,) = udp_both(write(cap.pcap([(cap.T0, 0, cap.eth(ip))])))
    assert p.payload == b"abc"


def test_ipv4_total_length_bounds_payload(cap, write, udp_both):  # type: ignore[no-untyped-def]
    # Bytes after the IP datagram (Ethernet padding, trailers) are not payload (RFC 791 §3.1).
    ip = cap.ipv4("192.0.2.1", "198.51.100.2", 17, cap.udp(1, 2, b"xy", length=0))
    (p,) = udp_both(write(cap.pcap([(cap.T0, 0, cap.eth(ip) + b"TRAILER")])))
    assert p.payload == b"xy"


@pytest.mark.parametrize(
    "chain",
    [
        lambda c, nh: c.ext(nh),  # Hop-by-Hop (0)
        lambda c, nh: c.ext(43) + c.ext(nh, b"\0\0\0\0" + c.ip6("2001:db8::99")),  # HbH → Routing
        lambda c, nh: c.ext(60) + c.ext(nh, b"\x01\x0c" + bytes(12)),  # HbH → Dest. options (PadN)
        lambda c, nh: c.ext(51) + c.ah(nh),  # HbH → AH
    ],
)
def test_ipv6_extension_headers_are_skipped(cap, write, udp_both, chain):  # type: ignore[no-untyped-def]
    body = chain(cap, 17) + cap.udp(5004, 5006, b"rtp!")
    ip = cap.ipv6(SRC6, DST6, 0, body)
    (p,) = udp_both(write(cap.pcap([(cap.T0, 0, cap.eth(ip, 0x86DD))])))
    assert (p.sport, p.dport, p.payload) == (5004, 5006, b"rtp!")
    # The same chain in front of TCP.
    body = chain(cap, 6) + cap.tcp(443, 50000, b"tls")
    ip = cap.ipv6(SRC6, DST6, 0, body)
    (p,) = read_packets(write(cap.pcap([(cap.T0, 0, cap.eth(ip, 0x86DD))]), "t.pcap"))
    assert (p.proto, p.sport, p.payload) == (6, 443, b"tls")


def test_ipv6_destination_options_first_and_atomic_fragment(cap, write, udp_both):  # type: ignore[no-untyped-def]
    # Destination Options (60) then an atomic fragment (offset 0, M = 0; RFC 6946).
    body = cap.ext(44) + cap.frag6(17, 0, False, 77) + cap.udp(1, 2, b"atomic")
    ip = cap.ipv6(SRC6, DST6, 60, body)
    (p,) = udp_both(write(cap.pcap([(cap.T0, 0, cap.eth(ip, 0x86DD))])))
    assert p.payload == b"atomic"


def test_ipv6_addresses_are_compressed_like_ipaddress(cap, write, udp_both):  # type: ignore[no-untyped-def]
    ip = cap.ipv6("fe80:0:0:0:0:0:0:1", "2001:db8:0:0:1:0:0:1", 17, cap.udp(1, 2, b""))
    (p,) = udp_both(write(cap.pcap([(cap.T0, 0, ip)], linktype=229)))
    assert (p.src, p.dst, p.payload) == ("fe80::1", "2001:db8::1:0:0:1", b"")


def test_tcp_header_and_options(cap, write):  # type: ignore[no-untyped-def]
    # RFC 9293 §3.2 MSS 1460; NOP; RFC 7323 WS 7; RFC 2018 SACK-permitted; RFC 7323 TS.
    opts = (
        b"\x02\x04\x05\xb4"
        + b"\x01\x03\x03\x07"
        + b"\x04\x02"
        + b"\x08\x0a"
        + struct.pack("!II", 123456, 654321)
        + b"\x01\x01"
        + b"\x05\x12"
        + struct.pack("!IIII", 10, 20, 30, 40)
    )
    t = cap.tcp(50000, 80, b"", seq=0xFFFFFFF0, ack=7, flags=TCP_SYN | TCP_ACK, window=29200, options=opts, urgent=0)
    ip = cap.ipv4("192.0.2.1", "198.51.100.2", 6, t)
    (p,) = read_packets(write(cap.pcap([(cap.T0, 0, cap.eth(ip))])))
    assert p.proto == 6 and p.payload == b""
    tc = p.tcp
    assert (tc.seq, tc.ack, tc.flags, tc.window, tc.header_len) == (0xFFFFFFF0, 7, 0x12, 29200, 20 + len(opts) + (-len(opts) % 4))
    assert (tc.mss, tc.wscale, tc.sack_permitted, tc.tsval, tc.tsecr) == (1460, 7, True, 123456, 654321)
    assert tc.sack == ((10, 20), (30, 40))
    assert tc.syn and not tc.fin and not tc.rst


def test_tcp_payload_and_no_options(cap, write):  # type: ignore[no-untyped-def]
    t = cap.tcp(80, 50000, b"HTTP/1.1 200 OK\r\n", flags=0x19)  # FIN PSH ACK
    ip = cap.ipv4("198.51.100.2", "192.0.2.1", 6, t)
    (p,) = read_packets(write(cap.pcap([(cap.T0, 0, cap.eth(ip, pad_to=120))])))
    assert p.payload == b"HTTP/1.1 200 OK\r\n"
    assert p.tcp.fin and p.tcp.mss is None and p.tcp.sack == () and p.tcp.header_len == 20


def test_tcp_malformed_option_length_stops_option_parsing(cap, write):  # type: ignore[no-untyped-def]
    t = cap.tcp(1, 2, b"x", options=b"\x02\x04\x05\xb4\x08\x01\0\0")  # TS with length 1
    (p,) = read_packets(write(cap.pcap([(cap.T0, 0, cap.eth(cap.ipv4("192.0.2.1", "192.0.2.2", 6, t)))])))
    assert (p.tcp.mss, p.tcp.tsval, p.payload) == (1460, None, b"x")


def test_tcp_data_len_survives_snap_length(cap, write):  # type: ignore[no-untyped-def]
    # A 1000-byte segment captured with snap length 96 (tcpdump -s 96): the payload holds
    # the 42 captured bytes, data_len the 1000 the IPv4 Total Length announces.
    seg = cap.tcp(80, 50000, bytes(1000), options=b"\x01\x01\x08\x0a" + bytes(8))
    frame = cap.eth(cap.ipv4("198.51.100.2", "192.0.2.1", 6, seg))
    seg6 = cap.tcp(80, 50000, bytes(1000))
    frame6 = cap.eth(cap.ipv6(SRC6, DST6, 0, cap.ext(6) + seg6), 0x86DD)
    path = write(cap.pcap([(cap.T0, 0, frame[:96], len(frame)), (cap.T0, 1, frame6[:96], len(frame6))], snaplen=96))
    p, q = read_packets(path)
    assert (len(p.payload), p.tcp.data_len, p.tcp.header_len, p.wire_len) == (96 - 14 - 20 - 32, 1000, 32, 1066)
    assert (len(q.payload), q.tcp.data_len) == (96 - 14 - 40 - 8 - 20, 1000)
