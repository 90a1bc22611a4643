"""Captures holding every packet twice (issue 11, point 3), made with real tools and checked
against tshark and against an undoubled twin of the same run.

``data/voice/field/make_doubled_captures.sh`` sends with FFmpeg 5.1's RTP muxer from one
network namespace through a router namespace to another, and captures in the router with
tcpdump 4.99: ``-i any`` sees each datagram in on rc0 and out on rs0 (``doubled_any.pcap``,
LINUX_SLL2; ``doubled_sll.pcap``, LINUX_SLL with ``-y LINUX_SLL``; ``doubled_video.pcap``,
RTP/MPEG-TS), the captures of rc0 and rs0 merged by mergecap are a span port's view
(``doubled_span.pcap``, Ethernet), and a second tcpdump on rc0 alone in the same run gives
the undoubled twins (``doubled_any_twin.pcap``, ``doubled_video_twin.pcap``). No capture
has SIP/SDP: the streams are found by the heuristic. ``doubled_any`` lost 5 packets in a
tbf queue before the router (both copies missing).

Reference: TShark 4.0.17, ``tshark -q -o rtp.heuristic_rtp:TRUE -z rtp,streams -r <capture>``
run inside data/voice/field (line 1 of each ``.tshark-rtp-streams.txt`` holds the exact
command), and for the copies ``tshark -r <capture> -o rtp.heuristic_rtp:TRUE -Y rtp -T fields
-e rtp.seq`` (frames minus distinct sequence numbers).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

import qoe
from qoe.errors import QoEWarning
from qoe.rtp import find_streams, scan_capture, stream_delay
from qoe.voice import extract_audio

FIELD = Path(__file__).resolve().parents[2] / "data" / "voice" / "field"
SPEECH = FIELD.parent / "speech" / "en_us_male_8k.wav"
TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")

DOUBLED = ("doubled_any.pcap", "doubled_sll.pcap", "doubled_span.pcap", "doubled_video.pcap")
TWIN = {"doubled_any.pcap": "doubled_any_twin.pcap", "doubled_video.pcap": "doubled_video_twin.pcap"}
ALL = DOUBLED + tuple(TWIN.values())


def _helpers(name: str):
    spec = importlib.util.spec_from_file_location(f"_rtp_{name}_helpers", Path(__file__).with_name(f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


_tshark_helpers = _helpers("test_rtp_tshark")
assert_agree, parse_rtp_streams = _tshark_helpers.assert_agree, _tshark_helpers.parse_rtp_streams
_capture_helpers = _helpers("test_rtp_capture")
frame, rtp, write = _capture_helpers.frame, _capture_helpers.rtp, _capture_helpers.write


def _stored(name: str) -> str:
    text = (FIELD / f"{name}.tshark-rtp-streams.txt").read_text()
    assert text.startswith("# command: tshark -q -o rtp.heuristic_rtp:TRUE -z rtp,streams -r ")
    return text


def _row(name: str) -> dict:
    (row,) = parse_rtp_streams(_stored(name)).values()
    return row


def _live(name: str) -> str:
    command = _stored(name).splitlines()[0].removeprefix("# command: ").split()
    return subprocess.run([TSHARK, *command[1:]], cwd=FIELD, capture_output=True, text=True, check=True,
                          timeout=120).stdout


def _stream(name: str, **kw):
    (s,) = scan_capture(FIELD / name, **kw).streams
    return s


# ---------------------------------------------------------------- found, and counted as tshark


@pytest.mark.parametrize("name", ALL)
def test_doubled_and_twin_captures_agree_with_stored_tshark(name):
    """Packets, lost (negative when doubled: tshark prints 390 and -190 for doubled_any),
    problems, deltas and jitter as tshark's stored table."""
    assert assert_agree(_stored(name), FIELD / name) == 1


@needs_tshark
@pytest.mark.tshark
@pytest.mark.parametrize("name", ALL)
def test_doubled_and_twin_captures_agree_with_live_tshark(name):
    assert assert_agree(_live(name), FIELD / name) == 1


@pytest.mark.parametrize("name", DOUBLED)
def test_doubled_streams_are_found_by_the_heuristic(name):
    """No SDP: the heuristic takes the flow although every other sequence step is 0
    (before, it rejected it and the capture held no stream)."""
    s = _stream(name, keep_packets=False)
    assert s.found_by == "heuristic"
    assert (s.payload_type, s.codec) == ((33, "MP2T") if "video" in name else (8, "PCMA"))
    assert s.stats.duplicates > 0 and s.stats.lost < 0


