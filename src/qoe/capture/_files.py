"""Capture files: open one, recognise pcap or pcapng, and stream its packet records.

:func:`probe` reads what the start of a file says (:class:`~qoe.capture._records.CaptureInfo`)
and the time of its first frame; :func:`raw_chunks` streams its packet records as
:class:`~qoe.capture._records.RawChunk` arrays, from the reader of its format
(:mod:`qoe.capture._pcap`, :mod:`qoe.capture._pcapng`), and :func:`records` as tuples for
the per-packet reader. Paths, ``os.PathLike`` and seekable binary file objects are
accepted; gzip-compressed captures are read transparently, and one cut short gives every
byte before the cut (:class:`_Gunzip`). Files are read in large chunks, so memory stays at
one chunk whatever the file size.

References
----------
.. [1] G. Harris, M. Richardson, "PCAP Capture File Format", draft-ietf-opsawg-pcap (§4).
.. [2] M. Tüxen et al., "PCAP Now Generic (pcapng) Capture File Format",
   draft-ietf-opsawg-pcapng (§4.1 Section Header Block).
.. [3] RFC 1952, "GZIP file format specification version 4.3", §2.3.1.
"""

import contextlib
import gzip
import os
import struct
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO

from qoe.capture._options import positive_int
from qoe.capture._pcap import PCAP_MAGICS, parse_pcap_header, pcap_chunks, pcap_first_frame_ns
from qoe.capture._pcapng import SHB, parse_shb, pcapng_chunks
from qoe.capture._records import CHUNK_SIZE, CaptureInfo, PathOrFile, RawChunk, Record, read_bytes
from qoe.errors import CaptureError, InputError

_GZIP_MAGIC = b"\x1f\x8b"  # RFC 1952 §2.3.1 ID1 ID2


def capture_path(value: Any, what: str = "capture") -> str:
    """The path of a capture file, as text, for a function that opens the file itself.

    Such a function (:func:`qoe.score`, the RTP scan, voice and video from a capture) may
    read the file more than once, so it takes a path: ``str``, ``os.PathLike``, or
    ``bytes`` (decoded as the file system does, :func:`os.fsdecode`).

    Parameters
    ----------
    value : object
        What the caller gave.
    what : str, optional
        The argument's name, for the message (default ``"capture"``).

    Returns
    -------
    str

    Raises
    ------
    InputError
        ``value`` is anything else; for a file object the message says to give its path
        (the readers of :mod:`qoe.capture` and :mod:`qoe.web` take file objects).
    """
    if isinstance(value, bytes):
        value = os.fsdecode(value)
    if not isinstance(value, (str, os.PathLike)):
        hint = (": this reads the file by its path (more than once); give the path (a file object's .name); "
                "qoe.capture's readers and qoe.web take file objects") if hasattr(value, "read") else ""
        raise InputError(f"{what} must be a file's path (str or os.PathLike), given {type(value).__name__}{hint}")
    return os.fspath(value)


def name_of(source: PathOrFile) -> str:
    """How messages name a capture: its path, or the file object's name."""
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return str(getattr(source, "name", f"<{type(source).__name__}>"))


def _open(source: PathOrFile, name: str) -> tuple[BinaryIO, bool]:
    """Open a path (or take a binary file), transparently un-gzipping. Returns (file, owned)."""
    if isinstance(source, (str, os.PathLike)):
        try:
            f: BinaryIO = open(source, "rb")  # noqa: SIM115 - closed by the caller
        except FileNotFoundError:
            raise CaptureError(f"{name}: no such capture file") from None
        except IsADirectoryError:
            raise CaptureError(f"{name}: is a directory, not a capture file") from None
        except OSError as e:
            raise CaptureError(f"{name}: cannot open capture file ({e.strerror})") from None
        owned = True
    else:
        f = source
        owned = False
        if not hasattr(f, "read"):
            raise CaptureError(f"{name}: not a path or a binary file object")
    try:
        head = f.peek(2)[:2] if hasattr(f, "peek") else b""
        if not head and hasattr(f, "seek"):
            pos = f.tell()
            head = f.read(2)
            f.seek(pos)
    except (OSError, ValueError) as e:
        if owned:
            f.close()
        raise CaptureError(f"{name}: cannot read capture file ({e})") from None
    if isinstance(head, str):
        raise CaptureError(f"{name}: file object is in text mode; open it with 'rb'")
    if head == _GZIP_MAGIC:
        f = _Gunzip(f, owned)  # type: ignore[assignment]
    return f, owned


