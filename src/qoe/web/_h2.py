"""HTTP/2 transactions from the decrypted (or h2c) byte streams of one connection.

An :class:`H2Sink` is a :class:`~qoe.web._sink.ByteSink`: each direction's bytes are cut
into frames (RFC 9113 §4.1) and parsed with ``hyperframe``; header blocks (HEADERS or
PUSH_PROMISE and their CONTINUATIONs, §4.3) are decoded with ``hpack``, one decoder per
direction as each endpoint keeps its own dynamic table (RFC 7541 §2.2), its table bound
following the peer's SETTINGS_HEADER_TABLE_SIZE (§6.5.2). Every stream that carries a
request becomes one :class:`~qoe.web.http.Transaction` (``protocol="h2"``), server pushes
included (PUSH_PROMISE, §8.4: ``pushed=True``, the promised request's headers).

Times (capture times, ns, of the delivery that held the byte, see ``qoe.web._sink``):
``request_start_ns`` the first byte of the request's HEADERS frame (of the PUSH_PROMISE for
a push); ``request_end_ns`` the last byte of the frame with END_STREAM; ``response_start_ns``
the first byte of the first response HEADERS (1xx included: the time to first byte);
``response_end_ns`` the last byte of the frame with END_STREAM. Sizes: header bytes are
the frames that carried the field block (9-byte frame headers and HPACK-compressed blocks);
body wire bytes the DATA frames' payloads (padding included), body bytes their data.

RST_STREAM (§6.4) marks its stream ``reset`` with the error code's name (§7); a GOAWAY
(§6.8) marks the streams above its last stream id that the receiver had opened
(``reset="GOAWAY <code>"``) and is reported per connection (:class:`Http2Summary`).
Priorities: the HEADERS frame's priority fields or a PRIORITY frame (RFC 7540 §5.3,
deprecated by RFC 9113 §5.3.2 but still sent) and the ``priority`` header field (RFC 9218 §4).

A gap (bytes missing) in a direction ends its parsing (frame boundaries are lost);
streams still open are partial. Bytes that are not HTTP/2 (a client without the preface,
a frame hyperframe or hpack rejects) stop the connection with an error; no exception
escapes.

References
----------
.. [1] RFC 9113, "HTTP/2" (2022): §3.4 (preface), §4.1 (frame format), §4.3 (field
   blocks), §5.1.1 (stream ids), §6 (frame definitions), §7 (error codes), §8.3
   (pseudo-header fields), §8.4 (server push).
.. [2] RFC 7541, "HPACK" (2015), §2.2, §4.2, §6.3 (dynamic table size update); §5.2 and
   Appendix B (Huffman code, decoded by hpack).
.. [3] RFC 7540 §5.3 (stream priority, weight = field + 1). RFC 9218 §4 (priority field).

Notes
-----
hpack decodes a Huffman-coded string (RFC 7541 §5.2) in pure Python, a table step per
nibble: a third of its time on a browser's header blocks. The same strings recur (the
user-agent, accept and sec-ch-ua fields of every request on every connection, a server's
content-type and server fields): on each Chromium HTTP/2 load of ``data/web/browser``, 80-82 %
of the Huffman-coded bytes are a string met before in the same capture. Importing this module
therefore memoizes hpack's Huffman decoder (:func:`_memoize_huffman`): a pure function of its
bytes, so every result is the one hpack computes (an invalid string still raises, as errors
are not cached); it holds the last 2048 strings. ``benchmarks/web_h2.py`` prints what it saves.

hpack also calls its module logger's ``debug`` for every integer and field it decodes (33 calls
a header block on Chromium's loads, each two Python calls into :mod:`logging` that find DEBUG
off): 7.5 % of hpack's time. While the ``hpack.hpack`` logger is not enabled for DEBUG,
:meth:`H2Sink` decodes a block with a logger whose ``debug`` does nothing in that module's
``log``, and puts hpack's own back after it (:func:`_decode_block`, checked at each block: a
program that turns hpack's DEBUG on gets every record of qoe's next block, and its own hpack
decoding between qoe's blocks logs as it would, tested); with hpack's own logger when DEBUG is
on, or when its module has no such logger (a later release).

With ``raw=True`` (fields as bytes, as qoe asks), hpack's ``decode`` ends by copying every field
it decoded into a new tuple of the same class and the same two byte strings
(``_unicode_if_needed``): 20-25 % of hpack's time on Chromium's loads. Importing this module
puts a function in its place that returns such a field as it is, the same object hpack made
(:func:`_fields_as_decoded`); text fields (``raw=False``) and any field that is not two byte
strings go through hpack's own.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any

import hpack
import hpack.hpack
from hyperframe.exceptions import HyperframeError
from hyperframe.frame import (
    ContinuationFrame,
    DataFrame,
    Frame,
    GoAwayFrame,
    HeadersFrame,
    PriorityFrame,
    PushPromiseFrame,
    RstStreamFrame,
    SettingsFrame,
)

from qoe.report import as_dict
from qoe.web._fieldtext import fields_text
from qoe.web._requestline import PREFACE  # RFC 9113 §3.4 (the client connection preface)
from qoe.web._sink import CLIENT, SERVER, ConnectionId

__all__ = ["H2Sink", "Http2Summary", "PREFACE", "ERROR_CODES"]

#: RFC 9113 §7 error codes.
ERROR_CODES = {
    0x0: "NO_ERROR", 0x1: "PROTOCOL_ERROR", 0x2: "INTERNAL_ERROR", 0x3: "FLOW_CONTROL_ERROR",
    0x4: "SETTINGS_TIMEOUT", 0x5: "STREAM_CLOSED", 0x6: "FRAME_SIZE_ERROR", 0x7: "REFUSED_STREAM",
    0x8: "CANCEL", 0x9: "COMPRESSION_ERROR", 0xA: "CONNECT_ERROR", 0xB: "ENHANCE_YOUR_CALM",
    0xC: "INADEQUATE_SECURITY", 0xD: "HTTP_1_1_REQUIRED",
}
_MAX_FRAME = (1 << 24) - 1  # RFC 9113 §4.1: Length is 24 bits
_MAX_HEADER_LIST = 1 << 20  # decoded field list bound (hpack's default 64 KiB is below real Set-Cookie walls)
_MAX_BLOCK = 1 << 20  # a field block being gathered over CONTINUATIONs
_SETTINGS_HEADER_TABLE_SIZE = 0x1  # RFC 9113 §6.5.2
# RFC 9113 §6.1-§6.10: the frame header's flag bits read here (the frames hyperframe parsed define
# them: END_STREAM on DATA and HEADERS, END_HEADERS on HEADERS, PUSH_PROMISE and CONTINUATION,
# PRIORITY on HEADERS, ACK on SETTINGS), tested on the header's byte, not hyperframe's flag set
_END_STREAM, _END_HEADERS, _PRIORITY, _ACK = 0x01, 0x04, 0x20, 0x01


def _memoize_huffman() -> None:
    """Put a memo in front of the Huffman decoder hpack's ``Decoder`` calls (see the notes
    above); nothing if that name is gone from hpack (a later release) or memoized already.
    The memo takes the string as bytes whatever hpack hands it (a release that passes a
    memoryview slice, unhashable, gets the same results)."""
    decode = getattr(hpack.hpack, "decode_huffman", None)
    if not callable(decode) or hasattr(decode, "cache_info"):
        return
    cached = functools.lru_cache(maxsize=2048)(decode)

    def memo(data: Any) -> bytes:
        return cached(bytes(data)) if data else decode(data)

    memo.cache_info = cached.cache_info  # type: ignore[attr-defined]
    memo.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    memo.__wrapped__ = decode  # type: ignore[attr-defined]
    hpack.hpack.decode_huffman = memo


_memoize_huffman()


def _fields_as_decoded() -> None:
    """Let hpack's ``Decoder.decode(..., raw=True)`` return the fields it decoded as they are
    (see the notes above): ``hpack.hpack._unicode_if_needed`` copies each field into a new
    tuple of the same class with ``bytes()`` of its name and value, which are bytes already.
    A field whose name or value is not exactly ``bytes``, and every call with ``raw=False``,
    still goes through hpack's own function. Nothing if that name is gone from hpack (a later
    release) or is this already."""
    convert = getattr(hpack.hpack, "_unicode_if_needed", None)
    if not callable(convert) or hasattr(convert, "__wrapped__"):
        return

    def as_decoded(header: Any, raw: bool) -> Any:
        if raw and type(header[0]) is bytes and type(header[1]) is bytes:
            return header
        return convert(header, raw)

    as_decoded.__wrapped__ = convert  # type: ignore[attr-defined]
    hpack.hpack._unicode_if_needed = as_decoded


_fields_as_decoded()


class _QuietLog:
    """A logger whose ``debug`` does nothing: hpack's, while DEBUG is off for it (see the notes)."""

    __slots__ = ()

    def debug(self, *args: Any, **kwargs: Any) -> None:
        pass


