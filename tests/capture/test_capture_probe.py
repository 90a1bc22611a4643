"""probe(): what the start of a capture says, and CaptureInfo.first_frame_ns (the time of
frame 1, that Wireshark's relative times count from), read without reading the file.

Reference for real captures: ``tshark -r FILE -c 1 -T fields -e frame.time_epoch``
(Wireshark's own reader; frame 1 is the first frame it numbers). Hand-built files follow
the format documents (see conftest.py); their expected times are written from the
values the builders were given.
"""

from __future__ import annotations

import glob
import io
import os
import shutil
import subprocess

import pytest

from qoe.capture import CaptureInfo, probe, read_packets, read_udp_batches
from qoe.errors import QoEWarning

TSHARK = shutil.which("tshark")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The pcapng samples (one merged from two interfaces, whose frame 1 is not its earliest)
# and two pcap samples, one of them written with nanosecond resolution.
REAL = sorted(glob.glob(os.path.join(ROOT, "data", "**", "*.pcapng"), recursive=True)) + sorted(
    p for p in glob.glob(os.path.join(ROOT, "data", "**", "noload-b64-*_client.pcap"), recursive=True)
)


def _ns(text: str) -> int:
    sec, _, frac = text.strip().partition(".")
    return int(sec) * 10**9 + int((frac + "000000000")[:9])


def _frame(cap, i: int = 0) -> bytes:  # type: ignore[no-untyped-def]
    return cap.eth(cap.ipv4("192.0.2.1", "198.51.100.2", 17, cap.udp(5004, 5006, bytes(20 + i))))


