"""HTTP/3 transactions from the reassembled QUIC streams of one connection.

:class:`H3Parser` takes each QUIC stream's bytes in order (``stream(stream_id, direction,
ts_ns, data, fin)``, from :mod:`qoe.web.quic`) and reads HTTP/3 frames (RFC 9114 §7.1:
varint type, varint length, payload). Unidirectional streams start with their type (§6.2):
control (SETTINGS, GOAWAY), push, and the QPACK encoder streams, whose instructions feed
the QPACK decoders (``pylsqpack``): one per direction, made with the table capacity and
blocked-stream limit that the *decoding* endpoint announced in its SETTINGS (RFC 9204 §5:
SETTINGS_QPACK_MAX_TABLE_CAPACITY, SETTINGS_QPACK_BLOCKED_STREAMS; an encoder may use the
dynamic table only after seeing them). A header block that waits for encoder instructions
(RFC 9204 §2.1.2, blocked streams) is decoded when they arrive.

Each client-initiated bidirectional stream (RFC 9000 §2.1: id % 4 == 0) is one
transaction (``protocol="h3"``); a push stream is a transaction with ``pushed=True`` and the
request of its PUSH_PROMISE. Times are the capture times of the QUIC packets that made the
bytes contiguous: ``request_start_ns`` the request HEADERS frame's first byte, ``request_end_ns``
the client's FIN, ``response_start_ns`` the first response HEADERS frame (1xx included),
``response_end_ns`` the server's FIN. Header bytes are HEADERS frames (type, length and
QPACK field section); body bytes the DATA frames' payloads. A RESET_STREAM or
STOP_SENDING marks the stream ``reset`` with its HTTP/3 error code (RFC 9114 §8.1).

References
----------
.. [1] RFC 9114, "HTTP/3" (2022): §4.1 (request/response), §4.6 (server push), §6.1-§6.2
   (streams), §7.1-§7.2 (frames), §8.1 (error codes).
.. [2] RFC 9204, "QPACK" (2022): §2.1.2 (blocked streams), §4.2 (encoder/decoder streams), §5.
.. [3] RFC 9000 §2.1 (stream ids), §16 (variable-length integers).
.. [4] RFC 9218 §4 (the priority header field).
"""

from __future__ import annotations

from typing import Any

import pylsqpack

from qoe.web._fieldtext import fields_text
from qoe.web._sink import CLIENT, SERVER

__all__ = ["H3Parser", "H3_ERRORS"]

# RFC 9114 §7.2 frame types
_DATA, _HEADERS, _CANCEL_PUSH, _SETTINGS, _PUSH_PROMISE, _GOAWAY, _MAX_PUSH_ID = 0x0, 0x1, 0x3, 0x4, 0x5, 0x7, 0xD
# RFC 9114 §6.2 / RFC 9204 §4.2 unidirectional stream types
_CONTROL, _PUSH, _ENCODER, _DECODER = 0x0, 0x1, 0x2, 0x3
# RFC 9204 §5 settings
_QPACK_MAX_TABLE_CAPACITY, _QPACK_BLOCKED_STREAMS = 0x1, 0x7
#: RFC 9114 §8.1 error codes.
H3_ERRORS = {
    0x100: "H3_NO_ERROR", 0x101: "H3_GENERAL_PROTOCOL_ERROR", 0x102: "H3_INTERNAL_ERROR",
    0x103: "H3_STREAM_CREATION_ERROR", 0x104: "H3_CLOSED_CRITICAL_STREAM", 0x105: "H3_FRAME_UNEXPECTED",
    0x106: "H3_FRAME_ERROR", 0x107: "H3_EXCESSIVE_LOAD", 0x108: "H3_ID_ERROR", 0x109: "H3_SETTINGS_ERROR",
    0x10A: "H3_MISSING_SETTINGS", 0x10B: "H3_REQUEST_REJECTED", 0x10C: "H3_REQUEST_CANCELLED",
    0x10D: "H3_REQUEST_INCOMPLETE", 0x10E: "H3_MESSAGE_ERROR", 0x10F: "H3_CONNECT_ERROR",
    0x110: "H3_VERSION_FALLBACK",
}
_MAX_FRAME_HELD = 1 << 20  # a HEADERS/SETTINGS frame is held whole up to this size; DATA is counted, not held


def _varint(b: bytes | bytearray, i: int) -> tuple[int, int] | None:
    """RFC 9000 §16: a variable-length integer at ``b[i]`` -> (value, next index), None if cut short."""
    if i >= len(b):
        return None
    n = 1 << (b[i] >> 6)
    if i + n > len(b):
        return None
    v = b[i] & 0x3F
    for k in range(1, n):
        v = (v << 8) | b[i + k]
    return v, i + n


