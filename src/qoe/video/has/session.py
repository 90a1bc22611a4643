"""Adaptive streaming sessions from HTTP transactions: manifests, segments, the replayed player, KPIs, QoE.

:func:`build_sessions` works on transactions (from :func:`qoe.web.page_loads`, a HAR, or
anything with the fields of :class:`qoe.web.http.Transaction`) and the manifests' bodies;
:func:`sessions` does it for a capture.

A session is one client playing one presentation: it starts with the request of a DASH MPD
or an HLS master playlist (a lone media playlist when there is no master) and holds the
client's segment requests of that presentation until the client fetches another one. A
refetch of the same MPD (a live presentation's updates) stays in its session.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from qoe.errors import InputError, QoEWarning
from qoe.report import as_dict, brief
from qoe.video.has._bodies import ResponseWindow, read_bodies
from qoe.video.has.decrypted import keylog_bodies, quic_bodies
from qoe.video.has._infer import infer_requests, window_requests
from qoe.video.has._opaque import Download, opaque_downloads
from qoe.video.has.manifest import Manifest, ManifestError, is_manifest, parse_hls, parse_mpd
from qoe.video.has.options import StreamingOptions
from qoe.video.has.replay import PlaybackReplay, _Buffers, _played_chunks, replay, shown
from qoe.video.has.segments import SegmentIndex, SegmentRequest, map_requests
from qoe.video.has.yin import PRESETS, linear_qoe
from qoe.web import page_loads
from qoe.web.http import connection_results
from qoe.web.quic import quic_connections

__all__ = ["StreamingSession", "build_sessions", "sessions", "capture_bodies", "may_be_streaming", "inferred_sessions",
           "window_sessions"]

_NS = 1e9


@dataclass(frozen=True)
class StreamingSession:
    """One adaptive streaming session: the player's view rebuilt from a capture.

    Times are seconds; session time 0 is the manifest request (``start_ns``).

    Attributes
    ----------
    index : int
        0-based number of the session in the capture, in start order.
    client, server : str
        Addresses.
    protocol : {"dash", "hls"}
    manifest_url : str
    start_ns : int
        The manifest's request (capture time, ns since the epoch).
    duration_s : float
        Session time to the end of playback (or of the capture).
    media_duration_s : float
        The presentation's duration (manifest).
    representations : int
        Representations in the manifest.
    video_segments, audio_segments : int
        Media segment requests of each type (muxed HLS segments count as video).
    retries, aborted, redundant : int
        Segment requests repeated, not completed (or answered with an error), or for media
        time already downloaded in another representation.
    bytes : int
        Response body bytes of the segment requests.
    startup_delay_s : float
        First media segment request → playback start (NaN: never started).
    join_time_s : float
        Manifest request → playback start.
    stalls : int
        Interruptions after playback started.
    stall_s : float
        Their total duration.
    stall_ratio : float
        ``stall_s / (played_s + stall_s)``.
    switches, switches_up, switches_down : int
        Changes of the video representation between consecutive played segments.
    bitrate_kbps : float
        Mean declared bitrate of the played video (weighted by media time).
    height : float
        Mean height of the played video (weighted by media time).
    played_s : float
        Media time of video played with its picture (segments shown).
    frozen_s : float
        Time playback ran on audio with an empty video buffer (the picture frozen, no stall:
        ``StreamingOptions.video_underflow_s``).
    ended : bool
        The playhead reached the presentation's end within the capture.
    qoe : float
        Linear QoE (Yin et al. 2015) with ``qoe_preset``'s parameters.
    qoe_preset : str
    qoe_lin, qoe_log, qoe_hd : float
        The three Pensieve metrics (Mao et al. 2017 §5.1).
    startup_threshold_s, rebuffer_threshold_s : float
        The replay's player model (:class:`StreamingOptions`).
    inferred : bool
        Some segments inferred from encrypted sizes (their URLs not seen): see ``inference``.
    inference : {"", "manifest", "windows"}
        How: ``"manifest"``, encrypted response sizes matched to the manifest's
        representations (the manifest seen in the capture, or given as a file); ``"windows"``,
        no manifest at all: each large response one segment, its bitrate per segment-duration
        window (:mod:`qoe.video.has._infer`); ``""``, nothing inferred. The notes give the evidence.
    inferred_segments : int
        Segment requests inferred (``time_source == "inferred"``).
    complete : bool
        Every segment request answered whole.
    notes : tuple of str
    """

    index: int
    client: str
    server: str
    protocol: str
    manifest_url: str
    start_ns: int
    duration_s: float
    media_duration_s: float
    representations: int
    video_segments: int
    audio_segments: int
    retries: int
    aborted: int
    redundant: int
    bytes: int
    startup_delay_s: float
    join_time_s: float
    stalls: int
    stall_s: float
    stall_ratio: float
    switches: int
    switches_up: int
    switches_down: int
    bitrate_kbps: float
    height: float
    played_s: float
    frozen_s: float
    ended: bool
    qoe: float
    qoe_preset: str
    qoe_lin: float
    qoe_log: float
    qoe_hd: float
    startup_threshold_s: float
    rebuffer_threshold_s: float
    inferred: bool
    inference: str
    inferred_segments: int
    complete: bool
    notes: tuple[str, ...] = ()
    segments: tuple[SegmentRequest, ...] = field(default=(), repr=False)
    manifest: Manifest | None = field(default=None, repr=False)
    replay: PlaybackReplay | None = field(default=None, repr=False)
    seconds: tuple[dict[str, Any], ...] = field(default=(), repr=False)
    played: tuple[dict[str, Any], ...] = field(default=(), repr=False)

    kind: ClassVar[str] = "streaming"
    BRIEF_COLUMNS: ClassVar[tuple[str, ...]] = (
        "client", "protocol", "manifest_url", "startup_delay_s", "stalls", "stall_s", "switches", "bitrate_kbps",
        "height", "qoe",
    )
    _HIDDEN: ClassVar[tuple[str, ...]] = ("segments", "manifest", "replay", "seconds", "played", "notes")

    @property
    def label(self) -> str:
        """A short name for notes."""
        return f"session {self.index} ({self.manifest_url})"

    def identity(self) -> dict[str, Any]:
        """The columns that name this session in detail tables."""
        return {"session": self.index, "client": self.client, "manifest_url": self.manifest_url}

    def to_record(self, *, brief: bool = False) -> dict[str, Any]:
        """One flat record; ``brief``: the headline columns."""
        rec = as_dict(self, skip=self._HIDDEN)
        rec["notes"] = "; ".join(self.notes)
        return _brief(rec, self.BRIEF_COLUMNS) if brief else rec

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain Python: the record, its tables and the manifest."""
        out = as_dict(self, skip=self._HIDDEN)
        out["notes"] = list(self.notes)
        out["manifest"] = self.manifest.to_dict() if self.manifest is not None else None
        out.update(self.tables())
        return out

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        """Detail tables: ``segments`` (one row per request), ``seconds`` (the per-second
        view), ``stalls``, ``played`` (the played segments, in play order)."""
        t0 = self.start_ns

        def s(ns: int | None) -> float:
            return math.nan if ns is None else (ns - t0) / _NS

        segs = [{
            "media_type": r.media_type, "representation": r.representation, "bandwidth": r.bandwidth,
            "width": r.width, "height": r.height, "number": r.number, "start_s": r.start_s,
            "duration_s": r.duration_s, "url": r.url, "connection": r.connection, "request_s": s(r.request_ns),
            "response_start_s": s(r.response_start_ns), "response_end_s": s(r.response_end_ns), "bytes": r.bytes,
            "status": r.status, "aborted": r.aborted, "retry": r.retry, "redundant": r.redundant,
            "time_source": r.time_source,
        } for r in self.segments]
        stalls = [{"start_s": x.start_s, "duration_s": x.duration_s, "media_s": x.media_s, "ended": x.ended}
                  for x in (self.replay.stalls if self.replay is not None else ())]
        return {"segments": segs, "seconds": [dict(r) for r in self.seconds], "stalls": stalls,
                "played": [dict(r) for r in self.played]}


