"""``read_udp_batches``: UDP datagrams in NumPy columns, for large captures."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from qoe.capture._decode import IPPROTO_UDP, Decoder
from qoe.capture._files import CHUNK_SIZE, PathOrFile, RawChunk, probe, raw_chunks
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
from qoe.capture._types import UdpBatch


class AddressBook:
    """Address text ↔ small integer code, stable for one read."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.texts: list[str] = []
        self._snapshot: tuple[str, ...] = ()

    def code(self, text: str) -> int:
        c = self.codes.get(text)
        if c is None:
            c = self.codes[text] = len(self.texts)
            self.texts.append(text)
        return c

    def snapshot(self) -> tuple[str, ...]:
        if len(self._snapshot) != len(self.texts):
            self._snapshot = tuple(self.texts)
        return self._snapshot


def read_udp_batches(
    path: PathOrFile,
    *,
    batch_size: int = 65536,
    chunk_size: int = CHUNK_SIZE,
    reassembly: ReassemblyLimits = ReassemblyLimits(),
) -> Iterator[UdpBatch]:
    """Stream the UDP datagrams of a capture as columns of NumPy arrays.

    Parameters
    ----------
    path : str, os.PathLike or binary file object
        A pcap or pcapng capture, as for :func:`~qoe.capture.read_packets`.
    batch_size : int, optional
        Datagrams per batch (every batch but the last is full).
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
    batch_size = positive_int(batch_size, "batch_size")
    chunk_size = positive_int(chunk_size, "chunk_size")
    reassembly = reassembly_limits(reassembly)
    probe(path, chunk_size=chunk_size)  # raise CaptureError now, not at the first next()
    return _iter_batches(path, batch_size, chunk_size, reassembly)


class _Piece:
    """Datagrams of one chunk (or a remainder), columns plus their payload bytes."""

    __slots__ = ("index", "ts", "src", "dst", "sport", "dport", "iface", "wire", "lens", "payload")

    def __init__(self, index, ts, src, dst, sport, dport, iface, wire, lens, payload):  # type: ignore[no-untyped-def]
        self.index = index
        self.ts = ts
        self.src = src
        self.dst = dst
        self.sport = sport
        self.dport = dport
        self.iface = iface
        self.wire = wire
        self.lens = lens
        self.payload = payload  # bytes

    def __len__(self) -> int:
        return int(self.index.shape[0])


_COLS = ("index", "ts", "src", "dst", "sport", "dport", "iface", "wire", "lens")


def _concat(pieces: list[_Piece]) -> _Piece:
    if len(pieces) == 1:
        return pieces[0]
    cols = [np.concatenate([getattr(p, c) for p in pieces]) for c in _COLS]
    return _Piece(*cols, b"".join(p.payload for p in pieces))


def _split(p: _Piece, k: int) -> tuple[_Piece, _Piece]:
    nbytes = int(p.lens[:k].sum())
    head = _Piece(*(getattr(p, c)[:k] for c in _COLS), p.payload[:nbytes])
    tail = _Piece(*(getattr(p, c)[k:] for c in _COLS), p.payload[nbytes:])
    return head, tail


def _to_batch(p: _Piece, book: AddressBook) -> UdpBatch:
    offsets = np.zeros(len(p) + 1, dtype=np.int64)
    np.cumsum(p.lens, out=offsets[1:])
    return UdpBatch(
        index=p.index.astype(np.int64, copy=False),
        ts_ns=p.ts.astype(np.int64, copy=False),
        src=p.src.astype(np.int32, copy=False),
        dst=p.dst.astype(np.int32, copy=False),
        sport=p.sport.astype(np.uint16, copy=False),
        dport=p.dport.astype(np.uint16, copy=False),
        payload=np.frombuffer(p.payload, dtype=np.uint8),
        offsets=offsets,
        interface=p.iface.astype(np.int32, copy=False),
        wire_len=p.wire.astype(np.int64, copy=False),
        addresses=book.snapshot(),
    )


class _Extractor:
    """Columns of the UDP datagrams in a :class:`RawChunk`.

    Rows with a common layout are decoded with NumPy: a link header announcing IP
    (Ethernet II with up to two VLAN tags, SLL/SLL2, raw IP, NULL/LOOP), then either an
    IPv4 header without options (IHL 5, RFC 791 §3.1) that is not a fragment (MF = 0,
    offset 0) with protocol 17, or an IPv6 header (RFC 8200 §3) whose Next Header is 17.
    Rows that are certainly not UDP (IPv4/IPv6 with another protocol and no extension
    header, non-IP EtherTypes) are dropped the same way. The rest (IPv6 extension headers,
    fragments, IP options, LLC/SNAP, PPPoE, …) go through the per-packet
    :class:`Decoder`, which keeps the reassembly state, so the result is the same as
    ``read_packets(..., protocols=("udp",))``.
    """

    def __init__(self, reassembly: ReassemblyLimits) -> None:
        self.decoder = Decoder(frozenset({IPPROTO_UDP}), reassembly)
        self.book = AddressBook()
        self._codes: dict[bytes, int] = {}  # raw address (4 or 16 bytes) -> code

    def _addr_codes(self, raw: np.ndarray) -> np.ndarray:
        """Codes of the addresses in the rows of ``raw`` (n × 4 or n × 16 byte values)."""
        width = raw.shape[1]
        if width == 4:  # sorting uint32 is far cheaper than sorting 4-byte voids
            keys = raw[:, 0] << 24 | raw[:, 1] << 16 | raw[:, 2] << 8 | raw[:, 3]
        else:
            keys = np.ascontiguousarray(raw, dtype=np.uint8).view(np.dtype((np.void, width))).reshape(-1)
        uniq, inv = np.unique(keys, return_inverse=True)
        cache = self._codes
        codes = np.empty(len(uniq), dtype=np.int32)
        for j, v in enumerate(uniq.tolist()):
            key = v.to_bytes(4, "big") if width == 4 else v
            c = cache.get(key)
            if c is None:
                c = cache[key] = self.book.code(self.decoder.addr(key))
            codes[j] = c
        return codes[inv.reshape(-1)]

    def extract(self, ch: RawChunk) -> _Piece | None:
        """The UDP datagrams of ``ch`` in frame order (None if it holds none)."""
        # Zero padding past the end lets every gather below run unclipped: no offset used
        # exceeds a record start by more than _PAD_BYTES, and each row is only believed
        # where its captured length covers the bytes read.
        u8 = np.frombuffer(ch.buf + _PAD_BYTES, dtype=np.uint8)
        l3, ver, not_ip = _link_layer(u8, ch.data_off, ch.caplen, ch.linktype)
        # IP + UDP headers (48 bytes: enough for IPv6 + UDP) of every row, at once.
        g = u8[(ch.data_off + np.maximum(l3, 0))[:, None] + _ARANGE48]  # uint8, k × 48
        fast4, other4 = _ipv4_rows(g, ver, ch.caplen, l3)
        fast6, other6 = _ipv6_rows(g, ver, ch.caplen, l3)
        slow = ~(fast4 | fast6 | other4 | other6 | not_ip)
        pieces: list[_Piece] = []
        for fast, version in ((fast4, 4), (fast6, 6)):
            fi = np.flatnonzero(fast)
            if len(fi):
                pieces.append(self._udp_piece(ch, g[fi].astype(np.int64), l3[fi], fi, version))
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

    def _udp_piece(self, ch: RawChunk, gf: np.ndarray, l3f: np.ndarray, fi: np.ndarray, version: int) -> _Piece:
        """The datagrams of rows ``fi``, whose IP header (``version``) is at ``l3f`` and
        simple (no options or extension headers, not a fragment) and carries UDP; ``gf``
        holds their first 48 header bytes."""
        capf = ch.caplen[fi]
        if version == 4:
            # RFC 791 §3.1: Total Length at 2 bounds the datagram; addresses at 12 and 16.
            total = gf[:, 2] << 8 | gf[:, 3]
            ip_end = np.minimum(l3f + total, capf)
            hdr, src_at, alen = 20, 12, 4
        else:
            # RFC 8200 §3: Payload Length at 4 (0: a jumbogram, the captured bytes count);
            # addresses at 8 and 24.
            plen = gf[:, 4] << 8 | gf[:, 5]
            ip_end = np.where(plen > 0, np.minimum(l3f + 40 + plen, capf), capf)
            hdr, src_at, alen = 40, 8, 16
        # RFC 768: source port, destination port, length (header included), checksum.
        u = hdr
        ulen = gf[:, u + 4] << 8 | gf[:, u + 5]
        pend = np.where(ulen >= 8, np.minimum(l3f + hdr + ulen, ip_end), ip_end)
        off = ch.data_off[fi]
        starts = off + l3f + hdr + 8
        ends = np.maximum(off + pend, starts)
        m = len(fi)
        codes = self._addr_codes(np.concatenate([gf[:, src_at : src_at + alen], gf[:, src_at + alen : src_at + 2 * alen]]))
        mv = memoryview(ch.buf)
        payload = b"".join([mv[a:b] for a, b in zip(starts.tolist(), ends.tolist())])
        return _Piece(
            fi + ch.index0,
            ch.ts_ns[fi],
            codes[:m],
            codes[m:],
            gf[:, u] << 8 | gf[:, u + 1],
            gf[:, u + 2] << 8 | gf[:, u + 3],
            ch.iface[fi],
            ch.wire[fi],
            ends - starts,
            payload,
        )

    def _decoded_piece(self, ch: RawChunk, si: np.ndarray) -> _Piece | None:
        """The datagrams of rows ``si`` through the per-packet :class:`Decoder` (and its
        reassembly state): the layouts the columns do not cover."""
        decode = self.decoder.decode
        code = self.book.code
        lt = ch.linktype
        buf = ch.buf
        rows = []
        for r in si.tolist():
            o = int(ch.data_off[r])
            t = lt if isinstance(lt, int) else int(lt[r])
            frame = buf[o : o + int(ch.caplen[r])]
            p = decode(r + ch.index0, int(ch.ts_ns[r]), int(ch.iface[r]), t, int(ch.wire[r]), frame)
            if p is not None:
                rows.append(p)
        if not rows:
            return None
        return _Piece(
            np.array([p.index for p in rows], dtype=np.int64),
            np.array([p.ts_ns for p in rows], dtype=np.int64),
            np.array([code(p.src) for p in rows], dtype=np.int32),
            np.array([code(p.dst) for p in rows], dtype=np.int32),
            np.array([p.sport for p in rows], dtype=np.int64),
            np.array([p.dport for p in rows], dtype=np.int64),
            np.array([p.interface for p in rows], dtype=np.int32),
            np.array([p.wire_len for p in rows], dtype=np.int64),
            np.array([len(p.payload) for p in rows], dtype=np.int64),
            b"".join(p.payload for p in rows),
        )


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


def _ethertype_link(u8: np.ndarray, off: np.ndarray, cap: np.ndarray, sel: np.ndarray, t: int) -> _LinkRows:
    """Ethernet II (with up to two VLAN tags), Linux SLL and SLL2: an EtherType field."""
    at, hl0 = ETHERTYPE_FIELD[t]
    hl = np.full(len(off), hl0, dtype=np.int64)
    et = _byte_at(u8, off, at) << 8 | _byte_at(u8, off, at + 1)
    if t == LINKTYPE_ETHERNET:
        for _ in range(2):  # up to two 802.1Q / 802.1ad tags (IEEE 802.1Q §9.5)
            tagged = np.isin(et, _VLAN_ARRAY)
            et = np.where(tagged, _byte_at(u8, off, hl + 2) << 8 | _byte_at(u8, off, hl + 3), et)
            hl = np.where(tagged, hl + 4, hl)
    ok = sel & (cap >= hl)
    v4 = ok & (et == ETHERTYPE_IPV4)
    v6 = ok & (et == ETHERTYPE_IPV6)
    maybe_ip = np.isin(et, _MAYBE_IP_ETHERTYPES)
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
    return simple & udp & (_u16(g, 2) >= 28), simple & ~udp


def _ipv6_rows(g: np.ndarray, ver: np.ndarray, cap: np.ndarray, l3: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows with an IPv6 header (RFC 8200 §3: version 6, next header at byte 6) followed
    by no extension header: ``(carrying UDP, carrying another protocol)``."""
    nh = g[:, 6]
    simple = (ver == 6) & (cap >= l3 + 48) & ((g[:, 0] >> 4) == 6) & ~np.isin(nh, _IPV6_EXT_ARRAY)
    udp = nh == IPPROTO_UDP
    return simple & udp, simple & ~udp


