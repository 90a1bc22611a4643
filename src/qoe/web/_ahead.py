"""Decryption ahead: reading, TCP reassembly and TLS decryption of a capture in a child process.

A page-load pass over a capture decrypted with a key log spends about half its time before
the plaintext (reading, TCP reassembly, the TLS record layer and decryption) and half after
it (HTTP/2 framing and header decompression, HTTP/1.x, the page model), and nothing after
the plaintext reaches back into what comes before it: the layers below only call the
parsers above. So with two cores, the child process of :func:`qoe.capture.read_ahead` runs
the first half whole, the connections' protocol sinks included
(``qoe.web._dispatch.ProtocolSink`` with the TLS parser, ``qoe.web._decrypted``), with a
recorder in the place of each application parser (HTTP/1.x, HTTP/2), and records, in
order, what crosses to the second half:

* each new connection (``NEW``: its id) and, for the page model's bookkeeping, the first
  bytes of each (``STARTED``) and its protocol once decided (``DECIDED``);
* each application parser made (``APP``: which kind) and each call on it (``DATA``,
  ``GAP``, ``CLOSE``: the plaintext of a TLS connection, the bytes of one in clear);
* each chunk's UDP datagrams (``UDP``, for the DNS reader);
* each final connection (``FINAL``: its TCP result and the parts of its protocol result
  that the application parser does not give, ``qoe.web._dispatch.result_parts``).

Here, :func:`connections` makes the same calls on real parsers in the same order and gives
the final connections, each with a sink whose ``result()`` is what the connection's
``ProtocolSink`` gives in one process (``qoe.web._decrypted.tls_result``,
``qoe.web._dispatch.rebased_result`` on the parser's result). What differs: warnings of the
reading and the reassembly are issued here as the batch of calls they came with is taken; an
exception is raised after the calls recorded before it are replayed.

Used by :func:`qoe.web._stream.stream_pages` for a capture file decrypted with a key log,
when reading ahead (``WebOptions(read_ahead=True)``, or None: for a capture of
:data:`AHEAD_MIN_BYTES` or more on two cores). Measured on
``benchmarks/web_h2.py``'s capture (Chromium's HTTP/2 page load 200 times, 33 MB): see
there and docs/guide/web.md. A capture without keys is split by connection instead
(``qoe.web._split``): this split by layer measured slower there (the child's reading and
reassembly alone take longer than the parent's HTTP/1.x and pages, docs/guide/web.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

from qoe.capture import fork_available, read_ahead, read_ahead_pays, tcp_segment_rows
from qoe.web._decrypted import DecryptedTlsParser, tls_apps, tls_result
from qoe.web._dispatch import PARSERS, Parser, ProtocolSink, parsers, rebased_result, result_parts
from qoe.web._http1 import HttpLimits
from qoe.web._sink import ConnectionId
from qoe.web.keylog import KeyLog
from qoe.web.tcp import Connection, TcpLimits, _track

NEW, STARTED, DECIDED, APP, DATA, GAP, CLOSE, UDP, FINAL = range(9)

#: Calls recorded before they go to the parent as one batch (pickled through a socket; about
#: 1.3 MB of plaintext per batch at 1,300-byte TCP segments). On ``benchmarks/web_h2.py``'s
#: capture, 8,192 had the parent wait 0.4-0.5 s for the first batch: wall 1.86-2.25 s in
#: three pairs of runs against 1.54-1.78 s with 1,024 (256 and 512: the same as 1,024).
BATCH_CALLS = 1024

_LIMITS = HttpLimits()  # (ProtocolSink's defaults, as qoe.web._stream makes its sinks)


#: Smallest capture decrypted ahead when ``read_ahead`` is None (bytes on disk): the child does
#: more here than when it only reads, so the split pays on smaller captures than
#: :data:`qoe.capture.READ_AHEAD_MIN_BYTES`. Copies of Chromium's HTTP/2 page
#: (``benchmarks/web_h2.py``'s ``write_capture``), wall time, least of 6, ahead / in one
#: process: 0.8 MB 0.090 / 0.074 s, 1.7 MB 0.143 / 0.145 s, 3.3 MB 0.229 / 0.284 s.
AHEAD_MIN_BYTES = 2 << 20


def usable(capture: Any, keylog: KeyLog | None, read_ahead_option: bool | None) -> bool:
    """Whether to decrypt ``capture`` ahead: a capture file given by its path, with a key log
    holding secrets, read ahead (``read_ahead_option``; None: on two cores or more, for a
    capture of :data:`AHEAD_MIN_BYTES` or more) in a child process
    (:func:`qoe.capture.fork_available`)."""
    if keylog is None or not len(keylog) or not isinstance(capture, (str, os.PathLike)):
        return False
    wanted = read_ahead_pays(capture, AHEAD_MIN_BYTES) if read_ahead_option is None else read_ahead_option
    return wanted and fork_available()


class _Recorder:
    """An application parser's place in the child: each call appended to the log."""

    __slots__ = ("index", "calls")

    def __init__(self, index: int, calls: list[tuple[Any, ...]]) -> None:
        self.index = index
        self.calls = calls

    def data(self, direction: int, ts_ns: int, offset: int, payload: bytes) -> None:
        self.calls.append((DATA, self.index, direction, ts_ns, offset, payload))

    def gap(self, direction: int, ts_ns: int, offset: int, length: int) -> None:
        self.calls.append((GAP, self.index, direction, ts_ns, offset, length))

    def close(self, direction: int, ts_ns: int, how: str) -> None:
        self.calls.append((CLOSE, self.index, direction, ts_ns, how))


