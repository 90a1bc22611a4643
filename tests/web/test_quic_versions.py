"""QUIC versions: version 2 (RFC 9369) read like version 1, compatible version negotiation
(RFC 9368) followed, and any other version named in a warning rather than passed over.

Captures: data/web/browser/captures/h3v2-idle.pcap (Chromium 156 with ``--quic-version=RFCv2``
loading the 40-object test page from aioquic, make_browser.sh) and
data/web/tls/quic-h3-v1v2.pcapng (aioquic's client beginning in version 1 and offering 2
first, make_quic.sh v2). The versions the tests expect are read from the datagrams' bytes here
(RFC 8999 §5.1: a long header's bytes 1-4), not from qoe; the objects from the browser's and
the client's own logs and from tshark 4.0's decryption of the same files (its TSV beside them).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import subprocess
import sys
import warnings
from pathlib import Path

import dpkt
import pytest

from qoe.capture import Packet, read_packets
from qoe.errors import QoEWarning
from qoe.web import WebOptions, iter_page_loads
from qoe.web.quic import quic_connections

DATA = Path(__file__).resolve().parents[2] / "data" / "web"
V2 = DATA / "browser" / "captures" / "h3v2-idle"
CVN = DATA / "tls" / "quic-h3-v1v2"
V1 = DATA / "browser" / "captures" / "h3-idle"
QUIC_V2 = 0x6B3343CF  # RFC 9369 §3.1


def datagrams(path: Path) -> list[tuple[int, int, bytes]]:
    """(sport, dport, UDP payload) of every datagram, with dpkt."""
    with path.open("rb") as f:
        reader = dpkt.pcapng.Reader(f) if path.suffix == ".pcapng" else dpkt.pcap.Reader(f)
        link = reader.datalink()
        out = []
        for _, buf in reader:
            ip = (dpkt.ethernet.Ethernet(buf) if link == dpkt.pcap.DLT_EN10MB else dpkt.loopback.Loopback(buf)).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.udp.UDP):
                out.append((ip.data.sport, ip.data.dport, bytes(ip.data.data)))
    return out


def long_header_versions(path: Path, to_server: bool) -> list[int]:
    return [int.from_bytes(p[1:5], "big") for sp, dp, p in datagrams(path)
            if p and p[0] & 0x80 and (dp in (443, 4433)) == to_server]


def test_a_chromium_load_over_quic_version_2_is_read_whole():
    """Every long header of the browser's load is version 2 (the wire); qoe reads each
    connection in it, its HTTP/3 requests those tshark decrypts and the browser made."""
    assert set(long_header_versions(V2.with_suffix(".pcap"), True)) == {QUIC_V2}
    conns = quic_connections(V2.with_suffix(".pcap"), keylog=V2.with_suffix(".keylog"))
    assert len(conns) == 3 and {c.version for c in conns} == {QUIC_V2}
    assert all(c.client_failed_packets == c.server_failed_packets == 0 and c.alpn == "h3" for c in conns)
    with V2.with_suffix(".tshark-http.tsv").open() as f:
        rows = [r for r in csv.DictReader((line for line in f if not line.startswith("#")), delimiter="\t")]
    tshark_requests = {(r["stream"], r["stream_id"]) for r in rows if r["message"].startswith("request")}
    assert sum(len(c.transactions) for c in conns) == len(tshark_requests) == 41
    timing = json.loads(V2.with_suffix(".timing.json").read_text())
    browser = {e["name"] for e in timing["navigation"] + timing["resource"]}
    assert browser <= {t.url for c in conns for t in c.transactions}
    # without keys: the handshake of each, from the Initial packets of version 2 alone
    keyless = quic_connections(V2.with_suffix(".pcap"))
    assert [c.version for c in keyless] == [QUIC_V2] * 3
    assert [c.server_name for c in keyless] == [c.server_name for c in conns]
    for a, b in zip(keyless, conns):
        assert a.handshake_end_ns is not None
        assert (a.server_initial_ns, a.client_first_1rtt_ns) == (b.server_initial_ns, b.client_first_1rtt_ns)


def test_compatible_version_negotiation_from_1_to_2_is_followed():
    """The client's first flight is version 1, the server's answer version 2: qoe switches
    with it (version 2's Initial keys from the same Destination Connection ID, then its
    labels for the Handshake and 1-RTT keys) and reads the client's three objects."""
    cap = CVN.with_suffix(".pcapng")
    assert long_header_versions(cap, True)[0] == 1
    assert long_header_versions(cap, False)[0] == QUIC_V2
    (c,) = quic_connections(cap, keylog=CVN.with_suffix(".keylog"))
    assert c.version == QUIC_V2 and "compatible version negotiation: version 1 -> 2" in c.note
    log = [line.split("\t") for line in CVN.with_suffix(".client.tsv").read_text().splitlines()]
    got = [(t.target, t.status, t.response_body_bytes) for t in c.transactions]
    assert got == [(p, int(s), int(n)) for p, s, n in log]
    # aioquic's client sends its second Initial with version 2's header and version 1's keys:
    # tshark 4.0.17 fails it too ("Decryption (checktag) failed"); it is counted, not read
    assert (c.client_failed_packets, c.server_failed_packets) == (1, 0)


