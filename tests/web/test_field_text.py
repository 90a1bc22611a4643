"""A page's repeated header fields are held once (``qoe.web._fieldtext``).

A browser sends the same names and mostly the same values on every request; decoded one by
one, each transaction held its own copy of each (on copies of Chromium's HTTP/3 load, 161 kB
of the 227 kB a decrypted load held until its pages were made). Checked on Chromium's loads
over HTTP/1.1 in clear, HTTP/2 and HTTP/3 decrypted (data/web/browser): the same field line
of two requests is one object, so a page's fields cost what its distinct lines do.
"""

from __future__ import annotations

import tracemalloc
import warnings
from pathlib import Path

import pytest

from qoe.web import WebOptions, page_loads

CAPTURES = Path(__file__).resolve().parents[2] / "data" / "web" / "browser" / "captures"
pytestmark = pytest.mark.skipif(not CAPTURES.is_dir(), reason="data/web/browser/captures not present")


def _page(name: str, keys: bool):
    cap = CAPTURES / f"{name}.pcap"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return page_loads(cap, options=WebOptions(keylog=str(cap.with_suffix(".keylog")) if keys else None))[0]


@pytest.mark.parametrize(("name", "keys"), [("h1-idle", False), ("h2-idle", True), ("h3-idle", True)])
def test_the_same_field_line_is_one_object(name, keys):
    p = _page(name, keys)
    agents = [line for t in p.transactions for line in t.request_headers if line[0].lower() == "user-agent"]
    assert len(agents) == len(p.transactions) == 41
    assert len({id(line) for line in agents}) == 1 and len({id(v) for _, v in agents}) == 1
    # every line of every request and response: far fewer distinct objects than lines
    lines = [line for t in p.transactions for line in (*t.request_headers, *t.response_headers)]
    assert len({id(line) for line in lines}) < len(lines) / 2


def test_a_decrypted_http3_load_holds_its_fields_once():
    """Traced: what the page of a decrypted HTTP/3 load holds (its 41 transactions), its
    distinct field lines already cached as after a capture's first load, is well under what
    one string per field line cost (measured 156 kB before, 41 kB after)."""
    _page("h3-idle", True)  # the libraries' imports and first-use tables are not the load's
    tracemalloc.start()
    try:
        p = _page("h3-idle", True)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert p.objects == 41 and held < 80_000, held
