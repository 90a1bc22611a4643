"""Receiver jitter-buffer simulation: which packets a playout buffer would play.

A receiver holds each RTP packet until its *playout time* and plays packets in RTP
timestamp order; a packet that arrives after its playout time is discarded as *late*,
which the listener hears exactly like a packet lost in the network. This module replays
the arrival times of one stream through a buffer and returns, for every received packet,
whether it was played, late or a duplicate; for every expected sequence number, whether
it was lost in the network; and the delay that the buffer added.

Three buffers are modelled:

``FixedBuffer(depth_ms)``
    The first packet to arrive is played ``depth_ms`` after its arrival; every other
    packet at that instant plus its RTP-timestamp distance to the first packet:
    ``p_j = a_first + depth + (ts_j - ts_first) / clock_rate``.

``AdaptiveBuffer(...)``
    Ramjee, Kurose, Towsley and Schulzrinne's adaptive playout (1994): an exponentially
    weighted estimate of the network delay ``d`` and of its variation ``v`` (their
    Algorithm 1, α = 0.998002), with their delay-spike mode (Algorithm 4) that follows a
    sudden delay increase packet by packet, and a playout delay ``d + β·v`` (β = 4) that
    is set only when a *talkspurt* starts and kept for the whole talkspurt, so that
    speech is never stretched; silence periods between talkspurts absorb the changes.
    See :class:`AdaptiveBuffer` for the exact rules.

``NoBuffer()``
    An unbounded buffer: every packet is played (once), nothing is late.

Times: ``arrival_ns`` is the capture timestamp (integer ns); the sender time of a packet
is its RTP timestamp over the clock rate. The "network delay" ``n = a - t`` that the
adaptive buffer tracks therefore contains an unknown constant offset (sender and
receiver clocks are unrelated); only its variation matters.

References
----------
.. [1] R. Ramjee, J. Kurose, D. Towsley, H. Schulzrinne, "Adaptive playout mechanisms
   for packetized audio applications in wide-area networks", Proc. IEEE INFOCOM '94,
   pp. 680-688, 1994 (Algorithm 1: α = 0.998002,
   playout delay d + 4v at talkspurt starts; Algorithm 4: delay-spike detection).
.. [2] S. B. Moon, J. Kurose, D. Towsley, "Packet audio playout delay adjustment:
   performance bounds and algorithms", Multimedia Systems 6:17-28, 1998 (restates
   Algorithms 1 and 4 of [1]).
.. [3] RFC 3550, "RTP: A Transport Protocol for Real-Time Applications", §5.1 (marker
   bit: first packet of a talkspurt), Appendix A.1 (extended sequence numbers).
.. [4] RFC 3551, §4.1 (audio: the marker bit after silence; timestamps keep running
   through silence, so a timestamp jump larger than the sequence step marks a
   talkspurt start when the marker was lost).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from qoe.errors import InputError

__all__ = [
    "FixedBuffer",
    "AdaptiveBuffer",
    "NoBuffer",
    "JitterBuffer",
    "PlayoutResult",
    "parse_jitter_buffer",
    "talkspurt_starts",
    "simulate",
]


@dataclass(frozen=True, slots=True)
class FixedBuffer:
    """A fixed playout delay: the first arrival plus ``depth_ms`` anchors the schedule.

    Attributes
    ----------
    depth_ms : float
        Buffering added to the first packet to arrive, in ms (>= 0).
    """

    depth_ms: float = 60.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.depth_ms) and self.depth_ms >= 0):
            raise InputError(f"FixedBuffer: depth_ms must be a finite number >= 0, given {self.depth_ms!r}")

    def __str__(self) -> str:
        return f"fixed:{self.depth_ms:g}"


@dataclass(frozen=True, slots=True)
class AdaptiveBuffer:
    """Ramjee et al. (1994) adaptive playout: Algorithm 1 with Algorithm 4's spike mode.

    For each packet ``i`` that arrives (duplicates ignored), with ``n_i = a_i - t_i``:

    * normal mode (Algorithm 1 of [1]):
      ``d_i = α·d_{i-1} + (1-α)·n_i`` and ``v_i = α·v_{i-1} + (1-α)·|d_i - n_i|``;
    * a spike starts when ``|n_i - n_{i-1}| > 2·|v| + spike_enter_ms``; in spike mode
      ``d_i = d_{i-1} + (n_i - n_{i-1})`` (the estimate follows the spike) and
      ``var = var/2 + |2·n_i - n_{i-1} - n_{i-2}| / 8``; the spike ends, without updating
      ``d`` and ``v`` for that packet, once ``var <= spike_exit_ms`` (Algorithm 4 of [1];
      its ``v`` update in spike mode is done here with the same α as in normal mode);
    * when the first packet of a talkspurt arrives (after its own update) the talkspurt's
      playout delay is fixed to ``D = d + β·v``; every packet ``j`` of that talkspurt is
      due at ``p_j = t_j + D``.

    Two guards that [1] leaves implicit and that softphones have:

    * ``D`` is at least ``n + min_delay_ms`` of the packet that opens the talkspurt, so
      the buffer always holds that packet a little (with ``v = 0`` at the start the
      algorithm would otherwise schedule it exactly at its arrival);
    * a talkspurt never starts playing before the previous talkspurt's speech ends (no
      overlap), i.e. silence can be shortened only down to zero.

    Initial state: ``d_0 = n_0``, ``v_0 = initial_variation_ms``, normal mode.

    Attributes
    ----------
    alpha : float
        EWMA weight of Algorithm 1, 0.998002 in [1].
    beta : float
        Safety factor on the variation, 4 in [1].
    spike : bool
        Use Algorithm 4's delay-spike mode.
    spike_enter_ms, spike_exit_ms : float
        Algorithm 4's thresholds, 800 and 63 in [1]'s timestamp unit, read here as 8 kHz
        sampling ticks (125 µs): 100 ms and 7.875 ms. This reading of the unit is ours.
    min_delay_ms : float
        Least buffering of the packet that opens a talkspurt (20 ms: one G.711 packet).
    initial_variation_ms : float
        Starting value of ``v``.
    """

    alpha: float = 0.998002  # Ramjee et al. 1994, Algorithm 1
    beta: float = 4.0  # Ramjee et al. 1994, playout delay d + 4 v
    spike: bool = True
    spike_enter_ms: float = 100.0  # Ramjee et al. 1994, Algorithm 4: 800 ticks of 125 µs
    spike_exit_ms: float = 7.875  # Ramjee et al. 1994, Algorithm 4: 63 ticks of 125 µs
    min_delay_ms: float = 20.0
    initial_variation_ms: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise InputError(f"AdaptiveBuffer: alpha must be in (0, 1), given {self.alpha!r}")
        for name in ("beta", "spike_enter_ms", "spike_exit_ms", "min_delay_ms", "initial_variation_ms"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise InputError(f"AdaptiveBuffer: {name} must be a finite number >= 0, given {value!r}")

    def __str__(self) -> str:
        return "adaptive"


@dataclass(frozen=True, slots=True)
class NoBuffer:
    """No deadline: every received packet is played once, in timestamp order."""

    def __str__(self) -> str:
        return "none"


JitterBuffer = Union[FixedBuffer, AdaptiveBuffer, NoBuffer]


def parse_jitter_buffer(spec: str | JitterBuffer | None) -> JitterBuffer:
    """Turn ``"fixed:60"``, ``"adaptive"`` or ``"none"`` into a buffer description.

    Parameters
    ----------
    spec : str, buffer or None
        ``"fixed:<ms>"`` (``"fixed"`` alone is 60 ms), ``"adaptive"``, ``"none"``; a
        buffer object is returned as is; None means ``NoBuffer()``.

    Returns
    -------
    FixedBuffer, AdaptiveBuffer or NoBuffer

    Examples
    --------
    >>> parse_jitter_buffer("fixed:40")
    FixedBuffer(depth_ms=40.0)
    """
    if spec is None:
        return NoBuffer()
    if isinstance(spec, (FixedBuffer, AdaptiveBuffer, NoBuffer)):
        return spec
    text = str(spec).strip().lower()
    if text == "none":
        return NoBuffer()
    if text == "adaptive":
        return AdaptiveBuffer()
    if text == "fixed":
        return FixedBuffer()
    if text.startswith("fixed:"):
        try:
            depth = float(text.split(":", 1)[1])
        except ValueError:
            depth = float("nan")
        if not (math.isfinite(depth) and depth >= 0):
            raise InputError(f"jitter buffer {spec!r}: the depth after 'fixed:' must be a number of ms >= 0")
        return FixedBuffer(depth)
    raise InputError(f"jitter buffer {spec!r} not understood: use 'fixed:<ms>', 'adaptive' or 'none'")


@dataclass(frozen=True, slots=True)
class PlayoutResult:
    """What a jitter buffer did with one stream.

    Per received packet (arrival order, as given): ``played``, ``late``, ``duplicate``,
    ``playout_ns`` and ``buffer_delay_ms``. Per expected sequence number (``seq_first``
    to the highest received): ``lost`` (never received), ``slot_late`` (received, but
    only after its playout time) and ``slot_played``.

    Attributes
    ----------
    jitter_buffer : str
        The buffer, as ``"fixed:60"``, ``"adaptive"`` or ``"none"`` (``buffer``, its old
        name, still reads it for one release, with a :class:`DeprecationWarning`).
    played, late, duplicate : numpy.ndarray of bool
        Per received packet. A duplicate (a sequence number already received) is never
        played nor counted late; a late packet is not played.
    playout_ns : numpy.ndarray of int64
        Per received packet, the instant it was due (receiver clock, ns).
    buffer_delay_ms : numpy.ndarray of float
        Per received packet, ``playout - arrival`` in ms: the time a played packet spent
        in the buffer; negative for late packets (how late they were).
    playout_delay_ms : numpy.ndarray of float
        Per received packet, ``playout - t - min(a - t)`` in ms: the delay from sending
        to playing above that of the fastest packet (network queueing + buffer). Add the
        minimum one-way network delay to get the true sender-to-playout delay.
    talkspurt : numpy.ndarray of int64
        Per received packet, the index of its talkspurt (0 for a fixed/no buffer).
    seq_first : int
        First expected extended sequence number.
    lost, slot_late, slot_played : numpy.ndarray of bool
        Per expected sequence number ``seq_first + k``.
    """

    jitter_buffer: str
    clock_rate: int
    played: np.ndarray
    late: np.ndarray
    duplicate: np.ndarray
    playout_ns: np.ndarray
    buffer_delay_ms: np.ndarray
    playout_delay_ms: np.ndarray
    talkspurt: np.ndarray
    seq_first: int
    lost: np.ndarray
    slot_late: np.ndarray
    slot_played: np.ndarray

    @property
    def buffer(self) -> str:
        """Deprecated: :attr:`jitter_buffer` (issue 21: one name per concept)."""
        warnings.warn("PlayoutResult.buffer is now PlayoutResult.jitter_buffer; the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return self.jitter_buffer

    @property
    def expected(self) -> int:
        """Expected packets: highest extended sequence number - first + 1 (RFC 3550 A.3)."""
        return int(self.lost.shape[0])

    @property
    def received(self) -> int:
        """Distinct sequence numbers received."""
        return int(self.expected - self.lost.sum())

    @property
    def network_lost(self) -> int:
        """Expected packets that never arrived."""
        return int(self.lost.sum())

    @property
    def late_lost(self) -> int:
        """Packets that arrived after their playout time (discarded by the buffer)."""
        return int(self.slot_late.sum())

    @property
    def effective_lost(self) -> int:
        """Packets the listener misses: network loss + late loss."""
        return self.network_lost + self.late_lost

    @property
    def effective_loss(self) -> float:
        """Effective loss as a fraction of the expected packets."""
        return self.effective_lost / self.expected if self.expected else 0.0

    def to_dict(self) -> dict[str, Any]:
        """Summary figures (no per-packet arrays) as a flat dict of Python numbers."""
        played = self.played
        bd = self.buffer_delay_ms[played]
        pd = self.playout_delay_ms[played]
        return {
            "jitter_buffer": self.jitter_buffer,
            "expected": self.expected,
            "received": self.received,
            "duplicates": int(self.duplicate.sum()),
            "network_lost": self.network_lost,
            "late_lost": self.late_lost,
            "effective_lost": self.effective_lost,
            "network_loss": self.network_lost / self.expected if self.expected else 0.0,
            "late_loss": self.late_lost / self.expected if self.expected else 0.0,
            "effective_loss": self.effective_loss,
            "talkspurts": int(self.talkspurt.max()) + 1 if self.talkspurt.size else 0,
            **_stats("buffer_delay_ms", bd),
            **_stats("playout_delay_ms", pd),
        }


def _stats(name: str, x: np.ndarray) -> dict[str, float]:
    stem = name[: -len("_ms")]
    if x.size == 0:
        nan = float("nan")
        return {f"{stem}_mean_ms": nan, f"{stem}_p50_ms": nan, f"{stem}_p95_ms": nan, f"{stem}_max_ms": nan}
    return {
        f"{stem}_mean_ms": float(np.mean(x)),
        f"{stem}_p50_ms": float(np.percentile(x, 50)),
        f"{stem}_p95_ms": float(np.percentile(x, 95)),
        f"{stem}_max_ms": float(np.max(x)),
    }


def _check_arrays(arrival_ns, seq_ext, ts_ext, clock_rate):
    arrival_ns = np.asarray(arrival_ns)
    seq_ext = np.asarray(seq_ext)
    ts_ext = np.asarray(ts_ext)
    n = arrival_ns.shape[0] if arrival_ns.ndim == 1 else -1
    if n < 1 or seq_ext.shape != (n,) or ts_ext.shape != (n,):
        raise InputError(
            "jitter buffer: arrival_ns, seq_ext and ts_ext must be 1-D arrays of the same, non-zero "
            f"length; given shapes {arrival_ns.shape}, {seq_ext.shape}, {ts_ext.shape}"
        )
    if not (isinstance(clock_rate, (int, np.integer)) and clock_rate > 0):
        raise InputError(f"jitter buffer: clock_rate must be a positive integer (Hz), given {clock_rate!r}")
    return arrival_ns.astype(np.int64), seq_ext.astype(np.int64), ts_ext.astype(np.int64)


def _first_occurrence(seq_ext: np.ndarray) -> np.ndarray:
    """True for the first arrival of each sequence number, False for its duplicates."""
    _, first_idx = np.unique(seq_ext, return_index=True)
    first = np.zeros(seq_ext.shape[0], dtype=bool)
    first[first_idx] = True
    return first


def talkspurt_starts(
    seq_ext: np.ndarray,
    ts_ext: np.ndarray,
    *,
    marker: np.ndarray | None = None,
    silent: np.ndarray | None = None,
) -> np.ndarray:
    """Which received packets open a talkspurt.

    A packet opens a talkspurt when it is the first received in sequence order, or has
    the marker bit (RFC 3550 §5.1), or its timestamp advanced more than its sequence
    number would explain (the sender suppressed silence, RFC 3551 §4.1), or (when
    ``silent`` is given) it carries sound and the previous packet received in sequence
    order carried silence.

    Parameters
    ----------
    seq_ext, ts_ext : numpy.ndarray
        Extended sequence numbers and timestamps, per received packet.
    marker : numpy.ndarray of bool, optional
        Marker bits.
    silent : numpy.ndarray of bool, optional
        Packets whose payload is silence (e.g. decoded level below a threshold).

    Returns
    -------
    numpy.ndarray of bool
        Per packet, in the order given; duplicates never open a talkspurt.
    """
    seq_ext = np.asarray(seq_ext, dtype=np.int64)
    ts_ext = np.asarray(ts_ext, dtype=np.int64)
    n = seq_ext.shape[0]
    first = _first_occurrence(seq_ext)
    idx = np.flatnonzero(first)
    order = idx[np.argsort(seq_ext[idx], kind="stable")]
    s = seq_ext[order]
    t = ts_ext[order]
    start_sorted = np.zeros(order.shape[0], dtype=bool)
    if order.size:
        start_sorted[0] = True
    if order.size > 1:
        dseq = np.diff(s)
        dts = np.diff(t)
        steps = dts[dseq == 1]
        steps = steps[steps > 0]
        if steps.size:
            step = int(np.median(steps))
            start_sorted[1:] |= dts > dseq * step
    if marker is not None:
        start_sorted |= np.asarray(marker, dtype=bool)[order]
    if silent is not None:
        sil = np.asarray(silent, dtype=bool)[order]
        start_sorted[1:] |= ~sil[1:] & sil[:-1]
    out = np.zeros(n, dtype=bool)
    out[order] = start_sorted
    return out


class _Unset:
    """The default of a deprecated keyword: tells "not given" from any value (None included)."""

    def __repr__(self) -> str:
        return "<not given>"


_UNSET: Any = _Unset()


def _renamed_buffer(func: str, jitter_buffer: Any, buffer: Any, *, default: Any) -> Any:
    """``jitter_buffer``, or the deprecated ``buffer`` keyword of ``func`` with a warning (issue 21).

    ``default`` when neither is given; both given is ambiguous, an :class:`~qoe.errors.InputError`.
    """
    if buffer is _UNSET:
        return default if jitter_buffer is _UNSET else jitter_buffer
    if jitter_buffer is not _UNSET:
        raise InputError(f"{func}: ambiguous jitter buffer: both jitter_buffer={jitter_buffer!r} and its deprecated "
                         f"spelling buffer={buffer!r} given")
    warnings.warn(f"{func}(buffer=) is now {func}(jitter_buffer=); the old name goes in the next release",
                  DeprecationWarning, stacklevel=3)
    return buffer


def simulate(
    arrival_ns: np.ndarray,
    seq_ext: np.ndarray,
    ts_ext: np.ndarray,
    *,
    clock_rate: int,
    jitter_buffer: JitterBuffer | str | None = _UNSET,
    marker: np.ndarray | None = None,
    silent: np.ndarray | None = None,
    buffer: Any = _UNSET,
) -> PlayoutResult:
    """Replay one stream's arrivals through a jitter buffer.

    Parameters
    ----------
    arrival_ns : numpy.ndarray of int64
        Arrival time of each received packet (ns), in arrival order.
    seq_ext : numpy.ndarray of int64
        Extended sequence numbers (RFC 3550 A.1), per packet.
    ts_ext : numpy.ndarray of int64
        Unwrapped RTP timestamps, per packet.
    clock_rate : int, keyword-only
        RTP clock rate (Hz).
    jitter_buffer : FixedBuffer, AdaptiveBuffer, NoBuffer or str, keyword-only
        The buffer, or its text form (:func:`parse_jitter_buffer`). Default: adaptive.
    marker, silent : numpy.ndarray of bool, optional, keyword-only
        Marker bits and silent-payload flags, used by the adaptive buffer to find
        talkspurts (:func:`talkspurt_starts`).
    buffer : deprecated
        The old name of ``jitter_buffer`` (issue 21: one name per concept); works for one
        release with a :class:`DeprecationWarning`; given with ``jitter_buffer``, an
        :class:`~qoe.errors.InputError`.

    Returns
    -------
    PlayoutResult

    Raises
    ------
    InputError
        Arrays of different lengths, an empty stream, a bad clock rate or buffer, or both
        ``jitter_buffer`` and ``buffer`` given.

    Examples
    --------
    Three 20 ms packets (160 ticks at 8 kHz) through a 30 ms fixed buffer: they are due
    at 30, 50 and 70 ms; the third arrives exactly at 70 ms and is still played:

    >>> r = simulate([0, 25_000_000, 70_000_000], [1, 2, 3], [0, 160, 320],
    ...              clock_rate=8000, jitter_buffer="fixed:30")
    >>> r.played.tolist(), r.late.tolist()
    ([True, True, True], [False, False, False])
    >>> r.buffer_delay_ms.tolist()
    [30.0, 25.0, 0.0]

    References
    ----------
    Ramjee et al., INFOCOM 1994 (adaptive buffer); see the module docstring.
    """
    jitter_buffer = _renamed_buffer("simulate", jitter_buffer, buffer, default="adaptive")
    arrival_ns, seq_ext, ts_ext = _check_arrays(arrival_ns, seq_ext, ts_ext, clock_rate)
    jb = parse_jitter_buffer(jitter_buffer)
    n = arrival_ns.shape[0]
    first = _first_occurrence(seq_ext)
    # Work in float ms relative to the first arrival / first timestamp: exact enough
    # (well under a ns for hours of audio) and free of int64 overflow in products.
    a0 = int(arrival_ns[0])
    a = (arrival_ns - a0) / 1e6
    t = (ts_ext - int(ts_ext[0])) * (1000.0 / clock_rate)
    transit = a - t  # n_i of [1], up to a constant

    talkspurt = np.zeros(n, dtype=np.int64)
    if isinstance(jb, NoBuffer):
        p = a.copy()
    elif isinstance(jb, FixedBuffer):
        p = t + jb.depth_ms  # t[0] = 0 and a[0] = 0: anchored on the first arrival
    else:
        starts = talkspurt_starts(seq_ext, ts_ext, marker=marker, silent=silent)
        talkspurt = _talkspurt_ids(seq_ext, starts, first)
        p = _adaptive(jb, a, t, transit, talkspurt, first, silent)

    late = first & (a > p)
    played = first & ~late
    duplicate = ~first
    # Duplicates are due when their original was.
    if duplicate.any():
        order = np.argsort(seq_ext, kind="stable")  # first occurrence comes first
        s_sorted = seq_ext[order]
        group_start = np.searchsorted(s_sorted, s_sorted, side="left")
        p[order] = p[order[group_start]]

    seq_first = int(seq_ext.min())
    span = int(seq_ext.max()) - seq_first + 1
    lost = np.ones(span, dtype=bool)
    lost[seq_ext[first] - seq_first] = False
    slot_late = np.zeros(span, dtype=bool)
    slot_late[seq_ext[late] - seq_first] = True
    slot_played = np.zeros(span, dtype=bool)
    slot_played[seq_ext[played] - seq_first] = True

    buffer_delay = p - a
    playout_delay = p - t - transit[first].min()
    return PlayoutResult(
        jitter_buffer=str(jb),
        clock_rate=int(clock_rate),
        played=played,
        late=late,
        duplicate=duplicate,
        playout_ns=np.rint(p * 1e6).astype(np.int64) + a0,
        buffer_delay_ms=buffer_delay,
        playout_delay_ms=playout_delay,
        talkspurt=talkspurt,
        seq_first=seq_first,
        lost=lost,
        slot_late=slot_late,
        slot_played=slot_played,
    )


def _talkspurt_ids(seq_ext: np.ndarray, starts: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Talkspurt index of each packet: count of starts up to it in sequence order."""
    idx = np.flatnonzero(first)
    order = idx[np.argsort(seq_ext[idx], kind="stable")]
    ids_sorted = np.cumsum(starts[order]) - 1
    uniq = seq_ext[order]
    out = ids_sorted[np.searchsorted(uniq, seq_ext)]
    return out.astype(np.int64)


