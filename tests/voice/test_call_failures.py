"""Bad input to the call scorer: clear QoEError subclasses that say what was wrong."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from qoe.errors import InputError
from qoe.voice import g711
from qoe.rtp import RtpStream, StreamKey, make_packets, rtp_stats
from qoe.voice.call import CallOptions, Reference, score_call

FS = 8000
GIVEN = CallOptions(network_delay_ms=0.0)  # a base delay given: no warning about an assumed one


def _stream(n: int = 100) -> RtpStream:
    rng = np.random.default_rng(1)
    audio = np.round(rng.standard_normal(n * 160) * 2000).astype(np.int16)
    k = np.arange(n)
    pk = make_packets(frame=k + 1, arrival_ns=k * 20_000_000 + 5_000_000, seq=k, timestamp=k * 160,
                      marker=k == 0, payload_type=np.full(n, 8),
                      payloads=[g711.encode_alaw(audio[i * 160:(i + 1) * 160]) for i in k])
    return RtpStream(key=StreamKey("192.0.2.2", 40000, "198.51.100.2", 50000, 7), payload_type=8, codec="PCMA",
                     clock_rate=FS, packets=pk, stats=rtp_stats(pk, FS))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"delay_basis": "round-trip"}, "delay_basis must be 'conversation' or 'direction'"),
        ({"conceal": "noise"}, "conceal must be 'repeat' or 'silence'"),
        ({"network_delay_ms": -5.0}, "network_delay_ms must be a finite number of ms >= 0"),
        ({"network_delay_ms": float("nan")}, "network_delay_ms must be a finite number"),
        ({"window_s": 0}, "window_s must be a number of seconds > 0"),
        ({"jitter_buffer": "elastic"}, "jitter buffer 'elastic' not understood"),
        ({"jitter_buffer": "fixed:-3"}, "depth after 'fixed:'"),
        ({"codec": "G.999"}, "unknown nb codec 'G.999'; known codecs: G.711"),
        ({"clocks": "atomic"}, "clocks must be 'auto', 'same' or 'different'"),
        ({"user": "client"}, "user must be an IP address"),
        ({"min_correlation": 2.0}, r"min_correlation must be a correlation in \[-1, 1\]"),
        ({"emodel_params": {"tlr": 55}}, r"unknown E-model parameter\(s\) \['tlr'\]"),
        ({"emodel_params": {"ppl": 1.0, "ta": 5}}, "ppl, ta are measured from the capture"),
    ],
)
def test_bad_options(kwargs, match):
    with pytest.raises(InputError, match=match):
        CallOptions(**kwargs)


def test_options_are_checked_when_replaced():
    with pytest.raises(InputError, match="unknown call option\\(s\\) jitter; the options are: jitter_buffer"):
        CallOptions().replace(jitter="adaptive")
    with pytest.raises(InputError, match="conceal must be"):
        CallOptions().replace(conceal="noise")


def test_options_must_be_call_options():
    with pytest.raises(InputError, match="options must be a qoe.voice.CallOptions; given a dict"):
        score_call([_stream()], options={"jitter_buffer": "none"})


def test_no_streams():
    with pytest.raises(InputError, match="no streams given"):
        score_call([])


def test_stream_without_packet_table():
    s = dataclasses.replace(_stream(), packets=None)
    with pytest.raises(InputError, match="no packet table"):
        score_call([s], options=GIVEN)


def test_reference_at_another_rate_is_brought_to_the_streams():
    # P.862 scores a G.711 stream at 8 kHz: a 16 kHz reference is resampled, and the notes say so
    ref = Reference(np.zeros(16000), 16000, "wide.wav")
    d = score_call([_stream()], references=[ref], options=GIVEN).directions[0]
    assert "reference wide.wav: resampled from 16000 Hz to 8000 Hz (polyphase) to match the stream" in d.notes
