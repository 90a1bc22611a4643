"""``ForkAhead``: an iterator advanced in a forked child process, its items handed over
through shared memory.

A thread reading ahead (:class:`qoe.capture._readahead.ReadAhead`) shares the GIL with its
reader: on 1.4 M packets of RTP (``benchmarks/rtp_many_streams.py``, 2 vCPUs) the scan's
many short NumPy calls hand the GIL to the reading thread and wait to get it back, and
two threads did the work of one and a quarter. A child process has its own interpreter.
It makes each item, pickles it (protocol 5, :pep:`574`) with the NumPy arrays
out of band, and copies those arrays into a slot: a shared memory file
(``memfd_create``) that both processes map, made when no free slot is large enough and
its descriptor passed with the item (``SCM_RIGHTS``). The parent's arrays are views of
the slot (no copy), and the slot is given back for the next items when the last of them
is gone; a slot is mapped once in each process, so its pages are not faulted in again.

Messages (a Unix socket pair, parent <- child): an 8-byte length and a pickled tuple,
``("item", slot, places, meta, finished, warnings)`` (``places``: each array's offset and
size in the slot; ``finished``: whether ``then`` was applied, below; a new slot's
descriptor comes with its first byte), ``("end", warnings)`` or ``("error", exception,
warnings)``. Tokens (parent ->
child, one byte each): :data:`_MORE`, make the next item (the parent sends ``depth`` at
the start and one per item it takes), or a slot's number below it, that slot is free
again. The child ignores SIGINT (the parent's Ctrl-C stops both: the parent kills the
child when closed) and ends when the parent's end of the socket closes.

A pure function ``then`` of each item may run on either side: in the child while the
parent has an item it has not taken yet (the parent is the slower one), else in the parent
(the child is the slower one: the parent has taken every item and would wait for the
next). The child knows from the tokens: while it makes an item, the parent holds
``depth - 1 - wanted`` items it has not taken, ``wanted`` being the items asked for beyond
the one being made. So the work of ``then`` goes to the process that would otherwise wait.

The reader may read straight into the slot an item goes to (:func:`shared_buffer`: the
capture's bytes, the largest of an item's arrays): an array that already lies in that
slot is not copied again, the message gives each array's place in the slot. A slot is
written again only when the parent has given it back and the child holds no view of it
any more (a reader may keep a chunk's bytes for its next item): the slot's mapping then
exports no buffer, which resizing it to its own size tells (Python raises BufferError
for a mapping with buffers exported, and this is its only way to ask).

Only where ``os.fork``, ``os.memfd_create`` and descriptor passing exist (Linux) and the
process runs no other Python thread (a fork copies only the calling thread: a lock
another thread holds would stay locked in the child); :func:`fork_available` says so.
"""

from __future__ import annotations

import io
import mmap
import os
import pickle
import signal
import socket
import struct
import sys
import threading
import traceback
import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import numpy as np

from qoe._records import record_reducer
from qoe.errors import CaptureError

T = TypeVar("T")

#: Smallest slot of shared memory (bytes); a larger one is made for an item that needs it.
#: An item of ``read_udp_batches(chunk_size=4 MiB)`` prepared for the RTP scan is about
#: 5.5 MiB (the chunk and its columns). Two slots are in use at a time (the item the
#: parent works on and the next), more while the parent keeps views of older items.
SLOT_BYTES = 8 << 20
_SLOT_STEP = 1 << 20
#: Arrays start on this boundary in a slot (bytes): NumPy's loops for aligned data.
_ALIGN = 64
_MORE = 255  # token: make one more item (slots are numbered below it)
#: Slots the child makes for its reader to read into when none is free: with two items
#: ahead, three are in use at a time and the parent gives one back just after it asks for
#: the next item, so a fourth lets the reader read into shared memory every time.
_ARENA_SLOTS = 4
_LEN = struct.Struct("<Q")


def fork_available() -> bool:
    """Whether :func:`qoe.capture.read_ahead` can read in a child process here: ``os.fork``,
    ``os.memfd_create`` and descriptor passing exist (Linux) and no other Python thread runs."""
    return (hasattr(os, "fork") and hasattr(os, "memfd_create") and hasattr(socket, "send_fds")
            and threading.active_count() == 1)


