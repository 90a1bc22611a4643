#!/usr/bin/env python3
"""Make the RTP video samples of data/video/rtp/: one short clip per codec, sent over RTP on
loopback by FFmpeg's RTP muxer, captured with tcpdump; then a lossy copy of each capture.

Codecs and payload formats (what FFmpeg's RTP muxer writes):

* ``h264-494x370``: H.264 (RFC 6184) at 494×370 (odd chroma height: the planes have padded
  lines and 185 chroma rows), Debian's ffmpeg 5.1.
* ``vp8``: VP8 (RFC 7741), Debian's ffmpeg.
* ``vp9``: VP9 (RFC 9628, FFmpeg writes its draft's descriptor: I, B, E bits, 15-bit picture ID).
* ``h265``: H.265 (RFC 7798), Debian's ffmpeg (x265).
* ``av1``: AV1 (AOMedia "RTP Payload Format for AV1" v1.0), sent by PyAV 18 (its bundled FFmpeg
  8 has the AV1 RTP packetizer; Debian's ffmpeg 5.1 has not); SVT-AV1 encoder.

Each clip: ffmpeg's ``testsrc2`` (moving pattern, frame counter), 176×144 at 15 fps for 2 s
(494×370 at 10 fps, 1.5 s, for H.264), a key frame every 10 pictures, encoded once to
``<name>.<ext>`` (the reference: what was sent), then streamed with ``-re -c copy`` to
127.0.0.1:<port>, captured on ``lo`` (``tcpdump --immediate-mode -i lo udp dst port <port>``)
into ``<name>.pcap``; ffmpeg's ``-sdp_file`` (or for AV1 the SDP written here) beside it.

Truth: ``<sent file>.framemd5``, FFmpeg's decoding of the sent file (``ffmpeg -threads 1 -i
<file> -f framemd5``): a lossless capture must decode to these frames, bit for bit.

SRTP: ``vp8-srtp.pcap`` is ``vp8.webm`` sent again as SRTP (``srtp://``, suite
AES_CM_128_HMAC_SHA1_80, the made-up key ``SRTP_KEY`` below, which ffmpeg also writes in the
SDP's ``a=crypto`` line): ``python3 make_rtp_codecs.py srtp``.

Losses: ``<name>-lossy.pcap`` is a copy of the capture without the RTP packets whose sequence
numbers are listed in ``<name>-lossy.drops.txt`` (every 11th RTP packet from the 21st on): an
edited copy, not a network, so that the truth of what was lost is exact.

Usage: ``python3 data/video/rtp/make_rtp_codecs.py [lossy] [NAME...]`` (root for tcpdump on lo; about 30 s).
Needs ffmpeg, tcpdump, and the qoe venv's PyAV and dpkt (run with .venv/bin/python).
"""

from __future__ import annotations

import fractions
import os
import subprocess
import sys
import time
from pathlib import Path

import dpkt

HERE = Path(__file__).resolve().parent
PORT0 = 47_600  # ports for this script only (other captures on lo filter by port)

CLIPS = {
    # name: (size, rate, seconds, encoder args, container ext, port)
    "h264-494x370": ("494x370", 10, 1.5, ["-c:v", "libx264", "-preset", "veryfast", "-g", "10", "-bf", "0",
                                           "-b:v", "300k", "-threads", "1"], "mkv", PORT0),
    "vp8": ("176x144", 15, 2, ["-c:v", "libvpx", "-g", "10", "-b:v", "150k", "-threads", "1"], "webm", PORT0 + 2),
    "vp9": ("176x144", 15, 2, ["-c:v", "libvpx-vp9", "-g", "10", "-b:v", "150k", "-threads", "1",
                               "-row-mt", "0"], "webm", PORT0 + 4),
    "h265": ("176x144", 15, 2, ["-c:v", "libx265", "-preset", "veryfast", "-x265-params",
                                "keyint=10:min-keyint=10:bframes=0:pools=1:frame-threads=1:log-level=error",
                                "-b:v", "150k"], "mkv", PORT0 + 6),
    "av1": ("176x144", 15, 2, ["-c:v", "libsvtav1", "-g", "10", "-preset", "10", "-b:v", "150k"], "mkv", PORT0 + 8),
}
# vp8-srtp: vp8.webm again, as SRTP (RFC 3711) with this key (SDES inline form, RFC 4568: the
# 16-byte master key then the 14-byte salt, base64): made up for the sample, in its SDP too.
SRTP_SUITE = "AES_CM_128_HMAC_SHA1_80"
SRTP_KEY = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd"  # bytes 0..29
SRTP_PORT = PORT0 + 10
DROP_FIRST, DROP_EVERY = 20, 11  # after the first key frame: something decodes


