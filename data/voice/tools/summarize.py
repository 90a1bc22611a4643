#!/usr/bin/env python3
"""Summarise the voice captures: tshark's RTP stream rows + one-way delay per stream (stdlib only).

Reads CAPS/scenarios.jsonl (written by ../make_samples.sh, one line per scenario) and the
`*.tshark-rtp-streams.txt` files next to the captures; runs tshark once more per capture to get
(SSRC, sequence number, arrival time) of every RTP packet and joins the sender-side and the
receiver-side capture of each stream (same host clock, so arrival difference = one-way delay).
Writes CAPS/manifest.json and prints a Markdown table (make_samples.sh stores it as measured.md).

Usage: summarize.py CAPTURES_DIR
"""
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROW = re.compile(
    r"^\s*(?P<start>-?[\d.]+)\s+(?P<end>-?[\d.]+)\s+(?P<src>\S+)\s+(?P<sport>\d+)\s+(?P<dst>\S+)\s+"
    r"(?P<dport>\d+)\s+(?P<ssrc>0x[0-9a-fA-F]+)\s+(?P<payload>.+?)\s+(?P<pkts>\d+)\s+"
    r"(?P<lost>-?\d+)\s+\((?P<lost_pct>[-\d.]+)%\)\s+(?P<min_delta>[\d.]+)\s+(?P<mean_delta>[\d.]+)\s+"
    r"(?P<max_delta>[\d.]+)\s+(?P<min_jitter>[\d.]+)\s+(?P<mean_jitter>[\d.]+)\s+"
    r"(?P<max_jitter>[\d.]+)\s*(?P<problems>X?)\s*$"
)


def tshark_rows(path):
    """Rows of a stored `tshark -q -z rtp,streams` output, keyed by SSRC (lower-case hex)."""
    rows = {}
    for line in Path(path).read_text().splitlines():
        m = ROW.match(line)
        if m:
            d = m.groupdict()
            row = {
                "src": f"{d['src']}:{d['sport']}", "dst": f"{d['dst']}:{d['dport']}",
                "payload": d["payload"].strip(), "packets": int(d["pkts"]), "lost": int(d["lost"]),
                "lost_pct": float(d["lost_pct"]), "min_delta_ms": float(d["min_delta"]),
                "mean_delta_ms": float(d["mean_delta"]), "max_delta_ms": float(d["max_delta"]),
                "min_jitter_ms": float(d["min_jitter"]), "mean_jitter_ms": float(d["mean_jitter"]),
                "max_jitter_ms": float(d["max_jitter"]), "problems": d["problems"] == "X",
            }
            rows[d["ssrc"].lower()] = row
    return rows


def ns_of(text):
    """frame.time_epoch text ('1700000000.123456789') -> integer nanoseconds, exactly."""
    sec, _, frac = text.partition(".")
    return int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])


def rtp_times(capture, ssrc):
    """[(seq, arrival ns)] of one SSRC's RTP packets in capture order (tshark, heuristic on)."""
    out = subprocess.run(
        ["tshark", "-r", str(capture), "--enable-heuristic", "rtp_udp", "-Y",
         f"rtp.ssrc == {ssrc}", "-T", "fields", "-e", "rtp.seq", "-e", "frame.time_epoch"],
        check=True, capture_output=True, text=True).stdout
    return [(int(s), ns_of(t)) for s, t in (ln.split("\t") for ln in out.splitlines() if ln)]


def one_way_delay(sent, received):
    """Join by sequence number (streams here are ~400 packets, far below the 16-bit wrap)."""
    first = {}
    for seq, t in sent:
        first.setdefault(seq, t)
    delays, dup = [], 0
    seen = set()
    for seq, t in received:
        if seq in seen:
            dup += 1
            continue
        seen.add(seq)
        if seq in first:
            delays.append((t - first[seq]) / 1e6)
    lost = len(first) - len(seen & set(first))
    res = {"sent": len(first), "received": len(seen), "lost_in_network": lost,
           "duplicates": dup}
    if delays:
        q = sorted(delays)
        res.update({
            "owd_min_ms": round(q[0], 3), "owd_median_ms": round(statistics.median(q), 3),
            "owd_mean_ms": round(statistics.fmean(q), 3),
            "owd_p95_ms": round(q[min(len(q) - 1, int(0.95 * len(q)))], 3),
            "owd_max_ms": round(q[-1], 3)})
    return res


