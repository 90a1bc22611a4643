"""Encrypted responses by size and time: what a capture shows of HTTP it cannot decrypt.

Without keys a capture shows, per TLS connection, the web layer's *no-keys view*
(:class:`qoe.web.decrypt.EncryptedBurst`): runs of ``application_data`` records one way
with nothing the other way in between, their times and their ciphertext bytes; per QUIC
connection (:func:`qoe.web.quic.quic_connections` finds them), its datagrams.
:func:`opaque_downloads` makes one :class:`Download` per response:

* each client run carrying a request starts a response; the server's bytes until the next
  one are its size (record payloads: the body, the head and about 0.2 % of TLS overhead;
  bytes the capture did not hold are counted from the record headers, retransmitted bytes
  once); a connection reset (RST) after a response started makes it aborted (a player that
  abandons a download resets the connection). Server bytes before the first request (the TLS
  1.3 server's encrypted handshake) are left out. Connections opened with a key log are left
  out (their transactions are seen).
* TLS: a client run of records carries as many requests as its sizes say (one record per
  HTTP/2 HEADERS of about TLS_REQUEST_RECORD_BYTES, control frames of
  TLS_CONTROL_RECORD_BYTES carry none and do not split a response).
* QUIC (HTTP/3 without keys): a client short-header datagram of at least
  QUIC_REQUEST_MIN_BYTES carries a request; smaller ones are acknowledgements and do not split
  the server's bytes. Requests within MUX_WINDOW_NS of a response's first (before
  MIN_SEGMENT_BYTES came back) were sent together: one Download with ``requests`` > 1, the
  responses' bytes together (HTTP/3 multiplexes them on one connection).
* Connections to one of ``ports`` that are not TLS are read the same way from their TCP
  bytes (cleartext read as if encrypted: how the inference is tested against the truth).

References
----------
.. [1] RFC 8446 (TLS 1.3) §5 (records: the handshake, then application data), §5.2 (the inner
   content type and the AEAD tag).
.. [2] RFC 9293 (TCP) §3.4 (sequence numbers: bytes counted once).
.. [3] RFC 9000 (QUIC) §17 (long and short headers), §19.3 (ACK frames); RFC 9001 §5.3 (AEAD).
.. [4] RFC 9113 (HTTP/2) §4.1, §6.4, §6.9 (frames); RFC 9114 (HTTP/3) §7.2.2 (HEADERS).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qoe.capture import read_packets
from qoe.report import as_dict
from qoe.web.decrypt import DecryptingTlsSink, DiscardSink
from qoe.web.keylog import KeyLog, load_keylog
from qoe.web.quic import quic_connections
from qoe.web.tcp import CLIENT, SERVER, connections

__all__ = ["Download", "opaque_downloads", "MIN_SEGMENT_BYTES", "QUIC_REQUEST_MIN_BYTES", "TLS_CONTROL_RECORD_BYTES",
           "TLS_REQUEST_RECORD_BYTES", "MUX_WINDOW_NS"]

#: Without a manifest, smaller responses are not segments (playlists, init segments, scripts'
#: small objects: 0.8-4 KB in data/video/has; a 2 s segment of 32 kbit/s audio is 8 KB).
MIN_SEGMENT_BYTES = 6000
#: A client QUIC datagram with a short header (RFC 9000 §17.3) of at least this many UDP payload
#: bytes carries a request; smaller ones only ACK frames. Measured on data/video/has hls-h3
#: (aioquic server, chromium client): the client's 1199 ACK-only datagrams are 30-39 bytes
#: (1-byte header, 8-byte connection ID, 1-4-byte packet number, an ACK frame of RFC 9000
#: §19.3, 16-byte AEAD tag of RFC 9001 §5.3), its 22 request datagrams (an HTTP/3 HEADERS
#: frame, RFC 9114 §7.2.2, QPACK-encoded) 80-147 bytes.
QUIC_REQUEST_MIN_BYTES = 60
#: A TLS 1.3 record carrying one HTTP/2 control frame: 9-byte frame header (RFC 9113 §4.1), a
#: 4-byte WINDOW_UPDATE or RST_STREAM payload (§6.9, §6.4), 1-byte inner content type and
#: 16-byte tag (RFC 8446 §5.2): 30 bytes; measured 30 on data/video/has dash-h2.
TLS_CONTROL_RECORD_BYTES = 30
#: A TLS record carrying one HTTP/2 request (HEADERS, HPACK with its dynamic table): measured
#: 65-70 bytes on data/video/has dash-h2.
TLS_REQUEST_RECORD_BYTES = 70
#: Requests sent within this time of a response's first request, before MIN_SEGMENT_BYTES of it
#: came back, are taken as sent together (multiplexed: hls.js and dash.js ask for an audio and
#: a video segment together; measured up to 28 ms apart on data/video/has hls-h3).
MUX_WINDOW_NS = 100_000_000


@dataclass(frozen=True, slots=True)
class Download:
    """One response of an opaque (encrypted) connection: sizes and times only.

    ``requests`` > 1: the client sent that many requests at once (multiplexed HTTP/2 or
    HTTP/3) and the server's bytes that followed are their responses together, interleaved
    (their boundaries are not visible). ``transport``: ``"tcp"`` (TLS records or TCP bytes)
    or ``"quic"`` (QUIC datagrams). ``request_bytes``: the client's bytes of the run(s) that
    carried the requests.
    """

    connection: tuple[str, int, str, int]
    request_ns: int
    first_byte_ns: int | None
    last_byte_ns: int | None
    bytes: int
    aborted: bool = False
    requests: int = 1
    transport: str = "tcp"
    request_bytes: int = 0

    @property
    def client(self) -> str:
        """The client's address."""
        return self.connection[0]

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain Python."""
        return as_dict(self)


_DISCARD = DiscardSink()  # the application sink of a connection read for its sizes only


class _Opaque:
    """One connection: TLS records' bursts (the web layer's no-keys view) and, for a port read
    as opaque, the TCP bytes' runs (cleartext read as if encrypted)."""

    def __init__(self, conn: Any, keylog: KeyLog, raw: bool) -> None:
        self.conn = conn
        self.tls = DecryptingTlsSink(conn, keylog, http1=lambda _c: _DISCARD, h2=lambda _c: _DISCARD)
        self.raw: list[list[int]] | None = [] if raw else None  # [direction, start, end, bytes]
        self.first_client: bytes | None = None

    def _run(self, direction: int, ts: int, n: int) -> None:
        if self.raw is None or n <= 0:
            return
        if self.raw and self.raw[-1][0] == direction:
            self.raw[-1][2] = ts
            self.raw[-1][3] += n
        else:
            self.raw.append([direction, ts, ts, n])

    def data(self, direction: int, ts_ns: int, offset: int, payload: bytes) -> None:
        if direction == CLIENT and self.first_client is None and payload:
            self.first_client = bytes(payload[:1])
        self.tls.data(direction, ts_ns, offset, payload)
        self._run(direction, ts_ns, len(payload))

    def gap(self, direction: int, ts_ns: int, offset: int, length: int) -> None:
        self.tls.gap(direction, ts_ns, offset, length)
        self._run(direction, ts_ns, length)  # bytes the capture cut (a snap length): still sent

    def close(self, direction: int, ts_ns: int, how: str) -> None:
        self.tls.close(direction, ts_ns, how)

    def bursts(self) -> tuple[str, list[tuple[int, int, int, int, int]]]:
        """("tls" | "raw" | "decrypted" | "none", [(direction, start, end, bytes, records)])."""
        if self.first_client == b"\x16":  # RFC 8446 §5.1: a handshake record
            dec = self.tls.decryption()
            if dec.decrypted:
                return "decrypted", []
            return "tls", [(CLIENT if b.direction == "client" else SERVER, b.start_ns, b.end_ns, b.bytes, b.records)
                           for b in dec.bursts]
        if self.raw is not None:
            return "raw", [(r[0], r[1], r[2], r[3], 1) for r in self.raw]
        return "none", []


