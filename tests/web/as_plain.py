"""A result record as plain nested tuples, for comparing two runs with ``==``.

Import from a test as ``from web.as_plain import as_plain`` (tests/ is on the path).
"""

from __future__ import annotations

import dataclasses
import math
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


def pages_plain(pages: Any, *, shift_ns: int = 0, addresses: bool = True, connections: bool = True) -> list[dict]:
    """Pages as plain dicts (``Page.to_dict``; NaN as "nan", so that two runs compare with
    ``==``): their times and their transactions' less ``shift_ns``; without ``addresses`` the
    client's and server's, without ``connections`` the transactions' connection numbers."""
    out = []
    for p in pages:
        d = p.to_dict()
        d["start_ns"] -= shift_ns
        d["end_ns"] -= shift_ns
        for t in d["transactions"]:
            for k, v in t.items():
                if k.endswith("_ns") and isinstance(v, int):
                    t[k] = v - shift_ns
            if not addresses:
                t.pop("client"), t.pop("server")
            if not connections:
                t.pop("connection")
        if not addresses:
            d.pop("client")
        out.append({k: "nan" if isinstance(v, float) and math.isnan(v) else v for k, v in d.items()})
    return out