class _Log:
    """The child's side: the sink factory of the reassembly and the record of what crosses."""

    def __init__(self, keylog: KeyLog) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.sinks: dict[int, ProtocolSink] = {}  # connection index -> its sink, until final
        apps = (self._maker("http1"), self._maker("h2"))

        def tls(conn: ConnectionId, limits: HttpLimits) -> DecryptedTlsParser:
            return DecryptedTlsParser(conn, keylog, limits, apps=apps)

        makers = {"tls": tls, "h2": self._maker("h2c"), "http": self._maker("http")}
        self.parsers = tuple(Parser(p.name, p.recognise, makers[p.name]) for p in parsers(keylog))

    def _maker(self, kind: str) -> Callable[..., _Recorder]:
        def make(conn: ConnectionId, _limits: Any = None) -> _Recorder:
            self.calls.append((APP, conn.index, kind))
            return _Recorder(conn.index, self.calls)

        return make

    def sink_for(self, cid: ConnectionId) -> ProtocolSink:
        self.calls.append((NEW, cid))
        sink = ProtocolSink(cid, on_started=self._started, on_decided=self._decided, parsers=self.parsers)
        self.sinks[cid.index] = sink
        return sink

    def _started(self, sink: ProtocolSink, ts: int) -> None:
        self.calls.append((STARTED, sink.conn.index, ts))

    def _decided(self, sink: ProtocolSink) -> None:
        self.calls.append((DECIDED, sink.conn.index, sink.protocol))

    def udp(self, batch: Any) -> None:
        self.calls.append((UDP, batch))

    def final(self, conn: Connection) -> None:
        sink = self.sinks.pop(conn.id.index, None)
        self.calls.append((FINAL, conn, result_parts(sink) if sink is not None else None))

    def take(self) -> list[tuple[Any, ...]]:
        calls, self.calls = self.calls, []
        return calls


def _recorded(path: Any, keylog: KeyLog, limits: TcpLimits, with_udp: bool, name: str) -> Iterator[list[tuple[Any, ...]]]:
    """The batches of calls of the first half of the pass over ``path`` (in the child)."""
    log = _Log(keylog)
    rows = tcp_segment_rows(path, udp=log.udp if with_udp else None)
    try:
        for conn in _track(rows, log.sink_for, limits, name):
            log.final(conn)
            if len(log.calls) >= BATCH_CALLS:
                yield log.take()
    except BaseException:
        if log.calls:
            yield log.take()
        raise
    if log.calls:
        yield log.take()


class _Remote:
    """A connection's sink here: its protocol as the child decided it, and its result made
    from the parts the child gave and the application parser replayed here."""

    __slots__ = ("conn", "protocol", "app", "parts")

    def __init__(self, conn: ConnectionId) -> None:
        self.conn = conn
        self.protocol: str | None = None
        self.app: Any = None
        self.parts: tuple[Any, ...] | None = None

    def result(self) -> Any:
        parts = self.parts
        if parts is None:
            return None
        if parts[0] == "whole":
            return parts[1]
        if parts[0] == "tls":
            r = tls_result(self.conn, parts[1], parts[2], self.app)
        else:
            r = self.app.result()
        return r if parts[-1] is None else rebased_result(r, parts[-1])


def _app(kind: str, conn: ConnectionId) -> Any:
    """The real application parser of ``kind`` (what the child recorded the making of)."""
    if kind in ("http1", "h2"):
        http1, h2 = tls_apps(_LIMITS)
        return http1(conn) if kind == "http1" else h2(conn)
    entry = next(p for p in PARSERS if p.name == ("h2" if kind == "h2c" else "http"))
    return entry.make(conn, _LIMITS)


def connections(
    path: Any, keylog: KeyLog, limits: TcpLimits, *, new: Callable[[ConnectionId, Any], Any],
    started: Callable[[Any, int], None], udp: Callable[[Any], None] | None,
) -> Iterator[Connection]:
    """The final connections of the capture at ``path``, reassembled and decrypted in a child
    process, with every call the sinks would have had made here, in order.

    ``new(cid, sink)`` is called with each new connection and the sink that stands for its
    ``ProtocolSink`` (``protocol``, ``result()``); ``started(sink, ts)`` as the
    ``ProtocolSink``'s ``on_started``; ``udp`` with each chunk's UDP datagrams.
    """
    name = os.fspath(path)
    batches = read_ahead(_recorded(path, keylog, limits, udp is not None, name), process=True)
    remotes: dict[int, _Remote] = {}
    apps: dict[int, Any] = {}
    for batch in batches:
        for call in batch:
            kind = call[0]
            if kind == DATA:
                apps[call[1]].data(call[2], call[3], call[4], call[5])
            elif kind == FINAL:
                conn = call[1]
                i = conn.id.index
                r = remotes.pop(i)
                r.parts = call[2]
                r.app = apps.pop(i, None)
                yield conn
            elif kind == NEW:
                cid = call[1]
                r = remotes[cid.index] = _Remote(cid)
                new(cid, r)
            elif kind == STARTED:
                started(remotes[call[1]], call[2])
            elif kind == DECIDED:
                remotes[call[1]].protocol = call[2]
            elif kind == APP:
                r = remotes[call[1]]
                r.app = apps[call[1]] = _app(call[2], r.conn)
            elif kind == GAP:
                apps[call[1]].gap(call[2], call[3], call[4], call[5])
            elif kind == CLOSE:
                apps[call[1]].close(call[2], call[3], call[4])
            elif udp is not None:  # UDP
                udp(call[1])
