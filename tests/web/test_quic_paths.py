"""A QUIC connection whose client comes from a new port half way, with the same connection ID
(a NAT's rebinding, RFC 9000 §9.3, as a capture beyond the NAT shows it): one connection.

Capture: data/web/tls/quic-h3-rebind.pcapng (make_quic.sh rebind: aioquic's client sends its
last two requests from a new local port, aioquic's server follows). References: the client's
own log of what it fetched, the capture's bytes read here with dpkt (two client ports, one
DCID), and tshark 4.0's QUIC dissector, which numbers both paths as one connection.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import dpkt
import pytest

from qoe.web import WebOptions, iter_page_loads
from qoe.web.quic import quic_connections

TLS = Path(__file__).resolve().parents[2] / "data" / "web" / "tls"
CAP = TLS / "quic-h3-rebind.pcapng"
KEYLOG = CAP.with_suffix(".keylog")


def client_short_headers() -> dict[int, set[bytes]]:
    """Client port -> the 8-byte DCIDs of its short header packets (aioquic's CIDs are 8 bytes)."""
    out: dict[int, set[bytes]] = {}
    with CAP.open("rb") as f:
        for _, buf in dpkt.pcapng.Reader(f):
            udp = dpkt.ethernet.Ethernet(buf).data.data
            if isinstance(udp, dpkt.udp.UDP) and udp.dport == 4433 and udp.data and not udp.data[0] & 0x80:
                out.setdefault(udp.sport, set()).add(bytes(udp.data[1:9]))
    return out


@pytest.mark.parametrize("read_ahead", [False, True])
def test_a_client_on_a_new_port_with_the_same_connection_id_is_one_connection(read_ahead):
    ports = client_short_headers()
    assert len(ports) == 2 and len(set.union(*ports.values())) == 1  # two ports, one DCID
    (c,) = quic_connections(CAP, keylog=KEYLOG, read_ahead=read_ahead)
    log = [line.split("\t") for line in (TLS / "quic-h3-rebind.client.tsv").read_text().splitlines()]
    assert [(t.target, t.status, t.response_body_bytes) for t in c.transactions] == [(p, int(s), int(n))
                                                                                      for p, s, n in log]
    first, second = sorted(ports, key=lambda p: p != c.client[1])
    assert c.client[1] == first and f"its client moved to 127.0.0.1:{second} with the same connection ID" in c.note
    (keyless,) = quic_connections(CAP, read_ahead=read_ahead)
    assert keyless.last_ns == c.last_ns and keyless.client_packets == c.client_packets
    (page,) = iter_page_loads(CAP, options=WebOptions(keylog=KEYLOG, read_ahead=read_ahead))
    assert page.objects == 4 and page.connections == 1


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_tshark_takes_both_paths_for_one_connection_too():
    out = subprocess.run(["tshark", "-n", "-r", str(CAP), "-o", f"tls.keylog_file:{KEYLOG}", "-Y", "quic",
                          "-T", "fields", "-e", "udp.stream", "-e", "quic.connection.number"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    pairs = {tuple(line.split("\t")) for line in out.splitlines() if line}
    assert {s for s, _ in pairs} == {"0", "1"} and {n for _, n in pairs} == {"0"}