@pytest.mark.tshark
@pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
@pytest.mark.skipif(not REAL, reason="no captures in data/ yet")
@pytest.mark.parametrize("path", REAL, ids=[os.path.relpath(p, ROOT) for p in REAL])
def test_first_frame_matches_tshark(path):
    out = subprocess.run(
        [TSHARK, "-r", path, "-c", "1", "-T", "fields", "-e", "frame.time_epoch"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout
    assert probe(path).first_frame_ns == _ns(out)


@pytest.mark.parametrize(
    "kw, frac, ns",
    [
        ({}, 250_001, 250_001_000),
        ({"nano": True}, 123_456_789, 123_456_789),
        ({"byteorder": ">"}, 7, 7_000),
        ({"modified": True}, 999_999, 999_999_000),
    ],
    ids=["usec", "nsec", "big-endian", "modified"],
)
def test_pcap_first_frame(cap, write, kw, frac, ns):  # type: ignore[no-untyped-def]
    path = write(cap.pcap([(cap.T0 + 5, frac, _frame(cap)), (cap.T0, 0, _frame(cap, 1))], **kw))
    info = probe(path)
    assert isinstance(info, CaptureInfo) and info.format == "pcap"
    assert info.first_frame_ns == (cap.T0 + 5) * 10**9 + ns
    assert info.first_frame_ns == next(iter(read_packets(path))).ts_ns


def test_pcapng_frame_one_is_not_the_earliest(cap, write):  # type: ignore[no-untyped-def]
    """Two interfaces merged: frame 1 (ns resolution, +1 h offset) is later than frame 2."""
    data = (
        cap.shb()
        + cap.idb("<", 1, tsresol=9, tsoffset=3600)
        + cap.idb("<", 1)
        + cap.epb("<", 0, cap.T0 * 10**9 + 5, _frame(cap))
        + cap.epb("<", 1, cap.T0 * 10**6, _frame(cap, 1))
    )
    path = write(data, "merged.pcapng")
    info = probe(path)
    assert info.format == "pcapng" and len(info.interfaces) == 2
    assert info.first_frame_ns == (cap.T0 + 3600) * 10**9 + 5
    times = [p.ts_ns for p in read_packets(path)]
    assert times[0] == info.first_frame_ns > min(times)


def test_pcapng_interfaces_listed_up_to_the_first_packet(cap, write):  # type: ignore[no-untyped-def]
    data = cap.shb() + cap.idb("<", 1) + cap.epb("<", 0, cap.T0 * 10**6, _frame(cap)) + cap.idb("<", 113)
    info = probe(write(data, "late.pcapng"))
    assert [i.linktype for i in info.interfaces] == [1]
    assert info.first_frame_ns == cap.T0 * 10**9


def test_first_frame_of_other_pcapng_blocks(cap, write):  # type: ignore[no-untyped-def]
    """Frame 1 is the first block Wireshark numbers: an obsolete Packet Block gives its
    time; a Simple Packet Block, or a Custom Block (a frame without a packet), has none: 0."""
    pb = cap.shb() + cap.idb("<", 1, tsresol=3) + cap.pb("<", 0, cap.T0 * 1000 + 7, _frame(cap))
    assert probe(write(pb, "pb.pcapng")).first_frame_ns == cap.T0 * 10**9 + 7_000_000
    spb = cap.shb() + cap.idb("<", 1) + cap.spb("<", _frame(cap)) + cap.epb("<", 0, cap.T0 * 10**6, _frame(cap))
    assert probe(write(spb, "spb.pcapng")).first_frame_ns == 0
    custom = cap.block("<", 0x00000BAD, (32473).to_bytes(4, "little") + b"data")
    cb = cap.shb() + cap.idb("<", 1) + custom + cap.epb("<", 0, cap.T0 * 10**6, _frame(cap))
    path = write(cb, "custom.pcapng")
    assert probe(path).first_frame_ns == 0
    assert [p.index for p in read_packets(path)] == [2]


@pytest.mark.parametrize("case", ["pcap-header-only", "pcap-record-cut", "pcapng-no-packet"])
def test_no_whole_frame_gives_none(cap, write, case):  # type: ignore[no-untyped-def]
    if case == "pcap-header-only":
        data, name = cap.pcap([]), "h.pcap"
    elif case == "pcap-record-cut":
        data, name = cap.pcap([(cap.T0, 0, _frame(cap))])[:-3], "c.pcap"
    else:
        data, name = cap.shb() + cap.idb("<", 1), "n.pcapng"
    assert probe(write(data, name)).first_frame_ns is None


class _Counting(io.BytesIO):
    """A seekable binary file that counts the bytes read from it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.got = 0

    def read(self, n: int = -1) -> bytes:  # type: ignore[override]
        b = super().read(n)
        self.got += len(b)
        return b


@pytest.mark.parametrize("chunk_size", [4096, 65536])
@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_probe_reads_the_start_only_and_restores_the_position(cap, fmt, chunk_size):  # type: ignore[no-untyped-def]
    frames = [_frame(cap, i % 50) for i in range(4000)]  # ~330 kB, several read chunks
    if fmt == "pcap":
        data = cap.pcap([(cap.T0 + i, 0, f) for i, f in enumerate(frames)])
        bound = 2 + 24 + 16 + len(frames[0])  # gzip sniff, file header, first record
    else:
        data = cap.shb() + cap.idb("<", 1) + b"".join(cap.epb("<", 0, (cap.T0 + i) * 10**6, f) for i, f in enumerate(frames))
        bound = 2 + 24 + chunk_size  # gzip sniff, then the blocks up to the first packet
    assert len(data) > 2 * chunk_size
    f = _Counting(data)
    f.seek(7)
    f.seek(0)
    info = probe(f, chunk_size=chunk_size)
    assert info.first_frame_ns == cap.T0 * 10**9
    assert f.got <= bound and f.tell() == 0


def test_damaged_block_warns_the_same_for_both_readers(cap, write):  # type: ignore[no-untyped-def]
    """One walker serves both readers: the same packets, the same specific message."""
    data = cap.shb() + cap.idb() + cap.epb("<", 0, 0, _frame(cap)) + cap.epb("<", 5, 0, b"\0" * 40)
    path = write(data, "u.pcapng")
    with pytest.warns(QoEWarning, match=r"record 2 is damaged \(interface 5 was never described\)"):
        assert [int(i) for b in read_udp_batches(path) for i in b.index] == [1]
    with pytest.warns(QoEWarning, match=r"record 2 is damaged \(interface 5 was never described\)"):
        assert [p.index for p in read_packets(path)] == [1]


@pytest.mark.parametrize("blen", [12, 16, 24, 28])
def test_short_obsolete_packet_block_is_damaged_not_a_crash(cap, write, blen):  # type: ignore[no-untyped-def]
    """A Packet Block (pcapng Appendix A) too short for its fixed fields, at the file's end."""
    import struct

    short = struct.pack("<II", 2, blen) + bytes(blen - 12) + struct.pack("<I", blen)
    data = cap.shb() + cap.idb() + cap.epb("<", 0, 0, _frame(cap)) + short
    path = write(data, "pb.pcapng")
    with pytest.warns(QoEWarning, match=r"record 2 is damaged \(obsolete Packet Block"):
        assert [p.index for p in read_packets(path)] == [1]
