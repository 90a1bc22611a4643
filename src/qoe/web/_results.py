"""The records every protocol parser of :mod:`qoe.web` gives: a transaction and a connection's result.

:class:`Transaction` is one request and its response, whatever carried it (HTTP/1.x over TCP
today; the same record for HTTP/2 streams and HTTP/3 streams, with :attr:`Transaction.protocol`
naming the version), so pages, HAR and scores do not care which protocol carried an object.
:class:`ConnectionResult` is what one connection's parser found. Both are public through
:mod:`qoe.web.http`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from qoe._records import builder
from qoe.report import as_dict
from qoe.web._sink import ConnectionId

if TYPE_CHECKING:  # only for the annotation: tls imports nothing of this module either
    from qoe.web._h2 import Http2Summary
    from qoe.web.decrypt import TlsDecryption
    from qoe.web.tls import TlsSession

__all__ = ["Transaction", "ConnectionResult", "ProtocolName", "make_transaction"]

#: What a connection's parser is: the name :func:`qoe.web._dispatch.sniff` gives it.
ProtocolName = Literal["http", "h2", "tls", "unknown"]


@dataclass(frozen=True, slots=True)
class Transaction:
    """One HTTP/1.x request and its response, as seen on the wire.

    Times are capture times in integer nanoseconds (the time of the delivery that held
    the byte: see :mod:`qoe.web._sink`); sizes are bytes. ``None`` means not seen.

    Attributes
    ----------
    connection : int
        :attr:`ConnectionId.index` of the TCP connection (HAR import: the entry's
        ``connection`` id numbered in order of appearance, or -1 when absent).
    sequence : int
        0-based number of this exchange on its connection, in request order.
    reused : bool
        The connection carried an earlier exchange (``sequence > 0``), i.e. no new TCP
        (and TLS) handshake was paid for this one.
    client, server : tuple of (str, int) or None
        (address, port) of the two ends (HAR import: ``server`` from ``serverIPAddress``).
    connection_start_ns : int or None
        Capture time of the connection's first packet (the SYN when captured); from a HAR,
        the start of its ``connect`` phase.
    started_ns : int or None
        Earliest time this fetch is known to have begun: ``connection_start_ns`` for the
        first exchange of a connection, else ``request_start_ns``; from a HAR, its
        ``startedDateTime``.
    method, target, host, url : str or None
        Request method and request-target as sent; ``Host`` field (or the authority of an
        absolute-form target); the absolute URL rebuilt as ``http://host/target``.
    request_version, response_version : str or None
        ``"1.0"`` / ``"1.1"``.
    status : int or None
        Final status code (>= 200, or 101 for a switch); ``reason`` its reason phrase.
    interim_statuses : tuple of int
        1xx responses before the final one (e.g. ``(100,)`` for Expect: 100-continue).
    request_start_ns, request_end_ns : int or None
        First and last byte of the request message (head and body).
    response_start_ns, response_end_ns : int or None
        First byte of the response (of its first 1xx when there is one: the time to first
        byte) and last byte of the final response.
    request_header_bytes, response_header_bytes : int or None
        Bytes from the message's first byte to the blank line ending its head (RFC 9112
        §2.1), start line included; for a response, 1xx heads before it included.
    request_body_wire_bytes, response_body_wire_bytes : int or None
        Body bytes on the connection, chunk framing and trailers included, missing bytes
        included.
    request_body_bytes, response_body_bytes : int or None
        Body bytes after de-chunking that the capture held (a Content-Encoding is not
        undone).
    request_missing_bytes, response_missing_bytes : int
        Body bytes the capture did not hold (gaps skipped inside the body).
    content_type, content_encoding, transfer_encoding : str or None
        Response header fields.
    content_length : int or None
        Response ``Content-Length`` field.
    referer, user_agent : str or None
        Request header fields.
    request_headers, response_headers : tuple of (str, str)
        Header fields as sent (names in their original case; latin-1 decoded).
    upgraded : str or None
        ``"CONNECT <target>"`` or the ``Upgrade`` protocol when the connection switched
        protocols after this exchange (parsing stopped there).
    complete : bool
        Request and final response both seen to their last byte, no byte missing, no error.
    partial : str or None
        Why the exchange is incomplete (a gap, the capture ending, a reset...).
    error : str or None
        Protocol error that stopped the connection while parsing this exchange.
    protocol : str or None
        The HTTP version that carried the exchange, as ALPN names it (RFC 7301 §6, the IANA
        ALPN registry): ``"http/1.0"``, ``"http/1.1"``; ``"h2"`` and ``"h3"`` for HTTP/2 and
        HTTP/3. HTTP/1.x: from the request line's version, else the status line's; None when
        neither was seen.
    stream_id : int or None
        HTTP/2 and HTTP/3: the stream (RFC 9113 §5.1.1, RFC 9000 §2.1).
    priority : str or None
        HTTP/2: the priority the HEADERS or PRIORITY frame sent (``"weight=W depends_on=S
        exclusive=E"``, RFC 7540 §5.3) and/or the ``priority`` header field (RFC 9218 §4,
        e.g. ``"u=0, i"``); HTTP/3: the field.
    pushed : bool
        A server push (HTTP/2 PUSH_PROMISE, RFC 9113 §8.4; HTTP/3 §4.6).
    reset : str or None
        The stream was reset (``"RST_STREAM CANCEL"``, ``"RESET_STREAM H3_REQUEST_CANCELLED"``)
        or left unprocessed by a GOAWAY (``"GOAWAY NO_ERROR"``: above its last stream id).
    tls_start_ns, tls_end_ns : int or None
        A decrypted TLS or QUIC connection's handshake, as the client ran it: its ClientHello
        (QUIC: its first Initial packet) and its Finished (QUIC: its first Handshake packet,
        which carries the Finished). Resource Timing's ``secureConnectionStart`` and
        ``connectEnd``: the Finished within 1.0 ms of Chromium's ``connectEnd`` on every
        connection of data/web/browser, the hello up to 1.2 ms after its
        ``secureConnectionStart`` (which the browser clamps to the fetch's start for a
        connection opened ahead). None in clear text.
    security : str or None
        What protected the exchange, as Chromium's HAR names it (``_securityDetails.protocol``):
        ``"TLS 1.2"``, ``"TLS 1.3"`` or ``"QUIC"``; None in clear text.
    """

    connection: int
    sequence: int
    reused: bool
    client: tuple[str, int] | None
    server: tuple[str, int] | None
    connection_start_ns: int | None
    started_ns: int | None
    method: str | None
    target: str | None
    host: str | None
    url: str | None
    request_version: str | None
    status: int | None
    reason: str | None
    response_version: str | None
    interim_statuses: tuple[int, ...]
    request_start_ns: int | None
    request_end_ns: int | None
    response_start_ns: int | None
    response_end_ns: int | None
    request_header_bytes: int | None
    request_body_wire_bytes: int | None
    request_body_bytes: int | None
    request_missing_bytes: int
    response_header_bytes: int | None
    response_body_wire_bytes: int | None
    response_body_bytes: int | None
    response_missing_bytes: int
    content_type: str | None
    content_length: int | None
    content_encoding: str | None
    transfer_encoding: str | None
    referer: str | None
    user_agent: str | None
    request_headers: tuple[tuple[str, str], ...] = ()
    response_headers: tuple[tuple[str, str], ...] = ()
    upgraded: str | None = None
    complete: bool = False
    partial: str | None = None
    error: str | None = None
    protocol: str | None = None
    stream_id: int | None = None
    priority: str | None = None
    pushed: bool = False
    reset: str | None = None
    tls_start_ns: int | None = None
    tls_end_ns: int | None = None
    security: str | None = None

    @property
    def ttfb_ns(self) -> int | None:
        """Request start → first response byte (None when either is unknown)."""
        if self.request_start_ns is None or self.response_start_ns is None:
            return None
        return self.response_start_ns - self.request_start_ns

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain Python (headers as lists of [name, value])."""
        return as_dict(self)


