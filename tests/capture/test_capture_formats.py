"""pcap and pcapng file formats: magic numbers, byte orders, resolutions, interfaces.

Expected times are computed by hand from the integer fields written (never via float).
"""

from __future__ import annotations

import gzip
import io

import pytest

from qoe.capture import probe, read_packets, read_udp_batches
from qoe.errors import QoEWarning


def _frame(cap, i: int = 0) -> bytes:  # type: ignore[no-untyped-def]
    return cap.eth(cap.ipv4("192.0.2.1", "198.51.100.2", 17, cap.udp(4000 + i, 5000, bytes([i]) * 10)))


@pytest.mark.parametrize("byteorder", ["<", ">"])
@pytest.mark.parametrize("nano", [False, True])
def test_pcap_magic_byteorder_resolution(cap, write, udp_both, byteorder, nano):  # type: ignore[no-untyped-def]
    frac = [123_456_789, 999_999_999, 0] if nano else [123_456, 999_999, 0]
    recs = [(cap.T0 + i, frac[i], _frame(cap, i)) for i in range(3)]
    path = write(cap.pcap(recs, nano=nano, byteorder=byteorder))
    pkts = udp_both(path)
    mult = 1 if nano else 1000
    assert [p.ts_ns for p in pkts] == [(cap.T0 + i) * 10**9 + frac[i] * mult for i in range(3)]
    assert [p.index for p in pkts] == [1, 2, 3]
    assert [p.sport for p in pkts] == [4000, 4001, 4002]
    assert all(p.interface == 0 for p in pkts)
    info = probe(path)
    assert (info.format, info.byte_order, info.nanosecond) == ("pcap", byteorder, nano)


def test_pcap_modified_24_byte_records(cap, write, udp_both):  # type: ignore[no-untyped-def]
    recs = [(cap.T0, 5, _frame(cap, 0)), (cap.T0 + 1, 6, _frame(cap, 1))]
    pkts = udp_both(write(cap.pcap(recs, modified=True)))
    assert [p.ts_ns for p in pkts] == [cap.T0 * 10**9 + 5000, (cap.T0 + 1) * 10**9 + 6000]


def test_pcap_fcs_bits_in_linktype_field_are_ignored(cap, write):  # type: ignore[no-untyped-def]
    # draft-ietf-opsawg-pcap §4: the link type is the lower 16 bits; bit 28 (F) and the FCS
    # length above it describe the frames' FCS.
    data = cap.pcap([(cap.T0, 0, _frame(cap) + b"\xde\xad\xbe\xef")], linktype=1 | 0x10000000 | (2 << 29))
    (p,) = read_packets(write(data))
    assert p.payload == bytes(10)  # IP total length excludes the FCS


def test_wire_length_and_snaplen_truncation(cap, write, udp_both):  # type: ignore[no-untyped-def]
    full = cap.eth(cap.ipv4("192.0.2.1", "198.51.100.2", 17, cap.udp(1, 2, bytes(range(100)))))
    cut = full[:60]  # snap length 60: 60 - 42 = 18 payload bytes captured
    (p,) = udp_both(write(cap.pcap([(cap.T0, 0, cut, len(full))], snaplen=60)))
    assert p.wire_len == len(full) == 142
    assert p.payload == bytes(range(18))


def test_frame_numbers_count_every_record(cap, write):  # type: ignore[no-untyped-def]
    arp = cap.eth(b"\0" * 28, 0x0806)
    t = cap.tcp(80, 1234, b"hello")
    recs = [
        (cap.T0, 0, arp),
        (cap.T0, 1, _frame(cap, 1)),
        (cap.T0, 2, cap.eth(cap.ipv4("192.0.2.1", "198.51.100.2", 6, t))),
        (cap.T0, 3, arp),
        (cap.T0, 4, _frame(cap, 4)),
    ]
    path = write(cap.pcap(recs))
    assert [p.index for p in read_packets(path)] == [2, 3, 5]
    assert [p.index for p in read_packets(path, protocols=("udp",))] == [2, 5]
    assert [p.index for p in read_packets(path, protocols=["tcp"])] == [3]
    assert [b.index.tolist() for b in read_udp_batches(path)] == [[2, 5]]


