"""Every common RTP voice codec: decoded from real captures and checked against FFmpeg.

The captures and the encoded files their senders sent are in data/voice/codecs/ (made by
make_codec_captures.sh: FFmpeg 5.1's RTP muxer, or send.py for GSM, G.723.1, G.729, AMR,
AMR-WB and iLBC; three packets dropped on the way, 0-based indices 30, 31 and 70). The oracle is the
ffmpeg command line decoding the encoded file, exactly::

    ffmpeg -v error [-c:a DECODER] [DEMUXER OPTIONS] -i FILE -f s16le [-ac 1] -

qoe decodes through PyAV (its own FFmpeg 8.1 build) after its own depacketisation; up to
the first lost packet the two must agree sample for sample (``EXACT``), except where the
ffmpeg command line has no decoder of the same implementation (AMR and AMR-WB: qoe uses
OpenCORE, ffmpeg 5.1 only its native AMR-NB and AMR-WB decoders; ``AMR_SNR_DB``).
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

from qoe.errors import QoEWarning, UnsupportedCodecError
from qoe.mos import mos_to_r, r_to_mos
from qoe.rtp import find_streams
from qoe.voice import extract_audio
from qoe.voice.combined import combined_score
from qoe.voice.decode import audio_format, decode_stream, pesq_audio, stream_band
from qoe.voice.emodel import r_factor
from qoe.voice.payload import amr_frames, g723_frames

DATA = Path(__file__).resolve().parents[2] / "data" / "voice" / "codecs"
SPEECH = Path(__file__).resolve().parents[2] / "data" / "voice" / "speech"
FFMPEG = shutil.which("ffmpeg")
needs_ffmpeg = pytest.mark.skipif(FFMPEG is None, reason="ffmpeg is not installed")

# Up to the first loss, both are the same decoder on the same bits: no difference allowed.
EXACT = 0
# AMR: OpenCORE (qoe) and FFmpeg's native AMR-NB / AMR-WB decoders (the oracle) are different
# implementations of TS 26.090 / TS 26.190; measured 37 dB (AMR-NB) and 35.0 dB (AMR-WB, the
# VisualOn encoder's 12.65 kbit/s frames) apart on these samples before the first loss.
AMR_SNR_DB = 30.0
# After a loss the decoders' states differ (ours lost packets, the oracle's file did not);
# the received audio still follows the oracle's closely overall (lowest measured: 0.944, G.722 and G.723.1).
AFTER_LOSS_CORR = 0.9
DROPPED = 3  # packets dropped by the relay (make_codec_captures.sh)
TSHARK_MS = 0.0006  # tshark prints ms with 3 decimals: half a unit of rounding, and float slack

# name: (encoding name, decoder sample rate, channels, band, ffmpeg args before -i, file,
#        samples per packet at the decoder rate, decoder conceals loss itself)
CASES = {
    "g722": ("G722", 16000, 1, "wb", ["-f", "g722"], "g722.g722", None, False),
    "g726le-16": ("G726-16", 8000, 1, "nb", ["-f", "g726le", "-code_size", "2", "-sample_rate", "8000"],
                  "g726le-16.g726le", 160, False),
    "g726le-32": ("G726-32", 8000, 1, "nb", ["-f", "g726le", "-code_size", "4", "-sample_rate", "8000"],
                  "g726le-32.g726le", 160, False),
    "g726le-40": ("G726-40", 8000, 1, "nb", ["-f", "g726le", "-code_size", "5", "-sample_rate", "8000"],
                  "g726le-40.g726le", 160, False),
    "g726-24": ("AAL2-G726-24", 8000, 1, "nb", ["-f", "g726", "-code_size", "3", "-sample_rate", "8000"],
                "g726-24.g726", 160, False),
    "gsm": ("GSM", 8000, 1, "nb", ["-f", "gsm"], "gsm.gsm", 160, False),
    "g723": ("G723", 8000, 1, "nb", ["-f", "g723_1"], "g723.g723", 240, False),
    "g729": ("G729", 8000, 1, "nb", ["-f", "g729"], "g729.g729", 160, True),
    "l16": ("L16", 16000, 2, "wb", [], "l16.wav", 320, False),
    # FFmpeg's RTP muxer, default 1472-octet packets: 365 stereo samples; static PT 10 and "L16/44100/2"
    "l16_44k": ("L16", 44100, 2, "wb", [], "l16_44k.wav", 365, False),
    "l16_44k_dyn": ("L16", 44100, 2, "wb", [], "l16_44k.wav", 365, False),
    "opus_wb": ("OPUS", 48000, 1, "wb", ["-c:a", "libopus"], "opus_wb.ogg", 960, True),
    "opus_nb": ("OPUS", 48000, 1, "nb", ["-c:a", "libopus"], "opus_nb.ogg", 960, True),
    "speex": ("SPEEX", 8000, 1, "nb", [], "speex.ogg", 160, False),
    "speex_wb": ("SPEEX", 16000, 1, "wb", [], "speex_wb.ogg", 320, False),
    "amr_oa": ("AMR", 8000, 1, "nb", [], "amr.amr", 160, True),
    "amr_be": ("AMR", 8000, 1, "nb", [], "amr.amr", 160, True),
    "amrwb_oa": ("AMR-WB", 16000, 1, "wb", [], "amrwb.amr", 320, True),
    "amrwb_be": ("AMR-WB", 16000, 1, "wb", [], "amrwb.amr", 320, True),
    "ilbc20": ("ILBC", 8000, 1, "nb", [], "ilbc20.lbc", 160, False),
    "ilbc30": ("ILBC", 8000, 1, "nb", [], "ilbc30.lbc", 240, False),
}


def _stream(name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        streams = find_streams(DATA / f"{name}.pcap")
    assert len(streams) == 1
    return streams[0]


def _oracle(args: list[str], file: str, channels: int) -> np.ndarray:
    cmd = [FFMPEG, "-v", "error", *args, "-i", str(DATA / file), "-f", "s16le", *([] if channels > 1 else ["-ac", "1"]),
           "-"]
    out = np.frombuffer(subprocess.run(cmd, check=True, capture_output=True).stdout, dtype="<i2")
    return out.reshape(-1, channels) if channels > 1 else out


def _opus_pre_skip(file: str) -> int:
    """RFC 7845 §5.1: OpusHead's pre-skip (16 bits, little-endian, at byte 10), which FFmpeg
    drops from the Ogg file's decoded output but RTP (RFC 7587) does not signal."""
    data = (DATA / file).read_bytes()
    head = data.index(b"OpusHead")
    return int.from_bytes(data[head + 10:head + 12], "little")


