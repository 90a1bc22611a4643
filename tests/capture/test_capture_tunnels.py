"""RTP and HTTP inside tunnels are found like any other, checked against tshark.

Samples: ``data/capture/tunnels/``. ``vxlan.pcap`` is a REAL capture of the kernel's VXLAN
(make_vxlan.sh: ffmpeg RTP, curl/http.server HTTP, IPv4 and IPv6, real outer IPv4
fragments, real inner fragments of an L16 stream); ``inner.pcap`` the same traffic on the
VXLAN device. Every other file is CRAFTED by make_crafted.py: those real inner frames put
into outer headers written from the standards, because this kernel has no GRE, ERSPAN,
IPIP, SIT, L2TP, GTP, PPPoE or MPLS forwarding (see make_crafted.py), and no MikroTik router
to stream them in TZSP.

References, run live on each file (skipped when tshark is absent):

- RTP and TCP, one run: ``tshark -r FILE -d mpls.label==299,pwethcw -d
  mpls.label==300,pwethnocw -q --enable-heuristic rtp_udp -z rtp,streams -z conv,tcp``;
  its RTP table against ``qoe streams FILE --format json`` (source, destination, SSRC,
  packets, lost), its TCP conversations against the TCP segments of
  :func:`qoe.capture.read_packets` (each conversation's endpoints and frame count).
- HTTP: ``tshark -r FILE -d ... -Y http.request -T fields -E occurrence=l -e tcp.srcport
  -e http.request.uri`` against the transactions of ``qoe web pages FILE --format json``.

The two ``-d`` name the Ethernet pseudowires' labels: Wireshark dissects a pseudowire only
when told to, qoe guesses it (qoe.capture's notes on MPLS).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import Counter
from functools import lru_cache

import pytest
from click.testing import CliRunner

from qoe.capture import read_packets, read_udp_batches
from qoe_cli.main import cli

TSHARK = shutil.which("tshark")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIR = os.path.join(ROOT, "data", "capture", "tunnels")
DECODE_AS = ["-d", "mpls.label==299,pwethcw", "-d", "mpls.label==300,pwethnocw"]

# file -> what Packet.encapsulation says for the packets in it: the layer and its tunnel
# identifiers (as make_crafted.py and make_vxlan.sh wrote them; test_tunnel_identifiers_match_tshark
# reads them back with tshark)
CASES = {
    "vxlan.pcap": {"vxlan[vni=42]"},
    "mpls.pcap": {"mpls[labels=16001,24005]"},
    "mpls_pw_cw.pcap": {"mpls-pw[labels=16001,299]"},
    "mpls_pw.pcap": {"mpls-pw[labels=16001,300]"},
    "gre.pcap": {"gre[key=42]"},
    "gretap.pcap": {"gre"},
    "gre6.pcap": {"gre"},
    "erspan2.pcap": {"erspan-ii[session=7]"},
    "erspan3.pcap": {"erspan-iii[session=7]"},
    "gtpu.pcap": {"gtp-u[teid=0x00001000]", "gtp-u[teid=0x00001001]"},
    "ipip.pcap": {"ip-in-ip"},
    "sit.pcap": {"ipv6-in-ip"},
    "pppoe.pcap": {"pppoe"},
    "l2tp.pcap": {"l2tp[tunnel=7,session=1]", "l2tp[tunnel=9,session=2]"},
    "tzsp.pcap": {"tzsp"},
}
FILES = sorted(CASES)
tshark_only = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")


def path_of(name: str) -> str:
    return os.path.join(DIR, name)


def inner_view(path: str):
    """(frame, src, sport, dst, dport, proto, payload) of every packet: the flows' identity."""
    return [(p.index, p.src, p.sport, p.dst, p.dport, p.proto, p.payload) for p in read_packets(path)]


