"""Builders for small captures written byte by byte from the format specifications.

Everything here follows the documents, not another reader's output:
pcap: draft-ietf-opsawg-pcap §4-§5; pcapng: draft-ietf-opsawg-pcapng §3-§4;
link layers: tcpdump.org LINKTYPE_ pages; IPv4: RFC 791 §3.1; IPv6: RFC 8200 §3-§4;
UDP: RFC 768; TCP: RFC 9293 §3.1.
"""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest

T0 = 1_700_000_000  # a whole second (2023-11-14), so expected ns values are easy to write


def ip4(text: str) -> bytes:
    return bytes(int(x) for x in text.split("."))


def ip6(text: str) -> bytes:
    import ipaddress

    return ipaddress.IPv6Address(text).packed


def udp(sport: int, dport: int, payload: bytes, *, length: int | None = None) -> bytes:
    """RFC 768 header (checksum 0 = not computed)."""
    return struct.pack("!HHHH", sport, dport, 8 + len(payload) if length is None else length, 0) + payload


def tcp(
    sport: int,
    dport: int,
    payload: bytes = b"",
    *,
    seq: int = 1000,
    ack: int = 0,
    flags: int = 0x18,
    window: int = 65535,
    options: bytes = b"",
    urgent: int = 0,
) -> bytes:
    """RFC 9293 §3.1 header; ``options`` padded to 32 bits with End-of-List."""
    options += b"\0" * (-len(options) % 4)
    doff = (20 + len(options)) // 4
    return struct.pack("!HHIIHHHH", sport, dport, seq, ack, doff << 12 | flags, window, 0, urgent) + options + payload


def ipv4(
    src: str,
    dst: str,
    proto: int,
    payload: bytes,
    *,
    ident: int = 1,
    mf: bool = False,
    offset: int = 0,
    df: bool = False,
    options: bytes = b"",
    total: int | None = None,
) -> bytes:
    """RFC 791 §3.1 header (checksum left 0; readers do not verify it). ``offset`` in bytes."""
    assert offset % 8 == 0
    ihl = 5 + len(options) // 4
    flags = (0x4000 if df else 0) | (0x2000 if mf else 0) | (offset // 8)
    tl = ihl * 4 + len(payload) if total is None else total
    return (
        struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, tl, ident, flags, 64, proto, 0, ip4(src), ip4(dst))
        + options
        + payload
    )


def ipv6(src: str, dst: str, nh: int, payload: bytes) -> bytes:
    """RFC 8200 §3 header; ``payload`` includes any extension headers."""
    return struct.pack("!IHBB16s16s", 6 << 28, len(payload), nh, 64, ip6(src), ip6(dst)) + payload


