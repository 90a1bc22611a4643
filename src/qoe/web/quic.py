"""QUIC v1 and v2 connections from captures: handshake timing, encrypted bursts, and HTTP/3 with the key log.

:func:`quic_connections` reads a capture's UDP datagrams and follows every QUIC connection of
version 1 (RFC 9000) or 2 (RFC 9369) that starts with a client Initial packet
(:mod:`qoe.web._quicversion`), and a compatible version negotiation from one to the other
(RFC 9368: the server answers in the version it chose); connections of any other version
are counted and named in one warning. A connection whose handshake the capture does not
hold (begun before it, or moved to new addresses, RFC 9000 §9) is taken from its first
packet, without keys (``version`` 0 unless a long header says it). It needs no key to give
each connection's handshake timing (the first Initial, Handshake and 1-RTT packet each way:
long headers and the first bits of short ones are in clear, RFC 9000 §17) and its
*bursts*: runs of packets sent one way with none the other way in between, with their
sizes and times (what can be said of the objects' timing when they are not visible).

With a key log (:class:`~qoe.web.keylog.KeyLog`: the client's ``SSLKEYLOGFILE``, or a pcapng
Decryption Secrets Block) it decrypts the packets and reassembles the streams:

* Initial packets with keys derived from the client's first Destination Connection ID
  (RFC 9001 §5.2; again after a Retry, §5.2/§17.2.5), whose CRYPTO frames carry the
  ClientHello (its ``random`` finds the connection's secrets in the key log, its SNI and
  ALPN offer) and the ServerHello (the cipher suite);
* Handshake and 1-RTT packets with the keys of the key log's
  ``CLIENT_/SERVER_HANDSHAKE_TRAFFIC_SECRET`` and ``CLIENT_/SERVER_TRAFFIC_SECRET_0``
  (RFC 9001 §5.1), key updates followed by the Key Phase bit (§6); the server's
  EncryptedExtensions gives the negotiated ALPN;
* header protection removed and packet numbers recovered (RFC 9001 §5.4, RFC 9000 §17.1 and
  Appendix A.3), frames read (RFC 9000 §19), STREAM data reassembled per stream in offset
  order (§2.2), duplicates dropped, and handed to HTTP/3 (:mod:`qoe.web._h3`) when ALPN is
  ``h3``: one :class:`~qoe.web._results.Transaction` per request stream, ``protocol="h3"``.

What is taken from aioquic (BSD-3-Clause) and why: QUIC's packet protection
(``aioquic.quic.crypto``: Initial key derivation from the DCID, the ``quic key/iv/hp``
labels, header protection removal, packet number recovery and AEAD opening, and the next
key phase on a key update) and its packet header parser (``aioquic.quic.packet``:
``pull_quic_header``, ``pull_ack_frame``) and variable-length integer buffer
(``aioquic.buffer.Buffer``): they are the protection steps of RFC 9001 §5 written once
already, on ``cryptography``'s primitives, and reused rather than copied. aioquic has no
frame reader usable outside its connection state machine, so the frame walk (RFC 9000 §19)
and stream reassembly are written here; HTTP/3 framing is :mod:`qoe.web._h3` with
``pylsqpack`` for QPACK.

A packet that fails authentication is counted (``*_failed_packets``), never raised; 0-RTT
packets are counted, and decrypted with the key log's ``CLIENT_EARLY_TRAFFIC_SECRET`` once the
ServerHello has given the (resumed session's) cipher suite (RFC 9001 §4.6.1).

References
----------
.. [1] RFC 9000, "QUIC: A UDP-Based Multiplexed and Secure Transport" (2021): §2 (streams),
   §12.3 (packet number spaces), §16 (varints), §17 (packet formats), §19 (frames).
.. [2] RFC 9001, "Using TLS to Secure QUIC" (2021): §4.1.3 (CRYPTO), §5 (packet protection),
   §5.2 (Initial secrets), §5.4 (header protection), §6 (key update).
.. [3] RFC 8446 §4.1.2-§4.1.3, §4.3.1 (the hellos, EncryptedExtensions).
.. [4] RFC 9114 (HTTP/3); RFC 7301 (ALPN).
"""

from __future__ import annotations

import functools
import math
import os
import warnings
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from aioquic._crypto import CryptoError
from aioquic.buffer import Buffer, BufferReadError
from aioquic.quic.crypto import CryptoContext, CryptoPair, apply_key_phase, next_key_phase
from aioquic.quic.packet import QuicPacketType, pull_ack_frame, pull_quic_header, pull_quic_transport_parameters
from aioquic.tls import CipherSuite

from qoe.capture import TimeSpans, fork_available, read_ahead_pays, read_udp_batches, time_spans
from qoe.capture import read_ahead as read_ahead_in
from qoe.errors import InputError, QoEWarning
from qoe.report import as_dict
from qoe.web._quicloss import LossRecord, QuicLoss, QuicRetransmission, analyse
from qoe.web._quicrtt import NOT_ACK_ELICITING, AckRtt
from qoe.web._quicversion import INITIAL_TYPE, QUIC_PORT, initial_version, joins_late, other_version, version_name
from qoe.web._results import make_transaction
from qoe.web._sink import CLIENT, SERVER
from qoe.web.decrypt import ECH_TRIALS_KEPT, MAX_BURSTS, EncryptedBurst
from qoe.web.tls import _alpn_chosen, _ech_outer, _extensions
from qoe.web.keylog import KeyLog, load_keylog
from qoe.web.tcp import _is_file

__all__ = ["QuicConnection", "QuicLoss", "QuicRetransmission", "quic_connections", "iter_quic_connections", "speaks_h3",
           "SPLIT_MIN_BYTES"]

_INITIAL, _HANDSHAKE, _APP = 0, 1, 2  # RFC 9000 §12.3 packet number spaces
_MAX_CRYPTO = 1 << 17  # CRYPTO bytes reassembled per space and direction (hellos, certificates)
_MAX_STREAM_HELD = 1 << 20  # out-of-order STREAM bytes held per stream
_MAX_EARLY_HELD = 64  # 0-RTT packets held until the ServerHello and EncryptedExtensions
_IDLE_NS = 30_000_000_000  # a 4-tuple quiet this long starts over (RFC 9000 §10.1: idle timeout, 30 s is common)
_SWEEP_NS = 1_000_000_000  # capture time between looks for connections quiet _IDLE_NS (iter_quic_connections)
#: How long a datagram is remembered to tell a second capture of it (the same datagram on two
#: interfaces, Linux's "any" device, a span port: microseconds to a queue's delay later). A QUIC
#: sender never sends the same bytes twice (each packet has a new packet number, RFC 9000
#: §12.3, and is protected anew, RFC 9001 §5.3), so identical bytes within it are one datagram.
COPY_NS = 1_000_000_000
_SIDE = ("client", "server")
#: RFC 9001 §5.3: the AEADs of QUIC v1's cipher suites (AEAD_AES_128_GCM, AEAD_AES_256_GCM,
#: AEAD_CHACHA20_POLY1305) add a 16-byte authentication tag to a packet's payload.
_AEAD_TAG = 16
#: The most bytes a 1-RTT packet's packet number and frames take when it carries no data, only
#: acknowledgements: the packet number (1-4 bytes, RFC 9000 §17.1) and an ACK frame (§19.3:
#: type, Largest Acknowledged, ACK Delay, ACK Range Count, First ACK Range, each a variable-
#: length integer, §16) with 2-byte varints and one more range (Gap, ACK Range Length), and a
#: PING (§19.2): 4 + 7 + 2 + 1 = 14. Measured on data/web/browser's five HTTP/3 loads
#: (tshark, decrypted): the server's ACK-only and PING packets take 7-13 bytes there (24-29
#: bytes of UDP payload: a 1-byte first byte, no DCID, the 16-byte tag), its smallest packet
#: with a STREAM frame 15 (32 bytes of payload, h3-down); the client's ACK-only packets are
#: 31-35 bytes (an 8-byte DCID), its CONNECTION_CLOSE 50-51.
ACK_SIZED_BYTES = 14
#: The largest QUIC datagram taken for one packet: Ethernet's MTU (a QUIC datagram fits the path
#: MTU, RFC 9000 §14); a longer one holding a short header is several packets of one size
#: (``_Conn._segment``), the smallest of which a sender makes 1200 bytes (§14.1: the least
#: maximum datagram size).
_MAX_SEGMENT, _MIN_SEGMENT = 1500, 1200
#: The note of a connection joined in progress (:func:`qoe.web._quicversion.joins_late`).
_JOINED_NOTE = ("joined in progress: its handshake is not in the capture (a connection begun before the capture "
               "started, or moved to this address or port, RFC 9000 §9): no key log can be matched, the objects are "
               "not visible (packet timing and bursts only)")


