"""qoe.voice.pesq: the result and the facts behind the score."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import soundfile

from qoe.mos import raw_to_mos_lqo
from qoe.voice import PesqResult, load_speech, pesq
from qoe.voice.p862 import pesq_files

SAMPLE_MS_8K = 0.125  # one sample at 8 kHz, the resolution of the fine alignment (10.1.3.2)


@pytest.fixture
def speech(pesq_speech):
    return pesq_speech(8000, seconds=8.0, seed=3)


@pytest.fixture
def noisy(speech):
    rng = np.random.default_rng(0)
    return speech + 0.003 * rng.standard_normal(speech.size)


def test_result_fields(speech, noisy):
    res = pesq(speech, noisy, fs=8000)
    assert isinstance(res, PesqResult)
    assert res.mode == "nb" and res.fs == 8000
    assert -0.5 < res.raw < 4.5
    assert res.mos_lqo == pytest.approx(float(raw_to_mos_lqo(res.raw, "nb")))  # P.862.1
    assert res.raw == pytest.approx(4.5 - 0.1 * res.d_sym - 0.0309 * res.d_asym)  # 10.2.16
    assert len(res.utterance_start_s) == len(res.utterance_end_s) == len(res.utterance_delay_ms) >= 1
    assert res.frame_time_s.shape == res.frame_disturbance.shape == res.frame_disturbance_asym.shape
    assert np.all(np.diff(res.frame_time_s) == pytest.approx(0.016))  # 16 ms hop (10.2.4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.raw = 1.0
    with pytest.raises(ValueError):
        res.frame_disturbance[0] = 1.0


def test_to_dict_is_json(speech, noisy):
    res = pesq(speech, noisy, fs=8000)
    full = json.loads(json.dumps(res.to_dict()))
    assert full["mos_lqo"] == res.mos_lqo
    assert len(full["frame_disturbance"]) == res.frame_disturbance.size
    brief = res.to_dict(frames=False)
    assert "frame_disturbance" not in brief and brief["utterances"] == len(res.utterance_delay_ms)


def test_wide_band_result(pesq_speech):
    x = pesq_speech(16000, seconds=6.0, seed=4)
    res = pesq(x, 0.5 * x, fs=16000, mode="wb")
    assert res.raw is None  # P.862.2 defines MOS-LQO only
    assert res.mos_lqo == pytest.approx(float(raw_to_mos_lqo(4.5 - 0.1 * res.d_sym - 0.0309 * res.d_asym, "wb")))


def test_int16_and_float_inputs_agree(speech, noisy):
    x16 = np.round(speech * 32767).astype(np.int16)
    y16 = np.round(np.clip(noisy, -1, 1) * 32767).astype(np.int16)
    a = pesq(x16, y16, fs=8000)
    b = pesq(x16 / 32768.0, y16 / 32768.0, fs=8000)
    assert a.raw == b.raw
    assert a.ref_level_dbov == pytest.approx(b.ref_level_dbov)


def test_level_alignment_makes_the_score_scale_free(speech, noisy):
    # 10.1.1: both signals are scaled to the same power before the model.
    a = pesq(speech, noisy, fs=8000)
    b = pesq(speech, 0.05 * noisy, fs=8000)
    assert b.raw == pytest.approx(a.raw, abs=1e-6)
    # ... and the reported levels show the 26 dB difference.
    assert b.deg_level_dbov - a.deg_level_dbov == pytest.approx(20 * np.log10(0.05), abs=1e-6)


def test_reported_speech_level(speech):
    # The fixture sets -26 dBov over its own active samples; PESQ's VAD counts slightly
    # different blocks (edges, joined gaps), hence the 3 dB allowance.
    assert pesq(speech, speech, fs=8000).ref_level_dbov == pytest.approx(-26.0, abs=3.0)


def test_constant_delay_is_found(speech):
    delayed = np.concatenate([np.zeros(int(0.2 * 8000)), speech])
    res = pesq(speech, delayed, fs=8000)
    assert all(d == pytest.approx(200.0, abs=SAMPLE_MS_8K) for d in res.utterance_delay_ms)
    assert res.raw == pytest.approx(4.5, abs=0.05)


def test_delay_step_splits_utterances(speech):
    # +40 ms after 4 s (e.g. a jitter buffer growing in a pause).
    half = speech.size // 2
    stepped = np.concatenate([speech[:half], np.zeros(320), speech[half:]])
    res = pesq(speech, stepped, fs=8000)
    delays = np.array(res.utterance_delay_ms)
    starts = np.array(res.utterance_start_s)
    assert np.all(np.abs(delays[starts < 3.5]) <= SAMPLE_MS_8K)
    assert np.all(np.abs(delays[starts > 4.5] - 40.0) <= SAMPLE_MS_8K)


def test_frame_profile_points_at_the_degradation(speech):
    rng = np.random.default_rng(1)
    y = speech.copy()
    burst = slice(int(5.0 * 8000), int(5.4 * 8000))
    y[burst] += 0.01 * rng.standard_normal(burst.stop - burst.start)  # about 10 dB below the speech
    res = pesq(speech, y, fs=8000)
    worst = res.frame_time_s[np.argmax(res.frame_disturbance)]
    assert 4.95 <= worst <= 5.4
    outside = (res.frame_time_s < 4.8) | (res.frame_time_s > 5.6)
    assert res.frame_disturbance[outside].max() < 0.1 * res.frame_disturbance.max()


def test_signals_of_different_length(speech):
    short = speech[: speech.size - 4000]
    a = pesq(speech, short, fs=8000)
    b = pesq(short, speech, fs=8000)
    assert 1.0 < a.mos_lqo < 4.6 and 1.0 < b.mos_lqo < 4.6


def test_load_speech_keeps_or_resamples(tmp_path, pesq_speech):
    x = pesq_speech(16000, seconds=2.0)
    path = tmp_path / "x.wav"
    soundfile.write(path, x, 16000, subtype="PCM_16")
    same, fs = load_speech(path)
    assert fs == 16000 and same.size == x.size
    assert np.max(np.abs(same - x)) <= 1 / 32768  # 16-bit quantisation only
    down, fs = load_speech(path, 8000)
    assert fs == 8000 and down.size == x.size // 2
    odd, fs = load_speech(path, 11025)
    assert fs == 11025 and odd.size == pytest.approx(x.size * 11025 / 16000, abs=1)


def test_pesq_files_equals_pesq_on_arrays(tmp_path, speech, noisy):
    a, b = tmp_path / "ref.wav", tmp_path / "deg.wav"
    soundfile.write(a, speech, 8000, subtype="FLOAT")
    soundfile.write(b, noisy, 8000, subtype="FLOAT")
    assert pesq_files(a, b).raw == pytest.approx(pesq(speech, noisy, fs=8000).raw, abs=1e-6)
    # explicit resampling to 16 kHz scores the upsampled pair
    assert pesq_files(a, b, fs=16000).fs == 16000
