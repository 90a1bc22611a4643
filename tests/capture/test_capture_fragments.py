"""IP fragment reassembly: RFC 791/815 for IPv4, RFC 8200 §4.5 for IPv6, and its bounds
(ReassemblyLimits). Expected payloads are the ones the fragments were cut from."""

from __future__ import annotations

import pytest

from qoe.capture import ReassemblyLimits, read_packets

SRC6, DST6 = "2001:db8::1", "2001:db8::2"


def _v4_fragments(cap, payload: bytes, cuts: list[int], ident: int = 99, proto: int = 17):  # type: ignore[no-untyped-def]
    """Fragments of one UDP datagram carrying ``payload``, cut at the byte offsets ``cuts``
    (multiples of 8) of the IP payload (UDP header included)."""
    body = cap.udp(5000, 6000, payload) if proto == 17 else cap.tcp(80, 6000, payload)
    edges = [0, *cuts, len(body)]
    return [
        cap.eth(cap.ipv4("192.0.2.1", "198.51.100.2", proto, body[a:b], ident=ident, mf=b < len(body), offset=a))
        for a, b in zip(edges, edges[1:])
    ]


PAYLOAD = bytes(range(256)) * 12  # 3072 bytes: with the UDP header, 3080


@pytest.mark.parametrize(
    "order",
    [[0, 1, 2], [2, 1, 0], [1, 2, 0], [2, 0, 1]],
    ids=["in-order", "reversed", "first-last", "last-first"],
)
def test_ipv4_reassembly_any_order(cap, write, udp_both, order):  # type: ignore[no-untyped-def]
    frags = _v4_fragments(cap, PAYLOAD, [1480, 2960])
    recs = [(cap.T0, i, frags[k]) for i, k in enumerate(order)]
    pkts = udp_both(write(cap.pcap(recs)))
    assert len(pkts) == 1
    p = pkts[0]
    assert p.payload == PAYLOAD
    # Index and time of the frame that completed the datagram (the last one read).
    assert (p.index, p.ts_ns, p.wire_len) == (3, cap.T0 * 10**9 + 2000, len(frags[order[-1]]))


def test_ipv4_fragments_interleaved_with_other_traffic(cap, write, udp_both):  # type: ignore[no-untyped-def]
    a = _v4_fragments(cap, PAYLOAD, [1480], ident=1)
    b = _v4_fragments(cap, PAYLOAD[::-1], [8, 1480], ident=2)
    plain = cap.eth(cap.ipv4("192.0.2.7", "198.51.100.2", 17, cap.udp(1, 2, b"small")))
    recs = [(cap.T0, i, f) for i, f in enumerate([a[0], b[2], plain, b[0], a[1], b[1]])]
    pkts = udp_both(write(cap.pcap(recs)))
    assert [(p.index, p.payload[:5]) for p in pkts] == [(3, b"small"), (5, PAYLOAD[:5]), (6, PAYLOAD[::-1][:5])]


def test_ipv4_overlapping_fragments_first_received_wins(cap, write, udp_both):  # type: ignore[no-untyped-def]
    body = cap.udp(5000, 6000, b"A" * 32)  # 40 bytes of IP payload
    mk = lambda data, off, mf: cap.eth(cap.ipv4("192.0.2.1", "198.51.100.2", 17, data, ident=5, mf=mf, offset=off))  # noqa: E731
    frames = [
        mk(body[:24], 0, True),  # bytes 0..23
        mk(b"B" * 16, 16, True),  # 16..31 overlaps 16..23 (kept from the first) and fills 24..31
        mk(body[32:], 32, False),  # 32..39, last
    ]
    (p,) = udp_both(write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)])))
    assert p.payload == b"A" * 16 + b"B" * 8 + b"A" * 8


def test_ipv4_duplicate_fragment_is_harmless(cap, write, udp_both):  # type: ignore[no-untyped-def]
    f = _v4_fragments(cap, PAYLOAD, [1480])
    (p,) = udp_both(write(cap.pcap([(cap.T0, i, x) for i, x in enumerate([f[0], f[0], f[1], f[1]])])))
    assert (p.index, p.payload) == (3, PAYLOAD)


