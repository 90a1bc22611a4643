"""Calls scored as a streaming scan ends them equal calls scored from the whole capture (issue 25).

The capture is a real one (``data/voice/field/reused_port.pcap``: two SIP calls one after
the other on one address and port) and the reference is qoe's own whole-capture path,
:func:`qoe.voice.iter_score_calls` on :func:`qoe.rtp.scan_capture`, whose numbers the
voice tests compare with tshark and the ITU's examples.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from qoe.rtp import iter_scan, scan_capture
from qoe.voice import CallOptions, iter_score_call_groups, iter_score_calls

DATA = Path(__file__).resolve().parents[2] / "data" / "voice"


def _text(call) -> str:
    return json.dumps(call.to_dict(), sort_keys=True, default=str)


@pytest.mark.parametrize("name", ["field/reused_port.pcap", "captures/noload-b64-sip_client.pcap"])
def test_calls_scored_as_they_end_equal_the_whole_capture_s(name):
    path = DATA / name
    if not path.is_file():
        pytest.skip(f"{path} not in this checkout")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scan = scan_capture(path)
        whole = [_text(c) for c in iter_score_calls(scan.streams, sip_calls=scan.calls, options=CallOptions())]
        stream = iter_scan(path)
        groups = list(iter_score_call_groups(stream, options=CallOptions()))
    assert whole and [_text(c) for c in groups] == whole  # (as text: NaN equals NaN there)
    assert stream.live_streams == 0 and stream.waiting_streams == 0
