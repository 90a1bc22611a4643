"""From captured bytes to :class:`~qoe.capture.Packet`: link layer, IP, UDP/TCP.

Headers are read with :mod:`struct` at fixed offsets into the record's bytes (no object
per protocol layer), because this runs once per packet.

References
----------
.. [1] tcpdump.org link-layer header types (see :mod:`qoe.capture._linktypes`).
.. [2] RFC 791 §3.1 (IPv4 header), RFC 815 (reassembly), see :mod:`._reassembly`.
.. [3] RFC 8200 §3 (IPv6 header), §4 (extension headers: Hop-by-Hop Options 0, Routing 43,
   Fragment 44, Destination Options 60), §4.5 (fragment header); RFC 4302 §2 (AH, 51:
   length in 32-bit words minus 2); RFC 6275 §6.1 (Mobility header, 135); RFC 7401
   §5.1 (HIP, 139) and RFC 5533 §5.1 (Shim6, 140) use the 8-octet-unit length of
   RFC 8200 §4 too (RFC 7045 §2). RFC 6946 (atomic fragments).
.. [4] RFC 768 (UDP header); RFC 9293 §3.1 (TCP header), §3.2 (options); RFC 7323,
   RFC 2018 (TCP options).
.. [5] Tunnels (MPLS, GRE, ERSPAN, VXLAN, GTP-U, L2TP, IP in IP, ESP): see
   :mod:`qoe.capture._tunnels`.
.. [6] RFC 4303 §3.1.1-§3.1.2 (ESP transport and tunnel mode), RFC 2410 (NULL encryption).

Tunnels
-------
Encapsulations are peeled outer to inner until the innermost IP packet: an Ethernet-like
EtherType chain (VLAN tags, LLC/SNAP, PPPoE, MPLS), IP protocols 4, 41 and 47, and UDP to
the ports of VXLAN, GTP-U and L2TP. The packet returned is the innermost one (its 5-tuple
is the flow's identity); :attr:`Packet.encapsulation` names the layers it came through.
Each IP layer is defragmented on its own (outer fragments, then inner ones), all in the
same bounded reassembly state. At most :data:`MAX_TUNNEL_DEPTH` tunnels are peeled.

IPsec ESP (IP protocol 50, or in UDP to or from port 4500, RFC 3948 §2.2) is peeled when its payload reads as NULL-encrypted (RFC 2410;
the heuristic is in :func:`qoe.capture._tunnels.esp_null`): in tunnel mode the inner IP
packet, in transport mode the UDP/TCP segment with the outer addresses; the layer is
named "esp[spi=0x...]". Other ESP packets (encrypted) are counted per SPI in
:attr:`Decoder.esp_unread`, and :func:`warn_unread_esp` says so once the read is done.
"""

from __future__ import annotations

import ipaddress
import struct
import warnings
from collections.abc import Callable
from socket import inet_ntoa

from qoe.capture._linktypes import (
    AF_INET,
    AF_INET6_VALUES,
    ETHER_MAX_LENGTH,
    ETHERTYPE_FIELD,
    ETHERTYPE_IPV4,
    ETHERTYPE_IPV6,
    ETHERTYPE_PPPOE_SESSION,
    IP_VERSION_OF_LINKTYPE,
    LINKTYPE_ETHERNET,
    LINKTYPE_LOOP,
    LINKTYPE_NULL,
    LLC_SNAP,
    PPP_IPV4,
    PPP_IPV6,
    RAW_IP_LINKTYPES,
    VLAN_TPIDS,
)
from qoe.capture._reassembly import ReassemblyLimits
from qoe.capture._tunnels import (
    IP_TUNNEL_PROTOCOLS,
    IPPROTO_ESP,
    IPPROTO_GRE,
    IPPROTO_IPIP,
    KIND_ETHER,
    KIND_IPV4,
    KIND_IPV6,
    MPLS_ETHERTYPES,
    UDP_PORT_IPSEC_NAT_T,
    UDP_TUNNEL_PORTS,
    esp_null,
    esp_spi,
    gre,
    mpls,
    mpls_labels,
    tagged,
    udp_tunnel,
)
from qoe.capture._types import Packet, make_packet, make_tcpinfo
from qoe.errors import InputError, QoEWarning

