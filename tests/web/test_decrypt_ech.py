"""Encrypted Client Hello (draft-ietf-tls-esni): a TLS 1.3 connection whose ClientHello on the
wire is the ClientHelloOuter, its key log entry named by the encrypted ClientHelloInner's random.

Captures: data/web/tls/tls13-ech.pcap (make_ech.sh: Go's crypto/tls at both ends, HTTP/2, the
client's key log and its own log of what it fetched beside it) and tls13-ech-chromium.pcap
(make_ech_browser.sh: Chromium taking the ECH keys from the site's DNS HTTPS record, its key
log, HAR and Navigation/Resource Timing beside it). References: the client's log
(paths, statuses, body sizes, ECH accepted) and the capture's bytes read here with dpkt (the
outer ClientHello's random and SNI); tshark 4.0.17 decrypts nothing with that key log
(tls13-ech.tshark-http2-tree.txt: 0 HTTP/2 frames), as qoe did before.
"""

from __future__ import annotations

import json
from pathlib import Path

import dpkt
import pytest

from qoe.web import WebOptions, iter_page_loads
from qoe.web.http import connection_results
from qoe.web.keylog import read_keylog
from qoe.web.quic import quic_connections

TLS = Path(__file__).resolve().parents[2] / "data" / "web" / "tls"
CAP = TLS / "tls13-ech.pcap"
KEYLOG = TLS / "tls13-ech.keylog"


def outer_client_hello() -> bytes:
    """The client's first TCP payload: a TLS record holding the ClientHelloOuter."""
    with CAP.open("rb") as f:
        for _, buf in dpkt.pcap.Reader(f):
            tcp = dpkt.ethernet.Ethernet(buf).data.data  # (tcpdump -i lo: Ethernet frames)
            if isinstance(tcp, dpkt.tcp.TCP) and tcp.dport == 443 and tcp.data:
                return bytes(tcp.data)
    raise AssertionError("no ClientHello")


def test_the_key_log_names_another_random_than_the_capture_shows():
    record = outer_client_hello()
    assert record[0] == 22 and record[5] == 1  # a handshake record holding a ClientHello
    outer_random = record[11:43]  # record header 5, handshake header 4, legacy_version 2
    assert b"public.example.com" in record and b"www.example.com" not in record
    log = read_keylog(KEYLOG)
    assert len({cr for _, cr in log.secrets}) == 1 and not log.has_client(outer_random)
    assert " 0 " in next(line for line in (TLS / "tls13-ech.tshark-http2-tree.txt").read_text().splitlines()
                         if line.startswith("HTTP2 "))


def test_its_secrets_are_found_and_the_client_s_objects_read():
    (r,) = connection_results(CAP, keylog=KEYLOG)
    assert r.tls.ech_offered and r.tls.server_name == "public.example.com" and r.tls.version == 0x0304
    assert r.decryption.keys_found and r.decryption.failed_records == 0 and r.decryption.note is None
    assert r.decryption.ech_used
    client = [line.split("\t") for line in (TLS / "tls13-ech.client.tsv").read_text().splitlines()]
    assert {row[3] for row in client} == {"HTTP/2.0"} and {row[4] for row in client} == {"true"}
    txs = r.transactions
    assert {t.protocol for t in txs} == {"h2"} and {t.host for t in txs} == {"www.example.com"}
    # Go's file server answers /index.html with a redirect to ./, which the client followed
    assert (txs[0].target, txs[0].status) == ("/index.html", 301) and txs[1].target == "/"
    assert [(t.status, t.response_body_bytes) for t in txs[1:]] == [(int(s), int(n)) for _, s, n, _, _ in client]