def _snr_db(x: np.ndarray, ref: np.ndarray) -> float:
    err = np.sum((x.astype(float) - ref) ** 2)
    return float("inf") if err == 0 else 10 * np.log10(np.sum(ref.astype(float) ** 2) / err)


@needs_ffmpeg
@pytest.mark.parametrize("name", sorted(CASES))
def test_capture_decodes_as_ffmpeg_decodes_the_sent_file(name):
    codec, rate, channels, band, args, file, per_packet, plc = CASES[name]
    s = _stream(name)
    audio = extract_audio(s, jitter_buffer="none")
    assert (audio.codec, audio.sample_rate, audio.channels, audio.band) == (codec, rate, channels, band)
    ref = _oracle(args, file, channels)
    offset = _opus_pre_skip(file) if codec == "OPUS" else 0
    x = audio.samples[offset:]
    concealed = audio.concealed[offset:]
    first_loss = int(np.argmax(concealed))
    assert first_loss > 0
    if codec in ("AMR", "AMR-WB"):
        assert _snr_db(x[:first_loss], ref[:first_loss]) > AMR_SNR_DB
    else:
        assert np.abs(x[:first_loss].astype(int) - ref[:first_loss]).max() <= EXACT
    # the three dropped packets, and nothing else, are concealed: two runs (a burst of two, one)
    per = per_packet or 2 * 160  # G.722: 20 ms = 320 samples at 16 kHz (FFmpeg's muxer: 160 octets)
    if codec == "G722":
        per = round(np.median(np.diff(s.packets.ts_ext))) * 2
    runs = np.flatnonzero(np.diff(concealed.astype(int)) == 1)
    assert runs.size == 2
    assert int(concealed.sum()) == DROPPED * per
    lost = audio.samples[audio.concealed]
    if plc:  # the decoder's own concealment fills the gap
        assert np.abs(lost).max() > 0
        assert any("concealed by the decoder" in n for n in audio.notes)
    else:  # silence (the default conceal), and the result says the decoder has none
        assert np.abs(lost).max() == 0
        assert any("no loss concealment" in n for n in audio.notes)
    n = min(x.shape[0], ref.shape[0])
    keep = ~concealed[:n]
    a, b = x[:n][keep].astype(float).ravel(), ref[:n][keep].astype(float).ravel()
    assert np.corrcoef(a, b)[0, 1] > AFTER_LOSS_CORR