# ---------------------------------------------------------------------------- pcapng


@pytest.mark.parametrize("bo", ["<", ">"])
def test_pcapng_interfaces_with_own_linktype_and_resolution(cap, write, udp_both, bo):  # type: ignore[no-untyped-def]
    ip = cap.ipv4("192.0.2.1", "198.51.100.2", 17, cap.udp(7, 8, b"abc"))
    blocks = [
        cap.shb(bo),
        cap.idb(bo, 1),  # Ethernet, default resolution 10^-6 (§4.2)
        cap.idb(bo, 113, tsresol=9),  # Linux SLL, ns
        cap.idb(bo, 101, tsresol=0x80 | 20),  # raw IP, 2^-20 s
        cap.idb(bo, 276, tsresol=3, tsoffset=-3600),  # SLL2, ms, offset -1 h
        cap.idb(bo, 228, tsresol=12, tsoffset=cap.T0),  # raw IPv4, ps (floored to ns), +T0 s
        cap.epb(bo, 0, cap.T0 * 10**6 + 250_001, cap.eth(ip)),
        cap.nrb(bo),
        cap.epb(bo, 1, cap.T0 * 10**9 + 123_456_789, cap.sll(ip)),
        cap.epb(bo, 2, (cap.T0 << 20) + 3, ip),  # 3/2^20 s = 2861.02294921875 ns
        cap.isb(bo, 0),
        cap.epb(bo, 3, (cap.T0 + 3600) * 1000 + 7, cap.sll2(ip)),
        cap.epb(bo, 4, 1_999, ip, comment=b"picoseconds"),
    ]
    path = write(b"".join(blocks), "t.pcapng")
    pkts = udp_both(path)
    s = cap.T0 * 10**9
    assert [p.ts_ns for p in pkts] == [s + 250_001_000, s + 123_456_789, s + 2861, s + 7_000_000, s + 1]
    assert [p.interface for p in pkts] == [0, 1, 2, 3, 4]
    assert [p.index for p in pkts] == [1, 2, 3, 4, 5]
    assert all(p.payload == b"abc" and p.src == "192.0.2.1" for p in pkts)
    info = probe(path)
    assert [i.linktype for i in info.interfaces] == [1, 113, 101, 276, 228]


def test_pcapng_sections_change_byte_order_and_number_interfaces_on(cap, write, udp_both):  # type: ignore[no-untyped-def]
    f = _frame(cap)
    data = b"".join(
        [
            cap.shb("<"),
            cap.idb("<", 1),
            cap.epb("<", 0, cap.T0 * 10**6, f),
            cap.shb(">"),
            cap.idb(">", 1, tsresol=9),
            cap.idb(">", 1),
            cap.epb(">", 1, cap.T0 * 10**6 + 1, f),
            cap.epb(">", 0, cap.T0 * 10**9 + 1, f),
        ]
    )
    pkts = udp_both(write(data, "s.pcapng"))
    s = cap.T0 * 10**9
    assert [(p.interface, p.ts_ns) for p in pkts] == [(0, s), (2, s + 1000), (1, s + 1)]


def test_pcapng_simple_and_obsolete_packet_blocks(cap, write, udp_both):  # type: ignore[no-untyped-def]
    f = _frame(cap, 3)
    data = b"".join(
        [cap.shb(), cap.idb("<", 1, snaplen=0), cap.spb("<", f), cap.pb("<", 0, cap.T0 * 10**6 + 5, f), cap.epb("<", 0, 1, f)]
    )
    pkts = udp_both(write(data, "p.pcapng"))
    # §4.4: a Simple Packet Block has no timestamp; qoe gives it 0.
    assert [p.ts_ns for p in pkts] == [0, cap.T0 * 10**9 + 5000, 1000]
    assert [p.index for p in pkts] == [1, 2, 3]


