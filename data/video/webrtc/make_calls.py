#!/usr/bin/env python3
"""Real WebRTC calls between two headless Chromium peers in two network namespaces.

Run as root through ``make_calls.sh`` (it picks the repository's venv). For each call:

1. fresh namespaces ``rca<pid>`` (peer A, 192.0.2.2) -- ``rcr<pid>`` (router) -- ``rcb<pid>``
   (peer B, 198.51.100.2); the peers have a route to each other's subnet and no default route,
   so nothing Chromium sends elsewhere (DNS, mDNS, update checks) can leave its namespace;
2. the condition in the router namespace: ``clean`` (plain forwarding), ``loss`` and ``reorder``
   (forwarder.py on a TUN device: seeded drops, reordering, a log of every dropped and held
   packet; ``reorder`` also holds each stream's first two packets) or ``bulk``
   (tbf bottleneck 16 Mbit/s towards A, 1 Mbit/s towards B, 64-packet buffers, and an iperf3
   cubic upload A -> B during the call, seed paper §5);
3. tcpdump ``--immediate-mode`` on both peers' interfaces (filter ``udp``: STUN, DTLS, SRTP,
   SRTCP; the iperf3 TCP flow is left out);
4. Debian's ``chromium`` (Playwright, ``executable_path`` = a two-line wrapper that runs
   ``/usr/bin/chromium`` inside the peer's namespace) with a fake camera (``clip.y4m``, 320x240,
   15 fps, made from ``../reference/clip.ts``) and a fake microphone (``speech.wav``, made from
   ``../../voice/speech``); the video codec forced with ``RTCRtpTransceiver.setCodecPreferences``
   on both peers, Opus audio, BUNDLE, max video bitrate 300 kbit/s;
5. offer (A) and answer (B) passed through this controller and saved; ``pc.getStats()`` polled
   every second on both peers; at the end both peers stop sending, the network drains for 2 s,
   and a last ``final`` sample is taken, so the final counters cover every packet captured.

Outputs per call in ``calls/<name>/`` (see README.md): ``b.pcap`` (and ``a.pcap`` for some), ``offer.sdp``,
``answer.sdp``, ``stats_a.json.gz``, ``stats_b.json.gz``, ``call.json`` (commands, versions,
addresses, timings), and per condition ``forwarder.jsonl`` (loss, reorder) or ``iperf3.json``
(bulk; ``tc -s qdisc`` after the call is in ``call.json``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
A_IP, RA_IP, RB_IP, B_IP = "192.0.2.2", "192.0.2.1", "198.51.100.1", "198.51.100.2"
# Captures keep 160 bytes of each packet (pcap orig_len keeps the true length): Ethernet, IPv4,
# UDP (42 B) + the RTP header with its extensions (24-44 B seen, more with AV1's dependency
# descriptor) and whole STUN messages (<= 100 B seen); the payloads are SRTP-encrypted anyway.
# One call keeps whole packets at B, as a user's capture would. Peer B's capture is made for
# every call; peer A's (the sender's view of A -> B) where it adds truth: loss and bulk calls.
SNAPLEN = 160
FULL_AT_B = {"vp8-clean", "vp9-svc-plain"}
CAPTURE_A = {"vp8-loss", "h264-loss", "vp8-bulk"}

# name -> (video mimeType, condition)
CALLS = {
    "vp8-clean": ("video/VP8", "clean"),
    "vp9-clean": ("video/VP9", "clean"),
    "av1-clean": ("video/AV1", "clean"),
    "h264-clean": ("video/H264", "clean"),
    "vp8-loss": ("video/VP8", "loss"),
    "h264-loss": ("video/H264", "loss"),
    "vp9-loss": ("video/VP9", "loss"),
    "av1-loss": ("video/AV1", "loss"),
    "vp8-bulk": ("video/VP8", "bulk"),
    "vp8-reorder": ("video/VP8", "reorder"),
    "vp9-svc": ("video/VP9", "clean"),
    "vp8-two-video": ("video/VP8", "clean"),
    "vp9-svc-plain": ("video/VP9", "clean"),
}
# Calls with more than the defaults (peer.html setup()'s opts; "clip": the fake camera file):
# VP9 with two spatial and two temporal layers (W3C webrtc-svc scalabilityMode, RFC 9628 §4 layer
# indices) needs a picture whose lower layer is still large enough for libwebrtc (640x480 here)
# and the bitrate for both layers; "vp9-svc-plain" is the same without SRTP (Chromium's
# --disable-webrtc-encryption: plain RTP/AVPF, the VP9 payload descriptors readable), whole
# packets, 6 s (size); two video transceivers (two m=video sections with the same
# payload types: only the MID header extension, RFC 8843 §15, tells their streams apart).
CALL_OPTIONS = {
    "vp9-svc": {"opts": {"scalabilityMode": "L2T2", "width": 640, "height": 480}, "clip": "clip640.y4m",
                "max_bitrate": 1_500_000},
    "vp8-two-video": {"opts": {"videoTracks": 2}},
    "vp9-svc-plain": {"opts": {"scalabilityMode": "L2T2", "width": 640, "height": 480}, "clip": "clip640.y4m",
                      "max_bitrate": 600_000, "flags": ["--disable-webrtc-encryption"], "seconds": 6.0},
}
LOSS = {"seed": 23, "loss": 0.03, "reorder": 0.02, "reorder_ms": 30.0, "delay_ms": 10.0, "hold_first": 0}
# reordering first: each stream's first 2 packets held (they arrive after later ones), 8 % held
REORDER = {"seed": 7, "loss": 0.01, "reorder": 0.08, "reorder_ms": 30.0, "delay_ms": 10.0, "hold_first": 2}
FORWARDER = {"loss": LOSS, "reorder": REORDER}
BULK = {"down": "16mbit", "up": "1mbit", "buffer_packets": 64, "iperf3_s": 8, "iperf3_start_s": 2}
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--use-fake-ui-for-media-stream",
    "--use-fake-device-for-media-stream",
    "--allow-loopback-in-peer-connection",
    "--disable-features=WebRtcHideLocalIpsWithMdns",
    "--autoplay-policy=no-user-gesture-required",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def sh(*cmd: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), check=check, text=True, capture_output=True, **kw)


class Testbed:
    """Three namespaces A - R - B; the condition lives in R."""

    def __init__(self, tag: str, work: Path):
        self.a, self.r, self.b = f"rca{tag}", f"rcr{tag}", f"rcb{tag}"
        self.work = work
        self.procs: list[subprocess.Popen] = []

    def ns(self, name: str, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        return sh("ip", "netns", "exec", name, *cmd, check=check)

    def up(self) -> None:
        for n in (self.a, self.r, self.b):
            sh("ip", "netns", "add", n)
            sh("ip", "-n", n, "link", "set", "lo", "up")
        sh("ip", "link", "add", "rca0", "netns", self.a, "type", "veth", "peer", "name", "rcra",
           "netns", self.r)
        sh("ip", "link", "add", "rcb0", "netns", self.b, "type", "veth", "peer", "name", "rcrb",
           "netns", self.r)
        for n, dev, addr in ((self.a, "rca0", A_IP), (self.r, "rcra", RA_IP),
                             (self.r, "rcrb", RB_IP), (self.b, "rcb0", B_IP)):
            sh("ip", "-n", n, "addr", "add", f"{addr}/24", "dev", dev)
            sh("ip", "-n", n, "link", "set", dev, "gso_max_segs", "1", "up")
        # routes to the other peer only: no default route, so no traffic leaves to anywhere else
        sh("ip", "-n", self.a, "route", "add", "198.51.100.0/24", "via", RA_IP)
        sh("ip", "-n", self.b, "route", "add", "192.0.2.0/24", "via", RB_IP)
        self.ns(self.r, "sysctl", "-qw", "net.ipv4.ip_forward=1")

    def condition_loss(self, log: Path, fw: dict) -> list[str]:
        tun = "rctun0"
        sh("ip", "-n", self.r, "tuntap", "add", "dev", tun, "mode", "tun")
        sh("ip", "-n", self.r, "link", "set", tun, "up")
        for key in ("all", "default", tun, "rcra", "rcrb"):
            self.ns(self.r, "sysctl", "-qw", f"net.ipv4.conf.{key}.rp_filter=0")
        for dev in ("rcra", "rcrb"):  # packets from the veths -> the TUN; from the TUN -> main table
            sh("ip", "-n", self.r, "rule", "add", "iif", dev, "lookup", "100")
        sh("ip", "-n", self.r, "route", "add", "default", "dev", tun, "table", "100")
        cmd = ["ip", "netns", "exec", self.r, sys.executable, str(HERE / "forwarder.py"),
               "--tun", tun, "--log", str(log), "--seed", str(fw["seed"]),
               "--loss", str(fw["loss"]), "--reorder", str(fw["reorder"]),
               "--reorder-ms", str(fw["reorder_ms"]), "--delay-ms", str(fw["delay_ms"]),
               "--hold-first", str(fw["hold_first"]), "--duration", "90"]
        self.forwarder = subprocess.Popen(cmd)
        time.sleep(0.5)
        return cmd

    def condition_bulk(self) -> list[list[str]]:
        frame = 1514  # tbf counts the Ethernet header: limit = N x 1514 (TESTBED.md)
        cmds = []
        for dev, rate in (("rcra", BULK["down"]), ("rcrb", BULK["up"])):
            cmd = ["tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "tbf", "rate", rate,
                   "burst", str(2 * frame), "limit", str(BULK["buffer_packets"] * frame)]
            self.ns(self.r, *cmd)
            cmds.append(cmd)
        return cmds

    def capture(self, name: str, dev: str, out: Path, snaplen: int) -> list[str]:
        cmd = ["tcpdump", "-i", dev, "--immediate-mode", "-U", "-s", str(snaplen), "-w", str(out), "udp"]
        p = subprocess.Popen(["ip", "netns", "exec", name, *cmd], stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        return cmd

    def stop_captures(self) -> list[str]:
        msgs = []
        for p in self.procs:
            p.terminate()
            _, err = p.communicate(timeout=10)
            msgs.append(err.strip())
        self.procs = []
        return msgs

    def down(self) -> None:
        for p in self.procs:
            p.kill()
        if getattr(self, "forwarder", None) is not None and self.forwarder.poll() is None:
            self.forwarder.terminate()
            self.forwarder.wait(10)
        for n in (self.a, self.r, self.b):
            sh("ip", "netns", "del", n, check=False)


def make_media(work: Path) -> dict[str, str]:
    clip, speech = work / "clip.y4m", work / "speech.wav"
    vcmd = ["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i",
            str(REPO / "data/video/reference/clip.ts"), "-vf", "scale=320:240,fps=15",
            "-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe", str(clip)]
    v640 = [*vcmd[:8], "scale=640:480,fps=15", *vcmd[9:13], str(work / "clip640.y4m")]
    acmd = ["ffmpeg", "-nostdin", "-loglevel", "error", "-y",
            "-i", str(REPO / "data/voice/speech/en_us_male_16k.wav"),
            "-i", str(REPO / "data/voice/speech/en_gb_female_16k.wav"),
            "-filter_complex", "[0:a][1:a]concat=n=2:v=0:a=1", "-ar", "48000", "-ac", "1",
            "-c:a", "pcm_s16le", str(speech)]
    sh(*vcmd)
    sh(*v640)
    sh(*acmd)
    return {"clip.y4m": " ".join(vcmd), "clip640.y4m": " ".join(v640), "speech.wav": " ".join(acmd)}


def wrapper(work: Path, ns: str) -> Path:
    path = work / f"chromium-{ns}"
    path.write_text(f'#!/bin/sh\nexec ip netns exec {ns} {shutil.which("chromium")} "$@"\n')
    path.chmod(0o755)
    return path


def run_call(name: str, seconds: float, out_root: Path, work: Path, media: dict) -> dict:
    mime, condition = CALLS[name]
    extra = CALL_OPTIONS.get(name, {})
    out = out_root / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    tag = f"{os.getpid() % 100000}"
    tb = Testbed(tag, work)
    meta: dict = {"name": name, "codec": mime, "condition": condition, "seconds": seconds,
                  "peers": {"a": A_IP, "b": B_IP}, "media": media,
                  "chromium": sh(shutil.which("chromium"), "--version").stdout.strip(),
                  "tcpdump": sh("tcpdump", "--version").stdout.splitlines()[0], "options": extra}
    try:
        tb.up()
        if condition in FORWARDER:
            fw = FORWARDER[condition]
            meta["forwarder"] = {**fw, "command": " ".join(tb.condition_loss(out / "forwarder.jsonl", fw))}
        if condition == "bulk":
            meta["bulk"] = {**BULK, "tc": [" ".join(c) for c in tb.condition_bulk()]}
        if name in CAPTURE_A:
            meta["capture_a"] = " ".join(tb.capture(tb.a, "rca0", out / "a.pcap", SNAPLEN))
        meta["capture_b"] = " ".join(tb.capture(tb.b, "rcb0", out / "b.pcap",
                                                0 if name in FULL_AT_B else SNAPLEN))
        time.sleep(1.0)
        flags = CHROMIUM_FLAGS + extra.get("flags", []) + [
                                  f"--use-file-for-fake-video-capture={work / extra.get('clip', 'clip.y4m')}",
                                  f"--use-file-for-fake-audio-capture={work / 'speech.wav'}"]
        meta["chromium_flags"] = flags
        with sync_playwright() as p:
            ctx, pages = {}, {}
            for side, nsname in (("a", tb.a), ("b", tb.b)):
                ctx[side] = p.chromium.launch_persistent_context(
                    str(work / f"rc-udd-{side}-{tag}"), executable_path=str(wrapper(work, nsname)),
                    headless=True, args=flags)
                pages[side] = ctx[side].new_page()
                pages[side].goto((HERE / "peer.html").as_uri())
            pa, pb = pages["a"], pages["b"]
            meta["sender_codecs"] = pa.evaluate("senderCodecs()")
            for page in (pa, pb):
                page.evaluate("([c, b, o]) => setup(c, b, o)", [mime, extra.get("max_bitrate", 300_000),
                                                                 extra.get("opts", {})])
            offer = pa.evaluate("offer()")
            answer = pb.evaluate("(sdp) => answer(sdp)", offer)
            pa.evaluate("(sdp) => accept(sdp)", answer)
            (out / "offer.sdp").write_text(offer)
            (out / "answer.sdp").write_text(answer)
            for page in (pa, pb):
                page.evaluate("connected(10000)")
            meta["connected_wall"] = time.time()
            pa.evaluate("poll()")
            pb.evaluate("poll()")
            iperf = None
            if condition == "bulk":
                time.sleep(BULK["iperf3_start_s"])
                srv = subprocess.Popen(["ip", "netns", "exec", tb.b, "iperf3", "-s", "-1", "-B", B_IP],
                                       stdout=subprocess.DEVNULL)
                time.sleep(0.5)
                icmd = ["iperf3", "-c", B_IP, "-t", str(BULK["iperf3_s"]), "-C", "cubic", "-J"]
                meta["bulk"]["iperf3"] = " ".join(icmd)
                iperf = subprocess.Popen(["ip", "netns", "exec", tb.a, *icmd], stdout=subprocess.PIPE,
                                         text=True)
                time.sleep(seconds - BULK["iperf3_start_s"] - 0.5)
            else:
                time.sleep(seconds)
            meta["stop_wall"] = time.time()
            for page in (pa, pb):
                page.evaluate("stopSending()")
            time.sleep(2.0)
            for side, page in (("a", pa), ("b", pb)):
                # gzip: the series repeats its keys every second (110 KB -> ~15 KB per peer)
                with gzip.open(out / f"stats_{side}.json.gz", "wt") as f:
                    f.write(page.evaluate("finish()"))
            for page in (pa, pb):
                page.evaluate("hangup()")
            if iperf is not None:
                (out / "iperf3.json").write_text(iperf.communicate(timeout=30)[0])
                srv.wait(30)
                meta["bulk"]["tc_after"] = tb.ns(tb.r, "tc", "-s", "qdisc").stdout
            for c in ctx.values():
                c.close()
        time.sleep(0.5)
        meta["tcpdump_messages"] = tb.stop_captures()
        if condition in FORWARDER:
            tb.forwarder.terminate()
            tb.forwarder.wait(10)
    finally:
        tb.down()
    (out / "call.json").write_text(json.dumps(meta, indent=1) + "\n")
    return meta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("calls", nargs="*", help=f"calls to make (default all): {', '.join(CALLS)}")
    ap.add_argument("--seconds", type=float, default=10.0, help="media time per call")
    ap.add_argument("--out", type=Path, default=HERE / "calls")
    args = ap.parse_args()
    names = args.calls or list(CALLS)
    with tempfile.TemporaryDirectory(prefix="rc-webrtc-") as tmp:
        work = Path(tmp)
        media = make_media(work)
        for name in names:
            t0 = time.time()
            meta = run_call(name, CALL_OPTIONS.get(name, {}).get("seconds", args.seconds), args.out, work, media)
            print(f"{name}: {meta['codec']} {meta['condition']} in {time.time() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
