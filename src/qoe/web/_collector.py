"""The cyclic garbage collector's young generation, relaxed while a streaming pass works.

A pass over a capture makes about ten container objects per packet (segment rows, sent
records, transactions), nearly all freed by reference counting a chunk later. CPython's
collector looks at the young generation every 700 net allocations (``gc.get_threshold()[0]``,
its default), so it traverses each chunk's live rows many times over: 15 % of the CPU time of
``iter_page_loads`` on ``benchmarks/web.py``. With a larger young generation most of them are
freed before it looks. Cyclic garbage is still collected (memory stays bounded: at most
:data:`YOUNG` more container objects wait), and the caller's own threshold is back whenever
its code runs: around each item given.

References
----------
.. [1] Python documentation, ``gc.set_threshold`` and the design of CPython's garbage
   collector (generations, thresholds), Python 3.11.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")

__all__ = ["YOUNG", "relaxed"]

#: Young-generation threshold while a pass works: 20,000 allocations (default 700). Measured
#: on ``benchmarks/web.py --short``: 5,000 to 100,000 give the same gain, peak RSS unchanged.
YOUNG = 20_000


def relaxed(items: Iterator[T]) -> Iterator[T]:
    """``items``, each produced with the young generation's threshold at :data:`YOUNG` (the
    caller's threshold restored before each item is given, and at the end or on an error)."""
    while True:
        old = gc.get_threshold()
        gc.set_threshold(max(YOUNG, old[0]), *old[1:])
        try:
            item = next(items, _END)
        finally:
            gc.set_threshold(*old)
        if item is _END:
            return
        yield item  # type: ignore[misc]


_END = object()
