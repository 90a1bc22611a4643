"""Which parser a TCP connection gets: protocol sniffing and dispatch.

TCP reassembly (:mod:`qoe.web.tcp`) asks a :data:`~qoe.web._sink.SinkFactory` for one sink per
connection. The sink given here, :class:`ProtocolSink`, holds the connection's first
deliveries until the client's first bytes say which protocol it speaks, then replays them
into that protocol's parser and passes every later delivery straight to it. A
:class:`Collector` is the factory that also gathers each connection's
:class:`~qoe.web._results.ConnectionResult`.

Adding a protocol
-----------------
A parser is a :class:`ConnectionParser`: a ByteSink (``data``, ``gap``, ``close``) with
``result()`` giving a :class:`~qoe.web._results.ConnectionResult` (its transactions as
:class:`~qoe.web._results.Transaction` records, whatever the protocol). It is made by a
:class:`Parser` entry, ``Parser(name, recognise, make)``: ``recognise(prefix)`` says from the
client's first bytes whether the connection speaks it (True, False, or None: not enough
bytes yet), ``make(conn, limits)`` builds the parser. :data:`PARSERS` lists the entries in the
order they are asked; a new protocol (an HTTP/1.x or HTTP/2 parser behind TLS decryption, a
cleartext HTTP/2 preface) is one more entry, or an entry that replaces ``"tls"`` (a parser
that decrypts with a key log and hands the plaintext to the parser ALPN names). Pass
``parsers=`` to :class:`ProtocolSink`, :class:`Collector` or :func:`connection_sink` to use
another list.

References
----------
.. [1] RFC 9112, "HTTP/1.1" (2022): §2.2 (empty lines before a request line), §3 (request
   line), §2.3 (HTTP-version).
.. [2] RFC 9110, "HTTP Semantics" (2022): §5.6.2 (tokens), §9.1 (methods).
.. [3] RFC 8446, "TLS 1.3" (2018): §5.1 (record layer).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from qoe.errors import InputError
from qoe.web.keylog import KeyLog
from qoe.web._http1 import DEFAULT_MAX_HEAD_BYTES, DEFAULT_MAX_HELD_BYTES, HttpLimits, HttpSink
from qoe.web._requestline import MAX_SNIFF, looks_like_h2_preface, looks_like_request
from qoe.web._results import ConnectionResult, Transaction
from qoe.web._sink import CLIENT, SERVER, ConnectionId
from qoe.web.tls import TlsSession, looks_like_tls

if TYPE_CHECKING:
    from qoe.web._decrypted import DecryptedTlsParser, H2cParser

__all__ = [
    "ConnectionParser", "Parser", "PARSERS", "parsers", "sniff", "UnknownSink", "ProtocolSink", "connection_sink", "Collector",
    "rebased_result",
]


class ConnectionParser(Protocol):
    """What a protocol's parser is: a ByteSink of one connection that gives its result."""

    conn: ConnectionId

    def data(self, direction: int, ts_ns: int, offset: int, payload: bytes) -> None: ...

    def gap(self, direction: int, ts_ns: int, offset: int, length: int) -> None: ...

    def close(self, direction: int, ts_ns: int, how: str) -> None: ...

    def result(self) -> ConnectionResult: ...


@dataclass(frozen=True, slots=True)
class Parser:
    """One protocol :class:`ProtocolSink` can hand a connection to.

    Attributes
    ----------
    name : str
        The protocol's name in results (``ConnectionResult.protocol``) and in ``protocols=``.
    recognise : callable
        ``recognise(prefix) -> bool | None`` on the client's first bytes: True when they
        start this protocol, False when they cannot, None when more bytes are needed.
    make : callable
        ``make(conn, limits) -> ConnectionParser`` (``limits``: an :class:`HttpLimits`).
    """

    name: str
    recognise: Callable[[bytes], bool | None]
    make: Callable[[ConnectionId, HttpLimits], ConnectionParser]


# ---------------------------------------------------------------------------------------
# HTTP/1.x request lines