@pytest.mark.parametrize("name", sorted(TWIN))
def test_duplicates_are_the_copies_the_twin_does_not_hold(name):
    """tshark's Pkts of the doubled capture less that of its twin (rc0 alone, same run) are
    the copies; tshark's expected (Pkts + Lost) is the twin's, and the numbers never
    received (the twin's Lost) make the same loss runs."""
    doubled, twin = _stream(name, keep_packets=False).stats, _stream(TWIN[name], keep_packets=False).stats
    rd, rt = _row(name), _row(TWIN[name])
    assert doubled.duplicates == int(rd["pkts"]) - int(rt["pkts"])
    assert doubled.expected == int(rd["pkts"]) + int(rd["lost"]) == int(rt["pkts"]) + int(rt["lost"])
    assert doubled.packets - doubled.duplicates == int(rt["pkts"])
    lost_numbers = doubled.mean_burst_length * doubled.loss_bursts
    assert lost_numbers == pytest.approx(int(rt["lost"]))
    assert (doubled.loss_bursts, doubled.max_burst_length, doubled.burst_ratio) == (
        twin.loss_bursts, twin.max_burst_length, twin.burst_ratio)
    assert twin.duplicates == 0


def test_doubled_any_lost_packets_in_both_copies():
    """The tbf drops before the router: tshark's twin table says 5 lost, so the doubled
    capture has numbers missing from both copies (not only a copy missing)."""
    assert int(_row("doubled_any_twin.pcap")["lost"]) == 5
    assert _stream("doubled_any.pcap", keep_packets=False).stats.loss_bursts >= 1


@needs_tshark
@pytest.mark.tshark
@pytest.mark.parametrize("name", DOUBLED)
def test_duplicates_equal_tshark_repeated_sequence_numbers(name):
    """``tshark -r <capture> -o rtp.heuristic_rtp:TRUE -Y rtp -T fields -e rtp.seq``: frames
    less distinct sequence numbers (no capture is long enough to wrap)."""
    out = subprocess.run([TSHARK, "-r", name, "-o", "rtp.heuristic_rtp:TRUE", "-Y", "rtp", "-T", "fields", "-e",
                          "rtp.seq"], cwd=FIELD, capture_output=True, text=True, check=True, timeout=120).stdout
    seqs = [int(x) for x in out.split()]
    st = _stream(name, keep_packets=False).stats
    assert st.packets == len(seqs)
    assert st.duplicates == len(seqs) - len(set(seqs))


def test_copies_lower_the_jitter_as_tshark_shows():
    """RFC 3550 A.8 updates the jitter with every packet: a copy's |D| is about 0, so the
    doubled capture's mean jitter is below its twin's, in tshark's tables as in ours."""
    rd, rt = _row("doubled_any.pcap"), _row("doubled_any_twin.pcap")
    assert float(rd["mean_j"]) < float(rt["mean_j"])
    d, t = _stream("doubled_any.pcap", keep_packets=False).stats, _stream("doubled_any_twin.pcap", keep_packets=False).stats
    assert d.mean_jitter_ms == pytest.approx(float(rd["mean_j"]), abs=0.0006)
    assert d.mean_jitter_ms < t.mean_jitter_ms


# ---------------------------------------------------------------- the heuristic on crafted flows


def _voice_frames(n, *, t0=1_700_000_000.0, seq0=1000, ts0=5000, ssrc=7):
    return [(t0 + 0.02 * i, frame("192.0.2.1", 5004, "198.51.100.2", 5006, rtp(seq0 + i, ts0 + 160 * i, ssrc)))
            for i in range(n)]


def test_heuristic_takes_copies_that_are_not_adjacent(tmp_path):
    """Copies two packets apart (a router's queue between the two sightings): p0 p1 p0 p1
    p2 p3 p2 p3 ...; every other step goes back by one."""
    one = _voice_frames(40)
    frames = []
    for i in range(0, 40, 2):
        pair = one[i : i + 2]
        frames += pair + [(t + 0.0001, b) for t, b in pair]
    (s,) = find_streams(write(tmp_path / "a.pcap", frames), keep_packets=False)
    assert (s.stats.packets, s.stats.duplicates, s.stats.expected, s.stats.loss_bursts) == (80, 40, 40, 0)


def test_heuristic_takes_a_doubled_flow_whatever_the_batches(tmp_path):
    frames = [(t + d, b) for t, b in _voice_frames(30) for d in (0.0, 0.000005)]
    path = write(tmp_path / "a.pcap", frames)
    for batch_size in (1, 5, 65536):
        (s,) = scan_capture(path, keep_packets=False, batch_size=batch_size).streams
        assert (s.stats.packets, s.stats.duplicates) == (60, 30)