IPPROTO_TCP = 6  # RFC 9293 / IANA protocol numbers
IPPROTO_UDP = 17  # RFC 768
PROTOCOLS = {"udp": IPPROTO_UDP, "tcp": IPPROTO_TCP}

# RFC 8200 §4 extension headers whose length field counts 8-octet units beyond the first.
_EXT_8OCTET = frozenset({0, 43, 60, 135, 139, 140})
_IP6_FRAGMENT = 44  # RFC 8200 §4.5
_IP6_AH = 51  # RFC 4302 §2.2: Payload Len in 32-bit words, minus 2

_U16 = struct.Struct("!H")
_IPV4 = struct.Struct("!HHHBB")  # total length, identification, flags+fragment offset, TTL, protocol
_UDP = struct.Struct("!HHH")  # source port, destination port, length (RFC 768)
_TCP = struct.Struct("!HHIIHHH")  # ports, seq, ack, offset+flags, window, checksum (RFC 9293 §3.1)
_TCP_URG = struct.Struct("!H")
_FRAG6 = struct.Struct("!HI")  # offset+M, identification (RFC 8200 §4.5)
_SACK = struct.Struct("!II")  # two 32-bit values: SACK edges, or TSval/TSecr


# _ethertype_chain's entry for a bare label stack (MPLS in GRE, RFC 4023 §4).
MPLS_ETHERTYPE_FIRST = 0x8847

# Tunnels peeled at most (crafted input could nest them until the frame ends).
MAX_TUNNEL_DEPTH = 8

# Address text cache size: distinct addresses in one capture are few; the bound only keeps
# a pathological capture (a scan, spoofed sources) from growing it without end.
_ADDR_CACHE_MAX = 1 << 16


def parse_tcp_options(
    opts: bytes,
) -> tuple[int | None, int | None, bool, tuple[tuple[int, int], ...], int | None, int | None]:
    """TCP options ``(mss, wscale, sack_permitted, sack, tsval, tsecr)``.

    RFC 9293 §3.2 (End of Option List 0, No-Operation 1, MSS 2), RFC 7323 §2.2 (Window
    Scale 3) and §3.2 (Timestamps 8), RFC 2018 §2-§3 (SACK-permitted 4, SACK 5); other
    kinds are skipped by their length byte; a malformed length ends the parse.
    """
    mss = wscale = tsval = tsecr = None
    sack_ok = False
    sack: tuple[tuple[int, int], ...] = ()
    i = 0
    n = len(opts)
    while i < n:
        kind = opts[i]
        if kind == 0:  # End of Option List
            break
        if kind == 1:  # No-Operation
            i += 1
            continue
        if i + 1 >= n:
            break
        ln = opts[i + 1]
        if ln < 2 or i + ln > n:
            break
        if kind == 2 and ln == 4:
            mss = _U16.unpack_from(opts, i + 2)[0]
        elif kind == 3 and ln == 3:
            wscale = opts[i + 2]
        elif kind == 4 and ln == 2:
            sack_ok = True
        elif kind == 5 and ln >= 10 and (ln - 2) % 8 == 0:
            sack = tuple(_SACK.unpack_from(opts, j) for j in range(i + 2, i + ln, 8))
        elif kind == 8 and ln == 10:
            tsval, tsecr = _SACK.unpack_from(opts, i + 2)
        i += ln
    return mss, wscale, sack_ok, sack, tsval, tsecr


