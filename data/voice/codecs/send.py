"""Helpers of make_codec_captures.sh (stdlib only; G.729 through libbcg729, AMR-WB through
libvo-amrwbenc, both by ctypes).

    python3 send.py sip CALL_ID PORT SDP_FILE         an INVITE whose SDP is SDP_FILE's m= section
    python3 send.py relay LISTEN PORT DROP SECONDS    forward UDP LISTEN -> PORT, dropping packets DROP
    python3 send.py frames KIND FILE PT PORT [FMTP]   RTP from an encoded file (gsm, g723, amr, amrwb, ilbc, g729)
    python3 send.py amrwb WAV OUT                     AMR-WB storage file (12.65 kbit/s) from 16 kHz speech

All traffic is on the loopback. The INVITE goes from 127.0.0.1:5062 to 127.0.0.1:5060 (nothing
listens; the capture is what matters) and announces 127.0.0.1:PORT. ``relay`` stands for the lossy
network: it forwards every datagram from LISTEN to PORT except those whose 0-based index is in DROP
(comma-separated), so the capture of PORT holds exactly the packets that "arrived".

``amrwb`` encodes WAV (16 kHz 16-bit mono) with the VisualOn AMR-WB encoder (Debian
libvo-amrwbenc0; its E_IF_encode writes one storage-format frame, header octet included) at
mode 2 (12.65 kbit/s, TS 26.201 Table 2), DTX off, one 20 ms frame (320 samples) at a time.

``frames`` is the RTP sender for codecs FFmpeg 5.1's RTP muxer does not packetise (GSM, G.723.1,
AMR, AMR-WB, iLBC) or has no encoder for (G.729, AMR-WB, iLBC): one frame per packet, 20 ms
(G.723.1 and iLBC's 30 ms mode: 30 ms; G.729: two 10 ms frames) every packet time, SSRC
0x7a1c0c0d, payload type PT.
  gsm   FILE = raw GSM 06.10 frames (ffmpeg -f gsm), 33 octets each, 1 frame per packet (RFC 3551 §4.5.8)
  g723  FILE = raw G.723.1 frames (ffmpeg -f g723_1), 1 frame per packet (RFC 3551 §4.5.3)
  amr   FILE = AMR storage format (RFC 4867 §5, "#!AMR\\n"), 1 frame per packet, FMTP "oa" for
        octet-aligned (§4.4) or "be" for bandwidth-efficient (§4.3); CMR 15 (no request)
  amrwb FILE = AMR-WB storage format (RFC 4867 §5, "#!AMR-WB\\n"), packetised as amr; RTP clock
        16000 Hz (§4.1), 320 ticks a packet
  ilbc  FILE = FFmpeg's iLBC storage file ("#!iLBC20\\n" or "#!iLBC30\\n", then 38- or 50-octet
        frames; written by IlbcEncode.java), 1 frame per packet (RFC 3952 §4)
  g729  FILE = 8 kHz 16-bit mono WAV, encoded here by libbcg729 (G.729 Annex A, VAD off); 2
        frames per packet; the frames are also written to FILE.g729 (10 octets each, the raw
        format FFmpeg's "g729" demuxer reads)

References: RFC 3261 §7-8, RFC 4566 §5, RFC 3550 §5.1, RFC 3551 §4.5, RFC 3952 §4, RFC 4867 §4.3-§5,
3GPP TS 26.101 Table 1a, TS 26.201 Table 2.
"""

from __future__ import annotations

import ctypes
import socket
import struct
import sys
import time
import wave

CALLER = ("127.0.0.1", 5062)
CALLEE = ("127.0.0.1", 5060)
SSRC = 0x7A1C0C0D


def sip(call_id: str, port: int, sdp_file: str) -> None:
    media = [ln for ln in open(sdp_file).read().splitlines() if ln[:2] in ("m=", "a=") and not ln.startswith("a=tool")]
    media = [f"m=audio {port} " + " ".join(m.split()[2:]) if m.startswith("m=") else m for m in media]
    body = ("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n" + "\r\n".join(media) + "\r\n")
    head = [
        "INVITE sip:callee@127.0.0.1 SIP/2.0",
        f"Via: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bK{call_id}",
        "From: <sip:caller@127.0.0.1>;tag=c1",
        "To: <sip:callee@127.0.0.1>",
        f"Call-ID: {call_id}",
        "CSeq: 1 INVITE",
        "Max-Forwards: 70",
        "Content-Type: application/sdp",
        f"Content-Length: {len(body.encode())}",
    ]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(CALLER)
    s.sendto(("\r\n".join(head) + "\r\n\r\n" + body).encode(), CALLEE)
    s.close()
    time.sleep(0.1)


