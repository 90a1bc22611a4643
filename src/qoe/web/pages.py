"""Page loads from a capture: transactions grouped into pages, page load time, the seed paper's
diagnosis (RTT- or loss-dominated) and the G.1030 score.

A page load, as a capture shows it, is a client's burst of activity: the main document,
then the objects it pulls, until the client goes quiet. The rules:

* Items are a client's HTTP transactions (:mod:`qoe.web.http`) and its TLS connections
  (:mod:`qoe.web.tls`: the requests inside are encrypted, so an HTTPS page is its
  connections to one server name and the ones opened while it loads).
* A transaction whose ``Referer`` is the URL of a document of an open page (one whose last
  byte is at most ``idle_gap_s`` before the transaction starts) belongs to it.
  Otherwise an item starts a new page when it begins more than ``idle_gap_s`` (default 2 s)
  after the last byte of everything before it; a TLS connection to another server name
  (its ClientHello's SNI, in clear without keys) than the page's also does when the page is
  not loading any more and the client has closed every connection of the page (a FIN or RST
  either way) by then: a browser holds a page's connections open past its load, so the
  connections a script opens after the load event to another origin (a capture without
  keys shows nothing else of its late fetches) belong to the page, while a client that let
  go of its page (curl or wget exiting) closed them first. Without keys a navigation to
  another site less than ``idle_gap_s`` after the last byte, while the browser still holds
  the previous page's connections, is therefore not told from such a late fetch; it is the
  quiet time that separates page loads, as for cleartext requests without a ``Referer``.
* PLT ("fully loaded") runs from the page's first event — its first DNS query for the main
  host (within ``idle_gap_s`` before), else the first SYN of the connections opened for it
  (``_pagemodel.opened_syn_ns``: a preconnect's, or the document's connection whose request came
  after another connection's ClientHello), else its first request byte — to the last byte of
  its last object. A capture cannot see the browser's ``onLoad`` event: this is the time the
  network needed, which is what the seed paper measured (§9.1). ``onload_s`` beside it runs
  from the same start to the estimated load event: the last byte of the objects that delay
  it (:func:`onload_end_ns`: not a script's ``fetch()``, requested before the browser's icon
  request).
* With a key log, a TLS connection that carried no request (a preconnect, a backup socket)
  belongs to the page loading: it does not start a page, end it, or make it partial. Without
  keys, one whose client sent no record after its handshake (TLS 1.3: after its Finished), or
  closed it (FIN) before the handshake was whole, is one too: HTTP's client speaks first, so
  it carried no request, and what its server sent after (TLS 1.3 session tickets, a late
  answer to an abandoned handshake) is no object.
* Without keys, a TLS connection's objects end at the server's last byte delivered in order
  (``TlsSession.server_last_byte_ns``): a spurious retransmission of bytes the client already
  had does not extend the page. A QUIC connection's end at the server's last packet larger
  than an ACK (``QuicConnection.server_last_data_ns``): its trailing ACKs, PINGs and probes
  do not extend it; it is held open until its last packet.
* QUIC connections are grouped among themselves; a QUIC page that overlaps a TCP page of the
  same client (within ``idle_gap_s``) is merged into it (``_then_quic``). A QUIC page's RTT
  comes from its ACK frames (RFC 9002 §5, :mod:`qoe.web.quic`), its ``loss_wait_s`` from its
  loss recovery (RFC 9002 §6): the time bytes sent again in STREAM/CRYPTO frames waited on the
  page's critical path, the same definition as TCP's retransmissions (``_quic_rtt``).

The diagnosis (seed paper §9.1: "We denote PLTs as RTT dominated if a significant portion of
the PLT consists of the RTT component expressed by 14*RTT. Similarly, we denote PLTs as loss
dominated if the increase in PLT can be mainly attributed to TCP retransmissions."):

* ``round_trips``: the round trips the page needs without loss, counted on its serial
  chain of exchanges (the longest chain of transactions each starting after the previous
  ended): 1 for each new connection's handshake, 2 for a TLS 1.2 handshake (1 for TLS
  1.3), 1 for each request, and the extra rounds slow start needs for the response:
  ⌈log2(segments / IW + 1)⌉ − 1 with IW = 10 segments (RFC 6928 §2) of the connection's MSS.
  The paper's page (15 + 5.8 + 2 × 30 KB over HTTP/1.0) needed 14 with 2014's stacks.
* ``rtt_component_s = round_trips × rtt_s`` (``rtt_s``: median path RTT of the page's
  connections, from their handshakes and both directions' data/ACK samples, :mod:`qoe.web.tcp`);
  ``loss_wait_s``: the time the page's connections lost waiting for retransmissions
  (``Direction.time_lost_ns``) and in stalls (``Direction.stall_ns``: a sender silent
  mid-transfer beyond an RTO, as a rule a timeout after a tail loss the capture point
  could not see), summed over both directions.
* ``rtt-dominated`` when the RTT component is at least ``share`` (default 0.5) of the PLT;
  ``loss-dominated`` when the wait for retransmissions is at least ``share`` of the increase
  of the PLT over its loss-free, queue-free time (``round_trips × rtt_min_s``); when both
  hold, the larger cause of that increase wins (the wait, or the queueing part of the RTT
  component, ``round_trips × (rtt_s − rtt_min_s)``); otherwise ``neither``. The numbers
  are reported with the label.

References
----------
.. [1] Pujol et al., "A QoE Perspective on Sizing Network Buffers", IMC 2014, §9.1.
.. [2] ITU-T G.1030 (11/2005), Annex A (PLT → MOS; Appendix II in the 02/2014 edition).
.. [3] RFC 6928, "Increasing TCP's Initial Window", §2 (IW = min(10 MSS, max(2 MSS, 14600))).
.. [4] RFC 1035, §4.1 (DNS message format; queries read with dpkt).
"""
from __future__ import annotations

