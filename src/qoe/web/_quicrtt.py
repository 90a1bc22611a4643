"""QUIC RTT from the ACK frames a capture shows, as an endpoint estimates it (RFC 9002 §5).

One :class:`AckRtt` per direction of acknowledgement: it remembers when each packet of the
acknowledged side passed the capture point (per packet number space) and whether it was
ack-eliciting, and turns each ACK frame of the other side into an RTT sample:

* §5.1: a sample when the ACK newly acknowledges its largest acknowledged packet and at least
  one newly acknowledged packet was ack-eliciting: ``latest_rtt = ack time − send time`` of the
  largest acknowledged;
* §5.2: ``min_rtt`` the least ``latest_rtt`` (without the ACK delay);
* §5.3: the ACK Delay (``ack_delay × 2^ack_delay_exponent`` µs, RFC 9000 §19.3 and §18.2: the
  exponent from the acknowledging side's transport parameters, default 3) is subtracted when
  the result is not below ``min_rtt``, ignored for Initial packets, and once the handshake is
  confirmed capped at the side's ``max_ack_delay`` (default 25 ms); ``smoothed_rtt`` and
  ``rttvar`` by the exponentially weighted averages of §5.3 (first sample: ``smoothed_rtt =
  adjusted``, ``rttvar = adjusted / 2``).

At a capture point next to the client, the server's ACKs of the client's packets measure the
whole path (capture point → server → capture point), and the client's ACKs the short leg
between the capture point and the client; the path RTT is their sum (as for TCP,
:mod:`qoe.web._pagemodel`).

References
----------
.. [1] RFC 9002, "QUIC Loss Detection and Congestion Control" (2021), §5 (Estimating the RTT).
.. [2] RFC 9000, "QUIC: A UDP-Based Multiplexed and Secure Transport" (2021), §13.2.1
   (ack-eliciting frames), §18.2 (ack_delay_exponent, max_ack_delay), §19.3 (ACK frames).
"""

from __future__ import annotations

from typing import Any

#: RFC 9000 §18.2: ack_delay_exponent's default (ACK Delay in units of 2^3 µs).
DEFAULT_ACK_DELAY_EXPONENT = 3
#: RFC 9000 §18.2: max_ack_delay's default, 25 ms.
DEFAULT_MAX_ACK_DELAY_NS = 25_000_000
#: RFC 9000 §13.2.1 / §19: frames that are not ack-eliciting: PADDING, ACK, ACK_ECN,
#: CONNECTION_CLOSE (transport and application).
NOT_ACK_ELICITING = frozenset((0x00, 0x02, 0x03, 0x1C, 0x1D))
_INITIAL_SPACE = 0
_MAX_HELD = 4096  # packets remembered per space before the oldest are forgotten


class AckRtt:
    """RTT samples of one side's packets acknowledged by the other (see the module notes)."""

    __slots__ = ("sent", "largest", "latest", "min_rtt", "smoothed", "rttvar", "samples",
                 "exponent", "max_ack_delay", "confirmed", "min_adjusted", "top", "ordered")

    def __init__(self) -> None:
        self.sent: list[dict[int, tuple[int, bool]]] = [{}, {}, {}]  # per space: pn -> (ts, ack-eliciting)
        self.largest = [-1, -1, -1]
        self.latest: int | None = None
        self.min_rtt: int | None = None
        self.smoothed: int | None = None
        self.rttvar: int | None = None
        self.samples = 0
        self.exponent = DEFAULT_ACK_DELAY_EXPONENT  # of the acknowledging side
        self.max_ack_delay = DEFAULT_MAX_ACK_DELAY_NS
        self.confirmed = False  # the handshake is confirmed (HANDSHAKE_DONE, RFC 9001 §4.1.2)
        self.min_adjusted: int | None = None  # least latest_rtt - ACK Delay (the leg's propagation)
        # per space: the highest number sent, and whether the numbers came in increasing order
        # (then an ACK's walk over the packets held stops at the first above its largest)
        self.top = [-1, -1, -1]
        self.ordered = [True, True, True]

    def sent_packet(self, space: int, pn: int, ts: int, ack_eliciting: bool) -> None:
        held = self.sent[space]
        if pn > self.top[space]:
            self.top[space] = pn
        elif pn not in held:
            self.ordered[space] = False
        held[pn] = (ts, ack_eliciting)
        if len(held) > _MAX_HELD:
            for k in sorted(held)[: len(held) - _MAX_HELD]:
                del held[k]

    def ack(self, space: int, ts: int, ranges: Any, ack_delay: int) -> None:
        """One ACK frame (aioquic's ``pull_ack_frame``: a RangeSet and the encoded ACK Delay)."""
        if not len(ranges):
            return
        largest = ranges.bounds().stop - 1
        if largest <= self.largest[space]:
            return  # §5.1: the largest acknowledged is not newly acknowledged
        prev = self.largest[space]
        self.largest[space] = largest
        held = self.sent[space]
        first = held.get(largest)
        newly, gone = [], []
        ordered = self.ordered[space]
        for pn in held:
            if pn > largest:
                if ordered:
                    break  # (the rest were sent later: numbers above the largest acknowledged)
                continue
            if pn in ranges:
                gone.append(pn)
                if pn > prev:
                    newly.append(pn)
        eliciting = any(held[pn][1] for pn in newly)
        for pn in gone:
            del held[pn]
        if first is None or not eliciting:
            return
        latest = ts - first[0]
        if latest < 0:
            return
        self.latest = latest
        self.samples += 1
        if self.min_rtt is None or latest < self.min_rtt:
            self.min_rtt = latest  # §5.2: without the ACK delay
        delay = 0 if space == _INITIAL_SPACE else (ack_delay << self.exponent) * 1000  # µs -> ns
        if self.confirmed:
            delay = min(delay, self.max_ack_delay)
        adjusted = latest - delay if latest - delay >= self.min_rtt else latest
        leg = max(latest - delay, 0)
        if self.min_adjusted is None or leg < self.min_adjusted:
            self.min_adjusted = leg  # the leg without the acknowledging side's reported delay
        if self.smoothed is None:
            self.smoothed, self.rttvar = adjusted, adjusted // 2
        else:
            assert self.rttvar is not None
            self.rttvar = (3 * self.rttvar + abs(self.smoothed - adjusted)) // 4
            self.smoothed = (7 * self.smoothed + adjusted) // 8
