"""Receiver statistics of one RTP stream, computed as tshark's ``-z rtp,streams`` does.

Loss, duplicates, reordering, sequence errors, arrival deltas, RFC 3550 interarrival
jitter and the loss-burst profile behind G.107's BurstR, for a stream fed in chunks of
packets in arrival order (:class:`Analyser`: memory flat in the stream's length) or
given whole (:func:`rtp_stats`). The Wireshark conventions they follow are listed, with
how they were established, in the docstring of :mod:`qoe.rtp`, which re-exports
the public names.

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
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from qoe.errors import InputError
from qoe.rtp._packet import SEQ_MOD, STATIC_PAYLOAD_TYPES, TS_MOD, RtpPackets, unwrap

# RFC 3550 §6.4.1: the jitter estimate's gain parameter 1/16.
_JITTER_GAIN = 1.0 / 16.0
# RFC 3389 §5 / RFC 3551 Table 4: PT 13 is comfort noise; 19 was comfort noise in RFC 1890
# and is still treated so by Wireshark.
_COMFORT_NOISE_PTS = (13, 19)
# Sequence-number bookkeeping compatible with Wireshark (see qoe.rtp's docstring): a
# drop of more than this below the tracked number is taken as a wrap, not a late packet.
_WS_WRAP_GAP = 0xFF00


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
        Packets received (duplicates included).
    expected : int
        Packets expected from the first and last sequence numbers and the cycles.
    lost : int
        ``expected - packets`` (RFC 3550 A.3); negative with duplicates.
    loss_fraction : float
        ``lost / expected`` (0 when nothing was expected).
    duplicates : int
        Packets whose extended sequence number had already been received.
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
        return asdict(self)



def clock_table(clock_rates: dict[int, int] | None = None) -> np.ndarray:
    """Clock rate per payload type 0..127 (NaN: unknown), static table then overrides."""
    table = np.full(128, np.nan)
    for pt, (_, rate) in STATIC_PAYLOAD_TYPES.items():
        table[pt] = rate
    for pt, rate in (clock_rates or {}).items():
        if 0 <= pt < 128:
            table[pt] = rate if rate and rate > 0 else np.nan
    return table


def cn_table(extra: Iterable[int] = ()) -> np.ndarray:
    """Comfort-noise flag per payload type (RFC 3389 §5), plus SDP-mapped ``CN`` types."""
    table = np.zeros(128, dtype=bool)
    table[list(_COMFORT_NOISE_PTS)] = True
    for pt in extra:
        if 0 <= pt < 128:
            table[pt] = True
    return table


_JITTER_BLOCK = 256
# (1 - 1/16)**-256 is about 1.5e7: block-local sums stay far from overflow and lose no
# precision that matters, while whole-array powers of 15/16 would underflow.
_JITTER_POW = (1.0 - _JITTER_GAIN) ** np.arange(_JITTER_BLOCK + 1)


def jitter_filter(abs_d: np.ndarray, j0: float) -> np.ndarray:
    """RFC 3550 §6.4.1 / A.8 recursion ``J(i) = J(i-1) + (|D(i)| - J(i-1)) / 16`` for all i.

    Vectorised in blocks of 256: inside a block ``J(k) = a**(k+1) * J(start) +
    sum_j a**(k-j) * |D(j)| / 16`` with ``a = 15/16``, the sum taken as a cumulative sum of
    ``a**-j``-weighted terms; block starts are chained in a short Python loop.
    """
    m = abs_d.size
    nb = -(-m // _JITTER_BLOCK)
    x = np.zeros(nb * _JITTER_BLOCK)
    x[:m] = abs_d * _JITTER_GAIN
    x = x.reshape(nb, _JITTER_BLOCK)
    up = _JITTER_POW[:_JITTER_BLOCK]  # a**k
    local = np.cumsum(x / up, axis=1) * up  # zero-start response inside each block
    starts = np.empty(nb)
    j = j0
    a_block = _JITTER_POW[_JITTER_BLOCK]
    for i in range(nb):
        starts[i] = j
        j = a_block * j + local[i, -1]
    out = local + starts[:, None] * _JITTER_POW[1:]
    return out.reshape(-1)[:m]


def _previous(x: np.ndarray, first: Any) -> np.ndarray:
    """Each element's predecessor: ``[first, x[0], ..., x[-2]]`` (``x`` non-empty), the
    carried-in ``first`` being the last value of the chunk before."""
    out = np.empty_like(x)
    out[0] = first
    out[1:] = x[:-1]
    return out


def running_mean(mean: float, values: np.ndarray, ks: np.ndarray) -> float:
    """Apply ``mean += (v - mean) / k`` for each (v, k) in order, in closed form.

    ``mean_after = mean * prod(1 - 1/k) + sum_i v_i / k_i * prod_{j > i}(1 - 1/k_j)``;
    the suffix products stay >= k_first / k_last, so nothing underflows.
    """
    if values.size == 0:
        return mean
    f = 1.0 - 1.0 / ks
    suffix = np.cumprod(f[::-1])[::-1]  # suffix[i] = prod f[i:]
    after = np.empty_like(suffix)
    after[:-1] = suffix[1:]
    after[-1] = 1.0
    return float(mean * suffix[0] + np.sum(values / ks * after))


# A packet may arrive this many sequence numbers behind the highest one and still be
# told apart as a duplicate or a late packet: the presence map keeps 2 * 2**16 of them
# (128 KiB per stream), so its memory does not grow with the stream. A whole sequence
# cycle (RFC 3550 A.1) is far beyond any real reordering; RFC 3550 A.1's MAX_DROPOUT is 3000.
PRESENCE_WINDOW = 1 << 16


class RunStats:
    """Loss-run statistics of a received/lost sequence fed in pieces.

    The definitions are those of :func:`qoe.rtp.lossmodel.loss_pattern` (G.107 (06/2015)
    §7.5, eq. 7-32: p, q, BurstR = 1/(p + q), loss runs and the gaps between them), kept
    as counts so that the sequence never has to be held whole.
    """

    def __init__(self) -> None:
        self.n = 0
        self.lost = 0
        self.last: bool | None = None
        self.rx_to_lost = self.lost_to_rx = self.from_rx = self.from_lost = 0
        self.bursts = self.burst_sum = self.burst_max = 0
        self.gaps = self.gap_sum = 0
        self.open_val: bool | None = None
        self.open_len = 0
        self.pending_gap: int | None = None

    def add(self, m: np.ndarray) -> None:
        """Append ``m`` (True = lost) to the sequence."""
        if m.size == 0:
            return
        self.n += int(m.size)
        self.lost += int(np.count_nonzero(m))
        seq = m if self.last is None else np.concatenate(([self.last], m))
        prev, nxt = seq[:-1], seq[1:]
        lost_prev = int(np.count_nonzero(prev))
        self.from_lost += lost_prev
        self.from_rx += int(prev.size) - lost_prev
        self.rx_to_lost += int(np.count_nonzero(~prev & nxt))
        self.lost_to_rx += int(np.count_nonzero(prev & ~nxt))
        self.last = bool(m[-1])
        starts = np.concatenate(([0], np.flatnonzero(m[1:] != m[:-1]) + 1))
        lengths = np.diff(np.concatenate((starts, [m.size])))
        for v, n in zip(m[starts].tolist(), lengths.tolist()):
            if v == self.open_val:
                self.open_len += n
            else:
                self._close()
                self.open_val, self.open_len = v, n

    def add_run(self, value: bool, n: int) -> None:
        """Append ``n`` copies of ``value`` without building them."""
        if n <= 0:
            return
        self.n += n
        self.lost += n if value else 0
        if self.last is not None:
            if self.last:
                self.from_lost += 1
                self.lost_to_rx += 0 if value else 1
            else:
                self.from_rx += 1
                self.rx_to_lost += 1 if value else 0
        if value:
            self.from_lost += n - 1
        else:
            self.from_rx += n - 1
        self.last = value
        if value == self.open_val:
            self.open_len += n
        else:
            self._close()
            self.open_val, self.open_len = value, n

    def _close(self) -> None:
        if self.open_val is None:
            return
        if self.open_val:  # a loss run ends; a received run before it, after a burst, is a gap
            if self.pending_gap is not None:
                self.gaps += 1
                self.gap_sum += self.pending_gap
                self.pending_gap = None
            self.bursts += 1
            self.burst_sum += self.open_len
            self.burst_max = max(self.burst_max, self.open_len)
        elif self.bursts:
            self.pending_gap = self.open_len

    def result(self) -> dict[str, Any]:
        """bursts, mean/max burst, mean gap and BurstR, as loss_pattern defines them."""
        bursts, burst_sum, burst_max, gaps, gap_sum = self.bursts, self.burst_sum, self.burst_max, self.gaps, self.gap_sum
        if self.open_val:  # the sequence ends inside a loss run
            if self.pending_gap is not None:
                gaps, gap_sum = gaps + 1, gap_sum + self.pending_gap
            bursts, burst_sum, burst_max = bursts + 1, burst_sum + self.open_len, max(burst_max, self.open_len)
        mean_burst = burst_sum / bursts if bursts else 0.0
        p = self.rx_to_lost / self.from_rx if self.from_rx else 0.0
        if self.lost == 0:
            burst_r = 1.0
        elif self.lost == self.n:
            burst_r = float("inf")
        else:
            q = self.lost_to_rx / self.from_lost if self.from_lost else 0.0
            if q == 0.0:  # the only loss run is still open at the end
                q = 1.0 / mean_burst
            burst_r = 1.0 / (p + q)  # G.107 (06/2015) eq. (7-32)
        return {
            "loss_bursts": bursts,
            "mean_burst_length": float(mean_burst),
            "max_burst_length": int(burst_max),
            "mean_gap_length": gap_sum / gaps if gaps else 0.0,
            "burst_ratio": float(burst_r),
        }


class Presence:
    """Which extended sequence numbers arrived: duplicates, reordering, loss runs.

    Keeps a window of ``2 * window`` sequence numbers; numbers more than ``window`` below
    the highest are settled into :class:`RunStats` and dropped. A packet arriving after
    its number was settled counts as out of order.
    """

    def __init__(self, first: int, *, window: int = PRESENCE_WINDOW) -> None:
        self.window = window
        self.cap = 2 * window
        self.margin = max(1, self.cap // 128)  # room below the first number for early-reordered ones
        self.base = first - self.margin
        self.have = np.zeros(self.cap, dtype=bool)
        self.have[first - self.base] = True
        self.lo = self.hi = self.max_ext = first
        self.settled: int | None = None  # numbers below this are in self.runs
        self.runs = RunStats()
        self.dups = 0
        self.ooo = 0

    def add(self, e: np.ndarray) -> None:
        """Mark extended sequence numbers ``e`` (arrival order) as received."""
        step, half = self.window // 4, self.window // 2
        i, n = 0, e.size
        while i < n:  # pieces that never move the highest number by more than half a window
            j = min(i + step, n)
            cm = np.maximum.accumulate(e[i:j])
            over = np.flatnonzero(cm > max(self.max_ext, int(e[i])) + half)
            if over.size:
                j = i + int(over[0])
            self._add(e[i:j])
            i = j

    def _add(self, e: np.ndarray) -> None:
        run_max = np.maximum.accumulate(_previous(e, self.max_ext))
        self.max_ext = max(self.max_ext, int(e.max()))
        hi = max(self.hi, int(e.max()))
        if hi - self.base >= self.cap:  # slide: settle what is far behind the highest
            keep_from = hi - self.window
            if keep_from > self.lo:
                top = min(keep_from, self.hi + 1)
                self.runs.add(~self.have[self.lo - self.base : top - self.base])
                self.runs.add_run(True, keep_from - top)  # numbers jumped over: missing
                self.settled = keep_from
                self._rebase(keep_from, keep_from, self.hi)
                self.lo = keep_from
            else:
                self._rebase(self.lo, self.lo, self.hi)
        floor = hi - self.cap + 1 if self.settled is None else max(self.settled, hi - self.cap + 1)
        too_late = e < floor
        ok = ~too_late
        lo = min(self.lo, int(e[ok].min())) if ok.any() else self.lo
        if lo < self.base:
            self._rebase(max(lo - self.margin, hi - self.cap + 1), self.lo, self.hi)
        self.lo, self.hi = lo, hi
        idx = e[ok] - self.base
        order = np.argsort(idx, kind="stable")
        srt = idx[order]
        first_in_piece = np.ones(idx.size, dtype=bool)
        first_in_piece[order[1:]] = srt[1:] != srt[:-1]
        dup = ~first_in_piece | self.have[idx]
        self.have[idx] = True
        self.dups += int(np.count_nonzero(dup))
        self.ooo += int(np.count_nonzero(~dup & (e[ok] < run_max[ok]))) + int(np.count_nonzero(too_late))

    def _rebase(self, base: int, a: int, b: int) -> None:
        """Move the map to start at ``base``, keeping the numbers ``a``..``b``."""
        moved = np.zeros(self.cap, dtype=bool)
        if b >= a:
            moved[a - base : b - base + 1] = self.have[a - self.base : b - self.base + 1]
        self.have, self.base = moved, base

    def loss_runs(self) -> dict[str, Any]:
        runs = RunStats()
        runs.__dict__.update({k: v for k, v in self.runs.__dict__.items()})
        runs.add(~self.have[self.lo - self.base : self.hi - self.base + 1])
        return runs.result()


class Analyser:
    """Streaming receiver statistics of one stream, fed chunk by chunk in arrival order.

    Keeps O(1) state plus one byte per sequence number spanned (to count duplicates and
    loss bursts), so the memory does not grow with the number of streams' packets held.
    Chunked and one-shot updates give identical results.
    """

    def __init__(self, clocks: np.ndarray, cn: np.ndarray) -> None:
        self.clocks = clocks
        self.cn = cn
        self.n = 0
        self.j = 0.0
        self.any_clock = False
        self.min_d = np.inf
        self.max_d = -np.inf
        self.mean_d = 0.0
        self.n_d = 0
        self.min_j = np.inf
        self.max_j = -np.inf
        self.mean_j = 0.0
        self.n_j = 0
        self.cycles = 0
        self.under = False
        self.seq_errors = 0
        self.wrong_ts = 0
        self.pt_counts = np.zeros(128, dtype=np.int64)
        self.presence: Presence | None = None

    # -- one chunk ---------------------------------------------------------------
    def update(self, arr: np.ndarray, seq: np.ndarray, ts: np.ndarray, pt: np.ndarray, mk: np.ndarray) -> None:
        """Add packets in arrival order: arrival ns, sequence numbers, timestamps, payload types, markers."""
        arr = np.asarray(arr, dtype=np.int64)
        seq = np.asarray(seq).astype(np.int64)
        ts = np.asarray(ts).astype(np.int64)
        pt = np.asarray(pt).astype(np.intp)
        mk = np.asarray(mk, dtype=bool)
        if arr.shape[0] == 0:
            return
        self.pt_counts += np.bincount(pt, minlength=128)
        if self.n == 0:
            self._first(int(arr[0]), int(seq[0]), int(ts[0]), int(pt[0]))
            arr, seq, ts, pt, mk = arr[1:], seq[1:], ts[1:], pt[1:], mk[1:]
            if arr.shape[0] == 0:
                return
        self._rest(arr, seq, ts, pt, mk)

    def _first(self, arr: int, seq: int, ts: int, pt: int) -> None:
        self.n = 1
        self.first_arr = arr
        self.start = seq
        self.first_ts = ts
        self.last_seq = seq
        self.last_seq_ext = seq
        self.last_ts = ts
        self.last_ts_ext = ts
        self.ref_arr = arr
        self.ref_nom = 0.0  # nominal time (ms since the first packet's timestamp) of the reference
        self.prev_cn = bool(self.cn[pt])
        self.track = seq
        self.last_arr = arr
        self.presence = Presence(seq)

    def _rest(self, arr: np.ndarray, seq: np.ndarray, ts: np.ndarray, pt: np.ndarray, mk: np.ndarray) -> None:
        m = arr.shape[0]
        seq_ext = unwrap(seq, self.last_seq, self.last_seq_ext, SEQ_MOD)
        ts_ext = unwrap(ts, self.last_ts, self.last_ts_ext, TS_MOD)
        ks = (self.n + np.arange(m)).astype(np.float64)  # k: packets before this one
        rel_ts = ts_ext - self.first_ts
        ok = rel_ts >= 0  # else a "wrong timestamp": counted, otherwise ignored
        self.wrong_ts += int(m - np.count_nonzero(ok))
        cn = self.cn[pt]
        prev_cn = _previous(cn, self.prev_cn)
        clk = self.clocks[pt]
        known = ~np.isnan(clk)
        left_out = mk | cn | prev_cn

        oi = np.flatnonzero(ok)
        if oi.size:
            a_ok = arr[oi]
            delta_ms = (a_ok - _previous(a_ok, self.ref_arr)) / 1e6
            inc_d = ~left_out[oi]
            if inc_d.any():
                d = delta_ms[inc_d]
                self.min_d = min(self.min_d, float(d.min()))
                self.max_d = max(self.max_d, float(d.max()))
                self.mean_d = running_mean(self.mean_d, d, ks[oi][inc_d])
                self.n_d += int(d.size)
            jpos = np.flatnonzero(known[oi])
            if jpos.size:
                self.any_clock = True
                ji = oi[jpos]
                nom = rel_ts[ji] * (1000.0 / clk[ji])  # RFC 3550 §6.4.1: timestamps in ms
                dd = np.abs(delta_ms[jpos] - (nom - _previous(nom, self.ref_nom)))  # |D(i-1, i)|
                # RFC 3550 §6.4.1 / A.8: J(i) = J(i-1) + (|D| - J(i-1)) / 16
                jit = jitter_filter(dd, self.j)
                self.j = float(jit[-1])
                self.ref_nom = float(nom[-1])
                inc_j = inc_d[jpos]
                if inc_j.any():
                    jv = jit[inc_j]
                    self.min_j = min(self.min_j, float(jv.min()))
                    self.max_j = max(self.max_j, float(jv.max()))
                    self.mean_j = running_mean(self.mean_j, jv, ks[ji][inc_j])
                    self.n_j += int(jv.size)
            self.ref_arr = int(a_ok[-1])

        # Wireshark-compatible cycle count (qoe.rtp's docstring), over the packets with a
        # usable timestamp; "last" is the last packet's sequence number, whatever it was.
        set_ev = ok & ((seq < self.start) | ((seq == 0) & (_previous(seq, self.last_seq) == SEQ_MOD - 1)))
        clr_ev = ok & (seq > self.start)
        if set_ev.any() or (self.under and clr_ev.any()):
            idx = np.where(set_ev | clr_ev, np.arange(m), -1)
            last_ev = np.maximum.accumulate(idx)
            after = np.where(last_ev >= 0, set_ev[np.maximum(last_ev, 0)], self.under)
            self.cycles += int(np.count_nonzero(set_ev & ~_previous(after, self.under)))
            self.under = bool(after[-1])

        self._sequence_errors(seq, seq_ext)
        self.presence.add(seq_ext)  # type: ignore[union-attr]

        self.n += m
        self.prev_cn = bool(cn[-1])
        self.last_seq = int(seq[-1])
        self.last_seq_ext = int(seq_ext[-1])
        self.last_ts = int(ts[-1])
        self.last_ts_ext = int(ts_ext[-1])
        self.last_arr = int(arr[-1])

    def _sequence_errors(self, seq: np.ndarray, seq_ext: np.ndarray) -> None:
        """Count packets that are not the successor of the tracked sequence number.

        The tracked number follows in-order packets and forward jumps (also a drop of
        more than 0xFF00, taken as a wrap) but not late or duplicate packets.
        """
        d = np.diff(seq_ext, prepend=self.last_seq_ext)
        wrapped = seq < _previous(seq, self.last_seq)
        if self.track == self.last_seq and bool(np.all(d >= 1)) and not bool(np.any(wrapped & (d >= SEQ_MOD - _WS_WRAP_GAP))):
            # every packet moves forward: the tracked number is always the previous one
            self.seq_errors += int(np.count_nonzero(d != 1))
            self.track = int(seq[-1])
            return
        s = self.track
        errors = 0
        for x in seq.tolist():
            if x == (s + 1) % SEQ_MOD:
                s = x
            elif x > s + 1 or s - x > _WS_WRAP_GAP:
                s = x
                errors += 1
            else:  # late or duplicated
                errors += 1
        self.seq_errors += errors
        self.track = s

    # -- the result --------------------------------------------------------------
    def result(self) -> RtpStats:
        if self.n == 0:
            raise InputError("rtp_stats: the stream has no packets")
        expected = self.cycles * SEQ_MOD + self.last_seq - self.start + 1
        lost = expected - self.n
        pres = self.presence
        runs = pres.loss_runs()  # type: ignore[union-attr]
        nan = float("nan")
        has_d = self.n_d > 0
        has_j = self.n_j > 0
        return RtpStats(
            first_ns=int(self.first_arr),
            last_ns=int(self.last_arr),
            packets=int(self.n),
            expected=int(expected),
            lost=int(lost),
            loss_fraction=lost / expected if expected > 0 else 0.0,
            duplicates=pres.dups,  # type: ignore[union-attr]
            out_of_order=pres.ooo,  # type: ignore[union-attr]
            sequence_errors=self.seq_errors,
            wrong_timestamps=self.wrong_ts,
            problems=bool(self.seq_errors or self.wrong_ts),
            min_delta_ms=self.min_d if has_d else nan,
            mean_delta_ms=self.mean_d if has_d else nan,
            max_delta_ms=self.max_d if has_d else nan,
            min_jitter_ms=self.min_j if has_j else nan,
            mean_jitter_ms=self.mean_j if has_j else nan,
            max_jitter_ms=self.max_j if has_j else nan,
            jitter_ms=self.j if self.any_clock else nan,
            **runs,
        )


def rtp_stats(
    packets: RtpPackets,
    clock_rate: int | None,
    *,
    clock_rates: dict[int, int] | None = None,
    comfort_noise: Iterable[int] = (),
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

    Returns
    -------
    RtpStats

    Notes
    -----
    The conventions (which packets count for delta and jitter, how ``lost`` and the
    means are computed) are Wireshark's, listed in the docstring of :mod:`qoe.rtp`,
    so the result equals ``tshark -q -z rtp,streams`` for the same packets.

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
    an = Analyser(clocks, cn_table(comfort_noise))
    an.update(packets.arrival_ns, packets.seq, packets.timestamp, packets.payload_type, packets.marker)
    return an.result()
