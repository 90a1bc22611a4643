"""The manifests' bodies of HTTPS sessions, read from the TLS and QUIC connections opened with the key log.

:mod:`qoe.web` decrypts TLS with a key log (:mod:`qoe.web.decrypt`) and makes HTTP/1.x and
HTTP/2 transactions of the plaintext, keeping no body. A streaming session needs the bodies
of its manifests: :func:`keylog_bodies` reads the capture once more and opens again only the
connections that carried a manifest, up to their last manifest's end (``qoe.web.tcp.connections``'
``endpoints`` and ``times``: the other segments' rows are not built), through the public
:class:`qoe.web.decrypt.DecryptingTlsSink` with sinks of its own in place of the HTTP parsers.
They keep only

* HTTP/1.x: the server's plaintext delivered inside each manifest response's time window
  (as :func:`qoe.video.has._bodies.read_bodies` does with cleartext), decoded by
  :func:`qoe.video.has._bodies.decode_response`;
* HTTP/2: the DATA frames (RFC 9113 §6.1, padding removed by ``hyperframe``) of the manifest
  responses' stream identifiers; frames of other streams are skipped as they are read.

A record that failed authentication (or was not captured whole) is a gap in the plaintext:
a manifest with a gap is returned as not whole.

HTTP/3 (:func:`quic_bodies`): :func:`qoe.web.quic.iter_quic_connections` decrypts the QUIC
connections, while a manifest's connection carried manifests (its ``times``), and hands each
request stream's bytes, in order, to a tap; the server's bytes of the manifest responses'
streams are kept and their DATA frames (RFC 9114 §7.2.1) joined.

References
----------
.. [1] RFC 9113, "HTTP/2" (2022): §4.1 (frame format), §6.1 (DATA, END_STREAM, PADDED).
.. [2] RFC 9112, "HTTP/1.1" (2022): §2.1 (message format), §6.3 (body length).
.. [3] RFC 8446, "TLS 1.3" (2018): §5.2 (record payload protection).
.. [4] RFC 9110, "HTTP Semantics" (2022): §8.4.1 (content codings).
.. [5] RFC 9114, "HTTP/3" (2022): §7.1 (frame layout: type and length as variable-length
   integers), §7.2.1 (DATA). RFC 9000 §16 (variable-length integers).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aioquic.buffer import Buffer, BufferReadError
from hyperframe.frame import Frame

from qoe.video.has._bodies import MAX_BODY_BYTES, decode_response
from qoe.web.decrypt import DecryptingTlsSink
from qoe.web.keylog import load_keylog
from qoe.web.quic import iter_quic_connections
from qoe.web.tcp import SERVER, connections

__all__ = ["keylog_bodies", "quic_bodies", "h3_data"]

_SLACK_NS = 1_000_000  # plaintext delivered up to 1 ms before the response's first byte time
_H2_HEADER = 9  # RFC 9113 §4.1: length (24), type (8), flags (8), R + stream identifier (32)
_H2_DATA = 0x0  # RFC 9113 §6.1
_END_STREAM = 0x1  # RFC 9113 §6.1
_H3_DATA = 0x0  # RFC 9114 §7.2.1


class _Http1Plain:
    """Keeps the server's plaintext delivered inside the windows of one connection's manifests."""

    def __init__(self, windows: Sequence[tuple[int, int, int]]) -> None:
        self.windows = windows  # (key, start_ns, end_ns)
        self.got: dict[int, list[tuple[int, bytes]]] = {k: [] for k, _, _ in windows}

    def data(self, direction: int, ts_ns: int, offset: int, payload: bytes) -> None:
        if direction != SERVER:
            return
        for k, start, end in self.windows:
            if start - _SLACK_NS <= ts_ns <= end:
                self.got[k].append((offset, bytes(payload)))

    def gap(self, direction: int, ts_ns: int, offset: int, length: int) -> None:
        pass  # seen as a hole between the offsets kept

    def close(self, direction: int, ts_ns: int, how: str) -> None:
        pass

    def bodies(self) -> dict[int, tuple[bytes, bool]]:
        out = {}
        for k, chunks in self.got.items():
            chunks.sort()
            raw, whole, pos = bytearray(), True, None
            for off, b in chunks:
                if pos is not None and off > pos:
                    whole = False
                    break
                if pos is not None and off < pos:
                    b = b[pos - off:]
                raw += b
                pos = off + len(b) if pos is None or off >= pos else pos + len(b)
            start = raw.find(b"HTTP/1.")
            if start < 0:
                continue
            _, body, ok = decode_response(bytes(raw[start:]))
            out[k] = (body, ok and whole)
        return out


class _H2Plain:
    """Keeps the DATA of some HTTP/2 streams of one connection (the server's direction)."""

    def __init__(self, streams: Mapping[int, int]) -> None:
        self.streams = streams  # stream id -> key
        self.buf = bytearray()
        self.stopped = False
        self.got: dict[int, bytearray] = {k: bytearray() for k in streams.values()}
        self.ended: set[int] = set()
        self.cut: set[int] = set()

    def data(self, direction: int, ts_ns: int, offset: int, payload: bytes) -> None:
        if direction != SERVER or self.stopped:
            return
        self.buf += payload
        while len(self.buf) >= _H2_HEADER:
            frame, length = Frame.parse_frame_header(memoryview(self.buf)[:_H2_HEADER])
            if len(self.buf) < _H2_HEADER + length:
                return
            body = bytes(self.buf[_H2_HEADER:_H2_HEADER + length])
            del self.buf[:_H2_HEADER + length]
            key = self.streams.get(frame.stream_id)
            if key is None or frame.type != _H2_DATA:
                continue
            frame.parse_body(memoryview(body))
            if len(self.got[key]) + len(frame.data) > MAX_BODY_BYTES:
                self.cut.add(key)
            else:
                self.got[key] += frame.data
            if "END_STREAM" in frame.flags:
                self.ended.add(key)

    def gap(self, direction: int, ts_ns: int, offset: int, length: int) -> None:
        if direction == SERVER:
            self.stopped = True  # the frame boundaries are lost

    def close(self, direction: int, ts_ns: int, how: str) -> None:
        pass

    def bodies(self) -> dict[int, tuple[bytes, bool]]:
        return {k: (bytes(b), k in self.ended and k not in self.cut) for k, b in self.got.items() if b}


def keylog_bodies(capture: str | os.PathLike[str], keylog: Any
                  ) -> Callable[[Sequence[Any]], Mapping[int, tuple[bytes, bool]]]:
    """The ``bodies`` function of :func:`qoe.video.has.session.build_sessions` for HTTPS: the
    manifests' bodies decrypted with ``keylog`` (HTTP/1.x over TLS and HTTP/2).

    Parameters
    ----------
    capture : path
    keylog : path, sequence of paths or qoe.web.keylog.KeyLog
        As :func:`qoe.web.http.transactions` takes it.

    Returns
    -------
    callable
        ``bodies(manifest_transactions) -> {position: (body, whole)}``; a manifest whose
        connection could not be opened (no keys) is absent.
    """

    def bodies(mtx: Sequence[Any]) -> Mapping[int, tuple[bytes, bool]]:
        log = load_keylog(capture, keylog)
        if log is None:
            return {}
        wanted: dict[tuple[Any, Any], list[tuple[int, Any]]] = {}
        for k, t in enumerate(mtx):
            if t.client and t.server:
                wanted.setdefault((tuple(t.client), tuple(t.server)), []).append((k, t))
        sinks: list[Any] = []

        def factory(conn: Any) -> Any:
            mine = wanted.get((tuple(conn.client), tuple(conn.server)))
            if not mine:
                return None
            h1 = _Http1Plain([(k, t.response_start_ns, t.response_end_ns) for k, t in mine
                              if t.response_start_ns is not None and t.response_end_ns is not None])
            h2 = _H2Plain({t.stream_id: k for k, t in mine if t.stream_id is not None})
            sinks.extend((h1, h2))
            return DecryptingTlsSink(conn, log, http1=lambda _c: h1, h2=lambda _c: h2)

        # the others' segments skipped, and each manifest connection's after its last manifest
        # (the segments that follow on a kept-alive connection are not read: their rows not built)
        connections(capture, sinks=factory, endpoints=list(wanted), times=_spans(wanted))
        out: dict[int, tuple[bytes, bool]] = {}
        for s in sinks:
            out.update(s.bodies())
        for k, (body, whole) in list(out.items()):  # HTTP/2: the content coding is still on
            if mtx[k].stream_id is not None:
                out[k] = _decoded(mtx[k], body, whole)
        return out

    return bodies


def _spans(wanted: Mapping[Any, Sequence[tuple[int, Any]]]) -> list[tuple[int, int]] | None:
    """The capture times to read for the manifests' connections: each from its start to its last
    manifest's end (with the slack of the windows), or None (every segment) when a manifest
    has no end or its connection no start."""
    spans = []
    for items in wanted.values():
        starts = [t.connection_start_ns for _, t in items]
        ends = [t.response_end_ns for _, t in items]
        if None in starts or None in ends:
            return None
        spans.append((min(starts) - _SLACK_NS, max(ends) + _SLACK_NS))
    return spans


def _quic_spans(mtx: Sequence[Any]) -> list[tuple[int, int]] | None:
    """:func:`_spans` of the HTTP/3 manifests, by connection."""
    by_conn: dict[tuple[Any, Any], list[tuple[int, Any]]] = {}
    for k, t in enumerate(mtx):
        if t.client and t.server and t.stream_id is not None:
            by_conn.setdefault((tuple(t.client), tuple(t.server)), []).append((k, t))
    return _spans(by_conn)


def h3_data(stream: bytes) -> tuple[bytes, bool]:
    """The payload of the DATA frames of one HTTP/3 response stream, and whether the frames were whole.

    Parameters
    ----------
    stream : bytes
        The server's bytes of a request stream: HEADERS, DATA and other frames (RFC 9114 §7.1).

    Examples
    --------
    >>> h3_data(bytes([0x01, 0x02, 0xD9, 0xC1, 0x00, 0x03]) + b"abc" + bytes([0x00, 0x01]) + b"d")
    (b'abcd', True)
    >>> h3_data(bytes([0x00, 0x02]) + b"ab" + bytes([0x00, 0x05]) + b"abc")  # the second frame cut short
    (b'ab', False)
    """
    out = bytearray()
    buf = Buffer(data=stream)
    try:
        while not buf.eof():
            kind = buf.pull_uint_var()  # RFC 9114 §7.1: type and length, RFC 9000 §16 integers
            payload = buf.pull_bytes(buf.pull_uint_var())
            if kind == _H3_DATA:
                out += payload
    except BufferReadError:  # a frame cut short: what came before it
        return bytes(out), False
    return bytes(out), True


def _decoded(t: Any, body: bytes, whole: bool) -> tuple[bytes, bool]:
    """The body with its content coding undone (RFC 9110 §8.4.1): HTTP/2 and HTTP/3 keep it on."""
    enc = next((v.lower() for n, v in t.response_headers if n.lower() == "content-encoding"), "")
    if enc in ("gzip", "x-gzip", "deflate") and whole:
        try:
            return zlib.decompress(body, 47 if enc != "deflate" else 15), True
        except zlib.error:
            return body, False
    return body, whole


def quic_bodies(capture: str | os.PathLike[str], keylog: Any
                ) -> Callable[[Sequence[Any]], Mapping[int, tuple[bytes, bool]]]:
    """The ``bodies`` function of :func:`qoe.video.has.session.build_sessions` for HTTP/3: the
    manifests' bodies from the QUIC connections decrypted with ``keylog``.

    Returns
    -------
    callable
        ``bodies(manifest_transactions) -> {position: (body, whole)}`` for the transactions
        with a ``stream_id`` (HTTP/3); a manifest whose connection was not decrypted is absent.
    """

    def bodies(mtx: Sequence[Any]) -> Mapping[int, tuple[bytes, bool]]:
        wanted = {(tuple(t.client), tuple(t.server), t.stream_id): k for k, t in enumerate(mtx)
                  if t.client and t.server and t.stream_id is not None}
        got: dict[int, bytearray] = {}
        ended: set[int] = set()

        def tap(client: Any, server: Any, sid: int, direction: int, data: bytes, fin: bool) -> None:
            k = wanted.get((tuple(client), tuple(server), sid))
            if k is None or direction != SERVER:
                return
            buf = got.setdefault(k, bytearray())
            if len(buf) + len(data) <= MAX_BODY_BYTES:
                buf += data
            if fin:
                ended.add(k)

        if wanted:
            # only while the manifests' connections carried them: from each one's first packet to
            # its last manifest's end (the other datagrams are not decrypted)
            for _ in iter_quic_connections(capture, keylog=keylog, stream_tap=tap, times=_quic_spans(mtx)):
                pass
        out: dict[int, tuple[bytes, bool]] = {}
        for k, raw in got.items():
            body, whole = h3_data(bytes(raw))
            out[k] = _decoded(mtx[k], body, whole and k in ended)
        return out

    return bodies
