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
from qoe.video.has.session import inferred_sessions, window_sessions

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


# ---------------------------------------------------------------------------------------------
# The HTTPS sessions with their key logs withheld, against the same sessions decrypted (the truth:
# the key log read, as tests/video/has/test_sessions.py checks against the players' logs).

#: Startup: the inferred segments carry the capture times of the encrypted responses, which are
#: the decrypted ones' within a record (measured: equal to the ms on dash-tls and hls-tls).
INFER_START_TOL_S = 0.05
#: Bitrate with no manifest: 8·bytes / D is the media's own bitrate; the truth is the declared
#: one (HLS: the master's BANDWIDTH, audio included, 1128 kbit/s for a 1000 kbit/s rung).
#: Measured: dash-tls 1005 / 1000, hls-tls 986 / 1103 (-11 %).
WINDOW_BITRATE_TOL = 0.15


def _truth(name: str):
    cap = HAS / "sessions" / f"{name}.pcap.gz"
    (s,) = sessions(cap, options=StreamingOptions(keylog=str(HAS / "sessions" / f"{name}.keylog")))
    assert not s.inferred and s.inference == "" and s.inferred_segments == 0
    return s


@pytest.mark.parametrize("name", ["dash-tls", "hls-tls"])
def test_no_manifest_windows_against_the_decrypted_session(name):
    """Case (b): no key log, no manifest: each large encrypted response one segment of 2 s."""
    truth = _truth(name)
    cap = HAS / "sessions" / f"{name}.pcap.gz"
    (s,) = sessions(cap, options=StreamingOptions(infer_windows=True))
    assert s.inferred and s.inference == "windows" and s.protocol == "unknown"
    assert s.inferred_segments == s.video_segments + s.audio_segments
    assert any("no manifest" in n for n in s.notes) and any("segment duration 2 s" in n for n in s.notes)
    assert any("audio and video told apart by size" in n for n in s.notes)
    # segments found: every video segment; hls.js's 0.03 s last audio segment is below MIN_SEGMENT_BYTES
    assert s.video_segments == truth.video_segments
    assert truth.audio_segments - s.audio_segments in (0, 1)
    assert s.startup_delay_s == pytest.approx(truth.startup_delay_s, abs=INFER_START_TOL_S)
    assert s.stalls == truth.stalls == 0
    assert s.switches == truth.switches
    assert s.bitrate_kbps == pytest.approx(truth.bitrate_kbps, rel=WINDOW_BITRATE_TOL)


@pytest.mark.parametrize("name", ["dash-tls", "hls-tls"])
def test_manifest_file_against_the_decrypted_session(name):
    """Case (a), the manifest given as a file: sizes matched to its representations."""
    truth = _truth(name)
    s = sessions(HAS / "sessions" / f"{name}.pcap.gz", options=_opts(name))[0]
    assert s.inference == "manifest" and s.inferred_segments == s.video_segments + s.audio_segments
    assert s.video_segments == truth.video_segments
    assert truth.audio_segments - s.audio_segments in (0, 1)
    assert s.startup_delay_s == pytest.approx(truth.startup_delay_s, abs=INFER_START_TOL_S)
    assert s.stalls == truth.stalls
    assert s.switches == truth.switches
    assert s.bitrate_kbps == pytest.approx(truth.bitrate_kbps, rel=0.02)  # the same declared bitrates


def test_key_log_of_the_manifest_connection_only(tmp_path):
    """Case (a), the manifest seen in the capture: the key log holds the secrets of the
    connection that carried the page, the MPD and the audio segments only (its first five
    lines); the video segments' connection stays encrypted: they are inferred from their
    sizes with the decrypted MPD, and the session equals the fully decrypted one."""
    truth = _truth("dash-tls")
    lines = (HAS / "sessions" / "dash-tls.keylog").read_text().splitlines()
    part = tmp_path / "manifest-only.keylog"
    part.write_text("\n".join(lines[:5]) + "\n")
    (s,) = sessions(HAS / "sessions" / "dash-tls.pcap.gz", options=StreamingOptions(keylog=str(part)))
    assert s.inference == "manifest" and s.manifest_url == truth.manifest_url
    seen = [r for r in s.segments if r.time_source != "inferred" and not r.init]
    assert {r.media_type for r in seen} == {"audio"} and s.inferred_segments == truth.video_segments
    assert any("with the manifest seen in the capture" in n for n in s.notes)
    got = {(r.media_type, r.representation, round(r.start_s, 2)) for r in s.segments if not r.init}
    want = {(r.media_type, r.representation, round(r.start_s, 2)) for r in truth.segments if not r.init}
    assert got == want
    assert s.startup_delay_s == pytest.approx(truth.startup_delay_s, abs=INFER_START_TOL_S)
    assert (s.stalls, s.switches, s.bitrate_kbps) == (truth.stalls, truth.switches, truth.bitrate_kbps)


