#!/usr/bin/env python3
"""A user-space forwarder for the router namespace: drops, delays and reorders, and logs it all.

This kernel has no ``netem`` (/work/shared/TESTBED.md), so loss and reordering for the WebRTC
calls in this folder come from this process. The router namespace sends every packet it would
forward into a TUN device (policy routing: ``ip rule add iif <veth> lookup 100`` and ``ip route
add default dev <tun> table 100``); this process reads each IPv4 packet from the device, decides
its fate with a seeded generator, and writes the packets it keeps back into the device, where
the kernel routes them on by the main table (the rules only match the veths, so no loop).

What it decides, per packet (RTP only: first byte 128-191 per RFC 7983 §7 and an RTP, not an
RTCP, packet type per RFC 5761 §4; STUN, DTLS and RTCP always pass untouched and in order):

- ``drop`` with probability ``--loss``;
- else ``hold`` with probability ``--reorder``: delayed by ``--reorder-ms`` extra, so packets
  behind it overtake it (reordering);
- the first ``--hold-first`` RTP packets of each SSRC are held too, whatever the generator says
  (a packet older than a stream's first one: RFC 3550 A.1's source validation case);
- every packet (of any kind) is delayed by ``--delay-ms`` (a constant propagation delay).

The log (JSON lines, one per event) is the truth for loss and reordering: every dropped packet
and every held packet with its time, addresses, ports, length, and the clear RTP header fields
(SSRC, sequence number, payload type, marker, timestamp) -- SRTP leaves them in clear
(RFC 3711 §3.1). The last line is a summary: counts per SSRC of packets seen, dropped and held.

Standard library only; Linux TUN interface (``/dev/net/tun``, ``TUNSETIFF``, linux/if_tun.h).
"""

from __future__ import annotations

import argparse
import fcntl
import heapq
import json
import os
import random
import select
import signal
import struct
import time

TUNSETIFF = 0x400454CA  # linux/if_tun.h: _IOW('T', 202, int)
IFF_TUN = 0x0001  # linux/if_tun.h
IFF_NO_PI = 0x1000  # linux/if_tun.h: no 4-byte packet-information prefix


def open_tun(name: str) -> int:
    """Attach to the (already created) TUN device ``name``; returns its file descriptor."""
    fd = os.open("/dev/net/tun", os.O_RDWR)
    ifr = struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI)
    fcntl.ioctl(fd, TUNSETIFF, ifr)
    return fd


def classify(pkt: bytes) -> dict | None:
    """The UDP/RTP facts of an IPv4 packet, or None when it is not IPv4/UDP."""
    if len(pkt) < 20 or pkt[0] >> 4 != 4:
        return None
    ihl = (pkt[0] & 0x0F) * 4
    if pkt[9] != 17 or len(pkt) < ihl + 8:  # IPv4 protocol 17 = UDP (RFC 768)
        return None
    src = ".".join(str(b) for b in pkt[12:16])
    dst = ".".join(str(b) for b in pkt[16:20])
    sport, dport = struct.unpack_from("!HH", pkt, ihl)
    payload = pkt[ihl + 8 :]
    info: dict = {"src": f"{src}:{sport}", "dst": f"{dst}:{dport}", "len": len(pkt), "kind": "udp"}
    if len(payload) >= 12 and 128 <= payload[0] <= 191:  # RFC 7983 §7: 128..191 = RTP/RTCP
        if 192 <= payload[1] <= 223:  # RFC 5761 §4: RTCP packet types 192..223 (marker bit set)
            info["kind"] = "rtcp"
        else:
            _, b1, seq, ts, ssrc = struct.unpack_from("!BBHII", payload, 0)
            info.update(kind="rtp", ssrc=ssrc, seq=seq, pt=b1 & 0x7F, marker=b1 >> 7, ts=ts)
    elif payload and payload[0] <= 3:
        info["kind"] = "stun"  # RFC 7983 §7: 0..3
    elif payload and (20 <= payload[0] <= 63):
        info["kind"] = "dtls"  # RFC 7983 §7 (20..63 with RFC 9443's DTLS 1.3 range)
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tun", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--loss", type=float, default=0.0, help="drop probability per RTP packet")
    ap.add_argument("--reorder", type=float, default=0.0, help="hold probability per RTP packet")
    ap.add_argument("--reorder-ms", type=float, default=30.0, help="extra delay of a held packet")
    ap.add_argument("--delay-ms", type=float, default=0.0, help="constant delay of every packet")
    ap.add_argument("--hold-first", type=int, default=0, help="hold the first N RTP packets of each SSRC")
    ap.add_argument("--duration", type=float, default=120.0, help="hard time bound, s")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    fd = open_tun(args.tun)
    log = open(args.log, "w", buffering=1)
    log.write(json.dumps({"event": "start", "t": time.time(), **vars(args)}) + "\n")
    queue: list[tuple[float, int, bytes]] = []  # (release time, order, packet)
    order = 0
    counts: dict[str, dict[str, int]] = {}
    stop = False

    def on_term(*_):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    end = time.monotonic() + args.duration
    while not stop and time.monotonic() < end:
        now = time.monotonic()
        while queue and queue[0][0] <= now:
            _, _, pkt = heapq.heappop(queue)
            os.write(fd, pkt)
        timeout = max(0.0, queue[0][0] - now) if queue else 0.2
        ready, _, _ = select.select([fd], [], [], min(timeout, 0.2))
        if not ready:
            continue
        pkt = os.read(fd, 65535)
        arrival = time.monotonic()
        info = classify(pkt)
        delay = args.delay_ms / 1000.0
        if info is not None and info["kind"] == "rtp":
            key = str(info["ssrc"])
            c = counts.setdefault(key, {"seen": 0, "dropped": 0, "held": 0, "pt": info["pt"]})
            c["seen"] += 1
            u = rng.random()
            if u < args.loss and c["seen"] > args.hold_first:
                c["dropped"] += 1
                log.write(json.dumps({"event": "drop", "t": time.time(), **info}) + "\n")
                continue
            if u < args.loss + args.reorder or c["seen"] <= args.hold_first:
                c["held"] += 1
                delay += args.reorder_ms / 1000.0
                log.write(json.dumps({"event": "hold", "t": time.time(),
                                      "extra_ms": args.reorder_ms, **info}) + "\n")
        order += 1
        heapq.heappush(queue, (arrival + delay, order, pkt))
    for _, _, pkt in sorted(queue):
        os.write(fd, pkt)
    log.write(json.dumps({"event": "summary", "t": time.time(), "per_ssrc": counts}) + "\n")
    log.close()


if __name__ == "__main__":
    main()
