"""The pcapng reader: sections, interfaces and packet blocks, chunk by chunk.

:func:`pcapng_chunks` walks the blocks of a pcapng file (:class:`_PcapngWalk`): packet
blocks become rows of a :class:`~qoe.capture._records.RawChunk` (the fields of Enhanced
Packet Blocks taken with NumPy), Interface Description Blocks add interfaces (options
parsed by dpkt), a new Section Header Block switches byte order. dpkt's own per-packet
reader is not used: it turns timestamps into floats and knows one interface only.

References
----------
.. [1] M. Tüxen et al., "PCAP Now Generic (pcapng) Capture File Format",
   draft-ietf-opsawg-pcapng (§3.1 general block structure, §4.1 Section Header Block,
   §4.2 Interface Description Block and ``if_tsresol``/``if_tsoffset``, §4.3 Enhanced
   Packet Block, §4.4 Simple Packet Block, Appendix A Packet Block (obsolete)).
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from qoe.capture._records import (
    CHUNK_SIZE,
    MAX_RECORD,
    NS_PER_S,
    CaptureInfo,
    Interface,
    RawChunk,
    check_linktype,
    gather_u32,
    read_bytes,
    tsresol_to_fraction,
    warn_corrupt,
    warn_truncated,
)
from qoe.capture._runs import FIRST_TRY, equal_run, next_wait
from qoe.errors import CaptureError

# pcapng Section Header Block type, draft-ietf-opsawg-pcapng §4.1 (a palindrome, so it reads
# the same in both byte orders).
# The block types and option codes are written here (dpkt.pcapng holds the same values):
# dpkt is imported only to parse an Interface Description Block's options (_parse_idb).
SHB = 0x0A0D0D0A
_BOM = 0x1A2B3C4D  # §4.1 Byte-Order Magic
_VERSION_MAJOR = 1  # §4.1 Major Version
_IDB = 0x00000001  # §4.2
_PB = 0x00000002  # Appendix A (obsolete Packet Block)
_SPB = 0x00000003  # §4.4
_EPB = 0x00000006  # §4.3
_DSB = 0x0000000A  # §4.7 Decryption Secrets Block
# Blocks that Wireshark shows as frames although they hold no packet: the Systemd Journal
# Export Block (pcapng §4.7, type 9) and Custom Blocks (§4.8, 0x00000BAD / 0x40000BAD).
# They take a frame number (checked with tshark 4.0), so that ours stay equal to Wireshark's.
_FRAME_WITHOUT_PACKET = frozenset({0x00000009, 0x00000BAD, 0x40000BAD})
_OPT_TSRESOL = 9  # §4.2 if_tsresol
_OPT_TSOFFSET = 14  # §4.2 if_tsoffset


def parse_shb(name: str, head: bytes) -> CaptureInfo:
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
        if vmaj != _VERSION_MAJOR:
            raise CaptureError(f"{name}: pcapng major version {vmaj}, expected 1")
    return CaptureInfo(name, "pcapng", bo)


def _parse_idb(name: str, block: bytes, bo: str) -> Interface:
    """pcapng §4.2 Interface Description Block, options parsed by dpkt."""
    # dpkt loads here, with the first pcapng interface: a pcap file is read without it (its
    # import costs 25 ms of CPU)
    import dpkt  # noqa: PLC0415
    from dpkt import pcapng as dpkt_pcapng  # noqa: PLC0415

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


def pcapng_chunks(
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
        # a plain file (not a pipe, not gzip): a block a chunk cuts is read again with the
        # next chunk (a seek back), not copied in front of it
        self.reread = isinstance(f, io.BufferedReader) and f.seekable()
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
                if btype == SHB:
                    yield from self._flush()  # the rows of the section that ends, in its byte order
                    btype, blen = self._section_head()
                problem = self._length_problem(btype, blen)
                if problem is not None:
                    break
                if blen < 0 or self.pos + blen > len(self.buf):  # not whole in the buffer: read on
                    yield from self._flush()
                    left = len(self.buf) - self.pos
                    if self.reread and self.pos and left:
                        # (as pcap_chunks does: the cut block is read again, not copied)
                        self.f.seek(-left, io.SEEK_CUR)
                        left = 0
                    chunk = read_bytes(self.f, self.chunk_size, name)
                    if not chunk:
                        break
                    self.buf = self.buf[self.pos :] + chunk if left else chunk
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
            warn_corrupt(name, self.index + self._pending() + 1, problem)
        yield from self._flush()
        if problem is None and not self.probe_only and self.pos < len(self.buf):
            warn_truncated(name, self.index + 1, f"pcapng block cut short, {len(self.buf) - self.pos} bytes of it present")

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
        sec = parse_shb(self.info.name, self.buf[self.pos : self.pos + 14])
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
        elif btype == SHB:
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
        check_linktype(self.info.name, iface.linktype, f"on pcapng interface {self.base + len(self.ifaces)}")
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
        h = gather_u32(self.buf, st, 7, self.bo)
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
