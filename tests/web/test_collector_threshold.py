"""The streaming passes relax the garbage collector's young generation only while they work.

``qoe.web.iter_page_loads`` and ``qoe.web.tcp.iter_connections`` make about ten container
objects per packet, nearly all freed a chunk later; CPython's default young-generation
threshold (700 allocations) made the collector traverse them many times over (15 % of the CPU
time of ``benchmarks/web.py --short``, measured with ``gc.callbacks``: 0.24 s of 1.43 s). While
a pass works its threshold is at least 20,000; whenever the caller's code runs (each item
given, the end, a close, an error) the caller's own threshold is in force: the same value, or
counted from that moment (its first young collection after as many of its own allocations).
What is observed here: the threshold a sink sees from inside the pass (``sinks=`` is public),
the threshold in the caller's loop body, and after the loop. The threshold is the process's:
a pass in a thread other than the main one leaves it alone.
"""

from __future__ import annotations

import gc
import os
import threading
import warnings

import pytest

from qoe.web import iter_page_loads
from qoe.web.tcp import connections, iter_connections

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CAPTURE = os.path.join(ROOT, "data", "web", "captures", "http10-idle-b64-wget_client.pcap")
YOUNG_MAX = 20_000 + 1_000  # young objects a pass may leave: its threshold, and a few made after


class _Seen:
    """A ByteSink that records the collector's threshold when bytes reach it (inside the pass)."""

    def __init__(self, log: list) -> None:
        self.log = log

    def data(self, direction: int, ts_ns: int, offset: int, payload: bytes) -> None:
        self.log.append(gc.get_threshold())

    def gap(self, direction: int, ts_ns: int, offset: int, length: int) -> None:
        pass

    def close(self, direction: int, ts_ns: int, how: str) -> None:
        pass


def test_the_pass_works_with_a_relaxed_young_generation(caller_threshold):
    inside: list = []
    found = connections(CAPTURE, sinks=lambda cid: _Seen(inside))
    assert found and inside
    assert all(t[0] >= 20_000 and t[1:] == caller_threshold[1:] for t in inside), sorted(set(inside))[:3]
    assert gc.get_threshold() == caller_threshold  # the caller's, exactly, after the pass


def test_the_callers_threshold_is_in_force_in_its_loop_and_after(caller_threshold):
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for page in iter_page_loads(CAPTURE):
            seen.append(gc.get_threshold())
    assert seen
    # counted from the moment the page was given: the caller's own plus the young objects the
    # pass left (at most its 20,000 and the few made before the collector looked), never the
    # pass's relaxed threshold on top of them
    assert all(t[1:] == caller_threshold[1:] and caller_threshold[0] <= t[0] <= caller_threshold[0] + YOUNG_MAX for t in seen), seen
    assert gc.get_threshold() == caller_threshold


def test_a_pass_closed_early_gives_back_the_callers_threshold(caller_threshold):
    it = iter_connections(CAPTURE)
    next(it)
    it.close()
    assert gc.get_threshold() == caller_threshold


def test_a_threshold_set_in_the_loop_is_kept(caller_threshold):
    mine = (1234, 5, 6)
    for i, _ in enumerate(iter_connections(CAPTURE)):
        if i == 0:
            gc.set_threshold(*mine)
    assert gc.get_threshold() == mine


def test_automatic_collection_left_off_stays_off(caller_threshold):
    gc.set_threshold(0, 10, 10)  # threshold 0: automatic collection off (gc.set_threshold)
    inside: list = []
    connections(CAPTURE, sinks=lambda cid: _Seen(inside))
    assert inside and all(t[0] == 0 for t in inside)
    assert gc.get_threshold() == (0, 10, 10)


def test_a_threshold_set_after_the_last_item_stays_when_the_pass_is_dropped(caller_threshold):
    mine = (4321, 7, 8)
    it = iter_connections(CAPTURE)
    next(it)
    gc.set_threshold(*mine)
    del it  # closed by its finalizer: the caller's later threshold is not overwritten
    assert gc.get_threshold() == mine


def test_a_pass_in_another_thread_leaves_the_threshold_alone(caller_threshold):
    inside: list = []
    done: list = []
    t = threading.Thread(target=lambda: done.append(connections(CAPTURE, sinks=lambda cid: _Seen(inside))))
    t.start()
    t.join()
    assert done and inside and all(x == caller_threshold for x in inside)
    assert gc.get_threshold() == caller_threshold
