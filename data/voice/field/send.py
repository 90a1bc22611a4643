"""Senders for the crafted field captures of make_field_captures.sh (stdlib only).

    python3 send.py sip CALL_ID CSEQ RATE_OR_DTMF RTP_PORT   one INVITE / 200 OK / ACK exchange
    python3 send.py bye CALL_ID CSEQ                         BYE / 200 OK
    python3 send.py dtmf PORT SEED                           PCMU RTP with RFC 4733 events

All traffic goes over the loopback: the caller is 127.0.0.1:5062, the callee 127.0.0.1:5060;
nothing listens (the capture is all that matters). The SDP of the INVITE announces where the
caller receives RTP (127.0.0.1:RTP_PORT); the 200 OK's SDP the callee's side (RTP_PORT + 10000).

References: RFC 3261 §7 and §8 (requests, responses), RFC 4566 §5 (SDP), RFC 3264 §8 (a re-INVITE
is the same Call-ID with a higher CSeq), RFC 3551 (PCMU, PT 0), RFC 4733 §2.3 and §2.5 (the
telephone-event payload and how a sender transmits an event).
"""

from __future__ import annotations

import random
import socket
import struct
import sys
import time

CALLER = ("127.0.0.1", 5062)
CALLEE = ("127.0.0.1", 5060)


def sdp(port: int, media: str, session: int) -> str:
    """SDP body (RFC 4566 §5): one audio section on 127.0.0.1:port."""
    if media == "dtmf":  # PCMU and telephone-event (RFC 4733 §7.1.1: events 0-15 are the DTMF digits)
        fmt = "0 101"
        attrs = "a=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\na=fmtp:101 0-15\r\n"
    else:  # L16 mono at the given clock rate, dynamic payload type 99 (RFC 3551 §4.5.11)
        fmt = "99"
        attrs = f"a=rtpmap:99 L16/{int(media)}/1\r\n"
    return (f"v=0\r\no=- {session} {session} IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
            f"m=audio {port} RTP/AVP {fmt}\r\n{attrs}a=ptime:20\r\na=sendrecv\r\n")


def message(start: str, call_id: str, cseq: int, method: str, body: str = "", to_tag: bool = True) -> bytes:
    head = [
        start,
        f"Via: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bK{call_id}{cseq}{method}",
        "From: <sip:caller@127.0.0.1>;tag=c1",
        "To: <sip:callee@127.0.0.1>" + (";tag=s1" if to_tag else ""),
        f"Call-ID: {call_id}",
        f"CSeq: {cseq} {method}",
        "Max-Forwards: 70",
    ]
    if body:
        head.append("Content-Type: application/sdp")
    head.append(f"Content-Length: {len(body.encode())}")
    return ("\r\n".join(head) + "\r\n\r\n" + body).encode()


def send(sock_from: socket.socket, to: tuple[str, int], data: bytes) -> None:
    sock_from.sendto(data, to)
    time.sleep(0.02)


def sockets() -> tuple[socket.socket, socket.socket]:
    a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    a.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    a.bind(CALLER)
    b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    b.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    b.bind(CALLEE)
    return a, b


def sip(call_id: str, cseq: int, media: str, port: int) -> None:
    a, b = sockets()
    uri = "sip:callee@127.0.0.1"
    send(a, CALLEE, message(f"INVITE {uri} SIP/2.0", call_id, cseq, "INVITE", sdp(port, media, cseq), to_tag=cseq > 1))
    send(b, CALLER, message("SIP/2.0 200 OK", call_id, cseq, "INVITE", sdp(port + 10000, media, cseq)))
    send(a, CALLEE, message(f"ACK {uri} SIP/2.0", call_id, cseq, "ACK"))


def bye(call_id: str, cseq: int) -> None:
    a, b = sockets()
    send(a, CALLEE, message("BYE sip:callee@127.0.0.1 SIP/2.0", call_id, cseq, "BYE"))
    send(b, CALLER, message("SIP/2.0 200 OK", call_id, cseq, "BYE"))


def rtp(seq: int, ts: int, ssrc: int, pt: int, marker: bool, payload: bytes) -> bytes:
    # RFC 3550 §5.1: V=2, no padding, no extension, no CSRC
    return struct.pack("!BBHII", 0x80, (0x80 if marker else 0) | pt, seq & 0xFFFF, ts & 0xFFFFFFFF, ssrc) + payload


def event(digit: int, end: bool, duration: int) -> bytes:
    # RFC 4733 §2.3: event (8 bits), E (1), R (1), volume (6 bits, -dBm0), duration (16 bits, ticks)
    return struct.pack("!BBH", digit, (0x80 if end else 0) | 10, duration)


def dtmf(port: int, seed: int) -> None:
    """150 PCMU packets of 20 ms (RFC 3551: 160 ticks each) with two DTMF events.

    Digit 5 at packet 40 while audio goes on (event packets interleaved with audio), digit 9
    at packet 100 with audio suppressed during the event. Each event (RFC 4733 §2.5.1): a
    packet every 20 ms carrying the event's start timestamp, the first with the marker bit,
    duration growing by 160 ticks, then the final packet sent three times with the E bit
    (§2.5.1.4). Pacing: every 20 ms plus a seeded random 0-8 ms late, so there is jitter.
    """
    rng = random.Random(seed)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", port + 2))
    ssrc, seq, ts0 = 0x0D7F0001, 1000, 48000
    silence = b"\xff" * 160  # PCMU digital silence
    t0 = time.monotonic() + 0.05
    for i in range(150):
        target = t0 + 0.02 * i + rng.uniform(0.0, 0.008)
        time.sleep(max(0.0, target - time.monotonic()))
        ts = ts0 + 160 * i
        out: list[bytes] = []
        in_a, in_b = 40 <= i < 46, 100 <= i < 106
        if not in_b:
            out.append(rtp(seq, ts, ssrc, 0, False, silence))
            seq += 1
        if in_a or in_b:
            start_i = 40 if in_a else 100
            k = i - start_i
            start_ts = ts0 + 160 * start_i
            digit = 5 if in_a else 9
            final = k == 5
            for _ in range(3 if final else 1):
                out.append(rtp(seq, start_ts, ssrc, 101, k == 0, event(digit, final, 160 * (k + 1))))
                seq += 1
        for p in out:
            s.sendto(p, ("127.0.0.1", port))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "sip":
        sip(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
    elif cmd == "bye":
        bye(sys.argv[2], int(sys.argv[3]))
    elif cmd == "dtmf":
        dtmf(int(sys.argv[2]), int(sys.argv[3]))
    else:
        raise SystemExit(__doc__)
