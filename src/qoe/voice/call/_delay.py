"""The call scorer's first step: each stream played out, and its mouth-to-ear delay per packet.

See :mod:`qoe.voice.call` ("Mouth-to-ear delay") for what is computed and why.

References
----------
.. [1] ITU-T G.114 (05/2003), Annex A.2 (packetisation delay), A.3 (jitter-buffer delay).
.. [2] RFC 3550, §6.4.1 (round-trip time from RTCP LSR/DLSR), Appendix A.1 (extended
   sequence numbers).
.. [3] ITU-T G.107 (06/2015), clause 7.4 (Id from Ta).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from qoe.errors import InputError
from qoe.rtp.delay import OneWayDelay
from qoe.rtp.jitterbuffer import JitterBuffer, PlayoutResult
from qoe.voice import emodel
from qoe.voice.call._options import DelayBasis
from qoe.voice.call._results import DelayTerms
from qoe.voice.playout import playout_stream

if TYPE_CHECKING:  # pragma: no cover
    from qoe.rtp import RtpStream

__all__ = ["Prep", "prepare", "rtt_ms", "set_ta", "delay_terms", "mean"]


@dataclass
class Prep:
    """What is computed per stream before the directions are combined."""

    stream: RtpStream
    playout: PlayoutResult
    ptime_ms: float
    net_ms: np.ndarray  # per received packet
    net_source: str
    m2e_ms: np.ndarray  # per received packet; NaN unless played
    arrival_ns: np.ndarray
    capture: str | None
    notes: list[str]
    ta_ms: np.ndarray | None = None


def mean(x: np.ndarray) -> float:
    """Mean of the finite values of ``x`` (NaN when there are none)."""
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else float("nan")


def _ptime_ms(stream: RtpStream) -> tuple[float, str]:
    """One packet's duration: SDP ``a=ptime``, else the typical timestamp step."""
    if stream.ptime_ms:
        return float(stream.ptime_ms), "SDP a=ptime"
    p = stream.packets
    order = np.argsort(p.seq_ext, kind="stable")
    ds = np.diff(p.seq_ext[order])
    dt = np.diff(p.ts_ext[order])
    steps = dt[(ds == 1) & (dt > 0)]
    if steps.size == 0:
        return 0.0, "unknown (no consecutive packets): 0 ms"
    return 1000.0 * float(np.median(steps)) / float(stream.clock_rate), "RTP timestamp step"


def rtt_ms(streams: Sequence[RtpStream]) -> tuple[float | None, int]:
    """Round-trip time from the RTCP of a call's streams (the largest median), and the count.

    A report block about a stream received at the capture point gives a near-zero RTT
    (the capture sees the SR arrive and the RR leave); the stream the capture side
    sends gives the true round trip to the far end. The largest median is taken.
    """
    best, count = None, 0
    for s in streams:
        if s.rtcp is not None and s.rtcp.rtt_ms:
            med = float(np.median(np.asarray(s.rtcp.rtt_ms, dtype=float)))
            if best is None or med > best:
                best, count = med, len(s.rtcp.rtt_ms)
    return best, count


def _matched_delays(owd: OneWayDelay, seq_ext: np.ndarray) -> np.ndarray:
    """The measured one-way delay of each received packet (by sequence number).

    Each capture extends sequence numbers from its own first packet (RFC 3550 A.1), so
    the whole-cycle shift that matches most packets is used. Packets the sender capture
    did not see (outside the overlap of the two captures) get the mean delay.
    """
    sent = owd.seq_ext[owd.received]
    dly = owd.delay_ms[owd.received]
    if sent.size == 0:
        return np.zeros(seq_ext.shape[0])
    shift = max((0, -65536, 65536), key=lambda k: np.intersect1d(sent, seq_ext + k).size)
    want = seq_ext + shift
    pos = np.minimum(np.searchsorted(sent, want), sent.size - 1)
    hit = sent[pos] == want
    return np.where(hit, dly[pos], float(dly.mean()))