import bisect
import dataclasses
import gc
import heapq
import itertools
import math
import os
from collections.abc import Iterator
from typing import Any

from qoe.web._dns import DnsQuery, dns_queries, iter_dns_queries
from qoe.web._pagemodel import (DEFAULT_IDLE_GAP_S, Page, WebOptions, _critical_path, _custom_bounds, _diagnose,
                                _http_items, _mos, _path_wait, _resolve, _tls_items, build_pages, onload_end_ns)
from qoe.web.har import pages_from_har, to_har_pages

__all__ = ["Page", "WebOptions", "DnsQuery", "build_pages", "page_loads", "iter_page_loads", "pages_from_har",
           "to_har_pages", "dns_queries", "iter_dns_queries", "onload_end_ns", "DEFAULT_IDLE_GAP_S"]


def page_loads(
    capture: str | os.PathLike[str],
    *,
    options: WebOptions | None = None,
    limits: Any = None,
    **deprecated: Any,
) -> list[Page]:
    """The page loads of a capture: TCP reassembly, HTTP and TLS, DNS, grouped and scored.

    Parameters
    ----------
    capture : path
        A pcap or pcapng file taken at (or near) the clients.
    options : WebOptions, optional, keyword-only
        Grouping and scoring (see :func:`build_pages`); default ``WebOptions()``.
    limits : qoe.web.tcp.TcpLimits, optional, keyword-only
        Reassembly memory bounds.
    **deprecated
        ``idle_gap_s``, ``preset``, ``bounds=(t_min, t_max)``, ``share`` as keywords: still
        taken for one release, with a DeprecationWarning naming the WebOptions fields; given
        with ``options``, an InputError (ambiguous).

    Returns
    -------
    list of Page
        In order of their start: ``list(iter_page_loads(capture, ...))``, the same pages as
        :func:`build_pages` makes of the capture's transactions, connections, TLS sessions and
        DNS queries.

    Examples
    --------
    >>> from qoe.web import WebOptions, page_loads
    >>> pages = page_loads("data/web/captures/http10-idle-b64-wget_client.pcap",
    ...                    options=WebOptions(preset="backbone"))  # doctest: +SKIP
    """
    found = _iter_page_loads(capture, _resolve("page_loads", options, deprecated), limits)
    was = gc.isenabled()
    gc.disable()  # no consumer code runs in between: the collector stays paused the whole pass
    try:
        return list(found)
    finally:
        if was:
            gc.enable()


def iter_page_loads(
    capture: str | os.PathLike[str],
    *,
    options: WebOptions | None = None,
    limits: Any = None,
    **deprecated: Any,
) -> Iterator[Page]:
    """:func:`page_loads` as a stream: each page as soon as it is final, in memory flat in the capture's size.

    Parameters and pages as :func:`page_loads` (in the same order, with the same indices). A
    page is final once no item can join it any more: about ``idle_gap_s`` after its last byte,
    plus ``limits.close_delay_s`` (a connection's TCP facts are final that long after it
    closed). What is held meanwhile: the connections being reassembled, the pages still open
    and the DNS queries they may start with; an HTTP or TLS connection that stays open holds
    back the pages that start after it opened until it closes (``qoe.web._stream``); in a
    capture with QUIC, from its first QUIC Initial on, the QUIC connections open (a QUIC
    connection is given 30 s after its last packet) and the pages of the last 30 s or so,
    QUIC and TCP, that they could still join (a pass of their own over the capture, merged
    with the TCP pages as both are final).

    Yields
    ------
    Page

    Raises
    ------
    InputError
        A parameter is out of range (at the call).
    CaptureError
        The file cannot be read as a capture (at the call).
    """
    # the collector's young generation relaxed while the pass works; the capture layer loads
    # when a capture is read (qoe.web.pages, which the CLI imports for WebOptions, stays light)
    from qoe.capture import relaxed_gc  # noqa: PLC0415

    return relaxed_gc(_iter_page_loads(capture, _resolve("iter_page_loads", options, deprecated), limits))