@dataclass(frozen=True, slots=True)
class QuicConnection:
    """One QUIC connection as the capture shows it.

    Attributes
    ----------
    index : int
        0-based, in order of first packet.
    client, server : tuple of (str, int)
    version : int
        1, or 0x6b3343cf: version 2 (RFC 9369 §3.1); after a compatible version negotiation
        (RFC 9368), the version the server chose (the note says so); 0 for a connection joined
        in progress (its handshake before the capture) of which no long header was seen (a
        short header does not carry the version, RFC 8999 §5.2).
    first_ns, last_ns : int
        First and last packet.
    server_name : str or None
        The ClientHello's SNI (needs the Initial packets, which need no key log).
    alpn_offered : tuple of str
    alpn : str or None
        Negotiated (EncryptedExtensions: needs the key log).
    cipher_suite : str or None
    client_initial_ns, server_initial_ns : int or None
        First Initial packet each way (the client's None: a connection joined in progress,
        taken from its first packet in the capture, whose note says so).
    client_handshake_ns, server_handshake_ns : int or None
        First Handshake packet each way.
    client_first_1rtt_ns, server_first_1rtt_ns : int or None
        First short-header (1-RTT) packet each way.
    handshake_done_ns : int or None
        The server's HANDSHAKE_DONE (RFC 9001 §4.1.2; needs the keys).
    handshake_end_ns, handshake_ns : int or None
        The handshake's end as visible: HANDSHAKE_DONE when decrypted, else the client's
        first 1-RTT packet; and its duration from the client's first Initial.
    client_packets, server_packets : int
        Datagrams (a second capture of one not counted).
    client_bytes, server_bytes : int
        UDP payload bytes.
    keys_found, decrypted : bool
    client_failed_packets, server_failed_packets : int
        Packets that failed authentication (with keys in hand).
    key_updates : int
    bursts : tuple of EncryptedBurst
        1-RTT packet bursts (see the module docstring).
    bursts_dropped : int
    server_last_data_ns : int or None
        The server's last 1-RTT packet larger than an acknowledgement (its packet number and
        frames over ``ACK_SIZED_BYTES``, told from its size without keys): the end of what it
        sent the client, without the ACKs, PINGs and PTO probes that follow the last response
        while the client's last packets are acknowledged and the connection idles. None when
        the server sent no such packet.
    duplicate_datagrams : int
        Datagrams captured twice (identical bytes within :data:`COPY_NS`), both ways: the
        second capture left out of everything above.
    ech_offered : bool
        The ClientHello (in the Initial packets) carries an ``encrypted_client_hello``
        extension of type outer: Encrypted Client Hello or its GREASE, as
        :attr:`qoe.web.tls.TlsSession.ech_offered` says.
    ech_used : bool
        Encrypted Client Hello was used: the key log entry (named by the ClientHelloInner's
        random) was found by the server's first Handshake packet.
    cut_packets : int
        Packets (both ways) the capture's snapshot length cut: read from their headers (time,
        type, size on the wire), not opened.
    retry : bool
        The server answered the client's first Initial with a Retry packet (RFC 9000 §8.1.2,
        §17.2.5: address validation, a round trip more before the handshake); the client's next
        Initial, under the Retry's connection ID, begins the handshake read here.
    transactions : tuple
        HTTP/3 transactions (empty without keys).
    goaways : tuple
        HTTP/3 GOAWAYs: (sender, id, time ns).
    closed : str or None
        CONNECTION_CLOSE seen: ``"client 0x0"``, ``"server 0x100 (application)"``...
    rtt_samples : int
        RTT samples from the ACK frames (RFC 9002 §5.1; needs the keys), both ways.
    min_rtt_ns, smoothed_rtt_ns, rttvar_ns : int or None
        The path's RTT as RFC 9002 §5 estimates it from the ACK frames, with their ACK Delay
        (:mod:`qoe.web._quicrtt`): the sum of the leg the server's ACKs measure (capture point →
        server → capture point) and the leg the client's ACKs measure; None without samples.
    note : str or None
        What could not be seen and why.
    zero_rtt_packets, zero_rtt_decrypted : int
        The client's 0-RTT packets (RFC 9000 §17.2.3), and those opened with the key log's
        ``CLIENT_EARLY_TRAFFIC_SECRET`` (RFC 9001 §4.6.1); their STREAM frames count as the
        application data space's (HTTP/3 requests sent in 0-RTT are transactions). 0-RTT packets
        the server rejected are not opened: it discarded them unread (RFC 9001 §4.6.2), and the
        client sends their data again in 1-RTT packets, where the requests are read.
    early_data_accepted : bool or None
        The server's EncryptedExtensions carried ``early_data`` (RFC 8446 §4.2.10; None: not seen).
    client_loss, server_loss : QuicLoss or None
        Each sender's loss recovery as RFC 9002 §6 declares it from the ACK frames both ways,
        the bytes it sent again and its PTO events (:mod:`qoe.web._quicloss`; needs the keys).
    lost_packets, retransmitted_stream_bytes, pto_events : int
        The two senders' sums.
    """

    index: int
    client: tuple[str, int]
    server: tuple[str, int]
    version: int
    first_ns: int
    last_ns: int
    server_name: str | None
    alpn_offered: tuple[str, ...]
    alpn: str | None
    cipher_suite: str | None
    client_initial_ns: int | None
    server_initial_ns: int | None
    client_handshake_ns: int | None
    server_handshake_ns: int | None
    client_first_1rtt_ns: int | None
    server_first_1rtt_ns: int | None
    handshake_done_ns: int | None
    handshake_end_ns: int | None
    handshake_ns: int | None
    client_packets: int
    server_packets: int
    client_bytes: int
    server_bytes: int
    keys_found: bool
    decrypted: bool
    client_failed_packets: int
    server_failed_packets: int
    key_updates: int
    bursts: tuple[EncryptedBurst, ...] = ()
    bursts_dropped: int = 0
    transactions: tuple[Any, ...] = ()
    goaways: tuple[tuple[str, int, int], ...] = ()
    closed: str | None = None
    note: str | None = None
    rtt_samples: int = 0
    min_rtt_ns: int | None = None
    smoothed_rtt_ns: int | None = None
    rttvar_ns: int | None = None
    zero_rtt_packets: int = 0
    zero_rtt_decrypted: int = 0
    early_data_accepted: bool | None = None
    client_loss: QuicLoss | None = None
    server_loss: QuicLoss | None = None
    lost_packets: int = 0
    retransmitted_stream_bytes: int = 0
    pto_events: int = 0
    server_last_data_ns: int | None = None
    duplicate_datagrams: int = 0
    ech_offered: bool = False
    ech_used: bool = False
    cut_packets: int = 0
    retry: bool = False

    @property
    def joined_in_progress(self) -> bool:
        """The capture holds no Initial packet of the client's: the connection was taken from
        its first packet in the capture (its handshake before the capture began, or a path the
        connection moved to; the note says so)."""
        return self.client_initial_ns is None

    def to_dict(self) -> dict[str, Any]:
        return as_dict(self)


def _open(ctx: CryptoContext, packet: bytes, enc_off: int, expected_pn: int) -> tuple[bytes, bytes, int, bool] | None:
    """aioquic's packet protection removed (RFC 9001 §5.3-5.4): the header, the payload, the
    packet number and whether the key phase changed; None if the packet does not open."""
    try:
        return ctx.decrypt_packet(packet, enc_off, expected_pn)
    except (CryptoError, ValueError, IndexError):
        return None


@functools.lru_cache(maxsize=ECH_TRIALS_KEPT)
def _ech_trial(suite: CipherSuite, secret: bytes, version: int) -> CryptoContext | None:
    """The packet protection of one key log entry's SERVER_HANDSHAKE_TRAFFIC_SECRET (RFC 9001
    §5.1), made once per entry for every ECH connection searched (``_Conn._ech_match``), as
    ``qoe.web.decrypt`` keeps its record ciphers: opening a Handshake packet changes nothing in
    it. None: not a secret of that suite."""
    ctx = CryptoContext()
    try:
        ctx.setup(cipher_suite=suite, secret=secret, version=version)
    except (CryptoError, ValueError, IndexError):
        return None
    return ctx


class _Crypto:
    """CRYPTO frame reassembly of one space and direction (RFC 9001 §4.1.3)."""

    __slots__ = ("next", "held", "buf")

    def __init__(self) -> None:
        self.next = 0
        self.held: dict[int, bytes] = {}
        self.buf = bytearray()

    def add(self, offset: int, data: bytes) -> bytes:
        """Returns the bytes now contiguous."""
        out = bytearray()
        if offset + len(data) <= self.next:
            return b""
        if offset > self.next:
            if sum(len(v) for v in self.held.values()) < _MAX_CRYPTO:
                self.held[offset] = data
            return b""
        out += data[self.next - offset:]
        self.next += len(out)
        while True:
            k = next((o for o in self.held if o <= self.next), None)
            if k is None:
                break
            d = self.held.pop(k)
            if k + len(d) > self.next:
                piece = d[self.next - k:]
                out += piece
                self.next += len(piece)
        return bytes(out)


