"""Test scaffolding for the web parsers: a capture's TCP payload as ByteSink deliveries.

This is *not* :mod:`qoe.web.tcp`: it serves the small loopback captures of
``tests/web/http_samples`` (made by its ``make_samples.sh`` on a private loopback, where
nothing is lost or reordered) by delivering each segment's payload at its sequence offset,
so that the HTTP/TLS parsers can be tested on real bytes without TCP reassembly.
A segment that starts past the next expected offset would need reassembly: it raises.
"""

from __future__ import annotations

from pathlib import Path

from qoe.capture import TCP_ACK, TCP_FIN, TCP_RST, TCP_SYN, read_packets
from qoe.web.http import parse
from qoe.web.tcp import CLIENT, SERVER, ConnectionId

SAMPLES = Path(__file__).resolve().parent / "web" / "http_samples"

# (kind, direction, ts_ns, offset, payload | how)
Event = tuple[str, int, int, int, object]


def connection_events(path: str | Path) -> list[tuple[ConnectionId, list[Event]]]:
    """Each connection of a gap-free capture and its data/close events in capture order."""
    conns: dict[tuple, dict] = {}
    order: list[tuple] = []
    last_ts = 0
    for p in read_packets(path):
        if p.tcp is None:
            continue
        last_ts = p.ts_ns
        a, b = (p.src, p.sport), (p.dst, p.dport)
        key = (a, b) if (a, b) in conns else (b, a) if (b, a) in conns else None
        flags = p.tcp.flags
        if key is None:
            if not (flags & TCP_SYN and not flags & TCP_ACK):
                continue  # a connection that began before the capture: not in these samples
            key = (a, b)
            conns[key] = {"id": ConnectionId(a, b, len(order), p.ts_ns, True), "isn": {}, "next": {}, "closed": set(), "ev": []}
            order.append(key)
        c = conns[key]
        d = CLIENT if (a, b) == key else SERVER
        if flags & TCP_SYN:
            c["isn"][d] = p.tcp.seq
            c["next"][d] = 0
            continue
        if p.payload and d in c["isn"]:
            off = (p.tcp.seq - c["isn"][d] - 1) % 2**32
            if off > c["next"][d]:
                raise AssertionError(f"{path}: out-of-order segment in frame {p.index}; these helpers need none")
            new = p.payload[c["next"][d] - off:]
            if new:
                c["ev"].append(("data", d, p.ts_ns, c["next"][d], bytes(new)))
                c["next"][d] += len(new)
        if flags & (TCP_FIN | TCP_RST) and d not in c["closed"]:
            c["closed"].add(d)
            c["ev"].append(("close", d, p.ts_ns, 0, "fin" if flags & TCP_FIN else "rst"))
    out = []
    for key in order:
        c = conns[key]
        for d in (CLIENT, SERVER):
            if d not in c["closed"]:
                c["ev"].append(("close", d, last_ts, 0, "end-of-capture"))
        out.append((c["id"], c["ev"]))
    return out


def play(events, sink) -> None:
    """Apply events to a ByteSink."""
    for kind, d, ts, off, item in events:
        if kind == "data":
            sink.data(d, ts, off, item)
        elif kind == "gap":
            sink.gap(d, ts, off, item)
        else:
            sink.close(d, ts, item)


def results(path, **kw):
    """Each connection of ``path`` parsed by :func:`qoe.web.http.parse` (``kw``: its options)."""
    return [parse(conn, events, **kw) for conn, events in connection_events(path)]


class Feed:
    """Records ByteSink calls as events; :meth:`result` parses them with :func:`qoe.web.http.parse`."""

    def __init__(self, conn, **kw):
        self.conn, self.kw, self.events = conn, kw, []

    def data(self, direction, ts, offset, payload):
        self.events.append(("data", direction, ts, offset, payload))

    def gap(self, direction, ts, offset, length):
        self.events.append(("gap", direction, ts, offset, length))

    def close(self, direction, ts, how):
        self.events.append(("close", direction, ts, 0, how))

    def result(self):
        return parse(self.conn, self.events, **self.kw)
