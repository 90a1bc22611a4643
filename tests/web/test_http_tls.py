"""TLS record layer and hellos: timing rules on real captures, edge cases on built bytes.

Real captures: tests/web/http_samples/tls12.pcap and tls13.pcap (make_samples.sh: curl -k
against Python's ssl-wrapped http.server, TLS 1.2 forced with ``--tlsv1.2 --tls-max 1.2``);
which segment holds which record is tshark's view (``tshark -r tls12.pcap -d
tcp.port==8443,tls``: frame 8 "Client Key Exchange, Change Cipher Spec, Encrypted
Handshake Message", frame 9 "Change Cipher Spec, Encrypted Handshake Message", frames 10-11
"Application Data"; tls13.pcap: frame 6 "Server Hello, Change Cipher Spec, Application
Data x4", frame 8 "Change Cipher Spec, Application Data", then application data).
Built bytes follow the layouts of RFC 8446 §4.1.2-§4.1.3 and §5.1, RFC 6066 §3, RFC 7301 §3.1.
"""

from __future__ import annotations

import struct

from web_streams import SAMPLES, Feed, connection_events, play

from qoe.web.http import parse
from qoe.web.tcp import CLIENT, SERVER, ConnectionId
from qoe.web.tls import looks_like_tls

CONN = ConnectionId(("192.0.2.1", 40000), ("192.0.2.2", 443), 3, 500, True)
HRR_RANDOM = bytes.fromhex("CF21AD74E59A6111BE1D8C021E65B891C2A211167ABB8C5E079E09E2C8A8339C")  # RFC 8446 §4.1.3


def u16(n: int) -> bytes:
    return struct.pack("!H", n)


def ext(etype: int, body: bytes) -> bytes:
    return u16(etype) + u16(len(body)) + body


def client_hello(sni="www.example.org", alpn=("h2", "http/1.1"), versions=(0x0304, 0x0303), early=False) -> bytes:
    exts = b""
    if sni is not None:  # RFC 6066 §3: ServerNameList of (name_type 0 host_name, HostName)
        name = sni.encode()
        entry = b"\x00" + u16(len(name)) + name
        exts += ext(0, u16(len(entry)) + entry)
    if alpn:  # RFC 7301 §3.1: ProtocolNameList of 8-bit-length names
        names = b"".join(bytes([len(p)]) + p.encode() for p in alpn)
        exts += ext(16, u16(len(names)) + names)
    if versions:  # RFC 8446 §4.2.1: 8-bit length, 16-bit versions
        vs = b"".join(u16(v) for v in versions)
        exts += ext(43, bytes([len(vs)]) + vs)
    if early:
        exts += ext(42, b"")
    body = u16(0x0303) + b"\x11" * 32 + b"\x20" + b"\x22" * 32 + u16(4) + u16(0x1301) + u16(0x1302) + b"\x01\x00"
    body += u16(len(exts)) + exts
    return b"\x01" + len(body).to_bytes(3, "big") + body


def server_hello(version=0x0304, suite=0x1301, alpn=None, random=b"\x33" * 32, psk=False) -> bytes:
    exts = b""
    if version == 0x0304:
        exts += ext(43, u16(0x0304))
    if alpn:
        exts += ext(16, u16(len(alpn) + 1) + bytes([len(alpn)]) + alpn.encode())
    if psk:
        exts += ext(41, u16(0))
    legacy = 0x0303 if version >= 0x0303 else version
    body = u16(legacy) + random + b"\x20" + b"\x22" * 32 + u16(suite) + b"\x00" + u16(len(exts)) + exts
    return b"\x02" + len(body).to_bytes(3, "big") + body


def record(ctype: int, fragment: bytes, version=0x0303) -> bytes:
    return bytes([ctype]) + u16(version) + u16(len(fragment)) + fragment  # RFC 8446 §5.1


class TlsSink:
    """The TLS parser through the public :func:`qoe.web.http.parse` (``protocol="tls"``): a
    byte sink that records its events, and whose ``session()`` is the parsed ``tls``."""

    def __init__(self, conn):
        self.conn, self.events = conn, []

    def data(self, d, ts, off, item):
        self.events.append(("data", d, ts, off, item))

    def gap(self, d, ts, off, item):
        self.events.append(("gap", d, ts, off, item))

    def close(self, d, ts, item):
        self.events.append(("close", d, ts, 0, item))

    def session(self):
        return parse(self.conn, self.events, protocol="tls").tls


