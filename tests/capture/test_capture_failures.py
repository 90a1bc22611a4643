"""Files qoe.capture cannot read (CaptureError naming the file and what was found), files cut
short (QoEWarning + every packet before the cut), and bad options (InputError)."""

from __future__ import annotations

import gzip
import re
import warnings
from pathlib import Path

import pytest

from qoe.capture import ReassemblyLimits, probe, read_ahead, read_packets, read_udp_batches
from qoe.errors import CaptureError, InputError, QoEWarning

READERS = [
    pytest.param(lambda p: [x.index for x in read_packets(p)], id="read_packets"),
    pytest.param(lambda p: [int(i) for b in read_udp_batches(p, batch_size=2) for i in b.index], id="read_udp_batches"),
    # the read in a background thread: its warnings still reach the caller, naming the record
    pytest.param(lambda p: [int(i) for b in read_ahead(read_udp_batches(p, batch_size=2), 2) for i in b.index],
                 id="read_udp_batches-read_ahead"),
    # the read in a child process: its warnings are issued here, with the batch they came with
    pytest.param(lambda p: [int(i) for b in read_ahead(read_udp_batches(p, batch_size=2), 2, process=True)
                            for i in b.index], id="read_udp_batches-read_ahead-process"),
]


def _frames(cap, n: int):  # type: ignore[no-untyped-def]
    return [cap.eth(cap.ipv4("192.0.2.1", "198.51.100.2", 17, cap.udp(1, 2, bytes(20 + i)))) for i in range(n)]


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("cut", [1, 10, 16, 30], ids=["1-byte-header", "mid-header", "header-only", "mid-data"])
def test_truncated_pcap_warns_and_keeps_packets_before(cap, write, reader, cut):  # type: ignore[no-untyped-def]
    whole = cap.pcap([(cap.T0, i, f) for i, f in enumerate(_frames(cap, 4))])
    last_rec = 16 + len(_frames(cap, 4)[3])
    path = write(whole[: len(whole) - last_rec + cut], "cut.pcap")
    with pytest.warns(QoEWarning, match=re.escape(str(path)) + r".*record 4"):
        assert reader(path) == [1, 2, 3]


@pytest.mark.parametrize("reader", READERS)
def test_truncated_pcapng_warns_and_keeps_packets_before(cap, write, reader):  # type: ignore[no-untyped-def]
    blocks = [cap.shb(), cap.idb()] + [cap.epb("<", 0, i, f) for i, f in enumerate(_frames(cap, 3))]
    data = b"".join(blocks)
    path = write(data[:-7], "cut.pcapng")
    with pytest.warns(QoEWarning, match=re.escape(str(path)) + r".*record 3"):
        assert reader(path) == [1, 2]


@pytest.mark.parametrize("reader", READERS)
def test_truncated_gzip_warns(cap, write, reader):  # type: ignore[no-untyped-def]
    data = gzip.compress(cap.pcap([(cap.T0, i, f) for i, f in enumerate(_frames(cap, 50))]))
    path = write(data[: len(data) // 2], "cut.pcap.gz")
    with pytest.warns(QoEWarning, match=re.escape(str(path))):
        got = reader(path)
    assert got == list(range(1, len(got) + 1))


@pytest.mark.parametrize("reader", READERS)
def test_damaged_record_length_stops_with_warning(cap, write, reader):  # type: ignore[no-untyped-def]
    good = cap.pcap([(cap.T0, i, f) for i, f in enumerate(_frames(cap, 2))])
    bad = good + (cap.T0).to_bytes(4, "little") + bytes(4) + (0x7FFFFFF0).to_bytes(4, "little") + bytes(4) + bytes(100)
    path = write(bad, "bad.pcap")
    with pytest.warns(QoEWarning, match=r"record 3 is damaged \(captured length 2147483632\)"):
        assert reader(path) == [1, 2]


def test_complete_file_gives_no_warning(cap, write):  # type: ignore[no-untyped-def]
    path = write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(_frames(cap, 3))]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(read_packets(path))) == 3
        assert sum(len(b) for b in read_udp_batches(path)) == 3


@pytest.mark.parametrize("reader", [read_packets, read_udp_batches])
def test_not_a_capture(write, reader):  # type: ignore[no-untyped-def]
    path = write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "page.txt")
    with pytest.raises(CaptureError, match=re.escape(str(path)) + r": not a pcap or pcapng capture \(first bytes 47 45 54 20"):
        reader(path)  # raised at the call, before any iteration


DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.mark.parametrize("rel, hint", [
    ("web/browser/captures/h2-idle.har", "this looks like JSON (a HAR file? qoe.web.pages_from_har"),
    ("web/browser/captures/h2-idle.keylog", "this looks like an NSS key log (SSLKEYLOGFILE): give it as keylog="),
    ("voice/speech/de_male_8k.wav", "this looks like a WAV file: speech goes as a reference"),
    ("video/reference/clip.ts", "this may be an MPEG-TS file (sync byte 0x47): a video goes as a reference"),
])
def test_a_file_given_as_a_capture_by_mistake_is_named(rel, hint):  # type: ignore[no-untyped-def]
    """The files that travel with captures (the browser's HAR and key log, reference speech and
    video) given in a capture's place: the error says what the file looks like and where it goes."""
    path = DATA / rel
    if not path.is_file():
        pytest.skip(f"data/{rel} not present")
    with pytest.raises(CaptureError, match=re.escape(str(path)) + r": not a pcap or pcapng capture \(.*\): "
                       + re.escape(hint)):
        probe(path)


@pytest.mark.parametrize("head, hint", [
    (b"snoop\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x04", "a snoop capture (RFC 1761): convert it first (Wireshark's editcap"),
    (b"GMBU\x00\x02" + bytes(20), "a Microsoft Network Monitor 2.x capture: convert it first"),
    (b"# SSL/TLS secrets log file, generated by NSS\n", "an NSS key log"),
])
def test_other_formats_are_named(write, head, hint):  # type: ignore[no-untyped-def]
    path = write(head, "other.cap")
    with pytest.raises(CaptureError, match=r"not a pcap or pcapng capture \(.*\): this looks like " + re.escape(hint)):
        probe(path)


def test_text_is_not_taken_for_mpeg_ts(write):  # type: ignore[no-untyped-def]
    path = write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "page.txt")  # 'G' is 0x47, MPEG-TS's sync byte
    with pytest.raises(CaptureError, match=r"4d3cb2a1, pcapng with 0a0d0d0a\)$"):
        probe(path)


def test_empty_file(write):  # type: ignore[no-untyped-def]
    path = write(b"", "empty.pcap")
    with pytest.raises(CaptureError, match=re.escape(str(path)) + ": empty file"):
        read_packets(path)


def test_missing_file_and_directory(tmp_path):  # type: ignore[no-untyped-def]
    with pytest.raises(CaptureError, match="nope.pcap: no such capture file"):
        read_packets(tmp_path / "nope.pcap")
    with pytest.raises(CaptureError, match="is a directory"):
        read_udp_batches(tmp_path)


def test_pcap_header_cut_short(cap, write):  # type: ignore[no-untyped-def]
    path = write(cap.pcap([])[:20])
    with pytest.raises(CaptureError, match=r"pcap file header cut short \(20 of 24 bytes\)"):
        read_packets(path)


def test_pcap_unknown_version(cap, write):  # type: ignore[no-untyped-def]
    data = bytearray(cap.pcap([]))
    data[4] = 3
    with pytest.raises(CaptureError, match="pcap major version 3"):
        read_packets(write(bytes(data)))


@pytest.mark.parametrize("reader", [read_packets, read_udp_batches])
def test_unknown_linktype_pcap(cap, write, reader):  # type: ignore[no-untyped-def]
    path = write(cap.pcap([(cap.T0, 0, b"\0" * 40)], linktype=127))
    with pytest.raises(CaptureError, match=re.escape(str(path)) + r": unsupported link-layer header type 127 \(IEEE802_11_RADIOTAP\)"):
        reader(path)


@pytest.mark.parametrize("reader", [read_packets, read_udp_batches])
def test_unknown_linktype_pcapng_interface(cap, write, reader):  # type: ignore[no-untyped-def]
    data = cap.shb() + cap.idb("<", 1) + cap.idb("<", 4000) + cap.epb("<", 0, 0, b"\0" * 40)
    path = write(data, "x.pcapng")
    with pytest.raises(CaptureError, match=r"unsupported link-layer header type 4000 \(unknown\) on pcapng interface 1"):
        reader(path)


def test_unknown_linktype_on_interface_described_later(cap, write):  # type: ignore[no-untyped-def]
    f = _frames(cap, 1)[0]
    data = cap.shb() + cap.idb("<", 1) + cap.epb("<", 0, 0, f) + cap.idb("<", 189) + cap.epb("<", 1, 0, b"\0" * 40)
    it = read_packets(write(data, "late.pcapng"))
    assert next(it).index == 1
    with pytest.raises(CaptureError, match=r"189 \(USB_LINUX\) on pcapng interface 1"):
        next(it)


