"""Capture files: recognise pcap / pcapng, stream their packet records.

A record is the tuple ``(index, ts_ns, interface, linktype, wire_len, data)``: the 1-based
frame number, the exact capture time in integer nanoseconds, the interface number, the
link-layer header type, the original length and the captured bytes.

Files are read in large chunks, so memory stays at one chunk whatever the file size. One
walker per format (:func:`_pcap_chunks`, :func:`_pcapng_chunks`) finds the record
boundaries of a chunk with :mod:`struct` (they chain: each record's length gives the next
one's start) and takes every field with NumPy, as a :class:`RawChunk`; the columnar
reader uses those arrays, :func:`records` unpacks them into tuples for the per-packet
reader, and :func:`probe` runs the pcapng walker up to the first packet. dpkt supplies
the format constants and parses the pcapng Interface Description Blocks (their options);
its per-packet readers are not used because they turn timestamps into floats and know
one pcapng interface only.

References
----------
.. [1] G. Harris, M. Richardson, "PCAP Capture File Format", draft-ietf-opsawg-pcap
   (§4 File Header, §5 Packet Record). Also tcpdump.org ``pcap-savefile(5)``.
.. [2] M. Tüxen et al., "PCAP Now Generic (pcapng) Capture File Format",
   draft-ietf-opsawg-pcapng (§3.1 general block structure, §4.1 Section Header Block,
   §4.2 Interface Description Block and ``if_tsresol``/``if_tsoffset``, §4.3 Enhanced
   Packet Block, §4.4 Simple Packet Block, Appendix A Packet Block (obsolete)).
.. [3] tcpdump.org, "LINK-LAYER HEADER TYPES", https://www.tcpdump.org/linktypes.html,
   and draft-ietf-opsawg-pcaplinktype.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import struct
import warnings
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, Union

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import dpkt
from dpkt import pcap as dpkt_pcap
from dpkt import pcapng as dpkt_pcapng

from qoe.capture._linktypes import SUPPORTED_LINKTYPES, linktype_name
from qoe.capture._options import positive_int
from qoe.capture._runs import FIRST_TRY, equal_run, next_wait
from qoe.errors import CaptureError, QoEWarning

PathOrFile = Union[str, "os.PathLike[str]", BinaryIO]
Record = tuple[int, int, int, int, int, bytes]

# Read granularity (the readers' default ``chunk_size``): large enough that the per-read
# cost vanishes, small enough to be noise next to the interpreter's own memory.
CHUNK_SIZE = 1 << 20

# A record claiming more captured bytes than this is taken as corruption, not a packet.
# 0x40000 (262144) is libpcap's maximum snapshot length for most link types (pcap-int.h
# MAXIMUM_SNAPLEN); we allow 64x that before giving up.
MAX_RECORD = 1 << 24

# pcap magic numbers, draft-ietf-opsawg-pcap §4 (as read big-endian from the first 4 bytes).
_PCAP_MAGICS = {
    dpkt_pcap.TCPDUMP_MAGIC: (">", False, False),  # a1b2c3d4: µs, big-endian writer
    dpkt_pcap.TCPDUMP_MAGIC_NANO: (">", True, False),  # a1b23c4d: ns, big-endian writer
    dpkt_pcap.PMUDPCT_MAGIC: ("<", False, False),  # d4c3b2a1: µs, little-endian writer
    dpkt_pcap.PMUDPCT_MAGIC_NANO: ("<", True, False),  # 4d3cb2a1: ns, little-endian writer
    # Alexey Kuznetzov's "modified" pcap: 24-byte record headers (tcpdump.org
    # pcap-savefile(5) notes; Wireshark wiretap "PCAP-SS991029").
    dpkt_pcap.MODPCAP_MAGIC: (">", False, True),
    dpkt_pcap.PACPDOM_MAGIC: ("<", False, True),
}
# pcapng Section Header Block type, draft-ietf-opsawg-pcapng §4.1 (a palindrome, so it reads
# the same in both byte orders).
_SHB = dpkt_pcapng.PCAPNG_BT_SHB
_BOM = dpkt_pcapng.BYTE_ORDER_MAGIC  # 0x1A2B3C4D, §4.1 Byte-Order Magic
_IDB = dpkt_pcapng.PCAPNG_BT_IDB  # 1, §4.2
_PB = dpkt_pcapng.PCAPNG_BT_PB  # 2, Appendix A (obsolete Packet Block)
_SPB = dpkt_pcapng.PCAPNG_BT_SPB  # 3, §4.4
_EPB = dpkt_pcapng.PCAPNG_BT_EPB  # 6, §4.3
_DSB = 0x0000000A  # §4.7 Decryption Secrets Block
# Blocks that Wireshark shows as frames although they hold no packet: the Systemd Journal
# Export Block (pcapng §4.7, type 9) and Custom Blocks (§4.8, 0x00000BAD / 0x40000BAD).
# They take a frame number (checked with tshark 4.0), so that ours stay equal to Wireshark's.
_FRAME_WITHOUT_PACKET = frozenset({0x00000009, 0x00000BAD, 0x40000BAD})
_OPT_TSRESOL = dpkt_pcapng.PCAPNG_OPT_IF_TSRESOL  # 9, §4.2 if_tsresol
_OPT_TSOFFSET = dpkt_pcapng.PCAPNG_OPT_IF_TSOFFSET  # 14, §4.2 if_tsoffset
_GZIP_MAGIC = b"\x1f\x8b"  # RFC 1952 §2.3.1 ID1 ID2

NS_PER_S = 1_000_000_000


def _name_of(source: PathOrFile) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return str(getattr(source, "name", f"<{type(source).__name__}>"))


_NS_MIN, _NS_MAX = -(1 << 63), (1 << 63) - 1  # what an int64 nanosecond time can hold


@dataclass
class Interface:
    """One capture interface: link type and timestamp conversion to ns.

    ``ts_ns = (raw * num) // den + offset_ns`` with integers only (pcapng §4.2:
    ``if_tsresol`` is 10^-v when its top bit is 0, 2^-v when it is 1; default 10^-6;
    ``if_tsoffset`` is a signed number of seconds added to every timestamp).
    """

    linktype: int
    snaplen: int = 0
    num: int = 1000  # ns per tick numerator (default µs resolution)
    den: int = 1
    offset_ns: int = 0
    tsresol: int = 6

    def ticks_to_ns(self, raw: int) -> int:
        """Nanoseconds of ``raw`` ticks; a time int64 nanoseconds cannot hold (before 1677 or
        after 2262: a damaged timestamp, since pcapng §4.3 gives 64 bits of ticks) is clamped
        to the nearest bound, so the packet is still read."""
        return min(max((raw * self.num) // self.den + self.offset_ns, _NS_MIN), _NS_MAX)


def tsresol_to_fraction(v: int) -> tuple[int, int]:
    """``(num, den)`` with ``ns = ticks * num // den`` for an ``if_tsresol`` byte.

    pcapng §4.2: top bit clear → resolution 10^-(v & 0x7F) s; set → 2^-(v & 0x7F) s.
    """
    e = v & 0x7F
    if v & 0x80:
        return NS_PER_S, 1 << e
    if e <= 9:
        return 10 ** (9 - e), 1
    return 1, 10 ** (e - 9)


@dataclass
class CaptureInfo:
    """What the start of a capture says: format, byte order, resolution, interfaces, and
    the time of its first frame.

    Attributes
    ----------
    name : str
        The file's name (or the file object's).
    format : {"pcap", "pcapng"}
    byte_order : {"<", ">"}
        Byte order of the file (of its first section, for pcapng).
    nanosecond : bool
        pcap with nanosecond timestamps (magic a1b23c4d).
    modified : bool
        The "modified" pcap variant with 24-byte record headers.
    interfaces : list of Interface
        pcap: the one link type of the file header; pcapng: the interfaces described
        before the first packet.
    first_frame_ns : int or None
        Capture time of frame 1 (integer ns since the Unix epoch), whatever the frame
        holds: what Wireshark's relative times ("Start time" of ``-z rtp,streams``,
        ``frame.time_relative``) count from, also when a later frame is earlier (a
        pcapng file merged from several interfaces). 0 when frame 1 carries no time (a
        pcapng Simple Packet Block), as :attr:`Packet.ts_ns`; None when the file holds
        no whole frame. :func:`probe` reads it from the first record only (pcapng: the
        blocks up to the first packet), whatever the file's size.
    decryption_secrets : list of (int, bytes)
        pcapng Decryption Secrets Blocks (draft-ietf-opsawg-pcapng §4.7: secrets type,
        e.g. 0x544c534b "TLSK" for an NSS key log, and the secrets data) found before the
        first packet (where ``editcap --inject-secrets`` writes them), as :func:`probe` saw them.
    """

    name: str
    format: str  # "pcap" or "pcapng"
    byte_order: str  # "<" or ">"
    nanosecond: bool = False
    modified: bool = False
    interfaces: list[Interface] = field(default_factory=list)
    first_frame_ns: int | None = None
    decryption_secrets: list[tuple[int, bytes]] = field(default_factory=list)


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


def _read(f: BinaryIO, n: int, name: str) -> bytes:
    try:
        data = f.read(n)
    except OSError as e:
        raise CaptureError(f"{name}: read error ({e})") from None
    error = getattr(f, "error", None)
    if len(data) < n and error is not None and not getattr(f, "warned", False):
        f.warned = True  # type: ignore[attr-defined]
        warnings.warn(
            f"{name}: compressed capture is cut short or damaged ({error}); reading stops there",
            QoEWarning,
            stacklevel=4,
        )
    return data


def _check_linktype(name: str, lt: int, where: str) -> None:
    if lt not in SUPPORTED_LINKTYPES:
        supported = ", ".join(f"{k} ({linktype_name(k)})" for k in sorted(SUPPORTED_LINKTYPES))
        raise CaptureError(
            f"{name}: unsupported link-layer header type {lt} ({linktype_name(lt)}) {where}; "
            f"qoe reads {supported}"
        )


def _parse_pcap_header(name: str, head: bytes) -> CaptureInfo:
    """draft-ietf-opsawg-pcap §4: magic, version, reserved, snaplen, LinkType and FCS info."""
    magic = struct.unpack(">I", head[:4])[0]
    bo, nano, modified = _PCAP_MAGICS[magic]
    if len(head) < 24:
        raise CaptureError(f"{name}: pcap file header cut short ({len(head)} of 24 bytes)")
    vmaj, _vmin, _r1, _r2, snaplen, lt_field = struct.unpack(bo + "HHIIII", head[4:24])
    if vmaj != 2:
        raise CaptureError(f"{name}: pcap major version {vmaj}, expected 2")
    # §4: the link-layer type is the lower 16 bits; the upper bits carry FCS information.
    lt = lt_field & 0xFFFF
    _check_linktype(name, lt, "in the pcap file header")
    info = CaptureInfo(name, "pcap", bo, nanosecond=nano, modified=modified)
    info.interfaces.append(Interface(lt, snaplen, 1 if nano else 1000, 1, 0, 9 if nano else 6))
    return info


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
    name = _name_of(source)
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
                for _ in _pcapng_chunks(f, info, head, chunk_size=chunk_size, probe_only=True):
                    pass
            else:
                info.first_frame_ns = _pcap_first_frame_ns(f, info)
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
        head = _read(f, 24, name)
        yield f, _parse_head(name, head), head
    finally:
        if owned:
            f.close()


def _parse_head(name: str, head: bytes) -> CaptureInfo:
    """The format, from the first bytes: a pcap file header or a pcapng Section Header Block."""
    if not head:
        raise CaptureError(f"{name}: empty file, not a capture")
    magic = struct.unpack(">I", head[:4])[0] if len(head) >= 4 else None
    if magic in _PCAP_MAGICS:
        return _parse_pcap_header(name, head)
    if magic == _SHB:
        return _parse_shb(name, head)
    shown = head[:8].hex(" ")
    raise CaptureError(
        f"{name}: not a pcap or pcapng capture (first bytes {shown}; pcap starts with "
        "a1b2c3d4/d4c3b2a1/a1b23c4d/4d3cb2a1, pcapng with 0a0d0d0a)"
    )


def _pcap_first_frame_ns(f: BinaryIO, info: CaptureInfo) -> int | None:
    """draft-ietf-opsawg-pcap §5: the time of the first Packet Record, if it is whole."""
    rec = 24 if info.modified else 16
    head = _read(f, rec, info.name)
    if len(head) < rec:
        return None
    sec, frac, caplen, _wire = struct.unpack_from(info.byte_order + "IIII", head)
    if caplen > MAX_RECORD or len(_read(f, caplen, info.name)) < caplen:
        return None
    return sec * NS_PER_S + frac * (1 if info.nanosecond else 1000)


def _parse_shb(name: str, head: bytes) -> CaptureInfo:
    """pcapng §4.1: block type, total length, byte-order magic, version."""
    if len(head) < 12:
        raise CaptureError(f"{name}: pcapng Section Header Block cut short ({len(head)} bytes)")
    bom_le = struct.unpack("<I", head[8:12])[0]
    if bom_le == _BOM:
        bo = "<"
    elif struct.unpack(">I", head[8:12])[0] == _BOM:
        bo = ">"
    else:
        raise CaptureError(f"{name}: pcapng byte-order magic is {head[8:12].hex()}, expected 1a2b3c4d")
    if len(head) >= 14:
        vmaj = struct.unpack(bo + "H", head[12:14])[0]
        if vmaj != dpkt_pcapng.PCAPNG_VERSION_MAJOR:
            raise CaptureError(f"{name}: pcapng major version {vmaj}, expected 1")
    return CaptureInfo(name, "pcapng", bo)


def _parse_idb(name: str, block: bytes, bo: str) -> Interface:
    """pcapng §4.2 Interface Description Block, options parsed by dpkt."""
    cls = dpkt_pcapng.InterfaceDescriptionBlockLE if bo == "<" else dpkt_pcapng.InterfaceDescriptionBlock
    try:
        idb = cls(block)
    except (dpkt.UnpackError, dpkt.NeedData, struct.error, UnicodeDecodeError) as e:
        raise CaptureError(f"{name}: damaged pcapng Interface Description Block ({e})") from None
    iface = Interface(int(idb.linktype), int(idb.snaplen))
    for opt in getattr(idb, "opts", []):
        if opt.code == _OPT_TSRESOL and len(opt.data) >= 1:
            iface.tsresol = opt.data[0]
            iface.num, iface.den = tsresol_to_fraction(opt.data[0])
        elif opt.code == _OPT_TSOFFSET and len(opt.data) >= 8:
            iface.offset_ns = struct.unpack(bo + "q", opt.data[:8])[0] * NS_PER_S
    return iface


def records(source: PathOrFile, *, chunk_size: int = CHUNK_SIZE) -> Iterator[Record]:
    """Stream every packet record of a pcap or pcapng file, as :data:`Record` tuples.

    The records of :func:`raw_chunks`, one at a time (frames without a packet left out).
    Raises :class:`~qoe.errors.CaptureError` for a file that cannot be read at all (at
    the first ``next``); a record cut short at the end of the file ends the stream with a
    :class:`~qoe.errors.QoEWarning`.
    """
    for chunk in raw_chunks(source, chunk_size=chunk_size):
        yield from chunk.records()


def _truncated(name: str, index: int, what: str) -> None:
    warnings.warn(
        f"{name}: capture ends inside packet record {index} ({what}); the {index - 1} "
        "packets before it were read",
        QoEWarning,
        stacklevel=4,
    )


def _corrupt(name: str, index: int, what: str) -> None:
    warnings.warn(
        f"{name}: packet record {index} is damaged ({what}); the {index - 1} packets "
        "before it were read, the rest of the file is skipped",
        QoEWarning,
        stacklevel=4,
    )


# --------------------------------------------------------------------------------------
# Chunk walkers, one per format: the record boundaries are found in Python (they chain,
# each record's length gives the next one's start); every field is then taken from the
# chunk with NumPy.


@dataclass
class RawChunk:
    """The packet records found in one chunk of a file, as arrays.

    ``buf`` holds the bytes; row ``i`` is frame ``index0 + i``, its captured bytes are
    ``buf[data_off[i] : data_off[i] + caplen[i]]``. ``linktype`` is one value for all
    rows (pcap) or an array (pcapng, where a frame without a packet has link type -1).
    """

    buf: bytes
    index0: int
    data_off: "np.ndarray"
    caplen: "np.ndarray"
    wire: "np.ndarray"
    ts_ns: "np.ndarray"
    iface: "np.ndarray"
    linktype: "int | np.ndarray"

    def __len__(self) -> int:
        return int(self.data_off.shape[0])

    def records(self) -> Iterator[Record]:
        """The rows as :data:`Record` tuples of Python ints and bytes, in frame order,
        leaving out the frames that hold no packet."""
        k = len(self)
        buf = self.buf
        lt = self.linktype
        cols = (
            range(self.index0, self.index0 + k),
            self.ts_ns.tolist(),
            self.iface.tolist(),
            self.wire.tolist(),
            self.data_off.tolist(),
            (self.data_off + self.caplen).tolist(),
        )
        if isinstance(lt, int):  # pcap: one link type, every row a packet
            for index, ts, iface, wire, a, e in zip(*cols):
                yield index, ts, iface, lt, wire, buf[a:e]
            return
        for index, ts, iface, wire, a, e, t in zip(*cols, lt.tolist()):
            if t >= 0:
                yield index, ts, iface, t, wire, buf[a:e]


def _gather_u32(buf: bytes, starts: "np.ndarray", count: int, bo: str) -> "np.ndarray":
    """``count`` consecutive uint32 fields at each of ``starts`` (k × count int64 array).

    One row of ``4 * count`` bytes is taken per start from a sliding-window view of the
    buffer (no copy until the rows are gathered), then read as uint32.
    """
    rows = sliding_window_view(np.frombuffer(buf, dtype=np.uint8), 4 * count)[starts]
    return rows.view(bo + "u4").astype(np.int64)


def raw_chunks(source: PathOrFile, *, chunk_size: int = CHUNK_SIZE) -> Iterator[RawChunk]:
    """Stream a capture as :class:`RawChunk` arrays, reading ``chunk_size`` bytes at a time.

    Raises :class:`~qoe.errors.CaptureError` for a file that cannot be read at all (at
    the first ``next``); a record cut short or damaged ends the stream with a
    :class:`~qoe.errors.QoEWarning`, after the chunk of the records before it.
    """
    with _opened(source, _name_of(source)) as (f, info, head):
        if info.format == "pcapng":
            yield from _pcapng_chunks(f, info, head, chunk_size=chunk_size)
        else:
            yield from _pcap_chunks(f, info, chunk_size)


def _pcap_chunks(f: BinaryIO, info: CaptureInfo, chunk_size: int) -> Iterator[RawChunk]:
    name = info.name
    bo = info.byte_order
    caplen_at = struct.Struct(bo + "I").unpack_from
    rec = 24 if info.modified else 16
    frac_ns = 1 if info.nanosecond else 1000
    lt = info.interfaces[0].linktype
    buf = b""
    pos = 0
    index = 0
    while True:
        chunk = _read(f, chunk_size, name)
        if not chunk:
            break
        buf = buf[pos:] + chunk if pos < len(buf) else chunk
        pos = 0
        n = len(buf)
        st, pos = _pcap_record_starts(buf, pos, rec, bo)
        if pos + rec <= n and caplen_at(buf, pos + 8)[0] > MAX_RECORD:
            _corrupt(name, index + len(st) + 1, f"captured length {caplen_at(buf, pos + 8)[0]}")
            pos = n = len(buf)
            chunk = b""
        if len(st):
            h = _gather_u32(buf, st, 4, bo)
            k = len(st)
            yield RawChunk(
                buf=buf,
                index0=index + 1,
                data_off=st + rec,
                caplen=h[:, 2],
                wire=h[:, 3],
                ts_ns=h[:, 0] * NS_PER_S + h[:, 1] * frac_ns,
                iface=np.zeros(k, dtype=np.int32),
                linktype=lt,
            )
            index += k
        if not chunk:
            return
    if pos < len(buf):
        _truncated(name, index + 1, f"{len(buf) - pos} bytes of it present")


def _pcap_record_starts(buf: bytes, pos: int, rec: int, bo: str) -> tuple["np.ndarray", int]:
    """Offsets of the pcap records (§5: header of ``rec`` bytes, captured length at
    byte 8) that ``buf`` holds whole from ``pos`` on, and where the first one it does
    not hold whole starts. Runs of records of one length are taken with
    :func:`~qoe.capture._runs.equal_run`, the rest one by one."""
    caplen_at = struct.Struct(bo + "I").unpack_from
    n = len(buf)
    parts: list[np.ndarray] = []
    starts: list[int] = []
    append = starts.append
    last, same, wait = -1, 0, FIRST_TRY  # the current row of records of one length
    while pos + rec <= n:
        c = caplen_at(buf, pos + 8)[0]
        end = pos + rec + c
        if end > n:
            break
        append(pos)
        pos = end
        if c != last:
            last, same = c, 1
            continue
        same += 1
        if same >= wait:
            stride = rec + c
            run = equal_run(buf, pos, stride, 3, bo, lambda h, c=c: h[:, 2] == c)
            same, wait = 0, next_wait(run, wait)
            if run:
                parts += [np.array(starts, dtype=np.int64), pos + stride * np.arange(run, dtype=np.int64)]
                starts.clear()
                pos += stride * run
    parts.append(np.array(starts, dtype=np.int64))
    return (parts[0] if len(parts) == 1 else np.concatenate(parts)), pos


def _ticks_to_ns(raw: "np.ndarray", iface: Interface) -> "np.ndarray":
    """Vectorised, exact :meth:`Interface.ticks_to_ns` (Python ints when int64 could overflow)."""
    num, den, off = iface.num, iface.den, iface.offset_ns
    lim = (1 << 62) - abs(off)
    if raw.size == 0:
        return raw.astype(np.int64)
    top = int(raw.max())
    if den == 1 and top <= lim // num:
        return raw.astype(np.int64) * num + off
    if num == 1 and top < (1 << 63):
        return raw.astype(np.int64) // den + off
    k = den.bit_length() - 1
    if num == NS_PER_S and den == 1 << k and k <= 32 and (top >> k) <= lim // NS_PER_S:
        sec = (raw >> np.uint64(k)).astype(np.int64)
        frac = (raw & np.uint64(den - 1)).astype(np.int64)
        return sec * NS_PER_S + ((frac * NS_PER_S) >> k) + off
    return np.array([iface.ticks_to_ns(int(r)) for r in raw], dtype=np.int64)


# pcapng §4.3 Enhanced Packet Block: block type, total length, interface id, timestamp
# (high, low), captured length, original length (28 bytes), the packet data, total length.
_EPB_DATA = 28
_EPB_MIN = 32


def _pcapng_chunks(
    f: BinaryIO, info: CaptureInfo, already: bytes, *, chunk_size: int = CHUNK_SIZE, probe_only: bool = False
) -> Iterator[RawChunk]:
    """pcapng §3.1: the packet records of the blocks of ``f``, as :class:`RawChunk` arrays.

    ``already`` holds the bytes read from ``f`` before (the start of the first Section
    Header Block). See :class:`_PcapngWalk`; with ``probe_only`` the walk stops at the
    first packet, having set ``info.first_frame_ns``, and yields no packet.
    """
    # The walk's generator is returned as it is, not wrapped, so that its warnings are
    # attributed to the same caller's frame as the pcap walker's.
    return _PcapngWalk(f, info, already, chunk_size, probe_only).chunks()


class _PcapngWalk:
    """One walk over the blocks of a pcapng file (pcapng §3.1: type, total length, body,
    total length, 32-bit aligned).

    Packet blocks (EPB, SPB, obsolete PB) become rows, and so do the blocks Wireshark
    counts as frames without a packet; IDBs add interfaces (to ``info`` too); a new SHB
    starts a section (new byte order; interface ids restart in the file but our
    interface numbers keep counting); every other block is skipped. :meth:`chunks`
    yields a chunk whenever the buffer must be refilled or a section ends, and before an
    error is raised, so every packet before the error is delivered.

    The state: the buffer and the offset ``pos`` of the next block in it, the current
    section's byte order and interfaces, and the rows found since the last chunk
    (``epbs``, block offsets of Enhanced Packet Blocks, whose fields are taken with NumPy
    when the chunk is made; ``others``, rows of the rarer blocks, decoded one by one).
    """

    def __init__(self, f: BinaryIO, info: CaptureInfo, already: bytes, chunk_size: int, probe_only: bool) -> None:
        self.f = f
        self.info = info
        self.chunk_size = chunk_size
        self.probe_only = probe_only
        self.found = False  # probe_only: the first packet has been reached
        self.buf = already
        self.pos = 0
        self.ifaces: list[Interface] = []  # the current section's
        self.base = 0  # our number of the current section's interface 0
        self.index = 0  # frames in the chunks yielded so far
        self.epbs: list[int] = []
        self.others: list[tuple[int, int, int, int, int, int]] = []  # (row, data_off, caplen, wire, ts, iface)
        self._set_byte_order(info.byte_order)

    def _set_byte_order(self, bo: str) -> None:
        self.bo = bo
        self.head = struct.Struct(bo + "II")  # §3.1: block type, block total length
        self.epb_fields = struct.Struct(bo + "IIII")  # §4.3: interface id, ts high, ts low, caplen

    def chunks(self) -> Iterator[RawChunk]:
        """Walk the file to its end (or the first packet, ``probe_only``), yielding chunks.

        The warnings are issued here, not in the helpers, so that their ``stacklevel``
        points where the pcap walker's do."""
        name = self.info.name
        problem = None
        try:
            while True:
                if not self.probe_only:
                    self._take_epbs()
                btype, blen = self._block_head()
                if btype == _SHB:
                    yield from self._flush()  # the rows of the section that ends, in its byte order
                    btype, blen = self._section_head()
                problem = self._length_problem(btype, blen)
                if problem is not None:
                    break
                if blen < 0 or self.pos + blen > len(self.buf):  # not whole in the buffer: read on
                    yield from self._flush()
                    chunk = _read(self.f, self.chunk_size, name)
                    if not chunk:
                        break
                    self.buf = self.buf[self.pos :] + chunk
                    self.pos = 0
                    continue
                problem = self._take(btype, blen)
                if problem is not None:
                    break
                if self.found:
                    return
        except CaptureError:
            yield from self._flush()  # the packets before a bad block are delivered first
            raise
        if problem is not None:
            _corrupt(name, self.index + self._pending() + 1, problem)
        yield from self._flush()
        if problem is None and not self.probe_only and self.pos < len(self.buf):
            _truncated(name, self.index + 1, f"pcapng block cut short, {len(self.buf) - self.pos} bytes of it present")

    def _pending(self) -> int:
        """Rows found since the last chunk."""
        return len(self.epbs) + len(self.others)

    def _take_epbs(self) -> None:
        """Queue the run of well-formed Enhanced Packet Blocks (§4.3) that the buffer holds
        whole from ``pos`` on: the common case, walked with local names only. Stops before
        any other block, which :meth:`_take` handles (reporting a damaged EPB)."""
        buf = self.buf
        n = len(buf)
        pos = self.pos
        head = self.head.unpack_from
        fields = self.epb_fields.unpack_from
        nif = len(self.ifaces)
        append = self.epbs.append
        last, same, wait = -1, 0, FIRST_TRY  # the current row of blocks of one length
        while pos + _EPB_MIN <= n:
            btype, blen = head(buf, pos)
            if btype != _EPB or blen < _EPB_MIN or blen % 4 or pos + blen > n:
                break
            ifid, _hi, _lo, caplen = fields(buf, pos + 8)
            if ifid >= nif or _EPB_MIN + caplen > blen:
                break
            append(pos)
            pos += blen
            if blen != last:
                last, same = blen, 1
                continue
            same += 1
            if same >= wait:
                run = equal_run(buf, pos, blen, 6, self.bo, lambda h, b=blen: _whole_epbs(h, b, nif))
                same, wait = 0, next_wait(run, wait)
                if run:
                    self.epbs += range(pos, pos + blen * run, blen)
                    pos += blen * run
        self.pos = pos

    def _block_head(self) -> tuple[int, int]:
        """Type and total length of the block at ``pos`` (§3.1), in the section's byte
        order; ``(-1, -1)`` when the buffer holds fewer than 12 bytes of it."""
        if self.pos + 12 <= len(self.buf):
            return self.head.unpack_from(self.buf, self.pos)  # type: ignore[return-value]
        return -1, -1

    def _section_head(self) -> tuple[int, int]:
        """The Section Header Block at ``pos`` starts a section whose byte order may differ
        from the last one's (§4.1): switch to it; its type and total length, read in it."""
        sec = _parse_shb(self.info.name, self.buf[self.pos : self.pos + 14])
        if sec.byte_order != self.bo:
            self.info.byte_order = sec.byte_order
            self._set_byte_order(sec.byte_order)
        return self.head.unpack_from(self.buf, self.pos)  # type: ignore[return-value]

    def _length_problem(self, btype: int, blen: int) -> str | None:
        """What is wrong with a block's total length (§3.1: at least 12, a multiple of 4;
        beyond :data:`MAX_RECORD` only if the buffer already holds it), if anything."""
        if blen < 0:
            return None
        if blen < 12 or blen % 4 or (self.pos + blen > len(self.buf) and blen > MAX_RECORD):
            return f"pcapng block of type 0x{btype:08x} with total length {blen}"
        return None

    def _take(self, btype: int, blen: int) -> str | None:
        """Take the whole block at ``pos`` and step past it; or say what is damaged in it."""
        if btype == _EPB:
            problem = self._take_epb(blen)
        elif btype == _IDB:
            problem = self._take_idb(blen)
        elif btype == _SHB:
            self.base += len(self.ifaces)
            self.ifaces = []
            problem = None
        elif btype == _SPB:
            problem = self._take_spb(blen)
        elif btype == _PB:
            problem = self._take_pb(blen)
        elif btype == _DSB and blen >= 20:
            # §4.7 Decryption Secrets Block: type, total length, secrets type, secrets length, data
            stype, slen = struct.unpack_from(self.info.byte_order + "II", self.buf, self.pos + 8)
            self.info.decryption_secrets.append((stype, bytes(self.buf[self.pos + 16:self.pos + 16 + min(slen, blen - 20)])))
            problem = None
        elif btype in _FRAME_WITHOUT_PACKET:
            if self.probe_only:
                self._first_frame(0)  # no time of its own, as in its row
            self.others.append((self._pending(), self.pos, 0, 0, 0, -1))
            problem = None
        else:
            problem = None  # any other block: skipped
        if problem is None:
            self.pos += blen
        return problem

    def _first_frame(self, ts_ns: int) -> None:
        if self.info.first_frame_ns is None:
            self.info.first_frame_ns = ts_ns

    def _found_packet(self, ts_ns: int) -> None:
        """``probe_only``: the first packet, at ``ts_ns``, ends the walk."""
        self._first_frame(ts_ns)
        self.found = True

    def _take_epb(self, blen: int) -> str | None:
        """§4.3 Enhanced Packet Block (the one at ``pos`` when :meth:`_take_epbs` stopped
        on it: damaged, or ``probe_only``)."""
        if blen < _EPB_MIN:
            return f"Enhanced Packet Block of {blen} bytes"
        ifid, hi, lo, caplen = self.epb_fields.unpack_from(self.buf, self.pos + 8)
        if ifid >= len(self.ifaces):
            return f"interface {ifid} was never described"
        if _EPB_MIN + caplen > blen:
            return f"captured length {caplen} exceeds its block"
        if self.probe_only:
            self._found_packet(self.ifaces[ifid].ticks_to_ns(hi << 32 | lo))
        else:
            self.epbs.append(self.pos)
        return None

    def _take_idb(self, blen: int) -> None:
        """§4.2 Interface Description Block: one more interface (CaptureError if bad)."""
        iface = _parse_idb(self.info.name, self.buf[self.pos : self.pos + blen], self.bo)
        _check_linktype(self.info.name, iface.linktype, f"on pcapng interface {self.base + len(self.ifaces)}")
        self.ifaces.append(iface)
        self.info.interfaces.append(iface)

    def _take_spb(self, blen: int) -> str | None:
        """§4.4 Simple Packet Block: no interface id (interface 0), no timestamp; captured
        length is min(original length, snaplen) where snaplen 0 means unlimited."""
        if not self.ifaces:
            return "Simple Packet Block before any interface"
        if self.probe_only:
            self._found_packet(0)
            return None
        wire = struct.unpack_from(self.bo + "I", self.buf, self.pos + 8)[0]
        snap = self.ifaces[0].snaplen
        caplen = min(wire, snap) if snap else wire
        self.others.append((self._pending(), self.pos + 12, min(caplen, blen - 16), wire, 0, self.base))
        return None

    def _take_pb(self, blen: int) -> str | None:
        """Appendix A obsolete Packet Block: interface id, drops count, ts high, ts low,
        caplen, original length."""
        good = blen >= 32
        if good:
            ifid, _d, hi, lo, caplen, wire = struct.unpack_from(self.bo + "HHIIII", self.buf, self.pos + 8)
            good = ifid < len(self.ifaces) and 32 + caplen <= blen
        if not good:
            return "obsolete Packet Block with bad interface or length"
        ts_ns = self.ifaces[ifid].ticks_to_ns(hi << 32 | lo)
        if self.probe_only:
            self._found_packet(ts_ns)
            return None
        self.others.append((self._pending(), self.pos + 28, caplen, wire, ts_ns, self.base + ifid))
        return None

    def _flush(self) -> Iterator[RawChunk]:
        """The rows found since the last chunk as one :class:`RawChunk` (none if none)."""
        k = self._pending()
        if not k:
            return
        data_off, caplen, wire, ts, ifc = self._columns(k)
        lts = np.array([x.linktype for x in self.info.interfaces] + [-1], dtype=np.int64)
        ifc[ifc < 0] = len(lts) - 1  # frames without a packet: link type -1, nothing decoded
        chunk = RawChunk(self.buf, self.index + 1, data_off, caplen, wire, ts, ifc.astype(np.int32), lts[ifc])
        self.index += k
        self.epbs = []
        self.others = []
        yield chunk

    def _columns(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(data_off, caplen, wire, ts_ns, iface)`` of the ``k`` pending rows, in frame order."""
        if not self.others:
            return self._epb_columns()
        cols = np.empty((5, k), dtype=np.int64)
        rows = np.array([o[0] for o in self.others], dtype=np.int64)
        for dst, v in zip(cols, zip(*(o[1:] for o in self.others))):
            dst[rows] = v
        if self.epbs:
            is_epb = np.ones(k, dtype=bool)
            is_epb[rows] = False
            for dst, v in zip(cols, self._epb_columns()):
                dst[is_epb] = v
        return cols[0], cols[1], cols[2], cols[3], cols[4]

    def _epb_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(data_off, caplen, wire, ts_ns, iface)`` of the queued Enhanced Packet Blocks."""
        st = np.fromiter(self.epbs, dtype=np.int64, count=len(self.epbs))
        # §4.3: type, length, interface id, ts high, ts low, caplen, original length
        h = _gather_u32(self.buf, st, 7, self.bo)
        local = h[:, 2]
        raw = (h[:, 3].astype(np.uint64) << np.uint64(32)) | h[:, 4].astype(np.uint64)
        return st + _EPB_DATA, h[:, 5], h[:, 6], _ticks_per_interface(raw, local, self.ifaces), local + self.base


def _whole_epbs(h: "np.ndarray", blen: int, nif: int) -> "np.ndarray":
    """Which of the blocks whose first six words are the rows of ``h`` are well-formed
    Enhanced Packet Blocks of total length ``blen`` (§4.3: type, total length, interface
    id below ``nif``, timestamp, captured length that fits the block), as
    :meth:`_PcapngWalk._take_epbs` checks one by one."""
    return (h[:, 0] == _EPB) & (h[:, 1] == blen) & (h[:, 2] < nif) & (h[:, 5] <= blen - _EPB_MIN)


def _ticks_per_interface(raw: "np.ndarray", local: "np.ndarray", ifaces: list[Interface]) -> "np.ndarray":
    """Nanoseconds of the timestamps ``raw`` taken on the section's interfaces ``local``."""
    present = np.flatnonzero(np.bincount(local)).tolist()
    if len(present) == 1:
        return _ticks_to_ns(raw, ifaces[present[0]])
    ts = np.empty(len(raw), dtype=np.int64)
    for i in present:
        sel = local == i
        ts[sel] = _ticks_to_ns(raw[sel], ifaces[i])
    return ts
