"""SIP signalling with SDES keys for make_srtp_captures.sh (stdlib only).

    python3 sdes_call.py keys                 print the test keys (NAME=base64 lines, for the shell)
    python3 sdes_call.py invite CALL_ID       INVITE (offer) / 200 OK (answer) / ACK
    python3 sdes_call.py bye CALL_ID          BYE / 200 OK

The caller is 127.0.0.1:5060 and receives RTP on 127.0.0.1:40000; the callee is 127.0.0.2:5060
and receives on 127.0.0.2:40002. Both SDPs use the RTP/SAVP profile (RFC 3711 §12) with PCMA.
The offer carries two a=crypto lines (RFC 4568 §4): tag 1 AES_CM_128_HMAC_SHA1_80 with key A80,
tag 2 AES_CM_128_HMAC_SHA1_32 with key A32; the answer accepts tag 2 with the callee's own key
B32 (RFC 4568 §6.1). Each side encrypts what it SENDS with its own key (RFC 4568 §5.1): the
caller's stream with A32, the callee's with B32. Nothing listens: the capture is what matters.

The keys are test keys, derived from fixed strings (SHA-256, first 30 bytes = 16-byte master key
|| 14-byte master salt, RFC 3711 §8.2), so that re-running the script gives the same ones.
"""

from __future__ import annotations

import base64
import hashlib
import socket
import sys
import time

CALLER = ("127.0.0.1", 5060)
CALLEE = ("127.0.0.2", 5060)
CALLER_RTP = 40000
CALLEE_RTP = 40002


def key(name: str) -> str:
    """A 30-byte AES_CM_128 master key || salt as base64 (RFC 4568 §6.1 inline: syntax)."""
    return base64.b64encode(hashlib.sha256(f"qoe srtp test key {name}".encode()).digest()[:30]).decode()


KEYS = {"A80": key("A80"), "A32": key("A32"), "B32": key("B32"), "C80": key("C80")}


def sdp(addr: str, port: int, crypto: list[str], session: int) -> str:
    lines = [
        "v=0", f"o=- {session} {session} IN IP4 {addr}", "s=-", f"c=IN IP4 {addr}", "t=0 0",
        f"m=audio {port} RTP/SAVP 8", "a=rtpmap:8 PCMA/8000", "a=ptime:20", "a=sendrecv",
    ] + [f"a=crypto:{c}" for c in crypto]
    return "\r\n".join(lines) + "\r\n"


def message(start: str, call_id: str, cseq: int, method: str, via: tuple[str, int], body: str = "",
            to_tag: bool = True) -> bytes:
    head = [
        start,
        f"Via: SIP/2.0/UDP {via[0]}:{via[1]};branch=z9hG4bK{call_id}{cseq}{method}",
        f"From: <sip:caller@{CALLER[0]}>;tag=c1",
        f"To: <sip:callee@{CALLEE[0]}>" + (";tag=s1" if to_tag else ""),
        f"Call-ID: {call_id}",
        f"CSeq: {cseq} {method}",
        "Max-Forwards: 70",
    ]
    if body:
        head.append("Content-Type: application/sdp")
    head.append(f"Content-Length: {len(body.encode())}")
    return ("\r\n".join(head) + "\r\n\r\n" + body).encode()


def main(argv: list[str]) -> None:
    if argv[0] == "keys":
        for k, v in KEYS.items():
            print(f"{k}={v}")
        return
    call_id = argv[1]
    a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    a.bind(CALLER)
    b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    b.bind(CALLEE)
    uri = f"sip:callee@{CALLEE[0]}"
    if argv[0] == "invite":
        offer = sdp(CALLER[0], CALLER_RTP, [f"1 AES_CM_128_HMAC_SHA1_80 inline:{KEYS['A80']}|2^31",
                                            f"2 AES_CM_128_HMAC_SHA1_32 inline:{KEYS['A32']}|2^31"], 1)
        answer = sdp(CALLEE[0], CALLEE_RTP, [f"2 AES_CM_128_HMAC_SHA1_32 inline:{KEYS['B32']}|2^31"], 2)
        steps = [(a, CALLEE, message(f"INVITE {uri} SIP/2.0", call_id, 1, "INVITE", CALLER, offer, to_tag=False)),
                 (b, CALLER, message("SIP/2.0 200 OK", call_id, 1, "INVITE", CALLER, answer)),
                 (a, CALLEE, message(f"ACK {uri} SIP/2.0", call_id, 1, "ACK", CALLER))]
    else:
        steps = [(a, CALLEE, message(f"BYE {uri} SIP/2.0", call_id, 2, "BYE", CALLER)),
                 (b, CALLER, message("SIP/2.0 200 OK", call_id, 2, "BYE", CALLER))]
    for sock, to, data in steps:
        sock.sendto(data, to)
        time.sleep(0.02)


if __name__ == "__main__":
    main(sys.argv[1:])
