"""The planes of a decoded PyAV frame as NumPy arrays, whatever the picture size."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["plane_array"]


def plane_array(frame: Any, k: int) -> np.ndarray:
    """Plane ``k`` of a decoded 8-bit PyAV frame as a C-contiguous ``(height, width)`` array.

    FFmpeg pads each line of a plane to its ``line_size`` (a multiple of 32 or 64 bytes), and
    a chroma plane of an odd size is ``ceil(H/2) × ceil(W/2)``: the plane's own height, width
    and line size are used, never the frame's size (a 494×370 picture has 247×185 chroma
    planes in lines of 256 bytes).
    """
    p = frame.planes[k]
    rows = np.frombuffer(p, np.uint8).reshape(p.height, p.line_size)
    return np.ascontiguousarray(rows[:, : p.width])
