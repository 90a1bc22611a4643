"""qoe.voice.call is the one import path of the call scorer's names, and its results keep their shape.

The scorer is a package whose modules are private; these tests pin what users see through
public names only: the names, the lazy ``qoe.voice`` exports, and the key order of
``to_dict()``/``to_record()`` (the column order of JSON and CSV output). The key lists are
those the scorer produced before it was split (commit 23ecbe6), so that a refactor cannot
reorder a user's columns unnoticed.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np

import qoe.voice
import qoe.voice.call as call
from qoe.voice import g711
from qoe.voice.call import CallOptions, DirectionScore, FullReferenceScore, PlayScore, score_call
from qoe.rtp import RtpStream, StreamKey, make_packets, rtp_stats

FS = 8000


def _stream(n: int = 100) -> RtpStream:
    rng = np.random.default_rng(2)
    audio = np.round(rng.standard_normal(n * 160) * 2000).astype(np.int16)
    k = np.arange(n)
    pk = make_packets(frame=k + 1, arrival_ns=k * 20_000_000, seq=k, timestamp=k * 160, marker=k == 0,
                      payload_type=np.full(n, 8), payloads=[g711.encode_alaw(audio[i * 160:(i + 1) * 160]) for i in k])
    return RtpStream(key=StreamKey("192.0.2.2", 40000, "198.51.100.2", 50000, 7), payload_type=8, codec="PCMA",
                     clock_rate=FS, packets=pk, stats=rtp_stats(pk, FS))


def test_every_public_name_is_importable_from_call():
    for name in call.__all__:
        assert getattr(call, name) is not None, name
    assert call.USER_TALKS == "user talks" and call.USER_LISTENS == "user listens"


def test_lazy_voice_exports_are_the_call_modules_objects():
    for name in ("score_call", "score_calls", "find_calls", "CallOptions", "Reference", "CallScore", "DirectionScore"):
        assert getattr(qoe.voice, name) is getattr(call, name), name


def test_inputs_and_results_import_without_scipy():
    code = ("import sys; from qoe.voice import CallOptions, Reference, CallScore, DirectionScore, find_calls; "
            "import qoe.voice.call; print('scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_result_keys_keep_their_order():
    (d,) = score_call([_stream()], options=CallOptions(network_delay_ms=0.0)).directions
    assert list(d.to_dict()) == [
        "call_id", "direction", "stream", "codec", "payload_type", "clock_rate", "capture", "jitter_buffer",
        "conceal", "expected", "received", "network_lost", "late_lost", "duplicates", "effective_loss", "burst_r",
        "loss_bursts", "max_burst", "jitter_ms", "ssrc", "mos", "delay", "network", "full_reference", "inputs",
        "notes",
    ]
    assert list(d.delay.to_dict()) == [
        "packetisation_ms", "network_ms", "network_min_ms", "network_max_ms", "network_source", "buffer_ms",
        "mouth_to_ear_ms", "mouth_to_ear_max_ms", "basis", "ta_ms", "id_",
    ]
    assert list(d.network.to_dict()) == [
        "codec", "band", "ppl", "burst_r", "delay_ms", "id_", "ie_eff", "r", "mos", "mos_simplified", "mos_min",
        "mos_mean", "windows",
    ]
    assert list(d.to_record()) == [
        "call_id", "direction", "stream", "ssrc", "codec", "capture", "jitter_buffer", "expected", "received",
        "network_lost", "late_lost", "effective_loss", "burst_r", "jitter_ms", "packetisation_ms", "network_ms",
        "network_source", "buffer_ms", "mouth_to_ear_ms", "ta_ms", "id", "emodel_codec", "emodel_band", "ie_eff", "r",
        "mos_network", "mos_network_min", "mos_network_mean", "mos_cole_rosenbluth", "plays", "mos_lqo", "z1", "z2",
        "z", "mos_call", "mos", "notes",
    ]
    assert d.to_record()["ssrc"] == d.to_dict()["ssrc"] == d.identity()["ssrc"] == "0x00000007"
    # the brief view leaves columns out and renames none
    assert list(d.to_record(brief=True)) == list(DirectionScore.BRIEF_COLUMNS) == [
        "call_id", "direction", "stream", "codec", "expected", "network_lost", "late_lost", "burst_r",
        "mouth_to_ear_ms", "ta_ms", "id", "r", "mos_network", "mos_network_min", "mos_cole_rosenbluth", "mos_lqo",
        "z1", "z2", "z", "mos",
    ]
    play = PlayScore("r.wav", 0.0, 1.0, 0.9, 4.0, 3.5, 100.0, 80.0, 2.0, 78.0, 3.9)
    assert list(play.to_dict()) == [
        "reference", "start_s", "coverage", "correlation", "mos_lqo", "pesq_raw", "ta_ms", "z1", "z2", "z", "mos",
    ]
    fr = FullReferenceScore((play,), 4.0, 100.0, 80.0, 2.0, 78.0, 3.9)
    assert list(fr.to_dict()) == ["mos_lqo", "ta_ms", "z1", "z2", "z", "mos", "band", "plays"]


def test_options_keep_their_order_and_defaults():
    assert CallOptions().to_dict() == {
        "jitter_buffer": "adaptive", "conceal": "repeat", "delay_basis": "conversation", "window_s": 10.0,
        "codec": None, "user": None, "network_delay_ms": None, "clocks": "auto", "min_correlation": 0.4,
        "emodel_params": {}, "srtp_keys": [], "stream_timeout_s": 25.0,
    }