class _Tx:
    __slots__ = ("sid", "seq", "pushed", "push_id", "req", "resp", "status", "interim", "req_start", "req_end",
                 "resp_start", "resp_end", "req_head", "resp_head", "req_body", "resp_body", "reset", "error")

    def __init__(self, sid: int, seq: int) -> None:
        self.sid, self.seq = sid, seq
        self.pushed = False
        self.push_id: int | None = None
        self.req: list[tuple[str, str]] = []
        self.resp: list[tuple[str, str]] = []
        self.status: int | None = None
        self.interim: list[int] = []
        self.req_start: int | None = None
        self.req_end: int | None = None
        self.resp_start: int | None = None
        self.resp_end: int | None = None
        self.req_head = 0
        self.resp_head = 0
        self.req_body = 0
        self.resp_body = 0
        self.reset: str | None = None
        self.error: str | None = None


class _Stream:
    """One direction of one QUIC stream as HTTP/3 reads it."""

    __slots__ = ("sid", "direction", "buf", "kind", "frame_ts", "data_left", "stopped", "tx", "push_id_needed")

    def __init__(self, sid: int, direction: int, kind: int | None) -> None:
        self.sid, self.direction = sid, direction
        self.buf = bytearray()
        self.kind = kind  # None: uni stream type not read yet; -1: request stream
        self.frame_ts = 0
        self.data_left = 0  # DATA payload bytes still to count (not held)
        self.stopped = False
        self.tx: _Tx | None = None
        self.push_id_needed = False


