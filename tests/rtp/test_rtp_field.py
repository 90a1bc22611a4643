"""Voice captures from the field (issue 11, points 1 and 2), crafted with real tools and
checked against tshark.

The captures and tshark's tables are made by ``data/voice/field/make_field_captures.sh``
(SIP text from ``data/voice/field/send.py``, RTP from FFmpeg 5.1's RTP muxer or send.py,
captured by tcpdump on the loopback). Reference: TShark 4.0.17,
``tshark -q -o rtp.heuristic_rtp:TRUE -z rtp,streams -r <capture>`` (run inside
data/voice/field; line 1 of each ``.tshark-rtp-streams.txt`` holds the exact command).
tshark follows the SDP of each call, so its jitter uses the clock rate announced for the
stream and leaves RFC 4733 event packets out of the jitter.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from qoe.rtp import rtp_stats, scan_capture

FIELD = Path(__file__).resolve().parents[2] / "data" / "voice" / "field"
TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")

_spec = importlib.util.spec_from_file_location("_rtp_tshark_helpers", Path(__file__).with_name("test_rtp_tshark.py"))
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)  # type: ignore[union-attr]
assert_agree, parse_rtp_streams = _helpers.assert_agree, _helpers.parse_rtp_streams


def _stored(name: str) -> str:
    text = (FIELD / f"{name}.tshark-rtp-streams.txt").read_text()
    assert text.startswith("# command: tshark -q -o rtp.heuristic_rtp:TRUE -z rtp,streams -r ")
    return text


def _live(name: str) -> str:
    command = _stored(name).splitlines()[0].removeprefix("# command: ").split()
    return subprocess.run([TSHARK, *command[1:]], cwd=FIELD, capture_output=True, text=True, check=True,
                          timeout=120).stdout


# ---------------------------------------------------------------- point 1: one port, four calls


def test_sequential_calls_on_one_port_follow_the_sdp_in_force():
    """Four L16 streams to 127.0.0.1:40000, PT 99 announced at 8, 16, 32 then 48 kHz (the last
    by a re-INVITE of the third call): each stream takes the rtpmap and the call of the SDP
    seen last before its first packet, not the capture's last SDP."""
    scan = scan_capture(FIELD / "reused_port.pcap", keep_packets=False)
    streams = sorted((s for s in scan.streams if s.key.dport == 40000), key=lambda s: s.stats.first_ns)
    assert [(s.payload_type, s.codec, s.clock_rate, s.call_id, s.found_by) for s in streams] == [
        (99, "L16", 8000, "field-a", "sdp"),
        (99, "L16", 16000, "field-b", "sdp"),
        (99, "L16", 32000, "field-c", "sdp"),
        (99, "L16", 48000, "field-c", "sdp"),
    ]
    assert len({s.key.ssrc for s in streams}) == 4


def test_sequential_calls_on_one_port_agree_with_stored_tshark():
    assert assert_agree(_stored("reused_port.pcap"), FIELD / "reused_port.pcap") == 4


@needs_tshark
@pytest.mark.tshark
def test_sequential_calls_on_one_port_agree_with_live_tshark():
    assert assert_agree(_live("reused_port.pcap"), FIELD / "reused_port.pcap") == 4


# ---------------------------------------------------------------- point 2: RFC 4733 events


def test_telephone_events_agree_with_stored_tshark():
    """PCMU with two DTMF events (PT 101, telephone-event/8000) in the same SSRC: tshark's
    max delta 27.542, mean jitter 3.192 and max jitter 10.638 ms (stored table)."""
    assert assert_agree(_stored("dtmf.pcap"), FIELD / "dtmf.pcap") == 1


@needs_tshark
@pytest.mark.tshark
def test_telephone_events_agree_with_live_tshark():
    assert assert_agree(_live("dtmf.pcap"), FIELD / "dtmf.pcap") == 1


def test_telephone_events_in_the_jitter_only_when_asked():
    """``event_jitter=True`` takes the event packets' timestamps as sampling instants: the
    jitter then differs from tshark's (larger here: an event's packets repeat its start
    timestamp while time goes on); the deltas do not change."""
    (row,) = parse_rtp_streams(_stored("dtmf.pcap")).values()
    default = scan_capture(FIELD / "dtmf.pcap", keep_packets=False).streams[0]
    counted = scan_capture(FIELD / "dtmf.pcap", keep_packets=False, event_jitter=True).streams[0]
    assert default.payload_types == counted.payload_types == (0, 101)
    assert default.stats.max_jitter_ms == pytest.approx(float(row["max_j"]), abs=0.0006)
    assert counted.stats.max_jitter_ms > float(row["max_j"]) + 1.0
    assert counted.stats.max_delta_ms == default.stats.max_delta_ms


def test_rtp_stats_leaves_telephone_events_out_of_the_jitter():
    """rtp_stats on the stream's packet table with ``telephone_events=[101]`` equals the
    scan (and tshark); without it, PT 101 at 8 kHz counts and the jitter differs."""
    stream = scan_capture(FIELD / "dtmf.pcap").streams[0]
    assert np.count_nonzero(stream.packets.payload_type == 101) == 16  # per event 5 packets, then the end packet 3 times (send.py)
    rates = {0: 8000, 101: 8000}
    left_out = rtp_stats(stream.packets, 8000, clock_rates=rates, telephone_events=[101])
    counted = rtp_stats(stream.packets, 8000, clock_rates=rates)
    assert left_out.to_dict() == pytest.approx(stream.stats.to_dict(), nan_ok=True)
    assert counted.max_jitter_ms != pytest.approx(left_out.max_jitter_ms, abs=0.01)


@pytest.mark.parametrize("batch_size", [1, 7, 65536])
def test_the_sdp_in_force_does_not_depend_on_batches(batch_size):
    """Whether the four SDP exchanges and the streams fall in one batch of datagrams or in
    many, each stream binds to the announcement seen before its first packet."""
    scan = scan_capture(FIELD / "reused_port.pcap", keep_packets=False, batch_size=batch_size)
    streams = sorted((s for s in scan.streams if s.key.dport == 40000), key=lambda s: s.stats.first_ns)
    assert [(s.clock_rate, s.call_id) for s in streams] == [
        (8000, "field-a"), (16000, "field-b"), (32000, "field-c"), (48000, "field-c")]
