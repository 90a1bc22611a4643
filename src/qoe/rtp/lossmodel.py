"""Packet-loss patterns for the E-model: loss probability and burst ratio from a loss trace.

G.107 rates packet loss with two numbers: the loss probability Ppl and the burst ratio
BurstR, defined through a two-state Markov (Gilbert) model of the loss process. Given the
sequence of received/lost packets of a stream (after the jitter buffer, so late packets
count as lost), :func:`loss_pattern` estimates both, and the observed loss-run statistics
behind them.

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

__all__ = ["LossPattern", "loss_pattern", "runs"]


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
    n = int(m.size)
    if n == 0:
        raise InputError("lost is empty: a loss pattern needs at least one packet")
    n_lost = int(m.sum())
    ppl = 100.0 * n_lost / n
    starts, lengths = runs(m)
    bursts = int(starts.size)
    mean_burst = float(lengths.mean()) if bursts else 0.0
    max_burst = int(lengths.max()) if bursts else 0
    gaps = starts[1:] - (starts[:-1] + lengths[:-1])
    mean_gap = float(gaps.mean()) if gaps.size else 0.0

    prev, nxt = m[:-1], m[1:]
    from_rx = int((~prev).sum())
    from_lost = int(prev.sum())
    p = float((~prev & nxt).sum()) / from_rx if from_rx else 0.0
    if n_lost == 0:
        q, burst_r = 1.0, 1.0
    elif n_lost == n:
        q, burst_r = 0.0, float("inf")
    else:
        q = float((prev & ~nxt).sum()) / from_lost if from_lost else 0.0
        if q == 0.0:  # the only loss run is still open at the end of the sequence
            q = 1.0 / mean_burst
        burst_r = 1.0 / (p + q)  # G.107 eq. (7-32)
    return LossPattern(
        packets=n, lost=n_lost, ppl=ppl, p=p, q=q, burst_r=burst_r, bursts=bursts,
        mean_burst=mean_burst, max_burst=max_burst, mean_gap=mean_gap,
    )
