"""Page loads of the real captures in data/web (made by data/web/make_samples.sh: curl and wget
fetching the seed paper's page from Python HTTP servers through the tbf testbed, idle and under
up- or downlink bulk TCP load), checked against the clients' own timing and tshark's HTTP view,
both stored next to each capture (data/web/captures/manifest.json says which command made what).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from qoe.web import page_loads

CAPS = Path(__file__).resolve().parents[2] / "data" / "web" / "captures"
MANIFEST = CAPS / "manifest.json"
pytestmark = pytest.mark.skipif(not MANIFEST.is_file(), reason="data/web not present")
SCENARIOS = json.loads(MANIFEST.read_text())["scenarios"] if MANIFEST.is_file() else []


@pytest.fixture(scope="module")
def found():
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sc in SCENARIOS:
            out[sc["scenario"]] = page_loads(CAPS / sc["client_capture"])
    return out


def _curl_plt(load: dict) -> tuple[float, float]:
    """(start, end) of a curl run, from its -w figures: each object's start_epoch + time_total."""
    objs = load["client_timing"]["objects"]
    return objs[0]["start_epoch"], max(o["start_epoch"] + o["time_total"] for o in objs)


@pytest.mark.parametrize("sc", [s for s in SCENARIOS if s["client"] == "curl"], ids=lambda s: s["scenario"])
def test_plt_equals_curls_own_timing(found, sc):
    """curl's own clock (the -w timings) and the capture agree within 5 ms (curl starts
    a little before its first packet: name resolution set-up)."""
    pages = found[sc["scenario"]]
    assert len(pages) == len(sc["page_loads"])
    for page, load in zip(pages, sc["page_loads"]):
        start, end = _curl_plt(load)
        assert page.plt_s == pytest.approx(end - start, abs=0.005)
        assert page.end_ns / 1e9 == pytest.approx(end, abs=0.005)


@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda s: s["scenario"])
def test_transactions_and_statuses_equal_tshark(found, sc):
    """HTTP: every response tshark shows (-o tcp.reassemble_out_of_order:TRUE -Y http.response)
    is a transaction of the page, with the same status; PLT equals the capture's first
    DNS query or SYN to the last response frame (tshark's times) within 2 ms."""
    for page, load in zip(found[sc["scenario"]], sc["page_loads"]):
        cap = load["capture"]
        assert page.plt_s == pytest.approx(cap["plt_s"], abs=0.002)
        if sc["tls"]:
            assert page.scheme == "https" and page.objects == cap["tcp_connections"]
            continue
        assert page.objects == cap["responses"] and list(page.statuses) == cap["response_codes"]
        assert page.start_event == ("dns" if cap["dns_queries"] else "syn")


def _label(found, name):
    (page,) = found[name]
    return page.diagnosis


def test_the_paper_figure_10_reasoning(found):
    """Seed paper §9.2: uplink load with a big buffer makes page loads RTT-dominated (bufferbloat),
    a small buffer loss-dominated; downlink load on a small buffer, loss-dominated."""
    for name in ("http11-up-b64-curl", "http11-up-b64-wget", "http10-up-b64-wget", "http11-up-b64-wget-dns"):
        assert _label(found, name) == "rtt-dominated"
    for name in ("http11-up-b8-curl", "http11-up-b8-wget", "https11-up-b8-curl", "http11-up-b8p-curl",
                 "http11-up-b8p-wget", "http11-down-b8-curl"):
        assert _label(found, name) == "loss-dominated"
    for sc in SCENARIOS:
        if sc["load"] == "none":
            (page,) = found[sc["scenario"]][:1]
            assert page.loss_wait_s < 0.05 and page.mos == 5.0  # an idle testbed: 50 ms pages
