"""An MPEG-TS in UDP whose program changes mid-capture: the source restarted with new PIDs
(an encoder restart or a channel change on the same multicast group), so FFmpeg's demuxer
meets a new PMT and new streams after it started. Made with ffmpeg: two transport streams,
the second with ``-mpegts_pmt_start_pid 0x1100 -mpegts_start_pid 0x200`` and an audio
track, sent back to back in 1316-byte datagrams (7 transport packets, as ffmpeg's
``udp://...?pkt_size=1316`` sends them). PyAV 18.1's ``demux()`` raised IndexError at its
end on such a stream (found by ``benchmarks/fuzz/run.py --inputs 1000 --seed 20261126``,
target video-score)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import warnings

import dpkt
import pytest

from qoe.errors import QoEWarning
from qoe.video import StreamFacts, score_capture

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg (make test installs it)")

X264 = ["-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-bf", "0", "-pix_fmt", "yuv420p"]


def _ts(path, *args):  # type: ignore[no-untyped-def]
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=176x144:rate=25",
                    *args, "-t", "1", *X264, "-f", "mpegts", str(path)], check=True)
    return path.read_bytes()


@pytest.fixture(scope="module")
def restarted(tmp_path_factory):  # type: ignore[no-untyped-def]
    d = tmp_path_factory.mktemp("tsnew")
    a = _ts(d / "a.ts")
    b = _ts(d / "b.ts", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-c:a", "mp2",
            "-mpegts_pmt_start_pid", "0x1100", "-mpegts_start_pid", "0x200", "-output_ts_offset", "1")
    ts = a + b
    (d / "ab.ts").write_bytes(ts)
    pcap = d / "ab.pcap"
    with open(pcap, "wb") as fh:
        w = dpkt.pcap.Writer(fh, linktype=dpkt.pcap.DLT_RAW)
        for i, k in enumerate(range(0, len(ts), 1316)):
            udp = dpkt.udp.UDP(sport=40000, dport=5004, data=ts[k : k + 1316])
            udp.ulen = len(udp)
            ip = dpkt.ip.IP(src=socket.inet_aton("192.0.2.1"), dst=socket.inet_aton("239.1.1.1"), p=17, data=udp)
            ip.len = len(ip)
            w.writepkt(bytes(ip), 1_800_000_000 + i * 0.002)
    return d


def test_ffmpeg_sees_the_later_streams(restarted):  # type: ignore[no-untyped-def]
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=id,codec_type", "-of", "csv=p=0",
                          str(restarted / "ab.ts")], capture_output=True, text=True, check=True).stdout.split()
    assert {"video,0x100", "video,0x200", "audio,0x201"} <= set(out)


def test_the_first_video_stream_is_scored_as_ffmpeg_decodes_it(restarted):  # type: ignore[no-untyped-def]
    # ffmpeg -i ab.ts -map 0:v:0 -f framemd5 - : 25 frames (the first program's video)
    md5 = subprocess.run(["ffmpeg", "-loglevel", "error", "-i", str(restarted / "ab.ts"), "-map", "0:v:0",
                          "-f", "framemd5", "-"], capture_output=True, text=True, check=True).stdout
    theirs = sum(1 for line in md5.splitlines() if line and not line.startswith("#"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (facts,) = score_capture(restarted / "ab.pcap")
    assert isinstance(facts, StreamFacts)
    assert facts.frames_decoded == theirs == 25
    assert any(issubclass(w.category, QoEWarning) and "gained a stream after its start" in str(w.message) for w in caught)
