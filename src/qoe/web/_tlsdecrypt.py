"""TLS record protection: key schedules and record decryption (TLS 1.2 and 1.3).

Only what a passive reader holding the key log needs: from the logged secrets to each
direction's key and IV, then one record at a time, open it. The primitives (HKDF-Expand,
AES-GCM, ChaCha20-Poly1305, AES-CBC) are ``cryptography``'s, HMAC the standard library's
(OpenSSL's); this module only arranges them as the RFCs say.

* TLS 1.3 (RFC 8446): ``key = HKDF-Expand-Label(secret, "key", "", key_length)`` and
  ``iv = HKDF-Expand-Label(secret, "iv", "", 12)`` (§7.3); per-record nonce = iv XOR the
  64-bit sequence number left-padded to 12 bytes (§5.3); additional data = the record
  header (§5.2); the plaintext is TLSInnerPlaintext (content, then the real content type,
  then zero padding, §5.2). A KeyUpdate moves the sender to
  ``HKDF-Expand-Label(secret, "traffic upd", "", Hash.length)`` with the sequence number
  back at 0 (§7.2, §4.6.3).
* TLS 1.2 (RFC 5246): ``key_block = PRF(master_secret, "key expansion", server_random +
  client_random)`` cut into client/server write keys and IVs (§6.3), PRF = P_hash with the
  suite's hash (§5). AES-GCM suites (RFC 5288 §3): 4-byte salt from the key block plus an
  8-byte explicit nonce at the start of each record; ChaCha20-Poly1305 suites (RFC 7905
  §2): a 12-byte IV XOR the sequence number, as in TLS 1.3. Additional data (RFC 5246
  §6.2.3.3): seq_num + type + version + plaintext length.
* TLS 1.2 CBC suites (RFC 5246 §6.2.3.2, with AES: RFC 5246 Appendix A.5, RFC 8422 §6, RFC
  5289 §3.1): the key block starts with the two MAC keys (§6.3); each record is a 16-byte
  explicit IV, then AES-CBC over content || MAC || padding || padding_length, every padding
  byte equal to padding_length; MAC = HMAC(MAC_write_key, seq_num + type + version + length
  + content) with the suite's MAC hash (SHA-1 for ``*_CBC_SHA``). With encrypt_then_mac
  negotiated (RFC 7366 §3) the MAC follows the ciphertext and covers IV + ciphertext (its
  length in the header). A record whose padding or MAC does not check fails as an AEAD record
  whose tag does not. TLS 1.0 and 1.1 (another PRF; TLS 1.0's chained IV) are not decrypted.

References
----------
.. [1] RFC 8446, "The Transport Layer Security (TLS) Protocol Version 1.3" (2018): §4.6.3
   (KeyUpdate), §5.2 (record payload protection), §5.3 (per-record nonce), §7.1 (key
   schedule, HKDF-Expand-Label), §7.2 (updating traffic secrets), §7.3 (traffic keys),
   Appendix B.4 (cipher suites).
.. [2] RFC 5246, "The Transport Layer Security (TLS) Protocol Version 1.2" (2008): §5 (PRF),
   §6.2.3.3 (AEAD ciphers), §6.3 (key calculation).
.. [3] RFC 5288, "AES Galois Counter Mode (GCM) Cipher Suites for TLS" (2008), §3.
.. [4] RFC 5289, "TLS Elliptic Curve Cipher Suites with SHA-256/384 and AES GCM" (2008), §3.
.. [5] RFC 7905, "ChaCha20-Poly1305 Cipher Suites for TLS" (2016), §2, §3.
.. [6] RFC 5869, "HMAC-based Extract-and-Expand Key Derivation Function (HKDF)" (2010), §2.3.
.. [7] RFC 5246 §6.2.3.2 (CBC block cipher), Appendix A.5 (cipher suites); RFC 8422 §6 (ECC
   cipher suites); RFC 5289 §3.1-§3.2 (SHA-256/384 CBC suites and their PRF).
.. [8] RFC 7366, "Encrypt-then-MAC for TLS and DTLS" (2014), §2-§3.
"""

from __future__ import annotations

import hmac as _hmac
from dataclasses import dataclass
from typing import Any, Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

