"""The scan's flow table: UDP flows by direction and SSRC, their state and their held packets.

A flow is one (source address, destination address, source port, destination port, SSRC)
of a capture (inside a tunnel an address code stands for the address in that
encapsulation). :class:`FlowTable` numbers flows as they are first seen (a flow id) and
keeps, per flow, what the scan decided about it (:data:`PROBE`, :data:`RTP`,
:data:`REJECT`), the frame of its first packet, how many of its packets are held while it
is undecided, and the statistics slot (stream id) it was given when taken as RTP. A
direct-mapped hash table answers "which flow is this packet's" for a whole batch with a
few NumPy gathers; the dict behind it is the truth. :class:`HeldPackets` are the columns
of packets held for undecided flows (or passed on to the statistics), batch by batch.

The table knows nothing of SIP, RTCP or SRTP: :mod:`qoe.rtp._scanner` drives it.
"""

from __future__ import annotations

import numpy as np

from qoe.rtp._order import stable_order

# The flow table: at least this many slots, and this many per known flow (a flow shares its
# slot with another with probability about 1/16).
_MIN_SLOTS = 1 << 12
_SLOTS_PER_FLOW = 16

# What the scan decided about a flow. ENDED: a stream the scan has handed on (its state
# released); a later packet with its key starts a new flow (a second segment).
PROBE, RTP, REJECT, ENDED = 0, 1, 2, 3
# The columns of a packet held for a flow: frame, arrival, seq, timestamp, payload type, marker.
COLUMNS = ("frame", "arr", "seq", "ts", "pt", "mk", "wire")  # wire: the payload's length on the wire


_GONE = (-2, -2, -2, -2, -2)  # the key kept for an ended flow (one shared tuple)


