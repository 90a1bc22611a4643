"""Packet-loss patterns for the E-model: loss probability and burst ratio from a loss trace.

G.107 rates packet loss with two numbers: the loss probability Ppl and the burst ratio
BurstR, defined through a two-state Markov (Gilbert) model of the loss process. Given the
sequence of received/lost packets of a stream (after the jitter buffer, so late packets
count as lost), :func:`loss_pattern` estimates both, and the observed loss-run statistics
behind them. It counts with :class:`LossRunCounts`, which keeps those counts for many
sequences fed in pieces (the streaming receiver statistics of :mod:`qoe.rtp` use it for
the loss-burst profile of every stream), so both give the same figures.

References
----------
.. [1] ITU-T G.107 (06/2015), clause 7.5, eq. (7-32) and the definition of BurstR:
   "the ratio of the average length of observed bursts in an arrival sequence to the
   average length of bursts expected for the network under random loss".
.. [2] ITU-T G.113 (11/2007), Appendix I, clause I.3 (packet-loss robustness and BurstR).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from qoe.errors import InputError

__all__ = ["LossPattern", "LossRunCounts", "loss_pattern", "runs"]


@dataclass(frozen=True, slots=True)
class LossPattern:
    """Loss statistics of one packet sequence, in the terms G.107 uses.

    Attributes
    ----------
    packets : int
        Length of the sequence (received + lost).
    lost : int
        Number of lost packets.
    ppl : float
        Packet-loss probability in percent (G.107's Ppl).
    p : float
        Transition probability received → lost of the two-state Markov model.
    q : float
        Transition probability lost → received.
    burst_r : float
        G.107 BurstR = 1 / (p + q) (eq. 7-32); 1 for random loss, > 1 for bursty loss.
        1.0 when there is no loss; ``inf`` when every packet is lost.
    bursts : int
        Number of loss runs (maximal runs of consecutive lost packets).
    mean_burst : float
        Mean loss-run length (0 when no loss).
    max_burst : int
        Longest loss run.
    mean_gap : float
        Mean length of runs of received packets between two loss runs (0 without two bursts).
    """

    packets: int
    lost: int
    ppl: float
    p: float
    q: float
    burst_r: float
    bursts: int
    mean_burst: float
    max_burst: int
    mean_gap: float

    def to_dict(self) -> dict[str, Any]:
        """Fields as plain Python values."""
        return dataclasses.asdict(self)


def runs(mask: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Start indices and lengths of the runs of ``True`` in a boolean sequence.

    Examples
    --------
    >>> starts, lengths = runs([0, 1, 1, 0, 1])
    >>> starts.tolist(), lengths.tolist()
    ([1, 4], [2, 1])
    """
    m = np.asarray(mask, dtype=bool).ravel()
    edges = np.diff(np.concatenate(([False], m, [False])).astype(np.int8))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    return starts, ends - starts


class LossRunCounts:
    """Loss-run counts of many received/lost sequences, each fed in pieces.

    What :func:`loss_pattern` needs to know about a sequence, kept as a fixed set of
    counts per sequence (a structure of arrays, one entry per sequence) so that a
    sequence never has to be held whole: its length, how many are lost, its first and
    last value, the length of its trailing run, the transitions received -> lost and
    lost -> received, the longest loss run and the number received before the first
    loss. :func:`loss_pattern` (one sequence given whole) and the receiver statistics
    of :mod:`qoe.rtp` (many streams, a window of sequence numbers at a time) both count
    with it, so the two cannot disagree.

    Sequences are fed as runs (:meth:`add_runs`): a value (True = lost) and a length,
    for many sequences at once.
    """

    _INT_FIELDS = ("n", "lost", "tail", "rx_to_lost", "lost_to_rx", "max_burst", "lead_rx")
    _FLAG_FIELDS = ("first", "last")  # -1 nothing yet, 0 received, 1 lost

    def __init__(self, size: int = 0) -> None:
        self.size = 0
        for f in self._INT_FIELDS:
            setattr(self, f, np.zeros(0, dtype=np.int64))
        for f in self._FLAG_FIELDS:
            setattr(self, f, np.zeros(0, dtype=np.int8))
        self.resize(size)

    def resize(self, size: int) -> None:
        """Make room for ``size`` sequences (new ones empty)."""
        for f in self._INT_FIELDS + self._FLAG_FIELDS:
            old = getattr(self, f)
            new = np.zeros(size, dtype=old.dtype) if f in self._INT_FIELDS else np.full(size, -1, dtype=np.int8)
            k = min(size, old.size)
            new[:k] = old[:k]
            setattr(self, f, new)
        self.size = size

    def reset(self, idx: np.ndarray) -> None:
        """Empty sequences ``idx`` (their rows reused for new sequences)."""
        for f in self._INT_FIELDS:
            getattr(self, f)[idx] = 0
        for f in self._FLAG_FIELDS:
            getattr(self, f)[idx] = -1

    def copy(self) -> LossRunCounts:
        out = LossRunCounts()
        for f in self._INT_FIELDS + self._FLAG_FIELDS:
            setattr(out, f, getattr(self, f).copy())
        out.size = self.size
        return out

    def add_runs(self, idx: np.ndarray, value: np.ndarray, length: np.ndarray) -> None:
        """Append runs to their sequences.

        Parameters
        ----------
        idx : numpy.ndarray of int
            The sequence each run belongs to; the runs of one sequence must be
            contiguous and in order (``idx`` grouped, e.g. sorted with a stable sort).
        value : numpy.ndarray of bool
            True for a run of lost packets.
        length : numpy.ndarray of int
            Run lengths; zero-length runs are ignored, neighbours of equal value merge.
        """
        keep = length > 0
        idx, value, length = idx[keep], value[keep].astype(bool), length[keep].astype(np.int64)
        if idx.size == 0:
            return
        # merge neighbouring runs of the same sequence and value
        brk = np.ones(idx.size, dtype=bool)
        brk[1:] = (idx[1:] != idx[:-1]) | (value[1:] != value[:-1])
        rs = np.flatnonzero(brk)
        idx, value, length = idx[rs], value[rs], np.add.reduceat(length, rs)
        # one group per sequence
        gs = np.flatnonzero(np.concatenate(([True], idx[1:] != idx[:-1])))
        ge = np.concatenate((gs[1:], [idx.size])) - 1
        seqs = idx[gs]
        g = np.repeat(np.arange(gs.size), np.diff(np.concatenate((gs, [idx.size]))))
        n0, lost0, last0, tail0 = self.n[seqs], self.lost[seqs], self.last[seqs], self.tail[seqs]
        v0 = value[gs]
        joins = (n0 > 0) & (last0 == v0)  # the first run continues the sequence's trailing run
        eff = length.copy()
        eff[gs] += np.where(joins, tail0, 0)
        # transitions: between runs of a group, and from the trailing run before it
        inner = np.ones(idx.size, dtype=bool)
        inner[gs] = False
        to_lost = np.bincount(g, weights=inner & value, minlength=gs.size).astype(np.int64)
        to_rx = np.bincount(g, weights=inner & ~value, minlength=gs.size).astype(np.int64)
        cross = (n0 > 0) & ~joins
        self.rx_to_lost[seqs] += to_lost + (cross & v0)
        self.lost_to_rx[seqs] += to_rx + (cross & ~v0)
        burst = np.where(value, eff, 0)
        self.max_burst[seqs] = np.maximum(self.max_burst[seqs], np.maximum.reduceat(burst, gs))
        self.lead_rx[seqs] += np.where((lost0 == 0) & ~v0, length[gs], 0)
        self.n[seqs] = n0 + np.add.reduceat(length, gs)
        self.lost[seqs] = lost0 + np.add.reduceat(np.where(value, length, 0), gs)
        self.first[seqs] = np.where(n0 > 0, self.first[seqs], v0)
        self.last[seqs] = value[ge]
        self.tail[seqs] = eff[ge]

    @classmethod
    def of_sequence(cls, lost: np.ndarray) -> LossRunCounts:
        """The counts of one whole received/lost sequence (True = lost, at least one entry):
        what :meth:`add_sequence` gives an empty sequence, counted straight from the loss
        runs (a few scalar steps instead of :meth:`add_runs`' array passes).

        Loss runs and received runs alternate, so every loss run not at the start follows a
        received run (a transition received -> lost) and every one not at the end is
        followed by one (lost -> received).
        """
        starts, lengths = runs(lost)
        n = int(np.asarray(lost).size)
        out = cls(1)
        out.n[0] = n
        if starts.size == 0:  # one received run
            out.first[0] = out.last[0] = 0
            out.tail[0] = out.lead_rx[0] = n
            return out
        k = int(starts.size)
        first_lost = int(starts[0]) == 0
        end = int(starts[-1] + lengths[-1])
        last_lost = end == n
        out.lost[0] = int(lengths.sum())
        out.first[0] = int(first_lost)
        out.last[0] = int(last_lost)
        out.tail[0] = int(lengths[-1]) if last_lost else n - end
        out.rx_to_lost[0] = k - first_lost
        out.lost_to_rx[0] = k - last_lost
        out.max_burst[0] = int(lengths.max())
        out.lead_rx[0] = int(starts[0])  # received before the first loss (0: the first packet is lost)
        return out

    def add_sequence(self, i: int, lost: np.ndarray) -> None:
        """Append a received/lost sequence (True = lost) to sequence ``i``."""
        starts, lengths = runs(lost)  # loss runs; the received runs are between them
        m = lost.size
        edges = np.sort(np.concatenate(([0], starts, starts + lengths, [m])))
        length = np.diff(edges)
        value = np.isin(edges[:-1], starts)
        self.add_runs(np.full(length.size, i), value, length)

    def patterns(self, idx: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """G.107 figures of sequences ``idx`` (all by default), as :class:`LossPattern` defines them.

        Returns arrays ``packets``, ``lost``, ``ppl``, ``p``, ``q``, ``burst_r``,
        ``bursts``, ``mean_burst``, ``max_burst`` and ``mean_gap``; an empty sequence
        gives zeros (and BurstR 1).
        """
        sel = slice(None) if idx is None else idx
        n, lost = self.n[sel], self.lost[sel]
        first, last, tail = self.first[sel], self.last[sel], self.tail[sel]
        rx_to_lost, lost_to_rx = self.rx_to_lost[sel], self.lost_to_rx[sel]
        bursts = rx_to_lost + (first == 1)
        from_lost = lost - (last == 1)
        from_rx = (n - lost) - (last == 0)
        gaps = np.maximum(bursts - 1, 0)
        gap_sum = np.where(bursts > 0, (n - lost) - self.lead_rx[sel] - np.where(last == 0, tail, 0), 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean_burst = np.where(bursts > 0, lost / np.maximum(bursts, 1), 0.0)
            mean_gap = np.where(gaps > 0, gap_sum / np.maximum(gaps, 1), 0.0)
            p = np.where(from_rx > 0, rx_to_lost / np.maximum(from_rx, 1), 0.0)
            q = np.where(from_lost > 0, lost_to_rx / np.maximum(from_lost, 1), 0.0)
            # the only loss run is still open at the end: the run taken as complete
            q = np.where(q == 0.0, 1.0 / np.where(mean_burst > 0, mean_burst, np.inf), q)
            burst_r = 1.0 / (p + q)  # G.107 (06/2015) eq. (7-32)
            ppl = np.where(n > 0, 100.0 * lost / np.maximum(n, 1), 0.0)
        none, every = lost == 0, (lost == n) & (n > 0)
        q = np.where(none, 1.0, np.where(every, 0.0, q))
        burst_r = np.where(none, 1.0, np.where(every, np.inf, burst_r))
        return {
            "packets": n, "lost": lost, "ppl": ppl, "p": p, "q": q, "burst_r": burst_r, "bursts": bursts,
            "mean_burst": mean_burst, "max_burst": self.max_burst[sel], "mean_gap": mean_gap,
        }


def loss_pattern(lost: ArrayLike) -> LossPattern:
    """Ppl, BurstR and loss-run statistics of a received/lost sequence.

    Parameters
    ----------
    lost : array_like of bool
        One entry per packet in sending order (e.g. by extended RTP sequence number):
        ``True`` where the packet was lost (or discarded as late by the jitter buffer).

    Returns
    -------
    LossPattern

    Notes
    -----
    The Markov transition probabilities are estimated by counting transitions in the
    sequence: p = n(received → lost) / n(received → any), q = n(lost → received) /
    n(lost → any). G.107 eq. (7-32): BurstR = 1/(p + q). For an independent (Bernoulli)
    loss process p + q = 1 and BurstR = 1. Equivalently BurstR is the mean loss-run length
    divided by the mean run length expected under random loss, 1 / (1 − Ppl/100).

    When the sequence contains losses but no transition out of the lost state (it ends in
    its only loss run) q cannot be estimated from transitions; then q is taken as
    1 / (mean loss-run length), the same estimate with the run treated as complete.

    References
    ----------
    .. [1] ITU-T G.107 (06/2015), clause 7.5, eq. (7-32).

    Examples
    --------
    Isolated single losses, 1 in 5, are *less* bursty than random loss (BurstR < 1):

    >>> lp = loss_pattern([0, 0, 0, 0, 1] * 20)
    >>> round(lp.ppl, 1), round(lp.burst_r, 2)
    (20.0, 0.8)

    The same loss rate in runs of 4:

    >>> lp = loss_pattern(([0] * 16 + [1] * 4) * 5)
    >>> round(lp.ppl, 1), round(lp.burst_r, 2)
    (20.0, 3.66)
    """
    m = np.asarray(lost)
    if m.ndim != 1:
        raise InputError(f"lost must be a 1-D sequence of booleans; given shape {m.shape}")
    m = m.astype(bool)
    if m.size == 0:
        raise InputError("lost is empty: a loss pattern needs at least one packet")
    f = LossRunCounts.of_sequence(m).patterns()
    return LossPattern(
        packets=int(f["packets"][0]), lost=int(f["lost"][0]), ppl=float(f["ppl"][0]), p=float(f["p"][0]),
        q=float(f["q"][0]), burst_r=float(f["burst_r"][0]), bursts=int(f["bursts"][0]),
        mean_burst=float(f["mean_burst"][0]), max_burst=int(f["max_burst"][0]), mean_gap=float(f["mean_gap"][0]),
    )
