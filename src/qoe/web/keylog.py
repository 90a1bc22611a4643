"""TLS and QUIC secrets from NSS key log files and pcapng Decryption Secrets Blocks.

Browsers (Chromium, Firefox), curl, OpenSSL and aioquic write the secrets of every TLS or
QUIC connection they make to the file named by ``SSLKEYLOGFILE``, one line each::

    <label> <client_random, 64 hex digits> <secret, hex>

keyed by the 32-byte ``random`` of the connection's ClientHello (RFC 8446 §4.1.2), which
travels in clear. The labels read here:

* ``CLIENT_RANDOM``: TLS 1.2 and older, the 48-byte master secret (RFC 5246 §8.1);
* ``CLIENT_EARLY_TRAFFIC_SECRET``: TLS 1.3 client_early_traffic_secret (RFC 8446 §7.1);
* ``CLIENT_HANDSHAKE_TRAFFIC_SECRET``, ``SERVER_HANDSHAKE_TRAFFIC_SECRET``: TLS 1.3 / QUIC
  client/server_handshake_traffic_secret;
* ``CLIENT_TRAFFIC_SECRET_0``, ``SERVER_TRAFFIC_SECRET_0``: TLS 1.3 / QUIC
  client/server_application_traffic_secret_0;
* ``EXPORTER_SECRET``: TLS 1.3 exporter_master_secret (kept, not needed).

QUIC (RFC 9001 §5.1) derives its packet keys from the same TLS 1.3 secrets, and the same
labels are written for QUIC connections; some QUIC stacks prefix them with ``QUIC_``
(``QUIC_CLIENT_HANDSHAKE_TRAFFIC_SECRET``...): the prefix is dropped on reading. Comment
lines (``#``), blank lines and labels not listed are skipped; malformed lines are counted
(:attr:`KeyLog.skipped_lines`) and do not stop the reading.

A pcapng file can carry the same text in a Decryption Secrets Block of type ``TLSK``
(0x544c534b, draft-ietf-opsawg-pcapng §4.7), as ``editcap --inject-secrets tls,FILE``
writes it: :func:`keylog_from_capture` reads those (``qoe.capture.probe`` finds them).

References
----------
.. [1] M. Thomson, Y. Rosomakho, H. Tschofenig, "The SSLKEYLOGFILE Format for TLS",
   draft-ietf-tls-keylogfile-02 (2024), §3 (labels and line format); NSS "Key Log Format"
   (firefox-source-docs.mozilla.org/security/nss/legacy/key_log_format).
.. [2] RFC 8446 §4.1.2 (ClientHello.random), §7.1 (the traffic secrets).
.. [3] RFC 5246 §8.1 (master_secret, 48 bytes).
.. [4] RFC 9001 §5.1 (QUIC packet protection keys from the TLS secrets).
.. [5] draft-ietf-opsawg-pcapng §4.7 (Decryption Secrets Block, secrets type 0x544c534b).
"""

from __future__ import annotations

import codecs
import functools
import os
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Union

from qoe.errors import InputError, QoEError, QoEWarning

__all__ = ["KeyLog", "read_keylog", "parse_keylog", "keylog_from_capture", "load_keylog"]

#: The labels kept (draft-ietf-tls-keylogfile-02 §3), with the secret length they may have
#: (None: a hash length, 32 or 48 bytes).
_LABELS: Mapping[str, int | None] = {
    "CLIENT_RANDOM": 48,  # RFC 5246 §8.1: master_secret[48]
    "CLIENT_EARLY_TRAFFIC_SECRET": None,
    "CLIENT_HANDSHAKE_TRAFFIC_SECRET": None,
    "SERVER_HANDSHAKE_TRAFFIC_SECRET": None,
    "CLIENT_TRAFFIC_SECRET_0": None,
    "SERVER_TRAFFIC_SECRET_0": None,
    "EXPORTER_SECRET": None,
}
#: What a label looks like (draft-ietf-tls-keylogfile-02 §3: capital letters, digits and
#: underscores): a line whose first word is not one is malformed, not a label to pass over.
_LABEL_FORM = re.compile(r"[A-Z0-9_]+")
#: pcapng §4.7: Decryption Secrets Block secrets type for an NSS key log ("TLSK").
_DSB_TLS_KEY_LOG = 0x544C534B
#: The TLS 1.3 traffic secrets a connection's entry holds beside its server handshake secret.
_TLS13_OTHERS = ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0")

