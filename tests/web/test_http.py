"""HTTP/1.x transactions from byte streams: framing, pairing, gaps, timestamps, errors.

Real bytes come from tests/web/http_samples/*.pcap, made by its make_samples.sh (curl
7.88.1 and a raw socket against Python's http.server on a private loopback; the exact
commands are in the script). Expected values come from what the script served (file
sizes, endpoint bodies in server.py), from the bytes themselves (where a head ends is
found with ``bytes.index(b"\\r\\n\\r\\n")``), or from the RFC text quoted at the test.
Methods, targets and status codes are compared with tshark in test_http_tshark.py.
"""

from __future__ import annotations

import pytest
from web_streams import SAMPLES, Feed, connection_events, results

from qoe.web.http import HttpLimits, Transaction
from qoe.web.http import parse as parse_events
from qoe.web.tcp import CLIENT, SERVER, ConnectionId


def HttpSink(conn, **limits):  # noqa: N802 - reads like the parser it feeds
    """Events for the HTTP/1.x parser (no sniffing), parsed by qoe.web.http.parse."""
    return Feed(conn, protocol="http", limits=HttpLimits(**limits))


def connection_sink(conn):
    """Events for the protocol-sniffing path, parsed by qoe.web.http.parse."""
    return Feed(conn)


def play(events, sink):
    sink.events.extend(events)

CONN = ConnectionId(("192.0.2.1", 40000), ("192.0.2.2", 80), 7, 1_000, True)

# bodies served by make_samples.sh / server.py
A_TXT, B_TXT, C_TXT = 9 * 200, 9 * 400, 9 * 600  # "object a\n" * 200, ... * 400, ... * 600
STYLE_CSS = 19 * 60  # "p { color: #333; }\n" * 60
CHUNKS = [7, 8 * 40, 6]  # server.py /chunked parts: "hello, ", "chunked " * 40, "world\n"
CLOSE_BODY = 24 * 50  # "until the server closes\n" * 50


def sample(name: str, index: int = 0):
    """(ConnectionId, events) of connection ``index`` of a sample capture."""
    return connection_events(SAMPLES / f"{name}.pcap")[index]


def parse(name: str, index: int = 0, *, events=None) -> tuple[Transaction, ...]:
    conn, evs = sample(name, index)
    sink = HttpSink(conn)
    play(evs if events is None else events, sink)
    return sink.result().transactions


def stream(events, direction) -> bytes:
    return b"".join(e[4] for e in events if e[0] == "data" and e[1] == direction)


def head_len(data: bytes, start: int = 0) -> int:
    return data.index(b"\r\n\r\n", start) + 4 - start


def feed(sink, client: bytes, server: bytes, *, how: str = "fin") -> None:
    sink.data(CLIENT, 10, 0, client)
    sink.data(SERVER, 20, 0, server)
    sink.close(CLIENT, 30, how)
    sink.close(SERVER, 30, how)


# -- framing ---------------------------------------------------------------------------


def test_content_length_keep_alive_three_requests():
    conn, evs = sample("keepalive")
    txs = parse("keepalive")
    server = stream(evs, SERVER)
    assert [t.target for t in txs] == ["/a.txt", "/b.txt", "/c.txt"]
    assert [t.sequence for t in txs] == [0, 1, 2]
    assert [t.reused for t in txs] == [False, True, True]
    assert [t.response_body_bytes for t in txs] == [A_TXT, B_TXT, C_TXT]
    assert [t.response_body_wire_bytes for t in txs] == [A_TXT, B_TXT, C_TXT]  # no framing overhead
    assert [t.content_length for t in txs] == [A_TXT, B_TXT, C_TXT]
    assert all(t.complete and t.partial is None and t.error is None for t in txs)
    assert txs[0].response_header_bytes == head_len(server)
    # the wire sizes of the three responses add up to the server's bytes
    assert sum(t.response_header_bytes + t.response_body_wire_bytes for t in txs) == len(server)
    client = stream(evs, CLIENT)
    assert sum(t.request_header_bytes + t.request_body_wire_bytes for t in txs) == len(client)
    assert all(t.connection == conn.index and t.server == conn.server and t.client == conn.client for t in txs)
    assert txs[0].started_ns == conn.first_ts_ns and txs[1].started_ns == txs[1].request_start_ns