class _Gunzip:
    """Read a gzip stream (RFC 1952) so that a stream cut short still gives every byte
    before the cut: ``read1`` pieces are gathered, and the error is kept in ``error``."""

    def __init__(self, raw: BinaryIO, owned: bool) -> None:
        self._raw = raw
        self._owned = owned
        self._gz = gzip.GzipFile(fileobj=raw, mode="rb")
        self.name = getattr(raw, "name", "<gzip>")
        self.error: Exception | None = None

    def read(self, n: int) -> bytes:
        out = []
        got = 0
        while got < n and self.error is None:
            try:
                b = self._gz.read1(n - got)
            except (EOFError, OSError, zlib.error) as e:  # cut short or damaged
                self.error = e
                break
            if not b:
                break
            out.append(b)
            got += len(b)
        return b"".join(out)

    def tell(self) -> int:
        return 0

    def close(self) -> None:
        self._gz.close()
        if self._owned:
            self._raw.close()


def probe(source: PathOrFile, *, chunk_size: int = CHUNK_SIZE) -> CaptureInfo:
    """Check that ``source`` is a capture qoe can read, and describe it.

    Reads the file header and the first record only (pcapng: the blocks up to the first
    packet), so its cost does not depend on the file's size.

    Parameters
    ----------
    source : str, os.PathLike or seekable binary file object
        The capture; a file object is returned to its position afterwards.
    chunk_size : int, optional
        Bytes read at a time after the first 24 (default 1 MiB, 1048576): a pcapng file is
        read chunk by chunk until the blocks up to its first packet are whole, so probe
        reads at most 24 bytes + those blocks + one chunk. A pcap file's first record is
        read by itself.

    Returns
    -------
    CaptureInfo
        Format, byte order, resolution, the interfaces (pcapng: those described before
        the first packet) and the time of frame 1 (:attr:`CaptureInfo.first_frame_ns`).

    Raises
    ------
    CaptureError
        Missing/unreadable file, not a pcap/pcapng file (the first bytes are quoted), or
        an unsupported link-layer type (its number and name are quoted).
    InputError
        ``chunk_size`` is not a positive integer.

    References
    ----------
    draft-ietf-opsawg-pcap §4 (File Header), §5 (Packet Record); draft-ietf-opsawg-pcapng
    §4.1-§4.4 (Section Header, Interface Description, Enhanced and Simple Packet Blocks).

    Examples
    --------
    >>> info = probe("call.pcap")  # doctest: +SKIP
    >>> info.format, info.interfaces[0].linktype, info.first_frame_ns  # doctest: +SKIP
    ('pcap', 1, 1700000000000000000)
    """
    chunk_size = positive_int(chunk_size, "chunk_size")
    if isinstance(source, (bytes, bytearray, memoryview)):  # (not a file object: it has no read)
        raise InputError(f"a capture is a path (str or os.PathLike) or a binary file object, given "
                         f"{type(source).__name__}: decode a bytes path with os.fsdecode, wrap bytes in io.BytesIO")
    name = name_of(source)
    start = None
    if not isinstance(source, (str, os.PathLike)):
        try:
            start = source.tell()
        except (AttributeError, OSError, ValueError):
            raise CaptureError(f"{name}: file object is not seekable; give a path or a seekable binary file") from None
    try:
        with _opened(source, name) as (f, info, head):
            if info.format == "pcapng":
                # Walk to the first packet: the interfaces and link types, and frame 1's time.
                for _ in pcapng_chunks(f, info, head, chunk_size=chunk_size, probe_only=True):
                    pass
            else:
                info.first_frame_ns = pcap_first_frame_ns(f, info)
            return info
    finally:
        if start is not None:
            source.seek(start)  # type: ignore[union-attr]


@contextlib.contextmanager
def _opened(source: PathOrFile, name: str) -> Iterator[tuple[BinaryIO, CaptureInfo, bytes]]:
    """Open ``source`` and read what its first bytes say: (file, info, the bytes read).

    The file is closed at the end if it was opened here (a path), not if it was given.
    """
    f, owned = _open(source, name)
    try:
        head = read_bytes(f, 24, name)
        yield f, _parse_head(name, head), head
    finally:
        if owned:
            f.close()


