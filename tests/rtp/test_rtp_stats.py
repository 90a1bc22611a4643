"""Unit tests of qoe.rtp's statistics: pure functions over packet tables.

Reference values come from two places, said at each test:

* RFC 3550 arithmetic worked by hand (jitter recursion, expected/lost);
* TShark 4.0.17 on the same packets: the captures were written with dpkt exactly as
  ``_table`` describes them (Ethernet/IPv4/UDP 192.0.2.1:5004 -> 198.51.100.2:5006,
  arrival = 1700000000 s + the offsets given, 160 bytes of payload) and read with
  ``tshark -r CAPTURE -q --enable-heuristic rtp_udp -z rtp,streams``; the printed
  values are copied here. ``test_rtp_tshark.py`` re-runs tshark on them when it is
  installed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from qoe.rtp import (
    RtpPackets,
    _Analyser,
    _clock_table,
    _cn_table,
    _jitter_filter,
    _running_mean,
    extend_sequence,
    make_packets,
    rtp_stats,
)

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
    st = rtp_stats(_table(len(seqs), seqs=seqs), 8000)
    assert st.lost == lost
    assert st.expected == lost + len(seqs)


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
    arr = T0_NS + idx * 20_000_000 + rng.integers(0, 8_000_000, idx.size)
    order = np.argsort(arr, kind="stable")
    idx, arr = idx[order], arr[order]
    ts = (rng.integers(0, 2**32) + 160 * idx) % 2**32
    pt = np.where(rng.random(idx.size) < 0.03, 13, 8)
    mk = rng.random(idx.size) < 0.03
    return arr, seq[idx], ts, pt, mk


@pytest.mark.parametrize("seed", range(5))
def test_chunked_updates_equal_one_update(seed):
    rng = np.random.default_rng(seed)
    cols = _random_stream(rng, 3000)
    whole = _Analyser(_clock_table(), _cn_table())
    whole.update(*cols)
    parts = _Analyser(_clock_table(), _cn_table())
    cuts = np.sort(rng.choice(np.arange(1, cols[0].size), size=12, replace=False))
    for a, b in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [cols[0].size]))):
        parts.update(*(c[a:b] for c in cols))
    r1, r2 = whole.result().to_dict(), parts.result().to_dict()
    for k, v in r1.items():
        if isinstance(v, float) and not math.isnan(v):
            assert r2[k] == pytest.approx(v, rel=1e-12, abs=1e-12), k
        else:
            assert r2[k] == v or (isinstance(v, float) and math.isnan(r2[k])), k


def test_jitter_filter_equals_the_plain_recursion():
    rng = np.random.default_rng(3)
    x = np.abs(rng.normal(0, 5, 1000))
    x[::97] *= 1e4  # spikes
    j, ref = 2.5, []
    for v in x:
        j += (v - j) / 16
        ref.append(j)
    assert _jitter_filter(x, 2.5) == pytest.approx(np.array(ref), rel=1e-12)


def test_running_mean_closed_form_equals_the_loop():
    rng = np.random.default_rng(4)
    ks = np.sort(rng.choice(np.arange(1, 500), size=100, replace=False)).astype(float)
    vals = rng.normal(20, 3, ks.size)
    m = 0.0
    for v, k in zip(vals, ks):
        m += (v - m) / k
    assert _running_mean(0.0, vals, ks) == pytest.approx(m, rel=1e-12)


# --------------------------------------------------------------------- bounded memory


@pytest.mark.parametrize("seed", range(6))
def test_run_statistics_in_pieces_equal_loss_pattern(seed):
    from qoe.rtp.lossmodel import loss_pattern
    from qoe.rtp import _RunStats

    rng = np.random.default_rng(seed)
    lost = rng.random(int(rng.integers(1, 3000))) < rng.choice([0.0, 0.02, 0.3, 0.9])
    if seed == 5:
        lost[-7:] = True  # ends inside a loss run
    runs = _RunStats()
    cuts = np.sort(rng.choice(np.arange(lost.size + 1), size=min(10, lost.size + 1)))
    for a, b in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [lost.size]))):
        runs.add(lost[a:b])
    lp = loss_pattern(lost)
    got = runs.result()
    assert (got["loss_bursts"], got["max_burst_length"]) == (lp.bursts, lp.max_burst)
    assert (got["mean_burst_length"], got["mean_gap_length"], got["burst_ratio"]) == pytest.approx(
        (lp.mean_burst, lp.mean_gap, lp.burst_r))


def test_presence_window_slides_without_changing_the_counts(monkeypatch):
    """With a 64-number window the map is settled hundreds of times; the counts equal
    those of a whole-stream map as long as nothing arrives more than 64 numbers late."""
    import qoe.rtp as rtp

    rng = np.random.default_rng(7)
    e = np.arange(20000)
    e = e[rng.random(e.size) > 0.05]  # loss
    pos = np.arange(e.size, dtype=float)
    dup = rng.random(e.size) < 0.02  # duplicates, a few packets later
    e = np.concatenate([e, e[dup]])
    pos = np.concatenate([pos, pos[dup] + rng.random(dup.sum()) * 10])
    e = e[np.argsort(pos + rng.random(pos.size) * 3, kind="stable")]  # reordering, all within 64
    monkeypatch.setattr(rtp, "_PRESENCE_WINDOW", 64)
    small = rtp._Presence(int(e[0]))
    small.add(e[1:])
    monkeypatch.undo()
    whole = rtp._Presence(int(e[0]))
    whole.add(e[1:])
    assert small.settled is not None and whole.settled is None
    assert (small.dups, small.ooo) == (whole.dups, whole.ooo)
    assert small.loss_runs() == pytest.approx(whole.loss_runs())
    # and whole-stream counts are the plain definitions
    _, first = np.unique(e, return_index=True)
    assert whole.dups == e.size - first.size > 300


def test_presence_survives_a_jump_far_ahead(monkeypatch):
    import qoe.rtp as rtp

    monkeypatch.setattr(rtp, "_PRESENCE_WINDOW", 64)
    p = rtp._Presence(0)
    p.add(np.concatenate([np.arange(1, 50), [10_000_000], np.arange(50, 100)]))
    runs = p.loss_runs()
    # 0..49 received, 50..99 arrived after being settled (late), then nothing until 10^7
    assert p.ooo == 50 and runs["loss_bursts"] == 1 and runs["max_burst_length"] == 10_000_000 - 50
