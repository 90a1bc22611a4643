"""Bad input to qoe.rtp raises a QoEError subclass that names what was wrong."""

from __future__ import annotations

import pytest

from qoe.errors import CaptureError, InputError
from qoe.rtp import find_streams, make_packets, rtp_stats, scan_capture


def test_rtp_stats_of_an_empty_stream():
    empty = make_packets([], [], [], [], [], [])
    with pytest.raises(InputError, match="the stream has no packets"):
        rtp_stats(empty, 8000)


def test_make_packets_with_the_wrong_number_of_payloads():
    with pytest.raises(InputError, match="2 payloads for 3 packets"):
        make_packets([1, 2, 3], [0, 1, 2], [1, 2, 3], [0, 160, 320], [0, 0, 0], [8, 8, 8], [b"a", b"b"])


def test_scan_of_a_file_that_is_not_a_capture(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("hello, not a pcap\n")
    with pytest.raises(CaptureError, match="notes.txt"):
        scan_capture(p)


def test_scan_of_a_missing_file(tmp_path):
    with pytest.raises(CaptureError, match="missing.pcap"):
        find_streams(tmp_path / "missing.pcap")


@pytest.mark.parametrize("n", [0, 1])
def test_min_packets_below_two(tmp_path, n):
    with pytest.raises(InputError, match=f"min_packets must be at least 2, given {n}"):
        scan_capture(tmp_path / "any.pcap", min_packets=n)


def test_scan_batch_size_is_checked(tmp_path):
    import dpkt

    p = tmp_path / "empty.pcap"
    with open(p, "wb") as fh:
        dpkt.pcap.Writer(fh)
    with pytest.raises(InputError, match="batch_size"):
        scan_capture(p, batch_size=0)
    assert scan_capture(p).streams == ()  # an empty capture is not an error