class _Frame:
    """What every layer of one record's decoding needs of the record, passed down as one.

    The frame number, capture time, interface and length on the wire (copied into the
    packet made at the end), and the tunnels peeled so far: their names
    (:attr:`Packet.encapsulation`) and how many (bounded by :data:`MAX_TUNNEL_DEPTH`).
    Peeling is linear (a layer hands its payload to one inner layer), so a layer entering
    a tunnel updates ``encap`` and ``depth`` in place.
    """

    __slots__ = ("index", "ts_ns", "iface", "wire_len", "encap", "depth")

    def __init__(self, index: int, ts_ns: int, iface: int, wire_len: int, encap: str) -> None:
        self.index = index
        self.ts_ns = ts_ns
        self.iface = iface
        self.wire_len = wire_len
        self.encap = encap
        self.depth = 0


class Decoder:
    """Turns records into packets; holds the reassembly state of one read.

    Parameters
    ----------
    protocols : frozenset of int
        Which transports to return (IP protocol numbers, from :func:`protocol_numbers`).
    reassembly : ReassemblyLimits
        Bounds of the IPv4 and IPv6 fragment reassembly state.
    """

    def __init__(self, protocols: frozenset[int], reassembly: ReassemblyLimits = ReassemblyLimits()) -> None:
        self.want = protocols
        self.frag4, self.frag6 = reassembly.reassemblers()
        self._addr: dict[bytes, str] = {}
        self.esp_unread: dict[int, int] = {}  # SPI -> ESP packets not read (encrypted)

    def addr(self, raw: bytes) -> str:
        """Address text for 4 or 16 raw bytes, as :mod:`ipaddress` prints it (cached)."""
        s = self._addr.get(raw)
        if s is None:
            if len(self._addr) >= _ADDR_CACHE_MAX:
                self._addr.clear()
            # (IPv4: socket.inet_ntoa prints the same dotted quad five times faster)
            s = self._addr[raw] = inet_ntoa(raw) if len(raw) == 4 else str(ipaddress.ip_address(raw))
        return s

    def network_offset(self, linktype: int, data: bytes) -> tuple[int, int, str]:
        """``(ip_version, offset, encapsulation)`` of the first IP header in a frame
        (version 0 if none); ``encapsulation`` names the layers passed on the way
        ("pppoe", "mpls[labels=16]", "mpls[labels=16]/mpls-pw[labels=17]", or "")."""
        n = len(data)
        field = ETHERTYPE_FIELD.get(linktype)
        if field is not None:  # Ethernet, Linux cooked v1/v2: an EtherType, then a chain
            at, off = field
            if n < off:
                return 0, 0, ""
            et = data[at] << 8 | data[at + 1]
            return self._ethertype_chain(data, et, off, linktype == LINKTYPE_ETHERNET, "")
        if linktype in RAW_IP_LINKTYPES:
            if not n:
                return 0, 0, ""
            v = data[0] >> 4
            return (v, 0, "") if v in (4, 6) else (0, 0, "")
        if linktype in IP_VERSION_OF_LINKTYPE:
            return IP_VERSION_OF_LINKTYPE[linktype], 0, ""
        if linktype == LINKTYPE_NULL or linktype == LINKTYPE_LOOP:
            if n < 4:
                return 0, 0, ""
            if linktype == LINKTYPE_LOOP:
                af = int.from_bytes(data[:4], "big")
            else:
                # LINKTYPE_NULL: host byte order of the writer; an AF value is < 2^16.
                af = int.from_bytes(data[:4], "little")
                if af > 0xFFFF:
                    af = int.from_bytes(data[:4], "big")
            if af == AF_INET:
                return 4, 4, ""
            if af in AF_INET6_VALUES:
                return 6, 4, ""
        return 0, 0, ""

    def _ethertype_chain(self, data: bytes, et: int, off: int, ethernet: bool, encap: str) -> tuple[int, int, str]:
        """Follow an EtherType ``et`` whose payload starts at ``off``: VLAN tags
        (802.1Q/802.1ad/QinQ), LLC/SNAP (``ethernet``: an 802.3 length field is possible),
        PPPoE session, MPLS label stacks (and the Ethernet pseudowires after them)."""
        n = len(data)
        layers = 0
        while True:
            if et == ETHERTYPE_IPV4:
                return 4, off, encap
            if et == ETHERTYPE_IPV6:
                return 6, off, encap
            if et in VLAN_TPIDS:
                if n < off + 4:
                    return 0, 0, ""
                et = data[off + 2] << 8 | data[off + 3]
                off += 4
            elif et <= ETHER_MAX_LENGTH and ethernet:
                # IEEE 802.3 length field: IP only over LLC/SNAP with OUI 0 (RFC 1042).
                if n < off + 8 or data[off : off + 3] != LLC_SNAP or data[off + 3 : off + 6] != b"\0\0\0":
                    return 0, 0, ""
                et = data[off + 6] << 8 | data[off + 7]
                off += 8
            elif et == ETHERTYPE_PPPOE_SESSION:
                # RFC 2516 §4: 6-byte PPPoE header, then the 2-byte PPP protocol (RFC 1661).
                if n < off + 8:
                    return 0, 0, ""
                proto = data[off + 6] << 8 | data[off + 7]
                off += 8
                encap = encap + "/pppoe" if encap else "pppoe"
                if proto == PPP_IPV4:
                    return 4, off, encap
                if proto == PPP_IPV6:
                    return 6, off, encap
                return 0, 0, ""
            elif et in MPLS_ETHERTYPES:
                layers += 1
                if layers > MAX_TUNNEL_DEPTH:
                    return 0, 0, ""
                labels = mpls_labels(data, off, n)
                kind, off = mpls(data, off, n)
                name = "mpls" if kind != KIND_ETHER else "mpls-pw"
                name = tagged(name, labels) if labels else name
                encap = encap + "/" + name if encap else name
                if kind == KIND_IPV4 or kind == KIND_IPV6:
                    return kind, off, encap
                if kind != KIND_ETHER:
                    return 0, 0, ""
                # an Ethernet pseudowire: its own EtherType chain
                et = data[off + 12] << 8 | data[off + 13]
                off += 14
                ethernet = True
            else:
                return 0, 0, ""

    def decode(self, index: int, ts_ns: int, iface: int, linktype: int, wire_len: int, data: bytes) -> Packet | None:
        """The packet in one record, or ``None`` (not IP, not a wanted transport, a
        fragment of a datagram not yet complete, or headers cut short). Tunnels are
        decapsulated: the innermost packet is returned."""
        n = len(data)
        # Fast path, inline: Ethernet II, IPv4 without options, not a fragment (the common
        # case), not a tunnel. Anything else takes the general path below.
        if linktype == LINKTYPE_ETHERNET and n >= 42 and data[12] == 8 and data[13] == 0 and data[14] == 0x45:
            total, ident, frag, _ttl, proto = _IPV4.unpack_from(data, 16)
            if not frag & 0x3FFF and proto not in IP_TUNNEL_PROTOCOLS:
                dend = end = 14 + total if total >= 20 else n
                if end > n:
                    end = n
                if proto == IPPROTO_UDP and end >= 42:
                    sport, dport, ulen = _UDP.unpack_from(data, 34)
                    if sport not in UDP_TUNNEL_PORTS and dport not in UDP_TUNNEL_PORTS:
                        if proto not in self.want:
                            return None
                        pend = 34 + ulen if ulen >= 8 else end
                        if pend > end:
                            pend = end
                        raw = data[26:30]
                        src = self._addr.get(raw) or self.addr(raw)
                        raw = data[30:34]
                        dst = self._addr.get(raw) or self.addr(raw)
                        return make_packet(
                            index, ts_ns, src, dst, IPPROTO_UDP, sport, dport, data[42:pend], None, iface, wire_len,
                            "", ident,
                        )
                elif proto not in self.want:
                    return None
                else:
                    raw = data[26:30]
                    src = self._addr.get(raw) or self.addr(raw)
                    raw = data[30:34]
                    dst = self._addr.get(raw) or self.addr(raw)
                    return self._transport(_Frame(index, ts_ns, iface, wire_len, ""), proto, src, dst, data, 34, end,
                                           dend, ident)
        version, off, encap = self.network_offset(linktype, data)
        if version == 4:
            return self._ipv4(_Frame(index, ts_ns, iface, wire_len, encap), data, off)
        if version == 6:
            return self._ipv6(_Frame(index, ts_ns, iface, wire_len, encap), data, off)
        return None

    def _wanted(self, proto: int) -> bool:
        """Whether an IP payload of protocol ``proto`` must be looked at: a wanted
        transport, a tunnel protocol, or UDP (which may carry a tunnel)."""
        return proto in self.want or proto in IP_TUNNEL_PROTOCOLS or proto == IPPROTO_UDP

    def _ipv4(self, f: _Frame, data: bytes, off: int) -> Packet | None:
        # RFC 791 §3.1.
        n = len(data)
        if n < off + 20:
            return None
        vhl = data[off]
        ihl = (vhl & 0x0F) << 2
        if vhl >> 4 != 4 or ihl < 20 or n < off + ihl:
            return None
        total, ident, frag, _ttl, proto = _IPV4.unpack_from(data, off + 2)
        if not self._wanted(proto):
            return None
        # Total length bounds the datagram (drops Ethernet padding); 0 is seen for TSO
        # super-packets captured on the sending host: then the captured bytes count.
        dend = end = off + total if total >= ihl else n
        if end > n:
            end = n
        src = data[off + 12 : off + 16]
        dst = data[off + 16 : off + 20]
        l4 = off + ihl
        if frag & 0x3FFF:  # MF set or offset non-zero: a fragment (RFC 791 §3.1 Flags)
            done = self.frag4.add(
                (src, dst, proto, ident), f.ts_ns, (frag & 0x1FFF) << 3, bool(frag & 0x2000), data[l4:end]
            )
            if done is None:
                return None
            data = done[0]
            l4 = 0
            dend = end = len(data)
        if proto == IPPROTO_ESP:
            return self._esp(f, self.addr(src), self.addr(dst), data, l4, end, ident)
        if proto in IP_TUNNEL_PROTOCOLS:
            return self._ip_tunnel(f, proto, data, l4, end)
        return self._transport(f, proto, self.addr(src), self.addr(dst), data, l4, end, dend, ident)

    def _ipv6(self, f: _Frame, data: bytes, off: int) -> Packet | None:
        # RFC 8200 §3: version/class/flow 4, payload length 2, next header 1, hop limit 1,
        # source 16, destination 16.
        n = len(data)
        if n < off + 40 or data[off] >> 4 != 6:
            return None
        plen = _U16.unpack_from(data, off + 4)[0]
        nh = data[off + 6]
        src = data[off + 8 : off + 24]
        dst = data[off + 24 : off + 40]
        p = off + 40
        dend = end = p + plen if plen else n  # 0 = jumbogram (RFC 2675): use what was captured
        if end > n:
            end = n
        while True:
            if nh in _EXT_8OCTET:
                if end < p + 2:
                    return None
                nh, p = data[p], p + ((data[p + 1] + 1) << 3)
            elif nh == _IP6_AH:
                if end < p + 2:
                    return None
                nh, p = data[p], p + ((data[p + 1] + 2) << 2)
            elif nh == _IP6_FRAGMENT:
                if end < p + 8:
                    return None
                nxt = data[p]
                fo, ident = _FRAG6.unpack_from(data, p + 2)
                p += 8
                if fo & 0xFFF9 == 0:  # offset 0 and M = 0: an atomic fragment (RFC 6946)
                    nh = nxt
                    continue
                done = self.frag6.add((src, dst, ident), f.ts_ns, fo & 0xFFF8, bool(fo & 1), data[p:end], nxt)
                if done is None:
                    return None
                data, nh = done  # type: ignore[assignment]
                p = 0
                dend = end = len(data)
            else:
                break
            if p > end:
                return None
        if nh == IPPROTO_ESP:
            return self._esp(f, self.addr(src), self.addr(dst), data, p, end, None)
        if nh in IP_TUNNEL_PROTOCOLS:
            return self._ip_tunnel(f, nh, data, p, end)
        if not self._wanted(nh):
            return None
        return self._transport(f, nh, self.addr(src), self.addr(dst), data, p, end, dend)

    def _ip_tunnel(self, f: _Frame, proto: int, data: bytes, l4: int, end: int) -> Packet | None:
        """The packet inside IP protocol ``proto`` (4: IPv4, 41: IPv6, 47: GRE) at
        ``data[l4:end]``."""
        if proto == IPPROTO_GRE:
            kind, name, at = gre(data, l4, end)
        else:
            kind, name, at = (KIND_IPV4, "ip-in-ip", l4) if proto == IPPROTO_IPIP else (KIND_IPV6, "ipv6-in-ip", l4)
        return self._inner(f, kind, name, data, at, end)

    def _esp(
        self, f: _Frame, src: str, dst: str, data: bytes, l4: int, end: int, ip_id: int | None
    ) -> Packet | None:
        """What ESP at ``data[l4:end]`` protects, if it reads as NULL-encrypted (RFC 4303
        §3.1.1 transport mode: a UDP/TCP segment between ``src`` and ``dst``; §3.1.2
        tunnel mode: an IP packet); otherwise the packet is counted under its SPI."""
        spi = esp_spi(data, l4, end)
        if spi is None:
            return None
        nh, start, stop = esp_null(data, l4, end)
        if not nh:
            self.esp_unread[spi] = self.esp_unread.get(spi, 0) + 1
            return None
        name = tagged("esp", f"spi=0x{spi:08x}")
        if nh == IPPROTO_IPIP:
            return self._inner(f, KIND_IPV4, name, data, start, stop)
        if nh == 41:
            return self._inner(f, KIND_IPV6, name, data, start, stop)
        if f.depth >= MAX_TUNNEL_DEPTH:
            return None
        f.depth += 1
        f.encap = f"{f.encap}/{name}" if f.encap else name
        return self._transport(f, nh, src, dst, data, start, stop, stop, ip_id)

    def _inner(self, f: _Frame, kind: int, name: str, data: bytes, at: int, end: int) -> Packet | None:
        """Decode what a tunnel ``name`` carries: ``kind`` at ``data[at:end]`` (one tunnel
        deeper: ``f.encap`` and ``f.depth`` are updated)."""
        if not kind or f.depth >= MAX_TUNNEL_DEPTH:
            return None
        f.depth += 1
        f.encap = f"{f.encap}/{name}" if f.encap else name
        inner = data[at:end]  # the inner packet alone: its own lengths bound it
        if kind == KIND_IPV4:
            return self._ipv4(f, inner, 0)
        if kind == KIND_IPV6:
            return self._ipv6(f, inner, 0)
        if kind == KIND_ETHER:
            if len(inner) < 14:
                return None
            et = inner[12] << 8 | inner[13]
            version, off, f.encap = self._ethertype_chain(inner, et, 14, True, f.encap)
        else:  # KIND_MPLS
            version, off, f.encap = self._ethertype_chain(inner, MPLS_ETHERTYPE_FIRST, 0, False, f.encap)
        if version == 4:
            return self._ipv4(f, inner, off)
        if version == 6:
            return self._ipv6(f, inner, off)
        return None

    def _transport(
        self, f: _Frame, proto: int, src: str, dst: str, data: bytes, l4: int, end: int, dend: int,
        ip_id: int | None = None,
    ) -> Packet | None:
        """UDP (RFC 768) or TCP (RFC 9293 §3.1) from ``data[l4:end]`` (captured bytes);
        ``dend`` is where the IP length fields say the datagram ends (may lie beyond
        ``end`` when the capture's snap length cut the frame). UDP to a tunnel's port
        whose header checks out is decapsulated. ``ip_id``: the IPv4 Identification
        (None for IPv6)."""
        if proto == IPPROTO_UDP:
            if end < l4 + 8:
                return None
            sport, dport, ulen = _UDP.unpack_from(data, l4)
            # RFC 768: Length covers header and data; it bounds the payload (0 is used
            # for IPv6 jumbograms, RFC 2675 §4).
            pend = l4 + ulen if ulen >= 8 else end
            if pend > end:
                pend = end
            if (sport == UDP_PORT_IPSEC_NAT_T or dport == UDP_PORT_IPSEC_NAT_T) and pend >= l4 + 16 and any(
                data[l4 + 8 : l4 + 12]
            ):  # RFC 3948 §2.2: ESP in UDP; a zero SPI is the Non-ESP Marker (IKE), §2.2
                return self._esp(f, src, dst, data, l4 + 8, pend, ip_id)
            if sport in UDP_TUNNEL_PORTS or dport in UDP_TUNNEL_PORTS:
                kind, name, at = udp_tunnel(sport, dport, data, l4 + 8, pend)
                if kind:
                    return self._inner(f, kind, name, data, at, pend)
            if IPPROTO_UDP not in self.want:
                return None
            return make_packet(
                f.index, f.ts_ns, src, dst, IPPROTO_UDP, sport, dport, data[l4 + 8 : pend], None, f.iface, f.wire_len,
                f.encap, ip_id,
            )
        if proto != IPPROTO_TCP or IPPROTO_TCP not in self.want or end < l4 + 20:
            return None
        sport, dport, seq, ack, offflags, window, _csum = _TCP.unpack_from(data, l4)
        hlen = (offflags >> 12) << 2
        if hlen < 20 or l4 + hlen > end:
            return None
        urg = _TCP_URG.unpack_from(data, l4 + 18)[0]
        flags = offflags & 0x1FF
        dlen = dend - l4 - hlen
        if dlen < 0:
            dlen = 0
        if hlen > 20:
            tcp = make_tcpinfo(seq, ack, flags, window, urg, hlen, dlen, *parse_tcp_options(data[l4 + 20 : l4 + hlen]))
        else:
            tcp = make_tcpinfo(seq, ack, flags, window, urg, hlen, dlen, None, None, False, (), None, None)
        return make_packet(
            f.index, f.ts_ns, src, dst, IPPROTO_TCP, sport, dport, data[l4 + hlen : end], tcp, f.iface, f.wire_len,
            f.encap, ip_id,
        )