def opaque_downloads(capture: str | os.PathLike[str], *, ports: Sequence[int] = (443,),
                     keylog: Any = None) -> list[Download]:
    """The responses of the capture's encrypted connections, by size and time.

    Parameters
    ----------
    capture : path
    ports : sequence of int, keyword-only
        TLS connections are read whatever their port; a connection that is not TLS is read
        (its TCP bytes, as if encrypted) only when its server port is listed (default 443).
    keylog : path, sequence of paths or qoe.web.keylog.KeyLog, optional, keyword-only
        Connections it opens are left out (their transactions are seen decrypted).

    Returns
    -------
    list of Download
        In request order.
    """

    want = set(ports)
    log = load_keylog(capture, keylog) or KeyLog()
    sinks: list[_Opaque] = []

    def factory(conn: Any) -> _Opaque:
        s = _Opaque(conn, log, conn.server[1] in want)
        sinks.append(s)
        return s

    conns = {c.id.index: c for c in connections(capture, sinks=factory)}
    out: list[Download] = []
    for s in sinks:
        kind, bursts = s.bursts()
        if kind in ("decrypted", "none"):
            continue
        key = (s.conn.client[0], s.conn.client[1], s.conn.server[0], s.conn.server[1])
        c = conns.get(s.conn.index)
        rst = c.rst_ts_ns if c is not None and c.rst_ts_ns is not None else None
        events = [(d, a, b, n, (_tls_requests(r, n) if kind == "tls" else 1) if d == CLIENT else 0)
                  for d, a, b, n, r in bursts]
        out += _responses(key, events, rst, "tcp", group=False)
    out += _quic_downloads(capture, log)
    out.sort(key=lambda d: d.request_ns)
    return out


