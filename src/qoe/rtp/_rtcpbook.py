"""The scan's RTCP book: sender reports, report blocks and round-trip times by SSRC.

References
----------
.. [1] RFC 3550, "RTP: A Transport Protocol for Real-Time Applications", §6.4.1 (SR, RR,
   round-trip time from LSR/DLSR), §6.6 (BYE).
"""

from __future__ import annotations

from typing import Any

from qoe.rtp._packet import RTCP_BYE, RTCP_SR
from qoe.rtp._results import RtcpSummary


class RtcpBook:
    """RTCP seen in a capture: sender reports by NTP time, report blocks by source."""

    def __init__(self) -> None:
        self.sr_time: dict[tuple[int, int], int] = {}  # (sender ssrc, NTP middle 32 bits) -> capture ns
        self.sr_count: dict[int, int] = {}
        self.blocks: dict[int, list[tuple[int, dict[str, Any]]]] = {}  # source ssrc -> (ns, block)
        self.rtt: dict[int, list[float]] = {}
        self.bye: set[int] = set()  # SSRCs that sent an RTCP BYE (RFC 3550 §6.6)
        self.packets = 0

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
        out = {}
        for ssrc in set(self.sr_count) | set(self.blocks):
            blocks = self.blocks.get(ssrc, [])
            last = blocks[-1][1] if blocks else None
            out[ssrc] = RtcpSummary(
                ssrc=ssrc,
                sender_reports=self.sr_count.get(ssrc, 0),
                reports=len(blocks),
                fraction_lost=last["fraction_lost"] if last else None,
                cumulative_lost=last["cumulative_lost"] if last else None,
                jitter_ticks=last["jitter"] if last else None,
                rtt_ms=tuple(self.rtt.get(ssrc, ())),
            )
        return out
