"""Short real clips made with FFmpeg (lavfi sources, libx264) and FFmpeg's own scores of them.

Everything is generated once per test session in a temporary folder (nothing is committed);
each file's docstring entry gives the exact command. Tests that need ffmpeg skip when it is
absent.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

FFMPEG = shutil.which("ffmpeg")
FFPROBE = shutil.which("ffprobe")
N_FRAMES = 20
RATE = 25


#: Attempts at a tool run before the fixture gives up. A CI run once saw ``ffmpeg ... ssim ...
#: psnr`` exit with status 1, its stderr lost; it was not reproduced. A possible cause was
#: found later: the development machine's /dev/null had become a regular file (a rename
#: over it, as root; see qoe.outputs), which the suite gave ffmpeg as its stdin, and ffmpeg
#: takes keys from stdin as commands. ffmpeg now runs with ``-nostdin`` and the suite's
#: stdin is an empty pipe (tests/conftest.py); a failed run is still tried again, its
#: stderr kept: in a warning when a later attempt passes, in the error when none does.
ATTEMPTS = 3


def run(*args: str, cwd: Path | None = None) -> str:
    """Run ffmpeg/ffprobe quietly; return its standard output and error (where the filters print).

    A failure is retried (:data:`ATTEMPTS` in all); the error raised after the last names the
    command and ends with its standard error.
    """
    failures = []
    for attempt in range(ATTEMPTS):
        out = subprocess.run([*args], capture_output=True, text=True, cwd=cwd)  # stdin: see tests/conftest.py
        if out.returncode == 0:
            if failures:
                warnings.warn(f"{' '.join(args)} passed on attempt {attempt + 1}; it had failed:\n"
                              + "\n".join(failures), stacklevel=2)
            return out.stdout + out.stderr
        failures.append(f"exit status {out.returncode}: {out.stderr[-2000:]}")
        time.sleep(1.0)
    raise RuntimeError(f"{' '.join(args)} failed {ATTEMPTS} times:\n" + "\n".join(failures))


def encode(source: str, path: Path, *codec: str) -> Path:
    """``ffmpeg -nostdin -f lavfi -i SOURCE -frames:v 20 -pix_fmt yuv420p CODEC... PATH``."""
    run(FFMPEG, "-nostdin", "-hide_banner", "-y", "-f", "lavfi", "-i", source, "-frames:v", str(N_FRAMES),
        "-pix_fmt", "yuv420p", *codec, str(path))
    return path


def raw_planes(path: Path, width: int, height: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode with ffmpeg itself: ``ffmpeg -i PATH -f rawvideo -pix_fmt yuv420p -`` → (Y, U, V) stacks.

    An independent decoder path (not PyAV) for the oracles; yuv420p is the files' own
    format, so no conversion happens.
    """
    data = subprocess.run([FFMPEG, "-hide_banner", "-loglevel", "error", "-i", str(path), "-f", "rawvideo",
                           "-pix_fmt", "yuv420p", "-"], capture_output=True, check=True).stdout
    cw, ch = (width + 1) // 2, (height + 1) // 2
    frame = width * height + 2 * cw * ch
    buf = np.frombuffer(data, np.uint8).reshape(-1, frame)
    y = buf[:, : width * height].reshape(-1, height, width)
    u = buf[:, width * height : width * height + cw * ch].reshape(-1, ch, cw)
    v = buf[:, width * height + cw * ch :].reshape(-1, ch, cw)
    return y, u, v


def parse_stats(path: Path) -> list[dict[str, float]]:
    """FFmpeg ``ssim``/``psnr`` stats_file lines (``n:1 Y:0.97 ... All:0.98 (17.1)``) → dicts."""
    rows = []
    for line in path.read_text().splitlines():
        rows.append({k: float(v) for k, v in re.findall(r"(\w+):(\S+)", line)})
    return rows


@dataclass(frozen=True)
class FFmpegScores:
    """FFmpeg's scores of a (dist, ref) pair: per-frame stats files and its summary lines."""

    ssim: list[dict[str, float]]
    psnr: list[dict[str, float]]
    ssim_summary: dict[str, float]
    psnr_summary: dict[str, float]


def ffmpeg_scores(dist: Path, ref: Path, workdir: Path) -> FFmpegScores:
    """``ffmpeg -i DIST -i REF -lavfi "[0:v]split[a][b];[1:v]split[c][d];[a][c]ssim=stats_file=s.log;
    [b][d]psnr=stats_file=p.log" -f null -`` (main input first, reference second)."""
    s_log, p_log = workdir / f"{dist.stem}-ssim.log", workdir / f"{dist.stem}-psnr.log"
    graph = (f"[0:v]split[a][b];[1:v]split[c][d];[a][c]ssim=stats_file={s_log.name};"
             f"[b][d]psnr=stats_file={p_log.name}")
    err = run(FFMPEG, "-nostdin", "-hide_banner", "-nostats", "-i", str(dist), "-i", str(ref), "-lavfi", graph,
              "-f", "null", "-", cwd=workdir)
    ssim_line = next(l for l in err.splitlines() if "SSIM Y:" in l)
    psnr_line = next(l for l in err.splitlines() if "PSNR y:" in l)
    ssim_summary = {k: float(v) for k, v in re.findall(r"(\w+):(\S+)", ssim_line.split("]", 1)[1])}
    psnr_summary = {k: float(v) for k, v in re.findall(r"(\w+):(\S+)", psnr_line.split("]", 1)[1])}
    return FFmpegScores(parse_stats(s_log), parse_stats(p_log), ssim_summary, psnr_summary)