_brief = brief


# ------------------------------------------------------------------------------------------
# building

def _video_kind(reqs: Sequence[SegmentRequest]) -> str:
    return "video" if any(r.media_type == "video" for r in reqs) else "muxed"


def _per_second(reqs: Sequence[SegmentRequest], rep: PlaybackReplay, tick: float, delay_s: float) -> list[dict[str, Any]]:
    vk = _video_kind(reqs)
    kinds = sorted({r.media_type for r in reqs if r.media_type in ("video", "audio", "muxed")})
    done = sorted((r for r in reqs if not r.init and not r.aborted and r.response_end_ns is not None
                   and r.media_type in kinds), key=lambda r: r.response_end_ns)
    end = rep.end_s if math.isfinite(rep.end_s) else 0.0
    rows = []
    n = int(math.floor(end / tick + 1e-9)) + 1
    k_done = 0
    buf = _Buffers(kinds)
    stall_spans = [(x.start_s, x.start_s + x.duration_s) for x in rep.stalls]
    for i in range(n):
        t = i * tick
        at_ns = rep.origin_ns + int(round((t - delay_s) * _NS))
        while k_done < len(done) and done[k_done].response_end_ns <= at_ns:
            r = done[k_done]
            buf.add(r.media_type, r.start_s, r.start_s + r.duration_s)
            k_done += 1
        pos, playing = rep.position(t)
        if not math.isfinite(rep.play_start_s) or t < rep.play_start_s:
            state = "startup"
        elif rep.ended and t >= rep.end_s - 1e-9:
            state = "ended"
        elif any(a <= t < b for a, b in stall_spans):
            state = "stalled"
        else:
            state = "playing" if playing else "stalled"
        seg = shown(reqs, vk, pos, at_ns) if state == "playing" else None
        rows.append({
            "t_s": round(t, 6), "state": state, "position_s": pos, "buffer_s": max(0.0, buf.ahead_end(pos) - pos),
            "representation": seg.representation if seg else None,
            "bitrate_kbps": seg.bandwidth / 1e3 if seg else math.nan,
            "width": seg.width if seg else None, "height": seg.height if seg else None,
        })
    return rows