_HPACK_LOG = getattr(hpack.hpack, "log", None)
if not hasattr(_HPACK_LOG, "isEnabledFor"):
    _HPACK_LOG = None  # (no such logger in this hpack: nothing is put in its place)
_QUIET = _QuietLog()


def _decode_block(decoder: hpack.Decoder, block: bytes) -> list[Any]:
    """``decoder.decode(block, raw=True)`` with the quiet logger in ``hpack.hpack.log`` while
    hpack's DEBUG records would be dropped anyway, hpack's own put back after (whatever else
    in the process decodes with hpack meanwhile logs as it would)."""
    real = _HPACK_LOG
    if real is None or real.isEnabledFor(logging.DEBUG):
        return decoder.decode(block, raw=True)
    hpack.hpack.log = _QUIET
    try:
        return decoder.decode(block, raw=True)
    finally:
        hpack.hpack.log = real


def _code(c: int) -> str:
    return ERROR_CODES.get(c, f"0x{c:x}")


@dataclass(frozen=True, slots=True)
class Http2Summary:
    """What an HTTP/2 connection showed beyond its streams.

    Attributes
    ----------
    client_frames, server_frames : int
        Frames parsed each way.
    client_settings, server_settings : tuple of (int, int)
        The first SETTINGS each side sent (identifier, value), RFC 9113 §6.5.2.
    goaways : tuple of (str, int, str, int)
        ``(sender, last_stream_id, error code name, time ns)`` per GOAWAY.
    resets : int
        RST_STREAM frames.
    pushes : int
        PUSH_PROMISE frames.
    error : str or None
        Why parsing stopped (not HTTP/2, a frame or field block that could not be decoded).
    """

    client_frames: int
    server_frames: int
    client_settings: tuple[tuple[int, int], ...]
    server_settings: tuple[tuple[int, int], ...]
    goaways: tuple[tuple[str, int, str, int], ...]
    resets: int
    pushes: int
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return as_dict(self)


