"""TLS handshake timing from the in-order bytes of a TCP connection, without decryption.

Its parser (private: reached through :func:`qoe.web.http.parse` with ``protocol="tls"``,
whose result's ``tls`` is the :class:`TlsSession`) is a byte sink that reads the TLS record layer
of both directions (content type, version, length of every record) and the two hellos,
which travel in clear: the ClientHello's server name (SNI), offered ALPN protocols and
versions, and the ServerHello's chosen version, cipher suite and (TLS 1.2 and older)
ALPN protocol. Every record body is counted and skipped; only a hello being reassembled
is buffered (at most ``_MAX_HELLO_BYTES``), so memory stays bounded.

It is a module of its own, beside :mod:`qoe.web.http`, because its job is different
(record layer and hellos, RFC 8446/5246, no HTTP at all: the requests inside are
encrypted) and :mod:`qoe.web.http` only needs to hand it the connection.

What is measured
----------------
Each record's time is the capture time of the delivery that held its first byte.

* TLS 1.2 and older (RFC 5246 §7.3): the handshake is visible up to each side's
  ChangeCipherSpec; the handshake record that follows a side's ChangeCipherSpec is its
  (encrypted) Finished. The handshake ends at the later Finished (the server's in a full
  handshake, the client's in an abbreviated one). First application data: the first
  ``application_data`` record each way.
* TLS 1.3 (RFC 8446 §2, §5): everything after the ServerHello is encrypted and sent as
  ``application_data`` records, handshake messages included, so the server's Finished is
  not visible. The client's Finished is taken as the client's first ``application_data``
  record (when the ClientHello offered 0-RTT ``early_data``, the first one sent after the
  server's first ``application_data`` record, earlier ones being early data); the
  handshake ends there (``handshake_visible`` is False). First application data: the
  client's next record after its Finished, and the server's first record after the
  client's Finished — which may be a NewSessionTicket rather than response bytes (both are
  encrypted; they cannot be told apart).
* ``handshake_ns`` = handshake end − ClientHello; ``time_to_first_app_data_ns`` = the
  earlier first application data record (either way) − ClientHello.

References
----------
.. [1] RFC 8446, "The Transport Layer Security (TLS) Protocol Version 1.3" (2018): §4
   (handshake protocol, §4.1.2 ClientHello, §4.1.3 ServerHello and HelloRetryRequest,
   §4.2.1 supported_versions, §4.2.10 early_data, §4.2.11 pre_shared_key), §5.1 (record
   layer), §5.2 (record size limit), Appendix D.4 (middlebox compatibility mode).
.. [2] RFC 5246, "The Transport Layer Security (TLS) Protocol Version 1.2" (2008): §6.2
   (record layer), §7.1 (ChangeCipherSpec), §7.4 (handshake messages), §7.4.1.4
   (hello extensions).
.. [3] RFC 6066, "TLS Extensions: Extension Definitions" (2011), §3 (server_name).
.. [4] RFC 7301, "TLS Application-Layer Protocol Negotiation Extension" (2014), §3.1.
.. [5] RFC 6520, "TLS and DTLS Heartbeat Extension" (2012), §3 (content type 24).
.. [6] RFC 8701, "Applying GREASE to TLS Extensibility" (2020), §2 (reserved values).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from qoe.errors import InputError
from qoe.report import as_dict
from qoe.web._sink import CLIENT, SERVER, ConnectionId

__all__ = ["TlsSession", "TlsRecordCounts", "looks_like_tls"]

# RFC 8446 §5.1 / RFC 5246 §6.2.1: ContentType
_CHANGE_CIPHER_SPEC, _ALERT, _HANDSHAKE, _APPLICATION_DATA, _HEARTBEAT = 20, 21, 22, 23, 24
# RFC 8446 §4: HandshakeType
_CLIENT_HELLO, _SERVER_HELLO = 1, 2
# extension types: RFC 6066 §3, RFC 7301 §3.1, RFC 8446 §4.2
_EXT_SERVER_NAME, _EXT_ALPN, _EXT_PRE_SHARED_KEY, _EXT_EARLY_DATA, _EXT_SUPPORTED_VERSIONS = 0, 16, 41, 42, 43
_EXT_ENCRYPT_THEN_MAC = 22  # RFC 7366 §2
#: draft-ietf-tls-esni (TLS Encrypted Client Hello) §5 and its IANA code point: the
#: encrypted_client_hello extension, whose ECHClientHello starts with its type, outer(0) in the
#: ClientHelloOuter a client sends (read from the drafts' text as implementations document it,
#: Go's crypto/tls and rustls; not from an RFC).
_EXT_ECH, _ECH_OUTER = 0xFE0D, 0

# RFC 5246 §6.2.3: TLSCiphertext.length <= 2^14 + 2048 (RFC 8446 §5.2 lowers it to
# 2^14 + 256 for TLS 1.3; the older, larger bound is accepted for all versions)
_MAX_RECORD = 2**14 + 2048
# RFC 8446 §4.1.3: a ServerHello whose random is SHA-256("HelloRetryRequest")
_HRR_RANDOM = bytes.fromhex("CF21AD74E59A6111BE1D8C021E65B891C2A211167ABB8C5E079E09E2C8A8339C")
#: Most bytes of one hello message reassembled (ClientHello/ServerHello lengths are 24-bit,
#: RFC 8446 §4; real ones are a few kilobytes, post-quantum key shares included).
_MAX_HELLO_BYTES = 65536
_MAX_APP_TIMES = 64  # application_data record times kept per direction for TLS 1.3's rules

#: Protocol version numbers (RFC 8446 §4.2.1, RFC 5246 Appendix E, RFC 6101).
_VERSION_NAMES = {0x0300: "SSL 3.0", 0x0301: "TLS 1.0", 0x0302: "TLS 1.1", 0x0303: "TLS 1.2", 0x0304: "TLS 1.3"}


def _ech_outer(etype: int, data: bytes | memoryview) -> bool:
    """A ClientHello extension is an ``encrypted_client_hello`` of type outer (ECH's
    ClientHelloOuter, or its GREASE)."""
    return etype == _EXT_ECH and data[:1] == bytes([_ECH_OUTER])


def _grease(value: int) -> bool:
    # RFC 8701 §2: 0x0A0A, 0x1A1A, ..., 0xFAFA
    return (value & 0x0F0F) == 0x0A0A and (value >> 8) == (value & 0xFF)


def looks_like_tls(prefix: bytes) -> bool | None:
    """Whether a connection's first client bytes start a TLS handshake record.

    True for ``0x16 0x03 0x00..0x04`` (handshake record, SSL 3.0 - TLS 1.3 record version,
    RFC 8446 §5.1), False when they cannot, None when fewer than 3 bytes decide nothing.
    """
    if not prefix:
        return None
    if prefix[0] != _HANDSHAKE:
        return False
    if len(prefix) >= 2 and prefix[1] != 3:
        return False
    if len(prefix) < 3:
        return None
    return prefix[2] <= 4


@dataclass(frozen=True, slots=True)
class TlsRecordCounts:
    """Records of one direction by content type (RFC 8446 §5.1), and their payload bytes."""

    handshake: int = 0
    change_cipher_spec: int = 0
    alert: int = 0
    application_data: int = 0
    heartbeat: int = 0
    application_data_bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return as_dict(self)


@dataclass(frozen=True, slots=True)
class TlsSession:
    """What the clear-text parts of one TLS connection show.

    Times are capture times (integer ns) of the delivery holding a record's first byte;
    see the module docstring for what each one means in TLS 1.2 and 1.3.

    Attributes
    ----------
    connection : int
        :attr:`~qoe.web._sink.ConnectionId.index`.
    client, server : tuple of (str, int)
    connection_start_ns : int
        The connection's first packet (SYN when captured).
    server_name : str or None
        ClientHello ``server_name`` host_name (RFC 6066 §3).
    alpn_offered : tuple of str
        ClientHello ALPN protocol list (RFC 7301 §3.1).
    alpn : str or None
        The protocol the ServerHello selected (TLS <= 1.2; in TLS 1.3 it is in the
        encrypted EncryptedExtensions: None).
    record_version, client_version : int or None
        The first record's legacy_record_version and the ClientHello's legacy_version.
    offered_versions : tuple of int
        ClientHello supported_versions (GREASE values left out), else its legacy_version.
    version : int or None
        Negotiated: the ServerHello's supported_versions, else its legacy_version.
    version_name : str or None
        ``"TLS 1.3"``, ``"TLS 1.2"``, ...
    cipher_suite : int or None
        The ServerHello's cipher suite.
    hello_retry : bool
        A HelloRetryRequest was seen (a second ClientHello follows).
    early_data_offered : bool
        The (last) ClientHello carried ``early_data`` (0-RTT).
    ech_offered : bool
        The ClientHello carries an ``encrypted_client_hello`` extension of type outer: either
        Encrypted Client Hello's ClientHelloOuter (``server_name`` is then a public name, the
        name asked for is encrypted in the ClientHelloInner, and the key log names the inner
        one's random: ``qoe.web.decrypt`` finds its secrets by the server's first protected
        record) or its GREASE, which looks the same (draft-ietf-tls-esni §6.2: Chromium sends
        it on every connection it has no ECH keys for).
    resumed : bool or None
        TLS 1.3: the ServerHello accepted a pre_shared_key; TLS <= 1.2: the server's
        ChangeCipherSpec came before the client's (abbreviated handshake).
    client_hello_ns, server_hello_ns : int or None
    client_finished_ns, server_finished_ns : int or None
        See the module docstring (server_finished_ns is None in TLS 1.3).
    handshake_end_ns, handshake_ns : int or None
        End of the handshake as visible, and its duration from the ClientHello.
    handshake_visible : bool
        True when both Finished messages were seen as such (TLS <= 1.2).
    client_first_app_data_ns, server_first_app_data_ns : int or None
    time_to_first_app_data_ns : int or None
    client_bytes, server_bytes : int
        TCP payload bytes delivered each way (records and their headers).
    client_missing_bytes, server_missing_bytes : int
        Bytes the capture did not hold.
    client_last_byte_ns, server_last_byte_ns : int or None
        Capture time of the delivery that held the last byte each way: when that side's last
        new byte reached the capture point in order (a retransmission of bytes already
        delivered delivers nothing; one that fills a hole is the delivery). Without keys, the
        end of the encrypted objects a connection carried.
    client_records, server_records : TlsRecordCounts
    complete : bool
        Both hellos parsed and the end of the handshake found.
    error : str or None
        Bytes that are not TLS records (parsing of that direction stopped).
    """

    connection: int
    client: tuple[str, int]
    server: tuple[str, int]
    connection_start_ns: int
    server_name: str | None
    alpn_offered: tuple[str, ...]
    alpn: str | None
    record_version: int | None
    client_version: int | None
    offered_versions: tuple[int, ...]
    version: int | None
    version_name: str | None
    cipher_suite: int | None
    hello_retry: bool
    early_data_offered: bool
    resumed: bool | None
    client_hello_ns: int | None
    server_hello_ns: int | None
    client_finished_ns: int | None
    server_finished_ns: int | None
    handshake_end_ns: int | None
    handshake_ns: int | None
    handshake_visible: bool
    client_first_app_data_ns: int | None
    server_first_app_data_ns: int | None
    time_to_first_app_data_ns: int | None
    client_bytes: int
    server_bytes: int
    client_missing_bytes: int
    server_missing_bytes: int
    client_records: TlsRecordCounts
    server_records: TlsRecordCounts
    complete: bool
    error: str | None = None
    client_last_byte_ns: int | None = None
    server_last_byte_ns: int | None = None
    ech_offered: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain Python (record counts nested)."""
        return as_dict(self)