def tls13_flow(sink, *, early=False, ts0=0):
    """A TLS 1.3 handshake in compatibility mode (RFC 8446 §2, Appendix D.4) with times."""
    sink.data(CLIENT, ts0 + 10, 0, record(22, client_hello(early=early), version=0x0301))
    c_off = len(record(22, client_hello(early=early), version=0x0301))
    if early:
        sink.data(CLIENT, ts0 + 11, c_off, record(23, b"e" * 40))  # 0-RTT data
        c_off += 45
    srv = record(22, server_hello()) + record(20, b"\x01") + record(23, b"E" * 30) + record(23, b"F" * 50)
    sink.data(SERVER, ts0 + 20, 0, srv)
    fin = record(20, b"\x01") + record(23, b"f" * 53)
    sink.data(CLIENT, ts0 + 30, c_off, fin)
    sink.data(CLIENT, ts0 + 31, c_off + len(fin), record(23, b"GET" * 20))
    sink.data(SERVER, ts0 + 40, len(srv), record(23, b"T" * 200) + record(23, b"R" * 300))
    return sink.session() if hasattr(sink, "session") else None


def test_sni_alpn_and_versions_from_a_built_client_hello():
    s = tls13_flow(TlsSink(CONN))
    assert s.server_name == "www.example.org" and s.alpn_offered == ("h2", "http/1.1")
    assert s.offered_versions == (0x0304, 0x0303) and s.version == 0x0304 and s.version_name == "TLS 1.3"
    assert s.cipher_suite == 0x1301 and s.alpn is None and s.record_version == 0x0301
    assert s.client_records.handshake == 1 and s.client_records.change_cipher_spec == 1
    assert s.server_records.application_data == 4 and s.server_records.application_data_bytes == 30 + 50 + 200 + 300


def test_tls13_timing_rules():
    s = tls13_flow(TlsSink(CONN))
    assert (s.client_hello_ns, s.server_hello_ns) == (10, 20)
    assert s.client_finished_ns == 30 and s.server_finished_ns is None and not s.handshake_visible
    assert s.handshake_end_ns == 30 and s.handshake_ns == 20
    assert s.client_first_app_data_ns == 31 and s.server_first_app_data_ns == 40
    assert s.time_to_first_app_data_ns == 21 and s.complete and s.resumed is False


def test_tls13_early_data_is_not_the_finished():
    s = tls13_flow(TlsSink(CONN), early=True)
    assert s.early_data_offered and s.client_finished_ns == 30 and s.handshake_ns == 20


def test_tls12_visible_finished_on_a_real_capture():
    conn, evs = connection_events(SAMPLES / "tls12.pcap")[0]
    sink = TlsSink(conn)
    play(evs, sink)
    s = sink.session()
    client = [e for e in evs if e[0] == "data" and e[1] == CLIENT]
    server = [e for e in evs if e[0] == "data" and e[1] == SERVER]
    # segments: client [ClientHello], [CKE, CCS, Finished], [app data]...; server
    # [ServerHello..Done], [CCS, Finished], [app data]...
    assert s.client_hello_ns == client[0][2] and s.server_hello_ns == server[0][2]
    assert s.client_finished_ns == client[1][2] and s.server_finished_ns == server[1][2]
    assert s.handshake_visible and s.handshake_end_ns == server[1][2]
    assert s.client_first_app_data_ns == client[2][2] and s.server_first_app_data_ns == server[2][2]
    assert s.alpn == "http/1.1" and s.version_name == "TLS 1.2" and s.resumed is False and s.complete
    assert s.client_bytes == sum(len(e[4]) for e in client) and s.server_bytes == sum(len(e[4]) for e in server)


def test_tls13_rules_on_a_real_capture():
    conn, evs = connection_events(SAMPLES / "tls13.pcap")[0]
    sink = TlsSink(conn)
    play(evs, sink)
    s = sink.session()
    client = [e for e in evs if e[0] == "data" and e[1] == CLIENT]
    server = [e for e in evs if e[0] == "data" and e[1] == SERVER]
    # client segment 1 is [CCS, Finished]; the next one the HTTP request
    assert s.client_finished_ns == client[1][2] and s.client_first_app_data_ns == client[2][2]
    # the server's first record after the client's Finished
    assert s.server_first_app_data_ns == min(e[2] for e in server if e[2] > client[1][2])
    assert not s.handshake_visible and s.version_name == "TLS 1.3"


