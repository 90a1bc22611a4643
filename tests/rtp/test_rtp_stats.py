"""Unit tests of qoe.rtp's statistics: pure functions over packet tables.

Reference values come from three places, said at each test:

* RFC 3550 arithmetic worked by hand (jitter recursion, expected/lost), or written out
  packet by packet as a plain loop (``_reference_deltas_and_jitter``);
* TShark 4.0.17 on the same packets: the captures were written with dpkt exactly as
  ``_table`` describes them (Ethernet/IPv4/UDP 192.0.2.1:5004 -> 198.51.100.2:5006,
  arrival = 1700000000 s + the offsets given, 160 bytes of payload) and read with
  ``tshark -r CAPTURE -q --enable-heuristic rtp_udp -z rtp,streams``; the printed
  values are copied here. ``test_rtp_tshark.py`` re-runs tshark on them when it is
  installed;
* G.107's loss-run definitions as :func:`qoe.rtp.lossmodel.loss_pattern` computes them
  on the received/lost sequence.

Streaming (a capture read in batches) must give what the whole table gives: those tests
write captures with dpkt and read them with ``scan_capture(..., batch_size=...)``.
"""

from __future__ import annotations

import dataclasses
import math
import socket
import struct
from pathlib import Path

import dpkt
import numpy as np
import pytest

from qoe.errors import InputError
from qoe.rtp import (
    RtpPackets,
    RtpStats,
    RtpStream,
    StreamKey,
    extend_sequence,
    in_order_jitter_ms,
    make_packets,
    rtp_stats,
    scan_capture,
)
from qoe.rtp.lossmodel import loss_pattern

# tshark prints milliseconds with 3 decimals: its values are exact to +-0.0005 ms.
TSHARK_TOL_MS = 0.0006
T0_NS = 1_700_000_000 * 10**9


def _table(n=10, *, late=None, marker=(), pts=None, ts_mod=None, seqs=None, ts0=0, arrival_ms=None):
    """n packets 20 ms / 160 ticks apart; `late` = {index: extra ms}; pts = {index: pt}."""
    late = late or {}
    pts = pts or {}
    ts_mod = ts_mod or {}
    arr = [i * 20.0 + late.get(i, 0.0) for i in range(n)] if arrival_ms is None else list(arrival_ms)
    seq = seqs if seqs is not None else [100 + i for i in range(n)]
    ts = [(ts0 + 160 * i + ts_mod.get(i, 0)) % 2**32 for i in range(len(seq))]
    return make_packets(
        np.arange(1, len(seq) + 1),
        T0_NS + np.round(np.asarray(arr) * 1e6).astype(np.int64),
        np.asarray(seq) % 65536,
        ts,
        [i in marker for i in range(len(seq))],
        [pts.get(i, 8) for i in range(len(seq))],
    )


def _delta_jitter(st):
    return (st.min_delta_ms, st.mean_delta_ms, st.max_delta_ms), (st.min_jitter_ms, st.mean_jitter_ms, st.max_jitter_ms)


# --------------------------------------------------------------------- RFC 3550 by hand


def test_constant_transit_time_has_zero_jitter_and_no_loss():
    st = rtp_stats(_table(50), 8000)
    assert (st.packets, st.expected, st.lost, st.loss_fraction) == (50, 50, 0, 0.0)
    assert st.max_jitter_ms == 0.0 and st.jitter_ms == 0.0
    assert st.min_delta_ms == st.max_delta_ms == pytest.approx(20.0)
    assert not st.problems


def test_one_late_packet_follows_the_rfc3550_recursion():
    # Packet 4 arrives 5 ms late: |D| = 5 ms at packet 4 and at packet 5 (early relative
    # to 4), 0 afterwards. RFC 3550 §6.4.1: J += (|D| - J)/16.
    st = rtp_stats(_table(10, late={4: 5.0}), 8000)
    j4 = 5 / 16
    j5 = j4 + (5 - j4) / 16
    expect = [0, 0, 0, j4, j5] + [j5 * (15 / 16) ** k for k in range(1, 5)]
    assert st.max_jitter_ms == pytest.approx(j5)
    assert st.jitter_ms == pytest.approx(expect[-1])
    assert st.mean_jitter_ms == pytest.approx(np.mean(expect))  # mean over packets 2..10
    assert (st.min_delta_ms, st.max_delta_ms) == pytest.approx((15.0, 25.0))


