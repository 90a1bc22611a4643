"""A page load as a waterfall: each object's request, wait and transfer, by connection.

What a browser's developer tools draw, from the capture: one row per object of a
:class:`qoe.web.Page` (an HTTP/1.x, HTTP/2 or HTTP/3 transaction; HTTPS needs the key log),
in order of request, on the time axis of the page (0 is its start: the first DNS query,
SYN, QUIC Initial or request, as :attr:`qoe.web.Page.start_event` says). Per object:

* *connect*: on the object that opened its connection, the connection's first packet (its
  SYN, or QUIC's Initial) to the request (the TCP handshake, and TLS when there is one);
* *waiting*: the request's first byte to the response's first byte (the object's TTFB,
  one round trip and the server's time, plus any queue on the path);
* *receiving*: the response's first byte to its last byte.

The page's two load times are vertical lines: "fully loaded" (:attr:`~qoe.web.Page.plt_s`,
the last byte of the last object) and the onload estimate (:attr:`~qoe.web.Page.onload_s`,
when known). Objects share their connection's colour, so that head-of-line blocking on a
connection, and the wait for a connection under a full buffer (the seed paper's
bufferbloat, §9), show as they do in the browser's waterfall.

References
----------
.. [1] W3C, "Resource Timing Level 2" (the phases: connectStart, requestStart,
   responseStart, responseEnd), and "Navigation Timing Level 2" (loadEventEnd).
.. [2] C. Pujol et al., "A QoE Perspective on Sizing Network Buffers", ACM IMC 2014, §9.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from qoe.errors import InputError
from qoe.plot._mpl import new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["page_waterfall", "WATERFALL_PHASES"]

_NS = 1e9
#: The bars of each object, as their ``gid`` names them in the figure, in the order they follow each other on its row.
WATERFALL_PHASES = ("connect", "waiting", "receiving")
# connection colours: matplotlib's tab10, cycled
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
            "#17becf")
_LABEL_CHARS = 48
_EVENTS = {"dns": "DNS query", "syn": "SYN", "request": "request", "client-hello": "ClientHello",
           "quic-initial": "QUIC Initial", "har": "HAR page start"}


def _start(t: Any) -> int | None:
    return t.request_start_ns if t.request_start_ns is not None else t.response_start_ns


def _drawable(page: Any) -> bool:
    """Whether :func:`page_waterfall` has an object of ``page`` to draw (one with a request
    or response time; an HTTPS page without its key log has none)."""
    return any(_start(t) is not None for t in page.transactions)


def _label(t: Any) -> str:
    """``status method path`` of a transaction, shortened from the left of its path."""
    url = t.url or t.target or "?"
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if len(path) > _LABEL_CHARS:
        path = "…" + path[-(_LABEL_CHARS - 1):]
    return f"{t.status if t.status is not None else '---'} {t.method or ''} {path}".strip()


def page_waterfall(page: Any, *, title: str | None = None, max_objects: int = 150) -> Figure:
    """The waterfall of one page load's objects (see the module).

    Parameters
    ----------
    page : qoe.web.Page
        From :func:`qoe.web.page_loads` or :func:`qoe.score` (``kind="web"``).
    title : str, optional
        Default: the page's URL, PLT, MOS and the seed paper's diagnosis.
    max_objects : int, default 150
        Objects drawn at most (the first ones requested); the title says how many were left out.

    Returns
    -------
    matplotlib.figure.Figure
        One horizontal bar per phase of each object (their ``gid`` is the phase's name in
        :data:`WATERFALL_PHASES`; a phase whose times the capture did not give is not
        drawn), seconds since the page's start; the first object on top.

    Raises
    ------
    InputError
        The page has no object with a request or response time (HTTPS without its key
        log: only the connections' activity is known), or ``max_objects`` is not a
        positive integer.
    """
    if isinstance(max_objects, bool) or not isinstance(max_objects, int) or max_objects < 1:
        raise InputError(f"max_objects must be a positive integer, given {max_objects!r}")
    objects = sorted((t for t in page.transactions if _start(t) is not None), key=lambda t: (_start(t), t.connection))
    if not objects:
        raise InputError(f"page {page.index} ({page.url}): no object with a request or response time to draw "
                         "(HTTPS without the browser's key log shows its connections only: give keylog=)")
    left_out = len(objects) - max_objects
    objects = objects[:max_objects]
    t0 = page.start_ns
    colour = {c: _COLOURS[k % len(_COLOURS)] for k, c in enumerate(dict.fromkeys(t.connection for t in objects))}
    fig = new_figure(figsize=(10, 1.6 + 0.22 * len(objects)))
    ax = fig.subplots()
    for row, t in enumerate(objects):
        c = colour[t.connection]
        req, first, last = t.request_start_ns, t.response_start_ns, t.response_end_ns
        spans = []
        if not t.reused and t.connection_start_ns is not None and req is not None and t.connection_start_ns < req:
            spans.append(("connect", t.connection_start_ns, req, dict(color="#bbbbbb")))
        if req is not None and first is not None and first >= req:
            spans.append(("waiting", req, first, dict(color=c, alpha=0.35)))
        if first is not None and last is not None and last >= first:
            spans.append(("receiving", first, last, dict(color=c)))
        for phase, a, b, style in spans:
            (bar,) = ax.barh(row, (b - a) / _NS, left=(a - t0) / _NS, height=0.7, **style)
            bar.set_gid(phase)
    ax.set_yticks(range(len(objects)), [f"#{t.connection} {_label(t)}" for t in objects], fontsize=7)
    ax.invert_yaxis()  # the first request on top, as browsers draw it
    ax.axvline(page.plt_s, color="black", lw=1, label=f"fully loaded {page.plt_s:.3f} s")
    if math.isfinite(page.onload_s):
        ax.axvline(page.onload_s, color="black", lw=1, ls="--", label=f"onload estimate {page.onload_s:.3f} s")
    ends = [(t.response_end_ns - t0) / _NS for t in objects if t.response_end_ns is not None]
    ax.set_xlim(0, max([page.plt_s, *ends]) * 1.03 or 1.0)
    event = _EVENTS.get(page.start_event, page.start_event)
    ax.set_xlabel(f"time since the page's start (s; start: its first {event})")
    ax.grid(axis="x", alpha=0.3)
    from matplotlib.patches import Patch  # noqa: PLC0415 - matplotlib is optional (the plot extra)

    handles = [Patch(color="#bbbbbb", label="connect (SYN to request)"),
               Patch(color="#7f7f7f", alpha=0.35, label="waiting (request to first byte)"),
               Patch(color="#7f7f7f", label="receiving (first to last byte)"), *ax.get_legend_handles_labels()[0]]
    fig.legend(handles=handles, loc="outside lower center", ncols=5, fontsize=7, frameon=False)
    more = f"; the first {max_objects} of {max_objects + left_out} objects" if left_out > 0 else ""
    fig.suptitle(title or (f"{page.url or page.host or page.client}: PLT {page.plt_s:.3f} s, MOS {page.mos:.2f} "
                           f"({page.diagnosis}), {page.objects} objects over {page.connections} connections{more}"),
                 fontsize=9)
    return fig
