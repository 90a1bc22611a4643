#!/usr/bin/env python3
"""Join each scenario's capture, client timing and tshark outputs into captures/manifest.json and
measured.md.

    python3 tools/summarize.py DATA_WEB_DIR > DATA_WEB_DIR/measured.md

Standard library + the tshark binary (for the bottleneck losses only). What it computes itself is
bookkeeping, said here so a test can redo it:

* page loads: the client ran from t_before to t_after (date +%s.%N around the process); a frame
  belongs to the page load whose [t_before, t_after] holds it;
* capture PLT (tshark's view) = the frame time of the last HTTP response tshark completes in the
  window (tshark -o tcp.reassemble_out_of_order:TRUE; HTTPS decrypted with the client's keylog)
  minus the first DNS query, SYN or request in it;
* curl's PLT = end of the last URL's transfer - start of the first, on the wall clock: one curl
  process fetches the URLs one after another, each transfer's clock (time_*) starts before its
  name lookup; a transfer's start = the time (--trace-time, UTC) of its first verbose line minus
  its time_namelookup, its end = start + time_total. The sum of time_total is kept too: it misses
  the 0.1-3 ms curl spends between transfers. --trace-time prints the wall clock's whole seconds
  (read once, at curl's start) plus CLOCK_MONOTONIC's fraction, i.e. a time off by a constant
  under 1 s: corrected with the realtime - monotonic offset the script read before the load
  (the choice of the two candidates puts the first line within 1 s after t_before);
* wget's PLT = t_after - t_before (process start to exit: wget prints no finer total);
* RTT = the median over the page's TCP connections of tshark's median ACK RTT on the server's
  frames (client segment -> server ACK, as seen at the client); 14 x RTT is the seed paper's
  "RTT component" of a page load (§9.1);
* bottleneck losses: frames of the web and DNS flows the sender's capture holds and the
  receiver's does not, matched on (IP source, IP identification, source port, TCP seq, length and TSval);
* tc: packets the router's tbf dropped (rc0 = downlink queue, rs0 = uplink queue), whole run,
  all traffic (bulk load included).
"""

import datetime
import json
import os
import re
import statistics
import subprocess
import sys


def tsv(path):
    """Rows (dicts) of a tshark -T fields -E header=y output preceded by '# ...' lines."""
    if not os.path.exists(path):
        return None
    lines = [x.rstrip("\n") for x in open(path) if not x.startswith("#")]
    if not lines:
        return []
    head = lines[0].split("\t")
    return [dict(zip(head, x.split("\t"))) for x in lines[1:] if x]


def within(t, w):
    return w[0] <= float(t) <= w[1]


def qdisc_drops(lines):
    out, dev = {}, None
    for line in lines or []:
        m = re.match(r"qdisc \S+ \S+ dev (\S+) root", line)
        if m:
            dev = m.group(1)
            continue
        m = re.match(r"\s*Sent (\d+) bytes (\d+) pkt \(dropped (\d+)", line)
        if m and dev in ("rc0", "rs0"):
            out["down" if dev == "rc0" else "up"] = {"sent_packets": int(m.group(2)), "dropped": int(m.group(3))}
    return out