@dataclass(frozen=True)
class Clip:
    """A reference and a distorted encoding of the same source, with FFmpeg's scores."""

    ref: Path
    dist: Path
    width: int
    height: int
    ffmpeg: FFmpegScores


@pytest.fixture(scope="session")
def clips(tmp_path_factory) -> dict[str, Clip]:
    """Two pairs of 20-frame clips (25 frames/s), each encoded at two qualities:

    * ``"testsrc2"`` 320x240: ``ffmpeg -f lavfi -i testsrc2=size=320x240:rate=25 -frames:v 20
      -pix_fmt yuv420p -c:v libx264 -crf 12`` (reference) and ``-crf 38`` (distorted), .mp4;
    * ``"mandelbrot"`` 326x246 (not a multiple of 4 or 8: exercises the edges of FFmpeg's
      4×4 blocks and odd chroma sizes): ``mandelbrot=size=326x246:rate=25`` likewise, .mkv.
    """
    if FFMPEG is None:
        pytest.skip("ffmpeg is not installed")
    d = tmp_path_factory.mktemp("video-clips")
    out = {}
    for name, (w, h), ext in (("testsrc2", (320, 240), "mp4"), ("mandelbrot", (326, 246), "mkv")):
        src = f"{name}=size={w}x{h}:rate={RATE}"
        ref = encode(src, d / f"{name}-ref.{ext}", "-c:v", "libx264", "-crf", "12")
        dist = encode(src, d / f"{name}-dist.{ext}", "-c:v", "libx264", "-crf", "38")
        out[name] = Clip(ref, dist, w, h, ffmpeg_scores(dist, ref, d))
    return out


@pytest.fixture(scope="session")
def clip(clips) -> Clip:
    """The 320x240 testsrc2 pair."""
    return clips["testsrc2"]


@pytest.fixture(scope="session")
def variants(clip, tmp_path_factory) -> dict[str, Path]:
    """Distorted files derived from ``clip.dist`` (frames kept bit-exact with lossless x264, ``-qp 0``):

    * ``"dropped"``: frames 5 and 6 removed, the others keep their timestamps:
      ``ffmpeg -i dist.mp4 -vf "select='not(between(n,5,6))'" -fps_mode passthrough -c:v libx264 -qp 0
      dropped.mkv``;
    * ``"late"``: the first two frames removed (the stream starts at 0.08 s):
      ``... -vf "select='gte(n,2)'" -fps_mode passthrough ... late.mkv``;
    * ``"annexb"``: the distorted H.264 stream without a container (no timestamps):
      ``ffmpeg -i dist.mp4 -c:v copy -bsf:v h264_mp4toannexb dist.h264``;
    * ``"shifted"``: the distorted file starting 5 s later, after the reference's end:
      ``ffmpeg -itsoffset 5 -i dist.mp4 -c copy shifted.mkv``;
    * ``"small"``: another size, ``ffmpeg -f lavfi -i testsrc2=size=352x288:rate=25 ... small.mp4``;
    * ``"audio"``: no video stream, ``ffmpeg -f lavfi -i sine=duration=0.2 audio.wav``;
    * ``"text"``: not a media file.
    """
    d = tmp_path_factory.mktemp("video-variants")
    dist = str(clip.dist)
    lossless = ("-fps_mode", "passthrough", "-c:v", "libx264", "-qp", "0", "-pix_fmt", "yuv420p")
    out = {
        "dropped": d / "dropped.mkv",
        "late": d / "late.mkv",
        "annexb": d / "dist.h264",
        "audio": d / "audio.wav",
        "text": d / "notes.txt",
    }
    run(FFMPEG, "-hide_banner", "-y", "-i", dist, "-vf", "select='not(between(n,5,6))'", *lossless, str(out["dropped"]))
    run(FFMPEG, "-hide_banner", "-y", "-i", dist, "-vf", "select='gte(n,2)'", *lossless, str(out["late"]))
    run(FFMPEG, "-hide_banner", "-y", "-i", dist, "-c:v", "copy", "-bsf:v", "h264_mp4toannexb", str(out["annexb"]))
    out["shifted"] = d / "shifted.mkv"
    run(FFMPEG, "-hide_banner", "-y", "-itsoffset", "5", "-i", dist, "-c", "copy", str(out["shifted"]))
    out["small"] = encode(f"testsrc2=size=352x288:rate={RATE}", d / "small.mp4", "-c:v", "libx264", "-crf", "20")
    run(FFMPEG, "-nostdin", "-hide_banner", "-y", "-f", "lavfi", "-i", "sine=duration=0.2", str(out["audio"]))
    out["text"].write_text("not a video\n")
    return out


def ffprobe_pts(path: Path) -> list[float]:
    """``ffprobe -v error -select_streams v:0 -show_entries frame=pts_time -of csv=p=0 PATH``."""
    text = run(FFPROBE, "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time", "-of", "csv=p=0",
               str(path))
    return [float(line.strip().strip(",")) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="session")
def decode_raw():
    """:func:`raw_planes`: ffmpeg's own decode of a file to (Y, U, V) stacks (an oracle path)."""
    return raw_planes


@pytest.fixture(scope="session")
def probe_pts():
    """:func:`ffprobe_pts`: ffprobe's presentation times of a file's frames."""
    if FFPROBE is None:
        pytest.skip("ffprobe is not installed")
    return ffprobe_pts


@pytest.fixture(scope="session")
def score_with_ffmpeg():
    """:func:`ffmpeg_scores`: FFmpeg's psnr/ssim filters run on (dist, ref, workdir)."""
    if FFMPEG is None:
        pytest.skip("ffmpeg is not installed")
    return ffmpeg_scores
