"""Voice: the E-model (G.107), P.862 speech quality, the received audio, and call scores.

What users call is exported here (:data:`__all__`); the public modules hold the rest of
each part and are imported as namespaces:

=============================  ==========================================================
:mod:`qoe.voice.emodel`        G.107 / G.107.1 E-model, Cole & Rosenbluth, codec presets
                               (their data: ``qoe.voice._g113``, re-exported by emodel)
:mod:`qoe.voice.p862`          PESQ (P.862, P.862.1, P.862.2), speech files
:mod:`qoe.voice.combined`      the seed paper's z1 − z2 score
:mod:`qoe.voice.netscore`      network-side scores per time window
:mod:`qoe.voice.g711`          G.711 A-law / µ-law
:mod:`qoe.voice.payload`       RTP audio payload formats, split into decoder frames
:mod:`qoe.voice.decode`        every common codec decoded (PyAV) onto the RTP timeline
:mod:`qoe.voice.identify`      the codec of a dynamic payload type without SDP, from its payloads
:mod:`qoe.voice.timeline`      the received audio on the RTP timeline, G.711 placement, concealment
:mod:`qoe.voice.playout`       the audio a receiver played, rebuilt from RTP
:mod:`qoe.voice.locate`        where a reference was played in received audio
:mod:`qoe.voice.io`            captures in, WAV files and delay records out
:mod:`qoe.voice.call`          call scores per direction, and their options
=============================  ==========================================================

Names are loaded on first use (PEP 562), so that ``import qoe.rtp`` — the path of
``qoe streams`` on a large capture — does not pay for SciPy's signal module, which only the
P.862 scorer needs. To export a new name, add it to ``_EXPORTS`` below.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> the public module that defines it
_EXPORTS: dict[str, str] = {
    # the E-model and the seed paper's combined score
    "r_factor": "emodel",
    "delay_impairment": "emodel",
    "simplified_r": "emodel",
    "combined_score": "combined",
    # perceptual speech quality
    "pesq": "p862",
    "PesqResult": "p862",
    "load_speech": "p862",
    "locate_reference": "locate",
    # the received audio, and captures in / files out
    "extract_audio": "playout",
    "extract_wav": "io",
    "capture_delays": "io",
    # call scores
    "score_call": "call",
    "score_calls": "call",
    "iter_score_calls": "call",
    "iter_score_call_groups": "call",
    "find_calls": "call",
    "CallOptions": "call",
    "Reference": "call",
    "CallScore": "call",
    "DirectionScore": "call",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    try:
        module_name = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'qoe.voice' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"qoe.voice.{module_name}"), name)
    globals()[name] = value  # cache: later lookups bypass __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
