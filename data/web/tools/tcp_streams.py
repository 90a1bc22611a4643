#!/usr/bin/env python3
"""Sum tshark's per-frame TCP fields up per TCP stream (standard library only).

    tshark -r CAP -Y tcp -T fields -e tcp.stream -e frame.time_epoch -e ip.src -e tcp.srcport
        -e tcp.dstport -e tcp.len -e tcp.flags.syn -e tcp.flags.fin -e tcp.flags.reset
        -e tcp.analysis.retransmission -e tcp.analysis.fast_retransmission
        -e tcp.analysis.spurious_retransmission -e tcp.analysis.out_of_order
        -e tcp.analysis.lost_segment -e tcp.analysis.duplicate_ack -e tcp.analysis.ack_rtt
        -e tcp.analysis.initial_rtt | python3 tools/tcp_streams.py CLIENT_IP [HEADER LINE]...

Writes a TSV (the HEADER LINEs first, then a column header) with one row per tcp.stream; "c2s"
counts frames the client (CLIENT_IP) sent, "s2c" frames it received. Every count is a count of
frames tshark marked with that analysis flag; nothing is judged here. The ACK RTT columns are
tshark's tcp.analysis.ack_rtt on the server's frames (the time from a client segment to the
server's ACK of it, as the client sees it: a network round trip); on the client's own frames
that field is the client's ACK delay, not a network RTT, and is left out. initial_rtt is tshark's
(SYN to the ACK of the SYN/ACK).
"""

import statistics
import sys

COLUMNS = [
    "stream", "client_port", "server_port", "first_epoch", "last_epoch", "frames_c2s", "frames_s2c",
    "payload_bytes_c2s", "payload_bytes_s2c", "syn_c2s", "fin_c2s", "fin_s2c", "rst_c2s", "rst_s2c",
    "retransmission_c2s", "retransmission_s2c", "fast_retransmission_c2s", "fast_retransmission_s2c",
    "spurious_retransmission_c2s", "spurious_retransmission_s2c", "out_of_order_c2s", "out_of_order_s2c",
    "lost_segment_c2s", "lost_segment_s2c", "duplicate_ack_c2s", "duplicate_ack_s2c",
    "initial_rtt_s", "server_ack_rtt_n", "server_ack_rtt_min_s", "server_ack_rtt_median_s", "server_ack_rtt_max_s",
]
FLAGS = ["retransmission", "fast_retransmission", "spurious_retransmission", "out_of_order",
         "lost_segment", "duplicate_ack"]


def main():
    client = sys.argv[1]
    for line in sys.argv[2:]:
        print(line)
    streams = {}
    for line in sys.stdin:
        f = line.rstrip("\n").split("\t")
        if len(f) < 17 or not f[0]:
            continue
        (stream, t, src, sport, dport, tlen, syn, fin, rst, *flags) = f[:15]
        ack_rtt, init_rtt = f[15], f[16]
        d = "c2s" if src == client else "s2c"
        s = streams.setdefault(int(stream), {"rtt": [], **{c: 0 for c in COLUMNS}})
        if s["first_epoch"] == 0:
            s["first_epoch"] = t
            s["client_port"], s["server_port"] = (sport, dport) if d == "c2s" else (dport, sport)
        s["last_epoch"] = t
        s[f"frames_{d}"] += 1
        s[f"payload_bytes_{d}"] += int(tlen or 0)
        if syn == "1" and d == "c2s":
            s["syn_c2s"] += 1
        if fin == "1":
            s[f"fin_{d}"] += 1
        if rst == "1":
            s[f"rst_{d}"] += 1
        for name, v in zip(FLAGS, flags):
            if v:
                s[f"{name}_{d}"] += 1
        if init_rtt:
            s["initial_rtt_s"] = init_rtt
        if ack_rtt and d == "s2c":
            s["rtt"].append(float(ack_rtt))
    print("\t".join(COLUMNS))
    for k in sorted(streams):
        s = streams[k]
        s["stream"] = k
        r = s["rtt"]
        s["server_ack_rtt_n"] = len(r)
        if r:
            s["server_ack_rtt_min_s"] = f"{min(r):.6f}"
            s["server_ack_rtt_median_s"] = f"{statistics.median(r):.6f}"
            s["server_ack_rtt_max_s"] = f"{max(r):.6f}"
        else:
            s["server_ack_rtt_min_s"] = s["server_ack_rtt_median_s"] = s["server_ack_rtt_max_s"] = ""
        if s["initial_rtt_s"] == 0:
            s["initial_rtt_s"] = ""
        print("\t".join(str(s[c]) for c in COLUMNS))


if __name__ == "__main__":
    main()
