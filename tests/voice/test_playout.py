"""Rebuilding received audio from G.711 packets: placement by timestamp, concealment."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from voice_samples import stream_params
import soundfile

from qoe.errors import InputError, UnsupportedCodecError
from qoe.voice import g711
from qoe.voice.playout import extract_audio, playout_stream, rebuild_audio, silent_packets
from qoe.rtp import RtpStream, StreamKey, make_packets, rtp_stats

MS = 1_000_000


def _const(value, n=4, law="PCMA"):
    return g711.encode(np.full(n, value, dtype=np.int16), law)


def test_placement_by_timestamp_and_silence_for_gaps():
    # 4-sample packets, given out of order, are placed by timestamp. A-law of 1000 decodes to 1008 (Table 1a: segment 3, 125 -> interval 15 -> 126, x8);
    # of -2000 to -2016 (250 -> segment 4, value 252, x8).
    a = rebuild_audio([104, 100], [_const(-2000), _const(1000)], law="PCMA")
    assert a.ts_first == 100 and a.sample_rate == 8000
    assert a.samples.tolist() == [1008] * 4 + [-2016] * 4
    # ts 100 and 112: the 8 samples between are missing -> silence, marked concealed.
    a = rebuild_audio([100, 112], [_const(1000), _const(-2000)], law="PCMA")
    assert a.samples.tolist() == [1008] * 4 + [0] * 8 + [-2016] * 4
    assert a.concealed.tolist() == [False] * 4 + [True] * 8 + [False] * 4
    assert a.to_dict()["concealed_samples"] == 8


def test_played_mask_and_ts_first():
    # The second packet was late: left out, its samples concealed; output starts at 96.
    a = rebuild_audio([100, 104, 108], [_const(1000)] * 3, law="PCMA",
                      played=np.array([True, False, True]), ts_first=96)
    assert a.samples.tolist() == [0] * 4 + [1008] * 4 + [0] * 4 + [1008] * 4
    assert a.concealed.sum() == 8


def test_repeat_concealment_fades_to_silence():
    # µ-law 400 decodes to 396 (Table 2a: 100 -> segment 3 value 99, x4). One packet,
    # then a 12-sample gap, then a packet. fade over 8 samples (1 ms at 8 kHz): gains
    # 1, 7/8, ..., 1/8, then 0.
    p = _const(400, law="PCMU")
    a = rebuild_audio([0, 16], [p, p], law="PCMU", conceal="repeat", fade_ms=1.0)
    expected_gap = [round(396 * (1 - k / 8)) for k in range(8)] + [0] * 4
    assert a.samples.tolist() == [396] * 4 + expected_gap + [396] * 4
    assert a.concealed.tolist() == [False] * 4 + [True] * 12 + [False] * 4


def test_repeat_concealment_repeats_the_last_packet_waveform():
    ramp = np.array([100, 200, 300, 400], dtype=np.int16) * 8  # A-law exact for these
    p = g711.encode_alaw(ramp)
    dec = g711.decode_alaw(p).tolist()
    a = rebuild_audio([0, 12], [p, p], law="PCMA", conceal="repeat", fade_ms=1000.0)
    gain = [1 - k / 8000 for k in range(8)]
    want = [round(dec[k % 4] * gain[k]) for k in range(8)]
    assert a.samples[4:12].tolist() == want


def test_gap_at_start_is_silence_even_with_repeat():
    a = rebuild_audio([4], [_const(1000)], law="PCMA", conceal="repeat", ts_first=0)
    assert a.samples.tolist() == [0] * 4 + [1008] * 4


def test_silent_packets():
    loud = _const(3000, n=160)
    idle = b"\xd5" * 160  # A-law idle code: +8, -72 dBov
    quiet = _const(30, n=160)  # 24 after decoding ~ -63 dBov
    assert silent_packets([loud, idle, quiet, b""], "PCMA").tolist() == [False, True, True, True]
    assert silent_packets([quiet], "PCMA", threshold_dbov=-70).tolist() == [False]


def _stream(pt=8, codec="PCMA", *, n=10, drop=(), delay_ms=None, source=None):
    rng = np.random.default_rng(1)
    audio = source if source is not None else (rng.normal(0, 3000, n * 160)).astype(np.int16)
    seq = np.array([i for i in range(n) if i not in drop]) + 100
    t_ms = (seq - 100) * 20.0
    arr = t_ms + (delay_ms if delay_ms is not None else np.zeros(seq.size))
    order = np.argsort(arr, kind="stable")
    seq, arr = seq[order], arr[order]
    law = codec if codec in ("PCMA", "PCMU") else "PCMA"
    payloads = [g711.encode(audio[(s - 100) * 160:(s - 99) * 160], law) for s in seq]
    pk = make_packets(
        frame=np.arange(1, seq.size + 1), arrival_ns=np.rint(arr * MS).astype(np.int64), seq=seq,
        timestamp=(seq - 100) * 160 + 1000, marker=np.zeros(seq.size, bool),
        payload_type=np.full(seq.size, pt), payloads=payloads,
    )
    key = StreamKey("192.0.2.2", 40000, "198.51.100.2", 50000, 0x1234)
    st = RtpStream(key=key, payload_type=pt, codec=codec, clock_rate=8000, packets=pk, stats=rtp_stats(pk, 8000))
    return st, audio


@pytest.mark.parametrize("codec, pt", [("PCMA", 8), ("PCMU", 0)])
def test_extract_without_loss_is_the_decoded_signal(codec, pt):
    st, audio = _stream(pt, codec)
    a = extract_audio(st, jitter_buffer="none")
    assert a.codec == codec and a.ts_first == 1000
    assert np.array_equal(a.samples, g711.decode(g711.encode(audio, codec), codec))
    assert not a.concealed.any()


def test_extract_conceals_network_and_late_loss():
    # Packet 3 lost; packet 6 arrives 100 ms late for a 40 ms fixed buffer.
    delay = np.zeros(9)
    delay[5] = 100.0  # the 6th remaining packet is seq 106
    st, audio = _stream(drop=(3,), delay_ms=delay)
    a = extract_audio(st, jitter_buffer="fixed:40", conceal="silence")
    assert a.playout is not None and a.playout.network_lost == 1 and a.playout.late_lost == 1
    dec = g711.decode_alaw(g711.encode_alaw(audio))
    missing = np.zeros(audio.size, bool)
    missing[3 * 160:4 * 160] = missing[6 * 160:7 * 160] = True
    assert np.array_equal(a.concealed, missing)
    assert np.array_equal(a.samples[~missing], dec[~missing])
    assert not a.samples[missing].any()
    d = a.to_dict()
    assert d["effective_lost"] == 2 and d["concealed_samples"] == 320


def test_playout_stream_finds_talkspurts_from_silence():
    # Sound, 3 packets of digital silence, sound: the 4th packet of sound opens talkspurt 1.
    src = np.concatenate([np.full(160 * 3, 5000), np.zeros(160 * 3), np.full(160 * 4, 5000)]).astype(np.int16)
    st, _ = _stream(n=10, source=src)
    r = playout_stream(st, jitter_buffer="adaptive")
    assert r.talkspurt.tolist() == [0] * 6 + [1] * 4


# Codecs qoe.voice.decode does not know (EVS, an unnamed dynamic type, a static type whose
# name the stream lost) are refused; G.722, Opus, G.729, ... are decoded (tests/voice/test_codecs.py).
@pytest.mark.parametrize("pt, codec", [(97, "EVS"), (96, None), (18, None)])
def test_other_codecs_are_refused_with_their_payload_type(pt, codec):
    st, _ = _stream(pt, codec)
    with pytest.raises(UnsupportedCodecError, match=f"payload type {pt}"):
        extract_audio(st)


def test_bad_input():
    with pytest.raises(InputError, match="one payload per timestamp"):
        rebuild_audio([0, 4], [b"\xd5"], law="PCMA")
    with pytest.raises(InputError, match="conceal must be"):
        rebuild_audio([0], [b"\xd5"], law="PCMA", conceal="interpolate")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="law must be"):
        rebuild_audio([0], [b"\xd5"], law="G729")
    with pytest.raises(InputError, match="played has shape"):
        rebuild_audio([0], [b"\xd5"], law="PCMA", played=np.array([True, False]))


# ---- end to end on the real captures of data/voice (made by data/voice/make_samples.sh) ----

VOICE = Path(__file__).resolve().parents[2] / "data" / "voice"


REAL = stream_params()


def _received(st):
    from qoe.voice.io import select_stream  # noqa: PLC0415
    from qoe.rtp import find_streams  # noqa: PLC0415

    cap = VOICE / "captures" / st["receiver_capture"]
    return select_stream(find_streams(cap), int(st["ssrc"], 16), source=str(cap))


def _reference_through_g711(st, codec, tmp_path):
    """The reference WAV as the sender encoded it (ffmpeg) and an independent tool decodes it (SoX).

    ``ffmpeg -i REF.wav -c:a pcm_alaw -ar 8000 -ac 1 -f alaw ref.g711`` (pcm_mulaw/-f mulaw
    for PCMU), the encoder the capture script used; then ``sox -t raw -e a-law -r 8000
    -b 8 -c 1 ref.g711 -t raw -e signed-integer -b 16 -L ref.raw``. (ffmpeg's encoder
    rounds negative values at decision boundaries differently from audioop's, which G.711
    leaves open, so qoe's own encoder is not used for the expectation.)
    """
    enc, fmt, sox_enc = ("pcm_alaw", "alaw", "a-law") if codec == "PCMA" else ("pcm_mulaw", "mulaw", "u-law")
    g, raw = tmp_path / "ref.g711", tmp_path / "ref.raw"
    subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", str(VOICE / st["reference"]),
                    "-c:a", enc, "-ar", "8000", "-ac", "1", "-f", fmt, str(g)], check=True)
    subprocess.run(["sox", "-t", "raw", "-e", sox_enc, "-r", "8000", "-b", "8", "-c", "1", str(g),
                    "-t", "raw", "-e", "signed-integer", "-b", "16", "-L", str(raw)], check=True)
    return np.fromfile(raw, dtype="<i2")


@pytest.mark.skipif(not REAL, reason="data/voice/captures not present")
@pytest.mark.skipif(shutil.which("ffmpeg") is None or shutil.which("sox") is None, reason="needs ffmpeg and sox")
@pytest.mark.parametrize("sc, st", REAL)
def test_real_audio_is_the_reference_through_g711(sc, st, tmp_path):
    # Reference: the speech WAV that ffmpeg sent (data/voice/speech), G.711-encoded by
    # ffmpeg and decoded by SoX (see _reference_through_g711). The rebuilt audio must
    # equal it sample for sample wherever a packet arrived, with no shift.
    stream = _received(st)
    a = extract_audio(stream, jitter_buffer="none")
    expected = _reference_through_g711(st, a.codec, tmp_path)
    # samples[k] has RTP timestamp ts_first + k; the first packet in the sender's capture
    # carries the reference's sample 0 (ffmpeg sends the file from its start).
    offset = a.ts_first - _sender_first_ts(sc, st)
    assert offset >= 0
    n = min(a.samples.size, expected.size - offset)
    got, want, hole = a.samples[:n], expected[offset:offset + n], a.concealed[:n]
    assert n > 0.9 * a.samples.size
    assert np.array_equal(got[~hole], want[~hole])
    assert hole.sum() == a.playout.network_lost * 160  # 20 ms packets at 8 kHz


def _sender_first_ts(sc, st):
    from qoe.voice.io import select_stream  # noqa: PLC0415
    from qoe.rtp import find_streams  # noqa: PLC0415

    cap = VOICE / "captures" / st["sender_capture"]
    return int(select_stream(find_streams(cap), int(st["ssrc"], 16), source=str(cap)).packets.ts_ext.min())


@pytest.mark.skipif(not REAL, reason="data/voice/captures not present")
@pytest.mark.parametrize("sc, st", REAL)
def test_real_concealment_covers_the_effective_loss(sc, st):
    stream = _received(st)
    silence = extract_audio(stream, jitter_buffer="adaptive", conceal="silence")
    repeat = extract_audio(stream, jitter_buffer="adaptive", conceal="repeat")
    pr = silence.playout
    assert silence.concealed.sum() == pr.effective_lost * 160
    assert np.array_equal(silence.concealed, repeat.concealed)
    # Repetition only changes concealed samples.
    assert np.array_equal(silence.samples[~silence.concealed], repeat.samples[~repeat.concealed])
    assert not silence.samples[silence.concealed].any()


@pytest.mark.skipif(not REAL, reason="data/voice/captures not present")
def test_extract_cli_writes_the_wav(tmp_path):
    from click.testing import CliRunner  # noqa: PLC0415

    from qoe_cli.main import cli  # noqa: PLC0415

    sc, st = REAL[0].values
    cap = str(VOICE / "captures" / st["receiver_capture"])
    out = tmp_path / "rx.wav"
    res = CliRunner().invoke(cli, ["extract", cap, "--ssrc", st["ssrc"], "--jitter-buffer", "fixed:60",
                                   "--conceal", "repeat", "-o", str(out), "--format", "json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    x, rate = soundfile.read(out, dtype="int16")
    assert rate == 8000 and x.size == summary["samples"] and summary["jitter_buffer"] == "fixed:60"
    assert np.array_equal(x, extract_audio(_received(st), jitter_buffer="fixed:60", conceal="repeat").samples)
    # Several streams and no --ssrc: exit 2 with the SSRCs listed.
    res = CliRunner().invoke(cli, ["extract", cap, "-o", str(out)])
    assert res.exit_code == 2 and st["ssrc"].lower() in res.output
    res = CliRunner().invoke(cli, ["extract", cap, "--jitter-buffer", "fixed:x", "--ssrc", st["ssrc"], "-o", str(out)])
    assert res.exit_code == 2 and "fixed:x" in res.output


def test_payloads_cut_by_the_snapshot_length_are_not_rebuilt(tmp_path):
    """A capture made with a snapshot length (``tcpdump -s 70``, here written record by record
    with the original lengths kept) holds 16 of each packet's 160 PCMA bytes: the received audio
    cannot be rebuilt from that, and extract_audio says why instead of writing 2 ms of each
    20 ms packet (it did). The whole capture's stream is rebuilt."""
    from snapshot_cut import cut_capture

    from qoe.rtp import scan_capture

    source = Path(__file__).resolve().parents[2] / "data" / "voice" / "captures" / "down-b8_client.pcap"
    cut = tmp_path / "cut.pcap"
    cut_capture(source, cut, 70)
    with pytest.warns(Warning, match="snap length"):
        streams = scan_capture(cut).streams
    whole = scan_capture(source).streams
    assert len(streams) == len(whole) >= 1
    for s, w in zip(streams, whole):
        assert len(extract_audio(w).samples) > 0
        with pytest.raises(InputError, match=f"snapshot length cut {len(s.packets)} of its {len(s.packets)} payloads"):
            extract_audio(s)
    # a call scored with its reference says why it has no full-reference score (it said "no
    # reference was found in this stream's audio", having looked in 2 ms of each packet)
    import qoe

    reference = source.parents[1] / "speech" / "de_male_8k.wav"
    with pytest.warns(Warning):
        report = qoe.score(cut, reference=[reference])
    assert report.results and all(d.full_reference is None for d in report.results)
    assert any("full-reference score skipped: the capture's snapshot length cut" in n for n in report.note_lines())
