"""Memory of the streaming page-load path is bounded per page load, not per capture (issue 10).

The captures are sequential copies of a real client-side capture of three page loads
(``tests/big_capture.py``: each copy with its own client address), N and 4N copies. Pages are
consumed one at a time from :func:`qoe.web.iter_page_loads` and dropped; the memory that
tracemalloc counts while each page is handed over (what the pass holds between pages: the
connections, open pages and readers) is compared over the two passes. Had each page load's
TCP/HTTP state or result been kept to the end (about 15 kB per page load, as the path did
before it streamed), the 4N pass would hold some 3N x 3 x 15 kB = 2 MB more than the N pass.
"""

from __future__ import annotations

import tracemalloc
import warnings

from big_capture import write

from qoe.web import iter_page_loads, page_loads

N = 15  # copies (3 page loads each)
SLACK_BYTES = 1_000_000  # what the 4N pass may hold above the N pass


def _held(path) -> tuple[int, int]:
    """(pages, most bytes traced while a page was handed over) of one streaming pass."""
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            n = held = 0
            for _ in iter_page_loads(path):
                n += 1
                held = max(held, tracemalloc.get_traced_memory()[0])
        return n, held
    finally:
        tracemalloc.stop()


def test_streaming_page_loads_hold_memory_that_does_not_grow_with_the_capture(tmp_path):
    small, big = tmp_path / "n.pcap", tmp_path / "4n.pcap"
    write(small, "web", copies=N)
    write(big, "web", copies=4 * N)
    _held(small)  # warm up: imports and caches are not the pass's memory
    pages_small, held_small = _held(small)
    pages_big, held_big = _held(big)
    assert pages_small == 3 * N and pages_big == 12 * N
    assert held_big - held_small < SLACK_BYTES, (held_small, held_big)


def test_streaming_gives_the_same_pages_as_page_loads(tmp_path):
    path = tmp_path / "n.pcap"
    write(path, "web", copies=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        streamed = list(iter_page_loads(path))
        listed = page_loads(path)
    assert [p.index for p in streamed] == list(range(15))
    assert streamed == listed