class _StreamIn:
    """One direction of a QUIC stream: offset-ordered delivery (RFC 9000 §2.2)."""

    __slots__ = ("next", "held", "held_bytes", "fin_at", "done")

    def __init__(self) -> None:
        self.next = 0
        self.held: dict[int, bytes] = {}
        self.held_bytes = 0
        self.fin_at: int | None = None
        self.done = False


class _Conn:
    def __init__(self, index: int, client: tuple[str, int], server: tuple[str, int], ts: int, version: int,
                 dcid: bytes | None, keylog: KeyLog | None) -> None:
        self.index, self.client, self.server, self.version = index, client, server, version
        self.first = self.last = ts
        self.keylog = keylog
        self.ctx: list[list[Any]] = [[None, None, None], [None, None, None]]  # [direction][space]
        self.late = dcid is None  # joined in progress: no client Initial, no keys (_JOINED_NOTE)
        if dcid is not None:
            self._initial_keys(dcid)
        self.pn = [[-1, -1, -1], [-1, -1, -1]]
        self.crypto = [[_Crypto() for _ in range(3)] for _ in range(2)]
        self.hs_buf = [[bytearray() for _ in range(3)] for _ in range(2)]
        self.cid_len = [None, None]  # short-header DCID length of packets *sent by* each direction
        self.client_random: bytes | None = None
        self.server_name: str | None = None
        self.alpn_offered: tuple[str, ...] = ()
        self.alpn: str | None = None
        self.suite: int | None = None
        self.first_of: dict[tuple[int, str], int] = {}
        self.handshake_done: int | None = None
        self.packets = [0, 0]
        self.nbytes = [0, 0]
        self.recent: tuple[set[int], set[int]] = (set(), set())  # each way: hash(datagram) of those within COPY_NS
        self.recent_order: tuple[deque[tuple[int, int]], deque[tuple[int, int]]] = (deque(), deque())  # (time, hash)
        self.duplicates = 0
        self.failed = [0, 0]
        self.opened = 0
        self.updates = 0
        self.keys_found = False
        self.retry = False
        self.pending_dcid: bytes | None = None  # the Retry's SCID, until the client's next Initial uses it
        self.streams: dict[tuple[int, int], _StreamIn] = {}
        self.h3: Any = None
        self.bursts: list[EncryptedBurst] = []
        self.bursts_dropped = 0
        self.burst: list[int] | None = None
        self.last_data: int | None = None  # the server's last 1-RTT packet larger than an ACK-sized one
        self.closed: str | None = None
        self.notes: list[str] = []
        self.rtt = [AckRtt(), AckRtt()]  # [direction of the acknowledged packets]
        self.zero_rtt = 0  # 0-RTT packets seen
        self.early_opened = 0  # of them decrypted
        self.early_held: list[tuple[int, bytes, int, int]] = []  # 0-RTT packets waiting for their keys (and version)
        self.early_accepted: bool | None = None  # the server's EncryptedExtensions early_data (RFC 8446 §4.2.10)
        self.early_rejected = 0  # 0-RTT packets the server rejected (not opened)
        self.snapped = [0, 0]  # packets each way the capture's snapshot length cut (not opened)
        self.loss = LossRecord()  # what RFC 9002 §6 loss recovery is replayed from (qoe.web._quicloss)
        self.pkt_data: list[tuple[int | None, int, int]] = []  # the STREAM/CRYPTO ranges of the packet being read
        self.tap: Any = None  # iter_quic_connections(stream_tap=): the HTTP/3 streams' bytes, in order
        self.vn_pending = False  # the server sent Version Negotiation: the client's next Initial begins again
        self.ech_offered = False  # the ClientHello has an encrypted_client_hello extension of type outer
        self.ech_pending: Any = None  # the cipher suite, while the keys are looked for by _ech_match
        self.ech_used = False  # the keys were found so: ECH was used
        self.gso = [0, 0]  # each sender's segment size when its datagrams hold several packets (_segment)
        self.path_cid = b""  # the client's last DCID (_Paths: its connection on new addresses or port)

    def _initial_keys(self, dcid: bytes) -> None:
        # RFC 9001 §5.2: initial_secret = HKDF-Extract(initial_salt, client_dst_connection_id),
        # the salt of the connection's version (RFC 9369 §3.3.1 for version 2)
        self.initial_dcid = dcid
        pair = CryptoPair()
        pair.setup_initial(dcid, is_client=True, version=self.version)
        self.ctx[CLIENT][_INITIAL] = pair.send  # "client in"
        self.ctx[SERVER][_INITIAL] = pair.recv  # "server in"

    def _segment(self, direction: int, data: bytes, pos: int, enc_off: int, size: int) -> int:
        """The length of a short header packet that runs to the end of a datagram too large to
        be one (over :data:`_MAX_SEGMENT` bytes): several packets a sender handed the kernel
        at once, to be cut into datagrams of one size (UDP segmentation offload, Linux's
        UDP_SEGMENT), as a capture on the sending host holds them. A short header has no length
        (RFC 9000 §17.3.1): with the keys, the size is the one at which the first packet opens
        (tried from 1200 bytes, RFC 9000 §14.1, to :data:`_MAX_SEGMENT`, and kept for the sender's
        next such datagrams, tried again when it no longer opens one), and every packet of the
        datagram but its last is that long. Without keys, the datagram."""
        seg = self.gso[direction]
        if seg > 0:
            return seg
        ctx = self.ctx[direction][_APP]
        if ctx is None or seg < 0:
            return size
        expected = self.pn[direction][_APP] + 1
        for n in range(_MIN_SEGMENT, min(size, _MAX_SEGMENT + 1)):
            if _open(ctx, data[pos:pos + n], enc_off, expected) is None:
                continue
            self.gso[direction] = n
            self.notes.append(f"the {_SIDE[direction]}'s datagrams hold several packets of one size (segmentation "
                              "offload, captured on the sending host): read packet by packet")
            return n
        # no size opens it: a datagram too large for one packet is taken whole (and fails; its
        # sender's are not tried again); one that fits may be one packet of a new size
        self.gso[direction] = -1 if size > _MAX_SEGMENT else 0
        return size

    def _restart(self, version: int, dcid: bytes) -> None:
        """The client begins again after the server's Version Negotiation packet (RFC 9000 §6.2):
        a new first flight, in a version the server listed, with a new ClientHello (a new random
        and a new Initial DCID: Initial keys of its own). The handshake is read afresh; what the
        capture saw of the connection so far (its first packets, bytes, bursts, notes) stays."""
        keep = {k: getattr(self, k) for k in ("first", "last", "packets", "nbytes", "recent", "recent_order",
                                              "duplicates", "bursts", "bursts_dropped", "burst", "notes",
                                              "first_of", "failed", "tap", "path_cid")}
        old = self.version
        self.__init__(self.index, self.client, self.server, self.first, version, dcid, self.keylog)  # type: ignore[misc]
        for k, v in keep.items():
            setattr(self, k, v)
        self.notes.append(f"version negotiation (RFC 9000 §6): version {version_name(old)} not taken by the server, "
                          f"begun again in version {version_name(version)}")

    def _switch_version(self, direction: int, version: int) -> None:
        """A long header packet of the other version read here: compatible version negotiation
        (RFC 9368 §2.3; versions 1 and 2 are compatible both ways, RFC 9369 §4). The server
        answers the client's first flight in the version it chose, with Initial keys of that
        version from the same client Destination Connection ID (aioquic derives them so for its
        server: ``QuicConnection._cryptos_initial``; read from the RFCs' summaries and aioquic,
        not from RFC 9368's text), and the rest of the connection is in it; the Handshake and
        1-RTT keys are made with the version's labels from then on (:meth:`_keys`). A client
        packet of the other version before the server chose is left to fail authentication (it
        is counted)."""
        if self.late:
            self.version = self.version or version  # what the first long header says, nothing to key
            return
        if direction != SERVER or self.pn[SERVER][_HANDSHAKE] >= 0 or self.pn[SERVER][_APP] >= 0:
            return
        self.notes.append(f"compatible version negotiation: version {version_name(self.version)} -> "
                          f"{version_name(version)} (RFC 9368)")
        self.version = version
        self._initial_keys(self.initial_dcid)

    # -- datagrams -------------------------------------------------------------------------

    def datagram(self, direction: int, ts: int, data: bytes, captured: int | None = None) -> None:
        """One datagram of ``direction``; ``captured``: its bytes the capture holds, when its
        snapshot length cut it (the rest zeros, :func:`_datagrams`)."""
        self.last = ts  # (a second capture too: the 4-tuple's activity, as the other process sees it)
        if captured is None:
            captured = len(data)
        recent, order = self.recent[direction], self.recent_order[direction]
        while order and ts - order[0][0] > COPY_NS:
            recent.discard(order.popleft()[1])
        # (64-bit keyed SipHash, not the bytes: holding every datagram of the last COPY_NS would
        # cost a second of the connection's data rate in memory; two different datagrams of one
        # direction within it collide with probability about n**2 / 2**65, 3e-10 for n = 10**5)
        key = hash(data)
        if key in recent:
            self.duplicates += 1  # the same datagram captured a second time
            return
        recent.add(key)
        order.append((ts, key))
        self.packets[direction] += 1
        self.nbytes[direction] += len(data)
        pos = 0
        while pos < len(data):
            first = data[pos]
            if first & 0x40 == 0 and not (first & 0x80 and data[pos + 1:pos + 5] == b"\x00\x00\x00\x00"):
                # not QUIC (fixed bit, RFC 9000 §17.2), or padding after the packets; a Version
                # Negotiation packet's other bits are arbitrary (RFC 8999 §6, RFC 9000 §17.2.1)
                break
            buf = Buffer(data=data[pos:])
            try:
                hdr = pull_quic_header(buf, host_cid_length=self.cid_len[direction] or 0)
            except (ValueError, BufferReadError, KeyError):
                break
            size = hdr.packet_length
            enc_off = buf.tell()
            ptype = hdr.packet_type
            whole = size
            if (ptype is QuicPacketType.ONE_RTT and (size > _MAX_SEGMENT or 0 < self.gso[direction] < size)
                    and captured == len(data)):
                size = self._segment(direction, data, pos, enc_off, size)
            packet = data[pos:pos + size]
            start, pos = pos, pos + size
            if ptype == QuicPacketType.RETRY:
                self.retry = True
                self.pending_dcid = hdr.source_cid  # RFC 9000 §17.2.5.2: the client's next DCID
                continue
            if ptype == QuicPacketType.VERSION_NEGOTIATION:
                self.vn_pending = direction == SERVER  # (RFC 9000 §6.1: only a server sends one)
                continue
            if self.vn_pending and direction == CLIENT and ptype is QuicPacketType.INITIAL:
                self._restart(hdr.version, hdr.destination_cid)
            if ptype == QuicPacketType.INITIAL and direction == CLIENT and self.pending_dcid:
                self._initial_keys(hdr.destination_cid)
                self.pending_dcid = None
                # its CRYPTO stream begins again with the ClientHello (RFC 9000 §17.2.5.3 wants the
                # same one; aioquic's client makes a new one, with a new random, and the key log
                # names that one): read afresh
                self.crypto[CLIENT][_INITIAL] = _Crypto()
                self.hs_buf[CLIENT][_INITIAL].clear()
                self.client_random = None
            if hdr.version is not None:  # long header: the sender's SCID is the peer's future DCID
                self.cid_len[1 - direction] = len(hdr.source_cid)
                if hdr.version != self.version and hdr.version in INITIAL_TYPE:
                    self._switch_version(direction, hdr.version)
            # (compared, not looked up: an Enum member's hash is a Python call, 7 a packet as dict keys)
            if ptype is QuicPacketType.ONE_RTT:
                space, name = _APP, "1rtt"
            elif ptype is QuicPacketType.INITIAL:
                space, name = _INITIAL, "initial"
            elif ptype is QuicPacketType.HANDSHAKE:
                space, name = _HANDSHAKE, "handshake"
            else:
                space, name = _APP, "0rtt" if ptype is QuicPacketType.ZERO_RTT else "1rtt"
            self.first_of.setdefault((direction, name), ts)
            if ptype == QuicPacketType.ONE_RTT:
                self._burst(direction, ts, size)
                if direction == SERVER and size - 1 - (self.cid_len[SERVER] or 0) - _AEAD_TAG > ACK_SIZED_BYTES:
                    self.last_data = ts  # (RFC 9000 §17.3.1: 1 byte, the DCID, then the protected part)
            if start + size > captured:
                # the capture's snapshot length cut it: its header is read (type, time, size),
                # its protected part is not there to open
                self.snapped[direction] += 1
                if ptype == QuicPacketType.ZERO_RTT:
                    self.zero_rtt += 1
                continue
            if ptype == QuicPacketType.ZERO_RTT:
                self.zero_rtt += 1
                if direction == CLIENT and len(self.early_held) < _MAX_EARLY_HELD:
                    # RFC 9001 §4.6.1: 0-RTT packets follow the ClientHello, keyed by the client's early
                    # traffic secret with the resumed session's cipher suite, which the ServerHello
                    # shows: held until it (and the ALPN the server's EncryptedExtensions confirm)
                    self.early_held.append((ts, packet, enc_off, hdr.version))
                    self._early()
                continue
            ctx = self.ctx[direction][space]
            if ctx is None and self.ech_pending is not None and direction == SERVER and space == _HANDSHAKE:
                self._ech_match(packet, enc_off)
                ctx = self.ctx[direction][space]
            if ctx is None:
                continue
            opened = _open(ctx, packet, enc_off, self.pn[direction][space] + 1)
            if opened is None and size != whole:
                # cut to the sender's last segment size, it does not open: the size changed (path
                # MTU discovery, RFC 9000 §14.3), looked for again, else one packet to the end
                self.gso[direction] = 0
                size = self._segment(direction, data, start, enc_off, whole)
                packet, pos = data[start:start + size], start + size
                opened = _open(ctx, packet, enc_off, self.pn[direction][space] + 1)
            if opened is None:
                self.failed[direction] += 1
                continue
            plain_header, payload, pn, changed = opened
            if changed:
                apply_key_phase(ctx, next_key_phase(ctx), "remote_update")  # RFC 9001 §6
                self.updates += 1
            self.pn[direction][space] = max(self.pn[direction][space], pn)
            if space == _APP:
                self.opened += 1
            self.pkt_data = []
            eliciting = self._frames(direction, space, ts, payload)
            self.rtt[direction].sent_packet(space, pn, ts, eliciting)
            self.loss.packet(direction, space, pn, ts, eliciting, self.pkt_data)

    def _early(self, final: bool = False) -> None:
        """Open the held 0-RTT packets once their keys and the application are known (RFC 9001
        §4.6.1, §5.1: CLIENT_EARLY_TRAFFIC_SECRET); 0-RTT shares the application data packet
        number space with 1-RTT (RFC 9000 §12.3)."""
        if not self.early_held or self.suite is None or (self.h3 is None and not final and self.alpn is None):
            return
        if self.early_accepted is False:
            # RFC 9001 §4.6.2: the server rejected 0-RTT and discarded the packets unread (the
            # client sends their data again in 1-RTT packets): so does qoe
            self.early_rejected += len(self.early_held)
            self.early_held = []
            return
        secret = self.keylog.get("CLIENT_EARLY_TRAFFIC_SECRET", self.client_random) \
            if self.keylog is not None and self.client_random is not None else None
        held, self.early_held = self.early_held, []
        if secret is None:
            if self.keylog is None:
                return  # the note says no key log
            self.notes.append(f"{len(held)} 0-RTT packet(s) not decrypted: no CLIENT_EARLY_TRAFFIC_SECRET "
                              "for this connection in the key log")
            return
        try:
            suite = CipherSuite(self.suite)
        except ValueError:
            return
        ctxs: dict[int, CryptoContext] = {}  # by the version each packet's long header names (the
        # labels differ, RFC 9369 §3.3.2: a 0-RTT packet sent before the server chose another
        # version is in the client's first one)
        outer = self.pkt_data  # (opened while a server packet's frames are read: its ranges are kept)
        for ts, packet, enc_off, version in held:
            ctx = ctxs.get(version)
            if ctx is None:
                ctx = ctxs[version] = CryptoContext()
                ctx.setup(cipher_suite=suite, secret=secret, version=version)
            opened = _open(ctx, packet, enc_off, self.pn[CLIENT][_APP] + 1)
            if opened is None:
                self.failed[CLIENT] += 1
                continue
            _, payload, pn, _ = opened
            self.pn[CLIENT][_APP] = max(self.pn[CLIENT][_APP], pn)
            self.opened += 1
            self.early_opened += 1
            self.pkt_data = []
            eliciting = self._frames(CLIENT, _APP, ts, payload)
            self.rtt[CLIENT].sent_packet(_APP, pn, ts, eliciting)
            self.loss.packet(CLIENT, _APP, pn, ts, eliciting, self.pkt_data)
        self.pkt_data = outer

    def _burst(self, direction: int, ts: int, size: int) -> None:
        b = self.burst
        if b is not None and b[0] == direction:
            b[2] = ts
            b[3] += 1
            b[4] += size
            return
        self._flush()
        self.burst = [direction, ts, ts, 1, size]

    def _flush(self) -> None:
        b, self.burst = self.burst, None
        if b is None:
            return
        if len(self.bursts) < MAX_BURSTS:
            self.bursts.append(EncryptedBurst(_SIDE[b[0]], b[1], b[2], b[3], b[4]))
        else:
            self.bursts_dropped += 1

    # -- frames (RFC 9000 §19) ---------------------------------------------------------------

    def _frames(self, direction: int, space: int, ts: int, payload: bytes) -> bool:
        """Read a packet's frames; whether it was ack-eliciting (RFC 9000 §13.2.1)."""
        buf = Buffer(data=payload)
        eliciting = False
        try:
            while not buf.eof():
                ft = buf.pull_uint_var()
                if ft not in NOT_ACK_ELICITING:
                    eliciting = True
                if ft == 0x00 or ft == 0x01:  # PADDING, PING
                    continue
                if ft in (0x02, 0x03):  # ACK, ACK_ECN
                    ranges, delay = pull_ack_frame(buf)
                    self.rtt[1 - direction].ack(space, ts, ranges, delay)  # the peer's packets acknowledged
                    self.loss.ack(direction, space, ts, ranges, delay)
                    if ft == 0x03:
                        for _ in range(3):
                            buf.pull_uint_var()
                elif ft == 0x04:  # RESET_STREAM: id, code, final size
                    sid, code = buf.pull_uint_var(), buf.pull_uint_var()
                    buf.pull_uint_var()
                    if self.h3 is not None:
                        self.h3.reset(sid, direction, code, "RESET_STREAM")
                elif ft == 0x05:  # STOP_SENDING: id, code
                    sid, code = buf.pull_uint_var(), buf.pull_uint_var()
                    if self.h3 is not None:
                        self.h3.reset(sid, direction, code, "STOP_SENDING")
                elif ft == 0x06:  # CRYPTO: offset, length, data
                    off = buf.pull_uint_var()
                    data = buf.pull_bytes(buf.pull_uint_var())
                    self.pkt_data.append((None, off, off + len(data)))
                    self._crypto(direction, space, off, data)
                elif ft == 0x07:  # NEW_TOKEN
                    buf.pull_bytes(buf.pull_uint_var())
                elif 0x08 <= ft <= 0x0F:  # STREAM: OFF 0x04, LEN 0x02, FIN 0x01
                    sid = buf.pull_uint_var()
                    off = buf.pull_uint_var() if ft & 0x04 else 0
                    n = buf.pull_uint_var() if ft & 0x02 else buf.capacity - buf.tell()
                    if n:
                        self.pkt_data.append((sid, off, off + n))
                    self._stream(direction, ts, sid, off, buf.pull_bytes(n), bool(ft & 0x01))
                elif ft in (0x10, 0x12, 0x13, 0x14, 0x16, 0x17, 0x19):  # one varint
                    buf.pull_uint_var()
                elif ft in (0x11, 0x15):  # two varints
                    buf.pull_uint_var()
                    buf.pull_uint_var()
                elif ft == 0x18:  # NEW_CONNECTION_ID
                    buf.pull_uint_var()
                    buf.pull_uint_var()
                    n = buf.pull_uint8()
                    buf.pull_bytes(n)
                    buf.pull_bytes(16)
                    self.cid_len[1 - direction] = n  # the peer may now send to it (same length in practice)
                elif ft in (0x1A, 0x1B):  # PATH_CHALLENGE / PATH_RESPONSE
                    buf.pull_bytes(8)
                elif ft in (0x1C, 0x1D):  # CONNECTION_CLOSE
                    code = buf.pull_uint_var()
                    if ft == 0x1C:
                        buf.pull_uint_var()
                    buf.pull_bytes(buf.pull_uint_var())
                    self.closed = self.closed or (f"{_SIDE[direction]} 0x{code:x}" + (" (application)" if ft == 0x1D else ""))
                elif ft == 0x1E:  # HANDSHAKE_DONE
                    if self.handshake_done is None:
                        self.handshake_done = ts
                        for r in self.rtt:  # RFC 9001 §4.1.2: the handshake is confirmed
                            r.confirmed = True
                        self.loss.confirmed(ts)
                elif ft == 0x30:  # DATAGRAM to the end
                    break
                elif ft == 0x31:
                    buf.pull_bytes(buf.pull_uint_var())
                else:
                    self.notes.append(f"unknown frame type 0x{ft:x}: rest of a packet skipped")
                    break
        except (BufferReadError, ValueError) as e:
            self.notes.append(f"{_SIDE[direction]}: a frame cut short ({e})")
        return eliciting

    def _crypto(self, direction: int, space: int, off: int, data: bytes) -> None:
        new = self.crypto[direction][space].add(off, data)
        if not new:
            return
        hs = self.hs_buf[direction][space]
        hs += new
        while len(hs) >= 4:
            mlen = int.from_bytes(hs[1:4], "big")
            if len(hs) < 4 + mlen:
                if mlen > _MAX_CRYPTO:
                    hs.clear()
                return
            mtype, body = hs[0], bytes(hs[4:4 + mlen])
            del hs[:4 + mlen]
            try:
                if mtype == 1 and direction == CLIENT:
                    self._client_hello(body)
                elif mtype == 2 and direction == SERVER:
                    self._server_hello(body)
                elif mtype == 8 and direction == SERVER:
                    self.early_accepted = False
                    for t, d in _extensions(body, 0):
                        if t == 16:
                            self.alpn = _alpn_chosen(d) or None
                            self._start_h3()
                        elif t == 42:  # RFC 8446 §4.2.10: early_data in EncryptedExtensions: accepted
                            self.early_accepted = True
                        elif t == 0x39:  # the server's transport parameters (RFC 9001 §8.2)
                            self._ack_params(self.rtt[CLIENT], d)
                    self._early()
            except IndexError:
                self.notes.append("a TLS handshake message cut short")

    def _client_hello(self, body: bytes) -> None:
        if self.client_random is not None:
            return
        self.client_random = body[2:34]
        i = 34
        i += 1 + body[i]  # legacy_session_id
        i += 2 + int.from_bytes(body[i:i + 2], "big")  # cipher_suites
        i += 1 + body[i]  # legacy_compression_methods
        for t, d in _extensions(body, i):
            if t == 0 and len(d) > 5:  # RFC 6066 §3 server_name: list(2) type(1) name<2>
                n = int.from_bytes(d[3:5], "big")
                self.server_name = d[5:5 + n].decode("ascii", "replace")
            elif t == 0x39:  # RFC 9001 §8.2 quic_transport_parameters: the client's ACK Delay units
                self._ack_params(self.rtt[SERVER], d)
            elif _ech_outer(t, d):
                self.ech_offered = True  # (or its GREASE: qoe.web.tls.TlsSession.ech_offered)
            elif t == 16:  # RFC 7301 §3.1
                names, j, out = d[2:], 0, []
                while j < len(names):
                    out.append(names[j + 1:j + 1 + names[j]].decode("ascii", "replace"))
                    j += 1 + names[j]
                self.alpn_offered = tuple(out)

    def _ack_params(self, rtt: AckRtt, data: bytes) -> None:
        """ack_delay_exponent and max_ack_delay of the side sending ``data`` (RFC 9000 §18.2)."""
        try:
            tp = pull_quic_transport_parameters(Buffer(data=data))
        except (BufferReadError, ValueError):
            self.notes.append("transport parameters not readable: ACK Delay read with the defaults")
            return
        if tp.ack_delay_exponent is not None:
            rtt.exponent = tp.ack_delay_exponent
        if tp.max_ack_delay is not None:
            rtt.max_ack_delay = tp.max_ack_delay * 1_000_000  # ms -> ns

    def _server_hello(self, body: bytes) -> None:
        i = 34
        i += 1 + body[i]
        self.suite = int.from_bytes(body[i:i + 2], "big")
        self._keys()

    def _keys(self, cr: bytes | None = None) -> None:
        log, cr = self.keylog, cr or self.client_random
        if log is None or cr is None or self.suite is None:
            return
        try:
            suite = CipherSuite(self.suite)
        except ValueError:
            self.notes.append(f"cipher suite 0x{self.suite:04x} not decrypted")
            return
        names = (("CLIENT_HANDSHAKE_TRAFFIC_SECRET", CLIENT, _HANDSHAKE), ("SERVER_HANDSHAKE_TRAFFIC_SECRET", SERVER, _HANDSHAKE),
                 ("CLIENT_TRAFFIC_SECRET_0", CLIENT, _APP), ("SERVER_TRAFFIC_SECRET_0", SERVER, _APP))
        for label, direction, space in names:
            secret = log.get(label, cr)
            if secret is None:
                continue
            ctx = CryptoContext()
            ctx.setup(cipher_suite=suite, secret=secret, version=self.version)  # RFC 9001 §5.1
            self.ctx[direction][space] = ctx
            self.keys_found = True
        if not self.keys_found and self.ech_offered:
            self.ech_pending = suite  # (the server's first Handshake packet finds them: _ech_match)

    def _ech_match(self, packet: bytes, enc_off: int) -> None:
        """Encrypted Client Hello over QUIC: the key log names the ClientHelloInner's random,
        which the Initial packets do not show (``qoe.web.decrypt`` does the same over TCP). The
        server's first Handshake packet opens with one entry's SERVER_HANDSHAKE_TRAFFIC_SECRET
        alone (RFC 9001 §5.3: an AEAD, whose 16-byte tag another key passes by a chance of about
        2^-128); that entry's secrets are the connection's. Each TLS 1.3 entry of the key log
        (:meth:`~qoe.web.keylog.KeyLog.tls13_entries`) is tried once, for this one packet."""
        suite, self.ech_pending = self.ech_pending, None
        if self.keylog is None or suite is None:
            return
        for cr, secret in self.keylog.tls13_entries():
            ctx = _ech_trial(suite, secret, self.version)
            if ctx is None or _open(ctx, packet, enc_off, self.pn[SERVER][_HANDSHAKE] + 1) is None:
                continue
            self._keys(cr)
            self.ech_used = True
            return

    # -- streams -------------------------------------------------------------------------------

    def _start_h3(self) -> None:
        if self.h3 is None and speaks_h3(self.alpn):
            from qoe.web._h3 import H3Parser  # noqa: PLC0415 (pylsqpack only when HTTP/3 is seen)

            self.h3 = H3Parser()

    def _stream(self, direction: int, ts: int, sid: int, off: int, data: bytes, fin: bool) -> None:
        if self.h3 is None:
            if self.alpn is None:
                self.alpn = None  # EncryptedExtensions not seen: cannot tell the application
            return
        key = (sid, direction)
        st = self.streams.get(key)
        if st is None:
            st = self.streams[key] = _StreamIn()
        if fin:
            st.fin_at = off + len(data)
        if st.done:
            return
        if off > st.next:
            if st.held_bytes < _MAX_STREAM_HELD:
                st.held[off] = data
                st.held_bytes += len(data)
            return
        out = bytearray(data[st.next - off:]) if off + len(data) > st.next else bytearray()
        st.next += len(out)
        while st.held:
            k = min(st.held)
            if k > st.next:
                break
            d = st.held.pop(k)
            st.held_bytes -= len(d)
            if k + len(d) > st.next:
                piece = d[st.next - k:]
                out += piece
                st.next += len(piece)
        ended = st.fin_at is not None and st.next >= st.fin_at
        if out or ended:
            if ended:
                st.done = True
            self.h3.stream(sid, direction, ts, bytes(out), ended)
            if self.tap is not None:
                self.tap(self.client, self.server, sid, direction, bytes(out), ended)

    # -- result -----------------------------------------------------------------------------------

    def result(self, make: Any) -> QuicConnection:
        self._early(final=True)
        if self.snapped[CLIENT] + self.snapped[SERVER]:
            self.notes.append(f"the capture's snapshot length cut {self.snapped[CLIENT]} packet(s) of the client's "
                              f"and {self.snapped[SERVER]} of the server's: not opened (their time, type and size "
                              "count)")
        if self.early_rejected:
            self.notes.append(f"0-RTT rejected by the server (no early_data in its EncryptedExtensions): "
                              f"{self.early_rejected} 0-RTT packet(s) it discarded unread, not read here either")
        self._flush()
        f = self.first_of
        cinit, sinit = f.get((CLIENT, "initial")), f.get((SERVER, "initial"))
        c1rtt = f.get((CLIENT, "1rtt"))
        end = self.handshake_done if self.handshake_done is not None else c1rtt
        if self.late:
            end = None  # (its handshake is not in the capture)
        notes = list(dict.fromkeys(self.notes))
        if self.vn_pending:
            notes.append(f"version negotiation (RFC 9000 §6): version {version_name(self.version)} not taken by the "
                         "server, and the client did not begin again on these addresses and ports")
        if self.late:
            notes.insert(0, _JOINED_NOTE)
        elif self.keylog is None:
            notes.insert(0, "no key log: QUIC packets are encrypted, the objects are not visible "
                            "(handshake timing and packet bursts only)")
        elif self.client_random is None:
            notes.insert(0, "the ClientHello was not captured: the key log cannot be matched")
        elif not self.keys_found:
            notes.insert(0, "no secrets for this connection in the key log: objects not visible" + (
                " (it offered Encrypted Client Hello: if it was used, the key log names the inner ClientHello's "
                "random, and no entry's secrets open the server's first Handshake packet)" if self.ech_offered else ""))
        elif self.h3 is None and self.opened:
            notes.insert(0, f"ALPN {self.alpn!r}: not HTTP/3, streams not parsed" if self.alpn
                         else "EncryptedExtensions not seen: the application protocol is unknown")
        if self.failed[0] + self.failed[1]:
            notes.append(f"{self.failed[0] + self.failed[1]} packet(s) failed authentication")
        txs: tuple[Any, ...] = ()
        goaways: tuple[tuple[str, int, int], ...] = ()
        if self.h3 is not None:
            make = functools.partial(make, tls_start_ns=cinit, tls_end_ns=f.get((CLIENT, "handshake")),
                                     security="QUIC")
            txs = tuple(self.h3.transactions(make, connection=self.index, client=self.client, server=self.server,
                                             first_ns=self.first, ended=self.closed is not None))
            goaways = tuple(self.h3.goaways)
            if self.h3.error:
                notes.append(f"HTTP/3: {self.h3.error}")
        suite = None
        if self.suite is not None:
            try:
                suite = CipherSuite(self.suite).name
            except ValueError:
                suite = f"0x{self.suite:04x}"
        return QuicConnection(
            index=self.index, client=self.client, server=self.server, version=self.version,
            first_ns=self.first, last_ns=self.last, server_name=self.server_name,
            alpn_offered=self.alpn_offered, alpn=self.alpn, cipher_suite=suite,
            client_initial_ns=cinit, server_initial_ns=sinit,
            client_handshake_ns=f.get((CLIENT, "handshake")), server_handshake_ns=f.get((SERVER, "handshake")),
            client_first_1rtt_ns=c1rtt, server_first_1rtt_ns=f.get((SERVER, "1rtt")),
            handshake_done_ns=self.handshake_done, handshake_end_ns=end,
            handshake_ns=None if end is None or cinit is None else end - cinit,
            client_packets=self.packets[0], server_packets=self.packets[1],
            client_bytes=self.nbytes[0], server_bytes=self.nbytes[1],
            keys_found=self.keys_found, decrypted=self.opened > 0,
            client_failed_packets=self.failed[0], server_failed_packets=self.failed[1], key_updates=self.updates,
            bursts=tuple(self.bursts), bursts_dropped=self.bursts_dropped, transactions=txs, goaways=goaways,
            closed=self.closed, note="; ".join(notes) or None, **self._rtt_fields(), **self._loss_fields(notes),
            zero_rtt_packets=self.zero_rtt, zero_rtt_decrypted=self.early_opened, early_data_accepted=self.early_accepted,
            server_last_data_ns=self.last_data, duplicate_datagrams=self.duplicates, ech_offered=self.ech_offered,
            ech_used=self.ech_used, cut_packets=self.snapped[CLIENT] + self.snapped[SERVER], retry=self.retry,
        )

    def _loss_fields(self, notes: list[str]) -> dict[str, Any]:
        """Both senders' loss recovery (RFC 9002 §6, :mod:`qoe.web._quicloss`); none without keys."""
        if not self.opened:
            return {}
        # each side's leg, measured by the other's ACKs, less the delay they report
        legs = (self.rtt[SERVER].min_adjusted, self.rtt[CLIENT].min_adjusted)
        client, server = analyse(self.loss, legs, (self.rtt[CLIENT], self.rtt[SERVER]))
        if self.loss.full:
            notes.append("loss recovery followed over the first packets only (a limit)")
        return {"client_loss": client, "server_loss": server,
                "lost_packets": client.lost_packets + server.lost_packets,
                "retransmitted_stream_bytes": client.retransmitted_stream_bytes + server.retransmitted_stream_bytes,
                "pto_events": client.pto_events + server.pto_events}

    def _rtt_fields(self) -> dict[str, Any]:
        """The path RTT: the sum of both legs' estimates (one leg alone when the other has none)."""
        legs = [r for r in self.rtt if r.samples]
        if not legs:
            return {}
        return {"rtt_samples": sum(r.samples for r in legs), "min_rtt_ns": sum(r.min_rtt or 0 for r in legs),
                "smoothed_rtt_ns": sum(r.smoothed or 0 for r in legs), "rttvar_ns": sum(r.rttvar or 0 for r in legs)}


