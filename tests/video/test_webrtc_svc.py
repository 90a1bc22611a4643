"""VP9 with spatial layers (SVC) from real Chromium calls, against the browsers' getStats().

data/video/webrtc/calls/vp9-svc (SRTP) and vp9-svc-plain (plain RTP, whole packets: Chromium's
--disable-webrtc-encryption) were sent with ``scalabilityMode: "L2T2"`` (two spatial, two
temporal layers, W3C webrtc-svc). Truth: the receiver's final ``inbound-rtp`` (framesDecoded,
frameWidth, frameHeight) and the sender's ``outbound-rtp`` (framesSent, scalabilityMode); the
README there says how they count (pictures at the receiver, layer frames at the sender).
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import warnings

import pytest

from qoe.rtp import parse_sdp
from qoe.video import VideoOptions, find_video, receive_rtp, score_capture
from video import webrtc_truth as truth

pytestmark = pytest.mark.skipif(not {"vp9-svc", "vp9-svc-plain"} <= {c.name for c in truth.all_calls()},
                                reason="no VP9 SVC calls in data/video/webrtc/calls")


def _a_to_b(name):
    call = truth.call(name)
    d = call.direction("a", "video")
    assert d.outbound["scalabilityMode"] == "L2T2"
    return call, d


@pytest.mark.parametrize("name", ["vp9-svc", "vp9-svc-plain"])
def test_frames_from_headers_are_the_pictures_the_receiver_decoded(name):
    # A picture's spatial layers share its RTP timestamp: frames from the headers (encrypted or
    # not) = the receiver's framesDecoded, not the sender's framesSent (layer frames).
    call, d = _a_to_b(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        facts = {f.name: f for f in score_capture(call.capture("b"), options=VideoOptions(sdp=call.offer))}
    (f,) = [f for n, f in facts.items() if f"ssrc=0x{d.ssrc:08x}" in n]
    assert f.headers.frames_received == d.inbound["framesDecoded"] == d.inbound["framesReceived"]
    assert d.outbound["framesSent"] > 1.9 * d.inbound["framesDecoded"]  # two layer frames a picture


def test_plain_svc_decodes_pictures_at_the_top_layer_and_counts_layer_frames():
    call, d = _a_to_b("vp9-svc-plain")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sources = find_video(call.capture("b"), sdp=call.offer)
    (src,) = [s for s in sources if s.rtp is not None and s.rtp.ssrc == d.ssrc]
    video = receive_rtp(src.rtp, sdp=src.sdp)
    # RFC 9628 §4.2: layer frames (B..E) = the sender's framesSent; pictures = framesDecoded
    assert sum(u.layer_frames for u in video.units) == d.outbound["framesSent"]
    assert len(video.units) == d.inbound["framesDecoded"]
    assert any("spatial layers: " in n for n in video.notes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frames = list(video.frames())
    # one frame shown per picture, the top layer's size (the browser's frameWidth x frameHeight)
    assert len(frames) == d.inbound["framesDecoded"]
    sizes = [f.y.shape[::-1] for f in frames]
    top = (d.inbound["frameWidth"], d.inbound["frameHeight"])
    assert sizes.count(top) == sum(u.layer_frames == 2 for u in video.units)
    assert sizes[-1] == top


def _ivf(frames, path, fourcc=b"VP90"):
    """An IVF file (the libvpx test container: 32-byte header "DKIF", then per frame a 4-byte
    little-endian size and an 8-byte time) holding ``frames``."""
    head = b"DKIF" + struct.pack("<HH4sHHIIII", 0, 32, fourcc, 640, 480, 90000, 1, len(frames), 0)
    path.write_bytes(head + b"".join(struct.pack("<IQ", len(f), i) + f for i, f in enumerate(frames)))


def _ivf_frames(path):
    data = path.read_bytes()
    out, i = [], 32
    while i + 12 <= len(data):
        n = struct.unpack_from("<I", data, i)[0]
        out.append(data[i + 12:i + 12 + n])
        i += 12 + n
    return out


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg")
def test_a_superframe_splits_back_into_its_layer_frames_with_ffmpeg(tmp_path):
    # FFmpeg's vp9_superframe_split bitstream filter (the VP9 spec's Annex B as FFmpeg reads it)
    # gives back each picture's layer frames: 2 per two-layer picture, their bytes in order.
    call, d = _a_to_b("vp9-svc-plain")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (src,) = [s for s in find_video(call.capture("b"), sdp=call.offer) if s.rtp is not None and s.rtp.ssrc == d.ssrc]
    units = [u for u in receive_rtp(src.rtp, sdp=src.sdp).units if u.complete][:30]
    _ivf([u.data for u in units], tmp_path / "in.ivf")
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", str(tmp_path / "in.ivf"), "-c", "copy",
                    "-bsf:v", "vp9_superframe_split", "-f", "ivf", str(tmp_path / "out.ivf")], check=True)
    split = _ivf_frames(tmp_path / "out.ivf")
    assert len(split) == sum(u.layer_frames for u in units) > len(units)
    at = 0
    for u in units:
        parts = split[at:at + u.layer_frames]
        at += u.layer_frames
        index = 2 + u.layer_frames * ((u.data[-1] >> 3 & 3) + 1) if u.layer_frames > 1 else 0  # Annex B.3
        assert b"".join(parts) == u.data[:len(u.data) - index]


def test_the_browsers_sdp_is_the_one_the_scan_applies():
    call, d = _a_to_b("vp9-svc-plain")
    sections = parse_sdp(call.offer.read_text()).media
    assert any(m.media == "video" and m.encoding(d.codec["payloadType"])[0].upper() == "VP9" for m in sections)