def relay(listen: int, port: int, drop: str, seconds: float) -> None:
    dropped = {int(x) for x in drop.split(",") if x}
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", listen))
    rx.settimeout(seconds)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    i = 0
    try:
        while True:
            data = rx.recv(65536)
            if i not in dropped:
                tx.sendto(data, ("127.0.0.1", port))
            i += 1
    except socket.timeout:
        pass


def _gsm(path: str) -> list[tuple[bytes, int]]:
    data = open(path, "rb").read()
    return [(data[i:i + 33], 160) for i in range(0, len(data) - 32, 33)]


def _ilbc(path: str) -> list[tuple[bytes, int]]:
    data = open(path, "rb").read()
    mode = {b"#!iLBC20\n": 20, b"#!iLBC30\n": 30}[data[:9]]
    size = 38 if mode == 20 else 50  # RFC 3951 §3.5 / RFC 3952 §4
    return [(data[i:i + size], 8 * mode) for i in range(9, len(data) - size + 1, size)]


def _g723(path: str) -> list[tuple[bytes, int]]:
    data, out, i = open(path, "rb").read(), [], 0
    while i < len(data):
        size = (24, 20, 4, 1)[data[i] & 3]
        out.append((data[i:i + size], 240))
        i += size
    return out


# 3GPP TS 26.101 Table 1a: speech bits per AMR frame type (FT 8 = SID, 15 = NO_DATA)
_AMR_BITS = {0: 95, 1: 103, 2: 118, 3: 134, 4: 148, 5: 159, 6: 204, 7: 244, 8: 39, 15: 0}
# 3GPP TS 26.201 Table 2: bits per AMR-WB frame type (FT 0..8: 6.60 .. 23.85 kbit/s, 9 = SID, 15 = NO_DATA)
_AMR_WB_BITS = {0: 132, 1: 177, 2: 253, 3: 285, 4: 317, 5: 365, 6: 397, 7: 461, 8: 477, 9: 40, 15: 0}
_AMR_WB_MODE = 2  # 12.65 kbit/s


def amrwb(wav: str, out_path: str) -> None:
    lib = ctypes.CDLL("libvo-amrwbenc.so.0")
    lib.E_IF_init.restype = ctypes.c_void_p
    lib.E_IF_encode.restype = ctypes.c_int
    lib.E_IF_encode.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int16),
                                ctypes.POINTER(ctypes.c_uint8), ctypes.c_int]
    lib.E_IF_exit.argtypes = [ctypes.c_void_p]
    with wave.open(wav) as w:
        assert w.getframerate() == 16000 and w.getsampwidth() == 2 and w.getnchannels() == 1
        pcm = w.readframes(w.getnframes())
    samples = struct.unpack(f"<{len(pcm) // 2}h", pcm)
    enc = lib.E_IF_init()
    with open(out_path, "wb") as f:
        f.write(b"#!AMR-WB\n")  # RFC 4867 §5.1: single-channel AMR-WB magic
        for k in range(0, len(samples) - 319, 320):
            frame = (ctypes.c_int16 * 320)(*samples[k:k + 320])
            buf = (ctypes.c_uint8 * 64)()
            n = lib.E_IF_encode(enc, _AMR_WB_MODE, frame, buf, 0)
            assert n == 1 + (_AMR_WB_BITS[_AMR_WB_MODE] + 7) // 8 and buf[0] >> 3 == _AMR_WB_MODE, (n, buf[0])
            f.write(bytes(buf[:n]))
    lib.E_IF_exit(enc)


