"""Voice: the E-model (G.107), RTP streams and their statistics, playout, and P.862 scoring.

Names are loaded on first use (PEP 562), so that ``import qoe.rtp`` — the path of
``qoe streams`` on a large capture — does not pay for SciPy's signal module, which only the
P.862 scorer needs. To export a new public name, add it to ``_EXPORTS`` below.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> submodule that defines it (a name equal to its submodule is the module)
_EXPORTS: dict[str, str] = {
    # submodules
    "emodel": "emodel",
    "g711": "g711",
    "combined": "combined",
    "netscore": "netscore",
    "playout": "playout",
    "io": "io",
    "p862": "p862",
    # playout: the received audio
    "ReceivedAudio": "playout", "extract_audio": "playout", "playout_stream": "playout",
    "rebuild_audio": "playout",
    "capture_delays": "io", "extract_wav": "io", "write_wav": "io",
    # models
    "r_factor": "emodel", "delay_impairment": "emodel", "simplified_r": "emodel",
    "combined_score": "combined", "windowed_scores": "netscore",
    "PesqResult": "p862", "load_speech": "p862", "pesq": "p862",
    # call scores (issue 5)
    "call": "call", "locate": "locate", "score_call": "call", "score_calls": "call", "find_calls": "_call_inputs",
    "Reference": "_call_inputs", "CallScore": "_call_results", "DirectionScore": "_call_results",
    "locate_reference": "locate",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    try:
        module_name = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'qoe.voice' has no attribute {name!r}") from None
    module = importlib.import_module(f"qoe.voice.{module_name}")
    value = module if module_name == name else getattr(module, name)
    globals()[name] = value  # cache: later lookups bypass __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