__all__ = [
    "Suite", "TLS13_SUITES", "TLS12_AEAD_SUITES", "TLS12_CBC_SUITES", "suite_for", "hkdf_expand_label", "tls12_prf",
    "next_traffic_secret", "RecordCipher", "tls13_cipher", "tls12_ciphers",
]

Protection = Literal["aes-gcm", "chacha20-poly1305", "aes-cbc"]
_MAC_LENGTH = {"sha1": 20, "sha256": 32, "sha384": 48}


@dataclass(frozen=True, slots=True)
class Suite:
    """A cipher suite: its record protection (``cipher``: an AEAD, ``"aes-gcm"`` or
    ``"chacha20-poly1305"``, or ``"aes-cbc"``, not an AEAD: CBC with an HMAC over ``mac``),
    key length and hash (HKDF / PRF)."""

    code: int
    name: str
    cipher: Protection
    key_length: int
    hash_name: Literal["sha256", "sha384"]
    mac: Literal["sha1", "sha256", "sha384"] | None = None  # CBC suites: the HMAC's hash

    @property
    def mac_length(self) -> int:
        return _MAC_LENGTH[self.mac] if self.mac is not None else 0

    @property
    def hash_length(self) -> int:
        return 32 if self.hash_name == "sha256" else 48

    def hash(self) -> hashes.HashAlgorithm:
        return hashes.SHA256() if self.hash_name == "sha256" else hashes.SHA384()


def _s(code: int, name: str, cipher: Protection, klen: int, h: Literal["sha256", "sha384"]) -> tuple[int, Suite]:
    return code, Suite(code, name, cipher, klen, h)


