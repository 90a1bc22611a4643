"""``read_tcp_segments``: the TCP segments of a capture, headers taken with NumPy a chunk at a time.

The same :class:`Packet` records as ``read_packets(path, protocols=("tcp",))``, in the same
order, built faster for large captures: for the rows of a chunk with a common layout (a
link header announcing IP, then an IPv4 header without options that is not a fragment,
RFC 791 §3.1, or an IPv6 header without extension headers, RFC 8200 §3, carrying TCP
whose header is whole in the captured bytes) every header field is gathered with NumPy
at once, and the TCP options are read as columns when they are absent or the usual
NOP, NOP, Timestamps layout (RFC 7323 Appendix A); other option layouts are parsed per
row. Every other row (fragments, IP options, extension headers, LLC/SNAP, PPPoE, other
protocols, headers cut short) goes through the per-packet :class:`Decoder` with its
reassembly state, as :func:`read_packets` would take it.

References
----------
.. [1] RFC 791 §3.1 (IPv4 header), RFC 8200 §3 (IPv6 header).
.. [2] RFC 9293 §3.1 (TCP header), §3.2 (options).
.. [3] RFC 7323 §3.2 and Appendix A (Timestamps option and its recommended layout).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any

import numpy as np

from qoe.capture._udp_batches import (_IS_IPV6_EXTENSION, _compact, _Extractor, _ipv4_rows, _ipv6_rows, _link_layer,
                                      _padded, _to_batch, _u16)
from qoe.capture._decode import IPPROTO_TCP, Decoder, parse_tcp_options, warn_unread_esp
from qoe.capture._files import name_of, probe, raw_chunks
from qoe.capture._records import CHUNK_SIZE, PathOrFile, RawChunk, byte_rows
from qoe.capture._options import positive_int
from qoe.capture._readahead import read_ahead as ahead, read_ahead_pays
from qoe.capture._reassembly import ReassemblyLimits, reassembly_limits
from qoe.capture._types import Packet, UdpBatch, make_packet, make_tcpinfo
from qoe.errors import InputError

_GATHER = 72  # bytes gathered per row from the IP header: IPv6 (40) + TCP (20) + 12 of options
# What each item of a segment row is: the Packet fields, with the TcpInfo fields inline.
TCP_SEGMENT_FIELDS = (
    "index", "ts_ns", "src", "sport", "dst", "dport", "payload",
    "seq", "ack", "flags", "window", "urgent", "header_len", "data_len",
    "mss", "wscale", "sack_permitted", "sack", "tsval", "tsecr", "ip_id",
    "interface", "wire_len",
)
SegmentRow = tuple[Any, ...]
_MSS = TCP_SEGMENT_FIELDS.index("mss")
_TSECR = TCP_SEGMENT_FIELDS.index("tsecr")


def read_tcp_segments(
    path: PathOrFile,
    *,
    chunk_size: int = CHUNK_SIZE,
    reassembly: ReassemblyLimits = ReassemblyLimits(),
) -> Iterator[Packet]:
    """Stream the TCP segments of a pcap or pcapng capture, headers read in NumPy columns.

    Parameters
    ----------
    path : str, os.PathLike or binary file object
        A pcap or pcapng capture, as for :func:`~qoe.capture.read_packets`.
    chunk_size, reassembly : optional
        As for :func:`~qoe.capture.read_packets`.

    Yields
    ------
    Packet
        Exactly the packets ``read_packets(path, protocols=("tcp",), chunk_size=...,
        reassembly=...)`` yields, in the same order (the common header layouts of a chunk
        are read at once). :func:`tcp_segment_rows` gives the same as plain tuples.

    Raises
    ------
    CaptureError, InputError
        As :func:`~qoe.capture.read_packets`.

    Warns
    -----
    QoEWarning
        As :func:`~qoe.capture.read_packets`.
    """
    rows = tcp_segment_rows(path, chunk_size=chunk_size, reassembly=reassembly)
    return (make_packet(r[0], r[1], r[2], r[4], IPPROTO_TCP, r[3], r[5], r[6], make_tcpinfo(*r[7:20]), r[21], r[22],
                        "", r[20])
            for r in rows)


def tcp_segment_rows(
    path: PathOrFile,
    *,
    chunk_size: int = CHUNK_SIZE,
    reassembly: ReassemblyLimits = ReassemblyLimits(),
    udp: Callable[[UdpBatch], None] | None = None,
    read_ahead: bool | None = False,
) -> Iterator[SegmentRow]:
    """The segments of :func:`read_tcp_segments` as plain tuples (no Packet or TcpInfo objects).

    Item ``k`` of a row is the field named ``TCP_SEGMENT_FIELDS[k]``: ``index, ts_ns, src,
    sport, dst, dport, payload`` as in :class:`Packet`, then ``seq, ack, flags, window,
    urgent, header_len, data_len, mss, wscale, sack_permitted, sack, tsval, tsecr`` as in
    :class:`TcpInfo` (in its field order), then ``ip_id, interface, wire_len`` as in
    :class:`Packet`: the cheapest form
    for a consumer that looks at every segment once. Parameters, exceptions and warnings
    as :func:`read_tcp_segments`.

    ``udp``, when given, is called with the UDP datagrams of each chunk of the file (a
    :class:`UdpBatch` as :func:`~qoe.capture.read_udp_batches` gives them: the same
    datagrams, in frame order, address codes stable over the read), before the chunk's
    segments are yielded: a reader that needs both (TCP and DNS) reads the file once.

    ``read_ahead=True`` reads the file and decodes each chunk's headers into columns in a
    child process (:func:`~qoe.capture.read_ahead` with ``process=True``; a thread where it
    cannot fork, and for a file object, whose offset a child would share), which hands them
    over in shared memory; the rows are built here. The same rows, and ``udp`` called here
    with the same batches at the same points. None: when this process may run on two cores
    or more and the capture is not small (:func:`~qoe.capture.read_ahead_pays`). Default
    False. Measured on the 3,000 page loads of ``benchmarks/web.py`` (343,500 segments,
    268 MB, 2 vCPUs): ``qoe.web.iter_page_loads`` 1.97-2.01 s of wall time against
    2.39-2.40 s.
    """
    chunk_size = positive_int(chunk_size, "chunk_size")
    reassembly = reassembly_limits(reassembly)
    probe(path, chunk_size=chunk_size)  # raise CaptureError now, not at the first next()
    if read_ahead is None:
        read_ahead = read_ahead_pays(path)
    return _iter_rows(path, chunk_size, reassembly, udp, read_ahead=read_ahead)


def _iter_rows(
    path: PathOrFile, chunk_size: int, reassembly: ReassemblyLimits, udp: Callable[[UdpBatch], None] | None = None,
    read_ahead: bool = False,
) -> Iterator[SegmentRow]:
    # the rows of each chunk's list, one chunk read at a time, taken by chain (C) rather than
    # a generator resumed for every row
    parts: Iterator[SegmentChunk] = _parts(path, chunk_size, reassembly, udp is not None)
    if read_ahead:  # a file object is read in a thread: a child would move the offset it shares with it
        parts = ahead(parts, process=isinstance(path, (str, os.PathLike)))
    return chain.from_iterable(_rows_of(p, udp) for p in parts)


#: Flow buckets of :func:`flow_bucket` (``0 <= bucket < FLOW_BUCKETS``).
FLOW_BUCKETS = 100
# multiplicative hashing (Knuth, TAOCP vol. 3, §6.4): the prime next to 2**32 / golden ratio spreads the bits
_MIX = 2654435761


def flow_bucket(src: str, sport: int, dst: str, dport: int) -> int:
    """The bucket (0 to :data:`FLOW_BUCKETS` - 1) of a TCP segment's 4-tuple, the same both ways.

    A hash of the addresses' text (CRC-32) and the ports, symmetric in its two ends: the
    segments of one connection, either way, have one bucket, so a range of buckets
    (``SegmentChunk.rows(flows=...)``) takes whole connections, and complementary ranges
    split a capture's connections between readers (``qoe.web``'s two-process pass).
    """
    h = zlib.crc32(src.encode()) ^ zlib.crc32(dst.encode()) ^ sport ^ dport
    return (((h * _MIX) & 0xFFFFFFFF) >> 16) % FLOW_BUCKETS


def tcp_segment_chunks(
    path: PathOrFile,
    *,
    chunk_size: int = CHUNK_SIZE,
    reassembly: ReassemblyLimits = ReassemblyLimits(),
    udp: bool = False,
) -> Iterator[SegmentChunk]:
    """The TCP segments of :func:`tcp_segment_rows` a chunk of the file at a time, as read, rows not made yet.

    Parameters
    ----------
    path, chunk_size, reassembly
        As for :func:`tcp_segment_rows`.
    udp : bool, optional
        Keep each chunk's UDP datagrams too (``SegmentChunk.rows(udp=...)`` hands them on).

    Yields
    ------
    SegmentChunk
        Each chunk's segments: ``rows()`` makes them (all, or the connections of a range of
        :func:`flow_bucket`), ``upto`` is the frame index of its last packet record. It
        pickles, its arrays out of band (:func:`read_ahead` with ``process=True`` hands them
        over in shared memory): one process can read a capture for two.

    Raises
    ------
    CaptureError, InputError
        As :func:`read_tcp_segments`.
    """
    chunk_size = positive_int(chunk_size, "chunk_size")
    reassembly = reassembly_limits(reassembly)
    probe(path, chunk_size=chunk_size)
    return _parts(path, chunk_size, reassembly, udp)


class SegmentChunk:
    """What the reading of one chunk of a capture gives (:func:`tcp_segment_chunks`): the
    columns of its common TCP segments, its other segments whole, its UDP datagrams (when
    kept), and the frame index of its last packet record (``upto``); :meth:`rows` makes the
    rows.

    Everything here pickles, the arrays out of band, so that a chunk can be read in another
    process (``read_ahead``)."""

    __slots__ = ("udp", "buf", "cols", "codes", "texts", "options", "slow", "upto")

    def __init__(self, udp: UdpBatch | None, buf: np.ndarray, cols: dict[str, np.ndarray], codes: np.ndarray,
                 texts: list[str], options: list[tuple[int, tuple[Any, ...]]], slow: list[SegmentRow],
                 upto: int) -> None:
        self.udp, self.buf, self.cols, self.codes, self.texts = udp, buf, cols, codes, texts
        self.options, self.slow = options, slow
        self.upto = upto  # frame index of the chunk's last packet record

    def rows(self, *, udp: Callable[[UdpBatch], None] | None = None,
             flows: tuple[int, int] | None = None,
             times: Sequence[tuple[int, int]] | TimeSpans | None = None) -> list[SegmentRow]:
        """The chunk's TCP segments as rows of :data:`TCP_SEGMENT_FIELDS`, in frame order.

        Parameters
        ----------
        udp : callable, optional
            Called first with the chunk's UDP datagrams (a :class:`UdpBatch`), when they were
            kept and there are some.
        flows : (int, int), optional
            ``(lo, hi)``: only the segments whose :func:`flow_bucket` ``b`` has ``lo <= b <
            hi`` (whole connections, both directions). Default: every segment.
        times : sequence of (int, int), optional
            ``[(start_ns, end_ns), ...]``: only the segments captured at a time ``t`` with
            ``start_ns <= t <= end_ns`` for one of them (a reader that wants a few moments of
            a large capture builds only their rows), or the :class:`TimeSpans` that
            :func:`time_spans` made of them (checked once for every chunk). Default: every
            segment.

        Raises
        ------
        InputError
            ``flows`` out of range; ``times`` not pairs of integers with start <= end.
        """
        if flows is not None:
            lo, hi = flows
            if not (isinstance(lo, int) and isinstance(hi, int) and 0 <= lo <= hi <= FLOW_BUCKETS):
                raise InputError(f"flows must be (lo, hi) with 0 <= lo <= hi <= {FLOW_BUCKETS}, got {flows!r}")
        spans = None if times is None else time_spans(times)
        return _rows_of(self, udp, flows, spans)


def _parts(path: PathOrFile, chunk_size: int, reassembly: ReassemblyLimits, with_udp: bool) -> Iterator[SegmentChunk]:
    decoder = Decoder(frozenset({IPPROTO_TCP}), reassembly)
    names: dict[object, str] = {}  # address (uint32 for IPv4, 16 bytes for IPv6) -> text
    ex = _Extractor(reassembly) if with_udp else None  # (its own decoder: UDP's reassembly state)
    for ch in raw_chunks(path, chunk_size=chunk_size):
        if not len(ch):
            continue
        batch = None
        if ex is not None:
            piece = ex.extract(ch)
            if piece is not None and len(piece):
                batch = _to_batch(_compact(piece), ex.book)
        yield _part(ch, decoder, names, batch)
    if ex is not None:
        warn_unread_esp(name_of(path), ex.decoder.esp_unread)  # as read_udp_batches does at its end


@dataclass(frozen=True, eq=False)
class TimeSpans:
    """Capture-time spans, merged where they overlap, in order (:func:`time_spans` makes them).

    Attributes
    ----------
    starts, ends : numpy.ndarray
        The spans' first and last times (int64 ns), both included.
    """

    starts: np.ndarray
    ends: np.ndarray

    def contains(self, ts: np.ndarray) -> np.ndarray:
        """Which of the times ``ts`` (an int64 array) fall in one of the spans."""
        starts, ends = self.starts, self.ends
        if not len(starts):
            return np.zeros(len(ts), dtype=bool)
        k = np.searchsorted(starts, ts, side="right") - 1  # the last span starting at or before each time
        return (k >= 0) & (ts <= ends[np.maximum(k, 0)])

    def holds(self, t: int) -> bool:
        """Whether the one time ``t`` falls in one of the spans (:meth:`contains` of one)."""
        return bool(self.contains(np.array([t], dtype=np.int64))[0])


def time_spans(times: Sequence[tuple[int, int]] | TimeSpans) -> TimeSpans:
    """Capture-time spans checked and merged: the ``times`` of :meth:`SegmentChunk.rows`,
    ``qoe.web.tcp.connections`` and ``qoe.web.quic.iter_quic_connections``.

    Parameters
    ----------
    times : sequence of (int, int), or TimeSpans
        ``(start_ns, end_ns)`` pairs of integers, ``start_ns <= end_ns``, in any order (spans
        made already are given back as they are).

    Returns
    -------
    TimeSpans
        The spans merged where they overlap, in order.

    Raises
    ------
    InputError
        ``times`` is not such a sequence.

    Examples
    --------
    >>> spans = time_spans([(50, 60), (0, 10), (5, 20)])
    >>> spans.starts.tolist(), spans.ends.tolist()
    ([0, 50], [20, 60])
    >>> spans.contains(np.array([0, 20, 21, 55, 61])).tolist()
    [True, True, False, True, False]
    >>> time_spans(spans) is spans  # (checked already)
    True
    """
    if isinstance(times, TimeSpans):
        return times
    def whole(v: Any) -> bool:
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool)

    try:
        pairs = sorted((int(a), int(b)) for a, b in times if whole(a) and whole(b) and a <= b)
        if len(pairs) != len(times):
            raise ValueError
    except (TypeError, ValueError):
        raise InputError("times must be (start_ns, end_ns) pairs of integers with start_ns <= end_ns, got "
                         f"{times!r}"[:300]) from None
    merged: list[list[int]] = []
    for a, b in pairs:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return TimeSpans(np.array([a for a, _ in merged], dtype=np.int64), np.array([b for _, b in merged], dtype=np.int64))


def _rows_of(part: SegmentChunk, udp: Callable[[UdpBatch], None] | None,
             flows: tuple[int, int] | None = None,
             spans: TimeSpans | None = None) -> list[SegmentRow]:
    """The TCP segments of one chunk, in frame order (after handing its UDP datagrams to ``udp``);
    ``flows``: only those whose :func:`flow_bucket` is in ``[lo, hi)``; ``spans``: only those
    captured within them (:func:`time_spans`)."""
    if udp is not None and part.udp is not None:
        udp(part.udp)
    rows = _fast_rows(part, flows, spans)
    slow = part.slow
    if flows is not None and slow:
        lo, hi = flows
        slow = [r for r in slow if lo <= flow_bucket(r[2], r[3], r[4], r[5]) < hi]
    if spans is not None and slow:
        keep = spans.contains(np.array([r[1] for r in slow], dtype=np.int64))
        slow = [r for r, k in zip(slow, keep.tolist()) if k]
    if not slow:
        return rows
    if not rows:
        return slow
    return sorted(rows + slow, key=_index)


def _part(ch: RawChunk, decoder: Decoder, names: dict[object, str], batch: UdpBatch | None) -> SegmentChunk:
    """The TCP segments of one chunk: the columns of its common rows, the rest decoded."""
    buf = _padded(ch)
    u8 = np.frombuffer(buf, dtype=np.uint8)
    cap = ch.caplen
    l3, ver, not_ip = _link_layer(u8, ch.data_off, cap, ch.linktype)
    g = byte_rows(u8, ch.data_off + np.maximum(l3, 0), _GATHER)  # k × 72 uint8
    # IPv4 (RFC 791 §3.1): IHL 5, not a fragment, protocol 6, Total Length covering both headers
    total4 = _u16(g, 2)
    v4 = (ver == 4) & (g[:, 0] == 0x45) & ((_u16(g, 6) & 0x3FFF) == 0) & (g[:, 9] == IPPROTO_TCP) & (total4 >= 40)
    # IPv6 (RFC 8200 §3): next header 6 straight after the fixed header
    v6 = (ver == 6) & ((g[:, 0] >> 4) == 6) & (g[:, 6] == IPPROTO_TCP) & ~_IS_IPV6_EXTENSION[g[:, 6]]
    ip_hdr = np.where(v6, 40, 20)
    l4 = l3 + ip_hdr  # offset of the TCP header in the frame
    # where the IP length fields say the datagram ends (dend) and the captured part (end)
    plen6 = _u16(g, 4)
    dend = np.where(v6, np.where(plen6 > 0, l3 + 40 + plen6, cap), l3 + total4)
    end = np.minimum(dend, cap)
    # the 20 TCP header bytes of each row (a choice of two slices: take_along_axis on a
    # built index was twice the time)
    tcp = np.where(v6[:, None], g[:, 40:60], g[:, 20:40]).astype(np.int64)
    hlen = (tcp[:, 12] >> 4) << 2
    fast = (v4 | v6) & (cap >= l4 + 20) & (hlen >= 20) & (l4 + hlen <= end)
    fi = np.flatnonzero(fast)
    # (np.take along the rows: a 2-D array indexed by a row list is copied a byte at a time)
    cols, codes, texts, options = _fast_columns(ch, buf, np.take(g, fi, axis=0), np.take(tcp, fi, axis=0), hlen[fi],
                                                l4[fi], end[fi], dend[fi], v6[fi], fi, names, decoder)
    # rows that hold no TCP: no IP at all, or a plain IPv4/IPv6 header (no options, extension
    # header or fragment; no tunnel protocol) carrying UDP not to or from a tunnel's port, or
    # another protocol than TCP. The decoder gives them nothing and keeps no state for them;
    # sent to it one by one, the 1.4 M datagrams of an RTP trunk (325 MB) cost 2 s
    udp4, other4 = _ipv4_rows(g, ver, cap, l3)
    udp6, other6 = _ipv6_rows(g, ver, cap, l3)
    no_tcp = not_ip | udp4 | udp6 | (other4 & (g[:, 9] != IPPROTO_TCP)) | (other6 & (g[:, 6] != IPPROTO_TCP))
    si = np.flatnonzero(~fast & ~no_tcp)
    slow = _slow_rows(ch, si, decoder) if len(si) else []
    return SegmentChunk(batch, u8, cols, codes, texts, options, slow, ch.index0 + len(ch) - 1)


def _index(row: SegmentRow) -> int:
    return row[0]


def _fast_columns(
    ch: RawChunk, buf: bytes, g: np.ndarray, tcp: np.ndarray, hlen: np.ndarray, l4: np.ndarray,
    end: np.ndarray, dend: np.ndarray, v6: np.ndarray, fi: np.ndarray, names: dict[object, str],
    decoder: Decoder,
) -> tuple[dict[str, np.ndarray], np.ndarray, list[str], list[tuple[int, tuple[Any, ...]]]]:
    """The common rows' fields as columns (:func:`_fast_rows` makes the rows), their
    addresses as codes into a list of texts, and the options of rows whose layout is not
    one of the columns' (row, the option fields of :func:`parse_tcp_options`)."""
    if not len(fi):
        return {}, np.zeros((0, 2), dtype=np.int64), [], []
    # RFC 9293 §3.1: ports, sequence, acknowledgment, offset and flags, window, checksum, urgent
    off = ch.data_off[fi]
    p0 = off + l4 + hlen  # payload start in buf
    # options: none, the NOP NOP Timestamps layout (columns), or anything else (per row)
    opt = np.where(v6[:, None], g[:, 60:72], g[:, 40:52]).astype(np.int64)  # (as the TCP header's bytes)
    ts_layout = (hlen == 32) & (opt[:, 0] == 1) & (opt[:, 1] == 1) & (opt[:, 2] == 8) & (opt[:, 3] == 10)
    # kind: 0 no options, 1 timestamps layout, 2 parse per row
    kind = np.where(hlen == 20, 0, np.where(ts_layout, 1, 2))
    cols = {
        "index": fi + ch.index0, "ts_ns": ch.ts_ns[fi],
        "sport": tcp[:, 0] << 8 | tcp[:, 1], "dport": tcp[:, 2] << 8 | tcp[:, 3],
        "seq": tcp[:, 4] << 24 | tcp[:, 5] << 16 | tcp[:, 6] << 8 | tcp[:, 7],
        "ack": tcp[:, 8] << 24 | tcp[:, 9] << 16 | tcp[:, 10] << 8 | tcp[:, 11],
        "flags": (tcp[:, 12] & 1) << 8 | tcp[:, 13], "window": tcp[:, 14] << 8 | tcp[:, 15],
        "urgent": tcp[:, 18] << 8 | tcp[:, 19], "header_len": hlen,
        "data_len": np.maximum(dend - l4 - hlen, 0),
        "p0": p0, "p1": np.maximum(off + end, p0),
        "tsval": opt[:, 4] << 24 | opt[:, 5] << 16 | opt[:, 6] << 8 | opt[:, 7],
        "tsecr": opt[:, 8] << 24 | opt[:, 9] << 16 | opt[:, 10] << 8 | opt[:, 11],
        "with_ts": kind == 1,
        # RFC 791 §3.1: Identification at IPv4 offset 4; IPv6 has none (tells copies from resends)
        "ip_id": _u16(g, 4), "v6": v6,
        "interface": ch.iface[fi], "wire_len": ch.wire[fi],
    }
    codes, texts = _addresses(g, v6, names, decoder)
    other = np.flatnonzero(kind == 2)
    options = []
    if len(other):  # other option layouts: parsed one by one
        at = (off + l4 + 20)[other].tolist()
        for i, a, hl in zip(other.tolist(), at, hlen[other].tolist()):
            options.append((i, parse_tcp_options(buf[a : a + hl - 20])))
    return cols, codes, texts, options


