"""Wrap the REAL inner frames of inner.pcap in the encapsulations this kernel cannot make.

CRAFTED, not captured: the kernel these samples were made on (6.18, no modules) has VXLAN
and TUN/TAP but no GRE, GRETAP, ERSPAN, IPIP, SIT, L2TP, GTP, PPPoE or MPLS forwarding
(``ip link add ... type gre`` says "Unknown device type", ``net.mpls`` is absent, no tc
classifiers or actions). So make_vxlan.sh captures real traffic (ffmpeg RTP, curl/http.server
HTTP, IPv4 and IPv6, inner IPv4 fragments) inside the kernel's VXLAN, also on the VXLAN device
itself (inner.pcap, Ethernet), and this script puts each of those real inner frames, with its
original timestamp, inside the outer headers written here byte by byte from the standards:

=====================  ===================================================================
file                   outer layers (each cited where it is written below)
=====================  ===================================================================
mpls.pcap              Ethernet, MPLS stack of 2 labels (RFC 3032), inner IPv4/IPv6
mpls_pw_cw.pcap        Ethernet, MPLS 2 labels, PW control word (RFC 4385 §3, RFC 4448 §4.6),
                       inner Ethernet frame
mpls_pw.pcap           the same without control word (inner MACs rewritten to a2:..., first
                       nibble 0xa: the no-CW form a receiver can tell from IP, RFC 4928 §2)
gre.pcap               IPv4, GRE with key and sequence number (RFC 2784, RFC 2890), inner IP;
                       also the inner-fragmented L16 stream
gretap.pcap            IPv4, GRE with checksum, 0x6558 (transparent Ethernet bridging), inner
                       Ethernet; outer IPv4 fragmented at 1500 bytes (RFC 791 §3.2)
gre6.pcap              IPv6, GRE (no options), inner IP (what ip6gre sends)
erspan2.pcap           IPv4, GRE with sequence number, ERSPAN type II (0x88BE), Ethernet
erspan3.pcap           IPv4, GRE with sequence number, ERSPAN type III (0x22EB) with the
                       8-byte platform-specific subheader (O = 1), Ethernet
gtpu.pcap              IPv4, UDP 2152, GTPv1-U G-PDU (3GPP TS 29.281 §5); every other packet
                       with a sequence number and a PDU Session Container extension header
ipip.pcap              IPv4, IPv4 (protocol 4, RFC 2003), inner IPv4 only
sit.pcap               IPv4, IPv6 (protocol 41, RFC 4213 §3.5), inner IPv6 only
pppoe.pcap             Ethernet, PPPoE session (RFC 2516 §4), PPP (RFC 1661), inner IP
l2tp.pcap              IPv4, UDP 1701, L2TPv2 data message with length (RFC 2661 §3.1), PPP
                       with address/control (RFC 1662 §3.1), inner IP
=====================  ===================================================================

The inner-fragmented L16 stream (UDP 5006) goes only into gre.pcap (the rest stay small).
Outer addresses: 10.99.0.1 (the inner sender's side) and 10.99.0.2, 2001:db8::1 / ::2.

Run: python3 make_crafted.py (stdlib only; reads inner.pcap next to it).
"""

from __future__ import annotations

import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
MAC_A, MAC_B = bytes.fromhex("020000aa0001"), bytes.fromhex("020000aa0002")
V4_A, V4_B = bytes([10, 99, 0, 1]), bytes([10, 99, 0, 2])
V6_A = bytes.fromhex("20010db8000000000000000000000001")
V6_B = bytes.fromhex("20010db8000000000000000000000002")


