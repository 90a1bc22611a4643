"""Tunnel and encapsulation headers: where the carried packet starts, and what it is.

Each function reads one header at ``data[off:end]`` and returns ``(kind, offset)``: the
kind of what it carries (:data:`KIND_IPV4`, :data:`KIND_IPV6`, :data:`KIND_ETHER` for an
Ethernet frame, :data:`KIND_MPLS` for a label stack) and where that starts, or
``(KIND_NONE, 0)`` when the header is cut short, malformed, or carries no user data
(control and OAM messages). The :class:`~qoe.capture._decode.Decoder` chains them.

Deciding what follows an MPLS label stack
-----------------------------------------
The stack does not say what it carries (RFC 3032 §2.1: the label's binding does). As
receivers and analysers do, :func:`mpls` decides from the bottom label and the first
nibble after the stack:

- bottom label 0 (IPv4 Explicit NULL) → IPv4; 2 (IPv6 Explicit NULL) → IPv6 (RFC 3032 §2.1);
- first nibble 4 → IPv4, 6 → IPv6 (the IP version field, RFC 791 §3.1, RFC 8200 §3);
- first nibble 0 → a pseudowire control word (RFC 4385 §3, "the first nibble is 0"), then
  an Ethernet frame (RFC 4448 §4.6, the PW type carried over MPLS in practice);
- first nibble 1 → the PW Associated Channel Header (RFC 4385 §3, RFC 5586 §2): OAM, no
  user data;
- anything else → an Ethernet frame without control word (RFC 4448 §4.6 makes the control
  word optional; RFC 4928 §2 is why such a frame never starts with 4 or 6 in a working
  network).

A guessed Ethernet frame only counts if its EtherType chain leads to IP. Wireshark instead
dissects an Ethernet pseudowire only when told to (``-d mpls.label==L,pwethcw`` or
``pwethnocw``); the tests give it that label.

Reading ESP with NULL encryption
--------------------------------
An ESP packet does not say whether it is encrypted (RFC 4303 §2: the algorithm is in the
Security Association, not on the wire). :func:`esp_null` decides, as Wireshark's ESP NULL
heuristic does, from what NULL encryption (RFC 2410 §2) leaves readable: for an ICV of
12 octets (HMAC-SHA1-96, HMAC-MD5-96, AES-XCBC-MAC-96) then 16 (HMAC-SHA-256-128,
AES-GMAC), the trailer before the ICV must have a Next Header of 4 (IPv4), 41 (IPv6), 17
(UDP) or 6 (TCP), Pad Length and Next Header must end on a 4-octet boundary, the padding
must be the default 1, 2, 3, ... (RFC 4303 §2.4), and the payload must parse as that
protocol with its own length field equal to the payload's length (IPv4 Total Length, IPv6
Payload Length + 40, UDP Length; TCP: a Data Offset within it and zero reserved bits).
Random (encrypted) bytes pass all of that for about 1 packet in 10^6 (measured: 0 of 10^6
random payloads of 20-400 octets; the weakest case is TCP, whose header has no length
field: Next Header 1 in 256, Pad Length 0 or its padding 1 in 256, reserved bits 1 in 8),
so an encrypted flow is not taken for a readable one; ICVs of other lengths
(HMAC-SHA-384-192, HMAC-SHA-512-256) are not tried.

References
----------
.. [1] RFC 3032 §2.1 (label stack entry: label 20 bits, TC 3, S 1, TTL 8); RFC 4182
   (Explicit NULL anywhere in the stack); RFC 4023 (MPLS in GRE, protocol 0x8847/0x8848).
.. [2] RFC 4385 §3 (PW control word, first nibble 0; Associated Channel first nibble 1);
   RFC 4448 §4.6 (Ethernet over MPLS, control word optional); RFC 4928 §2.
.. [3] RFC 2784 §2 (GRE: C bit, version 0, protocol type; checksum + Reserved1 when C);
   RFC 2890 §2 (K: key, S: sequence number); RFC 1701 §2 (R: routing, deprecated by RFC 2784
   §2.3: such packets are not decoded); RFC 1701 §3 / IANA EtherType 0x6558 (transparent
   Ethernet bridging).
.. [4] draft-foschiano-erspan-03 §4.1-§4.3 (ERSPAN type I: GRE 0x88BE without sequence
   number, no header; type II: 0x88BE, 8-byte header, Ver 1; type III: 0x22EB, 12-byte
   header, Ver 2, plus an 8-byte platform-specific subheader when O = 1).
.. [5] RFC 7348 §5 (VXLAN: UDP port 4789, 8-byte header, I flag 0x08 set, then Ethernet).
.. [6] 3GPP TS 29.281 (Release 17) §4.4.2 (GTP-U UDP port 2152), §5.1 (header: version 1, PT 1,
   E/S/PN flags, message type, length after the first 8 octets, TEID; the 4 optional
   octets when any of E, S, PN is set), §5.2 (extension headers: length in 4-octet units,
   last octet the next type), §6.1 (message type 255 = G-PDU, the only one with user data).
.. [7] RFC 2661 §3.1 (L2TPv2 header: T, L, S, O, P flags, Ver 2, UDP port 1701 §8.1);
   RFC 1662 §3.1 (PPP address 0xFF, control 0x03); RFC 1661 §2 and §6.5 (protocol field,
   1 octet when compressed: an odd value); RFC 1332 §2 (0x0021 IPv4), RFC 5072 §3 (0x0057
   IPv6).
.. [9] RFC 4303 §2 (ESP packet: SPI, Sequence Number, payload, Padding, Pad Length, Next
   Header, ICV), §2.4 (default padding 1, 2, 3, ...; Pad Length and Next Header right-aligned
   on 4 octets), §3.1.1-§3.1.2 (transport and tunnel mode); RFC 2410 §2 (NULL encryption:
   the payload as is, block size 1); RFC 2404 §2 (HMAC-SHA1-96, 12 octets), RFC 2403
   (HMAC-MD5-96, 12), RFC 3566 (AES-XCBC-MAC-96, 12), RFC 4868 §2.3 (HMAC-SHA-256-128,
   16), RFC 4543 (AES-GMAC, 16); RFC 3948 §2.1-§2.2 (ESP in UDP, port 4500, the 4-zero-octet
   Non-ESP Marker before IKE messages).
.. [8] RFC 2003 §3 (IPv4 in IPv4, protocol 4); RFC 4213 §3.5 (IPv6 in IPv4, protocol 41);
   RFC 2473 §3 (IPv6 generic packet tunnelling, next header 4 or 41).
.. [10] TZSP, the TaZmen Sniffer Protocol (MikroTik's packet sniffer and some access points
   stream what they capture in it): no standard text could be read here. Followed: the
   protocol summary in Wikipedia's "TZSP" article (from the original Tazmen specification:
   4-byte header version 1, type, encapsulated protocol, big-endian; tagged fields of type,
   length and data, TAG_PADDING 0 and TAG_END 1 without length, unknown tags skipped; then
   the frame; encapsulation 1 = Ethernet) and IANA's service name "tzsp" for UDP port 37008.
"""

