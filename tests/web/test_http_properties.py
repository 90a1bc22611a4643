"""Property: how the same bytes are split into deliveries does not change any result.

A delivery split into pieces keeps its timestamp for every piece (that is what TCP
reassembly does when one segment's bytes become deliverable at once). Transactions, TLS
sessions and notes must be identical to those of the unsplit deliveries. Inputs: every
sample capture of tests/web/http_samples (see its make_samples.sh) and a few built streams
(pipelined HEAD, gaps in a body and in a head, a protocol switch).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from web_streams import SAMPLES, connection_events

from qoe.web.http import parse
from qoe.web.tcp import CLIENT, SERVER, ConnectionId

CONN = ConnectionId(("192.0.2.1", 40000), ("192.0.2.2", 80), 0, 0, True)


def built() -> dict[str, list]:
    req = b"HEAD /x HTTP/1.1\r\nHost: h\r\n\r\nGET /y HTTP/1.1\r\nHost: h\r\n\r\nPOST /z HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nbody"
    resp = (b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n"
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: 1\r\n\r\n"
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nabc")
    gap_body = b"GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n"
    r1 = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
    r2 = b"HTTP/1.0 200 OK\r\n\r\nuntil close"
    up_c = b"CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n\x16\x03\x01\x00\x02hi"
    up_s = b"HTTP/1.1 200 OK\r\n\r\n\x16\x03\x03\x00\x02ok"
    return {
        "pipelined-head-chunked-continue": [
            ("data", CLIENT, 1, 0, req), ("data", SERVER, 2, 0, resp),
            ("close", CLIENT, 3, 0, "fin"), ("close", SERVER, 3, 0, "fin"),
        ],
        "gap-in-body-then-close-delimited": [
            ("data", CLIENT, 1, 0, gap_body), ("data", SERVER, 2, 0, r1 + b"x" * 30),
            ("gap", SERVER, 3, len(r1) + 30, 40), ("data", SERVER, 4, len(r1) + 70, b"y" * 30 + r2),
            ("close", SERVER, 5, 0, "fin"), ("close", CLIENT, 5, 0, "fin"),
        ],
        "gap-in-head": [
            ("data", CLIENT, 1, 0, gap_body), ("data", SERVER, 2, 0, r1[:10]),
            ("gap", SERVER, 3, 10, 5), ("data", SERVER, 4, 15, r1[15:] + b"z" * 100 + r2),
        ],
        "response-before-request": [
            ("data", SERVER, 1, 0, resp), ("data", CLIENT, 2, 0, req), ("close", CLIENT, 3, 0, "end-of-capture"),
        ],
        "connect": [("data", CLIENT, 1, 0, up_c), ("data", SERVER, 2, 0, up_s), ("close", SERVER, 3, 0, "rst")],
    }


CASES = {f"{p.stem}-{i}": (conn, evs) for p in sorted(SAMPLES.glob("*.pcap")) for i, (conn, evs) in enumerate(connection_events(p))}
CASES.update({name: (CONN, evs) for name, evs in built().items()})


def outcome(conn, events):
    return parse(conn, events)


def split(events, cuts):
    """Cut each data delivery at the given fractions of its length (same ts for the pieces)."""
    out = []
    for i, e in enumerate(events):
        kind, d, ts, off, item = e
        if kind != "data" or len(item) < 2:
            out.append(e)
            continue
        points = sorted({int(f * len(item)) for f in cuts[i % len(cuts)]} - {0, len(item)})
        last = 0
        for p in points + [len(item)]:
            out.append(("data", d, ts, off + last, item[last:p]))
            last = p
    return out


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cuts=st.lists(st.lists(st.floats(0, 1, exclude_max=True), max_size=12), min_size=1, max_size=6))
def test_any_split_gives_the_same_result(name, cuts):
    conn, events = CASES[name]
    assert outcome(conn, split(events, cuts)) == outcome(conn, events)


@pytest.mark.parametrize("name", ["keepalive-0", "tls13-0", "pipelined-head-chunked-continue"])
def test_byte_by_byte_gives_the_same_result(name):
    conn, events = CASES[name]
    fine = []
    for kind, d, ts, off, item in events:
        if kind == "data":
            fine += [("data", d, ts, off + i, item[i:i + 1]) for i in range(len(item))]
        else:
            fine.append((kind, d, ts, off, item))
    assert outcome(conn, fine) == outcome(conn, events)
