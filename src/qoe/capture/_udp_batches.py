"""``read_udp_batches``: UDP datagrams in NumPy columns, for large captures."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from qoe.capture._decode import IPPROTO_TCP, IPPROTO_UDP, Decoder, warn_unread_esp
from qoe.capture._files import name_of, probe, raw_chunks
from qoe.capture._records import CHUNK_SIZE, PathOrFile, RawChunk, byte_rows
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
    RAW_IP_LINKTYPES,
    VLAN_TPIDS,
)
from qoe.capture._options import positive_int
from qoe.capture._reassembly import ReassemblyLimits, reassembly_limits
from qoe.capture._tunnels import IP_TUNNEL_PROTOCOLS, MPLS_ETHERTYPES, UDP_TUNNEL_PORTS
from qoe.capture._types import HEAD_BYTES, UdpBatch


class AddressBook:
    """(address text, encapsulation) ↔ small integer code, stable for one read.

    An address inside a tunnel gets a code per encapsulation (with its tunnel identifiers,
    :attr:`Packet.encapsulation`): subscribers that reuse a private address in two GTP-U
    tunnels are two endpoints."""

    def __init__(self) -> None:
        self.codes: dict[str | tuple[str, str], int] = {}
        self.texts: list[str] = []
        self.encaps: list[str] = []
        self.tunnelled = False
        self._snapshot: tuple[str, ...] = ()
        self._encaps: tuple[str, ...] = ()

    def code(self, text: str, encapsulation: str = "") -> int:
        key: str | tuple[str, str] = (text, encapsulation) if encapsulation else text
        c = self.codes.get(key)
        if c is None:
            c = self.codes[key] = len(self.texts)
            self.texts.append(text)
            self.encaps.append(encapsulation)
            self.tunnelled = self.tunnelled or bool(encapsulation)
        return c

    def snapshot(self) -> tuple[str, ...]:
        if len(self._snapshot) != len(self.texts):
            self._snapshot = tuple(self.texts)
        return self._snapshot

    def encapsulations(self) -> tuple[str, ...]:
        """Each code's encapsulation; () while no tunnel was seen."""
        if self.tunnelled and len(self._encaps) != len(self.encaps):
            self._encaps = tuple(self.encaps)
        return self._encaps


def read_udp_batches(
    path: PathOrFile,
    *,
    batch_size: int | None = 65536,
    chunk_size: int = CHUNK_SIZE,
    reassembly: ReassemblyLimits = ReassemblyLimits(),
) -> Iterator[UdpBatch]:
    """Stream the UDP datagrams of a capture as columns of NumPy arrays.

    Parameters
    ----------
    path : str, os.PathLike or binary file object
        A pcap or pcapng capture, as for :func:`~qoe.capture.read_packets`.
    batch_size : int or None, optional
        Datagrams per batch (every batch but the last is full). None: a batch for each
        chunk read (the datagrams in ``chunk_size`` bytes of the file, however many; a chunk
        without any gives none), whose payloads stay in the chunk as read: no batch buffer
        is assembled from several chunks, which saves a copy of the capture (0.08 s of
        0.31 s CPU reading 1.4 M datagrams of 230 bytes, ``benchmarks/rtp_many_streams.py``).
    chunk_size, reassembly : optional
        As for :func:`~qoe.capture.read_packets`: bytes read from the file at a time, and
        the bounds of IP fragment reassembly.

    Yields
    ------
    UdpBatch
        Datagrams in frame order: the same datagrams, numbers, times and payloads as
        ``read_packets(path, protocols=("udp",))`` gives, in columns. Addresses are
        int32 codes into ``batch.addresses`` (stable over the whole read).

    Raises
    ------
    CaptureError
        As :func:`~qoe.capture.read_packets` (at the call).
    InputError
        ``batch_size`` or ``chunk_size`` is not a positive integer; ``reassembly`` is not
        a :class:`~qoe.capture.ReassemblyLimits`.

    Warns
    -----
    QoEWarning
        The file ends inside a record: what came before it is returned.

    References
    ----------
    .. [1] draft-ietf-opsawg-pcap §5; draft-ietf-opsawg-pcapng §4.3; RFC 791; RFC 768.
    """
    batch_size = None if batch_size is None else positive_int(batch_size, "batch_size")
    chunk_size = positive_int(chunk_size, "chunk_size")
    reassembly = reassembly_limits(reassembly)
    probe(path, chunk_size=chunk_size)  # raise CaptureError now, not at the first next()
    return _iter_batches(path, batch_size, chunk_size, reassembly)