from __future__ import annotations

KIND_NONE = 0
KIND_ETHER = 1  # an Ethernet II frame (destination, source, EtherType ...)
KIND_MPLS = 2  # an MPLS label stack
KIND_IPV4 = 4
KIND_IPV6 = 6

IPPROTO_IPIP = 4  # RFC 2003 §3
IPPROTO_IPV6 = 41  # RFC 4213 §3.5
IPPROTO_GRE = 47  # RFC 2784
IPPROTO_ESP = 50  # RFC 4303 §2 (IANA)
IP_TUNNEL_PROTOCOLS = frozenset({IPPROTO_IPIP, IPPROTO_IPV6, IPPROTO_GRE, IPPROTO_ESP})

ESP_ICV_LENGTHS = (12, 16)  # tried in this order (module notes; RFC 2404 §2, RFC 4868 §2.3)
ESP_NEXT_HEADERS = frozenset({4, 41, 17, 6})  # IPv4, IPv6 (tunnel mode); UDP, TCP (transport)
_ESP_PAD = bytes(range(1, 256))  # RFC 4303 §2.4: default padding 1, 2, 3, ...

UDP_PORT_VXLAN = 4789  # RFC 7348 §5 (IANA)
UDP_PORT_GTPU = 2152  # 3GPP TS 29.281 §4.4.2
UDP_PORT_L2TP = 1701  # RFC 2661 §8.1
UDP_PORT_IPSEC_NAT_T = 4500  # RFC 3948 §2 (UDP-encapsulated ESP, the port of RFC 3947 §4)
UDP_PORT_TZSP = 37008  # IANA service name "tzsp" [10]
UDP_TUNNEL_PORTS = frozenset({UDP_PORT_VXLAN, UDP_PORT_GTPU, UDP_PORT_L2TP, UDP_PORT_IPSEC_NAT_T, UDP_PORT_TZSP})

