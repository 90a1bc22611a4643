"""HAR files qoe did not make: browsertime's of real page loads (data/web/external/browsertime:
Chrome 49 through browsertime's HAR conversion and Firefox 45's own export, sitespeed.io's pages
over HTTP/2 and HTTP/1.1, March 2016; fetch.sh beside them says where from).

The reference is each file's own JSON, read here with the standard library: its pages'
``startedDateTime`` and ``pageTimings``, its entries' URLs, statuses and ``httpVersion``.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from qoe.web.har import pages_from_har, read_har

HARS = Path(__file__).resolve().parents[2] / "data" / "web" / "external" / "browsertime"
NAMES = sorted(p.name for p in HARS.glob("*.har"))
#: httpVersion as these browsers wrote it -> the version qoe keeps (an ALPN id as the version it
#: names, RFC 9113 §1: "HTTP/2"; "HTTP/x" without its prefix) and the ALPN protocol id (RFC 7301
#: §6) a page's ``protocol`` names
VERSIONS = {"h2": ("2", "h2"), "HTTP/2.0": ("2.0", "h2"), "http/1.1": ("1.1", "http/1.1"),
            "HTTP/1.1": ("1.1", "http/1.1")}


def epoch_ns(text: str) -> int:
    t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int(t.timestamp()) * 10**9 + t.microsecond * 1000


def test_there_are_four():
    assert NAMES == ["chrome-h2-har-with-diskcache.har", "chrome-har-with-diskcache.har",
                     "firefox-h2-har-with-diskcache.har", "firefox-har-with-diskcache.har"]


@pytest.mark.parametrize("name", NAMES)
def test_pages_and_entries_are_read_as_the_file_has_them(name):
    raw = json.loads((HARS / name).read_text())["log"]
    log = read_har(HARS / name)
    (page,) = raw["pages"]
    (hp,) = log.pages
    assert hp.started_ns == epoch_ns(page["startedDateTime"])
    assert hp.on_load_ms == pytest.approx(page["pageTimings"]["onLoad"], abs=1e-9)
    entries = raw["entries"]
    assert len(log.transactions) == len(hp.transactions) == len(entries)
    assert sorted(t.url for t in log.transactions) == sorted(e["request"]["url"] for e in entries)
    assert sorted(t.status for t in log.transactions) == sorted(e["response"]["status"] for e in entries)
    by_url = {e["request"]["url"]: e for e in entries}
    for t in log.transactions:
        version, alpn = VERSIONS[by_url[t.url]["response"]["httpVersion"]]
        assert t.response_version == version and t.protocol == alpn
        assert t.started_ns == epoch_ns(by_url[t.url]["startedDateTime"])


@pytest.mark.parametrize("name", NAMES)
def test_the_page_is_the_browsers(name):
    """One page: PLT the browser's onLoad, its URL the document requested at the page's start
    (not an entry that started earlier: Chrome's h2 file has an image 249 ms before its page),
    its protocols those of its entries."""
    raw = json.loads((HARS / name).read_text())["log"]
    (page,) = raw["pages"]
    (p,) = pages_from_har(read_har(HARS / name))
    assert p.plt_s == pytest.approx(page["pageTimings"]["onLoad"] / 1e3, abs=1e-12)
    start = epoch_ns(page["startedDateTime"])
    document = min((e for e in raw["entries"] if epoch_ns(e["startedDateTime"]) >= start),
                   key=lambda e: epoch_ns(e["startedDateTime"]))
    assert p.url == document["request"]["url"] and p.start_ns == start
    assert p.protocol == "; ".join(sorted({VERSIONS[e["response"]["httpVersion"]][1] for e in raw["entries"]}))
    assert p.objects == len(raw["entries"]) and "PLT is the HAR's pageTimings.onLoad" in p.notes
