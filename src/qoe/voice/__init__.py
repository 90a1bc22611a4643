"""Voice: the E-model (G.107), RTP streams and their statistics, playout, and P.862 scoring."""

from __future__ import annotations

from qoe.voice import emodel  # noqa: F401
from qoe.voice.rtp import RtpPackets, RtpStats, RtpStream, StreamKey, make_packets, rtp_stats  # noqa: E402,F401
from qoe.voice.rtp import RtcpSummary, RtpScan, find_streams, scan_capture  # noqa: E402,F401
from qoe.voice.sip import SdpMedia, SipCall, group_calls, parse_sdp, parse_sip  # noqa: E402,F401
from qoe.voice import g711  # noqa: E402,F401
from qoe.voice.delay import OneWayDelay, delays_between, one_way_delay, stream_delay  # noqa: E402,F401
from qoe.voice.jitterbuffer import AdaptiveBuffer, FixedBuffer, NoBuffer, PlayoutResult, parse_jitter_buffer, simulate  # noqa: E402,F401
from qoe.voice.playout import ReceivedAudio, extract_audio, playout_stream, rebuild_audio  # noqa: E402,F401
from qoe.voice.io import capture_delays, extract_wav, write_wav  # noqa: E402,F401
from qoe.voice.p862 import PesqResult, load_speech, pesq  # noqa: E402,F401
