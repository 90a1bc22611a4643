"""Tunnel header variants, hand-built from the standards (the real and crafted samples are
checked against tshark in test_capture_tunnels.py).

Each frame here is written from the cited clause; the expected packet is the inner one the
text says is carried (or none, or the outer datagram, where the text says the header
carries no user data). ``udp_both`` also checks that the column reader agrees.
"""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from qoe.capture import read_packets, read_udp_batches

INNER = ("192.168.1.1", "192.168.1.2")


def inner_udp(cap, payload=b"rtp!", sport=4000, dport=5004):
    return cap.ipv4(*INNER, 17, cap.udp(sport, dport, payload))


def one(path, **kw):
    pkts = list(read_packets(path, **kw))
    assert len(pkts) == 1, pkts
    return pkts[0]


def label(value, bottom, ttl=64):
    """RFC 3032 §2.1 label stack entry."""
    return struct.pack("!I", value << 12 | bottom << 8 | ttl)


def test_mpls_explicit_null_labels_say_the_ip_version(cap, write, udp_both):
    # RFC 3032 §2.1: label 0 = IPv4 Explicit NULL, 2 = IPv6 Explicit NULL (bottom of stack)
    v6 = cap.ipv6("2001:db8::1", "2001:db8::2", 17, cap.udp(1, 2, b"six"))
    frames = [
        cap.eth(label(100, 0) + label(0, 1) + inner_udp(cap), 0x8847),
        cap.eth(label(2, 1) + v6, 0x8847),
    ]
    a, b = udp_both(write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)])))
    assert (a.src, a.payload, a.encapsulation) == ("192.168.1.1", b"rtp!", "mpls[labels=100,0]")
    assert (b.src, b.payload) == ("2001:db8::1", b"six")


def test_mpls_associated_channel_is_not_user_data(cap, write):
    # RFC 4385 §3 / RFC 5586 §2: first nibble 1 after the stack = G-ACh (OAM)
    frame = cap.eth(label(100, 1) + b"\x10\x00\x00\x21" + inner_udp(cap), 0x8847)
    assert list(read_packets(write(cap.pcap([(cap.T0, 0, frame)])))) == []


def test_ethernet_pseudowire_with_vlan_inside_gre_over_mpls(cap, write, udp_both):
    # RFC 4023 §4: MPLS in GRE (protocol 0x8847); RFC 4448: Ethernet PW with control word
    pw = label(16, 0) + label(17, 1) + b"\0\0\0\x05" + cap.eth(inner_udp(cap), vlans=(0x8100,))
    frame = cap.eth(cap.ipv4("10.0.0.1", "10.0.0.2", 47, struct.pack("!HH", 0, 0x8847) + pw))
    (p,) = udp_both(write(cap.pcap([(cap.T0, 0, frame)])))
    assert (p.src, p.dport, p.encapsulation) == ("192.168.1.1", 5004, "gre/mpls-pw[labels=16,17]")


def test_gre_routing_and_version_1_are_not_decoded(cap, write):
    # RFC 2784 §2.3: R (RFC 1701 routing) must be 0; §2.4: version 0 only (1 is PPTP)
    for flags in (0x4000, 0x0001):
        frame = cap.eth(cap.ipv4("10.0.0.1", "10.0.0.2", 47, struct.pack("!HHI", flags, 0x0800, 0) + inner_udp(cap)))
        assert list(read_packets(write(cap.pcap([(cap.T0, 0, frame)])))) == []


def test_erspan_type_i_has_no_header(cap, write, udp_both):
    # draft-foschiano-erspan-03 §4.1: 0x88BE without a GRE sequence number
    frame = cap.eth(cap.ipv4("10.0.0.1", "10.0.0.2", 47, struct.pack("!HH", 0, 0x88BE) + cap.eth(inner_udp(cap))))
    (p,) = udp_both(write(cap.pcap([(cap.T0, 0, frame)])))
    assert p.encapsulation == "erspan-i" and p.payload == b"rtp!"


def test_vxlan_without_the_i_flag_is_an_ordinary_datagram(cap, write, udp_both):
    # RFC 7348 §5: the I flag must be set for a valid VNI; else qoe keeps the outer datagram
    body = b"\x00\0\0\0\0\0\x2a\0" + cap.eth(inner_udp(cap))
    frame = cap.eth(cap.ipv4("10.0.0.1", "10.0.0.2", 17, cap.udp(50000, 4789, body)))
    (p,) = udp_both(write(cap.pcap([(cap.T0, 0, frame)])))
    assert (p.src, p.dport, p.encapsulation, p.payload) == ("10.0.0.1", 4789, "", body)