def _iter_page_loads(capture: str | os.PathLike[str], opts: WebOptions, limits: Any) -> Iterator[Page]:
    # TCP reassembly, the parsers (h11) and the capture readers load when a capture is read:
    # qoe.web.pages (which the CLI and qoe.score import for WebOptions) stays light
    from qoe.web._stream import stream_pages  # noqa: PLC0415
    from qoe.web.tcp import TcpLimits, iter_connections  # noqa: PLC0415

    b = _custom_bounds(opts)
    _mos(1.0, opts.preset, b)  # the preset or bounds are checked where they are used, now
    limits = limits if limits is not None else TcpLimits()
    iter_connections(capture, limits=limits)  # checks the limits and the file now, reads nothing
    # the parsers of TLS, HTTP/2 and QUIC (cryptography, hpack) load when a capture is read
    from qoe.web._dispatch import parsers  # noqa: PLC0415
    from qoe.web.keylog import load_keylog  # noqa: PLC0415

    keys = load_keylog(capture, opts.keylog)  # a missing or empty key log file fails now
    quic_seen = [False]
    dns_until: list[Any] = []
    floor: list[Any] = []
    tcp = stream_pages(capture, gap=int(round(opts.idle_gap_s * 1e9)), preset=opts.preset, bounds=b,
                       share=opts.share, limits=limits, base_rtt=opts.base_rtt_s, parsers=parsers(keys),
                       quic_seen=quic_seen, dns_until=dns_until, read_ahead=opts.read_ahead, floor=floor)
    return _then_quic(tcp, capture, opts, keys, quic_seen, dns_until, floor)


def _then_quic(tcp: Iterator[Page], capture: Any, opts: WebOptions, keys: Any, quic_seen: list[bool],
               dns_until: list[Any] = (), floor: list[Any] = ()) -> Iterator[Page]:  # type: ignore[assignment]
    """The TCP pages, with the capture's QUIC connections in the same page model.

    QUIC connections are grouped among themselves (:func:`_quic_page_stream`); a QUIC page of a
    client that overlaps one of its TCP pages (each starting at most ``idle_gap_s`` after the
    other's last byte: the same rule as one page's items) is merged into it (:func:`_merge`):
    a load whose objects came over TCP and QUIC is one page. A TCP page is given as soon as it
    is final while no QUIC Initial has come up to ``idle_gap_s`` after its last byte (the UDP
    datagrams are read ahead that far). From the first QUIC Initial on, the QUIC pages are
    made as they become final (a pass of their own over the capture, :func:`_quic_page_stream`)
    and the TCP pages still streamed, each merged with the QUIC pages it overlaps and the pages
    given in order of their start (:func:`_with_quic`): what is held is the QUIC connections
    still open and the pages they could still change, not the capture's pages.
    """
    gap = int(round(opts.idle_gap_s * 1e9))
    n = 0
    for page in tcp:
        if not quic_seen[0] and dns_until:
            dns_until[0](page.end_ns + gap)
        if quic_seen[0]:
            yield from _with_quic(itertools.chain((page,), tcp), _quic_page_stream(capture, opts, keys), n, gap,
                                  opts, floor[0] if floor else None)
            return
        n += 1
        yield page
    if quic_seen[0]:
        yield from _with_quic(iter(()), _quic_page_stream(capture, opts, keys), n, gap, opts, None)


