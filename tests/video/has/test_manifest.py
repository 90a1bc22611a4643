"""Manifest parsing on what ffmpeg wrote (data/video/has/manifests, made by make_media.sh).

The oracle is ffmpeg's own output: ``files.tsv`` lists every file the dash/hls muxer wrote
beside the manifest (name and size). Every segment URL the parser gives must be one of
those files, every media file must be some representation's segment, and byte ranges must
tile their file exactly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from qoe.errors import InputError
from qoe.video.has.manifest import ManifestError, is_manifest, parse_hls, parse_mpd

MAN = Path(__file__).resolve().parents[3] / "data" / "video" / "has" / "manifests"
BASE = "http://hs.test/{}/"
DASH = ["dash", "dash-number", "dash-list", "dash-single", "dash-time"]
HLS = ["hls", "hls-fmp4", "hls-byterange"]


def _files(variant: str) -> dict[str, int]:
    rows = (line.split("\t") for line in (MAN / variant / "files.tsv").read_text().splitlines())
    return {name: int(size) for name, size in rows}


def _hls(variant: str):
    base = BASE.format(variant)
    media = {base + p.name: p.read_text() for p in (MAN / variant).glob("p*.m3u8")}
    return parse_hls((MAN / variant / "master.m3u8").read_text(), base + "master.m3u8", media)


def _mpd(variant: str):
    return parse_mpd((MAN / variant / "manifest.mpd").read_bytes(), BASE.format(variant) + "manifest.mpd")


# Where ffmpeg 5.1's files and its manifest disagree (the manifest is what a player follows):
# dash-time: the audio's first file is named with its priming offset ($Time$ = -1024) while the
# MPD's timeline starts at t=0, so the MPD points to chunk-2-0.m4s, which does not exist;
# dash-number: the AAC track runs 36.03 s, ffmpeg writes a 19th audio segment, and the MPD
# (PT36.0S, @duration 2 s: ceil(36 / 2) = 18 segments, ISO/IEC 23009-1 §5.3.9.5.3) never reaches it.
FFMPEG_ONLY = {"dash-time": {"chunk-2--1024.m4s"}, "dash-number": {"chunk-stream4-00019.m4s"}}
MPD_ONLY = {"dash-time": {"chunk-2-0.m4s"}}


def _check_against_files(man, variant: str) -> None:
    files = _files(variant)
    base = BASE.format(variant)
    used: dict[str, list[tuple[int, int]]] = {}
    missing = set()
    for rep in man.representations:
        for seg in [*rep.segments, *([rep.init] if rep.init else [])]:
            assert seg.url.startswith(base)
            name = seg.url[len(base):]
            if name not in files:
                missing.add(name)
                continue
            if seg.byte_range is not None:
                used.setdefault(name, []).append(seg.byte_range)
            else:
                used.setdefault(name, [])
    assert missing == MPD_ONLY.get(variant, set()), f"{variant}: not files ffmpeg wrote: {sorted(missing)}"
    media = {n for n in files if not n.endswith((".mpd", ".m3u8"))}
    assert media - set(used) == FFMPEG_ONLY.get(variant, set()), f"{variant}: files no segment points to"
    for name, ranges in used.items():
        if ranges:  # byte ranges tile the file: contiguous from 0 to its last byte
            ranges.sort()
            assert ranges[0][0] == 0
            assert all(b[0] == a[1] + 1 for a, b in zip(ranges, ranges[1:])), name
            assert ranges[-1][1] == files[name] - 1, name


@pytest.mark.parametrize("variant", DASH)
def test_dash_segments_are_the_files_ffmpeg_wrote(variant):
    man = _mpd(variant)
    assert man.protocol == "dash" and not man.live
    _check_against_files(man, variant)
    video = man.by_type("video")
    audio = man.by_type("audio")
    assert len(audio) == 1
    n = 4 if variant == "dash-time" else 18  # 8 s or 36 s in 2 s segments
    for rep in [*video, *audio]:
        assert len(rep.segments) == n
        starts = [s.start_s for s in rep.segments]
        assert starts == sorted(starts) and starts[0] == pytest.approx(0.0, abs=0.03)
        ends = rep.segments[-1].start_s + rep.segments[-1].duration_s
        assert ends == pytest.approx(man.duration_s, abs=0.05)


def test_dash_ladder_attributes():
    man = _mpd("dash")
    video = man.by_type("video")
    assert [(r.bandwidth, r.width, r.height) for r in video] == [
        (150000, 256, 144), (300000, 426, 240), (600000, 640, 360), (1000000, 854, 480)]
    assert all(r.frame_rate == 24 and r.codecs.startswith("avc1") for r in video)
    assert man.by_type("audio")[0].codecs == "mp4a.40.2"
    assert man.duration_s == 36.0


def test_dash_time_template_uses_the_timeline_times():
    man = _mpd("dash-time")
    rep = man.by_type("video")[0]
    # $Time$ = S@t of each segment: 0, 24576, 49152, 73728 (timescale 12288, d = 24576)
    assert [s.url.rsplit("-", 1)[1] for s in rep.segments] == ["0.m4s", "24576.m4s", "49152.m4s", "73728.m4s"]
    assert [s.start_s for s in rep.segments] == [0.0, 2.0, 4.0, 6.0]


@pytest.mark.parametrize("variant", HLS)
def test_hls_segments_are_the_files_ffmpeg_wrote(variant):
    man = _hls(variant)
    assert man.protocol == "hls" and not man.notes
    _check_against_files(man, variant)
    video = man.by_type("video")
    assert [r.height for r in video] == [144, 240, 360, 480]
    assert [r.bandwidth for r in video] == sorted(r.bandwidth for r in video)
    assert len(man.by_type("audio")) == 1
    for rep in man.representations:
        # one segment per EXTINF line of its media playlist (audio: 19, the AAC track is 36.03 s)
        extinf = (MAN / variant / rep.playlist_url.rsplit("/", 1)[1]).read_text().count("#EXTINF")
        assert len(rep.segments) == extinf == (19 if rep.media_type == "audio" else 18)
        assert sum(s.duration_s for s in rep.segments) == pytest.approx(36.0, abs=0.05)
    if variant == "hls-fmp4":
        assert all(r.init is not None and r.init.url.endswith(".mp4") for r in man.representations)


def test_hls_master_without_its_media_playlists_says_so():
    man = parse_hls((MAN / "hls" / "master.m3u8").read_text(), "http://hs.test/hls/master.m3u8")
    assert all(not r.segments for r in man.representations)
    assert len(man.notes) == 5 and "p0.m3u8" in man.notes[0]


def test_segment_base_by_hand():
    """ISO/IEC 23009-1 §5.3.9.2: one file per representation, an Initialization range."""
    mpd = b"""<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT10S">
 <Period><AdaptationSet contentType="video" mimeType="video/mp4">
  <Representation id="v" bandwidth="800000" width="640" height="360">
   <BaseURL>v.mp4</BaseURL><SegmentBase indexRange="900-999"><Initialization range="0-899"/></SegmentBase>
  </Representation></AdaptationSet></Period></MPD>"""
    man = parse_mpd(mpd, "http://x/a/m.mpd")
    rep = man.representations[0]
    assert rep.file_url == "http://x/a/v.mp4" and rep.init.byte_range == (0, 899) and not rep.segments
    assert any("SegmentBase" in n for n in man.notes)


@pytest.mark.parametrize("text", [b"not xml", b"<html/>", b"<MPD xmlns='urn:mpeg:dash:schema:mpd:2011'><Period>"
                                  b"<AdaptationSet><Representation id='1'><SegmentTemplate/></Representation>"
                                  b"</AdaptationSet></Period></MPD>"])
def test_bad_mpd_is_a_manifest_error(text):
    with pytest.raises(ManifestError, match="http://x/m.mpd"):
        parse_mpd(text, "http://x/m.mpd")
    assert issubclass(ManifestError, InputError)


def test_bad_playlist_is_a_manifest_error():
    with pytest.raises(ManifestError, match="EXTM3U"):
        parse_hls("<html>", "http://x/a.m3u8")


@pytest.mark.parametrize(("url", "ctype", "kind"), [
    ("http://x/a.mpd", None, "dash"), ("http://x/a", "application/dash+xml", "dash"),
    ("http://x/a.m3u8?t=1", None, "hls"), ("http://x/a", "application/vnd.apple.mpegURL; charset=utf-8", "hls"),
    ("http://x/a.m4s", "video/mp4", None)])
def test_is_manifest(url, ctype, kind):
    assert is_manifest(url, ctype) == kind