def test_gtpu_echo_is_not_user_data_and_extension_chain_is_followed(cap, write, udp_both):
    ip = inner_udp(cap)
    echo = struct.pack("!BBHIHBB", 0x32, 1, 4, 0, 7, 0, 0)  # TS 29.281 §7.2.1 Echo Request, S set
    # §5.1-§5.2: E set; two extension headers (UDP Port 0x40, then PDCP PDU number 0xC0)
    ext = struct.pack("!HBB", 0, 0, 0x40) + bytes([1, 0x13, 0x88, 0xC0]) + bytes([1, 0, 5, 0])
    gpdu = struct.pack("!BBHI", 0x34, 0xFF, len(ext) + len(ip), 9) + ext + ip
    frames = [
        cap.eth(cap.ipv4("10.0.0.1", "10.0.0.2", 17, cap.udp(2152, 2152, echo))),
        cap.eth(cap.ipv4("10.0.0.1", "10.0.0.2", 17, cap.udp(2152, 2152, gpdu))),
    ]
    a, b = udp_both(write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)])))
    assert (a.src, a.payload, a.encapsulation) == ("10.0.0.1", echo, "")
    assert (b.src, b.payload, b.encapsulation) == ("192.168.1.1", b"rtp!", "gtp-u[teid=0x00000009]")  # TEID 9, TS 29.281 §5.1


def test_tzsp_frames_are_read_and_what_is_no_frame_stays_a_datagram(cap, write, udp_both):
    """TZSP to UDP 37008 (qoe.capture._tunnels [10]: Wikipedia's summary of the protocol): a
    received Ethernet frame after a padding tag, an unknown tag (skipped) and TAG_END is read
    as its inner packet; a keepalive (type 4), an 802.11 encapsulation (18, not read here), a
    tag list without TAG_END and a datagram of another protocol that merely starts alike (a
    client's ephemeral port 37008; the frame's EtherType is no IP) stay the outer datagrams."""
    frame = cap.eth(inner_udp(cap))
    bodies = [
        struct.pack("!BBH", 1, 0, 1) + b"\x00" + b"\x0a\x01\x2a" + b"\x01" + frame,
        struct.pack("!BBH", 1, 4, 1) + b"\x01",
        struct.pack("!BBH", 1, 0, 18) + b"\x01" + frame,
        struct.pack("!BBH", 1, 0, 1) + b"\x0a\x01\x2a",
        struct.pack("!BBH", 1, 0, 1) + b"\x01" + bytes(12) + b"\x12\x34" + bytes(20),
    ]
    frames = [cap.eth(cap.ipv4("10.0.0.1", "10.0.0.2", 17, cap.udp(50000, 37008, b))) for b in bodies]
    got = udp_both(write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)])))
    assert [(p.src, p.encapsulation) for p in got] == [("192.168.1.1", "tzsp")] + [("10.0.0.1", "")] * 4
    assert got[0].payload == b"rtp!" and [p.payload for p in got[1:]] == bodies[1:]


def test_l2tp_compressed_ppp_and_control_messages(cap, write, udp_both):
    ip = inner_udp(cap)
    # RFC 2661 §3.1: L 0, S 1 (Ns, Nr), O 1 (offset size 2 + 2 pad bytes); PPP without
    # address/control (ACFC) and with a 1-octet protocol 0x21 (PFC, RFC 1661 §6.5)
    data = struct.pack("!HHHHHHH", 0x0A02, 3, 4, 0, 0, 2, 0) + b"\x21" + ip
    control = struct.pack("!HHHHHHH", 0xC802, 12, 3, 0, 0, 0, 0)  # T = 1: a control message
    frames = [
        cap.eth(cap.ipv4("10.0.0.1", "10.0.0.2", 17, cap.udp(1701, 1701, data))),
        cap.eth(cap.ipv4("10.0.0.1", "10.0.0.2", 17, cap.udp(1701, 1701, control))),
    ]
    a, b = udp_both(write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)])))
    assert (a.src, a.payload, a.encapsulation) == ("192.168.1.1", b"rtp!", "l2tp[tunnel=3,session=4]")  # RFC 2661 §3.1 IDs
    assert (b.src, b.payload) == ("10.0.0.1", control)


