"""A capture cut in the middle of a call, a video or a page load: that item's partial
result, marked partial (issue 13; docs/robustness.md, "Truncated and damaged captures").

The cut captures are made here from real samples with Wireshark's ``editcap`` (the exact
commands are in each test); the SIP case is in tests/test_api.py.
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

import qoe
from qoe.errors import QoEWarning
from qoe.rtp import ACTIVE_AT_END_INTERVALS, scan_capture

DATA = Path(__file__).resolve().parents[1] / "data"
VOICE = DATA / "voice" / "captures" / "down-b256_client.pcap"  # two RTP streams, no SIP
VIDEO = DATA / "video" / "captures" / "rtpts-down-b64_client.pcap"  # MPEG-TS in RTP, no SIP
WEB = DATA / "web" / "captures" / "http10-idle-b64-curl_client.pcap"  # one page load, 156 frames

needs_editcap = pytest.mark.skipif(shutil.which("editcap") is None, reason="needs editcap (Wireshark)")


def _editcap(tmp_path: Path, src: Path, options: list[str], frames: tuple[str, ...] = ()) -> Path:
    """``editcap OPTIONS SRC cut.pcap FRAMES``."""
    out = tmp_path / "cut.pcap"
    subprocess.run(["editcap", *options, str(src), str(out), *frames], check=True, capture_output=True)
    return out


def _partial(notes: tuple[str, ...]) -> bool:
    return any(n.startswith("partial:") for n in notes)


def _score(path: Path, kind: str) -> qoe.Report:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        return qoe.score(path, kind=kind)


@needs_editcap
def test_rtp_voice_without_sip_cut_by_time_is_partial(tmp_path):
    """down-b256_client.pcap (frames 06:48:02.9 to 06:48:11.06 UTC, ``capinfos -a -e``):
    the upstream stream 192.0.2.2:40000 ends 165 ms (8 of its 20 ms intervals) before the
    capture's last datagram, the downstream one is the capture's last packet. Whole, only the
    downstream stream counts as still sending at the end (a capture stopped right after a
    stream cannot be told from one that cut it). Cut at 06:48:07 (``editcap -B
    2026-11-21T06:48:07Z``: frames before that time), both were sending: both are partial."""
    whole = scan_capture(VOICE, keep_packets=False)
    up, down = whole.streams
    assert up.key.src == "192.0.2.2" and down.key.src == "198.51.100.2"
    interval = (up.stats.last_ns - up.stats.first_ns) / (up.stats.packets - 1)
    assert whole.last_ns - up.stats.last_ns > ACTIVE_AT_END_INTERVALS * interval
    assert (up.active_at_end, down.active_at_end) == (False, True)
    report = _score(VOICE, "voice")
    assert [_partial(d.notes) for d in report] == [False, True]

    cut = _editcap(tmp_path, VOICE, ["-B", "2026-11-21T06:48:07Z"])
    part = scan_capture(cut, keep_packets=False)
    assert [s.active_at_end for s in part.streams] == [True, True]
    assert all(s.stats.packets < w.stats.packets for s, w in zip(part.streams, whole.streams))
    report = _score(cut, "voice")
    assert len(report) == 2 and all(_partial(d.notes) for d in report)
    assert all(d.received < 400 for d in report)  # scored on what the capture holds


@needs_editcap
def test_rtp_voice_without_sip_cut_by_frames_is_partial(tmp_path):
    """``editcap -r down-b256_client.pcap cut.pcap 1-300``: the first 300 frames, both streams
    still sending at frame 300 (the upstream one only stops 8 intervals before the end)."""
    cut = _editcap(tmp_path, VOICE, ["-r"], ("1-300",))
    assert all(_partial(d.notes) for d in _score(cut, "voice"))


@needs_editcap
def test_rtp_video_cut_is_partial(tmp_path):
    """``editcap -r rtpts-down-b64_client.pcap cut.pcap 1-200`` keeps 200 of 463 frames: the
    video stream's result is partial and holds fewer packets than the whole capture's."""
    cut = _editcap(tmp_path, VIDEO, ["-r"], ("1-200",))
    (whole,), (part,) = _score(VIDEO, "video"), _score(cut, "video")
    assert _partial(part.notes)
    assert part.packets_received < whole.packets_received


@needs_editcap
def test_page_load_cut_is_partial(tmp_path):
    """``editcap -r http10-idle-b64-curl_client.pcap cut.pcap 1-40``: the capture ends before
    the response (tshark -r cut.pcap -Y http shows the GET only): the page is not complete and
    says it is partial; the whole capture's page is complete."""
    cut = _editcap(tmp_path, WEB, ["-r"], ("1-40",))
    (whole,), (part,) = _score(WEB, "web"), _score(cut, "web")
    assert whole.complete and not _partial(whole.notes)
    assert not part.complete and _partial(part.notes)