def test_ipv4_missing_fragment_datagram_not_emitted(cap, write, udp_both):  # type: ignore[no-untyped-def]
    f = _v4_fragments(cap, PAYLOAD, [1480, 2960])
    after = cap.eth(cap.ipv4("192.0.2.1", "198.51.100.2", 17, cap.udp(1, 2, b"next")))
    pkts = udp_both(write(cap.pcap([(cap.T0, 0, f[0]), (cap.T0, 1, f[2]), (cap.T0, 2, after)])))
    assert [p.payload for p in pkts] == [b"next"]


def test_ipv4_fragment_timeout(cap, write, udp_both):  # type: ignore[no-untyped-def]
    # RFC 791 §3.2 timer: 15 s. The second half arrives 16 s after the first: dropped.
    f = _v4_fragments(cap, PAYLOAD, [1480])
    assert udp_both(write(cap.pcap([(cap.T0, 0, f[0]), (cap.T0 + 16, 0, f[1])]))) == []
    (p,) = udp_both(write(cap.pcap([(cap.T0, 0, f[0]), (cap.T0 + 14, 0, f[1])]), "b.pcap"))
    assert p.payload == PAYLOAD


def test_ipv4_tcp_fragments_and_protocol_filter(cap, write):  # type: ignore[no-untyped-def]
    f = _v4_fragments(cap, b"GET / HTTP/1.1\r\n" * 10, [64], proto=6)
    path = write(cap.pcap([(cap.T0, i, x) for i, x in enumerate(f)]))
    (p,) = read_packets(path)
    assert (p.proto, p.sport, p.payload) == (6, 80, b"GET / HTTP/1.1\r\n" * 10)
    assert list(read_packets(path, protocols=("udp",))) == []


def _v6_fragments(cap, payload: bytes, cuts: list[int], ident: int = 0xABCDEF, dest_opts: bool = False):  # type: ignore[no-untyped-def]
    body = cap.udp(5004, 5006, payload)
    edges = [0, *cuts, len(body)]
    out = []
    for a, b in zip(edges, edges[1:]):
        hdr = cap.frag6(17, a, b < len(body), ident)
        ext = cap.ext(44) if dest_opts else b""  # a Hop-by-Hop header before the Fragment header
        out.append(cap.eth(cap.ipv6(SRC6, DST6, 0 if dest_opts else 44, ext + hdr + body[a:b]), 0x86DD))
    return out


@pytest.mark.parametrize("order", [[0, 1, 2], [2, 0, 1]])
@pytest.mark.parametrize("hbh", [False, True])
def test_ipv6_reassembly(cap, write, udp_both, order, hbh):  # type: ignore[no-untyped-def]
    f = _v6_fragments(cap, PAYLOAD, [1232, 2464], dest_opts=hbh)
    (p,) = udp_both(write(cap.pcap([(cap.T0, i, f[k]) for i, k in enumerate(order)])))
    assert (p.index, p.src, p.sport, p.payload) == (3, SRC6, 5004, PAYLOAD)


def test_ipv6_overlap_abandons_datagram_but_duplicate_does_not(cap, write, udp_both):  # type: ignore[no-untyped-def]
    f = _v6_fragments(cap, PAYLOAD, [1232, 2464])
    dup = udp_both(write(cap.pcap([(cap.T0, i, x) for i, x in enumerate([f[0], f[1], f[1], f[2]])])))
    assert [p.payload for p in dup] == [PAYLOAD]
    body = cap.udp(5004, 5006, PAYLOAD)
    overlap = cap.eth(cap.ipv6(SRC6, DST6, 44, cap.frag6(17, 1224, True, 0xABCDEF) + body[1224:1240]), 0x86DD)
    recs = [(cap.T0, i, x) for i, x in enumerate([f[0], overlap, f[1], f[2]])]
    assert udp_both(write(cap.pcap(recs), "o.pcap")) == []  # RFC 8200 §4.5 / RFC 5722


def _halves(cap, ident: int, payload: bytes, cut: int, v6: bool = False):  # type: ignore[no-untyped-def]
    """The two fragments of one UDP datagram, cut at byte ``cut`` of its IP payload."""
    if v6:
        return _v6_fragments(cap, payload, [cut], ident=ident)
    return _v4_fragments(cap, payload, [cut], ident=ident)


def _payload(i: int) -> bytes:
    return i.to_bytes(2, "big") * 12


