"""qoe.web's public surface (issue 21); that its modules import each other without a cycle is
checked for every package by tests/test_architecture.py."""

from __future__ import annotations

import importlib

import pytest

import qoe.web
import qoe.web.http
from qoe.errors import InputError
from qoe.web.http import parse
from qoe.web.tcp import CLIENT, ConnectionId


def test_public_names_resolve_and_plumbing_is_private():
    for name in qoe.web.__all__:
        assert getattr(qoe.web, name) is not None
    assert {"parse", "transactions", "connection_results", "Transaction"} <= set(qoe.web.http.__all__)
    for old in ("HttpSink", "ProtocolSink", "Collector", "connection_sink", "sniff", "UnknownSink"):
        assert old not in qoe.web.http.__all__
        with pytest.warns(DeprecationWarning, match=f"qoe.web.http.{old} is internal"):
            getattr(importlib.import_module("qoe.web.http"), old)


def test_parse_names_the_parsers_it_knows():
    conn = ConnectionId(("192.0.2.1", 40000), ("192.0.2.2", 80), 0, 0, True)
    with pytest.raises(InputError, match="protocol must be 'auto' or one of 'tls', 'h2', 'http'"):
        parse(conn, [], protocol="h9")
    with pytest.raises(InputError, match="kind must be 'data', 'gap' or 'close'"):
        parse(conn, [("push", CLIENT, 0, 0, b"x")])
