"""Speed of qoe.video's SSIM and PSNR against scikit-image and FFmpeg, on the same luma frames.

For 720p and 1080p it makes a clip with FFmpeg (``testsrc2``, 25 frames/s), a distorted copy
(libx264 ``-crf 35``, decoded back), and keeps both as raw luma files. Then, in the same run,
it times on those frames

- qoe.video ``ssim`` (Wang, the default), ``ssim(variant="ffmpeg")`` and ``psnr``, frames in memory;
- scikit-image ``structural_similarity(gaussian_weights=True, sigma=1.5,
  use_sample_covariance=False, data_range=255)`` and ``peak_signal_noise_ratio`` (fewer frames:
  it is slow; it has no threads);
- FFmpeg's ``ssim`` and ``psnr`` filters on the raw luma files (``-f rawvideo -pix_fmt gray``:
  the bytes are read as they are, nothing is converted), replayed from memory by the ``loop``
  filter so that start-up and reading are small; the same graph without the metric is timed
  too and subtracted, so FFmpeg's figure is the filter's own time, like ours,

once with one thread (``cv2.setNumThreads(1)``, ``threads=1``; FFmpeg ``-threads 1
-filter_threads 1 -filter_complex_threads 1``) and once with all threads. It prints frames
per second of wall time and per CPU-second (the latter is steadier on a shared machine), and
the ratios ours / scikit-image and ours / FFmpeg. Usage::

    python benchmarks/video_metrics.py [--short] [--frames N]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np

SIZES = {"720p": (1280, 720), "1080p": (1920, 1080)}


def make_frames(tmp: str, name: str, w: int, h: int, n: int) -> tuple[str, str, np.ndarray, np.ndarray]:
    """Raw luma files ref.y / dist.y of ``n`` frames, and the same frames as arrays."""
    ref_yuv, dist_mp4, dist_yuv = (os.path.join(tmp, f"{name}-{s}") for s in ("ref.yuv", "dist.mp4", "dist.yuv"))
    src = f"testsrc2=size={w}x{h}:rate=25"
    q = ["-nostdin", "-hide_banner", "-loglevel", "error", "-y"]  # -nostdin: ffmpeg takes commands from stdin ('q' ends it)
    subprocess.run(["ffmpeg", *q, "-f", "lavfi", "-i", src, "-frames:v", str(n), "-pix_fmt", "yuv420p",
                    "-f", "rawvideo", ref_yuv], check=True)
    subprocess.run(["ffmpeg", *q, "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", f"{w}x{h}", "-r", "25",
                    "-i", ref_yuv, "-c:v", "libx264", "-crf", "35", "-preset", "veryfast", dist_mp4], check=True)
    subprocess.run(["ffmpeg", *q, "-i", dist_mp4, "-f", "rawvideo", "-pix_fmt", "yuv420p", dist_yuv], check=True)
    frame = w * h * 3 // 2
    lumas = []
    for path in (ref_yuv, dist_yuv):
        data = np.fromfile(path, np.uint8).reshape(-1, frame)[:n, : w * h].reshape(-1, h, w)
        luma = os.path.splitext(path)[0] + ".y"
        data.tofile(luma)
        lumas.append((luma, np.ascontiguousarray(data)))
    return lumas[0][0], lumas[1][0], lumas[0][1], lumas[1][1]


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Best (wall s, CPU s) of ``repeat`` runs of ``fn``."""
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        best = min(best, (time.perf_counter() - w, time.process_time() - c))
    return best