# The columns of a _Piece, in its constructor's order (``buf`` last).
_COLS = ("index", "ts", "src", "dst", "sport", "dport", "iface", "wire", "starts", "lens", "head", "cut")


class _Piece:
    """Datagrams of one chunk (or a remainder): columns, and where their payloads lie in
    ``buf`` (``starts``, ``lens``); the payloads are not copied out of it."""

    __slots__ = _COLS + ("buf",)

    def __init__(self, index, ts, src, dst, sport, dport, iface, wire, starts, lens, head, cut, buf):  # type: ignore[no-untyped-def]
        self.index = index
        self.ts = ts
        self.src = src
        self.dst = dst
        self.sport = sport
        self.dport = dport
        self.iface = iface
        self.wire = wire
        self.starts = starts
        self.lens = lens
        self.head = head  # k × HEAD_BYTES uint8
        self.cut = cut  # payload bytes the snap length cut off (0: whole)
        self.buf = buf  # bytes

    def __len__(self) -> int:
        return int(self.index.shape[0])

    def rows(self, sel: np.ndarray | slice) -> _Piece:
        """The datagrams ``sel`` (same buffer)."""
        return _Piece(*(getattr(self, c)[sel] for c in _COLS), self.buf)


def _concat(pieces: list[_Piece]) -> _Piece:
    """The datagrams of ``pieces`` one after the other; their buffers joined (each
    distinct buffer once), the payload starts moved accordingly."""
    if len(pieces) == 1:
        return pieces[0]
    bufs: list[bytes] = []
    base: dict[int, int] = {}  # id of a buffer -> where it starts in the joined one
    size = 0
    for p in pieces:
        if id(p.buf) not in base:
            base[id(p.buf)] = size
            bufs.append(p.buf)
            size += len(p.buf)
    cols = {c: np.concatenate([getattr(p, c) for p in pieces]) for c in _COLS if c != "starts"}
    cols["starts"] = np.concatenate([p.starts + base[id(p.buf)] for p in pieces])
    return _Piece(*(cols[c] for c in _COLS), bufs[0] if len(bufs) == 1 else b"".join(bufs))


def _to_batch(p: _Piece, book: AddressBook) -> UdpBatch:
    # contiguous columns (a copy only where one is strided or of another type): a read-ahead
    # child hands a contiguous array over in shared memory, a strided one inside the pickle
    c = np.ascontiguousarray
    return UdpBatch(
        index=c(p.index, dtype=np.int64),
        ts_ns=c(p.ts, dtype=np.int64),
        src=c(p.src, dtype=np.int32),
        dst=c(p.dst, dtype=np.int32),
        sport=c(p.sport, dtype=np.uint16),
        dport=c(p.dport, dtype=np.uint16),
        data=np.frombuffer(p.buf, dtype=np.uint8),
        starts=c(p.starts, dtype=np.int64),
        lengths=c(p.lens, dtype=np.int64),
        head=p.head,
        interface=c(p.iface, dtype=np.int32),
        wire_len=c(p.wire, dtype=np.int64),
        cut=c(p.cut, dtype=np.int64),
        addresses=book.snapshot(),
        encapsulations=book.encapsulations(),
    )