def test_jitter_uses_the_clock_rate():
    # Same packets, timestamps read at 16 kHz: nominal spacing 10 ms, arrival spacing
    # 20 ms -> |D| = 10 ms every packet, J -> 10 (1 - (15/16)^k).
    st = rtp_stats(_table(40), 16000, clock_rates={8: 16000})
    assert st.jitter_ms == pytest.approx(10 * (1 - (15 / 16) ** 39))


def test_expected_and_lost_across_a_sequence_wrap():
    seqs = [65530 + i for i in range(12) if i not in (5, 6, 9)]  # 65535, 0 and 3 lost
    st = rtp_stats(_table(len(seqs), seqs=seqs), 8000)
    assert (st.packets, st.expected, st.lost) == (9, 12, 3)
    assert (st.loss_bursts, st.max_burst_length, st.mean_burst_length) == (2, 2, 1.5)
    assert st.sequence_errors == 2


def test_duplicates_and_reordering_are_counted():
    seqs = [100, 101, 103, 102, 104, 104, 105, 101, 106]
    st = rtp_stats(_table(len(seqs), seqs=seqs), 8000)
    assert st.duplicates == 2  # the second 104 and the second 101
    assert st.out_of_order == 1  # 102 after 103
    # expected = last (106) - first (100) + 1 = 7; 9 received: lost = -2 (RFC 3550 A.3)
    assert (st.expected, st.lost) == (7, -2)


def test_loss_bursts_give_the_burst_ratio():
    keep = np.ones(100, dtype=bool)
    keep[[10, 11, 12, 13, 50, 51, 52, 53]] = False  # two bursts of 4
    seqs = list(np.flatnonzero(keep) + 1000)
    st = rtp_stats(_table(len(seqs), seqs=seqs), 8000)
    assert (st.loss_bursts, st.max_burst_length, st.mean_burst_length) == (2, 4, 4.0)
    # G.107 eq. (7-32): of the 91 transitions out of a received packet 2 go to a loss
    # (p = 2/91), of the 8 out of a lost one 2 go to a received packet (q = 2/8).
    assert st.burst_ratio == pytest.approx(1 / (2 / 91 + 2 / 8))


def test_extend_sequence_unwraps_both_ways():
    assert extend_sequence(np.array([65534, 65535, 0, 65535, 1], dtype=np.uint16), 1 << 16).tolist() == [
        65534, 65535, 65536, 65535, 65537]
    ts = np.array([2**32 - 160, 0, 160], dtype=np.uint32)
    assert extend_sequence(ts, 1 << 32).tolist() == [2**32 - 160, 2**32, 2**32 + 160]


def test_make_packets_columns_and_dtypes():
    p = _table(5)
    assert isinstance(p, RtpPackets) and len(p) == 5
    assert p.seq.dtype == np.uint16 and p.timestamp.dtype == np.uint32
    assert p.seq_ext.dtype == np.int64 and p.ts_ext.tolist() == [0, 160, 320, 480, 640]
    assert p.frame.tolist() == [1, 2, 3, 4, 5]


# --------------------------------------------------------------------- tshark conventions