def test_one_byte_at_a_time_and_a_hello_over_two_records():
    hello = client_hello(sni="split.example")
    stream = record(22, hello[:50], version=0x0301) + record(22, hello[50:], version=0x0301)
    sink = TlsSink(CONN)
    for i, b in enumerate(stream):
        sink.data(CLIENT, 1000 + i, i, bytes([b]))
    s = sink.session()
    assert s.server_name == "split.example" and s.client_hello_ns == 1000
    assert s.client_records.handshake == 2 and s.client_bytes == len(stream)


def test_hello_retry_request():
    sink = TlsSink(CONN)
    ch1 = record(22, client_hello(), version=0x0301)
    sink.data(CLIENT, 10, 0, ch1)
    hrr = record(22, server_hello(random=HRR_RANDOM)) + record(20, b"\x01")
    sink.data(SERVER, 20, 0, hrr)
    ch2 = record(20, b"\x01") + record(22, client_hello(sni="again.example"))
    sink.data(CLIENT, 30, len(ch1), ch2)
    sink.data(SERVER, 40, len(hrr), record(22, server_hello(suite=0x1302)) + record(23, b"x" * 40))
    sink.data(CLIENT, 50, len(ch1) + len(ch2), record(23, b"f" * 40))
    s = sink.session()
    assert s.hello_retry and s.version == 0x0304 and s.cipher_suite == 0x1302 and s.server_hello_ns == 40
    assert s.client_hello_ns == 10 and s.server_name == "www.example.org"  # the first hello's
    assert s.client_finished_ns == 50 and s.handshake_ns == 40


def test_gap_inside_a_record_is_skipped_but_not_in_a_header():
    sink = TlsSink(CONN)
    ch = record(22, client_hello(), version=0x0301)
    sink.data(CLIENT, 1, 0, ch)
    sink.data(SERVER, 2, 0, record(22, server_hello(version=0x0303, alpn="http/1.1")))
    app = record(23, b"a" * 100)
    sink.data(CLIENT, 3, len(ch), app[:20])
    sink.gap(CLIENT, 4, len(ch) + 20, 50)
    sink.data(CLIENT, 5, len(ch) + 70, app[70:] + record(23, b"b" * 10))
    s = sink.session()
    assert s.client_records.application_data == 2 and s.error is None and s.client_missing_bytes == 50
    sink.gap(CLIENT, 6, len(ch) + len(app) + 15, 3)  # a header is lost: stop
    sink.data(CLIENT, 7, len(ch) + len(app) + 18, record(23, b"c" * 10))
    s = sink.session()
    assert s.client_records.application_data == 2 and "record header" in s.error
    assert s.alpn == "http/1.1" and s.version_name == "TLS 1.2"


def test_bytes_that_are_not_records_stop_parsing():
    sink = TlsSink(CONN)
    sink.data(CLIENT, 1, 0, record(22, client_hello()) + b"GET / HTTP/1.1\r\n\r\n")
    s = sink.session()
    assert s.server_name == "www.example.org" and "not a TLS record header" in s.error and not s.complete


def test_tls12_abbreviated_handshake_is_resumed():
    sink = TlsSink(CONN)
    ch = record(22, client_hello(versions=()))
    sink.data(CLIENT, 10, 0, ch)
    srv = record(22, server_hello(version=0x0303)) + record(20, b"\x01") + record(22, b"F" * 40)
    sink.data(SERVER, 20, 0, srv)
    sink.data(CLIENT, 30, len(ch), record(20, b"\x01") + record(22, b"f" * 40) + record(23, b"GET"))
    s = sink.session()
    assert s.resumed and s.server_finished_ns == 20 and s.client_finished_ns == 30 and s.handshake_end_ns == 30
    assert s.offered_versions == (0x0303,) and s.handshake_visible


def test_sniffing_sends_tls_to_the_tls_parser():
    assert looks_like_tls(b"\x16\x03\x01") and looks_like_tls(b"\x16") is None and looks_like_tls(b"\x17\x03") is False
    s = Feed(CONN)
    tls13_flow(s)
    r = s.result()
    assert r.protocol == "tls" and r.tls.server_name == "www.example.org" and r.transactions == ()
    assert r.tls.to_dict()["client_records"]["handshake"] == 1