def _adaptive(
    jb: AdaptiveBuffer,
    a: np.ndarray,
    t: np.ndarray,
    transit: np.ndarray,
    talkspurt: np.ndarray,
    first: np.ndarray,
    silent: np.ndarray | None,
) -> np.ndarray:
    """Playout times of Ramjee et al. (1994) Algorithms 1 + 4, packets in arrival order."""
    n = a.shape[0]
    alpha = jb.alpha
    gain = 1.0 - alpha  # the same double at every packet as (1.0 - alpha) computed there
    spike, enter_ms, exit_ms = jb.spike, jb.spike_enter_ms, jb.spike_exit_ms
    beta, min_delay_ms = jb.beta, jb.min_delay_ms
    speech = np.ones(n, dtype=bool) if silent is None else ~np.asarray(silent, dtype=bool)
    p = [math.nan] * n  # NaN for a repeat: filled from the original by the caller
    delay_of: dict[int, float] = {}  # talkspurt -> playout delay D
    # End of the speech scheduled so far, per talkspurt (for the no-overlap guard).
    speech_end: dict[int, float] = {}
    frame_ms = _frame_ms(t)
    d = v = None
    spike_mode = False
    var = 0.0
    n1 = n2 = 0.0
    # the loop reads and writes Python numbers (the same doubles: the arithmetic is
    # unchanged), several times faster than indexing NumPy arrays one element at a time
    for i, (is_first, ni, k, ti, is_speech) in enumerate(
            zip(first.tolist(), transit.tolist(), talkspurt.tolist(), t.tolist(), speech.tolist())):
        if not is_first:
            continue
        ni = float(ni)
        if d is None:
            d, v = ni, jb.initial_variation_ms
            n1 = n2 = ni
        else:
            update = True
            if spike:
                if not spike_mode:
                    if abs(ni - n1) > 2.0 * abs(v) + enter_ms:  # Algorithm 4: spike starts
                        var = 0.0
                        spike_mode = True
                else:
                    var = var / 2.0 + abs(2.0 * ni - n1 - n2) / 8.0  # Algorithm 4
                    if var <= exit_ms:  # Algorithm 4: spike over, no update
                        spike_mode = False
                        update = False
            if update:
                if spike_mode:
                    d = d + (ni - n1)  # Algorithm 4: follow the spike
                else:
                    d = alpha * d + gain * ni  # Algorithm 1
                v = alpha * v + gain * abs(d - ni)  # Algorithm 1
            n2, n1 = n1, ni
        k = int(k)
        ti = float(ti)
        if k not in delay_of:
            D = d + beta * v
            D = max(D, ni + min_delay_ms)
            # No overlap with earlier talkspurts' speech.
            prev_end = max((e for kk, e in speech_end.items() if kk < k), default=-math.inf)
            D = max(D, prev_end - ti)
            delay_of[k] = D
        pi = ti + delay_of[k]
        p[i] = pi
        if is_speech:
            end = pi + frame_ms
            if end > speech_end.get(k, -math.inf):
                speech_end[k] = end
    return np.array(p, dtype=np.float64)


def _frame_ms(t: np.ndarray) -> float:
    """Typical packet duration (ms): the median positive step between sorted timestamps."""
    ts = np.unique(t)
    steps = np.diff(ts)
    steps = steps[steps > 0]
    return float(np.median(steps)) if steps.size else 0.0