@pytest.mark.parametrize(
    "stem, file, magic, ft, size",
    [
        # 12.2 kbit/s: FT 7, 244 bits = 31 octets rounded up, + the header octet (TS 26.101 Table 1a)
        ("amr", "amr.amr", b"#!AMR\n", 7, 1 + 31),
        # 12.65 kbit/s: FT 2, 253 bits = 32 octets rounded up, + the header octet (TS 26.201 Table 2)
        ("amrwb", "amrwb.amr", b"#!AMR-WB\n", 2, 1 + 32),
    ],
)
def test_amr_payload_modes_give_the_storage_frames_the_encoder_wrote(stem, file, magic, ft, size):
    """RFC 4867 §4.3 and §4.4 payloads, back to the §5 storage frames of the file the sender
    sent (amr.amr: PyAV's "amr" muxer from libopencore_amrnb; amrwb.amr: the VisualOn AMR-WB
    encoder's frames, see send.py): frame k of the file is packet seq0 + k."""
    data = (DATA / file).read_bytes()
    assert data.startswith(magic)  # RFC 4867 §5.1
    body = data[len(magic):]
    assert len(body) % size == 0
    frames = [body[i:i + size] for i in range(0, len(body), size)]
    assert all((f[0] >> 3) & 15 == ft for f in frames)  # §5.3 frame header: 0 FT(4) Q 0 0
    for mode, oa in (("oa", True), ("be", False)):
        p = _stream(f"{stem}_{mode}").packets
        assert p.seq_ext.size == len(frames) - DROPPED
        seq0 = 1000  # send.py's first sequence number
        for seq, pay in zip(p.seq_ext.tolist(), p.payloads):
            got = amr_frames(pay, wideband=stem == "amrwb", octet_aligned=oa)
            assert got == [frames[seq - seq0]]


@pytest.mark.parametrize("stem", ["amr", "amrwb"])
def test_amr_bandwidth_efficient_and_octet_aligned_decode_alike(stem):
    a = extract_audio(_stream(f"{stem}_oa"), jitter_buffer="none")
    b = extract_audio(_stream(f"{stem}_be"), jitter_buffer="none")
    np.testing.assert_array_equal(a.samples, b.samples)


def test_g723_frames_are_the_files_frames():
    data = (DATA / "g723.g723").read_bytes()
    p = _stream("g723").packets
    seq0 = 1000
    for seq, pay in zip(p.seq_ext.tolist(), p.payloads):
        (frame,) = g723_frames(pay)
        k = seq - seq0
        assert frame == data[24 * k:24 * (k + 1)]  # 6.3 kbit/s: 24 octets each (RFC 3551 §4.5.3)


@pytest.mark.parametrize("mode, size", [(20, 38), (30, 50)])
def test_ilbc_frames_are_the_files_frames(mode, size):
    """RFC 3952 §4: one frame per packet here (send.py), 38 octets in the 20 ms mode and 50 in
    the 30 ms mode (RFC 3951 §3); the SDP names the mode (``a=fmtp:97 mode=20``, §5)."""
    data = (DATA / f"ilbc{mode}.lbc").read_bytes()  # FFmpeg's iLBC storage file (IlbcEncode.java)
    head = f"#!iLBC{mode}\n".encode()
    assert data.startswith(head) and (len(data) - len(head)) % size == 0
    s = _stream(f"ilbc{mode}")
    assert s.fmtp == {"mode": str(mode)}
    p = s.packets
    seq0 = 1000
    for seq, pay in zip(p.seq_ext.tolist(), p.payloads):
        k = seq - seq0
        assert pay == data[len(head) + size * k:len(head) + size * (k + 1)]


def test_g726_packing_is_named_by_the_sdp():
    """RFC 3551 §4.5.4: "G726-32" and "AAL2-G726-32" pack the same codes differently;
    decoding one as the other gives another signal."""
    right = audio_format("G726-32", 8000)
    wrong = audio_format("AAL2-G726-32", 8000)
    assert (right.decoder, wrong.decoder) == ("adpcm_g726le", "adpcm_g726")
    s = _stream("g726le-32")
    p = s.packets
    from qoe.voice.decode import decode_packets

    a = decode_packets(p.ts_ext, p.seq_ext, p.payloads, right)
    b = decode_packets(p.ts_ext, p.seq_ext, p.payloads, wrong)
    assert _snr_db(b.samples, a.samples) < 3.0


