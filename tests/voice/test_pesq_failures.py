"""Bad input to qoe.voice.pesq, load_speech and pesq_files: one QoEError subclass each, saying why."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile

from qoe.errors import InputError, NoSpeechError, QoEError
from qoe.voice import load_speech, pesq
from qoe.voice.p862 import pesq_files


@pytest.fixture
def speech(pesq_speech):
    return pesq_speech(8000, seconds=4.0, seed=1)


@pytest.mark.parametrize("fs", [44100, 11025, 48000, 8000.0, "8000", True])
def test_unsupported_rate(speech, fs):
    with pytest.raises(InputError, match="8000 or 16000 Hz"):
        pesq(speech, speech, fs=fs)


def test_wide_band_needs_16k(speech):
    with pytest.raises(InputError, match="wide-band mode .* needs fs=16000"):
        pesq(speech, speech, fs=8000, mode="wb")


def test_unknown_mode(speech):
    with pytest.raises(InputError, match="mode must be 'nb'"):
        pesq(speech, speech, fs=8000, mode="swb")


def test_stereo_is_refused(speech):
    stereo = np.column_stack([speech, speech])
    with pytest.raises(InputError, match=r"deg must be a 1-D mono signal; given a stereo.*\(32000, 2\)"):
        pesq(speech, stereo, fs=8000)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_samples(speech, bad):
    y = speech.copy()
    y[1234] = bad
    with pytest.raises(InputError, match="deg contains 1 NaN or infinite samples .first at index 1234"):
        pesq(speech, y, fs=8000)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.complex128, bool])
def test_sample_type(speech, dtype):
    with pytest.raises(InputError, match="ref must hold int16 or float samples"):
        pesq(speech.astype(dtype), speech, fs=8000)


def test_degraded_too_short(speech):
    # Annex A software: signals shorter than 1/4 s are refused.
    with pytest.raises(InputError, match=r"deg is 0\.200 s long; P\.862 needs at least 0\.25 s"):
        pesq(speech, speech[:1600], fs=8000)


def test_silent_reference(speech):
    with pytest.raises(NoSpeechError, match="ref is silent"):
        pesq(np.zeros_like(speech), speech, fs=8000)


def test_silent_degraded(speech):
    with pytest.raises(NoSpeechError, match="deg is silent"):
        pesq(speech, np.zeros_like(speech), fs=8000)


def test_reference_without_utterance():
    # 100 ms tone bursts once a second: speech activity, but no burst reaches the 200 ms an
    # utterance needs (P.862 clause 10.1.3.1). The ITU code (pesq 0.0.4) raises
    # NoUtterancesError("No utterances detected") on the same signal.
    t = np.arange(8000 * 4) / 8000
    bursts = 0.3 * np.sin(2 * np.pi * 500 * t) * ((t % 1.0) < 0.1)
    with pytest.raises(NoSpeechError, match="no utterance found"):
        pesq(bursts, bursts, fs=8000)


def test_errors_are_qoe_errors_and_value_errors(speech):
    with pytest.raises(QoEError):
        pesq(speech, speech, fs=22050)
    with pytest.raises(ValueError):
        pesq(speech, speech, fs=22050)


def test_load_speech_missing_file(tmp_path):
    with pytest.raises(InputError, match="cannot read speech file .*nothing.wav"):
        load_speech(tmp_path / "nothing.wav")


def test_load_speech_not_audio(tmp_path):
    path = tmp_path / "text.wav"
    path.write_text("not a wav file")
    with pytest.raises(InputError, match="cannot read speech file"):
        load_speech(path)


def test_load_speech_stereo(tmp_path, speech):
    path = tmp_path / "stereo.wav"
    soundfile.write(path, np.column_stack([speech, speech]), 8000)
    with pytest.raises(InputError, match="has 2 channels; PESQ scores one mono channel"):
        load_speech(path)


@pytest.mark.parametrize("fs", [0, -8000, 8000.5])
def test_load_speech_bad_rate(tmp_path, speech, fs):
    path = tmp_path / "x.wav"
    soundfile.write(path, speech, 8000)
    with pytest.raises(InputError, match="fs must be a positive integer"):
        load_speech(path, fs)


def test_pesq_files_rate_mismatch(tmp_path, speech, pesq_speech):
    a, b = tmp_path / "a.wav", tmp_path / "b.wav"
    soundfile.write(a, speech, 8000)
    soundfile.write(b, pesq_speech(16000, seconds=4.0), 16000)
    with pytest.raises(InputError, match="a.wav' is sampled at 8000 Hz but .*b.wav' at 16000 Hz"):
        pesq_files(a, b)


def test_pesq_files_names_the_files(tmp_path, speech):
    a, b = tmp_path / "a.wav", tmp_path / "b.wav"
    soundfile.write(a, speech, 8000)
    soundfile.write(b, speech[:1000], 8000)
    with pytest.raises(InputError, match="a.wav' vs .*b.wav': deg is 0.125 s long"):
        pesq_files(a, b)


def test_pesq_files_unsupported_rate_suggests_resampling(tmp_path, speech):
    a = tmp_path / "a.wav"
    soundfile.write(a, speech, 11025)
    with pytest.raises(InputError, match="Resample first"):
        pesq_files(a, a)