def rewrite_versions(src: Path, dst: Path, version: int) -> int:
    """``src`` with every long header's version at the start of a datagram set to
    ``version`` (UDP checksums cleared: IPv4 allows none); the connections (client ports)
    whose datagrams were so rewritten."""
    ports = set()
    with src.open("rb") as f, dst.open("wb") as g:
        reader = dpkt.pcap.Reader(f)
        writer = dpkt.pcap.Writer(g, snaplen=reader.snaplen, linktype=reader.datalink(), nano=True)
        for ts, buf in reader:
            eth = dpkt.ethernet.Ethernet(buf)
            ip = eth.data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.udp.UDP) and ip.data.data[:1] >= b"\x80":
                u = ip.data
                u.data = u.data[:1] + version.to_bytes(4, "big") + u.data[5:]
                u.sum = 0
                ports.add(u.sport if u.dport == 443 else u.dport)
                buf = bytes(eth)
            writer.writepkt(buf, ts)
    return len(ports)


@pytest.mark.parametrize(("version", "name"),
                         [(0xFF00001D, "draft-29"), (0x51303530, "Q050"), (0x0A0A0A0A, "0x0a0a0a0a")])
def test_other_versions_are_named_in_a_warning(tmp_path, version, name):
    """A QUIC version qoe does not read (a draft, Google QUIC, a greased one) gives no
    connection (nor one joined in progress from its short header packets) and a warning
    naming it with its connections; the page pass says so too."""
    cap = tmp_path / "other.pcap"
    n = rewrite_versions(V1.with_suffix(".pcap"), cap, version)
    assert n == 3  # (the three connections of the HTTP/3 load)
    with pytest.warns(QoEWarning, match=f"QUIC connections not read \\({n} of version {name}\\)"):
        assert quic_connections(cap) == []
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        pages = list(iter_page_loads(cap, options=WebOptions()))
    assert pages == []
    assert any(f"{n} of version {name}" in str(w.message) for w in seen)


