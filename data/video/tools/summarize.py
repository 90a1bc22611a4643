#!/usr/bin/env python3
"""Join each scenario's captures and tool outputs into captures/manifest.json and measured.md.

    python3 tools/summarize.py DATA_VIDEO_DIR > DATA_VIDEO_DIR/measured.md

Standard library only. What it computes itself is bookkeeping, said here so a test can redo it:

* network loss and one-way delay: the media datagrams (UDP to the receiver's port, RTCP left out)
  of the sender capture (headers only) matched one to one with the receiver capture, by RTP
  sequence number (RTP; unwrapped in sending order) or by IPv4 identification (plain UDP);
  delay = receiver time stamp - sender time stamp (one host clock);
* loss runs: lengths of the runs of consecutive lost datagrams, in sending order;
* bit-exact frames: received frames whose ffmpeg framemd5 equals the reference's at the same
  presentation time, after one PTS offset (the most common reference-minus-received PTS among
  frames whose MD5 occurs in the reference: 0 for MPEG-TS, the first received RTP time stamp's
  distance to the reference's first PTS for FFmpeg's RTP receiver); when no frame is bit-exact,
  0 for MPEG-TS and, for RTP/H.264, the reference's first PTS + (first received - first sent RTP
  time stamp).

Everything else is copied from the tools' own outputs (tshark, ffprobe, ffmpeg, iperf3, tc).
"""

import collections
import json
import os
import re
import statistics
import sys

from pcapudp import udp_datagrams

MEDIA_PORT = 5004
REFERENCE_FRAMES = "reference/clip.ts.ffprobe-frames.csv"
REFERENCE_MD5 = "reference/clip.ts.framemd5"

_ROW = re.compile(
    r"^\s*(?P<start>-?[\d.]+)\s+(?P<end>[\d.]+)\s+(?P<src>[\d.]+)\s+(?P<sport>\d+)\s+"
    r"(?P<dst>[\d.]+)\s+(?P<dport>\d+)\s+(?P<ssrc>0x[0-9A-Fa-f]+)\s+(?P<payload>.+?)\s+"
    r"(?P<pkts>\d+)\s+(?P<lost>-?\d+)\s+\((?P<lost_pct>-?[\d.]+)%\)\s+"
    r"(?P<min_delta>[\d.]+)\s+(?P<mean_delta>[\d.]+)\s+(?P<max_delta>[\d.]+)\s+"
    r"(?P<min_jitter>-?[\d.]+)\s+(?P<mean_jitter>-?[\d.]+)\s+(?P<max_jitter>-?[\d.]+)\s*(?P<problems>X?)\s*$"
)


def tshark_rtp_rows(path):
    """The rows of a `tshark -z rtp,streams` output (numbers as tshark printed them)."""
    rows = []
    if not os.path.exists(path):
        return None
    for line in open(path):
        m = _ROW.match(line)
        if m:
            d = m.groupdict()
            for k in ("sport", "dport", "pkts", "lost"):
                d[k] = int(d[k])
            for k in ("start", "end", "lost_pct", "min_delta", "mean_delta", "max_delta",
                      "min_jitter", "mean_jitter", "max_jitter"):
                d[k] = float(d[k])
            d["problems"] = d["problems"] == "X"
            rows.append(d)
    return rows


def mp2t_drops(path):
    """tshark's mp2t.cc.drop output: datagrams with a continuity gap, and the sum of the values.

    tshark 4.0 puts one value (1) per PID whose continuity counter jumped, whatever the number of
    TS packets missing: the sum counts gaps per PID, not lost TS packets."""
    if not os.path.exists(path):
        return None
    n = gaps = 0
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        n += 1
        # one value per TS packet of the frame that follows a gap
        gaps += sum(int(x) for x in line.rstrip("\n").split("\t")[-1].split(","))
    return {"datagrams_with_gap": n, "cc_drop_sum": gaps}


def media(path):
    return [d for d in udp_datagrams(path) if d.dport == MEDIA_PORT]


def rtp_key(datagrams):
    """Unwrapped RTP sequence number of each datagram, in capture order."""
    keys, last = [], None
    for d in datagrams:
        seq = int.from_bytes(d.payload[2:4], "big")
        if last is None:
            ext = seq
        else:
            delta = (seq - (last & 0xFFFF) + 0x8000) % 0x10000 - 0x8000
            ext = last + delta
        keys.append(ext)
        last = ext
    return keys