def _with_quic(tcp: Iterator[Page], quic_pages: Iterator[tuple[Page | None, float]], n: int, gap: int,
               opts: WebOptions, floor: Any) -> Iterator[Page]:
    """The TCP pages ``tcp`` (in the stream's order) merged with the QUIC pages of
    ``quic_pages`` (:func:`_quic_page_stream`: each client's in order, with the floor of those
    still to come) and given in order of start (then client; TCP pages before QUIC ones, each
    in its own order), indexed from ``n`` on.

    The rule, as if every page were at hand: each QUIC page in its order joins the first TCP
    page of its client (in the stream's order, as merged so far) that it overlaps, else it
    stands alone. Taken TCP page by TCP page (each gets the QUIC pages of its client, in their
    order, that overlap it as it grows), it makes the same pages. The QUIC pages are taken as
    far as a TCP page needs: those that start up to ``idle_gap_s`` after its end (as it grows:
    none after can overlap it). ``floor()`` (the stream's
    :meth:`qoe.web._stream._PageStream.start_floor`): no TCP page still to come starts
    before it, so a QUIC page that ends ``idle_gap_s`` before it joins none, and a page that
    starts before it, before every QUIC page not yet placed and before the floor of the QUIC
    pages still to come is given.
    """
    quic: list[Page | None] = []  # the QUIC pages taken so far (j: their place here; None once placed)
    of_client: dict[str, list[int]] = {}  # the QUIC pages not placed yet, per client, in their order
    last_chance: list[tuple[int, int]] = []  # heap: (end + gap, j): no TCP page from then on joins it
    by_start: list[tuple[int, int]] = []  # heap: (start, j) of those not placed (stale entries dropped)
    source = iter(quic_pages)
    q_floor = [-math.inf]  # no QUIC page still to be taken starts before it

    def take_one() -> bool:  # the next QUIC page or floor; False at the end
        item = next(source, None)
        if item is None:
            q_floor[0] = math.inf
            return False
        q, f = item
        if q is None:
            q_floor[0] = max(q_floor[0], f)
            return True
        j = len(quic)
        quic.append(q)
        of_client.setdefault(q.client, []).append(j)
        heapq.heappush(last_chance, (q.end_ns + gap, j))
        heapq.heappush(by_start, (q.start_ns, j))
        return True

    def take(until: float) -> None:  # every QUIC page that starts up to ``until``
        while q_floor[0] <= until and take_one():
            pass

    def place(j: int, alone: bool) -> None:  # QUIC page j placed: a page of its own, or merged
        q = quic[j]
        quic[j] = None  # (what is held: the QUIC pages not placed yet)
        if alone:
            heapq.heappush(ready, (q.start_ns, q.client, 1, j, q))  # type: ignore[union-attr]

    ready: list[tuple[int, str, int, int, Page]] = []  # heap of the final pages, in the order they are given
    seq = 0
    for page in tcp:
        take(page.end_ns + gap)
        mine = of_client.get(page.client)
        if mine:
            left = []
            k = 0
            while k < len(mine):  # (grows as pages are taken for the page as it grows)
                j = mine[k]
                k += 1
                q = quic[j]
                if q is None:
                    continue
                if q.start_ns <= page.end_ns + gap and page.start_ns <= q.end_ns + gap:
                    page = _merge(page, q, opts)
                    place(j, alone=False)
                    take(page.end_ns + gap)
                else:
                    left.append(j)
            if left:
                of_client[page.client] = left
            else:
                del of_client[page.client]
        heapq.heappush(ready, (page.start_ns, page.client, 0, seq, page))
        seq += 1
        if floor is None:
            continue
        lo = floor()
        while last_chance and last_chance[0][0] < lo:
            j = heapq.heappop(last_chance)[1]
            if quic[j] is not None:  # a QUIC page of its own
                place(j, alone=True)
        while by_start and quic[by_start[0][1]] is None:
            heapq.heappop(by_start)
        w = min(lo, by_start[0][0] if by_start else math.inf, q_floor[0])
        while ready and ready[0][0] < w:
            yield dataclasses.replace(heapq.heappop(ready)[-1], index=n)
            n += 1
    # no TCP page left to join: each QUIC page stands alone, given once none still to come
    # starts before it
    while True:
        while by_start:
            j = heapq.heappop(by_start)[1]
            if quic[j] is not None:
                place(j, alone=True)
        while ready and ready[0][0] < q_floor[0]:
            yield dataclasses.replace(heapq.heappop(ready)[-1], index=n)
            n += 1
        if not take_one():
            break
    while ready:
        yield dataclasses.replace(heapq.heappop(ready)[-1], index=n)
        n += 1


_QUIC_NOTE = ("QUIC (HTTP/3 over UDP): RTT from its ACK frames (RFC 9002 §5), its own loss recovery not "
              "counted (loss_share unknown)")
_QUIC_NO_RTT_NOTE = ("QUIC (HTTP/3 over UDP): no RTT and no loss recovery seen (its ACK frames are in encrypted "
                     "packets and its handshake's Initial packets are not in the capture): rtt_s and loss_share "
                     "unknown")