# (description, table arguments, (min, mean, max) delta, (min, mean, max) jitter) as
# printed by tshark 4.0.17 for the capture written from _table(**arguments).
TSHARK_CASES = [
    ("one late packet", dict(late={4: 5.0}), (15.0, 20.0, 25.0), (0.0, 0.332, 0.605)),
    ("marker on the late packet", dict(late={4: 5.0}, marker=(4,)), (15.0, 19.444, 20.0), (0.0, 0.297, 0.605)),
    ("marker on the next packet", dict(late={4: 5.0}, marker=(5,)), (20.0, 20.694, 25.0), (0.0, 0.273, 0.568)),
    ("comfort noise on the late packet", dict(late={4: 5.0}, pts={4: 13}), (20.0, 20.0, 20.0), (0.0, 0.230, 0.568)),
    ("comfort noise on the next packet", dict(late={4: 5.0}, pts={5: 13}), (20.0, 20.833, 25.0), (0.0, 0.219, 0.532)),
    ("PCMU packet in a PCMA stream", dict(late={4: 5.0}, pts={5: 0}), (15.0, 20.0, 25.0), (0.0, 0.332, 0.605)),
    ("timestamp 800 ticks back: allowed", dict(ts0=100000, ts_mod={5: -800}), (20.0, 20.0, 20.0), (0.0, 5.593, 12.109)),
    ("timestamp before the first one: ignored", dict(ts0=100000, ts_mod={5: -801}), (20.0, 22.222, 40.0), (0.0, 0.0, 0.0)),
    ("first packet's timestamp ahead", dict(ts0=100000, ts_mod={0: 500}), (20.0, 20.0, 80.0), (2.829, 2.230, 3.906)),
    ("timestamp jump >= 2^31 looks backwards", dict(ts_mod={5: 2**31 + 1000}), (20.0, 22.222, 40.0), (0.0, 0.0, 0.0)),
]


@pytest.mark.parametrize("name, kwargs, delta, jitter", TSHARK_CASES, ids=[c[0] for c in TSHARK_CASES])
def test_delta_and_jitter_follow_tshark(name, kwargs, delta, jitter):
    st = rtp_stats(_table(10, **kwargs), 8000)
    got_d, got_j = _delta_jitter(st)
    assert got_d == pytest.approx(delta, abs=TSHARK_TOL_MS)
    assert got_j == pytest.approx(jitter, abs=TSHARK_TOL_MS)


def test_wrong_timestamps_are_problems_but_marker_and_cn_are_not():
    assert rtp_stats(_table(10, ts0=100000, ts_mod={5: -801}), 8000).problems  # tshark: X
    assert rtp_stats(_table(10, ts0=100000, ts_mod={5: -801}), 8000).wrong_timestamps == 1
    assert not rtp_stats(_table(10, late={4: 5.0}, marker=(4,), pts={6: 13}), 8000).problems  # tshark: no X


# (sequence numbers in arrival order, lost as tshark 4.0.17 printed it); 20 ms and 160
# ticks per packet in arrival order.
TSHARK_LOST = [
    ([100, 101, 102, 103, 104, 105, 106, 107, 108, 100], -9),  # expected counts to the *last* packet
    ([100, 99, 101, 102], 65535),  # falling below the first number counts a cycle
    ([100, 101, 99, 102], 65535),
    ([100, 101, 100, 102], -1),  # back to the first number itself does not
    ([100, 1, 100, 1], 65434),  # once, until a number above the first is seen again
    ([65534, 65535, 1, 0, 2], 0),
    ([65533, 65534, 0, 65535, 1, 2, 3, 4, 5, 6], 65536),  # re-armed by 65535 > first
    ([65534, 65535, 0, 65535, 0], 65534),
    ([0, 1, 2, 65535, 0, 1], 65532),  # first = 0: 65535 -> 0 counts a cycle
    ([0, 1, 2, 40000, 0, 4], -1),  # ... any other drop to 0 does not
    ([1, 2, 3, 40000, 0, 4], 65534),
    ([100, 101, 102, 65535, 1000, 1001], 896),
    ([30000, 30001, 30002, 20000, 30003], 65535),
    ([65530 + i for i in range(16)], 0),
]


@pytest.mark.parametrize("seqs, lost", TSHARK_LOST)
def test_lost_follows_tshark_cycle_counting(seqs, lost):
    st = rtp_stats(_table(len(seqs), seqs=seqs), 8000, loss_rule="tshark")
    assert st.lost == lost
    assert st.expected == lost + len(seqs)