@pytest.mark.parametrize("flag", ["--read-ahead", "--no-read-ahead"])
def test_the_cli_says_it_once(tmp_path, flag):
    """``qoe web pages`` in a process of its own (the QUIC datagrams read in two processes with
    --read-ahead): the warning once on stderr, then "no page load found"; and the library,
    with every warning shown (``-W always``), warns once too: not again from the process that
    reads the other half of the connections."""
    cap = tmp_path / "other.pcap"
    n = rewrite_versions(V1.with_suffix(".pcap"), cap, 0xFF00001D)
    lib = ("import sys; from qoe.web import WebOptions, iter_page_loads; "
           "print(list(iter_page_loads(sys.argv[1], options=WebOptions(read_ahead=sys.argv[2] == '--read-ahead'))))")
    res = subprocess.run([sys.executable, "-W", "always", "-c", lib, str(cap), flag], capture_output=True, text=True,
                         timeout=120)
    assert res.stdout == "[]\n" and res.stderr.count("QUIC connections not read") == 1, res.stderr
    code = "import sys; from qoe_cli.main import main; sys.argv = ['qoe', *sys.argv[1:]]; main()"
    res = subprocess.run([sys.executable, "-c", code, "web", "pages", str(cap), flag],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout == "no page load found\n"
    said = [ln for ln in res.stderr.splitlines() if ln.startswith("qoe: warning:")]
    assert said == [f"qoe: warning: {cap}: QUIC connections not read ({n} of version draft-29): qoe reads QUIC "
                    "versions 1 (RFC 9000) and 2 (RFC 9369)"]


def cut_after_last_long_header(src: Path, dst: Path) -> int:
    """``src`` from the packet after its last QUIC long header on: a capture begun once every
    connection's handshake was over (as tcpdump started late). Its first packet's time (ns)."""
    with src.open("rb") as f:
        reader = dpkt.pcap.Reader(f)
        packets = [(ts, buf) for ts, buf in reader]
        snaplen, link = reader.snaplen, reader.datalink()
    udp = [dpkt.ethernet.Ethernet(buf).data.data for _, buf in packets]
    last = max(i for i, u in enumerate(udp) if isinstance(u, dpkt.udp.UDP) and bytes(u.data)[:1] >= b"\x80")
    with dst.open("wb") as g:  # (microseconds, as tcpdump wrote the source: the same times)
        writer = dpkt.pcap.Writer(g, snaplen=snaplen, linktype=link)
        for ts, buf in packets[last + 1:]:
            writer.writepkt(buf, ts)
    return round(packets[last + 1][0] * 1e9)


@pytest.mark.parametrize("keyed", [False, True])
def test_connections_joined_in_progress_give_their_timing(tmp_path, keyed):
    """Chromium's HTTP/3 load with its handshakes cut off: each connection with packets left is
    taken from its first one (not passed over, as before), says why its objects are not
    visible even with the key log, and the page ends at the server's last packet of data,
    where the keyless page of the whole capture ends."""
    cap = tmp_path / "late.pcap"
    begin = cut_after_last_long_header(V1.with_suffix(".pcap"), cap)
    keylog = V1.with_suffix(".keylog") if keyed else None
    conns = quic_connections(cap, keylog=keylog)
    whole = {c.client: c for c in quic_connections(V1.with_suffix(".pcap"))}
    assert len(conns) == 3 and not any(c.joined_in_progress for c in whole.values())
    for c in conns:
        assert c.version == 0 and c.joined_in_progress and c.client_initial_ns is None and c.handshake_end_ns is None
        assert c.first_ns >= begin and c.server == whole[c.client].server and c.transactions == ()
        assert c.note.startswith("joined in progress: its handshake is not in the capture")
        assert c.last_ns == whole[c.client].last_ns
    (page,) = list(iter_page_loads(cap, options=WebOptions(keylog=keylog)))
    (whole_page,) = list(iter_page_loads(V1.with_suffix(".pcap")))
    assert page.end_ns == whole_page.end_ns and page.start_ns == min(c.first_ns for c in conns)
    assert page.objects == 1 and page.transactions == ()  # the one connection with data after the cut
    assert any(n.startswith("QUIC (HTTP/3 over UDP): no RTT") for n in page.notes)
    assert math.isnan(page.rtt_s) and math.isnan(page.loss_share)


def test_turn_channel_data_over_port_443_is_not_taken_for_quic():
    """A WebRTC call relayed by TURN over UDP 443 sends ChannelData (RFC 8656 §12.4), whose
    first byte (0x40-0x4F) is also a QUIC short header's: the call's own datagrams (a real
    VP8 call, data/video/webrtc) framed so, to port 443, make no QUIC connection; the same
    datagrams under a short header's first byte without that framing do."""
    call = DATA.parents[0] / "video" / "webrtc" / "calls" / "vp8-clean" / "b.pcap"
    udp = [p for p in read_packets(call) if p.proto == 17 and len(p.payload) >= 21]
    udp = [p for p in udp if (p.src, p.sport) == (udp[0].src, udp[0].sport)][:400]  # one way of one flow
    assert len(udp) == 400

    def relayed(framing: bool) -> list[Packet]:
        out = []
        for p in udp:
            head = (0x4000 + 1).to_bytes(2, "big") + len(p.payload).to_bytes(2, "big") if framing else b"\x41\x00"
            out.append(dataclasses.replace(p, sport=50000, dport=443, payload=head + p.payload))
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert quic_connections(relayed(True)) == []
    (c,) = quic_connections(relayed(False))
    assert c.note.startswith("joined in progress") and c.client_packets == 400


def test_version_negotiation_then_a_new_first_flight_is_followed():
    """data/web/tls/quic-h3-v2v1.pcapng: aioquic's client begins in version 2, the server
    (version 1 only) answers with a Version Negotiation packet listing 1 (RFC 9000 §6), and the
    client begins again in 1 with a new ClientHello on the same addresses and ports. qoe reads
    the new handshake with its own Initial keys and finds the client's two objects (tshark
    4.0.17 decrypts none of its 1-RTT packets: data/web/tls/quic-h3-v2v1.tshark-quic.tsv)."""
    cap = DATA / "tls" / "quic-h3-v2v1.pcapng"
    first = datagrams(cap)[:3]
    assert int.from_bytes(first[0][2][1:5], "big") == QUIC_V2  # the client's first flight
    assert first[1][2][0] & 0x80 and first[1][2][1:5] == bytes(4)  # Version Negotiation (version 0)
    assert first[1][2][-4:] == (1).to_bytes(4, "big")  # listing version 1 alone
    assert int.from_bytes(first[2][2][1:5], "big") == 1  # the client again, in version 1
    (c,) = quic_connections(cap, keylog=cap.with_suffix(".keylog"))
    assert c.version == 1 and c.client_failed_packets == c.server_failed_packets == 0
    assert "version negotiation (RFC 9000 §6): version 2 not taken by the server, begun again in version 1" in c.note
    log = [line.split("\t") for line in cap.with_suffix(".client.tsv").read_text().splitlines()]
    got = [(t.target, t.status, t.response_body_bytes) for t in c.transactions]
    assert got == [(p, int(s), int(n)) for p, s, n in log]
    assert c.client_initial_ns == c.first_ns  # the page starts at the first attempt


@pytest.mark.parametrize("which", ["h3v2-idle", "quic-h3-v1v2", "quic-h3-v2v1", "joined"])
def test_read_in_two_processes_the_same(tmp_path, which):
    """Connections of version 2, after a compatible or an incompatible negotiation, and joined
    in progress: the same read in one process and with the connections split between two
    (each process numbers every connection, the other's too, and must tell them alike)."""
    if which == "joined":
        cap, keylog = tmp_path / "late.pcap", None
        cut_after_last_long_header(V1.with_suffix(".pcap"), cap)
    else:
        cap = V2.with_suffix(".pcap") if which == "h3v2-idle" else (DATA / "tls" / f"{which}.pcapng")
        keylog = cap.with_suffix(".keylog")
    one = quic_connections(cap, keylog=keylog, read_ahead=False)
    two = quic_connections(cap, keylog=keylog, read_ahead=True)
    assert one and [c.to_dict() for c in one] == [c.to_dict() for c in two]
    pages = [repr(p) for p in iter_page_loads(cap, options=WebOptions(keylog=keylog, read_ahead=False))]
    assert pages == [repr(p) for p in iter_page_loads(cap, options=WebOptions(keylog=keylog, read_ahead=True))]
