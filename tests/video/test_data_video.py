"""Video scored from the real captures of data/video/, checked against FFmpeg and tshark.

The captures were made by data/video/make_samples.sh (ffmpeg streaming data/video/reference/
clip.ts through the tbf testbed, idle and under downlink TCP load); next to each receiver
capture the script stored what FFmpeg itself made of the received stream:

* ``<cap>.ffprobe-frames.csv``: ``ffprobe -show_entries frame=...`` (one line per decoded
  frame; command in the file's first line);
* ``<cap>.framemd5``: ``ffmpeg -copyts -i <received> -f framemd5 -`` (MD5 of every decoded
  picture with its PTS).

For MPEG-TS transports the received stream is the UDP (or RTP, 12-byte header stripped)
payloads in capture order, rebuilt here with ``tshark -T fields -e udp.payload`` (or
``-e rtp.payload``) and decoded by the system's ``ffmpeg``. For RTP/H.264, FFmpeg's own RTP
receiver was fed a replay of the capture (data/video/README.md).

Our decoder is FFmpeg too (PyAV's bundled libavcodec, another version than the system's),
run on one thread as ``ffmpeg -threads 1`` was: for MPEG-TS every decoded picture, damaged
ones included, equals FFmpeg's bit for bit, so per-frame and clip PSNR equal FFmpeg's
``psnr`` filter (which pairs frames by timestamp with framesync). For RTP/H.264 our
depacketiser and FFmpeg's RTP receiver hand the decoder different data for some damaged
access units, so there the comparison covers the pictures both made identically.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

from qoe.video import VideoOptions, VideoScore, find_video, receive_rtp, receive_ts, score_capture

DATA = Path(__file__).resolve().parents[2] / "data" / "video"
CAPS = DATA / "captures"
REF = DATA / "reference" / "clip.ts"
SCENARIOS = ["rtpts-idle-b64", "rtpts-down-b64", "rtpts-down-b8", "udpts-idle-b64", "udpts-down-b64",
             "h264-idle-b64", "h264-down-b64", "h264-down-b8"]
TS_SCENARIOS = [s for s in SCENARIOS if not s.startswith("h264")]

pytestmark = [
    pytest.mark.skipif(not REF.exists(), reason="data/video not present"),
    pytest.mark.skipif(shutil.which("ffmpeg") is None or shutil.which("tshark") is None,
                       reason="needs ffmpeg and tshark (make test installs them)"),
]


def _sdp(name: str) -> str | None:
    p = CAPS / f"{name}.sdp"
    return str(p) if p.exists() else None


@pytest.fixture(scope="module")
def scored():
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # decoder messages on the damaged streams
        for name in SCENARIOS:
            (res,) = score_capture(CAPS / f"{name}_client.pcap", REF, options=VideoOptions(sdp=_sdp(name)))
            out[name] = res
    return out


def _ffprobe_frames(name: str) -> list[str]:
    lines = (CAPS / f"{name}_client.pcap.ffprobe-frames.csv").read_text().splitlines()
    return [ln for ln in lines if ln.startswith("key_frame=")]


def _framemd5_lines(path: Path) -> list[tuple[int, str]]:
    """(pts, MD5) per line of an ffmpeg framemd5 file, in its order."""
    return [(int(f[2]), f[5]) for f in (
        [x.strip() for x in ln.split(",")] for ln in path.read_text().splitlines() if not ln.startswith("#"))]


def _framemd5(path: Path) -> dict[int, str]:
    return dict(_framemd5_lines(path))


def _received(name: str):
    (src,) = find_video(CAPS / f"{name}_client.pcap", sdp=_sdp(name))
    return receive_rtp(src.rtp, sdp=src.sdp) if src.rtp is not None else receive_ts(src.name, list(src.payloads))


def _md5(frame) -> str:
    return hashlib.md5(frame.y.tobytes() + frame.u.tobytes() + frame.v.tobytes()).hexdigest()


@pytest.mark.parametrize("name", SCENARIOS)
def test_frames_decoded_equal_ffprobe(scored, name):
    facts = scored[name].facts
    ff = _ffprobe_frames(name)
    assert facts.frames_decoded == len(ff)
    # frames FFmpeg gave without a PTS are the ones a player cannot place
    assert facts.frames_untimed == sum("pts=N/A" in ln for ln in ff) or name.startswith("h264")
    assert (facts.width, facts.height, facts.frame_rate) == (352, 288, 25.0)


@pytest.mark.parametrize("name", SCENARIOS)
def test_decoded_frames_are_ffmpegs_bit_for_bit(name):
    """Our pictures, in decoding order, are FFmpeg's (``ffmpeg -threads 1 ... -f framemd5``),
    damaged ones included; for MPEG-TS their presentation times are ffprobe's too (frames
    ffprobe shows with pts=N/A have none in ours either)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = [(f.pts, _md5(f)) for f in _received(name).frames()]
    theirs = _framemd5_lines(CAPS / f"{name}_client.pcap.framemd5")
    ref = set(_framemd5(DATA / "reference" / "clip.ts.framemd5").values())
    if name == "h264-down-b64":
        # FFmpeg's RTP receiver and our depacketiser give the decoder different data for some
        # damaged access units: the pictures decoded from intact data are the same, at the same times
        base = ours[0][0]
        mine = {p - base: h for p, h in ours}
        intact = [(p, h) for p, h in theirs if h in ref]
        assert len(intact) == 15 and all(mine.get(p) == h for p, h in intact)
        assert sum(a == b for (_, a), (_, b) in zip(ours, theirs)) >= 170  # 175 of 198 measured
    else:
        assert [h for _, h in ours] == [h for _, h in theirs]
    if not name.startswith("h264"):
        ff = [ln.split("pts=")[1].split(",")[0] for ln in _ffprobe_frames(name)]
        assert [p for p, _ in ours] == [-1 if x == "N/A" else int(x) for x in ff]
    manifest = json.loads((CAPS / "manifest.json").read_text())
    (sc,) = [s for s in manifest["scenarios"] if s["scenario"] == name]
    assert sum(h in ref for _, h in ours) == sc["frames"]["bitexact_frames"]


