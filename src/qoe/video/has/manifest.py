"""DASH MPDs and HLS playlists to representations and their segments (media time, URL, bytes).

Parsers
-------
* DASH: the standard library's :mod:`xml.etree.ElementTree` (expat: no external entities are
  fetched; Python ≥ 3.7.1's expat refuses entity-expansion bombs). The MPD needs only a few
  elements and attributes; ``mpegdash`` (last release 2021) adds nothing they need.
  Addressing (ISO/IEC 23009-1 (2022) §5.3.9): ``SegmentTemplate`` with ``@duration`` and
  ``$Number$`` (§5.3.9.4.4), with ``SegmentTimeline`` and ``$Number$`` or ``$Time$``
  (§5.3.9.6), ``SegmentList`` with ``SegmentURL@media`` / ``@mediaRange`` (§5.3.9.3),
  ``SegmentBase`` (one file per representation, §5.3.9.2: the requests' byte ranges are
  mapped to media time by the representation's bandwidth, marked ``time_source="bytes"``),
  ``BaseURL`` at every level (§5.6), template identifiers ``$RepresentationID$``,
  ``$Number$``, ``$Bandwidth$``, ``$Time$`` with ``%0Nd`` widths and ``$$`` (§5.3.9.4.4,
  Table 16), attributes inherited from the ``AdaptationSet`` (§5.3.3: common attributes).
* HLS: ``m3u8`` (globocom, the maintained Python parser of RFC 8216 playlists): master
  playlists (``EXT-X-STREAM-INF``: BANDWIDTH, RESOLUTION, CODECS, FRAME-RATE, AUDIO groups;
  ``EXT-X-MEDIA`` audio renditions) and media playlists (``EXTINF``, ``EXT-X-BYTERANGE``,
  ``EXT-X-MAP``, ``EXT-X-MEDIA-SEQUENCE``), MPEG-TS and fMP4 segments alike (RFC 8216 §3).

A segment's media time is its presentation start in seconds from the start of the
presentation (DASH: the Period start plus ``(t − @presentationTimeOffset) / @timescale``;
HLS: the sum of the ``EXTINF`` durations before it).

References
----------
.. [1] ISO/IEC 23009-1:2022, "Dynamic adaptive streaming over HTTP (DASH) — Part 1: Media
   presentation description and segment formats", §5.3 (MPD elements), §5.3.9 (segment
   information), §5.6 (BaseURL processing).
.. [2] RFC 8216, "HTTP Live Streaming" (2017), §4.3 (playlist tags).
.. [3] m3u8, https://github.com/globocom/m3u8 (the HLS playlist parser used).
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urljoin

from qoe.errors import InputError
from qoe.report import as_dict

__all__ = ["Segment", "Representation", "Manifest", "parse_mpd", "parse_hls", "is_manifest", "ManifestError"]

MediaType = Literal["video", "audio", "muxed", "text", "other"]


class ManifestError(InputError):
    """A manifest that cannot be read (not XML, not a playlist, a missing attribute)."""


@dataclass(frozen=True, slots=True)
class Segment:
    """One media (or initialisation) segment of a representation.

    Attributes
    ----------
    number : int
        DASH ``$Number$`` (or position in the SegmentList from ``@startNumber``); HLS media
        sequence number; -1 for an initialisation segment.
    start_s, duration_s : float
        Media time of the segment (s from the presentation start) and its duration.
    url : str
        Absolute URL.
    byte_range : tuple of (int, int) or None
        First and last byte (inclusive, as HTTP ``Range``) when the segment is part of a file.
    """

    number: int
    start_s: float
    duration_s: float
    url: str
    byte_range: tuple[int, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain Python."""
        return as_dict(self)