def speaks_h3(alpn: str | None) -> bool:
    """Whether a QUIC connection's ALPN is HTTP/3 ("h3", or a draft's "h3-29"...: RFC 9114 §3.1),
    the connections whose streams are read as HTTP/3."""
    return alpn is not None and alpn.startswith("h3")


def iter_quic_connections(capture: Any, *, keylog: Any = None, stream_tap: Any = None,
                          times: Any = None) -> Iterator[QuicConnection]:
    """:func:`quic_connections` as a stream: each connection when it has been idle 30 s or the capture ended.

    ``stream_tap``, when given, is called with ``(client, server, stream_id, direction, data, fin)``
    for the in-order bytes of every stream handed to HTTP/3 (decrypted connections only): what
    a caller needs to read bodies, which the transactions do not keep (e.g. a streaming
    session's manifests, :mod:`qoe.video.has.decrypted`). ``times``, when given: only the
    datagrams captured within one of these ``(start_ns, end_ns)`` spans (ends included;
    checked by :func:`qoe.capture.time_spans`), the others left out as if not captured: a
    reader of a few connections' first moments (from each one's first packet) decrypts
    nothing else. A connection whose datagrams resume after a gap of more than its idle
    timeout is a new one, joined in progress, as in any capture."""
    keylog = load_keylog(capture if isinstance(capture, (str, os.PathLike)) else None, keylog)
    spans = None if times is None else time_spans(times)
    return _connections(capture, keylog, stream_tap, spans=spans)