def _session(index: int, client: str, manifest: Manifest, reqs: list[SegmentRequest], start_ns: int,
             server: str, capture_end_ns: int, options: StreamingOptions, notes: list[str],
             inference: str = "") -> StreamingSession:
    kinds = sorted({r.media_type for r in reqs if r.media_type in ("video", "audio", "muxed") and not r.init})
    rep = replay(reqs, origin_ns=start_ns, media_end_s=manifest.media_end_s(kinds) if kinds else manifest.duration_s,
                 startup_threshold_s=options.startup_threshold_s, rebuffer_threshold_s=options.rebuffer_threshold_s,
                 append_delay_s=options.append_delay_s,
                 video_underflow_s=options.video_underflow_s, capture_end_ns=capture_end_ns)
    vk = _video_kind(reqs)
    chunks = _played_chunks(reqs, rep, vk)
    rates = [c.bandwidth for c, _ in chunks]
    durs = [c.duration_s for c, _ in chunks]
    played = sum(durs)
    sw_up = sum(1 for a, b in zip(rates, rates[1:]) if b > a)
    sw_down = sum(1 for a, b in zip(rates, rates[1:]) if b < a)
    bitrate = sum(r * d for r, d in zip(rates, durs)) / played / 1e3 if played > 0 else math.nan
    hs = [(c.height, c.duration_s) for c, _ in chunks if c.height]
    height = sum(h * d for h, d in hs) / sum(d for _, d in hs) if hs else math.nan
    stall_s = sum(s.duration_s for s in rep.stalls)
    startup = rep.play_start_s - rep.first_request_s if math.isfinite(rep.play_start_s) else math.nan
    join = rep.play_start_s
    ladder = [r.bandwidth for r in manifest.by_type(vk) if r.bandwidth]
    r_min = min(ladder) if ladder else None
    st = startup if math.isfinite(startup) else 0.0

    def score(params: Any) -> float:
        if not rates:
            return math.nan
        return linear_qoe(rates, stall_s, st, params=params, r_min_bps=r_min)

    params = options.qoe_params()
    if not math.isfinite(rep.play_start_s):
        notes.append("playback never started within the capture (the startup threshold was not reached)")
    if any(r.time_source == "bytes" for r in reqs):
        notes.append("media time of byte-range requests estimated from the declared bandwidth (DASH SegmentBase)")
    if manifest.protocol == "hls" and vk == "video" and any(r.media_type == "video" for r in reqs):
        notes.append("HLS variant bitrates are the master playlist's BANDWIDTH (it includes the audio rendition)")
    aborted = sum(r.aborted for r in reqs)
    if aborted:
        notes.append(f"{aborted} segment request(s) not completed or answered with an error: left out of the buffer")
    played_rows = [{"number": c.number, "start_s": c.start_s, "duration_s": c.duration_s,
                    "representation": c.representation, "bandwidth": c.bandwidth, "height": c.height,
                    "play_s": t} for c, t in chunks]
    return StreamingSession(
        index=index, client=client, server=server, protocol=manifest.protocol, manifest_url=manifest.url,
        start_ns=start_ns, duration_s=rep.end_s if math.isfinite(rep.end_s) else 0.0,
        media_duration_s=manifest.duration_s, representations=len(manifest.representations),
        video_segments=sum(1 for r in reqs if not r.init and r.media_type in ("video", "muxed")),
        audio_segments=sum(1 for r in reqs if not r.init and r.media_type == "audio"),
        retries=sum(r.retry for r in reqs), aborted=aborted, redundant=sum(r.redundant for r in reqs),
        bytes=sum(r.bytes for r in reqs), startup_delay_s=startup, join_time_s=join, stalls=len(rep.stalls),
        stall_s=stall_s, stall_ratio=stall_s / (played + stall_s) if played + stall_s > 0 else math.nan,
        switches=sw_up + sw_down, switches_up=sw_up, switches_down=sw_down, bitrate_kbps=bitrate, height=height,
        played_s=played, frozen_s=sum(d for _, d in rep.freezes), ended=rep.ended, qoe=score(params), qoe_preset=params.name,
        qoe_lin=score(PRESETS["pensieve-lin"]), qoe_log=score(PRESETS["pensieve-log"]),
        qoe_hd=score(PRESETS["pensieve-hd"]), startup_threshold_s=options.startup_threshold_s,
        rebuffer_threshold_s=options.rebuffer_threshold_s, inferred=bool(inference), inference=inference,
        inferred_segments=sum(r.time_source == "inferred" for r in reqs),
        complete=all(r.complete for r in reqs), notes=tuple(notes), segments=tuple(reqs), manifest=manifest,
        replay=rep, seconds=tuple(_per_second(reqs, rep, options.tick_s, options.append_delay_s)), played=tuple(played_rows),
    )


