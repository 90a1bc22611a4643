"""HTTP/1.x transactions from the in-order bytes of TCP connections, in bounded memory.

:func:`transactions` and :func:`connection_results` read a capture (TCP reassembly,
:mod:`qoe.web.tcp`), look at each connection's first client bytes to pick its parser
(HTTP/1.x, TLS record timing from :mod:`qoe.web.tls`, or none) and give one
:class:`Transaction` per request/response exchange, without keeping any body in memory.
:func:`parse` does the same for one connection's byte events (bytes you reassembled
yourself, or made up for a test). The parser lives in ``qoe.web._http1``, the choice of
parser in ``qoe.web._dispatch``, the records in ``qoe.web._results``.

Framing
-------
Message framing follows RFC 9112 §6: Content-Length, chunked (chunk extensions and
trailer fields are accepted and skipped) and close-delimited bodies. A plain message head
that arrives whole (a request other than CONNECT/Upgrade, a final response to one, no
Transfer-Encoding) is read with httptools (llhttp, C), the rest with h11, which also reads
every chunked body and says what is wrong with a head llhttp rejects; responses to HEAD
and 1xx, 204 and 304 responses carry no body (RFC 9112 §6.3 items 1-2). Requests and
responses are paired in order (RFC 9112 §9.3.2, pipelining): each response is parsed
knowing the method of the request it answers (that is how a HEAD response is known to
have no body). Each message gets a fresh h11 state machine started at the message's first
byte, so HTTP/1.0 ``Connection: keep-alive`` connections (which h11 itself does not keep
open) parse like HTTP/1.1 ones. A CONNECT answered 2xx or an ``Upgrade`` answered 101
ends parsing (RFC 9110 §9.3.6, §7.8): the rest of the connection is counted as tunnel
bytes and the transaction says so in :attr:`Transaction.upgraded`.

Sizes and times
---------------
Nothing of a body is kept: its bytes are counted on the wire (chunk framing included)
and decoded (after de-chunking; a ``Content-Encoding`` such as gzip or br is *not*
undone, only recorded). h11 or httptools reads every head, h11 every chunked body; once a
head is accepted whose body has a Content-Length or runs to the close, the parser counts that body
itself (the same count h11 would make, without an event per delivery). The parser holds at most one delivery plus an incomplete message
head (``max_head_bytes``), so a gigabyte download passes through in bounded memory.
Every time is the capture time (integer ns) of the delivery that held the byte in
question: a message's first byte, its last byte.

Gaps (bytes missing from the capture)
-------------------------------------
h11 cannot find a message boundary again once bytes are missing, so:

* a gap inside a body of known length (Content-Length) is skipped: the missing bytes are
  counted (``*_missing_bytes``), the rest of the body is counted without h11, and parsing
  resumes with the next message; a gap that ends exactly at the body's end also resumes;
* a gap inside a close-delimited body is skipped likewise (the body ends with the
  connection whatever the gap);
* a gap anywhere else (in a head, in a chunked body, between messages, or running past
  the end of a known-length body) stops parsing of that direction; the transaction it hit
  is marked partial (:attr:`Transaction.partial`), later responses of the connection are
  not parsed, requests already parsed still get their responses.

A message cut by the end of the capture, an RST, or a FIN before its end is partial too.
A protocol error (h11's ``RemoteProtocolError``: bytes that are not HTTP/1.x) stops the
whole connection; the error is recorded on the transaction it hit (and on the
:class:`ConnectionResult`); no exception escapes a sink.

References
----------
.. [1] RFC 9112, "HTTP/1.1" (2022): §2.2 (message parsing, empty lines before a request
   line), §6.1-§6.3 (message body length), §7.1 (chunked coding), §9.3 (persistence,
   pipelining).
.. [2] RFC 9110, "HTTP Semantics" (2022): §7.8 (Upgrade), §9.3.2 (HEAD), §9.3.6 (CONNECT),
   §10.1.1 (Expect: 100-continue), §15.2 (1xx).
.. [3] RFC 1945, "HTTP/1.0" (1996): §7.2.2 (close-delimited entity bodies).
.. [4] h11, https://h11.readthedocs.io/ (the HTTP/1.1 state machine used for framing).
.. [5] httptools, https://github.com/MagicStack/httptools (bindings to llhttp, Node.js's
   HTTP/1.x parser), for whole plain heads.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from typing import Any, Literal

from qoe.errors import InputError
from qoe.web import _dispatch, _http1
from qoe.web._http1 import DEFAULT_MAX_HEAD_BYTES, DEFAULT_MAX_HELD_BYTES, HttpLimits
from qoe.web._results import ConnectionResult, Transaction
from qoe.web.keylog import load_keylog
from qoe.web.tcp import TcpLimits, connections

__all__ = [
    "Transaction",
    "ConnectionResult",
    "HttpLimits",
    "parse",
    "connection_results",
    "transactions",
    "DEFAULT_MAX_HEAD_BYTES",
    "DEFAULT_MAX_HELD_BYTES",
]

#: One event of a connection's byte stream, as :func:`parse` takes it:
#: ``("data", direction, ts_ns, offset, payload)``, ``("gap", direction, ts_ns, offset, length)``
#: or ``("close", direction, ts_ns, 0, how)`` (``how``: ``"fin"``, ``"rst"``, ``"end-of-capture"``);
#: ``direction`` is :data:`qoe.web.tcp.CLIENT` or :data:`qoe.web.tcp.SERVER`.
Event = tuple[str, int, int, int, Any]


def parse(
    connection: Any,
    events: Iterable[Event],
    *,
    protocol: Literal["auto", "http", "h2", "tls"] = "auto",
    limits: HttpLimits | None = None,
) -> ConnectionResult:
    """Parse one connection's byte events.

    Parameters
    ----------
    connection : qoe.web.tcp.ConnectionId
        The connection (its index, ends and first packet time go into each transaction).
    events : iterable of Event
        Each direction's bytes in order, its gaps and its end (the ByteSink calls of
        :mod:`qoe.web.tcp`, as tuples; see :data:`Event`).
    protocol : {"auto", "http", "h2", "tls"}, keyword-only
        ``"auto"`` (default): recognise the protocol from the client's first bytes, as for a
        capture; a name: parse with that parser whatever the bytes.
    limits : HttpLimits, optional, keyword-only
        Memory bounds of the parser.

    Returns
    -------
    ConnectionResult
        Its transactions in request order (unfinished ones partial).

    Examples
    --------
    >>> from qoe.web.tcp import CLIENT, SERVER, ConnectionId
    >>> conn = ConnectionId(("10.0.0.1", 40000), ("10.0.0.2", 80), 0, 0, True)
    >>> res = parse(conn, [("data", CLIENT, 1_000, 0, b"GET /a HTTP/1.1\\r\\nHost: example.org\\r\\n\\r\\n"),
    ...                    ("data", SERVER, 5_000, 0, b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nhi")])
    >>> tx = res.transactions[0]
    >>> tx.url, tx.status, tx.response_body_bytes, tx.complete, tx.protocol
    ('http://example.org/a', 200, 2, True, 'http/1.1')
    """
    lim = limits if limits is not None else HttpLimits()
    if protocol == "auto":
        sink: Any = _dispatch.ProtocolSink(connection, max_head_bytes=lim.max_head_bytes,
                                           max_held_bytes=lim.max_held_bytes)
    else:
        entry = next((p for p in _dispatch.PARSERS if p.name == protocol), None)
        if entry is None:
            names = ", ".join(repr(p.name) for p in _dispatch.PARSERS)
            raise InputError(f"protocol must be 'auto' or one of {names}; given {protocol!r}")
        sink = entry.make(connection, lim)
    for kind, direction, ts, offset, item in events:
        if kind == "data":
            sink.data(direction, ts, offset, item)
        elif kind == "gap":
            sink.gap(direction, ts, offset, item)
        elif kind == "close":
            sink.close(direction, ts, item)
        else:
            raise InputError(f"an event's kind must be 'data', 'gap' or 'close'; given {kind!r}")
    return sink.result()


def connection_results(
    capture: str | os.PathLike[str] | Iterable[Any],
    *,
    limits: HttpLimits | None = None,
    tcp_limits: TcpLimits | None = None,
    keylog: Any = None,
) -> list[ConnectionResult]:
    """What each TCP connection of a capture carried: its protocol and transactions.

    Parameters
    ----------
    capture : path or iterable of qoe.capture.Packet
        As :func:`qoe.web.tcp.connections` takes it.
    limits : HttpLimits, optional, keyword-only
        Memory bounds of the HTTP parser.
    tcp_limits : qoe.web.tcp.TcpLimits, optional, keyword-only
        Reassembly memory bounds.
    keylog : path, sequence of paths or qoe.web.keylog.KeyLog, optional, keyword-only
        NSS key log(s) (``SSLKEYLOGFILE``) to decrypt TLS connections with; a pcapng
        capture's own Decryption Secrets Blocks are used as well (see :mod:`qoe.web.decrypt`).
        Without, TLS connections give their handshake timing only.

    Returns
    -------
    list of ConnectionResult
        One per connection, in order of first packet.
    """
    lim = limits if limits is not None else HttpLimits()
    log = load_keylog(capture if isinstance(capture, (str, os.PathLike)) else None, keylog)
    col = _dispatch.Collector(max_head_bytes=lim.max_head_bytes, max_held_bytes=lim.max_held_bytes,
                              parsers=_dispatch.parsers(log))
    connections(capture, sinks=col, limits=tcp_limits if tcp_limits is not None else TcpLimits())
    return col.results()


def transactions(
    capture: str | os.PathLike[str] | Iterable[Any],
    *,
    limits: HttpLimits | None = None,
    tcp_limits: TcpLimits | None = None,
    keylog: Any = None,
) -> list[Transaction]:
    """Every HTTP transaction of a capture, by connection then sequence (see :func:`connection_results`)."""
    return [t for r in connection_results(capture, limits=limits, tcp_limits=tcp_limits, keylog=keylog)
            for t in r.transactions]


# the plumbing that was public here before 0.x: kept one release, with a warning
_MOVED = {
    "HttpSink": "qoe.web.http.parse(conn, events, protocol='http')",
    "ProtocolSink": "qoe.web.http.parse(conn, events)",
    "connection_sink": "qoe.web.http.parse(conn, events)",
    "UnknownSink": "qoe.web.http.parse(conn, events)",
    "Collector": "qoe.web.http.connection_results(capture)",
    "sniff": "qoe.web.http.parse(conn, events) (its result's protocol)",
}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        warnings.warn(f"qoe.web.http.{name} is internal and will be removed; use {_MOVED[name]}",
                      DeprecationWarning, stacklevel=2)
        return getattr(_http1 if name == "HttpSink" else _dispatch, name)
    raise AttributeError(f"module 'qoe.web.http' has no attribute {name!r}")
