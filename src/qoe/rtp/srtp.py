"""SRTP: recognising encrypted RTP streams and decrypting them with libsrtp.

An SRTP packet (RFC 3711 §3.1) keeps the RTP header in clear and encrypts the payload
(with its padding), then appends an optional Master Key Identifier and an authentication
tag. Header-based statistics (loss, jitter, as tshark prints them) are therefore the same
as for plain RTP, but the payload is noise to a decoder: a stream must be recognised as
SRTP and decrypted before its audio is rebuilt, or refused.

Recognised (:class:`SrtpInfo`, :attr:`qoe.rtp.RtpStream.srtp`):

* ``"sdp"``: the SDP that announced the stream has an ``RTP/SAVP`` or ``RTP/SAVPF``
  profile (RFC 3711 §12, RFC 5124 §6; also ``UDP/TLS/RTP/SAVP(F)``, DTLS-SRTP);
* ``"heuristic"`` (:func:`looks_encrypted`): a stream of a codec whose payload has a
  fixed number of bytes per RTP timestamp tick (G.711, G.722, L16) whose payloads are
  longer than their timestamp step says by exactly an SRTP authentication tag, and whose
  bytes are uniformly distributed as ciphertext is (speech in G.711 is far from it).

Keys come from the SDP (RFC 4568 SDES ``a=crypto``: the *sender's* line,
:func:`qoe.rtp.sip.sender_crypto`) or from the user (:func:`parse_srtp_key`, ``SUITE:BASE64``).
:func:`qoe.rtp.decrypt.decrypt_streams` re-reads each stream's datagrams from the capture and decrypts
them with libsrtp (the reference implementation, through ``pylibsrtp``) in arrival order,
as a receiver would: libsrtp estimates the rollover counter (RFC 3711 §3.3.1, Appendix A)
from the sequence numbers, so a stream that wraps past 65535 inside the capture decrypts.
Packets that fail authentication are counted, warned about and left out of the packet
table (the jitter buffer sees them as lost); duplicates (which libsrtp's replay check
refuses, RFC 3711 §3.3.2) take the plaintext of their first copy.

Not handled: decrypting SRTCP (the scan recognises it, ``_looks_srtcp``, and reads only
its sender's SSRC: no report blocks, no round-trip times); a capture that starts after the sender's first
sequence-number rollover (the rollover counter is then not 0, and ``pylibsrtp`` cannot
be told its value: every packet fails authentication and :class:`~qoe.errors.EncryptedStreamError`
says so); key-params after the first on an ``a=crypto`` line; ``KDR``, ``UNENCRYPTED_*``
and ``FEC_*`` session parameters; DTLS-SRTP keys (they are not in the capture).

References
----------
.. [1] RFC 3711, "The Secure Real-time Transport Protocol (SRTP)", §3.1 (packet format,
   MKI, authentication tag), §3.3.1 (packet index and rollover counter), §3.3.2 (replay
   protection), §4.1.1 (AES-CM), §4.2.1 (HMAC-SHA1), §5.1 (default transforms: 80-bit tag).
.. [2] RFC 4568, "SDP Security Descriptions for Media Streams", §6.2 (the
   ``AES_CM_128_HMAC_SHA1_80`` and ``_32`` suites: 128-bit key, 112-bit salt, 80/32-bit tag).
.. [3] RFC 7714, "AES-GCM Authenticated Encryption in SRTP", §12 (16-octet tag), §14.2
   (``AEAD_AES_128_GCM``, ``AEAD_AES_256_GCM``: 96-bit salt).
.. [4] RFC 3551 §4.5.10 (L16), §4.5.14 (PCMA/PCMU: one octet per sample), §4.5.2 (G722:
   one octet per timestamp tick, the clock runs at 8000 Hz for 16000 samples/s).
"""

from __future__ import annotations

import base64
import binascii
import importlib
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from qoe.errors import InputError, UnsupportedCodecError
from qoe.rtp.sip import SdesCrypto

__all__ = [
    "SUITES",
    "SrtpSuite",
    "SrtpKey",
    "SrtpInfo",
    "parse_srtp_key",
    "looks_encrypted",
    "bytes_per_tick",
    "decrypt_packets",
]