#: Cleartext sessions read as if encrypted, no manifest: dash.js's re-downloads (fast switching)
#: are counted as new media time and HLS declared bitrates include audio: the bitrate within
#: 40 % (measured: -21 % hls-bulk ... +35 % dash-constrained), startup exact, stall count within 2.
@pytest.mark.parametrize("name", ["dash-ample", "hls-constrained", "dash-constrained", "hls-bulk", "hls-step"])
def test_no_manifest_windows_on_cleartext_read_as_encrypted(name):
    cap = HAS / "sessions" / f"{name}.pcap.gz"
    real = sessions(cap)[0]
    (s,) = window_sessions(cap, options=StreamingOptions(opaque_ports=(80,)))
    assert s.inference == "windows"
    assert s.video_segments == real.video_segments and real.audio_segments - s.audio_segments in (0, 1)
    assert s.startup_delay_s == pytest.approx(real.startup_delay_s, abs=INFER_START_TOL_S)
    assert abs(s.stalls - real.stalls) <= 2
    assert s.bitrate_kbps == pytest.approx(real.bitrate_kbps, rel=0.40)


def test_segment_duration_given_and_checked():
    cap = HAS / "sessions" / "dash-tls.pcap.gz"
    (s,) = sessions(cap, options=StreamingOptions(infer_windows=True, segment_duration_s=4.0))
    assert any("segment duration 4 s (given)" in n for n in s.notes)
    assert s.bitrate_kbps == pytest.approx(_truth("dash-tls").bitrate_kbps / 2, rel=WINDOW_BITRATE_TOL)
    with pytest.raises(InputError, match="segment_duration_s"):
        StreamingOptions(segment_duration_s=0)


# ---------------------------------------------------------------------------------------------
# HTTP/3 and HTTP/2 with their key logs withheld (hls-h3: hls.js over QUIC; dash-h2: dash.js over
# one HTTP/2 connection), against the same sessions decrypted.

#: HTTP/3 startup: hls.js asks for the master playlist, its media playlists and the first audio
#: and video segments within 47 ms; without keys they are one group timed by its first request
#: (the master's, 38 ms before the first segment's), so the startup reads that much longer.
#: Measured +0.044 s (1.328 s inferred, 1.284 s decrypted), with and without the manifest.
H3_START_TOL_S = 0.06
#: Each pair of audio and video segment requests is one group timed by its first request (the
#: pairs are 0.2-28 ms apart on hls-h3; the first group starts at the master playlist, 38 ms early).
H3_REQUEST_TOL_S = 0.05


def _h3_manifests(tmp_path) -> tuple[str, ...]:
    """The session's master and media playlists as files, read from the capture with its key log
    (what a user who has the presentation's manifest gives with --manifest)."""
    from qoe.video.has.decrypted import quic_bodies
    from qoe.video.has.manifest import is_manifest
    from qoe.web.quic import quic_connections

    cap, key = HAS / "sessions" / "hls-h3.pcap.gz", str(HAS / "sessions" / "hls-h3.keylog")
    mtx = [t for c in quic_connections(cap, keylog=key) for t in c.transactions if is_manifest(t.url, t.content_type)]
    got = quic_bodies(cap, key)(mtx)
    files = []
    for k, t in enumerate(mtx):
        f = tmp_path / t.url.rsplit("/", 1)[1]
        f.write_bytes(got[k][0])
        files.append(str(f))
    assert sorted(Path(f).name for f in files) == ["master.m3u8", "p1.m3u8", "p4.m3u8"]
    return tuple(files)