class _Extractor:
    """Columns of the UDP datagrams in a :class:`RawChunk`.

    Rows with a common layout are decoded with NumPy: a link header announcing IP
    (Ethernet II with up to two VLAN tags, SLL/SLL2, raw IP, NULL/LOOP), then either an
    IPv4 header without options (IHL 5, RFC 791 §3.1) that is not a fragment (MF = 0,
    offset 0) with protocol 17, or an IPv6 header (RFC 8200 §3) whose Next Header is 17,
    and UDP ports that are not a tunnel's (VXLAN, GTP-U, L2TP). Rows that are certainly
    not UDP (IPv4/IPv6 with another protocol that is not a tunnel, and no extension
    header, non-IP EtherTypes) are dropped the same way. The rest (IPv6 extension headers,
    fragments, IP options, LLC/SNAP, PPPoE, MPLS, tunnels, …) go through the per-packet
    :class:`Decoder`, which keeps the reassembly state, so the result is the same as
    ``read_packets(..., protocols=("udp",))``.
    """

    def __init__(self, reassembly: ReassemblyLimits) -> None:
        self.decoder = Decoder(frozenset({IPPROTO_UDP}), reassembly)
        self.book = AddressBook()
        self._codes: dict[bytes, int] = {}  # raw address (4 or 16 bytes) -> code
        # IPv4 addresses seen, in a direct-mapped table: slot -> address << 32 | code + 1 (0:
        # none), one word per slot so that a lookup is one gather (one cache miss, not two)
        self._v4 = np.zeros(_V4_SLOTS, dtype=np.uint64)

    def _addr_codes(self, raw: np.ndarray) -> np.ndarray:
        """Codes of the addresses in the rows of ``raw`` (n × 4 or n × 16 uint8).

        IPv4 addresses are looked up first in a direct-mapped table (one slot per
        Fibonacci hash of the address; the last address to land in a slot keeps it),
        so a capture's known addresses cost a few gathers; the others, and IPv6
        addresses, go through :meth:`_codes_of`.
        """
        raw = np.ascontiguousarray(raw, dtype=np.uint8)
        if raw.shape[1] == 16:
            return self._codes_each(raw.view(np.dtype((np.void, 16))).reshape(-1))
        keys = raw.view(">u4").reshape(-1).astype(np.uint32)
        slot = _v4_slot(keys)
        entry = self._v4[slot]
        codes = (entry & _LOW32).astype(np.int32) - 1  # -1: an empty slot
        miss = np.flatnonzero(((entry >> _HIGH) != keys) | (codes < 0))
        if miss.size:  # addresses new to the table: each once, then look again
            new = np.sort(keys[miss])
            new = new[np.concatenate(([True], new[1:] != new[:-1]))]
            at = _v4_slot(new)
            self._v4[at] = new.astype(np.uint64) << _HIGH | (self._codes_of(new).astype(np.uint64) + 1)
            entry = self._v4[slot[miss]]
            codes[miss] = (entry & _LOW32).astype(np.int32) - 1
            miss = miss[(entry >> _HIGH) != keys[miss]]  # two new ones in one slot
        if miss.size:
            codes[miss] = self._codes_each(keys[miss])
        return codes

    def _codes_each(self, keys: np.ndarray) -> np.ndarray:
        """:meth:`_codes_of` for keys that repeat: each distinct one looked up once."""
        uniq, inv = np.unique(keys, return_inverse=True)
        return self._codes_of(uniq)[inv.reshape(-1)]

    def _codes_of(self, keys: np.ndarray) -> np.ndarray:
        """Codes of distinct addresses ``keys`` (uint32 for IPv4, 16-byte voids for
        IPv6), through the decoder's text form and the address book."""
        cache = self._codes
        codes = np.empty(len(keys), dtype=np.int32)
        for j, v in enumerate(keys.tolist()):
            key = v.to_bytes(4, "big") if isinstance(v, int) else v
            c = cache.get(key)
            if c is None:
                c = cache[key] = self.book.code(self.decoder.addr(key))
            codes[j] = c
        return codes

    def extract(self, ch: RawChunk) -> _Piece | None:
        """The UDP datagrams of ``ch`` in frame order (None if it holds none)."""
        padded = _padded(ch)  # also the buffer the payloads are left in
        u8 = np.frombuffer(padded, dtype=np.uint8)
        if isinstance(ch.linktype, int) and ch.linktype == LINKTYPE_ETHERNET and len(ch):
            if _all_plain_tcp(u8, ch.data_off, ch.caplen):
                return None  # (a web capture's chunks: no row can hold a datagram)
            piece = self._plain_udp4(ch, padded, u8)
            if piece is not None:
                return piece
        l3, ver, not_ip = _link_layer(u8, ch.data_off, ch.caplen, ch.linktype)
        # IP + UDP headers (48 bytes: enough for IPv6 + UDP) of every row, at once.
        g = byte_rows(u8, ch.data_off + np.maximum(l3, 0), 48)  # uint8, k × 48
        fast4, other4 = _ipv4_rows(g, ver, ch.caplen, l3)
        fast6, other6 = _ipv6_rows(g, ver, ch.caplen, l3)
        slow = ~(fast4 | fast6 | other4 | other6 | not_ip)
        pieces: list[_Piece] = []
        for fast, version in ((fast4, 4), (fast6, 6)):
            fi = np.flatnonzero(fast)
            if len(fi):
                # (np.take along the rows: a 2-D array indexed by a row list is copied a byte at a time)
                pieces.append(self._udp_piece(ch, padded, u8, np.take(g, fi, axis=0), l3[fi], fi, version))
        si = np.flatnonzero(slow)
        if len(si):
            decoded = self._decoded_piece(ch, si)
            if decoded is not None:
                pieces.append(decoded)
        if not pieces:
            return None
        if len(pieces) == 1:
            return pieces[0]
        return _merge_by_index(pieces)

    def _plain_udp4(self, ch: RawChunk, buf: bytes, u8: np.ndarray) -> _Piece | None:
        """The datagrams of an Ethernet chunk whose every row is Ethernet II, IPv4 without
        options or fragmentation, and UDP not to or from a tunnel's port (a trunk of RTP):
        the columns of :meth:`_udp_piece` read from one gather of each row's first
        :data:`_PLAIN_BYTES` bytes; None when a row is anything else (the general path
        then takes the chunk)."""
        g = byte_rows(u8, ch.data_off, _PLAIN_BYTES)  # k × 64 uint8
        w = g.view(">u2")  # big-endian 16-bit words: word i is bytes 2i, 2i+1
        cap = ch.caplen
        # Ethernet II: EtherType at 12 (IEEE 802.3 §3.2.6); RFC 791 §3.1: version/IHL at
        # 14, Total Length at 16, flags and fragment offset at 20, protocol at 23; RFC 768:
        # ports at 34 and 36, length at 38; the payload at 42.
        plain = ((w[:, 6] == ETHERTYPE_IPV4) & (g[:, 14] == 0x45) & ((w[:, 10] & 0x3FFF) == 0)
                 & (g[:, 23] == IPPROTO_UDP) & (cap >= _PLAIN_PAYLOAD) & (w[:, 8] >= 28)
                 & ~_IS_TUNNEL_PORT[w[:, 17]] & ~_IS_TUNNEL_PORT[w[:, 18]])
        if not plain.all():
            return None
        k = len(ch)
        ip_end = np.minimum(14 + w[:, 8].astype(np.int64), cap)
        ulen = w[:, 19].astype(np.int64)
        pend = np.where(ulen >= 8, np.minimum(34 + ulen, ip_end), ip_end)
        off = ch.data_off
        starts = off + _PLAIN_PAYLOAD
        lens = np.maximum(off + pend, starts) - starts
        head = _zero_past_end(g[:, _PLAIN_PAYLOAD : _PLAIN_PAYLOAD + HEAD_BYTES].copy(), lens)
        codes = self._addr_codes(np.concatenate([g[:, 26:30], g[:, 30:34]]))
        return _Piece(
            np.arange(k, dtype=np.int64) + ch.index0,
            ch.ts_ns,
            codes[:k],
            codes[k:],
            w[:, 17],
            w[:, 18],
            ch.iface,
            ch.wire,
            starts,
            lens,
            head,
            np.where(ulen >= 8, np.maximum(34 + ulen - cap, 0), 0).astype(np.int64),
            buf,
        )

    def _udp_piece(
        self, ch: RawChunk, buf: bytes, u8: np.ndarray, gf: np.ndarray, l3f: np.ndarray, fi: np.ndarray, version: int
    ) -> _Piece:
        """The datagrams of rows ``fi``, whose IP header (``version``) is at ``l3f`` and
        simple (no options or extension headers, not a fragment) and carries UDP; ``gf``
        holds their first 48 header bytes (uint8); their payloads stay in ``buf`` (the
        chunk's bytes, padded; ``u8`` views it)."""
        capf = ch.caplen[fi]
        if version == 4:
            # RFC 791 §3.1: Total Length at 2 bounds the datagram; addresses at 12 and 16.
            total = _u16(gf, 2)
            ip_end = np.minimum(l3f + total, capf)
            hdr, src_at, alen = 20, 12, 4
        else:
            # RFC 8200 §3: Payload Length at 4 (0: a jumbogram, the captured bytes count);
            # addresses at 8 and 24.
            plen = _u16(gf, 4)
            ip_end = np.where(plen > 0, np.minimum(l3f + 40 + plen, capf), capf)
            hdr, src_at, alen = 40, 8, 16
        # RFC 768: source port, destination port, length (header included), checksum.
        u = hdr
        ulen = _u16(gf, u + 4)
        pend = np.where(ulen >= 8, np.minimum(l3f + hdr + ulen, ip_end), ip_end)
        off = ch.data_off[fi]
        starts = off + l3f + hdr + 8
        ends = np.maximum(off + pend, starts)
        m = len(fi)
        codes = self._addr_codes(np.concatenate([gf[:, src_at : src_at + alen], gf[:, src_at + alen : src_at + 2 * alen]]))
        return _Piece(
            fi + ch.index0,
            ch.ts_ns[fi],
            codes[:m],
            codes[m:],
            _u16(gf, u),
            _u16(gf, u + 2),
            ch.iface[fi],
            ch.wire[fi],
            starts,
            ends - starts,
            _heads(u8, starts, ends - starts),
            # RFC 768: the UDP length counts the payload on the wire; what the capture's
            # snap length left out of it is its end past the frame's captured bytes
            np.where(ulen >= 8, np.maximum(l3f + hdr + ulen - capf, 0), 0).astype(np.int64),
            buf,
        )

    def _decoded_piece(self, ch: RawChunk, si: np.ndarray) -> _Piece | None:
        """The datagrams of rows ``si`` through the per-packet :class:`Decoder` (and its
        reassembly state): the layouts the columns do not cover."""
        decode = self.decoder.decode
        code = self.book.code
        lt = ch.linktype
        buf = ch.buf if isinstance(ch.buf, bytes) else bytes(ch.buf)  # (frames as bytes, not views of shared memory)
        rows = []
        cuts: list[int] = []
        for r in si.tolist():
            o = int(ch.data_off[r])
            t = lt if isinstance(lt, int) else int(lt[r])
            frame = buf[o : o + int(ch.caplen[r])]
            p = decode(r + ch.index0, int(ch.ts_ns[r]), int(ch.iface[r]), t, int(ch.wire[r]), frame)
            if p is not None:
                rows.append(p)
                cuts.append(max(0, int(ch.wire[r]) - len(frame)))  # the frame's end the snap length left out
        if not rows:
            return None
        lens = np.array([len(p.payload) for p in rows], dtype=np.int64)
        return _Piece(
            np.array([p.index for p in rows], dtype=np.int64),
            np.array([p.ts_ns for p in rows], dtype=np.int64),
            np.array([code(p.src, p.encapsulation) for p in rows], dtype=np.int32),
            np.array([code(p.dst, p.encapsulation) for p in rows], dtype=np.int32),
            np.array([p.sport for p in rows], dtype=np.int64),
            np.array([p.dport for p in rows], dtype=np.int64),
            np.array([p.interface for p in rows], dtype=np.int32),
            np.array([p.wire_len for p in rows], dtype=np.int64),
            np.cumsum(lens) - lens,
            lens,
            np.frombuffer(b"".join(p.payload[:HEAD_BYTES].ljust(HEAD_BYTES, b"\0") for p in rows), dtype=np.uint8)
            .reshape(-1, HEAD_BYTES),
            np.array(cuts, dtype=np.int64),
            b"".join(p.payload for p in rows),
        )