def _aligned(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def _array(buffer: Any, code: str, shape: tuple[int, ...]) -> np.ndarray:
    # np.dtype(code) is NumPy's own instance of a built-in dtype: an unpickled dtype is an
    # equal copy, and some loops (ufunc.at) take their fast path only for NumPy's own.
    return np.frombuffer(buffer, dtype=np.dtype(code)).reshape(shape)


class _Pickler(pickle.Pickler):
    """Protocol 5 with arrays of built-in dtypes out of band (see :func:`_array`); a strided
    view (a column of a table) is made contiguous here, in the child, rather than copied
    into the pickle. Records (dataclasses that :func:`qoe._records.record_reducer` takes) go
    as their fields: a third of the time pickle's own way takes, both ways (the QUIC
    connections and TCP results the web passes hand over)."""

    def reducer_override(self, obj: Any) -> Any:
        cls = type(obj)
        if cls is np.ndarray and obj.dtype.isbuiltin == 1:
            return _array, (pickle.PickleBuffer(np.ascontiguousarray(obj)), obj.dtype.str, obj.shape)
        red = record_reducer(cls)
        return NotImplemented if red is None else red(obj)


def _dumps(obj: Any) -> tuple[bytes, list[memoryview]]:
    f = io.BytesIO()
    buffers: list[pickle.PickleBuffer] = []
    _Pickler(f, protocol=5, buffer_callback=buffers.append).dump(obj)
    return f.getvalue(), [b.raw() for b in buffers]


class _Arena:
    """The slot an item is being made in (in the child), as the reader fills it."""

    __slots__ = ("slot", "mm", "used", "base")

    def __init__(self, slot: int, mm: mmap.mmap) -> None:
        self.slot, self.mm, self.used = slot, mm, 0
        self.base = _address(memoryview(mm))

    def take(self, n: int) -> memoryview | None:
        if _aligned(self.used + n) > len(self.mm) // 2:  # half the slot left for the item's other arrays
            return None
        view = memoryview(self.mm)[self.used:self.used + n]
        self.used = _aligned(self.used + n)
        return view


_ARENA: _Arena | None = None  # set in the child while an item is made


def shared_buffer(n: int) -> memoryview | None:
    """``n`` writable bytes of the shared memory the item being made goes to, when called in
    a child reading ahead (:class:`ForkAhead`) while it makes an item; else None. An array
    of the item that views them is handed over without a copy."""
    return None if _ARENA is None else _ARENA.take(n)


def _address(buffer: Any) -> int:
    """Where a buffer's first byte is in this process's memory."""
    return int(np.frombuffer(buffer, dtype=np.uint8).ctypes.data) if len(buffer) else 0


def _unexported(mm: mmap.mmap) -> bool:
    """Whether this process holds no view of slot ``mm`` (see the module)."""
    try:
        mm.resize(len(mm))
    except BufferError:
        return False
    return True


def _exports_seen() -> bool:
    """Whether :func:`_unexported` can tell here: a mapping's resize refused while a view of
    it exists and allowed after (else the reader never reads into a slot, and a slot only
    ever holds copies, which the child does not view)."""
    fd = os.memfd_create("qoe-read-ahead-probe", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, mmap.PAGESIZE)
        mm = mmap.mmap(fd, mmap.PAGESIZE)
        view = memoryview(mm)
        refused = not _unexported(mm)
        view.release()
        return refused and _unexported(mm)
    except (OSError, ValueError, SystemError):
        return False
    finally:
        os.close(fd)


class ForkAhead(Iterator[T], Generic[T]):
    """The items of ``source``, made in a forked child process up to ``depth`` ahead.

    Like :class:`~qoe.capture._readahead.ReadAhead` (same order, an exception raised at the
    item where it occurred, warnings issued here when their item is taken, :meth:`close`),
    with the items' arrays in shared memory (see the module). Create it only when
    :func:`fork_available`.
    """

    def __init__(self, source: Iterator[Any], depth: int, then: Callable[[Any], T] | None = None) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        _ignored = np.empty(SLOT_BYTES, dtype=np.uint8)  # see below
        for f in (sys.stdout, sys.stderr):  # nothing buffered is written twice
            try:
                f.flush()
            except (AttributeError, ValueError, OSError):
                pass
        with warnings.catch_warnings():
            # Python 3.12+ warns of a fork in a process with more than one OS thread, which
            # NumPy's BLAS pool makes every process; the child runs only the source (no
            # BLAS), and fork_available() has made sure no other Python thread holds a lock
            warnings.filterwarnings("ignore", message=r".*fork\(\) may lead to deadlocks", category=DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: make items until told to stop
            code = 0
            try:
                mine.close()
                del _ignored  # (as in the parent, below)
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                _child(source, theirs, depth, then)
            except BaseException:  # noqa: BLE001 - the parent sees the socket close early
                code = 1
            finally:
                os._exit(code)
        theirs.close()
        # glibc's malloc gives a block above its mmap threshold (128 KiB at first) fresh
        # pages, faulted in one by one at each use, and raises the threshold to the size of
        # such a block when it is freed (mallopt(3), M_MMAP_THRESHOLD). Reading here would
        # have freed chunks of the capture and raised it; the parent now frees none, so it
        # frees one block of a chunk's size: on 1.4 M RTP packets its page faults went from
        # 136,700 to 12,900 and its CPU time from 0.71 to 0.57 s (no effect elsewhere).
        del _ignored
        self._pid = pid
        self._owner = os.getpid()  # a copy of this object in another fork's child does nothing
        self._sock = mine
        self._slots: dict[int, np.ndarray] = {}
        self._done = False
        self._then = then
        self._send(bytes([_MORE]) * depth)

    def _send(self, token: bytes) -> None:
        if self._done or os.getpid() != self._owner:
            return
        try:
            self._sock.sendall(token)
        except OSError:  # the child has gone: the next read says why
            pass

    def _free(self, slot: int) -> None:  # a slot's last view is gone (weakref.finalize)
        self._send(bytes([slot]))

    def _read(self, n: int) -> bytearray:
        buf = bytearray(n)
        view, at = memoryview(buf), 0
        while at < n:
            try:
                got = self._sock.recv_into(view[at:])
            except OSError:  # reset: the child has gone
                got = 0
            if not got:
                raise self._died()
            at += got
        return buf

    def _died(self) -> CaptureError:
        self._finish(kill=False)
        status = self._status
        how = (f"was killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
               else f"exited with status {os.waitstatus_to_exitcode(status)}")
        return CaptureError(f"the process reading the capture ahead {how} before its end (out of memory?)")

    def __iter__(self) -> ForkAhead[T]:
        return self

    def __next__(self) -> T:
        if self._done:
            raise StopIteration
        try:
            first, fds, _, _ = socket.recv_fds(self._sock, 1, 1)
        except OSError:  # reset: the child has gone with tokens unread
            first, fds = b"", []
        if not first:
            raise self._died()
        try:
            (n,) = _LEN.unpack(first + self._read(_LEN.size - 1))
            message = pickle.loads(self._read(n))
            for fd in fds:  # a slot new to this process, the item's (numbered by the child)
                self._slots[message[1]] = np.frombuffer(mmap.mmap(fd, os.fstat(fd).st_size), dtype=np.uint8)
        finally:
            for fd in fds:
                os.close(fd)
        for w in message[-1]:
            warnings.warn_explicit(*w)
        if message[0] == "item":
            _, slot, places, meta, finished, _ = message
            base = self._slots[slot][:]  # its own view object: the slot is free when it goes
            weakref.finalize(base, self._free, slot).atexit = False
            view = memoryview(base)
            buffers = [view[at:at + size] for at, size in places]
            del view, base
            self._send(bytes([_MORE]))
            item = pickle.loads(meta, buffers=buffers)
            return item if finished or self._then is None else self._then(item)
        self._finish(kill=False)
        if message[0] == "error":
            raise message[1]
        raise StopIteration

    def _finish(self, *, kill: bool) -> None:
        if self._done or os.getpid() != self._owner:
            return
        self._done = True
        self._sock.close()  # the child, waiting for a token, ends
        if kill:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, self._status = os.waitpid(self._pid, 0)

    def close(self) -> None:
        """Stop the child process and drop what it read ahead."""
        self._finish(kill=True)

    def __del__(self) -> None:
        if hasattr(self, "_owner"):
            self.close()


def _portable(error: BaseException) -> BaseException:
    """``error`` as the parent will raise it: with the child's traceback as a note, or (an
    exception that does not pickle) a :class:`CaptureError` with its text."""
    where = "".join(traceback.format_exception(error))
    try:
        if hasattr(error, "add_note"):  # Python 3.11+
            error.add_note(f"(raised in the process reading ahead)\n{where}")
        pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001 - its text, then
        return CaptureError(f"{type(error).__name__} in the process reading ahead: {error}\n{where}")
    return error


def _child(source: Iterator[Any], sock: socket.socket, depth: int, then: Callable[[Any], Any] | None) -> None:
    """The child's loop: an item for each :data:`_MORE` token, into a free slot; ``then``
    applied to it when the parent holds an item it has not taken (see the module)."""
    global _ARENA
    slots: list[mmap.mmap] = []
    free: set[int] = set()
    unsent: dict[int, int] = {}  # slots the parent has not mapped yet -> their descriptors
    wanted = 0
    arenas = _exports_seen()  # the reader may read into slots

    def new_slot(size: int) -> int:
        fd = os.memfd_create("qoe-read-ahead", os.MFD_CLOEXEC)
        os.ftruncate(fd, size)
        slots.append(mmap.mmap(fd, size))
        unsent[len(slots) - 1] = fd
        return len(slots) - 1

    def take(block: bool) -> bool:  # read tokens; False: the parent has gone
        nonlocal wanted
        try:
            data = sock.recv(256, 0 if block else socket.MSG_DONTWAIT)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not data:
            return False
        for t in data:
            if t == _MORE:
                wanted += 1
            else:
                free.add(t)
        return True

    def send(message: tuple[Any, ...], fd: int | None = None) -> None:
        data = pickle.dumps(message, protocol=5)
        data = _LEN.pack(len(data)) + data
        if fd is None:
            sock.sendall(data)
        else:  # the descriptor goes with the first byte
            socket.send_fds(sock, [data[:1]], [fd])
            sock.sendall(data[1:])

    while True:
        while wanted == 0:
            if not take(block=True):
                return
        wanted -= 1
        if not take(block=False):
            return
        # the slot the reader may read into: the smallest free one (the parent gave it back)
        # of which the child holds no view either, else a new one while there are fewer
        # than _ARENA_SLOTS (the parent gives a slot back a moment after it asks for more)
        ready = sorted((k for k in free if _unexported(slots[k])), key=lambda k: len(slots[k])) if arenas else []
        if arenas and not ready and len(slots) < _ARENA_SLOTS:
            ready = [new_slot(SLOT_BYTES)]
            free.add(ready[0])
        _ARENA = _Arena(ready[0], slots[ready[0]]) if ready else None
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                item = next(source)
                # with depth 1 the parent never holds one: then is applied here, as by a thread
                finished = then is None or depth == 1 or (take(block=False) and wanted < depth - 1)
                meta, buffers = _dumps(then(item) if then is not None and finished else item)
                item = None
                kind = "item"
            except StopIteration:
                kind = "end"
            except BaseException as exc:  # noqa: BLE001 - raised in the parent
                kind, error = "error", exc
            finally:
                arena, _ARENA = _ARENA, None
        said = [(str(w.message), w.category, w.filename, w.lineno) for w in seen]
        if kind == "end":
            send(("end", said))
            return
        if kind == "error":
            send(("error", _portable(error), said))
            return
        if not take(block=False):
            return
        sizes = [b.nbytes for b in buffers]
        places: list[tuple[int, int] | None] = [None] * len(buffers)
        if arena is not None and arena.used:  # arrays read into the arena stay where they are
            for i, b in enumerate(buffers):
                at = _address(b) - arena.base
                if 0 <= at and at + sizes[i] <= arena.used:
                    places[i] = (at, sizes[i])
            need = arena.used + sum(_aligned(sizes[i]) for i, p in enumerate(places) if p is None)
            if need > len(arena.mm):
                places = [None] * len(buffers)  # it does not fit there: copied whole elsewhere
        if any(p is not None for p in places):
            slot, at = arena.slot, arena.used  # type: ignore[union-attr]
            free.discard(slot)
        else:
            need = sum(_aligned(s) for s in sizes)
            fits = [k for k in free if len(slots[k]) >= need and (arena is None or k != arena.slot or not arena.used)
                    and (not arenas or _unexported(slots[k]))]
            slot, at = (min(fits, key=lambda k: len(slots[k])), 0) if fits else (-1, 0)
            if fits:
                free.discard(slot)
        if slot < 0:
            if len(slots) >= _MORE:  # slot numbers are bytes below _MORE
                send(("error", CaptureError(f"read_ahead(process=True): the reader holds views of all {len(slots)} "
                                            "items in shared memory; take copies of the arrays it keeps"), said))
                return
            slot = new_slot(max(SLOT_BYTES, -(-need // _SLOT_STEP) * _SLOT_STEP))
        whole = slots[slot]
        for i, b in enumerate(buffers):
            if places[i] is None:
                whole[at:at + sizes[i]] = b
                places[i] = (at, sizes[i])
                at += _aligned(sizes[i])
        buffers = b = arena = None  # no view of the item's arrays kept here
        new = unsent.pop(slot, None)  # the slot's descriptor goes with its first item
        send(("item", slot, places, meta, finished, said), new)
        if new is not None:
            os.close(new)