# The same arrivals under RFC 3550 A.3 (the default): expected = highest extended number
# - first + 1, every packet received counts; worked by hand from the RFC's text. Where
# tshark differs: a number below the first is an old packet, not a wrap (rows 2-5, 13);
# a late last packet does not shorten "expected" (row 1).
RFC3550_LOST = [
    ([100, 101, 102, 103, 104, 105, 106, 107, 108, 100], -1),  # 9 expected, 10 received (a copy)
    ([100, 99, 101, 102], -1),  # 99 is older than the first: received, not expected
    ([100, 101, 99, 102], -1),
    ([100, 101, 100, 102], -1),
    ([100, 1, 100, 1], -3),  # 1 is 99 behind the first: never a wrap
    ([65534, 65535, 1, 0, 2], 0),  # a true wrap: 65534..65538, all received
    ([65533, 65534, 0, 65535, 1, 2, 3, 4, 5, 6], 0),
    ([65534, 65535, 0, 65535, 0], -2),
    ([0, 1, 2, 65535, 0, 1], -3),  # 65535 is one before the first: old, not a wrap
    ([30000, 30001, 30002, 20000, 30003], -1),  # 10000 behind: a stray old packet
    ([65530 + i for i in range(16)], 0),
    ([100, 102, 103, 101], 0),  # reordered, nothing lost
    ([100, 103, 104], 2),
]


@pytest.mark.parametrize("seqs, lost", RFC3550_LOST)
def test_lost_follows_rfc3550_a3_by_default(seqs, lost):
    st = rtp_stats(_table(len(seqs), seqs=seqs), 8000)
    assert st.lost == lost
    assert st.expected == lost + len(seqs)
    assert st.lost <= st.expected


def test_loss_rule_is_checked():
    with pytest.raises(InputError, match="loss_rule"):
        rtp_stats(_table(3), 8000, loss_rule="wireshark")


def test_unknown_clock_rate_gives_nan_jitter_but_deltas():
    # tshark 4.0.17 on 20 packets of PT 96 (no SDP): deltas 15/20/25, jitter -1/0/0.
    st = rtp_stats(_table(20, late={7: 5.0}, pts={i: 96 for i in range(20)}), None)
    assert (st.min_delta_ms, st.mean_delta_ms, st.max_delta_ms) == pytest.approx((15.0, 20.0, 25.0))
    assert math.isnan(st.max_jitter_ms) and math.isnan(st.mean_jitter_ms) and math.isnan(st.jitter_ms)
    # The same packets with the clock rate given (as SDP a=rtpmap would) have jitter.
    st48 = rtp_stats(_table(20, late={7: 5.0}, pts={i: 96 for i in range(20)}), None, clock_rates={96: 8000})
    assert st48.max_jitter_ms == pytest.approx(0.605, abs=TSHARK_TOL_MS)


def test_packets_without_clock_rate_move_only_the_arrival_reference():
    # tshark 4.0.17: PCMA, 3 packets of PT 96 (unknown clock), PCMA again, all from
    # packet 7 on 5 ms late -> max jitter 3.750, mean 1.502; deltas 20/20.263/25.
    late = {i: 5.0 for i in range(7, 20)}
    st = rtp_stats(_table(20, late=late, pts={7: 96, 8: 96, 9: 96}), None)
    assert _delta_jitter(st) == (
        pytest.approx((20.0, 20.263, 25.0), abs=TSHARK_TOL_MS),
        pytest.approx((0.0, 1.502, 3.750), abs=TSHARK_TOL_MS),
    )


def test_sdp_comfort_noise_type_is_left_out_like_pt13():
    a = rtp_stats(_table(10, late={4: 5.0}, pts={4: 13}), 8000)
    b = rtp_stats(_table(10, late={4: 5.0}, pts={4: 105}), 8000, clock_rates={105: 8000}, comfort_noise=[105])
    assert _delta_jitter(a) == _delta_jitter(b)