def _network_delay(
    stream: RtpStream,
    playout: PlayoutResult,
    owd: OneWayDelay | None,
    *,
    base_ms: float | None,
    rtt: tuple[float | None, int],
) -> tuple[np.ndarray, str, str]:
    """Per received packet: network one-way delay (ms), its source and a provenance note.

    ``base_ms`` is the option ``network_delay_ms``: the given delay of the least-delayed
    packet (None when not given).
    """
    p = stream.packets
    if owd is not None:
        net = _matched_delays(owd, p.seq_ext)
        if owd.relative:
            base = float(base_ms) if base_ms is not None else 0.0
            how = "given" if base_ms is not None else "assumed"
            note = (
                "network one-way delay: the two captures do not share a clock, so delays are measured relative to "
                f"the least-delayed packet, plus a base of {base:g} ms ({how})"
            )
            return net + base, "measured-relative", note
        note = ("network one-way delay: measured (sender- and receiver-side captures, packets matched by SSRC "
                "and sequence number)")
        return net, "measured", note
    # One capture: the delay variation is visible (arrival time minus RTP timestamp),
    # the base delay is not.
    a = (p.arrival_ns - p.arrival_ns[0]) / 1e6
    t = (p.ts_ext - p.ts_ext[0]) * (1000.0 / float(stream.clock_rate))
    transit = a - t
    first = ~playout.duplicate
    var = transit - transit[first].min()
    if base_ms is not None:
        base, source = float(base_ms), "given"
        note = f"network one-way delay: {base:g} ms given for the least-delayed packet, plus the delay variation seen in the capture"
    elif rtt[0] is not None:
        base, source = rtt[0] / 2.0, "rtcp"
        note = (
            f"network one-way delay: RTCP round-trip time / 2 = {base:.1f} ms (median of {rtt[1]} report(s)) for the "
            "least-delayed packet, plus the delay variation seen in the capture"
        )
    else:
        base, source = 0.0, "assumed"
        note = (
            "network one-way delay: assumed 0 ms for the least-delayed packet (only one capture given, no RTCP "
            "round-trip time); only the delay variation seen in the capture is counted"
        )
    return base + var, source, note


def prepare(
    stream: RtpStream,
    *,
    jitter_buffer: JitterBuffer,
    owd: OneWayDelay | None,
    base_ms: float | None,
    rtt: tuple[float | None, int],
    capture: str | None,
) -> Prep:
    """Play ``stream`` out through ``jitter_buffer`` and find each packet's mouth-to-ear delay."""
    if stream.packets is None or len(stream.packets) == 0:
        raise InputError(f"stream {stream.key}: no packet table (scan the capture keeping packets)")
    playout = playout_stream(stream, jitter_buffer=jitter_buffer)
    ptime, ptime_how = _ptime_ms(stream)
    net, source, note = _network_delay(stream, playout, owd, base_ms=base_ms, rtt=rtt)
    m2e = np.where(playout.played, ptime + net + playout.buffer_delay_ms, np.nan)
    notes = [note, f"packetisation delay: {ptime:g} ms ({ptime_how})"]
    return Prep(stream, playout, ptime, net, source, m2e, stream.packets.arrival_ns, capture, notes)


def _conversation_ta(prep: Prep, others: Sequence[Prep]) -> tuple[np.ndarray, str]:
    """Per received packet of ``prep``: the mean of its mouth-to-ear delay and the other direction's."""
    arr = np.concatenate([o.arrival_ns[o.playout.played] for o in others]) if others else np.zeros(0, np.int64)
    val = np.concatenate([o.m2e_ms[o.playout.played] for o in others]) if others else np.zeros(0)
    if arr.size == 0:
        return prep.m2e_ms, "this direction's mouth-to-ear delay (the other direction is not in the capture)"
    order = np.argsort(arr, kind="stable")
    arr, val = arr[order].astype(np.float64), val[order]
    own = prep.arrival_ns.astype(np.float64)
    if own.max() < arr[0] or own.min() > arr[-1]:  # no overlap in time: the other's mean
        other = np.full(own.shape, float(val.mean()))
    else:
        other = np.interp(own, arr, val)  # the other direction's delay at the same moment
    return (prep.m2e_ms + other) / 2.0, "mean of both directions' mouth-to-ear delays (conversation)"


def set_ta(preps: Sequence[Prep], basis: DelayBasis) -> None:
    """Fill each stream's ``ta_ms``: the delay its delay impairment uses (``basis``), with a note."""
    for pr in preps:
        k = pr.stream.key
        if basis == "conversation":
            others = [o for o in preps if o.stream.key.src == k.dst and o.stream.key.dst == k.src]
            pr.ta_ms, how = _conversation_ta(pr, others)
        else:
            pr.ta_ms, how = pr.m2e_ms, "this direction's mouth-to-ear delay"
        pr.notes.append(f"delay impairment Id from: {how}")


def delay_terms(prep: Prep, *, basis: DelayBasis, emodel_params: Mapping[str, Any]) -> DelayTerms:
    """The mouth-to-ear delay of one direction, its parts and its delay impairment (means over played packets)."""
    pl = prep.playout
    played = pl.played
    ta_mean = mean(prep.ta_ms[played])
    idv = float(emodel.delay_impairment(0.0 if math.isnan(ta_mean) else ta_mean, out_of_range="ignore", **emodel_params))
    net_played = prep.net_ms[played]
    return DelayTerms(
        packetisation_ms=prep.ptime_ms,
        network_ms=mean(net_played),
        network_min_ms=float(np.min(net_played)) if net_played.size else float("nan"),
        network_max_ms=float(np.max(net_played)) if net_played.size else float("nan"),
        network_source=prep.net_source,
        buffer_ms=mean(pl.buffer_delay_ms[played]),
        mouth_to_ear_ms=mean(prep.m2e_ms[played]),
        mouth_to_ear_max_ms=float(np.nanmax(prep.m2e_ms[played])) if played.any() else float("nan"),
        basis=basis,
        ta_ms=ta_mean,
        id_=idv,
    )