def _first_rtp_timestamp(pcap: Path) -> int:
    """The first RTP timestamp the sender sent (tshark, RTP decoded on port 5004)."""
    out = subprocess.run(
        ["tshark", "-r", str(pcap), "-d", "udp.port==5004,rtp", "-Y", "rtp && udp.dstport==5004",
         "-T", "fields", "-e", "rtp.timestamp"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    return int(out[0])


@pytest.mark.parametrize("name", SCENARIOS)
def test_aligned_on_the_reference(scored, name):
    """MPEG-TS keeps the reference's PTS (-copyts); ffmpeg's RTP muxer sends random base + PTS:
    reference PTS = 133200 + (RTP ts - the sender's first RTP ts) (data/video/README.md)."""
    res = scored[name]
    ticks = round(res.offset_s * 90000)
    if name.startswith("h264"):
        assert ticks == 133200 - _first_rtp_timestamp(CAPS / f"{name}_server.pcap")
        # damaged beyond recognition (h264-down-b8: no frame like its source): the stream's start
        assert res.alignment in ("content", "start")
    else:
        assert (ticks, res.alignment) == (0, "pts")


def _ffmpeg_psnr_mse(name: str, tmp: Path) -> list[float]:
    """FFmpeg's psnr filter, reference as the main input: per reference frame, mse_y."""
    field = "rtp.payload" if name.startswith("rtpts") else "udp.payload"
    hexes = subprocess.run(
        ["tshark", "-r", str(CAPS / f"{name}_client.pcap"), "-d", "udp.port==5004,rtp", "-Y", "udp.dstport==5004",
         "-T", "fields", "-e", field], capture_output=True, text=True, check=True,
    ).stdout.split()
    ts = tmp / f"{name}.ts"
    ts.write_bytes(b"".join(bytes.fromhex(h) for h in hexes))
    stats = tmp / f"{name}.psnr.log"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-loglevel", "fatal", "-threads", "1", "-copyts", "-i", str(REF), "-threads", "1",
         "-copyts", "-i", str(ts), "-lavfi", f"[0:v][1:v]psnr=stats_file={stats}", "-f", "null", "-"],
        check=True,
    )
    return [float(ln.split("mse_y:")[1].split()[0]) for ln in stats.read_text().splitlines()]


