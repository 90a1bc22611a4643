"""``read_packets``: every UDP datagram / TCP segment of a capture, one at a time."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from qoe.capture._decode import Decoder, protocol_numbers, warn_unread_esp
from qoe.capture._files import name_of, probe, records
from qoe.capture._records import CHUNK_SIZE, PathOrFile
from qoe.capture._options import positive_int
from qoe.capture._reassembly import ReassemblyLimits, reassembly_limits
from qoe.capture._types import Packet


def read_packets(
    path: PathOrFile,
    *,
    protocols: Iterable[str] = ("udp", "tcp"),
    chunk_size: int = CHUNK_SIZE,
    reassembly: ReassemblyLimits = ReassemblyLimits(),
) -> Iterator[Packet]:
    """Stream the UDP datagrams and TCP segments of a pcap or pcapng capture.

    Parameters
    ----------
    path : str, os.PathLike or binary file object
        A pcap file (microsecond or nanosecond timestamps, either byte order, also the
        "modified" 24-byte-record variant) or a pcapng file (any number of sections and
        interfaces, each with its own link type, ``if_tsresol`` and ``if_tsoffset``);
        gzip-compressed files are read transparently.
    protocols : iterable of {"udp", "tcp"}, optional
        Transports to return (default both).
    chunk_size : int, optional
        Bytes read from the file at a time (default 1 MiB, 1048576). Memory holds about
        one chunk of records whatever the file's size; the packets do not depend on it.
    reassembly : ReassemblyLimits, optional
        How long and how much IP fragment reassembly may hold (default: 15 s for IPv4,
        RFC 791 §3.2; 60 s for IPv6, RFC 8200 §4.5; 4096 datagrams and 32 MiB for each
        IP version). A datagram given up at a limit is not returned.

    Yields
    ------
    Packet
        In file order. IPv4 and IPv6 fragments are reassembled; the datagram is returned
        once, with the frame number and time of the fragment that completed it.

    Raises
    ------
    CaptureError
        Raised at the call (before iteration) for a missing or unreadable file, a file
        that is not pcap/pcapng (the message quotes its first bytes), or an unsupported
        link-layer type (the message gives its number and name). An unsupported link type
        on a pcapng interface described later in the file raises when that interface's
        description is reached.
    InputError
        ``protocols`` names something other than "udp"/"tcp"; ``chunk_size`` is not a
        positive integer; ``reassembly`` is not a :class:`ReassemblyLimits`.

    Warns
    -----
    QoEWarning
        The file ends inside a record (a capture cut short) or a record is damaged: the
        packets before it are returned, then the iteration stops.

    Notes
    -----
    Link layers: Ethernet (with any stack of 802.1Q/802.1ad/QinQ tags, LLC/SNAP and
    PPPoE session), Linux cooked v1/v2 (SLL 113, SLL2 276), raw IP (101, and 12/14 as old
    libpcap wrote DLT_RAW), raw IPv4/IPv6 (228/229), BSD NULL (0) and OpenBSD LOOP (108).
    IPv6 extension headers (Hop-by-Hop, Routing, Destination Options, Fragment, AH,
    Mobility, HIP, Shim6) are skipped; non-IP frames are not returned. IPsec ESP with NULL
    encryption (RFC 2410, recognised by its trailer as Wireshark's ESP NULL heuristic does)
    is read through, in transport and tunnel mode ("esp[spi=0x...]" in
    :attr:`Packet.encapsulation`); encrypted ESP is counted per SPI and a
    :class:`QoEWarning` at the end of the read says how many packets were not read.
    Tunnels are peeled to the innermost IP packet (MPLS with or without an Ethernet
    pseudowire and its control word, GRE, ERSPAN I/II/III, VXLAN on UDP 4789, GTP-U on
    2152, L2TPv2 on 1701, IP-in-IP, IPv6-in-IPv4, PPPoE); :attr:`Packet.encapsulation`
    names them. After an MPLS stack, IPv4/IPv6/Ethernet is guessed from the first nibble
    (see :mod:`qoe.capture._tunnels`).
    Memory does not grow with the file: records are read in chunks of ``chunk_size``
    bytes and the fragment reassembly buffers are bounded by ``reassembly``.

    References
    ----------
    .. [1] draft-ietf-opsawg-pcap, "PCAP Capture File Format", §4-§5.
    .. [2] draft-ietf-opsawg-pcapng, "PCAP Now Generic (pcapng) Capture File Format", §3-§4.
    .. [3] tcpdump.org, "LINK-LAYER HEADER TYPES" (https://www.tcpdump.org/linktypes.html).
    .. [4] RFC 791 (IPv4), RFC 815 (reassembly), RFC 8200 (IPv6), RFC 768 (UDP), RFC 9293 (TCP).

    Examples
    --------
    >>> for pkt in read_packets("call.pcap", protocols=("udp",)):  # doctest: +SKIP
    ...     print(pkt.index, pkt.ts_ns, pkt.src, pkt.sport, len(pkt.payload))
    """
    want = protocol_numbers(protocols)
    chunk_size = positive_int(chunk_size, "chunk_size")
    reassembly = reassembly_limits(reassembly)
    probe(path, chunk_size=chunk_size)  # raise CaptureError now, not at the first next()
    return _iter_packets(path, want, chunk_size, reassembly)


def _iter_packets(
    path: PathOrFile, want: frozenset[int], chunk_size: int, reassembly: ReassemblyLimits
) -> Iterator[Packet]:
    decoder = Decoder(want, reassembly)
    decode = decoder.decode
    for index, ts_ns, iface, linktype, wire_len, data in records(path, chunk_size=chunk_size):
        pkt = decode(index, ts_ns, iface, linktype, wire_len, data)
        if pkt is not None:
            yield pkt
    warn_unread_esp(name_of(path), decoder.esp_unread)
