"""The public surface of qoe.capture: names, immutability, dict forms."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest

import qoe.capture as capture
from qoe.capture import Packet, TcpInfo, byte_rows, read_ahead, read_packets, read_udp_batches
from qoe.errors import InputError


def test_all_names_exist_and_are_complete():
    for name in capture.__all__:
        assert hasattr(capture, name), name
    public = {n for n in vars(capture) if not n.startswith("_") and n not in {"annotations"}}
    modules = {n for n in public if type(getattr(capture, n)).__name__ == "module"}
    assert public - modules == set(capture.__all__)
    for name in ("read_packets", "read_udp_batches", "read_ahead", "Packet", "TcpInfo", "UdpBatch"):
        assert name in capture.__all__


def test_packet_is_frozen_hashable_and_fast_built_equal(cap, write):
    path = write(cap.pcap([(cap.T0, 5, cap.eth(cap.ipv4("192.0.2.1", "192.0.2.2", 6, cap.tcp(1, 2, b"x"))))]))
    (p,) = read_packets(path)
    assert type(p) is Packet and dataclasses.is_dataclass(p)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.sport = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.tcp.seq = 3  # type: ignore[misc,union-attr]
    q = Packet(1, cap.T0 * 10**9 + 5000, "192.0.2.1", "192.0.2.2", 6, 1, 2, b"x", TcpInfo(1000, 0, 0x18, 65535, data_len=1), 0, len(p.payload) + 54)
    assert p == q and hash(p) == hash(q)
    assert dataclasses.replace(p, sport=9).sport == 9


def test_to_dict(cap, write):
    path = write(cap.pcap([(cap.T0, 5, cap.eth(cap.ipv4("192.0.2.1", "192.0.2.2", 6, cap.tcp(1, 2, b"\x01\xff"))))]))
    (p,) = read_packets(path)
    d = p.to_dict()
    assert d["payload"] == "01ff" and d["tcp"]["seq"] == 1000 and d["ts_ns"] == cap.T0 * 10**9 + 5000
    assert set(d) == {f.name for f in dataclasses.fields(Packet)}


def test_udp_batch_columns(cap, write):
    frames = [cap.eth(cap.ipv4(f"192.0.2.{1 + i % 3}", "198.51.100.2", 17, cap.udp(1000 + i, 2000, bytes([i]) * i))) for i in range(7)]
    (b,) = read_udp_batches(write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)])))
    assert len(b) == 7
    assert b.index.dtype.name == "int64" and b.ts_ns.dtype.name == "int64"
    assert b.sport.dtype.name == "uint16" and b.src.dtype.name == "int32" and b.payload.dtype.name == "uint8"
    assert b.offsets.tolist() == [0, 0, 1, 3, 6, 10, 15, 21]
    assert [b.addresses[c] for c in b.src] == [f"192.0.2.{1 + i % 3}" for i in range(7)]
    assert {b.addresses[c] for c in b.dst} == {"198.51.100.2"}
    assert b.payload_of(3) == b"\x03\x03\x03"
    assert b.sport.tolist() == list(range(1000, 1007))
    # the spans into the bytes read, and the packed view, say the same
    assert b.lengths.tolist() == list(range(7)) and b.data.dtype.name == "uint8"
    assert [b.data[a : a + n].tobytes() for a, n in zip(b.starts, b.lengths)] == [bytes([i]) * i for i in range(7)]
    assert b.payload.tobytes() == b"".join(bytes([i]) * i for i in range(7))


def test_read_ahead_gives_the_same_batches_and_stops_when_left(cap, write):
    frames = [cap.eth(cap.ipv4(f"10.0.0.{i % 7}", "10.0.1.1", 17, cap.udp(i, 2, bytes([i % 251]) * (i % 40))))
              for i in range(500)]
    path = write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)]))

    def columns(batches):  # type: ignore[no-untyped-def]
        return [(b.index.tolist(), b.ts_ns.tolist(), [b.addresses[c] for c in b.src], b.sport.tolist(),
                 [b.payload_of(i) for i in range(len(b))]) for b in batches]

    plain = columns(read_udp_batches(path, batch_size=64, chunk_size=4096))
    assert len(plain) == 8
    for depth in (1, 3):
        assert columns(read_ahead(read_udp_batches(path, batch_size=64, chunk_size=4096), depth)) == plain
    before = threading.active_count()
    it = read_ahead(read_udp_batches(path, batch_size=8, chunk_size=512), 2)
    next(it)
    assert threading.active_count() == before + 1  # the reading thread, waiting: two batches made ahead
    it.close()  # type: ignore[attr-defined]
    assert threading.active_count() == before
    with pytest.raises(StopIteration):
        next(it)


def test_a_batch_per_chunk_holds_that_chunk_s_datagrams(cap, write):
    """batch_size=None: one batch for each chunk_size bytes read, the same datagrams as
    fixed-size batches, none empty, each from records that fit in one chunk."""
    frames = [cap.eth(cap.ipv4(f"10.0.0.{i % 7}", "10.0.1.1", 17, cap.udp(i, 2, bytes([i % 251]) * (i % 40))))
              for i in range(500)]
    frames[100:300] = [cap.eth(cap.ipv4("10.0.0.1", "10.0.1.1", 6, bytes(40)))] * 200  # a stretch without UDP
    path = write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)]))
    sized = [b.packet(i) for b in read_udp_batches(path, batch_size=64) for i in range(len(b))]
    per_chunk = list(read_udp_batches(path, batch_size=None, chunk_size=4096))
    assert [b.packet(i) for b in per_chunk for i in range(len(b))] == sized
    assert len(per_chunk) > 4 and all(len(b) for b in per_chunk)
    assert all(int(b.wire_len.sum()) + 16 * len(b) <= 4096 for b in per_chunk)  # pcap record header: 16 bytes
    with pytest.raises(InputError, match="batch_size must be a positive integer"):
        read_udp_batches(path, batch_size=0)


def test_address_codes_stable_across_batches(cap, write):
    frames = [cap.eth(cap.ipv4(f"10.0.0.{i}", "10.0.1.1", 17, cap.udp(1, 2, b""))) for i in range(1, 9)]
    frames += [cap.eth(cap.ipv4("10.0.0.1", "10.0.1.1", 17, cap.udp(1, 2, b"")))]
    batches = list(read_udp_batches(write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)])), batch_size=4))
    assert [len(b) for b in batches] == [4, 4, 1]
    assert batches[2].src[0] == batches[0].src[0]
    assert batches[0].dst[0] == batches[2].dst[0]
    assert batches[-1].addresses[: len(batches[0].addresses)] == batches[0].addresses



@pytest.mark.parametrize("width", [1, 12, 16, 33, 64, 72])
def test_byte_rows_are_the_bytes_at_each_start(width):
    """qoe.capture.byte_rows against slicing the buffer row by row (the rows of a read-only
    buffer, starts in any order and repeated, the last one flush with its end)."""
    rng = np.random.default_rng(width)
    data = rng.integers(0, 256, 5000, dtype=np.uint8).tobytes()
    u8 = np.frombuffer(data, dtype=np.uint8)
    starts = np.concatenate((rng.integers(0, len(data) - width + 1, 300), [0, len(data) - width, 7, 7]))
    rows = byte_rows(u8, starts, width)
    assert rows.shape == (starts.size, width) and rows.dtype == np.uint8 and rows.flags.writeable
    assert [r.tobytes() for r in rows] == [data[s:s + width] for s in starts.tolist()]
    assert byte_rows(u8, np.zeros(0, dtype=np.int64), width).shape == (0, width)
    for bad in (len(data) - width + 1, -len(data) - 1):
        with pytest.raises(IndexError):
            byte_rows(u8, np.array([bad]), width)
