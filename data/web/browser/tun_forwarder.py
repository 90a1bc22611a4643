#!/usr/bin/env python3
"""A user-space delay line and seeded loss for the router namespace (this kernel has no netem).

Usage (in the router namespace, as root):
    tun_forwarder.py --dev brtun0 --delay-ms 20 --loss 0.02 --seed 22 --log drops.jsonl --max-seconds 120

It opens the TUN device DEV (IFF_TUN | IFF_NO_PI: raw IPv4 packets), which the caller routes every
forwarded packet into (policy routing: ``ip rule add iif rc0 lookup 100`` ... ``ip route add
default dev DEV table 100``). Each packet read from DEV is held DELAY ms (a FIFO: constant delay
keeps the order) and written back to DEV, from where the kernel routes it on through the main table
to the bottleneck; with probability LOSS it is dropped instead. Each direction (towards the server
= "up": destination in 198.51.100.0/24; towards the client = "down") has its own generator
(random.Random(SEED) and random.Random(SEED + 1)), so the drops of one direction depend only on
the order of that direction's packets. Every dropped packet is logged as one JSON line (wall-clock
time, direction, the packet's index in its direction, IPv4 id, protocol, addresses, ports, TCP
sequence number, flags and payload length): the truth for loss. The last line holds the counts.
"""

from __future__ import annotations

import argparse
import collections
import fcntl
import ipaddress
import json
import os
import random
import select
import signal
import struct
import time

TUNSETIFF = 0x400454CA  # linux/if_tun.h: _IOW('T', 202, int)
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000  # linux/if_tun.h
SERVER_NET = ipaddress.ip_network("198.51.100.0/24")  # the server side of the testbed (RFC 5737)


def describe(pkt: bytes) -> dict:
    """The fields of an IPv4 packet a drop log needs (RFC 791, RFC 9293 §3.1, RFC 768)."""
    if len(pkt) < 20 or pkt[0] >> 4 != 4:
        return {"ip_version": pkt[0] >> 4 if pkt else None, "length": len(pkt)}
    ihl = (pkt[0] & 0x0F) * 4
    total, ident, proto = struct.unpack_from(">H H", pkt, 2) + (pkt[9],)
    d = {"length": total, "ip_id": ident, "proto": proto,
         "src": str(ipaddress.IPv4Address(pkt[12:16])), "dst": str(ipaddress.IPv4Address(pkt[16:20]))}
    l4 = pkt[ihl:]
    if proto == 6 and len(l4) >= 20:
        sport, dport, seq, ack = struct.unpack_from(">HHII", l4)
        off = (l4[12] >> 4) * 4
        flags = l4[13]
        names = "FSRPAUEC"
        d.update(sport=sport, dport=dport, seq=seq, ack=ack,
                 flags="".join(n for i, n in enumerate(names) if flags & (1 << i)),
                 payload=total - ihl - off)
    elif proto == 17 and len(l4) >= 8:
        sport, dport, ulen = struct.unpack_from(">HHH", l4)
        d.update(sport=sport, dport=dport, payload=ulen - 8)
    return d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dev", required=True)
    ap.add_argument("--delay-ms", type=float, default=0.0, help="one-way delay added to each packet")
    ap.add_argument("--loss", type=float, default=0.0, help="drop probability, each direction")
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--log", required=True)
    ap.add_argument("--max-seconds", type=float, default=300.0)
    a = ap.parse_args()

    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", a.dev.encode(), IFF_TUN | IFF_NO_PI))
    rngs = {"up": random.Random(a.seed), "down": random.Random(a.seed + 1)}
    seen = {"up": 0, "down": 0}
    dropped = {"up": 0, "down": 0}
    queue: collections.deque[tuple[float, bytes]] = collections.deque()
    delay = a.delay_ms / 1000.0
    log = open(a.log, "w", buffering=1)
    stop = False

    def on_term(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    print(f"forwarding on {a.dev}: delay {a.delay_ms} ms, loss {a.loss}, seed {a.seed}", flush=True)
    end = time.monotonic() + a.max_seconds
    while not stop and time.monotonic() < end:
        now = time.monotonic()
        while queue and queue[0][0] <= now:
            os.write(fd, queue.popleft()[1])
        timeout = max(0.0, queue[0][0] - now) if queue else 0.5
        try:
            ready, _, _ = select.select([fd], [], [], timeout)
        except InterruptedError:
            continue
        if not ready:
            continue
        pkt = os.read(fd, 65535)
        arrival = time.monotonic()
        direction = "up" if len(pkt) >= 20 and ipaddress.IPv4Address(pkt[16:20]) in SERVER_NET else "down"
        index = seen[direction]
        seen[direction] += 1
        if a.loss > 0 and rngs[direction].random() < a.loss:
            dropped[direction] += 1
            log.write(json.dumps({"time": round(time.time(), 6), "direction": direction, "index": index,
                                  **describe(pkt)}) + "\n")
            continue
        queue.append((arrival + delay, pkt))
    log.write(json.dumps({"summary": True, "packets": seen, "dropped": dropped, "delay_ms": a.delay_ms,
                          "loss": a.loss, "seed": a.seed}) + "\n")
    log.close()


if __name__ == "__main__":
    main()