def ffmpeg_time(args: list[str]) -> tuple[float, float]:
    """(wall s, CPU s) of one ffmpeg run (CPU from the children's rusage)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def ffmpeg_filter_fps(ref: str, dist: str, w: int, h: int, n: int, loops: int, filt: str,
                      one_thread: bool, repeat: int) -> tuple[float, float]:
    """Frames/s (wall, CPU) of FFmpeg's ``filt`` on the raw luma pair, net of reading and looping.

    Both inputs are read once and replayed ``loops`` times from memory by the ``loop`` filter
    (so disk and start-up are small against the metric); the same graph without the metric
    is timed too and subtracted.
    """
    threads = ["-threads", "1", "-filter_threads", "1", "-filter_complex_threads", "1"] if one_thread else []
    inp = ["-f", "rawvideo", "-pix_fmt", "gray", "-s", f"{w}x{h}", "-r", "25"]
    base = ["ffmpeg", "-nostdin", "-hide_banner", "-nostats", *threads, *inp, "-i", dist, *inp, "-i", ref]  # main input first
    replay = f"[0:v]loop=loop={loops - 1}:size={n}:start=0[a];[1:v]loop=loop={loops - 1}:size={n}:start=0[b]"
    with_filter = [*base, "-lavfi", f"{replay};[a][b]{filt}", "-f", "null", "-"]
    without = [*base, "-lavfi", replay, "-map", "[a]", "-map", "[b]", "-f", "null", "-"]
    frames = n * loops
    wall_f, cpu_f = min(ffmpeg_time(with_filter) for _ in range(repeat))
    wall_r, cpu_r = min(ffmpeg_time(without) for _ in range(repeat))
    return frames / max(wall_f - wall_r, 1e-9), frames / max(cpu_f - cpu_r, 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--short", action="store_true", help="fewer frames (CI)")
    ap.add_argument("--frames", type=int, default=None, help="frames per size for ours and FFmpeg")
    args = ap.parse_args()
    if shutil.which("ffmpeg") is None:
        raise SystemExit("ffmpeg is required")

    import cv2
    from skimage.metrics import peak_signal_noise_ratio, structural_similarity

    from qoe.video import psnr, ssim

    n = args.frames or (10 if args.short else 40)
    n_sk = 2 if args.short else 6
    repeat = 1 if args.short else 3
    loops = 5 if args.short else 10
    ncpu = os.cpu_count() or 1
    cv_default = cv2.getNumThreads()
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, opencv {cv2.__version__}, "
          f"{ncpu} CPUs; frames: {n} (scikit-image {n_sk}), best of {repeat}")
    print(subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True).stdout.splitlines()[0])
    print("fps = luma frames per second of wall time; fps/CPU = per CPU-second (steadier on a shared machine)")
    wang = dict(gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=255)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, (w, h) in SIZES.items():
            ref_path, dist_path, ref, dist = make_frames(tmp, label, w, h, n)
            for one in (True, False):
                cv2.setNumThreads(1 if one else cv_default)
                th = 1 if one else ncpu
                tag = "1" if one else f"all ({ncpu})"

                def add(metric: str, impl: str, frames: int, wall: float, cpu: float) -> None:
                    rows.append((label, tag, metric, impl, frames / wall, frames / cpu))

                add("SSIM Wang", "qoe", n, *timed(lambda: ssim(ref, dist, data_range=255, threads=th), repeat))
                add("SSIM Wang", "scikit-image", n_sk,
                    *timed(lambda: [structural_similarity(a, b, **wang) for a, b in zip(ref[:n_sk], dist[:n_sk])], 1))
                add("SSIM x264", "qoe", n,
                    *timed(lambda: ssim(ref, dist, data_range=255, variant="ffmpeg"), repeat))
                fw, fc = ffmpeg_filter_fps(ref_path, dist_path, w, h, n, loops, "ssim", one, repeat)
                rows.append((label, tag, "SSIM x264", "FFmpeg ssim", fw, fc))
                add("PSNR", "qoe", n, *timed(lambda: psnr(ref, dist, data_range=255), repeat))
                add("PSNR", "scikit-image", n,
                    *timed(lambda: [peak_signal_noise_ratio(a, b, data_range=255) for a, b in zip(ref, dist)], repeat))
                fw, fc = ffmpeg_filter_fps(ref_path, dist_path, w, h, n, loops, "psnr", one, repeat)
                rows.append((label, tag, "PSNR", "FFmpeg psnr", fw, fc))
    cv2.setNumThreads(cv_default)

    print()
    head = f"{'size':<6} {'threads':<8} {'metric':<10} {'implementation':<14} {'fps':>9} {'fps/CPU':>9} {'qoe ÷ this':>11}"
    print(head)
    print("-" * len(head))
    ours = {(r[0], r[1], r[2]): r for r in rows if r[3] == "qoe"}
    for size, tag, metric, impl, fw, fc in rows:
        q = ours[(size, tag, metric)]
        ratio = "" if impl == "qoe" else f"{q[4] / fw:.1f}×"
        print(f"{size:<6} {tag:<8} {metric:<10} {impl:<14} {fw:>9.1f} {fc:>9.1f} {ratio:>11}")
    print()
    for size in SIZES:
        s_q, s_sk = ours[(size, "1", "SSIM Wang")], next(r for r in rows if r[:4] == (size, "1", "SSIM Wang", "scikit-image"))
        p_q, p_sk = ours[(size, "1", "PSNR")], next(r for r in rows if r[:4] == (size, "1", "PSNR", "scikit-image"))
        print(f"{size}, one thread: Wang SSIM {s_q[4] / s_sk[4]:.1f}× scikit-image (target ≥ 5×, by CPU "
              f"{s_q[5] / s_sk[5]:.1f}×); PSNR {p_q[4] / p_sk[4]:.0f}× (target ≥ 50×, by CPU {p_q[5] / p_sk[5]:.0f}×)")


if __name__ == "__main__":
    main()
