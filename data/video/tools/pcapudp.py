"""IPv4/UDP datagrams of a classic pcap file (Ethernet link type), standard library only.

Shared by replay_rtp.py and summarize.py. Formats: libpcap "classic" files, either byte
order, microsecond or nanosecond timestamps (tcpdump's own output here).
"""

import struct
import sys
from typing import Iterator, NamedTuple

LINKTYPE_ETHERNET = 1
_MAGIC = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6),
    b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9),
    b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}


class Datagram(NamedTuple):
    time: float        # capture time stamp, seconds since the epoch
    ip_id: int         # IPv4 identification (matches one datagram in two captures)
    src: str           # "a.b.c.d:port"
    dst: str
    dport: int
    length: int        # UDP payload length as sent (from the UDP header)
    payload: bytes     # the captured part of the payload (shorter if truncated)
    truncated: bool


def udp_datagrams(path: str) -> Iterator[Datagram]:
    with open(path, "rb") as f:
        head = f.read(24)
        if head[:4] not in _MAGIC:
            sys.exit(f"{path}: not a classic pcap file")
        endian, unit = _MAGIC[head[:4]]
        linktype = struct.unpack(endian + "I", head[20:24])[0]
        if linktype != LINKTYPE_ETHERNET:
            sys.exit(f"{path}: link type {linktype}, expected Ethernet (1)")
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            sec, frac, incl, orig = struct.unpack(endian + "IIII", rec)
            frame = f.read(incl)
            if frame[12:14] != b"\x08\x00" or frame[23] != 17:   # IPv4, UDP
                continue
            ihl = (frame[14] & 0x0F) * 4
            ip_id = struct.unpack("!H", frame[18:20])[0]
            src_ip = ".".join(str(b) for b in frame[26:30])
            dst_ip = ".".join(str(b) for b in frame[30:34])
            udp = frame[14 + ihl:]
            sport, dport, ulen = struct.unpack("!HHH", udp[:6])
            payload = udp[8:ulen]
            yield Datagram(sec + frac * unit, ip_id, f"{src_ip}:{sport}", f"{dst_ip}:{dport}", dport,
                           ulen - 8, payload, len(payload) < ulen - 8)