ETHERTYPE_MPLS = 0x8847  # RFC 3032 §5 (unicast)
ETHERTYPE_MPLS_MC = 0x8848  # RFC 5332 §4 (multicast)
MPLS_ETHERTYPES = frozenset({ETHERTYPE_MPLS, ETHERTYPE_MPLS_MC})
ETHERTYPE_TEB = 0x6558  # transparent Ethernet bridging (GRE protocol type)
ETHERTYPE_ERSPAN_II = 0x88BE  # draft-foschiano-erspan-03 §4.1-§4.2 (also type I)
ETHERTYPE_ERSPAN_III = 0x22EB  # draft-foschiano-erspan-03 §4.3
PPP_IPV4 = 0x0021  # RFC 1332 §2
PPP_IPV6 = 0x0057  # RFC 5072 §3

_NONE = (KIND_NONE, 0)
# what a TZSP frame's EtherType may be for qoe to read it: IPv4, IPv6, 802.1Q/802.1ad tags, MPLS, PPPoE session
_TZSP_ETHERTYPES = frozenset({0x0800, 0x86DD, 0x8100, 0x88A8, ETHERTYPE_MPLS, ETHERTYPE_MPLS_MC, 0x8864})


def after_ip_version(data: bytes, off: int, end: int) -> tuple[int, int]:
    """IPv4 or IPv6 at ``off`` by its version nibble (RFC 791 §3.1, RFC 8200 §3)."""
    if off >= end:
        return _NONE
    v = data[off] >> 4
    if v == 4:
        return KIND_IPV4, off
    if v == 6:
        return KIND_IPV6, off
    return _NONE


def mpls(data: bytes, off: int, end: int) -> tuple[int, int]:
    """What follows the label stack at ``off`` (see the module notes for the rule)."""
    while True:
        if off + 4 > end:
            return _NONE
        label = data[off] << 12 | data[off + 1] << 4 | data[off + 2] >> 4
        bottom = data[off + 2] & 1  # S bit, RFC 3032 §2.1
        off += 4
        if bottom:
            break
    if label == 0:  # IPv4 Explicit NULL, RFC 3032 §2.1
        return KIND_IPV4, off
    if label == 2:  # IPv6 Explicit NULL, RFC 3032 §2.1
        return KIND_IPV6, off
    if off >= end:
        return _NONE
    nibble = data[off] >> 4
    if nibble == 4:
        return KIND_IPV4, off
    if nibble == 6:
        return KIND_IPV6, off
    if nibble == 0:  # PW control word (RFC 4385 §3), then Ethernet (RFC 4448 §4.6)
        return (KIND_ETHER, off + 4) if off + 4 + 14 <= end else _NONE
    if nibble == 1:  # PW Associated Channel (RFC 4385 §3, RFC 5586 §2): OAM
        return _NONE
    return (KIND_ETHER, off) if off + 14 <= end else _NONE