def _fast_rows(part: SegmentChunk, flows: tuple[int, int] | None = None,
               spans: TimeSpans | None = None) -> list[SegmentRow]:
    """The rows of a chunk's common segments, built from their columns by zip (``flows``: only
    those whose :func:`flow_bucket` is in ``[lo, hi)``; ``spans``: only those captured within
    them)."""
    cols = part.cols
    if not cols:
        return []
    buf = part.buf  # a view of the chunk's bytes (read here), or of shared memory (read ahead)
    data = buf.base if isinstance(buf.base, bytes) else None
    texts = part.texts
    codes = part.codes
    options = part.options
    if flows is not None or spans is not None:
        keep = _in_flows(cols, codes, texts, flows) if flows is not None else None
        if spans is not None:
            in_spans = spans.contains(cols["ts_ns"])
            keep = in_spans if keep is None else keep & in_spans
        if not keep.all():
            at = np.cumsum(keep) - 1  # a kept row's place among the kept ones
            sel = np.flatnonzero(keep)
            cols = {name: c[sel] for name, c in cols.items()}
            codes = codes[sel]
            options = [(int(at[i]), o) for i, o in options if keep[i]]
    k = codes.shape[0]
    src = [texts[j] for j in codes[:, 0].tolist()]
    dst = [texts[j] for j in codes[:, 1].tolist()]
    ident = cols["ip_id"].tolist()
    v6 = cols["v6"]
    ip_id: Any = ident if not v6.any() else [None if w else i for i, w in zip(ident, v6.tolist())]
    if data is not None:
        payloads = [data[a:b] for a, b in zip(cols["p0"].tolist(), cols["p1"].tolist())]
    else:  # each payload copied out of the shared memory, not the whole chunk (twice the time)
        mv = memoryview(buf)
        payloads = [mv[a:b].tobytes() for a, b in zip(cols["p0"].tolist(), cols["p1"].tolist())]
    with_ts = cols["with_ts"]
    if with_ts.all():
        tv: Any = cols["tsval"].tolist()
        te: Any = cols["tsecr"].tolist()
    elif not with_ts.any():
        tv, te = repeat(None, k), repeat(None, k)
    else:
        w = with_ts.tolist()
        tv = [v if x else None for v, x in zip(cols["tsval"].tolist(), w)]
        te = [v if x else None for v, x in zip(cols["tsecr"].tolist(), w)]
    # every row built by zip (fields in TCP_SEGMENT_FIELDS order), options as none or timestamps
    out: list[SegmentRow] = list(zip(
        cols["index"].tolist(), cols["ts_ns"].tolist(), src, cols["sport"].tolist(), dst, cols["dport"].tolist(),
        payloads, cols["seq"].tolist(), cols["ack"].tolist(), cols["flags"].tolist(), cols["window"].tolist(),
        cols["urgent"].tolist(), cols["header_len"].tolist(), cols["data_len"].tolist(),
        repeat(None, k), repeat(None, k), repeat(False, k), repeat((), k), tv, te, ip_id,
        cols["interface"].tolist(), cols["wire_len"].tolist(),
    ))
    for i, parsed in options:
        row = out[i]
        out[i] = row[:_MSS] + parsed + row[_TSECR + 1 :]
    return out