_QUIC_NO_RTT_CUT_NOTE = ("QUIC (HTTP/3 over UDP): no RTT and no loss recovery seen (its ACK frames are in packets "
                         "the capture's snapshot length cut): rtt_s and loss_share unknown")
_QUIC_LOSS_NOTE = ("QUIC (HTTP/3 over UDP): RTT from its ACK frames (RFC 9002 §5); loss_wait_s from its loss "
                   "recovery (RFC 9002 §6): the time bytes re-sent in STREAM/CRYPTO frames waited on the critical "
                   "path, as TCP's retransmissions")
_QUIC_NOTES = (_QUIC_NOTE, _QUIC_LOSS_NOTE, _QUIC_NO_RTT_NOTE, _QUIC_NO_RTT_CUT_NOTE)


@dataclasses.dataclass(frozen=True, slots=True)
class _QuicLossView:
    """A QUIC connection's retransmissions through the fields :func:`qoe.web._pagemodel._path_wait`
    reads of a TCP connection: ``retransmission_events`` (``original_ts_ns``, ``ts_ns``,
    ``spurious``) and each direction's ``stall_intervals`` (none: a tail lost before the capture
    point is a retransmission here, ``qoe.web._quicloss``)."""

    retransmission_events: tuple[Any, ...]
    client: Any = dataclasses.field(default_factory=lambda: _NoStalls())
    server: Any = dataclasses.field(default_factory=lambda: _NoStalls())


@dataclasses.dataclass(frozen=True, slots=True)
class _NoStalls:
    stall_intervals: tuple[tuple[int, int], ...] = ()


