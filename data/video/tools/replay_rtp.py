#!/usr/bin/env python3
"""Send the UDP payloads of a capture to a socket again, in the capture's own timing.

Used by make_samples.sh to let FFmpeg's own RTP receiver (ffprobe/ffmpeg listening on an SDP)
decide which frames a capture holds. Reads classic pcap with the standard library only
(pcapudp.py); sends every IPv4/UDP datagram whose destination port
is --port (RTCP on port + 1 is left out on purpose) to --to, keeping the time between packets.

    python3 replay_rtp.py CAPTURE.pcap --port 5004 --to 127.0.0.1:5004
"""

import argparse
import socket
import sys
import time

from pcapudp import udp_datagrams


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture")
    ap.add_argument("--port", type=int, required=True, help="destination UDP port to replay")
    ap.add_argument("--to", required=True, action="append", help="host:port to send to (repeatable)")
    args = ap.parse_args()
    dests = [(h, int(p)) for h, p in (to.rsplit(":", 1) for to in args.to)]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    start = first = None
    n = 0
    for d in udp_datagrams(args.capture):
        if d.dport != args.port:
            continue
        if d.truncated:
            sys.exit(f"{args.capture}: truncated packet (snaplen); replay needs whole packets")
        ts, payload = d.time, d.payload
        if first is None:
            first, start = ts, time.monotonic()
        delay = (ts - first) - (time.monotonic() - start)
        if delay > 0:
            time.sleep(delay)
        for dest in dests:
            sock.sendto(payload, dest)
        n += 1
    print(f"replayed {n} datagrams from {args.capture}", file=sys.stderr)


if __name__ == "__main__":
    main()
