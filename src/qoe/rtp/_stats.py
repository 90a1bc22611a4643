"""Receiver statistics of RTP streams, computed as tshark's ``-z rtp,streams`` does.

Loss, duplicates, reordering, sequence errors, arrival deltas, RFC 3550 interarrival
jitter and the loss-burst profile behind G.107's BurstR, for many streams at once fed
batches of packets (:class:`StreamStats`: about 1.3 KiB per stream with the default
reordering window, whatever the streams' lengths; the work on a batch is array
operations across all its streams, not a loop over them) or for one stream given
whole (:func:`rtp_stats`). The Wireshark conventions they follow are
listed, with how they were established, in the docstring of :mod:`qoe.rtp`, which
re-exports the public names.

References
----------
.. [1] RFC 3550, "RTP: A Transport Protocol for Real-Time Applications", §6.4.1
   (interarrival jitter), Appendix A.1 (sequence numbers), A.3 (expected and lost
   packets), A.8 (jitter).
.. [2] RFC 3551, §6 Tables 4 and 5 (static payload types and clock rates).
.. [3] RFC 3389, "RTP Payload for Comfort Noise", §5 (payload type 13).
.. [4] Wireshark User's Guide, §9.11 "RTP" (RTP Streams window: Lost, Max Delta, Max
   Jitter, Mean Jitter, Problems).
.. [5] ITU-T G.107 (06/2015), §7.5, eq. (7-32): BurstR (see :mod:`qoe.rtp.lossmodel`).
.. [6] W. D. Hillis and G. L. Steele, "Data parallel algorithms", Commun. ACM 29(12),
   1986 (the prefix scan that evaluates the jitter and running-mean recurrences).
"""

from __future__ import annotations

from collections.abc import Iterable
import dataclasses
import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from qoe._records import builder
from qoe.errors import InputError
from qoe.rtp._order import stable_order
from qoe.rtp._packet import SEQ_MOD, STATIC_PAYLOAD_TYPES, TS_MOD, RtpPackets, wrapped_distance
from qoe.rtp.lossmodel import LossRunCounts

# RFC 3550 §6.4.1: the jitter estimate's gain parameter 1/16.
_JITTER_GAIN = 1.0 / 16.0
# RFC 3389 §5 / RFC 3551 Table 4: PT 13 is comfort noise; 19 was comfort noise in RFC 1890
# and is still treated so by Wireshark.
_COMFORT_NOISE_PTS = (13, 19)
# Sequence-number bookkeeping compatible with Wireshark (see qoe.rtp's docstring): a
# drop of more than this below the tracked number is taken as a wrap, not a late packet.
_WS_WRAP_GAP = 0xFF00
# How far behind the highest sequence number received a packet may arrive and still be
# told apart as a duplicate or as filling a gap (a bit per number per stream). RFC 3550
# A.1 takes a packet up to MAX_MISORDER = 100 numbers behind as reordered and a jump of up
# to MAX_DROPOUT = 3000 ahead as a dropout: 4096 covers both.
REORDER_WINDOW = 4096
#: The two jitter rules: RFC 3550 A.8 on every packet as tshark applies it (the default),
#: and the receiver's rule that libwebrtc reports in getStats (:func:`in_order_jitter_ms`).
JITTER_RULES = ("every-packet", "in-order")
#: The two rules for ``expected`` (and so ``lost``) that :class:`StreamStats` knows.
LOSS_RULES = ("rfc3550", "tshark")
# Packets processed at once: bounds the temporaries of an update (some 60 arrays of this
# many elements) whatever the batch; larger chunks only save array passes.
_CHUNK = 1 << 16
# Sequence numbers whose loss runs are read from the window's bits at once (a byte each)
_BIT_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class RtpStats:
    """Receiver statistics of one RTP stream (RFC 3550 §6.4.1, A.3, A.8).

    ``lost``, the deltas and the jitter follow Wireshark's conventions (listed in the
    docstring of :mod:`qoe.rtp`), so they equal ``tshark -q -z rtp,streams``. Times
    are in milliseconds unless the name says otherwise.

    Attributes
    ----------
    first_ns, last_ns : int
        Arrival time of the first and last packet (ns since the epoch).
    packets : int
        Packets received, duplicates included (RFC 3550 A.1 counts every packet in
        ``received``; tshark's "Pkts").
    expected : int
        Packets expected: RFC 3550 A.3, from the first packet's sequence number to the
        highest one received (``loss_rule="rfc3550"``, the default), or as tshark counts
        them, from the first to the last packet received with its cycle rule
        (``loss_rule="tshark"``).
    lost : int
        ``expected - packets`` (RFC 3550 A.3); negative with duplicates, as RFC 3550
        §6.4.1 says of the cumulative number lost ("the loss may be negative if there
        are duplicates") and as tshark prints it: a capture holding every packet twice
        (Linux ``any`` device, a span port) gives about ``-expected``.
    loss_fraction : float
        ``lost / expected`` (0 when nothing was expected).
    duplicates : int
        Packets whose extended sequence number had already been received (within
        ``reorder_window``): the copies that ``packets`` counts besides the numbers
        received. ``packets - duplicates`` numbers arrived; the numbers never received
        are the loss runs (``loss_bursts``, ...). tshark prints no such count.
    out_of_order : int
        Packets (not duplicates) that arrived after one with a higher extended sequence
        number.
    sequence_errors : int
        Packets that were not the successor of the sequence number tracked so far
        (Wireshark's "wrong sequence number" count: losses, reordering, duplicates).
    wrong_timestamps : int
        Packets with a timestamp earlier than the first packet's (ignored by the stats).
    problems : bool
        Sequence errors or wrong timestamps were seen (tshark's "Problems?" column).
    min_delta_ms, mean_delta_ms, max_delta_ms : float
        Arrival spacing from the previous packet (NaN for a one-packet stream).
    min_jitter_ms, mean_jitter_ms, max_jitter_ms : float
        RFC 3550 §6.4.1 interarrival jitter after each packet (NaN without a clock rate).
        Every received packet updates it, duplicates too, as in RFC 3550 A.8 and tshark:
        a copy has its twin's timestamp and arrives just after it, so its ``|D|`` is
        about 0 and the estimate decays by 15/16; a doubled capture shows about half
        the jitter of the same packets seen once.
    jitter_ms : float
        The jitter estimate after the last packet (what an RTCP receiver report carries).
    loss_bursts : int
        Runs of consecutive sequence numbers, between the lowest and highest received,
        that never arrived.
    mean_burst_length : float
        Mean length of those runs (0 without loss).
    max_burst_length : int
        Longest run.
    mean_gap_length : float
        Mean number of sequence numbers received between two loss runs (0 with fewer
        than two runs).
    burst_ratio : float
        G.107 BurstR (eq. 7-32) of the loss pattern, see :func:`qoe.rtp.lossmodel.loss_pattern`.
    """

    first_ns: int
    last_ns: int
    packets: int
    expected: int
    lost: int
    loss_fraction: float
    duplicates: int
    out_of_order: int
    sequence_errors: int
    wrong_timestamps: int
    problems: bool
    min_delta_ms: float
    mean_delta_ms: float
    max_delta_ms: float
    min_jitter_ms: float
    mean_jitter_ms: float
    max_jitter_ms: float
    jitter_ms: float
    loss_bursts: int
    mean_burst_length: float
    max_burst_length: int
    mean_gap_length: float
    burst_ratio: float

    @property
    def duration_s(self) -> float:
        """Time from the first to the last packet, in seconds."""
        return (self.last_ns - self.first_ns) / 1e9

    def to_dict(self) -> dict[str, Any]:
        """The statistics as a flat dict of Python numbers."""
        return {f: getattr(self, f) for f in _STATS_FIELDS}


