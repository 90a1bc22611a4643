"""Where :func:`qoe.rtp.scan_capture` keeps the packets of RTP streams: on disk, not in RAM.

A capture's RTP payloads and per-packet columns are about as large as the capture, so a
scan that held them in memory would grow with the file (issue 13: memory flat in the size
of the capture). :class:`PacketStore` appends them, as the scan reads, to two anonymous
temporary files (:func:`tempfile.TemporaryFile`: unlinked when created, so the space is
given back when they are closed or the process ends, even on error; a finaliser closes them
when the last table that needs them is gone), and keeps in memory
only where each flow's rows lie: one entry per flow and write. A stream's
:class:`~qoe.rtp.RtpPackets` is read back when it is used (:meth:`PacketStore.packets`:
a table that loads on first access), and a few recently used tables are cached (bounded
in bytes), so that scoring streams one after another holds a few streams at a time.

References
----------
.. [1] POSIX.1-2017, ``unlink()``: "When the file's link count becomes 0 and no process has
   the file open, the space occupied by the file shall be freed"; Python Standard
   Library, ``tempfile.mkstemp`` (the file is created with ``O_EXCL``, readable and
   writable only by the creating user).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import weakref
from collections import OrderedDict

import numpy as np

from qoe.rtp._packet import RtpPackets, make_packets

# One packet's row in the records file: frame, arrival (ns), sequence number, RTP
# timestamp, payload type, marker, and where its payload lies in the payloads file.
RECORD = np.dtype([("frame", "<i8"), ("arr", "<i8"), ("seq", "<u2"), ("ts", "<u4"), ("pt", "u1"),
                   ("mk", "?"), ("off", "<i8"), ("len", "<u4"), ("wire", "<u4")])

#: Default of ``PacketStore(cache_bytes=...)``: bytes of loaded tables kept for reuse.
CACHE_BYTES = 16 << 20
# Payload bytes joined per write (bounds the transient of one write).
_WRITE_ROWS = 4096
# Python's bytes object overhead per payload, counted in the cache's size (CPython 3.11).
_BYTES_OVERHEAD = 33


class _Growable:
    """A 1-D NumPy column appended to, grown by doubling (amortised O(1) per row)."""

    __slots__ = ("a", "n")

    def __init__(self, dtype: type | str) -> None:
        self.a = np.zeros(1024, dtype=dtype)
        self.n = 0

    def extend(self, v: np.ndarray) -> None:
        need = self.n + v.size
        if need > self.a.size:
            size = self.a.size
            while size < need:
                size *= 2
            grown = np.zeros(size, dtype=self.a.dtype)
            grown[: self.n] = self.a[: self.n]
            self.a = grown
        self.a[self.n:need] = v
        self.n = need

    def view(self) -> np.ndarray:
        return self.a[: self.n]


class PacketStore:
    """RTP packets of many flows in two anonymous temporary files, read back per flow.

    Parameters
    ----------
    cache_bytes : int, optional
        Bytes of loaded packet tables (columns and payloads) kept for reuse; the most
        recently loaded table is always kept.
    directory : str, optional
        Where the temporary files are made (default: :func:`tempfile.gettempdir`, i.e.
        ``TMPDIR``). They take the RTP payload bytes plus 36 bytes per packet.
    """

    def __init__(self, *, cache_bytes: int = CACHE_BYTES, directory: str | None = None) -> None:
        (self._pay, pay_path), (self._rec, rec_path) = _anonymous_file(directory), _anonymous_file(directory)
        self._closer = weakref.finalize(self, _close, (self._pay, pay_path), (self._rec, rec_path))
        self._pay_n = 0  # bytes written to the payloads file
        self._rec_n = 0  # records written
        self._e_fid = _Growable(np.int64)  # one entry per (write, flow): its rows in the records file
        self._e_start = _Growable(np.int64)
        self._e_count = _Growable(np.int64)
        self._index: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._cache: OrderedDict[int, tuple[RtpPackets, int]] = OrderedDict()
        self._cached = 0
        self.cache_bytes = cache_bytes

    def close(self) -> None:
        """Close (and so delete) the temporary files; done when the store is collected."""
        self._closer()
        self._cache.clear()

    # -- writing, while the capture is read -------------------------------------
    def put_payloads(self, buf: memoryview, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Append the payloads ``buf[start[i]:end[i]]`` in order; their offsets in the file."""
        n = (end - start).astype(np.int64)
        off = self._pay_n + np.concatenate(([0], np.cumsum(n)[:-1])) if n.size else np.zeros(0, dtype=np.int64)
        s, e = start.tolist(), end.tolist()
        for c in range(0, len(s), _WRITE_ROWS):
            _write(self._pay, b"".join([buf[a:b] for a, b in zip(s[c:c + _WRITE_ROWS], e[c:c + _WRITE_ROWS])]))
        self._pay_n += int(n.sum())
        return off

    def put_packets(self, fid: np.ndarray, frame: np.ndarray, arr: np.ndarray, seq: np.ndarray, ts: np.ndarray,
                    pt: np.ndarray, mk: np.ndarray, off: np.ndarray, length: np.ndarray, wire: np.ndarray) -> None:
        """Append packets of flows ``fid`` (arrival order kept within each flow); ``length``
        bytes of each payload are stored, ``wire`` is its length on the wire."""
        if fid.size == 0:
            return
        o = np.argsort(fid, kind="stable")
        rec = np.empty(o.size, dtype=RECORD)
        rec["frame"], rec["arr"], rec["seq"], rec["ts"] = frame[o], arr[o], seq[o], ts[o]
        rec["pt"], rec["mk"], rec["off"], rec["len"], rec["wire"] = pt[o], mk[o], off[o], length[o], wire[o]
        _write(self._rec, rec.view(np.uint8).data)
        f = fid[o]
        starts = np.flatnonzero(np.concatenate(([True], f[1:] != f[:-1])))
        self._e_fid.extend(f[starts])
        self._e_start.extend(self._rec_n + starts)
        self._e_count.extend(np.diff(np.append(starts, f.size)))
        self._rec_n += int(f.size)
        self._index = None

    # -- reading, per flow ------------------------------------------------------
    def _sorted_entries(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every run of stored packets: (flow id, first record, records), by flow id."""
        if self._index is None:
            o = np.argsort(self._e_fid.view(), kind="stable")
            self._index = (self._e_fid.view()[o], self._e_start.view()[o], self._e_count.view()[o])
        return self._index

    def _entries(self, fid: int) -> tuple[np.ndarray, np.ndarray]:
        f, s, c = self._sorted_entries()
        lo, hi = np.searchsorted(f, fid, side="left"), np.searchsorted(f, fid, side="right")
        return s[lo:hi], c[lo:hi]

    def load(self, fid: int) -> RtpPackets:
        """Flow ``fid``'s packets (columns and payloads), read from the files (or the cache)."""
        hit = self._cache.get(fid)
        if hit is not None:
            self._cache.move_to_end(fid)
            return hit[0]
        starts, counts = self._entries(fid)
        fd = self._rec
        rec = np.frombuffer(b"".join(os.pread(fd, int(c) * RECORD.itemsize, int(s) * RECORD.itemsize)
                                     for s, c in zip(starts.tolist(), counts.tolist())), dtype=RECORD)
        payloads = self._read_payloads(rec["off"], rec["len"].astype(np.int64))
        p = make_packets(rec["frame"], rec["arr"], rec["seq"], rec["ts"], rec["mk"], rec["pt"], payloads,
                         payload_sizes=rec["wire"].astype(np.int64))
        size = int(rec.size) * (RECORD.itemsize + 24 + _BYTES_OVERHEAD + 8) + int(rec["len"].sum())
        self._cache[fid] = (p, size)
        self._cached += size
        while len(self._cache) > 1 and self._cached > self.cache_bytes:
            _, (_, dropped) = self._cache.popitem(last=False)
            self._cached -= dropped
        return p

    def _read_payloads(self, off: np.ndarray, n: np.ndarray) -> list[bytes]:
        """Payloads at ``off`` of ``n`` bytes; one read per run of adjacent payloads."""
        if off.size == 0:
            return []
        brk = np.flatnonzero(np.concatenate(([True], off[1:] != off[:-1] + n[:-1])))
        run_end = np.append(brk[1:], off.size)
        fd = self._pay
        out: list[bytes] = []
        for a, b in zip(brk.tolist(), run_end.tolist()):
            base = int(off[a])
            data = os.pread(fd, int(off[b - 1] + n[b - 1]) - base, base)
            rel = (off[a:b] - base).tolist()
            out.extend(data[r:r + k] for r, k in zip(rel, n[a:b].tolist()))
        return out

    def packets_of(self, fids: np.ndarray) -> list[RtpPackets]:
        """Each flow of ``fids``' packet table, loaded from the files when first used (the
        flows' counts looked up at once)."""
        f, _, c = self._sorted_entries()
        before = np.concatenate(([0], np.cumsum(c)))
        n = before[np.searchsorted(f, fids, side="right")] - before[np.searchsorted(f, fids, side="left")]
        return [_Stored._of(self, fid, k) for fid, k in zip(fids.tolist(), n.tolist())]


def _anonymous_file(directory: str | None) -> tuple[int, str | None]:
    """A file descriptor of a new temporary file that has no name (unlinked at once): the
    space it takes is freed when the descriptor is closed, or the process ends. Where an
    open file cannot be unlinked (Windows), its path, to delete when it is closed."""
    fd, path = tempfile.mkstemp(prefix="qoe-rtp-", dir=directory)
    try:
        os.unlink(path)
    except OSError:
        return fd, path
    return fd, None


def _close(*files: tuple[int, str | None]) -> None:
    for fd, path in files:
        os.close(fd)
        if path is not None:
            os.unlink(path)


def _write(fd: int, data: bytes | memoryview) -> None:
    """Write all of ``data`` (``os.write`` may write less than asked)."""
    view = memoryview(data).cast("B")
    while view.nbytes:
        view = view[os.write(fd, view):]


class _Stored(RtpPackets):
    """An :class:`RtpPackets` whose columns and payloads stay in a :class:`PacketStore`
    until they are read (each read goes through the store's cache). ``len()`` needs no
    read. It pickles, and compares, as the plain table it stands for."""

    __slots__ = ("_store", "_fid", "_n")

    @classmethod
    def _of(cls, store: PacketStore, fid: int, n: int) -> _Stored:
        self = object.__new__(cls)
        object.__setattr__(self, "_store", store)
        object.__setattr__(self, "_fid", fid)
        object.__setattr__(self, "_n", n)
        return self

    def loaded(self) -> RtpPackets:
        """The plain table (read from the store, or its cache)."""
        return self._store.load(self._fid)

    def __len__(self) -> int:
        return self._n

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        p = self.loaded()
        return RtpPackets, tuple(getattr(p, f.name) for f in dataclasses.fields(RtpPackets))

    def __eq__(self, other: object) -> bool:
        return self.loaded() == (other.loaded() if isinstance(other, _Stored) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RtpPackets(<{self._n} packets in a temporary file>)"


def _column(name: str) -> property:
    return property(lambda self: getattr(self.loaded(), name), doc=f"See :class:`RtpPackets` ({name}).")


for _f in dataclasses.fields(RtpPackets):
    setattr(_Stored, _f.name, _column(_f.name))