def build_sessions(transactions: Iterable[Any], bodies: Callable[[Sequence[Any]], Mapping[int, tuple[bytes, bool]]],
                   *, options: StreamingOptions | None = None, opaque: Callable[[], Sequence[Download]] | None = None,
                   opaque_when: str = "missing") -> list[StreamingSession]:
    """Streaming sessions from HTTP transactions.

    Parameters
    ----------
    transactions : iterable of qoe.web.http.Transaction
        Every transaction of the capture (or HAR).
    bodies : callable
        ``bodies(manifest_transactions) -> {position in that list: (body bytes, whole)}``:
        how the manifests' bodies are had (:func:`sessions` reads them back from the capture).
    options : StreamingOptions, keyword-only, optional
    opaque : callable, keyword-only, optional
        ``opaque() -> [Download]``: the responses of the capture's encrypted connections
        (:func:`qoe.video.has._opaque.opaque_downloads`), called at most once. A session's
        segments among them are inferred from their sizes and its manifest
        (:func:`qoe.video.has._infer.infer_requests`): when the session has no segment seen
        (``opaque_when="missing"``: the manifest in clear, the segments over HTTPS), or always
        (``"always"``: a key log that opens only some connections).

    Returns
    -------
    list of StreamingSession
        In order of their start.
    """
    options = options if options is not None else StreamingOptions()
    txs = sorted((t for t in transactions if t.url and (t.request_start_ns or t.started_ns) is not None),
                 key=lambda t: t.request_start_ns if t.request_start_ns is not None else t.started_ns)
    if not txs:
        return []
    capture_end = max((t.response_end_ns or t.response_start_ns or t.request_start_ns or 0) for t in txs)
    mtx = [t for t in txs if t.status is not None and 200 <= t.status < 300 and is_manifest(t.url, t.content_type)]
    if not mtx:
        return []
    got = bodies(mtx)
    # client -> list of (start_ns, protocol, url, body text, transaction)
    heads: list[dict[str, Any]] = []
    hls_media: dict[str, dict[str, bytes]] = {}  # client -> {url: body}
    notes_by_client: dict[str, list[str]] = {}
    for k, t in enumerate(mtx):
        client = t.client[0] if t.client else ""
        body, whole = got.get(k, (b"", False))
        proto = is_manifest(t.url, t.content_type)
        if not body:
            notes_by_client.setdefault(client, []).append(
                f"manifest {t.url}: its body is not in the capture (encrypted, or bytes missing)")
            continue
        if not whole:
            notes_by_client.setdefault(client, []).append(f"manifest {t.url}: body incomplete in the capture")
        if proto == "hls":
            text = body.decode("utf-8", "replace")
            if "#EXT-X-STREAM-INF" in text:
                heads.append({"client": client, "start": t.request_start_ns, "protocol": "hls", "url": t.url,
                              "body": body, "server": t.server[0] if t.server else ""})
            else:
                hls_media.setdefault(client, {})[t.url] = body
                if not any(h["client"] == client and h["protocol"] == "hls" for h in heads):
                    heads.append({"client": client, "start": t.request_start_ns, "protocol": "hls-media",
                                  "url": t.url, "body": body, "server": t.server[0] if t.server else ""})
        else:
            same = [h for h in heads if h["client"] == client and h["url"] == t.url]
            if same:
                same[-1]["body"] = body  # a refetch (live MPD update): the latest version
                continue
            heads.append({"client": client, "start": t.request_start_ns, "protocol": "dash", "url": t.url,
                          "body": body, "server": t.server[0] if t.server else ""})
    heads.sort(key=lambda h: h["start"])
    out: list[StreamingSession] = []
    cache: list[Download] | None = None
    for h in heads:
        client = h["client"]
        notes = list(notes_by_client.get(client, []))
        try:
            if h["protocol"] == "dash":
                man = parse_mpd(h["body"], h["url"])
            elif h["protocol"] == "hls":
                man = parse_hls(h["body"], h["url"], hls_media.get(client, {}))
            else:
                man = parse_hls(h["body"], h["url"])
        except ManifestError as exc:
            warnings.warn(f"{exc}: session left out", QoEWarning, stacklevel=2)
            continue
        notes.extend(man.notes)
        nxt = [g["start"] for g in heads if g["client"] == client and g["start"] > h["start"]]
        until = min(nxt) if nxt else math.inf
        mine = [t for t in txs if (t.client[0] if t.client else "") == client
                and h["start"] <= (t.request_start_ns or 0) < until]
        reqs = map_requests(mine, SegmentIndex(man))
        inference = ""
        media = [r for r in reqs if not r.init and r.media_type in ("video", "audio", "muxed")]
        if opaque is not None and h["protocol"] != "hls-media" and (opaque_when == "always" or not media):
            # (a lone HLS media playlist declares no bitrate to match sizes against)
            if cache is None:
                cache = list(opaque())
                if cache:
                    capture_end = max(capture_end, max(d.last_byte_ns or d.request_ns for d in cache))
            dls = [d for d in cache if d.client == client and h["start"] <= d.request_ns < until]
            more, why = infer_requests(dls, man, known=reqs) if dls else ([], [])
            if more:
                reqs = sorted(reqs + more, key=lambda r: r.request_ns or 0)
                inference = "manifest"
                notes.extend(why)
                notes.append(f"{len(more)} segment(s) inferred from encrypted sizes with the manifest seen in the "
                             f"capture ({len(media)} seen decrypted or in clear)")
        if not reqs:
            notes.append("no segment request of this manifest was seen")
        out.append(_session(len(out), client, man, reqs, h["start"], h["server"], capture_end, options, notes,
                            inference=inference))
    return out