def test_pcapng_simple_packet_block_cut_to_snaplen(cap, write):  # type: ignore[no-untyped-def]
    f = _frame(cap, 3)  # 52 bytes
    data = b"".join([cap.shb(), cap.idb("<", 1, snaplen=46), cap.spb("<", f[:46], wire=len(f))])
    (p,) = read_packets(write(data, "p.pcapng"))
    assert (p.wire_len, p.payload) == (52, bytes([3]) * 4)


def test_big_timestamps_keep_every_nanosecond(cap, write, udp_both):  # type: ignore[no-untyped-def]
    # 2^32 - 1 s (year 2106) with 999999999 ns: 4294967295999999999 ns, exact in int64.
    pkts = udp_both(write(cap.pcap([(2**32 - 1, 999_999_999, _frame(cap))], nano=True)))
    assert pkts[0].ts_ns == 4_294_967_295_999_999_999


def test_gzip_compressed_capture(cap, write, udp_both):  # type: ignore[no-untyped-def]
    raw = cap.pcap([(cap.T0, i, _frame(cap, i)) for i in range(5)])
    pkts = udp_both(write(gzip.compress(raw), "t.pcap.gz"))
    assert [p.ts_ns for p in pkts] == [cap.T0 * 10**9 + i * 1000 for i in range(5)]


def test_binary_file_object(cap):  # type: ignore[no-untyped-def]
    raw = cap.pcap([(cap.T0, i, _frame(cap, i)) for i in range(4)])
    assert [p.sport for p in read_packets(io.BytesIO(raw))] == [4000, 4001, 4002, 4003]
    assert sum(len(b) for b in read_udp_batches(io.BytesIO(raw), batch_size=3)) == 4


def test_many_chunks(cap, write, udp_both):  # type: ignore[no-untyped-def]
    # Records straddle the 1 MiB read chunks: all must come out, in order.
    frames = [cap.eth(cap.ipv4("192.0.2.1", "198.51.100.2", 17, cap.udp(1, 2, bytes(1000 + i % 7)))) for i in range(2500)]
    pkts = udp_both(write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)])))
    assert len(pkts) == 2500
    assert [len(p.payload) for p in pkts] == [1000 + i % 7 for i in range(2500)]
    assert pkts[-1].ts_ns == cap.T0 * 10**9 + 2499 * 1000


def test_gzip_file_object(cap):  # type: ignore[no-untyped-def]
    raw = gzip.compress(cap.pcap([(cap.T0, i, _frame(cap, i)) for i in range(4)]))
    assert [p.sport for p in read_packets(io.BytesIO(raw))] == [4000, 4001, 4002, 4003]


def test_pcapng_frames_without_packets_take_a_number(cap, write, udp_both):  # type: ignore[no-untyped-def]
    # tshark 4.0 (`tshark -r FILE -T fields -e frame.number -e frame.protocols`) numbers a
    # Systemd Journal Export Block (§4.7) and a Custom Block (§4.8) as frames, not a
    # Decryption Secrets Block (§4.7): on this very file it printed frames 1 systemd_journal,
    # 2 udp, 3 data, 4 udp, 5 udp.
    import struct

    bo = "<"
    f = _frame(cap)
    sje = cap.block(bo, 9, b"__REALTIME_TIMESTAMP=1700000000000000\nMESSAGE=hi\n")
    custom = cap.block(bo, 0x0BAD, struct.pack(bo + "I", 32473) + b"data")
    dsb = cap.block(bo, 0x0A, struct.pack(bo + "II", 0x544C534B, 4) + b"abcd")
    data = b"".join(
        [cap.shb(bo), sje, cap.idb(bo), cap.epb(bo, 0, 1, f), custom, cap.epb(bo, 0, 2, f), dsb, cap.epb(bo, 0, 3, f)]
    )
    assert [p.index for p in udp_both(write(data, "j.pcapng"))] == [2, 4, 5]


# ------------------------------------------------------------- runs of equal-length records

