"""read_ahead(process=True): the items made in a forked child process, their arrays handed
over in shared memory.

A process forks its reader only while it runs no other Python thread (fork_available), and
a test session may have threads left by earlier tests (a progress bar's monitor, a Dask
client), so each case runs in a fresh interpreter and asserts there; the test checks that
it exited cleanly and printed what it found.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from fresh_python import run_fresh  # tests/fresh_python.py

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
    return run_fresh(code, *args, prelude=_PRELUDE)


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


def test_batches_read_into_reused_shared_memory_are_the_same(cap, write):
    """The child reads each chunk of a plain file straight into the shared memory its batch
    is handed over in, and reads into a slot again only once the parent has let go of it and
    the child holds no view of it: a batch of datagrams from two chunks leaves the rest of
    the second one waiting for the next batch (payloads of over half a chunk are not copied
    out of it), in a slot the parent may already have given back. Batches taken one at a
    time and dropped (the parent pausing after each, so that the child finds slots given
    back) equal those read in this process, payloads included. (Reusing such a slot while
    the child still held the rest of a chunk in it gave other payloads.)"""
    frames = [cap.eth(cap.ipv4(f"10.0.{i % 5}.{i % 7}", "10.0.1.1", 17, cap.udp(i, 2, bytes([i % 251]) * (600 + i % 700))))
              for i in range(3000)]
    path = write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)]))
    out = _run('''
        import hashlib, time
        path = sys.argv[1]

        def digest(b):
            h = hashlib.sha256()
            for name in ("index", "ts_ns", "src", "dst", "sport", "dport", "lengths", "wire_len"):
                h.update(np.ascontiguousarray(getattr(b, name)).tobytes())
            for i in range(len(b)):
                h.update(b.payload_of(i))
            return h.hexdigest()

        for batch_size, chunk_size in ((100, 65536), (None, 65536), (37, 1 << 20)):
            plain = [digest(b) for b in read_udp_batches(path, batch_size=batch_size, chunk_size=chunk_size)]
            it = read_ahead(read_udp_batches(path, batch_size=batch_size, chunk_size=chunk_size), 2, process=True)
            ahead = []
            for b in it:
                ahead.append(digest(b))
                del b
                time.sleep(0.003)
            assert ahead == plain, (batch_size, chunk_size)
            print(len(plain))
    ''', path)
    assert [int(x) for x in out.split()] == [30, 46, 82]  # batches of each pass


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


ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


@pytest.mark.parametrize("name", ["web/captures/http11-down-b8-curl-dns_client.pcap", "web/browser/captures/h3-idle.pcap",
                                  "web/tls/quic-h3.pcapng", "video/has/sessions/dash-ample.pcap.gz"])
def test_tcp_segment_rows_read_in_a_child_are_the_same(name):
    """tcp_segment_rows(read_ahead=True): the headers decoded in a child, the rows built
    here: the same rows, and the same UDP batches handed to ``udp`` at the same points."""
    out = _run('''
        import resource
        from qoe.capture import tcp_segment_rows
        path = sys.argv[1]
        log_a, log_b = [], []
        def seen(log):  # the UDP batches, each with the number of rows taken before it
            return lambda b: log.append((len(rows_now), b.index.tolist(), b.ts_ns.tolist(),
                                         [b.addresses[s] for s in b.src], [b.payload_of(i) for i in range(len(b))]))
        rows_now = []
        plain = []
        for r in tcp_segment_rows(path, udp=seen(log_a), chunk_size=65536):
            plain.append(r); rows_now.append(r)
        rows_now = []
        ahead = []
        for r in tcp_segment_rows(path, udp=seen(log_b), chunk_size=65536, read_ahead=True):
            ahead.append(r); rows_now.append(r)
        assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss > 0  # a child read it
        assert ahead == plain and log_b == log_a
        print(len(plain), len(log_a))
    ''', os.path.join(ROOT, "data", name))
    rows, batches = map(int, out.split())
    assert rows > 100 or "h3" in name  # (HTTP/3 captures: QUIC, UDP only)
    assert batches > 0 or "dash" in name  # (the DASH session: TCP only)


def test_random_mixtures_of_segments_read_in_a_child(cap, write):
    """IPv4 and IPv6, options in and out of the columns' layouts, cut frames, fragments."""
    from capture.test_capture_tcp_segments import _tcp_frames  # tests/capture's generator

    frames = _tcp_frames(cap, np.random.default_rng(5), 800)
    path = write(cap.pcap([(cap.T0 + i // 1000, i % 1000, f) for i, f in enumerate(frames)]))
    out = _run('''
        from qoe.capture import tcp_segment_rows
        plain = list(tcp_segment_rows(sys.argv[1], chunk_size=4096))
        ahead = list(tcp_segment_rows(sys.argv[1], chunk_size=4096, read_ahead=True))
        assert ahead == plain
        print(len(plain), sum(r[2].count(":") > 1 for r in plain))
    ''', path)
    rows, v6 = map(int, out.split())
    assert rows > 300 and v6 > 0


def test_a_file_object_is_read_ahead_in_a_thread_not_a_child():
    """A child process would move the file offset it shares with the caller's file object:
    tcp_segment_rows(file, read_ahead=True) reads it in a thread, and the file object reads
    on afterwards."""
    out = _run('''
        import resource
        from qoe.capture import tcp_segment_rows
        plain = list(tcp_segment_rows(sys.argv[1]))
        with open(sys.argv[1], "rb") as f:
            ahead = list(tcp_segment_rows(f, read_ahead=True))
            f.seek(0)
            again = list(tcp_segment_rows(f))
        assert ahead == plain == again
        print(len(plain), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss == 0)
    ''', os.path.join(ROOT, "data", "web", "captures", "http11-down-b8-curl-dns_client.pcap"))
    assert out.split()[1] == "True" and int(out.split()[0]) > 100


def test_then_runs_in_the_process_that_would_otherwise_wait():
    """read_ahead(then=f): f(item) is given instead of each item, made in the child while the
    caller still holds an item it has not taken, else by the caller as it takes the item."""
    out = _run('''
        import time
        me = os.getpid()

        def then(x):
            if x == 13:
                raise ValueError("item 13")
            return x * x, os.getpid()

        def made(n, pause=0.0):
            for i in range(n):
                time.sleep(pause)
                yield i

        def where(results):
            return sorted({"caller" if pid == me else "child" for _, pid in results})

        # a slow source: the caller has taken every item when the next is made
        got = list(read_ahead(made(12, 0.03), 2, process=True, then=then))
        assert [x for x, _ in got] == [i * i for i in range(12)]
        print("slow source:", where(got))
        # a slow caller: the child is ahead, the caller holds an item it has not taken
        got = []
        for r in read_ahead(made(12), 2, process=True, then=then):
            time.sleep(0.03)
            got.append(r)
        assert [x for x, _ in got] == [i * i for i in range(12)]
        print("slow caller:", where(got[3:]))  # (the first items are made before the caller holds any)
        # depth 1: the caller never holds one ahead; then runs in the child, as in a thread
        got = list(read_ahead(made(12, 0.01), 1, process=True, then=then))
        print("depth 1:", where(got))
        thread = list(read_ahead(made(12), 2, then=then))
        assert [x for x, _ in thread] == [i * i for i in range(12)] and where(thread) == ["caller"]
        # an error of then comes at its item, on either side
        for pause_source, pause_caller in ((0.02, 0.0), (0.0, 0.02)):
            seen = []
            try:
                for x, _ in read_ahead(made(20, pause_source), 2, process=True, then=then):
                    time.sleep(pause_caller)
                    seen.append(x)
                raise AssertionError("no error")
            except ValueError as e:
                print("error after", len(seen), str(e))
        assert children() == set()
    ''')
    assert out.splitlines() == ["slow source: ['caller']", "slow caller: ['child']", "depth 1: ['child']",
                                "error after 13 item 13", "error after 13 item 13"]


def test_read_ahead_pays_only_for_a_capture_of_8_mib_or_more(tmp_path):
    """``read_ahead=None`` reads ahead only with a second core and a capture of at least
    READ_AHEAD_MIN_BYTES: below it the child process costs more wall time than it saves
    (measured: the constant's comment). A file object counts from its position; a pipe, whose
    length cannot be told, counts as large; a path that cannot be read, as small."""
    from qoe.capture import READ_AHEAD_MIN_BYTES, read_ahead_pays, usable_cores

    assert READ_AHEAD_MIN_BYTES == 8 << 20
    two = usable_cores() > 1
    small, big = tmp_path / "small.pcap", tmp_path / "big.pcap"
    small.write_bytes(b"\0" * 1000)
    with big.open("wb") as f:
        f.truncate(READ_AHEAD_MIN_BYTES)  # sparse: its size without the disk
    assert read_ahead_pays(small) is False
    assert read_ahead_pays(str(big)) is two
    assert read_ahead_pays(tmp_path / "missing.pcap") is False
    with big.open("rb") as f:
        assert read_ahead_pays(f) is two
        f.seek(1)  # one byte less from here
        assert read_ahead_pays(f) is False
    r, w = os.pipe()
    with os.fdopen(r, "rb") as pipe, os.fdopen(w, "wb"):
        assert read_ahead_pays(pipe) is two


def test_the_automatic_choice_forks_no_reader_for_a_small_capture(cap, write):
    """``read_ahead=None`` on a capture under 8 MiB reads it in this process: the page-load
    pass and the RTP scan fork no child (they do with ``read_ahead=True``), and on one of
    8 MiB or more they do when there is a second core."""
    small = write(cap.pcap([(cap.T0, i, cap.eth(cap.ipv4("10.0.0.1", "10.0.1.1", 17, cap.udp(5004, 5004, b"x" * 200))))
                            for i in range(50)]))
    out = _run('''
        import qoe.rtp, qoe.web
        from qoe.capture import usable_cores
        forks = []
        real = os.fork
        def counted():
            forks.append(1)
            return real()
        os.fork = counted

        def count(run):
            del forks[:]
            run()
            return len(forks)

        def pages(path, how):
            return list(qoe.web.iter_page_loads(path, options=qoe.web.WebOptions(read_ahead=how)))

        small, big = sys.argv[1], sys.argv[2]
        frame = bytes.fromhex(sys.argv[3])
        with open(small, "rb") as f:
            head = f.read(24)
        with open(big, "wb") as f:  # a capture of over 8 MiB: the small one's datagram, repeated
            f.write(head)
            rec = (1).to_bytes(4, "little") * 2 + len(frame).to_bytes(4, "little") * 2 + frame
            f.write(rec * ((8 << 20) // len(rec) + 1))
        two = usable_cores() > 1
        for path, expect in ((small, 0), (big, int(two))):
            assert count(lambda: pages(path, None)) == expect, path
            assert count(lambda: qoe.rtp.scan_capture(path, read_ahead=None)) == expect, path
        assert count(lambda: pages(small, True)) == 1
        assert count(lambda: qoe.rtp.scan_capture(small, read_ahead=True)) == 1
        print("ok", two)
    ''', small, small.with_name("big.pcap"), cap.eth(cap.ipv4("10.0.0.1", "10.0.1.1", 17, cap.udp(5004, 5004, b"x" * 200))).hex())
    assert out.split()[0] == "ok"


def test_records_handed_over_by_a_child_are_the_same_records():
    """Frozen result records (a real capture's TCP connections: dataclasses with slots, nested
    records, NumPy arrays, tuples of events) come back from the child equal, of their class and
    still frozen; a record whose class has ``__post_init__`` is not made again through it."""
    data = os.path.join(ROOT, "data", "web", "browser", "captures", "h1-up-b256.pcap")
    out = _run('''
        import dataclasses
        from qoe.report import to_json
        from qoe.web.tcp import connections

        calls = []

        @dataclasses.dataclass(frozen=True)
        class Checked:
            x: int

            def __post_init__(self):
                calls.append(self.x)

        conns = connections(sys.argv[1])
        items = [conns[:2], conns[2:], [Checked(7)]]
        back = list(read_ahead(iter(items), process=True))
        got = [c for batch in back[:2] for c in batch]
        assert to_json(got) == to_json(conns) and [type(c) for c in got] == [type(c) for c in conns]
        c = got[0]
        assert c.client.rtt.ts_ns.dtype == conns[0].client.rtt.ts_ns.dtype
        assert (c.client.rtt.ts_ns == conns[0].client.rtt.ts_ns).all() and c.retransmission_events == conns[0].retransmission_events
        try:
            c.packets = 0
        except dataclasses.FrozenInstanceError:
            pass
        else:
            raise AssertionError("a record came back mutable")
        assert back[2] == [Checked(7)] and calls == [7, 7]  # made here twice (above), never by the handing over
        print(len(got), sum(len(x.retransmission_events) for x in got))
    ''', data)
    n, events = map(int, out.split())
    assert n >= 10 and events >= 50