def test_http3_without_keys_windows():
    """Case (b) on QUIC: the client's ACK-only datagrams do not split the server's bytes; each
    response is an audio and a video segment asked for together, taken for one segment."""
    truth = _truth("hls-h3")
    (s,) = sessions(HAS / "sessions" / "hls-h3.pcap.gz", options=StreamingOptions(infer_windows=True))
    assert s.inference == "windows" and s.inferred_segments == s.video_segments
    # every request the server logged (its access log: 24) is counted, in 10 responses; one more
    # datagram of request size among the page's first four (80 bytes, 0.1 s after the handshake,
    # before any segment) is something else (flow control or QPACK stream data: same size)
    logged = len((HAS / "sessions" / "hls-h3.h3-access.jsonl").read_text().splitlines())
    (said,) = [n for n in s.notes if n.startswith("HTTP/3 (QUIC) without keys: 10 response(s) to ")]
    assert int(said.split(" to ", 1)[1].split()[0]) - logged in (0, 1)
    assert any(n.startswith("multiplexed HTTP/2 or HTTP/3 hides the segment boundaries: 8 of 8") for n in s.notes)
    assert s.video_segments == truth.video_segments == 8 and s.audio_segments == 0  # the audio inside
    assert s.startup_delay_s == pytest.approx(truth.startup_delay_s, abs=H3_START_TOL_S)
    assert s.stalls == truth.stalls == 0 and s.switches == truth.switches == 0
    # 8·bytes / 2 s of audio and video together against HLS BANDWIDTH (audio included): 414 / 400
    assert s.bitrate_kbps == pytest.approx(truth.bitrate_kbps, rel=WINDOW_BITRATE_TOL)
    got = sorted(r.request_ns for r in s.segments)
    want = sorted(r.request_ns for r in truth.segments if r.media_type == "video" and not r.init)
    assert max(abs(a - b) for a, b in zip(got, want, strict=True)) <= H3_REQUEST_TOL_S * 1e9


def test_http3_without_keys_manifest_file(tmp_path):
    """Case (a) on QUIC: each group's bytes split into the audio rendition's expected size and a
    video segment of the rest, matched to the variants: the decrypted session's segments."""
    truth = _truth("hls-h3")
    (s,) = sessions(HAS / "sessions" / "hls-h3.pcap.gz", options=StreamingOptions(manifests=_h3_manifests(tmp_path)))
    assert s.inference == "manifest" and s.inferred_segments == s.video_segments + s.audio_segments
    assert any("split into an audio segment of the expected 16.0 kB" in n for n in s.notes)
    assert s.video_segments == truth.video_segments
    assert truth.audio_segments - s.audio_segments in (0, 1)  # hls.js's last audio segment: 0.03 s, 853 bytes
    got = {(r.media_type, r.representation, round(r.start_s, 2)) for r in s.segments if not r.init}
    want = {(r.media_type, r.representation, round(r.start_s, 2)) for r in truth.segments if not r.init}
    assert got <= want and len(want - got) <= 1
    assert s.startup_delay_s == pytest.approx(truth.startup_delay_s, abs=H3_START_TOL_S)
    assert (s.stalls, s.switches, s.bitrate_kbps) == (truth.stalls, truth.switches, truth.bitrate_kbps)


def test_http2_without_keys_says_the_boundaries_are_hidden():
    """dash-h2: dash.js asks for audio while a video response is under way on the same HTTP/2
    connection; the sizes cannot be told apart, and the notes say so with the numbers. The
    HTTP/1.1 session (dash-tls: 556-byte requests) carries no such note."""
    import re

    (s,) = sessions(HAS / "sessions" / "dash-h2.pcap.gz", options=StreamingOptions(infer_windows=True))
    said = [m for n in s.notes if (m := re.search(
        r"looks like HTTP/2 \(its requests (\d+) bytes .*multiplexed HTTP/2 hides the segment boundaries: "
        r"of its (\d+) responses of a segment's size, (\d+) answered several requests", n))]
    assert len(said) == 1
    # HPACK requests of 70 bytes; 16 segment-size responses of which 4 carried two requests or more
    assert tuple(map(int, said[0].groups())) == (70, 16, 4)
    (h1,) = sessions(HAS / "sessions" / "dash-tls.pcap.gz", options=StreamingOptions(infer_windows=True))
    assert not any("HTTP/2" in n for n in h1.notes)
