"""TLS decryption with NSS key logs, checked against tshark's decrypted view of the same captures.

The captures in data/web/tls/ (made by data/web/tls/make_tls.sh: curl and
openssl s_client against nginx, their SSLKEYLOGFILE beside each capture) and the references, run live:

* the ClientHello random the key log is indexed by:
  ``tshark -r F -Y tls.handshake.type==1 -T fields -e tls.handshake.random``
* the cipher suite: ``tshark -r F -Y tls.handshake.type==2 -T fields -e tls.handshake.ciphersuite``
* decrypted ALPN (TLS 1.3: EncryptedExtensions) and KeyUpdates:
  ``tshark -o tls.keylog_file:K -r F -Y tls.handshake.type==8 -T fields -e tls.handshake.extensions_alpn_str``,
  ``... -Y tls.handshake.type==24 -T fields -e tcp.srcport``
* HTTP/1.1 inside TLS: ``tshark -o tcp.reassemble_out_of_order:TRUE -o tls.keylog_file:K -r F
  -Y http -T fields -e tcp.stream -e http.request.method -e http.request.uri -e http.response.code``
  (the .tshark-http1.tsv files beside the captures hold the same, from make_tls.sh)
* application_data records (no keys): ``tshark -r F -Y tls -T fields -e tls.record.content_type
  -e tls.record.opaque_type -e tls.record.length``

Skipped when tshark is absent.
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from qoe.capture import probe
from qoe.errors import InputError, QoEWarning
from qoe.web.http import connection_results
from qoe.web.keylog import KeyLog, keylog_from_capture, parse_keylog, read_keylog

TLS = Path(__file__).resolve().parents[2] / "data" / "web" / "tls"
TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
# (the CBC ones, `make_tls.sh cbc`: encrypt_then_mac, RFC 7366, in all but tls12-h1-cbc-noetm)
CBC = ["tls12-h1-cbc", "tls12-h2-cbc384", "tls12-h1-cbc-noetm"]
H1 = ["tls12-h1-aesgcm", "tls13-h1-aes256", "tls13-keyupdate", "tls12-h1-cbc", "tls12-h1-cbc-noetm"]
ALL = ["tls12-h1-aesgcm", "tls12-h2-chacha", "tls13-h1-aes256", "tls13-h2-aes128", "tls13-h2-chacha", "tls13-keyupdate",
       *CBC]


def tshark(name: str, *args: str, keys: bool = False) -> list[list[str]]:
    cmd = [TSHARK, "-n", "-r", str(TLS / f"{name}.pcapng"), "-o", "tcp.reassemble_out_of_order:TRUE"]
    if keys:
        cmd += ["-o", f"tls.keylog_file:{TLS / (name + '.keylog')}"]
    out = subprocess.run([*cmd, *args], capture_output=True, text=True, check=True, timeout=120).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def decrypted(name: str, log: KeyLog | None = None):
    """Every connection's result, TLS decrypted with the sample's key log (or ``log``)."""
    log = read_keylog(TLS / f"{name}.keylog") if log is None else log
    return connection_results(TLS / f"{name}.pcapng", keylog=log)


# -- key logs ------------------------------------------------------------------------------


@needs_tshark
@pytest.mark.parametrize("name", ALL)
def test_key_log_is_indexed_by_the_client_hello_random(name):
    log = read_keylog(TLS / f"{name}.keylog")
    randoms = {bytes.fromhex(r[0]) for r in tshark(name, "-Y", "tls.handshake.type==1", "-T", "fields",
                                                     "-e", "tls.handshake.random")}
    assert randoms and all(log.has_client(r) for r in randoms)
    tls13 = name.startswith("tls13")
    for r in randoms:
        if tls13:
            for label in ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET",
                          "CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0"):
                assert len(log.get(label, r) or b"") in (32, 48)
        else:
            assert len(log.get("CLIENT_RANDOM", r) or b"") == 48  # RFC 5246 §8.1 master_secret


def test_decryption_secrets_block_carries_the_same_key_log():
    # tls13-h2-dsb.pcapng = tls13-h2-aes128.pcapng + editcap --inject-secrets tls,<its key log>
    info = probe(TLS / "tls13-h2-dsb.pcapng")
    from_dsb = keylog_from_capture(info.decryption_secrets, source="tls13-h2-dsb.pcapng")
    from_file = read_keylog(TLS / "tls13-h2-aes128.keylog")
    assert from_dsb.lines == from_file.lines == 5
    assert dict(from_dsb.secrets) == dict(from_file.secrets)
    assert probe(TLS / "tls13-h2-aes128.pcapng").decryption_secrets == []


def test_key_log_lines_quic_prefix_comments_and_malformed_lines():
    cr = "ab" * 32
    text = "\n".join([
        "# SSL/TLS secrets log file",
        f"CLIENT_RANDOM {cr} {'11' * 48}",
        f"QUIC_SERVER_HANDSHAKE_TRAFFIC_SECRET {cr} {'22' * 32}",
        f"CLIENT_RANDOM {cr[:-2]} {'11' * 48}",  # 31-byte random: malformed
        f"SERVER_TRAFFIC_SECRET_0 {cr} zz",  # not hex: malformed
        f"RSA {'00' * 8} {'00' * 48}",  # another label: skipped, not malformed
    ])
    log = parse_keylog(text)
    assert log.lines == 2 and log.skipped_lines == 2
    assert log.get("SERVER_HANDSHAKE_TRAFFIC_SECRET", bytes.fromhex(cr)) == bytes([0x22]) * 32


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "ascii"])
def test_a_key_log_saved_with_a_byte_order_mark_loses_no_line(tmp_path, encoding):
    """A key log merged or saved on Windows (an editor's UTF-8 with a BOM, PowerShell's
    redirection writing UTF-16 with one) reads as the file the browser wrote: its first line
    was taken for an unknown label and dropped in silence (Chromium's h2-idle page then
    showed 27 of its 41 objects)."""
    source = TLS.parent / "browser" / "captures" / "h2-idle.keylog"
    text = source.read_text()
    copy = tmp_path / "saved.keylog"
    copy.write_text(text, encoding=encoding)
    assert read_keylog(copy).secrets == read_keylog(source).secrets
    # a first word that is no label at all (bytes of another encoding) counts as malformed
    assert parse_keylog("\u00e9CLIENT_RANDOM " + "ab" * 32 + " " + "11" * 48).skipped_lines == 1


def test_key_log_file_errors_name_the_file(tmp_path):
    with pytest.raises(InputError, match="nope.keylog"):
        read_keylog(tmp_path / "nope.keylog")
    bad = tmp_path / "notes.txt"
    bad.write_text("hello\n")
    with pytest.raises(InputError, match="notes.txt.*not an NSS key log"):
        read_keylog(bad)
    half = tmp_path / "half.keylog"
    half.write_text(f"CLIENT_RANDOM {'ab' * 32} {'11' * 48}\nCLIENT_RANDOM xyz\n")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert read_keylog(half).lines == 1
    assert any(issubclass(x.category, QoEWarning) and "1 malformed" in str(x.message) for x in w)


# -- records -------------------------------------------------------------------------------


@needs_tshark
@pytest.mark.parametrize("name", ALL)
def test_every_record_opens_with_the_suite_and_alpn_tshark_sees(name):
    results = decrypted(name)
    suites = [int(r[0], 16) for r in tshark(name, "-Y", "tls.handshake.type==2", "-T", "fields",
                                            "-e", "tls.handshake.ciphersuite")]
    alpns = [r[0] for r in tshark(name, "-Y", "tls.handshake.extensions_alpn_str and tls.handshake.type!=1",
                                  "-T", "fields", "-e", "tls.handshake.extensions_alpn_str", keys=True)]
    assert len(results) == len(suites)
    for r, suite in zip(results, suites):
        d = r.decryption
        assert d.keys_found and d.decrypted and d.failed_records == 0 and d.note is None
        assert r.tls.cipher_suite == suite
        assert d.cipher_suite is not None
    # the ALPN tshark decrypts from EncryptedExtensions (TLS 1.3) or reads in the ServerHello (1.2)
    assert [r.decryption.alpn for r in results if r.decryption.alpn is not None] == alpns


@needs_tshark
def test_key_update_moves_both_directions_to_the_next_secret():
    (r,) = decrypted("tls13-keyupdate")
    ports = tshark("tls13-keyupdate", "-Y", "tls.handshake.type==24", "-T", "fields", "-e", "tcp.srcport", keys=True)
    d = r.decryption
    client_port = r.connection.client[1]
    assert d.client_key_updates == sum(int(p[0]) == client_port for p in ports) == 1
    assert d.server_key_updates == sum(int(p[0]) != client_port for p in ports) == 1
    assert d.failed_records == 0
    # the request after the KeyUpdate was read with the new keys
    assert [t.target for t in r.transactions] == ["/style.css", "/index.html"]
    assert {t.protocol for t in r.transactions} == {"http/1.1"} and r.decryption.application == "http/1.x"


@needs_tshark
@pytest.mark.parametrize("name", H1)
def test_http1_inside_tls_equals_tshark(name):
    ref = tshark(name, "-Y", "http", "-T", "fields", "-e", "tcp.stream", "-e", "http.request.method",
                 "-e", "http.request.uri", "-e", "http.response.code", keys=True)
    requests = [(int(r[0]), r[1], r[2]) for r in ref if r[1]]
    statuses = [(int(r[0]), int(r[3])) for r in ref if len(r) > 3 and r[3]]
    ours_req, ours_status = [], []
    for k, r in enumerate(decrypted(name)):
        if r.decryption.application != "http/1.x":
            continue
        for t in r.transactions:
            assert t.url.startswith("https://")
            ours_req.append((k, t.method, t.target))
            ours_status.append((k, t.status))
            assert t.complete
    assert ours_req == requests
    assert ours_status == statuses


def test_wrong_keys_fail_authentication_and_are_counted():
    good = read_keylog(TLS / "tls13-h1-aes256.keylog")
    flipped = KeyLog({k: bytes(b ^ 1 for b in v) if k[0] == "SERVER_TRAFFIC_SECRET_0" else v
                      for k, v in good.secrets.items()})
    results = decrypted("tls13-h1-aes256", flipped)
    d = results[0].decryption
    assert d.keys_found and d.server_failed_records > 0 and d.client_failed_records == 0
    assert "failed authentication" in d.note
    (t, *_) = results[0].transactions
    assert t.method == "GET" and t.status is None  # requests seen, responses not


@pytest.mark.parametrize("name", ["tls12-h1-cbc", "tls12-h1-cbc-noetm"])
def test_cbc_records_with_a_wrong_mac_key_or_padding_fail_and_are_counted(name):
    """A CBC record is authenticated by its HMAC (RFC 5246 §6.2.3.2; RFC 7366 §3: over the
    ciphertext): another master secret gives other MAC and write keys, so every record of
    both ways fails its MAC (encrypt_then_mac) or its padding and MAC, and is counted."""
    good = read_keylog(TLS / f"{name}.keylog")
    flipped = KeyLog({k: bytes(b ^ 1 for b in v) for k, v in good.secrets.items()})
    (r,) = decrypted(name, flipped)
    d = r.decryption
    assert d.keys_found and not d.decrypted and d.client_records == d.server_records == 0
    assert d.client_failed_records > 0 and d.server_failed_records > 0
    assert "failed authentication" in d.note and r.transactions == ()


@needs_tshark
@pytest.mark.parametrize("name", ["tls12-h2-chacha", "tls13-h2-chacha"])
def test_without_keys_bursts_hold_every_application_data_record(name):
    log = read_keylog(TLS / f"{name}.keylog")
    other = KeyLog({("CLIENT_RANDOM", bytes(32)): bytes(48)})  # a key log without this connection
    assert len(other) and not log.has_client(bytes(32))
    results = decrypted(name, other)
    rows = tshark(name, "-Y", "tls", "-T", "fields", "-e", "tls.record.content_type", "-e", "tls.record.opaque_type",
                  "-e", "tls.record.length", "-E", "occurrence=a")
    total = 0
    for ctype, otype, length in rows:
        # tshark lists clear records' content_type and encrypted TLS 1.3 records' opaque_type in
        # two fields; in a frame the clear records (hellos, ChangeCipherSpec) come first
        types = (ctype.split(",") if ctype else []) + (otype.split(",") if otype else [])
        for c, n in zip(types, length.split(",")):
            total += int(n) if c == "23" else 0
    (r,) = results
    d = r.decryption
    assert r.transactions == () and not d.keys_found and not d.decrypted and "key log" in d.note
    assert sum(b.bytes for b in d.bursts) == total
    assert {b.direction for b in d.bursts} == {"client", "server"}
    assert all(a.direction != b.direction for a, b in zip(d.bursts, d.bursts[1:]))  # alternating by definition


# -- a TLS 1.3 connection written here -------------------------------------------------------


def _expand_label(secret: bytes, label: bytes, length: int) -> bytes:
    """RFC 8446 §7.1 HKDF-Expand-Label with an empty context (SHA-256), with ``cryptography``."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

    full = b"tls13 " + label  # HkdfLabel: length, "tls13 " + label, empty context
    info = length.to_bytes(2, "big") + bytes([len(full)]) + full + b"\x00"
    return HKDFExpand(hashes.SHA256(), length, info).derive(secret)