def curl_timing(caps, rep, clock_offset):
    objs = []
    for o in tsv(os.path.join(caps, rep["curl_output"])):
        for k, v in o.items():
            if k.startswith("time_"):
                o[k] = float(v)
            elif k in ("http_code", "remote_port", "local_port", "num_connects", "size_request",
                       "size_header", "size_download", "exitcode"):
                o[k] = int(v)
        objs.append(o)
    per = [dict(o) for o in objs]
    day = datetime.datetime.fromtimestamp(rep["t_before"], datetime.timezone.utc).replace(
        hour=0, minute=0, second=0, microsecond=0).timestamp()
    # the verbose log cut into transfers: each ends with curl's "Connection #N to host ... left
    # intact" or "Closing connection N" (a TLS close_notify may follow); the next one starts with
    # its first line that comes right after its name lookup: "Trying ..." (a new connection;
    # "Hostname ... found in DNS cache" before it if cached) or "Found bundle ..." / "Re-using
    # existing connection ..." (a kept-alive one)
    start_marks = re.compile(r"\*\s+(Hostname .* found in DNS cache|Trying |Found bundle|Re-using existing connection)")
    firsts, new = [], True
    for line in open(os.path.join(caps, rep["curl_verbose_log"])):
        m = re.match(r"(\d\d):(\d\d):(\d\d\.\d+) (.*)", line)
        if not m:
            continue
        t = day + int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
        if new and start_marks.match(m.group(4).lstrip()):
            firsts.append(t)
            new = False
        if re.match(r"\* (Connection #\d+ to host .* left intact|Closing connection)", m.group(4)):
            new = True
    ok = len(firsts) == len(objs) and objs
    if not ok:
        return {"tool": "curl", "objects": per, "plt_s": None, "wall_clock_s": rep["wall_clock_s"],
                "error": f"{len(firsts)} transfers in the verbose log, {len(objs)} -w lines"}
    # --trace-time = whole seconds of the wall clock at curl's start + CLOCK_MONOTONIC's fraction:
    # the true time is off by frac(realtime - monotonic) or that minus 1 s; the right one puts the
    # first line within a second after t_before (the process started at t_before)
    frac = clock_offset % 1.0
    while firsts[0] + frac < rep["t_before"] - 43200:   # the day rolled over
        firsts = [t + 86400 for t in firsts]
    corr = frac if 0 <= firsts[0] + frac - rep["t_before"] < 1 else frac - 1
    starts = [t + corr - o["time_namelookup"] for t, o in zip(firsts, objs)]
    start, end = starts[0], starts[-1] + objs[-1]["time_total"]
    for p, s in zip(per, starts):
        p["start_epoch"] = round(s, 6)
    return {"tool": "curl", "objects": per, "plt_s": round(end - start, 6),
            "sum_time_total_s": round(sum(o["time_total"] for o in objs), 6),
            "start_epoch": round(start, 6), "end_epoch": round(end, 6),
            "trace_time_correction_s": round(corr, 6), "wall_clock_s": rep["wall_clock_s"]}


def wget_timing(caps, rep):
    log = open(os.path.join(caps, rep["wget_log"])).read()
    statuses = re.findall(r"---response begin---\n(HTTP/\S+) (\d{3})", log)
    urls = re.findall(r"^--\d{4}-\d\d-\d\d \d\d:\d\d:\d\d--  (\S+)$", log, re.M)
    total = re.search(r"Total wall clock time: (\S+)", log)
    down = re.search(r"Downloaded: (\d+) files, (\S+) in (\S+) ", log)
    return {"tool": "wget", "urls": urls, "responses": [[v, int(c)] for v, c in statuses],
            "plt_s": rep["wall_clock_s"], "start_epoch": rep["t_before"], "end_epoch": rep["t_after"],
            "total_wall_clock_time": total.group(1) if total else None,
            "downloaded": {"files": int(down.group(1)), "size": down.group(2), "in": down.group(3)} if down else None,
            "wall_clock_s": rep["wall_clock_s"]}