def flow_hash(k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
    """A 64-bit hash of a flow's two key words (int64 arithmetic wraps around; the caller
    checks every match against the key, so collisions cost a dict lookup, not an error)."""
    return k1 * np.int64(-0x61C8864680B583EB) ^ k2  # 2**64 / golden ratio, as a signed word


def slot_of(h: np.ndarray, size: int) -> np.ndarray:
    """Slots of hashes ``h`` in a table of ``size`` (a power of two) slots: the top bits
    of ``h`` times 2**64 / golden ratio (Knuth's multiplicative hashing, TAOCP vol. 3
    §6.4), so that every bit of the hash counts."""
    bits = size.bit_length() - 1
    return ((h.view(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits)).astype(np.int64)


def group_by_key(rows: np.ndarray, k1: np.ndarray, k2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` grouped by flow key (k1, k2), frame order kept within a key; and where each
    key's run starts. The keys are grouped by a 32-bit slot of their hash (two passes of a
    radix sort on 16-bit digits, :func:`qoe.rtp._order.stable_order`); the rows of a slot
    that two keys share (checked; about one batch in 500 with 4,000 flows) are sorted by
    the keys themselves."""
    a1, a2 = k1[rows], k2[rows]
    slot = slot_of(flow_hash(a1, a2), 1 << 32)
    by_slot = stable_order(slot & 0xFFFF, 1 << 16)  # least significant digit first: two radix passes
    by_slot = by_slot[stable_order(slot[by_slot] >> 16, 1 << 16)]
    o, slot, a1, a2 = rows[by_slot], slot[by_slot], a1[by_slot], a2[by_slot]
    same = (a1[1:] == a1[:-1]) & (a2[1:] == a2[:-1])
    clash = (slot[1:] == slot[:-1]) & ~same
    if clash.any():  # lexsort is stable: frame order kept within a key, each slot's rows where they were
        p = np.flatnonzero(np.isin(slot, slot[1:][clash]))
        by_key = p[np.lexsort((a2[p], a1[p], slot[p]))]
        o[p], a1[p], a2[p] = o[by_key], a1[by_key], a2[by_key]
        same = (a1[1:] == a1[:-1]) & (a2[1:] == a2[:-1])
    brk = np.ones(o.size, dtype=bool)
    brk[1:] = ~same
    return o, np.flatnonzero(brk)


class HeldPackets:
    """Columns of RTP packets tagged with their flow, appended batch by batch."""

    __slots__ = ("fid",) + COLUMNS + ("pay",)

    def __init__(self, fid: np.ndarray, cols: dict[str, np.ndarray], pay: np.ndarray | None) -> None:
        self.fid = fid
        for c in COLUMNS:
            setattr(self, c, cols[c])
        self.pay = pay  # (keep_packets) each payload's offset and length in the PacketStore, else None

    @classmethod
    def empty(cls, keep: bool) -> HeldPackets:
        z = np.zeros(0, dtype=np.int64)
        return cls(z, {c: (np.zeros(0, dtype=bool) if c == "mk" else z) for c in COLUMNS},
                   np.zeros((0, 2), dtype=np.int64) if keep else None)

    def take(self, rows: np.ndarray) -> HeldPackets:
        return HeldPackets(self.fid[rows], {c: getattr(self, c)[rows] for c in COLUMNS},
                           None if self.pay is None else self.pay[rows])

    def __len__(self) -> int:
        return int(self.fid.size)

    @staticmethod
    def concat(parts: list[HeldPackets]) -> HeldPackets:
        keep = parts[0].pay is not None
        return HeldPackets(np.concatenate([p.fid for p in parts]),
                           {c: np.concatenate([getattr(p, c) for p in parts]) for c in COLUMNS},
                           np.concatenate([p.pay for p in parts]) if keep else None)


class FlowTable:
    """Every flow a scan tracks, by id: key, state, first frame, held count, stream id.

    Ids are dense (0, 1, ...) in the order flows are first seen; per-flow facts are NumPy
    arrays indexed by id so that a batch's packets are looked up and updated at once.
    One id, :attr:`sink`, may stand for every flow the scan chose not to track (rejected).
    """

    def __init__(self) -> None:
        self.index: dict[tuple[int, int], int] = {}  # (src<<32|dst, sport<<48|dport<<32|ssrc) -> flow id
        self.fk1 = np.zeros(0, dtype=np.int64)  # flow id -> its two key words (indexed by flow id)
        self.fk2 = np.zeros(0, dtype=np.int64)
        self.slot_fid = np.full(_MIN_SLOTS, -1, dtype=np.int32)  # a direct-mapped table: slot -> flow id
        self.keys: list[tuple[int, int, int, int, int]] = []  # flow id -> (src, dst, sport, dport, ssrc)
        self.state = np.zeros(0, dtype=np.int8)
        self.first_frame = np.zeros(0, dtype=np.int64)
        self.held_n = np.zeros(0, dtype=np.int64)  # packets held while undecided
        self.sid = np.zeros(0, dtype=np.int64)  # flow id -> stream id (-1: not a stream)
        self.last_ns = np.zeros(0, dtype=np.int64)  # flow id -> arrival of its latest packet
        self.sink = -1  # the one flow that stands for every flow left out (rejected)

    def __len__(self) -> int:
        return len(self.keys)

    def known(self, k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
        """Flow id of each packet's key (k1, k2); -1 where the table does not know it.

        A direct-mapped table (one flow per slot of a hash of the key, the last flow
        indexed in a slot keeping it) answers with a few gathers per packet; the flow
        found is checked against the key, so a flow that lost its slot only sends its
        packets to the caller's dict lookup (:meth:`lookup`).
        """
        if self.fk1.size == 0:
            return np.full(k1.size, -1, dtype=np.int64)
        cand = self.slot_fid[slot_of(flow_hash(k1, k2), self.slot_fid.size)]
        known = np.maximum(cand, 0)
        hit = (cand >= 0) & (self.fk1[known] == k1) & (self.fk2[known] == k2)
        return np.where(hit, cand, -1).astype(np.int64)

    def lookup(self, k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
        """Flow id of each key (k1, k2) from the dict; -1 where not known."""
        return np.array([self.index.get(k, -1) for k in zip(k1.tolist(), k2.tolist())], dtype=np.int64)

    def add(self, keys: list[tuple[int, int, int, int, int]], k1: np.ndarray, k2: np.ndarray,
            first_frame: np.ndarray) -> np.ndarray:
        """Add new flows (their 5-part keys, key words and first frames); their ids.
        The caller grows the arrays of its own per-flow facts to ``len(self)``."""
        base = len(self.keys)
        new = np.arange(base, base + len(keys))
        for j, (key, a, b) in enumerate(zip(keys, k1.tolist(), k2.tolist())):
            self.keys.append(key)
            self.index[(a, b)] = base + j
        self._grow()
        self.first_frame[new] = first_frame
        self._index_flows(k1, k2, new)
        return new

    def end(self, fids: np.ndarray) -> None:
        """Forget flows ``fids`` (streams handed on): their keys leave the index, so that a
        later packet with one of them starts a new flow; their ids stay (never reused)."""
        for f in fids.tolist():
            self.index.pop((int(self.fk1[f]), int(self.fk2[f])), None)
            self.keys[f] = _GONE
        self.fk1[fids] = -2  # matches no packet's key: known() sends it to lookup(), which misses
        self.fk2[fids] = -2
        self.state[fids] = ENDED
        self.sid[fids] = -1

    def sink_id(self) -> int:
        """The rejected flow that stands for every flow not tracked (made when first needed).

        Its key words are -1, which no packet has (address codes and ports are not
        negative), so that the key arrays stay indexed by flow id."""
        if self.sink < 0:
            self.sink = len(self.keys)
            self.keys.append((-1, -1, -1, -1, -1))
            self._grow()
            self.state[self.sink] = REJECT
            self.fk1 = np.append(self.fk1, np.int64(-1))
            self.fk2 = np.append(self.fk2, np.int64(-1))
        return self.sink

    def _index_flows(self, k1: np.ndarray, k2: np.ndarray, fids: np.ndarray) -> None:
        self.fk1 = np.append(self.fk1, k1)
        self.fk2 = np.append(self.fk2, k2)
        size = self.slot_fid.size
        if self.fk1.size * _SLOTS_PER_FLOW > size:  # keep the table sparse: rebuild it larger
            while self.fk1.size * _SLOTS_PER_FLOW > size:
                size *= 2
            self.slot_fid = np.full(size, -1, dtype=np.int32)
            k1, k2, fids = self.fk1, self.fk2, np.arange(self.fk1.size)
        self.slot_fid[slot_of(flow_hash(k1, k2), size)] = fids

    def _grow(self) -> None:
        extra = len(self.keys) - self.state.size
        self.state = np.append(self.state, np.full(extra, PROBE, dtype=np.int8))
        self.first_frame = np.append(self.first_frame, np.zeros(extra, dtype=np.int64))
        self.held_n = np.append(self.held_n, np.zeros(extra, dtype=np.int64))
        self.sid = np.append(self.sid, np.full(extra, -1, dtype=np.int64))
        self.last_ns = np.append(self.last_ns, np.zeros(extra, dtype=np.int64))