class _Writer:
    """One direction's TLS 1.3 record protection (RFC 8446 §7.3 traffic keys, §5.3 nonce,
    §5.2 record) with ``cryptography``'s AES-128-GCM: the other side of what qoe opens."""

    def __init__(self, secret: bytes) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self.aead = AESGCM(_expand_label(secret, b"key", 16))
        self.iv = int.from_bytes(_expand_label(secret, b"iv", 12), "big")
        self.seq = 0

    def record(self, content: bytes, ctype: int, pad: int = 0, zeros_only: bool = False) -> bytes:
        inner = bytes(pad) if zeros_only else content + bytes([ctype]) + bytes(pad)
        header = b"\x17\x03\x03" + (len(inner) + 16).to_bytes(2, "big")  # §5.2: opaque_type 23
        nonce = (self.iv ^ self.seq).to_bytes(12, "big")
        self.seq += 1
        return header + self.aead.encrypt(nonce, inner, header)


def handshake(mtype: int, body: bytes) -> bytes:
    """RFC 8446 §4: Handshake = msg_type(1) length(3) body."""
    return bytes([mtype]) + len(body).to_bytes(3, "big") + body


def _tls13_connection():
    """A key log and the hello records of a TLS 1.3 connection (TLS_AES_128_GCM_SHA256, made-up
    secrets), with the writers of its four traffic secrets: (log, ClientHello record,
    ServerHello record, client handshake, server handshake, client and server application)."""
    from qoe.web.keylog import parse_keylog

    cr, sr = bytes(range(32)), bytes(range(32, 64))
    names = ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_0",
             "SERVER_TRAFFIC_SECRET_0")
    secrets = {name: bytes([k + 1]) * 32 for k, name in enumerate(names)}
    log = parse_keylog("".join(f"{n} {cr.hex()} {s.hex()}\n" for n, s in secrets.items()))
    versions = (43).to_bytes(2, "big")  # §4.2.1 supported_versions
    hello = (b"\x03\x03" + cr + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00"
             + (7).to_bytes(2, "big") + versions + b"\x00\x03\x02\x03\x04")
    shello = (b"\x03\x03" + sr + b"\x00" + b"\x13\x01" + b"\x00"
              + (6).to_bytes(2, "big") + versions + b"\x00\x02\x03\x04")
    hello_record = b"\x16\x03\x01" + (len(hello) + 4).to_bytes(2, "big") + handshake(1, hello)
    shello_record = b"\x16\x03\x03" + (len(shello) + 4).to_bytes(2, "big") + handshake(2, shello)
    return (log, hello_record, shello_record, *(_Writer(secrets[n]) for n in names))