def _in_flows(cols: dict[str, np.ndarray], codes: np.ndarray, texts: list[str], flows: tuple[int, int]) -> np.ndarray:
    """Which rows' :func:`flow_bucket` is in ``flows`` (the same sum, on the columns)."""
    lo, hi = flows
    th = np.array([zlib.crc32(t.encode()) for t in texts], dtype=np.uint64)
    h = th[codes[:, 0]] ^ th[codes[:, 1]] ^ (cols["sport"] ^ cols["dport"]).astype(np.uint64)
    b = (((h * np.uint64(_MIX)) & np.uint64(0xFFFFFFFF)) >> np.uint64(16)) % np.uint64(FLOW_BUCKETS)
    return (b >= lo) & (b < hi)


def _addresses(g: np.ndarray, v6: np.ndarray, names: dict[object, str], decoder: Decoder) -> tuple[np.ndarray, list[str]]:
    """Source and destination addresses of the rows: codes (rows × 2) into a list of their
    texts (the decoder's text form)."""
    k = len(g)
    codes = np.zeros((k, 2), dtype=np.int64)
    texts: list[str] = []
    i4 = np.flatnonzero(~v6)
    if len(i4):
        a4 = np.ascontiguousarray(g[i4, 12:20]).view(">u4").astype(np.int64)  # RFC 791: source 12, destination 16
        # a chunk holds few distinct addresses: each is named once, the rows index the names
        keys, inv = np.unique(a4, return_inverse=True)
        for key in keys.tolist():
            text = names.get(key)
            if text is None:
                text = names[key] = decoder.addr(key.to_bytes(4, "big"))
            texts.append(text)
        codes[i4] = inv.reshape(a4.shape)
    i6 = np.flatnonzero(v6)
    if len(i6):
        raw = np.ascontiguousarray(g[i6, 8:40]).tobytes()  # RFC 8200: source 8, destination 24
        code6: dict[str, int] = {}
        for j, i in enumerate(i6.tolist()):
            for col in (0, 1):
                key = raw[32 * j + 16 * col : 32 * j + 16 * col + 16]
                text = names.get(key)
                if text is None:
                    text = names[key] = decoder.addr(key)
                c = code6.get(text)
                if c is None:
                    c = code6[text] = len(texts)
                    texts.append(text)
                codes[i, col] = c
    if len(names) > 65536:  # a scan over many addresses: keep the cache bounded
        names.clear()
    return codes, texts