def test_l16_keeps_its_channels_in_network_byte_order():
    audio = extract_audio(_stream("l16"), jitter_buffer="none")
    import soundfile

    sent, fs = soundfile.read(DATA / "l16.wav", dtype="int16")  # the file ffmpeg sent as pcm_s16be
    assert fs == 16000 and audio.samples.shape[1] == 2
    first = int(np.argmax(audio.concealed))
    np.testing.assert_array_equal(audio.samples[:first], sent[:first])


@pytest.mark.parametrize(
    "codec, rate, fmtp, match",
    [
        ("EVS", 16000, {}, "payload type 97 .*EVS"),
        ("G726-33", 8000, {}, "16, 24, 32 or 40"),
        ("AMR", 8000, {"crc": "1"}, "crc=1"),
        ("AMR-WB", 16000, {"interleaving": "4"}, "interleaving"),
        ("speex", 11025, {}, "8000, 16000 or 32000"),
    ],
)
def test_unsupported_formats_are_named(codec, rate, fmtp, match):
    with pytest.raises(UnsupportedCodecError, match=match):
        audio_format(codec, rate, payload_type=97, fmtp=fmtp)


def test_clock_and_audio_rates():
    """RFC 3551 §4.5.2: G.722 runs an 8000 Hz clock for 16 kHz audio; RFC 7587 §4.1: Opus 48000."""
    g722 = audio_format("G722", 8000)
    assert (g722.clock_rate, g722.sample_rate, g722.band) == (8000, 16000, "wb")
    assert audio_format("opus", 48000).clock_rate == 48000
    assert audio_format("AMR-WB", 16000).band == "wb"
    assert audio_format("L16", 16000, channels=2).band == "wb"
    assert audio_format("L16", 8000).band == "nb"
    assert audio_format("PCMU", 8000).decoder is None  # G.711 stays on the own tables


# --------------------------------------------------------------------------- PESQ mode and score


@pytest.mark.parametrize(
    "name, rate, mode",
    [("g722", 16000, "wb"), ("opus_wb", 16000, "wb"), ("l16", 16000, "wb"), ("speex_wb", 16000, "wb"),
     ("amrwb_oa", 16000, "wb"), ("amrwb_be", 16000, "wb"), ("opus_nb", 8000, "nb"),
     ("g726le-32", 8000, "nb"), ("amr_oa", 8000, "nb"), ("gsm", 8000, "nb"), ("ilbc30", 8000, "nb")],
)
def test_pesq_rate_follows_the_decoded_bandwidth(name, rate, mode):
    """P.862 at 8 kHz for narrow-band codecs, P.862.2 at 16 kHz for wide-band ones; Opus by
    the bandwidth its TOC bytes announce (RFC 6716 §3.1)."""
    scored = pesq_audio(decode_stream(_stream(name)))
    assert scored.sample_rate == rate and scored.samples.ndim == 1
    assert scored.band == mode
    assert scored.concealed.shape == scored.samples.shape


def _score(name: str, reference: str):
    import soundfile

    from qoe.voice.call import CallOptions, Reference, score_call

    x, fs = soundfile.read(SPEECH / reference, dtype="int16")
    ref = Reference(x[: int(2.5 * fs)], fs, reference)  # the 2.5 s the sender sent
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        return score_call([_stream(name)], references=[ref], options=CallOptions(network_delay_ms=20.0)).directions[0]


@pytest.mark.parametrize("name", ["g722", "amrwb_be"])
def test_wide_band_call_gets_p862_2_and_the_g107_1_score(name):
    d = _score(name, "en_us_male_16k.wav")
    fr = d.full_reference
    assert fr is not None and fr.band == "wb"
    assert any("P.862.2 wide-band at 16000 Hz" in n for n in d.notes)
    # G.107.1 Annex A: R_WB = 1.29 R(MOS); MOS from R_WB / 1.29; Id,WB from the wide-band E-model
    assert fr.z1 == pytest.approx(1.29 * float(mos_to_r(min(fr.mos_lqo, 4.5))), rel=1e-12)
    assert fr.z2 == pytest.approx(float(r_factor(mouth_to_ear_ms=fr.ta_ms, band="wb").id_), rel=1e-12)
    assert fr.mos == pytest.approx(float(r_to_mos(max(0.0, fr.z1 - fr.z2) / 1.29)), rel=1e-12)


