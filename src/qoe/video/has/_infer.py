"""Segments inferred from sizes and timing alone, for sessions whose HTTP is encrypted (no keys).

The responses of the capture's encrypted connections, by size and time
(:func:`qoe.video.has._opaque.opaque_downloads`: TLS records, TCP bytes, QUIC datagrams;
requests sent together on a multiplexed connection, HTTP/2 or HTTP/3, are one response with
``requests`` > 1), are turned into segments in one of two ways:

1. **With a manifest** (:func:`infer_requests`), as VideoOptimizer does: the manifest was
   seen in the capture (cleartext, or decrypted on the connections the key log covers) or
   the user gives its file. The segment duration D is the manifest's (median); a response
   of B bytes carries about 8·B / D bit/s of media; it is taken for a segment of the
   representation (video or audio) whose declared bandwidth is nearest in ratio, when
   within a factor of :data:`MAX_RATIO` (other responses — scripts, playlists — are not
   segments). The k-th segment of a media type is given the k-th media time of that type,
   counting on from the segments seen decrypted (``known``).
2. **Without a manifest** (:func:`window_requests`): each response of at least
   :data:`MIN_SEGMENT_BYTES` is one segment of D seconds and its bitrate is 8·B / D (the
   bitrate per segment-duration window). D is given, or estimated from the request
   periodicity: in a player's steady state (buffer full) it asks for a stream's next
   segment every D seconds and is idle in between (ON-OFF); the median interval between
   requests that follow an idle gap is D. Without such a steady state D is
   :data:`DEFAULT_SEGMENT_DURATION_S`. Audio and video are told apart by size when the
   responses fall into two groups (2-means on log size) whose centres are at least
   :data:`AV_SIZE_RATIO` apart and whose counts are within a factor 2 (a presentation has as
   many audio as video segments): the small ones audio; else every segment is muxed. The
   video bitrates are grouped into levels (neighbours within :data:`LEVEL_RATIO`), so a
   switch is a change of level, not of segment size.

On a multiplexed connection the boundaries between segments are hidden: a response that
answered several requests sent together is split, with a manifest that has audio and video,
into an audio segment of the expected size (declared bandwidth · D) and a video segment of
the rest; without one it is one segment (audio and video together). A TLS connection whose
requests are HPACK-sized (:data:`H2_REQUEST_MAX_BYTES`) is noted as HTTP/2: a request sent
while another response is under way shares its bytes, and the notes say the counts, sizes
and times are approximate. A connection's first large response, when it answered several
requests, is the page (its HTML and the player's scripts), not a segment.

Every segment so found has ``time_source="inferred"``; the session says how
(:attr:`qoe.video.has.StreamingSession.inference`) and its notes give the evidence.

References
----------
.. [1] AT&T VideoOptimizer, "Video analysis" (segments of encrypted streams matched by size to
   the manifest), https://developer.att.com/video-optimizer.
.. [2] G. Pujol et al., "A QoE Perspective on Sizing Network Buffers", IMC 2014 (the
   adaptive stream studied chooses its quality level every 2 s).
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from qoe.video.has._opaque import MIN_SEGMENT_BYTES, QUIC_REQUEST_MIN_BYTES, Download
from qoe.video.has.manifest import Manifest, Representation, Segment
from qoe.video.has.segments import SegmentRequest

__all__ = ["infer_requests", "window_requests", "MAX_RATIO", "DEFAULT_SEGMENT_DURATION_S", "AUDIO_SPREAD",
           "AV_SIZE_RATIO", "AV_COUNT_RATIO", "LEVEL_RATIO", "STEADY_SPREAD", "H2_REQUEST_MAX_BYTES"]

#: A response is a segment of the representation nearest in bitrate when within this factor.
MAX_RATIO = 2.0
#: Without a manifest and without a steady state: the segment duration assumed (the seed
#: paper's adaptive stream chooses its level every 2 s; the sessions of data/video/has too).
DEFAULT_SEGMENT_DURATION_S = 2.0
#: Without a manifest: audio segments (constant bitrate) are within this factor of their median
#: size (AAC 64 kbit/s, 2 s: 17.1-17.4 kB in fMP4, 18.3-18.8 kB in MPEG-TS in data/video/has).
AUDIO_SPREAD = 1.15
#: ... their median at least this many times smaller than the other responses' (a 150 kbit/s
#: video rung against 64 kbit/s audio: 2.3),
AV_SIZE_RATIO = 2.0
#: ... and about as many of them as of the others (within this factor: a presentation has as
#: many audio as video segments; dash.js re-downloaded up to 1.6 times as many video segments
#: as audio in data/video/has: dash-bulk, dash-step).
AV_COUNT_RATIO = 2.0
#: Without a manifest: video bitrates within this ratio of their neighbour are one level.
LEVEL_RATIO = 1.25
_LEAD_NS = 250_000_000  # first audio and video segment requests: 4-30 ms apart in data/video/has
_IDLE_SHARE = 0.5  # steady state: the link idle at least this share of the interval before a request
#: Steady-state request intervals are taken for the segment duration only when their median
#: absolute deviation is within this share of their median (a player filling its buffer
#: in bursts has intervals of every length).
STEADY_SPREAD = 0.1
#: A TLS connection whose requests (the client's record bytes per request, median) are smaller
#: is taken for HTTP/2: HPACK (RFC 7541) compresses a repeated request to a few bytes, 53-100 of
#: TLS record (200 the first) on data/video/has dash-h2, where chromium's HTTP/1.1 requests are
#: 297-613 (dash-tls, hls-tls).
H2_REQUEST_MAX_BYTES = 150


def _segment_duration(manifest: Manifest) -> float:
    durs = [s.duration_s for r in manifest.representations for s in r.segments if s.duration_s > 0]
    return statistics.median(durs) if durs else math.nan


def _position(rep: Representation, start_s: float) -> int | None:
    for i, s in enumerate(rep.segments):
        if abs(s.start_s - start_s) < 1e-3:
            return i
    return None


def infer_requests(downloads: Iterable[Download], manifest: Manifest, *, known: Sequence[SegmentRequest] = ()
                   ) -> tuple[list[SegmentRequest], list[str]]:
    """Segment requests inferred from opaque downloads and the presentation's manifest.

    Parameters
    ----------
    downloads : iterable of Download
    manifest : Manifest
    known : sequence of SegmentRequest, keyword-only
        Segments of the session seen decrypted or in clear: an inferred segment takes the media
        time after the last one of its type requested before it.

    Returns
    -------
    (list of SegmentRequest, list of str)
        The inferred segments (``time_source="inferred"``) and notes (the evidence).
    """
    d = _segment_duration(manifest)
    notes = []
    reps: list[Representation] = [r for r in manifest.representations
                                  if r.media_type in ("video", "audio", "muxed") and r.segments]
    if not math.isfinite(d) or not reps:
        return [], ["the manifest lists no segments: nothing can be inferred"]
    rates = {}
    for r in reps:
        if r.bandwidth:
            rates[r.id] = float(r.bandwidth)
        else:  # an HLS audio rendition has no BANDWIDTH: 64 kbit/s assumed
            rates[r.id] = 64e3
            notes.append(f"representation {r.id}: no declared bandwidth, 64 kbit/s assumed for matching")
    dls = list(downloads)
    notes += _transport_notes(dls)
    dls, page_notes = _without_page(dls)
    notes += page_notes
    dls, split_notes = _split_multiplexed(dls, reps, rates, d)
    notes += split_notes
    matched: list[tuple[Download, Representation, float]] = []
    for dl in dls:
        est = dl.bytes * 8 / d
        best = min(reps, key=lambda r: abs(math.log(est / rates[r.id])))
        err = abs(math.log(est / rates[best.id]))
        if err <= math.log(MAX_RATIO):
            matched.append((dl, best, err))
    # A player asks for its first audio and video segments together: a "segment" of one type
    # well before the first of another type is something else (the page's player script)
    firsts: dict[str, int] = {}
    for r in known:
        if not r.init and r.request_ns is not None:
            firsts[r.media_type] = min(firsts.get(r.media_type, r.request_ns), r.request_ns)
    for dl, rep, _ in matched:
        firsts[rep.media_type] = min(firsts.get(rep.media_type, dl.request_ns), dl.request_ns)
    if len(firsts) > 1:
        def early(dl: Download, rep: Representation) -> bool:
            other = min(t for k, t in firsts.items() if k != rep.media_type)
            return dl.request_ns < other - _LEAD_NS
        dropped = [m for m in matched if early(m[0], m[1])]
        if dropped:
            notes.append(f"{len(dropped)} response(s) of a segment's size before the player's first segments: "
                         "taken for page objects, not segments")
        matched = [m for m in matched if not early(m[0], m[1])]
    by_id = {r.id: r for r in reps}
    events: list[tuple[int, int, Any]] = [(r.request_ns or 0, 0, r) for r in known
                                          if not r.init and r.media_type in ("video", "audio", "muxed")]
    events += [(m[0].request_ns, 1, m) for m in matched]
    events.sort(key=lambda e: (e[0], e[1]))
    counters: dict[str, int] = {}
    out: list[SegmentRequest] = []
    for _, kind, item in events:
        if kind == 0:  # a segment seen: the count of its type goes on from its media time
            rep = by_id.get(item.representation)
            k = _position(rep, item.start_s) if rep is not None else None
            if k is not None and not item.aborted:
                counters[item.media_type] = k + 1
            continue
        dl, best, _ = item
        k = counters.get(best.media_type, 0)
        if not dl.aborted:  # an abandoned segment is asked for again: it keeps its media time
            counters[best.media_type] = k + 1
        timeline = best.segments
        if k >= len(timeline):
            notes.append(f"more {best.media_type} downloads than segments: the rest left out")
            continue
        seg = timeline[k]
        out.append(SegmentRequest(
            media_type=best.media_type, representation=best.id, bandwidth=best.bandwidth, width=best.width,
            height=best.height, number=seg.number, start_s=seg.start_s, duration_s=seg.duration_s,
            url=f"(encrypted) {dl.connection[2]}:{dl.connection[3]}", byte_range=None, connection=-1,
            request_ns=dl.request_ns, response_start_ns=dl.first_byte_ns, response_end_ns=dl.last_byte_ns,
            bytes=dl.bytes, status=None, complete=not dl.aborted, aborted=dl.aborted or dl.last_byte_ns is None,
            time_source="inferred"))
    used = [m for m in matched if any(o.request_ns == m[0].request_ns for o in out)]
    if used:
        spread = statistics.median(math.exp(e) for _, _, e in used)
        notes.append(f"segments inferred from encrypted sizes and timing: {len(used)} of {len(dls)} response(s) "
                     "matched to the manifest's representations "
                     f"by their bitrate over {d:g} s (8·bytes / D, nearest declared bandwidth within ×{MAX_RATIO:g}; "
                     f"median ratio to it {spread:.2f}), media times in download order")
    return out, sorted(set(notes), key=notes.index)


def _span(values: Sequence[int]) -> str:
    """"2" or "2-6"."""
    return f"{values[0]}" if values[0] == values[-1] else f"{values[0]}-{values[-1]}"


def _transport_notes(dls: Sequence[Download]) -> list[str]:
    """What the inference read, when it read QUIC, and the connections that look like HTTP/2."""
    notes = []
    quic = [x for x in dls if x.transport == "quic"]
    if quic:
        notes.append(f"HTTP/3 (QUIC) without keys: {len(quic)} response(s) to {sum(x.requests for x in quic)} "
                     "request(s) read from the connection's datagrams, a client "
                     f"short-header datagram of ≥ {QUIC_REQUEST_MIN_BYTES} bytes taken for a request and smaller ones "
                     "for acknowledgements (QUIC_REQUEST_MIN_BYTES), the server's datagrams until the next request for "
                     "its response")
    by_conn: dict[tuple[str, int, str, int], list[Download]] = {}
    for x in dls:
        if x.transport == "tcp" and x.request_bytes:
            by_conn.setdefault(x.connection, []).append(x)
    for conn, xs in by_conn.items():
        big = [x for x in xs if x.bytes >= MIN_SEGMENT_BYTES]
        per = statistics.median(x.request_bytes / x.requests for x in xs)
        if len(big) < 2 or per >= H2_REQUEST_MAX_BYTES:
            continue
        multi = sum(x.requests > 1 for x in big)
        notes.append(
            f"connection {conn[0]}:{conn[1]} → {conn[2]}:{conn[3]} looks like HTTP/2 (its requests {per:.0f} bytes of "
            f"TLS record, median: HPACK-compressed HEADERS; HTTP/1.1 ones are larger, ≥ {H2_REQUEST_MAX_BYTES}): "
            f"multiplexed HTTP/2 hides the segment boundaries: of its {len(big)} responses of a segment's size, {multi} "
            "answered several requests sent together and the others may hold parts of two (a request sent while "
            "another response is under way shares its bytes): segment counts, sizes and times are approximate")
    return notes


def _without_page(dls: Sequence[Download]) -> tuple[list[Download], list[str]]:
    """The downloads without each connection's first large response (MIN_SEGMENT_BYTES) when it
    answered several requests at once: on a multiplexed connection that is the page (its HTML and the player's scripts);
    a player asks for segments only once its manifest came back."""
    firsts: dict[tuple[str, int, str, int], Download] = {}
    for x in sorted(dls, key=lambda x: x.request_ns):
        if x.bytes >= MIN_SEGMENT_BYTES:
            firsts.setdefault(x.connection, x)
    page = {id(x) for x in firsts.values() if x.requests > 1}
    if not page:
        return list(dls), []
    return [x for x in dls if id(x) not in page], [
        f"{len(page)} first large response(s) of a multiplexed connection (several requests at once) taken for the page "
        "and the player's scripts, not segments"]


def _split_multiplexed(dls: Sequence[Download], reps: Sequence[Representation], rates: dict[str, float], d: float
                       ) -> tuple[list[Download], list[str]]:
    """Responses to several requests sent together (multiplexed HTTP/2 or HTTP/3): when the
    manifest has audio and video, split into an audio segment of the expected size (the audio
    representation's declared bandwidth · D / 8) and a video segment of the rest, both with the
    group's times; the group's other requests are taken for small objects (playlists, a favicon)."""
    audio = [r for r in reps if r.media_type == "audio"]
    video = [r for r in reps if r.media_type in ("video", "muxed")]
    multi = [x for x in dls if x.requests > 1]
    if not multi:
        return list(dls), []
    if not (audio and video):
        return list(dls), [f"{len(multi)} response(s) answered several requests at once (multiplexed HTTP/2 or "
                           "HTTP/3: the segment boundaries are hidden), each taken whole"]
    a_bytes = int(round(statistics.median(rates[r.id] for r in audio) * d / 8))
    out: list[Download] = []
    n_split = 0
    for x in dls:
        if x.requests > 1 and x.bytes > a_bytes:
            n_split += 1
            out.append(dataclasses.replace(x, bytes=a_bytes, requests=1))
            out.append(dataclasses.replace(x, bytes=x.bytes - a_bytes, requests=1))
        else:
            out.append(x)
    sizes = sorted(x.requests for x in multi)
    note = (f"multiplexed HTTP/2 or HTTP/3 hides the segment boundaries: {len(multi)} of {len(dls)} response(s) answered "
            f"{_span(sizes)} requests sent together; {n_split} split into an audio segment of the expected "
            f"{a_bytes / 1e3:.1f} kB (declared bandwidth · {d:g} s) and a video segment of the rest, both timed by the "
            "group (the audio's completion is the group's)")
    return out, [note]


def _levels(rates: Sequence[float]) -> list[list[float]]:
    """Bitrates grouped into levels: sorted, a new level where the ratio to the previous exceeds LEVEL_RATIO."""
    groups: list[list[float]] = []
    for r in sorted(rates):
        if groups and r / groups[-1][-1] <= LEVEL_RATIO:
            groups[-1].append(r)
        else:
            groups.append([r])
    return groups


def _periodicity(stream: Sequence[Download], every: Sequence[Download]) -> tuple[float | None, int]:
    """The median interval between a stream's requests that follow an idle link (no response of
    ``every`` in progress for at least _IDLE_SHARE of the interval: ON-OFF), and how many."""
    gaps = []
    for a, b in zip(stream, stream[1:]):
        interval = b.request_ns - a.request_ns
        busy_until = max((d.last_byte_ns or d.request_ns for d in every if d.request_ns < b.request_ns),
                         default=a.request_ns)
        if interval > 0 and b.request_ns - busy_until >= _IDLE_SHARE * interval:
            gaps.append(interval / 1e9)
    if len(gaps) < 3:
        return None, len(gaps)
    med = statistics.median(gaps)
    mad = statistics.median(abs(g - med) for g in gaps)
    return (med if mad <= STEADY_SPREAD * med else None), len(gaps)


def window_requests(downloads: Iterable[Download], *, segment_duration_s: float | None = None
                    ) -> tuple[list[SegmentRequest], Manifest | None, list[str]]:
    """Segments inferred with no manifest: one per large response, its bitrate per window of D seconds.

    Parameters
    ----------
    downloads : iterable of Download
        One client's encrypted responses.
    segment_duration_s : float, optional, keyword-only
        D; None: estimated from the request periodicity, else :data:`DEFAULT_SEGMENT_DURATION_S`.

    Returns
    -------
    (list of SegmentRequest, Manifest or None, list of str)
        The segments, a stand-in manifest (``protocol="unknown"``: the levels found, each
        with the inferred segments' timeline) and notes (the evidence). No segment: None.
    """
    downloads = list(downloads)
    notes: list[str] = _transport_notes(downloads)
    downloads, page_notes = _without_page(downloads)
    notes += page_notes
    segs = [x for x in downloads if x.bytes >= MIN_SEGMENT_BYTES]
    if len(segs) < 2:
        return [], None, []
    # audio and video: a tight group of near-equal small sizes (constant-bitrate audio) and the
    # rest, about as many of each (a presentation has as many audio as video segments): the
    # largest such group, centred on a response's size, wins
    sizes = sorted(d.bytes for d in segs)
    best: tuple[int, float] | None = None
    for c in sizes:
        a = bisect.bisect_left(sizes, c / AUDIO_SPREAD)
        b = bisect.bisect_right(sizes, c * AUDIO_SPREAD)
        n_a, n_v = b - a, len(sizes) - (b - a)
        if not (n_a and n_v and 1 / AV_COUNT_RATIO <= n_a / n_v <= AV_COUNT_RATIO):
            continue
        rest = sizes[:a] + sizes[b:]
        if statistics.median(rest) >= AV_SIZE_RATIO * c and (best is None or n_a > best[0]):
            best = (n_a, c)
    multi = [x for x in segs if x.requests > 1]
    if multi:
        sizes = sorted(x.requests for x in multi)
        notes.append(f"multiplexed HTTP/2 or HTTP/3 hides the segment boundaries: {len(multi)} of {len(segs)} large "
                     f"response(s) answered {_span(sizes)} requests sent together, each taken for one segment "
                     "(audio and video together when both were asked for: its bitrate their sum)")
        if 2 * len(multi) > len(segs):
            best = None  # the audio segments are inside the groups: no size group of them
    split = best is not None
    small = best[1] if best is not None else 0.0
    tight = [split and abs(math.log(d.bytes / small)) <= math.log(AUDIO_SPREAD) for d in segs]
    big = statistics.median(d.bytes for d, t in zip(segs, tight) if not t) if split else 0.0
    kinds = ["audio" if t else "video" for t in tight] if split else ["muxed"] * len(segs)
    if split:
        first_audio = min(d.request_ns for d, k in zip(segs, kinds) if k == "audio")
        keep = [not (k == "video" and d.request_ns < first_audio - _LEAD_NS) for d, k in zip(segs, kinds)]
        if not all(keep):
            notes.append(f"{keep.count(False)} large response(s) before the first audio segment: taken for page "
                         "objects, not segments")
        segs = [d for d, k in zip(segs, keep) if k]
        kinds = [k for k, k2 in zip(kinds, keep) if k2]
        notes.append(f"audio and video told apart by size: {kinds.count('audio')} responses within ×{AUDIO_SPREAD:g} of "
                     f"{small / 1e3:.1f} kB (audio), {kinds.count('video')} others, median {big / 1e3:.1f} kB (video)")
    else:
        notes.append("one size group (no audio/video split: muxed segments, or their sizes overlap)")
    if segment_duration_s is not None:
        d = float(segment_duration_s)
        notes.append(f"segment duration {d:g} s (given)")
    else:
        per = [_periodicity([x for x, k in zip(segs, kinds) if k == kind], downloads) for kind in sorted(set(kinds))]
        found = [p for p, _ in per if p is not None]
        if found:
            d = statistics.median(found)
            notes.append(f"segment duration {d:.2f} s estimated from the request periodicity "
                         f"({sum(n for _, n in per)} request interval(s) after an idle link)")
        else:
            d = DEFAULT_SEGMENT_DURATION_S
            notes.append(f"no steady state (regular requests after an idle link) seen: segment duration {d:g} s assumed "
                         "(DEFAULT_SEGMENT_DURATION_S)")
    # representations: levels of bitrate per media type
    reps: list[Representation] = []
    level_of: dict[int, tuple[str, int]] = {}
    counts: dict[str, int] = {}
    for kind in sorted(set(kinds)):
        mine = [(i, segs[i].bytes * 8 / d) for i in range(len(segs)) if kinds[i] == kind]
        counts[kind] = len(mine)
        lv = _levels([r for _, r in mine]) if kind != "audio" else [sorted(r for _, r in mine)]
        for j, g in enumerate(lv):
            bw = int(round(statistics.median(g)))
            rid = f"{kind[0]}{j}~{bw // 1000}k"
            for i, r in mine:
                if g[0] <= r <= g[-1]:
                    level_of[i] = (rid, bw)
            reps.append(Representation(id=rid, media_type=kind, bandwidth=bw))
    n_max = max(counts.values())
    timeline = tuple(Segment(number=k, start_s=k * d, duration_s=d, url="") for k in range(n_max))
    reps = [Representation(id=r.id, media_type=r.media_type, bandwidth=r.bandwidth,
                           segments=timeline[:counts[r.media_type]]) for r in reps]
    manifest = Manifest(protocol="unknown", url="(no manifest: segments inferred from encrypted sizes)",
                        duration_s=n_max * d, representations=tuple(reps))
    out: list[SegmentRequest] = []
    seen: dict[str, int] = {}
    for i, dl in enumerate(segs):
        kind = kinds[i]
        k = seen.get(kind, 0)
        seen[kind] = k + (0 if dl.aborted else 1)
        rid, bw = level_of[i]
        out.append(SegmentRequest(
            media_type=kind, representation=rid, bandwidth=bw, width=None, height=None, number=k, start_s=k * d,
            duration_s=d, url=f"(encrypted) {dl.connection[2]}:{dl.connection[3]}", byte_range=None, connection=-1,
            request_ns=dl.request_ns, response_start_ns=dl.first_byte_ns, response_end_ns=dl.last_byte_ns,
            bytes=dl.bytes, status=None, complete=not dl.aborted, aborted=dl.aborted or dl.last_byte_ns is None,
            time_source="inferred"))
    levels = ", ".join(f"{r.id}" for r in reps)
    notes.append(f"no manifest: each response of ≥ {MIN_SEGMENT_BYTES} bytes taken for one segment of {d:g} s, its "
                 f"bitrate 8·bytes / {d:g} s, grouped into levels ({levels})")
    return out, manifest, notes
