"""End to end: how long ``qoe.video.score_capture`` takes on a 720p capture, on one core.

Issue 9's last evidence point: a 10 s 1280x720 capture is scored in less than 10 s on one
core. This script makes everything it needs in a temporary directory (nothing is committed):

1. a reference clip: 10 s (``--short``: 2 s) of 1280x720 at 25 frames/s with natural motion
   (the lavfi graph of ``data/video/make_samples.sh`` at 720p: a Mandelbrot zoom panned
   along a Lissajous path, blended with Conway's life, a moving picture-in-picture, a
   scrolling caption, light noise), encoded by x264 as the IPTV-style samples are (8 slices
   per picture, 2 B frames, an IDR every 25 pictures, 2.5 Mbit/s CBR) into MPEG-TS;
2. two captures of it, each sent by ffmpeg's own muxers (``-c copy``) to a UDP socket of
   this script on 127.0.0.1, which writes every datagram it receives into a pcap with its
   arrival time: RTP/H.264 (RFC 6184, ``-f rtp -sdp_file``) and RTP/MPEG-TS (RFC 2250,
   ``-f rtp_mpegts``); ``--loss`` per cent of the datagrams (default 1, drawn with a fixed
   seed) are left out of the pcap to model network loss (the socket's own capture is
   checked complete: no gap in the RTP sequence numbers);
3. for each capture, in a fresh Python process pinned to one core (``taskset -c 0``; OpenCV
   ``cv2.setNumThreads(1)``, ``OMP/OPENBLAS/MKL_NUM_THREADS=1``; FFmpeg's decoders, left at
   their automatic thread count, see one CPU), the time of
   ``qoe.video.score_capture(capture, reference, options=VideoOptions(sdp=...))``: wall and CPU seconds, and the
   time to import the library (a ``qoe score`` command pays it too); then the same call
   again under ``cProfile``, whose cumulative times per function give the breakdown:

   - capture read + RTP scan: :func:`qoe.video.find_video` (pcap reading, RTP discovery and
     statistics, MPEG-TS detection in plain UDP);
   - depacketise: :func:`qoe.video.receive_rtp` / :func:`~qoe.video.receive_ts` (jitter
     buffer, RFC 6184 access units or the rebuilt transport stream and its checks);
   - decode received / decode reference: the PyAV decoding generators
     (:func:`qoe.video.receiver.decode`, :func:`qoe.video.read_frames`), all passes (the
     table says how many: ``ReceivedVideo.frames`` and ``read_frames`` calls; :mod:`qoe.video.stream`
     decodes the received stream and the reference once each when their luma fits
     ``RETAIN_BYTES``, else twice: thumbnails to align, then frames to score);
   - align: thumbnails (:func:`qoe.video.align.thumbnail`) and :func:`~qoe.video.find_offset`;
   - PSNR, SSIM: the per-frame metric calls (Wang SSIM on luma, the default);
   - other: the rest (pairing, bookkeeping, generator plumbing, the profiler's own cost);

   and, for what a user gets without pinning, the same call in a fresh process on every CPU
   with the libraries' default threads (scores are checked identical across all runs);

4. for comparison, what a user would otherwise run on the same files in the same run, on the
   same core with one thread: FFmpeg decoding the transport stream rebuilt from the
   RTP/MPEG-TS capture and the reference, with its ``psnr`` and ``ssim`` filters
   (``-threads 1 -filter_threads 1 -filter_complex_threads 1``), and the same decoding
   without the filters. FFmpeg pairs frames with its framesync (no RTP, no alignment), its
   PSNR/SSIM cover Y, U and V, and its SSIM is x264's 8x8 block SSIM, not Wang's: a
   yardstick for the cost of decoding and metrics, not the same computation (also, FFmpeg
   guesses a time for a picture decoded without one and shows it; qoe does not).

Each timed measurement runs ``--runs`` times (default 2); the table shows the best and the
spread. The machine may be shared: CPU seconds are steadier than wall seconds. Usage::

    python benchmarks/video_e2e.py [--short] [--seconds S] [--loss PCT] [--runs N] [--keep DIR]

``--keep DIR`` writes the clip and captures into DIR and reuses them when present (to time
the same files before and after a change).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

W, H, FPS = 1280, 720, 25
RATE = "2500k"
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
ENV_ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                  "NUMEXPR_NUM_THREADS": "1", "OPENCV_FOR_THREADS_NUM": "1"}
TRANSPORTS = ("rtp-h264", "rtp-mpegts")
SENDERS = {
    "rtp-h264": ["-c", "copy", "-an", "-f", "rtp", "-sdp_file", "SDP", "rtp://127.0.0.1:PORT"],
    "rtp-mpegts": ["-c", "copy", "-an", "-f", "rtp_mpegts", "rtp://127.0.0.1:PORT"],
}
# Stages of the breakdown: (label, [(file suffix, function name), ...]); cumulative times of
# these functions do not nest in one another (checked: their sum stays below the total).
STAGES = [
    ("capture read + RTP scan", [("qoe/video/flows.py", "find_video")]),
    ("depacketise", [("qoe/video/receiver.py", "receive_rtp"), ("qoe/video/receiver.py", "receive_ts")]),
    ("decode received", [("qoe/video/receiver.py", "decode")]),
    ("decode reference", [("qoe/video/io.py", "_decode")]),
    ("align", [("qoe/video/align.py", "thumbnail"), ("qoe/video/align.py", "find_offset")]),
    ("PSNR", [("qoe/video/_psnr.py", "psnr_frame")]),
    ("SSIM", [("qoe/video/_ssim.py", "frame")]),
]


def _run(args: list[str], **kw: object) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=True, **kw)  # type: ignore[call-overload]


def source_graph(seconds: int) -> str:
    """The lavfi graph of data/video/make_samples.sh, scaled to 1280x720."""
    text = (f",drawtext=fontfile={FONT}:text='qoe video %{{n}}':fontsize=48:fontcolor=white:borderw=3:"
            f"x='{W}-mod(180*t,{W}+560)':y=40") if os.path.exists(FONT) else ""
    return (
        f"mandelbrot=s=480x270:r={FPS}:start_scale=2.5:end_scale=0.3:end_pts={FPS * seconds}:maxiter=128,"
        f"scale=1920:1080:flags=bicubic,crop={W}:{H}:x='320+280*sin(2*PI*t/8)':y='180+160*sin(2*PI*t/5)',"
        f"format=yuv420p[m];"
        f"life=s=320x180:r={FPS}:mold=20:ratio=0.12:seed=7:life_color=#ffe060:death_color=#802020:"
        f"mold_color=#103050,scale={W}:{H}:flags=neighbor,format=yuv420p[l];"
        f"[m][l]blend=all_mode=overlay:all_opacity=0.4[b];"
        f"testsrc2=s=320x240:r={FPS},format=yuv420p[t];"
        f"[b][t]overlay=x='mod(100*t,{W}+320)-320':y='330+200*sin(2*PI*t/3)':shortest=1{text},"
        f"noise=alls=2:allf=t:all_seed=42,trim=duration={seconds}"
    )


def make_reference(path: str, seconds: int) -> None:
    _run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-filter_complex", source_graph(seconds),
          "-frames:v", str(FPS * seconds), "-c:v", "libx264", "-preset", "veryfast", "-profile:v", "main",
          "-bf", "2", "-g", str(FPS), "-keyint_min", str(FPS), "-sc_threshold", "0", "-slices", "8",
          "-b:v", RATE, "-minrate", RATE, "-maxrate", RATE, "-bufsize", RATE, "-x264-params", "nal-hrd=cbr",
          "-pix_fmt", "yuv420p", "-f", "mpegts", path])


def capture(ref: str, transport: str, out_dir: str, loss_pct: float) -> tuple[str, str | None, int, int]:
    """Send ``ref`` with ffmpeg to a local UDP socket, write a pcap; (pcap, sdp, sent, kept)."""
    import dpkt
    import numpy as np

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.settimeout(1.0)
    got: list[tuple[float, bytes, int]] = []
    sent = threading.Event()  # ffmpeg has exited: a quiet socket now means the stream is over

    def listen() -> None:
        # quiet before ffmpeg exits is ffmpeg still starting (over a second on a loaded machine)
        while True:
            try:
                data, (_, sport) = sock.recvfrom(65535)
            except socket.timeout:
                if sent.is_set():
                    return
                continue
            got.append((time.time(), data, sport))

    t = threading.Thread(target=listen)
    t.start()
    sdp = os.path.join(out_dir, f"{transport}.sdp") if transport == "rtp-h264" else None
    args = [sdp if a == "SDP" else a.replace("PORT", str(port)) for a in SENDERS[transport]]
    # no -re: the socket reads as fast as ffmpeg sends (checked below); arrival times are then
    # not the stream's pace, which the scorer does not need without a jitter buffer
    try:
        _run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", ref, *args])
    finally:
        sent.set()
    t.join()
    sock.close()
    seq = np.array([int.from_bytes(d[2:4], "big") for _, d, _ in got])
    gaps = np.count_nonzero((np.diff(seq) % 65536) != 1)
    if gaps:
        raise SystemExit(f"{transport}: the local socket missed datagrams ({gaps} sequence gaps); rerun")
    rng = np.random.default_rng(2014)
    drop = rng.random(len(got)) < loss_pct / 100.0
    pcap = os.path.join(out_dir, f"{transport}.pcap")
    with open(pcap, "wb") as fh:
        w = dpkt.pcap.Writer(fh, linktype=dpkt.pcap.DLT_RAW)
        for (ts, data, sport), gone in zip(got, drop.tolist()):
            if gone:
                continue
            udp = dpkt.udp.UDP(sport=sport, dport=port, data=data)
            udp.ulen = len(udp)
            ip = dpkt.ip.IP(src=socket.inet_aton("127.0.0.1"), dst=socket.inet_aton("127.0.0.1"), p=17, data=udp)
            ip.len = len(ip)
            w.writepkt(bytes(ip), ts)
    return pcap, sdp, len(got), int(len(got) - drop.sum())


# ------------------------------------------------------------------------------------------
# the worker: one fresh process, pinned, timing the public call


def worker(cap: str, ref: str, sdp: str | None, out: str, mode: str) -> None:
    """Time ``score_capture`` in this process; ``mode`` "one": one thread, and profile it too."""
    t0 = time.perf_counter()
    import cv2

    if mode == "one":
        cv2.setNumThreads(1)
    import av  # noqa: F401

    from qoe.video import VideoOptions, score_capture

    t_import = time.perf_counter() - t0
    import cProfile
    import pstats
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # decoder complaints about the lost packets
        w, c = time.perf_counter(), time.process_time()
        (score,) = score_capture(cap, ref, options=VideoOptions(sdp=sdp))
        wall, cpu = time.perf_counter() - w, time.process_time() - c
        prof = cProfile.Profile()
        w = time.perf_counter()
        if mode == "one":
            prof.enable()
            score_capture(cap, ref, options=VideoOptions(sdp=sdp))
            prof.disable()
        prof_wall = time.perf_counter() - w
    stats = pstats.Stats(prof).stats if mode == "one" else {}  # {(file, line, func): (cc, nc, tt, ct, callers)}
    stages = {}
    for label, funcs in STAGES:
        stages[label] = sum(ct for (f, _l, fn), (_cc, _nc, _tt, ct, _c) in stats.items()
                            if any(f.replace(os.sep, "/").endswith(sfx) and fn == name for sfx, name in funcs))
    # decoding passes: calls of the functions that start one (each returns a generator)
    passes = {what: sum(nc for (f, _l, fn), (_cc, nc, _tt, _ct, _c) in stats.items()
                        if f.replace(os.sep, "/").endswith(sfx) and fn == name)
              for what, sfx, name in (("received", "qoe/video/receiver.py", "frames"),
                                      ("reference", "qoe/video/io.py", "read_frames"))}
    cmp = score.comparison
    result = {"passes": passes,
        "import_s": t_import, "wall_s": wall, "cpu_s": cpu, "profiled_wall_s": prof_wall, "stages": stages,
        "cv2_threads": cv2.getNumThreads(), "affinity": sorted(os.sched_getaffinity(0)),
        "frames": cmp.n_frames, "paired": cmp.n_paired, "alignment": score.alignment,
        "frames_decoded": score.facts.frames_decoded, "frames_damaged": score.facts.frames_damaged,
        "packets_lost": score.facts.packets_lost,
        "psnr_clip": cmp.psnr.summary().clip, "psnr_median": cmp.psnr.summary().median,
        "ssim_clip": cmp.ssim.summary().clip,
        "psnr_sum": float(sum(v for v in cmp.psnr.values.tolist() if v == v and v != float("inf"))),
        "ssim_sum": float(sum(v for v in cmp.ssim.values.tolist() if v == v)),
    }
    with open(out, "w") as fh:
        json.dump(result, fh)


def pinned(args: list[str]) -> list[str]:
    return (["taskset", "-c", "0"] if shutil.which("taskset") else []) + args


def run_worker(cap: str, ref: str, sdp: str | None, tmp: str, mode: str = "one") -> dict:
    """Run :func:`worker` in a fresh process: ``mode`` "one" pinned to CPU 0 with one thread
    everywhere; "all" on every CPU with the libraries' default threads (what a user gets)."""
    out = os.path.join(tmp, "worker.json")
    env = dict(os.environ, **(ENV_ONE_THREAD if mode == "one" else {}))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.join(ROOT, "src"), env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", cap, ref, sdp or "", out, mode]
    _run(pinned(cmd) if mode == "one" else cmd, env=env)
    with open(out) as fh:
        return json.load(fh)