def ext(nh: int, body: bytes = b"\0" * 6) -> bytes:
    """RFC 8200 §4 option-type extension header (hop-by-hop, routing, dest options):
    next header, length in 8-octet units beyond the first, then ``body`` (padded)."""
    body += b"\0" * (-(len(body) + 2) % 8)
    return bytes([nh, (len(body) + 2) // 8 - 1]) + body


def ah(nh: int, icv: bytes = b"\0" * 12) -> bytes:
    """RFC 4302 §2: next header, payload len (32-bit words - 2), reserved, SPI, seq, ICV."""
    body = struct.pack("!HII", 0, 0x1234, 1) + icv
    return bytes([nh, (len(body) + 2) // 4 - 2]) + body


def frag6(nh: int, offset: int, more: bool, ident: int) -> bytes:
    """RFC 8200 §4.5 Fragment header; ``offset`` in bytes (multiple of 8)."""
    return struct.pack("!BBHI", nh, 0, offset | (1 if more else 0), ident)


def eth(payload: bytes, ethertype: int = 0x0800, *, vlans: tuple[int, ...] = (), pad_to: int = 0) -> bytes:
    """Ethernet II with ``vlans`` TPIDs (each followed by a TCI of VLAN id 7)."""
    hdr = b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01"
    for tpid in vlans:
        hdr += struct.pack("!HH", tpid, 7)
    frame = hdr + struct.pack("!H", ethertype) + payload
    return frame + b"\0" * max(0, pad_to - len(frame))


def sll(payload: bytes, proto: int = 0x0800) -> bytes:
    """LINKTYPE_LINUX_SLL: packet type 0 (to us), ARPHRD_ETHER 1, addr len 6, addr, protocol."""
    return struct.pack("!HHH8sH", 0, 1, 6, b"\x02\0\0\0\0\x01\0\0", proto) + payload


def sll2(payload: bytes, proto: int = 0x0800) -> bytes:
    """LINKTYPE_LINUX_SLL2: protocol, reserved, ifindex, ARPHRD, packet type, addr len, addr."""
    return struct.pack("!HHIHBB8s", proto, 0, 3, 1, 4, 6, b"\x02\0\0\0\0\x01\0\0") + payload


def pcap(
    records: list[tuple[int, int, bytes] | tuple[int, int, bytes, int]],
    *,
    linktype: int = 1,
    nano: bool = False,
    byteorder: str = "<",
    snaplen: int = 65535,
    modified: bool = False,
) -> bytes:
    """A pcap file; records are (seconds, fraction in µs or ns, frame[, original length])."""
    magic = 0xA1B2CD34 if modified else (0xA1B23C4D if nano else 0xA1B2C3D4)
    out = [struct.pack(byteorder + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)]
    for rec in records:
        sec, frac, data = rec[0], rec[1], rec[2]
        wire = rec[3] if len(rec) > 3 else len(data)  # type: ignore[misc]
        out.append(struct.pack(byteorder + "IIII", sec, frac, len(data), wire))
        if modified:  # ifindex 4, protocol 2, packet type 1, padding 1
            out.append(struct.pack(byteorder + "IHBB", 1, 0x0800, 0, 0))
        out.append(data)
    return b"".join(out)


def _opt(bo: str, code: int, value: bytes) -> bytes:
    return struct.pack(bo + "HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def block(bo: str, btype: int, body: bytes) -> bytes:
    """§3.1 general block: type, total length, ``body`` padded to 32 bits, total length."""
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack(bo + "II", btype, n) + body + struct.pack(bo + "I", n)


def shb(bo: str = "<") -> bytes:
    """§4.1 Section Header Block, version 1.0, section length -1, one comment option."""
    opts = _opt(bo, 1, b"qoe test") + _opt(bo, 0, b"")
    return block(bo, 0x0A0D0D0A, struct.pack(bo + "IHHq", 0x1A2B3C4D, 1, 0, -1) + opts)


def idb(
    bo: str = "<",
    linktype: int = 1,
    *,
    tsresol: int | None = None,
    tsoffset: int | None = None,
    snaplen: int = 0,
    name: bytes = b"eth0",
) -> bytes:
    """§4.2 Interface Description Block with if_name, if_tsresol (9), if_tsoffset (14)."""
    opts = _opt(bo, 2, name)
    if tsresol is not None:
        opts += _opt(bo, 9, bytes([tsresol]))
    if tsoffset is not None:
        opts += _opt(bo, 14, struct.pack(bo + "q", tsoffset))
    opts += _opt(bo, 0, b"")
    return block(bo, 1, struct.pack(bo + "HHI", linktype, 0, snaplen) + opts)


def epb(bo: str, iface: int, ticks: int, data: bytes, wire: int | None = None, *, comment: bytes = b"") -> bytes:
    """§4.3 Enhanced Packet Block (timestamp as 64-bit tick count)."""
    body = struct.pack(bo + "IIIII", iface, ticks >> 32, ticks & 0xFFFFFFFF, len(data), len(data) if wire is None else wire)
    body += data + b"\0" * (-len(data) % 4)
    if comment:
        body += _opt(bo, 1, comment) + _opt(bo, 0, b"")
    return block(bo, 6, body)


def spb(bo: str, data: bytes, wire: int | None = None) -> bytes:
    """§4.4 Simple Packet Block."""
    return block(bo, 3, struct.pack(bo + "I", len(data) if wire is None else wire) + data)


def pb(bo: str, iface: int, ticks: int, data: bytes) -> bytes:
    """Appendix A obsolete Packet Block: interface id 16 bits, drops count 16 bits."""
    body = struct.pack(bo + "HHIIII", iface, 0, ticks >> 32, ticks & 0xFFFFFFFF, len(data), len(data)) + data
    return block(bo, 2, body)


def isb(bo: str, iface: int) -> bytes:
    """§4.6 Interface Statistics Block (no options): not a packet, must be skipped."""
    return block(bo, 5, struct.pack(bo + "III", iface, 0, 0))


def nrb(bo: str) -> bytes:
    """§4.5 Name Resolution Block with one IPv4 record and end-of-records: skipped."""
    rec = struct.pack(bo + "HH", 1, 12) + ip4("192.0.2.1") + b"host\0\0\0\0"
    return block(bo, 4, rec + struct.pack(bo + "HH", 0, 0))


@pytest.fixture
def cap() -> SimpleNamespace:
    """The builders above, as one namespace."""
    return SimpleNamespace(
        T0=T0,
        ip4=ip4,
        ip6=ip6,
        udp=udp,
        tcp=tcp,
        ipv4=ipv4,
        ipv6=ipv6,
        ext=ext,
        ah=ah,
        frag6=frag6,
        eth=eth,
        sll=sll,
        sll2=sll2,
        pcap=pcap,
        shb=shb,
        idb=idb,
        epb=epb,
        spb=spb,
        pb=pb,
        isb=isb,
        nrb=nrb,
        block=block,
    )


@pytest.fixture
def write(tmp_path):  # type: ignore[no-untyped-def]
    """``write(bytes, name)`` → path of a file holding them."""

    def _write(data: bytes, name: str = "t.pcap"):  # type: ignore[no-untyped-def]
        p = tmp_path / name
        p.write_bytes(data)
        return p

    return _write


@pytest.fixture
def udp_both():  # type: ignore[no-untyped-def]
    """``udp_both(path, **options)`` → UDP packets from read_packets, after checking that
    read_udp_batches (with tiny and default batch sizes) returns exactly the same, and
    the same first 16 bytes of each payload in its ``head``; the options (``chunk_size``,
    ``reassembly``) go to both readers."""
    from qoe.capture import read_packets, read_udp_batches

    def _both(path, **kw):  # type: ignore[no-untyped-def]
        pkts = list(read_packets(path, protocols=("udp",), **kw))
        for bs in (1, 3, 65536, None):  # None: a batch per chunk read
            batches = list(read_udp_batches(path, batch_size=bs, **kw))
            got = [b.packet(i) for b in batches for i in range(len(b))]
            assert got == pkts, f"batch_size={bs}"
            assert [g.encapsulation for g in got] == [p.encapsulation for p in pkts], f"batch_size={bs}"
            heads = [bytes(h) for b in batches for h in b.head]  # a payload's first 16 bytes, zeros after it
            assert heads == [p.payload[:16].ljust(16, b"\0") for p in pkts], f"batch_size={bs}"
        return pkts

    return _both
