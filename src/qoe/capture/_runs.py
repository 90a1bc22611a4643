"""Runs of equal-length records in a capture buffer, found with NumPy.

Capture records chain: each record's length field says where the next one starts, so
finding them is a sequential walk, one Python step per record. But a trunk capture of
many calls of one codec is mostly records of one length, one after the other. Once a
walker has seen a few of those in a row, :func:`equal_run` reads the header words of all
the records that would follow at that stride at once (a strided view of the buffer, no
copy) and says how many of them really are such records; the walker takes them all and
goes on one by one from the first that differs. :func:`next_wait` says when to try
next: after :data:`FIRST_TRY` records of one length, and after a try that found a short
run, only after twice as many as before, so that a capture of mixed lengths costs about
what the plain walk costs.

The result is the walk's, exactly: a record is taken from a run only if the header words
the walker itself would have read say the same.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# Records of one length in a row before the first try, and the longest wait after
# failed ones (tries and waits are counted in records).
FIRST_TRY = 4
LONGEST_WAIT = 1 << 12
# A try that finds fewer records than this counts as failed (the next one waits longer):
# a try costs about what walking 15 records one by one costs.
SHORT_RUN = 32
# Candidates looked at in a try's first window (each next window is twice as large).
FIRST_WINDOW = 64


def equal_run(
    buf: bytes, pos: int, stride: int, words: int, order: str, ok: Callable[[np.ndarray], np.ndarray]
) -> int:
    """How many records of ``stride`` bytes from ``pos`` on, each whole in ``buf``, pass ``ok``.

    The candidates are looked at in windows that double from :data:`FIRST_WINDOW`
    records, so a run that ends soon costs little whatever the buffer's size.

    Parameters
    ----------
    buf : bytes
        The buffer.
    pos : int
        Where the first record would start.
    stride : int
        The records' length (at least ``4 * words``).
    words : int
        How many 32-bit header words of each record ``ok`` looks at.
    order : str
        The words' byte order, ``"<"`` or ``">"``.
    ok : callable
        Given the header words of candidate records (a ``k × words`` view of uint32, row
        ``i`` being the record at ``pos + i * stride``), a boolean array: which are such
        records.

    Returns
    -------
    int
        The records before the first that fails ``ok`` (all that fit if none does).
    """
    m = (len(buf) - pos) // stride
    done = 0
    window = FIRST_WINDOW
    while done < m:
        k = min(window, m - done)
        at = pos + done * stride
        heads = np.ndarray((k, words), dtype=order + "u4", buffer=buf, offset=at, strides=(stride, 4))
        good = ok(heads)
        if not good.all():
            return done + int(good.argmin())  # the first False
        done += k
        window *= 2
    return done


def next_wait(run: int, wait: int) -> int:
    """Records of one length in a row before the next try, after a try that found ``run``
    records when the wait was ``wait``: doubled (up to :data:`LONGEST_WAIT`) if the run
    was short, else :data:`FIRST_TRY` again."""
    return FIRST_TRY if run >= SHORT_RUN else min(2 * wait, LONGEST_WAIT)
