"""The RTP scan relaxes the garbage collector's young generation only while it works.

As the web passes do (``tests/web/test_collector_threshold.py``): ``scan_capture`` runs
with a young-generation threshold of at least 20,000 and gives the caller's threshold back
exactly; ``iter_scan`` has it relaxed while it works and the caller's own in force in the
caller's loop. The threshold inside the scan is observed where the scan's own code issues a
warning: the reader's, for a capture cut short in its last record (read in this process,
``read_ahead=False``).
"""

from __future__ import annotations

import gc
import shutil
import warnings
from pathlib import Path

import pytest

from qoe.rtp import iter_scan, scan_capture

DATA = Path(__file__).resolve().parents[2] / "data" / "voice" / "captures"


@pytest.fixture
def cut_capture(tmp_path):
    """A real call's capture without the last 10 bytes of its last record."""
    path = tmp_path / "cut.pcap"
    shutil.copy(DATA / "down-b256_client.pcap", path)
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size - 10)
    return path


def _thresholds_at_warnings(run):
    """``run()`` with every warning shown through a hook that notes the threshold then."""
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda *a, **k: seen.append(gc.get_threshold())
        out = run()
    return seen, out


def test_scan_capture_works_with_a_relaxed_young_generation(caller_threshold, cut_capture):
    seen, scan = _thresholds_at_warnings(lambda: scan_capture(cut_capture, keep_packets=False))
    assert scan.streams and seen  # the streams of the call, and the reader's warning
    assert all(t[0] >= 20_000 and t[1:] == caller_threshold[1:] for t in seen), seen
    assert gc.get_threshold() == caller_threshold  # the caller's, exactly, after the scan


def test_iter_scan_relaxes_it_only_while_it_works(caller_threshold, cut_capture):
    in_loop = []

    def run():
        calls = 0
        for _streams, _sip in iter_scan(cut_capture, keep_packets=False):
            in_loop.append(gc.get_threshold())
            calls += 1
        return calls

    seen, calls = _thresholds_at_warnings(run)
    assert calls and seen and in_loop
    assert all(t[0] >= 20_000 and t[1:] == caller_threshold[1:] for t in seen), seen
    # counted from when the call was given: the caller's own plus what the scan left young
    assert all(t[1:] == caller_threshold[1:] and caller_threshold[0] <= t[0] < 20_000 for t in in_loop), in_loop
    assert gc.get_threshold() == caller_threshold


def test_a_threshold_of_zero_is_left_alone(cut_capture):
    old = gc.get_threshold()
    gc.set_threshold(0, 11, 12)
    try:
        seen, _ = _thresholds_at_warnings(lambda: scan_capture(cut_capture, keep_packets=False))
        assert seen and all(t == (0, 11, 12) for t in seen)
        assert gc.get_threshold() == (0, 11, 12)
    finally:
        gc.set_threshold(*old)