def encode(name: str, size: str, rate: int, seconds: float, args: list[str], ext: str) -> Path:
    out = HERE / f"{name}.{ext}"
    src = f"testsrc2=s={size}:r={rate},format=yuv420p"
    if name == "av1":  # Debian's ffmpeg has no SVT-AV1: encode with PyAV's FFmpeg
        import av
        n = int(rate * seconds)
        with av.open(str(out), "w") as oc:
            st = oc.add_stream("libsvtav1", rate=rate, options={"preset": "10", "crf": "50", "svtav1-params": "keyint=10"})
            st.width, st.height, st.pix_fmt = 176, 144, "yuv420p"
            with av.open(f"testsrc2=s={size}:r={rate}", format="lavfi") as ic:
                for i, frame in enumerate(ic.decode(video=0)):
                    if i >= n:
                        break
                    frame = frame.reformat(format="yuv420p")
                    frame.pts, frame.time_base = i, fractions.Fraction(1, rate)
                    oc.mux(st.encode(frame))
            oc.mux(st.encode(None))
        return out
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-loglevel", "error", "-f", "lavfi", "-i", src, "-t", str(seconds),
                    *args, str(out)], check=True)
    return out


def send_pyav(src: Path, port: int, sdp: Path) -> None:
    """AV1 over RTP with PyAV's FFmpeg (paced like ``-re``), and the SDP a receiver needs."""
    import av
    with av.open(str(src)) as ic, av.open(f"rtp://127.0.0.1:{port}", "w", format="rtp",
                                            container_options={"strict": "experimental"}) as oc:
        ist = ic.streams.video[0]
        ost = oc.add_stream_from_template(ist, opaque=True)  # no encoder needed: packets are copied
        t0 = time.monotonic()
        for pkt in ic.demux(ist):
            if pkt.size == 0:
                continue
            due = float(pkt.pts * ist.time_base)
            time.sleep(max(0.0, t0 + due - time.monotonic()))
            pkt.stream = ost
            oc.mux(pkt)
    sdp.write_text(f"v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=av1\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
                   f"m=video {port} RTP/AVP 96\r\na=rtpmap:96 AV1/90000\r\n")


def capture(name: str, src: Path, port: int, srtp: bool = False) -> Path:
    pcap = HERE / f"{name}.pcap"
    sdp = HERE / f"{name}.sdp"
    dump = subprocess.Popen(["tcpdump", "--immediate-mode", "-q", "-i", "lo", "-w", str(pcap), "udp", "dst", "port",
                             str(port)], stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    try:
        if name == "av1":
            send_pyav(src, port, sdp)
        else:
            out = ["-srtp_out_suite", SRTP_SUITE, "-srtp_out_params", SRTP_KEY, f"srtp://127.0.0.1:{port}"] if srtp \
                else [f"rtp://127.0.0.1:{port}"]
            subprocess.run(["ffmpeg", "-nostdin", "-y", "-loglevel", "error", "-re", "-i", str(src), "-an", "-c",
                            "copy", "-strict", "experimental", "-f", "rtp", "-sdp_file", str(sdp), *out], check=True,
                           timeout=30)
        time.sleep(0.5)
    finally:
        dump.terminate()
        dump.wait()
    return pcap


def lossy_copy(pcap: Path) -> None:
    """Drop every DROP_EVERY-th RTP packet from the DROP_FIRST-th on; log their sequence numbers."""
    out = pcap.with_name(pcap.stem + "-lossy.pcap")
    drops = []
    with open(pcap, "rb") as fi, open(out, "wb") as fo:
        r = dpkt.pcap.Reader(fi)
        w = dpkt.pcap.Writer(fo, linktype=r.datalink(), snaplen=r.snaplen)
        for i, (ts, buf) in enumerate(r):
            if i >= DROP_FIRST and (i - DROP_FIRST) % DROP_EVERY == 0:
                link = dpkt.loopback.Loopback(buf) if r.datalink() == 0 else dpkt.ethernet.Ethernet(buf)
                udp = link.data.data
                drops.append(int.from_bytes(bytes(udp.data)[2:4], "big"))
                continue
            w.writepkt(buf, ts)
    pcap.with_name(pcap.stem + "-lossy.drops.txt").write_text(
        "# RTP sequence numbers removed from " + pcap.name + f" (every {DROP_EVERY}th packet from the "
        f"{DROP_FIRST + 1}th)\n" + "\n".join(map(str, drops)) + "\n")


def truth(src: Path) -> None:
    """What FFmpeg (Debian's ffmpeg 5.1, one thread) decodes from the sent file: ``<file>.framemd5``."""
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-threads", "1", "-i", str(src), "-map", "0:v",
                    "-f", "framemd5", "-y", f"{src}.framemd5"], check=True)


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["srtp"]:  # vp8.webm as SRTP: vp8-srtp.pcap and its SDP (a=crypto)
        capture("vp8-srtp", HERE / "vp8.webm", SRTP_PORT, srtp=True)
        return
    if args[:1] == ["lossy"]:  # only remake the lossy copies of the captures there are
        for name in args[1:] or list(CLIPS):
            lossy_copy(HERE / f"{name}.pcap")
        return
    for name in args or list(CLIPS):
        size, rate, seconds, args, ext, port = CLIPS[name]
        src = encode(name, size, rate, seconds, args, ext)
        pcap = capture(name, src, port)
        lossy_copy(pcap)
        truth(src)
        print(name, os.path.getsize(src), os.path.getsize(pcap))


if __name__ == "__main__":
    main()
