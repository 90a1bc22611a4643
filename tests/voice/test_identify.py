"""Dynamic payload types without SDP, recognised from their payloads (issue 25).

The captures are make_codec_captures.sh's real AMR (PyAV's libopencore_amrnb), AMR-WB (the
VisualOn encoder) and Opus (libopus) streams with the SIP INVITE that carried their SDP left
out (data/voice/codecs/make_nosdp_captures.sh). The reference is the SDP of the same packets in
the original capture: what is recognised must be what it announced, and the audio decoded
without it must be the audio decoded with it, sample for sample.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from qoe.errors import InputError, QoEWarning, UnsupportedCodecError
from qoe.rtp import find_streams
from qoe.voice import extract_audio
from qoe.voice.identify import identify_payloads, identify_stream, parse_codec_spec

DATA = Path(__file__).resolve().parents[2] / "data" / "voice"
CODECS = DATA / "codecs"


def _stream(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        (s,) = find_streams(path, keep_packets=True)
    return s


@pytest.mark.parametrize("name", ["amr_oa", "amr_be", "amrwb_oa", "amrwb_be", "opus_wb"])
def test_self_describing_payloads_are_recognised_as_their_sdp_said(name):
    with_sdp, bare = _stream(CODECS / f"{name}.pcap"), _stream(CODECS / f"{name}_nosdp.pcap")
    assert bare.codec is None and bare.payload_type == with_sdp.payload_type  # no SDP: nothing named it
    found = identify_stream(bare)
    assert (found.codec, found.clock_rate) == (with_sdp.codec.upper(), with_sdp.clock_rate)
    if found.codec.startswith("AMR"):
        said = with_sdp.fmtp.get("octet-align", "0")  # RFC 4867 §8.1: absent means bandwidth-efficient
        assert found.fmtp["octet-align"] == said
    assert "recognised without SDP" in found.evidence
    ours = extract_audio(bare, jitter_buffer="none")
    theirs = extract_audio(with_sdp, jitter_buffer="none")
    np.testing.assert_array_equal(ours.samples, theirs.samples)
    assert ours.notes[0] == found.evidence and ours.notes[1:] == theirs.notes


def test_payloads_that_describe_nothing_say_what_to_pass():
    # G.711 payloads (dtmf.pcap's PCMU) under a dynamic type: raw samples carry no structure
    s = _stream(DATA / "field" / "dtmf.pcap")
    p = s.packets
    pcmu = np.flatnonzero(p.payload_type == 0)
    with pytest.raises(UnsupportedCodecError, match=r"do not identify a codec .*codec=\"AMR/8000 octet-align=1\""):
        identify_payloads([p.payloads[i] for i in pcmu], p.ts_ext[pcmu], p.seq_ext[pcmu], p.arrival_ns[pcmu],
                          payload_type=96)
    with pytest.raises(UnsupportedCodecError, match="too few"):
        identify_payloads(p.payloads[:2], p.ts_ext[:2], p.seq_ext[:2], p.arrival_ns[:2], payload_type=96)


def test_telephone_event_is_recognised_with_its_clock():
    # dtmf.pcap's SDP: "a=rtpmap:101 telephone-event/8000"; its events ride in the PCMU stream
    s = _stream(DATA / "field" / "dtmf.pcap")
    p = s.packets
    te = np.flatnonzero(p.payload_type == 101)
    found = identify_payloads([p.payloads[i] for i in te], p.ts_ext[te], p.seq_ext[te], p.arrival_ns[te],
                              payload_type=101)
    assert (found.codec, found.clock_rate) == ("telephone-event", 8000)


def test_a_codec_given_as_an_sdp_names_it_overrides():
    bare = _stream(CODECS / "amr_oa_nosdp.pcap")
    given = extract_audio(bare, jitter_buffer="none", codec="AMR/8000 octet-align=1")
    found = extract_audio(bare, jitter_buffer="none")
    np.testing.assert_array_equal(given.samples, found.samples)
    assert given.notes[0] == "codec given: AMR/8000 octet-align=1"
    # the wrong payload mode decodes to something else: the given codec is what is used
    wrong = extract_audio(bare, jitter_buffer="none", codec="AMR/8000")
    assert not np.array_equal(wrong.samples[:1000], found.samples[:1000])
    assert parse_codec_spec("opus/48000/2").channels == 2
    with pytest.raises(InputError, match="NAME/RATE"):
        parse_codec_spec("AMR")


def test_qoe_score_scores_a_recognised_stream_as_its_sdp_twin():
    import qoe

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        bare = qoe.score(CODECS / "amrwb_be_nosdp.pcap", kind="voice").to_records()
        with_sdp = qoe.score(CODECS / "amrwb_be.pcap", kind="voice").to_records()
    assert len(bare) == len(with_sdp) == 1
    for key in ("codec", "expected", "network_lost", "late_lost", "effective_loss", "burst_r", "emodel_band",
                "buffer_ms", "mouth_to_ear_ms"):
        assert bare[0][key] == with_sdp[0][key], key
    assert "AMR-WB (bandwidth-efficient" in bare[0]["notes"]