def _tls_requests(records: int, nbytes: int) -> int:
    """How many requests a client burst of TLS records carries: each request is one record of
    about TLS_REQUEST_RECORD_BYTES, each control frame (HTTP/2 WINDOW_UPDATE, SETTINGS ACK,
    PING, RST_STREAM) one of about TLS_CONTROL_RECORD_BYTES; a record larger than a request
    (an HTTP/1.1 request, a first HEADERS without HPACK's dynamic table) is one request."""
    n = round((nbytes - TLS_CONTROL_RECORD_BYTES * records) / (TLS_REQUEST_RECORD_BYTES - TLS_CONTROL_RECORD_BYTES))
    return max(0, min(records, n))


def _responses(key: tuple[str, int, str, int], events: Sequence[tuple[int, int, int, int, int]],
               rst_ns: int | None, transport: str, *, group: bool) -> list[Download]:
    """Downloads from one connection's runs ``(direction, start, end, bytes, requests)``: each
    client run carrying requests starts a response (runs carrying none, acknowledgements and
    control frames, do not), and a run carries as many requests as ``requests`` says (TLS: its
    records, :func:`_tls_requests`). With ``group`` (HTTP/3: always multiplexed), requests in
    separate runs within MUX_WINDOW_NS of a response's first one, before MIN_SEGMENT_BYTES of it
    came back, join it (sent at once, answered together). Without (TLS: HTTP/1.1 and HTTP/2 are
    not told apart without keys, and an HTTP/1.1 client asks for a segment right after a small
    response on the same connection), separate runs are separate responses."""
    reqs: list[list[Any]] = []  # [request, first byte, last byte, bytes, requests, request bytes]
    for direction, start, end, n, nreq in events:
        if direction == CLIENT:
            if nreq <= 0:
                continue
            if reqs and reqs[-1][1] is None:
                reqs[-1][5] += n
                if group:  # another request before any answer: sent together
                    reqs[-1][4] += nreq
                continue  # (else the request goes on: a request in several runs), no answer yet
            if group and reqs and start - reqs[-1][0] <= MUX_WINDOW_NS and reqs[-1][3] < MIN_SEGMENT_BYTES:
                reqs[-1][4] += nreq
                reqs[-1][5] += n
                continue
            reqs.append([start, None, None, 0, nreq, n])
        elif reqs:  # server bytes before any request: the TLS 1.3 server's handshake flight
            r = reqs[-1]
            r[1] = start if r[1] is None else r[1]
            r[2] = end
            r[3] += n
    out = []
    for k, r in enumerate(reqs):
        if r[3] <= 0:
            continue
        aborted = rst_ns is not None and k == len(reqs) - 1 and rst_ns >= r[0]
        out.append(Download(key, r[0], r[1], r[2], r[3], aborted=aborted, requests=r[4], transport=transport,
                            request_bytes=r[5]))
    return out


def _quic_downloads(capture: str | os.PathLike[str], keylog: KeyLog) -> list[Download]:
    """Downloads of the capture's QUIC connections the key log does not open, from their
    datagrams (:func:`qoe.web.quic.quic_connections` finds the connections; their 1-RTT
    datagrams are read with :func:`qoe.capture.read_packets`). A client short-header datagram
    of at least QUIC_REQUEST_MIN_BYTES carries a request (an HTTP/3 HEADERS frame); smaller
    ones carry only ACK frames and do not split the server's bytes."""
    conns = [c for c in quic_connections(capture, keylog=keylog if keylog else None) if not c.decrypted]
    if not conns:
        return []
    ends = {c.client: c.server for c in conns}
    runs: dict[tuple[Any, Any], list[list[int]]] = {}
    for p in read_packets(capture, protocols=("udp",)):
        a, b = (p.src, p.sport), (p.dst, p.dport)
        if ends.get(a) == b:
            direction, key = CLIENT, (a, b)
        elif ends.get(b) == a:
            direction, key = SERVER, (b, a)
        else:
            continue
        data = bytes(p.payload)
        if not data or data[0] & 0x80:  # RFC 9000 §17.2: a long header (handshake): not a response's bytes
            continue
        nreq = int(len(data) >= QUIC_REQUEST_MIN_BYTES) if direction == CLIENT else 0
        if direction == CLIENT and not nreq:
            continue  # an acknowledgement: the server's run goes on
        rs = runs.setdefault(key, [])
        if rs and rs[-1][0] == direction:
            rs[-1][2] = p.ts_ns
            rs[-1][3] += len(data)
            rs[-1][4] += nreq
        else:
            rs.append([direction, p.ts_ns, p.ts_ns, len(data), nreq])
    out: list[Download] = []
    for (a, b), rs in runs.items():
        out += _responses((a[0], a[1], b[0], b[1]), [tuple(r) for r in rs], None, "quic",  # type: ignore[misc]
                          group=True)
    return out
