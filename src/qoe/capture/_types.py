"""The records :mod:`qoe.capture` hands out: one packet, TCP header facts, a UDP batch.

References
----------
.. [1] RFC 9293, "Transmission Control Protocol (TCP)", §3.1 (header format) and §3.2
   (options: End of List 0, NOP 1, MSS 2).
.. [2] RFC 7323, "TCP Extensions for High Performance", §2 (Window Scale, kind 3) and §3
   (Timestamps, kind 8).
.. [3] RFC 2018, "TCP Selective Acknowledgment Options", §2 (SACK-permitted, kind 4) and
   §3 (SACK, kind 5).
.. [4] RFC 3168, "The Addition of Explicit Congestion Notification (ECN) to IP", §6.1
   (ECE and CWR flags); RFC 9293 §3.1 for the others.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

# TCP control bits, RFC 9293 §3.1 (FIN..URG), RFC 3168 §6.1 (ECE, CWR), and the bit next to
# them that RFC 3540 called NS and RFC 9768 (AccECN) calls AE. Bit values of TcpInfo.flags.
TCP_FIN = 0x001
TCP_SYN = 0x002
TCP_RST = 0x004
TCP_PSH = 0x008
TCP_ACK = 0x010
TCP_URG = 0x020
TCP_ECE = 0x040
TCP_CWR = 0x080
TCP_AE = 0x100


@dataclass(frozen=True, slots=True)
class TcpInfo:
    """The TCP header of one segment (RFC 9293 §3.1) and the options qoe uses.

    Attributes
    ----------
    seq, ack : int
        Sequence and acknowledgment numbers, raw 32-bit values (not relative).
    flags : int
        The 9 control bits: OR of ``TCP_FIN`` ... ``TCP_AE`` (module constants).
    window : int
        The raw 16-bit window field, *not* scaled (the scale is negotiated in the SYNs).
    urgent : int
        Urgent pointer.
    header_len : int
        TCP header length in bytes (data offset × 4), options included.
    data_len : int
        Data octets in the segment according to the IP length fields (RFC 791 Total
        Length, RFC 8200 Payload Length): the segment's true size even when the capture's
        snap length kept fewer bytes in :attr:`Packet.payload`. SYN and FIN are not
        counted (RFC 9293 §3.3.1 SEG.LEN counts them; add them yourself).
    mss : int or None
        Maximum Segment Size option (kind 2, RFC 9293 §3.2), usually only on SYNs.
    wscale : int or None
        Window Scale shift count (kind 3, RFC 7323 §2.2).
    sack_permitted : bool
        SACK-permitted option present (kind 4, RFC 2018 §2).
    sack : tuple of (int, int)
        SACK blocks (left edge, right edge) (kind 5, RFC 2018 §3).
    tsval, tsecr : int or None
        Timestamps option values (kind 8, RFC 7323 §3.2).
    """

    seq: int
    ack: int
    flags: int
    window: int
    urgent: int = 0
    header_len: int = 20
    data_len: int = 0
    mss: int | None = None
    wscale: int | None = None
    sack_permitted: bool = False
    sack: tuple[tuple[int, int], ...] = ()
    tsval: int | None = None
    tsecr: int | None = None

    @property
    def syn(self) -> bool:
        """SYN bit set."""
        return bool(self.flags & TCP_SYN)

    @property
    def fin(self) -> bool:
        """FIN bit set."""
        return bool(self.flags & TCP_FIN)

    @property
    def rst(self) -> bool:
        """RST bit set."""
        return bool(self.flags & TCP_RST)

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict copy (for JSON/CSV output)."""
        d = dataclasses.asdict(self)
        d["sack"] = [list(b) for b in self.sack]
        return d