_STATS_FIELDS = tuple(f.name for f in fields(RtpStats))  # all flat numbers: no deep copy needed
_make_stats = builder(RtpStats, positional=True)  # thousands at a trunk's end: see qoe._records


def clock_table(clock_rates: dict[int, int] | None = None) -> np.ndarray:
    """Clock rate per payload type 0..127 (NaN: unknown), static table then overrides."""
    table = np.full(128, np.nan)
    for pt, (_, rate) in STATIC_PAYLOAD_TYPES.items():
        table[pt] = rate
    for pt, rate in (clock_rates or {}).items():
        if 0 <= pt < 128:
            table[pt] = rate if rate and rate > 0 else np.nan
    return table


def is_telephone_event(encoding: str) -> bool:
    """Whether an SDP ``a=rtpmap`` encoding name is RFC 4733's ``telephone-event``
    (the rtpmap encoding name is the media subtype, RFC 4855 §3, and subtype names
    are compared without case, RFC 6838 §4.2)."""
    return encoding.lower() == "telephone-event"


def cn_table(extra: Iterable[int] = ()) -> np.ndarray:
    """Comfort-noise flag per payload type (RFC 3389 §5), plus SDP-mapped ``CN`` types."""
    table = np.zeros(128, dtype=bool)
    table[list(_COMFORT_NOISE_PTS)] = True
    for pt in extra:
        if 0 <= pt < 128:
            table[pt] = True
    return table


class _Segments:
    """Contiguous groups of a sorted label array (one group per stream in a batch)."""

    __slots__ = ("n", "starts", "ends", "last", "lens", "ids", "g", "_pos")

    def __init__(self, labels: np.ndarray) -> None:
        n = labels.size
        brk = np.empty(n, dtype=bool)
        brk[0] = True
        np.not_equal(labels[1:], labels[:-1], out=brk[1:])
        self.n = n
        self.starts = np.flatnonzero(brk)
        self.ends = np.append(self.starts[1:], n)
        self.last = self.ends - 1
        self.lens = self.ends - self.starts
        self.ids = labels[self.starts]
        self.g = np.repeat(np.arange(self.starts.size), self.lens)
        self._pos: np.ndarray | None = None

    @property
    def pos(self) -> np.ndarray:
        """Each element's position in its segment."""
        if self._pos is None:
            self._pos = np.arange(self.n) - self.starts[self.g]
        return self._pos

    def sub(self, rows: np.ndarray) -> _Segments:
        """The segments of the elements ``rows`` (sorted); ``ids`` index this object's segments."""
        return _Segments(self.g[rows])

    def prev(self, x: np.ndarray, first: np.ndarray) -> np.ndarray:
        """Each element's predecessor in its segment; the segment's first gets ``first[segment]``."""
        out = np.empty_like(x)
        out[1:] = x[:-1]
        out[self.starts] = first
        return out

    def cumsum(self, x: np.ndarray) -> np.ndarray:
        """Cumulative sum restarting at each segment (exact for integers)."""
        c = np.cumsum(x)
        c -= (c[self.starts] - x[self.starts])[self.g]
        return c

    def count(self, mask: np.ndarray) -> np.ndarray:
        return np.add.reduceat(mask.astype(np.int64), self.starts)

    def affine(self, a: np.ndarray, b: np.ndarray, y0: np.ndarray) -> np.ndarray:
        """``y[i] = a[i] * y[i-1] + b[i]`` in every segment, from ``y0[segment]``: all the y.

        ``b`` may have columns (one recurrence per column, sharing ``a``). A prefix scan
        (Hillis and Steele 1986) over the pairs (a, b), which compose as
        ``(a2, b2) o (a1, b1) = (a2 a1, a2 b1 + b2)``: ceil(log2(longest segment)) array
        passes. A segment's first element gets ``a = 0`` with its start value folded into
        ``b``, so nothing crosses a segment boundary (0 times a finite number is exact).
        Each element's value depends only on its own segment, not on the batch around it.
        """
        A = np.array(a, dtype=np.float64)
        B = np.array(b, dtype=np.float64)
        first_a = A[self.starts]
        B[self.starts] += (first_a[:, None] * y0) if B.ndim == 2 else first_a * y0
        A[self.starts] = 0.0
        if B.ndim == 2:
            A = A[:, None]
        step, longest = 1, int(self.lens.max())
        while step < longest:
            B[step:] += A[step:] * B[:-step]
            A[step:] *= A[:-step]
            if step >= 2048:  # (15/16)**n leaves the normal range past n = 11,000: no denormals
                A[A < 1e-250] = 0.0
            step *= 2
        return B