KeyLogSource = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class KeyLog:
    """Secrets by (label, client random).

    Attributes
    ----------
    secrets : mapping of (str, bytes) to bytes
        ``(label, client_random) -> secret``; a later line for the same key wins.
    sources : tuple of str
        Where the lines came from (file names, ``"<capture>:DSB"``).
    lines : int
        Key lines read.
    skipped_lines : int
        Malformed lines (not ``LABEL HEX HEX``, bad hex, wrong lengths) skipped.
    """

    secrets: Mapping[tuple[str, bytes], bytes] = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    lines: int = 0
    skipped_lines: int = 0

    def get(self, label: str, client_random: bytes) -> bytes | None:
        """The secret logged under ``label`` for the connection whose ClientHello.random is
        ``client_random``, or None."""
        return self.secrets.get((label, bytes(client_random)))

    def has_client(self, client_random: bytes) -> bool:
        """Any secret for this connection."""
        cr = bytes(client_random)
        return any(k[1] == cr for k in self.secrets)

    def __len__(self) -> int:
        return len(self.secrets)

    def tls13_entries(self) -> Iterator[tuple[bytes, bytes]]:
        """``(client_random, SERVER_HANDSHAKE_TRAFFIC_SECRET)`` of each connection with all four
        TLS 1.3 traffic secrets logged (the client's and the server's handshake and first
        application secrets, RFC 8446 §7.1): what an Encrypted Client Hello connection is
        matched against, its entry being named by a random the capture does not show."""
        return iter(self._tls13)

    @functools.cached_property
    def _tls13(self) -> tuple[tuple[bytes, bytes], ...]:
        # (found once per key log: every ECH connection searched walks them, the whole key log
        # walked for each took 2-3 ms of a connection's search with 5000 entries)
        return tuple((cr, shs) for (label, cr), shs in self.secrets.items()
                     if label == "SERVER_HANDSHAKE_TRAFFIC_SECRET"
                     and all((other, cr) in self.secrets for other in _TLS13_OTHERS))

    def merged(self, other: KeyLog) -> KeyLog:
        """Both key logs' secrets (``other`` wins on a conflict)."""
        return KeyLog({**self.secrets, **other.secrets}, self.sources + other.sources,
                      self.lines + other.lines, self.skipped_lines + other.skipped_lines)

    def to_dict(self) -> dict[str, Any]:
        """What was read (not the secrets themselves)."""
        return {"sources": list(self.sources), "lines": self.lines, "skipped_lines": self.skipped_lines,
                "connections": len({k[1] for k in self.secrets})}


def parse_keylog(text: str | bytes, *, source: str = "<key log>") -> KeyLog:
    """Parse the text of an NSS key log.

    Parameters
    ----------
    text : str or bytes
        The file's content (bytes are decoded as ASCII, other bytes make a line malformed; a
        byte order mark is honoured, as Windows editors and PowerShell's redirection write
        one: UTF-8's is dropped, UTF-16 is decoded as such).
    source : str, keyword-only
        Its name, kept in :attr:`KeyLog.sources`.

    Returns
    -------
    KeyLog

    Examples
    --------
    >>> log = parse_keylog("CLIENT_RANDOM " + "00" * 32 + " " + "11" * 48)
    >>> log.get("CLIENT_RANDOM", bytes(32)) == bytes([0x11]) * 48
    True
    """
    if isinstance(text, (bytes, bytearray)):
        data = bytes(text)
        if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            text = data.decode("utf-16", "replace")
        else:
            text = data.removeprefix(codecs.BOM_UTF8).decode("ascii", "replace")
    text = text.removeprefix("\ufeff")
    secrets: dict[tuple[str, bytes], bytes] = {}
    lines = skipped = 0
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        label = parts[0]
        if label.startswith("QUIC_"):
            label = label[5:]
        if label not in _LABELS:
            if not _LABEL_FORM.fullmatch(label):
                skipped += 1  # not a label at all (bytes of another encoding, a line cut in two)
            continue  # RSA, other labels: not used
        want = _LABELS[label]
        try:
            if len(parts) != 3:
                raise ValueError
            cr, secret = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
        except ValueError:
            skipped += 1
            continue
        if len(cr) != 32 or (want is not None and len(secret) != want) or (want is None and len(secret) not in (32, 48)):
            skipped += 1
            continue
        secrets[(label, cr)] = secret
        lines += 1
    return KeyLog(secrets, (source,), lines, skipped)


