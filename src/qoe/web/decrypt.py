"""TLS connections opened with the key log: decrypted byte streams for HTTP/1.x and HTTP/2.

A :class:`DecryptingTlsSink` is a :class:`~qoe.web._sink.ByteSink` for a TLS connection. It
reads the record layer of both directions, takes the ClientHello's ``random`` (the key
log's index), the ServerHello's version, random and cipher suite, finds the connection's
secrets in a :class:`~qoe.web.keylog.KeyLog`, and opens every protected record
(:mod:`qoe.web._tlsdecrypt`: TLS 1.2 AES-GCM, ChaCha20-Poly1305 and AES-CBC, TLS 1.3 with
key updates). The ``application_data`` plaintext of each direction goes, in order, to the
application-protocol sink: HTTP/2 (:mod:`qoe.web._h2`) when ALPN chose ``h2`` or when the
client's first plaintext bytes are the HTTP/2 connection preface (RFC 9113 §3.4), else the
HTTP/1.x sink the caller gives when ALPN chose HTTP/1.x or, without ALPN, the client's first
plaintext bytes may start a request line (RFC 9112 §3); a protocol that is neither (ALPN naming
another, or other first bytes: a TLS connection need not carry HTTP) is counted, not parsed,
and says so. The records are framed once, by the clear-text timing reader
``qoe.web.tls._TlsSink``, which gives each one whole to this sink (so a connection without
keys still has its handshake timing, and the bytes are walked once: two framers, one for the
timing and one for decryption, cost 4 % of a decrypted HTTP/2 pass in the split).

Times: a record's plaintext is delivered at the capture time of the delivery that
completed the record (a record can only be authenticated whole), as Wireshark attributes
a decrypted record to the frame that completed it.

Failures never raise: a record that fails authentication is counted
(:attr:`TlsDecryption.failed_records`) and its plaintext is a gap for the protocol above;
a connection without keys, with a cipher suite not decrypted here (CCM, 3DES...), or whose
handshake was not captured, says why in :attr:`TlsDecryption.note`.

Without keys (or before the keys apply), each direction's ``application_data`` records
are summed into *bursts*: a burst is a run of records sent one way with no record the
other way in between (the start of its first record, the end of its last, records and
bytes): what can be said of the objects' timing when they are not visible.

References
----------
.. [1] RFC 8446 (TLS 1.3): §4.1.2-§4.1.3 (hellos), §4.3.1 (EncryptedExtensions), §4.4.4
   (Finished), §4.6.3 (KeyUpdate), §5.1-§5.4 (record layer, protection, padding), §7.
.. [2] RFC 5246 (TLS 1.2): §6.2 (record layer), §7.1 (ChangeCipherSpec), §7.4.9 (Finished).
.. [3] RFC 7301 §3.1 (ALPN). RFC 9113 §3.4 (HTTP/2 connection preface).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from qoe.report import as_dict
from qoe.web._h2 import H2Sink
from qoe.web._requestline import MAX_SNIFF, PREFACE, looks_like_request
from qoe.web._sink import CLIENT, SERVER, ConnectionId
from qoe.web._tlsdecrypt import RecordCipher, Suite, suite_for, tls12_ciphers, tls13_cipher
from qoe.web.keylog import KeyLog
from qoe.web.tls import TlsSession, _alpn_chosen, _extensions, _TlsSink

__all__ = ["DecryptingTlsSink", "DiscardSink", "TlsDecryption", "EncryptedBurst", "MAX_BURSTS", "not_http"]

# RFC 8446 §5.1 ContentType
_CCS, _ALERT, _HANDSHAKE, _APPDATA = 20, 21, 22, 23
# RFC 8446 §4 HandshakeType
_END_OF_EARLY_DATA, _ENCRYPTED_EXTENSIONS, _FINISHED, _KEY_UPDATE = 5, 8, 20, 24
_EXT_ALPN, _EXT_EARLY_DATA = 16, 42  # RFC 7301 §3.1, RFC 8446 §4.2
_MAX_EARLY_RECORDS = 64  # 0-RTT records held until the ServerHello (max_early_data_size is 16 KiB in practice)
_MAX_ECH_HELD = 64  # an ECH server's records held until its client answers (its handshake flight: a few)
#: Bursts kept per connection (later ones are counted in :attr:`TlsDecryption.bursts_dropped`).
MAX_BURSTS = 4096
_HELD_MAX = 1 << 20  # server plaintext held until the client's first bytes choose the protocol
#: ALPN protocol IDs of HTTP/1.x (IANA "TLS Application-Layer Protocol Negotiation (ALPN)
#: Protocol IDs", RFC 7301 §6).
_HTTP1_ALPN = frozenset({"http/1.1", "http/1.0", "http/0.9"})

_SIDE = ("client", "server")


@dataclass(frozen=True, slots=True)
class EncryptedBurst:
    """A run of ``application_data`` records one way with nothing the other way in between."""

    direction: str  # "client" (client → server) or "server"
    start_ns: int  # the first record's first byte
    end_ns: int  # the last record's last byte
    records: int
    bytes: int  # record payload bytes (ciphertext, without the 5-byte headers)

    def to_dict(self) -> dict[str, Any]:
        return as_dict(self)


@dataclass(frozen=True, slots=True)
class TlsDecryption:
    """What decrypting one TLS connection gave.

    Attributes
    ----------
    keys_found : bool
        The key log held this connection's secrets (by ClientHello.random).
    decrypted : bool
        Application data was opened with them.
    alpn : str or None
        The negotiated ALPN protocol: from the ServerHello (TLS <= 1.2) or the decrypted
        EncryptedExtensions (TLS 1.3).
    application : {"h2", "http/1.x", "other"} or None
        The parser the plaintext went to (``"other"``: not HTTP, counted, not parsed; the
        connection's note says why).
    cipher_suite : str or None
        Its IANA name, when decrypted here.
    client_records, server_records : int
        Protected records opened each way.
    client_failed_records, server_failed_records : int
        Records that failed authentication (or could not be read whole: bytes missing).
    client_key_updates, server_key_updates : int
        TLS 1.3 KeyUpdates applied.
    bursts : tuple of EncryptedBurst
        Every ``application_data`` burst, in order (see the module docstring).
    bursts_dropped : int
        Bursts beyond :data:`MAX_BURSTS` (counted, not kept).
    note : str or None
        Why the connection was not (fully) decrypted.
    ech_used : bool
        Encrypted Client Hello was used: the key log entry (named by the ClientHelloInner's
        random, which the capture does not show) was found by the server's first protected
        record. False for a GREASE extension or a connection whose entry the outer random names.
    early_data : {"accepted", "rejected"} or None
        TLS 1.3 0-RTT early data (RFC 8446 §4.2.10) the client sent and the key log opened, as
        the server's EncryptedExtensions answered it: accepted early data is read as the
        client's first bytes; rejected early data the server discarded unread, and so does qoe
        (the note says how many records). None: no early data, or its answer not decrypted.
    """

    keys_found: bool
    decrypted: bool
    alpn: str | None
    application: str | None
    cipher_suite: str | None
    client_records: int
    server_records: int
    client_failed_records: int
    server_failed_records: int
    client_key_updates: int
    server_key_updates: int
    bursts: tuple[EncryptedBurst, ...] = ()
    bursts_dropped: int = 0
    note: str | None = None
    ech_used: bool = False
    early_data: str | None = None

    @property
    def failed_records(self) -> int:
        """Records that failed authentication, both ways."""
        return self.client_failed_records + self.server_failed_records

    def to_dict(self) -> dict[str, Any]:
        return as_dict(self)


class _Dir:
    __slots__ = ("cipher", "pending", "records", "failed", "updates", "hs", "hs_lost", "out", "encrypted", "candidates")

    def __init__(self) -> None:
        self.cipher: RecordCipher | None = None
        self.pending: list[RecordCipher] = []  # ciphers to switch to, in order (TLS 1.3)
        self.records = 0
        self.failed = 0
        self.updates = 0
        self.hs = bytearray()  # decrypted handshake messages being reassembled
        # a protected handshake record was lost: message boundaries are unknown until the next
        # key change (RFC 8446 §5.1: handshake messages do not span one)
        self.hs_lost = False
        self.out = 0  # plaintext offset delivered above
        self.encrypted = False  # TLS 1.2: after this side's ChangeCipherSpec
        self.candidates: list[RecordCipher] = []


#: Key log entries whose server handshake cipher is kept for the ECH search (``_ech_trial``).
ECH_TRIALS_KEPT = 1 << 14


@functools.lru_cache(maxsize=ECH_TRIALS_KEPT)
def _ech_trial(suite: Suite, shs: bytes) -> RecordCipher:
    """The record cipher of one key log entry's SERVER_HANDSHAKE_TRAFFIC_SECRET, made once per
    entry for every ECH connection searched (``DecryptingTlsSink._ech_match``): a connection
    whose key log entry is not in the key log (another client's, on a shared link; Chromium
    offers GREASE ECH on every connection) tries every entry, and deriving each entry's key
    and IV anew took 45 ms per connection with 5000 entries (measured: ``docs/guide/web-
    decryption.md``). About 300 bytes each; up to :data:`ECH_TRIALS_KEPT` kept."""
    return tls13_cipher(suite, shs)


class _Held(NamedTuple):
    """A server record of an ECH connection held until its client answers
    (``DecryptingTlsSink._ech_search``): read whole (``body``), or lost to a gap (``body`` and
    ``version`` None: only its type and length are known)."""

    start: int  # its first byte's delivery
    ts: int  # its last byte's
    ctype: int
    version: int | None
    length: int
    body: bytes | None


class DecryptingTlsSink:
    """A ByteSink for one TLS connection that decrypts it with the key log (see the module docstring).

    Parameters
    ----------
    conn : ConnectionId
    keylog : KeyLog
    http1 : callable
        ``http1(conn)`` makes the HTTP/1.x sink the plaintext goes to (when it is not HTTP/2).
    h2 : callable, optional
        ``h2(conn)`` makes the HTTP/2 sink (default :mod:`qoe.web._h2`'s).
    """

    def __init__(self, conn: ConnectionId, keylog: KeyLog, *, http1: Callable[[ConnectionId], Any],
                 h2: Callable[[ConnectionId], Any] | None = None) -> None:
        self.conn = conn
        self.timing = _TlsSink(conn, on_record=self._record, on_lost=self._record_lost, on_not_tls=self._not_tls)
        self._keylog = keylog
        self._make_http1 = http1
        self._make_h2 = h2 if h2 is not None else H2Sink
        self._d = (_Dir(), _Dir())
        self._client_random: bytes | None = None
        self._server_random: bytes | None = None
        self._version: int | None = None
        self._suite_code: int | None = None
        self._suite: Suite | None = None
        self._early_offered = False
        self._ech = False  # the ClientHello is an ECH ClientHelloOuter: the key log names the inner one's random
        self._ech_suite: Suite | None = None  # TLS 1.3 keys to be found by the server's first record (_ech_match)
        self._ech_used = False  # the key log entry was found by the server's first record
        # the server's protected records of an ECH connection without keys, held until the client
        # answers them (_ech_search)
        self._ech_held: list[_Held] = []
        self._etm = False  # the ServerHello accepted encrypt_then_mac (RFC 7366; CBC suites)
        self._early_held: list[tuple[int, int, int, bytes]] = []  # 0-RTT records before the ServerHello
        self._early_cipher: RecordCipher | None = None  # the client's early traffic cipher, if set
        # what the server's EncryptedExtensions said of the early data: None (not read yet),
        # "accepted" or "rejected"; the early plaintext waits for it (_early_plain)
        self._early_answer: str | None = None
        self._early_plain: list[tuple[int, bytes]] = []
        self._early_rejected = 0  # early data records the server discarded (and qoe with it)
        self._keys_found = False
        self._alpn: str | None = None
        self._app: Any = None
        self._app_name: str | None = None
        self._held: list[tuple[int, int, int, Any]] = []  # (kind, direction, ts, item) before the choice
        self._held_bytes = 0
        self._prefix = b""  # the client's plaintext before the choice (its first MAX_SNIFF bytes)
        self._note: str | None = None
        self._bursts: list[EncryptedBurst] = []
        self._bursts_dropped = 0
        self._burst: list[int] | None = None  # [direction, start, end, records, bytes]
        self._closed = [False, False]

    # -- ByteSink --------------------------------------------------------------------------

    def data(self, direction: int, ts_ns: int, offset: int, payload: bytes) -> None:
        self.timing.data(direction, ts_ns, offset, payload)  # (its records come back: _record, _record_lost)

    def gap(self, direction: int, ts_ns: int, offset: int, length: int) -> None:
        self.timing.gap(direction, ts_ns, offset, length)

    def close(self, direction: int, ts_ns: int, how: str) -> None:
        self.timing.close(direction, ts_ns, how)
        if self._closed[direction]:
            return
        self._closed[direction] = True
        if self._early_plain:  # the server's answer to the early data was not read: it is kept
            held, self._early_plain = self._early_plain, []
            for ts, plain in held:
                self._deliver(CLIENT, ts, plain)
        if self._app is None and self._held:
            self._choose(self._decide(final=True))  # type: ignore[arg-type] - final: never None
        if self._app is not None:
            self._app.close(direction, ts_ns, how)
        else:
            self._held.append((2, direction, ts_ns, how))

    @property
    def finished(self) -> bool:
        return all(self._closed)

    # -- records ----------------------------------------------------------------------------

    def _not_tls(self, direction: int) -> None:
        self._note = self._note or f"{_SIDE[direction]}: bytes that are not TLS records; decryption stopped"

    def _burst_add(self, direction: int, start: int, end: int, nbytes: int) -> None:
        b = self._burst
        if b is not None and b[0] == direction:
            b[2] = end
            b[3] += 1
            b[4] += nbytes
            return
        self._flush_burst()
        self._burst = [direction, start, end, 1, nbytes]

    def _flush_burst(self) -> None:
        b = self._burst
        if b is None:
            return
        self._burst = None
        if len(self._bursts) < MAX_BURSTS:
            self._bursts.append(EncryptedBurst(_SIDE[b[0]], b[1], b[2], b[3], b[4]))
        else:
            self._bursts_dropped += 1

    def _record(self, direction: int, start: int, ts: int, ctype: int, version: int,
                body: bytes | memoryview) -> None:
        """A record of ``direction`` read whole by the framer (``qoe.web.tls._TlsSink``)."""
        if ctype == _APPDATA:
            self._burst_add(direction, start, ts, len(body))
        if ctype == _CCS:
            if self._version is not None and self._version < 0x0304:
                self._d[direction].encrypted = True  # RFC 5246 §7.1: what follows is protected
            return
        if (ctype == _APPDATA and direction == CLIENT and self._version is None and self._early_offered
                and self._client_random is not None):
            # RFC 8446 §4.2.10: 0-RTT data follows the ClientHello, protected with the client's early
            # traffic secret; its keys are set up with the ServerHello's cipher suite: held until then
            if len(self._early_held) < _MAX_EARLY_RECORDS:
                self._early_held.append((ts, ctype, version, bytes(body)))
            else:
                self._d[direction].failed += 1
            return
        self._open(direction, self._d[direction], ts, ctype, version, body)

    def _open(self, direction: int, d: _Dir, ts: int, ctype: int, version: int, body: bytes | memoryview) -> None:
        protected = (ctype == _APPDATA and self._version is not None and self._version >= 0x0304) or d.encrypted
        if not protected:
            if ctype == _HANDSHAKE:
                self._hellos(direction)
            return
        if d.cipher is None and self._ech_suite is not None:
            if direction == SERVER:
                if len(self._ech_held) < _MAX_ECH_HELD:
                    self._ech_held.append(_Held(ts, ts, ctype, version, len(body), bytes(body)))
                return
            if self._ech_held:
                self._ech_search()
        if d.cipher is None:
            return  # no keys: counted in the bursts only
        opened = d.cipher.open(ctype, version, body)
        if opened is None and d.candidates:
            # TLS 1.3 0-RTT rejected or finished: try the next secret in line
            for k, c in enumerate(d.candidates):
                opened = c.open(ctype, version, body)
                if opened is not None:
                    d.cipher = c
                    del d.candidates[:k + 1]
                    if c in d.pending:
                        del d.pending[:d.pending.index(c) + 1]
                    d.hs.clear()  # a key change: handshake messages start anew (RFC 8446 §5.1)
                    d.hs_lost = False
                    break
        if opened is None:
            d.failed += 1
            self._lose(direction, ts, len(body) - 17)
            return
        d.records += 1
        inner, plain = opened
        if inner == _HANDSHAKE:
            d.hs += plain
            self._protected_handshake(direction, d)
        elif inner == _APPDATA:
            if d.cipher is self._early_cipher and self._early_cipher is not None:
                self._early_data(ts, plain)
            else:
                self._deliver(direction, ts, plain)

    def _early_data(self, ts: int, plain: bytes) -> None:
        """0-RTT plaintext: read if the server accepted it (RFC 8446 §4.2.10: its
        EncryptedExtensions carries early_data), discarded as the server discarded it if not,
        held until the answer is read."""
        if self._early_answer == "accepted":
            self._deliver(CLIENT, ts, plain)
        elif self._early_answer == "rejected":
            self._early_rejected += 1
        else:
            self._early_plain.append((ts, plain))

    def _early_answered(self, answer: str) -> None:
        if self._early_cipher is None or self._early_answer is not None:
            return
        self._early_answer = answer
        held, self._early_plain = self._early_plain, []
        for ts, plain in held:
            self._early_data(ts, plain)

    def _record_lost(self, direction: int, start: int, ts: int, ctype: int, rlen: int, held: bool = False) -> None:
        """A record that lost bytes to a gap, from its first byte (``start``) to its end (``ts``);
        ``held``: one of the server's that :meth:`_ech_search` gives again."""
        d = self._d[direction]
        if ctype == _APPDATA and not held:
            self._burst_add(direction, start, ts, rlen)
        if (d.cipher is None and self._ech_suite is not None and direction == SERVER
                and len(self._ech_held) < _MAX_ECH_HELD and (ctype == _APPDATA or d.encrypted)):
            self._ech_held.append(_Held(start, ts, ctype, None, rlen, None))
            return
        if d.cipher is not None and (ctype == _APPDATA or d.encrypted):
            d.cipher.seq += 1
            d.failed += 1
            if self._version is not None and self._version >= 0x0304 and len(d.pending) == 1:
                # TLS 1.3 under the handshake traffic secret (one secret left to switch to: the
                # application one): a handshake record, no application data lost. If it held the
                # Finished, the next records open with the next secret (tried when they fail).
                d.hs.clear()
                d.hs_lost = True
                d.candidates = list(d.pending)
                return
            self._lose(direction, ts, max(rlen - 17, 0))

    # -- handshake ---------------------------------------------------------------------------

    def _hellos(self, direction: int) -> None:
        """After a handshake record in clear: what the hellos said, as the timing reader (which
        frames the records: it has read this one) parsed them: the ClientHello's random (the
        key log's index), its early_data and ECH offers; the ServerHello's version, random,
        cipher suite, ALPN and encrypt_then_mac, whose keys are then looked up."""
        t = self.timing
        if direction == CLIENT:
            self._client_random = t.client_random
            self._early_offered = t.early_offered
            self._ech = t.ech
            return
        if self._version is not None or t.version is None:
            return  # (not yet: a HelloRetryRequest, or the ServerHello not whole)
        self._server_random, self._version, self._suite_code = t.server_random, t.version, t.cipher_suite
        self._alpn = t.alpn or None
        self._etm = t.etm
        self._keys()
        held, self._early_held = self._early_held, []
        for ts, ctype, rversion, body in held:  # the 0-RTT records, now that their keys are known
            self._open(CLIENT, self._d[CLIENT], ts, ctype, rversion, body)

    def _keys(self) -> None:
        cr, version, code = self._client_random, self._version, self._suite_code
        if cr is None or version is None or code is None:
            self._note = "the ClientHello was not captured: the key log cannot be matched"
            return
        log = self._keylog
        suite = suite_for(version, code)
        if not len(log):
            self._suite = suite
            self._note = "no key log: the objects are not visible (handshake timing and encrypted bursts only)"
            return
        if version < 0x0303:
            self._note = f"TLS version 0x{version:04x} is not decrypted (TLS 1.2 and 1.3 are)"
            return
        if suite is None:
            self._note = (f"cipher suite 0x{code:04x} is not decrypted (TLS 1.3 AES-GCM/ChaCha20 and TLS 1.2 "
                          "AES-GCM, ChaCha20-Poly1305 and AES-CBC suites are)")
            return
        self._suite = suite
        c, s = self._d
        if version >= 0x0304:
            chs = log.get("CLIENT_HANDSHAKE_TRAFFIC_SECRET", cr)
            shs = log.get("SERVER_HANDSHAKE_TRAFFIC_SECRET", cr)
            cap = log.get("CLIENT_TRAFFIC_SECRET_0", cr)
            sap = log.get("SERVER_TRAFFIC_SECRET_0", cr)
            early = log.get("CLIENT_EARLY_TRAFFIC_SECRET", cr)
            if shs is None or sap is None or chs is None or cap is None:
                if self._ech:
                    # the key log names the ClientHelloInner's random, encrypted in the one
                    # captured: the secrets are found by the server's first protected record
                    self._ech_suite = suite
                    self._note = ("Encrypted Client Hello: no TLS 1.3 secrets in the key log open this "
                                  "connection (the key log names the ClientHelloInner's random, which is encrypted)")
                    return
                self._note = "no TLS 1.3 traffic secrets for this connection in the key log"
                return
            self._tls13_keys(suite, chs, shs, cap, sap, early)
        else:
            master = log.get("CLIENT_RANDOM", cr)
            if master is None:
                self._note = "no CLIENT_RANDOM (master secret) for this connection in the key log"
                return
            self._keys_found = True
            c.cipher, s.cipher = tls12_ciphers(suite, master, cr, self._server_random or b"",
                                               encrypt_then_mac=self._etm and suite.cipher == "aes-cbc")

    def _tls13_keys(self, suite: Suite, chs: bytes, shs: bytes, cap: bytes, sap: bytes, early: bytes | None) -> None:
        """Both directions' record ciphers from the connection's TLS 1.3 traffic secrets (RFC 8446
        §7.1: the handshake secret's, then the first application one's)."""
        c, s = self._d
        self._keys_found = True
        s.cipher, s.pending = tls13_cipher(suite, shs), [tls13_cipher(suite, sap)]
        if self._early_offered and early is not None:
            c.cipher, c.pending = tls13_cipher(suite, early), [tls13_cipher(suite, chs), tls13_cipher(suite, cap)]
            self._early_cipher = c.cipher
            c.candidates = [c.pending[0]]
        else:
            c.cipher, c.pending = tls13_cipher(suite, chs), [tls13_cipher(suite, cap)]

    def _ech_search(self) -> None:
        """The client of an ECH connection without keys sent a protected record: it took the
        server's flight (a connection the client abandoned, such as the ones Chromium opens ahead
        and never uses, sends none, and no key log entry is its: the key log is not searched
        for it). Its keys are looked for with the server's first protected record
        (:meth:`_ech_match`), then the server's records held so far are read (with the keys
        found, or counted as without keys)."""
        held, self._ech_held = self._ech_held, []
        if held and held[0].body is not None:  # (the first record lost: no EncryptedExtensions to match)
            self._ech_match(held[0].ctype, held[0].version, held[0].body)  # type: ignore[arg-type]
        self._ech_suite = None
        s = self._d[SERVER]
        for h in held:
            if h.body is None:
                self._record_lost(SERVER, h.start, h.ts, h.ctype, h.length, held=True)
            else:
                self._open(SERVER, s, h.ts, h.ctype, h.version, h.body)  # type: ignore[arg-type]

    def _ech_match(self, ctype: int, version: int, body: bytes | memoryview) -> None:
        """An ECH connection whose key log entry names its (encrypted) ClientHelloInner's random:
        the server's first protected record, its EncryptedExtensions, opens with one entry's
        SERVER_HANDSHAKE_TRAFFIC_SECRET alone (RFC 8446 §5.2: an AEAD, whose 16-byte tag another
        key passes by a chance of about 2^-128); that entry's secrets are the connection's. Each
        of the key log's TLS 1.3 entries (:meth:`KeyLog.tls13_entries`) is tried once, for this
        one record."""
        suite, self._ech_suite = self._ech_suite, None
        log = self._keylog
        for cr, shs in log.tls13_entries():
            if len(shs) != suite.hash_length:
                continue
            # (the EncryptedExtensions is the server's first record under this secret: number 0)
            if _ech_trial(suite, shs).open_at(0, ctype, version, body) is None:
                continue
            logged = log.secrets  # (tls13_entries gives the connections with all four)
            self._tls13_keys(suite, logged[("CLIENT_HANDSHAKE_TRAFFIC_SECRET", cr)], shs,
                             logged[("CLIENT_TRAFFIC_SECRET_0", cr)], logged[("SERVER_TRAFFIC_SECRET_0", cr)],
                             log.get("CLIENT_EARLY_TRAFFIC_SECRET", cr))
            self._note = None
            self._ech_used = True
            return

    def _protected_handshake(self, direction: int, d: _Dir) -> None:
        if d.hs_lost:
            d.hs.clear()  # (boundaries unknown since a lost record)
            return
        tls13 = self._version is not None and self._version >= 0x0304
        while len(d.hs) >= 4:
            mlen = int.from_bytes(d.hs[1:4], "big")
            if len(d.hs) < 4 + mlen:
                return
            mtype, body = d.hs[0], bytes(d.hs[4:4 + mlen])
            del d.hs[:4 + mlen]
            if not tls13:
                continue  # TLS 1.2: Finished (and renegotiation, not followed)
            if mtype == _ENCRYPTED_EXTENSIONS and direction == SERVER:
                early = False
                try:
                    for t, data in _extensions(body, 0):
                        if t == _EXT_ALPN:
                            self._alpn = _alpn_chosen(data) or None
                        elif t == _EXT_EARLY_DATA:
                            early = True
                except IndexError:
                    pass
                self._early_answered("accepted" if early else "rejected")
            elif mtype in (_FINISHED, _END_OF_EARLY_DATA):
                # RFC 8446 §4.4.4 / §4.5: the sender's next records use its next secret
                if d.pending:
                    d.cipher = d.pending.pop(0)
                    d.candidates = []
                    if mtype == _END_OF_EARLY_DATA:
                        d.candidates = list(d.pending)
            elif mtype == _KEY_UPDATE and d.cipher is not None and not d.pending:
                d.cipher.update()  # RFC 8446 §4.6.3
                d.updates += 1

    # -- plaintext ------------------------------------------------------------------------

    def _decide(self, final: bool, server_spoke: bool = False) -> str | None:
        """The application protocol, from ALPN or the client's first plaintext bytes (``_prefix``):
        ``"h2"``, ``"http/1.x"``, ``"other"``, or None while those bytes cannot tell. ``final``:
        they must (a gap, the close, too much held), undecided is then HTTP/1.x;
        ``server_spoke``: the server sent application data while the client's bytes are no
        whole request line yet, which an HTTP/1.x server never does (RFC 9112 §3: it answers
        requests): not HTTP."""
        alpn = self._alpn
        if alpn is not None:
            return "h2" if alpn == "h2" else "http/1.x" if alpn in _HTTP1_ALPN else "other"
        prefix = self._prefix
        if not prefix:
            return "http/1.x" if final else None
        n = min(len(prefix), len(PREFACE))
        if prefix[:n] == PREFACE[:n] and (n >= 4 or not (final or server_spoke)):
            return "h2" if n >= 4 else None  # (the preface, RFC 9113 §3.4)
        request = looks_like_request(prefix)
        if request is None:
            return "other" if server_spoke else "http/1.x" if final else None
        return "http/1.x" if request else "other"

    def _choose(self, name: str) -> None:
        """Make the application-protocol sink ``name`` (:meth:`_decide`) and give it what was held."""
        if name == "h2":
            app: Any = self._make_h2(self.conn)
        elif name == "http/1.x":
            app = self._make_http1(self.conn)
        else:
            app = _Other(not_http(self._alpn))
        self._app, self._app_name = app, name
        held, self._held = self._held, []
        self._prefix = b""
        for kind, direction, ts, item in held:
            if kind == 0:
                self._push(app, direction, ts, item)
            elif kind == 1:
                self._push_gap(app, direction, ts, item)
            else:
                app.close(direction, ts, item)

    def _push(self, app: Any, direction: int, ts: int, plain: bytes) -> None:
        d = self._d[direction]
        app.data(direction, ts, d.out, plain)
        d.out += len(plain)

    def _push_gap(self, app: Any, direction: int, ts: int, length: int) -> None:
        d = self._d[direction]
        app.gap(direction, ts, d.out, length)
        d.out += length

    def _deliver(self, direction: int, ts: int, plain: bytes) -> None:
        if not plain:
            return
        if self._app is None:
            # held until ALPN or the client's first bytes say what they are (both ways, in order)
            self._held.append((0, direction, ts, plain))
            self._held_bytes += len(plain)
            if direction == CLIENT and len(self._prefix) < MAX_SNIFF:
                self._prefix += plain[:MAX_SNIFF - len(self._prefix)]
            name = self._decide(final=len(self._prefix) >= MAX_SNIFF or self._held_bytes > _HELD_MAX,
                                server_spoke=direction == SERVER)
            if name is not None:
                self._choose(name)
            return
        self._push(self._app, direction, ts, plain)

    def _lose(self, direction: int, ts: int, length: int | None) -> None:
        if length is None or length <= 0:
            return
        if self._app is None:
            if self._alpn is None and direction == SERVER and not self._prefix:
                self._held.append((1, direction, ts, length))
                return
            self._choose(self._decide(final=True))  # type: ignore[arg-type] - final: never None
        self._push_gap(self._app, direction, ts, length)

    # -- results ----------------------------------------------------------------------------

    def session(self) -> TlsSession:
        """The clear-text timing (:class:`~qoe.web.tls.TlsSession`)."""
        return self.timing.session()

    @property
    def app(self) -> Any:
        """The application-protocol sink (None when nothing was decrypted)."""
        return self._app

    def decryption(self, session: TlsSession | None = None) -> TlsDecryption:
        """What decryption gave (bursts include the one still open); ``session``: this
        connection's :meth:`session` when the caller has made it already (else made here
        when it is needed)."""
        c, s = self._d
        bursts = list(self._bursts)
        dropped = self._bursts_dropped
        b = self._burst
        if b is not None:
            if len(bursts) < MAX_BURSTS:
                bursts.append(EncryptedBurst(_SIDE[b[0]], b[1], b[2], b[3], b[4]))
            else:
                dropped += 1
        note = self._note
        if not self._keys_found and self._suite is not None and c.records + s.records == 0 and len(self._keylog):
            if not (session if session is not None else self.timing.session()).complete:
                # Chromium logs a connection's secrets once its handshake is done; a connection
                # it opened and abandoned (a preconnect, a backup) never gets there
                note = ("handshake not completed (a connection the client opened and abandoned): no secrets "
                        "for it in the key log, nothing to decrypt")
        if note is None and self._version is None:
            note = "no ServerHello: the handshake was not captured whole"
        if note is None and self._early_rejected:
            note = (f"0-RTT early data rejected by the server: {self._early_rejected} record(s) it discarded "
                    "unread, not read here either")
        if note is None and c.failed + s.failed:
            note = f"{c.failed + s.failed} record(s) failed authentication or were not captured whole"
        decrypted = c.records + s.records > 0
        if note is None and not decrypted and self._keys_found:
            note = "keys found, but no record was opened with them"
        return TlsDecryption(
            keys_found=self._keys_found,
            decrypted=decrypted,
            alpn=self._alpn,
            application=self._app_name,
            cipher_suite=self._suite.name if self._suite is not None else None,
            client_records=c.records,
            server_records=s.records,
            client_failed_records=c.failed,
            server_failed_records=s.failed,
            client_key_updates=c.updates,
            server_key_updates=s.updates,
            bursts=tuple(bursts),
            bursts_dropped=dropped,
            note=note,
            ech_used=self._ech_used,
            early_data=self._early_answer,
        )


def not_http(alpn: str | None) -> str:
    """Why a decrypted connection whose application is ``"other"`` (:attr:`TlsDecryption.application`)
    is taken for no HTTP, given its ALPN."""
    return f"ALPN {alpn!r} is not HTTP" if alpn is not None else "the client's first bytes are not an HTTP request line"


class DiscardSink:
    """An application sink that takes the plaintext and keeps nothing: for a caller of
    :class:`DecryptingTlsSink` that reads only what decryption itself gives (``http1=`` and
    ``h2=`` makers returning one), and for a connection that carries no HTTP."""

    __slots__ = ()

    def data(self, direction: int, ts_ns: int, offset: int, payload: bytes) -> None:
        pass

    def gap(self, direction: int, ts_ns: int, offset: int, length: int) -> None:
        pass

    def close(self, direction: int, ts_ns: int, how: str) -> None:
        pass


class _Other(DiscardSink):
    """The plaintext of a decrypted connection that carries no HTTP (``why``): its bytes are
    counted by the record layer's figures, not parsed."""

    __slots__ = ("note",)

    def __init__(self, why: str) -> None:
        self.note = f"decrypted, not HTTP: {why}; its application data is not parsed"