_MEDIA_TYPES = ("video/", "audio/", "application/octet-stream", "application/mp4")
_MEDIA_EXT = (".m4s", ".mp4", ".m4v", ".m4a", ".ts", ".aac", ".webm", ".cmfv", ".cmfa", ".mpd", ".m3u8", ".m3u")


def may_be_streaming(t: Any) -> bool:
    """Whether a transaction may belong to a streaming session: a manifest, or a media response
    (by Content-Type or the URL's extension). Used to keep few transactions in memory."""
    if is_manifest(t.url, t.content_type):
        return True
    ct = (t.content_type or "").lower()
    path = (t.url or "").split("?", 1)[0].lower()
    return ct.startswith(_MEDIA_TYPES) or path.endswith(_MEDIA_EXT)


def capture_bodies(capture: str | os.PathLike[str]) -> Callable[[Sequence[Any]], Mapping[int, tuple[bytes, bool]]]:
    """The ``bodies`` function of :func:`build_sessions` for a capture: manifests read back from it."""

    def bodies(mtx: Sequence[Any]) -> Mapping[int, tuple[bytes, bool]]:
        wins = [ResponseWindow(k, t.server, t.client, t.response_start_ns, t.response_end_ns)
                for k, t in enumerate(mtx) if t.server and t.client and t.response_start_ns and t.response_end_ns]
        return read_bodies(capture, wins)

    return bodies


