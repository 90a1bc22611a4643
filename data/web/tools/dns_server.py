#!/usr/bin/env python3
"""A minimal authoritative DNS responder over UDP for the web samples (standard library only).

    python3 tools/dns_server.py --bind ADDR [--https NAME=ECHFILE ...] [--alpn h3,h2] NAME=IPV4 ...

Answers each query (RFC 1035 §4.1) for one of the NAMEs: type A with the address (TTL 60),
type HTTPS (RFC 9460) for a name given with --https: one ServiceMode record (SvcPriority 1,
TargetName ".", the name itself) with alpn "h2" (or --alpn's) and, when ECHFILE is not empty, ech: the
ECHConfigList in that file (what a browser needs to offer Encrypted Client Hello,
draft-ietf-tls-svcb-ech), any other type with no answer (NOERROR, "no data"), any other name
with NXDOMAIN. Only the
first question is read; EDNS and compression in queries are not needed by glibc's stub resolver
(which sends A and AAAA queries, RFC 1035 format). Each query is logged to stderr as
"<epoch seconds> <client> <id> <name> <type> <rcode> <answers>".
"""

import argparse
import socket
import struct
import sys
import time

TYPE_A, CLASS_IN = 1, 1          # RFC 1035 §3.2.2, §3.2.4
TYPE_HTTPS = 65                  # RFC 9460 §14.1
SVC_ALPN, SVC_ECH = 1, 5         # RFC 9460 §14.3.2 (SvcParamKeys): alpn, ech
NOERROR, FORMERR, NXDOMAIN = 0, 1, 3   # RFC 1035 §4.1.1 RCODE


def parse_question(msg):
    """(qname lower-case, qtype, qclass, end offset of the question) of a query's first question."""
    i, labels = 12, []
    while True:
        n = msg[i]
        if n == 0:
            i += 1
            break
        if n & 0xC0:
            raise ValueError("compressed name in a question")
        labels.append(msg[i + 1 : i + 1 + n].decode("ascii").lower())
        i += 1 + n
    qtype, qclass = struct.unpack_from("!HH", msg, i)
    return ".".join(labels), qtype, qclass, i + 4


def https_rdata(ech, alpns=("h2",)):
    """RFC 9460 §2.2: SvcPriority 1, TargetName "." (the owner name), then the SvcParams in
    increasing key order, each key, length, value: alpn (§7.1.1: length-prefixed ids, "h2"
    unless told), and ech when given (the ECHConfigList's bytes)."""
    alpn = b"".join(bytes([len(a)]) + a.encode() for a in alpns)
    params = struct.pack("!HH", SVC_ALPN, len(alpn)) + alpn
    if ech:
        params += struct.pack("!HH", SVC_ECH, len(ech)) + ech
    return struct.pack("!H", 1) + b"\x00" + params


def answer(query, names, https=None, alpns=("h2",)):
    qid, flags, qdcount = struct.unpack_from("!HHH", query)
    rd = flags & 0x0100
    try:
        if qdcount < 1 or flags & 0x8000:
            raise ValueError("not a query")
        name, qtype, qclass, end = parse_question(query)
    except (ValueError, IndexError, struct.error, UnicodeDecodeError):
        return struct.pack("!HHHHHH", qid, 0x8000 | 0x0400 | rd | FORMERR, 0, 0, 0, 0), "?", 0, FORMERR, 0
    question = query[12:end]
    records = b""
    if name not in names:
        rcode = NXDOMAIN
    else:
        rcode = NOERROR
        if qtype == TYPE_A and qclass == CLASS_IN:
            # name = pointer to the question's name (offset 12), type A, class IN, TTL 60, RDATA
            records = struct.pack("!HHHIH", 0xC00C, TYPE_A, CLASS_IN, 60, 4) + socket.inet_aton(names[name])
        elif qtype == TYPE_HTTPS and qclass == CLASS_IN and https and name in https:
            rdata = https_rdata(https[name], alpns)
            records = struct.pack("!HHHIH", 0xC00C, TYPE_HTTPS, CLASS_IN, 60, len(rdata)) + rdata
    ancount = 1 if records else 0
    # QR=1, AA=1, RD copied, RA=0 (RFC 1035 §4.1.1)
    header = struct.pack("!HHHHHH", qid, 0x8000 | 0x0400 | rd | rcode, 1, ancount, 0, 0)
    return header + question + records, name, qtype, rcode, ancount


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bind", required=True)
    ap.add_argument("--port", type=int, default=53)
    ap.add_argument("--https", action="append", default=[], metavar="NAME=ECHFILE")
    ap.add_argument("--alpn", default="h2", help="the HTTPS records' alpn ids, comma-separated (default h2)")
    ap.add_argument("records", nargs="+", metavar="NAME=IPV4")
    a = ap.parse_args()
    names = dict(r.lower().rstrip(".").split("=", 1) for r in a.records)
    https = {}
    for h in a.https:
        name, path = h.split("=", 1)
        with open(path, "rb") as f:
            https[name.lower().rstrip(".")] = f.read()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((a.bind, a.port))
    sys.stderr.write(f"answering for {', '.join(names)} on {a.bind}:{a.port}\n")
    sys.stderr.flush()
    while True:
        query, peer = s.recvfrom(4096)
        if len(query) < 12:
            continue
        reply, name, qtype, rcode, n = answer(query, names, https, tuple(a.alpn.split(",")))
        s.sendto(reply, peer)
        qid = struct.unpack_from("!H", query)[0]
        sys.stderr.write(f"{time.time():.6f} {peer[0]}:{peer[1]} {qid} {name} {qtype} {rcode} {n}\n")
        sys.stderr.flush()


if __name__ == "__main__":
    main()
