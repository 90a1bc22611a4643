"""Packets of one RTP video stream grouped into frames: same timestamp, in sequence order.

Every RTP video payload format of qoe (RFC 6184 aside, which keeps its own builder) shares
this first step: sort by extended sequence number, drop duplicates, cut where the timestamp
changes (RFC 3550 §5.1: the packets of one frame share a timestamp; the marker bit ends it),
and say whether packets are missing inside a frame or between two frames. Each payload
format then reads its own descriptors (:mod:`qoe.video._vp8`, :mod:`qoe.video._vp9`,
:mod:`qoe.video._h265`, :mod:`qoe.video._av1`).

References
----------
.. [1] RFC 3550, §5.1 (timestamp, marker bit, sequence number).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from qoe.errors import InputError

__all__ = ["RtpFrame", "rtp_frames", "drop_until_key"]


@dataclass(frozen=True, slots=True)
class RtpFrame:
    """The packets of one timestamp, in sequence order.

    ``gap_inside``: sequence numbers missing between two of them; ``gap_before``: missing
    between the previous frame's last packet and this frame's first; ``prev_marker``: the
    previous frame ended with the marker bit (so a gap before is this frame's loss).
    """

    timestamp: int
    seqs: tuple[int, ...]
    payloads: tuple[bytes, ...]
    marker: bool
    gap_inside: bool
    gap_before: bool
    prev_marker: bool


def rtp_frames(seq_ext: np.ndarray, timestamp: np.ndarray, marker: np.ndarray,
               payloads: Sequence[bytes]) -> Iterator[RtpFrame]:
    """Group the packets of a stream into frames (see the module notes)."""
    n = len(payloads)
    if not (seq_ext.shape[0] == timestamp.shape[0] == marker.shape[0] == n):
        raise InputError(f"RTP frames: {seq_ext.shape[0]} sequence numbers, {timestamp.shape[0]} timestamps, "
                         f"{marker.shape[0]} markers and {n} payloads")
    if n == 0:
        return
    order = np.argsort(seq_ext, kind="stable")
    s_sorted = seq_ext[order]
    keep = np.ones(n, dtype=bool)
    keep[1:] = s_sorted[1:] != s_sorted[:-1]  # duplicates: the first copy
    order = order[keep]
    cur: list[int] = []
    ts = None
    gap_in = gap_before = False
    prev_marker = True
    prev_seq = None
    for i, s, t in zip(order.tolist(), seq_ext[order].tolist(), timestamp[order].tolist()):
        gap = prev_seq is not None and s != prev_seq + 1
        if ts is None or t != ts:
            if cur:
                last_marker = bool(marker[cur[-1]])
                yield _frame(ts, cur, seq_ext, payloads, last_marker, gap_in, gap_before, prev_marker)
                prev_marker = last_marker
            cur, ts, gap_in, gap_before = [], t, False, gap
        elif gap:
            gap_in = True
        cur.append(i)
        prev_seq = s
    if cur:
        yield _frame(ts, cur, seq_ext, payloads, bool(marker[cur[-1]]), gap_in, gap_before, prev_marker)


def _frame(ts: int | None, idx: list[int], seq_ext: np.ndarray, payloads: Sequence[bytes], marker: bool,
           gap_in: bool, gap_before: bool, prev_marker: bool) -> RtpFrame:
    return RtpFrame(timestamp=int(ts or 0), seqs=tuple(int(seq_ext[i]) for i in idx),
                    payloads=tuple(payloads[i] for i in idx), marker=marker, gap_inside=gap_in,
                    gap_before=gap_before, prev_marker=prev_marker)


def drop_until_key(units: list, keys: list[bool]) -> tuple[list, int, int]:
    """The units a decoder can use when every frame refers to the one before (VP8, VP9, AV1
    without scalability): an incomplete frame is dropped, and so is every frame after it
    until the next complete key frame (what libwebrtc's frame buffer does when a frame's
    references are missing: it waits for a key frame, asking for one with PLI). Returns the
    units kept, the count dropped, and the count of key frames among the incomplete ones."""
    out = []
    broken = False
    dropped = key_damaged = 0
    for u, key in zip(units, keys):
        if not u.complete:
            broken = True
            key_damaged += int(key)
        elif key:
            broken = False
        if broken:
            dropped += 1
            continue
        out.append(u)
    return out, dropped, key_damaged
