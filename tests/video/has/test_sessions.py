"""Streaming sessions rebuilt from real captures, checked against the players' own logs.

data/video/has/sessions/<player>-<scenario>.pcap.gz were made by make_sessions.sh: dash.js
5.2.1 and hls.js 1.7.4 (npm) in Debian's chromium (Playwright) through a tbf bottleneck;
beside each capture, ``.player.json`` is the player's event log (segment loaded with its
URL, representation and media time; quality switches; the video element's ``waiting`` and
``playing`` events; the buffer every 250 ms). That log is the reference here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from video.has.player_log import player_view  # tests/video/has/player_log.py

from qoe.video.has import StreamingOptions, p1203_input, sessions
from qoe.video.has.p1203 import AUDIO_SEGMENT_FIELDS, P1203_KEYS, VIDEO_SEGMENT_FIELDS

SESSIONS = Path(__file__).resolve().parents[3] / "data" / "video" / "has" / "sessions"
# every session; the -tls ones are HTTPS (HTTP/1.1 over TLS 1.3), dash-h2 HTTP/2 over TLS 1.3, hls-h3
# HTTP/3 (QUIC v1), read with the browser's key log (StreamingOptions.keylog; without it:
# tests/video/has/test_infer.py)
NAMES = sorted(p.name.removesuffix(".pcap.gz") for p in SESSIONS.glob("*.pcap.gz"))


def _options(name: str, **kw) -> StreamingOptions:
    keylog = SESSIONS / f"{name}.keylog"
    return StreamingOptions(keylog=str(keylog), **kw) if keylog.is_file() else StreamingOptions(**kw)

# Startup: the replay starts playback when a segment of every media type has arrived; the
# players need a little longer to demux and append it: dash.js (fMP4) 10-40 ms on these
# sessions; hls.js (MPEG-TS, transmuxed in JavaScript) 110-320 ms: at every startup its log
# shows a `bufferAppendNoProgress` media error it recovers from before `playing`.
START_TOL_S = {"dash.js": 0.10, "hls.js": 0.40}
# Stalls: start and duration of each, within the same append latency plus the players' 250 ms
# reaction (the video element's waiting/playing events).
STALL_TOL_S = 0.35


def _log(name: str) -> dict:
    return json.loads((SESSIONS / f"{name}.player.json").read_text())


@pytest.fixture(scope="module", params=NAMES)
def session(request):
    found = sessions(SESSIONS / f"{request.param}.pcap.gz", options=_options(request.param))
    assert len(found) == 1
    assert not found[0].inferred  # HTTPS too: mapped from the decrypted requests, not inferred
    return request.param, found[0]


def test_the_sessions_are_there():
    assert {"dash-ample", "hls-ample", "dash-constrained", "hls-constrained", "dash-tls", "hls-tls", "dash-h2",
            "hls-h3"} <= set(NAMES)


def test_every_segment_the_player_loaded_is_found_and_mapped(session):
    name, s = session
    log = _log(name)
    loaded = [e for e in log["events"] if e["type"] == "segment_loaded" and e["segment_type"] == "MediaSegment"]
    ours = {r.url: r for r in s.segments if not r.init and not r.aborted}  # one URL per segment here
    for e in loaded:
        assert e["url"] in ours, f"{name}: the player loaded {e['url']}, not found in the capture"
        r = ours[e["url"]]
        assert r.media_type == e["media_type"]
        # media time: the manifest's; hls.js reports the start it measured from the PTS (AAC: ±25 ms)
        assert r.start_s == pytest.approx(e["start"], abs=0.03)
        if log["player"] == "dash.js":
            assert r.representation == e["representation"]
        elif e["media_type"] == "video":  # hls.js: the level index is the variant's order in the master
            assert r.representation == f"p{e['level']}.m3u8"
        assert r.duration_s == pytest.approx(e["duration"], abs=0.03)
    abandoned = [e for e in log["events"] if e["type"] == "segment_abandoned"]
    done = [r for r in s.segments if not r.init and not r.aborted]  # a segment loaded twice counts twice
    assert len(done) == len(loaded), f"{name}: {len(done)} segments completed in the capture, {len(loaded)} in the log"
    assert s.aborted >= len(abandoned)


def test_startup_matches_the_player(session):
    name, s = session
    log = _log(name)
    start, _ = player_view(log)
    ours = s.start_ns / 1e9 + s.join_time_s
    assert ours == pytest.approx(start, abs=START_TOL_S[log["player"]])
    assert ours <= start + 0.05  # the replay cannot be later than the player: it has no append delay


# Where the replay and the players part ways (docs/guide/streaming.md, "Compared with the
# players"), both in the bulk-download sessions:
# * dash.js "fast switching" removes buffered video ahead of the playhead to re-download it in
#   a better representation; the replay keeps it. dash-bulk: the stalls match until the first
#   such replacement (the first two), then the player's last stall runs 6.8 s, the replay's 2.7 s.
# * hls.js transmuxes MPEG-TS; the AAC it appends leaves gaps of ~10 ms at segment boundaries,
#   and Chromium waits at an audio gap: hls.js stalls where the video buffer ends, as the strict
#   model (video_underflow_s=0) has it: its first three stalls match that model.
DIVERGE = {"dash-bulk": (StreamingOptions(), 2), "hls-bulk": (StreamingOptions(video_underflow_s=0), 3)}
TOTAL_TOL_S = 2.0  # total stall time of the diverging sessions


def _compare(name, s, n=None):
    _, stalls = player_view(_log(name))
    ours = [(s.start_ns / 1e9 + x.start_s, x.duration_s) for x in s.replay.stalls]
    if n is None:
        assert len(ours) == len(stalls), f"{name}: replay {ours}, player {stalls}"
    for (a, da), (b, db) in list(zip(ours, stalls))[:n]:
        assert a == pytest.approx(b, abs=STALL_TOL_S)
        assert da == pytest.approx(db, abs=STALL_TOL_S)
    return ours, stalls


def test_stalls_match_the_player(session):
    name, s = session
    if name in DIVERGE:
        opts, n = DIVERGE[name]
        s = sessions(SESSIONS / f"{name}.pcap.gz", options=opts)[0]
        ours, stalls = _compare(name, s, n)
        assert len(stalls) >= n
        assert sum(d for _, d in ours) == pytest.approx(sum(d for _, d in stalls), abs=TOTAL_TOL_S)
    else:
        _compare(name, s)


def test_played_resolution_matches_the_video_element(session):
    """Per second while playing: the replay's representation height against the video
    element's videoHeight polled every 250 ms (the log's `state`), the majority agreeing."""
    name, s = session
    states = [e for e in _log(name)["events"] if e["type"] == "state" and not e["paused"] and e["height"]]
    agree = total = 0
    for row in s.seconds:
        if row["state"] != "playing" or not row["height"]:
            continue
        t = s.start_ns / 1e9 + row["t_s"]
        near = min(states, key=lambda e: abs(e["ts_ms"] / 1e3 - t))
        if abs(near["ts_ms"] / 1e3 - t) > 0.3:
            continue
        total += 1
        agree += abs(near["height"] - row["height"]) <= 1  # 426x240 is shown as 427x240
    assert total >= min(20, s.media_duration_s - 4)  # dash-h2: a 16 s clip
    assert agree / total >= 0.8, f"{name}: {agree}/{total} seconds agree"


def test_session_record(session):
    name, s = session
    rec = s.to_record()
    assert rec["protocol"] == name.split("-")[0]
    n = rec["media_duration_s"]  # 36 s (16 s: dash-h2, hls-h3)
    assert rec["video_segments"] >= n // 2 and rec["audio_segments"] >= n // 2
    # every 2 s of media is either shown with its picture or passed with the picture frozen
    assert rec["ended"] is True and rec["played_s"] % 2.0 == 0
    assert rec["played_s"] + rec["frozen_s"] >= n - 0.1 and rec["played_s"] <= n
    assert rec["bitrate_kbps"] > 0 and math.isfinite(rec["qoe"])
    assert set(s.tables()) == {"segments", "seconds", "stalls", "played"}
    brief = s.to_record(brief=True)
    assert list(brief) == list(s.BRIEF_COLUMNS)


def test_p1203_input_has_the_recommendations_fields(session):
    """ITU-T P.1203 (10/2017) §7 inputs: I.GEN, I.11 (audio segments), I.13 (video
    segments), I.23 (stalling, initial loading first)."""
    _, s = session
    j = p1203_input(s)
    assert set(j) == {*P1203_KEYS, "notes"}
    assert j["IGen"]["device"] in ("pc", "mobile") and "x" in j["IGen"]["displaySize"]
    video = j["I13"]["segments"]
    assert video and all(set(v) == set(VIDEO_SEGMENT_FIELDS) for v in video)
    assert all(v["codec"] == "h264" and v["bitrate"] > 0 and v["fps"] in (None, 24.0) for v in video)
    assert sum(v["duration"] for v in video) == pytest.approx(s.played_s)
    assert [v["start"] for v in video] == sorted(v["start"] for v in video)
    audio = j["I11"]["segments"]
    assert audio and all(set(a) == set(AUDIO_SEGMENT_FIELDS) and a["codec"] == "aaclc" for a in audio)
    stalls = j["I23"]["stalling"]
    assert stalls[0] == [0.0, pytest.approx(s.startup_delay_s)]
    assert len(stalls) == 1 + s.stalls
    json.dumps(j, allow_nan=False)  # strict JSON


def test_options_change_the_replay():
    name = "dash-ample"
    slow = sessions(SESSIONS / f"{name}.pcap.gz", options=StreamingOptions(startup_threshold_s=8.0))[0]
    fast = sessions(SESSIONS / f"{name}.pcap.gz")[0]
    assert slow.startup_delay_s > fast.startup_delay_s
    assert slow.startup_threshold_s == 8.0


def test_switches_match_the_video_element(session):
    """Switches counted between played segments against the changes of the video element's
    videoHeight (polled every 250 ms). Within one: the element also reports the resolution of
    an initialisation segment whose media was abandoned before a frame was shown
    (dash-constrained, dash-bulk)."""
    name, s = session
    states = [e for e in _log(name)["events"] if e["type"] == "state" and e["height"]]
    changes = sum(1 for a, b in zip(states, states[1:]) if abs(a["height"] - b["height"]) > 1)
    assert abs(s.switches - changes) <= 1, f"{name}: replay {s.switches}, element {changes}"
    if name.endswith(("ample", "step", "outage")):
        assert s.switches == changes


def test_https_session_through_qoe_score_with_the_key_log():
    """qoe.score(kind="streaming") with StreamingOptions(keylog=...): the HTTPS session is
    rebuilt from the decrypted transactions, its MPD read from the decrypted stream (the
    player's log has the same segments); without the key log nothing is mapped."""
    import warnings

    import qoe

    cap = SESSIONS / "dash-tls.pcap.gz"
    rep = qoe.score(str(cap), kind="streaming", options=_options("dash-tls"))
    (s,) = rep.results
    assert s.manifest_url == "https://hs.test/dash/manifest.mpd" and not s.inferred
    assert not any("not in the capture" in n for n in s.notes)
    loaded = {e["url"] for e in _log("dash-tls")["events"]
              if e["type"] == "segment_loaded" and e["segment_type"] == "MediaSegment"}
    assert {r.url for r in s.segments if not r.init} == loaded
    assert rep.inputs["keylog"].endswith("dash-tls.keylog")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert sessions(cap) == []  # encrypted: no manifest seen, nothing mapped (test_infer.py infers)