def capture_view(cap, window):
    req = [r for r in tsv(cap + ".tshark-http-requests.tsv") if within(r["frame.time_epoch"], window)]
    rsp = [r for r in tsv(cap + ".tshark-http-responses.tsv") if within(r["frame.time_epoch"], window)]
    dns = [r for r in tsv(cap + ".tshark-dns.tsv") if within(r["frame.time_epoch"], window)]
    streams = [s for s in tsv(cap + ".tshark-tcp-streams.tsv") if within(s["first_epoch"], window)]
    tls = tsv(cap + ".tshark-tls.tsv")
    starts = [float(r["frame.time_epoch"]) for r in dns if r["dns.flags.response"] in ("0", "False")]
    starts += [float(s["first_epoch"]) for s in streams]
    starts += [float(r["frame.time_epoch"]) for r in req]
    first = min(starts) if starts else None
    last = max((float(r["frame.time_epoch"]) for r in rsp), default=None)
    rtts = [float(s["server_ack_rtt_median_s"]) for s in streams if s["server_ack_rtt_median_s"]]
    rtt = statistics.median(rtts) if rtts else None

    def total(key):
        return sum(int(s[key]) for s in streams)

    return {
        "first_frame_epoch": first, "last_response_epoch": last,
        "plt_s": round(last - first, 6) if first is not None and last is not None else None,
        "requests": len(req), "request_uris": [r["http.request.uri"] for r in req],
        "requests_with_referer": sum(1 for r in req if r["http.referer"]),
        "responses": len(rsp), "response_codes": [int(r["http.response.code"]) for r in rsp],
        "chunked_responses": sum(1 for r in rsp if "chunked" in r["http.transfer_encoding"]),
        "dns_queries": sum(1 for r in dns if r["dns.flags.response"] in ("0", "False")),
        "dns_responses": sum(1 for r in dns if r["dns.flags.response"] in ("1", "True")),
        "dns_time_s": [float(r["dns.time"]) for r in dns if r.get("dns.time")],
        "tcp_connections": len(streams),
        "initial_rtt_s": [float(s["initial_rtt_s"]) if s["initial_rtt_s"] else None for s in streams],
        "server_ack_rtt_median_s": [float(s["server_ack_rtt_median_s"]) if s["server_ack_rtt_median_s"] else None
                                    for s in streams],
        "rtt_s": rtt,
        "retransmissions": {"c2s": total("retransmission_c2s"), "s2c": total("retransmission_s2c")},
        "fast_retransmissions": {"c2s": total("fast_retransmission_c2s"), "s2c": total("fast_retransmission_s2c")},
        "spurious_retransmissions": {"c2s": total("spurious_retransmission_c2s"),
                                     "s2c": total("spurious_retransmission_s2c")},
        "lost_segment_marks": {"c2s": total("lost_segment_c2s"), "s2c": total("lost_segment_s2c")},
        "duplicate_acks": {"c2s": total("duplicate_ack_c2s"), "s2c": total("duplicate_ack_s2c")},
        "tls_server_names": sorted({r["tls.handshake.extensions_server_name"] for r in tls or []
                                    if r["tls.handshake.extensions_server_name"]}) or None,
    }


FRAME_KEYS = ["ip.src", "ip.id", "tcp.srcport", "udp.srcport", "tcp.seq_raw", "tcp.len", "tcp.options.timestamp.tsval"]