def read_pcap(path):
    """(ts_sec, ts_usec, frame) of a little-endian microsecond pcap (what tcpdump wrote)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b"\xd4\xc3\xb2\xa1", "expected a little-endian microsecond pcap"
    out, at = [], 24
    while at + 16 <= len(data):
        sec, usec, incl, _orig = struct.unpack_from("<IIII", data, at)
        out.append((sec, usec, data[at + 16 : at + 16 + incl]))
        at += 16 + incl
    return out


def write_pcap(path, records, linktype=1):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, linktype))
        for sec, usec, frame in records:
            f.write(struct.pack("<IIII", sec, usec, len(frame), len(frame)) + frame)


def checksum(b: bytes) -> int:
    """RFC 1071 Internet checksum."""
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(src, dst, proto, payload, ident, *, df=False, offset=0, mf=False):
    """RFC 791 §3.1 header (IHL 5) with its checksum."""
    flags = (0x4000 if df else 0) | (0x2000 if mf else 0) | (offset >> 3)
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident & 0xFFFF, flags, 64, proto, 0, src, dst)
    return h[:10] + struct.pack("!H", checksum(h)) + h[12:] + payload


def ipv4_fragments(src, dst, proto, payload, ident, mtu=1500):
    """RFC 791 §3.2 fragmentation of one datagram into pieces of at most ``mtu`` bytes."""
    step = (mtu - 20) // 8 * 8
    if 20 + len(payload) <= mtu:
        return [ipv4(src, dst, proto, payload, ident)]
    return [
        ipv4(src, dst, proto, payload[o : o + step], ident, offset=o, mf=o + step < len(payload))
        for o in range(0, len(payload), step)
    ]


def ipv6(src, dst, nh, payload):
    """RFC 8200 §3 header."""
    return struct.pack("!IHBB16s16s", 6 << 28, len(payload), nh, 64, src, dst) + payload


def udp(sport, dport, payload):
    """RFC 768 (checksum 0: none, allowed over IPv4; RFC 7348 §5 and TS 29.281 allow it too)."""
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def eth(dst, src, ethertype, payload):
    return dst + src + struct.pack("!H", ethertype) + payload


def mpls_stack(labels, payload):
    """RFC 3032 §2.1: label 20 bits, TC 3, S (bottom of stack) 1, TTL 8."""
    out = b""
    for i, lab in enumerate(labels):
        out += struct.pack("!I", lab << 12 | (i == len(labels) - 1) << 8 | 64)
    return out + payload


def gre(proto, payload, *, key=None, seq=None, csum=False):
    """RFC 2784 §2 (C bit 0x8000, version 0, protocol type) and RFC 2890 §2 (K 0x2000,
    S 0x1000: Key then Sequence Number after the checksum word)."""
    flags = (0x8000 if csum else 0) | (0x2000 if key is not None else 0) | (0x1000 if seq is not None else 0)
    opt = b""
    if key is not None:
        opt += struct.pack("!I", key)
    if seq is not None:
        opt += struct.pack("!I", seq)
    if csum:  # RFC 2784 §2.5: checksum over the GRE header and payload, then Reserved1
        body = struct.pack("!HH", flags, proto) + b"\0\0\0\0" + opt + payload
        return body[:4] + struct.pack("!HH", checksum(body), 0) + body[8:]
    return struct.pack("!HH", flags, proto) + opt + payload


def inner_frames(records, with_fragments=False):
    """(ts_sec, ts_usec, frame, from_a) of the inner Ethernet frames carrying IP."""
    out = []
    for sec, usec, fr in records:
        et = struct.unpack_from("!H", fr, 12)[0]
        if et not in (0x0800, 0x86DD):
            continue
        if et == 0x0800:
            ip = fr[14:]
            frag = struct.unpack_from("!H", ip, 6)[0] & 0x3FFF
            if ip[9] == 17 and (frag or struct.unpack_from("!H", ip, 22)[0] == 5006) and not with_fragments:
                continue  # the inner-fragmented L16 stream: only in gre.pcap
            from_a = ip[12:16] == bytes([192, 168, 99, 1])
        else:
            from_a = fr[14 + 8 : 14 + 24] == bytes.fromhex("fd990000000000000000000000000001")
        out.append((sec, usec, fr, from_a))
    return out


def build(records):
    files = {}
    frames = inner_frames(records)
    ident = [0]

    def next_id():
        ident[0] += 1
        return ident[0]

    def outer4(from_a, proto, payload):
        s, d = (V4_A, V4_B) if from_a else (V4_B, V4_A)
        m = (MAC_B, MAC_A) if from_a else (MAC_A, MAC_B)
        return [eth(*m, 0x0800, p) for p in ipv4_fragments(s, d, proto, payload, next_id(), mtu=1 << 16)]

    def l2(from_a, ethertype, payload):
        return eth(*((MAC_B, MAC_A) if from_a else (MAC_A, MAC_B)), ethertype, payload)

    def ip_of(fr):
        return struct.unpack_from("!H", fr, 12)[0], fr[14:]

    # MPLS: IP directly after the stack (RFC 3032 §2.1; the payload's type is known to the LSR).
    files["mpls.pcap"] = [(s, u, l2(a, 0x8847, mpls_stack([16001, 24005], ip_of(f)[1]))) for s, u, f, a in frames]
    # Ethernet pseudowire (RFC 4448) with the generic PW control word: first nibble 0,
    # flags, FRG, length 0 (the frame is longer than 64 bytes), 16-bit sequence (RFC 4385 §3).
    files["mpls_pw_cw.pcap"] = [
        (s, u, l2(a, 0x8847, mpls_stack([16001, 299], struct.pack("!HH", 0, (i + 1) & 0xFFFF) + f)))
        for i, (s, u, f, a) in enumerate(frames)
    ]
    # Without control word: the inner MACs get first nibble 0xa (locally administered a2:...),
    # as an operator must ensure when no CW is used (RFC 4928 §2: not 4 or 6 after the stack).
    files["mpls_pw.pcap"] = [
        (s, u, l2(a, 0x8847, mpls_stack([16001, 300], b"\xa2" + f[1:6] + b"\xa2" + f[7:]))) for s, u, f, a in frames
    ]
    gre_frames = inner_frames(records, with_fragments=True)
    recs = []
    for i, (s, u, f, a) in enumerate(gre_frames):
        et, ip = ip_of(f)
        recs += [(s, u, fr) for fr in outer4(a, 47, gre(et, ip, key=0x2A, seq=i))]
    files["gre.pcap"] = recs
    recs = []
    for s, u, f, a in frames:
        sd = (V4_A, V4_B) if a else (V4_B, V4_A)
        for p in ipv4_fragments(*sd, 47, gre(0x6558, f, csum=True), next_id(), mtu=1500):
            recs.append((s, u, l2(a, 0x0800, p)))
    files["gretap.pcap"] = recs
    files["gre6.pcap"] = [
        (s, u, l2(a, 0x86DD, ipv6(*((V6_A, V6_B) if a else (V6_B, V6_A)), 47, gre(ip_of(f)[0], ip_of(f)[1]))))
        for s, u, f, a in frames
    ]
    # ERSPAN type II (0x88BE): Ver 1 (4 bits), VLAN 12, COS 3, En 2, T 1, Session ID 10,
    # Reserved 12, Index 20; type III (0x22EB): Ver 2, VLAN 12, COS 3, BSO 2, T 1, Session ID
    # 10, Timestamp 32, SGT 16, P 1, FT 5, Hw ID 6, D 1, Gra 2, O 1; O = 1 adds the 8-byte
    # platform-specific subheader (draft-foschiano-erspan-03 §4.2-§4.3).
    recs = []
    for i, (s, u, f, a) in enumerate(frames):
        hdr = struct.pack("!HHI", 1 << 12 | 0, 0 << 13 | 3 << 11 | 0 << 10 | 7, 0)
        recs += [(s, u, fr) for fr in outer4(a, 47, gre(0x88BE, hdr + f, seq=i))]
    files["erspan2.pcap"] = recs
    recs = []
    for i, (s, u, f, a) in enumerate(frames):
        hdr = struct.pack("!HHIHH", 2 << 12, 7, (u // 100) & 0xFFFFFFFF, 0, 0x0C << 4 | 1 << 3 | 0 << 1 | 1)
        platform = struct.pack("!II", 3 << 26, s)  # Platf ID 3, then the seconds of the time
        recs += [(s, u, fr) for fr in outer4(a, 47, gre(0x22EB, hdr + platform + f, seq=i))]
    files["erspan3.pcap"] = recs
    # GTPv1-U G-PDU (3GPP TS 29.281 §5.1): flags (version 1, PT 1, E, S, PN), type 255,
    # length (after the first 8 bytes), TEID; E or S or PN adds sequence number 16, N-PDU
    # number 8 and next extension header type 8 (§5.1); the PDU Session Container (0x85,
    # §5.2.2.7, content in TS 38.415) is one 4-byte unit: length 1, two bytes, next type 0.
    recs = []
    for i, (s, u, f, a) in enumerate(frames):
        ip = ip_of(f)[1]
        if i % 2:
            opt = struct.pack("!HBB", i & 0xFFFF, 0, 0x85) + bytes([1, 0x10, 0x09, 0])
            g = struct.pack("!BBHI", 0x36, 0xFF, len(opt) + len(ip), 0x1000 + a) + opt + ip
        else:
            g = struct.pack("!BBHI", 0x30, 0xFF, len(ip), 0x1000 + a) + ip
        recs += [(s, u, fr) for fr in outer4(a, 17, udp(2152, 2152, g))]
    files["gtpu.pcap"] = recs
    files["ipip.pcap"] = [
        (s, u, fr) for s, u, f, a in frames if ip_of(f)[0] == 0x0800 for fr in outer4(a, 4, ip_of(f)[1])
    ]
    files["sit.pcap"] = [
        (s, u, fr) for s, u, f, a in frames if ip_of(f)[0] == 0x86DD for fr in outer4(a, 41, ip_of(f)[1])
    ]
    # PPPoE session stage (RFC 2516 §4): VER 1, TYPE 1, CODE 0, SESSION_ID, LENGTH (of the
    # PPP frame), then the PPP protocol (RFC 1661 §2: 0x0021 IPv4, RFC 5072 §3: 0x0057 IPv6).
    recs = []
    for s, u, f, a in frames:
        et, ip = ip_of(f)
        ppp = struct.pack("!H", 0x0021 if et == 0x0800 else 0x0057) + ip
        recs.append((s, u, l2(a, 0x8864, struct.pack("!BBHH", 0x11, 0, 0x1234, len(ppp)) + ppp)))
    files["pppoe.pcap"] = recs
    # L2TPv2 data message (RFC 2661 §3.1): T 0, L 1 (Length present), S 0, O 0, P 0, Ver 2;
    # Length, Tunnel ID, Session ID; then the PPP frame with address 0xFF and control 0x03
    # (RFC 1662 §3.1; kept when Address-and-Control-Field-Compression, RFC 1661 §6.6, is not
    # negotiated) and the 2-byte protocol (no Protocol-Field-Compression, RFC 1661 §6.5).
    recs = []
    for s, u, f, a in frames:
        et, ip = ip_of(f)
        ppp = b"\xff\x03" + struct.pack("!H", 0x0021 if et == 0x0800 else 0x0057) + ip
        l2tp = struct.pack("!HHHH", 0x4002, 8 + len(ppp), 7 if a else 9, 1 if a else 2) + ppp
        recs += [(s, u, fr) for fr in outer4(a, 17, udp(1701, 1701, l2tp))]
    files["l2tp.pcap"] = recs
    # TZSP (TaZmen Sniffer Protocol, qoe.capture._tunnels [10]), as a MikroTik router streams
    # what it sniffs to a collector at UDP 37008: version 1, type 0 (received), encapsulation 1
    # (Ethernet), a TAG_PADDING (0), a tagged field of type 10, length 1 (skipped as unknown),
    # TAG_END (1), then the frame; both directions' frames from the router (10.99.0.1).
    tzsp = struct.pack("!BBH", 1, 0, 1) + b"\x00" + b"\x0a\x01\x2a" + b"\x01"
    files["tzsp.pcap"] = [(s, u, fr) for s, u, f, a in frames for fr in outer4(True, 17, udp(50000, 37008, tzsp + f))]
    return files


def gtpu_subscribers(records):
    """Two GTP-U subscribers that reuse one private address: every inner frame twice, once
    in each subscriber's tunnel (TEIDs 0x1000/0x1001 from/to the eNodeB 10.99.0.1, and
    0x2000/0x2001 from/to the eNodeB 10.99.0.3; 3GPP TS 29.281 §5.1), so both carry the same
    inner addresses, ports and SSRCs. Not committed: tests write it to a temporary file
    (``python3 make_crafted.py --gtpu-subscribers OUT.pcap``)."""
    recs = []
    for s, u, f, a in inner_frames(records):
        ip = struct.unpack_from("!H", f, 12)[0], f[14:]
        for enb, teid in ((bytes([10, 99, 0, 1]), 0x1000), (bytes([10, 99, 0, 3]), 0x2000)):
            g = struct.pack("!BBHI", 0x30, 0xFF, len(ip[1]), teid + a) + ip[1]
            sd = (enb, V4_B) if a else (V4_B, enb)
            m = (MAC_B, MAC_A) if a else (MAC_A, MAC_B)
            recs += [(s, u, eth(*m, 0x0800, p)) for p in ipv4_fragments(*sd, 17, udp(2152, 2152, g), 1, mtu=1 << 16)]
    return recs


def main():
    import sys

    records = read_pcap(os.path.join(HERE, "inner.pcap"))
    if len(sys.argv) == 3 and sys.argv[1] == "--gtpu-subscribers":
        recs = gtpu_subscribers(records)
        write_pcap(sys.argv[2], recs)
        print(f"{sys.argv[2]}: {len(recs)} frames")
        return
    for name, recs in build(records).items():
        write_pcap(os.path.join(HERE, name), recs)
        print(f"{name}: {len(recs)} frames")


if __name__ == "__main__":
    main()