@dataclass(frozen=True)
class Representation:
    """One encoding of the content (DASH Representation, HLS variant or rendition).

    Attributes
    ----------
    id : str
        DASH ``@id``; HLS: the media playlist URL's last path segment.
    media_type : {"video", "audio", "muxed", "text", "other"}
        ``muxed``: an HLS variant without a separate audio rendition (audio in its segments).
    bandwidth : int
        Declared bits per second (DASH ``@bandwidth``, HLS ``BANDWIDTH``).
    width, height : int or None
    frame_rate : float or None
    codecs : str or None
    segments : tuple of Segment
        Media segments in media-time order (empty for a DASH SegmentBase representation).
    init : Segment or None
        Initialisation segment (DASH ``Initialization``/``@initialization``, HLS ``EXT-X-MAP``).
    file_url : str or None
        The single file of a SegmentBase representation (its requests carry byte ranges).
    playlist_url : str or None
        HLS: the media playlist that lists the segments.
    """

    id: str
    media_type: str
    bandwidth: int
    width: int | None = None
    height: int | None = None
    frame_rate: float | None = None
    codecs: str | None = None
    segments: tuple[Segment, ...] = field(default=(), repr=False)
    init: Segment | None = None
    file_url: str | None = None
    playlist_url: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain Python, without the segment list."""
        return as_dict(self, skip=("segments",))


@dataclass(frozen=True)
class Manifest:
    """A presentation: its representations, from a DASH MPD or an HLS master and media playlists.

    Attributes
    ----------
    protocol : {"dash", "hls"}
    url : str
        The MPD or master playlist URL.
    duration_s : float
        Presentation duration (DASH ``@mediaPresentationDuration``; HLS: the longest media
        playlist's sum of ``EXTINF``); NaN when unknown (a live presentation).
    representations : tuple of Representation
    live : bool
        DASH ``@type="dynamic"`` or an HLS media playlist without ``EXT-X-ENDLIST``.
    notes : tuple of str
        What could not be used (a missing media playlist, an unsupported element).
    """

    protocol: str
    url: str
    duration_s: float
    representations: tuple[Representation, ...]
    live: bool = False
    notes: tuple[str, ...] = ()

    def media_end_s(self, media_types: Sequence[str]) -> float:
        """Where playback of these media types ends: the earliest, over the types, of the last
        segment end any representation of the type lists (the duration when none lists segments)."""
        ends = []
        for k in media_types:
            segs = [s.start_s + s.duration_s for r in self.representations if r.media_type == k for s in r.segments]
            if segs:
                ends.append(max(segs))
        return min(ends) if ends else self.duration_s

    def by_type(self, media_type: str) -> list[Representation]:
        """The representations of one media type, by bandwidth."""
        return sorted((r for r in self.representations if r.media_type == media_type), key=lambda r: r.bandwidth)

    def to_dict(self) -> dict[str, Any]:
        """Plain Python, representations without segment lists."""
        return {"protocol": self.protocol, "url": self.url, "duration_s": self.duration_s, "live": self.live,
                "representations": [r.to_dict() for r in self.representations], "notes": list(self.notes)}


# ---------------------------------------------------------------------------------------------
# which responses are manifests

_MPD_TYPES = ("application/dash+xml",)
# RFC 8216 §4: application/vnd.apple.mpegurl or audio/mpegurl (both also with x-)
_HLS_TYPES = ("application/vnd.apple.mpegurl", "application/x-mpegurl", "audio/mpegurl", "audio/x-mpegurl")


def is_manifest(url: str | None, content_type: str | None) -> Literal["dash", "hls"] | None:
    """Whether a response is a DASH MPD or an HLS playlist, by Content-Type, else by the URL's extension."""
    ct = (content_type or "").split(";")[0].strip().lower()
    if ct in _MPD_TYPES:
        return "dash"
    if ct in _HLS_TYPES:
        return "hls"
    path = (url or "").split("?")[0].split("#")[0].lower()
    if path.endswith(".mpd"):
        return "dash"
    if path.endswith((".m3u8", ".m3u")):
        return "hls"
    return None


# ---------------------------------------------------------------------------------------------
# DASH

_NS = "{urn:mpeg:dash:schema:mpd:2011}"
# ISO 8601 durations as xs:duration (ISO/IEC 23009-1 §5.3.1.2 uses xs:duration)
_DURATION = re.compile(r"^(-)?P(?:(\d+(?:\.\d+)?)Y)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)D)?"
                       r"(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$")
# ISO/IEC 23009-1 §5.3.9.4.4 Table 16: $<Identifier>$ with an optional %0<width>d format tag
_IDENT = re.compile(r"\$(RepresentationID|Number|Bandwidth|Time|SubNumber)(%0(\d+)d)?\$|\$\$")


def _xs_duration(text: str | None) -> float:
    """Seconds of an xs:duration (``PT36.0S``); NaN when absent."""
    if not text:
        return math.nan
    m = _DURATION.match(text.strip())
    if not m:
        raise ManifestError(f"not an xs:duration: {text!r}")
    y, mo, d, h, mi, s = (float(g) if g else 0.0 for g in m.groups()[1:])
    total = ((y * 365 + mo * 30 + d) * 24 + h) * 3600 + mi * 60 + s  # years/months: nominal (static MPDs use PT..)
    return -total if m.group(1) else total


def _fill(template: str, rep_id: str, bandwidth: int, number: int | None = None, time: int | None = None) -> str:
    """A SegmentTemplate ``@media``/``@initialization`` with its identifiers replaced (§5.3.9.4.4)."""
    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name, width = m.group(1), m.group(3)
        value: Any = {"RepresentationID": rep_id, "Number": number, "Bandwidth": bandwidth, "Time": time,
                      "SubNumber": None}[name]
        if value is None:
            raise ManifestError(f"template {template!r}: ${name}$ has no value here")
        if width and name != "RepresentationID":
            return f"{int(value):0{int(width)}d}"
        return str(value)
    return _IDENT.sub(sub, template)


def _child(el: ET.Element | None, name: str) -> ET.Element | None:
    return None if el is None else el.find(_NS + name)


def _base(url: str, *els: ET.Element | None) -> str:
    """The BaseURL in force at the innermost element (§5.6: each level resolves against the one above)."""
    for el in els:
        b = _child(el, "BaseURL")
        if b is not None and b.text:
            url = urljoin(url, b.text.strip())
    return url


def _merged_attr(name: str, *els: ET.Element | None) -> str | None:
    """An attribute from the innermost element that has it (Representation over AdaptationSet over ...)."""
    for el in reversed(els):
        if el is not None and el.get(name) is not None:
            return el.get(name)
    return None


def _segment_info(kind: str, *els: ET.Element | None) -> dict[str, Any] | None:
    """The SegmentTemplate/List/Base attributes in force: inner elements override outer ones (§5.3.9.1)."""
    found = [_child(el, kind) for el in els]
    if all(f is None for f in found):
        return None
    out: dict[str, Any] = {}
    for f in found:
        if f is not None:
            out.update(f.attrib)
            for sub in ("SegmentTimeline", "Initialization", "RepresentationIndex"):
                c = _child(f, sub)
                if c is not None:
                    out[sub] = c
            urls = f.findall(_NS + "SegmentURL")
            if urls:
                out["SegmentURL"] = urls
    return out


def _media_type(aset: ET.Element, rep: ET.Element) -> str:
    ct = _merged_attr("contentType", aset, rep)
    mime = _merged_attr("mimeType", aset, rep) or ""
    kind = ct or mime.split("/")[0]
    if kind in ("video", "audio", "text"):
        return kind
    if mime in ("application/ttml+xml",) or kind == "application":
        return "text"
    return "other"


def _range(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    a, _, b = text.partition("-")
    try:
        return int(a), int(b)
    except ValueError:
        raise ManifestError(f"not a byte range: {text!r}") from None


def _timeline(tl: ET.Element, period_end_t: float | None) -> list[tuple[int, int]]:
    """(t, d) of every segment of a SegmentTimeline (§5.3.9.6: @r repeats, -1 until the next S or the end)."""
    out: list[tuple[int, int]] = []
    ss = tl.findall(_NS + "S")
    t = 0
    for k, s in enumerate(ss):
        t = int(s.get("t", t))
        d = int(s.get("d", "0"))
        r = int(s.get("r", "0"))
        if d <= 0:
            raise ManifestError(f"SegmentTimeline S without a positive @d: {s.attrib}")
        if r < 0:  # until the next S@t, or the end of the period
            nxt = ss[k + 1].get("t") if k + 1 < len(ss) else None
            end = int(nxt) if nxt is not None else period_end_t
            r = 0 if end is None or math.isnan(end) else max(0, math.ceil((end - t) / d) - 1)
        for _ in range(r + 1):
            out.append((t, d))
            t += d
    return out


def parse_mpd(text: str | bytes, url: str) -> Manifest:
    """Representations and segments of a DASH MPD.

    Parameters
    ----------
    text : str or bytes
        The MPD.
    url : str
        Where it was fetched from (relative segment URLs are resolved against it, §5.6).

    Returns
    -------
    Manifest

    Raises
    ------
    ManifestError
        Not XML, not an MPD, or a malformed attribute.
    """
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ManifestError(f"{url}: not an XML MPD ({exc})") from None
    if root.tag != _NS + "MPD":
        raise ManifestError(f"{url}: the root element is {root.tag!r}, not an MPD (urn:mpeg:dash:schema:mpd:2011)")
    live = root.get("type", "static") == "dynamic"
    total = _xs_duration(root.get("mediaPresentationDuration"))
    reps: list[Representation] = []
    notes: list[str] = []
    periods = root.findall(_NS + "Period")
    for pi, period in enumerate(periods):
        p_start = _xs_duration(period.get("start")) if period.get("start") else 0.0
        p_dur = _xs_duration(period.get("duration"))
        if math.isnan(p_dur):
            nxt = periods[pi + 1].get("start") if pi + 1 < len(periods) else None
            p_dur = (_xs_duration(nxt) - p_start) if nxt else total - p_start
        for aset in period.findall(_NS + "AdaptationSet"):
            for rep in aset.findall(_NS + "Representation"):
                reps.append(_dash_rep(root, period, aset, rep, url, p_start, p_dur, notes))
    return Manifest(protocol="dash", url=url, duration_s=total, representations=tuple(reps), live=live,
                    notes=tuple(notes))


def _dash_rep(root: ET.Element, period: ET.Element, aset: ET.Element, rep: ET.Element, url: str, p_start: float,
              p_dur: float, notes: list[str]) -> Representation:
    rid = rep.get("id") or ""
    bw = int(rep.get("bandwidth") or 0)
    base = _base(url, root, period, aset, rep)
    width = _merged_attr("width", aset, rep)
    height = _merged_attr("height", aset, rep)
    fr = _merged_attr("frameRate", aset, rep)
    frame_rate = None
    if fr:
        a, _, b = fr.partition("/")
        frame_rate = float(a) / float(b or 1)
    common = dict(id=rid, media_type=_media_type(aset, rep), bandwidth=bw,
                  width=int(width) if width else None, height=int(height) if height else None,
                  frame_rate=frame_rate, codecs=_merged_attr("codecs", aset, rep))
    segs: list[Segment] = []
    init = None
    tmpl = _segment_info("SegmentTemplate", period, aset, rep)
    slist = _segment_info("SegmentList", period, aset, rep)
    sbase = _segment_info("SegmentBase", period, aset, rep)
    if tmpl is not None:
        ts = int(tmpl.get("timescale", 1))
        pto = int(tmpl.get("presentationTimeOffset", 0))
        first = int(tmpl.get("startNumber", 1))
        if tmpl.get("initialization"):
            init = Segment(-1, p_start, 0.0, urljoin(base, _fill(tmpl["initialization"], rid, bw)))
        media = tmpl.get("media")
        if not media:
            raise ManifestError(f"{url}: Representation {rid}: SegmentTemplate without @media")
        if "SegmentTimeline" in tmpl:
            end_t = pto + p_dur * ts if not math.isnan(p_dur) else None
            for k, (t, d) in enumerate(_timeline(tmpl["SegmentTimeline"], end_t)):
                segs.append(Segment(first + k, p_start + (t - pto) / ts, d / ts,
                                    urljoin(base, _fill(media, rid, bw, number=first + k, time=t))))
        else:
            dur = int(tmpl.get("duration", 0))
            if dur <= 0:
                raise ManifestError(f"{url}: Representation {rid}: SegmentTemplate with neither @duration nor a "
                                    "SegmentTimeline")
            n = math.ceil(p_dur * ts / dur - 1e-9) if not math.isnan(p_dur) else 0
            if not n:
                notes.append(f"Representation {rid}: no duration known: its segments are numbered as requested")
            for k in range(n):
                segs.append(Segment(first + k, p_start + k * dur / ts, min(dur / ts, p_dur - k * dur / ts),
                                    urljoin(base, _fill(media, rid, bw, number=first + k, time=pto + k * dur))))
    elif slist is not None:
        ts = int(slist.get("timescale", 1))
        first = int(slist.get("startNumber", 1))
        dur = int(slist.get("duration", 0))
        ini = slist.get("Initialization")
        if ini is not None:
            init = Segment(-1, p_start, 0.0, urljoin(base, ini.get("sourceURL") or ""), _range(ini.get("range")))
        timeline = _timeline(slist["SegmentTimeline"], None) if "SegmentTimeline" in slist else None
        for k, su in enumerate(slist.get("SegmentURL", [])):
            if timeline is not None and k < len(timeline):
                start, d = timeline[k][0] / ts, timeline[k][1] / ts
            else:
                start, d = k * dur / ts, dur / ts
            if not math.isnan(p_dur):
                d = min(d, p_dur - start)
            segs.append(Segment(first + k, p_start + start, d, urljoin(base, su.get("media") or ""),
                                _range(su.get("mediaRange"))))
    elif sbase is not None:
        ini = sbase.get("Initialization")
        if ini is not None:
            init = Segment(-1, p_start, 0.0, base, _range(ini.get("range")))
        notes.append(f"Representation {rid}: SegmentBase (one file, segment index in the file): byte ranges are "
                     "mapped to media time by the declared bandwidth")
        return Representation(**common, init=init, file_url=base)
    else:
        notes.append(f"Representation {rid}: no segment information (the whole BaseURL is one segment)")
        return Representation(**common, file_url=base)
    return Representation(**common, segments=tuple(segs), init=init)


# ---------------------------------------------------------------------------------------------
# HLS

def _m3u8(text: str | bytes, url: str) -> Any:
    import m3u8  # noqa: PLC0415 - only when an HLS playlist is parsed

    s = text.decode("utf-8", "replace") if isinstance(text, (bytes, bytearray)) else text
    if not s.lstrip("\ufeff").startswith("#EXTM3U"):
        raise ManifestError(f"{url}: not an HLS playlist (RFC 8216 §4.3.1.1: the first line must be #EXTM3U)")
    try:
        return m3u8.loads(s, uri=url)
    except Exception as exc:  # noqa: BLE001 - m3u8 raises ParseError, ValueError and others
        raise ManifestError(f"{url}: not a readable HLS playlist ({type(exc).__name__}: {exc})") from None


def _byterange(text: str | None, prev_end: int) -> tuple[tuple[int, int] | None, int]:
    """RFC 8216 §4.3.2.2: ``<n>[@<o>]``; without ``@o`` the range follows the previous one."""
    if not text:
        return None, 0
    n, _, o = text.partition("@")
    start = int(o) if o else prev_end
    return (start, start + int(n) - 1), start + int(n)


def _media_playlist(pl: Any, url: str) -> tuple[list[Segment], Segment | None, bool]:
    segs: list[Segment] = []
    t = 0.0
    seq = int(pl.media_sequence or 0)
    prev_end: dict[str, int] = {}
    init = None
    for k, s in enumerate(pl.segments):
        su = urljoin(url, s.uri)
        rng, prev_end[su] = _byterange(s.byterange, prev_end.get(su, 0))
        d = float(s.duration or 0.0)
        segs.append(Segment(seq + k, t, d, su, rng))
        t += d
        m = getattr(s, "init_section", None)
        if m is not None and init is None and m.uri:
            rng0 = None
            if m.byterange:
                rng0, _ = _byterange(m.byterange, 0)
            init = Segment(-1, 0.0, 0.0, urljoin(url, m.uri), rng0)
    return segs, init, not bool(pl.is_endlist)


def parse_hls(master: str | bytes, url: str, media: Mapping[str, str | bytes] | None = None) -> Manifest:
    """Representations and segments of an HLS presentation.

    Parameters
    ----------
    master : str or bytes
        A master playlist (or a lone media playlist: one representation).
    url : str
        Its URL.
    media : mapping of absolute URL to playlist text, optional
        The media playlists seen (the master lists their URLs; their segments need them).

    Returns
    -------
    Manifest
        A variant whose media playlist is not in ``media`` has no segments (a note says so).

    Raises
    ------
    ManifestError
        Not an HLS playlist.
    """
    media = dict(media or {})
    pl = _m3u8(master, url)
    notes: list[str] = []
    reps: list[Representation] = []
    if not pl.is_variant:
        segs, init, live = _media_playlist(pl, url)
        reps.append(Representation(id=url.rsplit("/", 1)[-1], media_type="muxed", bandwidth=0, segments=tuple(segs),
                                   init=init, playlist_url=url))
        return Manifest("hls", url, sum(s.duration_s for s in segs), tuple(reps), live=live,
                        notes=("a media playlist without a master: bandwidth and resolution unknown",))
    audio_groups = {m.group_id for m in pl.media if (m.type or "").upper() == "AUDIO" and m.uri}
    live_any = False
    longest = 0.0

    def segments_of(purl: str) -> tuple[tuple[Segment, ...], Segment | None]:
        nonlocal live_any, longest
        text = media.get(purl)
        if text is None:
            notes.append(f"media playlist {purl} not in the capture (the player did not load it): its segments cannot be mapped")
            return (), None
        segs, init, live = _media_playlist(_m3u8(text, purl), purl)
        live_any |= live
        longest = max(longest, sum(s.duration_s for s in segs))
        return tuple(segs), init

    for v in pl.playlists:
        purl = urljoin(url, v.uri)
        si = v.stream_info
        res = si.resolution
        segs, init = segments_of(purl)
        kind = "video" if (si.audio and si.audio in audio_groups) else "muxed"
        reps.append(Representation(id=v.uri.rsplit("/", 1)[-1], media_type=kind, bandwidth=int(si.bandwidth or 0),
                                   width=res[0] if res else None, height=res[1] if res else None,
                                   frame_rate=float(si.frame_rate) if si.frame_rate else None, codecs=si.codecs,
                                   segments=segs, init=init, playlist_url=purl))
    for m in pl.media:
        if (m.type or "").upper() != "AUDIO" or not m.uri:
            continue
        purl = urljoin(url, m.uri)
        segs, init = segments_of(purl)
        # RFC 8216 §4.3.4.1: EXT-X-MEDIA has no BANDWIDTH; the rendition's rate is its bytes over its duration
        reps.append(Representation(id=m.uri.rsplit("/", 1)[-1], media_type="audio", bandwidth=0, segments=segs,
                                   init=init, playlist_url=purl))
    return Manifest("hls", url, longest if longest else math.nan, tuple(reps), live=live_any, notes=tuple(notes))