@dataclass(frozen=True, slots=True)
class Packet:
    """One UDP datagram or TCP segment read from a capture.

    Attributes
    ----------
    index : int
        1-based frame number in the file, as Wireshark numbers frames (every packet
        record counts, whether or not it is returned). A datagram reassembled from IP
        fragments carries the number of the frame that completed it.
    ts_ns : int
        Capture time in integer nanoseconds since the Unix epoch, computed exactly from
        the file's integer fields (finer resolutions are floored to 1 ns).
    src, dst : str
        IP addresses as :mod:`ipaddress` prints them (dotted IPv4, compressed IPv6).
    proto : int
        IP protocol number: 17 (UDP) or 6 (TCP).
    sport, dport : int
        Transport ports.
    payload : bytes
        Transport payload as captured (shorter than on the wire if the capture's snap
        length cut it; Ethernet padding removed). For a reassembled datagram, the whole
        payload.
    tcp : TcpInfo or None
        TCP header facts, ``None`` for UDP.
    interface : int
        pcapng interface number (counted over the whole file, so equal to the Interface
        Description Block's id in a one-section file); 0 for pcap.
    wire_len : int
        Original length of the frame on the wire (of the completing frame for a
        reassembled datagram).
    encapsulation : str
        The tunnels and encapsulations the packet was found in, outermost first, joined
        by "/" ("" for none): "mpls", "mpls-pw" (an Ethernet pseudowire after a label
        stack), "pppoe", "gre", "erspan-i", "erspan-ii", "erspan-iii", "vxlan", "gtp-u",
        "l2tp", "ip-in-ip" (IPv4 inside IP), "ipv6-in-ip" (IPv6 inside IP), "esp" (IPsec
        ESP with NULL encryption, RFC 2410, transport or tunnel mode), each followed
        by the tunnel's identifier in brackets when its header has one: the MPLS label
        stack ("mpls[labels=16001,24005]", RFC 3032 §2.1), the GRE key ("gre[key=42]", RFC
        2890 §2.1), the ERSPAN session ID ("erspan-ii[session=7]"), the VXLAN VNI
        ("vxlan[vni=42]", RFC 7348 §5), the GTP-U TEID ("gtp-u[teid=0x00001001]", 3GPP TS
        29.281 §5.1), the L2TP tunnel and session IDs ("l2tp[tunnel=7,session=1]", RFC 2661
        §3.1), the ESP SPI ("esp[spi=0x00001001]", RFC 4303 §2.1); e.g.
        "mpls[labels=16]/gre[key=1]". The addresses and ports are always the
        innermost packet's; two subscribers of a tunnel that reuse private inner addresses
        differ here (:class:`UdpBatch` gives their addresses codes of their own, so their
        flows stay apart). Not compared (two packets that differ only in it are equal).
    ip_id : int or None
        The Identification field of the innermost IPv4 header (RFC 791 §3.1; of the first
        fragment's header for a reassembled datagram: all fragments share it), ``None`` for
        IPv6 and for packets rebuilt from a :class:`UdpBatch`, which does not keep it. Two
        copies of one frame (a capture on Linux's "any" device, a span port) carry the same
        value; a sender's retransmission of a segment, a new one on the stacks that count
        it per packet (Linux, Windows, BSDs; RFC 6864 §4.1 asks for it in non-atomic
        datagrams only, so a stack may send 0). Not compared.
    """

    index: int
    ts_ns: int
    src: str
    dst: str
    proto: int
    sport: int
    dport: int
    payload: bytes
    tcp: TcpInfo | None
    interface: int
    wire_len: int
    encapsulation: str = dataclasses.field(default="", compare=False)
    ip_id: int | None = dataclasses.field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict copy, payload as hex (for JSON/CSV output)."""
        return {
            "index": self.index,
            "ts_ns": self.ts_ns,
            "src": self.src,
            "dst": self.dst,
            "proto": self.proto,
            "sport": self.sport,
            "dport": self.dport,
            "payload": self.payload.hex(),
            "tcp": None if self.tcp is None else self.tcp.to_dict(),
            "interface": self.interface,
            "wire_len": self.wire_len,
            "encapsulation": self.encapsulation,
            "ip_id": self.ip_id,
        }


# Bytes of each payload that a UdpBatch also holds in a column of its own (its ``head``):
# enough for the fixed headers that tell UDP payloads apart (RTP's 12, RFC 3550 §5.1;
# the first word of RTCP, STUN, SIP's start line, ...).
HEAD_BYTES = 16


@dataclass(frozen=True, slots=True, eq=False)
class UdpBatch:
    """Up to ``batch_size`` UDP datagrams in columns, in frame order.

    The payloads are not copied out of the bytes read from the file: payload ``i`` is
    ``data[starts[i] : starts[i] + lengths[i]]`` (:meth:`payload_of`); :attr:`payload`
    packs them back to back when asked.

    Attributes
    ----------
    index : numpy.ndarray of int64
        Frame numbers (1-based, as :attr:`Packet.index`).
    ts_ns : numpy.ndarray of int64
        Capture times, integer ns since the Unix epoch.
    src, dst : numpy.ndarray of int32
        Address *codes*: ``addresses[src[i]]`` is the source address text. Codes are
        stable over all the batches of one :func:`read_udp_batches` call, so they can be
        grouped and compared with NumPy directly.
    sport, dport : numpy.ndarray of uint16
        Ports.
    data : numpy.ndarray of uint8
        Bytes that hold the payloads (the captured records they came in, for most).
    starts : numpy.ndarray of int64
        Where each payload starts in :attr:`data`.
    lengths : numpy.ndarray of int64
        Each payload's length in bytes.
    head : numpy.ndarray of uint8, shape (n, HEAD_BYTES)
        The first :data:`HEAD_BYTES` (16) bytes of each payload, zeros past its end:
        its fixed headers as columns, read while the file's bytes were at hand.
    interface : numpy.ndarray of int32
        pcapng interface numbers (0 for pcap).
    wire_len : numpy.ndarray of int64
        Original frame lengths on the wire.
    cut : numpy.ndarray of int64
        Bytes of each payload on the wire that the capture did not keep (a snap length,
        ``tcpdump -s``, cut the frame): the UDP length (RFC 768) minus the captured end;
        0 for a whole datagram. ``lengths + cut`` is the payload's length on the wire.
    addresses : tuple of str
        Address text for each code seen so far in this read.
    encapsulations : tuple of str
        The encapsulation (:attr:`Packet.encapsulation`, with its tunnel identifiers) in
        which each address code was seen; "" for addresses outside any tunnel. An address
        seen inside a tunnel gets a code for each encapsulation it is seen in, so flows
        grouped by code keep apart subscribers of GTP-U, VXLAN, GRE or MPLS that reuse one
        private address (the same text in ``addresses``). Empty: no tunnel in this read.
    """

    index: np.ndarray
    ts_ns: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    sport: np.ndarray
    dport: np.ndarray
    data: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    head: np.ndarray
    interface: np.ndarray
    wire_len: np.ndarray
    addresses: tuple[str, ...]
    encapsulations: tuple[str, ...] = ()
    cut: np.ndarray | None = None

    def encapsulation_of(self, i: int) -> str:
        """The encapsulation datagram ``i`` came through ("" for none)."""
        e = self.encapsulations
        return e[self.src[i]] if e else ""

    def __len__(self) -> int:
        return int(self.index.shape[0])

    @property
    def offsets(self) -> np.ndarray:
        """``len(index) + 1`` offsets into :attr:`payload`: payload ``i`` is
        ``payload[offsets[i]:offsets[i + 1]]`` (the running sum of :attr:`lengths`)."""
        out = np.zeros(len(self) + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=out[1:])
        return out

    @property
    def payload(self) -> np.ndarray:
        """All payloads back to back, as uint8: packed from :attr:`data` at each access
        (a copy of every payload; :meth:`payload_of` and the spans :attr:`starts` /
        :attr:`lengths` need none)."""
        mv = memoryview(self.data)
        packed = b"".join([mv[a : a + n] for a, n in zip(self.starts.tolist(), self.lengths.tolist())])
        return np.frombuffer(packed, dtype=np.uint8)

    def payload_of(self, i: int) -> bytes:
        """Payload of datagram ``i`` as bytes."""
        a = int(self.starts[i])
        return self.data[a : a + int(self.lengths[i])].tobytes()

    def packet(self, i: int) -> Packet:
        """Datagram ``i`` as a :class:`Packet` (slow; for inspection and tests)."""
        return Packet(
            index=int(self.index[i]),
            ts_ns=int(self.ts_ns[i]),
            src=self.addresses[self.src[i]],
            dst=self.addresses[self.dst[i]],
            proto=17,
            sport=int(self.sport[i]),
            dport=int(self.dport[i]),
            payload=self.payload_of(i),
            tcp=None,
            interface=int(self.interface[i]),
            wire_len=int(self.wire_len[i]),
            encapsulation=self.encapsulation_of(i),
        )


def _fast_constructor(cls: type) -> Any:
    """A constructor for frozen slotted dataclass ``cls`` that skips the frozen ``__init__``.

    A frozen dataclass's generated ``__init__`` sets every field through
    ``object.__setattr__``, which costs about 2 µs for :class:`Packet`'s 11 fields, more
    than all the header parsing. This builds a mutable twin with the same slots, fills it
    with plain stores and then re-labels the object as ``cls`` (allowed because the slot
    layouts are identical), 3-4 times faster. The result is an ordinary, frozen ``cls``.
    """
    twin = dataclasses.make_dataclass(
        "_Mutable" + cls.__name__,
        [(f.name, f.type, f) for f in dataclasses.fields(cls)],
        slots=True,
        eq=False,
        repr=False,
    )

    def make(*args: Any, _twin: type = twin, _cls: type = cls) -> Any:
        obj = _twin(*args)
        obj.__class__ = _cls
        return obj

    make.__doc__ = f"Positional fast constructor of {cls.__name__}."
    return make


make_packet = _fast_constructor(Packet)
make_tcpinfo = _fast_constructor(TcpInfo)