class _Reader:
    """Cursor over a hello's bytes; running past the end raises IndexError."""

    __slots__ = ("b", "i")

    def __init__(self, b: bytes) -> None:
        self.b = b
        self.i = 0

    def take(self, n: int) -> bytes:
        if self.i + n > len(self.b):
            raise IndexError("truncated")
        out = self.b[self.i:self.i + n]
        self.i += n
        return out

    def u8(self) -> int:
        return self.take(1)[0]

    def u16(self) -> int:
        return int.from_bytes(self.take(2), "big")

    def vec(self, size: int) -> bytes:
        return self.take(int.from_bytes(self.take(size), "big"))

    def done(self) -> bool:
        return self.i >= len(self.b)


def _alpn_chosen(data: bytes) -> str:
    """The protocol an ``application_layer_protocol_negotiation`` extension of a ServerHello or
    EncryptedExtensions names: the first of its ProtocolNameList (RFC 7301 §3.1: the server
    sends exactly one); IndexError when it is cut short. The one reader of the chosen ALPN
    (here, ``qoe.web.decrypt``, ``qoe.web.quic``)."""
    return _Reader(_Reader(data).vec(2)).vec(1).decode("ascii", "replace")


def _extensions(body: bytes, i: int = 0) -> list[tuple[int, bytes]]:
    """The extensions block at ``body[i:]`` (RFC 8446 §4.2, RFC 5246 §7.4.1.4: after a hello's
    fixed fields, optional in TLS <= 1.2: none when nothing follows; the whole body of an
    EncryptedExtensions) as ``(type, data)``; IndexError when it is cut short. The one reader
    of extensions (hellos over TCP here, over QUIC in ``qoe.web.quic``, EncryptedExtensions
    in ``qoe.web.decrypt``)."""
    if i >= len(body):
        return []
    if i + 2 > len(body):
        raise IndexError("truncated")
    n = body[i] << 8 | body[i + 1]
    block = body[i + 2:i + 2 + n]
    if len(block) != n:
        raise IndexError("truncated")
    out = []
    i = 0
    while i < n:
        # Extension = extension_type(2) extension_data<0..2^16-1>
        if i + 4 > n:
            raise IndexError("truncated")
        size = block[i + 2] << 8 | block[i + 3]
        if i + 4 + size > n:
            raise IndexError("truncated")
        out.append((block[i] << 8 | block[i + 1], block[i + 4:i + 4 + size]))
        i += 4 + size
    return out


