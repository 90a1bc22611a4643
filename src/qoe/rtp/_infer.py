"""Clock rate and media kind of a stream without SDP, from its headers and arrival times.

A WebRTC capture holds no SDP and its payload types are dynamic, so nothing names a
stream's clock rate, without which there is no jitter (RFC 3550 §6.4.1 needs timestamps in
time units). The clock shows in the headers: a sender's RTP timestamps advance at the
clock rate (RFC 3550 §5.1: "the sampling instant"), so their span over the span of arrival
times, taken over the whole stream, is the rate up to the network's delay variation and
the sender's pauses (which stop both). The rates in use are few: 8000, 16000 and 48000 Hz
for audio (RFC 3551 §4.5: G.711/G.722's clock, wide-band codecs, Opus RFC 7587 §4.1), 90000
Hz for video (RFC 3551 §5: every video encoding). :func:`infer_clock` takes the nearest of
those when the measured rate is within :data:`RATE_TOLERANCE` of it, and says the evidence:
the measured rate, and the packet pattern that tells video from audio (several packets per
timestamp, the marker bit on a frame's last packet, RFC 3551 §5 / RFC 7741 §4.1; audio:
one packet per timestamp, RFC 3551 §4.1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qoe.rtp._packet import RtpPackets

#: Clock rates a stream can be inferred to have (Hz): RFC 3551 §4.5 (8000, 16000), RFC 7587
#: §4.1 (Opus: 48000), RFC 3551 §5 (video: 90000).
CLOCK_RATES = (8000, 16000, 48000, 90000)
#: How far the measured rate may be from the nearest clock rate (relative). The rates are at
#: least 1.875 times apart (16000 -> 8000), so 20 % leaves no ambiguity; a queue that builds
#: up by 0.8 s over a 10 s stream (the seed paper's full uplink buffer) skews the ratio by 8 %.
RATE_TOLERANCE = 0.2
# Fewest packets, and shortest span of arrival (s), to infer from.
_MIN_PACKETS = 10
_MIN_SPAN_S = 0.5


@dataclass(frozen=True, slots=True)
class ClockGuess:
    """An inferred clock rate and media kind, with the evidence in words."""

    clock_rate: int
    media: str
    evidence: str


def infer_clock(p: RtpPackets) -> ClockGuess | None:
    """The clock rate and media kind of one stream's packets, or None when they do not tell.

    The rate is ``(last - first extended timestamp) / (last - first arrival)`` over the
    packets that arrived in order (a late packet neither starts nor ends the spans); it
    must lie within 10 % of one of :data:`CLOCK_RATES`. 90000 Hz is video; the pattern of
    packets per timestamp and marker bits is given as further evidence (video: several
    packets per timestamp, the marker on the last; audio: one each).
    """
    n = len(p)
    if n < _MIN_PACKETS:
        return None
    e = p.seq_ext
    in_order = np.ones(n, dtype=bool)
    in_order[1:] = e[1:] > np.maximum.accumulate(e)[:-1]
    io = np.flatnonzero(in_order)
    if io.size < _MIN_PACKETS:
        return None
    span_s = (p.arrival_ns[io[-1]] - p.arrival_ns[io[0]]) / 1e9
    if span_s < _MIN_SPAN_S:
        return None
    ticks = float(p.ts_ext[io[-1]] - p.ts_ext[io[0]])
    rate = ticks / span_s
    if rate <= 0:
        return None
    best = min(CLOCK_RATES, key=lambda c: abs(np.log(rate / c)))
    if abs(rate / best - 1.0) > RATE_TOLERANCE:
        return None
    stamps = np.unique(p.timestamp)
    per_ts = n / stamps.size
    marked = float(np.mean(p.marker)) if n else 0.0
    media = "video" if best == 90000 else "audio"
    evidence = (f"clock rate {best} Hz and media {media} inferred (no SDP): timestamps advance {rate:.0f} ticks/s "
                f"over {span_s:.1f} s of arrival (nearest of {', '.join(map(str, CLOCK_RATES))} Hz, within "
                f"{RATE_TOLERANCE:.0%}); {per_ts:.2f} packets per timestamp, marker bit on {marked:.0%} of packets")
    return ClockGuess(best, media, evidence)