def ffmpeg_time(args: list[str]) -> tuple[float, float, str]:
    """(wall s, CPU s, stderr) of one pinned ffmpeg run."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = _run(pinned(args), capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), r.stderr


def rebuilt_ts(cap: str, path: str) -> None:
    """The transport stream our receiver rebuilds from the RTP/MPEG-TS capture, as a file."""
    from qoe.video import find_video, receive_rtp

    (src,) = find_video(cap)
    with open(path, "wb") as fh:
        fh.write(receive_rtp(src.rtp).ts)


def ffmpeg_compare(received: str, ref: str) -> dict[str, tuple[float, float]]:
    one = ["-threads", "1", "-filter_threads", "1", "-filter_complex_threads", "1"]
    # the reference is the main input (one output frame per reference frame), true PTS kept
    base = ["ffmpeg", "-nostdin", "-hide_banner", "-nostats", *one, "-threads", "1", "-copyts", "-i", ref,
            "-threads", "1", "-copyts", "-i", received]
    metrics = [*base, "-lavfi", "[0:v]split[a0][a1];[1:v]split[b0][b1];[a0][b0]psnr[p];[a1][b1]ssim[s]",
               "-map", "[p]", "-map", "[s]", "-f", "null", "-"]
    psnr_only = [*base, "-lavfi", "[0:v][1:v]psnr", "-f", "null", "-"]
    decode_only = [*base, "-map", "0:v", "-map", "1:v", "-f", "null", "-"]
    out = {}
    for name, cmd in (("decode both + psnr + ssim", metrics), ("decode both + psnr", psnr_only),
                      ("decode both, no metric", decode_only)):
        wall, cpu, err = ffmpeg_time(cmd)
        summary = [ln.split("] ", 1)[-1] for ln in err.splitlines() if "PSNR y:" in ln or "SSIM Y:" in ln]
        out[name] = (wall, cpu, summary)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--short", action="store_true", help="a 2 s clip (CI)")
    ap.add_argument("--seconds", type=int, default=None, help="clip length (default 10; --short 2)")
    ap.add_argument("--loss", type=float, default=1.0, help="per cent of datagrams left out (default 1)")
    ap.add_argument("--runs", type=int, default=2, help="timed runs of each measurement (default 2)")
    ap.add_argument("--keep", default=None, help="make (or reuse) the clip and captures in this directory")
    ap.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        cap, ref, sdp, out, mode = args.worker
        worker(cap, ref, sdp or None, out, mode)
        return
    if shutil.which("ffmpeg") is None:
        raise SystemExit("ffmpeg is required")
    seconds = args.seconds or (2 if args.short else 10)

    tmp_ctx = tempfile.TemporaryDirectory()
    tmp = tmp_ctx.name
    d = args.keep or tmp
    os.makedirs(d, exist_ok=True)
    ref = os.path.join(d, f"ref-{seconds}s.ts")
    t = time.perf_counter()
    if not os.path.exists(ref):
        make_reference(ref, seconds)
    caps = {}
    for tr in TRANSPORTS:
        pcap = os.path.join(d, f"{tr}.pcap")
        sdp = os.path.join(d, f"{tr}.sdp") if tr == "rtp-h264" else None
        if args.keep and os.path.exists(pcap) and os.path.exists(os.path.join(d, "captures.json")):
            with open(os.path.join(d, "captures.json")) as fh:
                caps[tr] = json.load(fh)[tr]
            continue
        pcap, sdp, sent, kept = capture(ref, tr, d, args.loss)
        caps[tr] = {"pcap": pcap, "sdp": sdp, "sent": sent, "kept": kept}
    with open(os.path.join(d, "captures.json"), "w") as fh:
        json.dump(caps, fh)
    prep = time.perf_counter() - t

    load = os.getloadavg()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load[0]:.2f} "
          f"{load[1]:.2f} {load[2]:.2f} at start; "
          + subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True).stdout.splitlines()[0])
    size = os.path.getsize(ref)
    print(f"reference: {seconds} s, {W}x{H} {FPS} fps H.264 (x264 veryfast, 8 slices, 2 B frames, GOP {FPS}, "
          f"{RATE}bit/s CBR), {size / 1e6:.2f} MB MPEG-TS; made in {prep:.1f} s")
    for tr, c in caps.items():
        print(f"capture {tr}: {c['sent']} datagrams sent, {c['kept']} kept "
              f"({100 * (1 - c['kept'] / c['sent']):.2f} % left out, --loss {args.loss:g})")
    print(f"timing: fresh process, taskset -c 0, cv2.setNumThreads(1), {' '.join(f'{k}=1' for k in ENV_ONE_THREAD)}"
          f"; best of {args.runs}")

    results: dict[str, list[dict]] = {tr: [] for tr in TRANSPORTS}
    all_cpus: dict[str, list[dict]] = {tr: [] for tr in TRANSPORTS}
    for _ in range(args.runs):
        for tr in TRANSPORTS:
            results[tr].append(run_worker(caps[tr]["pcap"], ref, caps[tr]["sdp"], tmp))
            all_cpus[tr].append(run_worker(caps[tr]["pcap"], ref, caps[tr]["sdp"], tmp, mode="all"))

    received = os.path.join(tmp, "received.ts")
    rebuilt_ts(caps["rtp-mpegts"]["pcap"], received)
    ff_runs = [ffmpeg_compare(received, ref) for _ in range(args.runs)]
    load = os.getloadavg()

    print()
    head = f"{'stage (seconds, one core)':<28}" + "".join(f"{tr:>22}" for tr in TRANSPORTS)
    print(head)
    print("-" * len(head))

    def cell(vals: list[float], total: list[float] | None = None) -> str:
        b = min(vals)
        share = f" {100 * b / min(total):3.0f}%" if total else "     "
        return f"{b:8.2f} ±{(max(vals) - b):5.2f}{share}".rjust(22)

    for label, _ in STAGES:
        print(f"{label:<28}" + "".join(cell([r['stages'][label] for r in results[tr]],
                                            [r['profiled_wall_s'] for r in results[tr]]) for tr in TRANSPORTS))
    print(f"{'other (incl. profiler)':<28}" + "".join(
        cell([r['profiled_wall_s'] - sum(r['stages'].values()) for r in results[tr]],
             [r['profiled_wall_s'] for r in results[tr]]) for tr in TRANSPORTS))
    print(f"{'  decoding passes (rec/ref)':<28}" + "".join(
        f"{results[tr][0]['passes']['received']:>15} / {results[tr][0]['passes']['reference']:<4}"
        for tr in TRANSPORTS))
    print(f"{'total under cProfile':<28}" + "".join(cell([r['profiled_wall_s'] for r in results[tr]])
                                                    for tr in TRANSPORTS))
    print("-" * len(head))
    print(f"{'score_capture, wall':<28}" + "".join(cell([r['wall_s'] for r in results[tr]]) for tr in TRANSPORTS))
    print(f"{'score_capture, CPU':<28}" + "".join(cell([r['cpu_s'] for r in results[tr]]) for tr in TRANSPORTS))
    print(f"{'  all CPUs, default threads':<28}" + "".join(cell([r['wall_s'] for r in all_cpus[tr]])
                                                           for tr in TRANSPORTS))
    print(f"{'  same, CPU':<28}" + "".join(cell([r['cpu_s'] for r in all_cpus[tr]]) for tr in TRANSPORTS))
    print(f"{'import qoe.video, av, cv2':<28}" + "".join(cell([r['import_s'] for r in results[tr]])
                                                         for tr in TRANSPORTS))
    print()
    for tr in TRANSPORTS:
        r = results[tr][0]
        best = min(x["wall_s"] for x in results[tr])
        best_cpu = min(x["cpu_s"] for x in results[tr])
        verdict = (f"wall {best / seconds:.2f} s, CPU {best_cpu / seconds:.2f} s per second of video "
                   f"(issue 9's target: < 1 s): {'met' if best < seconds else 'NOT met'} by wall, "
                   f"{'met' if best_cpu < seconds else 'NOT met'} by CPU")
        keys = ("psnr_sum", "ssim_sum", "frames_decoded", "frames_damaged", "alignment")
        same = all(all(x[k] == r[k] for k in keys) for x in results[tr] + all_cpus[tr])
        print(f"{tr}: {r['frames']} reference frames scored ({r['paired']} paired), {r['frames_decoded']} decoded, "
              f"{r['frames_damaged']} damaged, {r['packets_lost']} packets lost, alignment {r['alignment']}; "
              f"PSNR clip {r['psnr_clip']:.3f} dB (median {r['psnr_median']:.3f}), SSIM clip {r['ssim_clip']:.5f}; "
              f"per-frame sums PSNR {r['psnr_sum']:.6f}, SSIM {r['ssim_sum']:.8f}; "
              f"one core: {verdict}; "
              f"scores {'identical' if same else 'NOT identical'} over runs and thread settings; "
              f"cv2 threads {r['cv2_threads']}, CPUs {r['affinity']}")
    print()
    print("FFmpeg on the same core, one thread (-threads 1 -filter_threads 1 -filter_complex_threads 1, -copyts),")
    print("on the reference (main input) and the TS rebuilt from the RTP/MPEG-TS capture (framesync pairing;")
    print("PSNR/SSIM over Y, U, V; x264 block SSIM):")
    for name in ff_runs[0]:
        walls = [r[name][0] for r in ff_runs]
        cpus = [r[name][1] for r in ff_runs]
        print(f"  ffmpeg {name:<28} wall {min(walls):6.2f} s ±{max(walls) - min(walls):4.2f}   "
              f"CPU {min(cpus):6.2f} s")
    for line in ff_runs[0]["decode both + psnr + ssim"][2]:
        print(f"    {line}")
    r = results["rtp-mpegts"][0]
    print(f"    qoe on the same stream: PSNR y {r['psnr_clip']:.6f} (Wang SSIM Y {r['ssim_clip']:.6f}); "
          "FFmpeg's decoder guesses a time for a frame decoded without PTS and shows it, qoe does not")
    print(f"\nload average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end (2 cores shared: timings are noisy)")
    tmp_ctx.cleanup()


if __name__ == "__main__":
    main()