def network(sender_cap, receiver_cap, transport):
    sent, recv = media(sender_cap), media(receiver_cap)
    if transport.startswith("rtp"):
        skeys = rtp_key(sent)
        # receiver keys unwrapped from the sender's first sequence number
        rkeys, base = [], skeys[0]
        for d in recv:
            seq = int.from_bytes(d.payload[2:4], "big")
            rkeys.append(base + (seq - (base & 0xFFFF)) % 0x10000)
    else:
        skeys = [d.ip_id for d in sent]
        rkeys = [d.ip_id for d in recv]
    if len(set(skeys)) != len(skeys):
        sys.exit(f"{sender_cap}: datagram keys are not unique")
    at = dict(zip(rkeys, recv))
    lost = [k not in at for k in skeys]
    runs, run = [], 0
    for x in lost:
        if x:
            run += 1
        elif run:
            runs.append(run)
            run = 0
    if run:
        runs.append(run)
    owd = [(at[k].time - s.time) * 1000 for k, s in zip(skeys, sent) if k in at]
    order = [skeys.index(k) for k in rkeys if k in set(skeys)]
    reordered = sum(1 for a, b in zip(order, order[1:]) if b < a)
    rtp_ts = {}
    if transport.startswith("rtp") and recv:
        rtp_ts = {"first_sent_rtp_timestamp": int.from_bytes(sent[0].payload[4:8], "big"),
                  "first_received_rtp_timestamp": int.from_bytes(recv[0].payload[4:8], "big")}
    return {
        **rtp_ts,
        "sent": len(sent), "received": len(recv), "lost": sum(lost),
        "loss_pct": round(100 * sum(lost) / len(sent), 2),
        "first_lost_index": lost.index(True) if any(lost) else None,
        "loss_runs": {str(k): v for k, v in sorted(collections.Counter(runs).items())},
        "owd_ms": {"min": round(min(owd), 3), "mean": round(statistics.fmean(owd), 3),
                   "max": round(max(owd), 3)},
        "reordered": reordered,
        "sent_bytes": sum(d.length for d in sent),
        "send_span_s": round(sent[-1].time - sent[0].time, 3),
    }


def ffprobe_frames(path):
    frames = []
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        d = dict(kv.split("=", 1) for kv in line.strip().rstrip(",").split(","))
        frames.append(d)
    return frames


def framemd5(path):
    """(pts, md5) of each frame of an ffmpeg framemd5 output."""
    out = []
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        f = [x.strip() for x in line.split(",")]
        out.append((int(f[2]), f[5]))
    return out


def frames_summary(prefix, ref_md5, fallback_offset):
    csv, md5 = prefix + ".ffprobe-frames.csv", prefix + ".framemd5"
    if not os.path.exists(csv):
        return None
    frames = ffprobe_frames(csv)
    types = collections.Counter(f.get("pict_type", "?") for f in frames)
    got = framemd5(md5)
    ref_by_md5 = {}
    for pts, h in ref_md5:
        ref_by_md5.setdefault(h, pts)
    offsets = collections.Counter(ref_by_md5[h] - pts for pts, h in got if h in ref_by_md5)
    by_md5 = offsets.most_common(1)[0][0] if offsets else None
    offset = by_md5 if by_md5 is not None else fallback_offset
    ref_at = dict(ref_md5)
    exact = sum(1 for pts, h in got if offset is not None and ref_at.get(pts + offset) == h)
    covered = {pts + offset for pts, _ in got} if offset is not None else set()

    def messages(path):
        """Decoder messages in an FFmpeg log ("Last message repeated N times" counts N), not
        counting the receiver's own end ("...sdp: Connection timed out")."""
        if not os.path.exists(path):
            return 0
        n, skip = 0, False
        for line in open(path):
            m = re.match(r"\s*Last message repeated (\d+) times", line)
            if m:
                n += 0 if skip else int(m.group(1))
            elif line.strip():
                skip = "Connection timed out" in line
                n += 0 if skip else 1
        return n

    return {
        "ffprobe_frames": len(frames),
        "ffprobe_pict_types": dict(sorted(types.items())),
        "ffprobe_first_pts": int(frames[0]["pts"]) if frames and frames[0].get("pts", "N/A") != "N/A" else None,
        "ffprobe_decoder_messages": messages(csv[:-4] + ".log"),
        "framemd5_frames": len(got),
        "pts_offset_to_reference": offset,
        "pts_offset_by_md5": by_md5,
        "pts_offset_by_rtp_timestamps": fallback_offset,
        "bitexact_frames": exact,
        "reference_frames_missing": sum(1 for pts, _ in ref_md5 if pts not in covered),
        "framemd5_decoder_messages": messages(md5 + ".log"),
    }


