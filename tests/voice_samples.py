"""The real call samples of data/voice, for parametrising tests (one loader for all of them).

``data/voice/captures/scenarios.jsonl`` (written by data/voice/make_samples.sh) holds one
scenario per line with its streams; tests that run on every real stream take their
parameters from :func:`stream_params`. Importable from any test because pytest's
``pythonpath`` includes ``tests/`` (pyproject.toml).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

VOICE = Path(__file__).resolve().parents[1] / "data" / "voice"
CAPTURES = VOICE / "captures"
MANIFEST = CAPTURES / "scenarios.jsonl"


def scenarios() -> list[dict[str, Any]]:
    """Every scenario of the manifest, in file order ([] when the samples are absent)."""
    if not MANIFEST.is_file():
        return []
    return [json.loads(line) for line in MANIFEST.read_text().splitlines() if line.strip()]


def stream_params(keep: Callable[[dict, dict], bool] | None = None) -> list[Any]:
    """``pytest.param(scenario, stream)`` for every stream (that ``keep`` accepts), id'd
    ``<scenario>-<direction>``."""
    return [
        pytest.param(sc, st, id=f"{sc['scenario']}-{st['direction']}")
        for sc in scenarios()
        for st in sc["streams"]
        if keep is None or keep(sc, st)
    ]