# rtpts-down-b8 (54 % loss) is left out: 13 of its frames have no PTS (ffprobe: pts=N/A) and
# the ffmpeg command line invents times for them and shifts 16 others to keep its output
# monotonic (its framemd5 shows them), so its psnr filter pairs pictures a player would not
# show at those times. Its pictures and raw times are FFmpeg's (test above).
@pytest.mark.parametrize("name", [s for s in TS_SCENARIOS if s != "rtpts-down-b8"])
def test_psnr_equals_ffmpeg(scored, name, tmp_path):
    """Per reference frame and per clip, our luma PSNR equals FFmpeg's psnr filter (reference as
    main input, frames paired by timestamp with framesync) on FFmpeg's own decoding."""
    res: VideoScore = scored[name]
    cmp = res.comparison
    theirs = _ffmpeg_psnr_mse(name, tmp_path)
    assert len(theirs) == cmp.n_frames == 200
    ffmd5 = _framemd5(CAPS / f"{name}_client.pcap.framemd5")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same = {f.pts for f in _received(name).frames() if ffmd5.get(f.pts) == _md5(f)}
    ours = 255.0**2 / np.power(10.0, cmp.psnr.values / 10.0)
    shown = np.round(cmp.dist_pts_s * 90000)
    checked = 0
    for i in range(cmp.n_frames):
        if shown[i] in same:
            assert ours[i] == pytest.approx(theirs[i], rel=1e-4, abs=1e-6)
            checked += 1
    assert checked == cmp.n_frames  # every shown picture is FFmpeg's: the clip PSNR is FFmpeg's too
    clip = math.inf if not any(theirs) else 10 * math.log10(255.0**2 / np.mean(theirs))
    ours_clip = cmp.psnr.summary().clip
    assert (math.isinf(clip) and math.isinf(ours_clip)) or ours_clip == pytest.approx(clip, abs=0.01)


def test_qoe_score_and_cli_score_video(scored):
    """qoe.score and `qoe score` find the video stream and its reference (not speech) by themselves."""
    import qoe
    from click.testing import CliRunner
    from qoe_cli.main import cli

    name = "udpts-down-b64"
    cap = CAPS / f"{name}_client.pcap"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = qoe.score(cap, reference=REF)
        facts_only = qoe.score(cap, kind="video")
    assert rep.kind == "video" and len(rep) == 1 and rep.inputs["reference"] == str(REF)
    row = rep.to_records()[0]
    assert row["kind"] == "video" and row["psnr_db"] == scored[name].comparison.psnr.summary().clip
    assert row["mos"] == row["mos_ssim"] and rep.to_frame("frames").shape[0] == 200
    assert facts_only.to_records(brief=True)[0]["frames_decoded"] == 195
    res = CliRunner().invoke(cli, ["score", str(cap), "--ref", str(REF), "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert doc["kind"] == "video" and doc["results"][0]["facts"]["frames_decoded"] == 195
    with pytest.raises(qoe.InputError, match="at most one reference video"):
        qoe.score(cap, reference={"video": [REF, REF]})


def test_h264_without_sdp_is_recognised(scored):
    """Without the SDP file, the RTP/H.264 stream (dynamic payload type 96) is still found as
    H.264 by its NAL units, said in a note, and scored exactly as with the SDP."""
    name = "h264-down-b64"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (res,) = score_capture(CAPS / f"{name}_client.pcap", REF)
    assert any("taken for H.264" in n for n in res.facts.notes)
    assert res.comparison.psnr.summary().clip == scored[name].comparison.psnr.summary().clip
    assert res.facts.frames_decoded == scored[name].facts.frames_decoded