def main():
    root = sys.argv[1]
    caps = os.path.join(root, "captures")
    scenarios = [json.loads(line) for line in open(os.path.join(caps, "scenarios.jsonl"))]
    ref_md5 = framemd5(os.path.join(root, REFERENCE_MD5))
    ref_frames = ffprobe_frames(os.path.join(root, REFERENCE_FRAMES))
    os.chdir(root)
    out = []
    for sc in scenarios:
        r = os.path.join("captures", sc["receiver_capture"])
        s = os.path.join("captures", sc["sender_capture"])
        if not (os.path.exists(r) and os.path.exists(s)):
            continue
        sc = dict(sc)
        sc["network"] = network(s, r, sc["transport"])
        sc["tshark_rtp_streams"] = {
            "receiver": tshark_rtp_rows(r + ".tshark-rtp-streams.txt"),
            "sender": tshark_rtp_rows(s + ".tshark-rtp-streams.txt"),
        }
        sc["tshark_mp2t_drops"] = mp2t_drops(r + ".tshark-mp2t-drops.txt")
        n = sc["network"]
        if sc["transport"] == "rtp-h264":
            # FFmpeg's RTP receiver: PTS = RTP time stamp - first received one; the sender's first
            # packet carries the reference's first PTS (ffmpeg -copyts: RTP ts = random base + PTS)
            first_pts = int(ref_frames[0]["pts"])
            fallback = first_pts + (n["first_received_rtp_timestamp"] - n["first_sent_rtp_timestamp"]) % (1 << 32)
        else:
            fallback = 0   # MPEG-TS: the PES PTS is the reference's (-mpegts_copyts 1)
        sc["frames"] = frames_summary(r, ref_md5, fallback)
        sc["frames_sdp_replay"] = frames_summary(r + ".sdp-replay", ref_md5, 0)
        out.append(sc)
    manifest = {"reference": {"file": "reference/clip.ts", "frames": len(ref_frames),
                              "first_pts": int(ref_frames[0]["pts"]),
                              "pict_types": dict(sorted(collections.Counter(
                                  f["pict_type"] for f in ref_frames).items()))},
                "scenarios": out}
    with open(os.path.join(caps, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")

    print("# Measured on the committed captures (generated by tools/summarize.py; do not edit)\n")
    print(f"Reference: `reference/clip.ts`, {len(ref_frames)} frames "
          f"({manifest['reference']['pict_types']}), first PTS {manifest['reference']['first_pts']}.\n")
    print("## Network (sender capture joined with receiver capture)\n")
    print("| scenario | transport | buffer | load | bulk TCP sent during the video (Mbit/s) | sent | received | lost | loss % "
          "| loss runs (length: count) | OWD min/mean/max (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for sc in out:
        n, b = sc["network"], sc.get("bulk_tcp_down")
        bulk = f"{b['sent_bps_during_video'] / 1e6:.1f}" if b and b.get("sent_bps_during_video") else "–"
        runs = ", ".join(f"{k}: {v}" for k, v in n["loss_runs"].items()) or "–"
        o = n["owd_ms"]
        print(f"| {sc['scenario']} | {sc['transport']} | {sc['buffer_packets']} | {sc['load']} | {bulk} "
              f"| {n['sent']} | {n['received']} | {n['lost']} | {n['loss_pct']} | {runs} "
              f"| {o['min']} / {o['mean']} / {o['max']} |")
    print("\n## What the tools say about the receiver capture\n")
    print("| scenario | tshark pkts | tshark lost (%) | tshark max jitter (ms) | TS continuity gaps: datagrams / sum of "
          "tshark mp2t.cc.drop | frames decoded (ffprobe) | bit-exact frames (framemd5) "
          "| reference frames missing | decoder messages |")
    print("|---|---|---|---|---|---|---|---|---|")
    for sc in out:
        rows = sc["tshark_rtp_streams"]["receiver"]
        row = rows[0] if rows else None
        t = (f"{row['pkts']} | {row['lost']} ({row['lost_pct']}) | {row['max_jitter']}" if row
             else "– | – | –")
        d = sc["tshark_mp2t_drops"]
        drops = f"{d['datagrams_with_gap']} / {d['cc_drop_sum']}" if d else "–"
        fr = sc["frames"]
        print(f"| {sc['scenario']} | {t} | {drops} | {fr['ffprobe_frames']} | {fr['bitexact_frames']} "
              f"| {fr['reference_frames_missing']} | {fr['ffprobe_decoder_messages']} |")
    replays = [sc for sc in out if sc["frames_sdp_replay"]]
    if replays:
        print("\nRTP/MPEG-TS captures replayed to FFmpeg's own RTP receiver (SDP `m=video 5004 RTP/AVP 33`):\n")
        print("| scenario | frames decoded (ffprobe) | bit-exact frames | reference frames missing "
              "| PTS offset to reference | decoder messages |")
        print("|---|---|---|---|---|---|")
        for sc in replays:
            fr = sc["frames_sdp_replay"]
            print(f"| {sc['scenario']} | {fr['ffprobe_frames']} | {fr['bitexact_frames']} "
                  f"| {fr['reference_frames_missing']} | {fr['pts_offset_to_reference']} "
                  f"| {fr['ffprobe_decoder_messages']} |")


if __name__ == "__main__":
    main()