def _tcp_packets(flights: list[tuple[int, bytes]]) -> list:
    """A TCP connection (handshake, one segment per flight: (0 client / 1 server, bytes), FINs)
    as qoe.capture Packets, 1 ms apart."""
    from qoe.capture import TCP_ACK, TCP_FIN, TCP_PSH, TCP_SYN, Packet, TcpInfo

    c, s = ("192.0.2.1", 50000), ("198.51.100.2", 443)
    seq = [1000, 5000]
    tcp_proto = 6  # IANA protocol number of TCP
    packets, t = [], 1_000_000

    def segment(direction: int, flags: int, payload: bytes = b"") -> None:
        nonlocal t
        src, dst = (c, s) if direction == 0 else (s, c)
        tcp = TcpInfo(seq=seq[direction], ack=seq[1 - direction], flags=flags, window=65535, data_len=len(payload))
        packets.append(Packet(len(packets) + 1, t, src[0], dst[0], tcp_proto, src[1], dst[1], payload, tcp, 0,
                              54 + len(payload)))
        seq[direction] += len(payload) + (1 if flags & (TCP_SYN | TCP_FIN) else 0)
        t += 1_000_000

    segment(0, TCP_SYN)
    segment(1, TCP_SYN | TCP_ACK)
    segment(0, TCP_ACK)
    for direction, data in flights:
        segment(direction, TCP_ACK | TCP_PSH, data)
    segment(0, TCP_FIN | TCP_ACK)
    segment(1, TCP_FIN | TCP_ACK)
    return packets