def test_narrow_band_call_keeps_p862_and_g107():
    d = _score("g726le-32", "en_us_male_16k.wav")  # a 16 kHz reference is brought to 8 kHz
    fr = d.full_reference
    assert fr is not None and fr.band == "nb"
    assert any("P.862 narrow-band at 8000 Hz" in n for n in d.notes)
    assert any("resampled from 16000 Hz to 8000 Hz" in n for n in d.notes)
    assert fr.z1 == pytest.approx(float(mos_to_r(min(fr.mos_lqo, 4.5))), rel=1e-12)


def test_combined_score_wide_band_scale():
    nb, wb = combined_score(4.0, 150.0), combined_score(4.0, 150.0, band="wb")
    assert float(wb.z1) == pytest.approx(1.29 * float(nb.z1))
    assert wb.band == "wb" and nb.band == "nb"


# The G.113 Appendix I preset each capture's codec gets (qoe.voice.call's choice: G.729 as
# G.729A+VAD, G.723.1 as 6.3 kbit/s with VAD); the others have none.
PRESETS = {"g729": "G.729A+VAD", "g723": "G.723.1+VAD", "gsm": "GSM-FR", "g726le-16": "G.726-16",
           "g726le-32": "G.726-32", "g726le-40": "G.726-40", "g726-24": "G.726-24"}

# What the note of each wide-band capture says (the others: no Appendix IV preset for the codec).
WB_NOTES = {"g722": "no Bpl for codec 'G.722-64'",  # RFC 3551 §4.5.2: G.722 on RTP is 64 kbit/s
            "amrwb_oa": "AMR-WB's Ie,WB depends on its mode", "amrwb_be": "AMR-WB's Ie,WB depends on its mode"}


def _score_json(name: str, *extra: str) -> dict:
    import json

    from click.testing import CliRunner

    from qoe_cli.main import cli

    res = CliRunner().invoke(cli, ["score", str(DATA / f"{name}.pcap"), "--network-delay-ms", "20", "--format", "json",
                                   *extra])
    assert res.exit_code == 0, res.output
    (r,) = json.loads(res.output)["results"]
    return r


@pytest.mark.parametrize("name", sorted(CASES))
def test_emodel_preset_follows_the_codec(name):
    """`qoe score --format json` (issue 11, points 5-6): narrow-band codecs get a G.113 Appendix I
    preset (G.107), wide-band ones an Appendix IV preset (G.107.1) where G.113 tabulates one;
    a network-side score that cannot be computed says why."""
    r = _score_json(name)
    band, preset = CASES[name][3], PRESETS.get(name)
    assert stream_band(_stream(name)) == band
    if preset is not None:
        assert any(f"G.113 preset {preset!r} assumed for {r['codec']}" in n for n in r["notes"])
        if r["network"] is not None:  # presets without a Bpl cannot score a lossy stream
            assert r["network"]["codec"] == r["inputs"]["codec_impairment"] == preset
        else:
            assert any(f"G.113 gives no Bpl for codec {preset!r}" in n for n in r["notes"])
    elif band == "wb":  # G.113 Appendix IV (G.107.1); none of these lossy captures can be scored without a Bpl
        assert r["network"] is None
        assert any(WB_NOTES.get(name, "no G.113 Appendix IV (wide-band) preset") in n for n in r["notes"])
    else:
        assert r["network"] is None
        assert any("no G.113 Appendix I preset" in n for n in r["notes"])


def test_a_preset_given_for_a_wide_band_codec_is_scored_narrow_band_and_says_so():
    r = _score_json("amrwb_be", "--codec", "G.711-plc")
    assert r["network"]["codec"] == "G.711-plc"
    assert any("AMR-WB is wide-band: this network-side score is on G.107's narrow-band scale only" in n
               for n in r["notes"])
    nb = _score_json("amr_be", "--codec", "G.711-plc")
    assert not any("wide-band" in n for n in nb["notes"])


