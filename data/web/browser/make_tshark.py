#!/usr/bin/env python3
"""Write tshark's decrypted view of every capture in captures/ (the reference for qoe's decryption).

Usage: make_tshark.py [NAME...]     (default: every capture; needs tshark, 4.0 here)

For <name>.pcap with <name>.keylog, writes <name>.tshark-http.tsv: one row per HTTP request or
response tshark found after decrypting with the key log (-o tls.keylog_file), TCP reassembly out
of order on (tshark 4.0 loses HTTP/2 responses after a retransmission without it). Columns:
frame, epoch time, stream (tcp.stream or udp.stream), HTTP version, message (request/response),
HTTP/2 or QUIC stream id, method, authority/host, path, status. HTTP/3: tshark 4.0 decrypts QUIC
but does not decode QPACK, so the QUIC STREAM frames of the request streams are listed instead
(client-initiated bidirectional stream ids, RFC 9000 §2.1: id % 4 == 0) with their FIN flag,
method/authority/path/status empty. The first line of each file is the exact command.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CAPS = HERE / "captures"
COLUMNS = ["frame", "time_epoch", "stream", "version", "message", "stream_id", "method", "authority", "path", "status"]


def tshark(pcap: Path, keylog: Path, display: str, fields: list[str]) -> tuple[str, list[list[str]]]:
    cmd = ["tshark", "-r", pcap.name, "-o", f"tls.keylog_file:{keylog.name}", "-o", "tcp.reassemble_out_of_order:TRUE",
           "-Y", display, "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=|"]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, cwd=pcap.parent, capture_output=True, text=True, check=True).stdout
    return " ".join(f"'{c}'" if ("|" in c or " " in c) else c for c in cmd), [line.split("\t") for line in out.splitlines()]


def rows_h1(pcap: Path, keylog: Path) -> tuple[str, list[list[str]]]:
    cmd, raw = tshark(pcap, keylog, "http.request or http.response",
                      ["frame.number", "frame.time_epoch", "tcp.stream", "http.request.method", "http.host",
                       "http.request.uri", "http.response.code", "http.request.version", "http.response.version",
                       "http.response_for.uri"])
    rows = []
    for fr, t, st, method, host, uri, code, rv, sv, rfor in raw:
        # one HTTP/1.1 message per row (tshark lists several when one frame ends several)
        for i, m in enumerate(method.split("|")) if method else []:
            rows.append([fr, t, st, rv.split("|")[0], "request", "", m, host.split("|")[i], uri.split("|")[i], ""])
        for i, c in enumerate(code.split("|")) if code else []:
            rows.append([fr, t, st, sv.split("|")[0], "response", "", "", "", rfor.split("|")[i] if rfor else "", c])
    return cmd, rows


def rows_h2(pcap: Path, keylog: Path) -> tuple[str, list[list[str]]]:
    cmd, raw = tshark(pcap, keylog, "http2.type == 1",  # HEADERS frames (RFC 9113 §6.2)
                      ["frame.number", "frame.time_epoch", "tcp.stream", "http2.type", "http2.streamid",
                       "http2.headers.method", "http2.headers.authority", "http2.headers.path", "http2.headers.status"])
    rows = []
    for fr, t, st, types, sids, methods, auths, paths, statuses in raw:
        # the HEADERS frames of this packet, in order; a request has :method, a response :status
        sid_list = [s for s, ty in zip(sids.split("|"), types.split("|")) if ty == "1"]
        m, a, p, s = (x.split("|") if x else [] for x in (methods, auths, paths, statuses))
        for sid in sid_list:
            if m:
                rows.append([fr, t, st, "2", "request", sid, m.pop(0), a.pop(0) if a else "", p.pop(0) if p else "", ""])
            elif s:
                rows.append([fr, t, st, "2", "response", sid, "", "", "", s.pop(0)])
    return cmd, rows


def rows_h3(pcap: Path, keylog: Path) -> tuple[str, list[list[str]]]:
    cmd, raw = tshark(pcap, keylog, "quic.stream.stream_id",
                      ["frame.number", "frame.time_epoch", "udp.stream", "quic.stream.stream_id", "quic.stream.fin",
                       "ip.src"])
    rows = []
    for fr, t, st, sids, fins, src in raw:
        for sid, fin in zip(sids.split("|"), fins.split("|")):
            if int(sid) % 4 == 0:  # client-initiated bidirectional: request streams (RFC 9114 §6.1)
                msg = "request" if src.startswith("192.0.2.") else "response"
                rows.append([fr, t, st, "3", msg + (" FIN" if fin in ("1", "True") else ""), sid, "", "", "", ""])
    return cmd, rows


def main(names: list[str]) -> None:
    for sc in sorted(CAPS.glob("*.scenario.json")):
        name = sc.name[: -len(".scenario.json")]
        if names and name not in names:
            continue
        pcap, keylog = CAPS / f"{name}.pcap", CAPS / f"{name}.keylog"
        proto = json.loads(sc.read_text())["protocol"]
        make = rows_h3 if proto == "h3" else rows_h2 if proto == "h2" else rows_h1
        cmd, rows = make(pcap, keylog)
        out = CAPS / f"{name}.tshark-http.tsv"
        with out.open("w") as f:
            f.write(f"# command: {cmd}\n")
            f.write("\t".join(COLUMNS) + "\n")
            for r in rows:
                f.write("\t".join(r) + "\n")
        req = sum(r[4].startswith("request") for r in rows)
        print(f"{name}: {req} requests, {sum(r[4].startswith('response') for r in rows)} responses -> {out.name}")


if __name__ == "__main__":
    main(sys.argv[1:])