def _parse_head(name: str, head: bytes) -> CaptureInfo:
    """The format, from the first bytes: a pcap file header or a pcapng Section Header Block."""
    if not head:
        raise CaptureError(f"{name}: empty file, not a capture")
    magic = struct.unpack(">I", head[:4])[0] if len(head) >= 4 else None
    if magic in PCAP_MAGICS:
        return parse_pcap_header(name, head)
    if magic == SHB:
        return parse_shb(name, head)
    shown = head[:8].hex(" ")
    what = _looks_like(head)
    raise CaptureError(
        f"{name}: not a pcap or pcapng capture (first bytes {shown}; pcap starts with "
        "a1b2c3d4/d4c3b2a1/a1b23c4d/4d3cb2a1, pcapng with 0a0d0d0a)" + (f": {what}" if what else "")
    )


# What a file given as a capture often is instead, told by its first bytes, and where it goes.
# Other capture formats' magic numbers: snoop, RFC 1761 §2 ("snoop\0\0\0"); Network Monitor
# and btsnoop as Wireshark's wiretap library reads them (not from the vendors' texts, which I
# could not read). MPEG-TS: ISO/IEC 13818-1 §2.4.3.2, sync byte 0x47 every 188 bytes.
_OTHER_FORMATS = (
    (b"snoop\x00\x00\x00", "a snoop capture (RFC 1761)"),
    (b"GMBU", "a Microsoft Network Monitor 2.x capture"),
    (b"RTSS", "a Microsoft Network Monitor 1.x capture"),
    (b"btsnoop\x00", "a btsnoop (Bluetooth HCI) capture"),
)
_KEY_LOG_LABELS = (b"CLIENT_", b"SERVER_", b"EXPORTER_SECRET", b"EARLY_EXPORTER", b"# SSL", b"# TLS")


def _looks_like(head: bytes) -> str | None:
    """What the first bytes of a file that is not a capture suggest it is, and what to do."""
    for magic, what in _OTHER_FORMATS:
        if head.startswith(magic):
            return f"this looks like {what}: convert it first (Wireshark's editcap -F pcapng IN OUT.pcapng)"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(_KEY_LOG_LABELS):
        return "this looks like an NSS key log (SSLKEYLOGFILE): give it as keylog= / --keylog, beside the capture"
    if text.startswith((b"{", b"[")):
        return ("this looks like JSON (a HAR file? qoe.web.pages_from_har(qoe.web.har.read_har(path)) or "
                "qoe web pages FILE.har read one)")
    if head.startswith(b"RIFF") and head[8:12] == b"WAVE":
        return "this looks like a WAV file: speech goes as a reference (reference= / --ref), beside the capture"
    if head[:1] == b"\x47" and any(b < 0x09 or 0x0E <= b < 0x20 for b in head[1:]):  # (binary, not "GET ...")
        return ("this may be an MPEG-TS file (sync byte 0x47): a video goes as a reference (reference= / --ref); "
                "qoe video scores two video files")
    return None


def records(source: PathOrFile, *, chunk_size: int = CHUNK_SIZE) -> Iterator[Record]:
    """Stream every packet record of a pcap or pcapng file, as :data:`Record` tuples.

    The records of :func:`raw_chunks`, one at a time (frames without a packet left out).
    Raises :class:`~qoe.errors.CaptureError` for a file that cannot be read at all (at
    the first ``next``); a record cut short at the end of the file ends the stream with a
    :class:`~qoe.errors.QoEWarning`.
    """
    for chunk in raw_chunks(source, chunk_size=chunk_size):
        yield from chunk.records()


def raw_chunks(source: PathOrFile, *, chunk_size: int = CHUNK_SIZE, shared: bool = False) -> Iterator[RawChunk]:
    """Stream a capture as :class:`RawChunk` arrays, reading ``chunk_size`` bytes at a time.

    Raises :class:`~qoe.errors.CaptureError` for a file that cannot be read at all (at
    the first ``next``); a record cut short or damaged ends the stream with a
    :class:`~qoe.errors.QoEWarning`, after the chunk of the records before it.
    """
    with _opened(source, name_of(source)) as (f, info, head):
        if info.format == "pcapng":
            yield from pcapng_chunks(f, info, head, chunk_size=chunk_size)
        else:
            yield from pcap_chunks(f, info, chunk_size, shared=shared)
