"""One-way delay of an RTP stream from a sender-side and a receiver-side capture.

The same packet seen at both ends is recognised by its SSRC and extended sequence
number (RFC 3550 §5.1, A.1); its one-way delay is the receiver's capture time minus the
sender's. A packet sent and never received is *network loss*; one received after the
receiver's jitter-buffer deadline is *late loss* (when a buffer is given).

Clocks. Both timestamps must come from the same clock for the delays to be true one-way
delays (e.g. two tcpdumps on one host, or hosts synchronised by PTP). When they are not
-- the user says so, or a delay comes out negative, or the smallest delay is larger than
any network could produce (``max_plausible_ms``) -- the offset between the clocks is
unknown: the delays are then reported *relative to the smallest one* (the queueing and
jitter part, which is what a buffer study needs), with a :class:`qoe.errors.QoEWarning`
and ``clocks="different"`` in the result. A small offset between two clocks cannot be
told from a network delay and is not detected; neither is a clock drift, which over a
capture of minutes looks like a slowly filling queue.

References
----------
.. [1] RFC 3550, "RTP: A Transport Protocol for Real-Time Applications", §5.1 (SSRC,
   sequence number), Appendix A.1 (extended sequence numbers).
.. [2] RFC 7679, "A One-Way Delay Metric for IP Performance Metrics (IPPM)", §3 (a
   packet's one-way delay: wire time at the destination minus wire time at the source;
   undefined, "infinite", for a lost packet), §3.7.1 (clock synchronisation errors).
.. [3] ITU-T G.114 (05/2003), "One-way transmission time" (400 ms: the limit for
   general network planning).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from qoe.errors import InputError, QoEWarning
from qoe.rtp.jitterbuffer import _UNSET, JitterBuffer, PlayoutResult, _renamed_buffer, simulate

if TYPE_CHECKING:  # pragma: no cover
    from qoe.rtp._results import RtpStream

__all__ = ["OneWayDelay", "one_way_delay", "stream_delay", "match_streams", "delays_between", "marker_playout"]

Clocks = Literal["auto", "same", "different"]
# How a receiver plays a stream out: (stream, jitter_buffer) -> PlayoutResult.
PlayoutFn = Callable[["RtpStream", "JitterBuffer | str | None"], PlayoutResult]

# RFC 3550 A.1: sequence numbers wrap at 2**16.
_SEQ_MOD = 1 << 16
# A smallest one-way delay above 10 s is taken as a clock offset, not a network delay:
# G.114 (05/2003) already puts the planning limit at 400 ms; the worst bufferbloat measured in
# the seed paper (Pujol et al. 2014, text on Fig. 4) is about 3 s. A keyword option.
_MAX_PLAUSIBLE_MS = 10_000.0


@dataclass(frozen=True, slots=True)
class OneWayDelay:
    """One-way delays of one stream, per packet the sender sent.

    Attributes
    ----------
    ssrc : int or None
        The stream's SSRC, when known.
    seq_ext : numpy.ndarray of int64
        Extended sequence numbers of the packets sent (sender numbering), inside the
        overlap of the two captures, in sequence order.
    sent_ns : numpy.ndarray of int64
        Sender capture time of each packet.
    received_ns : numpy.ndarray of int64
        Receiver capture time (first copy), -1 for packets never received.
    delay_ms : numpy.ndarray of float
        One-way delay (NaN for packets never received); relative to the smallest delay
        when ``relative`` is True.
    received : numpy.ndarray of bool
        The packet reached the receiver capture.
    late : numpy.ndarray of bool
        Received, but after the jitter buffer's deadline (all False without one).
    clocks : {"same", "different"}
        Whether the two captures were taken as sharing one clock.
    relative : bool
        Delays are relative to the smallest one (``clocks == "different"``).
    offset_ms : float
        What was subtracted to make the delays relative (the smallest raw delay); 0 when
        the delays are absolute.
    outside : int
        Sender packets outside the overlap of the two captures (not counted as lost).
    unmatched_received : int
        Receiver packets with no counterpart in the sender capture.
    jitter_buffer : str or None
        The jitter buffer used for late loss, e.g. ``"fixed:60"`` (``buffer``, its old
        name, still reads it for one release, with a :class:`DeprecationWarning`).
    stream : str or None
        ``"src:port -> dst:port"`` as seen at the sender, when known.
    reversed : bool
        The stream flowed from the second capture's side to the first's (see
        :func:`delays_between`): the roles of the two captures were swapped for it.
    """

    ssrc: int | None
    seq_ext: np.ndarray
    sent_ns: np.ndarray
    received_ns: np.ndarray
    delay_ms: np.ndarray
    received: np.ndarray
    late: np.ndarray
    clocks: str
    relative: bool
    offset_ms: float
    outside: int
    unmatched_received: int
    jitter_buffer: str | None = None
    stream: str | None = None
    reversed: bool = False

    @property
    def buffer(self) -> str | None:
        """Deprecated: :attr:`jitter_buffer` (issue 21: one name per concept)."""
        warnings.warn("OneWayDelay.buffer is now OneWayDelay.jitter_buffer; the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return self.jitter_buffer

    @property
    def sent(self) -> int:
        """Packets sent inside the overlap of the two captures."""
        return int(self.seq_ext.shape[0])

    @property
    def matched(self) -> int:
        """Packets seen at both ends."""
        return int(self.received.sum())

    @property
    def network_lost(self) -> int:
        """Packets sent and never received."""
        return self.sent - self.matched

    @property
    def late_lost(self) -> int:
        """Packets received after the jitter buffer's deadline."""
        return int(self.late.sum())

    def to_dict(self) -> dict[str, Any]:
        """Summary (no per-packet arrays): counts, loss and min/mean/p50/p95/max delay."""
        d = self.delay_ms[self.received]
        nan = float("nan")
        sent = self.sent
        return {
            "ssrc": None if self.ssrc is None else f"0x{self.ssrc:08x}",
            "stream": self.stream,
            "reversed": self.reversed,
            "sent": sent,
            "matched": self.matched,
            "network_lost": self.network_lost,
            "network_loss": self.network_lost / sent if sent else 0.0,
            "late_lost": self.late_lost,
            "late_loss": self.late_lost / sent if sent else 0.0,
            "jitter_buffer": self.jitter_buffer,
            "min_ms": float(d.min()) if d.size else nan,
            "mean_ms": float(d.mean()) if d.size else nan,
            "p50_ms": float(np.percentile(d, 50)) if d.size else nan,
            "p95_ms": float(np.percentile(d, 95)) if d.size else nan,
            "max_ms": float(d.max()) if d.size else nan,
            "clocks": self.clocks,
            "relative": self.relative,
            "offset_ms": self.offset_ms,
            "outside": self.outside,
            "unmatched_received": self.unmatched_received,
        }