def test_chunked_with_extension_and_trailer():
    conn, evs = sample("framing")
    tx = parse("framing")[0]
    server = stream(evs, SERVER)
    h = head_len(server)
    # RFC 9112 §7.1: chunk = size [ext] CRLF data CRLF; last-chunk, trailer section, CRLF
    end = server.index(b"0\r\nX-Checksum: 1234\r\n\r\n") + len(b"0\r\nX-Checksum: 1234\r\n\r\n")
    assert tx.transfer_encoding == "chunked"
    assert tx.response_body_bytes == sum(CHUNKS)
    assert tx.response_body_wire_bytes == end - h
    assert tx.response_header_bytes == h
    assert tx.complete


def test_204_has_no_body_and_the_next_response_follows():
    txs = parse("framing")
    assert txs[1].status == 204 and txs[1].response_body_bytes == 0 and txs[1].complete
    assert txs[2].target == "/close" and txs[2].sequence == 2


def test_close_delimited_body_ends_with_the_fin():
    for name, index, seq in (("framing", 0, 2), ("http10", 3, 0)):
        tx = parse(name, index)[seq]
        assert tx.content_length is None and tx.transfer_encoding is None
        assert tx.response_body_bytes == CLOSE_BODY == tx.response_body_wire_bytes
        assert tx.complete, (name, tx.partial)


def test_close_delimited_body_cut_by_the_end_of_the_capture_is_partial():
    sink = HttpSink(CONN)
    feed(sink, b"GET / HTTP/1.1\r\nHost: h\r\n\r\n", b"HTTP/1.0 200 OK\r\n\r\nabc", how="end-of-capture")
    tx = sink.result().transactions[0]
    assert tx.response_body_bytes == 3 and not tx.complete and "capture ended" in tx.partial


def test_http10_connection_per_object_head_and_304():
    get, head, cond, _close = (parse("http10", i)[0] for i in range(4))
    assert get.response_version == "1.0" and get.request_version == "1.1"
    # RFC 9110 §9.3.2: a HEAD response carries the GET's Content-Length but no body
    assert head.method == "HEAD" and head.content_length == get.content_length == get.response_body_bytes
    assert head.response_body_bytes == 0 and head.complete
    # RFC 9110 §15.4.5: 304 has no content
    assert cond.status == 304 and cond.response_body_bytes == 0 and cond.complete
    assert not get.reused and not head.reused


def test_head_response_paired_by_method_in_a_pipeline():
    # without knowing the first request was HEAD, its Content-Length would swallow the
    # second response (RFC 9112 §6.3 item 1)
    client = b"HEAD /x HTTP/1.1\r\nHost: h\r\n\r\nGET /y HTTP/1.1\r\nHost: h\r\n\r\n"
    server = b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
    sink = HttpSink(CONN)
    feed(sink, client, server)
    head, get = sink.result().transactions
    assert (head.method, head.response_body_bytes, head.content_length) == ("HEAD", 0, 50)
    assert (get.method, get.response_body_bytes, get.complete) == ("GET", 5, True)


def test_pipelined_requests_paired_in_order():
    conn, evs = sample("pipelined")
    # the three requests left in one segment, before any response
    assert [e[1] for e in evs if e[0] == "data"][0] == CLIENT and len(stream(evs, CLIENT)) == len(
        [e for e in evs if e[0] == "data" and e[1] == CLIENT][0][4]
    )
    txs = parse("pipelined")
    assert [t.target for t in txs] == ["/a.txt", "/style.css", "/b.txt"]
    assert [t.response_body_bytes for t in txs] == [A_TXT, STYLE_CSS, B_TXT]
    assert [t.content_type for t in txs] == ["text/plain", "text/css", "text/plain"]
    assert len({t.request_start_ns for t in txs}) == 1  # same segment
    assert txs[0].response_start_ns < txs[1].response_start_ns < txs[2].response_start_ns
    assert all(t.complete for t in txs)


def test_100_continue():
    conn, evs = sample("continue")
    tx = parse("continue")[0]
    assert tx.method == "POST" and tx.interim_statuses == (100,) and tx.status == 201
    assert tx.request_body_bytes == 5000 and tx.request_missing_bytes == 0
    assert tx.response_body_bytes == len(b"received 5000 bytes\n")
    server_deliveries = [e for e in evs if e[0] == "data" and e[1] == SERVER]
    assert server_deliveries[0][4].startswith(b"HTTP/1.1 100 Continue")
    # time to first byte counts from the interim response, which came before the body was sent
    assert tx.response_start_ns == server_deliveries[0][2] < tx.request_end_ns
    assert tx.complete