def frame_keys(path):
    cmd = ["tshark", "-r", path, "-T", "fields"] + [a for k in FRAME_KEYS for a in ("-e", k)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return [tuple(x.split("\t")) for x in out.splitlines() if x]


def bottleneck_losses(client_cap, server_cap, client_ip):
    c, s = frame_keys(client_cap), frame_keys(server_cap)
    cset, sset = set(c), set(s)
    down = [k for k in s if k[0] != client_ip and k not in cset]
    up = [k for k in c if k[0] == client_ip and k not in sset]
    return {"down_sent": sum(1 for k in s if k[0] != client_ip), "down_lost": len(down),
            "up_sent": sum(1 for k in c if k[0] == client_ip), "up_lost": len(up),
            "command": "tshark -r CAP -T fields " + " ".join("-e " + k for k in FRAME_KEYS)}


def ms(x):
    return "–" if x is None else f"{1000 * x:.1f}"


def main():
    root = sys.argv[1]
    caps = os.path.join(root, "captures")
    scenarios = [json.loads(x) for x in open(os.path.join(caps, "scenarios.jsonl"))]
    out = []
    for sc in scenarios:
        cap = os.path.join(caps, sc["client_capture"])
        if not os.path.exists(cap + ".tshark-http-requests.tsv"):
            continue
        sc = dict(sc)
        for rep in sc["page_loads"]:
            if sc["client"] == "curl":
                rep["client_timing"] = curl_timing(caps, rep, sc["realtime_minus_monotonic_s"])
            else:
                rep["client_timing"] = wget_timing(caps, rep)
            rep["capture"] = capture_view(cap, (rep["t_before"], rep["t_after"]))
        sc["tc_drops"] = qdisc_drops(sc.pop("qdisc_stats_at_end"))
        for k in ("qdisc", "server_route", "server_sysctl"):   # in scenarios.jsonl
            sc.pop(k)
        sc["bottleneck_losses"] = bottleneck_losses(cap, os.path.join(caps, sc["server_capture"]), sc["client_ip"])
        out.append(sc)
    with open(os.path.join(caps, "manifest.json"), "w") as f:
        # one scenario per line (indented JSON would be three times the size)
        f.write('{"scenarios": [\n' + ",\n".join(json.dumps(sc) for sc in out) + "\n]}\n")

    print("# Measured on the committed captures (generated by tools/summarize.py; do not edit)\n")
    print("Page: `site/` (index.html 15000 B, style.css 5800 B, img1.jpg, img2.jpg). PLT by the client "
          "tool: curl = sum of `time_total`, wget = process wall clock. Capture PLT = first DNS query / SYN "
          "→ last HTTP response tshark completes. RTT = median of tshark's ACK RTT on the server's "
          "frames. Retransmissions = frames tshark flags `tcp.analysis.retransmission` (client→server / "
          "server→client). Bottleneck losses = web/DNS frames sent and never seen at the other end "
          "(down / up). tc drops = all packets the tbf queues dropped (bulk load included).\n")
    print("| capture | page | server | client | name lookup | load | buffer | bulk Mbit/s | PLT client (s) | PLT capture (s) "
          "| client − capture (ms) | requests / responses (codes) | conns | init RTT (ms) | RTT (ms) "
          "| 14×RTT / PLT | retrans c→s / s→c | bottleneck losses down / up | tc drops down / up |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for sc in out:
        b = sc["bulk_tcp"]
        bulk = f"{b['sent_bps_during_pages'] / 1e6:.2f}" if b and b.get("sent_bps_during_pages") else "–"
        bl, td = sc["bottleneck_losses"], sc["tc_drops"]
        for rep in sc["page_loads"]:
            c, t = rep["capture"], rep["client_timing"]
            codes = ",".join(str(x) for x in c["response_codes"])
            diff = f"{1000 * (t['plt_s'] - c['plt_s']):+.1f}" if None not in (c["plt_s"], t["plt_s"]) else "–"
            ratio = f"{14 * c['rtt_s'] / t['plt_s']:.2f}" if c["rtt_s"] and t["plt_s"] else "–"
            init = "/".join(ms(x) for x in c["initial_rtt_s"])
            page = rep["index"] if len(sc["page_loads"]) > 1 else ""
            plt_t = "–" if t["plt_s"] is None else f"{t['plt_s']:.3f}"
            plt_c = "–" if c["plt_s"] is None else f"{c['plt_s']:.3f}"
            print(f"| {sc['scenario']} | {page} | {sc['server']} | {sc['client']} | {sc['name_lookup']} | {sc['load']} | {sc['buffer_packets']}{'p' if sc.get('queue_unit') == 'packets' else ''} "
                  f"| {bulk} | {plt_t} | {plt_c} | {diff} | {c['requests']} / {c['responses']} ({codes}) "
                  f"| {c['tcp_connections']} | {init} | {ms(c['rtt_s'])} | {ratio} "
                  f"| {c['retransmissions']['c2s']} / {c['retransmissions']['s2c']} "
                  f"| {bl['down_lost']}/{bl['down_sent']} / {bl['up_lost']}/{bl['up_sent']} "
                  f"| {td.get('down', {}).get('dropped', '–')} / {td.get('up', {}).get('dropped', '–')} |")


if __name__ == "__main__":
    main()