def _first_by_seq(seq_ext: np.ndarray, t_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique sequence numbers (sorted) and the time of the first copy of each."""
    order = np.lexsort((t_ns, seq_ext))
    s = seq_ext[order]
    keep = np.ones(s.shape[0], dtype=bool)
    keep[1:] = s[1:] != s[:-1]
    return s[keep], t_ns[order][keep]


def one_way_delay(
    sent_seq_ext: np.ndarray,
    sent_ns: np.ndarray,
    received_seq_ext: np.ndarray,
    received_ns: np.ndarray,
    *,
    clocks: Clocks = "auto",
    playout: PlayoutResult | None = None,
    ssrc: int | None = None,
    max_plausible_ms: float = _MAX_PLAUSIBLE_MS,
) -> OneWayDelay:
    """Match one stream's packets across a sender and a receiver capture.

    Parameters
    ----------
    sent_seq_ext, sent_ns : numpy.ndarray
        Extended sequence numbers and capture times (ns) at the sender.
    received_seq_ext, received_ns : numpy.ndarray
        The same at the receiver. The two numberings may differ by whole cycles of 2**16
        (each capture extends from its own first packet); the shift that matches most
        packets is used.
    clocks : {"auto", "same", "different"}, keyword-only
        ``"same"``: delays are absolute, whatever they are; ``"different"``: relative to
        the smallest; ``"auto"``: relative, with a warning, when a delay is negative or
        the smallest exceeds ``max_plausible_ms``.
    playout : PlayoutResult, optional, keyword-only
        The receiver's jitter buffer run over ``received_*`` (:func:`qoe.rtp.jitterbuffer.simulate`):
        its late packets are reported as late loss.
    ssrc : int, optional, keyword-only
        Carried into the result.
    max_plausible_ms : float, keyword-only
        Largest smallest-delay taken as a network delay (default 10 s).

    Returns
    -------
    OneWayDelay

    Raises
    ------
    InputError
        Arrays of different lengths, or no packet in common.

    Examples
    --------
    Packets 1..4 sent every 20 ms; 3 is lost, 4 is delayed by 30 ms:

    >>> r = one_way_delay([1, 2, 3, 4], [0, 20_000_000, 40_000_000, 60_000_000],
    ...                   [1, 2, 4], [5_000_000, 25_000_000, 95_000_000])
    >>> r.delay_ms.tolist(), r.network_lost
    ([5.0, 5.0, nan, 35.0], 1)
    """
    s_seq = np.asarray(sent_seq_ext, dtype=np.int64)
    s_ns = np.asarray(sent_ns, dtype=np.int64)
    r_seq = np.asarray(received_seq_ext, dtype=np.int64)
    r_ns = np.asarray(received_ns, dtype=np.int64)
    if s_seq.shape != s_ns.shape or r_seq.shape != r_ns.shape or s_seq.ndim != 1 or r_seq.ndim != 1:
        raise InputError(
            "one_way_delay: sequence numbers and times must be 1-D arrays of equal length; given "
            f"sender {s_seq.shape}/{s_ns.shape}, receiver {r_seq.shape}/{r_ns.shape}"
        )
    if clocks not in ("auto", "same", "different"):
        raise InputError(f"clocks must be 'auto', 'same' or 'different', given clocks={clocks!r}")
    who = "" if ssrc is None else f"stream ssrc=0x{ssrc:08x}: "
    s_u, s_t = _first_by_seq(s_seq, s_ns)
    r_u, r_t = _first_by_seq(r_seq, r_ns)

    # Each capture extends sequence numbers from its own first packet: align the cycles.
    best_shift, best_n = 0, -1
    for shift in (0, -_SEQ_MOD, _SEQ_MOD):
        k = np.intersect1d(s_u, r_u + shift, assume_unique=True).size
        if k > best_n:
            best_shift, best_n = shift, k
    if best_n <= 0:
        raise InputError(
            f"{who}the sender and receiver captures have no packet in common "
            "(same SSRC, no common sequence number): are they captures of the same stream?"
        )
    r_u = r_u + best_shift

    pos = np.searchsorted(r_u, s_u)
    pos_c = np.minimum(pos, r_u.shape[0] - 1)
    got = r_u[pos_c] == s_u
    matched_seq = s_u[got]
    lo, hi = int(matched_seq.min()), int(matched_seq.max())
    inside = (s_u >= lo) & (s_u <= hi)
    outside = int((~inside).sum())
    s_u, s_t, got, pos_c = s_u[inside], s_t[inside], got[inside], pos_c[inside]

    recv_ns = np.where(got, r_t[pos_c], -1)
    delay = np.where(got, (recv_ns - s_t) / 1e6, np.nan)
    d_ok = delay[got]
    dmin = float(d_ok.min())
    relative = False
    used = "same"
    if clocks == "different":
        relative, used = True, "different"
    elif clocks == "auto" and (dmin < 0 or dmin > max_plausible_ms):
        relative, used = True, "different"
        why = "negative" if dmin < 0 else f"over {max_plausible_ms:g} ms"
        warnings.warn(
            f"{who}the smallest one-way delay is {why} ({dmin:.3f} ms): the sender and receiver "
            "captures do not share a clock; delays are reported relative to the smallest one",
            QoEWarning,
            stacklevel=2,
        )
    offset = dmin if relative else 0.0
    if relative:
        delay = delay - dmin

    late = np.zeros(s_u.shape[0], dtype=bool)
    buffer_name = None
    if playout is not None:
        buffer_name = playout.jitter_buffer
        first = playout.seq_first + best_shift
        idx = s_u - first
        ok = got & (idx >= 0) & (idx < playout.slot_late.shape[0])
        late[ok] = playout.slot_late[idx[ok]]

    unmatched = int(r_u.shape[0] - got.sum())
    return OneWayDelay(
        ssrc=ssrc,
        seq_ext=s_u,
        sent_ns=s_t,
        received_ns=recv_ns.astype(np.int64),
        delay_ms=delay,
        received=got,
        late=late,
        clocks=used,
        relative=relative,
        offset_ms=offset,
        outside=outside,
        unmatched_received=unmatched,
        jitter_buffer=buffer_name,
    )


def match_streams(
    sender: list[RtpStream], receiver: list[RtpStream]
) -> list[tuple[RtpStream, RtpStream]]:
    """Pair the streams of two captures by SSRC (addresses may differ, e.g. behind NAT).

    When one SSRC appears in several streams of a capture, the one with the most packets
    is used. Streams seen in only one capture are left out.
    """

    def by_ssrc(streams: list[RtpStream]) -> dict[int, RtpStream]:
        out: dict[int, RtpStream] = {}
        for s in streams:
            if s.packets is None:
                continue
            cur = out.get(s.ssrc)
            if cur is None or len(s.packets) > len(cur.packets):  # type: ignore[arg-type]
                out[s.ssrc] = s
        return out

    snd, rcv = by_ssrc(sender), by_ssrc(receiver)
    return [(snd[k], rcv[k]) for k in sorted(snd) if k in rcv]


def marker_playout(stream: RtpStream, jitter_buffer: JitterBuffer | str | None = _UNSET, *,
                   buffer: Any = _UNSET) -> PlayoutResult:
    """Play a stream out through ``jitter_buffer``, talkspurts from marker bits and timestamps.

    The codec-blind receiver of :func:`stream_delay`: :func:`qoe.rtp.jitterbuffer.simulate`
    over the stream's packet table, without looking at the payloads. ``buffer=``, the old
    name of ``jitter_buffer``, works for one release with a :class:`DeprecationWarning`.
    """
    jitter_buffer = _renamed_buffer("marker_playout", jitter_buffer, buffer, default=_UNSET)
    if jitter_buffer is _UNSET:
        raise InputError("marker_playout needs jitter_buffer (e.g. 'adaptive', 'fixed:60', 'none')")
    p = stream.packets
    if p is None or len(p) == 0:
        raise InputError(f"stream {stream.key}: no packet table (scan the capture keeping packets)")
    if not stream.clock_rate:
        raise InputError(f"stream {stream.key}: unknown RTP clock rate (payload type {stream.payload_type})")
    return simulate(p.arrival_ns, p.seq_ext, p.ts_ext, clock_rate=int(stream.clock_rate), jitter_buffer=jitter_buffer,
                    marker=p.marker)


def stream_delay(
    sent: RtpStream,
    received: RtpStream,
    *,
    clocks: Clocks = "auto",
    jitter_buffer: JitterBuffer | str | None = _UNSET,
    playout: PlayoutFn | None = None,
    max_plausible_ms: float = _MAX_PLAUSIBLE_MS,
    buffer: Any = _UNSET,
) -> OneWayDelay:
    """:func:`one_way_delay` for two :class:`~qoe.rtp.RtpStream` of the same SSRC.

    Parameters
    ----------
    sent, received : RtpStream
        The stream as captured at the sender and at the receiver.
    clocks : {"auto", "same", "different"}, keyword-only
        See :func:`one_way_delay`.
    jitter_buffer : JitterBuffer or str, optional, keyword-only
        A receiver jitter buffer (e.g. ``"adaptive"``, ``"fixed:60"``) whose late
        packets are reported as late loss. Default: none (no late loss).
    playout : callable, optional, keyword-only
        ``playout(received, jitter_buffer) -> PlayoutResult``: how the receiver plays the
        stream out (a media layer passes one that also finds talkspurts in the decoded
        audio, e.g. :func:`qoe.voice.playout.playout_stream`). Default:
        :func:`marker_playout`, talkspurts from marker bits and timestamp jumps only.
    max_plausible_ms : float, keyword-only
        See :func:`one_way_delay`.
    buffer : deprecated
        The old name of ``jitter_buffer`` (issue 21); works for one release with a
        :class:`DeprecationWarning`; given with ``jitter_buffer``, an InputError.
    """
    jitter_buffer = _renamed_buffer("stream_delay", jitter_buffer, buffer, default=None)
    if sent.packets is None or received.packets is None:
        raise InputError(f"stream ssrc=0x{sent.ssrc:08x}: the packet tables were not kept")
    if sent.ssrc != received.ssrc:
        raise InputError(
            f"stream_delay: SSRCs differ (0x{sent.ssrc:08x} sent, 0x{received.ssrc:08x} received)"
        )
    played = None
    if jitter_buffer is not None:
        played = (playout or marker_playout)(received, jitter_buffer)
    p, q = sent.packets, received.packets
    result = one_way_delay(
        p.seq_ext,
        p.arrival_ns,
        q.seq_ext,
        q.arrival_ns,
        clocks=clocks,
        playout=played,
        ssrc=sent.ssrc,
        max_plausible_ms=max_plausible_ms,
    )
    k = sent.key
    return replace(result, stream=f"{k.src}:{k.sport} -> {k.dst}:{k.dport}")


def _raw_median_ms(sent: RtpStream, received: RtpStream) -> float:
    """Median of (second capture - first capture) times over common packets, in ms."""
    r = one_way_delay(sent.packets.seq_ext, sent.packets.arrival_ns,  # type: ignore[union-attr]
                      received.packets.seq_ext, received.packets.arrival_ns,  # type: ignore[union-attr]
                      clocks="same")
    return float(np.median(r.delay_ms[r.received]))


def delays_between(
    first: list[RtpStream],
    second: list[RtpStream],
    *,
    clocks: Clocks = "auto",
    jitter_buffer: JitterBuffer | str | None = _UNSET,
    playout: PlayoutFn | None = None,
    orient: bool = True,
    buffer: Any = _UNSET,
) -> list[OneWayDelay]:
    """One-way delay of every stream present in both captures (matched by SSRC).

    A call has a stream each way, and each end's capture holds both: the first capture
    is the sender of one and the receiver of the other. With ``orient`` (and clocks not
    declared different), a stream whose packets reach the first capture *after* the
    second is taken to flow from the second capture's side: the roles are swapped for
    it and the result says ``reversed=True``. This needs the two clocks to agree better
    than the network delay; with ``clocks="different"`` no stream is reversed.

    Parameters
    ----------
    first, second : list of RtpStream
        The streams of the sender-side and the receiver-side capture.
    clocks, jitter_buffer, playout
        See :func:`stream_delay`.
    orient : bool, keyword-only
        Detect streams flowing from the second capture's side (default True).
    buffer : deprecated
        The old name of ``jitter_buffer`` (issue 21); works for one release with a
        :class:`DeprecationWarning`; given with ``jitter_buffer``, an InputError.
    """
    jitter_buffer = _renamed_buffer("delays_between", jitter_buffer, buffer, default=None)
    out = []
    for a, b in match_streams(first, second):
        if orient and clocks != "different" and _raw_median_ms(a, b) < 0:
            out.append(replace(stream_delay(b, a, clocks=clocks, jitter_buffer=jitter_buffer, playout=playout), reversed=True))
        else:
            out.append(stream_delay(a, b, clocks=clocks, jitter_buffer=jitter_buffer, playout=playout))
    return out