class _Dir:
    __slots__ = (
        "hdr", "rec_type", "rec_left", "rec_ts", "counts", "hs", "hs_ts", "want_hs", "received", "missing",
        "stopped", "ccs_ts", "hs_after_ccs_ts", "app_times", "first_record_version", "error", "last_ts",
        "rec_version", "rec_len", "body", "lost",
    )

    def __init__(self) -> None:
        self.hdr = bytearray()
        self.rec_type = 0
        self.rec_left = 0
        # (for a reader of whole records) the record being read: its version and length, its
        # body so far when it spans deliveries, and whether a gap took bytes of it
        self.rec_version = 0
        self.rec_len = 0
        self.body = bytearray()
        self.lost = False
        self.rec_ts = 0
        self.counts = [0, 0, 0, 0, 0, 0]  # handshake, ccs, alert, app data, heartbeat, app bytes
        self.hs = bytearray()  # handshake messages being reassembled
        self.hs_ts = 0
        self.want_hs = True
        self.received = 0
        self.missing = 0
        self.stopped = False
        self.ccs_ts: int | None = None
        self.hs_after_ccs_ts: int | None = None
        self.app_times: list[int] = []
        self.first_record_version: int | None = None
        self.error: str | None = None
        self.last_ts: int | None = None  # the delivery of the latest byte


