"""IP fragment reassembly with bounded memory.

One :class:`Reassembler` holds the datagrams being rebuilt, keyed by the fields that
identify a datagram: (source, destination, protocol, identification) for IPv4
(RFC 791 §3.2 "Fragmentation and Reassembly"), (source, destination, identification)
for IPv6 (RFC 8200 §4.5).

Holes are tracked with the hole-descriptor algorithm of RFC 815 §3: a datagram starts
with one hole [0, ∞); each fragment removes the holes it touches and puts back the
parts it does not cover (the one above it only if more fragments follow); the datagram
is complete when no hole is left. Bytes are copied only into holes, so where fragments
overlap the first one received wins (RFC 815 leaves the choice open).

IPv6 is stricter (RFC 8200 §4.5, after RFC 5722): a fragment overlapping another of the
same datagram abandons the whole datagram, except an exact duplicate, which is dropped.

Memory is bounded three ways: a datagram not completed within ``timeout_ns`` of its first
fragment (capture time) is dropped (RFC 791 §3.2 suggests a 15 s initial timer; RFC 8200
§4.5 says 60 s for IPv6); at most ``max_datagrams`` are pending and at most ``max_bytes``
buffered, the oldest being dropped first; and a datagram may not exceed 65535 bytes
(IPv4 total length, RFC 791 §3.1; IPv6 payload length without jumbograms, RFC 8200 §3).
The readers take these bounds as one public :class:`ReassemblyLimits`.

References
----------
.. [1] RFC 791, "Internet Protocol", §2.3 (fragmentation), §3.1 (header), §3.2
   (reassembly procedure and timer).
.. [2] D. Clark, RFC 815, "IP Datagram Reassembly Algorithms", §3 (hole descriptors).
.. [3] RFC 8200, "Internet Protocol, Version 6 (IPv6) Specification", §4.5.
.. [4] RFC 5722, "Handling of Overlapping IPv6 Fragments".
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, fields

from qoe.capture._options import positive_int
from qoe.errors import InputError

_INF = 1 << 62  # stands for "infinity" in the first hole (RFC 815 §3)
MAX_DATAGRAM = 65535  # RFC 791 §3.1 Total Length is 16 bits; RFC 8200 §3 Payload Length

IPV4_TIMEOUT_NS = 15_000_000_000  # RFC 791 §3.2: "recommended ... initial timer ... 15 seconds"
IPV6_TIMEOUT_NS = 60_000_000_000  # RFC 8200 §4.5: reassembly abandoned after 60 seconds
# Not from a standard: bounds that keep a capture full of unfinished datagrams (a flood, or
# a capture that lost fragments) from growing the reader's memory without end, far above
# what real traffic keeps pending.
MAX_PENDING_DATAGRAMS = 4096
MAX_PENDING_BYTES = 32 << 20


@dataclass(frozen=True)
class ReassemblyLimits:
    """How long, and how much, IP fragment reassembly may hold during one read.

    :func:`~qoe.capture.read_packets` and :func:`~qoe.capture.read_udp_batches` rebuild
    fragmented IPv4 and IPv6 datagrams; a datagram is returned when its last missing
    fragment arrives, with that fragment's frame number and time. Datagrams still
    incomplete are given up (never returned) when they reach one of these limits, so
    memory stays bounded whatever the capture holds.

    Attributes
    ----------
    ipv4_timeout_ns : int, default 15 s
        An IPv4 datagram not completed within this much capture time of its first
        fragment is dropped (RFC 791 §3.2 recommends a 15 s initial reassembly timer).
    ipv6_timeout_ns : int, default 60 s
        The same for IPv6 (RFC 8200 §4.5: reassembly is abandoned after 60 s).
    max_datagrams : int, default 4096
        Datagrams being reassembled at once, for each IP version; one more drops the
        oldest.
    max_bytes : int, default 32 MiB
        Bytes buffered for them, for each IP version; beyond it the oldest are dropped.

    Raises
    ------
    InputError
        A value that is not a positive integer.

    References
    ----------
    .. [1] RFC 791, "Internet Protocol", §3.2 (reassembly timer).
    .. [2] RFC 8200, "Internet Protocol, Version 6 (IPv6) Specification", §4.5.

    Examples
    --------
    >>> from qoe.capture import ReassemblyLimits
    >>> ReassemblyLimits(ipv4_timeout_ns=30_000_000_000).ipv6_timeout_ns
    60000000000
    """

    ipv4_timeout_ns: int = IPV4_TIMEOUT_NS
    ipv6_timeout_ns: int = IPV6_TIMEOUT_NS
    max_datagrams: int = MAX_PENDING_DATAGRAMS
    max_bytes: int = MAX_PENDING_BYTES

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, positive_int(getattr(self, f.name), f"ReassemblyLimits.{f.name}"))

    def reassemblers(self) -> tuple[Reassembler, Reassembler]:
        """Fresh IPv4 and IPv6 reassembly state within these limits."""
        both = {"max_datagrams": self.max_datagrams, "max_bytes": self.max_bytes}
        return (
            Reassembler(strict_overlap=False, timeout_ns=self.ipv4_timeout_ns, **both),
            Reassembler(strict_overlap=True, timeout_ns=self.ipv6_timeout_ns, **both),
        )


def reassembly_limits(value: object) -> ReassemblyLimits:
    """``value`` if it is a :class:`ReassemblyLimits` (the readers' ``reassembly`` option)."""
    if not isinstance(value, ReassemblyLimits):
        raise InputError(f"reassembly must be a qoe.capture.ReassemblyLimits, given {value!r}")
    return value


class _Pending:
    __slots__ = ("first_ts", "holes", "buf", "total", "extents", "extra", "size")

    def __init__(self, first_ts: int) -> None:
        self.first_ts = first_ts
        self.holes: list[tuple[int, int]] = [(0, _INF)]
        self.buf = bytearray()
        self.total = -1  # known once the last fragment (MF = 0) is in
        self.extents: list[tuple[int, int]] = []  # (first, last) received, for IPv6 overlaps
        self.extra: object = None  # e.g. the IPv6 Next Header of the first fragment
        self.size = 0


class Reassembler:
    """Rebuild datagrams from fragments; see the module docstring for the rules.

    Parameters
    ----------
    strict_overlap : bool
        ``True`` for IPv6 (RFC 8200 §4.5: overlaps abandon the datagram), ``False`` for
        IPv4 (RFC 815 hole filling, first received bytes win).
    timeout_ns, max_datagrams, max_bytes : int
        Memory bounds (capture time since a datagram's first fragment; number of pending
        datagrams; bytes buffered in all of them).
    """

    def __init__(
        self,
        *,
        strict_overlap: bool,
        timeout_ns: int,
        max_datagrams: int = MAX_PENDING_DATAGRAMS,
        max_bytes: int = MAX_PENDING_BYTES,
    ) -> None:
        self.strict_overlap = strict_overlap
        self.timeout_ns = timeout_ns
        self.max_datagrams = max_datagrams
        self.max_bytes = max_bytes
        self._pending: OrderedDict[Hashable, _Pending] = OrderedDict()
        self._bytes = 0
        self.dropped = 0  # datagrams given up (timeout, limits, overlaps, oversize)

    def __len__(self) -> int:
        return len(self._pending)

    def _drop(self, key: Hashable) -> None:
        p = self._pending.pop(key)
        self._bytes -= p.size
        self.dropped += 1

    def _expire(self, ts_ns: int) -> None:
        pend = self._pending
        limit = ts_ns - self.timeout_ns
        while pend:
            key, p = next(iter(pend.items()))
            if p.first_ts < limit or len(pend) > self.max_datagrams or self._bytes > self.max_bytes:
                self._drop(key)
            else:
                break

    def add(
        self,
        key: Hashable,
        ts_ns: int,
        offset: int,
        more: bool,
        data: bytes,
        extra: object = None,
    ) -> tuple[bytes, object] | None:
        """Add one fragment; return ``(payload, extra)`` when the datagram is complete.

        ``offset`` is in bytes; ``extra`` is remembered from the fragment at offset 0
        (IPv6: the Next Header value in its Fragment header) and returned with the payload.
        """
        self._expire(ts_ns)
        pend = self._pending
        p = pend.get(key)
        if p is None:
            p = pend[key] = _Pending(ts_ns)
        first = offset
        last = offset + len(data) - 1
        if last >= MAX_DATAGRAM or (not more and first == 0 and not data):
            self._drop(key)
            return None
        if self.strict_overlap:
            for a, b in p.extents:
                if first <= b and a <= last:
                    if a == first and b == last and p.buf[first : last + 1] == data:
                        return None  # exact duplicate: ignored (RFC 8200 §4.5)
                    self._drop(key)  # overlap: abandon (RFC 8200 §4.5, RFC 5722 §4)
                    return None
            p.extents.append((first, last))
        if offset == 0:
            p.extra = extra
        if not more:
            if p.total >= 0 and p.total != last + 1:
                self._drop(key)  # two different "last" fragments: inconsistent datagram
                return None
            p.total = last + 1
        buf = p.buf
        if len(buf) <= last:
            grow = last + 1 - len(buf)
            buf.extend(bytes(grow))
            p.size += grow
            self._bytes += grow
        holes = []
        for hf, hl in p.holes:
            if first > hl or last < hf:  # RFC 815 steps 2-3: this hole is not touched
                holes.append((hf, hl))
                continue
            a = first if first > hf else hf
            b = last if last < hl else hl
            buf[a : b + 1] = data[a - first : b - first + 1]
            if first > hf:  # step 5: a hole remains below the fragment
                holes.append((hf, first - 1))
            if last < hl and more:  # step 6: a hole remains above it (unless it is the last)
                holes.append((last + 1, hl))
        if p.total >= 0:
            holes = [(hf, min(hl, p.total - 1)) for hf, hl in holes if hf < p.total]
        p.holes = holes
        if holes:
            if self._bytes > self.max_bytes or len(pend) > self.max_datagrams:
                self._expire(ts_ns)
            return None
        del pend[key]
        self._bytes -= p.size
        return bytes(buf[: p.total]), p.extra
