"""The ITU-T P.1203 inputs of a session, written as JSON for a user who holds the model.

P.1203 (10/2017) takes, in mode 0 (metadata only), these inputs (§7, Table 1 "Inputs" of
P.1203; their use in P.1203.1 §6, P.1203.2 §6 and P.1203.3 §7):

* ``I.GEN`` — display resolution and device type (PC/TV or mobile);
* ``I.11`` — audio coding information per media segment: codec, target bitrate, duration,
  and its start in media time;
* ``I.13`` — video coding information per media segment: codec, target bitrate, frame
  rate, coded resolution, duration, start;
* ``I.23`` — stalling: each event's start in media time and duration, the initial loading
  included (media time 0).

:func:`p1203_input` writes them under the keys ``IGen``, ``I11``, ``I13``, ``I23`` (the
layout the public P.1203 reference software reads: segments as lists of objects with
``codec``, ``bitrate`` in kbit/s, ``duration`` and ``start`` in seconds, ``fps`` and
``resolution`` as ``"WxH"``; stalls as ``[start, duration]`` pairs). qoe does not compute
P.1203 (its reference code's licence forbids bundling it); it only writes its input.

What the capture cannot tell is filled from the manifest and said in ``notes``: the
bitrate is the representation's declared one (DASH ``@bandwidth``, HLS ``BANDWIDTH``,
which includes the audio; an HLS audio rendition has none: its bytes over its duration),
the frame rate the manifest's (else none).

References
----------
.. [1] ITU-T P.1203 (10/2017), "Parametric bitstream-based quality assessment of progressive
   download and adaptive audiovisual streaming services over reliable transport", §7.
.. [2] ITU-T P.1203.1 (10/2017) (video, modes 0-3), P.1203.2 (10/2017) (audio), P.1203.3
   (10/2017) (integration: stalling, I.23).
"""

from __future__ import annotations

from typing import Any

__all__ = ["p1203_input", "P1203_KEYS", "VIDEO_SEGMENT_FIELDS", "AUDIO_SEGMENT_FIELDS"]

#: The top-level inputs (P.1203 §7).
P1203_KEYS = ("IGen", "I11", "I13", "I23")
#: Fields of one I.13 segment and one I.11 segment.
VIDEO_SEGMENT_FIELDS = ("codec", "bitrate", "fps", "resolution", "duration", "start")
AUDIO_SEGMENT_FIELDS = ("codec", "bitrate", "duration", "start")

# RFC 6381 codec strings -> P.1203 codec names (P.1203.1: H.264; P.1203.2: AAC-LC, HE-AAC, AC-3, MP2)
_VIDEO_CODECS = {"avc1": "h264", "avc3": "h264", "hvc1": "hevc", "hev1": "hevc", "vp09": "vp9", "vp9": "vp9"}
_AUDIO_CODECS = {"mp4a.40.2": "aaclc", "mp4a.40.5": "heaac", "mp4a.40.29": "heaac", "ac-3": "ac3", "mp4a.40.34": "mp2"}


def _codec(codecs: str | None, kind: str) -> str | None:
    for c in (codecs or "").split(","):
        c = c.strip().lower()
        if kind == "video":
            name = _VIDEO_CODECS.get(c.split(".")[0])
        else:
            name = _AUDIO_CODECS.get(c) or ("aaclc" if c.startswith("mp4a") else None)
        if name:
            return name
    return None


def p1203_input(session: Any, *, device: str = "pc", display: str = "1920x1080", stream_id: int = 42) -> dict[str, Any]:
    """The P.1203 mode-0 inputs of a :class:`~qoe.video.has.StreamingSession`.

    Parameters
    ----------
    session : StreamingSession
    device : {"pc", "mobile"}, keyword-only
        I.GEN device type.
    display : str, keyword-only
        I.GEN display resolution ``WxH``.
    stream_id : int, keyword-only
        The ``streamId`` written in each input.

    Returns
    -------
    dict
        ``{"IGen": ..., "I11": ..., "I13": ..., "I23": ..., "notes": [...]}``; the played
        segments in play order (``StreamingSession.played`` for video; audio from the
        session's audio segments).
    """
    notes: list[str] = []
    man = session.manifest
    reps = {r.id: r for r in man.representations} if man is not None else {}
    video = []
    for row in session.played:
        rep = reps.get(row["representation"])
        codec = _codec(rep.codecs if rep else None, "video") or "h264"
        if rep is None or _codec(rep.codecs, "video") is None:
            notes.append("video codec not declared: h264 assumed")
        fps = rep.frame_rate if rep is not None and rep.frame_rate else None
        video.append({"codec": codec, "bitrate": row["bandwidth"] / 1e3, "fps": fps,
                      "resolution": f"{rep.width}x{rep.height}" if rep is not None and rep.width else None,
                      "duration": row["duration_s"], "start": row["start_s"]})
    if any(v["fps"] is None for v in video):
        notes.append("frame rate not in the manifest: fps is null (give it before scoring)")
    audio = []
    seen: set[float] = set()
    for r in sorted((r for r in session.segments if r.media_type == "audio" and not r.init and not r.aborted),
                    key=lambda r: (r.start_s, -(r.response_end_ns or 0))):
        if round(r.start_s, 3) in seen:
            continue
        seen.add(round(r.start_s, 3))
        rep = reps.get(r.representation)
        rate = r.bandwidth / 1e3 if r.bandwidth else (r.bytes * 8 / r.duration_s / 1e3 if r.duration_s else None)
        if not r.bandwidth:
            notes.append("audio bitrate not declared (HLS rendition): its bytes over its duration")
        audio.append({"codec": _codec(rep.codecs if rep else None, "audio") or "aaclc", "bitrate": rate,
                      "duration": r.duration_s, "start": r.start_s})
    if not audio:
        notes.append("no separate audio segments (muxed or none): I.11 is empty")
    rep_ = session.replay
    stalls = []
    if rep_ is not None and rep_.play_start_s == rep_.play_start_s:  # initial loading at media time 0
        stalls.append([0.0, session.startup_delay_s])
    if rep_ is not None:
        stalls += [[s.media_s, s.duration_s] for s in rep_.stalls]
    return {
        "IGen": {"device": device, "displaySize": display, "streamId": stream_id},
        "I11": {"segments": audio, "streamId": stream_id},
        "I13": {"segments": video, "streamId": stream_id},
        "I23": {"stalling": stalls, "streamId": stream_id},
        "notes": sorted(set(notes)),
    }
