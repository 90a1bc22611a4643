"""Segments inferred from sizes and timing alone (qoe.video.has._infer).

Two checks. On the cleartext sessions, the same connections are read as if encrypted
(``opaque_ports=(80,)``: only TCP sizes and times are used) and the inferred segments are
compared with the ones mapped from the HTTP transactions of the same capture. On the HTTPS
session (data/video/has/sessions/dash-tls, TLS 1.3, no key log given), the inferred segments
are compared with the player's own log.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest

from qoe.errors import InputError, QoEWarning
from qoe.video.has import StreamingOptions, sessions
from qoe.video.has.session import inferred_sessions

HAS = Path(__file__).resolve().parents[3] / "data" / "video" / "has"
DASH_MPD = (str(HAS / "manifests" / "dash" / "manifest.mpd"),)
HLS_LISTS = tuple(sorted(glob.glob(str(HAS / "manifests" / "hls" / "*.m3u8"))))


def _opts(name: str, **kw) -> StreamingOptions:
    return StreamingOptions(manifests=DASH_MPD if name.startswith("dash") else HLS_LISTS, **kw)


@pytest.mark.parametrize("name", ["dash-ample", "hls-ample", "dash-outage"])
def test_inferred_equals_mapped_when_the_player_never_switched_back(name):
    cap = HAS / "sessions" / f"{name}.pcap.gz"
    inf = inferred_sessions(cap, options=_opts(name, opaque_ports=(80,)))[0]
    real = sessions(cap)[0]
    assert inf.inferred and not real.inferred
    assert all(r.time_source == "inferred" for r in inf.segments)
    mapped = {(r.request_ns, r.media_type, round(r.start_s, 2)) for r in real.segments if not r.init}
    found = {(r.request_ns, r.media_type, round(r.start_s, 2)) for r in inf.segments}
    assert len(found & mapped) >= 0.9 * len(mapped)
    assert inf.startup_delay_s == pytest.approx(real.startup_delay_s, abs=0.05)
    assert inf.stalls == real.stalls == 0
    assert any("inferred" in n for n in inf.notes)


@pytest.mark.parametrize("name", ["dash-bulk", "hls-bulk", "dash-constrained"])
def test_inferred_sessions_under_load_are_close(name):
    """With re-downloads (dash.js fast switching) the k-th-segment rule misplaces media times:
    the counts and totals stay close (measured: startup equal within 0.3 s, stall time within 1.1 s)."""
    cap = HAS / "sessions" / f"{name}.pcap.gz"
    inf = inferred_sessions(cap, options=_opts(name, opaque_ports=(80,)))[0]
    real = sessions(cap)[0]
    assert inf.video_segments + inf.audio_segments >= 0.7 * (real.video_segments + real.audio_segments)
    assert inf.startup_delay_s == pytest.approx(real.startup_delay_s, abs=0.3)
    assert inf.stall_s == pytest.approx(real.stall_s, abs=1.5)


@pytest.mark.parametrize("name", ["dash-tls", "hls-tls"])
def test_https_session_from_sizes_against_the_player(name):
    """TLS 1.3, HTTP/1.1, no key log given: the segments inferred from sizes against the
    player's log: as many, the same representation per media time, startup within the
    players' append latency (START_TOL_S of test_sessions)."""
    cap = HAS / "sessions" / f"{name}.pcap.gz"
    with pytest.warns(QoEWarning, match="encrypted.*manifest"):
        assert sessions(cap) == []  # encrypted: nothing is mapped without the manifest, and it is said
    s = sessions(cap, options=_opts(name))[0]
    assert s.inferred and s.segments
    log = json.loads((HAS / "sessions" / f"{name}.player.json").read_text())
    loaded = [e for e in log["events"] if e["type"] == "segment_loaded" and e["segment_type"] == "MediaSegment"]
    # hls.js: the audio playlist's last segment lasts 0.03 s (the AAC track runs 36.03 s): a few
    # hundred bytes, no bitrate near a representation's: it is the one segment not inferred
    assert len(loaded) - len([r for r in s.segments if not r.aborted]) in ((0,) if name == "dash-tls" else (0, 1))
    truth = {(e["media_type"], round(e["start"])): e for e in loaded}
    same = 0
    for r in s.segments:
        e = truth.get((r.media_type, round(r.start_s)))
        if e is not None and r.media_type == "video":
            rep = e["representation"] if log["player"] == "dash.js" else f"p{e['level']}.m3u8"
            same += r.representation == rep
    videos = sum(1 for e in loaded if e["media_type"] == "video")
    assert same >= 0.9 * videos
    playing = next(e["ts_ms"] for e in log["events"] if e["type"] == "video_playing") / 1e3
    tol = 0.10 if log["player"] == "dash.js" else 0.40
    assert s.start_ns / 1e9 + s.join_time_s == pytest.approx(playing, abs=tol)


def test_manifest_files_must_exist():
    with pytest.raises(InputError, match="no such file"):
        inferred_sessions(HAS / "sessions" / "dash-ample.pcap.gz", options=StreamingOptions(manifests=("nope.mpd",)))
