"""A capture argument of the wrong type gets an InputError that says what to give, never a
TypeError from deep inside (``os.fspath`` of a file object, a number, None).

Functions that read a capture by its path (qoe.score, the RTP scan, voice and video from a
capture) take ``str``, ``os.PathLike`` or a ``bytes`` path; the readers of qoe.capture and
qoe.web take file objects too, and any of them refuses raw bytes with a message.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

import qoe
from qoe.capture import capture_path, read_packets
from qoe.errors import InputError
from qoe.rtp import find_streams, scan_capture
from qoe.video import find_video
from qoe.voice import emodel
from qoe.voice.io import capture_delays, extract_wav
from qoe.web import g1030

CAP = Path(__file__).resolve().parents[2] / "data" / "voice" / "captures" / "down-b8_client.pcap"


def test_capture_path_takes_str_pathlike_and_bytes_paths():
    assert capture_path(CAP) == capture_path(str(CAP)) == capture_path(os.fsencode(CAP)) == str(CAP)
    with pytest.raises(InputError, match=r"^receiver must be a file's path \(str or os.PathLike\), given int$"):
        capture_path(3, "receiver")
    with pytest.raises(InputError, match=r"given BytesIO: this reads the file by its path .* qoe.capture's readers "
                                         r"and qoe.web take file objects"):
        capture_path(io.BytesIO(b""))


_PATH_TAKERS = {
    "score": lambda x: qoe.score(x),
    "score-sender": lambda x: qoe.score(str(CAP), sender_capture=x),
    "find_streams": lambda x: find_streams(x),
    "scan_capture": lambda x: scan_capture(x),
    "find_video": lambda x: find_video(x),
    "capture_delays": lambda x: capture_delays(str(CAP), x),
    "extract_wav": lambda x: extract_wav(x, "out.wav"),
}
_NOT_PATHS = {"None": None, "int": 42, "file-object": io.BytesIO(b"\xd4\xc3\xb2\xa1")}


@pytest.mark.parametrize("call, bad", [
    pytest.param(call, bad, id=f"{b}-{c}") for b, bad in _NOT_PATHS.items() for c, call in _PATH_TAKERS.items()
    if not (c == "score-sender" and bad is None)  # (sender_capture=None means no sender capture)
])
def test_a_path_taking_function_refuses_other_types_with_input_error(call, bad):
    with pytest.raises(InputError, match=r"must be a file's path \(str or os.PathLike\), given "):
        call(bad)


@pytest.mark.skipif(not CAP.is_file(), reason="data/voice captures not present")
def test_a_bytes_path_is_a_path_and_raw_bytes_are_refused_by_the_readers():
    with pytest.warns(qoe.QoEWarning, match="one-way delay assumed 0 ms"):  # (one capture only)
        assert len(qoe.score(os.fsencode(CAP), kind="voice").results) == 2
    assert len(find_streams(os.fsencode(CAP))) == 2
    with pytest.raises(InputError, match="given bytes: decode a bytes path with os.fsdecode, wrap bytes in io.BytesIO"):
        read_packets(os.fsencode(CAP))
    assert sum(1 for _ in read_packets(io.BytesIO(CAP.read_bytes()))) > 0


@pytest.mark.parametrize("ssrc, message", [
    (-1, r"SSRC -1 is outside 0..0xffffffff \(RFC 3550 §5.1: 32 bits\)"),
    (1 << 32, "is outside 0..0xffffffff"),
    (1.5, "SSRC must be an integer or its text .* given float"),
    (True, "given bool"),
    ("0xzz", "is not a number"),
])
def test_an_ssrc_out_of_32_bits_or_of_another_type_is_refused(ssrc, message):
    """ssrc=-1 was looked for (as 0x-0000001) and not found; a float reached int()."""
    from qoe.voice.io import parse_ssrc

    with pytest.raises(InputError, match=message):
        parse_ssrc(ssrc)


def test_an_ssrc_of_any_integer_type_is_taken():
    import numpy as np

    from qoe.voice.io import parse_ssrc

    assert [parse_ssrc(v) for v in (np.int64(5), np.uint32(0x7A1C0008), "0x7a1c0008", " 17 ", None)] == [
        5, 0x7A1C0008, 0x7A1C0008, 17, None]


def test_an_sdp_option_of_another_type_is_refused():
    from qoe.video import VideoOptions

    with pytest.raises(InputError, match=r"sdp must be an SDP file's path \(str or os.PathLike\); given int"):
        VideoOptions(sdp=42)


@pytest.mark.parametrize("call, message", [
    (lambda: emodel.r_factor(mouth_to_ear_ms="abc"),
     r"^mouth_to_ear_ms must be a number or an array of numbers; given 'abc'$"),
    (lambda: emodel.r_factor(telr="high"), "^telr must be a number or an array of numbers"),
    (lambda: emodel.r_factor(codec=5), r"^codec must be a codec's name \(str\), e.g. 'G.711-plc'; given int$"),
    (lambda: emodel.delay_impairment("x"), "^mouth_to_ear_ms must be a number"),
    (lambda: emodel.simplified_r(200.0, "lots"), "^loss must be a number"),
    (lambda: g1030.mos("fast"), "^page load time must be a number"),
    (lambda: qoe.mos.mos_to_r({"mos": 4}), "^mos must be a number"),
], ids=["r_factor", "r_factor-param", "codec", "delay_impairment", "simplified_r", "g1030", "mos_to_r"])
def test_a_model_given_text_where_a_number_goes_names_the_argument(call, message):
    """The models took np.asarray(x, float) of their arguments: text gave NumPy's 'could not
    convert string to float' ValueError, a codec given as a number an AttributeError."""
    with pytest.raises(InputError, match=message):
        call()


def test_parse_sdp_and_pages_from_har_name_what_they_take():
    """parse_sdp(5) and pages_from_har([...]) ended in AttributeError ('splitlines', 'pages')."""
    from qoe.rtp import parse_sdp
    from qoe.web import pages_from_har

    with pytest.raises(InputError, match=r"parse_sdp takes the SDP text \(str or bytes\); given int"):
        parse_sdp(5)
    sdp = "v=0\r\nc=IN IP4 192.0.2.1\r\nm=audio 4000 RTP/AVP 8\r\n"
    assert parse_sdp(sdp.encode()) == parse_sdp(sdp)
    with pytest.raises(InputError, match=r"pages_from_har takes a HAR log as qoe.web.har.read_har .* given list"):
        pages_from_har([1, 2])


@pytest.mark.parametrize("shape", [(20, 20, 3), (480, 640, 4), (5, 20, 20, 3)])
def test_an_image_with_colour_channels_last_is_named_not_scored_as_frames(shape):
    """psnr/ssim take planes (H, W) or frames (N, H, W): an RGB image (H, W, 3) was read as H
    frames of W × 3 pixels (PSNR gave a number per row; SSIM said 'planes of at least 11×11')."""
    import numpy as np

    from qoe.video import psnr, ssim

    img = np.zeros(shape, dtype=np.uint8)
    for f in (psnr, ssim):
        with pytest.raises(InputError, match=r"an image with its colour channels last \(H, W, 3\)\? give its luma"):
            f(img, img, data_range=255)
