"""Holding, delivering and forcing one direction's bytes: the buffer half of TCP reassembly.

A connection (``qoe.web._conntrack._Conn``) classifies each segment (new, retransmitted,
reordered, a copy) and measures RTT; what it does with the bytes is this class's job: bytes
that follow the last delivered one go to the connection's sink (:class:`~qoe.web._sink.ByteSink`)
at once, bytes beyond a hole are held (sorted, bounded by ``TcpLimits.max_buffered_bytes``)
until the hole is filled, and a hole the receiver acknowledged past, or one that holds back
too much, is forced: declared a gap, and the held bytes after it delivered. Definitions are
in :mod:`qoe.web.tcp` ("Delivery").

Per direction (a ``_Sender``): ``nxt`` (bytes before it went to the sink or were declared
missing), ``high`` (bytes before it were seen or declared missing), ``holes`` (never-seen
ranges in ``[nxt, high)``, ``_H_*`` fields), ``ooo`` (seen, undelivered ranges in
``[nxt, high)``, ``_O_*`` fields: the complement of the holes there).

References
----------
.. [1] RFC 9293 §3.10.7.4 (segment text: in-order delivery to the user).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

__all__ = ["_Delivery"]

# a hole (``_Sender.holes``): a never-seen range, when it was first seen missing, the TSval then
_H_START, _H_END, _H_TS, _H_TSVAL = range(4)
# a held range (``_Sender.ooo``): seen, not delivered; its payload (a prefix of the range when the
# snap length cut the packet) and the time it was seen
_O_START, _O_END, _O_PAYLOAD, _O_TS = range(4)


def _start(rec: list[Any]) -> int:
    return rec[0]  # (_H_START, _O_START and the sent records' _R_START: every record starts with it)


class _Delivery:
    """The buffer of both directions of a connection (a base of ``_Conn``, which provides the
    ``sink``, ``limits`` and ``hit`` attributes and ``_maybe_close``)."""

    __slots__ = ()
    sink: Any
    limits: Any
    hit: set[str]

    def _maybe_close(self, h: Any, d: int, ts: int) -> None:  # pragma: no cover - _Conn's
        raise NotImplementedError

    def _hold(self, h: Any, s: int, e: int, payload: bytes, ts: int) -> None:
        """Put never-seen bytes ``[s, e)`` (s >= nxt) into the out-of-order list, sorted."""
        if h.closed is not None:
            return
        ooo = h.ooo
        item = [s, e, payload, ts]
        if not ooo or ooo[-1][_O_START] < s:
            ooo.append(item)
        else:
            ooo.insert(bisect_right(ooo, s, key=_start), item)
        h.ooo_bytes += e - s

    def _deliver(self, h: Any, d: int, s: int, e: int, payload: bytes, ts: int) -> None:
        """Bytes ``[s, e)`` (s == nxt) to the sink; the part the snap length cut off as a gap."""
        n = len(payload)
        sink = self.sink
        if n:
            if h.gap_len:
                self._flush_gap(h, d)
            h.delivered += n
            if sink is not None:
                sink.data(d, ts, s, payload if n == e - s else payload[: e - s])
        if n < e - s:
            h.truncated += e - s - n
            self._gap(h, s + n, e - s - n, ts)
        h.nxt = e
        if h.fin is not None and e >= h.fin:
            self._maybe_close(h, d, ts)

    def _gap(self, h: Any, off: int, length: int, ts: int) -> None:
        if h.gap_len and h.gap_off + h.gap_len == off:
            h.gap_len += length
            return
        if h.gap_len:
            self._flush_gap(h, h.d)
        h.gap_off, h.gap_len, h.gap_ts = off, length, ts

    def _flush_gap(self, h: Any, d: int) -> None:
        if self.sink is not None:
            self.sink.gap(d, h.gap_ts, h.gap_off, h.gap_len)
        h.gap_len = 0

    def _drain(self, h: Any, d: int, ts: int) -> None:
        """Deliver the out-of-order items that now follow ``nxt``."""
        ooo = h.ooo
        k = 0
        while k < len(ooo) and ooo[k][_O_START] == h.nxt:
            s, e, p, _ = ooo[k]
            h.ooo_bytes -= e - s
            self._deliver(h, d, s, e, p, ts)
            k += 1
        if k:
            del ooo[:k]

    def _force(self, h: Any, upto: int, ts: int) -> None:
        """Bring ``nxt`` to ``upto``: deliver what is held, declare the rest missing (gaps)."""
        d = h.d
        while h.nxt < upto and h.closed is None:
            nxt = h.nxt
            if h.ooo and h.ooo[0][_O_START] == nxt:
                self._drain(h, d, ts)
                continue
            end = upto
            if h.holes and h.holes[0][_H_START] == nxt:
                hole = h.holes[0]
                if hole[_H_END] <= upto:
                    end = hole[_H_END]
                    del h.holes[0]
                else:
                    hole[_H_START] = upto
            elif h.ooo and h.ooo[0][_O_START] < upto:
                end = h.ooo[0][_O_START]
            h.missing += end - nxt
            self._gap(h, nxt, end - nxt, ts)
            h.nxt = end
            if end > h.high:
                h.high = end
            if h.fin is not None and end >= h.fin:
                self._maybe_close(h, d, ts)
        if h.closed is None:
            self._drain(h, d, ts)

    def _shed(self, h: Any, ts: int) -> None:
        """Out-of-order bytes over the limit: declare the oldest holes missing."""
        while h.ooo_bytes > self.limits.max_buffered_bytes and h.holes and h.closed is None:
            self._force(h, h.holes[0][_H_END], ts)

    def _close_half(self, h: Any, d: int, ts: int, how: str) -> None:
        if h.gap_len:
            self._flush_gap(h, d)
        h.closed = how
        h.ooo = []
        h.holes = []
        h.ooo_bytes = 0
        if self.sink is not None:
            self.sink.close(d, ts, how)