def _app_flights(app: list[tuple[int, bytes]]) -> tuple:
    """(key log, flights) of a TLS 1.3 connection written here (no ALPN) whose application data
    records, in order, are ``app``: (0 client / 1 server, plaintext), one record each."""
    log, hello_record, shello_record, chs, shs, cap, sap = _tls13_connection()
    finished = handshake(20, bytes(32))
    flights = [(0, hello_record), (1, shello_record + shs.record(finished, 22)), (0, chs.record(finished, 22))]
    flights += [(d, (cap if d == 0 else sap).record(data, 23)) for d, data in app]
    return log, flights


def test_without_alpn_the_client_bytes_choose_http_or_not():
    """No ALPN in the handshake: the client's first decrypted bytes tell (RFC 9112 §3, a
    request line; RFC 9113 §3.4, the HTTP/2 preface). A request line cut over two records is
    still HTTP/1.1 (the first, "GET /a HT", cannot tell yet: held); a server that speaks first
    (an SMTP banner) and a client whose first line is no request line ("EHLO") are not HTTP;
    nor is a client's "ping" answered by the server while it is no whole line (an HTTP/1.x
    server answers requests, RFC 9112 §3)."""
    response = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    cases = {
        "split request": [(0, b"GET /a HT"), (0, b"TP/1.1\r\nHost: example.org\r\n\r\n"), (1, response)],
        "server first": [(1, b"220 mail.example.org ESMTP\r\n"), (0, b"EHLO client.example.org\r\n"),
                         (1, b"250 mail.example.org\r\n")],
        "ping": [(0, b"ping"), (1, b"pong")],
    }
    got = {}
    for name, app in cases.items():
        log, flights = _app_flights(app)
        (r,) = connection_results(_tcp_packets(flights), keylog=log)
        assert r.decryption.decrypted and r.decryption.failed_records == 0
        got[name] = (r.decryption.application, [(t.method, t.url, t.status) for t in r.transactions])
    assert got == {
        "split request": ("http/1.x", [("GET", "https://example.org/a", 200)]),
        "server first": ("other", []),
        "ping": ("other", []),
    }


