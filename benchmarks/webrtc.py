"""Real WebRTC calls: qoe's per-stream facts against both browsers' getStats() and tshark, and the time each takes.

The calls of ``data/video/webrtc/calls`` (Chromium 156 peers over DTLS-SRTP with BUNDLE, made by
``data/video/webrtc/make_calls.py``: VP8, VP9, AV1, H.264; clean, loss, reordering, a bulk
download, SVC, two video tracks) were captured at peer B, some at peer A too; beside each, both
peers' own ``pc.getStats()`` series are the truth (``tests/video/webrtc_truth.py`` reads them;
``data/video/webrtc/README.md`` says what Chromium's counters mean). For every media stream of
every capture taken at its receiver, this script prints:

* media packets received: the receiver's ``inbound-rtp`` ``packetsReceived`` minus
  ``retransmittedPacketsReceived`` (Chromium counts the RTX packets in it), qoe's
  (``qoe.rtp.find_streams``) and tshark's (``-z rtp,streams``);
* packets lost: ``packetsLost`` (RFC 3550 §6.4.1, cumulative), qoe's and tshark's;
* video: frames (``framesDecoded`` against the distinct RTP timestamps qoe reads from the
  headers, ``qoe.video.headers.stream_header_facts``) and freezes (``freezeCount`` against
  qoe's W3C freezes on the times frames completed in the capture; the browser counts them
  after its jitter buffer, so they may differ by one);
* audio on the clean calls: RFC 3550 jitter (ms) against getStats' ``jitter`` (whole ms).

Then the total CPU time of ``qoe.rtp.find_streams`` over all those captures (in this process,
after a first run to load the modules) against tshark's
``-q --enable-heuristic rtp_udp -z rtp,streams`` on the same files (the tool people would
otherwise use for per-stream counts; its start-up, about 0.2 s a file, is most of its time on
captures this small).

Usage::

    python benchmarks/webrtc.py [--short]

``--short`` (CI) takes the clean and loss calls of VP8 only.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))
from video import webrtc_truth as truth  # noqa: E402 - the tests' reading of the browsers' getStats


def _tshark(capture: Path) -> tuple[dict[int, tuple[int, int]], float]:
    """({SSRC: (packets, lost)}, CPU seconds) of ``tshark -z rtp,streams`` on one capture."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(["tshark", "-r", str(capture), "-q", "--enable-heuristic", "rtp_udp", "-z", "rtp,streams"],
                         check=True, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    found = {}
    for line in out.splitlines():
        tok = line.split()
        if len(tok) > 10 and tok[6].startswith("0x"):
            # start, end, source address and port, destination address and port, SSRC, payload, packets, lost
            found[int(tok[6], 16)] = (int(tok[8]), int(tok[9]))
    return found, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="CI's short mode: vp8-clean and vp8-loss only")
    args = ap.parse_args(argv)

    import qoe.rtp  # noqa: PLC0415 - after the path is set
    from qoe.video.flows import rtx_partner  # noqa: PLC0415
    from qoe.video.headers import stream_header_facts  # noqa: PLC0415

    calls = [c for c in truth.calls() if not args.short or c.name in ("vp8-clean", "vp8-loss")]
    tshark = shutil.which("tshark") is not None
    captures = [(c, side) for c in calls for side in "ab" if c.has_capture(side)]
    agree = {"qoe packets": 0, "tshark packets": 0, "qoe lost": 0, "tshark lost": 0, "streams": 0,
             "frames": 0, "freezes within 1": 0, "video": 0, "jitter within 1 ms": 0, "clean audio": 0}
    qoe_cpu = ts_cpu = 0.0
    print(f"{'call':14s} {'at':3s} {'stream':10s} {'packets gS/qoe/tshark':>22s} {'lost gS/qoe/tshark':>19s} "
          f"{'frames gS/qoe':>13s} {'freezes gS/qoe':>14s} {'jitter ms gS/qoe':>16s}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the SRTP note on every stream is not what is measured here)
        qoe.rtp.find_streams(captures[0][0].capture(captures[0][1]))  # modules loaded before the timing
        for c, side in captures:
            cap = c.capture(side)
            t = time.process_time()
            found = {s.key.ssrc: s for s in qoe.rtp.find_streams(cap)}
            qoe_cpu += time.process_time() - t
            theirs: dict[int, tuple[int, int]] = {}
            if tshark:
                theirs, cpu = _tshark(cap)
                ts_cpu += cpu
            for d in c.directions():
                if d.receiver != side or d.ssrc not in found:
                    continue
                s = found[d.ssrc]
                agree["streams"] += 1
                want_p, want_l = d.media_packets_received, d.inbound["packetsLost"]
                tp, tl = theirs.get(d.ssrc, (None, None))
                agree["qoe packets"] += s.stats.packets == want_p
                agree["tshark packets"] += tp == want_p
                agree["qoe lost"] += s.stats.lost == want_l
                agree["tshark lost"] += tl == want_l
                frames = freezes = jitter = ""
                if d.kind == "video":
                    h = stream_header_facts(s, rtx=rtx_partner(s, list(found.values())))
                    agree["video"] += 1
                    agree["frames"] += h.frames_received == d.inbound["framesDecoded"]
                    agree["freezes within 1"] += abs(h.freeze_count - d.inbound["freezeCount"]) <= 1
                    frames = f"{d.inbound['framesDecoded']}/{h.frames_received}"
                    freezes = f"{d.inbound['freezeCount']}/{h.freeze_count}"
                elif c.condition == "clean":
                    j = qoe.rtp.rtp_stats(s.packets, d.codec["clockRate"]).jitter_ms
                    agree["clean audio"] += 1
                    agree["jitter within 1 ms"] += abs(j - d.inbound["jitter"] * 1000) <= 1.0
                    jitter = f"{d.inbound['jitter'] * 1000:.0f}/{j:.2f}"
                ts_text = "-" if tp is None else f"{tp}"
                tl_text = "-" if tl is None else f"{tl}"
                print(f"{c.name:14s} {side:3s} {d.sender}->{d.receiver} {d.kind:5s} "
                      f"{f'{want_p}/{s.stats.packets}/{ts_text}':>22s} {f'{want_l}/{s.stats.lost}/{tl_text}':>19s} "
                      f"{frames:>13s} {freezes:>14s} {jitter:>16s}")
    n = agree["streams"]
    print(f"\nagreement with getStats over {n} streams at their receiver ({len(captures)} captures of "
          f"{len(calls)} calls):")
    print(f"  packets: qoe {agree['qoe packets']}/{n}" + (f", tshark {agree['tshark packets']}/{n}" if tshark else ""))
    print(f"  lost:    qoe {agree['qoe lost']}/{n}" + (f", tshark {agree['tshark lost']}/{n}" if tshark else ""))
    print(f"  video frames: qoe {agree['frames']}/{agree['video']}; freezes within 1: "
          f"{agree['freezes within 1']}/{agree['video']}")
    print(f"  audio jitter within 1 ms (clean calls): qoe {agree['jitter within 1 ms']}/{agree['clean audio']}")
    print(f"\nCPU over the {len(captures)} captures: qoe.rtp.find_streams {qoe_cpu:.2f} s"
          + (f", tshark -z rtp,streams {ts_cpu:.2f} s ({ts_cpu / qoe_cpu:.1f}x qoe's; mostly its start-up)"
             if tshark else " (tshark not found)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
