from qoe.voice.rtp import RtpPackets, RtpStats, RtpStream, StreamKey, make_packets, rtp_stats  # noqa: E402,F401
