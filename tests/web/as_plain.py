"""A result record as plain nested tuples, for comparing two runs with ``==``.

Import from a test as ``from web.as_plain import as_plain`` (tests/ is on the path).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np


def as_plain(x: Any) -> Any:
    """A dataclass tree as nested tuples of (field, value) (arrays as their dtype and list)."""
    if dataclasses.is_dataclass(x):
        return tuple((f.name, as_plain(getattr(x, f.name))) for f in dataclasses.fields(x))
    if isinstance(x, np.ndarray):
        return ("array", str(x.dtype), x.tolist())
    if isinstance(x, (tuple, list)):
        return tuple(as_plain(v) for v in x)
    return x