def _v4_slot(keys: np.ndarray) -> np.ndarray:
    """Slots of IPv4 addresses ``keys`` (uint32) in :class:`_Extractor`'s table."""
    return (keys * _FIBONACCI32) >> np.uint32(32 - _V4_SLOT_BITS)  # the product wraps mod 2**32


def _heads(u8: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The first :data:`HEAD_BYTES` of the payloads at ``starts`` in ``u8`` (of ``lens``
    bytes), zeros past their ends: a k × HEAD_BYTES uint8 copy."""
    return _zero_past_end(byte_rows(u8, starts, HEAD_BYTES), lens)


def _zero_past_end(head: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """``head`` (k × HEAD_BYTES, a copy) with the bytes past each payload's ``lens`` zeroed."""
    short = np.flatnonzero(lens < HEAD_BYTES)
    if short.size:
        head[short] *= _HEAD_COLUMNS < lens[short, None]
    return head


def _padded(ch: RawChunk) -> bytes:
    """The chunk's bytes, with at least ``len(_PAD_BYTES)`` of them after its last row's
    start (zeros appended, in a copy, only where the chunk ends sooner).

    That lets every gather in :meth:`_Extractor.extract` run unclipped: no offset used
    exceeds a record start by more than ``_PAD_BYTES``, and each row is only believed
    where its captured length covers the bytes read.
    """
    if len(ch) and int(ch.data_off.max()) + len(_PAD_BYTES) > len(ch.buf):
        return bytes(ch.buf) + _PAD_BYTES
    return ch.buf


def _link_layer(
    u8: np.ndarray, off: np.ndarray, cap: np.ndarray, lt: int | np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The link layer of every row: ``(l3, ver, not_ip)``, the offset of the IP header
    (-1: not decided here), its version (4 or 6; 0: not decided) and the rows known to
    carry no IP at all. ``lt`` is the rows' link type (one for all, or one per row)."""
    k = len(off)
    l3 = np.full(k, -1, dtype=np.int64)
    ver = np.zeros(k, dtype=np.int64)
    not_ip = np.zeros(k, dtype=bool)
    for t in [lt] if isinstance(lt, int) else np.unique(lt).tolist():
        sel = np.ones(k, dtype=bool) if isinstance(lt, int) else (lt == t)
        if t in ETHERTYPE_FIELD:
            at, v4, v6, no_ip = _ethertype_link(u8, off, cap, sel, t)
        elif t in RAW_IP_LINKTYPES or t in IP_VERSION_OF_LINKTYPE:
            at, v4, v6, no_ip = _raw_ip_link(u8, off, cap, sel, t)
        elif t == LINKTYPE_NULL or t == LINKTYPE_LOOP:
            at, v4, v6, no_ip = _address_family_link(u8, off, cap, sel, t)
        else:  # a frame without a packet (pcapng journal/custom block)
            not_ip |= sel
            continue
        l3 = np.where(v4 | v6, at, l3)
        ver = np.where(v4, 4, np.where(v6, 6, ver))
        not_ip |= no_ip
    return l3, ver, not_ip


# Each link-layer step below returns, for the rows ``sel`` of its link type ``t``:
# (offset of the IP header, rows with IPv4 there, rows with IPv6 there, rows with no IP).
_LinkRows = tuple["np.ndarray | int", np.ndarray, np.ndarray, np.ndarray]


def _byte_at(u8: np.ndarray, off: np.ndarray, rel: np.ndarray | int) -> np.ndarray:
    return u8[off + rel].astype(np.int64)


def _lookup_table(size: int, members: Iterable[int]) -> np.ndarray:
    """A boolean table of ``size`` entries, True at ``members``: ``table[x]`` is
    ``np.isin(x, members)`` for ``0 <= x < size`` with one gather."""
    table = np.zeros(size, dtype=bool)
    table[list(members)] = True
    return table


def _ethertype_link(u8: np.ndarray, off: np.ndarray, cap: np.ndarray, sel: np.ndarray, t: int) -> _LinkRows:
    """Ethernet II (with up to two VLAN tags), Linux SLL and SLL2: an EtherType field."""
    at, hl0 = ETHERTYPE_FIELD[t]
    hl = np.full(len(off), hl0, dtype=np.int64)
    et = _byte_at(u8, off, at) << 8 | _byte_at(u8, off, at + 1)
    if t == LINKTYPE_ETHERNET:
        for _ in range(2):  # up to two 802.1Q / 802.1ad tags (IEEE 802.1Q §9.5)
            tagged = _IS_VLAN_TPID[et]
            if not tagged.any():
                break
            et = np.where(tagged, _byte_at(u8, off, hl + 2) << 8 | _byte_at(u8, off, hl + 3), et)
            hl = np.where(tagged, hl + 4, hl)
    ok = sel & (cap >= hl)
    v4 = ok & (et == ETHERTYPE_IPV4)
    v6 = ok & (et == ETHERTYPE_IPV6)
    maybe_ip = _MAYBE_IP_ETHERTYPE[et]
    if t == LINKTYPE_ETHERNET:
        maybe_ip |= et <= ETHER_MAX_LENGTH  # 802.3 length: LLC/SNAP may carry IP
    return hl, v4, v6, sel & ~(ok & maybe_ip)


def _raw_ip_link(u8: np.ndarray, off: np.ndarray, cap: np.ndarray, sel: np.ndarray, t: int) -> _LinkRows:
    """Raw IP: the version from the link type, or from the first nibble."""
    if t in IP_VERSION_OF_LINKTYPE:
        v = np.full(len(off), IP_VERSION_OF_LINKTYPE[t], dtype=np.int64)
    else:
        v = _byte_at(u8, off, 0) >> 4
    present = sel & (cap > 0)
    v4 = present & (v == 4)
    v6 = present & (v == 6)
    return 0, v4, v6, sel & ~(v4 | v6)


def _address_family_link(u8: np.ndarray, off: np.ndarray, cap: np.ndarray, sel: np.ndarray, t: int) -> _LinkRows:
    """BSD NULL (address family in the writer's byte order) and OpenBSD LOOP (network
    byte order): a 4-byte address family."""
    b0, b1, b2, b3 = (_byte_at(u8, off, i) for i in range(4))
    be = b0 << 24 | b1 << 16 | b2 << 8 | b3
    le = b3 << 24 | b2 << 16 | b1 << 8 | b0
    af = be if t == LINKTYPE_LOOP else np.where(le > 0xFFFF, be, le)
    v4 = sel & (cap >= 4) & (af == AF_INET)
    v6 = sel & (cap >= 4) & np.isin(af, _AF_INET6_ARRAY)
    return 4, v4, v6, sel & ~(v4 | v6)


def _ipv4_rows(g: np.ndarray, ver: np.ndarray, cap: np.ndarray, l3: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows with a simple IPv4 header (RFC 791 §3.1: IHL 5, MF 0 and fragment offset 0)
    in the gathered headers ``g``: ``(carrying UDP, carrying another protocol)``."""
    simple = (ver == 4) & (cap >= l3 + 28) & (g[:, 0] == 0x45) & ((_u16(g, 6) & 0x3FFF) == 0)
    udp = g[:, 9] == IPPROTO_UDP  # protocol at byte 9
    # tunnels (IP protocols 4, 41, 47; UDP to a tunnel's port) are left to the decoder
    simple &= ~(_IS_IP_TUNNEL[g[:, 9]] | (udp & (_IS_TUNNEL_PORT[_u16(g, 20)] | _IS_TUNNEL_PORT[_u16(g, 22)])))
    return simple & udp & (_u16(g, 2) >= 28), simple & ~udp


def _all_plain_tcp(u8: np.ndarray, off: np.ndarray, cap: np.ndarray) -> bool:
    """Whether every row of an Ethernet chunk is TCP straight over IPv4 or IPv6 (a TCP
    segment holds no UDP datagram, nor a tunnel one), told from three bytes a row: the
    EtherType (IEEE 802.3 §3.2.6) and the IPv4 Protocol (RFC 791 §3.1, byte 9) or IPv6 Next
    Header (RFC 8200 §3, byte 6)."""
    if not (cap >= 24).all():
        return False
    et = u8[off + 12].astype(np.int64) << 8 | u8[off + 13]
    if not ((et == ETHERTYPE_IPV4) | (et == ETHERTYPE_IPV6)).all():
        return False
    proto = np.where(et == ETHERTYPE_IPV4, u8[off + 23], u8[off + 20])
    return bool((proto == IPPROTO_TCP).all())


def _ipv6_rows(g: np.ndarray, ver: np.ndarray, cap: np.ndarray, l3: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows with an IPv6 header (RFC 8200 §3: version 6, next header at byte 6) followed
    by no extension header: ``(carrying UDP, carrying another protocol)``."""
    nh = g[:, 6]
    simple = (ver == 6) & (cap >= l3 + 48) & ((g[:, 0] >> 4) == 6) & ~_IS_IPV6_EXTENSION[nh]
    udp = nh == IPPROTO_UDP
    simple &= ~(_IS_IP_TUNNEL[nh] | (udp & (_IS_TUNNEL_PORT[_u16(g, 40)] | _IS_TUNNEL_PORT[_u16(g, 42)])))
    return simple & udp, simple & ~udp


def _u16(g: np.ndarray, col: int) -> np.ndarray:
    """Big-endian 16-bit field at byte ``col`` of every row of ``g``."""
    return g[:, col].astype(np.int64) << 8 | g[:, col + 1]


def _merge_by_index(pieces: list[_Piece]) -> _Piece:
    """Interleave pieces in frame order (the payloads stay where they are)."""
    both = _concat(pieces)
    return both.rows(np.argsort(both.index, kind="stable"))


# The IPv4 address table of _Extractor: 2**16 slots, indexed by the top bits of the
# address times 2**32 / golden ratio (Knuth's multiplicative hashing, TAOCP vol. 3 §6.4).
_V4_SLOT_BITS = 16
_V4_SLOTS = 1 << _V4_SLOT_BITS
_FIBONACCI32 = np.uint32(0x9E3779B9)
_HIGH, _LOW32 = np.uint64(32), np.uint64(0xFFFFFFFF)  # an entry's address and code + 1 halves
_HEAD_COLUMNS = np.arange(HEAD_BYTES)
# The plain rows of _Extractor._plain_udp4: Ethernet II (14 bytes) + IPv4 without options
# (20) + UDP (8) put the payload at byte 42; 64 bytes of a row hold its 16 first bytes too.
_PLAIN_PAYLOAD = 42
_PLAIN_BYTES = 64
_PAD_BYTES = bytes(128)  # > largest link header (22, Ethernet + 2 tags) + 48 header bytes + 16 of a payload, and > _PLAIN_BYTES
_IS_VLAN_TPID = _lookup_table(1 << 16, VLAN_TPIDS)  # indexed by EtherType
_AF_INET6_ARRAY = np.array(sorted(AF_INET6_VALUES), dtype=np.int64)
# IPv6 Next Header values that are extension headers (RFC 8200 §4; AH RFC 4302; ESP RFC
# 4303; Mobility RFC 6275; HIP RFC 7401; Shim6 RFC 5533; No Next Header 59): the general
# decoder handles those rows.
_IS_IPV6_EXTENSION = _lookup_table(1 << 8, [0, 43, 44, 50, 51, 59, 60, 135, 139, 140, 253, 254])
_MAYBE_IP_ETHERTYPE = _lookup_table(
    1 << 16, [ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_PPPOE_SESSION, *VLAN_TPIDS, *MPLS_ETHERTYPES]
)
_IS_IP_TUNNEL = _lookup_table(1 << 8, IP_TUNNEL_PROTOCOLS)  # indexed by IP protocol / Next Header
_IS_TUNNEL_PORT = _lookup_table(1 << 16, UDP_TUNNEL_PORTS)  # indexed by UDP port


def _compact(p: _Piece) -> _Piece:
    """``p`` with its payloads copied into a buffer of their own when they fill less than
    half of the chunk they were left in (padded with ``_PAD_BYTES``, as a chunk is).

    A piece keeps its chunk alive until its batch is full; in a capture where UDP is
    rare (a web capture's DNS), a batch of ``batch_size`` datagrams would otherwise keep
    every chunk read, i.e. the whole capture, in memory.
    """
    total = int(p.lens.sum())
    if 2 * total >= len(p.buf):
        return p
    lens = p.lens.astype(np.int64)
    starts = np.cumsum(lens) - lens
    at = np.arange(total, dtype=np.int64) + np.repeat(p.starts.astype(np.int64) - starts, lens)
    buf = np.frombuffer(p.buf, dtype=np.uint8)[at].tobytes() + _PAD_BYTES
    return _Piece(*(starts.astype(p.starts.dtype) if c == "starts" else getattr(p, c) for c in _COLS), buf)


def _take(pending: list[_Piece], k: int) -> _Piece:
    """Remove the first ``k`` datagrams from ``pending`` (split the last piece if needed)."""
    take = []
    got = 0
    while got < k:
        p = pending[0]
        if got + len(p) <= k:
            take.append(pending.pop(0))
            got += len(p)
        else:
            cut = k - got
            take.append(p.rows(slice(None, cut)))
            pending[0] = p.rows(slice(cut, None))
            got = k
    return _concat(take)


def _iter_batches(
    path: PathOrFile, batch_size: int | None, chunk_size: int, reassembly: ReassemblyLimits
) -> Iterator[UdpBatch]:
    ex = _Extractor(reassembly)
    # (in a child reading ahead, a chunk is read straight into the memory its batch is handed over in)
    chunks = raw_chunks(path, chunk_size=chunk_size, shared=True)
    pieces = (p for p in (ex.extract(ch) for ch in chunks) if p is not None and len(p))
    if batch_size is None:  # a batch per chunk, its payloads left in the chunk's buffer
        for piece in pieces:
            yield _to_batch(piece, ex.book)
    else:
        pending: list[_Piece] = []
        count = 0
        for piece in pieces:
            pending.append(_compact(piece))
            count += len(piece)
            while count >= batch_size:
                yield _to_batch(_take(pending, batch_size), ex.book)
                count -= batch_size
        if count:
            yield _to_batch(_concat(pending), ex.book)
    warn_unread_esp(name_of(path), ex.decoder.esp_unread)