def _slow_rows(ch: RawChunk, si: np.ndarray, decoder: Decoder) -> list[SegmentRow]:
    """The rows ``si`` through the per-packet :class:`Decoder` (and its reassembly state)."""
    decode = decoder.decode
    lt = ch.linktype
    buf = ch.buf
    out = []
    for r in si.tolist():
        t = lt if isinstance(lt, int) else int(lt[r])
        if t < 0:  # a pcapng frame without a packet
            continue
        o = int(ch.data_off[r])
        p = decode(r + ch.index0, int(ch.ts_ns[r]), int(ch.iface[r]), t, int(ch.wire[r]), buf[o : o + int(ch.caplen[r])])
        if p is not None:
            out.append(tcp_segment_row(p))
    return out


def tcp_segment_row(p: Packet) -> SegmentRow:
    """A TCP :class:`Packet` as a row of :func:`tcp_segment_rows`."""
    t = p.tcp
    assert t is not None
    return (p.index, p.ts_ns, p.src, p.sport, p.dst, p.dport, p.payload, t.seq, t.ack, t.flags, t.window, t.urgent,
            t.header_len, t.data_len, t.mss, t.wscale, t.sack_permitted, t.sack, t.tsval, t.tsecr, p.ip_id,
            p.interface, p.wire_len)