class _TlsSink:
    """Read the TLS record layer and hellos of one connection: a ByteSink.

    Parameters
    ----------
    conn : ConnectionId
    on_record, on_lost, on_not_tls : callable
        The reader of whole records (``qoe.web.decrypt.DecryptingTlsSink``, whose records this
        sink frames: one framer per connection), called in order each way:
        ``on_record(direction, start_ns, ts_ns, ctype, version, body)`` with each record
        once its last byte is delivered (``start_ns``: the delivery of its first byte;
        ``body``: bytes-like, to be read before the call returns, not kept);
        ``on_lost(direction, start_ns, ts_ns, ctype, length)`` with each record a gap took
        bytes of, once its end is known; ``on_not_tls(direction)`` when a direction's bytes stop
        being TLS records.

    Notes
    -----
    Feed with :meth:`data`, :meth:`gap` and :meth:`close`, then call :meth:`session`. A gap
    inside a record body is skipped (the record's length is known); a gap in a record
    header stops that direction's record parsing (its bytes are still counted); a gap in a
    hello being reassembled leaves that hello unparsed.
    """

    def __init__(self, conn: ConnectionId, on_record: Callable[..., None], on_lost: Callable[..., None],
                 on_not_tls: Callable[[int], None]) -> None:
        self.conn = conn
        self._on_record = on_record
        self._on_lost = on_lost
        self._on_not_tls = on_not_tls
        self._d = (_Dir(), _Dir())
        self._closed: list[str | None] = [None, None]
        # what the hellos said, read by the decrypting sink too (after each of its handshake
        # records: this reader has parsed the record first)
        self.server_name: str | None = None
        self._alpn_offered: tuple[str, ...] = ()
        self.alpn: str | None = None  # the ServerHello's (TLS <= 1.2; 1.3 sends it encrypted)
        self._client_version: int | None = None
        self._offered: tuple[int, ...] = ()
        self.client_random: bytes | None = None  # the first ClientHello's (the key log's index)
        self.server_random: bytes | None = None
        self.version: int | None = None  # set by a ServerHello (not a HelloRetryRequest)
        self.cipher_suite: int | None = None
        self.etm = False  # the ServerHello accepted encrypt_then_mac (RFC 7366; CBC suites)
        self._hrr = False
        self.early_offered = False  # (the last ClientHello's)
        self.ech = False  # an ECH ClientHelloOuter, or its GREASE
        self._psk = False
        self._client_hello_ts: int | None = None
        self._server_hello_ts: int | None = None

    # -- ByteSink -----------------------------------------------------------------------

    def data(self, direction: int, ts_ns: int, offset: int, payload: bytes) -> None:
        """Bytes ``[offset, offset + len(payload))`` of ``direction``, delivered at ``ts_ns``."""
        d = self._d[direction] if direction == CLIENT or direction == SERVER else self._dir(direction)
        expected = d.received + d.missing
        if offset > expected:
            self.gap(direction, ts_ns, expected, offset - expected)
        elif offset < expected:
            payload = payload[expected - offset:]
        if not payload:
            return
        d.received += len(payload)
        d.last_ts = ts_ns
        if not d.stopped:
            self._records(direction, d, ts_ns, memoryview(payload))

    def gap(self, direction: int, ts_ns: int, offset: int, length: int) -> None:
        """Bytes ``[offset, offset + length)`` of ``direction`` are missing."""
        if length <= 0:
            return
        d = self._dir(direction)
        d.missing += length
        if d.stopped:
            return
        while length:
            if d.rec_left:
                n = min(length, d.rec_left)
                if d.rec_type == _HANDSHAKE and d.want_hs:
                    d.want_hs = False  # the hello being reassembled lost bytes: give it up
                    d.hs = bytearray()
                d.rec_left -= n
                length -= n
                d.lost = True
                d.body = bytearray()
                if not d.rec_left:
                    d.lost = False
                    self._on_lost(direction, d.rec_ts, ts_ns, d.rec_type, d.rec_len)
            else:
                d.stopped = True
                d.error = d.error or f"gap of {length} bytes in a record header: record parsing stopped"
                return

    def close(self, direction: int, ts_ns: int, how: str) -> None:
        """``direction`` ended (``"fin"``, ``"rst"`` or ``"end-of-capture"``)."""
        self._closed[self._index(direction)] = how

    @property
    def finished(self) -> bool:
        """Both directions closed."""
        return None not in self._closed

    # -- parsing ------------------------------------------------------------------------

    @staticmethod
    def _index(direction: int) -> int:
        if direction not in (CLIENT, SERVER):
            raise InputError(f"direction must be CLIENT (0) or SERVER (1); given {direction!r}")
        return direction

    def _dir(self, direction: int) -> _Dir:
        return self._d[self._index(direction)]

    def _records(self, direction: int, d: _Dir, ts: int, buf: memoryview) -> None:
        i, n = 0, len(buf)
        to = self._on_record
        while i < n:
            left = d.rec_left
            if left == 0:
                if not d.hdr and n - i >= 5:
                    # the whole header in this delivery (the common case): read in place
                    d.rec_ts = ts
                    ctype, major, minor = buf[i], buf[i + 1], buf[i + 2]
                    length = buf[i + 3] << 8 | buf[i + 4]
                    i += 5
                else:
                    if not d.hdr:
                        d.rec_ts = ts  # the record starts in this delivery
                    take = min(5 - len(d.hdr), n - i)
                    d.hdr += buf[i:i + take]
                    i += take
                    if len(d.hdr) < 5:
                        return
                    ctype, major, minor = d.hdr[0], d.hdr[1], d.hdr[2]
                    length = int.from_bytes(d.hdr[3:5], "big")
                    d.hdr = bytearray()
                if not (_CHANGE_CIPHER_SPEC <= ctype <= _HEARTBEAT) or major != 3 or length > _MAX_RECORD:
                    d.stopped = True
                    d.error = f"not a TLS record header: type {ctype}, version {major}.{minor}, length {length}"
                    self._on_not_tls(direction)
                    return
                if d.first_record_version is None:
                    d.first_record_version = major << 8 | minor
                if ctype == _APPLICATION_DATA:  # (_record_start's most common case, without the call)
                    counts = d.counts
                    counts[3] += 1
                    counts[5] += length
                    if len(d.app_times) < _MAX_APP_TIMES:
                        d.app_times.append(d.rec_ts)
                    d.want_hs = False
                else:
                    self._record_start(direction, d, ctype, length)
                if n - i >= length and not (ctype == _HANDSHAKE and d.want_hs):
                    # the whole record in this delivery, no hello to read in it (the common
                    # case): handed on in place
                    to(direction, d.rec_ts, ts, ctype, major << 8 | minor, buf[i:i + length])
                    i += length
                    continue
                d.rec_type = ctype
                d.rec_left = left = length
                d.rec_version = major << 8 | minor
                d.rec_len = length
            take = left if left < n - i else n - i
            if d.rec_type == _HANDSHAKE and d.want_hs:
                if not d.hs:
                    d.hs_ts = d.rec_ts  # a handshake message starts in this record
                d.hs += buf[i:i + take]
                self._handshake_messages(direction, d)
            d.rec_left = left = left - take
            if left:
                if not d.lost:
                    d.body += buf[i:i + take]
            elif d.lost:
                d.lost = False
                self._on_lost(direction, d.rec_ts, ts, d.rec_type, d.rec_len)
            elif d.body:
                body, d.body = d.body, bytearray()
                body += buf[i:i + take]
                to(direction, d.rec_ts, ts, d.rec_type, d.rec_version, body)
            else:  # the whole record in this delivery
                to(direction, d.rec_ts, ts, d.rec_type, d.rec_version, buf[i:i + take])
            i += take

    def _record_start(self, direction: int, d: _Dir, ctype: int, length: int) -> None:
        ts = d.rec_ts
        if ctype == _HANDSHAKE:
            d.counts[0] += 1
            if d.ccs_ts is not None and d.hs_after_ccs_ts is None:
                d.hs_after_ccs_ts = ts  # RFC 5246 §7.4.9: Finished follows ChangeCipherSpec
        elif ctype == _CHANGE_CIPHER_SPEC:
            d.counts[1] += 1
            if d.ccs_ts is None:
                d.ccs_ts = ts
            if not self._hrr_pending():  # (after a HelloRetryRequest, hellos follow a CCS)
                d.want_hs = False  # what follows is encrypted (RFC 5246 §7.1)
        elif ctype == _ALERT:
            d.counts[2] += 1
        elif ctype == _APPLICATION_DATA:
            d.counts[3] += 1
            d.counts[5] += length
            if len(d.app_times) < _MAX_APP_TIMES:
                d.app_times.append(ts)
            d.want_hs = False
        else:
            d.counts[4] += 1

    def _handshake_messages(self, direction: int, d: _Dir) -> None:
        # RFC 8446 §4: Handshake = msg_type(1) length(3) body
        while d.want_hs and len(d.hs) >= 4:
            mtype = d.hs[0]
            mlen = int.from_bytes(d.hs[1:4], "big")
            if mlen + 4 > _MAX_HELLO_BYTES:
                d.want_hs = False
                d.hs = bytearray()
                return
            if len(d.hs) < 4 + mlen:
                return
            body = bytes(d.hs[4:4 + mlen])
            del d.hs[:4 + mlen]
            start_ts = d.hs_ts
            d.hs_ts = d.rec_ts
            try:
                if direction == CLIENT and mtype == _CLIENT_HELLO:
                    self._client_hello(body, start_ts)
                    d.want_hs = False  # a second ClientHello (after HRR) re-enables it
                elif direction == SERVER and mtype == _SERVER_HELLO:
                    self._server_hello(body, start_ts)
                    if not self._hrr_pending():
                        d.want_hs = False
            except IndexError:
                d.error = d.error or f"truncated {'ClientHello' if direction == CLIENT else 'ServerHello'}"
                d.want_hs = False
            if direction == SERVER and self._hrr_pending():
                self._d[CLIENT].want_hs = True  # RFC 8446 §4.1.4: the client sends a new ClientHello
        if not d.want_hs:
            d.hs = bytearray()

    def _hrr_pending(self) -> bool:
        return self._hrr and self.version is None

    def _client_hello(self, body: bytes, ts: int) -> None:
        # RFC 8446 §4.1.2 (same layout as RFC 5246 §7.4.1.2)
        r = _Reader(body)
        legacy = r.u16()
        random = r.take(32)
        if self.client_random is None:
            self.client_random = random  # (a second ClientHello, after HRR, repeats it: RFC 8446 §4.1.2)
        r.vec(1)  # legacy_session_id
        r.vec(2)  # cipher_suites
        r.vec(1)  # legacy_compression_methods
        exts = _extensions(r.b, r.i)
        if self._client_hello_ts is None:
            self._client_hello_ts = ts
        self._client_version = legacy
        offered: tuple[int, ...] = (legacy,)
        self.early_offered = False
        for etype, data in exts:
            if etype == _EXT_SERVER_NAME:
                e = _Reader(data)
                names = _Reader(e.vec(2))  # RFC 6066 §3: ServerNameList
                while not names.done():
                    kind = names.u8()
                    name = names.vec(2)
                    if kind == 0 and self.server_name is None:  # host_name
                        self.server_name = name.decode("ascii", "replace")
            elif etype == _EXT_ALPN:
                protos = _Reader(_Reader(data).vec(2))  # RFC 7301 §3.1: ProtocolNameList
                out = []
                while not protos.done():
                    out.append(protos.vec(1).decode("ascii", "replace"))
                self._alpn_offered = tuple(out)
            elif etype == _EXT_SUPPORTED_VERSIONS:
                vs = _Reader(_Reader(data).vec(1))  # RFC 8446 §4.2.1: versions<2..254>
                listed = []
                while not vs.done():
                    v = vs.u16()
                    if not _grease(v):
                        listed.append(v)
                offered = tuple(listed)
            elif etype == _EXT_EARLY_DATA:
                self.early_offered = True
            elif _ech_outer(etype, data):
                self.ech = True
        self._offered = offered

    def _server_hello(self, body: bytes, ts: int) -> None:
        # RFC 8446 §4.1.3 (RFC 5246 §7.4.1.3)
        r = _Reader(body)
        legacy = r.u16()
        random = r.take(32)
        r.vec(1)  # legacy_session_id_echo
        cipher = r.u16()
        r.u8()  # legacy_compression_method
        exts = _extensions(r.b, r.i)
        if random == _HRR_RANDOM:
            self._hrr = True  # RFC 8446 §4.1.3: HelloRetryRequest, not a ServerHello
            return
        self._server_hello_ts = ts
        self.cipher_suite = cipher
        version = legacy
        for etype, data in exts:
            e = _Reader(data)
            if etype == _EXT_SUPPORTED_VERSIONS:
                version = e.u16()  # RFC 8446 §4.2.1: selected_version
            elif etype == _EXT_ALPN:
                self.alpn = _alpn_chosen(data)
            elif etype == _EXT_PRE_SHARED_KEY:
                self._psk = True
            elif etype == _EXT_ENCRYPT_THEN_MAC:
                self.etm = True
        self.server_random = random
        self.version = version

    # -- result -------------------------------------------------------------------------

    def session(self) -> TlsSession:
        """What was seen so far."""
        c, s = self._d
        ch, sh = self._client_hello_ts, self._server_hello_ts
        version = self.version
        cfin = sfin = end = None
        cfirst = sfirst = None
        visible = False
        resumed: bool | None = None
        if version is not None and version >= 0x0304:
            times = c.app_times
            if self.early_offered and s.app_times:
                times = [t for t in c.app_times if t >= s.app_times[0]]
            if times:
                cfin = times[0]
                k = c.app_times.index(cfin)
                cfirst = c.app_times[k + 1] if k + 1 < len(c.app_times) else None
                sfirst = next((t for t in s.app_times if t > cfin), None)
            end = cfin
            resumed = self._psk
        elif version is not None:
            cfin, sfin = c.hs_after_ccs_ts, s.hs_after_ccs_ts
            if cfin is not None and sfin is not None:
                end = max(cfin, sfin)
                visible = True
            cfirst = c.app_times[0] if c.app_times else None
            sfirst = s.app_times[0] if s.app_times else None
            if c.ccs_ts is not None and s.ccs_ts is not None:
                resumed = s.ccs_ts < c.ccs_ts
        firsts = [t for t in (cfirst, sfirst) if t is not None]
        error = "; ".join(f"{side}: {d.error}" for side, d in (("client", c), ("server", s)) if d.error) or None
        return TlsSession(
            connection=self.conn.index,
            client=self.conn.client,
            server=self.conn.server,
            connection_start_ns=self.conn.first_ts_ns,
            server_name=self.server_name,
            alpn_offered=self._alpn_offered,
            alpn=self.alpn,
            record_version=c.first_record_version,
            client_version=self._client_version,
            offered_versions=self._offered,
            version=version,
            version_name=_VERSION_NAMES.get(version) if version is not None else None,
            cipher_suite=self.cipher_suite,
            hello_retry=self._hrr,
            early_data_offered=self.early_offered,
            resumed=resumed,
            client_hello_ns=ch,
            server_hello_ns=sh,
            client_finished_ns=cfin,
            server_finished_ns=sfin,
            handshake_end_ns=end,
            handshake_ns=None if end is None or ch is None else end - ch,
            handshake_visible=visible,
            client_first_app_data_ns=cfirst,
            server_first_app_data_ns=sfirst,
            time_to_first_app_data_ns=min(firsts) - ch if firsts and ch is not None else None,
            client_bytes=c.received,
            server_bytes=s.received,
            client_missing_bytes=c.missing,
            server_missing_bytes=s.missing,
            client_records=TlsRecordCounts(*c.counts),
            server_records=TlsRecordCounts(*s.counts),
            complete=ch is not None and sh is not None and end is not None,
            error=error,
            client_last_byte_ns=c.last_ts,
            server_last_byte_ns=s.last_ts,
            ech_offered=self.ech,
        )