def test_heuristic_rejects_one_datagram_repeated(tmp_path):
    """A flow that repeats one RTP-looking datagram has a single distinct packet: no step
    of its own, not a stream."""
    t0, b = _voice_frames(1)[0]
    path = write(tmp_path / "a.pcap", [(t0 + 0.02 * i, b) for i in range(40)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        assert find_streams(path, keep_packets=False) == []


# ---------------------------------------------------------------- downstream: play once, same score


@pytest.mark.parametrize("jitter_buffer", ["adaptive", "fixed:60", "none"])
def test_a_doubled_stream_plays_the_same_audio_as_its_twin(jitter_buffer):
    """Each sequence number is played once: the rebuilt audio is sample for sample the
    twin's (the copies are marked duplicates, never played nor late)."""
    d, t = _stream("doubled_any.pcap"), _stream("doubled_any_twin.pcap")
    ad, at = extract_audio(d, jitter_buffer=jitter_buffer), extract_audio(t, jitter_buffer=jitter_buffer)
    assert int(ad.playout.duplicate.sum()) == d.stats.duplicates == 195
    assert not (ad.playout.duplicate & (ad.playout.played | ad.playout.late)).any()
    assert ad.ts_first == at.ts_first
    np.testing.assert_array_equal(ad.samples, at.samples)
    np.testing.assert_array_equal(ad.concealed, at.concealed)


def test_one_way_delay_takes_the_first_copy():
    """The twin (rc0) and the doubled capture (its first copy is the one seen on rc0) as
    the two ends, either way round: every packet matched once, delays of microseconds
    (two tcpdump sockets time the same packet apart), nothing unmatched."""
    d, t = _stream("doubled_any.pcap"), _stream("doubled_any_twin.pcap")
    for sent, received in ((t, d), (d, t)):
        r = stream_delay(sent, received, clocks="same")
        assert (int(r.received.sum()), r.received.size, r.unmatched_received) == (195, 195, 0)
        assert np.nanmax(np.abs(r.delay_ms)) < 0.1


def test_a_doubled_call_scores_as_its_twin(tmp_path):
    """``qoe.score`` with the 4 s of speech sent (the first 4 s of en_us_male_8k.wav): the
    same loss, late packets, PESQ and z1 as the twin; the MOS differs only through the
    delays, whose arrival times differ by microseconds between the two tcpdumps."""
    x, fs = sf.read(SPEECH, dtype="int16")
    ref = tmp_path / "ref4.wav"
    sf.write(ref, x[: 4 * fs], fs, subtype="PCM_16")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)  # one capture: the network delay is assumed
        (d,) = qoe.score(FIELD / "doubled_any.pcap", reference=[ref], kind="voice").results
        (t,) = qoe.score(FIELD / "doubled_any_twin.pcap", reference=[ref], kind="voice").results
    assert (d.expected, d.network_lost, d.late_lost) == (t.expected, t.network_lost, t.late_lost)
    assert (d.duplicates, t.duplicates) == (195, 0)
    assert d.full_reference.mos_lqo == t.full_reference.mos_lqo
    assert d.full_reference.z1 == t.full_reference.z1
    assert d.network.mos == pytest.approx(t.network.mos, abs=1e-3)
    assert d.mos == pytest.approx(t.mos, abs=1e-3)


def test_a_doubled_video_stream_decodes_as_its_twin():
    """RTP/MPEG-TS doubled: the depacketiser drops the copies; the same frames as the twin."""
    d = qoe.score(FIELD / "doubled_video.pcap", kind="video").results[0]
    t = qoe.score(FIELD / "doubled_video_twin.pcap", kind="video").results[0]
    dd, td = d.to_dict(), t.to_dict()
    assert dd["frames_decoded"] == td["frames_decoded"] > 0
    for k in ("packets_lost", "frames_expected", "frames_damaged", "frames_missing", "freeze_events",
              "keyframes_damaged", "first_pts", "last_pts"):
        assert dd[k] == td[k], k


# ---------------------------------------------------------------- with SIP/SDP


def _double(src: Path, dst: Path) -> Path:
    """Every record of ``src`` written twice, the copy 1 µs later: what a span port
    mirroring both sides of a link (or mergecap of two identical captures) gives."""
    import dpkt  # noqa: PLC0415 - the test's own writer

    with open(src, "rb") as fi, open(dst, "wb") as fo:
        r = dpkt.pcap.Reader(fi)
        w = dpkt.pcap.Writer(fo, linktype=r.datalink())
        for t, b in r:
            w.writepkt(b, ts=t)
            w.writepkt(b, ts=t + 1e-6)
    return dst


def test_a_doubled_sip_call_binds_to_its_sdp(tmp_path):
    """dtmf.pcap (SIP, PCMU and RFC 4733 events) doubled: the stream is still the SDP's,
    with its call; every packet is a duplicate once; no number is lost."""
    one = _stream("dtmf.pcap", keep_packets=False)
    two = _stream(_double(FIELD / "dtmf.pcap", tmp_path / "dtmf2.pcap"), keep_packets=False)
    assert (two.found_by, two.call_id, two.payload_types) == ("sdp", "field-dtmf", (0, 101))
    assert (two.stats.packets, two.stats.duplicates, two.stats.expected) == (
        2 * one.stats.packets, one.stats.packets, one.stats.expected)
    assert two.stats.lost == one.stats.lost - one.stats.packets
    assert two.stats.loss_bursts == one.stats.loss_bursts == 0


@needs_tshark
@pytest.mark.tshark
def test_a_doubled_sip_call_agrees_with_live_tshark(tmp_path):
    """``tshark -q -o rtp.heuristic_rtp:TRUE -z rtp,streams -r dtmf2.pcap`` on the doubled
    call (tshark 4.0.17: 320 packets, lost -160, max jitter 9.129 ms against 10.638 once)."""
    path = _double(FIELD / "dtmf.pcap", tmp_path / "dtmf2.pcap")
    out = subprocess.run([TSHARK, "-q", "-o", "rtp.heuristic_rtp:TRUE", "-z", "rtp,streams", "-r", str(path)],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    assert assert_agree(out, path) == 1


# ---- leftovers of point 3: SIP messages and video packets counted once ---------------------------

DTMF = FIELD / "dtmf.pcap"  # a real SIP call: INVITE, 200, ACK, RTP with RFC 4733 events, BYE, 200


@pytest.mark.skipif(shutil.which("mergecap") is None or shutil.which("editcap") is None,
                    reason="needs editcap and mergecap (Wireshark)")
def test_sip_messages_a_capture_holds_twice_count_once(tmp_path):
    """dtmf.pcap holds every packet twice as a span port sees it: ``editcap -t 0.00005
    dtmf.pcap shifted.pcap; mergecap -w doubled.pcap dtmf.pcap shifted.pcap`` (each copy
    50 us after the original). ``tshark -r doubled.pcap -q -z sip,stat`` says "Number of SIP
    messages: 10", "Number of resent SIP messages: 4" (it flags the copies of INVITE, 200, BYE
    and 200 as resent, not the ACK's) and 5 on dtmf.pcap; qoe counts each message once: 5, and
    the call is the same (answered, ended)."""
    shifted, doubled = tmp_path / "shifted.pcap", tmp_path / "doubled.pcap"
    subprocess.run(["editcap", "-t", "0.00005", str(DTMF), str(shifted)], check=True, capture_output=True)
    subprocess.run(["mergecap", "-w", str(doubled), str(DTMF), str(shifted)], check=True, capture_output=True)
    (once,), (twice,) = scan_capture(DTMF).calls, scan_capture(doubled).calls
    assert once.messages == 5
    assert twice == once
    if TSHARK is not None:
        out = subprocess.run([TSHARK, "-r", str(doubled), "-q", "-z", "sip,stat"], capture_output=True, text=True,
                             check=True).stdout
        assert "Number of SIP messages: 10" in out and "Number of resent SIP messages: 4" in out


def test_sip_retransmission_is_not_a_copy(tmp_path):
    """The same bytes T1 = 500 ms later (RFC 3261 §17.1.1.2: a UA's first retransmission over
    UDP) is a new message, counted as tshark counts it: ``editcap -t 0.5`` instead of 50 us."""
    if shutil.which("mergecap") is None or shutil.which("editcap") is None:
        pytest.skip("needs editcap and mergecap (Wireshark)")
    shifted, doubled = tmp_path / "shifted.pcap", tmp_path / "resent.pcap"
    subprocess.run(["editcap", "-t", "0.5", str(DTMF), str(shifted)], check=True, capture_output=True)
    subprocess.run(["mergecap", "-w", str(doubled), str(DTMF), str(shifted)], check=True, capture_output=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        (call,) = scan_capture(doubled).calls
    assert call.messages == 10


def test_video_packets_received_count_each_packet_once():
    """doubled_video.pcap and its twin (the same run on rc0 only): tshark's rtp,streams says
    32 packets, Lost -16 on the doubled capture, 16 packets, Lost 0 on the twin (the stored
    .tshark-rtp-streams.txt); the video's packets received are the 16 distinct ones on both."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        (doubled,) = qoe.score(FIELD / "doubled_video.pcap", kind="video")
        (twin,) = qoe.score(FIELD / "doubled_video_twin.pcap", kind="video")
    (ref,) = parse_rtp_streams(_stored("doubled_video_twin.pcap")).values()
    (ref2,) = parse_rtp_streams(_stored("doubled_video.pcap")).values()
    assert (int(ref["pkts"]), int(ref2["pkts"]), int(ref2["lost"])) == (16, 32, -16)
    assert doubled.packets_received == twin.packets_received == 16
    assert doubled.packets_lost == twin.packets_lost == 0