def test_response_before_its_request_is_held_then_paired():
    sink = HttpSink(CONN)
    sink.data(SERVER, 5, 0, b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx")
    sink.data(CLIENT, 9, 0, b"HEAD / HTTP/1.1\r\nHost: h\r\n\r\n")
    tx = sink.result().transactions[0]
    # a HEAD response has no body: the held byte "x" is not its body but garbage after it
    assert tx.method == "HEAD" and tx.status == 200 and tx.response_start_ns == 5


def test_connect_switches_and_stops_parsing():
    sink = HttpSink(CONN)
    sink.data(CLIENT, 1, 0, b"CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n\x16\x03\x01\x00\x05hello")
    sink.data(SERVER, 2, 0, b"HTTP/1.1 200 Connection established\r\n\r\n\x16\x03\x03\x00\x01x")
    sink.data(CLIENT, 3, 64, b"GET / HTTP/1.1\r\n\r\n")  # tunnel bytes, not a request
    r = sink.result()
    (tx,) = r.transactions
    assert tx.upgraded == "CONNECT example.org:443" and tx.status == 200 and tx.url is None
    assert "switched protocols" in r.note and r.error is None


def test_denied_upgrade_keeps_parsing():
    client = (b"GET /ws HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"
              b"GET /next HTTP/1.1\r\nHost: h\r\n\r\n")
    server = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nnoHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
    sink = HttpSink(CONN)
    feed(sink, client, server)
    a, b = sink.result().transactions
    assert a.upgraded is None and b.target == "/next" and b.complete


def test_upgrade_101_switches():
    client = b"GET /ws HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n\x81\x05hello"
    server = b"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n\x81\x02hi"
    sink = HttpSink(CONN)
    feed(sink, client, server)
    r = sink.result()
    (tx,) = r.transactions
    assert tx.status == 101 and tx.upgraded == "websocket" and r.error is None


def test_http10_keep_alive_is_followed():
    # h11 closes HTTP/1.0 connections; a fresh state machine per message follows keep-alive
    client = b"GET /1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
    server = (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\na"
              b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nbb")
    sink = HttpSink(CONN)
    feed(sink, client, server)
    txs = sink.result().transactions
    assert [t.response_body_bytes for t in txs] == [1, 2] and all(t.complete for t in txs)
    assert txs[0].host == "192.0.2.2" and txs[0].url == "http://192.0.2.2/1"  # no Host: the address


# -- gaps ------------------------------------------------------------------------------


def _with_gap(events, direction, at: int, length: int):
    """Replace bytes [at, at+length) of ``direction`` by a gap (split deliveries as needed)."""
    out = []
    for e in events:
        kind, d, ts, off, item = e
        if kind != "data" or d != direction or off + len(item) <= at or off >= at + length:
            out.append(e)
            continue
        if off < at:
            out.append(("data", d, ts, off, item[: at - off]))
        g0 = max(off, at)
        g1 = min(off + len(item), at + length)
        if out and out[-1][0] == "gap" and out[-1][1] == d:
            k, dd, t0, o0, n0 = out.pop()
            out.append(("gap", d, t0, o0, n0 + g1 - g0))
        else:
            out.append(("gap", d, ts, g0, g1 - g0))
        if off + len(item) > at + length:
            out.append(("data", d, ts, at + length, item[at + length - off:]))
    return out


def test_gap_inside_a_content_length_body_is_skipped():
    conn, evs = sample("keepalive")
    whole = parse("keepalive")
    server = stream(evs, SERVER)
    second = server.index(b"HTTP/1.1", 10)
    at = second + head_len(server, second) + 1000  # inside b.txt's body
    txs = parse("keepalive", events=_with_gap(evs, SERVER, at, 700))
    assert txs[1].response_missing_bytes == 700
    assert txs[1].response_body_bytes == B_TXT - 700 and txs[1].response_body_wire_bytes == B_TXT
    assert not txs[1].complete and "700 body bytes missing" in txs[1].partial
    assert txs[0] == whole[0] and txs[2] == whole[2]  # parsing went on with the next response


def test_gap_in_a_response_head_stops_that_direction():
    conn, evs = sample("keepalive")
    server = stream(evs, SERVER)
    second = server.index(b"HTTP/1.1", 10)
    sink = HttpSink(conn)
    play(_with_gap(evs, SERVER, second + 20, 30), sink)
    r = sink.result()
    a, b, c = r.transactions
    assert a.complete
    assert b.status is None and "gap of 30 bytes in a message head" in b.partial and not b.complete
    assert c.status is None and not c.complete and c.method == "GET"  # requests still parsed
    assert "server bytes not parsed" in r.note


def test_gap_in_a_request_head():
    conn, evs = sample("keepalive")
    client = stream(evs, CLIENT)
    second = client.index(b"GET", 10)
    sink = HttpSink(conn)
    play(_with_gap(evs, CLIENT, second + 5, 10), sink)
    txs = sink.result().transactions
    assert txs[0].complete
    # the cut request keeps its start time; its response is still paired with it
    assert txs[1].method is None and "gap of 10 bytes in a message head" in txs[1].partial
    assert txs[1].request_start_ns is not None and txs[1].status == 200
    # the third request was never parsed: its response is an answer to an unseen request
    assert txs[2].method is None and txs[2].partial == "request not seen" and txs[2].status == 200


def test_gap_in_a_chunked_body_stops():
    conn, evs = sample("framing")
    server = stream(evs, SERVER)
    txs = parse("framing", events=_with_gap(evs, SERVER, head_len(server) + 50, 10))
    assert "chunked body" in txs[0].partial and not txs[0].complete
    assert txs[1].status is None and txs[2].status is None


def test_gap_across_the_end_of_a_body_stops():
    client = b"GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n"
    sink = HttpSink(CONN)
    sink.data(CLIENT, 1, 0, client)
    first = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"
    sink.data(SERVER, 2, 0, first + b"01234")
    sink.gap(SERVER, 3, len(first) + 5, 20)  # 5 body bytes + 15 of the next head
    sink.data(SERVER, 4, len(first) + 25, b"Length: 0\r\n\r\n")
    a, b = sink.result().transactions
    assert a.response_missing_bytes == 5 and a.response_body_bytes == 5 and not a.complete
    assert b.status is None


def test_gap_inside_a_close_delimited_body_is_skipped():
    sink = HttpSink(CONN)
    sink.data(CLIENT, 1, 0, b"GET / HTTP/1.0\r\n\r\n")
    head = b"HTTP/1.0 200 OK\r\n\r\n"
    sink.data(SERVER, 2, 0, head + b"abc")
    sink.gap(SERVER, 3, len(head) + 3, 100)
    sink.data(SERVER, 4, len(head) + 103, b"xyz")
    sink.close(SERVER, 5, "fin")
    tx = sink.result().transactions[0]
    assert (tx.response_body_bytes, tx.response_missing_bytes, tx.response_body_wire_bytes) == (6, 100, 106)
    assert tx.response_end_ns == 4 and not tx.complete


# -- errors ----------------------------------------------------------------------------


def test_garbage_is_an_error_not_an_exception(rng):
    junk = rng.integers(0, 256, 4000, dtype="uint8").tobytes()
    sink = HttpSink(CONN)
    feed(sink, junk + b"\r\n\r\n", junk)
    r = sink.result()
    assert r.error is not None and r.error.startswith("request stream:") and r.transactions == ()
    # the sniffing sink does not even try
    s = connection_sink(CONN)
    feed(s, b"\x00" + junk, junk)
    assert s.result().protocol == "unknown" and s.result().transactions == ()


def test_error_in_a_response_is_recorded_on_its_transaction():
    sink = HttpSink(CONN)
    feed(sink, b"GET / HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n", b"HTTP/1.1 abc nonsense\r\n\r\n")
    r = sink.result()
    a, b = r.transactions
    assert a.error is not None and "response stream" in a.error and not a.complete
    assert b.status is None and r.error == a.error


def test_head_longer_than_the_limit_is_an_error_whatever_the_split():
    client = b"GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + b"x" * 500 + b"\r\n\r\n"
    errors = set()
    for step in (len(client), 7, 1):
        sink = HttpSink(CONN, max_head_bytes=256)
        for i in range(0, len(client), step):
            sink.data(CLIENT, 1, i, client[i:i + step])
        errors.add(sink.result().error)
    assert errors == {"request stream: message head longer than max_head_bytes=256"}


# -- timestamps ------------------------------------------------------------------------


def test_one_byte_at_a_time_gives_first_and_last_byte_times():
    conn, evs = sample("keepalive")
    client, server = stream(evs, CLIENT), stream(evs, SERVER)
    sink = HttpSink(conn)
    # byte i of the client stream arrives at 10**6 + i; of the server stream at 2*10**6 + i
    # (each request is sent before its response in the real order: interleave per message)
    txs_whole = parse("keepalive")
    ci = si = 0
    for t in txs_whole:
        for _ in range(t.request_header_bytes + t.request_body_wire_bytes):
            sink.data(CLIENT, 10**6 + ci, ci, client[ci:ci + 1])
            ci += 1
        for _ in range(t.response_header_bytes + t.response_body_wire_bytes):
            sink.data(SERVER, 2 * 10**6 + si, si, server[si:si + 1])
            si += 1
    txs = sink.result().transactions
    ci = si = 0
    for t in txs:
        assert t.request_start_ns == 10**6 + ci
        ci += t.request_header_bytes + t.request_body_wire_bytes
        assert t.request_end_ns == 10**6 + ci - 1
        assert t.response_start_ns == 2 * 10**6 + si
        si += t.response_header_bytes + t.response_body_wire_bytes
        assert t.response_end_ns == 2 * 10**6 + si - 1
        assert t.complete
    assert (ci, si) == (len(client), len(server))


def test_times_are_those_of_the_deliveries_holding_first_and_last_bytes():
    conn, evs = sample("keepalive")
    txs = parse("keepalive")
    server = [e for e in evs if e[0] == "data" and e[1] == SERVER]
    # each response here is a head segment then a body segment (tshark: "TCP segment of a
    # reassembled PDU" then "HTTP 200 OK"), see test_http_tshark.py for the frame times
    assert [t.response_start_ns for t in txs] == [server[0][2], server[2][2], server[4][2]]
    assert [t.response_end_ns for t in txs] == [server[1][2], server[3][2], server[5][2]]


# -- the factory -----------------------------------------------------------------------


def test_sniffing_sorts_the_mix():
    found = [r for name in ("http10", "tls12") for r in results(SAMPLES / f"{name}.pcap")]
    assert [r.protocol for r in found] == ["http"] * 4 + ["tls"]
    assert sum(len(r.transactions) for r in found) == 4 and sum(r.tls is not None for r in found) == 1
    # every HTTP/1.x transaction names its version as ALPN does (RFC 7301 §6)
    assert {t.protocol for r in found for t in r.transactions} <= {"http/1.0", "http/1.1"}
    assert all(t.protocol == "http/" + (t.request_version or t.response_version) for r in found for t in r.transactions)


def test_unknown_protocols_say_why():
    s = connection_sink(CONN)
    s.data(SERVER, 1, 0, b"220 smtp.example ESMTP\r\n")
    assert s.result().protocol == "unknown" and "server sent bytes before the client" in s.result().note
    s = connection_sink(CONN)
    s.data(CLIENT, 1, 0, b"SSH-2.0-OpenSSH_9.2\r\n")
    assert s.result().protocol == "unknown"
    s = connection_sink(CONN)
    s.gap(CLIENT, 1, 0, 100)
    assert s.result().protocol == "unknown" and "missing" in s.result().note
    s = connection_sink(CONN)
    s.data(CLIENT, 1, 0, b"GE")
    assert s.result().protocol == "unknown" and "too few client bytes" in s.result().note


def test_request_line_split_across_deliveries_is_recognised():
    s = connection_sink(CONN)
    for i, ch in enumerate(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"):
        s.data(CLIENT, 100 + i, i, bytes([ch]))
    s.data(SERVER, 200, 0, b"HTTP/1.1 204 No Content\r\n\r\n")
    r = s.result()
    assert r.protocol == "http" and r.transactions[0].status == 204 and r.transactions[0].request_start_ns == 100


@pytest.mark.parametrize("name", ["http10", "keepalive", "pipelined", "continue", "framing", "tls12", "tls13"])
def test_first_delivery_decided_at_once_is_the_held_and_replayed_path(name):
    """The sniffing sink hands a first client delivery that shows its protocol straight to the
    parser (the common case); the same bytes with that delivery's first byte alone (which
    cannot tell: held, then replayed once the rest comes) give the same result."""
    for conn, evs in connection_events(SAMPLES / f"{name}.pcap"):
        k = next(i for i, e in enumerate(evs) if e[0] == "data" and e[1] == CLIENT)
        kind, d, ts, off, data = evs[k]
        split = [*evs[:k], (kind, d, ts, off, data[:1]), (kind, d, ts, off + 1, data[1:]), *evs[k + 1:]]
        whole, held = parse_events(conn, evs), parse_events(conn, split)
        assert whole.protocol in {"http", "tls"} and whole.client_bytes == len(stream(evs, CLIENT))
        assert repr(whole.to_dict()) == repr(held.to_dict())


def test_transaction_to_dict_is_plain():
    tx = parse("continue")[0]
    d = tx.to_dict()
    assert d["interim_statuses"] == [100] and d["status"] == 201 and isinstance(d["request_headers"], list)
    assert tx.ttfb_ns == tx.response_start_ns - tx.request_start_ns


# -- memory ----------------------------------------------------------------------------


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_memory_stays_bounded_for_a_large_body(framing):
    import tracemalloc

    size = 256 * 2**20  # 256 MiB in 64 KiB deliveries; nothing of it may be kept
    block = b"\0" * 65536
    if framing == "chunked":  # RFC 9112 §7.1: one chunk per delivery
        block = b"%x\r\n" % len(block) + block + b"\r\n"
    head = b"HTTP/1.1 200 OK\r\n" + (b"Content-Length: %d\r\n\r\n" % size if framing == "content-length"
                                     else b"Transfer-Encoding: chunked\r\n\r\n")
    sent = [0]

    def events():  # one delivery at a time, as TCP reassembly gives them
        yield "data", CLIENT, 1, 0, b"GET /big HTTP/1.1\r\nHost: h\r\n\r\n"
        yield "data", SERVER, 2, 0, head
        off = len(head)
        for i in range(size // 65536):
            yield "data", SERVER, 3 + i, off, block
            off += len(block)
        if framing == "chunked":
            yield "data", SERVER, 10**9, off, b"0\r\n\r\n"
            off += 5
        sent[0] = off

    tracemalloc.start()
    try:
        res = parse_events(CONN, events(), protocol="http")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    off = sent[0]
    tx = res.transactions[0]
    assert tx.response_body_bytes == size and tx.complete
    assert tx.response_header_bytes + tx.response_body_wire_bytes == off
    assert peak < 1 * 2**20, f"peak {peak} bytes while parsing a {size}-byte body"


def test_repeated_and_mixed_case_fields_take_the_first_value_and_keep_the_names_as_sent():
    # field names are case-insensitive (RFC 9110 §5.1); of a repeated field the first value is
    # the one reported, and the head's pairs are kept as sent
    sink = HttpSink(ConnectionId(("10.0.0.1", 40000), ("10.0.0.2", 80), 0, 0, True))
    client = (b"GET /x HTTP/1.1\r\nhost: a.example\r\nReferer: http://r1/\r\nREFERER: http://r2/\r\n"
              b"user-AGENT: ua1\r\n\r\n")
    server = b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nContent-Type: text/plain\r\nCONTENT-LENGTH: 2\r\n\r\nhi"
    feed(sink, client, server)
    (tx,) = sink.result().transactions
    assert (tx.host, tx.url, tx.referer, tx.user_agent) == ("a.example", "http://a.example/x", "http://r1/", "ua1")
    assert (tx.content_type, tx.content_length, tx.response_body_bytes, tx.complete) == ("text/html", 2, 2, True)
    assert tx.request_headers[1:3] == (("Referer", "http://r1/"), ("REFERER", "http://r2/"))
    assert tx.response_headers[-1] == ("CONTENT-LENGTH", "2")


def test_whole_heads_and_heads_split_byte_by_byte_give_the_same_transactions():
    # a whole head in one delivery is read by httptools, one split into single bytes by h11:
    # the records must not depend on which (RFC 9112 §6.3: HEAD, 204 and 304 without a body)
    client = (b"HEAD /x HTTP/1.1\r\nHost: h\r\n\r\nGET /a HTTP/1.1\r\nHost: h\r\nUser-Agent:  ua \r\n\r\n"
              b"GET /b HTTP/1.1\r\nHost: h\r\n\r\nGET /c HTTP/1.1\r\nHost: h\r\n\r\n")
    server = (b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n"
              b"HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n"
              b"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n"
              b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello")
    whole = HttpSink(CONN)
    feed(whole, client, server)
    split = HttpSink(CONN)
    for d, data in ((CLIENT, client), (SERVER, server)):
        for i in range(len(data)):
            split.data(d, 10 + 10 * d, i, data[i:i + 1])
    split.close(CLIENT, 30, "fin")
    split.close(SERVER, 30, "fin")
    a, b = whole.result().transactions, split.result().transactions
    assert a == b
    assert [(t.method, t.status, t.response_body_bytes, t.complete) for t in a] == [
        ("HEAD", 200, 0, True), ("GET", 204, 0, True), ("GET", 304, 0, True), ("GET", 200, 5, True)]
    assert a[1].user_agent == "ua" and a[3].content_type == "text/plain"