@pytest.mark.parametrize("process", [False, True], ids=["thread", "process"])
def test_an_error_of_a_read_ahead_comes_at_its_batch(cap, write, process):  # type: ignore[no-untyped-def]
    f = _frames(cap, 3)
    data = cap.shb() + cap.idb("<", 1) + b"".join(cap.epb("<", 0, i, x) for i, x in enumerate(f))
    data += cap.idb("<", 189) + cap.epb("<", 1, 0, b"\0" * 40)
    it = read_ahead(read_udp_batches(write(data, "late.pcapng"), batch_size=1, chunk_size=64), process=process)
    assert [int(next(it).index[0]) for _ in range(3)] == [1, 2, 3]  # the batches before the error first
    with pytest.raises(CaptureError, match=r"189 \(USB_LINUX\) on pcapng interface 1"):
        next(it)
    with pytest.raises(StopIteration):
        next(it)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_bad_read_ahead_depth(cap, write, bad):  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=r"read_ahead: depth must be a positive integer"):
        read_ahead(read_udp_batches(write(cap.pcap([]))), bad)


def test_pcapng_bad_byte_order_magic(cap, write):  # type: ignore[no-untyped-def]
    data = bytearray(cap.shb())
    data[8:12] = b"\x01\x02\x03\x04"
    with pytest.raises(CaptureError, match="byte-order magic is 01020304"):
        read_packets(write(bytes(data), "b.pcapng"))


def test_pcapng_packet_on_undescribed_interface(cap, write):  # type: ignore[no-untyped-def]
    data = cap.shb() + cap.idb() + cap.epb("<", 0, 0, _frames(cap, 1)[0]) + cap.epb("<", 5, 0, b"\0" * 40)
    with pytest.warns(QoEWarning, match=r"record 2 is damaged \(.*interface"):
        assert [p.index for p in read_packets(write(data, "u.pcapng"))] == [1]


@pytest.mark.parametrize("bad", ["icmp", ("udp", "sctp"), (), 17, None])
def test_bad_protocols(cap, write, bad):  # type: ignore[no-untyped-def]
    path = write(cap.pcap([]))
    with pytest.raises(InputError, match="protocols"):
        read_packets(path, protocols=bad)


@pytest.mark.parametrize("bad", [0, -5, 1.5, "10"])
def test_bad_batch_size(cap, write, bad):  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=r"batch_size must be a positive integer"):
        read_udp_batches(write(cap.pcap([])), batch_size=bad)


@pytest.mark.parametrize("bad", [0, -5, 1.5, "10"])
@pytest.mark.parametrize("call", [read_packets, read_udp_batches, probe])
def test_bad_chunk_size(cap, write, call, bad):  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=r"chunk_size must be a positive integer, given"):
        call(write(cap.pcap([])), chunk_size=bad)


@pytest.mark.parametrize("bad", [None, 15, {"max_bytes": 10}])
@pytest.mark.parametrize("reader", [read_packets, read_udp_batches])
def test_bad_reassembly_option(cap, write, reader, bad):  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=r"reassembly must be a qoe.capture.ReassemblyLimits, given"):
        reader(write(cap.pcap([])), reassembly=bad)


@pytest.mark.parametrize("name", ["ipv4_timeout_ns", "ipv6_timeout_ns", "max_datagrams", "max_bytes"])
@pytest.mark.parametrize("bad", [0, -1, 2.5])
def test_bad_reassembly_limits(name, bad):  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=rf"ReassemblyLimits\.{name} must be a positive integer, given {bad}"):
        ReassemblyLimits(**{name: bad})


def test_text_mode_file_object(tmp_path):  # type: ignore[no-untyped-def]
    p = tmp_path / "t.pcap"
    p.write_text("hello")
    with open(p) as f, pytest.raises(CaptureError, match="text mode"):
        read_packets(f)


@pytest.mark.parametrize("reader", [read_packets, read_udp_batches])
def test_a_timestamp_beyond_int64_nanoseconds_is_clamped_not_fatal(cap, write, reader):  # type: ignore[no-untyped-def]
    """pcapng §4.3 gives 64 bits of ticks: at the default µs resolution the largest is 5.8e5
    years away, which int64 ns cannot hold (found by benchmarks/fuzz/run.py --seed 11). The
    packet is still read, its time clamped to the int64 bound."""
    f = _frames(cap, 2)
    data = cap.shb() + cap.idb() + cap.epb("<", 0, 0, f[0]) + cap.epb("<", 0, 2**64 - 1, f[1])
    path = write(data, "far.pcapng")
    if reader is read_packets:
        times = [p.ts_ns for p in read_packets(path)]
    else:
        times = [int(t) for b in read_udp_batches(path) for t in b.ts_ns]
    assert times == [0, 2**63 - 1]
