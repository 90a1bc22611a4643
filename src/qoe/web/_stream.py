"""Page loads from a capture in one streaming pass, in memory flat in the capture's size.

:func:`qoe.web.pages.iter_page_loads` is this generator. It runs TCP reassembly
(:func:`qoe.web.tcp.iter_connections`) with one protocol-sniffing sink per connection
(``qoe.web._dispatch.ProtocolSink``), takes the DNS queries (and notes QUIC Initials) from the
UDP datagrams of the same pass over the file (``qoe.capture.tcp_segment_rows(udp=...)``: each
chunk's datagrams before its segments; a lazy reader of its own for packets already read), and groups the items (HTTP transactions, TLS connections) into pages with the
rules of :func:`qoe.web.pages.build_pages`, applied in the same order, so the pages are the
same as the batch path's. What it holds at a time:

* the connections being tracked by TCP reassembly (bounded by :class:`qoe.web.tcp.TcpLimits`)
  and the parser state of their sinks;
* the items of finished connections that may still join a page (items are grouped in order of
  their start: an item is grouped once every connection that could still produce an earlier
  one has finished);
* the pages still open (an open page is one that an item could still join: less than
  ``idle_gap_s`` of capture time since its last byte, see :func:`qoe.web.pages.build_pages`),
  and the finished pages that wait for an earlier-starting page to be given first;
* the DNS queries that a page not yet scored could still start with.

An item can only be grouped once its connection is final (its TCP facts are part of its
page's score), so a page is given about ``TcpLimits.close_delay_s + idle_gap_s`` after its
last connection closed, and an HTTP or TLS connection that stays open holds back every page
that starts after its first bytes until it closes (memory then grows with the activity in
that span). Connections that carry neither HTTP nor TLS, and connections that have not
carried a byte yet (an unanswered SYN), hold no page back (the DNS queries just before
their SYN are kept: a page of theirs would start at it).

Timestamps are assumed to grow along the capture (what a single capture point writes); in a
capture whose times go backwards the pages are still all given, but one starting before an
earlier-given page can have a higher index than the batch path would give it. Two rare
items start before their connection's first bytes and can be grouped late in the same way:
a TLS connection whose ClientHello could not be read (it starts at the SYN) and a response
to a request that could not be parsed.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from qoe.web._dispatch import PARSERS, Parser, ProtocolSink
from qoe.web._dns import DnsQuery, batch_queries, iter_dns_queries
from qoe.web._pagemodel import (PENDING_HANDSHAKE_NS, Page, _http_items, _Item, _page, _tls_items, held_until_ns,
                                opened_syn_ns, snapshot_cut, starts_other_page)
from qoe._records import replaced
from qoe.web.tcp import _is_file, _iter_connections, iter_connections

_INF = math.inf
_PRUNE_EVERY = 32  # finished connections between looks at the DNS queries no page can use


class _OpenPage:
    """A page being grouped (an item may still join it)."""

    __slots__ = ("client", "key", "items", "end", "held", "docs", "close_at", "base_start", "done")

    def __init__(self, client: str, key: tuple[int, int, int], base_start: int) -> None:
        self.client = client
        self.key = key  # (first item start, client rank, page number of the client): batch order
        self.items: list[_Item] = []
        self.end = -1  # last byte of its items
        self.held: float = -1  # until when one of its connections was held open (held_until_ns)
        self.docs: list[str] = []  # document URLs that point here
        self.close_at = _INF
        self.base_start = base_start  # its start before a DNS query can pull it earlier
        self.done = False


class _Client:
    """Grouping state of one client (as ``qoe.web.pages._group`` keeps it)."""

    __slots__ = ("rank", "pages", "docs", "busy_until", "serial")

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.pages: list[_OpenPage] = []  # open pages, oldest first; the last one is the client's last
        self.docs: dict[str, _OpenPage] = {}
        self.busy_until = -1
        self.serial = 0


def stream_pages(
    capture: Any, *, gap: int, preset: str, bounds: tuple[float, float] | None, share: float, limits: Any,
    base_rtt: float | None = None, parsers: Sequence[Parser] = PARSERS, quic_seen: list[bool] | None = None,
    dns_until: list[Any] | None = None, read_ahead: bool | None = False, floor: list[Any] | None = None,
) -> Iterator[Page]:
    """The pages of ``capture`` in order of start, each as soon as it is final (see module notes).

    The garbage collector is left alone: pausing it between pages (and running it while the
    consumer has the page) measured no faster, since the collections then find as many
    young records to walk. ``page_loads``, where no consumer code runs, pauses it for the
    whole pass (the pass creates no reference cycles).

    ``parsers`` (``qoe.web._dispatch.parsers(keylog)``) decides how connections are parsed
    (TLS decrypted with a key log); ``quic_seen``, when given, has its first item set when the
    capture's UDP holds a QUIC Initial (the DNS reader sees every datagram, and reads them all
    at the end); ``dns_until``, when given, gets a callable appended, ``f(ts)``: read the UDP
    datagrams up to ``ts`` now (so that ``quic_seen`` says whether a QUIC Initial came by then);
    ``floor``, when given, gets a callable appended, ``f()``: no page the stream has still to
    give starts before this (:meth:`_PageStream.start_floor`, valid between two pages given);
    ``read_ahead``: a capture file is read in a child process, which reassembles, decrypts
    (``parsers`` with a key log) and parses half of its connections (``qoe.web._split``;
    where no child can be forked, the segments are read in a thread,
    :func:`qoe.capture.tcp_segment_rows`).
    """
    run = _PageStream(capture, gap=gap, preset=preset, bounds=bounds, share=share, base_rtt=base_rtt,
                      parsers=parsers, quic_seen=quic_seen)
    if dns_until is not None:
        dns_until.append(run.dns.read_until)
    if floor is not None:
        floor.append(run.start_floor)
    iter_connections(capture, sinks=run.sink_for, limits=limits)  # (checks the arguments now)
    # one pass over a capture file: its UDP (DNS queries, QUIC Initials) fed to the DNS buffer
    # chunk by chunk as the TCP segments are read
    folded = _is_file(capture)
    if folded:
        run.dns.fold()
    udp = run.dns.feed if folded else None
    finished = 0
    from qoe.web import _split  # noqa: PLC0415 - loaded when a capture is read

    if _split.usable(capture, parsers, read_ahead):
        def final(conn: Any) -> None:
            nonlocal finished
            run.connection_final(conn)
            finished += 1
            if finished % _PRUNE_EVERY == 0:
                run.prune_dns()

        # the connections reassembled (and decrypted) half here, half in a child process; the
        # calls made here in the order of one process (qoe.web._split)
        for _ in _split.connections(capture, limits, new=run.track, started=run.started, final=final, udp=udp,
                                    parsers=parsers):
            if run.out:
                yield from run.given()
        run.finish()
        yield from run.given()
        return
    conns = _iter_connections(capture, run.sink_for, limits, udp, read_ahead=read_ahead, view=True)
    while True:
        conn = next(conns, None)
        if conn is None:
            run.finish()
            yield from run.given()
            return
        run.connection_final(conn)
        finished += 1
        if finished % _PRUNE_EVERY == 0:
            run.prune_dns()
        if run.out:
            yield from run.given()


class _PageStream:
    """The state of one streaming pass, and its steps (see the module notes).

    Connections: ``sink_for`` makes each one's sink as TCP reassembly meets it;
    ``connection_final`` turns a final connection's results into items. Items are grouped
    (``_group``, the rules of ``qoe.web._pagemodel._group`` on the open pages) once no
    unfinished connection can give an earlier one (``_watermark``); pages no item can join
    any more are scored (``_finish_pages``) and given in the batch path's order (``_emit``).
    """

    def __init__(self, capture: Any, *, gap: int, preset: str, bounds: tuple[float, float] | None,
                 share: float, base_rtt: float | None, parsers: Sequence[Parser] = PARSERS,
                 quic_seen: list[bool] | None = None) -> None:
        self.gap, self.preset, self.bounds, self.share, self.base_rtt = gap, preset, bounds, share, base_rtt
        self.parsers = parsers  # the protocols a connection may speak (qoe.web._dispatch.PARSERS)
        self.decrypting = parsers is not PARSERS  # a key log is in use (qoe.web._dispatch.parsers)
        self.sinks: dict[int, Any] = {}  # connection index -> its sink, until the connection is final
        self.first_ts: dict[int, int] = {}  # connections not final yet -> first packet time
        self.waiting: list[tuple[int, int]] = []  # heap of (first bytes ts, index) (lazy deletion)
        self.active: dict[int, int] = {}  # connections whose items are not all grouped -> first packet time
        self.active_heap: list[tuple[int, int]] = []  # (first_ts, index) of the active ones that carried bytes
        self.silent: dict[int, int] = {}  # connections without a byte yet -> first packet time
        self.silent_heap: list[tuple[int, int]] = []  # (first packet time, index) of the silent ones, lazy
        self.remaining: dict[int, int] = {}  # items of a final connection not grouped yet
        self.clock = -1  # the latest first packet time seen: no future connection starts before it
        self.items: list[tuple[int, int, int, _Item]] = []  # heap of items of final connections, by (start, conn)
        self.n_items = 0
        self.clients: dict[str, _Client] = {}
        self.n_clients = 0  # a client's rank (ties between pages): order of its first item since it was last idle
        self.closing: list[tuple[float, int, _OpenPage]] = []  # heap of (close_at, serial, page), lazy
        self.unscored: list[tuple[tuple[int, int, int], _OpenPage]] = []  # heap of open pages by key, lazy
        self.ready: list[tuple[tuple[int, int, int], Page]] = []  # finished pages by key
        self.serial = 0
        self.dns = _DnsBuffer(capture, quic_seen)
        self.quic_seen = quic_seen
        self.out: deque[Page] = deque()  # pages given, not yet handed to the consumer
        self.index = 0

    # -- connections ----------------------------------------------------------------------

    def sink_for(self, cid: Any) -> Any:
        """The sink of a new connection (a SinkFactory).

        Until its first bytes, a connection can only produce items that start after them: it
        holds nothing back (an unanswered SYN would otherwise hold every later page).
        """
        return self.track(cid, ProtocolSink(cid, on_started=self.started, parsers=self.parsers))

    def track(self, cid: Any, sink: Any) -> Any:
        """:meth:`sink_for` with the sink given (one that stands for a ``ProtocolSink``:
        ``conn``, ``protocol``, ``result()``; its ``on_started`` calls :meth:`started`)."""
        i, t = cid.index, cid.first_ts_ns
        self.sinks[i] = sink
        self.first_ts[i] = t
        self.active[i] = t
        self.silent[i] = t
        heapq.heappush(self.silent_heap, (t, i))
        if t > self.clock:
            self.clock = t
        return sink

    def started(self, sink: Any, ts: int) -> None:
        """A connection's first bytes: its items (if any) start no earlier."""
        i = sink.conn.index
        syn = sink.conn.first_ts_ns
        # an item of its may be active from its SYN (see _watermark)
        heapq.heappush(self.waiting, (syn if 0 < ts - syn <= PENDING_HANDSHAKE_NS else ts, i))
        t = self.silent.pop(i, None)
        if t is not None:
            heapq.heappush(self.active_heap, (t, i))  # a page of its items can start at its SYN

    def connection_final(self, conn: Any) -> None:
        """A connection is final: its items join the heap, and what can be grouped is."""
        i = conn.id.index
        self.first_ts.pop(i, None)
        self.silent.pop(i, None)
        sink = self.sinks.pop(i, None)
        res = sink.result() if sink is not None else None
        found: list[_Item] = []
        if res is not None:
            found = _http_items(res.transactions)
            if res.tls is not None and not res.transactions:  # (decrypted: its transactions are the items)
                found += _tls_items((res.tls,), {i: conn})
                # a key log held its secrets (or it never finished its handshake, so it could
                # not carry a request) and no request inside: a connection opened ahead
                # (preconnect, a backup or unused socket): it belongs to the page loading, never
                # starts one of its own server
                d = res.decryption
                if d is not None and d.application == "other":  # decrypted, not HTTP: its bytes count
                    from qoe.web.decrypt import not_http  # noqa: PLC0415 - loaded already: it decrypted

                    found[-1].opaque = not_http(d.alpn)
                elif (self.decrypting and d is not None and (d.keys_found or not res.tls.complete)
                      and not snapshot_cut(conn)):
                    # (not when the capture's snapshot length cut its packets: there was nothing
                    # whole to decrypt, and its TCP timing is what is known of it)
                    it = found[-1]
                    it.preconnect, it.silent_client = True, False
                    # no object: its end is its handshake's (a server's later ticket or alert
                    # is not a byte of the page's objects, "fully loaded" ends at those)
                    it.end_ns = max(it.start_ns, min(it.end_ns, res.tls.handshake_end_ns or it.start_ns))
        for it in found:
            it.tcp = conn
            self.n_items += 1
            heapq.heappush(self.items, (it.start_ns, i, self.n_items, it))
        if found:
            self.remaining[i] = len(found)
        else:
            self.active.pop(i, None)
        self._settle(self._watermark())

    def finish(self) -> None:
        """The capture ended: every connection is final, every page can be given."""
        if self.quic_seen is not None:
            self.dns.drain()  # every UDP datagram read: whether the capture holds QUIC is known
        self.first_ts.clear()
        self._settle(_INF)
        self._finish_pages(_INF)
        self._emit(_INF)

    def given(self) -> Iterator[Page]:
        """The pages given and not yet handed over, one at a time (the rest stay in ``out``
        meanwhile, where :meth:`start_floor` sees them)."""
        out = self.out
        while out:
            yield out.popleft()

    def start_floor(self) -> float:
        """No page still to be handed over starts before this: those given and not handed over
        yet, those scored and waiting for an earlier one, and those still to be scored (their
        start before a DNS query pulls it earlier, :meth:`_lower_bound`, or the first packet of
        a connection that has not carried a byte yet, less the idle gap a query may precede it)."""
        lb = self._lower_bound()
        if self.silent:  # (every one: the heap lets go of those past PENDING_HANDSHAKE_NS)
            lb = min(lb, min(self.silent.values()))
        lb -= self.gap
        for p in self.out:
            if p.start_ns < lb:
                lb = p.start_ns
        for _, p in self.ready:
            if p.start_ns < lb:
                lb = p.start_ns
        return lb

    def prune_dns(self) -> None:
        """Forget the DNS queries no page left to score can start with."""
        self.dns.prune(self._lower_bound() - self.gap, sorted(self.silent.values()), self.gap)

    # -- the steps --------------------------------------------------------------------------

    def _watermark(self) -> float:
        """No item still to come from an unfinished connection starts (or, with its pending
        handshake, is active) before this."""
        w = self.clock
        waiting = self.waiting
        while waiting:
            t, i = waiting[0]
            if i not in self.first_ts:
                heapq.heappop(waiting)
                continue
            s = self.sinks.get(i)
            if s is not None and s.protocol == "unknown":  # no parser took it: no items
                heapq.heappop(waiting)
                continue
            w = min(t, w)
            break
        # a connection without bytes yet, in its handshake: an item of its would be active from
        # its SYN for PENDING_HANDSHAKE_NS (qoe.web._pagemodel), so it holds back that long at most
        silent = self.silent_heap
        while silent and (silent[0][1] not in self.silent or silent[0][0] + PENDING_HANDSHAKE_NS < self.clock):
            heapq.heappop(silent)
        if silent:
            w = min(w, silent[0][0])
        return w

    def _settle(self, w: float) -> None:
        """Group the items that start before ``w``, then score and give what is final."""
        items = self.items
        while items and items[0][0] < w:
            _, conn, _, it = heapq.heappop(items)
            self._group(it)
            left = self.remaining[conn] - 1
            if left:
                self.remaining[conn] = left
            else:
                del self.remaining[conn]
                self.active.pop(conn, None)
        self._finish_pages(w)
        self._emit(w)

    def _push_close(self, p: _OpenPage, at: float) -> None:
        p.close_at = at
        self.serial += 1
        heapq.heappush(self.closing, (at, self.serial, p))

    def _group(self, it: _Item) -> None:
        """One item into its page: ``qoe.web._pagemodel._group``'s rules, on the open pages."""
        gap = self.gap
        c = self.clients.get(it.client)
        if c is None:
            c = self.clients[it.client] = _Client(self.n_clients)
            self.n_clients += 1
        ref = it.txn.referer if it.txn is not None else None
        pages = c.pages
        last = pages[-1] if pages else None
        active = it.active_ns  # (a pending handshake is activity, as in _pagemodel._group)
        target = c.docs.get(ref) if ref is not None else None
        if target is not None and active > target.end + gap:
            target = None
        if target is None and last is not None and active <= c.busy_until + gap:
            if not starts_other_page(it, last.items[0], active, c.busy_until, last.held):
                target = last
        if target is None:
            base = it.start_ns
            tcp = it.tcp
            if tcp is not None and (it.tls is not None or not it.txn.reused) and tcp.syn_ts_ns is not None:
                base = min(base, tcp.syn_ts_ns)
            target = _OpenPage(it.client, (it.start_ns, c.rank, c.serial), base)
            c.serial += 1
            if last is not None:  # no longer the client's last page: it closes on its own end
                self._push_close(last, last.end + gap)
            pages.append(target)
            heapq.heappush(self.unscored, (target.key, target))
        syn = opened_syn_ns(it, it.tcp)
        if syn is not None and syn < target.base_start:  # the page starts at its first SYN (_page)
            target.base_start = syn
        target.items.append(it)
        if it.end_ns > target.end:
            target.end = it.end_ns
        held = held_until_ns(it.tcp)
        if held > target.held:
            target.held = held
        if it.end_ns > c.busy_until:
            c.busy_until = it.end_ns
        ctype = (it.txn.content_type or "") if it.txn is not None else ""
        if it.txn is not None and it.txn.url and ctype.startswith(("text/html", "application/xhtml")):
            old = c.docs.get(it.txn.url)
            c.docs[it.txn.url] = target
            target.docs.append(it.txn.url)
            if old is not None and old is not target:
                old.docs.remove(it.txn.url)
        at = (c.busy_until if target is pages[-1] else target.end) + gap
        if at != target.close_at:
            self._push_close(target, at)

    def _finish_pages(self, w: float) -> None:
        """Score the open pages no item can join any more (``close_at < w``)."""
        closing = self.closing
        while closing and closing[0][0] < w:
            at, _, p = heapq.heappop(closing)
            if p.done or at != p.close_at:
                continue  # stale entry
            p.done = True
            c = self.clients[p.client]
            c.pages.remove(p)
            for url in p.docs:
                if c.docs.get(url) is p:
                    del c.docs[url]
            if not c.pages:
                del self.clients[p.client]
            conns = {it.conn: it.tcp for it in p.items if it.tcp is not None}
            page = _page(-1, p.client, p.items, conns, self.dns.upto(p.client, p.base_start), self.gap, self.preset,
                         self.bounds, self.share, self.base_rtt)
            heapq.heappush(self.ready, (p.key, page))

    def _emit(self, w: float) -> None:
        """Give the finished pages that no other page can precede, in the batch path's order."""
        unscored, ready = self.unscored, self.ready
        while unscored and unscored[0][1].done:
            heapq.heappop(unscored)
        while ready:
            key = ready[0][0]
            if key[0] >= w or (unscored and unscored[0][0] < key):
                return
            _, page = heapq.heappop(ready)
            self.out.append(replaced(page, index=self.index))
            self.index += 1
            while unscored and unscored[0][1].done:
                heapq.heappop(unscored)

    def _lower_bound(self) -> float:
        """No page still to be scored starts (before a DNS query pulls it earlier) before this."""
        active_heap, unscored = self.active_heap, self.unscored
        while active_heap and active_heap[0][1] not in self.active:
            heapq.heappop(active_heap)
        lb = active_heap[0][0] if active_heap else self.clock
        while unscored and unscored[0][1].done:
            heapq.heappop(unscored)
        for _, p in unscored:  # few: the pages open at once
            if not p.done and p.base_start < lb:
                lb = p.base_start
        return lb


