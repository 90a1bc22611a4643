"""Captures qoe did not design: TLS 1.3, TLS 1.2 (a CBC suite) and QUIC carrying no HTTP.

data/web/external/ (``fetch.sh``, README.md): Michael Driscoll's "Illustrated TLS 1.3 / 1.2 /
QUIC Connection" captures, each with its key log, his OpenSSL and quiche programs exchanging
"ping" and "pong". What qoe must say of them: the connection decrypted (every protected record
tshark 4.0 counts, each way, opened and none failed), its application not HTTP (no object
made up from "ping"), the page's note saying so; and without the key log, that the objects are
not visible. Run live where it is installed: ``tshark -r F -o tls.keylog_file:K -Y tls -T fields
-e tcp.srcport -e tls.record.content_type -e tls.record.opaque_type`` (records), and the ALPN
tshark reads in the QUIC handshake (``-e tls.handshake.extensions_alpn_str``); the decrypted
bytes, ``*.tshark-follow.txt`` beside the captures, are "ping" and "pong".
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from qoe.web import WebOptions, page_loads
from qoe.web.http import connection_results
from qoe.web.quic import quic_connections

EXT = Path(__file__).resolve().parents[2] / "data" / "web" / "external"
TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")


def _tshark(name: str, *args: str) -> list[list[str]]:
    cmd = [TSHARK, "-n", "-r", str(EXT / f"{name}.pcap"), "-o", f"tls.keylog_file:{EXT / (name + '.keylog')}", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=60).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def _protected_records(name: str, server_port: int) -> tuple[int, int]:
    """(client, server) protected records as tshark lists them: TLS 1.3's by their opaque type,
    TLS 1.2's those after each side's ChangeCipherSpec (RFC 5246 §7.1)."""
    counts = [0, 0]
    after_ccs = [False, False]
    for port, ctypes, opaque in _tshark(name, "-Y", "tls", "-T", "fields", "-e", "tcp.srcport",
                                        "-e", "tls.record.content_type", "-e", "tls.record.opaque_type"):
        side = int(int(port) == server_port)
        if opaque:
            counts[side] += len(opaque.split(","))
            continue
        for c in ctypes.split(",") if ctypes else ():
            if after_ccs[side]:
                counts[side] += 1
            after_ccs[side] = after_ccs[side] or c == "20"
    return counts[0], counts[1]


def _pages(name: str, keys: bool):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return page_loads(EXT / f"{name}.pcap",
                          options=WebOptions(keylog=str(EXT / f"{name}.keylog") if keys else None))


@needs_tshark
@pytest.mark.parametrize("name, suite", [("illustrated-tls13", "TLS_AES_256_GCM_SHA384"),
                                         ("illustrated-tls12", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA")])
def test_tls_that_is_not_http_is_decrypted_and_said_so(name, suite):
    """TLS 1.3 (2 records from the client, 7 from the server: its encrypted handshake, two
    tickets, "pong") and TLS 1.2 with AES-128-CBC and HMAC-SHA1, MAC-then-encrypt, over IPv6
    (3 and 2: Finished, "ping" and the close_notify alert; Finished and "pong"): every record
    opened; "ping" is no HTTP request line, so no transaction (before: a made-up partial
    request on TLS 1.3, "CBC suites are left out" on TLS 1.2)."""
    (r,) = connection_results(EXT / f"{name}.pcap", keylog=EXT / f"{name}.keylog")
    d = r.decryption
    assert (d.client_records, d.server_records) == _protected_records(name, r.connection.server[1])
    assert d.keys_found and d.decrypted and d.failed_records == 0 and d.cipher_suite == suite
    assert d.application == "other" and r.transactions == ()
    assert r.note == "decrypted, not HTTP: the client's first bytes are not an HTTP request line; " \
                     "its application data is not parsed"
    (page,) = _pages(name, keys=True)
    assert page.transactions == () and page.complete
    assert any(n.startswith("decrypted, not HTTP: 1 connection(s)") for n in page.notes)
    assert not any("without keys" in n or "without a key log" in n for n in page.notes)
    (keyless,) = _pages(name, keys=False)
    assert any(n.startswith("encrypted without keys: 1 connection(s)") for n in keyless.notes)
    assert keyless.start_ns == page.start_ns and keyless.plt_s == page.plt_s


@needs_tshark
def test_quic_that_is_not_http3_is_decrypted_and_said_so():
    """quiche's QUIC v1 with ALPN "ping/1.0" (tshark reads it in the decrypted handshake): the
    connection decrypted, no HTTP/3 streams parsed, the page says so (before: "encrypted
    without keys" with the key log given)."""
    (c,) = quic_connections(EXT / "illustrated-quic.pcap", keylog=EXT / "illustrated-quic.keylog")
    alpns = {row[0] for row in _tshark("illustrated-quic", "-Y", "tls.handshake.extensions_alpn_str",
                                       "-T", "fields", "-e", "tls.handshake.extensions_alpn_str")}
    assert alpns == {"ping/1.0"} and c.alpn == "ping/1.0"
    assert c.keys_found and c.decrypted and c.client_failed_packets == c.server_failed_packets == 0
    assert c.transactions == ()
    (page,) = _pages("illustrated-quic", keys=True)
    assert "decrypted, not HTTP: 1 connection(s) whose bytes and timing count, holding no object " \
           "(ALPN 'ping/1.0' is not HTTP/3)" in page.notes
    assert not any("without keys" in n for n in page.notes)
    (keyless,) = _pages("illustrated-quic", keys=False)
    assert any(n.startswith("encrypted without keys: 1 connection(s)") for n in keyless.notes)


def test_the_oracle_files_hold_ping_and_pong():
    """What tshark decrypted when the samples were fetched (``fetch.sh``): the data the tests
    above take for no HTTP."""
    for name in ("illustrated-tls13", "illustrated-tls12", "illustrated-quic"):
        text = (EXT / f"{name}.tshark-follow.txt").read_text()
        assert "\nping\n" in text and "\npong\n" in text