def warn_unread_esp(name: str, unread: dict[int, int]) -> None:
    """Say which ESP packets a read could not look into: ``unread`` maps each SPI to its
    count (:attr:`Decoder.esp_unread`); nothing when it is empty."""
    if not unread:
        return
    parts = "; ".join(
        f"{n} ESP packet{'s' if n != 1 else ''} (SPI 0x{spi:08x}, encrypted) not read" for spi, n in sorted(unread.items())
    )
    warnings.warn(
        f"{name}: {parts} (RFC 4303 ESP that is not NULL-encrypted, RFC 2410, with a 12- or 16-octet ICV: "
        "without the keys its packets cannot be seen)",
        QoEWarning,
        stacklevel=3,
    )


def protocol_numbers(protocols: object, name: str = "protocols") -> frozenset[int]:
    """Validate a ``protocols`` option (names from ``PROTOCOLS``) into IP protocol numbers."""
    if isinstance(protocols, str):
        protocols = (protocols,)
    try:
        items = list(protocols)  # type: ignore[call-overload]
    except TypeError:
        raise InputError(f"{name} must be a sequence of 'udp'/'tcp', given {protocols!r}") from None
    out = set()
    for p in items:
        key = p.lower() if isinstance(p, str) else p
        if key not in PROTOCOLS:
            raise InputError(f"{name}: unknown protocol {p!r}; choose from {sorted(PROTOCOLS)}")
        out.add(PROTOCOLS[key])
    if not out:
        raise InputError(f"{name} is empty; give at least one of {sorted(PROTOCOLS)}")
    return frozenset(out)


DecodeFn = Callable[[int, int, int, int, int, bytes], "Packet | None"]