@dataclass(frozen=True, slots=True)
class SrtpSuite:
    """Sizes of one SRTP crypto-suite, in bytes, and the libsrtp profile that runs it."""

    name: str
    key: int
    salt: int
    tag: int
    profile: str  # the pylibsrtp.Policy attribute


#: The suites libsrtp (through pylibsrtp) decrypts, by their SDES names.
SUITES: dict[str, SrtpSuite] = {
    # RFC 4568 §6.2.1: AES-CM 128-bit key, 112-bit salt, HMAC-SHA1 80-bit tag (RFC 3711 §5.1)
    "AES_CM_128_HMAC_SHA1_80": SrtpSuite("AES_CM_128_HMAC_SHA1_80", 16, 14, 10, "SRTP_PROFILE_AES128_CM_SHA1_80"),
    # RFC 4568 §6.2.2: the same with a 32-bit tag
    "AES_CM_128_HMAC_SHA1_32": SrtpSuite("AES_CM_128_HMAC_SHA1_32", 16, 14, 4, "SRTP_PROFILE_AES128_CM_SHA1_32"),
    # RFC 7714 §14.2: AES-GCM, 96-bit salt, 16-octet tag (§12)
    "AEAD_AES_128_GCM": SrtpSuite("AEAD_AES_128_GCM", 16, 12, 16, "SRTP_PROFILE_AEAD_AES_128_GCM"),
    "AEAD_AES_256_GCM": SrtpSuite("AEAD_AES_256_GCM", 32, 12, 16, "SRTP_PROFILE_AEAD_AES_256_GCM"),
}

# Authentication tag lengths of the suites above (bytes): what the heuristic looks for.
_TAG_LENGTHS = frozenset(s.tag for s in SUITES.values())

# Payload bytes per RTP timestamp tick of the codecs the heuristic knows (RFC 3551 §4.5.14
# PCMA/PCMU 1 octet per sample at 8000 Hz; §4.5.2 G722 1 octet per tick of its 8000 Hz
# clock; §4.5.10 L16 2 octets per sample and channel). Static types: 0 PCMU, 8 PCMA, 9 G722,
# 10 L16 stereo, 11 L16 mono (RFC 3551 Table 4).
_BYTES_PER_TICK = {"PCMU": 1, "PCMA": 1, "G722": 1, "L16": 2}
_STATIC_BYTES_PER_TICK = {0: 1, 8: 1, 9: 1, 10: 4, 11: 2}

# The heuristic's thresholds: share of consecutive packet pairs whose payload exceeds the
# timestamp step by one tag length, and fewest such pairs. Uniformity is judged on the
# histograms of the payload bytes' high and of their low nibbles (16 bins each, so that a
# scan keeps 32 counters per flow, not its payloads): for uniform bytes each chi-square has
# 15 degrees of freedom (mean 15, sd sqrt(30) = 5.5), and 15 + 6 sd = 47.9 is passed by
# chance with probability < 1e-6; G.711 speech and silence, whose codes crowd near those of
# zero (0xD5/0x55 A-law, 0xFF/0x7F mu-law), give hundreds.
_HEURISTIC_SHARE = 0.9
_HEURISTIC_MIN_PAIRS = 3
_CHI2_UNIFORM_MAX = 15.0 + 6.0 * np.sqrt(30.0)
_CHI2_MIN_BYTES = 256  # fewer than 16 bytes per bin: no verdict on uniformity

# A large libsrtp replay window (srtp_policy_t.window_size: libsrtp 2 takes 64 <= w < 0x8000): packets up to
# this many sequence numbers late still decrypt.
_WINDOW = 0x4000


