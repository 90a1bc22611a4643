"""read_ahead(process=True): the items made in a forked child process, their arrays handed
over in shared memory.

A process forks its reader only while it runs no other Python thread (fork_available), and
a test session may have threads left by earlier tests (a progress bar's monitor, a Dask
client), so each case runs in a fresh interpreter and asserts there; the test checks that
it exited cleanly and printed what it found.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not (sys.platform.startswith("linux") and hasattr(os, "memfd_create")),
                                reason="read_ahead(process=True) reads in a child process on Linux only")

_PRELUDE = '''
import os, signal, sys, threading, warnings
from pathlib import Path
import numpy as np
from qoe.capture import read_ahead, read_udp_batches
from qoe.errors import CaptureError, QoEWarning

def children():
    """This process's child processes (Linux /proc)."""
    out = set()
    for task in Path("/proc/self/task").iterdir():
        out.update(int(x) for x in (task / "children").read_text().split())
    return out

assert threading.active_count() == 1
'''


def _run(code: str, *args: object) -> str:
    """Run ``code`` after the prelude in a fresh interpreter; its stdout."""
    r = subprocess.run([sys.executable, "-c", _PRELUDE + textwrap.dedent(code), *map(str, args)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_the_same_batches_made_in_a_child_that_ends_with_them(cap, write):
    frames = [cap.eth(cap.ipv4(f"10.0.0.{i % 7}", "10.0.1.1", 17, cap.udp(i, 2, bytes([i % 251]) * (i % 40))))
              for i in range(500)]
    path = write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)]))
    out = _run('''
        path = sys.argv[1]
        plain = list(read_udp_batches(path, batch_size=64, chunk_size=4096))
        it = read_ahead(read_udp_batches(path, batch_size=64, chunk_size=4096), 2, process=True)
        first = next(it)
        assert len(children()) == 1  # the batches are made there
        got = [first, *it]
        assert children() == set()  # ended (and waited for) with the last batch
        assert len(got) == len(plain) == 8
        for a, b in zip(got, plain):
            for name in ("index", "ts_ns", "src", "dst", "sport", "dport", "starts", "lengths", "head", "wire_len"):
                x, y = getattr(a, name), getattr(b, name)
                assert np.array_equal(x, y) and x.dtype == y.dtype, name
                assert x.dtype is np.dtype(x.dtype.str), name  # NumPy's own dtype, not an unpickled copy
            assert a.addresses == b.addresses
            assert [a.payload_of(i) for i in range(len(a))] == [b.payload_of(i) for i in range(len(b))]
        it = read_ahead(read_udp_batches(path, batch_size=8, chunk_size=512), 2, process=True)
        next(it)
        assert len(children()) == 1
        it.close()  # stops the child and waits for it
        assert children() == set()
        try:
            next(it)
            raise AssertionError("a closed read_ahead gave an item")
        except StopIteration:
            pass
        print("batches", len(got))
    ''', path)
    assert out.split() == ["batches", "8"]


def test_large_plain_and_strided_items_and_a_killed_child():
    out = _run('''
        big = [np.arange(n, dtype=np.float64) for n in (3 << 20, 10, 1 << 21)]  # 24 MiB: above a slot's 8 MiB
        items = [(i, f"item {i}", a, {"kept": a[::2]}) for i, a in enumerate(big)]
        got = list(read_ahead(iter(items), process=True))
        assert [(i, s) for i, s, _, _ in got] == [(i, s) for i, s, _, _ in items]
        for (_, _, a, d), (_, _, b, e) in zip(got, items):
            assert np.array_equal(a, b) and np.array_equal(d["kept"], e["kept"])
            assert d["kept"].flags.c_contiguous  # a strided view comes as a contiguous copy (out of band)

        def endless():
            while True:
                yield np.zeros(4)

        it = read_ahead(endless(), process=True)
        next(it)
        (child,) = children()
        os.kill(child, signal.SIGKILL)
        try:
            for _ in range(10):
                next(it)
            raise AssertionError("no error after the child was killed")
        except CaptureError as e:
            print(e)
        assert children() == set()
    ''')
    assert "the process reading the capture ahead was killed by signal 9 before its end" in out


def test_errors_warnings_and_items_that_do_not_pickle_come_at_their_item(cap, write):
    f = [cap.eth(cap.ipv4("192.0.2.1", "198.51.100.2", 17, cap.udp(1, 2, bytes(20 + i)))) for i in range(3)]
    late = cap.shb() + cap.idb("<", 1) + b"".join(cap.epb("<", 0, i, x) for i, x in enumerate(f))
    late += cap.idb("<", 189) + cap.epb("<", 1, 0, b"\0" * 40)  # a USB interface: not read
    whole = cap.pcap([(cap.T0, i, x) for i, x in enumerate(f)])
    out = _run('''
        it = read_ahead(read_udp_batches(sys.argv[1], batch_size=1, chunk_size=64), process=True)
        assert [int(next(it).index[0]) for _ in range(3)] == [1, 2, 3]  # the batches before the error first
        try:
            next(it)
            raise AssertionError("no error")
        except CaptureError as e:
            print("error:", str(e).splitlines()[0])
        # a file cut short: its warning is issued here, with the batch before the cut
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            n = [int(i) for b in read_ahead(read_udp_batches(sys.argv[2], batch_size=2), process=True) for i in b.index]
        print("cut:", n, [str(w.message) for w in seen if issubclass(w.category, QoEWarning)])

        def items():
            yield 1
            yield lambda: 2  # a lambda does not pickle

        it = read_ahead(items(), process=True)
        assert next(it) == 1
        try:
            next(it)
            raise AssertionError("no error")
        except Exception as e:
            print("unpicklable:", type(e).__name__, "lambda" in str(e) or "pickle" in str(e))
        kept = []
        try:  # each item the reader keeps a view of holds its slot: past 255 the child says so
            for a in read_ahead((np.zeros(16) for _ in range(400)), process=True):
                kept.append(a)
        except CaptureError as e:
            print("kept:", len(kept), "holds views of all 255 items" in str(e))
    ''', write(late, "late.pcapng"), write(whole[:-7], "cut.pcap"))
    lines = out.splitlines()
    assert lines[0].startswith("error:") and "189 (USB_LINUX) on pcapng interface 1" in lines[0]
    assert lines[1].startswith("cut: [1, 2]") and "cut.pcap" in lines[1] and "record 3" in lines[1]
    assert lines[2].startswith("unpicklable:") and lines[2].endswith("True")
    assert lines[3] == "kept: 255 True"


def test_a_scan_reading_ahead_in_a_child_finds_the_same_streams():
    data = os.path.join(os.path.dirname(__file__), "..", "..", "data", "voice", "field", "dtmf.pcap")
    out = _run('''
        import resource
        from qoe.rtp import scan_capture
        plain = scan_capture(sys.argv[1], batch_size=64)
        assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss == 0  # no child process yet
        ahead = scan_capture(sys.argv[1], batch_size=64, read_ahead=True)
        assert [s.to_dict() for s in ahead.streams] == [s.to_dict() for s in plain.streams]
        # a child process read the capture, and was waited for
        print(len(plain.streams), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss > 0, children() == set())
    ''', data)
    assert out.split() == ["1", "True", "True"]