class _Elsewhere:
    """A connection whose packets the other process reads (:func:`quic_connections` split in
    two): only what the pass needs to tell its datagrams and its idleness."""

    __slots__ = ("index", "client", "server", "last", "notes", "path_cid")

    def __init__(self, index: int, client: tuple[str, int], server: tuple[str, int], ts: int) -> None:
        self.index, self.client, self.server, self.last = index, client, server, ts
        self.notes: list[str] = []
        self.path_cid = b""  # the client's last DCID (_Paths)

    def datagram(self, direction: int, ts: int, data: bytes, captured: int | None = None) -> None:
        self.last = ts


class _Unread:
    """The 4-tuple of a connection of a version not read (``qoe.web._quicversion.other_version``):
    its later datagrams are its, not a connection joined in progress."""

    __slots__ = ("client", "server", "last")
    index = -1
    path_cid = b""

    def __init__(self, client: tuple[str, int], server: tuple[str, int], ts: int) -> None:
        self.client, self.server, self.last = client, server, ts

    def datagram(self, direction: int, ts: int, data: bytes, captured: int | None = None) -> None:
        self.last = ts


class _Paths:
    """Which 4-tuples each connection has had, and the Destination Connection IDs its client's
    short headers carry (in clear: RFC 8999 §5.2, RFC 9000 §17.3.1), so that its client on new
    addresses or a new port with a connection ID already seen stays the same connection (a
    NAT's rebinding, RFC 9000 §9.3, what a capture beyond the NAT shows; a client that
    migrates on purpose uses a new connection ID, §9.5, issued encrypted: that is a connection
    joined in progress). Read from clear bytes alone, so the two processes of a split pass
    decide alike."""

    __slots__ = ("keys", "by_cid", "cids", "lengths")

    def __init__(self) -> None:
        self.keys: dict[int, list[tuple[Any, ...]]] = {}  # id(connection) -> its 4-tuple keys
        self.by_cid: dict[bytes, Any] = {}  # a client DCID -> the open connection
        self.cids: dict[int, list[bytes]] = {}  # id(connection) -> its client DCIDs
        self.lengths: set[int] = set()

    def add(self, conns: dict[tuple[Any, ...], Any], c: Any, key: tuple[Any, ...],
            client: tuple[str, int] | None = None) -> None:
        conns[key] = c
        known = self.keys.setdefault(id(c), [])
        known.append(key)
        if client is not None:
            c.notes.append(f"its client moved to {client[0]}:{client[1]} with the same connection ID (RFC 9000 §9.3: "
                           "a NAT's rebinding, as a capture beyond it shows)")

    def drop(self, conns: dict[tuple[Any, ...], Any], c: Any) -> bool:
        """Forget connection ``c`` (all its paths); False when it was forgotten already."""
        keys = self.keys.pop(id(c), None)
        if keys is None:
            return False
        for k in keys:
            conns.pop(k, None)
        for cid in self.cids.pop(id(c), ()):
            self.by_cid.pop(cid, None)
        return True

    def server_cid(self, c: Any, payload: bytes) -> None:
        """A server's long header: its Source Connection ID is the client's DCID from then on
        (RFC 9000 §7.2)."""
        if len(payload) > 6 and payload[1:5] != b"\0\0\0\0":  # (not Version Negotiation)
            dl = payload[5]
            if len(payload) > 6 + dl:
                self._cid(c, payload[7 + dl:7 + dl + payload[6 + dl]])

    def client_cid(self, c: Any, payload: bytes) -> None:
        """A client's short header with another DCID than its last (one the server issued in a
        NEW_CONNECTION_ID frame, RFC 9000 §5.1.1: of the same length here)."""
        if payload[0] & 0x40:
            self._cid(c, payload[1:1 + len(c.path_cid)])

    def _cid(self, c: Any, cid: bytes) -> None:
        c.path_cid = cid
        if not cid or cid in self.by_cid:
            return
        self.by_cid[cid] = c
        self.cids.setdefault(id(c), []).append(cid)
        self.lengths.add(len(cid))

    def moved(self, payload: bytes) -> Any:
        """The open connection whose client sends this datagram from new addresses or port:
        a short header whose DCID is one of its (else None)."""
        if not payload or payload[0] & 0xC0 != 0x40 or not self.by_cid:
            return None
        for n in self.lengths:
            c = self.by_cid.get(payload[1:1 + n])
            if c is not None:
                return c
        return None