class _Stream:
    __slots__ = (
        "sid", "seq", "pushed", "req", "resp", "status", "interim", "req_start", "req_end", "resp_start", "resp_end",
        "req_head", "resp_head", "req_wire", "req_body", "resp_wire", "resp_body", "priority", "field_priority",
        "reset", "partial",
    )

    def __init__(self, sid: int, seq: int, pushed: bool) -> None:
        self.sid = sid
        self.seq = seq
        self.pushed = pushed
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
        self.req_wire = 0
        self.req_body = 0
        self.resp_wire = 0
        self.resp_body = 0
        self.priority: str | None = None
        self.field_priority: str | None = None
        self.reset: str | None = None
        self.partial: str | None = None


class _Dir:
    __slots__ = ("buf", "start_ts", "received", "missing", "stopped", "preface", "frames", "decoder",
                 "block", "block_len", "block_sid", "block_kind", "block_end_stream", "block_start", "block_bytes",
                 "block_promised",
                 "settings")

    def __init__(self, direction: int) -> None:
        self.buf = bytearray()
        self.start_ts = 0
        self.received = 0
        self.missing = 0
        self.stopped = False
        self.preface = direction == CLIENT  # the client's 24 octets still to check
        self.frames = 0
        self.decoder = hpack.Decoder()
        self.decoder.max_header_list_size = _MAX_HEADER_LIST
        self.block: list[bytes] | None = None  # the fragments of a field block being gathered
        self.block_len = 0
        self.block_sid = 0
        self.block_kind = ""
        self.block_end_stream = False
        self.block_start = 0
        self.block_bytes = 0
        self.block_promised = 0
        self.settings: tuple[tuple[int, int], ...] | None = None


