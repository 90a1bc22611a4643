"""Web browsing: G.1030 page-load-time → MOS, and (later) page loads from captures."""

from __future__ import annotations

from qoe.web import g1030  # noqa: F401