def sessions(capture: str | os.PathLike[str], *, options: StreamingOptions | None = None,
             transactions: Iterable[Any] | None = None) -> list[StreamingSession]:
    """The adaptive streaming sessions of a capture (HTTP/1.x; HTTPS with the key log or inferred).

    Parameters
    ----------
    capture : path
        A pcap or pcapng file taken at (or near) the player.
    options : StreamingOptions, keyword-only, optional
    transactions : iterable of qoe.web.http.Transaction, keyword-only, optional
        The capture's cleartext transactions when already read (:func:`qoe.score` reads
        them once for web and streaming); ignored with a key log.

    Returns
    -------
    list of StreamingSession

    Raises
    ------
    CaptureError
        The file cannot be read as a capture.

    Notes
    -----
    The transactions come from :func:`qoe.web.page_loads` (TCP reassembly, HTTP/1.x; its
    public API); the manifests' bodies are read back from the capture
    (:mod:`qoe.video.has._bodies`). HTTPS sessions are encrypted: with the browser's key log
    (``options.keylog``) the transactions are those of :func:`qoe.web.http.connection_results`
    (HTTP/1.1 over TLS, HTTP/2) and :func:`qoe.web.quic.quic_connections` (HTTP/3), and the
    manifests are read from the decrypted streams (:mod:`qoe.video.has.decrypted`).
    Segments on connections that stay encrypted (no key log, or one without their keys; TLS
    records, or QUIC datagrams for HTTP/3: :mod:`qoe.video.has._opaque`) are inferred from
    their sizes (:mod:`qoe.video.has._infer`; on multiplexed HTTP/2 and HTTP/3 connections
    the notes say the segment boundaries are hidden and how they were split), labelled inferred
    (``StreamingSession.inference``): with the manifest when it was seen (in clear, or
    decrypted) or given (``options.manifests``); with none, only when asked
    (``options.infer_windows``: any HTTPS capture has large responses). Otherwise nothing
    can be mapped, and a warning says so.
    """

    options = options if options is not None else StreamingOptions()
    https = 0
    if options.keylog is not None:
        results = connection_results(capture, keylog=options.keylog)
        txs = [t for r in results for t in r.transactions if may_be_streaming(t)]
        txs += [t for c in quic_connections(capture, keylog=options.keylog) for t in c.transactions
                if may_be_streaming(t)]  # HTTP/3
        bodies = _keylog_bodies(capture, options)
        https = sum(1 for r in results if r.protocol == "tls" and not (r.decryption and r.decryption.decrypted))
    elif transactions is not None:
        txs = [t for t in transactions if may_be_streaming(t)]
        bodies = capture_bodies(capture)
    else:
        pages = page_loads(capture)
        txs = [t for p in pages for t in p.transactions if may_be_streaming(t)]
        bodies = capture_bodies(capture)
        https = sum(p.scheme == "https" for p in pages)

    def opaque() -> list[Download]:
        return opaque_downloads(capture, ports=options.opaque_ports, keylog=options.keylog)

    found = build_sessions(txs, bodies, options=options, opaque=opaque,
                           opaque_when="always" if options.keylog is not None and https else "missing")
    if found:
        return found
    if options.manifests:
        return inferred_sessions(capture, options=options)
    if options.infer_windows:
        return window_sessions(capture, options=options)
    if https:
        what = ("connection(s) the key log does not open" if options.keylog is not None
                else "HTTPS page load(s) whose requests are encrypted")
        warnings.warn(f"{capture}: {https} {what}: a streaming session among them cannot be mapped; give the "
                      "browser's key log (StreamingOptions.keylog, --keylog) to decrypt it, the presentation's "
                      "manifest (StreamingOptions.manifests, --manifest) to infer its segments from sizes and timing, "
                      "or infer them with no manifest (StreamingOptions.infer_windows, --infer-windows)",
                      QoEWarning, stacklevel=2)
    return found