class H3Parser:
    """HTTP/3 over one QUIC connection (see the module docstring)."""

    def __init__(self) -> None:
        self._streams: dict[tuple[int, int], _Stream] = {}
        self._txs: dict[int, _Tx] = {}
        self._pushes: dict[int, _Tx] = {}  # by push id
        self._count = 0
        self._settings: list[dict[int, int] | None] = [None, None]  # by sender
        self._decoders: list[Any] = [None, None]  # by the direction whose header blocks it decodes
        self._blocked: list[dict[int, tuple[_Stream, int, int, bytes]]] = [{}, {}]
        self._encoder_backlog: list[bytearray] = [bytearray(), bytearray()]
        self.goaways: list[tuple[str, int, int]] = []
        self.error: str | None = None

    # -- input ---------------------------------------------------------------------------

    def stream(self, sid: int, direction: int, ts: int, data: bytes, fin: bool) -> None:
        """Bytes of stream ``sid`` sent by ``direction`` (in order), ``fin`` at its end."""
        key = (sid, direction)
        s = self._streams.get(key)
        if s is None:
            uni = sid & 0x2
            s = _Stream(sid, direction, None if uni else -1)
            self._streams[key] = s
            if not uni and sid & 0x1 == 0:
                s.tx = self._tx(sid)
        if s.stopped:
            return
        if not s.buf and s.data_left == 0:
            s.frame_ts = ts
        s.buf += data
        try:
            self._read(s, ts)
        except (pylsqpack.DecompressionFailed, pylsqpack.EncoderStreamError, ValueError, UnicodeDecodeError) as e:
            s.stopped = True
            s.buf = bytearray()
            self.error = self.error or f"stream {sid}: {type(e).__name__} {e}"
            if s.tx is not None:
                s.tx.error = s.tx.error or f"HTTP/3 stream not decoded ({type(e).__name__})"
        if fin and s.tx is not None:
            if direction == CLIENT and not s.tx.pushed:
                s.tx.req_end = ts
            elif direction == SERVER:
                s.tx.resp_end = ts

    def reset(self, sid: int, direction: int, code: int, what: str) -> None:
        """A RESET_STREAM (or STOP_SENDING) for ``sid`` sent by ``direction``."""
        tx = self._txs.get(sid)
        if tx is None:
            s = self._streams.get((sid, SERVER))
            tx = s.tx if s is not None else None
        if tx is not None and tx.reset is None:
            tx.reset = f"{what} {H3_ERRORS.get(code, hex(code))}"

    # -- frames ----------------------------------------------------------------------------

    def _tx(self, sid: int) -> _Tx:
        tx = self._txs.get(sid)
        if tx is None:
            tx = _Tx(sid, self._count)
            self._count += 1
            self._txs[sid] = tx
        return tx

    def _read(self, s: _Stream, ts: int) -> None:
        buf = s.buf
        i = 0
        if s.kind is None:
            v = _varint(buf, 0)
            if v is None:
                return
            s.kind, i = v
            if s.kind == _PUSH:
                s.push_id_needed = True
        if s.kind == _ENCODER:
            chunk = bytes(buf[i:])
            del buf[:]
            self._encoder(s.direction, chunk, ts)
            return
        if s.kind == _DECODER or s.kind not in (-1, _CONTROL, _PUSH):
            del buf[:]  # decoder instructions and unknown stream types (§6.2.3: reserved): skipped
            s.stopped = s.kind not in (_DECODER,)
            return
        if s.push_id_needed:
            v = _varint(buf, i)
            if v is None:
                del buf[:i]
                return
            push_id, i = v
            s.push_id_needed = False
            tx = self._pushes.get(push_id)
            if tx is None:
                tx = self._tx(-1 - push_id)
                tx.pushed, tx.push_id = True, push_id
                self._pushes[push_id] = tx
            s.tx = tx
        while True:
            if s.data_left:
                take = min(s.data_left, len(buf) - i)
                s.data_left -= take
                if s.tx is not None:
                    if s.direction == CLIENT:
                        s.tx.req_body += take
                    else:
                        s.tx.resp_body += take
                i += take
                if s.data_left:
                    break
                s.frame_ts = ts
                continue
            t = _varint(buf, i)
            if t is None:
                break
            n = _varint(buf, t[1])
            if n is None:
                break
            ftype, (length, body_at) = t[0], n
            if ftype == _DATA:
                s.data_left = length
                i = body_at
                if length == 0:
                    s.frame_ts = ts
                continue
            if length > _MAX_FRAME_HELD:
                raise ValueError(f"frame of type 0x{ftype:x} with {length} bytes")
            if len(buf) - body_at < length:
                break
            payload = bytes(buf[body_at:body_at + length])
            self._frame(s, ftype, payload, body_at + length - i, s.frame_ts, ts)
            i = body_at + length
            s.frame_ts = ts
        del buf[:i]

    def _frame(self, s: _Stream, ftype: int, payload: bytes, size: int, start: int, end: int) -> None:
        if s.kind == _CONTROL:
            if ftype == _SETTINGS:
                settings: dict[int, int] = {}
                j = 0
                while j < len(payload):
                    k = _varint(payload, j)
                    v = _varint(payload, k[1]) if k is not None else None
                    if k is None or v is None:
                        raise ValueError("SETTINGS frame cut short")
                    settings[k[0]] = v[0]
                    j = v[1]
                self._settings[s.direction] = settings
                self._make_decoder(1 - s.direction, settings)
            elif ftype == _GOAWAY:
                v = _varint(payload, 0)
                self.goaways.append(("client" if s.direction == CLIENT else "server", v[0] if v else -1, end))
            return
        tx = s.tx
        if tx is None:
            return  # a server-initiated bidirectional stream: not HTTP/3 (§6.1)
        if ftype == _HEADERS:
            self._header_block(s, tx, payload, size, start)
        elif ftype == _PUSH_PROMISE and s.direction == SERVER:
            v = _varint(payload, 0)
            if v is None:
                raise ValueError("PUSH_PROMISE cut short")
            push_id, j = v
            p = self._pushes.get(push_id)
            if p is None:
                p = self._tx(-1 - push_id)
                p.pushed, p.push_id = True, push_id
                self._pushes[push_id] = p
            p.req_start = start
            p.req_end = end
            p.req_head = size
            ps = _Stream(-1 - push_id, SERVER, -1)
            ps.tx = p
            self._decode(ps, p, payload[j:], start, request=True)

    def _header_block(self, s: _Stream, tx: _Tx, block: bytes, size: int, start: int) -> None:
        if s.direction == CLIENT:
            if tx.req_start is None:
                tx.req_start = start
                tx.req_head = size
                self._decode(s, tx, block, start, request=True)
            return  # trailers
        if tx.resp_start is None:
            tx.resp_start = start
        if tx.status is None:
            tx.resp_head += size
            self._decode(s, tx, block, start, request=False)

    def _make_decoder(self, direction: int, settings: dict[int, int] | None) -> Any:
        """The decoder of ``direction``'s header blocks, per the *other* side's SETTINGS."""
        cap = (settings or {}).get(_QPACK_MAX_TABLE_CAPACITY, 0)
        blocked = (settings or {}).get(_QPACK_BLOCKED_STREAMS, 0)
        dec = self._decoders[direction]
        if dec is None or (dec[1] == 0 and cap):
            dec = (pylsqpack.Decoder(cap, blocked), cap)
            self._decoders[direction] = dec
            backlog = self._encoder_backlog[direction]
            if backlog:
                self._encoder_backlog[direction] = bytearray()
                self._feed(direction, bytes(backlog), 0)
        return dec[0]

    def _decoder(self, direction: int) -> Any:
        dec = self._decoders[direction]
        if dec is None:
            return self._make_decoder(direction, self._settings[1 - direction])
        return dec[0]

    def _encoder(self, direction: int, data: bytes, ts: int) -> None:
        if self._decoders[direction] is None and self._settings[1 - direction] is None:
            self._encoder_backlog[direction] += data  # wait for the decoding side's SETTINGS
            return
        self._decoder(direction)
        self._feed(direction, data, ts)

    def _feed(self, direction: int, data: bytes, ts: int) -> None:
        for sid in self._decoder(direction).feed_encoder(data):
            waiting = self._blocked[direction].pop(sid, None)
            if waiting is not None:
                s, _start, _, _ = waiting
                _, headers = self._decoder(direction).resume_header(sid)
                self._headers(s.tx, headers, request=direction == CLIENT)

    def _decode(self, s: _Stream, tx: _Tx, block: bytes, start: int, *, request: bool) -> None:
        direction = CLIENT if request and not tx.pushed else SERVER
        key = tx.sid if tx.sid >= 0 else (1 << 62) - 1 - tx.push_id if tx.push_id is not None else tx.sid
        try:
            _, headers = self._decoder(direction).feed_header(key, block)
        except pylsqpack.StreamBlocked:
            self._blocked[direction][key] = (s, start, 0, block)
            return
        self._headers(tx, headers, request=request)

    @staticmethod
    def _headers(tx: _Tx | None, headers: list[tuple[bytes, bytes]], *, request: bool) -> None:
        if tx is None:
            return
        fields = fields_text(headers)
        if request:
            tx.req = fields
            return
        status = next((v for k, v in fields if k == ":status"), None)
        code = int(status) if status is not None and status.isdigit() else None
        if code is not None and 100 <= code < 200:
            tx.interim.append(code)
        else:
            tx.status, tx.resp = code, fields

    # -- results ---------------------------------------------------------------------------

    def transactions(self, make: Any, *, connection: int, client: Any, server: Any, first_ns: int,
                     ended: bool) -> list[Any]:
        """The request streams and pushes as transactions (``make``: the Transaction constructor)."""
        out = []
        for tx in sorted(self._txs.values(), key=lambda x: x.seq):
            if tx.req_start is None and tx.status is None and not tx.req:
                continue
            req, resp = dict(tx.req), dict(tx.resp)
            method, path = req.get(":method"), req.get(":path")
            authority = req.get(":authority") or req.get("host")
            url = f"{req.get(':scheme', 'https')}://{authority}{path}" if authority and path else None
            partial = None
            if tx.reset is not None:
                partial = f"stream reset ({tx.reset})"
            elif tx.error is not None:
                partial = tx.error
            elif tx.req_start is None:
                partial = "request not seen (the capture missed it)"
            elif tx.req_end is None:
                partial = "request not seen to its end"
            elif tx.status is None:
                partial = "no response seen" + ("" if ended else " (connection still open)")
            elif tx.resp_end is None:
                partial = "response not seen to its end"
            cl = resp.get("content-length", "").strip()
            out.append(make(
                connection=connection, sequence=tx.seq, reused=tx.seq > 0, client=client, server=server,
                connection_start_ns=first_ns, started_ns=first_ns if tx.seq == 0 else tx.req_start,
                method=method, target=path, host=authority, url=url,
                request_version="3", status=tx.status, reason=None,
                response_version="3" if tx.status is not None else None, interim_statuses=tuple(tx.interim),
                request_start_ns=tx.req_start, request_end_ns=tx.req_end,
                response_start_ns=tx.resp_start, response_end_ns=tx.resp_end,
                request_header_bytes=tx.req_head or None, request_body_wire_bytes=tx.req_body,
                request_body_bytes=tx.req_body, request_missing_bytes=0,
                response_header_bytes=tx.resp_head or None,
                response_body_wire_bytes=tx.resp_body if tx.status is not None else None,
                response_body_bytes=tx.resp_body if tx.status is not None else None, response_missing_bytes=0,
                content_type=resp.get("content-type"), content_length=int(cl) if cl.isdigit() else None,
                content_encoding=resp.get("content-encoding"), transfer_encoding=None,
                referer=req.get("referer"), user_agent=req.get("user-agent"),
                request_headers=tuple(tx.req), response_headers=tuple(tx.resp),
                complete=partial is None, partial=partial, error=tx.error,
                protocol="h3", stream_id=tx.sid if tx.sid >= 0 else None,
                priority=req.get("priority"), pushed=tx.pushed, reset=tx.reset,
            ))
        return out