def test_wide_band_capture_gets_the_g107_1_network_score():
    """Issue 11, point 6: a real G.722 capture (data/voice/codecs/g722.pcap, made by
    make_codec_captures.sh) scored with G.107.1 on its network side, with the R_WB worked by
    hand below from the equations (r_factor Notes), at the delay and loss the scorer measured.
    The loss itself is tshark's: ``tshark -q -o rtp.heuristic_rtp:TRUE -z rtp,streams -r
    g722.pcap`` (g722.pcap.tshark-rtp-streams.txt) counts 3 lost of 137 expected (134 received)."""
    import math

    from qoe.voice.call import CallOptions, score_call
    from qoe.voice.emodel import CODECS_WB

    bpl = 10.0  # G.722-64 tabulates no Bpl,WB: a lossy stream needs one given (any value serves the check)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        d = score_call([_stream("g722")],
                       options=CallOptions(network_delay_ms=20.0, emodel_params={"bpl": bpl})).directions[0]
    n = d.network
    assert n is not None and n.band == "wb" and n.codec == "G.722-64"
    assert d.received == 134 and d.network_lost == 3 and d.late_lost == 0  # tshark: 134 packets, 3 lost
    assert n.ppl == pytest.approx(100 * 3 / 137, abs=1e-12)
    # G.107.1 by hand at D = the measured mouth-to-ear delay (Ta = T = D, Tr = 2 D), defaults otherwise
    D = n.delay_ms
    slr, rlr, ds, lstr, ps, pr, nc, nfor, telr, wepl = 8, 2, 3, 18, 35, 35, -70, -96, 65, 110
    nos = ps - slr - ds - 100 + 0.004 * (ps - (slr + rlr) - ds - 14) ** 2
    pre = pr + 10 * math.log10(1 + 10 ** ((10 - lstr) / 10))
    nor = rlr - 121 + pre + 0.008 * (pre - 35) ** 2
    no_wb = 10 * math.log10(10 ** (nc / 10) + 10 ** (nos / 10) + 10 ** (nor / 10) + 10 ** ((nfor + rlr) / 10))
    k = 0.08 * D + 10 if D < 100 else 18.0
    terv = telr - 40 * math.log10((1 + D / 10) / (1 + D / 150)) + 6 * math.exp(-0.3 * D * D) + k
    re, roe = 80 + 3 * (terv - 14), -1.5 * (no_wb - rlr)
    idte = ((roe - re) / 2 + math.sqrt((roe - re) ** 2 / 4 + 100) - 1) * (1 - math.exp(-D))
    rle = 10.5 * (wepl + 7) * (2 * D + 1) ** -0.25
    idle = (129 - rle) / 2 + math.sqrt((129 - rle) ** 2 / 4 + 169)
    x = math.log2(D / 100)
    idd = 1.29 * 25 * ((1 + x**6) ** (1 / 6) - 3 * (1 + (x / 3) ** 6) ** (1 / 6) + 2)
    ie = CODECS_WB["g.722-64"].ie
    assert ie == 14.0
    ie_eff = ie + (95 - ie) * n.ppl / (n.ppl + bpl)  # no BurstR (G.107.1 7.5)
    r_wb = 129 - (idte + idle + idd) - ie_eff
    assert n.ie_eff == pytest.approx(ie_eff, abs=1e-9)
    assert n.id_ == pytest.approx(idte + idle + idd, abs=1e-9)
    assert n.r == pytest.approx(r_wb, abs=1e-9)
    assert n.mos == pytest.approx(float(r_to_mos(r_wb / 1.29)), abs=1e-12)  # G.107.1 Annex A
    assert n.burst_r != 1.0  # measured and reported, though G.107.1 does not use it


# --------------------------------------------------------------------------- no encoder here
# No G.729 Annex B encoder is installed (FFmpeg 5.1 and PyAV have none; Debian's libbcg729 is
# used with VAD off for the G.729 capture): G.729 SID frames are checked on synthetic payloads
# only, against ffmpeg decoding the same frames from its own storage format. iLBC and AMR-WB have
# real captures above (libjitsi's and VisualOn's encoders); their synthetic tests below add what
# the captures do not hold: two iLBC frames per packet with the mode read from the payload size
# (no fmtp), and AMR-WB random bits with Q = 1.


def _rtp(payloads: list[bytes], step: int, lost: tuple[int, ...] = ()):
    keep = [i for i in range(len(payloads)) if i not in lost]
    ts = np.array([1000 + step * i for i in keep], dtype=np.int64)
    seq = np.array([50 + i for i in keep], dtype=np.int64)
    return ts, seq, [payloads[i] for i in keep]


