"""Both readers on random mixtures of every layout, and on random bytes.

The columnar reader decodes common layouts with NumPy and the rest per packet; whatever
the mixture, it must return exactly what ``read_packets(..., protocols=("udp",))`` does.
Random frame bytes must never raise (a capture from the wild holds anything).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from qoe.capture import read_packets, read_udp_batches


@pytest.fixture
def rng():  # type: ignore[no-untyped-def]
    return np.random.default_rng(20240515)


def _random_frames(cap, rng, n: int):  # type: ignore[no-untyped-def]
    frames = []
    for i in range(n):
        payload = bytes(rng.integers(0, 256, int(rng.integers(0, 300)), dtype=np.uint8))
        v6 = rng.random() < 0.3
        src4 = f"192.0.2.{int(rng.integers(1, 5))}"
        kind = rng.integers(0, 10)
        if kind < 5:
            l4, proto = cap.udp(int(rng.integers(1, 65536)), 5004, payload), 17
        elif kind < 7:
            l4, proto = cap.tcp(80, int(rng.integers(1024, 65536)), payload, options=b"\x01\x01\x08\x0a" + bytes(8)), 6
        elif kind < 8:
            l4, proto = bytes(8), 1
        else:
            # a fragmented UDP datagram, fragments emitted in random order below
            body = cap.udp(7000, 7002, payload + bytes(64))
            cut = 8 * int(rng.integers(1, len(body) // 8))
            if v6:
                parts = [
                    cap.ipv6("2001:db8::1", "2001:db8::2", 44, cap.frag6(17, 0, True, i) + body[:cut]),
                    cap.ipv6("2001:db8::1", "2001:db8::2", 44, cap.frag6(17, cut, False, i) + body[cut:]),
                ]
                frames += [cap.eth(p, 0x86DD) for p in rng.permutation(parts)]
            else:
                parts = [
                    cap.ipv4(src4, "198.51.100.2", 17, body[:cut], ident=i, mf=True),
                    cap.ipv4(src4, "198.51.100.2", 17, body[cut:], ident=i, offset=cut),
                ]
                frames += [cap.eth(p) for p in rng.permutation(parts)]
            continue
        if v6:
            nh_chain = cap.ext(proto) if rng.random() < 0.3 else b""
            ip = cap.ipv6("2001:db8::1", f"2001:db8::{int(rng.integers(2, 9)):x}", 0 if nh_chain else proto, nh_chain + l4)
            et = 0x86DD
        else:
            opts = b"\x01\x01\x01\x00" if rng.random() < 0.1 else b""
            ip = cap.ipv4(src4, "198.51.100.2", proto, l4, options=opts)
            et = 0x0800
        r = rng.random()
        if r < 0.15:
            frame = cap.eth(ip, et, vlans=(0x8100,))
        elif r < 0.2:
            frame = cap.eth(ip, et, vlans=(0x88A8, 0x8100))
        elif r < 0.25:
            frame = cap.eth(b"\0" * 28, 0x0806)
        else:
            frame = cap.eth(ip, et, pad_to=60)
        if rng.random() < 0.05:
            frame = frame[: int(rng.integers(1, len(frame)))]  # snap length cut
        frames.append(frame)
    return frames


@pytest.mark.parametrize("linktype", [1, 113, 276, 101])
def test_both_readers_agree_on_random_mixtures(cap, write, rng, linktype):  # type: ignore[no-untyped-def]
    frames = _random_frames(cap, rng, 600)
    if linktype == 113:
        frames = [cap.sll(f[14:], int.from_bytes(f[12:14], "big")) for f in frames if len(f) >= 14]
    elif linktype == 276:
        frames = [cap.sll2(f[14:], int.from_bytes(f[12:14], "big")) for f in frames if len(f) >= 14]
    elif linktype == 101:
        frames = [f[14:] for f in frames if len(f) > 14 and f[12:14] in (b"\x08\x00", b"\x86\xdd")]
    path = write(cap.pcap([(cap.T0 + i // 1000, i % 1000, f) for i, f in enumerate(frames)], linktype=linktype))
    pkts = list(read_packets(path, protocols=("udp",)))
    assert len(pkts) > 100
    for bs in (7, 65536):
        got = [b.packet(i) for b in read_udp_batches(path, batch_size=bs) for i in range(len(b))]
        assert got == pkts


@pytest.mark.parametrize("linktype", [0, 1, 12, 108, 113, 276, 228, 229])
def test_random_bytes_never_raise(cap, write, rng, linktype):  # type: ignore[no-untyped-def]
    frames = []
    for _ in range(400):
        f = bytearray(rng.integers(0, 256, int(rng.integers(0, 120)), dtype=np.uint8).tobytes())
        if len(f) > 20 and rng.random() < 0.5:  # make IP-looking headers likelier
            f[min(len(f) - 1, 12)] = 0x08
            f[0] = 0x45 if rng.random() < 0.5 else 0x60
        frames.append(bytes(f))
    path = write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)], linktype=linktype))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pkts = list(read_packets(path))
        udp = [p for p in pkts if p.proto == 17]
        got = [b.packet(i) for b in read_udp_batches(path) for i in range(len(b))]
    assert got == udp


@pytest.mark.parametrize("cut_below_42", [False, True], ids=["all-plain", "some-cut-short"])
def test_plain_udp_trunk_chunks_agree_with_the_packet_reader(cap, write, rng, cut_below_42):  # type: ignore[no-untyped-def]
    """Chunks of nothing but Ethernet II + IPv4 + UDP (a trunk of RTP) are read in one
    gather per row; with odd UDP lengths, Ethernet padding, IPv4 total lengths short of the
    frame and snap-length cuts, the datagrams, payloads and cut bytes must still be those
    of the per-packet reader (``wire_len - caplen`` beyond the UDP length's end)."""
    frames, want_cut = [], []
    for i in range(700):
        payload = bytes(rng.integers(0, 256, int(rng.integers(0, 200)), dtype=np.uint8))
        r = rng.random()
        length = None if r < 0.8 else int(rng.choice([0, 7, 8 + len(payload) // 2, 8 + len(payload) + 9]))
        ip = cap.ipv4(f"10.1.{i % 7}.{1 + i % 5}", "198.51.100.2", 17, cap.udp(4000 + i % 50, 5004, payload, length=length))
        frame = cap.eth(ip, pad_to=60 if rng.random() < 0.5 else 0)
        wire = len(frame)
        if rng.random() < 0.1:  # a snap length cut, past the UDP header (or, in one variant, into it)
            frame = frame[: int(rng.integers(1 if cut_below_42 else 42, len(frame) + 1))]
        frames.append((frame, wire))
        ulen = length if length is not None else 8 + len(payload)
        want_cut.append(max(0, 34 + ulen - len(frame)) if ulen >= 8 and len(frame) >= 42 else 0)
    path = write(cap.pcap([(cap.T0, i, f, w) for i, (f, w) in enumerate(frames)]))
    pkts = list(read_packets(path, protocols=("udp",)))
    for chunk in (512, 4096, 1 << 20):
        batches = list(read_udp_batches(path, batch_size=64, chunk_size=chunk))
        assert [b.packet(i) for b in batches for i in range(len(b))] == pkts
        got_cut = {int(b.index[i]): int(b.cut[i]) for b in batches for i in range(len(b))}
        assert got_cut == {p.index: want_cut[p.index - 1] for p in pkts}
