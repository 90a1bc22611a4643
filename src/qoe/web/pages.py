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
  after the last byte of everything before it; a TLS connection also does when its server
  name differs from the page's and the page is not loading any more.
* PLT ("fully loaded") runs from the page's first event — its first DNS query for the main
  host (within ``idle_gap_s`` before), else the SYN of its first connection when that
  connection was opened for it, else its first request byte — to the last byte of its last
  object. A capture cannot see the browser's ``onLoad`` event: this is the time the
  network needed, which is what the seed paper measured (§9.1).

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

import gc
import os
from collections.abc import Iterator
from typing import Any

from qoe.web._dns import DnsQuery, dns_queries, iter_dns_queries
from qoe.web._pagemodel import DEFAULT_IDLE_GAP_S, Page, WebOptions, _custom_bounds, _mos, _resolve, build_pages
from qoe.web.har import pages_from_har, to_har_pages

__all__ = ["Page", "WebOptions", "DnsQuery", "build_pages", "page_loads", "iter_page_loads", "pages_from_har",
           "to_har_pages", "dns_queries", "iter_dns_queries", "DEFAULT_IDLE_GAP_S"]


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
    back the pages that start after it opened until it closes (``qoe.web._stream``).

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
    return _iter_page_loads(capture, _resolve("iter_page_loads", options, deprecated), limits)


def _iter_page_loads(capture: str | os.PathLike[str], opts: WebOptions, limits: Any) -> Iterator[Page]:
    # TCP reassembly, the parsers (h11) and the capture readers load when a capture is read:
    # qoe.web.pages (which the CLI and qoe.score import for WebOptions) stays light
    from qoe.web._stream import stream_pages  # noqa: PLC0415
    from qoe.web.tcp import TcpLimits, iter_connections  # noqa: PLC0415

    b = _custom_bounds(opts)
    _mos(1.0, opts.preset, b)  # the preset or bounds are checked where they are used, now
    limits = limits if limits is not None else TcpLimits()
    iter_connections(capture, limits=limits)  # checks the limits and the file now, reads nothing
    return stream_pages(capture, gap=int(round(opts.idle_gap_s * 1e9)), preset=opts.preset, bounds=b,
                        share=opts.share, limits=limits, base_rtt=opts.base_rtt_s)
