"""The scan's RTCP book: sender reports, report blocks and round-trip times by SSRC; feedback.

Feedback messages (NACK, PLI, FIR, transport-wide feedback) and reports are also counted
per UDP direction from the clear bytes alone: SRTCP leaves the first 8 bytes of a compound
packet in clear (RFC 3711 §3.4: the header and the sender's SSRC of its first packet), so
for an encrypted compound packet only its first packet's type and format are counted
(a NACK behind a receiver report is not seen); plain RTCP is walked whole.

References
----------
.. [1] RFC 3550, "RTP: A Transport Protocol for Real-Time Applications", §6.4.1 (SR, RR,
   round-trip time from LSR/DLSR), §6.6 (BYE), §6.1 and A.2 (compound packets).
.. [2] RFC 4585, "Extended RTP Profile for RTCP-Based Feedback (RTP/AVPF)", §6.1 (RTPFB 205,
   PSFB 206, FMT in the count field), §6.2.1 (Generic NACK, FMT 1), §6.3.1 (PLI, FMT 1).
.. [3] RFC 5104 §4.3.1 (FIR, PSFB FMT 4); draft-holmer-rmcat-transport-wide-cc-extensions-01
   §3.1 (transport-wide feedback, RTPFB FMT 15); RFC 5506 (reduced-size RTCP: a feedback
   packet alone in a datagram).
.. [4] RFC 3711 §3.4 (SRTCP: what is encrypted).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from qoe.rtp._packet import RTCP_BYE, RTCP_PSFB, RTCP_RR, RTCP_RTPFB, RTCP_SR, RTP_VERSION
from qoe.rtp._results import FEEDBACK_KINDS, RtcpSummary

# (packet type, FMT) -> the feedback counter it adds to (module docstring's references).
_FEEDBACK = {(RTCP_RTPFB, 1): "nack", (RTCP_RTPFB, 15): "transport_cc", (RTCP_PSFB, 1): "pli",
             (RTCP_PSFB, 4): "fir"}


def feedback_kinds(data: bytes, *, encrypted: bool) -> list[str]:
    """The counters an RTCP datagram adds to (:data:`qoe.rtp._results.FEEDBACK_KINDS`).

    Walks the compound packet by its length fields (RFC 3550 A.2); for SRTCP
    (``encrypted``) only the first packet's header is clear (RFC 3711 §3.4).
    """
    out = []
    n, pos = len(data), 0
    while pos + 4 <= n and data[pos] >> 6 == RTP_VERSION:
        ptype, fmt = data[pos + 1], data[pos] & 0x1F
        if ptype == RTCP_SR:
            out.append("sr")
        elif ptype == RTCP_RR:
            out.append("rr")
        else:
            kind = _FEEDBACK.get((ptype, fmt))
            if kind is not None:
                out.append(kind)
        if encrypted:
            break
        pos += (int.from_bytes(data[pos + 2:pos + 4], "big") + 1) * 4
    return out


class RtcpBook:
    """RTCP seen in a capture: sender reports by NTP time, report blocks by source."""

    def __init__(self) -> None:
        self.sr_time: dict[tuple[int, int], int] = {}  # (sender ssrc, NTP middle 32 bits) -> capture ns
        self.sr_count: dict[int, int] = {}
        self.blocks: dict[int, list[tuple[int, dict[str, Any]]]] = {}  # source ssrc -> (ns, block)
        self.rtt: dict[int, list[float]] = {}
        self.bye: set[int] = set()  # SSRCs that sent an RTCP BYE (RFC 3550 §6.6)
        self.packets = 0
        # (src code, sport, dst code, dport) -> counts of FEEDBACK_KINDS sent that way
        self.feedback: dict[tuple[int, int, int, int], dict[str, int]] = {}

    def add_feedback(self, direction: tuple[int, int, int, int], kinds: list[str]) -> None:
        """Count the reports and feedback messages of one datagram sent in ``direction``."""
        if not kinds:
            return
        c = self.feedback.setdefault(direction, dict.fromkeys(FEEDBACK_KINDS, 0))
        for k in kinds:
            c[k] += 1

    def add(self, time_ns: int, items: list[dict[str, Any]]) -> None:
        self.packets += 1
        for it in items:
            if it["type"] == RTCP_BYE and it["ssrc"] is not None:
                self.bye.add(it["ssrc"])
            if it["type"] == RTCP_SR and "ntp" in it and it["ssrc"] is not None:
                self.sr_count[it["ssrc"]] = self.sr_count.get(it["ssrc"], 0) + 1
                # RFC 3550 §6.4.1: LSR is the middle 32 bits of the SR's NTP timestamp
                self.sr_time[(it["ssrc"], (it["ntp"] >> 16) & 0xFFFFFFFF)] = time_ns
            for b in it.get("blocks", ()):
                self.blocks.setdefault(b["ssrc"], []).append((time_ns, b))
                if b["lsr"]:
                    t_sr = self.sr_time.get((b["ssrc"], b["lsr"]))
                    if t_sr is not None:
                        # RFC 3550 §6.4.1: RTT = A - LSR - DLSR, DLSR in units of 1/65536 s
                        rtt = (time_ns - t_sr) / 1e6 - b["dlsr"] / 65.536
                        self.rtt.setdefault(b["ssrc"], []).append(rtt)

    def summaries(self) -> dict[int, RtcpSummary]:
        return {ssrc: self.summary(ssrc) for ssrc in set(self.sr_count) | set(self.blocks)}  # type: ignore[misc]

    def summary(self, ssrc: int) -> RtcpSummary | None:
        """What the RTCP seen so far says of ``ssrc`` (None: no report of it)."""
        if ssrc not in self.sr_count and ssrc not in self.blocks:
            return None
        blocks = self.blocks.get(ssrc, [])
        last = blocks[-1][1] if blocks else None
        return RtcpSummary(
            ssrc=ssrc,
            sender_reports=self.sr_count.get(ssrc, 0),
            reports=len(blocks),
            fraction_lost=last["fraction_lost"] if last else None,
            cumulative_lost=last["cumulative_lost"] if last else None,
            jitter_ticks=last["jitter"] if last else None,
            rtt_ms=tuple(self.rtt.get(ssrc, ())),
        )

    def forget(self, ssrcs: set[int], directions: set[tuple[int, int, int, int]]) -> None:
        """Drop what is kept of ``ssrcs`` and the feedback counted on ``directions`` (streams
        handed on by a streaming scan), so that the book holds live streams only."""
        for ssrc in ssrcs:
            self.sr_count.pop(ssrc, None)
            self.blocks.pop(ssrc, None)
            self.rtt.pop(ssrc, None)
            self.bye.discard(ssrc)
        if self.sr_time and ssrcs:
            self.sr_time = {k: v for k, v in self.sr_time.items() if k[0] not in ssrcs}
        for d in directions:
            self.feedback.pop(d, None)


def attach_feedback(streams: list[Any], book: RtcpBook, addresses: Sequence[str]) -> None:
    """Attach, in place, the RTCP sent back on each stream's reverse direction
    (:attr:`qoe.rtp.RtpStream.feedback`; ``addresses``: the scan's address codes)."""
    if not book.feedback:
        return
    code = {a: i for i, a in enumerate(addresses)}
    for i, s in enumerate(streams):
        k = s.key
        c = book.feedback.get((code[k.dst], k.dport, code[k.src], k.sport))
        if c is not None:
            streams[i] = dataclasses.replace(s, feedback=dict(c))
