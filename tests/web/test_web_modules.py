"""qoe.web's modules: no import cycle between them, and the public surface (issue 21).

The cycle check reads every import statement of the package's modules (function-level ones
included) with ``ast``: an import cycle inside a package is what issue 21 asked to end
(``_stream`` <-> ``pages`` was one).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import qoe.web
import qoe.web.http
from qoe.errors import InputError
from qoe.web.http import parse
from qoe.web.tcp import CLIENT, ConnectionId

PKG = Path(qoe.web.__file__).parent


def _graph() -> dict[str, set[str]]:
    mods = {("qoe.web." + p.stem if p.stem != "__init__" else "qoe.web"): p for p in PKG.glob("*.py")}
    graph = {}
    for name, path in mods.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    deps.add(full if full in mods else node.module)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        graph[name] = {d for d in deps if d in mods and d not in (name, "qoe.web")}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (as a path), or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for d in sorted(graph[node]):
            if state.get(d) == 1:
                return [*path[path.index(d):], d]
            if d not in state:
                found = visit(d, [*path, d])
                if found:
                    return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start, [start])
            if found:
                return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_inside_qoe_web():
    graph = _graph()
    assert len(graph) >= 15 and "qoe.web._dispatch" in graph["qoe.web._stream"]
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


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
