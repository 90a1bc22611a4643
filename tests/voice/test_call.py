"""Call scores on hand-built calls: every term checked against the models it is made of.

The streams are built here from synthetic speech (tests/voice/conftest.py's generator)
encoded with G.711 A-law into 20 ms RTP packets, with delays and losses chosen so that the
expected delays, losses and model inputs can be written down by hand.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

from qoe.errors import QoEWarning
from qoe.mos import mos_to_r, r_to_mos
from qoe.voice import emodel, g711
from qoe.voice.call import (
    USER_LISTENS,
    USER_TALKS,
    CallOptions,
    DirectionScore,
    Reference,
    find_calls,
    score_call,
    score_calls,
)
from qoe.rtp.lossmodel import loss_pattern
from qoe.rtp import RtcpSummary, RtpStream, StreamKey, make_packets, rtp_stats

MS = 1_000_000
FS = 8000
PKT = 160  # 20 ms of G.711 at 8 kHz (RFC 3551 §4.5.14)
CLIENT, SERVER = ("192.0.2.2", 40000), ("198.51.100.2", 50000)
fixed40 = CallOptions(jitter_buffer="fixed:40")


def _stream(audio, *, ssrc, src=CLIENT, dst=SERVER, delay_ms=0.0, drop=(), t0_ms=0.0, pt=8, codec="PCMA",
            seq0=1000):
    """An RTP stream of ``audio`` as captured with the given per-packet delays and drops."""
    n = audio.shape[0] // PKT
    k = np.arange(n)
    arrival = t0_ms + k * 20.0 + np.broadcast_to(np.asarray(delay_ms, dtype=float), (n,))
    keep = ~np.isin(k, np.asarray(drop, dtype=int))
    idx = k[keep][np.argsort(arrival[keep], kind="stable")]  # arrival order
    if pt in (0, 8):
        enc = g711.encode_alaw if pt == 8 else g711.encode_ulaw
        payloads = [enc(audio[i * PKT:(i + 1) * PKT]) for i in idx]
    else:
        payloads = [bytes(20) for _ in idx]
    pk = make_packets(
        frame=np.arange(1, idx.size + 1),
        arrival_ns=np.rint(arrival[idx] * MS).astype(np.int64) + 1_700_000_000 * 10**9,
        seq=(seq0 + idx) % 65536,
        timestamp=idx * PKT,
        marker=idx == 0,
        payload_type=np.full(idx.size, pt),
        payloads=payloads,
    )
    return RtpStream(key=StreamKey(src[0], src[1], dst[0], dst[1], ssrc), payload_type=pt, codec=codec,
                     clock_rate=FS, packets=pk, stats=rtp_stats(pk, FS))


def _synthetic_speech(seconds: float, seed: int) -> np.ndarray:
    """The ``pesq_speech`` generator of tests/voice/conftest.py (loaded by path: module-scoped use)."""
    spec = importlib.util.spec_from_file_location("_voice_conftest", Path(__file__).with_name("conftest.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return np.round(mod._synthetic_speech(FS, seconds, seed) * 32767).astype(np.int16)


@pytest.fixture(scope="module")
def refs():
    """Two different 8 s synthetic utterances at -26 dBov (talk and listen)."""
    return _synthetic_speech(8.0, 0), _synthetic_speech(8.0, 1)


@pytest.fixture(scope="module")
def two_capture_call(refs):
    """A call measured at both ends: uplink 50 ms, downlink 10 ms, fixed 60 ms buffers, no loss."""
    talk, listen = refs
    # the user's capture (client): talk as sent, listen as received 10 ms later
    client = [_stream(talk, ssrc=0xA), _stream(listen, ssrc=0xB, src=SERVER, dst=CLIENT, delay_ms=10.0)]
    # the far end's capture (server): talk received 50 ms later, listen as sent
    server = [_stream(talk, ssrc=0xA, delay_ms=50.0), _stream(listen, ssrc=0xB, src=SERVER, dst=CLIENT)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", QoEWarning)  # everything measured: no warning
        (call,) = score_calls(client, sender_streams=server, references=[Reference(talk, FS, "talk.wav"),
                                                                         Reference(listen, FS, "listen.wav")],
                              options=CallOptions(jitter_buffer="fixed:60"), capture="client.pcap",
                              sender_capture="server.pcap")
    return call


def test_each_direction_is_scored_at_its_receiving_end(two_capture_call):
    call = two_capture_call
    assert call.user == CLIENT[0]
    talk, listen = call.directions
    assert (talk.direction, talk.ssrc, talk.capture) == (USER_TALKS, 0xA, "server.pcap")
    assert (listen.direction, listen.ssrc, listen.capture) == (USER_LISTENS, 0xB, "client.pcap")
    assert talk.inputs["network_delay"] == listen.inputs["network_delay"] == "measured"
    assert talk.inputs["loss"] == "measured at the receiver"


def test_mouth_to_ear_delay_is_packetisation_plus_network_plus_buffer(two_capture_call):
    talk, listen = two_capture_call.directions
    for d, network in ((talk, 50.0), (listen, 10.0)):
        assert d.delay.packetisation_ms == pytest.approx(20.0)  # 160 samples at 8 kHz
        assert d.delay.network_ms == pytest.approx(network, abs=1e-6)
        assert d.delay.buffer_ms == pytest.approx(60.0, abs=1e-6)  # fixed:60, constant delay
        assert d.delay.mouth_to_ear_ms == pytest.approx(20 + network + 60, abs=1e-6)
    # conversation basis: both directions use the mean of the two mouth-to-ear delays
    assert talk.delay.ta_ms == pytest.approx((130 + 90) / 2, abs=1e-6)
    assert listen.delay.ta_ms == pytest.approx(110.0, abs=1e-6)
    assert talk.delay.id_ == pytest.approx(float(emodel.delay_impairment(110.0)))


def test_network_side_score_is_g107_of_the_measured_inputs(two_capture_call):
    for d in two_capture_call.directions:
        n = d.network
        assert (d.network_lost, d.late_lost, n.ppl, n.codec) == (0, 0, 0.0, "G.711-plc")
        ref = emodel.r_factor(codec="G.711-plc", ta=110.0, t=110.0, tr=220.0)
        assert n.r == pytest.approx(float(ref.r), abs=1e-6)
        assert n.mos == pytest.approx(float(ref.mos), abs=1e-6)
        assert n.id_ == pytest.approx(float(ref.id_), abs=1e-6)
        assert n.mos_simplified == pytest.approx(float(emodel.simplified_r(110.0, 0.0).mos), abs=1e-6)
        assert n.mos_min == n.mos_mean == pytest.approx(n.mos)  # one 10 s window


def test_full_reference_terms_follow_the_paper_algebra(two_capture_call):
    for d, name in zip(two_capture_call.directions, ("talk.wav", "listen.wav")):
        fr = d.full_reference
        assert [p.reference for p in fr.plays] == [name]  # each direction holds its own speech only
        (play,) = fr.plays
        assert play.start_s == 0.0 and play.coverage == 1.0 and play.correlation > 0.99
        assert 3.5 < play.mos_lqo <= 4.6  # clean G.711 of synthetic speech
        # Pujol et al. §7.1: z1 = R(MOS-LQO), z2 = Id(Ta), z = max(0, z1 - z2), MOS = MOS(z)
        assert play.z1 == pytest.approx(float(mos_to_r(min(play.mos_lqo, 4.5))))
        assert play.z2 == pytest.approx(float(emodel.delay_impairment(110.0)))
        assert play.z == pytest.approx(max(0.0, play.z1 - play.z2))
        assert play.mos == pytest.approx(float(r_to_mos(play.z)))
        assert (fr.mos_lqo, fr.z, fr.mos) == (play.mos_lqo, play.z, play.mos)
        assert d.mos == fr.mos and d.inputs["reference"] == f"located: {name}"


def test_one_capture_assumes_the_base_delay_and_says_so(refs):
    talk, _ = refs
    s = _stream(talk[: 3 * FS], ssrc=0xA, delay_ms=30.0)
    with pytest.warns(QoEWarning, match="one-way delay assumed 0 ms"):
        res = score_call([s], options=CallOptions(jitter_buffer="fixed:40"))
    (d,) = res.directions
    assert d.inputs["network_delay"] == d.delay.network_source == "assumed"
    assert d.delay.network_ms == pytest.approx(0.0, abs=1e-6)  # constant delay: no variation seen
    assert any("assumed 0 ms" in n for n in d.notes)
    assert d.direction is None and "user's end unknown" in res.notes[0]


def test_given_and_rtcp_base_delays(refs):
    talk, _ = refs
    s = _stream(talk[: 3 * FS], ssrc=0xA, delay_ms=30.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", QoEWarning)
        given = score_call([s], options=fixed40.replace(network_delay_ms=25.0)).directions[0]
        rtcp = RtcpSummary(ssrc=0xA, sender_reports=3, reports=3, fraction_lost=0.0, cumulative_lost=0,
                           jitter_ticks=0, rtt_ms=(80.0, 90.0, 120.0))
        from_rtcp = score_call([dataclasses.replace(s, rtcp=rtcp)], options=fixed40).directions[0]
    assert (given.delay.network_source, given.delay.network_ms) == ("given", pytest.approx(25.0))
    assert given.delay.mouth_to_ear_ms == pytest.approx(20 + 25 + 40)
    # RFC 3550 §6.4.1 round trips 80, 90, 120 ms: median 90 -> 45 ms one way
    assert (from_rtcp.delay.network_source, from_rtcp.delay.network_ms) == ("rtcp", pytest.approx(45.0))


def test_captures_on_different_clocks_give_relative_delays(refs):
    talk, _ = refs
    n = 3 * FS // PKT
    delay = 30.0 + 20.0 * (np.arange(n) % 2)  # 30 / 50 ms alternating
    sender = _stream(talk[: 3 * FS], ssrc=0xA, t0_ms=-3_600_000.0)  # its clock is an hour behind
    receiver = _stream(talk[: 3 * FS], ssrc=0xA, delay_ms=delay, dst=CLIENT, src=SERVER)
    sender = dataclasses.replace(sender, key=receiver.key)
    with pytest.warns(QoEWarning) as rec:
        (call,) = score_calls([receiver], sender_streams=[sender], options=CallOptions(jitter_buffer="none"))
    assert any("do not share a clock" in str(w.message) for w in rec)
    (d,) = call.directions
    assert d.delay.network_source == "measured-relative"
    assert (d.delay.network_min_ms, d.delay.network_max_ms) == (pytest.approx(0.0), pytest.approx(20.0))
    with pytest.warns(QoEWarning, match="do not share a clock"):  # qoe.rtp.delay says so; the base is given
        (given,) = score_calls([receiver], sender_streams=[sender],
                               options=CallOptions(jitter_buffer="none", network_delay_ms=30.0))[0].directions
    assert given.delay.network_ms == pytest.approx(40.0)


def test_delay_variation_is_seen_in_one_capture(refs):
    talk, _ = refs
    n = 3 * FS // PKT
    ramp = np.linspace(0.0, 100.0, n)  # a queue filling up: 0 -> 100 ms more delay
    (d,) = score_call([_stream(talk[: 3 * FS], ssrc=0xA, delay_ms=ramp)],
                      options=CallOptions(network_delay_ms=10.0, jitter_buffer="none")).directions
    assert d.delay.network_min_ms == pytest.approx(10.0, abs=1e-3)
    assert d.delay.network_max_ms == pytest.approx(110.0, abs=1e-3)
    assert d.delay.network_ms == pytest.approx(10.0 + ramp.mean(), abs=1e-3)


def test_direction_basis_uses_each_directions_own_delay(refs):
    talk, listen = refs
    up = _stream(talk[: 3 * FS], ssrc=0xA, delay_ms=0.0)
    down = _stream(listen[: 3 * FS], ssrc=0xB, src=SERVER, dst=CLIENT, delay_ms=0.0)
    res = score_call([up, down], options=CallOptions(user=CLIENT[0], network_delay_ms=100.0, jitter_buffer="fixed:20",
                                                     delay_basis="direction"))
    t, li = res.directions
    assert (t.direction, li.direction) == (USER_TALKS, USER_LISTENS)
    assert t.delay.ta_ms == pytest.approx(t.delay.mouth_to_ear_ms) == pytest.approx(140.0)
    assert res.notes == (f"user's end: {CLIENT[0]} (given)",)


def test_late_and_network_loss_enter_the_emodel(refs):
    talk, _ = refs
    n = 3 * FS // PKT
    delay = np.full(n, 5.0)
    delay[[40, 41, 42]] = 120.0  # later than a 40 ms fixed buffer allows
    s = _stream(talk[: 3 * FS], ssrc=0xA, delay_ms=delay, drop=[10, 20, 21, 100])
    with pytest.warns(QoEWarning):
        (d,) = score_call([s], options=fixed40).directions
    assert (d.expected, d.network_lost, d.late_lost) == (n, 4, 3)
    assert d.effective_loss == pytest.approx(7 / n)
    lost = np.zeros(n, bool)
    lost[[10, 20, 21, 100, 40, 41, 42]] = True
    lp = loss_pattern(lost)
    assert d.burst_r == pytest.approx(lp.burst_r) and (d.loss_bursts, d.max_burst) == (4, 3)
    net = d.network
    assert net.ppl == pytest.approx(100 * 7 / n) and net.burst_r == pytest.approx(lp.burst_r)
    ta = d.delay.ta_ms
    ref = emodel.r_factor(codec="G.711-plc", ppl=100 * 7 / n, burst_r=lp.burst_r, ta=ta, t=ta, tr=2 * ta)
    assert net.r == pytest.approx(float(ref.r), rel=1e-9) and net.ie_eff == pytest.approx(float(ref.ie_eff))
    # no concealment: G.113's G.711 without PLC (Bpl 4.3) is far less robust
    with pytest.warns(QoEWarning):
        (plain,) = score_call([s], options=fixed40.replace(conceal="silence")).directions
    assert plain.network.codec == "G.711" and plain.network.mos < net.mos - 0.5


def test_a_bad_window_shows_in_the_minimum(refs):
    talk, _ = refs
    audio = np.tile(talk, 4)[: 30 * FS]  # 30 s -> three 10 s windows
    s = _stream(audio, ssrc=0xA, drop=np.arange(520, 1000, 4))  # 25 % loss in 10.4 .. 20 s only
    (d,) = score_call([s], options=CallOptions(network_delay_ms=20.0, jitter_buffer="fixed:40")).directions
    w = d.network.windows
    assert w.start_s.tolist() == [0.0, 10.0, 20.0]
    assert w.ppl[0] == 0.0 and w.ppl[2] == 0.0 and w.ppl[1] > 20.0
    assert d.network.mos_min == pytest.approx(w.mos[1])
    assert w.mos[1] < d.network.mos_mean < w.mos[0]
    rows = d.tables()["windows"]
    assert [r["window_start_s"] for r in rows] == [0.0, 10.0, 20.0] and rows[1]["lost"] == 120


def test_several_plays_and_a_late_start_are_located_and_scored(refs):
    talk, _ = refs
    gap = np.zeros(FS, dtype=np.int16)
    # the capture starts 2 s into a play, then a whole play, then 70 % of a third one
    audio = np.concatenate([talk[2 * FS:], gap, talk, gap, talk[: int(5.6 * FS)]])
    audio = audio[: audio.shape[0] // PKT * PKT]
    s = _stream(audio, ssrc=0xA)
    with pytest.warns(QoEWarning):
        (d,) = score_call([s], references=[Reference(talk, FS, "talk.wav")], options=fixed40).directions
    plays = d.full_reference.plays
    assert [round(p.start_s, 3) for p in plays] == [-2.0, 7.0, 16.0]
    assert [round(p.coverage, 3) for p in plays] == [0.75, 1.0, 0.7]
    assert all(p.mos_lqo > 3.0 for p in plays)
    assert d.full_reference.mos_lqo == pytest.approx(np.mean([p.mos_lqo for p in plays]))
    assert sum("cut by the capture" in n for n in d.notes) == 2


def test_a_reference_that_is_not_in_the_call_is_reported(refs):
    talk, listen = refs
    s = _stream(talk[: 4 * FS], ssrc=0xA)
    with pytest.warns(QoEWarning) as rec:
        (call,) = score_calls([s], references=[Reference(listen, FS, "other.wav")], options=fixed40)
    assert any("'other.wav' was not found in any stream" in str(w.message) for w in rec)
    (d,) = call.directions
    assert d.full_reference is None and d.inputs["reference"] == "not found"
    assert d.network is not None and np.isnan(d.to_record()["mos_lqo"])


def test_codecs_other_than_g711(refs):
    # G.711 bytes announced as G.729: decoded as G.729 (noise), so the reference is not found;
    # the E-model preset follows the announced codec (tests/voice/test_codecs.py: real captures)
    talk, _ = refs
    g729 = _stream(talk[: 2 * FS], ssrc=0xA, pt=18, codec="G729")
    dyn = _stream(talk[: 2 * FS], ssrc=0xB, src=("192.0.2.9", 4000), pt=96, codec="opus")
    with pytest.warns(QoEWarning):
        (a,) = score_call([g729], references=[Reference(talk, FS, "t")], options=CallOptions(network_delay_ms=0.0)).directions
        (b,) = score_call([dyn]).directions
    assert a.network.codec == "G.729A+VAD" and a.full_reference is None
    assert any("P.862 narrow-band at 8000 Hz (G729" in n for n in a.notes)
    assert any("no reference was found" in n for n in a.notes)
    # Opus's band is what its packets' TOC bytes announce (RFC 6716 §3.1): these G.711 bytes read as
    # narrow-band, and G.113 Appendix I tabulates no Opus preset (issue 11, points 5-6; a real wide-band
    # Opus capture: tests/voice/test_codecs.py)
    assert b.network is None and any("no G.113 Appendix I preset for payload type 96 (opus)" in n for n in b.notes)
    (c,) = score_call([dyn], options=CallOptions(codec="G.723.1+VAD", network_delay_ms=0.0)).directions
    assert c.network.codec == "G.723.1+VAD"


def test_amr_wb_preset_follows_the_sdp_mode(refs):
    # Issue 11, point 6: AMR-WB's Ie,WB depends on its mode (G.113 Table IV.1); a single SDP
    # mode-set (RFC 4867 §8.1: mode 2 = 12.65 kbit/s) names it, a list of modes does not.
    talk, _ = refs
    base = _stream(talk[: 2 * FS], ssrc=0xC, pt=97, codec="AMR-WB")
    one = dataclasses.replace(base, fmtp={"mode-set": "2"})  # clock kept at 8 kHz: only the timing reads it
    many = dataclasses.replace(base, fmtp={"mode-set": "0,2,8"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        (a,) = score_call([one], options=CallOptions(network_delay_ms=0.0)).directions
        (b,) = score_call([many], options=CallOptions(network_delay_ms=0.0)).directions
    assert a.network is not None and (a.network.codec, a.network.band) == ("G.722.2-12.65", "wb")
    ref = emodel.r_factor(band="wb", codec="G.722.2-12.65", mouth_to_ear_ms=a.network.delay_ms)
    assert a.network.r == pytest.approx(float(ref.r), abs=1e-9)  # no loss: Ie,WB = 13 on the 0..129 scale
    assert a.to_record()["emodel_band"] == "wb"
    assert b.network is None and any("names no single mode-set" in n for n in b.notes)


def test_calls_are_grouped_by_port_pair_and_sip_call_id(refs):
    talk, listen = refs
    up = _stream(talk[: FS], ssrc=1)
    down = _stream(listen[: FS], ssrc=2, src=SERVER, dst=CLIENT, t0_ms=5.0)
    other = _stream(talk[: FS], ssrc=3, src=("192.0.2.7", 4002), dst=("198.51.100.9", 4004), t0_ms=10.0)
    video = dataclasses.replace(_stream(talk[: FS], ssrc=4, src=("192.0.2.7", 5000)), clock_rate=90000, codec="H264", media="video")
    calls = find_calls([other, down, up, video])
    assert [c.call_id for c in calls] == ["192.0.2.2:40000 <-> 198.51.100.2:50000", "192.0.2.7:4002 <-> 198.51.100.9:4004"]
    assert [s.ssrc for s in calls[0].streams] == [1, 2]
    # a stream of another port pair joins a call through its SIP Call-ID
    sip_other = dataclasses.replace(other, call_id="abc@host")
    calls = find_calls([dataclasses.replace(up, call_id="abc@host"), down, sip_other])
    assert len(calls) == 1 and calls[0].call_id == "abc@host" and len(calls[0].streams) == 3


def test_records_and_dicts_are_plain(two_capture_call):
    d = two_capture_call.directions[0]
    rec = d.to_record()
    assert rec["direction"] == USER_TALKS and rec["ssrc"] == "0x0000000a"
    assert rec["mos"] == d.mos and rec["network_source"] == "measured"
    brief = d.to_record(brief=True)  # fewer columns, same names and values
    assert list(brief) == list(DirectionScore.BRIEF_COLUMNS) and brief == {k: rec[k] for k in brief}
    full = d.to_dict()
    assert full["full_reference"]["plays"][0]["reference"] == "talk.wav"
    assert full["network"]["windows"]["window_s"] == 10.0
    assert d.tables()["plays"][0]["z"] == d.full_reference.plays[0].z


def test_a_user_chosen_from_two_captures_says_how_once(two_capture_call):
    # score_calls chose the user's end (no user= given): the one note says how, not "(given)"
    assert two_capture_call.notes == (f"user's end: {CLIENT[0]} (where the first of the two captures was taken)",)