def test_tls13_padded_records_open_to_their_content():
    """RFC 8446 §5.2/§5.4: TLSInnerPlaintext = content, then the real content type, then any
    number of zero bytes. A TLS 1.3 connection written here with ``cryptography``'s AES-GCM
    (the other side of the primitive qoe opens records with) and keys from the RFC's key
    schedule (§7.1 HKDF-Expand-Label, §7.3 traffic keys, §5.3 nonce): records with 0, 1 and
    300 bytes of padding give the HTTP exchange that was written, every record opened; an
    inner plaintext of zeros alone (no content type) fails, and is counted so."""
    log, hello_record, shello_record, chs, shs, cap, sap = _tls13_connection()
    finished = handshake(20, bytes(32))  # §4.4.4 (not verified by a passive reader)
    request = b"GET /a HTTP/1.1\r\nHost: example.org\r\n\r\n"
    body = b"x" * 1000
    response = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + body
    flights = [
        (0, hello_record),
        (1, shello_record + shs.record(finished, 22, pad=1)),
        (0, chs.record(finished, 22) + cap.record(request, 23, pad=300)),
        (1, sap.record(response[:500], 23) + sap.record(response[500:], 23, pad=1)),
        (1, sap.record(b"", 23, pad=20, zeros_only=True)),
    ]
    (r,) = connection_results(_tcp_packets(flights), keylog=log)
    d = r.decryption
    assert d is not None and d.keys_found and d.cipher_suite == "TLS_AES_128_GCM_SHA256"
    assert (d.client_records, d.server_records) == (2, 3)  # Finished + data each way
    assert (d.client_failed_records, d.server_failed_records) == (0, 1)  # the record of zeros alone
    (tx,) = r.transactions
    assert (tx.method, tx.url, tx.status, tx.response_body_bytes) == ("GET", "https://example.org/a", 200, 1000)
    assert tx.complete


class _Plaintext:
    """The application sink of a test: every call DecryptingTlsSink makes on it, in order."""

    def __init__(self, conn) -> None:
        self.calls = []

    def data(self, direction, ts_ns, offset, payload):
        self.calls.append(("data", direction, ts_ns, offset, bytes(payload)))

    def gap(self, direction, ts_ns, offset, length):
        self.calls.append(("gap", direction, ts_ns, offset, length))

    def close(self, direction, ts_ns, how):
        self.calls.append(("close", direction, ts_ns, how))