def _quic_rtt(p: Page, conns: list[Any], opts: WebOptions) -> Page:
    """A QUIC page's RTT, loss and diagnosis from its connections' ACK frames (``qoe.web.quic``).

    RTT (RFC 9002 §5): ``rtt_s`` the median of their ``smoothed_rtt``, ``rtt_min_s`` the least
    ``min_rtt``, the baseline ``rtt_min_s`` (or ``WebOptions.base_rtt_s``); the round trips as
    counted on the page's critical path. Loss (RFC 9002 §6, ``QuicConnection.client_loss`` and
    ``server_loss``): on the same footing as TCP's, ``loss_wait_s`` is the union of the
    intervals ``[original_ts_ns, ts_ns]`` of the non-spurious retransmissions (bytes a sender
    sent again in STREAM or CRYPTO frames: TCP's retransmitted segments) on the connections of
    the page's critical path, cut to each item's interval (:func:`qoe.web._pagemodel._path_wait`);
    ``loss_share`` the wait over the PLT's increase above ``round_trips × rtt_baseline_s``;
    ``retransmissions`` the packets that carried bytes again. Without keys the ACK frames of the
    1-RTT packets are hidden: ``loss_share`` NaN."""

    est = sorted(c.smoothed_rtt_ns for c in conns if c.smoothed_rtt_ns is not None)
    if not est:  # (only connections joined in progress without keys: no ACK frame in clear)
        return dataclasses.replace(p, rtt_s=math.nan, rtt_share=math.nan, loss_share=math.nan)
    n = len(est)
    rtt = (est[(n - 1) // 2] + est[n // 2]) / 2 / 1e9
    rtt_min = min(c.min_rtt_ns for c in conns if c.min_rtt_ns is not None) / 1e9
    baseline, name = (opts.base_rtt_s, "given") if opts.base_rtt_s is not None else (rtt_min, "page minimum")
    views = {c.index: _QuicLossView((*c.client_loss.retransmission_events, *c.server_loss.retransmission_events))
             for c in conns if c.client_loss is not None and c.server_loss is not None}
    if not views or len(views) < len(conns) or not p.transactions:
        label, comp, rtt_share, _ = _diagnose(p.plt_s, p.round_trips, rtt, baseline, 0.0, opts.share)
        return dataclasses.replace(p, rtt_s=rtt, rtt_min_s=rtt_min, rtt_baseline_s=baseline, rtt_baseline=name,
                                   rtt_component_s=comp, loss_wait_s=0.0, diagnosis=label, rtt_share=rtt_share,
                                   loss_share=math.nan)
    wait = _path_wait(_critical_path(_http_items(p.transactions)), views) / 1e9
    retrans = sum(len({(e.space, e.packet_number) for e in v.retransmission_events}) for v in views.values())
    label, comp, rtt_share, loss_share = _diagnose(p.plt_s, p.round_trips, rtt, baseline, wait, opts.share)
    return dataclasses.replace(p, rtt_s=rtt, rtt_min_s=rtt_min, rtt_baseline_s=baseline, rtt_baseline=name,
                               rtt_component_s=comp, retransmissions=retrans, loss_wait_s=wait, diagnosis=label,
                               rtt_share=rtt_share, loss_share=loss_share)


def _merge(a: Page, b: Page, opts: WebOptions) -> Page:
    """One page of two pages of the same load (its TCP and its QUIC connections).

    Start, main document, TTFB and start event from the one that began first; end the later
    last byte; counts, bytes and objects summed; ``onload_s`` from all the objects
    (:func:`qoe.web._pagemodel.onload_end_ns`, NaN when either page's objects are hidden). The
    seed paper's diagnosis stays the TCP connections' (their round trips, RTT and waits,
    :mod:`qoe.web._pagemodel`) with the shares taken over the whole PLT; a note says so.
    """

    first, other = (a, b) if (a.start_ns, a.index) <= (b.start_ns, b.index) else (b, a)
    tcp = b if any(n in a.notes for n in _QUIC_NOTES) else a  # the one with TCP facts
    start, end = first.start_ns, max(a.end_ns, b.end_ns)
    plt = (end - start) / 1e9
    txns = tuple(sorted((*a.transactions, *b.transactions),
                        key=lambda t: (t.request_start_ns if t.request_start_ns is not None else end, t.connection)))
    onload = math.nan
    if math.isfinite(a.onload_s) and math.isfinite(b.onload_s):
        loaded = onload_end_ns(txns)
        onload = (loaded - start) / 1e9 if loaded is not None else math.nan
    label, rtt_comp, rtt_share, loss_share = _diagnose(plt, tcp.round_trips, tcp.rtt_s, tcp.rtt_baseline_s,
                                                       tcp.loss_wait_s, opts.share)
    b_ = _custom_bounds(opts)
    notes = [*first.notes, *other.notes]
    notes = [x for x in notes if x not in _QUIC_NOTES]
    notes.append("TCP and QUIC connections of one load: the diagnosis counts the TCP connections' round "
                 "trips, RTT and waits only (QUIC's loss recovery is its own)")
    protocols = sorted({x for p in (a, b) for x in p.protocol.split("; ") if x})
    return dataclasses.replace(
        first, end_ns=end, plt_s=plt, onload_s=onload, objects=a.objects + b.objects,
        connections=a.connections + b.connections, new_connections=a.new_connections + b.new_connections,
        bytes=a.bytes + b.bytes, protocol="; ".join(protocols), rtt_s=tcp.rtt_s, rtt_min_s=tcp.rtt_min_s,
        rtt_baseline_s=tcp.rtt_baseline_s, rtt_baseline=tcp.rtt_baseline, round_trips=tcp.round_trips,
        rtt_component_s=rtt_comp, retransmissions=a.retransmissions + b.retransmissions,
        loss_wait_s=tcp.loss_wait_s, diagnosis=label, rtt_share=rtt_share, loss_share=loss_share,
        mos=_mos(plt, opts.preset, b_), complete=a.complete and b.complete,
        statuses=tuple(t.status for t in txns if t.status is not None), notes=tuple(dict.fromkeys(notes)),
        transactions=txns)


@dataclasses.dataclass(frozen=True, slots=True)
class _QuicAsTls:
    """A QUIC connection seen through the fields page grouping reads of a TLS session
    (:mod:`qoe.web._pagemodel`): its start (the client's first Initial) and, as the end of its
    item, the server's last packet of data (:func:`_quic_activity_end_ns`: the page's "fully
    loaded" time from the connection's activity, without keys); no first application byte (no TTFB)."""

    connection: int
    client: tuple[str, int]
    server_name: str | None
    client_hello_ns: int | None
    connection_start_ns: int
    handshake_end_ns: int | None
    server_first_app_data_ns: int | None
    server_bytes: int
    complete: bool
    alpn_offered: tuple[str, ...] = ()
    alpn: str | None = None
    server_hello_ns: int | None = None
    error: str | None = None
    version: int = 0x0304  # QUIC's handshake is TLS 1.3's (RFC 9001 §4): one round trip
    version_name: str = "QUIC"
    client_last_byte_ns: int | None = None  # (its end is the server's last packet of data, above)
    server_last_byte_ns: int | None = None
    # until when the client held it open (qoe.web._pagemodel.starts_other_page): its last packet,
    # its CONNECTION_CLOSE or the last before its idle timeout (RFC 9000 §10), in clear or not
    held_until_ns: float = -1
    opaque: str | None = None  # decrypted, not HTTP/3: why (qoe.web._pagemodel._Item.opaque)
    # decrypted HTTP/3 that carried no request: opened ahead (a preconnect, as a TCP one decrypted
    # with no request inside), its end its handshake's (qoe.web._pagemodel._tls_items)
    unused: bool = False
    ech_offered: bool = False  # (QuicConnection.ech_offered: the page's note on ECH, as over TCP)
    cut_packets: int = 0  # (QuicConnection.cut_packets: the snapshot length cut them, not opened)


def _quic_as_tls(c: Any) -> _QuicAsTls:
    """A QUIC connection without transactions as one item: without keys, its objects not
    visible; decrypted, either another protocol than HTTP/3 (``opaque``) or HTTP/3 that carried
    no request (``unused``: a connection opened ahead)."""
    from qoe.web.quic import speaks_h3  # noqa: PLC0415 - loaded already: the connections are its

    h3 = speaks_h3(c.alpn)
    unused = c.decrypted and h3 and c.handshake_end_ns is not None
    return _QuicAsTls(c.index, c.client, c.server_name, c.client_initial_ns, c.first_ns,
                      c.handshake_end_ns if unused else _quic_activity_end_ns(c),
                      None, c.server_bytes, c.handshake_end_ns is not None, c.alpn_offered, c.alpn,
                      c.server_initial_ns, held_until_ns=c.last_ns,
                      error="joined in progress: its handshake is not in the capture" if c.joined_in_progress else None,
                      opaque=f"ALPN {c.alpn!r} is not HTTP/3" if c.decrypted and c.alpn and not h3 else None,
                      unused=unused, ech_offered=c.ech_offered, cut_packets=c.cut_packets)


def _quic_activity_end_ns(c: Any) -> int:
    """Where an encrypted QUIC connection's objects end, without keys: the server's last 1-RTT
    packet larger than an acknowledgement (``QuicConnection.server_last_data_ns``,
    ``qoe.web.quic.ACK_SIZED_BYTES``).

    Past the last response a server still sends ACK-only packets (acknowledging the client's
    ACKs of the response, its HTTP/3 control stream, its CONNECTION_CLOSE), PINGs and PTO probes
    (RFC 9002 §6.2.4): the end of its last burst ran 8.0-53.7 ms past the decrypted page's last
    byte on data/web/browser's idle, delay, loss and downlink-load loads, 724 ms on the uplink-
    load one. Without a packet of data (a connection that only shook hands), the end of the
    server's last burst, else its last packet; a connection joined in progress (its handshake
    before the capture) without one carried no object the capture holds: its first packet.
    """
    if c.server_last_data_ns is not None:
        return int(c.server_last_data_ns)
    if c.joined_in_progress:
        return int(c.first_ns)  # joined in progress, no packet of data since: no object in the capture
    return max([b.end_ns for b in c.bursts if b.direction == "server"] or [c.last_ns])


def _quic_page_stream(capture: Any, opts: WebOptions, keys: Any) -> Iterator[tuple[Page | None, float]]:
    """Pages of the capture's QUIC connections (:func:`_session_pages`) as they become final,
    each client's in order of start, with a floor after each (``None`` and the floor when it
    rises alone): no QUIC page still to come starts before it.

    The connections come as they are given (idle 30 s or the capture's end,
    :func:`qoe.web.quic._final_connections`, with the floor of their first packets: none still to
    come began before it). A client's connections given so far make whole pages once the floor
    is more than ``idle_gap_s`` past the end of their last item: any later item of the client
    starts (and is active) after that, so it starts a page of its own in
    :func:`qoe.web._pagemodel._group` whatever came before, and these pages are the ones the
    whole capture's items would give. A page starts no earlier than its connections' first
    packet less ``idle_gap_s`` (a DNS query before it), so the floor of the pages still to
    come is the lower of the connections' floor and the first packets of those held, less the
    gap. What is held: the connections of each client's current load and those not given yet,
    not the capture's pages. In a capture whose timestamps go backwards (a damaged file, clocks
    of merged captures), a connection may begin before a floor already given: its pages are
    made apart from those of its client made before (as the TCP pages' caveat,
    ``qoe.web._stream``)."""
    from qoe.web.quic import _final_connections  # noqa: PLC0415 - aioquic, only when a capture holds QUIC

    gap = int(round(opts.idle_gap_s * 1e9))
    queries: dict[str, list[DnsQuery]] = {}
    for q in dns_queries(capture):
        queries.setdefault(q.client, []).append(q)
    held: dict[str, list[Any]] = {}  # client -> its connections given, their pages not made yet
    busy: dict[str, int] = {}  # client -> the end of the last of their items
    first: dict[str, int] = {}  # client -> the earliest first packet among them
    looked = -math.inf  # the floor the held clients were last looked at with
    for conn, floor in _final_connections(capture, keys, opts.read_ahead):
        if conn is not None:
            client = conn.client[0]
            held.setdefault(client, []).append(conn)
            ends = [it.end_ns for it in _http_items(conn.transactions)] if conn.transactions else \
                [it.end_ns for it in _tls_items((_quic_as_tls(conn),), {})]
            busy[client] = max(busy.get(client, -1), *ends)
            first[client] = min(first.get(client, conn.first_ns), conn.first_ns)
        if floor <= looked:
            continue  # (a client's pages become whole only as the floor rises: not per connection)
        looked = floor
        for client in sorted((c for c, e in busy.items() if e + gap < floor), key=first.__getitem__):
            conns = held.pop(client)
            del busy[client], first[client]
            for p in _session_pages(conns, opts, queries.get(client, [])):
                yield p, -math.inf
        yield None, min([floor, *first.values()]) - gap


def _session_pages(conns: list[Any], opts: WebOptions, queries: list[DnsQuery]) -> list[Page]:
    """Pages of QUIC connections ``conns`` (of one client, or all): their HTTP/3 transactions
    when decrypted, else each connection as a TLS-like item (handshake timing, bytes; objects
    not visible); ``queries``: the DNS queries a page may start at."""
    txs = [t for c in conns for t in c.transactions]
    # (a connection joined in progress that sent no packet of data in the capture carried no
    # object it holds, its close perhaps: as a TCP connection that carried no byte, no item)
    hidden = [_quic_as_tls(c) for c in conns
              if not c.transactions and not (c.joined_in_progress and c.server_last_data_ns is None)]
    pages = build_pages(txs, tls=hidden, dns=queries, options=opts)
    first_of = {c.index: c.client_initial_ns for c in conns}
    by_index = {c.index: c for c in conns}

    # the connections without keys by their client and ClientHello's time: a page holds its
    # client's in its span (looked up by bisection: one pass over all of them per page was
    # quadratic in a capture of many keyless QUIC page loads; another client's connections
    # in the span are not the page's)
    hellos: dict[str, list[tuple[int, int]]] = {}
    for h in hidden:  # (a connection joined in progress has no Initial: its first packet)
        start = h.client_hello_ns if h.client_hello_ns is not None else h.connection_start_ns
        hellos.setdefault(h.client[0], []).append((start, h.connection))
    for row in hellos.values():
        row.sort()

    def used_by(p: Page) -> set[int]:  # its transactions' connections, or (no keys) those it holds
        mine = hellos.get(p.client, [])
        lo = bisect.bisect_left(mine, (p.start_ns, -1))
        hi = bisect.bisect_right(mine, (p.end_ns, math.inf))
        return {t.connection for t in p.transactions} | {c for _, c in mine[lo:hi]}

    out = []
    for p in pages:
        used = [by_index[i] for i in sorted(used_by(p)) if i in by_index]
        # a decrypted page starts at its connection's first Initial (the SYN of QUIC), unless a
        # DNS query came first (the same rule as a TCP page's SYN)
        main = p.transactions[0] if p.transactions else None
        initial = first_of.get(main.connection) if main is not None and main.sequence == 0 else None
        if initial is not None and p.start_event == "request" and initial < p.start_ns:
            plt = (p.end_ns - initial) / 1e9
            ttfb = (main.response_start_ns - initial) / 1e9 if main.response_start_ns is not None else p.ttfb_s
            onload = p.onload_s + (p.start_ns - initial) / 1e9
            p = dataclasses.replace(p, start_ns=initial, start_event="quic-initial", plt_s=plt, onload_s=onload,
                                    ttfb_s=ttfb,
                                    mos=_mos(plt, opts.preset, _custom_bounds(opts)))
        p = _quic_rtt(p, used, opts)
        notes = list(p.notes)
        notes = [n for n in notes if not n.startswith("no TCP facts")]
        no_rtt = _QUIC_NO_RTT_CUT_NOTE if any(c.cut_packets for c in used) else _QUIC_NO_RTT_NOTE
        notes.append(no_rtt if math.isnan(p.rtt_s) else _QUIC_NOTE if math.isnan(p.loss_share)
                     else _QUIC_LOSS_NOTE)
        notes.extend(sorted({c.note for c in used if c.note}))  # what its own connections could not show
        out.append(dataclasses.replace(p, notes=tuple(dict.fromkeys(notes))))
    return out
