"""``read_ahead``: an iterator run a few items ahead of its reader, in a thread or a child process.

Reading and decoding a capture (file reads, NumPy gathers over the records) and what a
caller does with a batch (NumPy again) both spend most of their time outside the GIL, so
on a machine with two cores or more the next batch is ready when the caller asks for it.
"""

from __future__ import annotations

import io
import os
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar, overload

from qoe.capture._forkahead import ForkAhead, fork_available
from qoe.errors import InputError

T = TypeVar("T")
U = TypeVar("U")

# How long the reading thread waits for room in the queue before it looks again whether
# the reader has gone (s): the time a thread of an abandoned reader lives on.
_POLL_S = 0.05


#: The smallest capture that ``read_ahead=None`` reads ahead, in bytes (8 MiB). Below it the
#: child process costs more wall time than the overlap saves: ``qoe web pages`` and ``qoe
#: streams`` on the first 2, 4, 8, 16 and 32 MiB of ``benchmarks/web.py``'s and
#: ``benchmarks/rtp_many_streams.py``'s captures (2 vCPUs, 2026-11-27 19:40 UTC, wall s with /
#: without reading ahead, three runs each): web 0.16-0.17 / 0.15, 0.17-0.18 / 0.16-0.17,
#: 0.20 / 0.20-0.21, 0.26-0.27 / 0.27-0.28; RTP 0.16-0.17 / 0.16, 0.19 / 0.18, 0.22-0.23 /
#: 0.22-0.23, 0.27-0.28 / 0.28, 0.31-0.33 / 0.33-0.36.
READ_AHEAD_MIN_BYTES = 8 << 20


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the OS tells it
    (``os.sched_getaffinity``, Linux), else every core (``os.cpu_count``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def read_ahead_pays(source: Any, min_bytes: int = READ_AHEAD_MIN_BYTES) -> bool:
    """What ``read_ahead=None`` decides for a capture: read it ahead or not.

    True when this process may run on two cores or more (:func:`usable_cores`) and the
    capture holds at least ``min_bytes`` (its size on disk; for a file object, from its
    position to its end): a smaller one is read before a child process could overlap
    anything with it. A source whose size cannot be told (a pipe) counts as large; a path
    that cannot be read, as small (the reader says why).

    Parameters
    ----------
    source : str, os.PathLike or binary file object
        The capture, as the readers take it.
    min_bytes : int, optional
        The smallest capture that pays (default :data:`READ_AHEAD_MIN_BYTES`, for a child
        that reads; a child that does more pays sooner: ``qoe.web._ahead``,
        :func:`qoe.web.quic.quic_connections`).

    Returns
    -------
    bool
    """
    if usable_cores() < 2:
        return False
    if isinstance(source, (str, bytes, os.PathLike)):
        try:
            return os.stat(source).st_size >= min_bytes
        except OSError:
            return False
    try:
        if not source.seekable():
            return True  # a pipe: its length is unknown
        at = source.tell()
        end = source.seek(0, io.SEEK_END)
        source.seek(at)
    except (OSError, AttributeError, ValueError):
        return True
    return end - at >= min_bytes


@overload
def read_ahead(items: Iterable[T], depth: int = ..., *, process: bool = ..., then: None = ...) -> Iterator[T]: ...
@overload
def read_ahead(items: Iterable[T], depth: int = ..., *, process: bool = ..., then: Callable[[T], U]) -> Iterator[U]: ...
def read_ahead(items: Iterable[Any], depth: int = 1, *, process: bool = False,
               then: Callable[[Any], Any] | None = None) -> Iterator[Any]:
    """The items of ``items``, made by a background thread (or process) while the caller works.

    For the batches of a large capture (:func:`read_udp_batches`, :func:`tcp_segment_rows`,
    or a generator that reads and prepares them): file reads and NumPy release the GIL, so
    with two cores or more the next batch is read and decoded while the caller works on
    the one before. A thread still takes turns with the caller for the GIL, which costs
    most when the caller makes many short NumPy calls; ``process=True`` makes the items in
    a forked child process instead and hands their arrays over through shared memory, the
    caller's arrays being views of it (no copy).

    Parameters
    ----------
    items : iterable
        What to iterate over; its iterator is advanced only in the background thread
        (or child process).
    depth : int, optional
        Items made ahead at most (default 1): the thread asks for the next item only while
        fewer than ``depth`` are waiting or being made, so memory grows by ``depth`` items.
    process : bool, optional
        Make the items in a child process (default False): where ``os.fork`` and
        ``os.memfd_create`` exist (Linux) and this process runs no other Python thread
        (a fork copies only the calling thread), else in a thread as without it. The items
        must pickle: NumPy arrays of built-in dtypes in them are handed over in slots of
        shared memory (8 MiB at least, each mapped once; two in use at a time, more while
        the caller keeps views of older items), the rest is pickled through a socket. A
        source that reads a file object the caller also uses would share the file's offset
        with it across the processes: give such a source a path. Measured on the RTP scan
        of 1.4 M packets of 4,000 streams (``benchmarks/rtp_many_streams.py``'s captures,
        2 vCPUs, the scan alone): wall time 0.59-0.61 s in a process, 0.62-0.79 s in a
        thread, 0.77-0.84 s without.
    then : callable, optional
        A function of one item whose result is the item given instead (``then(item)``). It
        must be pure: its result may not depend on the process it runs in. In a thread it
        runs there; with ``process=True`` in whichever process would otherwise wait: the
        child while the caller has an item it has not taken yet (the caller is the slower
        one), else the caller, as it takes the item (the child is the slower one). With
        ``depth`` 1 the caller never holds an item ahead, and it runs in the child. For the
        RTP scan (:func:`qoe.rtp.scan_capture`) it sorts and parses each batch: on 4,000
        concurrent calls the child was the slower one by 0.17-0.23 s.

    Returns
    -------
    iterator
        The same items in the same order. An exception ``items`` raises is raised here, at
        the item where it occurred, after the items before it; warnings are issued from the
        thread when it meets them (from a child process: here, as the item they came
        with is taken). ``close()`` (also when the iterator is collected) stops the thread
        and closes the source there (or ends the child process).

    Raises
    ------
    InputError
        ``depth`` is not a positive integer.
    """
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise InputError(f"read_ahead: depth must be a positive integer, given {depth!r}")
    if process and fork_available():
        return ForkAhead(iter(items), depth, then)
    return ReadAhead(iter(items) if then is None else map(then, items), depth)


class ReadAhead(Iterator[T], Generic[T]):
    """The items of ``source``, taken from it by a background thread up to ``depth`` ahead.

    The thread asks ``source`` for an item only when fewer than ``depth`` items are
    waiting or being made: with ``depth`` 1, while the reader works on one item the next
    is made, and no more (memory: one item more than reading in the caller's thread).
    Items come in the order ``source`` gives them. An exception ``source`` raises is raised
    here, at the item where it occurred, once the items before it were taken. Warnings
    ``source`` issues are issued from the thread, when it gets there. :meth:`close` (also
    called when the iterator is collected) stops the thread and closes ``source`` there.
    """

    def __init__(self, source: Iterator[T], depth: int) -> None:
        self._queue: queue.Queue[tuple[str, object]] = queue.Queue()
        self._room = threading.Semaphore(depth)  # items the thread may make before the reader takes one
        self._stop = threading.Event()
        self._done = False
        self._thread = threading.Thread(target=self._run, args=(source,), name="qoe-read-ahead", daemon=True)
        self._thread.start()

    def _run(self, source: Iterator[T]) -> None:
        try:
            while self._wait_for_room():
                try:
                    item = next(source)
                except StopIteration:
                    self._queue.put(("end", None))
                    break
                self._queue.put(("item", item))
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, raised there
            self._queue.put(("error", exc))
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()

    def _wait_for_room(self) -> bool:
        """Wait until the thread may make another item; False if the reader closed the
        iterator first."""
        while not self._stop.is_set():
            if self._room.acquire(timeout=_POLL_S):
                return not self._stop.is_set()
        return False

    def __iter__(self) -> ReadAhead[T]:
        return self

    def __next__(self) -> T:
        if self._done:
            raise StopIteration
        kind, value = self._queue.get()
        if kind == "item":
            self._room.release()  # the next one may be made while the reader works on this
            return value  # type: ignore[return-value]
        self._done = True
        self._thread.join()
        if kind == "error":
            raise value  # type: ignore[misc]
        raise StopIteration

    def close(self) -> None:
        """Stop the thread (it closes ``source``) and drop what it read ahead."""
        if self._done:
            return
        self._done = True
        self._stop.set()
        self._thread.join()
        while True:  # what it read ahead
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break

    def __del__(self) -> None:
        self.close()