# Payload lengths of a trunk-like capture: long runs of one length broken by others, runs
# just long enough to be noticed, alternations, and a run that goes on to the file's end.
_RUN_LENGTHS = [160] * 300 + [20] + [160] * 40 + [20, 33] + [160] * 5 + [20] * 70 + [33, 160] * 30 + [160] * 200


def _numbered(cap, i: int, n: int) -> bytes:  # type: ignore[no-untyped-def]
    """A frame whose UDP payload of ``n`` bytes starts with its number ``i``."""
    payload = (i.to_bytes(4, "big") + bytes(n))[:n]
    return cap.eth(cap.ipv4("192.0.2.1", "198.51.100.2", 17, cap.udp(4000, 5000, payload)))


@pytest.mark.parametrize("chunk_size", [1000, 65536, 1 << 20])
@pytest.mark.parametrize("fmt", ["pcap<", "pcap>", "pcapng<", "pcapng>"])
def test_runs_of_equal_length_records(cap, write, udp_both, fmt, chunk_size):  # type: ignore[no-untyped-def]
    """Every record of long runs of one length (what a trunk of one codec is made of),
    and of the runs' ends, comes out once, in order, with its own time and bytes; in
    pcapng also when a run crosses other blocks of the same length or other interfaces."""
    frames = [_numbered(cap, i, max(n, 4)) for i, n in enumerate(_RUN_LENGTHS)]
    bo = fmt[-1]
    if fmt.startswith("pcapng"):
        blocks = [cap.shb(bo), cap.idb(bo), cap.idb(bo)]
        for i, f in enumerate(frames):
            blocks.append(cap.epb(bo, i % 3 == 0, cap.T0 * 10**6 + i, f))  # interfaces 0 and 1 in one run
            if i == 150:  # a block skipped, as long as the EPBs around it
                blocks.append(cap.block(bo, 5, bytes(len(blocks[-1]) - 12)))
        data = b"".join(blocks)
    else:
        data = cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)], byteorder=bo)
    pkts = udp_both(write(data, "runs." + fmt[:-1]), chunk_size=chunk_size)
    assert [p.index for p in pkts] == list(range(1, len(frames) + 1))
    assert [int.from_bytes(p.payload[:4], "big") for p in pkts] == list(range(len(frames)))
    assert [len(p.payload) for p in pkts] == [max(n, 4) for n in _RUN_LENGTHS]
    assert [p.ts_ns - cap.T0 * 10**9 for p in pkts] == [1000 * i for i in range(len(frames))]
    if fmt.startswith("pcapng"):
        assert [p.interface for p in pkts] == [int(i % 3 == 0) for i in range(len(frames))]


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_damage_inside_a_run_of_equal_length_records(cap, write, fmt):  # type: ignore[no-untyped-def]
    """A damaged record in the middle of a long run ends the read there, with the same
    warning as anywhere else."""
    frames = [_numbered(cap, i, 160) for i in range(200)]
    if fmt == "pcapng":
        blocks = [cap.epb("<", 0, i, f) for i, f in enumerate(frames)]
        blocks[120] = cap.epb("<", 7, 120, frames[120])  # interface 7 was never described
        data = cap.shb() + cap.idb() + b"".join(blocks)
        why = r"interface 7 was never described"
    else:
        recs = [cap.pcap([(cap.T0, i, f)])[24:] for i, f in enumerate(frames)]
        recs[120] = recs[120][:8] + (0x7FFFFFF0).to_bytes(4, "little") + recs[120][12:]
        data = cap.pcap([]) + b"".join(recs)
        why = r"captured length 2147483632"
    path = write(data, "damaged." + fmt)
    with pytest.warns(QoEWarning, match=r"record 121 is damaged \(" + why):
        assert [p.index for p in read_packets(path)] == list(range(1, 121))


# ------------------------------------------------------------------------- chunk_size


