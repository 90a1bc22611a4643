"""Voice: the E-model (G.107), RTP streams and their statistics, playout, and P.862 scoring."""

from __future__ import annotations

from qoe.voice import emodel  # noqa: F401
from qoe.voice.rtp import RtpPackets, RtpStats, RtpStream, StreamKey, make_packets, rtp_stats  # noqa: E402,F401