def _amr(path: str, mode: str, wideband: bool = False) -> list[tuple[bytes, int]]:
    data = open(path, "rb").read()
    magic = b"#!AMR-WB\n" if wideband else b"#!AMR\n"
    assert data.startswith(magic)
    table = _AMR_WB_BITS if wideband else _AMR_BITS
    i, out = len(magic), []
    while i < len(data):
        ft, q = (data[i] >> 3) & 15, (data[i] >> 2) & 1
        n = table[ft]
        speech = data[i + 1:i + 1 + (n + 7) // 8]
        i += 1 + (n + 7) // 8
        if mode == "oa":  # RFC 4867 §4.4: CMR octet, ToC octet (F=0), speech padded to an octet
            out.append((bytes([0xF0, (ft << 3) | (q << 2)]) + speech, 320 if wideband else 160))
        else:  # §4.3: CMR (4 bits) ToC (6 bits: F=0, FT, Q), speech bits, zero padding
            bits = int.from_bytes(speech, "big") >> (-n % 8) if n else 0
            v = (((15 << 6) | (ft << 1) | q) << n) | bits
            total = 10 + n
            pad = -total % 8
            out.append(((v << pad).to_bytes((total + pad) // 8, "big"), 320 if wideband else 160))
    return out


def _g729(path: str) -> list[tuple[bytes, int]]:
    lib = ctypes.CDLL("libbcg729.so.0")
    lib.initBcg729EncoderChannel.restype = ctypes.c_void_p
    lib.initBcg729EncoderChannel.argtypes = [ctypes.c_uint8]
    lib.bcg729Encoder.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int16), ctypes.POINTER(ctypes.c_uint8),
                                  ctypes.POINTER(ctypes.c_uint8)]
    enc = lib.initBcg729EncoderChannel(0)  # VAD off: every frame is a 10-octet speech frame
    with wave.open(path) as w:
        assert w.getframerate() == 8000 and w.getsampwidth() == 2 and w.getnchannels() == 1
        pcm = w.readframes(w.getnframes())
    samples = struct.unpack(f"<{len(pcm) // 2}h", pcm)
    out, pending = [], b""
    raw = open(path + ".g729", "wb")
    for k in range(0, len(samples) - 79, 80):
        frame = (ctypes.c_int16 * 80)(*samples[k:k + 80])
        bits = (ctypes.c_uint8 * 10)()
        length = ctypes.c_uint8(0)
        lib.bcg729Encoder(enc, frame, bits, ctypes.byref(length))
        pending += bytes(bits[:length.value])
        raw.write(bytes(bits[:length.value]))
        if k // 80 % 2 == 1:  # a packet every 20 ms (2 frames); RFC 3551 §4.5.6: SID only last
            out.append((pending, 160))
            pending = b""
    raw.close()
    return out


def frames(kind: str, path: str, pt: int, port: int, fmtp: str = "") -> None:
    if kind in ("amr", "amrwb"):
        packets = _amr(path, fmtp, wideband=kind == "amrwb")
    else:
        packets = {"gsm": _gsm, "g723": _g723, "g729": _g729, "ilbc": _ilbc}[kind](path)
    clock = 16000 if kind == "amrwb" else 8000  # RFC 4867 §4.1: AMR-WB's RTP clock is 16 kHz
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    seq, ts, t0 = 1000, 160000, time.monotonic()
    sent, marker = 0, 1
    for payload, dur in packets:
        if payload:  # RFC 3550 §5.1: the marker starts a talkspurt (first packet, after DTX)
            s.sendto(struct.pack("!BBHII", 0x80, (marker << 7) | pt, seq & 0xFFFF, ts, SSRC) + payload,
                     ("127.0.0.1", port))
            seq += 1
            marker = 0
        else:
            marker = 1
        ts += dur
        sent += 1
        delay = t0 + sent * dur / clock - time.monotonic()
        if delay > 0:
            time.sleep(delay)


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "sip":
        sip(args[0], int(args[1]), args[2])
    elif cmd == "relay":
        relay(int(args[0]), int(args[1]), args[2], float(args[3]))
    elif cmd == "frames":
        frames(args[0], args[1], int(args[2]), int(args[3]), *(args[4:5]))
    elif cmd == "amrwb":
        amrwb(args[0], args[1])
    else:
        raise SystemExit(__doc__)
