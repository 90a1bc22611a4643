"""Web browsing from captures: TCP, HTTP/1.x and TLS, page loads, G.1030, HAR.

* :mod:`qoe.web.tcp` — TCP reassembly, RTT (handshake, Karn), retransmissions and their cost.
* :mod:`qoe.web.http` — HTTP/1.0 and 1.1 transactions (h11 framing), the per-connection sinks.
* :mod:`qoe.web.tls` — TLS handshake timing, server name, bytes (no decryption).
* :mod:`qoe.web.pages` — :func:`page_loads` (:func:`iter_page_loads`: streaming): page loads, PLT,
  the seed paper's RTT/loss diagnosis, MOS.
* :mod:`qoe.web.har` — HAR 1.2 export and import.
* :mod:`qoe.web.g1030` — ITU-T G.1030 PLT → MOS.

Submodules load lazily (``qoe.web.pages`` imports TCP reassembly and h11 only when used).
"""

from __future__ import annotations

from typing import Any

from qoe.web import g1030

__all__ = ["g1030", "page_loads", "iter_page_loads", "build_pages", "pages_from_har", "Page", "WebOptions"]


def __getattr__(name: str) -> Any:
    if name in ("page_loads", "iter_page_loads", "build_pages", "pages_from_har", "Page", "WebOptions"):
        from qoe.web import pages as _pages  # noqa: PLC0415

        return getattr(_pages, name)
    raise AttributeError(f"module 'qoe.web' has no attribute {name!r}")