def gre(data: bytes, off: int, end: int) -> tuple[int, str, int]:
    """``(kind, name, offset)`` of a GRE payload (RFC 2784 / RFC 2890), ERSPAN headers
    skipped; ``name`` is "gre" or "erspan-i" / "erspan-ii" / "erspan-iii", with the
    tunnel's identifier when it has one (:func:`tagged`): the GRE key ("gre[key=42]", RFC
    2890 §2.1) or the ERSPAN session ID ("erspan-ii[session=7]", draft-foschiano-erspan-03
    §4.2-§4.3)."""
    if off + 4 > end:
        return KIND_NONE, "gre", 0
    flags = data[off] << 8 | data[off + 1]
    proto = data[off + 2] << 8 | data[off + 3]
    if flags & 0x4007:  # R (RFC 1701 routing) or a version other than 0 (RFC 2784 §2.3-§2.4)
        return KIND_NONE, "gre", 0
    p = off + 4
    if flags & 0x8000:  # C: Checksum and Reserved1 (RFC 2784 §2.5)
        p += 4
    name = "gre"
    if flags & 0x2000:  # K: Key (RFC 2890 §2.1)
        if p + 4 > end:
            return KIND_NONE, "gre", 0
        name = tagged("gre", f"key={int.from_bytes(data[p:p + 4], 'big')}")
        p += 4
    seq = bool(flags & 0x1000)
    if seq:  # S: Sequence Number (RFC 2890 §2.2)
        p += 4
    if p > end:
        return KIND_NONE, "gre", 0
    if proto == 0x0800:
        return KIND_IPV4, name, p
    if proto == 0x86DD:
        return KIND_IPV6, name, p
    if proto == ETHERTYPE_TEB:
        return KIND_ETHER, name, p
    if proto in MPLS_ETHERTYPES:  # RFC 4023 §4
        return KIND_MPLS, name, p
    if proto == ETHERTYPE_ERSPAN_II:
        if not seq:  # type I: the mirrored frame right after GRE (§4.1)
            return KIND_ETHER, "erspan-i", p
        if p + 8 > end or data[p] >> 4 != 1:  # type II header, Ver = 1 (§4.2)
            return KIND_NONE, "erspan-ii", 0
        return KIND_ETHER, tagged("erspan-ii", _erspan_session(data, p)), p + 8
    if proto == ETHERTYPE_ERSPAN_III:
        if p + 12 > end or data[p] >> 4 != 2:  # type III header, Ver = 2 (§4.3)
            return KIND_NONE, "erspan-iii", 0
        at = p + 12 + (8 if data[p + 11] & 1 else 0)  # O: platform subheader
        return KIND_ETHER, tagged("erspan-iii", _erspan_session(data, p)), at
    return KIND_NONE, "gre", 0


def _erspan_session(data: bytes, p: int) -> str:
    """The Session ID of an ERSPAN type II or III header at ``p``: the low 10 bits of its
    second 16-bit word (draft-foschiano-erspan-03 §4.2, §4.3)."""
    return f"session={(data[p + 2] << 8 | data[p + 3]) & 0x3FF}"


def tagged(name: str, ident: str) -> str:
    """A layer's name with its tunnel identifier: ``name[ident]`` (how
    :attr:`~qoe.capture.Packet.encapsulation` writes one)."""
    return f"{name}[{ident}]"


def mpls_labels(data: bytes, off: int, end: int) -> str:
    """The labels of the stack at ``off``, top first, as "labels=16001,24005" (RFC 3032
    §2.1: 20 bits of each 4-byte entry, up to the entry with the S bit); "" if cut short."""
    out = []
    while off + 4 <= end:
        out.append(str(data[off] << 12 | data[off + 1] << 4 | data[off + 2] >> 4))
        if data[off + 2] & 1:
            return "labels=" + ",".join(out)
        off += 4
    return ""


def vxlan(data: bytes, off: int, end: int) -> tuple[int, int]:
    """The Ethernet frame after a VXLAN header (RFC 7348 §5), if its I flag is set."""
    if off + 8 + 14 > end or not data[off] & 0x08:
        return _NONE
    return KIND_ETHER, off + 8