def _u16(g: np.ndarray, col: int) -> np.ndarray:
    """Big-endian 16-bit field at byte ``col`` of every row of ``g``."""
    return g[:, col].astype(np.int64) << 8 | g[:, col + 1]


def _merge_by_index(pieces: list[_Piece]) -> _Piece:
    """Interleave pieces in frame order (payloads re-joined accordingly)."""
    both = _concat(pieces)
    order = np.argsort(both.index, kind="stable")
    offs = np.zeros(len(both) + 1, dtype=np.int64)
    np.cumsum(both.lens, out=offs[1:])
    mv = memoryview(both.payload)
    o = offs.tolist()
    payload = b"".join([mv[o[i] : o[i + 1]] for i in order.tolist()])
    cols = [getattr(both, c)[order] for c in _COLS]
    return _Piece(*cols, payload)


_ARANGE48 = np.arange(48, dtype=np.int64)
_PAD_BYTES = bytes(128)  # > largest link header (22, Ethernet + 2 tags) + 48 bytes gathered
_VLAN_ARRAY = np.array(sorted(VLAN_TPIDS), dtype=np.int64)
_AF_INET6_ARRAY = np.array(sorted(AF_INET6_VALUES), dtype=np.int64)
# IPv6 Next Header values that are extension headers (RFC 8200 §4; AH RFC 4302; ESP RFC
# 4303; Mobility RFC 6275; HIP RFC 7401; Shim6 RFC 5533; No Next Header 59): the general
# decoder handles those rows.
_IPV6_EXT_ARRAY = np.array([0, 43, 44, 50, 51, 59, 60, 135, 139, 140, 253, 254], dtype=np.int64)
_MAYBE_IP_ETHERTYPES = np.array(
    [ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_PPPOE_SESSION, *sorted(VLAN_TPIDS)], dtype=np.int64
)


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
            head, pending[0] = _split(p, k - got)
            take.append(head)
            got = k
    return _concat(take)


def _iter_batches(
    path: PathOrFile, batch_size: int, chunk_size: int, reassembly: ReassemblyLimits
) -> Iterator[UdpBatch]:
    ex = _Extractor(reassembly)
    pending: list[_Piece] = []
    count = 0
    for ch in raw_chunks(path, chunk_size=chunk_size):
        piece = ex.extract(ch)
        if piece is None:
            continue
        pending.append(piece)
        count += len(piece)
        while count >= batch_size:
            yield _to_batch(_take(pending, batch_size), ex.book)
            count -= batch_size
    if count:
        yield _to_batch(_concat(pending), ex.book)