def _connections(capture: Any, keylog: KeyLog | None, stream_tap: Any = None,
                 half: int | None = None, floors: bool = False, spans: TimeSpans | None = None) -> Iterator[Any]:
    """The connections of :func:`iter_quic_connections`; with ``half`` (0 or 1), those whose
    index has that parity only: the datagrams of the others are followed (their connections
    numbered, their idleness seen, as the whole pass does) but not read. ``floors``: after each
    look for idle connections, a pair too: the floor (no connection still to be given, of this
    half, had its first packet before it: the earliest first packet of those open, else the
    time of the datagram being read) and that time."""
    conns: dict[tuple[Any, ...], Any] = {}  # by 4-tuple: a connection under each of its paths
    paths = _Paths()
    count = 0
    unread: dict[int, int] = {}  # connections of a QUIC version not read, by version
    sweep_at = None  # capture time of the next look for connections idle _IDLE_NS
    for ts_ns, a, b, payload, captured in _datagrams(capture, spans):
        if sweep_at is None or ts_ns >= sweep_at:
            # a connection whose 4-tuple is not seen again would otherwise be held (with its
            # packets and streams) to the end of the capture: memory would grow with it
            sweep_at = ts_ns + _SWEEP_NS
            idle = sorted({id(c): (c.index, c) for c in conns.values() if ts_ns - c.last > _IDLE_NS}.values(),
                          key=lambda x: x[0])
            for _, c in idle:
                if paths.drop(conns, c) and type(c) is _Conn:
                    yield c.result(make_transaction)
            if floors:
                yield min([ts_ns] + [c.first for c in conns.values() if type(c) is _Conn]), ts_ns
        key = (a, b) if a <= b else (b, a)
        c = conns.get(key)
        if c is not None and ts_ns - c.last > _IDLE_NS:
            if paths.drop(conns, c) and type(c) is _Conn:
                yield c.result(make_transaction)
            c = None
        if c is None:
            c = paths.moved(payload)
            if c is not None:  # an open connection's client on new addresses or port
                paths.add(conns, c, key, a if c.server == b else b)
        if c is None:
            version = initial_version(payload)
            late = False
            if not version:
                other = other_version(payload, a[1], b[1])
                if other:
                    unread[other] = unread.get(other, 0) + 1
                    conns[key] = _Unread(a, b, ts_ns)
                    continue
                late = joins_late(payload, a[1], b[1])
                if not late:
                    continue
            # (joined late: the client is the side away from the server's port)
            client, server = (b, a) if late and a[1] == QUIC_PORT and b[1] != QUIC_PORT else (a, b)
            if half is not None and count % 2 != half:
                c = _Elsewhere(count, client, server, ts_ns)
            elif late:
                c = _Conn(count, client, server, ts_ns, 0, None, keylog)
                c.tap = stream_tap
            else:
                dcid = payload[6:6 + payload[5]]
                c = _Conn(count, a, b, ts_ns, version, dcid, keylog)
                c.tap = stream_tap
            count += 1
            paths.add(conns, c, key)
        direction = SERVER if a == c.server else CLIENT
        c.datagram(direction, ts_ns, payload, captured)
        first = payload[0]
        # (looked at here, in a few comparisons, for every datagram: the common one, a short
        # header of a DCID already known or the server's, costs nothing more)
        if first & 0x80:
            if direction == SERVER and type(c) is not _Unread:
                paths.server_cid(c, payload)
        elif direction == CLIENT and c.path_cid and payload[1:1 + len(c.path_cid)] != c.path_cid:
            paths.client_cid(c, payload)
    for c in sorted({id(c): c for c in conns.values()}.values(), key=lambda x: x.index):
        if type(c) is _Conn:
            yield c.result(make_transaction)
    if unread and half != 1:  # (half 1 is read in the other process: the warning is this one's)
        name = os.fspath(capture) if isinstance(capture, (str, os.PathLike)) else "the packets"
        seen = ", ".join(f"{n} of version {version_name(v)}" for v, n in sorted(unread.items()))
        warnings.warn(f"{name}: QUIC connections not read ({seen}): qoe reads QUIC versions 1 (RFC 9000) and "
                      "2 (RFC 9369)", QoEWarning, stacklevel=2)