def _http1(conn: ConnectionId, limits: HttpLimits) -> HttpSink:
    return HttpSink(conn, max_head_bytes=limits.max_head_bytes, max_held_bytes=limits.max_held_bytes)


# ---------------------------------------------------------------------------------------
# TLS: record timing and bursts; decrypted with a key log (parsers(keylog))


def _tls(conn: ConnectionId, limits: HttpLimits) -> DecryptedTlsParser:
    # without a key log: the timing of _TlsSink plus the encrypted bursts (qoe.web.decrypt)
    # (the TLS and HTTP/2 parsers, cryptography and hpack load with the first connection that
    # needs them: 30 ms of CPU that a capture of cleartext HTTP/1.x never spends)
    from qoe.web._decrypted import DecryptedTlsParser  # noqa: PLC0415

    return DecryptedTlsParser(conn, _NO_KEYS, limits)


_NO_KEYS = KeyLog()


def _h2c(conn: ConnectionId, limits: HttpLimits) -> H2cParser:
    from qoe.web._decrypted import H2cParser  # noqa: PLC0415 - loaded when needed (see _tls)

    return H2cParser(conn, limits)


#: The parsers asked, in this order: a TLS handshake record header (``0x16 0x03 0x00..0x04``,
#: RFC 8446 §5.1), the HTTP/2 connection preface in clear (RFC 9113 §3.4: it would otherwise
#: pass for an HTTP/1.x request line, ``PRI * HTTP/2.0``), then an HTTP/1.x request line.
PARSERS: tuple[Parser, ...] = (
    Parser("tls", looks_like_tls, _tls),
    Parser("h2", looks_like_h2_preface, _h2c),
    Parser("http", looks_like_request, _http1),
)


def parsers(keylog: Any = None) -> tuple[Parser, ...]:
    """:data:`PARSERS`, with TLS decrypted when ``keylog`` (a :class:`~qoe.web.keylog.KeyLog`)
    holds secrets: the ``"tls"`` entry's :class:`~qoe.web._decrypted.DecryptedTlsParser` then
    has them (timing and bursts as without, plus the transactions inside)."""
    if keylog is None or not len(keylog):
        return PARSERS

    def tls(conn: ConnectionId, limits: HttpLimits) -> DecryptedTlsParser:
        from qoe.web._decrypted import DecryptedTlsParser  # noqa: PLC0415 - loaded when needed (see _tls)

        return DecryptedTlsParser(conn, keylog, limits)

    return tuple(Parser("tls", looks_like_tls, tls) if p.name == "tls" else p for p in PARSERS)


def sniff(prefix: bytes, parsers: Sequence[Parser] = PARSERS) -> str | None:
    """The protocol a connection's first client bytes start, or None if they cannot tell yet.

    Parameters
    ----------
    prefix : bytes
        The first bytes the client sent (as many as are known).
    parsers : sequence of Parser
        Asked in order; the first that recognises the bytes wins, one that needs more bytes
        makes the answer wait (default :data:`PARSERS`).

    Returns
    -------
    str or None
        A parser's name (``"tls"``, ``"http"``), ``"unknown"`` when none can match, None
        while a prefix of one (send more).

    Examples
    --------
    >>> sniff(b"GET / HTTP/1.1\\r\\n"), sniff(b"\\x16\\x03\\x01\\x02\\x00"), sniff(b"GE"), sniff(b"SSH-2.0-x\\r\\n")
    ('http', 'tls', None, 'unknown')
    """
    prefix = bytes(prefix)
    for p in parsers:
        found = p.recognise(prefix)
        if found is None:
            return None
        if found:
            return p.name
    return "unknown"


# ---------------------------------------------------------------------------------------
# the sinks


