"""Adaptive streaming (DASH, HLS) sessions from captures: segments, the player's buffer, KPIs and QoE.

* :mod:`qoe.video.has.manifest` — DASH MPDs (stdlib XML) and HLS playlists (``m3u8``) to
  representations and segments.
* :mod:`qoe.video.has.segments` — each HTTP request mapped to its representation and media
  time; retries, aborts.
* :mod:`qoe.video.has.replay` — the player's buffer replayed from download completions:
  startup, stalls, what was played when.
* :mod:`qoe.video.has.yin` — the linear QoE of Yin et al. (2015) with its and Pensieve's
  parameter sets.
* :mod:`qoe.video.has.p1203` — the ITU-T P.1203 input (I.GEN, I.11, I.13, I.23) as JSON.
* :mod:`qoe.video.has.decrypted` — the manifests' bodies of HTTPS sessions, read from the
  TLS connections opened with the key log (``StreamingOptions.keylog``).
* :mod:`qoe.video.has.session` — :func:`sessions` (a capture) and :func:`build_sessions`
  (transactions): :class:`StreamingSession` results.

This subpackage is the only part of :mod:`qoe.video` that uses :mod:`qoe.web` (its public
names only: :func:`qoe.web.page_loads` and :func:`qoe.web.http.transactions` for the HTTP
transactions, :class:`qoe.web.decrypt.DecryptingTlsSink` for the decrypted manifests).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["sessions", "build_sessions", "StreamingSession", "StreamingOptions", "p1203_input", "parse_mpd",
           "parse_hls", "linear_qoe", "PRESETS"]

_WHERE = {
    "sessions": "session", "build_sessions": "session", "StreamingSession": "session",
    "StreamingOptions": "options", "p1203_input": "p1203", "parse_mpd": "manifest", "parse_hls": "manifest",
    "linear_qoe": "yin", "PRESETS": "yin",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:

        return getattr(importlib.import_module(f"qoe.video.has.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'qoe.video.has' has no attribute {name!r}")
