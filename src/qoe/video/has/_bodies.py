"""The bodies of a few HTTP/1.x responses (the manifests), read back from the capture.

:mod:`qoe.web` turns a capture into HTTP transactions without keeping any body (bounded
memory). A streaming session needs the bodies of its manifests, a few kilobytes each: this
module reads the server's bytes of those responses again, in one pass over the capture's TCP
segments (:func:`qoe.capture.tcp_segment_chunks`: the rows of the segments captured inside
the responses' time windows only), keeping only segments of the wanted connections inside
each response's window, and decodes the message: head up to the
blank line (RFC 9112 §2.1), body by ``Content-Length`` or the chunked coding (RFC 9112
§7.1), ``Content-Encoding`` gzip/deflate undone (RFC 9110 §8.4.1).

Only cleartext HTTP/1.x responses can be read this way; manifests of HTTPS sessions
(HTTP/1.1 over TLS, HTTP/2) are read from the decrypted streams with the key log
(:mod:`qoe.video.has.decrypted`), or given as files (``StreamingOptions.manifests``).

References
----------
.. [1] RFC 9112, "HTTP/1.1" (2022): §2.1 (message format), §6.3 (body length), §7.1 (chunked).
.. [2] RFC 9110, "HTTP Semantics" (2022): §8.4.1 (content codings).
.. [3] RFC 9293, "TCP" (2022): §3.4 (sequence numbers, modulo 2**32).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable
from itertools import chain
from dataclasses import dataclass

from qoe.capture import tcp_segment_chunks, time_spans

__all__ = ["ResponseWindow", "read_bodies", "decode_response"]

# Bytes more than this beyond the first byte of a response are not kept (a manifest larger than
# this is cut, and a note says so): the reader's memory bound.
MAX_BODY_BYTES = 8 << 20
_SLACK_NS = 1_000_000  # a segment captured up to 1 ms before the delivery time that holds its first byte


@dataclass(frozen=True, slots=True)
class ResponseWindow:
    """Which bytes to read: the server→client direction of one connection between two times.

    ``key`` is returned with the body; ``server`` and ``client`` are (address, port).
    """

    key: int
    server: tuple[str, int]
    client: tuple[str, int]
    start_ns: int
    end_ns: int


def _seq_order(segs: list[tuple[int, bytes]]) -> bytes:
    """The in-order bytes of segments (seq, payload, in capture order) from the response's first
    byte: the first segment that starts with an HTTP/1.x status line (sequence numbers mod 2**32)."""
    if not segs:
        return b""
    base = next((seq for seq, data in segs if data.startswith(b"HTTP/1.")), segs[0][0])
    out = bytearray()
    for seq, data in sorted(segs, key=lambda s: (s[0] - base) % (1 << 32)):
        off = (seq - base) % (1 << 32)
        if off >= 1 << 31:
            continue  # before the response
        if off > len(out):
            break  # a hole: what follows cannot be placed
        out += data[len(out) - off:]
        if len(out) > MAX_BODY_BYTES:
            break
    return bytes(out)


def decode_response(raw: bytes) -> tuple[dict[str, str], bytes, bool]:
    """(header fields, lower-cased names; decoded body; whole) of one HTTP/1.x response's bytes."""
    start = raw.find(b"HTTP/1.")
    if start < 0:
        return {}, b"", False
    head, sep, rest = raw[start:].partition(b"\r\n\r\n")
    if not sep:
        return {}, b"", False
    fields: dict[str, str] = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        fields[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
    whole = True
    if "chunked" in fields.get("transfer-encoding", "").lower():
        body = bytearray()
        pos = 0
        while True:
            eol = rest.find(b"\r\n", pos)
            if eol < 0:
                whole = False
                break
            try:
                size = int(rest[pos:eol].split(b";")[0], 16)
            except ValueError:
                whole = False
                break
            if size == 0:
                break
            body += rest[eol + 2: eol + 2 + size]
            if eol + 2 + size > len(rest):
                whole = False
                break
            pos = eol + 4 + size
        data = bytes(body)
    elif "content-length" in fields:
        n = int(fields["content-length"])
        data = rest[:n]
        whole = len(data) == n
    else:
        data = rest
    enc = fields.get("content-encoding", "").lower()
    if enc in ("gzip", "x-gzip", "deflate") and whole:
        try:
            data = zlib.decompress(data, 47 if enc != "deflate" else 15)
        except zlib.error:
            whole = False
    return fields, data, whole


def read_bodies(capture: str | os.PathLike[str], windows: Iterable[ResponseWindow]) -> dict[int, tuple[bytes, bool]]:
    """The decoded bodies of the responses in ``windows``: ``{key: (body, whole)}``.

    One pass over the capture's TCP segments; only segments of the windows' connections,
    captured inside a window, are kept (the rows of the segments captured outside every
    window are not built: ``SegmentChunk.rows(times=...)``). ``whole`` is False when bytes
    were missing (a gap, a snap length) or the body was cut at :data:`MAX_BODY_BYTES`.
    """

    wins = list(windows)
    by_flow: dict[tuple[str, int, str, int], list[ResponseWindow]] = {}
    for w in wins:
        by_flow.setdefault((w.server[0], w.server[1], w.client[0], w.client[1]), []).append(w)
    got: dict[int, list[tuple[int, bytes]]] = {w.key: [] for w in wins}
    spans = time_spans([(w.start_ns - _SLACK_NS, max(w.end_ns, w.start_ns - _SLACK_NS)) for w in wins])
    rows = chain.from_iterable(chunk.rows(times=spans) for chunk in tcp_segment_chunks(capture))
    for row in rows:
        ws = by_flow.get((row[2], row[3], row[4], row[5]))
        if not ws:
            continue
        payload = row[6]
        if not payload:
            continue
        ts = row[1]
        for w in ws:
            if w.start_ns - _SLACK_NS <= ts <= w.end_ns:
                got[w.key].append((row[7], bytes(payload)))
    out = {}
    for key, segs in got.items():
        _, body, whole = decode_response(_seq_order(segs))
        out[key] = (body, whole)
    return out