class _DnsBuffer:
    """The capture's DNS queries, read lazily in capture order, kept per client while usable."""

    def __init__(self, capture: Any, quic_seen: list[bool] | None = None) -> None:
        self._capture = capture
        self._quic_seen = quic_seen
        self._source: Iterator[DnsQuery] | None = None
        self._by_client: dict[str, list[DnsQuery]] = {}
        self._last = -1  # time of the latest query read
        self._done = False
        self._fed = False  # the queries come from the TCP pass (feed), not a reader of their own

    def fold(self) -> None:
        """The queries will come from the TCP pass (:meth:`feed`): the buffer does not read the
        capture itself."""
        self._fed = True

    def feed(self, batch: Any) -> None:
        """The UDP datagrams of the next chunk of the capture, read with its TCP segments (one
        pass): their queries are kept (and QUIC Initials noted) at once."""
        for q in batch_queries(batch, self._quic_seen):
            self._last = max(self._last, q.ts_ns)
            self._by_client.setdefault(q.client, []).append(q)

    def _read_until(self, ts: int) -> None:
        if self._fed:
            # the capture is read once, TCP and UDP together: every query of the chunks read
            # so far is kept; the TCP rows being handled lie in them, and what is asked for
            # (a page's start, its end + idle gap) is before the row being handled
            return
        if self._source is None:
            self._source = iter_dns_queries(self._capture, quic_seen=self._quic_seen)
        while not self._done and self._last <= ts:
            q = next(self._source, None)
            if q is None:
                self._done = True
                return
            self._last = max(self._last, q.ts_ns)
            self._by_client.setdefault(q.client, []).append(q)

    def read_until(self, ts: int) -> None:
        """Read the capture's UDP datagrams up to ``ts`` at least (so ``quic_seen`` is known
        up to then)."""
        self._read_until(ts)

    def drain(self) -> None:
        """Read the rest of the capture's UDP datagrams (and keep their queries, as :meth:`upto`)."""
        self._read_until(_INF)

    def upto(self, client: str, ts: int) -> list[DnsQuery]:
        """The queries of ``client`` so far, by time, once every query up to ``ts`` is read."""
        self._read_until(ts)
        qs = self._by_client.get(client, [])
        qs.sort(key=_ts)
        return qs

    def prune(self, before: float, syns: list[int], gap: int) -> None:
        """Forget the queries before ``before`` that no page left to score can use: those not
        within ``gap`` before one of ``syns`` (sorted first packet times of the connections
        without bytes yet: a page of theirs would start there)."""
        for client in list(self._by_client):
            qs = [q for q in self._by_client[client] if q.ts_ns >= before or _near(q.ts_ns, syns, gap)]
            if qs:
                self._by_client[client] = qs
            else:
                del self._by_client[client]


def _near(ts: int, syns: list[int], gap: int) -> bool:
    """Is there a time in sorted ``syns`` within ``[ts, ts + gap]``?"""
    k = bisect_left(syns, ts)
    return k < len(syns) and syns[k] <= ts + gap


def _ts(q: DnsQuery) -> int:
    return q.ts_ns
