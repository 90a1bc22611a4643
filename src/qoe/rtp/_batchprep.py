"""What the scan reads of a batch of UDP datagrams before it looks at any flow state.

:func:`prepare` sorts a batch's datagrams into SIP, STUN/DTLS/TURN, RTCP and RTP by
their first bytes, parses the RTP fixed headers and builds each RTP packet's flow key.
It also groups those packets by flow key (one sort, where a packet's key is looked up
once per key rather than once per packet) and, given the scan's silence timeout, finds
the first packet that comes more than that after the previous one of its key. It is a
pure function of the batch, so the scan runs it in the process (or thread) that reads
the capture ahead (:func:`qoe.capture.read_ahead`), and the scan's own process starts
from the flows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qoe.rtp._flows import group_by_key
from qoe.rtp._packet import RTCP_SR, RTCP_XR, RTP_FIXED_HEADER, RTP_VERSION, header_columns
from qoe.rtp.sip import _SIP_METHODS

# First four bytes of a SIP message: a request method of RFC 3261 §27.4 and its extensions
# (qoe.rtp.sip._SIP_METHODS), or the "SIP/" of a status line (RFC 3261 §7.2).
_SIP_PREFIXES = np.array(
    [int.from_bytes((m + " ").encode()[:4], "big") for m in _SIP_METHODS] + [int.from_bytes(b"SIP/", "big")]
)
_NONE = np.zeros(0, dtype=np.int64)


class PreparedBatch:
    """A batch of UDP datagrams (:class:`qoe.capture.UdpBatch`) and its datagrams by kind.

    Attributes
    ----------
    batch : UdpBatch
    sip, other, rtcp : numpy.ndarray of int64
        Rows (in the batch) of SIP messages, of datagrams that start below 80 (STUN,
        ZRTP, DTLS, TURN channels: RFC 7983 §7, RFC 9443 §4) and of RTCP packets.
    late_rows : numpy.ndarray of int64
        Rows that may be RTP (version 2, 12 bytes or more, RTCP included): what the scan
        looks at for flows silent past the timeout.
    key1, key2 : numpy.ndarray of int64
        Each flow key of ``late_rows`` once (:func:`qoe.rtp._flows.group_by_key`'s order),
        as two words: ``src << 32 | dst`` (address codes) and
        ``sport << 48 | dport << 32 | ssrc``, the SSRC read as if the row were RTP.
    late_key, late_order : numpy.ndarray of int64
        Each of ``late_rows``' key (an index into ``key1``), and the indices of
        ``late_rows`` by key, batch order kept within a key.
    gap_row, gap_for : int or None
        The first row (in batch order) that comes more than ``gap_for`` ns after the
        previous row of its key in the batch (None: none does); ``gap_for``: the timeout it
        was looked for with (None: not looked for).
    rows, h
        The RTP packets with a whole header: their rows and header columns.
    in_late : numpy.ndarray of int64
        Where each RTP packet is among ``late_rows``.
    rtp_order : numpy.ndarray of int64
        The RTP packets (indices into ``rows``) by key, batch order kept within a key.
    late_fid : numpy.ndarray of int64 or None
        Set by the scan when it looked up the flows of ``late_rows`` (their ids, -1 where
        not known) and the flow table has not changed since: the RTP packets' flows are
        ``late_fid[in_late]``.
    """

    __slots__ = ("batch", "sip", "other", "rtcp", "late_rows", "key1", "key2", "late_key", "late_order", "gap_row",
                 "gap_for", "rows", "h", "in_late", "rtp_order", "late_fid")

    def __init__(self, batch: Any) -> None:
        self.batch = batch
        self.late_fid: Any = None

    def __len__(self) -> int:
        return len(self.batch)


def prepare(b: Any, timeout_ns: int | None = None) -> PreparedBatch:
    """Sort the datagrams of batch ``b`` by kind, read the RTP headers and group them by
    flow key; with ``timeout_ns``, find the first packet silent that long in its key
    (:func:`first_gap`). See the module.

    References
    ----------
    RFC 3261 §7.1, §7.2 (a SIP message's first line); RFC 7983 §7 (demultiplexing by the
    first byte); RFC 5761 §4 (RTCP packet types 200-207 beside RTP); RFC 3550 §5.1.
    """
    p = PreparedBatch(b)
    length = b.lengths
    p.gap_row = p.gap_for = None
    if b.data.size == 0 or not length.any():
        p.sip = p.other = p.rtcp = p.late_rows = p.key1 = p.key2 = p.late_key = p.late_order = _NONE
        _no_rtp(p)
        return p
    head = b.head  # each payload's first 16 bytes, zeros past its end
    b0 = head[:, 0].astype(np.int64)
    b1 = head[:, 1].astype(np.int64)
    # SIP: text messages starting with a method or "SIP/2.0" (RFC 3261 §7.1, §7.2),
    # told apart by their first four bytes (never RTP/RTCP: "A"-"Z" is version 1).
    cand = np.flatnonzero((length >= 12) & (b0 >= 0x41) & (b0 <= 0x5A))
    p.sip = cand
    if cand.size:
        first4 = head[cand, :4].view(">u4")[:, 0].astype(np.int64)
        p.sip = cand[np.isin(first4, _SIP_PREFIXES)]
    # RFC 7983 §7 / RFC 9443 §4: STUN, ZRTP, DTLS and TURN channels start below 80
    p.other = np.flatnonzero((b0 < 80) & (length > 0))
    version2 = (b0 >> 6) == RTP_VERSION
    v2 = (length >= 8) & version2
    # RFC 5761 §4: RTCP packet types 200-204 (RFC 3550), 205-206 (RFC 4585 feedback), 207 (XR)
    is_rtcp = v2 & (b1 >= RTCP_SR) & (b1 <= RTCP_XR)
    p.rtcp = np.flatnonzero(is_rtcp)
    # every row that may be RTP, and its key: looked at for flows past their deadline
    maybe = (length >= RTP_FIXED_HEADER) & version2
    late = np.flatnonzero(maybe)
    ssrc = np.ascontiguousarray(head).view(">u4")[late, 2].astype(np.int64)  # bytes 8-11 (HEAD_BYTES is 16)
    src = b.src[late].astype(np.int64)
    dst = b.dst[late].astype(np.int64)
    sport = b.sport[late].astype(np.int64)
    dport = b.dport[late].astype(np.int64)
    p.late_rows = late
    k1 = src << 32 | dst
    k2 = sport << 48 | dport << 32 | ssrc
    o, starts = group_by_key(np.arange(late.size), k1, k2)
    p.late_order, p.key1, p.key2 = o, k1[o[starts]], k2[o[starts]]
    p.late_key = np.empty(late.size, dtype=np.int64)
    p.late_key[o] = np.repeat(np.arange(starts.size), np.diff(np.append(starts, o.size)))
    if timeout_ns is not None:
        p.gap_row, p.gap_for = first_gap(p, timeout_ns), timeout_ns
    rows = np.flatnonzero(v2 & ~is_rtcp & (length >= RTP_FIXED_HEADER))
    if rows.size == 0:
        _no_rtp(p)
        return p
    # (np.take along the rows: indexing a 2-D array with a row list copies a byte at a time)
    h = header_columns(b.data, b.starts[rows], length[rows], head=np.take(head, rows, axis=0))
    rows = rows[h.rows]
    at = (np.cumsum(maybe) - 1)[rows]  # RTP rows are rows that may be RTP: their place among them
    p.rows, p.h, p.in_late = rows, h, at
    rtp_of = np.full(late.size, -1, dtype=np.int64)  # each of late_rows' place among the RTP packets
    rtp_of[at] = np.arange(rows.size)
    by_key = rtp_of[o]
    p.rtp_order = by_key[by_key >= 0]
    return p


def first_gap(p: PreparedBatch, timeout_ns: int) -> int | None:
    """The first row of batch ``p`` (in batch order) among ``late_rows`` that comes more
    than ``timeout_ns`` after the previous row of its flow key in the batch; None when none
    does (always when the batch spans no more than that)."""
    ts = p.batch.ts_ns
    if p.late_rows.size < 2 or int(ts.max()) - int(ts.min()) <= timeout_ns:
        return None
    o = p.late_order
    t = ts[p.late_rows[o]].astype(np.int64)
    k = p.late_key[o]
    gap = (k[1:] == k[:-1]) & (t[1:] - t[:-1] > timeout_ns)
    return int(p.late_rows[o[1:][gap]].min()) if gap.any() else None


def _no_rtp(p: PreparedBatch) -> None:
    p.rows = p.in_late = p.rtp_order = _NONE
    p.h = None