def read_keylog(path: KeyLogSource | Iterable[KeyLogSource]) -> KeyLog:
    """Read one NSS key log file (``SSLKEYLOGFILE``), or several merged.

    Parameters
    ----------
    path : path-like or iterable of path-like

    Returns
    -------
    KeyLog

    Raises
    ------
    InputError
        A file is missing or unreadable (its name is quoted), or holds text but no key line.

    Warns
    -----
    QoEWarning
        A file is empty (browsers create it before their first TLS connection).
        Some lines were malformed and skipped.
    """
    if isinstance(path, (str, os.PathLike)):
        paths: list[KeyLogSource] = [path]
    else:
        paths = list(path)
    out = KeyLog()
    for p in paths:
        name = os.fspath(p)
        try:
            with open(name, "rb") as f:
                data = f.read()
        except OSError as e:
            raise InputError(f"{name}: cannot read the key log ({e.strerror or e})") from None
        log = parse_keylog(data, source=name)
        if not data.strip():
            # a browser creates the file before its first TLS connection: empty is not wrong
            warnings.warn(f"{name}: the key log is empty (no TLS or QUIC connection wrote to it)", QoEWarning,
                          stacklevel=2)
        elif not log.lines:
            raise InputError(f"{name}: not an NSS key log (no CLIENT_RANDOM or *_TRAFFIC_SECRET line); "
                             "give the file SSLKEYLOGFILE named")
        if log.skipped_lines:
            warnings.warn(f"{name}: {log.skipped_lines} malformed key log line(s) skipped", QoEWarning, stacklevel=2)
        out = out.merged(log)
    return out


def keylog_from_capture(secrets: Iterable[tuple[int, bytes]], *, source: str = "<capture>") -> KeyLog:
    """The key log carried by a pcapng file's Decryption Secrets Blocks.

    Parameters
    ----------
    secrets : iterable of (int, bytes)
        ``(secrets type, data)`` pairs, as :attr:`qoe.capture.CaptureInfo.decryption_secrets`
        has them; blocks of other types (WireGuard, ZigBee...) are left out.
    source : str, keyword-only
        The capture's name.
    """
    out = KeyLog()
    for stype, data in secrets:
        if stype == _DSB_TLS_KEY_LOG:
            out = out.merged(parse_keylog(data, source=f"{source}:DSB"))
    return out


def load_keylog(capture: Any, keylog: Any = None) -> KeyLog | None:
    """The secrets for a capture: the key log file(s) given, merged with the capture's own
    Decryption Secrets Blocks (pcapng); None when there are none.

    Parameters
    ----------
    capture : path or None
        The capture (its DSBs are read with ``qoe.capture.probe``); None: files only.
    keylog : path, sequence of paths, KeyLog, or None
    """
    out: KeyLog | None = None
    if isinstance(keylog, KeyLog):
        out = keylog
    elif keylog is not None and not (isinstance(keylog, (list, tuple)) and not keylog):
        out = read_keylog(keylog)
    if capture is not None:
        from qoe.capture import probe  # noqa: PLC0415 - only when a capture is given

        try:
            secrets = probe(capture).decryption_secrets
        except (OSError, ValueError, QoEError):
            secrets = []  # the capture's own errors are reported where it is read
        if secrets:
            dsb = keylog_from_capture(secrets, source=os.fspath(capture))
            if dsb.lines:
                out = dsb if out is None else out.merged(dsb)
    return out
