"""H.264 at 494×370, VP8, VP9, H.265 and AV1 over RTP: depacketised, decoded, scored.

Data: data/video/rtp/ (``make_rtp_codecs.py``): real captures of FFmpeg's RTP muxer on
loopback (AV1: PyAV's FFmpeg 8), and lossy copies without the packets listed in
``*-lossy.drops.txt``. Truth: ``<sent file>.framemd5``, Debian's ffmpeg 5.1 decoding the file
that was sent (one thread).
"""

from __future__ import annotations

import hashlib
import shutil
import struct
import subprocess
import warnings
from pathlib import Path

import pytest

from qoe.video import VideoOptions, VideoScore, find_video, receive_rtp, score_capture

DATA = Path(__file__).resolve().parents[2] / "data" / "video" / "rtp"
CODECS = {  # name: (sent file, qoe's codec name, RTP clock ticks per frame)
    "h264-494x370": ("h264-494x370.mkv", "h264", 9000),
    "vp8": ("vp8.webm", "vp8", 6000),
    "vp9": ("vp9.webm", "vp9", 6000),
    "h265": ("h265.mkv", "hevc", 6000),
    "av1": ("av1.mkv", "av1", 6000),
}


def _framemd5(path: Path) -> list[str]:
    return [line.rsplit(",", 1)[1].strip() for line in path.read_text().splitlines() if line and line[0] != "#"]


def _md5(f) -> str:
    return hashlib.md5(f.y.tobytes() + f.u.tobytes() + f.v.tobytes()).hexdigest()


def _received(name: str, lossy: bool = False):
    cap = DATA / f"{name}{'-lossy' if lossy else ''}.pcap"
    (src,) = find_video(cap, sdp=DATA / f"{name}.sdp")
    return receive_rtp(src.rtp, sdp=src.sdp)


def _frames(video):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(video.frames())


@pytest.mark.parametrize("name", CODECS)
def test_a_lossless_capture_decodes_to_the_sent_frames_bit_for_bit(name):
    sent, codec, _ = CODECS[name]
    video = _received(name)
    assert video.codec == codec and video.packets_lost == 0
    frames = _frames(video)
    assert [_md5(f) for f in frames] == _framemd5(DATA / f"{sent}.framemd5")


def test_494x370_has_odd_chroma_planes():
    # 370 / 2 = 185 chroma rows: the decoder's planes have padded lines (issue 23's traceback)
    (f, *_) = _frames(_received("h264-494x370"))
    assert f.y.shape == (370, 494) and f.u.shape == f.v.shape == (185, 247)


@pytest.mark.parametrize("name", ["vp8", "vp9", "av1"])
def test_after_a_loss_frames_wait_for_a_key_frame_and_are_the_sent_ones(name):
    # the loss rule of VP8/VP9/AV1 (qoe.video.receive_rtp): an incomplete frame and those after it
    # until the next key frame are not decoded, so every frame decoded is the sent one, bit for bit
    sent, _, step = CODECS[name]
    drops = [ln for ln in (DATA / f"{name}-lossy.drops.txt").read_text().splitlines() if ln and ln[0] != "#"]
    video = _received(name, lossy=True)
    assert video.packets_lost == len(drops)
    truth = _framemd5(DATA / f"{sent}.framemd5")
    first = _received(name).units[0].timestamp  # the lossless capture's first frame: frame 0
    frames = _frames(video)
    assert 0 < len(frames) < len(truth)
    assert any("not decoded" in n for n in video.notes)
    for f in frames:
        assert _md5(f) == truth[round((f.pts - first) / step)]


def _ivf(units, fourcc: bytes, width: int, height: int) -> bytes:
    """The depacketised frames in an IVF file (the container of libvpx's tools), for ffmpeg."""
    out = [b"DKIF" + struct.pack("<HH4sHHIIII", 0, 32, fourcc, width, height, 90000, 1, len(units), 0)]
    for u in units:
        out.append(struct.pack("<IQ", len(u.data), u.timestamp) + u.data)
    return b"".join(out)


def _pyav_framemd5(path: Path, fmt: str) -> list[str]:
    """FFmpeg's (PyAV's libraries) demuxer, parser and decoder on a file, one thread."""
    import av

    with av.open(str(path), format=fmt) as c:
        s = c.streams.video[0]
        s.codec_context.thread_count = 1
        s.codec_context.thread_type = "NONE"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return [hashlib.md5(_packed(f)).hexdigest() for f in c.decode(s)]


