"""Shared fixtures: a seeded random generator and the repository's paths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"
SHARED = REPO.parent / "shared"


@pytest.fixture
def rng() -> np.random.Generator:
    """A reproducible generator (seeded per test)."""
    return np.random.default_rng(20141105)


@pytest.fixture
def data_dir() -> Path:
    """The bundled samples folder."""
    return DATA
