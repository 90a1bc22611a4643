"""Frame numbers, times, addresses, ports and lengths checked against tshark, run live.

Reference: ``tshark -r FILE -T fields -E separator=/t -E occurrence=l -d
mpls.label==299,pwethcw -d mpls.label==300,pwethnocw -e frame.number -e frame.time_epoch
-e ip.src -e ipv6.src -e udp.srcport -e tcp.srcport -e frame.len -e udp.length -e tcp.len
-e frame.cap_len -e frame.protocols -Y "(udp or tcp) and not icmp and not icmpv6"``
(Wireshark's own reader and dissectors, an independent implementation of the same
specifications). ``occurrence=l`` gives the innermost layer's fields in a tunnelled packet,
``frame.protocols`` says which IP version is innermost; the two ``-d`` name the Ethernet
pseudowires of data/capture/tunnels (with and without control word), which Wireshark does
not guess; ``-o esp.enable_null_encryption_decode_heuristic:TRUE`` reads into the ESP NULL
packets of data/capture/esp (esp_gcm.pcap, encrypted, holds no UDP/TCP to compare: it is
tests/capture/test_capture_esp.py's). Skipped when tshark is absent.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess

import pytest

from qoe.capture import read_packets, read_udp_batches

pytestmark = pytest.mark.tshark
TSHARK = shutil.which("tshark")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL = sorted(
    p for p in glob.glob(os.path.join(ROOT, "data", "**", "*.pcap*"), recursive=True)
    if p.endswith((".pcap", ".pcapng", ".pcap.gz")) and not p.endswith("esp_gcm.pcap")
)
FIELDS = [
    "frame.number", "frame.time_epoch", "ip.src", "ipv6.src", "udp.srcport", "tcp.srcport", "frame.len", "udp.length", "tcp.len",
    "frame.cap_len", "frame.protocols",
]
# the labels of the Ethernet pseudowires in data/capture/tunnels/make_crafted.py
DECODE_AS = ["-d", "mpls.label==299,pwethcw", "-d", "mpls.label==300,pwethnocw",
             "-o", "esp.enable_null_encryption_decode_heuristic:TRUE"]  # data/capture/esp
UDP_TUNNELS = {"vxlan", "gtp", "l2tp"}


def _ns(text: str) -> int:
    sec, _, frac = text.partition(".")
    return int(sec) * 10**9 + int((frac + "000000000")[:9])


def tshark_rows(path: str) -> list[tuple[int, int, str, int, int, int]]:
    cmd = [TSHARK, "-r", str(path), "-T", "fields", "-E", "separator=/t", "-E", "occurrence=l", *DECODE_AS]
    cmd += ["-Y", "(udp or tcp) and not icmp and not icmpv6"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout
    rows = []
    for line in out.splitlines():
        num, t, s4, s6, usp, tsp, flen, ulen, tlen, caplen, protos = line.split("\t")
        layers = protos.split(":")
        last_ip = max(i for i, p in enumerate(layers) if p in ("ip", "ipv6"))
        # extension headers, and ESP in transport mode (its UDP/TCP carries the outer addresses)
        after = [p for p in layers[last_ip + 1 :] if not p.startswith("ipv6.") and p != "esp"][:2]
        if after[:1] not in (["udp"], ["tcp"]) or (len(after) > 1 and after[1] in UDP_TUNNELS):
            continue  # the innermost IP carries no UDP/TCP (e.g. ARP inside VXLAN)
        src = s4 if layers[last_ip] == "ip" else s6
        plen = int(ulen) - 8 if after[0] == "udp" else int(tlen)
        # a snaplen-truncated record (data/video's sender captures, -s 96) lacks its last
        # frame.len - frame.cap_len bytes: the payload as captured is that much shorter
        plen = max(0, plen - (int(flen) - int(caplen)))
        rows.append((int(num), _ns(t), src, int(usp if after[0] == "udp" else tsp), int(flen), plen))
    return rows


def ours(path: str) -> list[tuple[int, int, str, int, int, int]]:
    return [(p.index, p.ts_ns, p.src, p.sport, p.wire_len, len(p.payload)) for p in read_packets(path)]


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
@pytest.mark.skipif(not REAL, reason="no captures in data/ yet")
@pytest.mark.parametrize("path", REAL, ids=[os.path.relpath(p, ROOT) for p in REAL])
def test_real_captures_match_tshark(path):
    mine = ours(path)
    assert mine == tshark_rows(path)
    assert len(mine) > 0
    udp = [r for r, p in zip(mine, read_packets(path)) if p.proto == 17]
    cols = [(int(i), int(t)) for b in read_udp_batches(path) for i, t in zip(b.index, b.ts_ns)]
    assert cols == [(r[0], r[1]) for r in udp]


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
def test_hand_built_pcapng_matches_tshark(cap, write):
    """Our hand-built multi-interface file read by tshark: guards the builders and the reader."""
    bo = "<"
    u4 = cap.ipv4("192.0.2.1", "198.51.100.2", 17, cap.udp(7, 8, b"abcdef"))
    u6 = cap.ipv6("2001:db8::1", "2001:db8::2", 0, cap.ext(17) + cap.udp(9, 10, b"v6"))
    t4 = cap.ipv4("192.0.2.3", "198.51.100.2", 6, cap.tcp(443, 5555, b"tls!", options=b"\x02\x04\x05\xb4"))
    body = cap.udp(5000, 6000, bytes(2000))
    frags = [
        cap.ipv4("192.0.2.9", "198.51.100.2", 17, body[:1480], ident=7, mf=True),
        cap.ipv4("192.0.2.9", "198.51.100.2", 17, body[1480:], ident=7, offset=1480),
    ]
    blocks = [
        cap.shb(bo),
        cap.idb(bo, 1),
        cap.idb(bo, 113, tsresol=9),
        cap.idb(bo, 276, tsresol=3, tsoffset=-3600),
        cap.idb(bo, 101),
        cap.epb(bo, 0, cap.T0 * 10**6 + 250_001, cap.eth(u4, vlans=(0x8100,))),
        cap.epb(bo, 1, cap.T0 * 10**9 + 123_456_789, cap.sll(u6, 0x86DD)),
        cap.epb(bo, 2, (cap.T0 + 3600) * 1000 + 7, cap.sll2(t4)),
        cap.epb(bo, 0, cap.T0 * 10**6 + 9, cap.eth(frags[1], vlans=(0x88A8, 0x8100))),
        cap.epb(bo, 3, cap.T0 * 10**6 + 10, u4),
        cap.epb(bo, 0, cap.T0 * 10**6 + 11, cap.eth(frags[0])),
    ]
    path = write(b"".join(blocks), "multi.pcapng")
    assert ours(str(path)) == tshark_rows(str(path))
    assert len(ours(str(path))) == 5