def test_tcp_inside_a_udp_tunnel_when_only_tcp_is_asked_for(cap, write):
    seg = cap.ipv4(*INNER, 6, cap.tcp(80, 40000, b"HTTP/1.1 200 OK\r\n"))
    frame = cap.eth(cap.ipv4("10.0.0.1", "10.0.0.2", 17, cap.udp(50000, 4789, b"\x08\0\0\0\0\0\x2a\0" + cap.eth(seg))))
    path = write(cap.pcap([(cap.T0, 0, frame)]))
    p = one(path, protocols=("tcp",))
    assert (p.src, p.sport, p.proto, p.encapsulation) == ("192.168.1.1", 80, 6, "vxlan[vni=42]")
    assert list(read_packets(path, protocols=("udp",))) == []
    assert sum(len(b) for b in read_udp_batches(path)) == 0


def test_outer_and_inner_fragments_both_reassembled(cap, write, udp_both):
    """An inner datagram in two inner fragments, each GRE packet then cut in two outer
    fragments (RFC 791 §3.2 at both layers): one datagram, on the last frame."""
    body = cap.udp(4000, 5004, bytes(range(256)) * 8)  # 2056 bytes
    inner = [
        cap.ipv4(*INNER, 17, body[:1480], ident=5, mf=True),
        cap.ipv4(*INNER, 17, body[1480:], ident=5, offset=1480),
    ]
    frames = []
    for k, ip in enumerate(inner):
        g = struct.pack("!HH", 0, 0x0800) + ip
        cut = len(g) // 16 * 8  # about half, a multiple of 8 (RFC 791 §3.1 Fragment Offset)
        frames += [
            cap.eth(cap.ipv4("10.0.0.1", "10.0.0.2", 47, g[:cut], ident=100 + k, mf=True)),
            cap.eth(cap.ipv4("10.0.0.1", "10.0.0.2", 47, g[cut:], ident=100 + k, offset=cut)),
        ]
    (p,) = udp_both(write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)])))
    assert (p.index, p.src, p.payload, p.encapsulation) == (4, "192.168.1.1", body[8:], "gre")


def test_nesting_is_bounded(cap, write):
    """IP-in-IP nested 8 deep is decoded; deeper is given up (crafted input cannot make the
    decoder recurse without end)."""

    def nest(depth):
        pkt = inner_udp(cap)
        for _ in range(depth):
            pkt = cap.ipv4("10.0.0.1", "10.0.0.2", 4, pkt)
        return cap.eth(pkt)

    p = one(write(cap.pcap([(cap.T0, 0, nest(8))])))
    assert p.encapsulation == "/".join(["ip-in-ip"] * 8)
    assert list(read_packets(write(cap.pcap([(cap.T0, 0, nest(9))]), "deep.pcap"))) == []


HEADERS = {
    "gre": lambda cap, body: cap.ipv4("10.0.0.1", "10.0.0.2", 47, body),
    "ipip": lambda cap, body: cap.ipv4("10.0.0.1", "10.0.0.2", 4, body),
    "sit": lambda cap, body: cap.ipv4("10.0.0.1", "10.0.0.2", 41, body),
    "vxlan": lambda cap, body: cap.ipv4("10.0.0.1", "10.0.0.2", 17, cap.udp(1, 4789, body)),
    "gtpu": lambda cap, body: cap.ipv4("10.0.0.1", "10.0.0.2", 17, cap.udp(2152, 2152, body)),
    "l2tp": lambda cap, body: cap.ipv4("10.0.0.1", "10.0.0.2", 17, cap.udp(1701, 1701, body)),
    "tzsp": lambda cap, body: cap.ipv4("10.0.0.1", "10.0.0.2", 17, cap.udp(50000, 37008, b"\x01\x00\x00\x01" + body)),
}


def test_garbage_after_a_tunnel_header_never_raises(cap, tmp_path):
    """Any bytes where a tunnel's header and payload should be: packets or nothing, both
    readers agreeing, never an exception."""

    @settings(max_examples=60, deadline=None)
    @given(kind=st.sampled_from(sorted(HEADERS)), body=st.binary(max_size=80), mpls=st.binary(max_size=40))
    def check(kind, body, mpls):
        frames = [cap.eth(HEADERS[kind](cap, body)), cap.eth(mpls, 0x8847), cap.eth(body, 0x8864)]
        path = tmp_path / "g.pcap"
        path.write_bytes(cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)]))
        pkts = list(read_packets(path, protocols=("udp",)))
        got = [b.packet(i) for b in read_udp_batches(path) for i in range(len(b))]
        assert got == pkts

    check()