class UnknownSink:
    """A ByteSink that only counts bytes: for connections no parser recognised."""

    def __init__(self, conn: ConnectionId, note: str) -> None:
        self.conn = conn
        self.note = note
        self._bytes = [0, 0]
        self._missing = [0, 0]
        self._closed: list[str | None] = [None, None]

    def data(self, direction: int, ts_ns: int, offset: int, payload: bytes) -> None:
        """Count ``len(payload)`` bytes of ``direction``."""
        self._bytes[direction] += len(payload)

    def gap(self, direction: int, ts_ns: int, offset: int, length: int) -> None:
        """Count ``length`` missing bytes of ``direction``."""
        self._missing[direction] += length

    def close(self, direction: int, ts_ns: int, how: str) -> None:
        """Note that ``direction`` ended."""
        self._closed[direction] = how

    @property
    def finished(self) -> bool:
        """Both directions closed."""
        return None not in self._closed

    def result(self) -> ConnectionResult:
        """A result with no transactions, saying why."""
        return ConnectionResult(
            connection=self.conn,
            protocol="unknown",
            client_bytes=self._bytes[CLIENT],
            server_bytes=self._bytes[SERVER],
            client_missing_bytes=self._missing[CLIENT],
            server_missing_bytes=self._missing[SERVER],
            note=self.note,
        )


class _Rebased:
    """A parser fed from the middle of a connection (a capture that began without its handshake).

    Each direction's offsets count from the first byte given to the parser (the client's:
    the start of the first request found; the server's: its first byte after it), as if the
    connection began there; the bytes skipped before are said in the result's note. A gap
    before a direction's first byte is skipped too.
    """

    def __init__(self, inner: ConnectionParser, base: list[int | None], skipped: list[int]) -> None:
        self.conn = inner.conn
        self._inner = inner
        self._base = base
        self._skipped = skipped

    def data(self, direction: int, ts_ns: int, offset: int, payload: bytes) -> None:
        base = self._base[direction]
        if base is None:
            base = self._base[direction] = offset
        self._inner.data(direction, ts_ns, offset - base, payload)

    def gap(self, direction: int, ts_ns: int, offset: int, length: int) -> None:
        base = self._base[direction]
        if base is None:  # nothing of this direction given yet: start after the gap
            self._base[direction] = offset + length
            self._skipped[direction] += length
            return
        self._inner.gap(direction, ts_ns, offset - base, length)

    def close(self, direction: int, ts_ns: int, how: str) -> None:
        self._inner.close(direction, ts_ns, how)

    def result(self) -> ConnectionResult:
        return rebased_result(self._inner.result(), self._skipped)


def rebased_result(r: ConnectionResult, skipped: Sequence[int]) -> ConnectionResult:
    """The result ``r`` of a parser fed from the middle of a connection (:class:`_Rebased`), with
    the client and server bytes ``skipped`` before its first request said in its note."""
    c, s = skipped
    why = (f"capture began mid-connection (no handshake): {c} client and {s} server bytes before the first "
           "request were skipped")
    return dataclasses.replace(r, note=why if r.note is None else f"{why}; {r.note}")


@functools.lru_cache(maxsize=16)
def _limits(max_head_bytes: int, max_held_bytes: int) -> HttpLimits:
    """The (frozen, shared) :class:`HttpLimits` of these bounds: one per connection cost a
    dataclass and its checks each time (an InputError is raised, not cached)."""
    return HttpLimits(max_head_bytes, max_held_bytes)


def _checked(protocols: Sequence[str], parsers: Sequence[Parser]) -> frozenset[str]:
    names = {p.name for p in parsers}
    bad = set(protocols) - names
    if bad:
        raise InputError(f"protocols must be among {' and '.join(map(repr, sorted(names)))}; given {sorted(bad)!r}")
    return frozenset(protocols)


