"""The result records of a page-load pass behave as their classes' own constructors make them.

Connections, directions, transactions and pages are built on the hot path without the frozen
dataclass ``__init__`` (``qoe._records``); here every record of a real capture is compared
with the one its class builds from the same field values: equal, same ``repr``, still frozen.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from qoe.web import page_loads
from qoe.web.tcp import connections

CAPTURE = Path(__file__).resolve().parents[2] / "data" / "web" / "captures" / "http11-up-b8-curl_client.pcap"


def _rebuilt(obj):
    return type(obj)(**{f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})


def test_connections_and_directions_equal_their_constructors():
    conns = connections(CAPTURE)
    assert conns
    for c in conns:
        for rec in (c, c.client, c.server):
            assert rec == _rebuilt(rec) and repr(rec) == repr(_rebuilt(rec))
            with pytest.raises(dataclasses.FrozenInstanceError):
                rec.packets = 0  # type: ignore[misc]
        assert c.client.rtt.count == _rebuilt(c.client.rtt).count


def test_pages_and_transactions_equal_their_constructors():
    pages = page_loads(CAPTURE)
    assert pages and all(p.transactions for p in pages)
    assert [p.index for p in pages] == list(range(len(pages)))  # the index set on the way out
    for p in pages:
        assert p == _rebuilt(p) and repr(p) == repr(_rebuilt(p))
        for t in p.transactions:
            assert t == _rebuilt(t) and repr(t) == repr(_rebuilt(t))
            with pytest.raises(dataclasses.FrozenInstanceError):
                t.status = 0  # type: ignore[misc]