@pytest.mark.parametrize("keyed", [True, False])
def test_a_record_that_two_gaps_cut_costs_that_record_only(keyed):
    """A gap inside a protected record skips that record whole (its sequence number still
    counts, RFC 8446 §5.3) and only it: here a server record loses bytes to two gaps, the
    second reaching its end, and the next record arrives whole in two deliveries. With the
    keys it opens (it used to be skipped too: the first record was counted lost twice); the
    bursts begin at each record's first byte (a skipped record's used to begin where it ended).
    A TLS 1.3 connection written here with ``cryptography`` (see ``_tls13_connection``)."""
    from qoe.web.decrypt import DecryptingTlsSink
    from qoe.web.keylog import KeyLog
    from qoe.web.tcp import CLIENT, SERVER, ConnectionId

    log, hello_record, shello_record, chs, shs, cap, sap = _tls13_connection()
    finished = handshake(20, bytes(32))
    server_finished = shs.record(finished, 22)  # (a protected record: application_data outside)
    first, second = sap.record(b"A" * 1000, 23), sap.record(b"B" * 500, 23)
    conn = ConnectionId(("192.0.2.1", 50000), ("198.51.100.2", 443), 0, 0, True)
    apps = []
    sink = DecryptingTlsSink(conn, log if keyed else KeyLog(), http1=lambda c: apps.append(_Plaintext(c)) or apps[-1])
    at = [0, 0]

    def data(direction, ts, payload):
        sink.data(direction, ts, at[direction], payload)
        at[direction] += len(payload)

    def gap(direction, ts, length):
        sink.gap(direction, ts, at[direction], length)
        at[direction] += length

    data(CLIENT, 1, hello_record)
    data(SERVER, 2, shello_record + server_finished)
    data(CLIENT, 3, chs.record(finished, 22) + cap.record(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", 23))
    data(SERVER, 10, first[:105])
    gap(SERVER, 11, 200)
    gap(SERVER, 12, len(first) - 305)  # to the record's end
    data(CLIENT, 15, cap.record(b"GET /b HTTP/1.1\r\nHost: a\r\n\r\n", 23))
    data(SERVER, 20, second[:300])
    data(SERVER, 21, second[300:])
    d = sink.decryption()
    server = [(b.start_ns, b.end_ns, b.records, b.bytes) for b in d.bursts if b.direction == "server"]
    assert server == [(2, 2, 1, len(server_finished) - 5), (10, 12, 1, len(first) - 5), (20, 21, 1, len(second) - 5)]
    if keyed:
        assert (d.server_records, d.server_failed_records) == (2, 1)  # Finished and the second record; the first
        (app,) = apps
        server_calls = [c for c in app.calls if c[1] == SERVER]
        assert server_calls == [("gap", SERVER, 12, 0, len(first) - 5 - 17), ("data", SERVER, 21, len(first) - 22, b"B" * 500)]


def test_records_are_read_whole_however_the_deliveries_cut_them():
    """The records reach decryption whole whatever the TCP deliveries (a header over two, a
    body over three, three records in one), each opened once at the delivery that completed
    it; then bytes that are not TLS records stop decryption, and both the decryption's note
    and the timing's error say so, the records before them kept. The TLS timing and the
    decryption read the records of one framer: a record counted by one and not the other
    fails here. A TLS 1.3 connection written here with ``cryptography`` (``_tls13_connection``)."""
    from qoe.web.decrypt import DecryptingTlsSink
    from qoe.web.tcp import CLIENT, SERVER, ConnectionId

    log, hello_record, shello_record, chs, shs, cap, sap = _tls13_connection()
    finished = handshake(20, bytes(32))
    conn = ConnectionId(("192.0.2.1", 50000), ("198.51.100.2", 443), 0, 0, True)
    apps = []
    sink = DecryptingTlsSink(conn, log, http1=lambda c: apps.append(_Plaintext(c)) or apps[-1])
    at = [0, 0]

    def data(direction, ts, payload):
        sink.data(direction, ts, at[direction], payload)
        at[direction] += len(payload)

    request = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"
    data(CLIENT, 1, hello_record[:3])  # a header over two deliveries
    data(CLIENT, 2, hello_record[3:])
    data(SERVER, 3, shello_record + shs.record(finished, 22))
    data(CLIENT, 4, chs.record(finished, 22) + cap.record(request, 23))
    big = sap.record(b"A" * 3000, 23)
    data(SERVER, 5, big[:2])  # a body over three deliveries (the header's start first)
    data(SERVER, 6, big[2:1500])
    data(SERVER, 7, big[1500:])
    three = sap.record(b"B" * 10, 23) + sap.record(b"C" * 20, 23) + sap.record(b"D" * 30, 23)
    data(SERVER, 8, three)
    data(SERVER, 9, b"HTTP/1.1 200 OK\r\n")  # not a record: decryption of this side stops
    data(SERVER, 10, sap.record(b"E" * 5, 23))  # (not read: the side stopped)
    d = sink.decryption()
    assert (d.client_records, d.server_records, d.failed_records) == (2, 5, 0)  # Finished + data each way
    (app,) = apps
    server = [(c[2], c[4]) for c in app.calls if c[0] == "data" and c[1] == SERVER]
    assert server == [(7, b"A" * 3000), (8, b"B" * 10), (8, b"C" * 20), (8, b"D" * 30)]
    assert d.note == "server: bytes that are not TLS records; decryption stopped"
    s = sink.session()
    assert s.error == "server: not a TLS record header: type 72, version 84.84, length 20527"  # b"HTTP/"
    assert (s.server_records.application_data, s.client_records.handshake) == (5, 1)
    bursts = [(b.direction, b.start_ns, b.end_ns, b.records) for b in d.bursts]
    # (a TLS 1.3 Finished is application_data outside: a burst of its own)
    assert bursts == [("server", 3, 3, 1), ("client", 4, 4, 2), ("server", 5, 8, 4)]


def test_early_data_beyond_what_is_held_before_the_server_hello_is_counted():
    """0-RTT records come before the ServerHello whose cipher suite keys them (RFC 8446
    §4.2.10): they are held until it, 64 at most (a server's max_early_data_size is 16 KiB in
    practice); one more is counted as a record not opened, never an exception. The held ones
    open with CLIENT_EARLY_TRAFFIC_SECRET once the ServerHello is read. A TLS 1.3 connection
    written here with ``cryptography`` (``_Writer``), its ClientHello offering early_data."""
    from qoe.web.decrypt import DecryptingTlsSink
    from qoe.web.keylog import parse_keylog
    from qoe.web.tcp import CLIENT, SERVER, ConnectionId

    cr, sr = bytes(range(32)), bytes(range(32, 64))
    names = ("CLIENT_EARLY_TRAFFIC_SECRET", "CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET",
             "CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0")
    secrets = {name: bytes([k + 1]) * 32 for k, name in enumerate(names)}
    log = parse_keylog("".join(f"{n} {cr.hex()} {s.hex()}\n" for n, s in secrets.items()))
    versions = (43).to_bytes(2, "big")  # §4.2.1 supported_versions; §4.2.10 early_data (42), empty
    extensions = versions + b"\x00\x03\x02\x03\x04" + (42).to_bytes(2, "big") + b"\x00\x00"
    hello = (b"\x03\x03" + cr + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00"
             + len(extensions).to_bytes(2, "big") + extensions)
    shello = (b"\x03\x03" + sr + b"\x00" + b"\x13\x01" + b"\x00"
              + (6).to_bytes(2, "big") + versions + b"\x00\x02\x03\x04")
    early = _Writer(secrets["CLIENT_EARLY_TRAFFIC_SECRET"])
    conn = ConnectionId(("192.0.2.1", 50000), ("198.51.100.2", 443), 0, 0, True)
    sink = DecryptingTlsSink(conn, log, http1=_Plaintext)
    at = [0, 0]

    def data(direction, ts, payload):
        sink.data(direction, ts, at[direction], payload)
        at[direction] += len(payload)

    data(CLIENT, 1, b"\x16\x03\x01" + (len(hello) + 4).to_bytes(2, "big") + handshake(1, hello))
    for k in range(65):
        data(CLIENT, 2 + k, early.record(b"x" * 10, 23))
    data(SERVER, 100, b"\x16\x03\x03" + (len(shello) + 4).to_bytes(2, "big") + handshake(2, shello))
    d = sink.decryption()
    assert d.keys_found and (d.client_records, d.client_failed_records) == (64, 1)
