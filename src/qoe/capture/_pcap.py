"""The pcap reader: a pcap file's header, and its packet records chunk by chunk.

:func:`pcap_chunks` finds the record boundaries of a chunk with :mod:`struct` (they chain:
each record's captured length gives the next one's start; runs of records of one length
are taken at once with :func:`qoe.capture._runs.equal_run`) and takes every field with
NumPy, as a :class:`~qoe.capture._records.RawChunk`.

References
----------
.. [1] G. Harris, M. Richardson, "PCAP Capture File Format", draft-ietf-opsawg-pcap
   (§4 File Header, §5 Packet Record). Also tcpdump.org ``pcap-savefile(5)``.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from qoe.capture._records import (
    MAX_RECORD,
    NS_PER_S,
    CaptureInfo,
    Interface,
    RawChunk,
    check_linktype,
    gather_u32,
    read_bytes,
    read_into,
    warn_corrupt,
    warn_truncated,
)
from qoe.capture._runs import FIRST_TRY, equal_run, next_wait
from qoe.errors import CaptureError

# pcap magic numbers, draft-ietf-opsawg-pcap §4 (as read big-endian from the first 4 bytes).
# (Written here rather than taken from dpkt.pcap, which holds the same values: reading a pcap
# file needs nothing else of dpkt, whose import costs 25 ms of CPU at each start.)
PCAP_MAGICS = {
    0xA1B2C3D4: (">", False, False),  # µs, big-endian writer
    0xA1B23C4D: (">", True, False),  # ns, big-endian writer
    0xD4C3B2A1: ("<", False, False),  # µs, little-endian writer
    0x4D3CB2A1: ("<", True, False),  # ns, little-endian writer
    # Alexey Kuznetzov's "modified" pcap: 24-byte record headers (tcpdump.org
    # pcap-savefile(5) notes; Wireshark wiretap "PCAP-SS991029").
    0xA1B2CD34: (">", False, True),
    0x34CDB2A1: ("<", False, True),
}


def parse_pcap_header(name: str, head: bytes) -> CaptureInfo:
    """draft-ietf-opsawg-pcap §4: magic, version, reserved, snaplen, LinkType and FCS info."""
    magic = struct.unpack(">I", head[:4])[0]
    bo, nano, modified = PCAP_MAGICS[magic]
    if len(head) < 24:
        raise CaptureError(f"{name}: pcap file header cut short ({len(head)} of 24 bytes)")
    vmaj, _vmin, _r1, _r2, snaplen, lt_field = struct.unpack(bo + "HHIIII", head[4:24])
    if vmaj != 2:
        raise CaptureError(f"{name}: pcap major version {vmaj}, expected 2")
    # §4: the link-layer type is the lower 16 bits; the upper bits carry FCS information.
    lt = lt_field & 0xFFFF
    check_linktype(name, lt, "in the pcap file header")
    info = CaptureInfo(name, "pcap", bo, nanosecond=nano, modified=modified)
    info.interfaces.append(Interface(lt, snaplen, 1 if nano else 1000, 1, 0, 9 if nano else 6))
    return info


def pcap_first_frame_ns(f: BinaryIO, info: CaptureInfo) -> int | None:
    """draft-ietf-opsawg-pcap §5: the time of the first Packet Record, if it is whole."""
    rec = 24 if info.modified else 16
    head = read_bytes(f, rec, info.name)
    if len(head) < rec:
        return None
    sec, frac, caplen, _wire = struct.unpack_from(info.byte_order + "IIII", head)
    if caplen > MAX_RECORD or len(read_bytes(f, caplen, info.name)) < caplen:
        return None
    return sec * NS_PER_S + frac * (1 if info.nanosecond else 1000)


def pcap_chunks(f: BinaryIO, info: CaptureInfo, chunk_size: int, *, shared: bool = False) -> Iterator[RawChunk]:
    """The file's records in chunks of about ``chunk_size`` bytes. ``shared``: in a child
    process reading ahead, a plain file's chunks are read straight into the shared memory
    their batch is handed over in (``qoe.capture._forkahead.shared_buffer``; a chunk's
    ``buf`` is then a memoryview)."""
    name = info.name
    bo = info.byte_order
    caplen_at = struct.Struct(bo + "I").unpack_from
    rec = 24 if info.modified else 16
    frac_ns = 1 if info.nanosecond else 1000
    lt = info.interfaces[0].linktype
    # A plain file (not a pipe, not gzip): the record a chunk cuts is read again with the next
    # chunk (a seek back over at most one record), not copied in front of it (a second 1 MiB
    # copy and allocation per chunk: 2.5% of a pass over benchmarks/web.py's capture).
    reread = isinstance(f, io.BufferedReader) and f.seekable()
    shared_buffer = None
    if shared and reread:
        from qoe.capture._forkahead import shared_buffer  # noqa: PLC0415 - only for a child reading ahead
    buf: bytes | memoryview = b""
    pos = n = 0  # (n, not len(buf): a shared chunk already given is not looked at again)
    index = 0
    while True:
        view = shared_buffer(chunk_size) if shared_buffer is not None else None
        chunk = view[:read_into(f, view, name)] if view is not None else read_bytes(f, chunk_size, name)
        if not len(chunk):
            break
        buf = b"".join((buf[pos:], chunk)) if pos < n else chunk  # a cut record carried over (a pipe, gzip)
        pos = 0
        n = len(buf)
        st, pos = _pcap_record_starts(buf, pos, rec, bo)
        if pos + rec <= n and caplen_at(buf, pos + 8)[0] > MAX_RECORD:
            warn_corrupt(name, index + len(st) + 1, f"captured length {caplen_at(buf, pos + 8)[0]}")
            pos = n = len(buf)
            chunk = b""
        elif reread and 0 < pos < n:
            f.seek(pos - n, io.SEEK_CUR)  # the cut record starts the next chunk
            pos = n  # (nothing carried over)
        if len(st):
            h = gather_u32(buf, st, 4, bo)
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
        if not len(chunk):
            return
    if pos < n:
        warn_truncated(name, index + 1, f"{n - pos} bytes of it present")


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