class ProtocolSink:
    """A ByteSink that recognises the protocol from the first client bytes, then parses it.

    Deliveries are held (at most ``max_held_bytes``) until :func:`sniff` decides, then
    replayed into the chosen :class:`Parser`'s parser, or an :class:`UnknownSink`. Server
    bytes before any client byte, a gap before the decision, or a protocol not in
    ``protocols`` make the connection ``"unknown"`` with a note saying why.

    Parameters
    ----------
    conn : ConnectionId
    protocols : collection of str, keyword-only
        The parsers to use (default every one of ``parsers``).
    max_head_bytes, max_held_bytes : int, keyword-only
        Passed to the parser (:class:`HttpLimits`); ``max_held_bytes`` also bounds the bytes
        held before the decision.
    on_finished : callable, optional, keyword-only
        Called with this sink once both directions have closed.
    on_started : callable, optional, keyword-only
        Called once, as ``on_started(sink, ts_ns)``, with the capture time of the first
        bytes delivered in either direction (nothing before it can become a transaction
        that starts earlier: what a streaming reader needs to know).
    on_decided : callable, optional, keyword-only
        Called with this sink once its :attr:`protocol` is decided.
    parsers : sequence of Parser, keyword-only
        The protocols known, in the order they are asked (default :data:`PARSERS`).
    """

    def __init__(
        self,
        conn: ConnectionId,
        *,
        protocols: Sequence[str] | None = None,
        max_head_bytes: int = DEFAULT_MAX_HEAD_BYTES,
        max_held_bytes: int = DEFAULT_MAX_HELD_BYTES,
        on_finished: Callable[[ProtocolSink], None] | None = None,
        on_started: Callable[[ProtocolSink, int], None] | None = None,
        on_decided: Callable[[ProtocolSink], None] | None = None,
        parsers: Sequence[Parser] = PARSERS,
    ) -> None:
        # (None: every parser's protocol, the common case, without building the set per connection)
        self._protocols = _checked(protocols, parsers) if protocols is not None else None
        self.conn = conn
        self._parsers = parsers
        self._max_head = max_head_bytes
        self._max_held = max_held_bytes
        self._on_finished = on_finished
        self._on_started = on_started
        self._on_decided = on_decided
        self._inner: ConnectionParser | UnknownSink | None = None
        self._chosen: str | None = None
        self._pending: list[tuple[int, int, int, int, Any]] = []
        self._pending_bytes = 0
        self._prefix = b""
        self._closed: list[str | None] = [None, None]
        # a capture that began mid-connection (no handshake seen): deliveries are skipped until
        # a client delivery starts a protocol; offsets then count from there (see _Rebased)
        self._midstream = not conn.initiator_known
        self._base: list[int | None] = [None, None]
        self._skipped = [0, 0]
        if max_held_bytes < 0:
            raise InputError(f"max_held_bytes must be >= 0; given {max_held_bytes!r}")

    @property
    def protocol(self) -> str | None:
        """The protocol chosen (a parser's name or ``"unknown"``), or None while undecided."""
        return self._chosen

    def data(self, direction: int, ts_ns: int, offset: int, payload: bytes) -> None:
        """Bytes of ``direction`` (see :class:`~qoe.web._sink.ByteSink`)."""
        if self._inner is not None:
            self._inner.data(direction, ts_ns, offset, payload)
            return
        if self._on_started is not None:
            started, self._on_started = self._on_started, None
            started(self, ts_ns)
        if self._midstream and not self._prefix and not self._starts(direction, offset, payload):
            return
        if direction == CLIENT and not self._pending:
            # the common case: the client's first delivery says which protocol it speaks; the
            # parser takes it at once (what holding, sniffing the held prefix and replaying it
            # would give, without the copies)
            found = sniff(payload[:MAX_SNIFF], self._parsers)
            if found is not None and found != "unknown":
                self._decide(found, "")
                self._inner.data(direction, ts_ns, offset, payload)  # type: ignore[union-attr]
                return
        self._pending.append((0, direction, ts_ns, offset, bytes(payload)))
        self._pending_bytes += len(payload)
        if direction == CLIENT:
            if len(self._prefix) < MAX_SNIFF:
                self._prefix += bytes(payload[: MAX_SNIFF - len(self._prefix)])
            found = sniff(self._prefix, self._parsers)
            if found == "unknown" and self._midstream:
                self._restart()
                return
            if found is not None:
                self._decide(found, "the client's first bytes are neither an HTTP/1.x request line "
                             "nor a TLS handshake record")
        elif not self._prefix:
            self._decide("unknown", "the server sent bytes before the client (neither HTTP/1.x nor TLS)")
        if self._inner is None and self._pending_bytes > self._max_held:
            self._decide("unknown", f"protocol not recognised within {self._max_held} bytes")

    def gap(self, direction: int, ts_ns: int, offset: int, length: int) -> None:
        """Missing bytes of ``direction``."""
        if self._inner is None:
            if self._midstream:  # before a request was found: nothing to lose; inside one: look again
                self._skipped[direction] += length
                if self._prefix:
                    self._restart()
                return
            self._pending.append((1, direction, ts_ns, offset, length))
            self._decide("unknown", "bytes missing from the capture before the protocol was recognised")
            return
        self._inner.gap(direction, ts_ns, offset, length)

    def close(self, direction: int, ts_ns: int, how: str) -> None:
        """``direction`` ended."""
        if self._closed[direction] is not None:
            return
        self._closed[direction] = how
        if self._inner is None:
            self._pending.append((2, direction, ts_ns, 0, how))
            if direction == CLIENT:
                self._decide("unknown", "the client closed before its bytes showed a protocol"
                             if self._prefix else "the client sent no bytes")
        else:
            self._inner.close(direction, ts_ns, how)
        if None not in self._closed and self._on_finished is not None:
            self._on_finished(self)

    #: Client bytes skipped, in a capture that began mid-connection, while looking for the
    #: start of a request (a delivery that begins one): beyond it, the connection is unknown.
    MAX_SKIPPED = 1 << 20

    def _starts(self, direction: int, offset: int, payload: bytes) -> bool:
        """Mid-connection, nothing chosen yet: may this delivery start the parse (else skip it)?

        Server bytes before the client's first request are the tail of an answer the capture
        did not see the start of; a client delivery may start a request (its first bytes
        are recognised, or could be).
        """
        if direction == CLIENT and sniff(bytes(payload[:MAX_SNIFF]), self._parsers) != "unknown":
            self._base[CLIENT] = offset
            return True
        self._skipped[direction] += len(payload)
        if self._skipped[CLIENT] > self.MAX_SKIPPED:
            self._decide("unknown", f"no request found in the first {self._skipped[CLIENT]} client bytes")
        return False

    def _restart(self) -> None:
        """Mid-connection: what looked like a start was not one; skip it and look on."""
        for kind, d, _ts, _off, item in self._pending:
            if kind == 0:
                self._skipped[d] += len(item)
        self._pending, self._pending_bytes, self._prefix = [], 0, b""
        self._base[CLIENT] = None
        if self._skipped[CLIENT] > self.MAX_SKIPPED:
            self._decide("unknown", f"no request found in the first {self._skipped[CLIENT]} client bytes")

    def _decide(self, protocol: str, why: str) -> None:
        if protocol != "unknown" and self._protocols is not None and protocol not in self._protocols:
            protocol, why = "unknown", f"{protocol} connection; its parser was not asked for"
        inner: ConnectionParser | UnknownSink
        entry = None
        if protocol != "unknown":
            for p in self._parsers:
                if p.name == protocol:
                    entry = p
                    break
        if entry is not None:
            inner = entry.make(self.conn, _limits(self._max_head, self._max_held))
            if self._midstream:
                inner = _Rebased(inner, self._base, self._skipped)
        else:
            if self._midstream:
                why = f"capture began mid-connection (no handshake); {why}"
            inner = UnknownSink(self.conn, why)
        self._inner = inner
        self._chosen = protocol
        if self._on_decided is not None:
            self._on_decided(self)
        # from now on deliveries go straight to the parser (TCP calls data once per segment)
        self.data = inner.data  # type: ignore[method-assign]
        pending, self._pending, self._prefix = self._pending, [], b""
        for kind, direction, ts, offset, item in pending:
            if kind == 0:
                inner.data(direction, ts, offset, item)
            elif kind == 1:
                inner.gap(direction, ts, offset, item)
            else:
                inner.close(direction, ts, item)

    def result(self) -> ConnectionResult:
        """What the chosen parser found (an ``"unknown"`` result while undecided)."""
        inner = self._inner
        if inner is None:
            client = sum(len(p[4]) for p in self._pending if p[0] == 0 and p[1] == CLIENT)
            server = sum(len(p[4]) for p in self._pending if p[0] == 0 and p[1] == SERVER)
            why = "the client sent no bytes" if not client else "too few client bytes to recognise the protocol"
            return ConnectionResult(self.conn, "unknown", client_bytes=client, server_bytes=server, note=why)
        return inner.result()