#: RFC 8446 Appendix B.4 (TLS_AES_128_CCM_* are not offered by browsers and left out).
TLS13_SUITES: dict[int, Suite] = dict([
    _s(0x1301, "TLS_AES_128_GCM_SHA256", "aes-gcm", 16, "sha256"),
    _s(0x1302, "TLS_AES_256_GCM_SHA384", "aes-gcm", 32, "sha384"),
    _s(0x1303, "TLS_CHACHA20_POLY1305_SHA256", "chacha20-poly1305", 32, "sha256"),
])
#: TLS 1.2 AEAD suites: RFC 5288 §3 (RSA/DHE GCM), RFC 5289 §3 (ECDHE GCM), RFC 7905 §2 (ChaCha20).
TLS12_AEAD_SUITES: dict[int, Suite] = dict([
    _s(0x009C, "TLS_RSA_WITH_AES_128_GCM_SHA256", "aes-gcm", 16, "sha256"),
    _s(0x009D, "TLS_RSA_WITH_AES_256_GCM_SHA384", "aes-gcm", 32, "sha384"),
    _s(0x009E, "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", "aes-gcm", 16, "sha256"),
    _s(0x009F, "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384", "aes-gcm", 32, "sha384"),
    _s(0xC02B, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "aes-gcm", 16, "sha256"),
    _s(0xC02C, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "aes-gcm", 32, "sha384"),
    _s(0xC02F, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "aes-gcm", 16, "sha256"),
    _s(0xC030, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "aes-gcm", 32, "sha384"),
    _s(0xCCA8, "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "chacha20-poly1305", 32, "sha256"),
    _s(0xCCA9, "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "chacha20-poly1305", 32, "sha256"),
    _s(0xCCAA, "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "chacha20-poly1305", 32, "sha256"),
])


def _c(code: int, name: str, klen: int, mac: Literal["sha1", "sha256", "sha384"]) -> tuple[int, Suite]:
    # the TLS 1.2 PRF of a CBC suite: P_SHA256, P_SHA384 for the SHA-384 ones (RFC 5246 §5, RFC 5289 §3.2)
    return code, Suite(code, name, "aes-cbc", klen, "sha384" if mac == "sha384" else "sha256", mac)


#: TLS 1.2 AES-CBC suites: RFC 5246 Appendix A.5 (RSA, DHE), RFC 8422 §6 (ECDHE, SHA-1 MAC),
#: RFC 5289 §3.1 (ECDHE, SHA-256/384 MAC).
TLS12_CBC_SUITES: dict[int, Suite] = dict([
    _c(0x002F, "TLS_RSA_WITH_AES_128_CBC_SHA", 16, "sha1"),
    _c(0x0035, "TLS_RSA_WITH_AES_256_CBC_SHA", 32, "sha1"),
    _c(0x003C, "TLS_RSA_WITH_AES_128_CBC_SHA256", 16, "sha256"),
    _c(0x003D, "TLS_RSA_WITH_AES_256_CBC_SHA256", 32, "sha256"),
    _c(0x0033, "TLS_DHE_RSA_WITH_AES_128_CBC_SHA", 16, "sha1"),
    _c(0x0039, "TLS_DHE_RSA_WITH_AES_256_CBC_SHA", 32, "sha1"),
    _c(0x0067, "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256", 16, "sha256"),
    _c(0x006B, "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256", 32, "sha256"),
    _c(0xC009, "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", 16, "sha1"),
    _c(0xC00A, "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", 32, "sha1"),
    _c(0xC013, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", 16, "sha1"),
    _c(0xC014, "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", 32, "sha1"),
    _c(0xC023, "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", 16, "sha256"),
    _c(0xC024, "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384", 32, "sha384"),
    _c(0xC027, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", 16, "sha256"),
    _c(0xC028, "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384", 32, "sha384"),
])


def suite_for(version: int, code: int) -> Suite | None:
    """The suite ``code`` negotiated in ``version`` (0x0304 TLS 1.3, 0x0303 TLS 1.2), or None
    when it is not one decrypted here (CCM, 3DES, Camellia, export...)."""
    if version >= 0x0304:
        return TLS13_SUITES.get(code)
    return TLS12_AEAD_SUITES.get(code) or TLS12_CBC_SUITES.get(code)


def hkdf_expand_label(secret: bytes, label: bytes, context: bytes, length: int, suite: Suite) -> bytes:
    """RFC 8446 §7.1 HKDF-Expand-Label: HKDF-Expand(secret, HkdfLabel, length) with
    ``HkdfLabel = uint16 length || opaque label<7..255> = "tls13 " + label || opaque context<0..255>``."""
    full = b"tls13 " + label
    info = length.to_bytes(2, "big") + bytes([len(full)]) + full + bytes([len(context)]) + context
    return HKDFExpand(algorithm=suite.hash(), length=length, info=info).derive(secret)  # RFC 5869 §2.3


def next_traffic_secret(secret: bytes, suite: Suite) -> bytes:
    """RFC 8446 §7.2: application_traffic_secret_N+1 = HKDF-Expand-Label(secret_N, "traffic upd", "", Hash.length)."""
    return hkdf_expand_label(secret, b"traffic upd", b"", suite.hash_length, suite)


def tls12_prf(secret: bytes, label: bytes, seed: bytes, length: int, suite: Suite) -> bytes:
    """RFC 5246 §5: PRF(secret, label, seed) = P_<hash>(secret, label + seed), where
    P_hash = HMAC(secret, A(1) + seed) + HMAC(secret, A(2) + seed) + ..., A(0) = seed,
    A(i) = HMAC(secret, A(i-1))."""
    seed = label + seed
    out = bytearray()
    a = seed
    name = suite.hash_name
    while len(out) < length:
        a = _hmac.digest(secret, a, name)
        out += _hmac.digest(secret, a + seed, name)
    return bytes(out[:length])


class RecordCipher:
    """One direction's record protection: open records in order, counting the sequence number.

    Parameters
    ----------
    suite : Suite
    key, iv : bytes
        The write key and IV (TLS 1.2 GCM: the 4-byte salt).
    tls13 : bool
        TLS 1.3 record format (header as additional data, inner content type).
    secret : bytes, optional
        TLS 1.3: the traffic secret the key came from (for :meth:`update`).
    """

    __slots__ = ("suite", "tls13", "secret", "seq", "_cipher", "_iv", "_iv_int", "_explicit", "_cbc", "_mac_key",
                 "_etm")

    def __init__(self, suite: Suite, key: bytes, iv: bytes, *, tls13: bool, secret: bytes | None = None,
                 mac_key: bytes = b"", encrypt_then_mac: bool = False) -> None:
        self.suite = suite
        self.tls13 = tls13
        self.secret = secret
        self.seq = 0
        self._cbc = suite.cipher == "aes-cbc"
        self._mac_key = mac_key  # (CBC suites)
        self._etm = encrypt_then_mac  # RFC 7366 (CBC suites)
        # one cipher object per key (an AEAD's, or AES's for CBC), made once and used for every
        # record it protects
        self._cipher: Any = (algorithms.AES(key) if self._cbc else AESGCM(key) if suite.cipher == "aes-gcm"
                             else ChaCha20Poly1305(key))
        self._iv = iv
        self._iv_int = int.from_bytes(iv, "big")
        # RFC 5288 §3: TLS 1.2 GCM carries an 8-byte explicit nonce before the ciphertext
        self._explicit = (not tls13) and suite.cipher == "aes-gcm"

    def update(self) -> None:
        """RFC 8446 §4.6.3/§7.2: move to the next traffic secret (after a KeyUpdate), sequence 0."""
        if self.secret is None:
            raise ValueError("no traffic secret to update")
        new = next_traffic_secret(self.secret, self.suite)
        fresh = tls13_cipher(self.suite, new)
        self.secret, self.seq, self._cipher, self._iv, self._iv_int = new, 0, fresh._cipher, fresh._iv, fresh._iv_int

    def open(self, ctype: int, version: int, body: bytes | memoryview) -> tuple[int, bytes] | None:
        """Decrypt one record's body (any bytes-like object: read, not kept); returns (content
        type, plaintext), or None when it fails authentication (the sequence number moves on
        either way)."""
        seq = self.seq
        self.seq += 1
        return self.open_at(seq, ctype, version, body)

    def open_at(self, seq: int, ctype: int, version: int, body: bytes | memoryview) -> tuple[int, bytes] | None:
        """:meth:`open` for the record of sequence number ``seq``, the cipher left as it is (a
        trial that threads may make at once on one cipher: the ECH search's)."""
        try:
            if self.tls13:
                # RFC 8446 §5.2: additional_data = opaque_type || legacy_record_version || length;
                # §5.3: nonce = iv XOR the sequence number left-padded to the IV's length
                aad = (ctype << 32 | version << 16 | len(body)).to_bytes(5, "big")
                inner = self._cipher.decrypt((self._iv_int ^ seq).to_bytes(12, "big"), body, aad)
                # TLSInnerPlaintext: content || ContentType type || uint8 zeros[length_of_padding]
                last = inner[-1] if inner else 0
                if last:
                    return last, inner[:-1]  # no padding (the common case): the type is the last byte
                end = len(inner.rstrip(b"\x00"))
                if end == 0:
                    return None  # RFC 8446 §5.4: all zeros is an unexpected_message
                return inner[end - 1], inner[:end - 1]
            if self._cbc:
                return self._open_cbc(seq, ctype, version, bytes(body))
            if self._explicit:
                if len(body) < 8 + 16:
                    return None
                nonce, ct = self._iv + bytes(body[:8]), body[8:]
            else:
                nonce, ct = self._xor_nonce_for(seq), body
            # RFC 5246 §6.2.3.3: additional_data = seq_num + type + version + length (of the plaintext)
            plain_len = len(ct) - 16
            if plain_len < 0:
                return None
            aad = seq.to_bytes(8, "big") + bytes([ctype]) + version.to_bytes(2, "big") + plain_len.to_bytes(2, "big")
            return ctype, self._cipher.decrypt(nonce, ct, aad)
        except InvalidTag:
            return None

    def _open_cbc(self, seq: int, ctype: int, version: int, body: bytes) -> tuple[int, bytes] | None:
        """RFC 5246 §6.2.3.2 (or RFC 7366 §3): one AES-CBC record, its padding and MAC checked."""
        ml = self.suite.mac_length
        name = self.suite.mac
        head = seq.to_bytes(8, "big") + bytes([ctype]) + version.to_bytes(2, "big")
        if self._etm:
            # IV || ciphertext || MAC(seq_num + type + version + length + IV || ciphertext)
            ct = body[:-ml]
            if len(ct) < 32 or len(ct) % 16:
                return None
            if not _hmac.compare_digest(_hmac.digest(self._mac_key, head + len(ct).to_bytes(2, "big") + ct, name),
                                        body[-ml:]):
                return None
            inner = self._cbc_decrypt(ct)
            end = _unpadded(inner, 0)
            return None if end is None else (ctype, inner[:end])
        if len(body) < 32 or len(body) % 16:
            return None
        inner = self._cbc_decrypt(body)  # content || MAC || padding || padding_length
        end = _unpadded(inner, ml)
        if end is None:
            return None
        end -= ml
        content = inner[:end]
        if not _hmac.compare_digest(_hmac.digest(self._mac_key, head + end.to_bytes(2, "big") + content, name),
                                    inner[end:end + ml]):
            return None
        return ctype, content

    def _cbc_decrypt(self, ivct: bytes) -> bytes:
        # the record's first block is its explicit IV (RFC 5246 §6.2.3.2: TLS 1.1 and later)
        d = Cipher(self._cipher, modes.CBC(ivct[:16])).decryptor()
        return d.update(ivct[16:]) + d.finalize()

    def _xor_nonce_for(self, seq: int) -> bytes:
        # RFC 8446 §5.3 / RFC 7905 §2: iv XOR (seq left-padded to the IV length)
        return (self._iv_int ^ seq).to_bytes(len(self._iv), "big")


def _unpadded(inner: bytes, before: int) -> int | None:
    """Where a CBC record's padding starts (RFC 5246 §6.2.3.2: ``padding_length`` + 1 bytes, each
    equal to it, end the plaintext), with at least ``before`` bytes (its MAC) ahead of it; None
    when the padding does not check."""
    pad = inner[-1]
    if pad + 1 + before > len(inner) or inner[-pad - 1:] != bytes([pad]) * (pad + 1):
        return None
    return len(inner) - pad - 1


def tls13_cipher(suite: Suite, secret: bytes) -> RecordCipher:
    """RFC 8446 §7.3: the record cipher of one traffic secret."""
    key = hkdf_expand_label(secret, b"key", b"", suite.key_length, suite)
    iv = hkdf_expand_label(secret, b"iv", b"", 12, suite)
    return RecordCipher(suite, key, iv, tls13=True, secret=secret)


def tls12_ciphers(suite: Suite, master_secret: bytes, client_random: bytes, server_random: bytes, *,
                  encrypt_then_mac: bool = False) -> tuple[RecordCipher, RecordCipher]:
    """RFC 5246 §6.3: (client write, server write) record ciphers from the master secret.

    AEAD suites have no MAC key (RFC 5246 §6.2.3.3); the fixed IV is 4 bytes for GCM (RFC 5288
    §3) and 12 for ChaCha20-Poly1305 (RFC 7905 §2). CBC suites: the key block is the two MAC
    keys, the two write keys, the two IVs (unused in TLS 1.2: each record carries its own);
    ``encrypt_then_mac``: the ServerHello accepted RFC 7366's extension.
    """
    k = suite.key_length
    if suite.cipher == "aes-cbc":
        m = suite.mac_length
        block = tls12_prf(master_secret, b"key expansion", server_random + client_random, 2 * (m + k), suite)
        cm, sm, ck, sk = block[:m], block[m:2 * m], block[2 * m:2 * m + k], block[2 * m + k:2 * (m + k)]
        return (RecordCipher(suite, ck, b"", tls13=False, mac_key=cm, encrypt_then_mac=encrypt_then_mac),
                RecordCipher(suite, sk, b"", tls13=False, mac_key=sm, encrypt_then_mac=encrypt_then_mac))
    iv_len = 4 if suite.cipher == "aes-gcm" else 12
    block = tls12_prf(master_secret, b"key expansion", server_random + client_random, 2 * (k + iv_len), suite)
    ck, sk = block[:k], block[k:2 * k]
    civ, siv = block[2 * k:2 * k + iv_len], block[2 * k + iv_len:2 * (k + iv_len)]
    return (RecordCipher(suite, ck, civ, tls13=False), RecordCipher(suite, sk, siv, tls13=False))