@dataclass(frozen=True, slots=True)
class SrtpKey:
    """An SRTP master key and salt, the suite that uses them, and where they came from.

    Attributes
    ----------
    suite : str
        A name of :data:`SUITES`.
    key_salt : bytes
        Master key || master salt (RFC 3711 §8.2; RFC 4568 §6.1 ``inline:``).
    mki_length : int
        Bytes of MKI in each packet (RFC 3711 §3.1; 0: none).
    source : {"sdp", "user"}
        ``"sdp"``: the sender's ``a=crypto``; ``"user"``: given by the user.
    """

    suite: str
    key_salt: bytes
    mki_length: int = 0
    source: Literal["sdp", "user"] = "user"

    def __post_init__(self) -> None:
        s = SUITES.get(self.suite)
        if s is None:
            raise UnsupportedCodecError(
                f"SRTP crypto-suite {self.suite!r} is not supported; supported: {', '.join(SUITES)}"
            )
        if len(self.key_salt) != s.key + s.salt:
            raise InputError(
                f"an SRTP key for {self.suite} is {s.key}-byte master key || {s.salt}-byte salt = "
                f"{s.key + s.salt} bytes (RFC 3711 §8.2); given {len(self.key_salt)} bytes"
            )
        if self.mki_length and s.tag == 16:
            raise UnsupportedCodecError(f"SRTP {self.suite} with an MKI is not supported")

    def __repr__(self) -> str:  # the key stays out of logs and tracebacks
        return f"SrtpKey(suite={self.suite!r}, key_salt=<{len(self.key_salt)} bytes>, source={self.source!r})"

    @classmethod
    def from_sdes(cls, crypto: SdesCrypto) -> SrtpKey:
        """The key of an ``a=crypto`` line (its first key-param).

        Raises
        ------
        UnsupportedCodecError
            A suite or session parameter libsrtp cannot run here.
        InputError
            A key of the wrong length for its suite.
        """
        odd = [p for p in crypto.session_params if not p.upper().startswith("WSH=")]
        if any(p.upper().startswith(("KDR=", "UNENCRYPTED_", "UNAUTHENTICATED_", "FEC_")) for p in odd):
            raise UnsupportedCodecError(f"SRTP session parameters {' '.join(odd)} (RFC 4568 §6.3) are not supported")
        return cls(crypto.suite, crypto.key_salt, crypto.mki_length, source="sdp")