def main():
    caps = Path(sys.argv[1])
    scenarios = [json.loads(ln) for ln in (caps / "scenarios.jsonl").read_text().splitlines() if ln]
    for sc in scenarios:
        for st in sc["streams"]:
            ssrc = st["ssrc"].lower()
            for side in ("sender", "receiver"):
                rows = tshark_rows(caps / (st[f"{side}_capture"] + ".tshark-rtp-streams.txt"))
                st[f"tshark_{side}"] = rows.get(ssrc)
            st["delay"] = one_way_delay(rtp_times(caps / st["sender_capture"], ssrc),
                                        rtp_times(caps / st["receiver_capture"], ssrc))
    version = subprocess.run(["tshark", "--version"], capture_output=True, text=True).stdout
    manifest = {"tshark": version.splitlines()[0], "scenarios": scenarios}
    (caps / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")

    print("# Measured on the committed captures\n")
    print("Written by `tools/summarize.py captures` (run by `make_samples.sh stats`); "
          f"{manifest['tshark']}")
    print("tshark columns come from the receiver-side capture's `*.tshark-rtp-streams.txt`; "
          "one-way delay (OWD) joins sender- and receiver-side captures by SSRC and sequence "
          "number.\n")
    print("| scenario | buffer | load | bulk TCP carried (Mbit/s up/down) | stream | packets rx | lost "
          "(tshark) | max delta ms | mean jitter ms | max jitter ms | OWD min / median / max ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for sc in scenarios:
        thr = sc["bulk_tcp"]
        thr_s = "/".join("-" if thr[k] is None else f"{thr[k]['received_bps'] / 1e6:.2f}"
                         for k in ("up", "down"))
        for st in sc["streams"]:
            r = st["tshark_receiver"] or {}
            d = st["delay"]
            name = "talk (up)" if st["direction"] == "talk" else "listen (down)"
            print(f"| {sc['scenario']} | {sc['buffer_packets']} | {sc['load']} | {thr_s} | {name} "
                  f"| {r.get('packets', '?')} | {r.get('lost', '?')} ({r.get('lost_pct', '?')}%) "
                  f"| {r.get('max_delta_ms', '?')} | {r.get('mean_jitter_ms', '?')} "
                  f"| {r.get('max_jitter_ms', '?')} "
                  f"| {d.get('owd_min_ms', '?')} / {d.get('owd_median_ms', '?')} / "
                  f"{d.get('owd_max_ms', '?')} |")

    print("\n## Every capture: tshark `-z rtp,streams` rows\n")
    print("One row per RTP stream in the file's `*.tshark-rtp-streams.txt` (the command is its first "
          "line). Lost = expected - received counted from the first packet the file holds.\n")
    print("| file | made by | stream | SSRC | payload | packets | lost | max delta ms "
          "| mean jitter ms | max jitter ms | problems |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for sc in scenarios:
        for side in ("client", "server"):
            f = sc[f"{side}_capture"]
            rows = tshark_rows(caps / (f + ".tshark-rtp-streams.txt"))
            for ssrc, r in rows.items():
                print(f"| {f} | `{sc[side + '_capture_command']}` | {r['src']} -> {r['dst']} | {ssrc} "
                      f"| {r['payload']} | {r['packets']} | {r['lost']} ({r['lost_pct']}%) "
                      f"| {r['max_delta_ms']} | {r['mean_jitter_ms']} | {r['max_jitter_ms']} "
                      f"| {'X' if r['problems'] else ''} |")


if __name__ == "__main__":
    main()
