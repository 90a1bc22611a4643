"""The scan's SRTP sampler: what the payload heuristic needs of each flow's first packets.

The SRTP payload heuristic (``_encrypted_verdicts``) judges a stream from
its first :data:`SAMPLE` packets: their sequence numbers, timestamps and payload lengths,
and one histogram of the nibbles of their payloads' first :data:`SAMPLE_BYTES` bytes. The
scan cannot keep payloads (a trunk has thousands of flows), so :class:`SrtpSampler` keeps
those facts per flow id as packets pass (about 190 bytes per flow), notes which streams
the heuristic should judge, and judges them all at once at the end of the scan.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from qoe.rtp._order import stable_order

from qoe.rtp.sip import SdesCrypto
from qoe.rtp.srtp import SrtpInfo, _encrypted_verdicts

# What is kept of each flow's first packets (sequence number, timestamp and payload length of
# each, and one histogram of the nibbles of their payloads' first 32 bytes, up to 512 bytes:
# 193 bytes per flow, each column in the narrowest type that holds it: 16-bit sequence numbers
# and 32-bit timestamps (RFC 3550 §5.1), payload lengths under 2**16 (a UDP datagram's length
# is a 16-bit field, RFC 768), at most SAMPLE * SAMPLE_BYTES = 512 per histogram bin).
SAMPLE = 16
SAMPLE_BYTES = 32
_CHUNK = 4096  # rows whose bytes are counted at once


class SrtpSampler:
    """Per flow id: the first packets' sequence numbers, timestamps, lengths and payload nibbles."""

    def __init__(self) -> None:
        self.sampled = np.zeros(0, dtype=np.uint8)  # packets sampled per flow (<= SAMPLE)
        self.seq = np.zeros((0, SAMPLE), dtype=np.uint16)
        self.ts = np.zeros((0, SAMPLE), dtype=np.uint32)
        self.length = np.zeros((0, SAMPLE), dtype=np.uint16)
        self.nibbles = np.zeros((0, 32), dtype=np.uint16)
        # flows the payload heuristic judges at the end: (order, flow id, bytes per tick, SDES key)
        self.pending: list[tuple[int, int, int, SdesCrypto | None]] = []

    def grow(self, n: int) -> None:
        """Make room for flow ids below ``n``."""
        extra = n - self.sampled.size
        if extra <= 0:
            return
        self.sampled = np.append(self.sampled, np.zeros(extra, dtype=self.sampled.dtype))
        self.seq = np.concatenate((self.seq, np.zeros((extra, SAMPLE), dtype=self.seq.dtype)))
        self.ts = np.concatenate((self.ts, np.zeros((extra, SAMPLE), dtype=self.ts.dtype)))
        self.length = np.concatenate((self.length, np.zeros((extra, SAMPLE), dtype=self.length.dtype)))
        self.nibbles = np.concatenate((self.nibbles, np.zeros((extra, 32), dtype=self.nibbles.dtype)))

    def sample(self, fid: np.ndarray, h: Any, u8: np.ndarray, rank: np.ndarray | None = None) -> None:
        """Take what the SRTP heuristic needs from each flow's first :data:`SAMPLE` packets
        (``fid``: each packet's flow; ``h``: their RTP header columns; ``u8``: the batch's
        bytes; ``rank``: where known, each packet's place among its flow's packets of the
        batch, else -1)."""
        need = self.sampled[fid] < SAMPLE
        ranked = np.zeros(0, dtype=np.int64)
        if rank is not None:  # these need no sort to be placed
            ranked = np.flatnonzero(need & (rank >= 0) & (rank < SAMPLE))
            need &= rank < 0
        r = np.flatnonzero(need)
        if r.size + ranked.size == 0:
            return
        o = r[stable_order(fid[r], self.sampled.size)]  # by flow, arrival order kept
        f = fid[o]
        start = np.flatnonzero(np.concatenate(([True], f[1:] != f[:-1])))
        place = np.arange(o.size) - np.repeat(start, np.diff(np.append(start, o.size)))
        if ranked.size:
            o, place = np.concatenate((o, ranked)), np.concatenate((place, rank[ranked]))  # type: ignore[index]
            f = fid[o]
        place = place + self.sampled[f].astype(np.int64)
        keep = place < SAMPLE
        o, f, place = o[keep], f[keep], place[keep]
        self.seq[f, place] = h.seq[o]
        self.ts[f, place] = h.timestamp[o]
        n = (h.payload_end[o] - h.payload_start[o]).astype(np.int64)
        self.length[f, place] = n
        flows, local = np.unique(f, return_inverse=True)
        self.sampled[flows] += np.bincount(local, minlength=flows.size).astype(np.uint8)
        # the first SAMPLE_BYTES bytes of each of those payloads: their nibbles, counted per flow,
        # in chunks of rows sorted by flow, so that the temporaries stay small and each chunk's
        # counts span only its own flows. Each payload's bytes are read as one row of
        # SAMPLE_BYTES (qoe.capture.byte_rows, not a gather of each byte); the bytes past its
        # end are counted in a bin of their own, left out.
        from qoe.capture import byte_rows  # noqa: PLC0415 - the capture layer loads with the first scan, not with qoe.rtp

        by_flow = stable_order(local, flows.size)
        local, first = local[by_flow], h.payload_start[o[by_flow]].astype(np.int64)
        w = np.minimum(n[by_flow], SAMPLE_BYTES)
        if first.size and int(first.max()) + SAMPLE_BYTES > u8.size:  # a batch's bytes that end soon after a payload
            u8 = np.concatenate((u8, np.zeros(SAMPLE_BYTES, dtype=np.uint8)))
        cols = np.arange(SAMPLE_BYTES)
        counts = np.zeros(flows.size * 32 + 1, dtype=np.int64)
        for c in range(0, o.size, _CHUNK):
            at = local[c:c + _CHUNK]
            lo = int(at[0])  # the chunk's first flow (rows are by flow)
            span = (int(at[-1]) + 1 - lo) * 32
            b = byte_rows(u8, first[c:c + _CHUNK], SAMPLE_BYTES)
            base = ((at - lo) * 32)[:, None]
            past = cols[None, :] >= w[c:c + _CHUNK, None]  # past the payload's end: the last bin
            high = np.where(past, span, base + (b >> 4))
            low = np.where(past, span, base + 16 + (b & 15))
            counts[lo * 32:lo * 32 + span + 1] += np.bincount(np.concatenate((high.reshape(-1), low.reshape(-1))),
                                                               minlength=span + 1)
            counts[lo * 32 + span] = 0  # those bytes: the next flow's first bin, which no earlier chunk counted
        self.nibbles[flows] += counts[:-1].reshape(flows.size, 32).astype(np.uint16)

    def judge_later(self, fid: int, per_tick: int, sdes: SdesCrypto | None) -> None:
        """Have flow ``fid`` judged at the end (a codec of ``per_tick`` payload bytes per tick)."""
        if self.sampled[fid]:
            self.pending.append((len(self.pending), fid, per_tick, sdes))

    def mark(self, streams: list[Any], at: dict[int, int]) -> None:
        """Apply the payload heuristic to the pending flows of ``streams`` at once; mark the
        streams found encrypted (``at``: flow id -> index in ``streams``) with
        ``SrtpInfo("heuristic")``. Pending flows not in ``at`` stay pending."""
        mine = [p for p in self.pending if p[1] in at]
        if not mine:
            return
        self.pending = [p for p in self.pending if p[1] not in at]
        fids = np.array([p[1] for p in mine], dtype=np.int64)
        per_tick = np.array([p[2] for p in mine], dtype=np.int64)
        hits = _encrypted_verdicts(self.seq[fids], self.ts[fids], self.length[fids],
                                  self.sampled[fids].astype(np.int64), self.nibbles[fids], per_tick)
        for i in np.flatnonzero(hits).tolist():
            _, fid, _, sdes = mine[i]
            j = at[fid]
            streams[j] = dataclasses.replace(streams[j], srtp=SrtpInfo(found_by="heuristic", sdes=sdes))
