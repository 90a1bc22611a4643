"""Web browsing from captures: TCP, HTTP/1.x and TLS, page loads, G.1030, HAR.

* :mod:`qoe.web.tcp` — TCP reassembly, RTT (handshake, Karn), retransmissions and their cost.
* :mod:`qoe.web.http` — HTTP/1.0 and 1.1 transactions (h11 framing): :func:`~qoe.web.http.transactions`
  of a capture, :func:`~qoe.web.http.parse` of one connection's bytes; one
  :class:`~qoe.web.http.Transaction` record for every HTTP version.
* :mod:`qoe.web.tls` — TLS handshake timing, server name, bytes (no decryption).
* :mod:`qoe.web.pages` — :func:`page_loads` (:func:`iter_page_loads`: streaming): page loads, PLT,
  the seed paper's RTT/loss diagnosis, MOS; options in a :class:`WebOptions` (``options=``).
* :mod:`qoe.web.har` — HAR 1.2 export and import.
* :mod:`qoe.web.g1030` — ITU-T G.1030 PLT → MOS.

The private modules, by layer: ``_sink`` (the byte-stream contract), ``_conntrack`` and
``_delivery`` (TCP), ``_connresults``; ``_results`` (records), ``_http1`` (the HTTP/1.x parser),
``_dispatch`` (which parser a connection gets); ``_dns``, ``_pagemodel`` (grouping, PLT,
diagnosis), ``_stream`` (the streaming pass); the records' fast constructors are
:mod:`qoe._records`'s (shared with :mod:`qoe.rtp`).

Submodules load lazily: ``import qoe.web`` (for :mod:`~qoe.web.g1030` alone) does not load
the page model, HAR and report code, and :mod:`qoe.web.pages` loads TCP reassembly, the
parsers and the capture readers only when a capture is read.
"""

from __future__ import annotations

from typing import Any

from qoe.web import g1030

__all__ = ["g1030", "page_loads", "iter_page_loads", "build_pages", "pages_from_har", "Page", "WebOptions"]


def __getattr__(name: str) -> Any:
    if name in ("page_loads", "iter_page_loads", "build_pages", "pages_from_har", "Page", "WebOptions"):
        from qoe.web import pages as _pages  # noqa: PLC0415 - loaded when first used (see above)

        return getattr(_pages, name)
    raise AttributeError(f"module 'qoe.web' has no attribute {name!r}")