class H2Sink:
    """Parse one HTTP/2 connection into transactions (see the module docstring).

    Parameters
    ----------
    conn : ConnectionId
    scheme : str, keyword-only
        Used when a request lacks ``:scheme`` (default ``"https"``).
    """

    def __init__(self, conn: ConnectionId, *, scheme: str = "https") -> None:
        self.conn = conn
        self._scheme = scheme
        self._d = (_Dir(CLIENT), _Dir(SERVER))
        self._streams: dict[int, _Stream] = {}
        self._done: list[_Stream] = []
        self._count = 0
        self._goaways: list[tuple[str, int, str, int]] = []
        self._resets = 0
        self._pushes = 0
        self._error: str | None = None
        self._closed = [False, False]
        self._pending_priority: dict[int, str] = {}

    # -- ByteSink ------------------------------------------------------------------------

    def data(self, direction: int, ts_ns: int, offset: int, payload: bytes) -> None:
        d = self._d[direction]
        expected = d.received + d.missing
        if offset > expected:
            self.gap(direction, ts_ns, expected, offset - expected)
        elif offset < expected:
            payload = payload[expected - offset:]
        if not payload:
            return
        d.received += len(payload)
        if d.stopped:
            return
        if not d.buf and not d.preface:
            # nothing buffered (the common case): frames read from the payload itself, the rest kept
            d.start_ts = ts_ns
            n = len(payload)
            i = self._parse(direction, d, memoryview(payload), 0, n, ts_ns)
            if i is not None and i < n:
                d.buf += payload[i:] if i else payload
            return
        if not d.buf:
            d.start_ts = ts_ns
        d.buf += payload
        self._frames(direction, d, ts_ns)

    def gap(self, direction: int, ts_ns: int, offset: int, length: int) -> None:
        if length <= 0:
            return
        d = self._d[direction]
        d.missing += length
        if not d.stopped:
            d.stopped = True
            d.buf = bytearray()
            self._mark_open(direction, "bytes missing from the capture: HTTP/2 frames lost their boundaries")

    def close(self, direction: int, ts_ns: int, how: str) -> None:
        self._closed[direction] = True

    @property
    def finished(self) -> bool:
        return all(self._closed)

    # -- frames ----------------------------------------------------------------------------

    def _stop(self, why: str) -> None:
        self._error = self._error or why
        for d in self._d:
            d.stopped = True
            d.buf = bytearray()
        self._mark_open(None, why)

    def _mark_open(self, direction: int | None, why: str) -> None:
        for s in self._streams.values():
            if s.partial is None and (s.req_end is None or s.resp_end is None) and s.reset is None:
                s.partial = why

    def _frames(self, direction: int, d: _Dir, ts: int) -> None:
        buf = d.buf
        i = 0
        if d.preface:
            if len(buf) < len(PREFACE):
                if PREFACE[:len(buf)] != bytes(buf):
                    self._stop("the client's bytes do not start with the HTTP/2 connection preface (RFC 9113 §3.4)")
                return
            if bytes(buf[:len(PREFACE)]) != PREFACE:
                self._stop("the client's bytes do not start with the HTTP/2 connection preface (RFC 9113 §3.4)")
                return
            d.preface = False
            i = len(PREFACE)
        n = len(buf)
        if n - i >= 9 and n - i >= 9 + (buf[i] << 16 | buf[i + 1] << 8 | buf[i + 2]):
            # one immutable copy of what is buffered, its frames parsed through views of it
            # (hyperframe copies out what it keeps): no copy per frame
            end = self._parse(direction, d, memoryview(bytes(buf)), i, n, ts)
            if end is None:
                return
            i = end
        elif i >= n:
            d.start_ts = ts  # nothing left: the next byte comes in a later delivery
        del buf[:i]

    def _parse(self, direction: int, d: _Dir, view: memoryview, i: int, n: int, ts: int) -> int | None:
        """Parse the whole frames in ``view[i:n]``; returns where the first incomplete one
        starts (None when parsing stopped). ``d.start_ts`` is the time of the delivery that
        held the first byte of the frame at ``i`` and becomes that of the next frame's."""
        start_ts = d.start_ts
        parse_header = Frame.parse_frame_header
        while n - i >= 9:
            length = view[i] << 16 | view[i + 1] << 8 | view[i + 2]  # RFC 9113 §4.1: 24-bit Length
            if n - i < 9 + length:
                break
            try:
                frame, _ = parse_header(view[i:i + 9])
                frame.parse_body(view[i + 9:i + 9 + length])
            except (HyperframeError, ValueError, IndexError) as e:
                self._stop(f"{'client' if direction == CLIENT else 'server'}: HTTP/2 frame not parsed ({e})")
                return None
            flags = view[i + 4]  # RFC 9113 §4.1: the frame header's Flags
            i += 9 + length
            d.frames += 1
            try:
                self._frame(direction, d, frame, length, start_ts, ts, flags)
            except (hpack.HPACKError, UnicodeDecodeError, ValueError) as e:
                self._stop(f"{'client' if direction == CLIENT else 'server'}: field block not decoded ({e})")
                return None
            start_ts = ts  # the next frame starts in this delivery (or a later one)
        d.start_ts = start_ts if i < n else ts
        return i

    def _stream(self, sid: int, pushed: bool = False) -> _Stream:
        s = self._streams.get(sid)
        if s is None:
            s = _Stream(sid, self._count, pushed)
            self._count += 1
            self._streams[sid] = s
            p = self._pending_priority.pop(sid, None)
            if p is not None:
                s.priority = p
        return s

    def _frame(self, direction: int, d: _Dir, f: Any, length: int, start: int, end: int, flags: int) -> None:
        sid = f.stream_id
        if d.block is not None and not isinstance(f, ContinuationFrame):
            raise ValueError("a field block was interrupted by another frame (RFC 9113 §6.10)")
        if isinstance(f, DataFrame):
            s = self._streams.get(sid)
            if s is not None:
                if direction == CLIENT:
                    s.req_wire += length
                    s.req_body += len(f.data)
                    if flags & _END_STREAM:
                        s.req_end = end
                else:
                    s.resp_wire += length
                    s.resp_body += len(f.data)
                    if flags & _END_STREAM:
                        s.resp_end = end
        elif isinstance(f, (HeadersFrame, PushPromiseFrame)):
            d.block = [f.data]
            d.block_len = len(f.data)
            d.block_sid = sid
            d.block_kind = "push" if isinstance(f, PushPromiseFrame) else "headers"
            d.block_promised = f.promised_stream_id if isinstance(f, PushPromiseFrame) else 0
            d.block_end_stream = bool(flags & _END_STREAM) and isinstance(f, HeadersFrame)
            d.block_start = start
            d.block_bytes = 9 + length
            if flags & _PRIORITY and isinstance(f, HeadersFrame):
                self._priority(sid, f)
            if flags & _END_HEADERS:
                self._block_done(direction, d, end)
        elif isinstance(f, ContinuationFrame):
            if d.block is None or sid != d.block_sid:
                raise ValueError("CONTINUATION without its HEADERS (RFC 9113 §6.10)")
            d.block.append(f.data)
            d.block_len += len(f.data)
            d.block_bytes += 9 + length
            if d.block_len > _MAX_BLOCK:
                raise ValueError(f"field block longer than {_MAX_BLOCK} bytes")
            if flags & _END_HEADERS:
                self._block_done(direction, d, end)
        elif isinstance(f, RstStreamFrame):
            self._resets += 1
            s = self._streams.get(sid)
            if s is not None and s.reset is None:
                s.reset = f"RST_STREAM {_code(f.error_code)}"
        elif isinstance(f, PriorityFrame):
            self._priority(sid, f)
        elif isinstance(f, SettingsFrame):
            if not flags & _ACK:
                if d.settings is None:
                    d.settings = tuple(sorted(f.settings.items()))
                size = f.settings.get(_SETTINGS_HEADER_TABLE_SIZE)
                if size is not None:
                    # §6.5.2: bounds the table the *peer's* encoder may use, i.e. our decoder of the other direction
                    self._d[1 - direction].decoder.max_allowed_table_size = size
        elif isinstance(f, GoAwayFrame):
            side = "client" if direction == CLIENT else "server"
            self._goaways.append((side, f.last_stream_id, _code(f.error_code), end))
            # §6.8: streams above last_stream_id opened by the receiver were not processed
            receiver_parity = 0 if direction == CLIENT else 1  # server opens even ids, client odd ones
            for s in self._streams.values():
                if s.sid > f.last_stream_id and s.sid % 2 == receiver_parity and s.reset is None and s.resp_end is None:
                    s.reset = f"GOAWAY {_code(f.error_code)}"

    def _priority(self, sid: int, f: Any) -> None:
        s = self._streams.get(sid)
        if s is not None and s.priority is not None:
            return  # an open stream keeps its first (Chromium re-prioritises its streams)
        # RFC 7540 §5.3.2: the Weight field is weight - 1
        text = f"weight={f.stream_weight + 1} depends_on={f.depends_on} exclusive={bool(f.exclusive)}"
        if s is not None:
            s.priority = text
        else:
            self._pending_priority[sid] = text

    def _block_done(self, direction: int, d: _Dir, end: int) -> None:
        pieces, d.block = d.block or [b""], None
        block = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        fields = _decode_block(d.decoder, block)
        headers = fields_text(fields)
        sid, start, nbytes = d.block_sid, d.block_start, d.block_bytes
        if d.block_kind == "push":
            self._pushes += 1
            s = self._stream(d.block_promised, pushed=True)
            s.req = headers
            s.req_start = start
            s.req_end = end  # RFC 9113 §8.4.1: a promised request has no content
            s.req_head = nbytes
            return
        if direction == CLIENT:
            s = self._stream(sid)
            if s.req_start is None:
                s.req = headers
                s.req_start = start
                s.req_head = nbytes
                for k, v in headers:
                    if k == "priority":
                        s.field_priority = v
            # else: trailers
            if d.block_end_stream:
                s.req_end = end
            return
        s = self._streams.get(sid)
        if s is None:
            s = self._stream(sid)  # a response whose request the capture missed
        # (RFC 9113 §8.3: pseudo-header fields come first; a response has one, :status)
        status = headers[0][1] if headers and headers[0][0] == ":status" else next(
            (v for k, v in headers if k == ":status"), None)
        code = int(status) if status is not None and status.isdigit() else None
        if s.resp_start is None:
            s.resp_start = start
        if code is not None and 100 <= code < 200 and s.status is None:
            s.interim.append(code)
            s.resp_head += nbytes
        elif s.status is None:
            s.status = code
            s.resp = headers
            s.resp_head += nbytes
        if d.block_end_stream:
            s.resp_end = end

    # -- results ---------------------------------------------------------------------------

    def summary(self) -> Http2Summary:
        c, s = self._d
        return Http2Summary(
            client_frames=c.frames, server_frames=s.frames,
            client_settings=c.settings or (), server_settings=s.settings or (),
            goaways=tuple(self._goaways), resets=self._resets, pushes=self._pushes, error=self._error,
        )

    def transactions(self, make: Any) -> list[Any]:
        """The streams as transactions, in the order they were opened; ``make`` is the
        Transaction constructor (keyword arguments)."""
        conn = self.conn
        out = []
        ended = all(self._closed)
        for st in sorted(self._streams.values(), key=lambda x: x.seq):
            if st.req_start is None and st.status is None:
                continue  # a stream with no field block seen (a PRIORITY for an idle stream)
            req = dict(st.req)
            resp = dict(st.resp)
            method, path = req.get(":method"), req.get(":path")
            authority = req.get(":authority") or req.get("host")
            scheme = req.get(":scheme") or self._scheme
            url = f"{scheme}://{authority}{path}" if authority and path else None
            partial = st.partial
            if partial is None and st.reset is not None:
                partial = f"stream reset ({st.reset})"
            if partial is None:
                if st.req_start is None:
                    partial = "request not seen (the capture missed it)"
                elif st.req_end is None:
                    partial = "request not seen to its end" + ("" if ended else " (connection still open)")
                elif st.status is None:
                    partial = "no response seen"
                elif st.resp_end is None:
                    partial = "response not seen to its end"
            cl = resp.get("content-length", "").strip()
            prio = st.priority
            if st.field_priority is not None:
                prio = f"{prio}; {st.field_priority}" if prio else st.field_priority
            out.append(make(
                connection=conn.index, sequence=st.seq, reused=st.seq > 0, client=conn.client, server=conn.server,
                connection_start_ns=conn.first_ts_ns,
                started_ns=conn.first_ts_ns if st.seq == 0 else st.req_start,
                method=method, target=path, host=authority, url=url,
                request_version="2", status=st.status, reason=None,
                response_version="2" if st.status is not None else None,
                interim_statuses=tuple(st.interim),
                request_start_ns=st.req_start, request_end_ns=st.req_end,
                response_start_ns=st.resp_start, response_end_ns=st.resp_end,
                request_header_bytes=st.req_head or None,
                request_body_wire_bytes=st.req_wire, request_body_bytes=st.req_body, request_missing_bytes=0,
                response_header_bytes=st.resp_head or None,
                response_body_wire_bytes=st.resp_wire if st.status is not None else None,
                response_body_bytes=st.resp_body if st.status is not None else None,
                response_missing_bytes=0,
                content_type=resp.get("content-type"),
                content_length=int(cl) if cl.isdigit() else None,
                content_encoding=resp.get("content-encoding"),
                transfer_encoding=None,
                referer=req.get("referer"), user_agent=req.get("user-agent"),
                request_headers=tuple(st.req), response_headers=tuple(st.resp),
                complete=partial is None and self._error is None,
                partial=partial, error=self._error if partial is not None else None,
                protocol="h2", stream_id=st.sid, priority=prio, pushed=st.pushed, reset=st.reset,
            ))
        return out