def _packed(frame) -> bytes:
    import numpy as np

    out = b""
    for p in frame.planes:
        rows = np.frombuffer(p, np.uint8).reshape(p.height, p.line_size)[:, : p.width]
        out += rows.tobytes()
    return out


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg")
@pytest.mark.parametrize("name", ["h265", "vp8", "vp9", "av1"])
def test_lossy_decoding_equals_ffmpeg_decoding_the_same_depacketised_stream(name, tmp_path):
    """The depacketised stream written to a file (raw H.265, IVF, AV1 OBU) and decoded by
    ffmpeg (Debian's 5.1) with its own demuxer and parser gives the frames qoe decodes.
    H.265 after a loss: Debian's FFmpeg 5.1 conceals frames whose references are missing,
    PyAV's FFmpeg 8 skips them ("Skipping invalid undecodable NALU"), so H.265 is checked
    against FFmpeg 8's demuxer and parser through PyAV instead."""
    video = _received(name, lossy=True)
    if name == "h265":
        path, fmt = tmp_path / "s.hevc", "hevc"
        path.write_bytes(b"".join(u.data for u in video.units))
    elif name == "av1":
        path, fmt = tmp_path / "s.obu", "obu"
        path.write_bytes(b"".join(u.data for u in video.units))
    else:
        path, fmt = tmp_path / "s.ivf", "ivf"
        path.write_bytes(_ivf(video.units, b"VP80" if name == "vp8" else b"VP90", 176, 144))
    if name == "h265":
        want = _pyav_framemd5(path, fmt)
    else:
        out = subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-threads", "1", "-f", fmt, "-i", str(path),
                              "-fps_mode", "passthrough", "-f", "framemd5", "-"], capture_output=True, text=True,
                             check=True).stdout
        want = [ln.rsplit(",", 1)[1].strip() for ln in out.splitlines() if ln and ln[0] != "#"]
    got = [_md5(f) for f in _frames(video)]
    assert got == want and got


@pytest.mark.parametrize("name", ["vp8", "h265", "av1"])
def test_scored_against_the_reference_as_h264_is(name):
    sent, codec, _ = CODECS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (clean,) = score_capture(DATA / f"{name}.pcap", DATA / sent, options=VideoOptions(sdp=DATA / f"{name}.sdp"))
    assert isinstance(clean, VideoScore) and clean.facts.codec == codec
    rec = clean.to_record()
    assert rec["psnr_db"] == float("inf") and rec["ssim"] == 1.0 and rec["frames_frozen"] == 0


SRTP_KEY = "AES_CM_128_HMAC_SHA1_80:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd"  # make_rtp_codecs.py's SRTP_KEY


def _quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return score_capture(*args, **kwargs)


def test_srtp_video_decrypts_with_the_sdp_key_then_decodes_to_the_sent_frames():
    # vp8-srtp.pcap: vp8.webm sent as SRTP by ffmpeg; its SDP carries the key (a=crypto)
    (res,) = _quiet(DATA / "vp8-srtp.pcap", DATA / "vp8.webm", options=VideoOptions(sdp=DATA / "vp8-srtp.sdp"))
    assert isinstance(res, VideoScore) and res.to_record()["psnr_db"] == float("inf")
    assert res.facts.frames_decoded == len(_framemd5(DATA / "vp8.webm.framemd5"))
    assert any(n.startswith("SRTP decrypted") for n in res.facts.notes)


def test_srtp_video_with_a_given_key_and_without_one():
    sdp = "".join(ln for ln in (DATA / "vp8-srtp.sdp").read_text().splitlines(keepends=True)
                  if not ln.startswith("a=crypto"))
    (plain,) = _quiet(DATA / "vp8-srtp.pcap", options=VideoOptions(sdp=sdp, srtp_keys=(SRTP_KEY,)))
    assert plain.frames_decoded == 30 and plain.headers.frames_received == 30
    (noise,) = _quiet(DATA / "vp8-srtp.pcap", options=VideoOptions(sdp=sdp))
    # without the key: nothing decodes, the header facts stay, and the note says why
    assert noise.frames_decoded == 0 and noise.headers.frames_received == 30
    assert any("encrypted (SRTP)" in n for n in noise.notes)


def test_srtp_keys_never_leave_in_the_options_record():
    assert VideoOptions(srtp_keys=(SRTP_KEY,)).to_dict()["srtp_keys"] == ["AES_CM_128_HMAC_SHA1_80:***"]


@pytest.mark.parametrize("name", CODECS)
def test_garbled_payloads_give_facts_not_a_traceback(name, tmp_path):
    # every third packet's payload (after the 12-byte RTP header) overwritten with seeded noise,
    # some cut short: the depacketisers and the decoder must report, never raise
    import dpkt
    import numpy as np

    rng = np.random.default_rng(23)
    out = tmp_path / "garbled.pcap"
    with open(DATA / f"{name}.pcap", "rb") as fi, open(out, "wb") as fo:
        r = dpkt.pcap.Reader(fi)
        w = dpkt.pcap.Writer(fo, linktype=r.datalink())
        for i, (ts, buf) in enumerate(r):
            eth = dpkt.ethernet.Ethernet(buf)
            udp = eth.data.data
            if i % 3 == 1:
                body = bytes(udp.data)
                n = int(rng.integers(1, max(2, len(body) - 12)))
                udp.data = body[:12] + rng.integers(0, 256, n, dtype=np.uint8).tobytes()
                udp.ulen = 8 + len(udp.data)
                udp.sum = 0
                eth.data.len = 20 + udp.ulen
                eth.data.sum = 0
            w.writepkt(bytes(eth), ts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (facts,) = score_capture(out, options=VideoOptions(sdp=DATA / f"{name}.sdp"))
    assert facts.packets_received > 0 and facts.headers is not None
    assert facts.headers.frames_received > 0