def _keylog_bodies(capture: str | os.PathLike[str], options: StreamingOptions
                   ) -> Callable[[Sequence[Any]], Mapping[int, tuple[bytes, bool]]]:
    """The manifests' bodies of a capture read with ``options.keylog``: from the cleartext
    (:func:`capture_bodies`) or from the decrypted streams (HTTPS,
    :func:`qoe.video.has.decrypted.keylog_bodies`)."""

    clear, tls = capture_bodies(capture), keylog_bodies(capture, options.keylog)
    h3 = quic_bodies(capture, options.keylog)

    def bodies(mtx: Sequence[Any]) -> Mapping[int, tuple[bytes, bool]]:
        quic = [k for k, t in enumerate(mtx) if t.protocol == "h3"]
        https = [k for k, t in enumerate(mtx) if (t.url or "").startswith("https:") and t.protocol != "h3"]
        plain = [k for k, t in enumerate(mtx) if not (t.url or "").startswith("https:")]
        out: dict[int, tuple[bytes, bool]] = {}
        for keys, read in ((https, tls), (quic, h3), (plain, clear)):
            if keys:
                got = read([mtx[k] for k in keys])
                out.update({keys[j]: v for j, v in got.items()})
        return out

    return bodies


def _read_manifest_files(paths: Sequence[str]) -> Manifest:
    """A :class:`Manifest` from files: one MPD, or an HLS master playlist and its media playlists.

    Raises
    ------
    InputError
        A file that does not exist or is not a manifest.
    """

    files = [Path(p) for p in paths]
    for f in files:
        if not f.is_file():
            raise InputError(f"manifest {f}: no such file")
    mpds = [f for f in files if is_manifest(f.name, None) == "dash"]
    if mpds:
        return parse_mpd(mpds[0].read_bytes(), mpds[0].resolve().as_uri())
    texts = {f.resolve().as_uri(): f.read_bytes() for f in files}
    masters = [u for u, t in texts.items() if b"#EXT-X-STREAM-INF" in t]
    if not masters:
        if len(texts) == 1:
            (u, t), = texts.items()
            return parse_hls(t, u)
        raise InputError(f"manifests {', '.join(map(str, paths))}: no MPD and no HLS master playlist among them")
    return parse_hls(texts[masters[0]], masters[0], {u: t for u, t in texts.items() if u != masters[0]})