@needs_ffmpeg
@pytest.mark.parametrize("mode, size, samples", [(20, 38, 160), (30, 50, 240)])
def test_ilbc_frames_decode_as_ffmpeg_decodes_its_storage_file(tmp_path, mode, size, samples):
    """RFC 3952 §4: two frames per packet; the mode from the payload size alone (no SDP fmtp).
    Oracle: ``ffmpeg -v error -i x.lbc -f s16le -`` on the iLBC file FFmpeg's "ilbc" demuxer
    reads ("#!iLBC20\\n" or "#!iLBC30\\n", then the frames), of random frames."""
    from qoe.voice.decode import decode_packets

    rng = np.random.default_rng(mode)
    frames = [rng.integers(0, 256, size, dtype=np.uint8).tobytes() for _ in range(12)]
    path = tmp_path / "x.lbc"
    path.write_bytes(f"#!iLBC{mode}\n".encode() + b"".join(frames))
    ref = np.frombuffer(subprocess.run([FFMPEG, "-v", "error", "-i", str(path), "-f", "s16le", "-"], check=True,
                                       capture_output=True).stdout, dtype="<i2")
    payloads = [frames[i] + frames[i + 1] for i in range(0, 12, 2)]
    ts, seq, pays = _rtp(payloads, 2 * samples)
    audio = decode_packets(ts, seq, pays, audio_format("iLBC", 8000))
    np.testing.assert_array_equal(audio.samples, ref)
    # a lost packet leaves a gap of its length (iLBC in FFmpeg has no concealment)
    ts, seq, pays = _rtp(payloads, 2 * samples, lost=(3,))
    gap = decode_packets(ts, seq, pays, audio_format("iLBC", 8000))
    assert gap.samples.shape == ref.shape and int(gap.concealed.sum()) == 2 * samples
    np.testing.assert_array_equal(gap.samples[: 6 * samples], ref[: 6 * samples])


def test_amr_wb_payloads_decode_at_16_khz_and_conceal_a_loss():
    """RFC 4867 §4.3 bandwidth-efficient AMR-WB payloads of 12.65 kbit/s frames (FT 2, 253 bits,
    TS 26.201 Table 2), random bits: 320 samples at 16 kHz a frame, and
    the OpenCORE decoder conceals the lost one (NO_DATA frame)."""
    from qoe.voice.decode import decode_packets

    rng = np.random.default_rng(7)
    payloads = []
    for _ in range(10):
        bits = int.from_bytes(rng.integers(0, 256, 32, dtype=np.uint8).tobytes(), "big") >> 3  # 253 bits
        v = (((15 << 6) | (2 << 1) | 1) << 253) | bits  # CMR 15, ToC F=0 FT=2 Q=1, speech
        payloads.append((v << 1).to_bytes(33, "big"))  # 4 + 6 + 253 = 263 bits, 1 bit of padding
    assert amr_frames(payloads[0], wideband=True, octet_aligned=False)[0][0] == (2 << 3) | (1 << 2)
    ts, seq, pays = _rtp(payloads, 320, lost=(4,))
    audio = decode_packets(ts, seq, pays, audio_format("AMR-WB", 16000))
    assert audio.sample_rate == 16000 and audio.band == "wb" and audio.samples.shape == (3200,)
    assert int(audio.concealed.sum()) == 320 and np.abs(audio.samples[1280:1600]).max() > 0


@needs_ffmpeg
def test_g729_annex_b_sid_frame_ends_a_packet():
    """RFC 3551 §4.5.6: a 2-octet SID frame may end a G.729 payload; its speech frames decode
    as ffmpeg decodes them (``ffmpeg -v error -f g729 -i g729.g729 -f s16le -``), and the
    SID frame is counted in the notes (no comfort noise is generated)."""
    from qoe.voice.decode import decode_packets

    data = (DATA / "g729.g729").read_bytes()[:200]  # 20 frames of 10 octets (libbcg729, see send.py)
    ref = _oracle(["-f", "g729"], "g729.g729", 1)[:1600]
    payloads = [data[i:i + 20] for i in range(0, 200, 20)]
    payloads[-1] = payloads[-1] + b"\x12\x34"  # a SID frame after the last speech frames
    ts, seq, pays = _rtp(payloads, 160)
    audio = decode_packets(ts, seq, pays, audio_format("G729", 8000))
    np.testing.assert_array_equal(audio.samples[:1600], ref)
    assert any("1 Annex B SID frame" in n for n in audio.notes)