def _ranges(lo: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Item index and value of every integer in ``[lo[i], lo[i] + length[i])``, all items."""
    length = np.maximum(length, 0)
    item = np.repeat(np.arange(lo.size), length)
    off = np.cumsum(length) - length
    return item, lo[item] + (np.arange(item.size) - off[item])


class StreamStats:
    """Streaming receiver statistics of many RTP streams, fed batches of packets.

    Each stream is a row of a structure of arrays: counters, the last packet's numbers,
    the jitter, delta and jitter extremes and means (about 250 bytes), the loss-run
    counts of :class:`qoe.rtp.lossmodel.LossRunCounts` (60 bytes), packets per payload
    type it carries (16 bytes per type seen, in one sorted table of (stream, type) keys:
    most streams carry one or two of the 128 types) and a bit per sequence number of its
    reordering window (512 bytes by default), at a capacity that grows by a quarter, so
    memory grows with the number of streams and not with their length. A batch holds packets of any streams in any
    interleaving (each stream's in arrival order); it is processed with array operations
    across all of its streams: the packets are grouped by stream with a stable sort and
    every recurrence (sequence-number unwrapping, RFC 3550 jitter, Wireshark's running
    means, the cycle count) is evaluated per group. Only Wireshark's sequence-error
    tracker for a stream whose packets do not all move forward falls back to a loop
    over that stream's packets of the batch. Any split into batches gives the same
    integers and the same floats up to rounding.

    Parameters
    ----------
    reorder_window : int, optional
        A packet whose extended sequence number is at least this far below the highest
        one received before it counts as out of order only: it is not checked for being
        a duplicate and its number stays lost in the loss runs. Closer ones are told
        apart exactly as duplicates or late arrivals.
    loss_rule : {"rfc3550", "tshark"}, optional
        How ``expected`` is counted (``lost = expected - packets`` either way).
        ``"rfc3550"`` (default): RFC 3550 A.3, the highest extended sequence number
        received minus the first packet's plus one; a packet older than the first one is
        received but not expected (it is no sequence wrap), and a late last packet does
        not shorten the count, so ``lost`` never exceeds ``expected``. ``"tshark"``:
        Wireshark's count to the *last* packet received with its cycle rule (a number
        below the first counts a wrap: 65,536 "lost" for one packet reordered across
        the start), as ``tshark -z rtp,streams`` prints it.
    """

    _I64 = ("n", "first_arr", "start", "first_ts", "last_seq", "last_seq_ext", "last_ts", "last_ts_ext", "ref_arr",
            "track", "last_arr", "n_d", "n_j", "cycles", "seq_errors", "wrong_ts", "dups", "ooo", "max_e", "lo")
    _F64 = ("j", "ref_nom", "mean_d", "mean_j")
    _F64_INF = ("min_d", "min_j")
    _F64_NEG_INF = ("max_d", "max_j")
    _BOOL = ("any_clock", "under", "prev_cn")

    def __init__(self, *, reorder_window: int = REORDER_WINDOW, loss_rule: str = "rfc3550") -> None:
        if isinstance(reorder_window, bool) or not isinstance(reorder_window, (int, np.integer)) or reorder_window < 1:
            raise InputError(f"reorder_window must be a positive integer, given {reorder_window!r}")
        if loss_rule not in LOSS_RULES:
            raise InputError(f"loss_rule must be one of {LOSS_RULES}, given {loss_rule!r}")
        self.loss_rule = loss_rule
        self.window = int(reorder_window)
        self._nbytes = (self.window + 7) // 8
        self.size = 0
        self._cap = 0
        for f in self._I64:
            setattr(self, f, np.zeros(0, dtype=np.int64))
        for f in self._F64 + self._F64_INF + self._F64_NEG_INF:
            setattr(self, f, np.zeros(0))
        for f in self._BOOL:
            setattr(self, f, np.zeros(0, dtype=bool))
        self.table = np.zeros(0, dtype=np.int32)
        # packets per (stream, payload type) seen: keys stream * 128 + type, sorted, and counts
        self._pt_keys = np.zeros(0, dtype=np.int64)
        self._pt_n = np.zeros(0, dtype=np.int64)
        self.ring = np.zeros((0, self._nbytes), dtype=np.uint8)
        self.runs = LossRunCounts()
        self._tables: dict[tuple[bytes, bytes], int] = {}
        self._clocks = np.zeros((0, 128))
        self._cns = np.zeros((0, 128), dtype=bool)
        self._free: list[int] = []  # rows released (:meth:`release`), reused by :meth:`add`

    @property
    def live(self) -> int:
        """Streams added and not released."""
        return self.size - len(self._free)

    # -- streams -----------------------------------------------------------------
    def add(self, count: int = 1, *, clocks: np.ndarray | None = None, cn: np.ndarray | None = None) -> np.ndarray:
        """Add ``count`` streams with these clock-rate and comfort-noise tables; their ids."""
        clocks = clock_table() if clocks is None else np.asarray(clocks, dtype=np.float64)
        cn = cn_table() if cn is None else np.asarray(cn, dtype=bool)
        key = (clocks.tobytes(), cn.tobytes())
        t = self._tables.get(key)
        if t is None:
            t = self._tables[key] = len(self._tables)
            self._clocks = np.vstack([self._clocks, clocks[None, :]])
            self._cns = np.vstack([self._cns, cn[None, :]])
        reuse = min(count, len(self._free))
        if reuse:  # rows of released streams first (reset by release())
            old = np.array(self._free[-reuse:], dtype=np.int64)
            del self._free[-reuse:]
            self.table[old] = t
            if reuse == count:
                return old
            count -= reuse
        else:
            old = np.zeros(0, dtype=np.int64)
        ids = np.arange(self.size, self.size + count)
        if self.size + count > self._cap:
            # by a quarter (not doubling): at most 25 % of the rows unused, and old and new
            # arrays together 2.25 times the rows while they are copied, not 3 times
            self._grow(max(self.size + count, self._cap + self._cap // 4, 16))
        self.table[ids] = t
        self.size += count
        return np.concatenate((old, ids)) if old.size else ids

    def release(self, sids: np.ndarray) -> None:
        """Forget streams ``sids`` (their results taken): their rows are reset to a new
        stream's and reused by :meth:`add`, so that memory follows the streams alive, not
        every stream seen."""
        sids = np.asarray(sids, dtype=np.int64)
        if sids.size == 0:
            return
        for f in self._I64 + self._F64 + self._BOOL:
            getattr(self, f)[sids] = 0
        for f in self._F64_INF:
            getattr(self, f)[sids] = np.inf
        for f in self._F64_NEG_INF:
            getattr(self, f)[sids] = -np.inf
        self.table[sids] = 0
        self.ring[sids] = 0
        self.runs.reset(sids)
        gone = np.isin(self._pt_keys // 128, sids)
        if gone.any():
            self._pt_keys, self._pt_n = self._pt_keys[~gone], self._pt_n[~gone]
        self._free.extend(sids.tolist())

    def _grow(self, cap: int) -> None:
        def grown(old: np.ndarray, fill: Any) -> np.ndarray:
            new = np.full((cap,) + old.shape[1:], fill, dtype=old.dtype)
            new[: old.shape[0]] = old
            return new

        for f in self._I64 + self._F64 + self._BOOL:
            setattr(self, f, grown(getattr(self, f), 0))
        for f in self._F64_INF:
            setattr(self, f, grown(getattr(self, f), np.inf))
        for f in self._F64_NEG_INF:
            setattr(self, f, grown(getattr(self, f), -np.inf))
        self.table = grown(self.table, 0)
        self.ring = grown(self.ring, 0)
        self.runs.resize(cap)
        self._cap = cap

    # -- the presence window -------------------------------------------------------
    def _pos(self, x: np.ndarray) -> np.ndarray:
        """The window bit of each number ``x``: ``x % window`` (a mask when the window is a
        power of two, as the default, which an integer division costs several times)."""
        w = self.window
        return x & (w - 1) if w & (w - 1) == 0 else x % w

    def _bits(self, sids: np.ndarray, x: np.ndarray) -> np.ndarray:
        pos = self._pos(x)
        return ((self.ring.reshape(-1)[sids * self._nbytes + (pos >> 3)] >> (pos & 7)) & 1).astype(bool)

    def _write_bits(self, sids: np.ndarray, x: np.ndarray, value: bool) -> None:
        if sids.size == 0:
            return
        pos = self._pos(x)
        byte = sids * self._nbytes + (pos >> 3)
        mask = (1 << (pos & 7)).astype(np.uint8)
        if byte.size > 1 and bool(np.any(byte[1:] < byte[:-1])):
            o = np.argsort(byte, kind="stable")
            byte, mask = byte[o], mask[o]
        starts = np.flatnonzero(np.concatenate(([True], byte[1:] != byte[:-1])))
        mask = np.bitwise_or.reduceat(mask, starts)
        flat = self.ring.reshape(-1)
        if value:
            flat[byte[starts]] |= mask
        else:
            flat[byte[starts]] &= ~mask

    def _settle(self, runs: LossRunCounts, sids: np.ndarray, a: np.ndarray, b: np.ndarray, top: np.ndarray,
                extra_item: np.ndarray, extra_x: np.ndarray) -> None:
        """Append the numbers ``a[i]..b[i]`` of stream ``sids[i]`` to its loss runs.

        A number was received when its bit is set in the window (numbers up to
        ``top[i]``, the highest number before this batch) or when it is among the
        ``extra_x`` of item ``extra_item`` (numbers received in this batch, sorted by item).
        """
        span = np.minimum(b, top) - a + 1
        item, x = _ranges(a, span)
        hit = self._bits(sids[item], x)
        ri, rx = item[hit], x[hit]
        if extra_item.size:  # merge two runs sorted by (item, number), dropping repeats
            ri, rx = np.concatenate((ri, extra_item)), np.concatenate((rx, extra_x))
            width = np.max(b - a) + 1
            o = np.argsort(ri * width + (rx - a[ri]), kind="stable")
            ri, rx = ri[o], rx[o]
            keep = np.ones(ri.size, dtype=bool)
            keep[1:] = (ri[1:] != ri[:-1]) | (rx[1:] != rx[:-1])
            ri, rx = ri[keep], rx[keep]
        # runs of consecutive received numbers, each after a (possibly empty) gap of lost ones
        brk = np.ones(ri.size, dtype=bool)
        brk[1:] = (ri[1:] != ri[:-1]) | (rx[1:] != rx[:-1] + 1)
        rs = np.flatnonzero(brk)
        r_item, r_first = ri[rs], rx[rs]
        r_len = np.diff(np.append(rs, ri.size))
        r_last = r_first + r_len - 1
        items = sids.size
        m = np.bincount(r_item, minlength=items)
        prev = np.empty_like(r_last)
        prev[1:] = r_last[:-1]
        item_first = np.ones(r_item.size, dtype=bool)
        item_first[1:] = r_item[1:] != r_item[:-1]
        prev[item_first] = a[r_item[item_first]] - 1
        last = a - 1
        if r_item.size:
            last[r_item] = r_last  # the last write per item wins: its highest received number
        off = np.cumsum(2 * m + 1) - (2 * m + 1)
        rank = np.arange(r_item.size) - (np.cumsum(m) - m)[r_item]
        total = int(2 * r_item.size + items)
        idx = np.empty(total, dtype=np.int64)
        val = np.empty(total, dtype=bool)
        length = np.empty(total, dtype=np.int64)
        gap_at = off[r_item] + 2 * rank
        idx[gap_at], val[gap_at], length[gap_at] = sids[r_item], True, r_first - prev - 1
        idx[gap_at + 1], val[gap_at + 1], length[gap_at + 1] = sids[r_item], False, r_len
        tail_at = off + 2 * m
        idx[tail_at], val[tail_at], length[tail_at] = sids, True, b - last
        runs.add_runs(idx, val, length)

    def _window_runs(self, runs: LossRunCounts, sids: np.ndarray, a: np.ndarray, top: np.ndarray) -> None:
        """Append the numbers ``a[i]..top[i]`` (at most a window) of stream ``sids[i]`` to its
        loss runs, received where their bit is set: :meth:`_settle` without numbers of a
        batch, for a window of whole bytes. Each stream's bytes are unpacked and its runs
        start where a bit differs from the one before it, so the passes over every number
        are on bytes, not on 64-bit integers (about a tenth of :meth:`_settle`'s time)."""
        if sids.size == 0:
            return
        nb = self._nbytes
        pos = self._pos(a)
        off = pos & 7  # the first number's bit in its byte
        span = top - a + 1
        nbytes = (off + span - 1) // 8 + 1  # bytes each stream's numbers touch (a wrapped window: nb + 1)
        item, k = _ranges(np.zeros(sids.size, dtype=np.int64), nbytes)
        byte = sids[item] * nb + ((pos[item] >> 3) + k) % nb
        bits = np.unpackbits(self.ring.reshape(-1)[byte], bitorder="little")  # bit j of byte: number j (_write_bits)
        lead = 8 * (np.cumsum(nbytes) - nbytes)
        first = lead + off  # where each stream's first number is among the bits
        end = first + span
        turn = np.flatnonzero(bits[1:] != bits[:-1]) + 1  # a bit that differs from the one before
        owner = np.searchsorted(first, turn, side="right") - 1
        inside = (turn > first[owner]) & (turn < end[owner])  # inside a stream's numbers
        at = np.concatenate((first, turn[inside]))
        who = np.concatenate((np.arange(sids.size), owner[inside]))
        o = np.argsort(at, kind="stable")
        at, who = at[o], who[o]
        stop = np.empty_like(at)
        stop[:-1] = at[1:]
        last = np.ones(at.size, dtype=bool)
        last[:-1] = who[1:] != who[:-1]
        stop[last] = end[who[last]]
        runs.add_runs(sids[who], bits[at] == 0, stop - at)

    def _count_types(self, rk: np.ndarray, rc: np.ndarray) -> None:
        """Add counts ``rc`` to the (stream, type) keys ``rk`` (sorted, distinct)."""
        at = np.searchsorted(self._pt_keys, rk)
        old = at < self._pt_keys.size
        old[old] = self._pt_keys[at[old]] == rk[old]
        self._pt_n[at[old]] += rc[old]
        if not old.all():
            new = ~old
            self._pt_keys = np.insert(self._pt_keys, at[new], rk[new])
            self._pt_n = np.insert(self._pt_n, at[new], rc[new])

    # -- a batch -------------------------------------------------------------------
    def update(self, sid: np.ndarray, arrival_ns: np.ndarray, seq: np.ndarray, timestamp: np.ndarray,
               payload_type: np.ndarray, marker: np.ndarray) -> None:
        """Add packets of any streams: stream id, arrival ns, sequence number, RTP
        timestamp, payload type and marker, each stream's packets in arrival order."""
        sid = np.asarray(sid, dtype=np.int64)
        if sid.size > _CHUNK:  # a stream's packets in one chunk precede its packets in the next
            for i in range(0, sid.size, _CHUNK):
                part = slice(i, i + _CHUNK)
                self.update(sid[part], arrival_ns[part], seq[part], timestamp[part], payload_type[part], marker[part])
            return
        if sid.size == 0:
            return
        cols = [np.asarray(arrival_ns, dtype=np.int64), np.asarray(seq, dtype=np.int64),
                np.asarray(timestamp, dtype=np.int64), np.asarray(payload_type, dtype=np.int64),
                np.asarray(marker, dtype=bool)]
        if sid.size > 1 and bool(np.any(sid[1:] < sid[:-1])):
            o = stable_order(sid, self.size)
            sid = sid[o]
            cols = [c[o] for c in cols]
        arr, seq, ts, pt, mk = cols
        # payload-type counts: runs of one (stream, type), then one add per distinct pair
        key = sid * 128 + pt
        brk = np.ones(key.size, dtype=bool)
        brk[1:] = key[1:] != key[:-1]
        rk = key[brk]
        rc = np.diff(np.append(np.flatnonzero(brk), key.size))
        if rk.size > 1 and bool(np.any(rk[1:] <= rk[:-1])):  # a stream's type changes back and forth
            rk, inv = np.unique(rk, return_inverse=True)
            rc = np.bincount(inv, weights=rc, minlength=rk.size).astype(np.int64)
        self._count_types(rk, rc)
        seg = _Segments(sid)
        new = self.n[seg.ids] == 0
        if new.any():  # a stream's first packet only sets its starting values
            f, s = seg.starts[new], seg.ids[new]
            self.first_arr[s] = self.ref_arr[s] = self.last_arr[s] = arr[f]
            self.start[s] = self.last_seq[s] = self.last_seq_ext[s] = self.track[s] = seq[f]
            self.max_e[s] = self.lo[s] = seq[f]
            self.first_ts[s] = self.last_ts[s] = self.last_ts_ext[s] = ts[f]
            self.ref_nom[s] = 0.0  # nominal time (ms since the first packet's timestamp) of the reference
            self.prev_cn[s] = self._cns[self.table[s], pt[f]]
            self.n[s] = 1
            self._write_bits(s, seq[f], True)
            rest = np.ones(sid.size, dtype=bool)
            rest[f] = False
            if not rest.any():
                return
            sid, arr, seq, ts, pt, mk = sid[rest], arr[rest], seq[rest], ts[rest], pt[rest], mk[rest]
            seg = _Segments(sid)
        self._rest(seg, arr, seq, ts, pt, mk)

    def _rest(self, seg: _Segments, arr: np.ndarray, seq: np.ndarray, ts: np.ndarray, pt: np.ndarray,
              mk: np.ndarray) -> None:
        ids, g = seg.ids, seg.g
        n_before = self.n[ids]
        ks = (n_before[g] + seg.pos).astype(np.float64)  # k: packets before this one
        prev_seq = seg.prev(seq, self.last_seq[ids])
        seq_ext = self.last_seq_ext[ids][g] + seg.cumsum(wrapped_distance(seq - prev_seq, SEQ_MOD))
        prev_ts = seg.prev(ts, self.last_ts[ids])
        ts_ext = self.last_ts_ext[ids][g] + seg.cumsum(wrapped_distance(ts - prev_ts, TS_MOD))
        rel_ts = ts_ext - self.first_ts[ids][g]
        ok = rel_ts >= 0  # else a "wrong timestamp": counted, otherwise ignored
        self.wrong_ts[ids] += seg.count(~ok)
        if len(self._tables) == 1:  # every stream has the static tables
            clk, cn = self._clocks[0][pt], self._cns[0][pt]
        else:
            tab = self.table[ids][g]
            clk, cn = self._clocks[tab, pt], self._cns[tab, pt]
        left_out = mk | cn | seg.prev(cn, self.prev_cn[ids])

        self._delta_jitter(seg, ok, arr, rel_ts, clk, left_out, ks)
        self._cycles(seg, ok, seq, prev_seq)
        self._sequence_errors(seg, seq, prev_seq, seq_ext)
        self._presence(seg, seq_ext)

        last = seg.last
        self.n[ids] = n_before + seg.lens
        self.prev_cn[ids] = cn[last]
        self.last_seq[ids] = seq[last]
        self.last_seq_ext[ids] = seq_ext[last]
        self.last_ts[ids] = ts[last]
        self.last_ts_ext[ids] = ts_ext[last]
        self.last_arr[ids] = arr[last]

    def _delta_jitter(self, seg: _Segments, ok: np.ndarray, arr: np.ndarray, rel_ts: np.ndarray, clk: np.ndarray,
                      left_out: np.ndarray, ks: np.ndarray) -> None:
        """Arrival deltas and RFC 3550 jitter of the packets with a usable timestamp."""
        if ok.all():  # the usual case: no packet is left out, no subset to gather
            so, sid, a_ok, inc, k, rel, clk_ok = seg, seg.ids, arr, ~left_out, ks, rel_ts, clk
        else:
            oi = np.flatnonzero(ok)
            if oi.size == 0:
                return
            so = seg.sub(oi)
            sid = seg.ids[so.ids]
            a_ok, inc, k, rel, clk_ok = arr[oi], ~left_out[oi], ks[oi], rel_ts[oi], clk[oi]
        delta_ms = (a_ok - so.prev(a_ok, self.ref_arr[sid])) / 1e6
        self.ref_arr[sid] = a_ok[so.last]
        known = ~np.isnan(clk_ok)
        if known.all():
            sj, jsid, nom_clk, d_j, inc_j, k_j = so, sid, clk_ok, delta_ms, inc, k
            rel_j = rel
        else:
            jp = np.flatnonzero(known)
            if jp.size == 0:
                self._extremes_and_means(so, sid, [(delta_ms, self.min_d, self.max_d, self.mean_d, self.n_d)], inc, k)
                return
            sj = so.sub(jp)
            jsid = sid[sj.ids]
            nom_clk, d_j, inc_j, k_j, rel_j = clk_ok[jp], delta_ms[jp], inc[jp], k[jp], rel[jp]
        nom = rel_j * (1000.0 / nom_clk)  # RFC 3550 §6.4.1: timestamps in ms
        dd = np.abs(d_j - (nom - sj.prev(nom, self.ref_nom[jsid])))  # |D(i-1, i)|
        # RFC 3550 §6.4.1 / A.8: J(i) = J(i-1) + (|D| - J(i-1)) / 16 = (15/16) J(i-1) + |D| / 16
        jit = sj.affine(np.full(dd.size, 1.0 - _JITTER_GAIN), dd * _JITTER_GAIN, self.j[jsid])
        self.j[jsid] = jit[sj.last]
        self.any_clock[jsid] = True
        self.ref_nom[jsid] = nom[sj.last]
        delta_stats = (delta_ms, self.min_d, self.max_d, self.mean_d, self.n_d)
        jitter_stats = (jit, self.min_j, self.max_j, self.mean_j, self.n_j)
        if sj is so:  # the same packets: one scan for both means
            self._extremes_and_means(so, sid, [delta_stats, jitter_stats], inc, k)
        else:
            self._extremes_and_means(so, sid, [delta_stats], inc, k)
            self._extremes_and_means(sj, jsid, [jitter_stats], inc_j, k_j)

    @staticmethod
    def _extremes_and_means(sg: _Segments, sid: np.ndarray, series: list[tuple[np.ndarray, ...]], inc: np.ndarray,
                            k: np.ndarray) -> None:
        """Min, max and Wireshark's running mean ``mean += (x - mean) / k`` of the included
        x of each series (values, min, max, mean and count arrays to update)."""
        c = sg.count(inc)
        if not c.any():
            return
        for x, lo, hi, _, count in series:
            lo[sid] = np.minimum(lo[sid], np.minimum.reduceat(np.where(inc, x, np.inf), sg.starts))
            hi[sid] = np.maximum(hi[sid], np.maximum.reduceat(np.where(inc, x, -np.inf), sg.starts))
            count[sid] += c
        # mean_k = (1 - 1/k) mean_{k-1} + x_k / k, k the packets before this one. Over a run of
        # included packets k1..k2 it telescopes, k2 mean_k2 = (k1 - 1) mean_{k1-1} + sum x:
        # one sum per segment whose packets are all included and consecutive (k one more at
        # each); the others (a left-out packet leaves the mean: a = 1, b = 0; a packet that
        # is not in the series still counts in k) take the recurrence.
        whole = (c == sg.lens) & (k[sg.last] - k[sg.starts] == sg.lens - 1)
        if whole.any():
            w = np.flatnonzero(whole)
            ws = sid[w]
            k1, k2 = k[sg.starts[w]], k[sg.last[w]]
            for x, *_, mean, _ in series:
                total = np.add.reduceat(x, sg.starts)[w]
                mean[ws] = ((k1 - 1.0) * mean[ws] + total) / k2
        if whole.all():
            return
        part = np.flatnonzero(np.repeat(~whole, sg.lens))
        sp = sg.sub(part)
        psid = sid[sp.ids]
        inv_k = np.where(inc[part], 1.0 / k[part], 0.0)
        b = np.stack([x[part] * inv_k for x, *_ in series], axis=1)
        y0 = np.stack([m[psid] for *_, m, _ in series], axis=1)
        y = sp.affine(1.0 - inv_k, b, y0)[sp.last]
        for i, (*_, mean, _) in enumerate(series):
            mean[psid] = y[:, i]

    def _cycles(self, seg: _Segments, ok: np.ndarray, seq: np.ndarray, prev_seq: np.ndarray) -> None:
        """Wireshark-compatible cycle count (qoe.rtp's docstring), over the packets with a
        usable timestamp; "last" is the last packet's sequence number, whatever it was."""
        ids, g = seg.ids, seg.g
        start = self.start[ids][g]
        set_ev = ok & ((seq < start) | ((seq == 0) & (prev_seq == SEQ_MOD - 1)))
        clr_ev = ok & (seq > start)
        under0 = self.under[ids]
        if not (set_ev.any() or (under0[g] & clr_ev).any()):
            return
        idx = np.where(set_ev | clr_ev, np.arange(seg.n), -1)
        last_ev = np.maximum.accumulate(idx)
        after = np.where(last_ev >= seg.starts[g], set_ev[np.maximum(last_ev, 0)], under0[g])
        before = seg.prev(after, under0)
        self.cycles[ids] += seg.count(set_ev & ~before)
        self.under[ids] = after[seg.last]

    def _sequence_errors(self, seg: _Segments, seq: np.ndarray, prev_seq: np.ndarray, seq_ext: np.ndarray) -> None:
        """Count packets that are not the successor of the tracked sequence number.

        The tracked number follows in-order packets and forward jumps (also a drop of
        more than 0xFF00, taken as a wrap) but not late or duplicate packets. While every
        packet moves forward it is the previous packet's number; otherwise the stream's
        packets of the batch are walked one by one.
        """
        ids = seg.ids
        d = seq_ext - seg.prev(seq_ext, self.last_seq_ext[ids])
        wrapped = seq < prev_seq
        irregular = (d < 1) | (wrapped & (d >= SEQ_MOD - _WS_WRAP_GAP))
        slow = (seg.count(irregular) > 0) | (self.track[ids] != self.last_seq[ids])
        fast = ~slow
        self.seq_errors[ids[fast]] += seg.count(d != 1)[fast]
        self.track[ids[fast]] = seq[seg.last[fast]]
        for i in np.flatnonzero(slow).tolist():
            s = int(self.track[ids[i]])
            errors = 0
            for x in seq[seg.starts[i] : seg.ends[i]].tolist():
                if x == (s + 1) % SEQ_MOD:
                    s = x
                elif x > s + 1 or s - x > _WS_WRAP_GAP:
                    s = x
                    errors += 1
                else:  # late or duplicated
                    errors += 1
            self.seq_errors[ids[i]] += errors
            self.track[ids[i]] = s

    def _presence(self, seg: _Segments, e: np.ndarray) -> None:
        """Duplicates, out-of-order packets and the loss runs, from extended numbers ``e``.

        A stream's window holds the numbers ``(top - window, top]`` below its highest
        number ``top``; numbers that leave it are settled into the loss runs.
        """
        w = self.window
        ids, g = seg.ids, seg.g
        top0 = self.max_e[ids]
        top0_g = top0[g]
        e_prev = seg.prev(e, top0)
        if bool(np.all(e > e_prev)):  # every packet above all before it: nothing late or repeated
            self._advance(ids, top0, self.lo[ids], e[seg.last], e, seg.g)
            return
        # per-segment running maximum: each segment's numbers shifted above the previous
        # segment's, so that one accumulate serves all (and one sort finds repeats)
        emin = np.minimum.reduceat(e, seg.starts)
        width = np.maximum.reduceat(e, seg.starts) - emin + 1
        shift = (np.cumsum(width) - width - emin)[g]
        key = e + shift
        upto = np.maximum.accumulate(key) - shift
        before = np.maximum(seg.prev(upto, top0), top0_g)  # highest number before each packet
        too_late = e <= before - w
        acc = ~too_late
        ai = np.flatnonzero(acc)
        ka = key[ai]
        o = np.argsort(ka, kind="stable")
        sk = ka[o]
        again = np.zeros(ai.size, dtype=bool)
        again[o[1:]] = sk[1:] == sk[:-1]  # the same number earlier in this batch
        ea, ga = e[ai], g[ai]
        in_old = (ea > top0_g[ai] - w) & (ea <= top0_g[ai])
        seen = np.zeros(ai.size, dtype=bool)
        seen[in_old] = self._bits(ids[ga[in_old]], ea[in_old])
        dup = np.zeros(seg.n, dtype=bool)
        dup[ai] = again | seen
        self.dups[ids] += seg.count(dup)
        self.ooo[ids] += seg.count(too_late | (acc & ~dup & (e < before)))
        lo = np.minimum(self.lo[ids], np.minimum.reduceat(np.where(acc, e, np.iinfo(np.int64).max), seg.starts))
        top = np.maximum(top0, np.maximum.reduceat(e, seg.starts))
        # the numbers received in this batch, once each, in order per segment
        first_occ = np.ones(sk.size, dtype=bool)
        first_occ[1:] = sk[1:] != sk[:-1]
        uo = ai[o[first_occ]]
        self._advance(ids, top0, lo, top, e[uo], g[uo])

    def _advance(self, ids: np.ndarray, top0: np.ndarray, lo: np.ndarray, top: np.ndarray,
                 ue: np.ndarray, ug: np.ndarray) -> None:
        """Move each segment's window up to its new highest number ``top``.

        ``ue`` are the numbers received in this batch, once each and in order per
        segment, with their segment ``ug``.
        """
        w = self.window
        # numbers leaving the window: settled into the loss runs
        a = np.maximum(lo, top0 - w + 1)
        b = top - w
        leave = np.flatnonzero(b >= a)
        if leave.size:
            pick = np.flatnonzero(np.isin(ug, leave) & (ue <= b[ug]))
            item = np.searchsorted(leave, ug[pick])
            self._settle(self.runs, ids[leave], a[leave], b[leave], top0[leave], item, ue[pick])
        # numbers entering the window: their old bits cleared, then the received ones set. A
        # segment that received every number above its old top (no loss in this batch, the
        # usual case) sets the bits of all those that enter: clearing them first is skipped.
        moved = top > top0
        moved &= np.bincount(ug[ue > top0[ug]], minlength=ids.size) != top - top0
        moved = np.flatnonzero(moved)
        if moved.size:
            first_new = np.maximum(top0[moved], top[moved] - w) + 1
            item, x = _ranges(first_new, top[moved] - first_new + 1)
            self._write_bits(ids[moved][item], x, False)
        fresh = ue > top[ug] - w
        self._write_bits(ids[ug[fresh]], ue[fresh], True)
        self.max_e[ids] = top
        self.lo[ids] = lo

    # -- the results ---------------------------------------------------------------
    def results(self, sids: np.ndarray | None = None) -> list[RtpStats]:
        """The statistics of streams ``sids`` (all by default), in that order."""
        sids = np.arange(self.size) if sids is None else np.asarray(sids, dtype=np.int64)
        if sids.size and bool(np.any(self.n[sids] == 0)):
            raise InputError("rtp_stats: the stream has no packets")
        ordered = np.sort(sids)  # (not np.unique: its first call imports numpy.ma, 8 ms)
        if bool(np.any(ordered[1:] == ordered[:-1])):
            raise InputError("StreamStats.results: a stream is asked for twice")
        # the loss runs of what is still in the windows, added to a copy of the counts
        runs = self.runs.copy()
        top = self.max_e[sids]
        a = np.maximum(self.lo[sids], top - self.window + 1)
        if self.window % 8 == 0:  # windows of whole bytes: their runs read a byte at a time
            group = (np.cumsum(top - a + 1) - 1) // _BIT_CHUNK  # about this many numbers at a time
            for part in np.split(np.arange(sids.size), np.flatnonzero(np.diff(group)) + 1):
                self._window_runs(runs, sids[part], a[part], top[part])
        else:  # a number at a time
            none = np.zeros(0, dtype=np.int64)
            group = (np.cumsum(top - a + 1) - 1) // _CHUNK  # about _CHUNK numbers at a time
            for part in np.split(np.arange(sids.size), np.flatnonzero(np.diff(group)) + 1):
                self._settle(runs, sids[part], a[part], top[part], top[part], none, none)
        pat = runs.patterns(sids)
        n = self.n[sids]
        if self.loss_rule == "rfc3550":
            # RFC 3550 A.3: expected = extended highest sequence number received - base + 1,
            # the base being the first packet's number (extended numbers place every packet
            # at the shortest distance from the one before it, so a packet older than the
            # first one lies below the base and is not a wrap, and a late packet is not "the
            # last")
            expected = self.max_e[sids] - self.start[sids] + 1
        else:  # Wireshark: to the last packet received, with its cycle count (qoe.rtp's docstring)
            expected = self.cycles[sids] * SEQ_MOD + self.last_seq[sids] - self.start[sids] + 1
        lost = expected - n
        with np.errstate(divide="ignore", invalid="ignore"):
            fraction = np.where(expected > 0, lost / np.where(expected > 0, expected, 1), 0.0)
        has_d, has_j = self.n_d[sids] > 0, self.n_j[sids] > 0
        nan = np.nan
        seq_errors, wrong_ts = self.seq_errors[sids], self.wrong_ts[sids]
        cols = {
            "first_ns": self.first_arr[sids],
            "last_ns": self.last_arr[sids],
            "packets": n,
            "expected": expected,
            "lost": lost,
            "loss_fraction": fraction,
            "duplicates": self.dups[sids],
            "out_of_order": self.ooo[sids],
            "sequence_errors": seq_errors,
            "wrong_timestamps": wrong_ts,
            "problems": (seq_errors > 0) | (wrong_ts > 0),
            "min_delta_ms": np.where(has_d, self.min_d[sids], nan),
            "mean_delta_ms": np.where(has_d, self.mean_d[sids], nan),
            "max_delta_ms": np.where(has_d, self.max_d[sids], nan),
            "min_jitter_ms": np.where(has_j, self.min_j[sids], nan),
            "mean_jitter_ms": np.where(has_j, self.mean_j[sids], nan),
            "max_jitter_ms": np.where(has_j, self.max_j[sids], nan),
            "jitter_ms": np.where(self.any_clock[sids], self.j[sids], nan),
            "loss_bursts": pat["bursts"],
            "mean_burst_length": pat["mean_burst"],
            "max_burst_length": pat["max_burst"],
            "mean_gap_length": pat["mean_gap"],
            "burst_ratio": pat["burst_r"],
        }
        assert tuple(cols) == _STATS_FIELDS
        return [_make_stats(*row) for row in zip(*(c.tolist() for c in cols.values()))]

    def payload_type_counts(self, sid: int) -> np.ndarray:
        """Packets per payload type 0..127 of stream ``sid``."""
        lo, hi = np.searchsorted(self._pt_keys, [sid * 128, sid * 128 + 128])
        out = np.zeros(128, dtype=np.int64)
        out[self._pt_keys[lo:hi] - sid * 128] = self._pt_n[lo:hi]
        return out

    def payload_types_seen(self, sids: np.ndarray) -> list[tuple[int, ...]]:
        """Each stream's payload types seen, most frequent first (ties: lower type
        first), for the streams ``sids`` in that order (each has packets)."""
        sids = np.asarray(sids, dtype=np.int64)
        stream = self._pt_keys // 128
        pos = np.full(self.size, -1, dtype=np.int64)
        pos[sids] = np.arange(sids.size)
        at = pos[stream]
        keep = at >= 0
        at, pt, n = at[keep], self._pt_keys[keep] % 128, self._pt_n[keep]
        o = np.lexsort((pt, -n, at))  # by stream, then most packets, then lower type
        at, pt = at[o], pt[o]
        out: list[tuple[int, ...]] = [()] * sids.size
        starts = np.flatnonzero(np.concatenate(([True], at[1:] != at[:-1]))) if at.size else at
        types = pt.tolist()
        for a, lo, hi in zip(at[starts].tolist(), starts.tolist(), [*starts[1:].tolist(), at.size]):
            out[a] = tuple(types[lo:hi])
        return out


def rtp_stats(
    packets: RtpPackets,
    clock_rate: int | None,
    *,
    clock_rates: dict[int, int] | None = None,
    comfort_noise: Iterable[int] = (),
    telephone_events: Iterable[int] = (),
    reorder_window: int = REORDER_WINDOW,
    loss_rule: str = "rfc3550",
    jitter_rule: str = "every-packet",
) -> RtpStats:
    """Receiver statistics of one stream, computed from its packet table.

    Parameters
    ----------
    packets : RtpPackets
        The received packets of one stream in arrival order.
    clock_rate : int or None
        RTP clock rate in Hz of the stream's payload types that are not in
        ``clock_rates`` nor in RFC 3551's static table (e.g. 48000 for a dynamic Opus
        type); None leaves those packets out of the jitter.
    clock_rates : dict of int to int, optional
        Clock rate per payload type (e.g. from SDP ``a=rtpmap``); overrides the rest.
    comfort_noise : iterable of int, optional
        Payload types that carry comfort noise besides 13 and 19 (e.g. a dynamic ``CN``).
    telephone_events : iterable of int, optional
        Payload types of RFC 4733 events (SDP ``telephone-event``). Their packets carry
        the start timestamp of their event (RFC 4733 §2.3), not a sampling instant, so
        they are left out of the jitter, whatever ``clock_rates`` says, as Wireshark
        does: they count in the arrival deltas (but for the first of an event, which
        has the marker bit), and the next audio packet's transit difference is measured
        from the last event packet's arrival and the last audio packet's timestamp.
    reorder_window : int, optional
        How many sequence numbers behind the highest one received a packet may arrive
        and still be told apart as a duplicate or a late packet (default 4096, beyond
        RFC 3550 A.1's MAX_DROPOUT = 3000 and MAX_MISORDER = 100). A packet arriving
        later counts in ``out_of_order`` only, and its number stays lost in the loss
        runs (``loss_bursts`` ... ``burst_ratio``); ``lost`` and the rest do not depend
        on it.
    loss_rule : {"rfc3550", "tshark"}, optional
        How ``expected`` and ``lost`` are counted (:class:`StreamStats`): RFC 3550 A.3
        (default; a packet older than the first is not a wrap) or as tshark prints them.
    jitter_rule : {"every-packet", "in-order"}, optional
        ``"every-packet"`` (default): RFC 3550 A.8 on every packet, as tshark; ``"in-order"``:
        the receiver's rule libwebrtc reports (:func:`in_order_jitter_ms`), with
        ``clock_rate`` for the stream's main payload type.

    Returns
    -------
    RtpStats

    Raises
    ------
    InputError
        The table is empty, or ``reorder_window`` is not a positive integer.

    Notes
    -----
    The conventions (which packets count for delta and jitter, how the means are
    computed, and with ``loss_rule="tshark"`` how ``lost`` is) are Wireshark's, listed in
    the docstring of :mod:`qoe.rtp`, so the result equals ``tshark -q -z rtp,streams``
    for the same packets.

    References
    ----------
    RFC 3550 §6.4.1 (jitter), A.1 (sequence numbers), A.3 (expected, lost), A.8.
    """
    if len(packets) == 0:
        raise InputError("rtp_stats: the stream has no packets")
    clocks = clock_table(clock_rates)
    if clock_rate:
        pts = np.unique(packets.payload_type)
        for p in pts.tolist():
            if np.isnan(clocks[p]) and (clock_rates is None or p not in clock_rates):
                clocks[p] = clock_rate
    for p in telephone_events:
        if 0 <= p < 128:
            clocks[p] = np.nan  # no clock: no jitter (RFC 4733 §2.3)
    st = StreamStats(reorder_window=reorder_window, loss_rule=loss_rule)
    (sid,) = st.add(clocks=clocks, cn=cn_table(comfort_noise))
    if jitter_rule not in JITTER_RULES:
        raise InputError(f"jitter_rule must be one of {JITTER_RULES}, given {jitter_rule!r}")
    st.update(np.full(len(packets), sid), packets.arrival_ns, packets.seq, packets.timestamp, packets.payload_type,
              packets.marker)
    return with_jitter(st.results()[0], packets, clock_rate, jitter_rule)


def in_order_jitter_ms(packets: RtpPackets, clock_rate: float) -> np.ndarray:
    """RFC 3550 §6.4.1 jitter (ms) as a WebRTC receiver computes it: the estimate after each update.

    The receiver's rule (what libwebrtc reports as ``inbound-rtp.jitter``, checked against
    Chromium's getStats in data/video/webrtc/README.md): only packets that arrive in order
    (an extended sequence number above every earlier one) take part; the estimate
    ``J += (|D| - J) / 16`` is updated on an in-order packet whose RTP timestamp differs
    from the previous in-order packet's, with ``D`` the difference of their arrival spacing
    and timestamp spacing (so once per video frame, once per audio packet; a late or
    repeated packet changes nothing). The every-packet rule of :func:`rtp_stats` (RFC 3550
    A.8 as tshark applies it) gives a lower jitter on video (every packet of a frame has the
    same timestamp and arrives close to the one before) and a higher one under reordering.

    Parameters
    ----------
    packets : RtpPackets
        One stream's packets in arrival order.
    clock_rate : float
        Its RTP clock rate (Hz).

    Returns
    -------
    numpy.ndarray
        J in ms after each update (empty when there is none).

    References
    ----------
    RFC 3550 §6.4.1 (interarrival jitter), A.1 (in-order packets), A.8.
    """
    e = packets.seq_ext
    n = e.size
    if n < 2:
        return np.zeros(0)
    in_order = np.ones(n, dtype=bool)
    in_order[1:] = e[1:] > np.maximum.accumulate(e)[:-1]
    io = np.flatnonzero(in_order)
    arr = packets.arrival_ns[io].astype(np.float64) / 1e6
    ts = packets.ts_ext[io].astype(np.float64) * (1000.0 / float(clock_rate))
    upd = np.flatnonzero(packets.ts_ext[io][1:] != packets.ts_ext[io][:-1]) + 1
    if upd.size == 0:
        return np.zeros(0)
    dd = np.abs((arr[upd] - arr[upd - 1]) - (ts[upd] - ts[upd - 1]))
    seg = _Segments(np.zeros(upd.size, dtype=np.int64))
    return seg.affine(np.full(upd.size, 1.0 - _JITTER_GAIN), dd * _JITTER_GAIN, np.zeros(1))


def with_jitter(st: RtpStats, packets: RtpPackets, clock_rate: float | None, rule: str) -> RtpStats:
    """``st`` with its jitter figures by ``rule`` (:data:`JITTER_RULES`); "in-order" takes
    :func:`in_order_jitter_ms` (min, plain mean and max of J after each update, and J at the
    end). Unchanged for "every-packet" or without a clock rate."""
    if rule == "every-packet" or not clock_rate:
        return st
    j = in_order_jitter_ms(packets, clock_rate)
    if j.size == 0:
        return dataclasses.replace(st, min_jitter_ms=math.nan, mean_jitter_ms=math.nan, max_jitter_ms=math.nan,
                                   jitter_ms=math.nan)
    return dataclasses.replace(st, min_jitter_ms=float(j.min()), mean_jitter_ms=float(j.mean()),
                               max_jitter_ms=float(j.max()), jitter_ms=float(j[-1]))
