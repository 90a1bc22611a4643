"""The HTTP/1.x parser: transactions from the in-order bytes of one TCP connection, in bounded memory.

An :class:`HttpSink` is a :class:`~qoe.web._sink.ByteSink`: TCP reassembly pushes each
direction's bytes into it as they become deliverable and it turns them into
:class:`~qoe.web._results.Transaction` records (one per request/response exchange) without
keeping any body in memory. Which parser a connection gets is decided in
:mod:`qoe.web._dispatch`; the public entry points are in :mod:`qoe.web.http`.

Framing, sizes and times, gaps and references: :mod:`qoe.web.http` (the public face of this
parser) describes them once.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import h11
import httptools

from qoe.errors import InputError
from qoe._records import builder
from qoe.web._fieldtext import field_line
from qoe.web._results import ConnectionResult, Transaction, make_transaction
from qoe.web._sink import CLIENT, SERVER, ConnectionId

__all__ = ["HttpSink", "HttpLimits", "DEFAULT_MAX_HEAD_BYTES", "DEFAULT_MAX_HELD_BYTES"]

#: Longest incomplete message head (request/status line + header fields) the parser
#: buffers before calling it an error. h11's own default is 16 KiB; real responses with
#: large Set-Cookie / Content-Security-Policy fields exceed that, hence 64 KiB.
DEFAULT_MAX_HEAD_BYTES = 65536

#: Most bytes held back in one direction while waiting for the other (a response whose
#: request head has not been parsed yet; client bytes after a CONNECT/Upgrade request until
#: its response decides whether the protocol switches), and before sniffing decides.
DEFAULT_MAX_HELD_BYTES = 65536


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """Memory bounds of the HTTP/1.x parser (and of the bytes held before sniffing decides).

    Attributes
    ----------
    max_head_bytes : int
        Longest incomplete message head buffered (default :data:`DEFAULT_MAX_HEAD_BYTES`);
        a longer one is a protocol error. At least 64.
    max_held_bytes : int
        Most bytes held back in one direction while the other decides how to parse them
        (default :data:`DEFAULT_MAX_HELD_BYTES`); beyond it, that direction stops.
    """

    max_head_bytes: int = DEFAULT_MAX_HEAD_BYTES
    max_held_bytes: int = DEFAULT_MAX_HELD_BYTES

    def __post_init__(self) -> None:
        if not isinstance(self.max_head_bytes, int) or self.max_head_bytes < 64:
            raise InputError(f"max_head_bytes must be an int >= 64; given {self.max_head_bytes!r}")
        if not isinstance(self.max_held_bytes, int) or self.max_held_bytes < 0:
            raise InputError(f"max_held_bytes must be an int >= 0; given {self.max_held_bytes!r}")


# ---------------------------------------------------------------------------------------
# the parser

_IDLE, _H11, _SKIP, _HOLD, _STOPPED, _TUNNEL, _CLOSED = range(7)
_NO_BODY, _LENGTH, _CHUNKED, _CLOSE = range(4)


def _text(value: bytes | bytearray | None) -> str | None:
    # RFC 9110 §5.5: field values are octets; historically ISO-8859-1, which maps every octet.
    return None if value is None else str(value, "latin-1")  # any bytes-like value, without a copy


class _Tx:
    """A transaction being built (mutable; frozen into :class:`Transaction` at the end)."""

    __slots__ = (
        "seq", "method", "target", "host", "request_version", "request_headers", "upgrade",
        "req_start", "req_end", "req_head", "req_body_wire", "req_body", "req_missing", "req_done",
        "status", "reason", "response_version", "response_headers", "interim",
        "resp_start", "resp_end", "resp_head", "resp_body_wire", "resp_body", "resp_missing", "resp_done",
        "upgraded", "partial", "error", "has_request", "req_first", "resp_first",
    )

    def __init__(self, seq: int) -> None:
        self.seq = seq
        self.method = self.target = self.host = self.request_version = self.upgrade = None
        self.request_headers: tuple[tuple[str, str], ...] = ()
        self.req_first: dict[bytes, bytes] = {}  # first value of each field name (see _fields)
        self.resp_first: dict[bytes, bytes] = {}
        self.req_start = self.req_end = self.req_head = self.req_body_wire = self.req_body = None
        self.req_missing = 0
        self.req_done = False
        self.status = self.reason = self.response_version = None
        self.response_headers: tuple[tuple[str, str], ...] = ()
        self.interim: list[int] = []
        self.resp_start = self.resp_end = self.resp_head = self.resp_body_wire = self.resp_body = None
        self.resp_missing = 0
        self.resp_done = False
        self.upgraded = self.partial = self.error = None
        self.has_request = False

    def mark(self, why: str) -> None:
        if self.partial is None:
            self.partial = why


class _Direction:
    """Parser state of one direction."""

    __slots__ = (
        "mode", "conn", "pos", "received", "missing", "last_ts", "closed",
        "tx", "msg_start", "msg_start_ts", "head_end", "framing", "length", "body", "body_missing",
        "skip_left", "held", "held_bytes",
    )

    def __init__(self) -> None:
        self.mode = _IDLE
        self.conn: h11.Connection | None = None
        self.pos = 0  # stream offset up to which bytes were parsed, skipped or counted
        self.received = 0
        self.missing = 0
        self.last_ts: int | None = None  # time of the last delivery with bytes
        self.closed: str | None = None
        self.tx: _Tx | None = None  # the transaction of the message in progress
        self.msg_start = 0
        self.msg_start_ts: int | None = None
        self.head_end: int | None = None  # stream offset after the message head, once parsed
        self.framing = _NO_BODY
        self.length = 0  # Content-Length of the message in progress (framing _LENGTH)
        self.body = 0
        self.body_missing = 0
        self.skip_left: int | None = None  # _SKIP: body bytes still to come (None: until close)
        self.held: list[tuple[int, int, Any]] = []  # (0 data | 1 gap | 2 close, ts, item)
        self.held_bytes = 0


class _Head:
    """What httptools' callbacks give of one message head (names as sent, values without
    surrounding whitespace, RFC 9110 §5.5)."""

    __slots__ = ("fields", "target", "reason", "done")

    def __init__(self) -> None:
        self.fields: list[tuple[bytes, bytes]] = []
        self.target = b""
        self.reason = b""
        self.done = False

    def on_url(self, url: bytes) -> None:
        self.target += url

    def on_status(self, reason: bytes) -> None:
        self.reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        self.fields.append((name, value.strip(b" \t")))

    def on_headers_complete(self) -> None:
        self.done = True


@functools.lru_cache(maxsize=64)
def _asked(method: str, upgrade: str | None) -> tuple[h11.Request, h11.EndOfMessage]:
    """The request h11 must have sent before it reads a response to ``method``.

    h11's events are immutable, so the same ones serve every connection (building and
    validating them is half the cost of starting a response).
    """
    headers = [("Host", "x"), ("Content-Length", "0")]
    if upgrade is not None:
        headers += [("Connection", "upgrade"), ("Upgrade", upgrade)]
    return h11.Request(method=method, target="/", headers=headers), h11.EndOfMessage()


def _fields(headers: Any) -> tuple[tuple[tuple[str, str], ...], dict[bytes, bytes]]:
    """A message head's fields read once: as text pairs (names as sent), and the first value
    of each name, lower-cased with ``bytes.lower`` (as h11 lower-cases names).

    Through ``raw_items()`` (names as sent, values as h11 normalised them): iterating the
    Headers sequence itself goes through ``collections.abc.Sequence.__iter__``, a Python
    call per header.
    """
    raw = headers.raw_items()
    first: dict[bytes, bytes] = {}
    for k, v in raw:
        first.setdefault(k.lower(), v)
    return tuple(field_line(k, v) for k, v in raw), first


_CLOSE_WHY = {
    "fin": "connection closed (FIN) before the message ended",
    "rst": "connection reset (RST) before the message ended",
    "end-of-capture": "capture ended before the message ended",
}


class HttpSink:
    """Parse one TCP connection as HTTP/1.x: a :class:`~qoe.web._sink.ByteSink`.

    Parameters
    ----------
    conn : ConnectionId
        The connection (its index, ends and first packet time go into each transaction).
    max_head_bytes : int, keyword-only
        Longest incomplete message head buffered (default :data:`DEFAULT_MAX_HEAD_BYTES`);
        a longer one is a protocol error.
    max_held_bytes : int, keyword-only
        Most bytes held back in one direction while the other decides how to parse them
        (default :data:`DEFAULT_MAX_HELD_BYTES`); beyond it, that direction stops.

    Notes
    -----
    Feed with :meth:`data`, :meth:`gap` and :meth:`close` (the ByteSink protocol), then call
    :meth:`result`. The result depends only on the bytes, their order and the time each
    byte was delivered, not on how they were split into deliveries. See the module
    docstring for framing and gap rules.

    Examples
    --------
    >>> from qoe.web.tcp import CLIENT, SERVER, ConnectionId
    >>> sink = HttpSink(ConnectionId(("10.0.0.1", 40000), ("10.0.0.2", 80), 0, 0, True))
    >>> sink.data(CLIENT, 1_000, 0, b"GET /a HTTP/1.1\\r\\nHost: example.org\\r\\n\\r\\n")
    >>> sink.data(SERVER, 5_000, 0, b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nhi")
    >>> tx = sink.result().transactions[0]
    >>> tx.url, tx.status, tx.response_body_bytes, tx.complete
    ('http://example.org/a', 200, 2, True)
    """

    def __init__(
        self,
        conn: ConnectionId,
        *,
        max_head_bytes: int = DEFAULT_MAX_HEAD_BYTES,
        max_held_bytes: int = DEFAULT_MAX_HELD_BYTES,
    ) -> None:
        if not isinstance(max_head_bytes, int) or max_head_bytes < 64:
            raise InputError(f"max_head_bytes must be an int >= 64; given {max_head_bytes!r}")
        if not isinstance(max_held_bytes, int) or max_held_bytes < 0:
            raise InputError(f"max_held_bytes must be an int >= 0; given {max_held_bytes!r}")
        self.conn = conn
        self._max_head = max_head_bytes
        self._max_held = max_held_bytes
        self._req = _Direction()
        self._resp = _Direction()
        self._txs: list[_Tx] = []
        self._answered = 0  # transactions whose response has been started (or given up)
        self._switched = False
        self._error: str | None = None
        self._note: str | None = None

    # -- ByteSink -----------------------------------------------------------------------

    def data(self, direction: int, ts_ns: int, offset: int, payload: bytes) -> None:
        """Bytes ``[offset, offset + len(payload))`` of ``direction``, delivered at ``ts_ns``."""
        h = self._req if direction == CLIENT else self._resp if direction == SERVER else self._half(direction)
        received = h.received
        expected = received + h.missing
        if h.mode == _SKIP and offset == expected:
            n = len(payload)
            left = h.skip_left
            if n and (left is None or n < left):
                # the common case, inside a body whose end lies beyond these bytes (or at the
                # close): what _push would do, counting them, without copying them; no mode
                # changes, so nothing held can be released (_settle has nothing to do)
                h.received = received + n
                h.last_ts = ts_ns
                h.pos += n
                h.body += n
                if left is not None:
                    h.skip_left = left - n
                return
        if offset > expected:  # bytes skipped without a gap() call: the same thing
            self.gap(direction, ts_ns, expected, offset - expected)
        elif offset < expected:  # overlaps bytes already delivered: keep only the new ones
            payload = payload[expected - offset:]
        if not payload:
            return
        h.received += len(payload)
        self._push(h, ts_ns, bytes(payload))
        self._settle()

    def gap(self, direction: int, ts_ns: int, offset: int, length: int) -> None:
        """Bytes ``[offset, offset + length)`` of ``direction`` are missing from the capture."""
        if length <= 0:
            return
        h = self._half(direction)
        h.missing += length
        self._gap(h, ts_ns, length)
        self._settle()

    def close(self, direction: int, ts_ns: int, how: str) -> None:
        """``direction`` ended: ``how`` is ``"fin"``, ``"rst"`` or ``"end-of-capture"``."""
        h = self._half(direction)
        if h.closed is None and not (h.held and h.held[-1][0] == 2):
            self._close(h, ts_ns, how)
            self._settle()

    # -- results ------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """Both directions closed (nothing more will change the result)."""
        return self._req.closed is not None and self._resp.closed is not None

    def result(self) -> ConnectionResult:
        """The connection's transactions so far, in request order (unfinished ones partial)."""
        note = self._note
        held = [(name, h) for name, h in (("client", self._req), ("server", self._resp)) if h.held_bytes]
        if held and note is None:
            note = "; ".join(f"{n}: {h.held_bytes} bytes held, never parsed" for n, h in held)
        return _make_result(
            connection=self.conn,
            protocol="http",
            transactions=tuple(self._freeze(tx) for tx in self._txs),
            client_bytes=self._req.received,
            server_bytes=self._resp.received,
            client_missing_bytes=self._req.missing,
            server_missing_bytes=self._resp.missing,
            error=self._error,
            note=note,
        )

    # -- pushing bytes ------------------------------------------------------------------

    def _half(self, direction: int) -> _Direction:
        if direction == CLIENT:
            return self._req
        if direction == SERVER:
            return self._resp
        raise InputError(f"direction must be CLIENT (0) or SERVER (1); given {direction!r}")

    def _push(self, h: _Direction, ts: int, data: bytes) -> None:
        while data:
            mode = h.mode
            if mode == _HOLD:
                h.held.append((0, ts, data))
                h.held_bytes += len(data)
                if h.held_bytes > self._max_held:
                    self._drop_held(h)
                    self._stop(h, f"more than {self._max_held} bytes held waiting for the other direction")
                return
            if mode in (_STOPPED, _TUNNEL, _CLOSED):
                h.pos += len(data)
                return
            h.last_ts = ts
            if mode == _SKIP:
                n = len(data) if h.skip_left is None else min(len(data), h.skip_left)
                h.pos += n
                h.body += n
                data = data[n:]
                if h.skip_left is not None:
                    h.skip_left -= n
                    if h.skip_left == 0:
                        self._end_message(h)
                continue
            if h.conn is None:
                # RFC 9112 §2.2: empty lines before a start line are ignored
                stripped = data.lstrip(b"\r\n")
                h.pos += len(data) - len(stripped)
                data = stripped
                if not data:
                    continue
                end = data.find(b"\r\n\r\n")
                if 0 <= end < self._max_head - 3:  # a whole head in hand: the fast path
                    rest = self._head(h, ts, data, end + 4)
                    if rest is not None:
                        data = rest
                        continue
                if not self._begin(h, ts):
                    continue
            assert h.conn is not None
            h.conn.receive_data(data)
            h.pos += len(data)
            data = self._drain(h, ts)

    def _head(self, h: _Direction, ts: int, data: bytes, n: int) -> bytes | None:
        """A whole message head ``data[:n]`` at a message start, read with httptools (llhttp):
        the common case, about 20 times cheaper than an h11 state machine per message.

        Only heads whose meaning is plain go this way: a request that is not CONNECT and asks
        no Upgrade; a final response (not 1xx) to such a request; HTTP/1.0 or 1.1; no
        Transfer-Encoding (a chunked body is h11's to read); a request of HTTP/1.1 with
        exactly one Host field (RFC 9112 §3.2, as h11 requires). The response is read alone
        (its body, if any, is framed here, knowing the request's method: RFC 9112 §6.3).
        Anything else, and any head llhttp rejects, returns None before any state changes:
        h11 then reads it as before (and says what is wrong with it).
        """
        request = h is self._req
        tx: _Tx | None = None
        if not request:
            if self._answered >= len(self._txs):
                return None  # no request to pair it with yet (h11's path holds it)
            tx = self._txs[self._answered]
            if tx.method == "CONNECT" or tx.upgrade is not None or tx.method is None:
                return None
        head = _Head()
        try:
            if request:
                parser: Any = httptools.HttpRequestParser(head)
                parser.feed_data(data[:n])
                method = parser.get_method()
            else:
                parser = httptools.HttpResponseParser(head)
                parser.feed_data(data[:n])
                status = parser.get_status_code()
            version = parser.get_http_version()
        except (httptools.HttpParserError, httptools.HttpParserUpgrade):
            return None
        if version not in ("1.0", "1.1") or not head.done:
            return None
        # the fields as text pairs (names as sent) and the first value of each lower-cased name
        # (as _fields gives them from h11), read in one loop
        pairs = []
        first: dict[bytes, bytes] = {}
        hosts = 0
        line = field_line
        for k, v in head.fields:
            pairs.append(line(k, v))
            key = k.lower()
            if key not in first:
                first[key] = v
            elif key == b"host":
                hosts += 1
        fields = tuple(pairs)
        hosts += b"host" in first
        if b"transfer-encoding" in first:
            return None
        if request:
            if method == b"CONNECT" or b"upgrade" in first or hosts > 1 or (version == "1.1" and hosts != 1):
                return None
            tx = _Tx(len(self._txs))
            tx.has_request = True
            tx.method = str(method, "latin-1")
            tx.target = str(head.target, "latin-1")
            tx.request_version = version
            tx.request_headers, tx.req_first = fields, first
            tx.host = _text(first.get(b"host"))
            tx.req_start = ts
            tx.req_head = n
            self._txs.append(tx)
            framing, length = self._framing(None, first, None)
        else:
            if status < 200:
                return None
            assert tx is not None
            self._answered += 1
            tx.resp_start = ts
            tx.status = status
            tx.reason = str(head.reason, "latin-1")
            tx.response_version = version
            tx.response_headers, tx.resp_first = fields, first
            tx.resp_head = n
            framing, length = self._framing(status, first, tx.method)
        # the message as _begin, h11 and _drain would leave it
        h.tx = tx
        h.mode = _H11
        h.msg_start = h.pos
        h.msg_start_ts = ts
        h.pos += n
        h.head_end = h.pos
        h.framing, h.length = framing, length
        h.body = h.body_missing = 0
        h.skip_left = None
        if framing == _CLOSE or (framing == _LENGTH and length > 0):
            h.mode = _SKIP
            h.skip_left = length if framing == _LENGTH else None
        else:
            self._end_message(h)
        return data[n:]

    def _begin(self, h: _Direction, ts: int) -> bool:
        """Start a message at ``h.pos`` with bytes in hand at ``ts``; False if it must wait."""
        if h is self._req:
            conn = h11.Connection(h11.SERVER, max_incomplete_event_size=self._max_head)  # reads requests
            h.tx = None
        else:
            tx = self._next_unanswered()
            if tx is None:
                h.mode = _HOLD
                return False
            conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=self._max_head)  # reads responses
            # tell h11 what was asked: no body in a HEAD response, a switch after CONNECT 2xx
            # or Upgrade 101 (RFC 9110 §9.3.2, §9.3.6, §7.8)
            for ev in _asked(tx.method or "GET", tx.upgrade):
                conn.send(ev)
            h.tx = tx
            tx.resp_start = ts
        h.conn = conn
        h.mode = _H11
        h.msg_start = h.pos
        h.msg_start_ts = ts
        h.head_end = None
        h.framing = _NO_BODY
        h.length = h.body = h.body_missing = 0
        h.skip_left = None
        return True

    def _next_unanswered(self) -> _Tx | None:
        if self._answered < len(self._txs):
            tx = self._txs[self._answered]
        elif self._req.mode in (_STOPPED, _CLOSED):
            # no request will come to pair with: an answer to a request the capture lacks
            tx = _Tx(len(self._txs))
            tx.mark("request not seen")
            self._txs.append(tx)
        else:
            return None
        self._answered += 1
        return tx

    def _drain(self, h: _Direction, ts: int) -> bytes:
        """Take every event h11 can give; return the bytes after a message's end, if any."""
        conn = h.conn
        assert conn is not None
        while True:
            try:
                ev = conn.next_event()
            except h11.RemoteProtocolError as exc:
                self._protocol_error(h, str(exc))
                return b""
            t = type(ev)
            if t is h11.Data:
                h.body += len(ev.data)
            elif ev is h11.NEED_DATA:
                return b""
            elif t is h11.EndOfMessage:
                rest = conn.trailing_data[0]
                h.pos -= len(rest)  # not parsed yet: they start the next message
                self._end_message(h)
                return rest
            elif t is h11.Request or t is h11.Response or (t is h11.InformationalResponse and ev.status_code == 101):
                try:
                    if t is h11.Request:
                        self._on_request(h, conn, ev)
                    else:
                        self._on_response(h, conn, ev)
                except h11.RemoteProtocolError as exc:
                    self._protocol_error(h, str(exc))
                    return b""
                if h.mode == _TUNNEL:
                    return b""
                if h.framing == _CLOSE or (h.framing == _LENGTH and h.length > 0):
                    # h11 has checked the head and chosen the framing; a body of known
                    # length, or one that runs to the close, is only counted from here
                    # (RFC 9112 §6.3 items 6 and 8): cheaper than h11's Data events, and
                    # the same code skips gaps
                    rest = conn.trailing_data[0]
                    h.pos -= len(rest)
                    h.conn = None
                    h.mode = _SKIP
                    h.skip_left = h.length if h.framing == _LENGTH else None
                    return rest
            elif t is h11.InformationalResponse:
                assert h.tx is not None
                h.tx.interim.append(ev.status_code)
            else:  # PAUSED or ConnectionClosed: nothing more from this state machine
                return b""

    def _on_request(self, h: _Direction, conn: h11.Connection, ev: h11.Request) -> None:
        tx = _Tx(len(self._txs))
        tx.has_request = True
        tx.method = _text(ev.method)
        tx.target = _text(ev.target)
        tx.request_version = _text(ev.http_version)
        tx.request_headers, first = _fields(ev.headers)
        tx.req_first = first
        tx.host = _text(first.get(b"host"))
        tx.upgrade = _text(first.get(b"upgrade"))
        tx.req_start = h.msg_start_ts
        h.head_end = h.pos - len(conn.trailing_data[0])
        tx.req_head = h.head_end - h.msg_start
        h.framing, h.length = self._framing(None, first, None)
        h.tx = tx
        self._txs.append(tx)
        if tx.req_head > self._max_head:
            raise h11.RemoteProtocolError("head too long")

    def _on_response(self, h: _Direction, conn: h11.Connection, ev: h11.Response | h11.InformationalResponse) -> None:
        tx = h.tx
        assert tx is not None
        tx.status = ev.status_code
        tx.reason = _text(ev.reason)
        tx.response_version = _text(ev.http_version)
        tx.response_headers, first = _fields(ev.headers)
        tx.resp_first = first
        h.head_end = h.pos - len(conn.trailing_data[0])
        tx.resp_head = h.head_end - h.msg_start
        if tx.resp_head > self._max_head:
            raise h11.RemoteProtocolError("head too long")
        if ev.status_code == 101 or (tx.method == "CONNECT" and 200 <= ev.status_code < 300):
            # RFC 9110 §7.8 / §9.3.6: the bytes after this head are another protocol
            tx.upgraded = f"CONNECT {tx.target}" if tx.method == "CONNECT" else (tx.upgrade or "unknown")
            h.framing, h.length = _NO_BODY, 0
            self._switched = True
            self._note = f"switched protocols ({tx.upgraded}) after exchange {tx.seq}; not parsed further"
            after = h.pos - h.head_end  # bytes after the head: the other protocol's
            h.pos = h.head_end
            self._end_message(h)  # sets the tunnel mode
            h.pos += after
            return
        h.framing, h.length = self._framing(ev.status_code, first, tx.method)

    @staticmethod
    def _framing(status: int | None, first: dict[bytes, bytes], method: str | None) -> tuple[int, int]:
        # RFC 9112 §6.3: how the length of a message body is determined (h11 applies the
        # same rules to frame the message; this copy tells what a gap can skip). ``status``:
        # a response's (None for a request); ``first``: the head's fields as _fields gives them
        if status is not None and (status in (204, 304) or method == "HEAD"):
            return _NO_BODY, 0  # §6.3 items 1-2
        if first.get(b"transfer-encoding") is not None:
            return _CHUNKED, 0  # §6.3 item 4 (h11 accepts only "chunked")
        cl = first.get(b"content-length")
        if cl is not None:
            return _LENGTH, int(cl)  # §6.3 item 6
        return (_NO_BODY, 0) if status is None else (_CLOSE, 0)  # §6.3 items 7-8

    def _end_message(self, h: _Direction, *, partial: str | None = None) -> None:
        """The message in progress ended at ``h.pos`` (or was cut short: ``partial``)."""
        tx = h.tx
        h.conn = None
        h.mode = _TUNNEL if self._switched else _IDLE
        h.tx = None
        if tx is None:
            return
        head_end = h.head_end
        h.head_end = None
        seen = head_end is not None
        end_ts = h.last_ts if seen else None
        wire = h.pos - head_end if head_end is not None else None
        body = h.body if seen else None
        if h is self._req:
            tx.req_end = end_ts
            tx.req_body_wire, tx.req_body, tx.req_missing = wire, body, h.body_missing
            tx.req_done = partial is None and seen
            if tx.req_done and not self._switched and (tx.method == "CONNECT" or tx.upgrade is not None):
                if tx.status is None:
                    h.mode = _HOLD  # until the response says whether the protocol switches
                    h.tx = tx
        else:
            tx.resp_end = end_ts
            tx.resp_body_wire, tx.resp_body, tx.resp_missing = wire, body, h.body_missing
            tx.resp_done = partial is None and seen
        if partial is not None:
            tx.mark(partial)
        elif h.body_missing:
            tx.mark(f"{h.body_missing} body bytes missing from the capture")

    # -- gaps, closes, errors -----------------------------------------------------------

    def _gap(self, h: _Direction, ts: int, length: int) -> None:
        mode = h.mode
        if mode == _HOLD:
            h.held.append((1, ts, length))
            return
        if mode in (_STOPPED, _TUNNEL, _CLOSED):
            h.pos += length
            return
        if mode == _SKIP:
            # inside a body whose end does not depend on the missing bytes: skip them
            if h.skip_left is None or length <= h.skip_left:
                h.pos += length
                h.body_missing += length
                if h.skip_left is not None:
                    h.skip_left -= length
                    if h.skip_left == 0:
                        self._end_message(h)
                return
            # the gap runs past the body's end into the next message
            left = h.skip_left
            h.pos += left
            h.body_missing += left
            self._end_message(h)
            self._stop(h, f"gap of {length} bytes across the end of a message")
            h.pos += length - left
            return
        # in a head, in a chunked body or between messages: the next boundary is lost
        if h.conn is None:
            where = "between messages"
        elif h.head_end is None:
            where = "in a message head"
        else:
            where = "in a chunked body"
        why = f"gap of {length} bytes {where}"
        if h.conn is not None and h.tx is None:
            if h is self._req:  # a request whose head was cut: keep its start time
                h.tx = _Tx(len(self._txs))
                h.tx.req_start = h.msg_start_ts
                self._txs.append(h.tx)
        elif h.conn is None and h is self._resp and self._answered < len(self._txs):
            h.tx = self._next_unanswered()  # its response starts in the gap
        if h.tx is not None:
            self._end_message(h, partial=why)
        h.pos += length
        self._stop(h, why)

    def _close(self, h: _Direction, ts: int, how: str) -> None:
        if h.mode == _HOLD:
            h.held.append((2, ts, how))
            return
        why = _CLOSE_WHY.get(how, f"connection ended ({how}) before the message ended")
        if h.mode == _SKIP:
            # RFC 9112 §6.3 item 8: a close-delimited body ends when the server closes
            self._end_message(h, partial=None if (h.skip_left is None and how == "fin") else why)
        elif h.mode == _H11 and h.conn is not None:
            if h.framing == _CLOSE and h.head_end is not None and how == "fin":
                h.conn.receive_data(b"")
                self._drain(h, ts)
            if h.tx is not None:  # still in progress
                self._end_message(h, partial=why)
            elif h.conn is not None and h is self._req:
                self._note = self._note or f"client {why}: request head never completed"
        h.closed = how
        if h.mode != _STOPPED:
            h.mode = _CLOSED
        h.conn = None

    def _stop(self, h: _Direction, why: str) -> None:
        h.mode = _STOPPED
        h.conn = None
        h.tx = None
        side = "client" if h is self._req else "server"
        if self._note is None:
            self._note = f"{side} bytes not parsed after a {why}" if why.startswith("gap") else (
                f"{side} bytes not parsed: {why}"
            )

    def _drop_held(self, h: _Direction) -> None:
        for kind, _t, item in h.held:
            if kind == 0:
                h.pos += len(item)
            elif kind == 1:
                h.pos += item
        h.held, h.held_bytes = [], 0

    def _protocol_error(self, h: _Direction, message: str) -> None:
        side = "request" if h is self._req else "response"
        if message.startswith("Receive buffer too long") or message == "head too long":
            # h11's bound on an incomplete head, and ours on a complete one (so that the
            # outcome does not depend on how the head was split into deliveries)
            message = f"message head longer than max_head_bytes={self._max_head}"
        self._error = f"{side} stream: {message}"
        if h.tx is not None:
            h.tx.error = self._error
            self._end_message(h, partial="protocol error")
        for half in (self._req, self._resp):
            if half is not h and half.tx is not None and half.mode == _H11:
                self._end_message(half, partial="connection not parsed after a protocol error")
            if half.mode != _CLOSED:
                self._drop_held(half)
                half.mode = _STOPPED
                half.conn = None
                half.tx = None

    def _settle(self) -> None:
        """Release held bytes whose fate is now known (never from inside a parse)."""
        while True:
            rq, rs = self._req, self._resp
            if self._switched and rq.mode == _IDLE:
                rq.mode = _TUNNEL
            if rs.mode == _HOLD and (self._answered < len(self._txs) or rq.mode in (_STOPPED, _CLOSED)):
                self._release(rs)
                continue
            if rq.mode == _HOLD:
                tx = rq.tx
                decided = tx is None or tx.status is not None or rs.mode in (_STOPPED, _CLOSED)
                if self._switched:
                    held_close = [item for kind, _t, item in rq.held if kind == 2]
                    self._drop_held(rq)
                    rq.mode = _TUNNEL
                    if held_close:
                        rq.closed = held_close[0]
                    continue
                if decided:
                    self._release(rq)
                    continue
            return

    def _release(self, h: _Direction) -> None:
        """Replay what ``h`` held, now that it can be parsed."""
        held = h.held
        h.held, h.held_bytes = [], 0
        h.mode = _IDLE
        h.conn = None
        h.tx = None
        for kind, ts, item in held:
            if kind == 0:
                self._push(h, ts, item)
            elif kind == 1:
                self._gap(h, ts, item)
            else:
                self._close(h, ts, item)

    # -- freezing -----------------------------------------------------------------------

    def _freeze(self, tx: _Tx) -> Transaction:
        c = self.conn
        resp = tx.resp_first  # (header names are tokens, RFC 9110 §5.1: ASCII, as h11 checks)
        req = tx.req_first
        partial = tx.partial
        if partial is None:
            if not tx.req_done:
                partial = "request not seen to its end"
            elif tx.status is None:
                partial = "no response seen"
            elif not tx.resp_done:
                partial = "response not seen to its end"
        host, url = _host_url(tx.method, tx.target, tx.host, c.server)
        cl = _text(resp.get(b"content-length", b"")).strip()  # type: ignore[union-attr]
        return make_transaction(
            connection=c.index,
            sequence=tx.seq,
            reused=tx.seq > 0,
            client=c.client,
            server=c.server,
            connection_start_ns=c.first_ts_ns,
            started_ns=c.first_ts_ns if tx.seq == 0 else tx.req_start,
            method=tx.method,
            target=tx.target,
            host=host,
            url=url,
            request_version=tx.request_version,
            status=tx.status,
            reason=tx.reason,
            response_version=tx.response_version,
            interim_statuses=tuple(tx.interim),
            request_start_ns=tx.req_start,
            request_end_ns=tx.req_end,
            response_start_ns=tx.resp_start,
            response_end_ns=tx.resp_end,
            request_header_bytes=tx.req_head,
            request_body_wire_bytes=tx.req_body_wire,
            request_body_bytes=tx.req_body,
            request_missing_bytes=tx.req_missing,
            response_header_bytes=tx.resp_head,
            response_body_wire_bytes=tx.resp_body_wire,
            response_body_bytes=tx.resp_body,
            response_missing_bytes=tx.resp_missing,
            content_type=_text(resp.get(b"content-type")),
            content_length=int(cl) if cl.isdigit() else None,
            content_encoding=_text(resp.get(b"content-encoding")),
            transfer_encoding=_text(resp.get(b"transfer-encoding")),
            referer=_text(req.get(b"referer")),
            user_agent=_text(req.get(b"user-agent")),
            request_headers=tx.request_headers,
            response_headers=tx.response_headers,
            upgraded=tx.upgraded,
            complete=partial is None and tx.error is None,
            partial=partial,
            error=tx.error,
            protocol=_ALPN.get(tx.request_version or tx.response_version),  # type: ignore[arg-type]
        )


#: HTTP/1.x version -> its ALPN protocol id (RFC 7301 §6; IANA "TLS ALPN Protocol IDs").
_ALPN = {"1.0": "http/1.0", "1.1": "http/1.1"}

_make_result = builder(ConnectionResult)  # one per HTTP connection

_SCHEME = re.compile(r"(?i)^([a-z][a-z0-9+.-]*)://([^/?#]*)")


def _host_url(
    method: str | None, target: str | None, host: str | None, server: tuple[str, int]
) -> tuple[str | None, str | None]:
    """(host, absolute URL) of a request (RFC 9112 §3.2 request-target forms, §3.3 URI)."""
    if target is None:
        return host, None
    m = _SCHEME.match(target)
    if m:  # absolute-form (§3.2.2), sent to proxies
        return host or m.group(2), target
    if method == "CONNECT":  # authority-form (§3.2.3)
        return host or target, None
    if host is None:  # HTTP/1.0 without Host: the server's address stands in (§3.3)
        addr, port = server
        host = (f"[{addr}]" if ":" in addr else addr) + ("" if port == 80 else f":{port}")
    if target == "*":  # asterisk-form (§3.2.4)
        return host, f"http://{host}"
    return host, f"http://{host}{target if target.startswith('/') else '/' + target}"
