"""Locating plays of a reference in received audio (qoe.voice.locate)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from voice_samples import stream_params

from qoe.errors import InputError
from qoe.voice import g711
from qoe.voice.locate import envelope_db, locate_reference

FS = 8000
VOICE = Path(__file__).resolve().parents[2] / "data" / "voice"


def _bursty(rng, seconds=4.0):
    """Noise in 50 ms bursts switched on and off at random: a signal with a distinctive envelope."""
    n = int(seconds * FS)
    gate = np.repeat(rng.random(n // 400 + 1) > 0.5, 400)[:n]
    return rng.standard_normal(n) * gate * 3000.0


def test_plays_at_sample_exact_offsets_including_cut_ones(rng):
    ref = _bursty(rng)
    n = ref.size
    rec = np.concatenate([ref[1237:], np.zeros(3001), ref, np.zeros(777), ref[: int(0.6 * n)]])
    plays = locate_reference(rec, ref, fs=FS)
    second = n - 1237 + 3001
    third = second + n + 777
    assert [p.offset for p in plays] == [-1237, second, third]
    assert [(p.start, p.end) for p in plays] == [(0, n - 1237), (second, second + n), (third, rec.size)]
    assert [(p.ref_start, p.ref_end) for p in plays] == [(1237, n), (0, n), (0, int(0.6 * n))]
    assert [round(p.coverage, 4) for p in plays] == [round(1 - 1237 / n, 4), 1.0, 0.6]
    assert all(p.correlation > 0.99 for p in plays)


def test_level_codec_and_loss_do_not_hide_a_play(rng):
    ref = _bursty(rng)
    deg = g711.decode(np.frombuffer(g711.encode_alaw(np.round(0.2 * ref).astype(np.int16)), np.uint8), "PCMA")
    deg = deg.astype(float)
    deg[rng.random(deg.size // 160).repeat(160) < 0.1] = 0.0  # 10 % of 20 ms packets lost, silence
    rec = np.concatenate([np.zeros(5000), deg, np.zeros(2000)])
    (play,) = locate_reference(rec, ref, fs=FS)
    assert play.offset == 5000 and play.coverage == 1.0 and play.correlation > 0.5


def test_nothing_found_in_unrelated_signals(rng):
    ref = _bursty(rng)
    assert locate_reference(_bursty(rng, 12.0), ref, fs=FS) == ()
    assert locate_reference(np.zeros(4 * FS), ref, fs=FS) == ()
    assert locate_reference(np.zeros(10), ref, fs=FS) == ()
    # less of the reference than min_coverage is not a play
    assert locate_reference(ref[: int(0.4 * ref.size)], ref, fs=FS) == ()
    assert len(locate_reference(ref[: int(0.4 * ref.size)], ref, fs=FS, min_coverage=0.3)) == 1


def test_envelope_floor():
    x = np.concatenate([np.zeros(32), np.full(32, 1e-4), np.ones(32)])
    assert envelope_db(x, 32).tolist() == [-50.0, -50.0, 0.0]  # 1e-4 is -80 dB: floored at -50
    assert envelope_db(np.zeros(64), 32).tolist() == [-50.0, -50.0]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"fs": 0}, "positive integer sample rate"),
        ({"fs": 8000.0}, "positive integer sample rate"),
        ({"fs": FS, "min_coverage": 0.0}, "min_coverage"),
        ({"fs": FS, "min_correlation": 2.0}, "min_correlation"),
    ],
)
def test_bad_options(kwargs, match):
    with pytest.raises(InputError, match=match):
        locate_reference(np.zeros(FS), np.ones(FS), **kwargs)


def test_bad_signals():
    with pytest.raises(InputError, match="must be 1-D"):
        locate_reference(np.zeros((2, FS)), np.ones(FS), fs=FS)
    with pytest.raises(InputError, match="need at least 0.25 s"):
        locate_reference(np.zeros(FS), np.ones(100), fs=FS)


# ---- the threshold, measured on the real calls of data/voice --------------------------------

REAL = stream_params()


@pytest.fixture(scope="module")
def speech():
    from qoe.voice.p862 import load_speech

    return {p.name: load_speech(p)[0] for p in sorted((VOICE / "speech").glob("*_8k.wav"))}


@pytest.mark.skipif(not REAL, reason="data/voice/captures not present")
@pytest.mark.parametrize(("sc", "st"), REAL)
def test_the_sent_speech_and_only_it_is_found_in_each_real_stream(sc, st, speech):
    """The default threshold (0.4) separates the sent file from the other two on every real stream.

    Measured when written: other files at most 0.22, the sent one at least 0.67 (up-b8-pfifo and
    up-b256-pfifo, ~40 % loss), with the default jitter buffer and repetition concealment.
    """
    from qoe.voice.playout import extract_audio
    from qoe.rtp import find_streams

    (stream,) = [s for s in find_streams(VOICE / "captures" / st["receiver_capture"]) if s.ssrc == int(st["ssrc"], 16)]
    audio = extract_audio(stream, jitter_buffer="adaptive", conceal="repeat").samples
    sent = Path(st["reference"]).name
    for name, ref in speech.items():
        (best,) = locate_reference(audio, ref, fs=FS, min_correlation=-1.0, max_plays=1)
        if name == sent:
            assert best.correlation > 0.55, name
            assert abs(best.offset) < FS // 10  # the audio starts with the first packet received
        else:
            assert best.correlation < 0.3, name
    found = {n for n, ref in speech.items() if locate_reference(audio, ref, fs=FS)}
    assert found == {sent}


def test_examples_run():
    import doctest

    import qoe.voice.locate

    result = doctest.testmod(qoe.voice.locate, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