def tzsp(data: bytes, off: int, end: int) -> tuple[int, int]:
    """The Ethernet frame a TZSP packet carries [10]: version 1, type 0 (a received packet) or
    1 (a packet for transmit), encapsulation 1 (Ethernet); the tagged fields skipped to
    TAG_END. Other types (configuration, keepalive, port opener) and encapsulations (802.11,
    Prism, AVS: not read here) carry no frame of ours."""
    if off + 5 > end or data[off] != 1 or data[off + 1] > 1 or data[off + 2] != 0 or data[off + 3] != 1:
        return _NONE
    p = off + 4
    while p < end:
        tag = data[p]
        if tag == 1:  # TAG_END: the frame follows (a frame of IP, VLAN, MPLS or PPPoE: a port in
            # the ephemeral range may carry another protocol's datagram that starts alike)
            p += 1
            ok = p + 14 <= end and (data[p + 12] << 8 | data[p + 13]) in _TZSP_ETHERTYPES
            return (KIND_ETHER, p) if ok else _NONE
        p += 1 if tag == 0 else 2 + (data[p + 1] if p + 1 < end else end)  # TAG_PADDING, or type, length, data
    return _NONE


def gtpu(data: bytes, off: int, end: int) -> tuple[int, int]:
    """The IP packet of a GTPv1-U G-PDU (3GPP TS 29.281 §5.1-§5.2)."""
    if off + 8 > end:
        return _NONE
    flags = data[off]
    # version 1 (3 bits) and PT = 1 (GTP, not GTP'); message type 255 = G-PDU (§6.1)
    if flags >> 5 != 1 or not flags & 0x10 or data[off + 1] != 0xFF:
        return _NONE
    stop = off + 8 + (data[off + 2] << 8 | data[off + 3])  # Length: octets after the first 8
    if stop < end:
        end = stop
    p = off + 8
    if flags & 0x07:  # E, S or PN: sequence number 2, N-PDU number 1, next extension type 1
        if p + 4 > end:
            return _NONE
        nxt = data[p + 3] if flags & 0x04 else 0
        p += 4
        while nxt:  # §5.2.1: length in 4-octet units, the last octet is the next type
            if p + 1 > end or not data[p]:
                return _NONE
            p += data[p] << 2
            if p > end:
                return _NONE
            nxt = data[p - 1]
    return after_ip_version(data, p, end)


def l2tp(data: bytes, off: int, end: int) -> tuple[int, int]:
    """The IP packet inside an L2TPv2 data message's PPP frame (RFC 2661 §3.1)."""
    if off + 6 > end:
        return _NONE
    flags = data[off] << 8 | data[off + 1]
    if flags & 0x8000 or flags & 0x000F != 2:  # T: a control message; Ver must be 2
        return _NONE
    p = off + 2
    if flags & 0x4000:  # L: Length
        stop = off + (data[p] << 8 | data[p + 1])
        if stop < end:
            end = stop
        p += 2
    p += 4  # Tunnel ID, Session ID
    if flags & 0x0800:  # S: Ns, Nr
        p += 4
    if flags & 0x0200:  # O: Offset Size, then that many octets of padding
        if p + 2 > end:
            return _NONE
        p += 2 + (data[p] << 8 | data[p + 1])
    return ppp(data, p, end)


def ppp(data: bytes, p: int, end: int) -> tuple[int, int]:
    """IP in a PPP frame: optional address/control 0xFF 0x03 (RFC 1662 §3.1), a 1- or
    2-octet protocol field (RFC 1661 §2, §6.5)."""
    if p + 2 <= end and data[p] == 0xFF and data[p + 1] == 0x03:
        p += 2
    if p >= end:
        return _NONE
    if data[p] & 1:  # compressed: one odd octet
        proto, p = data[p], p + 1
    elif p + 2 <= end:
        proto, p = data[p] << 8 | data[p + 1], p + 2
    else:
        return _NONE
    if proto == PPP_IPV4:
        return KIND_IPV4, p
    if proto == PPP_IPV6:
        return KIND_IPV6, p
    return _NONE


