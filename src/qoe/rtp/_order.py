"""Stable orders of a batch's packets by an integer key, cheaper than a stable sort of it.

NumPy's stable sort of 8- and 16-bit keys is a radix sort, of wider ones a merge sort
(timsort): several times slower on a batch of 65,536 packets. The scan groups packets by
stream (ids below the number of streams, a narrow type) and by flow key (a 32-bit slot of
its hash, sorted in two 16-bit passes: :func:`qoe.rtp._flows.group_by_key`).
"""

from __future__ import annotations

import numpy as np


def stable_order(keys: np.ndarray, bound: int) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` for keys in ``[0, bound)``: in the narrowest
    unsigned type, where NumPy's stable sort of 8- and 16-bit keys is a radix sort."""
    for t in (np.uint8, np.uint16, np.uint32):
        if bound <= np.iinfo(t).max + 1:
            return np.argsort(keys.astype(t), kind="stable")
    return np.argsort(keys, kind="stable")
