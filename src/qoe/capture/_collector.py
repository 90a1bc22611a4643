"""The cyclic garbage collector's young generation, relaxed while a pass over a capture works.

A pass over a capture makes many container objects per chunk, nearly all freed by
reference counting a chunk later: about ten per packet in TCP reassembly (segment rows,
sent records, transactions), and in the RTP scan the flows' keys and, as streams end,
their records. CPython's collector looks at the young generation every 700 net
allocations (``gc.get_threshold()[0]``, its default), so it traverses each chunk's live
objects many times over: 0.24 s of the 1.43 s of CPU of ``qoe.web.iter_page_loads`` on
``benchmarks/web.py --short`` (timed with ``gc.callbacks``: 224 young, 21 middle and 2 full
collections; 0.01 s with :data:`YOUNG`), and ``qoe streams`` took 1.14 s instead of 1.07 s
on the 2,000 concurrent calls of ``benchmarks/rtp_many_streams.py`` (2.11 s instead of 2.02 s
on its 20,000 short streams). With a larger young generation most of them are freed before
it looks. Cyclic garbage is still collected (memory stays bounded: at most :data:`YOUNG`
more container objects wait), and the caller's own threshold is in force whenever its code
runs: when an item is given, counted from then (were it set back as it was, the caller's
first allocation would make the collector traverse everything the pass left young at once,
each time: measured, no gain), and exactly as it was at the end.

:func:`relaxed_gc` wraps a pass that gives items (its work is done between them);
:func:`relaxed_gc_scope` a pass that runs whole inside one call.

References
----------
.. [1] Python documentation, ``gc.set_threshold`` and the design of CPython's garbage
   collector (generations, thresholds), Python 3.11.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")

__all__ = ["YOUNG", "relaxed_gc", "relaxed_gc_scope"]

#: Young-generation threshold while a pass works: 20,000 allocations (default 700). Measured
#: on ``benchmarks/web.py --short``: 5,000 to 100,000 give the same gain, peak RSS unchanged.
YOUNG = 20_000


def relaxed_gc(items: Iterator[T]) -> Iterator[T]:
    """``items``, each produced with the young generation's threshold at :data:`YOUNG`.

    When an item is given, the caller's threshold is back, counted from that moment (its
    first young collection comes after as many of its own allocations as its threshold
    says, not at once over the objects the pass left young); at the end, on an error or
    when the iterator is closed, the caller's threshold exactly. A threshold the caller sets
    while iterating is taken as its own (and left as it is at the end); a threshold of 0
    (automatic collection off) is left alone. In any thread but the main one, ``items`` as
    they are (the threshold is the process's, not the thread's).

    Parameters
    ----------
    items : iterator
        A pass over a capture that does its work between the items it gives (a generator).

    Yields
    ------
    object
        The items of ``items``, in order.

    References
    ----------
    Python documentation, ``gc.set_threshold``; the design of CPython's cyclic garbage
    collector (generations and thresholds), Python 3.11.
    """
    if threading.current_thread() is not threading.main_thread():
        # the threshold is the process's: passes in several threads (a Dask worker's) would
        # take each other's for the caller's, so only the main thread's pass relaxes it
        yield from items
        return
    caller = gc.get_threshold()
    ours = caller  # the threshold this pass set last
    try:
        while True:
            now = gc.get_threshold()
            if now != ours:
                caller = now  # the caller set its own meanwhile
            if caller[0]:
                ours = (max(YOUNG, caller[0]), *caller[1:])
                gc.set_threshold(*ours)
            item = next(items, _END)
            if item is _END:
                return
            if caller[0]:
                ours = (caller[0] + gc.get_count()[0], *caller[1:])
                gc.set_threshold(*ours)
            yield item  # type: ignore[misc]
    finally:
        if gc.get_threshold() == ours:  # (one the caller set last stays)
            gc.set_threshold(*caller)


_END = object()


@contextlib.contextmanager
def relaxed_gc_scope() -> Iterator[None]:
    """The young generation's threshold at :data:`YOUNG` inside a ``with`` block.

    For a pass that runs whole inside one call (no caller's code runs meanwhile:
    :func:`qoe.rtp.scan_capture`). At the end, on an error too, the caller's threshold
    exactly; one set inside the block is kept, a threshold of 0 is left alone, and in any
    thread but the main one nothing changes (as :func:`relaxed_gc`).

    Yields
    ------
    None

    Examples
    --------
    >>> import gc
    >>> before = gc.get_threshold()
    >>> with relaxed_gc_scope():
    ...     inside = gc.get_threshold()
    >>> inside[0] >= YOUNG or before[0] == 0, gc.get_threshold() == before
    (True, True)
    """
    caller = gc.get_threshold()
    if threading.current_thread() is not threading.main_thread() or not caller[0]:
        yield
        return
    ours = (max(YOUNG, caller[0]), *caller[1:])
    gc.set_threshold(*ours)
    try:
        yield
    finally:
        if gc.get_threshold() == ours:
            gc.set_threshold(*caller)
