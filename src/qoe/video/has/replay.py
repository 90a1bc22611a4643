"""The player's buffer replayed from the download completions: startup, stalls, switches, what was played.

The assumed player (a model of what dash.js and hls.js do; the differences measured on real
sessions are in docs/guide/streaming.md):

* A media segment is in the buffer ``append_delay_s`` (default 0) after its last byte
  arrived; aborted downloads add nothing. Audio and video (or the muxed stream) are
  buffered apart; playback needs every media type the session fetched, so the playable
  buffer is the shortest one (MSE plays only where every source buffer has data).
* Startup: playback begins when the playable buffer ahead of the start position holds
  ``startup_threshold_s`` of media (or the whole rest of the presentation).
* A stall begins when the playhead reaches the end of the playable buffer before the end
  of the presentation; it ends when the buffer ahead holds ``rebuffer_threshold_s`` again.
* With separate audio and video and ``video_underflow_s > 0`` (Chromium's behaviour, seen
  in every dash.js and hls.js log of data/video/has): playback runs on while the audio
  buffer has data; an empty video buffer freezes the picture and stops playback only after
  ``video_underflow_s`` (3 s in Chromium 156); playback resumes when the audio buffer
  holds ``rebuffer_threshold_s`` and the video buffer holds any media at the playhead.
* The playhead moves at 1× while playing; no seeking, no pause by the user.
* The representation shown at media time x is the one of the last segment covering x that
  completed before x was played (a re-downloaded segment replaces the earlier one).

References
----------
.. [1] ITU-T P.1203.3 (01/2019) §7 (stalling: initial loading and stalls as events of media
   time and duration, the input I.23) — the event definitions this replay reports.
.. [2] W3C Media Source Extensions (2016) §2.4.4 (the playable range is the intersection of
   the source buffers' buffered ranges).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qoe.video.has.segments import SegmentRequest

__all__ = ["Stall", "PlaybackReplay", "replay", "shown"]

_EPS = 1e-6
_NS = 1e9


@dataclass(frozen=True, slots=True)
class Stall:
    """One interruption of playback after it started.

    ``start_s`` is session time (s from the session's start), ``media_s`` the media time
    where the playhead stopped, ``duration_s`` its length (to the capture's end when it had
    not ended: ``ended=False``).
    """

    start_s: float
    duration_s: float
    media_s: float
    ended: bool = True


@dataclass(frozen=True)
class PlaybackReplay:
    """What the replay found (times in seconds from ``origin_ns``).

    Attributes
    ----------
    origin_ns : int
        Session time 0 (the first request of the session: its manifest).
    first_request_s : float
        The first media segment request.
    play_start_s : float
        When playback started (NaN: never within the capture).
    end_s : float
        When the playhead reached the end of the presentation, else the capture's last
        completion.
    stalls : tuple of Stall
    pieces : tuple of (float, float, bool)
        (session time, media time, playing) at each change of state: the playhead's path.
    media_end_s : float
        Presentation end (media time).
    ended : bool
        The playhead reached the end of the presentation.
    freezes : tuple of (float, float)
        (start, duration) of the times the playhead ran with an empty video buffer (audio
        playing, the picture frozen: ``video_underflow_s``).
    """

    origin_ns: int
    first_request_s: float
    play_start_s: float
    end_s: float
    stalls: tuple[Stall, ...]
    pieces: tuple[tuple[float, float, bool], ...]
    media_end_s: float
    ended: bool
    freezes: tuple[tuple[float, float], ...] = ()

    def position(self, t: float) -> tuple[float, bool]:
        """(media time, playing) of the playhead at session time ``t``."""
        pos, playing = (self.pieces[0][1], False) if self.pieces else (0.0, False)
        for (t0, p0, pl), nxt in zip(self.pieces, (*self.pieces[1:], None)):
            if t < t0:
                break
            end = nxt[0] if nxt is not None else math.inf
            pos = p0 + (min(t, end) - t0 if pl else 0.0)
            playing = pl and t < end
        return min(pos, self.media_end_s), playing


class _Buffers:
    """Buffered media intervals per media type."""

    def __init__(self, kinds: Sequence[str]) -> None:
        self.iv: dict[str, list[list[float]]] = {k: [] for k in kinds}

    def add(self, kind: str, a: float, b: float) -> None:
        ivs = self.iv[kind]
        ivs.append([a, b])
        ivs.sort()
        merged: list[list[float]] = []
        for x in ivs:
            if merged and x[0] <= merged[-1][1] + 1e-3:  # 1 ms: segment boundaries rounded in manifests
                merged[-1][1] = max(merged[-1][1], x[1])
            else:
                merged.append(list(x))
        self.iv[kind] = merged

    def end_of(self, kind: str, pos: float) -> float:
        """End of the contiguous buffer of one media type from ``pos`` (``pos`` when none)."""
        e = pos
        for a, b in self.iv[kind]:
            if a <= pos + 1e-3 and b > e:
                e = b
        return e

    def ahead_end(self, pos: float, kinds: Sequence[str] | None = None) -> float:
        """End of the playable buffer from ``pos``: the earliest end over ``kinds`` (default all)."""
        ends = [self.end_of(k, pos) for k in (self.iv if kinds is None else kinds)]
        return min(ends) if ends else pos


def replay(requests: Sequence[SegmentRequest], *, origin_ns: int, media_end_s: float, startup_threshold_s: float,
           rebuffer_threshold_s: float, append_delay_s: float = 0.0, video_underflow_s: float = 0.0,
           capture_end_ns: int | None = None) -> PlaybackReplay:
    """Replay the player's buffer from the completions of ``requests``.

    Parameters
    ----------
    requests : sequence of SegmentRequest
        The session's segment requests (initialisation segments, aborted downloads and
        media types other than video, audio and muxed are left out).
    origin_ns : int, keyword-only
        Session time 0.
    media_end_s : float, keyword-only
        End of the presentation (media time); NaN: the end of the last segment fetched.
    startup_threshold_s, rebuffer_threshold_s : float, keyword-only
        Media the playable buffer must hold to start, and to resume after a stall.
    append_delay_s : float, keyword-only
        Delay from a segment's last byte to its being playable.
    video_underflow_s : float, keyword-only
        With audio and video: how long the video buffer may be empty while audio plays on
        before playback stops (0: every buffer stops it at once).
    capture_end_ns : int, keyword-only, optional
        The capture's last moment (a stall still going on is cut there).

    Returns
    -------
    PlaybackReplay
    """
    media = [r for r in requests if not r.init and not r.aborted and r.response_end_ns is not None
             and r.media_type in ("video", "audio", "muxed") and r.duration_s > 0]
    kinds = sorted({r.media_type for r in media})
    firsts = [r.request_ns for r in requests if not r.init and r.request_ns is not None]
    first_req = (min(firsts) - origin_ns) / _NS if firsts else math.nan
    if not media:
        return PlaybackReplay(origin_ns, first_req, math.nan, math.nan, (), (), media_end_s, False)
    media.sort(key=lambda r: r.response_end_ns)
    start_pos = min(r.start_s for r in media)
    if not math.isfinite(media_end_s):
        media_end_s = max(r.start_s + r.duration_s for r in media)
    buf = _Buffers(kinds)
    t, pos, playing, started = 0.0, start_pos, False, False
    pieces: list[tuple[float, float, bool]] = [(0.0, start_pos, False)]
    stalls: list[Stall] = []
    stall_start: float | None = None
    play_start = math.nan
    ended = False
    events = [((r.response_end_ns - origin_ns) / _NS + append_delay_s, r) for r in media]
    last_t = events[-1][0]
    if capture_end_ns is not None:
        last_t = max(last_t, (capture_end_ns - origin_ns) / _NS)
    # Which buffers stop playback at once (lead), and which may run dry for up to
    # video_underflow_s while the others play on (lag: the picture freezes, the clock runs)
    lag = ["video"] if video_underflow_s > 0 and "video" in kinds and "audio" in kinds else []
    lead = [x for x in kinds if x not in lag]
    starved_since: float | None = None  # session time the lagging video buffer ran dry
    freezes: list[tuple[float, float]] = []  # (start, duration): picture frozen, audio playing
    k = 0
    while k <= len(events):
        te = events[k][0] if k < len(events) else math.inf
        if playing:
            t_lead = t + (buf.ahead_end(pos, lead) - pos)
            t_end = t + (media_end_s - pos)
            t_vdry = t_vstall = math.inf
            if lag:
                v = buf.end_of("video", pos)
                if v > pos + 1e-3:
                    t_vdry = t + (v - pos)
                    t_vstall = t_vdry + video_underflow_s
                else:
                    t_vstall = (starved_since if starved_since is not None else t) + video_underflow_s
            stop = min(t_lead, t_vstall, t_end)
            if stop <= te:
                pos += stop - t
                t = stop
                if stop == t_end or pos >= media_end_s - 1e-3:
                    ended, playing = True, False
                    pieces.append((t, pos, False))
                    break
                playing = False
                stall_start = t
                if starved_since is not None and t > starved_since:
                    freezes.append((starved_since, t - starved_since))
                elif lag and t_vdry < t:
                    freezes.append((t_vdry, t - t_vdry))
                starved_since = None
                pieces.append((t, pos, False))
                if k == len(events):
                    break
            else:
                if lag and starved_since is None and t_vdry <= te:
                    starved_since = t_vdry
                elif lag and starved_since is None and t_vdry == math.inf:
                    starved_since = t
                pos += te - t
                t = te
        if k == len(events):
            break
        t = max(t, te)
        r = events[k][1]
        buf.add(r.media_type, r.start_s, r.start_s + r.duration_s)
        k += 1
        while k < len(events) and events[k][0] <= t:  # completions at the same instant
            r = events[k][1]
            buf.add(r.media_type, r.start_s, r.start_s + r.duration_s)
            k += 1
        if lag and buf.end_of("video", pos) > pos + 1e-3:
            if starved_since is not None and playing and t > starved_since:
                freezes.append((starved_since, t - starved_since))
            starved_since = None
        if not playing:
            at_end = buf.ahead_end(pos) >= media_end_s - 1e-3
            if not started:
                ready = buf.ahead_end(pos) - pos >= startup_threshold_s - _EPS
            else:
                ready = buf.ahead_end(pos, lead) - pos >= rebuffer_threshold_s - _EPS and all(
                    buf.end_of(x, pos) > pos + 1e-3 for x in lag)
            if ready or at_end:
                playing = True
                pieces.append((t, pos, True))
                if not started:
                    started, play_start = True, t
                elif stall_start is not None:
                    if t - stall_start > _EPS:  # the buffer ran dry exactly as a segment arrived: no stall
                        stalls.append(Stall(stall_start, t - stall_start, pos))
                    stall_start = None
    if stall_start is not None:
        stalls.append(Stall(stall_start, max(0.0, last_t - stall_start), pos, ended=False))
    end = t if ended else last_t
    if starved_since is not None and playing and end > starved_since:
        freezes.append((starved_since, end - starved_since))
    return PlaybackReplay(origin_ns, first_req, play_start, end, tuple(stalls), tuple(pieces), media_end_s, ended,
                          tuple(freezes))


def shown(requests: Sequence[SegmentRequest], media_type: str, media_s: float, at_ns: int) -> SegmentRequest | None:
    """The segment of ``media_type`` shown at media time ``media_s`` when played at ``at_ns``."""
    best = None
    for r in requests:
        if (r.media_type != media_type or r.init or r.aborted or r.response_end_ns is None
                or r.response_end_ns > at_ns + 1000):  # 1 µs: session times are floats
            continue
        if r.start_s - 1e-3 <= media_s < r.start_s + r.duration_s - 1e-9:
            if best is None or r.response_end_ns > best.response_end_ns:
                best = r
    return best


def _played_chunks(requests: Sequence[SegmentRequest], rep: PlaybackReplay, media_type: str) -> list[tuple[SegmentRequest, float]]:
    """The segments of ``media_type`` in the order played, each with the session time its play began.

    A segment that arrived after the playhead entered it (the picture frozen meanwhile,
    ``video_underflow_s``) but before the playhead left it counts as played; one the
    playhead passed entirely without it does not.
    """
    out: list[tuple[SegmentRequest, float]] = []
    segs = {}
    for r in requests:
        if r.media_type == media_type and not r.init:
            segs.setdefault(round(r.start_s, 6), r.duration_s)
    for s, dur in sorted(segs.items()):
        t = _time_at(rep, s)
        if t is None:
            continue
        seg = shown(requests, media_type, s, rep.origin_ns + int(round(t * _NS)))
        if seg is None:  # arrived while the playhead was inside it?
            t_out = _time_at(rep, s + dur - 1e-3)
            if t_out is not None:
                seg = shown(requests, media_type, s, rep.origin_ns + int(round(t_out * _NS)))
        if seg is not None:
            out.append((seg, t))
    return out


def _time_at(rep: PlaybackReplay, media_s: float) -> float | None:
    """Session time at which the playhead reached media time ``media_s`` (None: never)."""
    for (t0, p0, pl), nxt in zip(rep.pieces, (*rep.pieces[1:], None)):
        if not pl:
            continue
        end_t = nxt[0] if nxt is not None else math.inf
        end_p = p0 + (end_t - t0)
        if p0 - 1e-3 <= media_s < end_p - 1e-6:  # a piece ending at media_s does not play it
            return t0 + max(0.0, media_s - p0)
    return None