def parse_srtp_key(text: str | SrtpKey) -> SrtpKey:
    """``SUITE:BASE64`` -> :class:`SrtpKey` (the base64 of master key || salt, as in SDES).

    Examples
    --------
    >>> k = parse_srtp_key("AES_CM_128_HMAC_SHA1_80:" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNk")
    >>> k.suite, len(k.key_salt)
    ('AES_CM_128_HMAC_SHA1_80', 30)

    Raises
    ------
    InputError
        Not ``SUITE:BASE64``, bad base64, or a key of the wrong length for the suite.
    UnsupportedCodecError
        A suite not in :data:`SUITES`.
    """
    if isinstance(text, SrtpKey):
        return text
    suite, sep, b64 = str(text).strip().partition(":")
    if not sep or not b64:
        raise InputError(
            f"an SRTP key is SUITE:BASE64 (e.g. AES_CM_128_HMAC_SHA1_80:<40 base64 characters>); "
            f"given {str(text)[:40]!r}"
        )
    b64 = b64.removeprefix("inline:").split("|")[0]
    try:
        raw = base64.b64decode(b64 + "=" * (-len(b64) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise InputError(f"SRTP key for {suite}: {b64[:8]}... is not base64") from None
    return SrtpKey(suite.strip().upper(), raw, source="user")


@dataclass(frozen=True, slots=True)
class SrtpInfo:
    """That a stream is SRTP, how that was found, and what decryption did.

    Attributes
    ----------
    found_by : {"sdp", "dtls", "heuristic", "user"}
        ``"sdp"``: an ``RTP/SAVP(F)`` profile; ``"dtls"``: a DTLS handshake on the
        stream's 5-tuple (DTLS-SRTP, RFC 5764 §4.1: the keys never appear in the capture;
        RFC 7983 §7 demultiplexing); ``"heuristic"``: :func:`looks_encrypted`;
        ``"user"``: not recognised, but a key given by the user authenticated it.
    sdes : SdesCrypto or None
        The sender's ``a=crypto`` line (its key), when the capture's SDP has one.
    decrypted : bool
        Whether the stream's payloads are plaintext (after :func:`qoe.rtp.decrypt.decrypt_streams`).
    suite : str or None
        The suite the payloads were decrypted with (None before).
    key_source : {"sdp", "user"} or None
        Where the key that decrypted them came from.
    auth_failures : int
        Packets that failed authentication (left out of the packet table: lost).
    replayed : int
        Packets that libsrtp's replay check refused (duplicates): given their first copy's
        plaintext.
    """

    found_by: Literal["sdp", "dtls", "heuristic", "user"]
    sdes: SdesCrypto | None = None
    decrypted: bool = False
    suite: str | None = None
    key_source: Literal["sdp", "user"] | None = None
    auth_failures: int = 0
    replayed: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Flat record (never the key)."""
        return {
            "srtp": self.found_by,
            "srtp_sdes_suite": self.sdes.suite if self.sdes is not None else None,
            "srtp_decrypted": self.decrypted,
            "srtp_suite": self.suite,
            "srtp_key_source": self.key_source,
            "srtp_auth_failures": self.auth_failures,
        }

    @staticmethod
    def record(info: SrtpInfo | None) -> dict[str, Any]:
        """:meth:`to_dict` of ``info``; for a plain stream (None), the same keys, empty."""
        if info is not None:
            return info.to_dict()
        return {"srtp": None, "srtp_sdes_suite": None, "srtp_decrypted": False, "srtp_suite": None,
                "srtp_key_source": None, "srtp_auth_failures": 0}


def bytes_per_tick(payload_type: int, encoding: str | None, channels: int = 1) -> int | None:
    """Payload bytes per RTP timestamp tick of a fixed-rate codec (None: not one)."""
    if encoding:
        b = _BYTES_PER_TICK.get(encoding.upper())
        return None if b is None else b * max(1, channels)
    return _STATIC_BYTES_PER_TICK.get(payload_type)


def _nibble_histogram(payloads: Iterable[bytes], *, max_bytes: int | None = None) -> np.ndarray:
    """Counts of the payload bytes' high nibbles (bins 0-15) and low nibbles (bins 16-31).

    ``max_bytes`` counts only the first bytes of each payload (the scan takes 32)."""
    b = np.frombuffer(b"".join(p[:max_bytes] for p in payloads), dtype=np.uint8)
    return np.concatenate((np.bincount(b >> 4, minlength=16), np.bincount(b & 15, minlength=16)))


def looks_encrypted(
    seq: Sequence[int] | np.ndarray,
    timestamp: Sequence[int] | np.ndarray,
    payloads: Sequence[bytes] | None = None,
    *,
    bytes_per_tick: int,
    lengths: Sequence[int] | np.ndarray | None = None,
    nibbles: np.ndarray | None = None,
) -> bool:
    """Whether a fixed-rate stream's payloads look like SRTP: tag-long excess and random bytes.

    Plain RTP payloads of G.711, G.722 or L16 hold exactly ``bytes_per_tick`` bytes per
    timestamp tick (RFC 3551 §4.5). SRTP adds an authentication tag after the encrypted
    payload (RFC 3711 §3.1): 10 or 4 bytes (HMAC-SHA1-80/32), 16 (AES-GCM, RFC 7714 §12).
    The verdict is True when both hold:

    1. for at least 90 % of the pairs of consecutive packets (sequence step 1; at least 3
       such pairs), ``len(payload) - bytes_per_tick * timestamp step`` is one and the same
       tag length;
    2. the payload bytes are uniform (all of them, or with ``nibbles`` what was counted):
       the chi-square of the histogram of their high
       nibbles, and that of their low nibbles, against 16 equal bins are both below
       15 + 6·sqrt(30) (for random bytes each is passed by chance with probability
       < 1e-6), judged on at least 256 bytes. Ciphertext passes; G.711 speech and silence
       crowd near the codes of zero and fail by far.

    Compressed codecs (Opus, G.729, AMR) have no fixed size per tick and random-looking
    bytes: they are never judged here (only SDP tells them; or a user key).

    Parameters
    ----------
    seq, timestamp : array_like of int
        Sequence numbers and RTP timestamps of the first packets, in arrival order.
    payloads : sequence of bytes, optional
        Their payloads as the scan read them (after the RTP header).
    bytes_per_tick : int, keyword-only
        Payload bytes per timestamp tick of the plain codec.
    lengths, nibbles : keyword-only
        Instead of ``payloads``: their lengths, and ``_nibble_histogram`` of them (what
        :func:`qoe.rtp.scan_capture` keeps of each flow's first packets).

    Returns
    -------
    bool

    Examples
    --------
    >>> import os
    >>> seq, ts = range(10), [160 * i for i in range(10)]
    >>> looks_encrypted(seq, ts, [os.urandom(170) for _ in seq], bytes_per_tick=1)
    True
    >>> looks_encrypted(seq, ts, [bytes([0xD5]) * 160 for _ in seq], bytes_per_tick=1)
    False
    """
    if payloads is not None:
        lengths = [len(p) for p in payloads]
        nibbles = _nibble_histogram(payloads)
    if lengths is None or nibbles is None:
        raise InputError("looks_encrypted needs the payloads, or their lengths and nibble histogram")
    lens = np.asarray(lengths, dtype=np.int64)
    n = lens.size
    s = np.zeros((1, n), dtype=np.int64)
    t = np.zeros((1, n), dtype=np.int64)
    s[0] = np.asarray(seq, dtype=np.int64)[:n]
    t[0] = np.asarray(timestamp, dtype=np.int64)[:n]
    return bool(_encrypted_verdicts(s, t, lens[None, :], np.array([n]), np.asarray(nibbles)[None, :],
                                   np.array([bytes_per_tick]))[0])


def _encrypted_verdicts(
    seq: np.ndarray,
    timestamp: np.ndarray,
    lengths: np.ndarray,
    count: np.ndarray,
    nibbles: np.ndarray,
    bytes_per_tick: np.ndarray,
) -> np.ndarray:
    """:func:`looks_encrypted` for many streams at once (one row each).

    Parameters
    ----------
    seq, timestamp, lengths : numpy.ndarray, shape (streams, packets)
        Sequence numbers, RTP timestamps and payload lengths of each stream's first packets;
        only the first ``count[i]`` of row ``i`` count.
    count : numpy.ndarray of int, shape (streams,)
    nibbles : numpy.ndarray, shape (streams, 32)
        ``_nibble_histogram`` of each stream's payloads.
    bytes_per_tick : numpy.ndarray of int, shape (streams,)

    Returns
    -------
    numpy.ndarray of bool, shape (streams,)
    """
    seq = np.asarray(seq, dtype=np.int64)
    ts = np.asarray(timestamp, dtype=np.int64)
    lens = np.asarray(lengths, dtype=np.int64)
    m = seq.shape[1]
    j = np.arange(1, m)
    valid = (j[None, :] < np.asarray(count)[:, None]) & (((seq[:, 1:] - seq[:, :-1]) % 65536) == 1)  # RFC 3550 A.1
    step = (ts[:, 1:] - ts[:, :-1]) % (1 << 32)
    excess = lens[:, 1:] - np.asarray(bytes_per_tick, dtype=np.int64)[:, None] * step
    pairs = valid.sum(axis=1)
    best = np.zeros(seq.shape[0], dtype=np.int64)
    for tag in sorted(_TAG_LENGTHS):  # a tag length shared by >= 90 % of the pairs (then the mode)
        best = np.maximum(best, (valid & (excess == tag)).sum(axis=1))
    length_ok = (pairs >= _HEURISTIC_MIN_PAIRS) & (best >= _HEURISTIC_SHARE * pairs)
    h = np.asarray(nibbles, dtype=np.float64).reshape(-1, 2, 16)
    total = h.sum(axis=2)
    expected = np.maximum(total, 1.0)[:, :, None] / 16.0
    chi2 = ((h - expected) ** 2 / expected).sum(axis=2)
    uniform = (total.min(axis=1) >= _CHI2_MIN_BYTES) & (chi2 < _CHI2_UNIFORM_MAX).all(axis=1)
    return length_ok & uniform


def _looks_srtcp(data: bytes) -> bool:
    """Whether an RTCP-looking datagram is SRTCP: its packets' lengths do not add up to it.

    RFC 3550 A.2: the lengths of a compound RTCP packet's packets add up to the datagram.
    SRTCP (RFC 3711 §3.4) keeps the first packet's header in clear, encrypts the rest and
    appends the E flag and SRTCP index (4 bytes), an optional MKI and the authentication
    tag: the walk by length fields never lands on the datagram's end. The scan then reads
    only the sender's SSRC (its reports, NTP times and report blocks are ciphertext, and
    would give false round-trip times).

    Examples
    --------
    >>> rr = bytes([0x80, 201, 0, 1]) + (7).to_bytes(4, "big")   # an empty RR, 8 bytes
    >>> _looks_srtcp(rr), _looks_srtcp(rr + bytes(4) + bytes(10))  # + index, + 80-bit tag
    (False, True)
    """
    n, pos = len(data), 0
    while pos + 4 <= n:
        if data[pos] >> 6 != 2:  # RFC 3550 §6.4.1: version 2
            return True
        pos += (int.from_bytes(data[pos + 2:pos + 4], "big") + 1) * 4
    return pos != n


def _session(key: SrtpKey) -> Any:
    import pylibsrtp  # noqa: PLC0415 - loaded only when something is decrypted

    policy = pylibsrtp.Policy(
        key=key.key_salt, ssrc_type=pylibsrtp.Policy.SSRC_ANY_INBOUND,
        srtp_profile=getattr(pylibsrtp.Policy, SUITES[key.suite].profile),
    )
    policy.window_size = _WINDOW
    return pylibsrtp.Session(policy=policy)


def _strip_mki(packet: bytes, key: SrtpKey) -> bytes:
    """The packet without its MKI (RFC 3711 §3.1: between the encrypted portion and the
    tag, and not authenticated), for a libsrtp policy that has none."""
    if not key.mki_length:
        return packet
    tag = SUITES[key.suite].tag
    end = len(packet) - tag
    return packet[: end - key.mki_length] + packet[end:]


def decrypt_packets(
    packets: Iterable[bytes], key: SrtpKey | str
) -> tuple[list[bytes | None], int, int]:
    """Decrypt the SRTP packets of one stream, in arrival order, with libsrtp.

    Parameters
    ----------
    packets : iterable of bytes
        Whole SRTP packets (UDP payloads), in the order they arrived.
    key : SrtpKey or str
        The sender's key (``SUITE:BASE64`` accepted).

    Returns
    -------
    plain : list of bytes or None
        Each packet's plain RTP packet (header and payload, padding still in it); None
        where authentication failed.
    auth_failures : int
        Packets that failed authentication (or could not be processed).
    replayed : int
        Packets refused by the replay check (a sequence number already seen): given the
        plaintext of the first packet with that sequence number.

    References
    ----------
    RFC 3711 §3.3 (receiver processing: index estimation, replay check, authentication).
    """
    import pylibsrtp  # noqa: PLC0415 - libsrtp loaded only when something is decrypted

    k = parse_srtp_key(key)
    session = _session(k)
    out: list[bytes | None] = []
    by_seq: dict[tuple[int, int], bytes] = {}
    failed = replayed = 0
    for pkt in packets:
        data = _strip_mki(bytes(pkt), k)
        sid = (int.from_bytes(data[8:12], "big"), int.from_bytes(data[2:4], "big")) if len(data) >= 12 else (0, -1)
        try:
            plain = session.unprotect(data)
        except pylibsrtp.Error as e:
            if "replay" in str(e) and sid in by_seq:  # RFC 3711 §3.3.2: a duplicate
                replayed += 1
                out.append(by_seq[sid])
            else:
                failed += 1
                out.append(None)
            continue
        except ValueError:  # longer than libsrtp's buffer in pylibsrtp (1500 bytes)
            failed += 1
            out.append(None)
            continue
        by_seq[sid] = plain
        out.append(plain)
    return out, failed, replayed


def __getattr__(name: str) -> Any:
    """``decrypt_streams`` moved to :mod:`qoe.rtp.decrypt` (issue 21: this module defines
    :class:`SrtpInfo`, which the stream records import, so stream-level decryption, which
    takes those records, lives apart to keep the package free of import cycles). The old
    name works for one release, with a DeprecationWarning."""
    if name == "decrypt_streams":
        warnings.warn("qoe.rtp.srtp.decrypt_streams is deprecated: use qoe.rtp.decrypt.decrypt_streams",
                      DeprecationWarning, stacklevel=2)
        # resolved when the deprecated name is used, not when this module is imported:
        # qoe.rtp.decrypt imports this module
        return importlib.import_module("qoe.rtp.decrypt").decrypt_streams
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