def test_the_page_names_the_site_asked_for_with_keys_and_says_what_it_may_be_without():
    (keyed,) = iter_page_loads(CAP, options=WebOptions(keylog=KEYLOG))
    assert keyed.url == "https://www.example.com/index.html" and keyed.objects == 4
    (keyless,) = iter_page_loads(CAP)
    assert keyless.url == "https://public.example.com/" and keyless.objects == 1
    # (without keys ECH cannot be told from its GREASE, which Chromium sends everywhere: the note says "if")
    assert ("Encrypted Client Hello offered on 1 connection(s) whose objects are not visible: if it was used (not "
            "GREASE, which looks the same without keys) the server name in clear (public.example.com) is a public "
            "name, not the one asked for") in keyless.notes
    assert not any("Encrypted Client Hello" in n for n in keyed.notes)
    # another connection's key log: nothing opens, and the note says why
    (other,) = connection_results(CAP, keylog=TLS / "quic-h3.keylog")
    assert not other.decryption.keys_found and other.transactions == ()
    assert other.decryption.note.startswith("Encrypted Client Hello: no TLS 1.3 secrets in the key log open")


CHROMIUM = TLS / "tls13-ech-chromium.pcap"  # make_ech_browser.sh: Chromium 156, ECH keys from DNS


def client_hellos(path: Path) -> list[bytes]:
    """The first TCP payload of every connection's client (a ClientHello record each)."""
    seen, out = set(), []
    with path.open("rb") as f:
        for _, buf in dpkt.pcap.Reader(f):
            tcp = dpkt.ethernet.Ethernet(buf).data.data
            if isinstance(tcp, dpkt.tcp.TCP) and tcp.dport == 443 and tcp.data and tcp.sport not in seen:
                seen.add(tcp.sport)
                out.append(bytes(tcp.data))
    return out


def test_chromium_with_ech_from_dns_is_decrypted_as_the_browser_saw_it():
    """Chromium took the server's ECH keys from its DNS HTTPS record and offered ECH on both of
    its connections (public name in clear, the inner random in its key log); qoe opens both
    and finds every object of the browser's Navigation and Resource Timing, with its status,
    where tshark 4.0.17 finds none."""
    log = read_keylog(CHROMIUM.with_suffix(".keylog"))
    hellos = client_hellos(CHROMIUM)
    assert len(hellos) == 2
    for h in hellos:
        assert b"public.example.com" in h and b"www.example.com" not in h and b"\xfe\x0d" in h
        assert not log.has_client(h[11:43])
    assert " 0 " in next(line for line in CHROMIUM.with_name(CHROMIUM.stem + ".tshark-http2-tree.txt").read_text()
                         .splitlines() if line.startswith("HTTP2 "))
    results = connection_results(CHROMIUM, keylog=log)
    assert len(results) == 2 and all(r.tls.ech_offered and r.decryption.ech_used for r in results)
    timing = json.loads(CHROMIUM.with_suffix(".timing.json").read_text())
    browser = {e["name"]: e["responseStatus"] for e in timing["navigation"] + timing["resource"]}
    found = {t.url: t.status for r in results for t in r.transactions}
    assert len(browser) == 5 and {u: found.get(u) for u in browser} == browser
    (page,) = iter_page_loads(CHROMIUM, options=WebOptions(keylog=CHROMIUM.with_suffix(".keylog")))
    assert page.objects == len(found) == 6 and page.protocol == "TLS 1.3 h2"  # (and the 301 before "/")
    (keyless,) = iter_page_loads(CHROMIUM)
    assert keyless.url == "https://public.example.com/"


def test_chromium_s_grease_ech_is_told_apart_with_keys_and_only_conditional_without():
    """Chromium offers an encrypted_client_hello extension on every connection (GREASE when it
    has no ECH keys: draft-ietf-tls-esni §6.2), as on data/web/browser's loads from nginx. With
    the key log the outer random finds the secrets (no ECH was used: no note); without it, a
    TLS 1.3 page says "if it was used"; a TLS 1.2 page nothing (ECH is TLS 1.3's)."""
    browser = TLS.parent / "browser" / "captures"
    for name in ("tls13-idle", "tls12-idle"):
        cap = browser / f"{name}.pcap"
        results = connection_results(cap, keylog=cap.with_suffix(".keylog"))
        assert results and all(r.tls.ech_offered for r in results if r.tls is not None and r.tls.client_hello_ns)
        assert all(r.decryption.keys_found and not r.decryption.ech_used
                   for r in results if r.decryption is not None and r.transactions)
        (keyed,) = iter_page_loads(cap, options=WebOptions(keylog=cap.with_suffix(".keylog")))
        (keyless,) = iter_page_loads(cap)
        assert not any("Encrypted Client Hello" in n for n in keyed.notes)
        said = [n for n in keyless.notes if n.startswith("Encrypted Client Hello offered")]
        assert len(said) == (1 if name == "tls13-idle" else 0)