def test_single_packet_stream():
    st = rtp_stats(_table(1), 8000)
    assert (st.packets, st.expected, st.lost) == (1, 1, 0)
    assert math.isnan(st.max_delta_ms) and math.isnan(st.max_jitter_ms)


# --------------------------------------------------------------------- streaming == one shot


def _random_stream(rng, n):
    seq = (rng.integers(0, 65536) + np.arange(n)) % 65536
    keep = rng.random(n) > 0.1
    idx = np.flatnonzero(keep)
    dup = rng.choice(idx, size=max(1, n // 50))
    idx = np.sort(np.concatenate([idx, dup]))
    arr = T0_NS + idx * 20_000_000 + rng.integers(0, 8_000, idx.size) * 1000
    arr += (rng.random(idx.size) < 0.03) * rng.integers(25_000, 60_000, idx.size) * 1000  # reordered
    order = np.argsort(arr, kind="stable")
    idx, arr = idx[order], arr[order]
    ts = (rng.integers(0, 2**32) + 160 * idx) % 2**32
    pt = np.where(rng.random(idx.size) < 0.03, 13, 8)
    mk = rng.random(idx.size) < 0.03
    return arr, seq[idx], ts, pt, mk


def _write_capture(path, streams):
    """One pcap (ns resolution) of the streams (arrival, seq, ts, pt, marker columns),
    stream k from 192.0.2.1:(40000 + 2k) to 198.51.100.2:50000 with SSRC 0x1000 + k (ports above
    2**15: the flow key must not overflow),
    interleaved in arrival order. Frames are built with dpkt; the records are written
    here with the arrival's exact nanoseconds (draft-ietf-opsawg-pcap §4-5: magic
    0xA1B23C4D for ns resolution)."""
    recs = []
    for k, (arr, seq, ts, pt, mk) in enumerate(streams):
        for a, q, t, p, m in zip(arr.tolist(), seq.tolist(), ts.tolist(), pt.tolist(), mk.tolist()):
            data = struct.pack("!BBHII", 0x80, (0x80 if m else 0) | p, q % 65536, t % 2**32, 0x1000 + k) + bytes(160)
            u = dpkt.udp.UDP(sport=40000 + 2 * k, dport=50000, data=data)
            u.ulen = len(u)
            ip = dpkt.ip.IP(src=socket.inet_aton("192.0.2.1"), dst=socket.inet_aton("198.51.100.2"), p=17, data=u)
            ip.len = len(ip)
            recs.append((a, bytes(dpkt.ethernet.Ethernet(type=0x0800, data=ip))))
    recs.sort(key=lambda r: r[0])
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))  # link type 1: Ethernet
        for a, b in recs:
            fh.write(struct.pack("<IIII", a // 10**9, a % 10**9, len(b), len(b)) + b)
    return path


def _assert_same_stats(got, want, where=""):
    for k, v in want.to_dict().items():
        if isinstance(v, float) and math.isnan(v):
            assert math.isnan(getattr(got, k)), (where, k)
        elif isinstance(v, float):  # chunked sums differ from one-shot ones by rounding only
            assert getattr(got, k) == pytest.approx(v, rel=1e-12, abs=1e-12), (where, k)
        else:
            assert getattr(got, k) == v, (where, k)


@pytest.mark.parametrize("batch_size", [1, 7, 250, 65536, None])
def test_capture_read_in_batches_equals_the_whole_table(tmp_path, batch_size):
    """Five interleaved streams with loss, duplicates, reordering, comfort noise and
    markers, read 1, 7, 250 or 65536 datagrams at a time, or a batch per chunk of the file
    (None, the default): each stream's statistics are
    those of rtp_stats over its whole packet table."""
    rng = np.random.default_rng(batch_size)
    streams = [_random_stream(rng, int(rng.integers(300, 1500))) for _ in range(5)]
    path = _write_capture(tmp_path / "five.pcap", streams)
    scan = scan_capture(path, batch_size=batch_size)
    assert len(scan.streams) == 5
    for s in scan.streams:
        _assert_same_stats(s.stats, rtp_stats(s.packets, 8000), s.key)
    assert sum(s.stats.duplicates for s in scan.streams) > 0
    assert sum(s.stats.out_of_order for s in scan.streams) > 0
    # and the statistics-only scan equals the one that keeps the packets
    lean = scan_capture(path, batch_size=batch_size, keep_packets=False)
    for s, t in zip(scan.streams, lean.streams):
        _assert_same_stats(t.stats, s.stats, s.key)


def _reference_deltas_and_jitter(arr_ns, ts, pt, mk, clock=8000):
    """tshark's conventions (qoe.rtp's docstring) written out packet by packet: RFC 3550
    §6.4.1 J += (|D| - J)/16 and the running means mean += (x - mean)/k, k counting every
    packet after the first; marker, comfort-noise and after-comfort-noise packets leave
    the extremes and means alone (no timestamp goes backwards here)."""
    j, mean_d, mean_j, ds, js = 0.0, 0.0, 0.0, [], []
    for i in range(1, len(arr_ns)):
        delta = (arr_ns[i] - arr_ns[i - 1]) / 1e6
        d = delta - (ts[i] - ts[i - 1]) * 1000.0 / clock
        j += (abs(d) - j) / 16
        if not (mk[i] or pt[i] == 13 or pt[i - 1] == 13):
            mean_d += (delta - mean_d) / i
            mean_j += (j - mean_j) / i
            ds.append(delta)
            js.append(j)
    return (min(ds), mean_d, max(ds)), (min(js), mean_j, max(js)), j


@pytest.mark.parametrize("seed", range(3))
def test_long_stream_jitter_and_means_equal_the_plain_recursion(seed):
    """20,000 packets with arrival noise and spikes, markers and comfort noise: the
    vectorised recursions equal the plain loops to 1e-12 (relative)."""
    rng = np.random.default_rng(seed)
    n = 20_000
    arr = T0_NS + np.arange(n) * 20_000_000 + rng.integers(0, 3_000_000, n)
    arr[::997] += 400_000_000  # spikes
    arr = np.sort(arr)
    ts = 160 * np.arange(n)
    pt = np.where(rng.random(n) < 0.02, 13, 8)
    mk = rng.random(n) < 0.02
    st = rtp_stats(make_packets(np.arange(1, n + 1), arr, np.arange(n) % 65536, ts, mk, pt), 8000)
    delta, jitter, j_last = _reference_deltas_and_jitter(arr.tolist(), ts.tolist(), pt.tolist(), mk.tolist())
    assert _delta_jitter(st) == (pytest.approx(delta, rel=1e-12), pytest.approx(jitter, rel=1e-12))
    assert st.jitter_ms == pytest.approx(j_last, rel=1e-12)


# --------------------------------------------------------------------- loss runs, bounded memory


def test_loss_bursts_are_loss_pattern_of_the_missing_numbers():
    """rtp_stats' burst figures are G.107's (loss_pattern) over the sequence numbers from
    the lowest to the highest received, missing = lost."""
    rng = np.random.default_rng(11)
    keep = rng.random(5000) > 0.07
    keep[[0, -1]] = True
    seqs = np.flatnonzero(keep) + 60000  # wraps
    st = rtp_stats(_table(seqs.size, seqs=seqs.tolist()), 8000)
    lp = loss_pattern(~keep)
    assert (st.loss_bursts, st.max_burst_length) == (lp.bursts, lp.max_burst)
    assert (st.mean_burst_length, st.mean_gap_length, st.burst_ratio) == (lp.mean_burst, lp.mean_gap, lp.burst_r)


@pytest.mark.parametrize("window", [64, 100, 4096])
@pytest.mark.parametrize("last_loss", [150, 990], ids=["clean-last-window", "loss-in-last-window"])
@pytest.mark.parametrize("length", [1000, 1003], ids=["window-from-a-byte", "window-across-a-byte"])
def test_loss_runs_of_a_window_received_whole_or_not(window, last_loss, length):
    """The numbers still in the window at the end are settled into the loss runs too: a
    window received whole (one run) or with a loss in it; both equal loss_pattern (G.107) over the stream's numbers. Windows of
    whole bytes (64, 4096) are read a byte at a time, a window of 100 a number at a time;
    with 1003 numbers the last 64 start in the middle of a byte and wrap round the window."""
    rng = np.random.default_rng(3)
    keep = np.ones(length, dtype=bool)
    keep[rng.choice(np.arange(1, 140), 25, replace=False)] = False
    keep[last_loss] = False
    seqs = np.flatnonzero(keep)
    st = rtp_stats(_table(seqs.size, seqs=seqs.tolist()), 8000, reorder_window=window)
    lp = loss_pattern(~keep)
    assert (st.loss_bursts, st.max_burst_length) == (lp.bursts, lp.max_burst)
    assert (st.mean_burst_length, st.mean_gap_length, st.burst_ratio) == (lp.mean_burst, lp.mean_gap, lp.burst_r)


def _reordered(rng, n, late_by):
    """Sequence numbers 0..n-1 with 5 % lost, 2 % duplicated a few packets later and
    every packet delayed by up to ``late_by`` packet times."""
    e = np.arange(n)
    e = e[rng.random(e.size) > 0.05]
    pos = np.arange(e.size, dtype=float)
    dup = rng.random(e.size) < 0.02
    e = np.concatenate([e, e[dup]])
    pos = np.concatenate([pos, pos[dup] + rng.random(dup.sum()) * 10])
    return e[np.argsort(pos + rng.random(pos.size) * late_by, kind="stable")]


def test_reorder_window_slides_without_changing_the_counts():
    """With a 64-number window the window slides hundreds of times; duplicates,
    reordering and loss runs equal those of the default window as long as nothing
    arrives 64 numbers late, whole or read from a capture in batches of 100."""
    rng = np.random.default_rng(7)
    e = _reordered(rng, 20_000, 3)
    table = _table(e.size, seqs=(e % 65536).tolist())
    small, whole = rtp_stats(table, 8000, reorder_window=64), rtp_stats(table, 8000)
    assert small == whole
    _, first = np.unique(e, return_index=True)
    assert whole.duplicates == e.size - first.size > 300
    assert whole.out_of_order > 300


def test_reorder_window_in_a_scan_read_in_batches(tmp_path):
    rng = np.random.default_rng(8)
    e = _reordered(rng, 3000, 3)
    t = _table(e.size, seqs=(e % 65536).tolist())
    path = _write_capture(tmp_path / "r.pcap", [(t.arrival_ns, t.seq, t.timestamp, t.payload_type, t.marker)])
    (s,) = scan_capture(path, batch_size=100, reorder_window=64, keep_packets=False).streams
    _assert_same_stats(s.stats, rtp_stats(t, 8000))


def test_packets_later_than_the_window_count_as_out_of_order_only():
    # 0..49 received, then 30000, then 50..99: 29,950+ numbers behind the highest.
    seqs = list(range(50)) + [30000] + list(range(50, 100))
    table = _table(len(seqs), seqs=seqs)
    late = rtp_stats(table, 8000, reorder_window=64)
    # too late: out of order, and their numbers stay lost: one run from 50 to 29999
    assert (late.out_of_order, late.duplicates) == (50, 0)
    assert (late.loss_bursts, late.max_burst_length) == (1, 30000 - 50)
    assert rtp_stats(table, 8000) == late  # the default window (4096) is also passed
    # a window wider than the jump takes them as late arrivals that filled the gap
    wide = rtp_stats(table, 8000, reorder_window=40000)
    assert (wide.out_of_order, wide.duplicates) == (50, 0)
    assert (wide.loss_bursts, wide.max_burst_length) == (1, 30000 - 100)
    # lost (RFC 3550 A.3 as tshark counts it) does not depend on the window
    assert late.lost == wide.lost


@pytest.mark.parametrize("batch_size", [1, 2, 51, 1000])
def test_late_packets_read_in_batches(tmp_path, batch_size):
    """The same stream read from a capture in batches (a batch may hold only late
    packets): the statistics of the whole table, with both windows."""
    seqs = list(range(50)) + [30000] + list(range(50, 100)) + [30001, 25, 30002]
    t = _table(len(seqs), seqs=seqs)
    path = _write_capture(tmp_path / "late.pcap", [(t.arrival_ns, t.seq, t.timestamp, t.payload_type, t.marker)])
    for window in (64, 40000):
        (s,) = scan_capture(path, batch_size=batch_size, reorder_window=window, min_packets=2).streams
        _assert_same_stats(s.stats, rtp_stats(t, 8000, reorder_window=window), window)


@pytest.mark.parametrize("bad", [0, -5, 2.5, True])
def test_reorder_window_must_be_a_positive_integer(bad):
    with pytest.raises(InputError, match="reorder_window"):
        rtp_stats(_table(5), 8000, reorder_window=bad)


def test_in_order_jitter_skips_late_packets_and_repeated_timestamps():
    # Worked from the rule's text (qoe.rtp.in_order_jitter_ms): 8 kHz, 160 ticks (20 ms) per
    # packet, sent 20 ms apart; packet 3 arrives 5 ms late, after packet 4 (reordered), and
    # packet 5 arrives twice. In order: 0, 1, 2, 4, 5, 6 (3 and the copy are not above every
    # earlier number): 5 updates, each with arrival spacing = timestamp spacing, so D = 0.
    seq = np.array([0, 1, 2, 4, 3, 5, 5, 6])
    arr_ms = np.array([0, 20, 40, 80, 85, 100, 100.5, 120])
    p = make_packets(np.arange(1, 9), (1e9 + arr_ms * 1e6).astype(np.int64), seq, seq * 160,
                     np.zeros(8, bool), np.zeros(8, dtype=np.int64))
    j = in_order_jitter_ms(p, 8000)
    assert j.size == 5 and np.all(j == 0.0)
    # The every-packet rule counts the late packet: |D| = 25 ms for 3 after 4, then more.
    assert rtp_stats(p, 8000).max_jitter_ms > 1.0
    assert rtp_stats(p, 8000, jitter_rule="in-order").max_jitter_ms == 0.0


def test_scanned_statistics_and_keys_equal_their_constructors():
    """A scan builds its streams (RtpStream, its RtpStats and StreamKey) without the frozen
    dataclass ``__init__`` (thousands at the end of a trunk's capture); each equals the one its
    class builds from the same field values (RtpStream's media and its dict fields made as
    its __init__ makes them), has the same repr (and hash), and is still frozen."""
    root = Path(__file__).resolve().parents[2] / "data" / "voice" / "captures"
    streams = [s for cap in ("both-b64_client.pcapng", "both-b64_server.pcap") for s in scan_capture(root / cap).streams]
    assert len(streams) >= 4
    for s in streams:
        for rec, cls in ((s, RtpStream), (s.stats, RtpStats), (s.key, StreamKey)):
            again = cls(**{f.name: getattr(rec, f.name) for f in dataclasses.fields(cls)})
            assert type(rec) is cls and rec == again and repr(rec) == repr(again)
            assert cls is RtpStream or hash(rec) == hash(again)
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(rec, "ssrc" if cls is StreamKey else "packets", 0)
        assert s.media == "audio" and type(s.fmtp) is dict and type(s.feedback) is dict
    assert len({id(s.feedback) for s in streams}) == len(streams)  # a dict of its own each, as __init__ makes
    keys = [s.key for s in streams]
    rebuilt = [StreamKey(*dataclasses.astuple(k)) for k in keys]
    assert sorted(keys) == sorted(rebuilt)  # keys still order as their class's (order=True)