@pytest.mark.parametrize("name", sorted(CASES))
def test_captures_hold_what_tshark_sees(name):
    """Packets, losses, deltas and jitter of each capture as tshark counts them (the stored
    NAME.pcap.tshark-rtp-streams.txt: ``tshark -q -o rtp.heuristic_rtp:TRUE -z rtp,streams -r NAME.pcap``).
    The jitter is in RTP clock units turned to ms: it checks the clock rate too (AMR-WB: 16000 Hz,
    RFC 4867 §4.1; G.722: 8000 Hz, RFC 3551 §4.5.2)."""
    table = (DATA / f"{name}.pcap.tshark-rtp-streams.txt").read_text().splitlines()
    (row,) = [ln for ln in table if "127.0.0.1" in ln]
    cols = row.split()
    pct = next(i for i, c in enumerate(cols) if c.startswith("(") and c.endswith("%)"))  # "Lost" is "3 (4.0%)"
    packets, lost = int(cols[pct - 2]), int(cols[pct - 1])  # (the payload name may hold spaces)
    s = _stream(name)
    assert (s.stats.packets, s.stats.lost) == (packets, lost) == (packets, DROPPED)
    # the six columns before "Problems?": min/mean/max delta, min/mean/max jitter (ms, 3 decimals)
    theirs = [float(c) for c in cols[-7:-1]]
    if theirs[0] < 0:  # tshark prints -1.000 when it computed none (here: the Opus and Speex captures)
        pytest.skip("tshark computes no delta or jitter for this stream")
    st = s.stats
    ours = [st.min_delta_ms, st.mean_delta_ms, st.max_delta_ms, st.min_jitter_ms, st.mean_jitter_ms, st.max_jitter_ms]
    if s.clock_rate % 1000 == 0:
        assert ours == pytest.approx(theirs, abs=TSHARK_MS)
        return
    # 44.1 kHz L16: the deltas are tshark's; its jitter is RFC 3550's with the clock cut to whole
    # kHz (44000 Hz: recomputed below from the same packets, it gives tshark's three figures), ours
    # is RFC 3550's at the stream's 44100 Hz (RFC 3551 Table 4 / the SDP), recomputed the same way.
    assert ours[:3] == pytest.approx(theirs[:3], abs=TSHARK_MS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        (s,) = find_streams(DATA / f"{name}.pcap", keep_packets=True)
    p = s.packets
    assert _rfc3550_jitter(p.arrival_ns, p.ts_ext, 44000) == pytest.approx(theirs[3:], abs=TSHARK_MS)
    assert ours[3:] == pytest.approx(_rfc3550_jitter(p.arrival_ns, p.ts_ext, s.clock_rate), abs=1e-9)
    assert abs(ours[4] - theirs[4]) > 2 * TSHARK_MS  # the two clocks are told apart


def _rfc3550_jitter(arrival_ns, ts, clock_hz):
    """Min, mean, max of RFC 3550 §6.4.1's running jitter (ms) over packets in arrival order."""
    j, out = 0.0, []
    for i in range(1, len(ts)):
        d = (int(arrival_ns[i]) - int(arrival_ns[i - 1])) / 1e6 - (int(ts[i]) - int(ts[i - 1])) * 1000.0 / clock_hz
        j += (abs(d) - j) / 16.0
        out.append(j)
    return [min(out), sum(out) / len(out), max(out)]


@pytest.mark.parametrize("name, rate, channels", [("g722", 16000, 1), ("l16", 16000, 2), ("opus_wb", 48000, 1),
                                                   ("l16_44k", 44100, 2)])
def test_extract_cli_writes_the_decoders_rate_and_channels(tmp_path, name, rate, channels):
    import json

    import soundfile
    from click.testing import CliRunner

    from qoe_cli.main import cli

    out = tmp_path / "rx.wav"
    res = CliRunner().invoke(cli, ["extract", str(DATA / f"{name}.pcap"), "--jitter-buffer", "none", "-o", str(out),
                                   "--format", "json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    x, fs = soundfile.read(out, dtype="int16", always_2d=True)
    assert (fs, x.shape[1], summary["sample_rate"], summary["samples"]) == (rate, channels, rate, x.shape[0])
    assert summary["concealed_samples"] == int(extract_audio(_stream(name), jitter_buffer="none").concealed.sum())


def test_decode_packets_bad_input():
    from qoe.errors import InputError
    from qoe.voice.decode import decode_packets

    fmt = audio_format("G722", 8000)
    with pytest.raises(InputError, match="one timestamp, sequence number and payload per packet"):
        decode_packets([0, 160], [1], [b"\x00" * 160] * 2, fmt)
    with pytest.raises(InputError, match="conceal must be 'silence' or 'repeat', given conceal='fade'"):
        decode_packets([0], [1], [b"\x00" * 160], fmt, conceal="fade")  # type: ignore[arg-type]
