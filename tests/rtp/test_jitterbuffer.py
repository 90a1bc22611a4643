"""Jitter-buffer simulation on hand-built arrival traces with hand-worked expected values.

Every trace is G.711-like: 20 ms packets, 160 timestamp ticks at 8000 Hz. Times in the
comments are ms; ``t`` is the sender time (timestamp / 8000), ``a`` the arrival time,
``n = a - t``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from voice_samples import stream_params

from qoe.errors import InputError
from qoe.rtp.jitterbuffer import (
    AdaptiveBuffer,
    FixedBuffer,
    NoBuffer,
    parse_jitter_buffer,
    simulate,
    talkspurt_starts,
)

MS = 1_000_000  # ns


def _trace():
    """seq 1..7 minus 6 (lost), 4 overtakes 3, 2 arrives twice, 5 is very late."""
    seq = np.array([1, 2, 4, 3, 2, 7, 5])
    ts = (seq - 1) * 160
    a_ms = np.array([0, 25, 61, 70, 90, 130, 200])
    return a_ms * MS, seq, ts


def test_fixed_buffer_hand_worked():
    arr, seq, ts = _trace()
    r = simulate(arr, seq, ts, clock_rate=8000, jitter_buffer=FixedBuffer(30))
    # Due at 30 + t: seq1 30, seq2 50, seq3 70, seq4 90, seq5 110, seq7 150.
    # seq3 arrives at 70 = due: played; seq5 arrives at 200 > 110: late.
    assert r.played.tolist() == [True, True, True, True, False, True, False]
    assert r.late.tolist() == [False, False, False, False, False, False, True]
    assert r.duplicate.tolist() == [False, False, False, False, True, False, False]
    assert r.buffer_delay_ms.tolist() == pytest.approx([30, 25, 29, 0, -40, 20, -90])
    assert r.playout_ns.tolist() == [30 * MS, 50 * MS, 90 * MS, 70 * MS, 50 * MS, 150 * MS, 110 * MS]
    assert r.seq_first == 1
    assert r.lost.tolist() == [False, False, False, False, False, True, False]
    assert r.slot_late.tolist() == [False, False, False, False, True, False, False]
    # A fixed buffer plays every packet 30 ms after t; the fastest packet had n = 0.
    assert r.playout_delay_ms[r.played] == pytest.approx(np.full(5, 30.0))
    d = r.to_dict()
    assert (d["expected"], d["received"], d["duplicates"]) == (7, 6, 1)
    assert (d["network_lost"], d["late_lost"], d["effective_lost"]) == (1, 1, 2)
    assert d["effective_loss"] == pytest.approx(2 / 7)
    assert d["buffer_delay_mean_ms"] == pytest.approx((30 + 25 + 29 + 0 + 20) / 5)
    assert d["buffer_delay_p50_ms"] == pytest.approx(25.0)
    assert d["buffer_delay_max_ms"] == pytest.approx(30.0)
    assert d["jitter_buffer"] == "fixed:30"


def test_old_buffer_keyword_and_attribute_warn_and_still_work():
    """Issue 21: ``buffer`` is now ``jitter_buffer``; the old keyword and attribute work
    for one release with a DeprecationWarning naming the new name."""
    arr, seq, ts = _trace()
    new = simulate(arr, seq, ts, clock_rate=8000, jitter_buffer="fixed:30")
    with pytest.warns(DeprecationWarning, match=r"simulate\(buffer=\) is now simulate\(jitter_buffer=\)"):
        old = simulate(arr, seq, ts, clock_rate=8000, buffer="fixed:30")
    assert old.jitter_buffer == "fixed:30" and old.played.tolist() == new.played.tolist()
    with pytest.warns(DeprecationWarning, match=r"PlayoutResult.buffer is now PlayoutResult.jitter_buffer"):
        assert new.buffer == "fixed:30"
    # neither given: the adaptive default, as before
    assert simulate(arr, seq, ts, clock_rate=8000).jitter_buffer == "adaptive"


def test_buffer_and_jitter_buffer_together_are_ambiguous():
    arr, seq, ts = _trace()
    with pytest.raises(InputError, match="ambiguous jitter buffer"):
        simulate(arr, seq, ts, clock_rate=8000, jitter_buffer="adaptive", buffer="fixed:30")


def test_fixed_buffer_anchors_on_first_arrival_not_smallest_timestamp():
    # seq 2 (t = 20) arrives first at 0 ms: it is due at 10; seq 1 (t = 0) is due at
    # 10 - 20 = -10 and arrives at 5: late.
    r = simulate(np.array([0, 5]) * MS, [2, 1], [160, 0], clock_rate=8000, jitter_buffer="fixed:10")
    assert r.played.tolist() == [True, False]
    assert r.late.tolist() == [False, True]
    assert r.buffer_delay_ms.tolist() == pytest.approx([10.0, -15.0])


def test_no_buffer_plays_every_packet_once():
    arr, seq, ts = _trace()
    r = simulate(arr, seq, ts, clock_rate=8000, jitter_buffer="none")
    assert r.played.tolist() == [True, True, True, True, False, True, True]
    assert not r.late.any()
    assert r.effective_lost == r.network_lost == 1
    # A deep enough fixed buffer plays the same packets.
    deep = simulate(arr, seq, ts, clock_rate=8000, jitter_buffer=FixedBuffer(1000))
    assert np.array_equal(deep.played, r.played)


def _adaptive_trace(n_ms):
    n_ms = np.asarray(n_ms, dtype=float)
    t_ms = 20.0 * np.arange(n_ms.size)
    seq = np.arange(1, n_ms.size + 1)
    return np.rint((t_ms + n_ms) * MS).astype(np.int64), seq, seq * 160 - 160


def test_adaptive_algorithm_1_hand_worked():
    # α = 0.5 so that the numbers can be followed by hand; β = 4; no spike mode, no
    # minimum delay. n = 10, 14, 10, 15; packet 3 carries the marker (new talkspurt).
    arr, seq, ts = _adaptive_trace([10, 14, 10, 15])
    marker = np.array([False, False, True, False])
    jb = AdaptiveBuffer(alpha=0.5, beta=4.0, spike=False, min_delay_ms=0.0)
    r = simulate(arr, seq, ts, clock_rate=8000, jitter_buffer=jb, marker=marker)
    # i0: d = 10, v = 0 -> talkspurt 0 delay D0 = 10: p0 = 10 (a0 = 10, played).
    # i1: d = .5*10 + .5*14 = 12, v = .5*|12 - 14| = 1; p1 = 20 + 10 = 30 < a1 = 34: late.
    # i2: d = .5*12 + .5*10 = 11, v = .5*1 + .5*|11 - 10| = 1; new talkspurt:
    #     D1 = 11 + 4*1 = 15; p2 = 40 + 15 = 55, a2 = 50: 5 ms in the buffer.
    # i3: p3 = 60 + 15 = 75 = a3: played, 0 ms in the buffer.
    assert r.talkspurt.tolist() == [0, 0, 1, 1]
    assert r.played.tolist() == [True, False, True, True]
    assert r.late.tolist() == [False, True, False, False]
    assert r.buffer_delay_ms.tolist() == pytest.approx([0.0, -4.0, 5.0, 0.0])
    # Playout delay above the fastest packet (n = 10): D - 10.
    assert r.playout_delay_ms.tolist() == pytest.approx([0.0, 0.0, 5.0, 5.0])
    assert r.to_dict()["talkspurts"] == 2


@pytest.mark.parametrize("spike, expected_delay", [(True, 250.0), (False, 150.0)])
def test_adaptive_spike_mode_hand_worked(spike, expected_delay):
    # α = 0.5, β = 4, spike thresholds 100 / 7.875 ms. n = 0, 0, 200, 100, 0, 0; the last
    # packet opens a new talkspurt (marker).
    # With spike mode: i2 |200 - 0| > 2*0 + 100 starts a spike, d follows: d = 200, v = 0;
    #   i3 var = |2*100 - 200 - 0| / 8 = 0 <= 7.875 ends it without an update;
    #   i4 d = .5*200 + .5*0 = 100, v = .5*|100 - 0| = 50;
    #   i5 d = 50, v = .5*50 + .5*|50 - 0| = 50 -> D = 50 + 4*50 = 250.
    # Without: i2 d = 100, v = 50; i3 d = 100, v = 25; i4 d = 50, v = 37.5;
    #   i5 d = 25, v = 31.25 -> D = 25 + 4*31.25 = 150.
    arr, seq, ts = _adaptive_trace([0, 0, 200, 100, 0, 0])
    marker = np.array([False] * 5 + [True])
    jb = AdaptiveBuffer(alpha=0.5, beta=4.0, spike=spike, min_delay_ms=0.0)
    r = simulate(arr, seq, ts, clock_rate=8000, jitter_buffer=jb, marker=marker)
    assert r.buffer_delay_ms[-1] == pytest.approx(expected_delay)
    # Talkspurt 0 kept D0 = 0: packets 3 and 4 (n = 200, 100) are late either way.
    assert r.late.tolist() == [False, False, True, True, False, False]


def test_adaptive_min_delay_and_no_overlap():
    # Constant n = 5: d = 5, v = 0, so d + 4v would play each talkspurt's first packet at
    # its arrival; min_delay_ms = 20 holds it 20 ms.
    arr, seq, ts = _adaptive_trace([5] * 6)
    marker = np.array([False, False, False, True, False, False])
    r = simulate(arr, seq, ts, clock_rate=8000, jitter_buffer=AdaptiveBuffer(min_delay_ms=20.0), marker=marker)
    assert r.buffer_delay_ms.tolist() == pytest.approx([20.0] * 6)
    assert r.played.all()
    # No overlap: α = 0.5, β = 0, no minimum delay. Packet 1 (t = 0) arrives at 100:
    # D0 = 100, due at 100, its speech ends at 120. Packet 2 (t = 20, marker) arrives at
    # 100 too (n = 80): d = .5*100 + .5*80 = 90, so it would be due at 20 + 90 = 110,
    # inside packet 1's frame; the guard moves it to 120 (D1 = 100).
    jb = AdaptiveBuffer(alpha=0.5, beta=0.0, spike=False, min_delay_ms=0.0)
    r = simulate(np.array([100, 100]) * MS, [1, 2], [0, 160], clock_rate=8000,
                 marker=np.array([False, True]), jitter_buffer=jb)
    assert r.playout_ns.tolist() == [100 * MS, 120 * MS]
    assert r.talkspurt.tolist() == [0, 1]


def test_talkspurt_starts():
    # seq:        1    2    3    4    (5 lost)  6     7     8
    seq = np.array([1, 2, 3, 4, 6, 7, 8])
    ts = np.array([0, 160, 320, 960, 1280, 1440, 1600])  # 4: +640 for +1 seq -> silence
    marker = np.array([False, False, False, False, False, False, True])
    silent = np.array([False, True, False, False, False, False, False])
    got = talkspurt_starts(seq, ts, marker=marker, silent=silent)
    # 1: first; 3: sound after silence; 4: timestamp jump; 6: loss only (no start);
    # 8: marker.
    assert got.tolist() == [True, False, True, True, False, False, True]


def test_talkspurt_starts_ignores_arrival_order_and_duplicates():
    seq = np.array([2, 1, 3, 2])
    ts = np.array([160, 0, 320, 160])
    got = talkspurt_starts(seq, ts)
    assert got.tolist() == [False, True, False, False]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("fixed:60", FixedBuffer(60.0)),
        ("FIXED:12.5", FixedBuffer(12.5)),
        ("fixed", FixedBuffer(60.0)),
        ("adaptive", AdaptiveBuffer()),
        ("none", NoBuffer()),
        (None, NoBuffer()),
    ],
)
def test_parse_jitter_buffer(text, expected):
    assert parse_jitter_buffer(text) == expected


@pytest.mark.parametrize("text", ["fixed:abc", "fixed:-5", "fixed:inf", "elastic"])
def test_parse_jitter_buffer_rejects(text):
    with pytest.raises(InputError, match="jitter buffer"):
        parse_jitter_buffer(text)


def test_bad_input():
    with pytest.raises(InputError, match="same, non-zero length"):
        simulate([0, 1], [1], [0, 160], clock_rate=8000)
    with pytest.raises(InputError, match="same, non-zero length"):
        simulate([], [], [], clock_rate=8000)
    with pytest.raises(InputError, match="clock_rate"):
        simulate([0], [1], [0], clock_rate=0)
    with pytest.raises(InputError, match="depth_ms"):
        FixedBuffer(-1.0)
    with pytest.raises(InputError, match="alpha"):
        AdaptiveBuffer(alpha=1.0)


# ---- on the real captures of data/voice (made by data/voice/make_samples.sh) ----

CAPTURES = Path(__file__).resolve().parents[2] / "data" / "voice" / "captures"


def _real(direction_loaded: bool):
    def keep(sc, st):
        link = "up" if st["direction"] == "talk" else "down"
        return (sc["load"] in (link, "both")) == direction_loaded

    return stream_params(keep)


def _received(st):
    from qoe.voice.io import select_stream  # noqa: PLC0415
    from qoe.rtp import find_streams  # noqa: PLC0415

    cap = CAPTURES / st["receiver_capture"]
    return select_stream(find_streams(cap), int(st["ssrc"], 16), source=str(cap))


@pytest.mark.parametrize("sc, st", _real(False))
def test_real_unloaded_direction_loses_nothing_late(sc, st):
    from qoe.voice.playout import playout_stream  # noqa: PLC0415

    stream = _received(st)
    # Without load on this link its queue stays (nearly) empty and the delay varies by
    # well under 20 ms, so neither buffer discards anything...
    for jb in ("adaptive", "fixed:60"):
        assert playout_stream(stream, jitter_buffer=jb).late_lost == 0, jb
    # ...and with no load at all the adaptive buffer sits at its 20 ms floor: d + 4v adds
    # almost nothing (later packets of a talkspurt may come a few µs earlier: >= 19).
    if sc["load"] == "none":
        mean = playout_stream(stream, jitter_buffer="adaptive").to_dict()["buffer_delay_mean_ms"]
        assert 19.0 <= mean < 25.0


@pytest.mark.parametrize("sc, st", [p for p in _real(True) if p.values[0]["scenario"] == "up-b256"])
def test_real_bufferbloat_ramp_defeats_a_fixed_buffer(sc, st):
    # Under uplink load with a 256-packet tbf buffer the one-way delay climbs by about a
    # second during the call (test_delay.py): a fixed 60 ms buffer anchored on the first
    # packet discards most packets as late; the adaptive buffer follows the ramp at
    # talkspurt starts and loses far fewer; no buffer loses none late.
    from qoe.voice.playout import playout_stream  # noqa: PLC0415

    stream = _received(st)
    fixed = playout_stream(stream, jitter_buffer="fixed:60")
    adaptive = playout_stream(stream, jitter_buffer="adaptive")
    none = playout_stream(stream, jitter_buffer="none")
    assert fixed.late_lost > 0.5 * fixed.received
    assert adaptive.late_lost < 0.5 * fixed.late_lost
    assert none.late_lost == 0
    assert fixed.network_lost == adaptive.network_lost == none.network_lost > 0  # tbf tail drops
    assert adaptive.to_dict()["talkspurts"] > 5  # espeak pauses, found from silent payloads