def connection_sink(
    conn: ConnectionId,
    *,
    protocols: Sequence[str] | None = None,
    max_head_bytes: int = DEFAULT_MAX_HEAD_BYTES,
    max_held_bytes: int = DEFAULT_MAX_HELD_BYTES,
    parsers: Sequence[Parser] = PARSERS,
) -> ProtocolSink:
    """A :data:`~qoe.web._sink.SinkFactory`: the protocol-sniffing sink for one connection.

    Use ``functools.partial(connection_sink, protocols=...)`` to change options, or a
    :class:`Collector` to also gather the results.
    """
    return ProtocolSink(conn, protocols=protocols, max_head_bytes=max_head_bytes, max_held_bytes=max_held_bytes,
                        parsers=parsers)


class Collector:
    """A :data:`~qoe.web._sink.SinkFactory` that keeps every connection's result.

    Give it to TCP reassembly as the sink factory; afterwards :meth:`results` has one
    :class:`~qoe.web._results.ConnectionResult` per connection, in connection order. A
    connection's parser state is dropped as soon as both its directions close (only its
    result is kept; with ``on_result`` not even that), so memory grows with the results, not
    with the bytes.

    Parameters
    ----------
    protocols, max_head_bytes, max_held_bytes, parsers
        As in :class:`ProtocolSink`.
    on_result : callable, optional, keyword-only
        Called with each finished connection's result instead of keeping it (streaming).
    """

    def __init__(
        self,
        *,
        protocols: Sequence[str] | None = None,
        max_head_bytes: int = DEFAULT_MAX_HEAD_BYTES,
        max_held_bytes: int = DEFAULT_MAX_HELD_BYTES,
        on_result: Callable[[ConnectionResult], None] | None = None,
        parsers: Sequence[Parser] = PARSERS,
    ) -> None:
        chosen = _checked(protocols if protocols is not None else [p.name for p in parsers], parsers)
        self._options: dict[str, Any] = {
            # (None: every parser's, as ProtocolSink takes it without checking the names per connection)
            "protocols": None if protocols is None else tuple(sorted(chosen)), "max_head_bytes": max_head_bytes,
            "max_held_bytes": max_held_bytes,
            "parsers": parsers,
        }
        self._on_result = on_result
        self._count = 0
        self._open: dict[int, ProtocolSink] = {}  # by order of creation
        self._done: dict[int, ConnectionResult] = {}

    def __call__(self, conn: ConnectionId) -> ProtocolSink:
        """Make the sink for a new connection."""
        key = self._count
        self._count += 1
        sink = ProtocolSink(conn, on_finished=lambda s: self._finished(key, s), **self._options)
        self._open[key] = sink
        return sink

    def _finished(self, key: int, sink: ProtocolSink) -> None:
        self._open.pop(key, None)
        result = sink.result()
        if self._on_result is not None:
            self._on_result(result)
        else:
            self._done[key] = result

    def results(self) -> list[ConnectionResult]:
        """Every connection's result so far (open ones as they stand), in order of creation."""
        merged = {**self._done, **{k: s.result() for k, s in self._open.items()}}
        return [merged[k] for k in sorted(merged)]

    def transactions(self) -> list[Transaction]:
        """Every HTTP transaction, by connection (order of creation) then sequence."""
        return [t for r in self.results() for t in r.transactions]

    def tls_sessions(self) -> list[TlsSession]:
        """Every TLS connection's session facts, by connection."""
        return [r.tls for r in self.results() if r.tls is not None]