def _other_half(capture: Any, keylog: KeyLog | None) -> Iterator[tuple[list[QuicConnection], float, float]]:
    """The odd-numbered connections as they are given, in batches: each with the floor after
    it and the capture time read by then (``_connections``' ``floors``; the last, infinity).
    Made in the child of :func:`_final_connections`. The capture's reader warns here as in
    the parent, which reads the same file: the parent's warnings are the ones kept."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batch: list[QuicConnection] = []
        for c in _connections(capture, keylog, None, 1, floors=True):
            if type(c) is tuple:
                yield batch, c[0], c[1]
                batch = []
            else:
                batch.append(c)
        yield batch, math.inf, math.inf


def _final_connections(capture: Any, keylog: KeyLog | None, read_ahead: bool | None = False
                       ) -> Iterator[tuple[QuicConnection | None, float]]:
    """The QUIC connections of a capture as they are given (idle ``_IDLE_NS`` or at the end:
    :func:`iter_quic_connections`), each with a floor: no connection still to come had its
    first packet before it (``None`` with a floor alone when it rises with no connection
    given). ``keylog``: the secrets, loaded (:func:`qoe.web.keylog.load_keylog`). ``read_ahead``
    as :func:`quic_connections`: the odd-numbered connections read in a child process, the
    floor the lower of the two processes'. The floor given with a connection is the one before
    it. What :func:`quic_connections` collects, and what a streaming reader of QUIC pages needs
    (``qoe.web.pages``): a page of connections that ended before a floor (less the idle gap)
    is final."""
    if not _split(capture, read_ahead):
        floor: float = -math.inf
        for c in _connections(capture, keylog, None, None, floors=True):
            if type(c) is tuple:
                floor = max(floor, c[0])
                yield None, floor
            else:
                yield c, floor
        yield None, math.inf
        return
    # the child reads the same file, a few batches (seconds of capture) ahead at most; its
    # batches are taken as this process reaches the time they were read to, not waited for
    child = read_ahead_in(_other_half(capture, keylog), _CHILD_DEPTH, process=True)  # it starts now
    other = iter(child)
    mine = theirs = -math.inf
    there = -math.inf  # the capture time the child had read to, at its latest batch taken
    try:
        for c in _connections(capture, keylog, None, 0, floors=True):
            if type(c) is not tuple:
                yield c, min(mine, theirs)
                continue
            mine = max(mine, c[0])
            while there < c[1]:
                batch, f, there = next(other)
                for o in batch:  # (the floor of a batch holds once all of it is given)
                    yield o, min(mine, theirs)
                theirs = max(theirs, f)
            yield None, min(mine, theirs)
        while theirs < math.inf:
            batch, f, there = next(other)
            for o in batch:
                yield o, theirs
            theirs = max(theirs, f)
        yield None, math.inf
    finally:
        close = getattr(child, "close", None)
        if close is not None:
            close()


def _datagrams(capture: Any, spans: TimeSpans | None = None) -> Iterator[tuple[int, tuple[str, int], tuple[str, int], bytes, int]]:
    """``(ts_ns, (src, sport), (dst, dport), payload, captured)`` of each UDP datagram with a
    payload, in capture order: from a file, through the columnar reader
    (``qoe.capture.read_udp_batches``: the same datagrams as ``read_packets(capture,
    protocols=("udp",))``, without decoding each TCP segment of the file in Python); from
    packets already read, as they come. A datagram the capture's snapshot length cut
    (``UdpBatch.cut``) is given at its length on the wire, zeros in place of what was not
    captured, with ``captured`` the bytes that were (else ``len(payload)``): its headers read as
    on the wire, and no packet past ``captured`` is opened (:meth:`_Conn.datagram`). (Packets
    already read do not say what was cut: their payload as captured.) ``spans``: only the
    datagrams captured within them (a :class:`qoe.capture.TimeSpans`)."""
    if _is_file(capture):
        # a batch per chunk read (its payloads left in the chunk): QUIC's datagrams are large,
        # and a batch of 65,536 of them held a 45 MB capture whole (benchmarks/web_h3.py)
        for batch in read_udp_batches(capture, batch_size=None):
            names = batch.addresses
            keep = batch.lengths > 0
            if spans is not None:
                keep &= spans.contains(batch.ts_ns)
            rows = np.flatnonzero(keep)
            starts = batch.starts[rows]
            ends = starts + batch.lengths[rows]
            data = batch.data
            for ts, s, sp, d, dp, lo, hi, n in zip(batch.ts_ns[rows].tolist(), batch.src[rows].tolist(),
                                                   batch.sport[rows].tolist(), batch.dst[rows].tolist(),
                                                   batch.dport[rows].tolist(), starts.tolist(), ends.tolist(),
                                                   batch.cut[rows].tolist()):
                payload = data[lo:hi].tobytes()
                yield ts, (names[s], sp), (names[d], dp), payload + bytes(n) if n else payload, hi - lo
        return
    for p in capture:
        if p.proto == 17 and p.payload and (spans is None or spans.holds(p.ts_ns)):
            yield p.ts_ns, (p.src, p.sport), (p.dst, p.dport), bytes(p.payload), len(p.payload)


def quic_connections(capture: Any, *, keylog: Any = None, read_ahead: bool | None = False) -> list[QuicConnection]:
    """Every QUIC v1 or v2 connection of a capture, in order of first packet.

    Parameters
    ----------
    capture : path, binary file object, or iterable of qoe.capture.Packet
    keylog : path, sequence of paths or KeyLog, optional, keyword-only
        NSS key log(s) (``qoe.web.keylog.read_keylog``); a pcapng capture's Decryption Secrets
        Blocks are used as well. Without any, timing and bursts only.
    read_ahead : bool or None, optional, keyword-only
        With a capture file given by its path, read the connections in two processes (on
        Linux, :func:`qoe.capture.fork_available`): every QUIC connection is read whole by
        one of them (the even-numbered here, the odd ones in a child process), both follow
        every datagram to number the connections as one pass does; the same connections.
        None: when the process may run on two cores or more and the capture holds
        :data:`SPLIT_MIN_BYTES` or more. Default False (a pool of runs, :mod:`qoe.batch`,
        keeps every core busy already).

    Returns
    -------
    list of QuicConnection

    Warns
    -----
    QoEWarning
        Connections of a QUIC version not read (neither 1 nor 2: a datagram that opens one, and
        the later ones of its addresses and ports), once, with their number per version: they
        are not in the list.
    """
    keylog = load_keylog(capture if isinstance(capture, (str, os.PathLike)) else None, keylog)
    return sorted((c for c, _ in _final_connections(capture, keylog, read_ahead) if c is not None),
                  key=lambda c: c.index)


#: Batches (a look for idle connections each, one per second of capture) the child of
#: :func:`_final_connections` makes ahead of this process at most.
_CHILD_DEPTH = 8

#: Smallest capture read in two processes when ``read_ahead`` is None (bytes on disk). A QUIC
#: connection costs about 12 ms per 230 kB (``benchmarks/web_h3.py``): the child's start pays
#: from a few connections on.
SPLIT_MIN_BYTES = 2 << 20


def _split(capture: Any, read_ahead: bool | None) -> bool:
    if read_ahead is not None and not isinstance(read_ahead, bool):
        raise InputError(f"read_ahead must be True, False or None; given {read_ahead!r}")
    if read_ahead is False or not isinstance(capture, (str, os.PathLike)) or not fork_available():
        return False
    return read_ahead or read_ahead_pays(capture, SPLIT_MIN_BYTES)