@dataclass(frozen=True, slots=True)
class ConnectionResult:
    """What one connection's sink found.

    Attributes
    ----------
    connection : ConnectionId
    protocol : {"http", "h2", "tls", "unknown"}
        The parser :func:`sniff` chose from the first client bytes (``"h2"``: HTTP/2 in
        clear with prior knowledge, RFC 9113 §3.3).
    transactions : tuple of Transaction
        HTTP exchanges in request order (HTTP/2: in stream order; TLS: those decrypted with
        a key log; empty for unknown protocols).
    tls : TlsSession or None
        TLS handshake timing and counts (``protocol == "tls"``).
    decryption : TlsDecryption or None
        TLS with a key log: what decryption gave (records opened and failed, ALPN, the
        application protocol, encrypted bursts), :mod:`qoe.web.decrypt`.
    http2 : Http2Summary or None
        HTTP/2 connections: frames, SETTINGS, GOAWAYs, resets, pushes.
    client_bytes, server_bytes : int
        Payload bytes delivered each way (missing bytes not included).
    client_missing_bytes, server_missing_bytes : int
        Bytes each way the capture did not hold (gaps).
    error : str or None
        A protocol error that stopped parsing.
    note : str or None
        Why the connection was not parsed (unknown protocol) or where parsing stopped
        (a protocol switch, a gap).
    """

    connection: ConnectionId
    protocol: ProtocolName
    transactions: tuple[Transaction, ...] = ()
    tls: TlsSession | None = None
    client_bytes: int = 0
    server_bytes: int = 0
    client_missing_bytes: int = 0
    server_missing_bytes: int = 0
    error: str | None = None
    note: str | None = None
    decryption: TlsDecryption | None = None
    http2: Http2Summary | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain Python, nested results included."""
        return as_dict(self)


#: ``Transaction(**fields)`` made without the frozen class's per-field ``object.__setattr__``
#: (:func:`qoe._records.builder`): one per transaction, by every protocol's parser.
make_transaction = builder(Transaction)