def qoe_json(*args: str):
    res = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def tshark(path: str, *args: str) -> str:
    cmd = [TSHARK, "-r", path, *DECODE_AS, *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout


@pytest.mark.parametrize("name", FILES)
def test_every_packet_names_its_tunnel(name):
    pkts = list(read_packets(path_of(name)))
    assert pkts
    assert {p.encapsulation for p in pkts} == CASES[name]
    # the inner addresses, never the outer ones (10.99.0.x, 2001:db8::x)
    assert {p.src for p in pkts} <= {"192.168.99.1", "192.168.99.2", "fd99::1", "fd99::2"}


# tshark fields of each tunnel's identifiers, and how Packet.encapsulation writes them
_TSHARK_IDS = {
    "vxlan.pcap": (["vxlan.vni"], lambda v: f"vxlan[vni={v[0]}]"),
    "gtpu.pcap": (["gtp.teid"], lambda v: f"gtp-u[teid={v[0]}]"),
    "gre.pcap": (["gre.key"], lambda v: f"gre[key={int(v[0], 16)}]"),
    "erspan2.pcap": (["erspan.spanid"], lambda v: f"erspan-ii[session={v[0]}]"),
    "erspan3.pcap": (["erspan.spanid"], lambda v: f"erspan-iii[session={v[0]}]"),
    "l2tp.pcap": (["l2tp.tunnel", "l2tp.session"], lambda v: f"l2tp[tunnel={v[0]},session={v[1]}]"),
    "mpls.pcap": (["mpls.label"], lambda v: f"mpls[labels={v[0]}]"),
    "mpls_pw.pcap": (["mpls.label"], lambda v: f"mpls-pw[labels={v[0]}]"),
    "mpls_pw_cw.pcap": (["mpls.label"], lambda v: f"mpls-pw[labels={v[0]}]"),
}


@tshark_only
@pytest.mark.parametrize("name", sorted(_TSHARK_IDS))
def test_tunnel_identifiers_match_tshark(name):
    """Each packet's tunnel identifiers are tshark's: ``tshark -r FILE -d ... -T fields -E
    occurrence=a -E aggregator=, -e FIELD...`` (VXLAN VNI, GTP-U TEID, GRE key, ERSPAN
    span ID, L2TP tunnel and session IDs, the MPLS label stack top first), per frame."""
    fields, fmt = _TSHARK_IDS[name]
    args = ["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,", "-e", "frame.number"]
    for f in fields:
        args += ["-e", f]
    want = {}
    for line in tshark(path_of(name), *args).splitlines():
        frame, *vals = line.split("\t")
        if all(vals):  # outer fragments after the first carry no tunnel header
            want[int(frame)] = fmt(vals)
    mine = {p.index: p.encapsulation for p in read_packets(path_of(name))}
    assert mine and set(mine.values()) == CASES[name]
    assert {f: want[f] for f in mine if f in want} == mine  # every packet's, where tshark saw the header


@pytest.mark.parametrize("name", FILES)
def test_inner_flows_equal_the_unencapsulated_capture(name):
    """The packets inside each tunnel are those of inner.pcap (the same frames, captured on
    the VXLAN device), whatever the outer layers; only the frame numbers may differ where
    outer fragments add frames."""
    inner = Counter(t[1:] for t in inner_view(path_of("inner.pcap")))
    mine = Counter(t[1:] for t in inner_view(path_of(name)))
    if name == "vxlan.pcap":
        # the live capture is the outer side of the same session: the same UDP datagrams
        # and TCP connections (the IPv6 one was segmented anew after the tunnel's outer
        # fragmentation, so its segments differ from those seen on the VXLAN device)
        assert Counter({t: k for t, k in mine.items() if t[4] == 17}) == Counter({t: k for t, k in inner.items() if t[4] == 17})
        assert {t[:4] for t in mine if t[4] == 6} == {t[:4] for t in inner if t[4] == 6}
        return
    if name == "ipip.pcap":
        want = Counter({t: k for t, k in inner.items() if ":" not in t[0] and t[3] != 5006})
    elif name == "sit.pcap":
        want = Counter({t: k for t, k in inner.items() if ":" in t[0]})
    elif name == "gre.pcap":
        want = inner  # also the inner-fragmented L16 stream
    else:
        want = Counter({t: k for t, k in inner.items() if t[3] != 5006})
    assert mine == want


@pytest.mark.parametrize("name", FILES)
def test_batches_equal_packets(name):
    """The column reader sends tunnelled rows to the per-packet decoder: same datagrams."""
    path = path_of(name)
    want = [(p.index, p.ts_ns, p.src, p.dst, p.sport, p.dport, p.payload) for p in read_packets(path, protocols=("udp",))]
    for bs in (7, 65536):
        got = [
            (q.index, q.ts_ns, q.src, q.dst, q.sport, q.dport, q.payload)
            for b in read_udp_batches(path, batch_size=bs)
            for q in (b.packet(i) for i in range(len(b)))
        ]
        assert got == want


@lru_cache(maxsize=None)
def tshark_tables(path: str) -> str:
    """The RTP streams and TCP conversations tables of one tshark run."""
    return tshark(path, "-q", "--enable-heuristic", "rtp_udp", "-z", "rtp,streams", "-z", "conv,tcp")


def tshark_rtp_streams(path: str) -> Counter:
    out = tshark_tables(path)
    rows = Counter()
    for line in out.splitlines():
        f = line.split()
        if len(f) > 10 and re.fullmatch(r"0x[0-9A-F]+", f[6]):
            # start end src sport dst dport ssrc payload pkts lost ...
            rows[(f[2], int(f[3]), f[4], int(f[5]), int(f[6], 16), int(f[8]), int(f[9]))] += 1
    return rows


@tshark_only
@pytest.mark.tshark
@pytest.mark.parametrize("name", FILES)
def test_rtp_streams_match_tshark(name):
    path = path_of(name)
    ref = tshark_rtp_streams(path)
    assert ref, "tshark found no RTP: the sample is wrong"
    got = Counter()
    for s in qoe_json("streams", path, "--format", "json")["streams"]:
        got[(s["src"], s["sport"], s["dst"], s["dport"], int(s["ssrc"], 16), s["packets"], s["lost"])] += 1
    assert got == ref


def tshark_tcp_conversations(path: str) -> Counter:
    out = tshark_tables(path)
    rows = Counter()
    for line in out.splitlines():
        m = re.match(r"\s*(\S+):(\d+)\s+<->\s+(\S+):(\d+)\s+(\d+)\s+\S+\s+bytes\s+(\d+)\s", line)
        if m:
            a, pa, b, pb, n1, n2 = m.groups()
            rows[frozenset({(a, int(pa)), (b, int(pb))})] += int(n1) + int(n2)
    return rows


@tshark_only
@pytest.mark.tshark
@pytest.mark.parametrize("name", FILES)
def test_tcp_conversations_match_tshark(name):
    path = path_of(name)
    ref = tshark_tcp_conversations(path)
    assert ref
    got = Counter(frozenset({(p.src, p.sport), (p.dst, p.dport)}) for p in read_packets(path, protocols=("tcp",)))
    assert got == ref


@tshark_only
@pytest.mark.tshark
@pytest.mark.parametrize("name", FILES)
def test_http_requests_match_tshark(name):
    path = path_of(name)
    out = tshark(path, "-Y", "http.request", "-T", "fields", "-E", "occurrence=l", "-e", "tcp.srcport", "-e", "http.request.uri")
    ref = sorted((int(port), uri) for port, uri in (line.split("\t") for line in out.splitlines()))
    assert ref
    pages = qoe_json("web", "pages", path, "--format", "json")
    got = sorted((t["client"][1], t["target"]) for page in pages for t in page["transactions"])
    assert got == ref
    assert all(page["complete"] for page in pages)
