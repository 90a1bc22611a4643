"""A capture without keys read ahead (``WebOptions(read_ahead=True)``): its connections split
between two processes by flow bucket (``qoe.capture.flow_bucket``), reassembled (decrypted,
with a key log) and parsed in each, give the same pages, with the same connection numbers
and warnings, as one process.

Captures: every pcap of ``data/web/captures`` (wget and curl page loads over HTTP/1.0 and
1.1 with DNS, losses, bufferbloat, captures cut short) and Chromium's page loads over HTTP/1.1,
HTTPS without its key log, HTTP/2 and HTTP/3 beside them (``data/web/browser/captures``); and, for a pass whose
two processes meet over many chunks of the file (1 MiB each), 40 copies of a curl capture and
of a browser capture, each copy from its own client address (``tests/big_capture.py``).
Run in fresh interpreters (``tests/fresh_python.py``), which assert that a child process
took part.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from fresh_python import run_fresh  # tests/fresh_python.py

import big_capture  # tests/big_capture.py

DATA = Path(__file__).resolve().parents[2] / "data" / "web"

LINUX_FORK = sys.platform.startswith("linux") and hasattr(os, "memfd_create")

COMPARE = '''
    import json, os, resource, sys, warnings
    from qoe.report import to_json
    from qoe.web import WebOptions, page_loads

    keylog = os.environ.get("KEYLOG") or None

    def run(path, ahead):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            pages = page_loads(path, options=WebOptions(read_ahead=ahead, keylog=keylog))
        return to_json([p.to_dict() for p in pages]), sorted(str(w.message) for w in seen), pages

    total = 0
    for k, path in enumerate(sys.argv[1:]):
        one, warned_one, pages = run(path, False)
        assert k or resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss == 0
        two, warned_two, _ = run(path, True)
        assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss > 0  # a child took part
        assert two == one, path
        assert warned_two == warned_one, (path, warned_one, warned_two)
        total += sum(len(p.transactions) for p in pages)
    print(len(sys.argv) - 1, total)
'''


@pytest.mark.skipif(not LINUX_FORK, reason="the split runs in a child process on Linux only")
def test_every_web_capture_gives_the_same_pages_split_between_two_processes():
    paths = sorted((DATA / "captures").glob("*.pcap")) + sorted((DATA / "browser" / "captures").glob("*.pcap"))
    out = run_fresh(COMPARE, *paths)
    n, transactions = map(int, out.split())
    assert n == len(paths) >= 60 and transactions > 300


@pytest.mark.skipif(not LINUX_FORK, reason="the split runs in a child process on Linux only")
@pytest.mark.parametrize("kind", ["web", "browser-h1"])
def test_many_chunks_give_the_same_pages_split_between_two_processes(tmp_path, kind):
    cap = tmp_path / f"{kind}.pcap"
    copies, size = big_capture.write(cap, kind, copies=40)
    assert size > 5 << 20  # five chunks of the reader at least
    out = run_fresh(COMPARE, cap)
    assert int(out.split()[1]) >= 40 * 3


@pytest.mark.skipif(not LINUX_FORK, reason="the split runs in a child process on Linux only")
def test_many_chunks_decrypted_with_the_key_log_give_the_same_pages(tmp_path):
    """With a key log each process decrypts its connections (TLS 1.3, HTTP/1.1 and HTTP/2
    inside, losses): 40 copies of Chromium's page keep their ClientHello randoms, so its key
    log opens every copy."""
    cap = tmp_path / "keyed.pcap"
    big_capture.write(cap, "browser-h1", copies=40)
    keylog = big_capture.SAMPLES["browser-h1"].with_suffix(".keylog")
    out = run_fresh(COMPARE, cap, env={**os.environ, "KEYLOG": str(keylog)})
    assert int(out.split()[1]) >= 40 * 35  # the HTTPS objects are seen too


@pytest.mark.skipif(not LINUX_FORK, reason="the split runs in a child process on Linux only")
def test_a_capture_cut_short_split_warns_once_and_gives_what_it_holds(tmp_path):
    """The child reads the file: its warning about the cut end reaches the caller once."""
    cap = tmp_path / "cut.pcap"
    big_capture.write(cap, "web", copies=12)
    data = cap.read_bytes()
    cap.write_bytes(data[: len(data) * 2 // 3 + 7])  # inside a record
    out = run_fresh(COMPARE + '''
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        page_loads(sys.argv[1], options=WebOptions(read_ahead=True))
    print(sum("capture ends inside packet record" in str(w.message) for w in seen))
    ''', cap)
    n, transactions, warned = map(int, out.split())
    assert warned == 1 and transactions >= 20


@pytest.mark.skipif(not LINUX_FORK, reason="the split runs in a child process on Linux only")
def test_a_pass_left_early_leaves_no_child_process(tmp_path):
    """The consumer takes two pages of a split pass and drops the iterator: the child that
    reads ahead is stopped and waited for, and a second pass runs as the first did."""
    cap = tmp_path / "web.pcap"
    big_capture.write(cap, "web", copies=40)
    out = run_fresh('''
        import sys
        from pathlib import Path
        from qoe.web import WebOptions, iter_page_loads

        def children():
            out = set()
            for task in Path("/proc/self/task").iterdir():
                out.update(int(x) for x in (task / "children").read_text().split())
            return out

        it = iter_page_loads(sys.argv[1], options=WebOptions(read_ahead=True))
        first = [next(it), next(it)]
        assert children()  # the child is working
        it.close()
        assert children() == set(), children()
        again = list(iter_page_loads(sys.argv[1], options=WebOptions(read_ahead=True)))
        assert [p.to_dict() for p in again[:2]] == [p.to_dict() for p in first]
        print(len(again), children() == set())
    ''', cap)
    n, none_left = out.split()
    assert int(n) >= 40 * 3 and none_left == "True"