def udp_tunnel(sport: int, dport: int, data: bytes, off: int, end: int) -> tuple[int, str, int]:
    """``(kind, name, offset)`` of a tunnel in a UDP payload, by its registered port:
    VXLAN to 4789 (the source port is a flow hash, RFC 7348 §5), GTP-U from or to 2152,
    L2TP from or to 1701, TZSP to or from 37008; ``kind`` 0 if the header does not check out. ``name`` carries
    the tunnel's identifier (:func:`tagged`): "vxlan[vni=42]", "gtp-u[teid=0x00001001]",
    "l2tp[tunnel=7,session=1]"."""
    if dport == UDP_PORT_VXLAN:
        kind, at = vxlan(data, off, end)
        if not kind:
            return kind, "vxlan", at
        # RFC 7348 §5: the 24-bit VNI in octets 4-6 of the VXLAN header
        return kind, tagged("vxlan", f"vni={data[off + 4] << 16 | data[off + 5] << 8 | data[off + 6]}"), at
    if dport == UDP_PORT_GTPU or sport == UDP_PORT_GTPU:
        kind, at = gtpu(data, off, end)
        if not kind:
            return kind, "gtp-u", at
        # 3GPP TS 29.281 §5.1: the TEID in octets 5-8 of the header
        return kind, tagged("gtp-u", f"teid=0x{int.from_bytes(data[off + 4:off + 8], 'big'):08x}"), at
    if dport == UDP_PORT_L2TP or sport == UDP_PORT_L2TP:
        kind, at = l2tp(data, off, end)
        if not kind:
            return kind, "l2tp", at
        # RFC 2661 §3.1: Tunnel ID and Session ID after the flags (and the Length when L is set)
        p = off + (4 if data[off] & 0x40 else 2)
        tunnel, session = data[p] << 8 | data[p + 1], data[p + 2] << 8 | data[p + 3]
        return kind, tagged("l2tp", f"tunnel={tunnel},session={session}"), at
    if dport == UDP_PORT_TZSP or sport == UDP_PORT_TZSP:
        kind, at = tzsp(data, off, end)
        return kind, "tzsp", at
    return KIND_NONE, "", 0


def esp_spi(data: bytes, off: int, end: int) -> int | None:
    """The SPI of the ESP header at ``off`` (RFC 4303 §2.1), None if cut short."""
    if off + 8 > end:
        return None
    return int.from_bytes(data[off : off + 4], "big")


def esp_null(data: bytes, off: int, end: int) -> tuple[int, int, int]:
    """``(next_header, start, stop)`` of the payload of the ESP packet at ``data[off:end]``
    if it reads as NULL-encrypted (see the module notes), else ``(0, 0, 0)``."""
    start = off + 8  # SPI, Sequence Number (RFC 4303 §2); NULL has no IV (RFC 2410 §2)
    for icv in ESP_ICV_LENGTHS:
        t = end - icv - 2  # Pad Length at t, Next Header at t + 1
        if t < start or (t + 2 - off) & 3:  # §2.4: ends on a 4-octet boundary
            continue
        nh = data[t + 1]
        if nh not in ESP_NEXT_HEADERS:
            continue
        pad = data[t]
        stop = t - pad
        if stop < start or data[stop:t] != _ESP_PAD[:pad]:
            continue
        if _parses_as(nh, data, start, stop):
            return nh, start, stop
    return 0, 0, 0


def _parses_as(nh: int, data: bytes, start: int, stop: int) -> bool:
    """Whether ``data[start:stop]`` is one whole packet of protocol ``nh``, by its own
    length field: IPv4 Total Length (RFC 791 §3.1), IPv6 Payload Length (RFC 8200 §3),
    UDP Length (RFC 768); TCP (RFC 9293 §3.1) a Data Offset of 5 or more inside it."""
    n = stop - start
    if nh == 17:
        return n >= 8 and (data[start + 4] << 8 | data[start + 5]) == n
    if nh == 4:
        return n >= 20 and data[start] >> 4 == 4 and (data[start] & 15) >= 5 and (
            data[start + 2] << 8 | data[start + 3]) == n
    if nh == 41:
        return n >= 40 and data[start] >> 4 == 6 and (data[start + 4] << 8 | data[start + 5]) + 40 == n
    if nh == 6:  # Data Offset, then 3 reserved bits that are zero (RFC 9293 §3.1; the 4th is AE/NS)
        return n >= 20 and not data[start + 12] & 0x0E and 20 <= (data[start + 12] >> 4) << 2 <= n
    return False