def test_quic_connections_say_it_too():
    """Chromium's QUIC ClientHellos carry the same GREASE extension (data/web/browser's h3-idle):
    QuicConnection.ech_offered; the keyless page's conditional note counts its three
    connections; decrypted (by the outer random: GREASE) no note; with a key log that has none
    of its secrets the connection's note says ECH would hide them (not matched over QUIC)."""
    cap = TLS.parent / "browser" / "captures" / "h3-idle.pcap"
    conns = quic_connections(cap, keylog=cap.with_suffix(".keylog"))
    assert len(conns) == 3 and all(c.ech_offered and c.transactions for c in conns)
    (keyless,) = iter_page_loads(cap)
    assert any(n.startswith("Encrypted Client Hello offered on 3 connection(s)") for n in keyless.notes)
    (keyed,) = iter_page_loads(cap, options=WebOptions(keylog=cap.with_suffix(".keylog")))
    assert not any("Encrypted Client Hello" in n for n in keyed.notes)
    other = quic_connections(cap, keylog=KEYLOG)
    assert all(c.note.startswith("no secrets for this connection in the key log: objects not visible (it offered "
                                 "Encrypted Client Hello") for c in other)


@pytest.mark.parametrize("name", ["quic-h3-ech", "quic-h3-ech-gso"])
def test_ech_over_quic_is_decrypted_too(name):
    """data/web/tls/quic-h3-ech.pcap (make_ech.sh: quic-go at both ends, HTTP/3, ECH accepted):
    the outer ClientHello in the Initial packets names public.example.com and a random the key
    log does not have (ech_used: the entry was found by the trial, which runs only then); the
    server's first Handshake packet finds it, and the client's three objects (after the
    redirect its server sent) are read. quic-h3-ech-gso.pcap is the same with quic-go's UDP
    segmentation offload on: its server's large responses leave in datagrams of several packets
    of one size (up to 19 kB here, as the sending host's capture holds them), each read."""
    cap = TLS / f"{name}.pcap"
    sizes = [len(dpkt.ethernet.Ethernet(buf).data.data.data) for _, buf in dpkt.pcap.Reader(cap.open("rb"))]
    assert (max(sizes) > 1500) == name.endswith("gso")
    client = [line.split("\t") for line in cap.with_suffix(".client.tsv").read_text().splitlines()]
    assert {row[3] for row in client} == {"HTTP/3.0"} and {row[4] for row in client} == {"true"}
    (c,) = quic_connections(cap, keylog=cap.with_suffix(".keylog"))
    assert c.ech_offered and c.ech_used and c.server_name == "public.example.com"
    assert c.client_failed_packets == c.server_failed_packets == 0
    assert c.note == ("the server's datagrams hold several packets of one size (segmentation offload, captured on "
                      "the sending host): read packet by packet" if name.endswith("gso") else None)
    txs = c.transactions
    assert (txs[0].target, txs[0].status) == ("/index.html", 301) and {t.host for t in txs} == {"www.example.com"}
    assert [(t.status, t.response_body_bytes) for t in txs[1:]] == [(int(s), int(n)) for _, s, n, _, _ in client]
    (keyless,) = quic_connections(cap)
    assert keyless.ech_offered and not keyless.ech_used and keyless.transactions == ()


