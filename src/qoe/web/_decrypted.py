"""The dispatch's parsers for TLS with a key log and for HTTP/2 in clear.

:class:`DecryptedTlsParser` is :class:`~qoe.web.decrypt.DecryptingTlsSink` giving a
:class:`~qoe.web._results.ConnectionResult`: the TLS timing (``tls``), what decryption gave
(``decryption``), and the transactions of the HTTP/1.x or HTTP/2 parser the plaintext went to
(HTTP/1.x URLs rebuilt as ``https://``; HTTP/2: ``http2`` too). :class:`H2cParser` is the HTTP/2
parser (:mod:`qoe.web._h2`) for a connection whose client sent the HTTP/2 preface in clear
(prior knowledge, RFC 9113 §3.3). ``qoe.web._dispatch`` makes them (its ``parsers(keylog)``).

References
----------
.. [1] RFC 9113 §3.3 (prior knowledge), §3.4 (preface). RFC 9110 §4.2.2 (the https scheme).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from qoe.web._h2 import H2Sink
from qoe.web._http1 import HttpLimits, HttpSink
from qoe.web._results import ConnectionResult, Transaction, make_transaction
from qoe.web._sink import ConnectionId
from qoe.web.decrypt import DecryptingTlsSink, TlsDecryption
from qoe.web.keylog import KeyLog
from qoe.web.tls import TlsSession

__all__ = ["DecryptedTlsParser", "H2cParser", "tls_apps", "tls_result"]


def _https(t: Transaction, s: TlsSession) -> Transaction:
    url = t.url
    if url is not None and url.startswith("http://"):
        url = "https://" + url[7:]
    return dataclasses.replace(t, url=url, tls_start_ns=s.client_hello_ns, tls_end_ns=s.client_finished_ns,
                               security=s.version_name)


def tls_apps(limits: HttpLimits) -> tuple[Callable[[ConnectionId], HttpSink], Callable[[ConnectionId], H2Sink]]:
    """The makers of the application-protocol parsers a decrypted connection's plaintext goes
    to: HTTP/1.x (with ``limits``) and HTTP/2."""
    return (lambda c: HttpSink(c, max_head_bytes=limits.max_head_bytes, max_held_bytes=limits.max_held_bytes),
            H2Sink)


class DecryptedTlsParser(DecryptingTlsSink):
    """A TLS connection decrypted with the key log, as a dispatch parser (its application
    parsers made by :func:`tls_apps`)."""

    def __init__(self, conn: ConnectionId, keylog: KeyLog, limits: HttpLimits) -> None:
        http1, h2 = tls_apps(limits)
        super().__init__(conn, keylog, http1=http1, h2=h2)

    def result(self) -> ConnectionResult:
        s = self.session()
        return tls_result(self.conn, s, self.decryption(s), self.app)


def tls_result(conn: ConnectionId, s: TlsSession, d: TlsDecryption, app: Any) -> ConnectionResult:
    """The result of a TLS connection: its clear-text timing ``s``, what decryption gave ``d``
    and the transactions of ``app``, the parser the plaintext went to (None: nothing decrypted)."""
    txs: tuple[Transaction, ...] = ()
    h2 = None
    error, note = s.error, d.note
    if isinstance(app, H2Sink):
        txs = tuple(app.transactions(functools.partial(make_transaction, tls_start_ns=s.client_hello_ns,
                                                       tls_end_ns=s.client_finished_ns, security=s.version_name)))
        h2 = app.summary()
        error = error or h2.error
    elif d.application == "other":  # not HTTP: the why
        note = "; ".join(n for n in (note, app.note) if n)
    elif app is not None:
        r = app.result()
        txs = tuple(_https(t, s) for t in r.transactions)
        error = error or r.error
        note = "; ".join(n for n in (note, r.note) if n) or None
    elif note is None and d.keys_found:
        note = "no application data was sent"
    return ConnectionResult(
        connection=conn, protocol="tls", transactions=txs, tls=s,
        client_bytes=s.client_bytes, server_bytes=s.server_bytes,
        client_missing_bytes=s.client_missing_bytes, server_missing_bytes=s.server_missing_bytes,
        error=error, note=note, decryption=d, http2=h2,
    )


class H2cParser(H2Sink):
    """HTTP/2 in clear (prior knowledge), as a dispatch parser."""

    def __init__(self, conn: ConnectionId, limits: HttpLimits) -> None:
        super().__init__(conn, scheme="http")

    def result(self) -> ConnectionResult:
        summary = self.summary()
        c, s = self._d
        return ConnectionResult(
            connection=self.conn, protocol="h2", transactions=tuple(self.transactions(make_transaction)),
            client_bytes=c.received, server_bytes=s.received,
            client_missing_bytes=c.missing, server_missing_bytes=s.missing,
            error=summary.error, http2=summary,
        )