def inferred_sessions(capture: str | os.PathLike[str], *, options: StreamingOptions) -> list[StreamingSession]:
    """Sessions whose segments are inferred from encrypted sizes and timing (:mod:`qoe.video.has._infer`),
    one per client, with the manifest of ``options.manifests``."""

    man = _read_manifest_files(options.manifests)

    def infer(dls: list[Any]) -> tuple[list[Any], Manifest | None, list[str]]:
        reqs, notes = infer_requests(dls, man)
        return reqs, man, [*notes, f"the manifest given as a file ({', '.join(options.manifests)})"]

    return _per_client(opaque_downloads(capture, ports=options.opaque_ports), infer, options, "manifest")


def window_sessions(capture: str | os.PathLike[str], *, options: StreamingOptions) -> list[StreamingSession]:
    """Sessions with no manifest at all: one per client, each large encrypted response taken for
    a segment of ``options.segment_duration_s`` (or the duration estimated from the request
    periodicity), its bitrate per segment-duration window (:func:`qoe.video.has._infer.window_requests`)."""

    def infer(dls: list[Any]) -> tuple[list[Any], Manifest | None, list[str]]:
        reqs, man, notes = window_requests(dls, segment_duration_s=options.segment_duration_s)
        return reqs, man, [*notes, "startup, stalls and bitrate replayed from inferred segments: media times are the "
                                   "order of the downloads, the presentation's end unknown (taken as the last inferred "
                                   "segment's)"]

    downloads = opaque_downloads(capture, ports=options.opaque_ports, keylog=options.keylog)
    return _per_client(downloads, infer, options, "windows")


def _per_client(downloads: list[Any], infer: Any, options: StreamingOptions, inference: str) -> list[StreamingSession]:
    """One session per client of ``downloads`` (in order of its first request) whose segments
    ``infer(the client's downloads) -> (requests, manifest, notes)`` finds."""
    by_client: dict[str, list[Any]] = {}
    for d in downloads:
        by_client.setdefault(d.client, []).append(d)
    out: list[StreamingSession] = []
    end = max((d.last_byte_ns or d.request_ns for d in downloads), default=0)
    for client, dls in sorted(by_client.items(), key=lambda kv: kv[1][0].request_ns):
        reqs, man, notes = infer(dls)
        if not reqs or man is None:
            continue
        server = reqs[0].url.split(" ", 1)[1].rsplit(":", 1)[0]
        out.append(_session(len(out), client, man, reqs, dls[0].request_ns, server, end, options, list(notes),
                            inference=inference))
    return out
