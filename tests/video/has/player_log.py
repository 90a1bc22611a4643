"""What a player's event log (``data/video/has/sessions/*.player.json``) says the viewer saw.

Import from a test as ``from video.has.player_log import player_view`` (tests/ is on the
path); ``benchmarks/has.py`` uses it too.
"""

from __future__ import annotations


def player_view(log: dict) -> tuple[float, list[tuple[float, float]]]:
    """(first ``playing``, [(stall start, duration)]) from the video element's events (ms → s)."""
    ev = log["events"]
    playing = [e["ts_ms"] / 1e3 for e in ev if e["type"] == "video_playing"]
    start = playing[0]
    stalls, waiting = [], None
    for e in ev:
        t = e["ts_ms"] / 1e3
        if e["type"] == "video_waiting" and t > start:
            waiting = t
        elif e["type"] == "video_playing" and waiting is not None:
            stalls.append((waiting, t - waiting))
            waiting = None
    return start, stalls