def _mixed_pcapng(cap) -> bytes:  # type: ignore[no-untyped-def]
    """Two sections (both byte orders), interfaces of several link types and resolutions,
    every packet block type, blocks skipped or numbered without a packet, a TCP segment
    (frame 7) and IPv4/IPv6 datagrams in fragments (completed by frames 9 and 11): UDP in
    frames 1, 2, 4, 5, 9, 11, 12."""
    import struct

    f = _frame(cap)
    ip = cap.ipv4("192.0.2.1", "198.51.100.2", 17, cap.udp(7, 8, b"abc"))
    body4 = cap.udp(5000, 6000, bytes(range(200)))
    v4 = [
        cap.eth(cap.ipv4("192.0.2.1", "198.51.100.2", 17, body4[a:b], ident=4, mf=b < len(body4), offset=a))
        for a, b in ((0, 96), (96, 160), (160, len(body4)))
    ]
    body6 = cap.udp(5004, 5006, bytes(range(100, 250)))
    v6 = [
        cap.eth(cap.ipv6("2001:db8::1", "2001:db8::2", 44, cap.frag6(17, a, b < len(body6), 66) + body6[a:b]), 0x86DD)
        for a, b in ((0, 80), (80, len(body6)))
    ]
    tcp = cap.eth(cap.ipv4("192.0.2.1", "198.51.100.2", 6, cap.tcp(80, 1234, b"hello")))
    us = cap.T0 * 10**6
    return b"".join(
        [
            cap.shb("<"),
            cap.idb("<", 1),
            cap.idb("<", 113, tsresol=9),
            cap.epb("<", 0, us + 1, f),  # frame 1
            cap.epb("<", 1, cap.T0 * 10**9 + 2, cap.sll(ip)),  # 2
            cap.nrb("<"),  # skipped
            cap.block("<", 0x0BAD, struct.pack("<I", 32473) + b"data"),  # 3, a frame without a packet
            cap.spb("<", f),  # 4
            cap.pb("<", 0, us + 5, f),  # 5
            cap.epb("<", 0, us + 6, v4[2]),  # 6, last IPv4 fragment
            cap.epb("<", 0, us + 7, tcp),  # 7
            cap.epb("<", 0, us + 8, v4[0]),  # 8, first IPv4 fragment
            cap.isb("<", 0),  # skipped
            cap.shb(">"),
            cap.idb(">", 1, tsresol=0x80 | 20),
            cap.epb(">", 0, (cap.T0 << 20) + 9, v4[1]),  # 9, completes the IPv4 datagram
            cap.epb(">", 0, (cap.T0 << 20) + 10, v6[1]),  # 10
            cap.epb(">", 0, (cap.T0 << 20) + 11, v6[0]),  # 11, completes the IPv6 datagram
            cap.idb(">", 101),
            cap.epb(">", 1, us + 12, ip),  # 12
        ]
    )


@pytest.mark.parametrize("chunk_size", [1, 5, 64, 1000])
def test_results_do_not_depend_on_chunk_size(cap, write, udp_both, chunk_size):  # type: ignore[no-untyped-def]
    """Records split across reads at every possible place give the same packets, the
    same probe and, for a file cut short, the same warning."""
    data = _mixed_pcapng(cap)
    path = write(data, "m.pcapng")
    whole = list(read_packets(path))
    assert [p.index for p in whole] == [1, 2, 4, 5, 7, 9, 11, 12]
    assert list(read_packets(path, chunk_size=chunk_size)) == whole
    assert udp_both(path, chunk_size=chunk_size) == [p for p in whole if p.proto == 17]
    assert probe(path, chunk_size=chunk_size) == probe(path)
    pcap = write(cap.pcap([(cap.T0, i, _frame(cap, i)) for i in range(5)], modified=True), "m.pcap")
    assert udp_both(pcap, chunk_size=chunk_size) == udp_both(pcap)
    for cut in (write(data[:-5], "cut.pcapng"), write(cap.pcap([(cap.T0, 0, _frame(cap))])[:-5], "cut.pcap")):
        with pytest.warns(QoEWarning) as small:
            got = list(read_packets(cut, chunk_size=chunk_size))
        with pytest.warns(QoEWarning) as default:
            assert got == list(read_packets(cut))
        assert [str(w.message) for w in small] == [str(w.message) for w in default]