def test_chromium_with_ech_over_quic_is_decrypted_as_the_browser_saw_it():
    """quic-h3-ech-chromium.pcap (make_ech_browser.sh: the HTTPS record's alpn h3, quic-go's
    server): Chromium's one QUIC connection offered ECH and used it; qoe finds its entry by the
    server's first Handshake packet and every object of the browser's Navigation and Resource
    Timing with its status."""
    cap = TLS / "quic-h3-ech-chromium.pcap"
    (c,) = quic_connections(cap, keylog=cap.with_suffix(".keylog"))
    assert c.ech_offered and c.ech_used and c.server_name == "public.example.com" and c.alpn == "h3"
    timing = json.loads(cap.with_suffix(".timing.json").read_text())
    browser = {e["name"]: e["responseStatus"] for e in timing["navigation"] + timing["resource"]}
    assert {e["nextHopProtocol"] for e in timing["navigation"] + timing["resource"]} == {"h3"}
    found = {t.url: t.status for t in c.transactions}
    assert len(browser) == 5 and {u: found.get(u) for u in browser} == browser
    (page,) = iter_page_loads(cap, options=WebOptions(keylog=cap.with_suffix(".keylog")))
    assert page.url == "https://www.example.com/index.html" and page.objects == len(found) == 6
    (keyless,) = iter_page_loads(cap)
    assert keyless.url == "https://public.example.com/"


def _server_flight_cut(out: Path, lose: bool) -> None:
    """tls13-ech.pcap with the server's first flight (ServerHello, ChangeCipherSpec and four
    protected handshake records in one segment) sent as three segments: up to 100 bytes into
    its fourth record (the Certificate), the rest of that record, the rest of the flight; with
    ``lose`` the middle one left out of the capture (a packet the capture lost, the client's
    ACKs covering it); sequence numbers as they were."""
    with CAP.open("rb") as f:
        packets = list(dpkt.pcap.Reader(f))
    with out.open("wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        done = False
        for ts, buf in packets:
            tcp = dpkt.ethernet.Ethernet(buf).data.data
            if done or not (isinstance(tcp, dpkt.tcp.TCP) and tcp.sport == 443 and tcp.data):
                w.writepkt(buf, ts=ts)
                continue
            done, data, starts = True, bytes(tcp.data), [0]
            while starts[-1] < len(data):
                starts.append(starts[-1] + 5 + int.from_bytes(data[starts[-1] + 3:starts[-1] + 5], "big"))
            assert [data[i] for i in starts[:-1]] == [22, 20, 23, 23, 23, 23]
            cuts = [0, starts[3] + 100, starts[4], len(data)]
            for k in range(3):
                if lose and k == 1:
                    continue
                piece = dpkt.ethernet.Ethernet(buf)
                piece.data.data.data, piece.data.data.seq = data[cuts[k]:cuts[k + 1]], tcp.seq + cuts[k]
                piece.data.len = len(piece.data.data.pack()) + 20
                piece.data.sum = piece.data.data.sum = 0
                w.writepkt(bytes(piece), ts=ts)


@pytest.mark.parametrize("lose", [False, True])
def test_a_lost_server_handshake_record_keeps_the_records_after_it(tmp_path, lose):
    """The server's protected records of an ECH connection wait for its client's answer before
    the key log is searched (a connection the client abandoned answers nothing); one of them
    cut by a lost packet (the Certificate, the fourth record of the flight) still counts in
    the record sequence (RFC 8446 §5.3), so the CertificateVerify, the Finished and everything
    after open: the client's objects are all read (its own log), one record counted as failed."""
    cut = tmp_path / "cut.pcap"
    _server_flight_cut(cut, lose)
    (r,) = connection_results(cut, keylog=KEYLOG)
    assert r.decryption.keys_found and r.decryption.ech_used
    assert r.decryption.failed_records == (1 if lose else 0)
    client = [line.split("\t") for line in (TLS / "tls13-ech.client.tsv").read_text().splitlines()]
    txs = r.transactions
    assert [(t.status, t.response_body_bytes) for t in txs[1:]] == [(int(s), int(n)) for _, s, n, _, _ in client]