def test_at_most_max_datagrams_pending_the_oldest_dropped(cap, write, udp_both):  # type: ignore[no-untyped-def]
    """300 first halves, then the second halves of the last 100, of the one before them
    and of the first: with room for 100 pending datagrams only the last 100 complete;
    with the default room, all these."""
    halves = [_halves(cap, i, _payload(i), 16) for i in range(300)]
    order = [h[0] for h in halves] + [h[1] for h in halves[200:]] + [halves[199][1], halves[0][1]]
    path = write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(order)]))
    bounded = udp_both(path, reassembly=ReassemblyLimits(max_datagrams=100))
    assert [p.payload for p in bounded] == [_payload(i) for i in range(200, 300)]
    assert [p.payload for p in udp_both(path)] == [_payload(i) for i in [*range(200, 300), 199, 0]]


def test_at_most_max_bytes_buffered_the_oldest_dropped(cap, write, udp_both):  # type: ignore[no-untyped-def]
    """First fragments of 1000 bytes each: 64 of them fill max_bytes = 64 000 exactly, so
    the 64 most recent complete and the one before them was dropped."""
    halves = [_halves(cap, i, bytes([i]) * 1000, 1000) for i in range(100)]
    order = [h[0] for h in halves] + [h[1] for h in halves[36:]] + [halves[35][1]]
    path = write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(order)]))
    bounded = udp_both(path, reassembly=ReassemblyLimits(max_bytes=64_000))
    assert [p.payload[0] for p in bounded] == list(range(36, 100))
    assert [p.payload[0] for p in udp_both(path)] == [*range(36, 100), 35]


@pytest.mark.parametrize(
    "v6, limits, kept_s, dropped_s",
    [
        (False, ReassemblyLimits(ipv4_timeout_ns=5 * 10**9), 4, 6),
        (True, ReassemblyLimits(), 59, 61),  # RFC 8200 §4.5: 60 s
        (True, ReassemblyLimits(ipv6_timeout_ns=10 * 10**9), 9, 11),
    ],
    ids=["ipv4-5s", "ipv6-default-60s", "ipv6-10s"],
)
def test_reassembly_timeouts(cap, write, udp_both, v6, limits, kept_s, dropped_s):  # type: ignore[no-untyped-def]
    first, second = _halves(cap, 7, PAYLOAD, 1232, v6=v6)
    kept = udp_both(write(cap.pcap([(cap.T0, 0, first), (cap.T0 + kept_s, 0, second)]), "k.pcap"), reassembly=limits)
    assert [p.payload for p in kept] == [PAYLOAD]
    late = write(cap.pcap([(cap.T0, 0, first), (cap.T0 + dropped_s, 0, second)]), "d.pcap")
    assert udp_both(late, reassembly=limits) == []


def test_oversize_datagram_is_dropped(cap, write, udp_both):  # type: ignore[no-untyped-def]
    """RFC 791 §3.1: Total Length is 16 bits; a fragment ending past byte 65535 is bogus.
    The datagram is given up, so the same key then reassembles a proper datagram."""
    body = cap.udp(5000, 6000, b"p" * 16)  # 24 bytes of IP payload
    mk = lambda data, off, mf: cap.eth(cap.ipv4("192.0.2.1", "198.51.100.2", 17, data, ident=9, mf=mf, offset=off))  # noqa: E731
    frames = [mk(body[:8], 0, True), mk(b"x" * 16, 65528, False), mk(body[8:], 8, False), mk(body[:8], 0, True)]
    (p,) = udp_both(write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)])))
    assert (p.index, p.payload) == (4, b"p" * 16)


def test_conflicting_last_fragments_abandon_the_datagram(cap, write, udp_both):  # type: ignore[no-untyped-def]
    """Two "last" fragments saying different lengths (24 and 40 bytes): the datagram is
    dropped, so its bytes ("y") do not leak into the next one with the same key."""
    body = cap.udp(5000, 6000, b"b" * 8 + b"c" * 8)  # 24 bytes of IP payload
    mk = lambda data, off, mf: cap.eth(cap.ipv4("192.0.2.1", "198.51.100.2", 17, data, ident=3, mf=mf, offset=off))  # noqa: E731
    frames = [
        mk(b"y" * 8, 16, False),  # says the datagram is 24 bytes
        mk(b"z" * 8, 32, False),  # says 40: inconsistent, dropped
        mk(body[8:16], 8, True),
        mk(body[16:], 16, False),
        mk(body[:8], 0, True),
    ]
    (p,) = udp_both(write(cap.pcap([(cap.T0, i, f) for i, f in enumerate(frames)])))
    assert (p.index, p.sport, p.payload) == (5, 5000, b"b" * 8 + b"c" * 8)
