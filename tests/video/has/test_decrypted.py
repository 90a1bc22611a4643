"""Manifest bodies read from decrypted TLS streams (qoe.video.has.decrypted).

HTTP/1.1 over TLS is checked end to end on the HTTPS streaming sessions
(tests/video/has/test_sessions.py, against the players' logs). The HTTP/2 path is checked
here on a real browser page load over HTTP/2 with its key log (data/web/browser/captures/
h2-idle: Debian's chromium, TLS 1.3, ALPN h2): each response body read from the decrypted
DATA frames has the size the browser's HAR gives, and is the object it claims to be (PNG
signature, JSON that parses, HTML).
"""

from __future__ import annotations

import json
from pathlib import Path

from qoe.video.has.decrypted import keylog_bodies
from qoe.web.http import transactions

ROOT = Path(__file__).resolve().parents[3]
WEB = ROOT / "data" / "web" / "browser" / "captures"
HAS = ROOT / "data" / "video" / "has" / "sessions"


def test_http2_bodies_match_the_browsers_har():
    cap, key = WEB / "h2-idle.pcap", WEB / "h2-idle.keylog"
    txs = [t for t in transactions(cap, keylog=key) if t.protocol == "h2" and t.status == 200]
    assert len(txs) >= 20
    got = keylog_bodies(cap, key)(txs)
    har = {e["request"]["url"]: e["response"]["content"]["size"]
           for e in json.loads((WEB / "h2-idle.har").read_text())["log"]["entries"]}
    checked = 0
    for k, t in enumerate(txs):
        body, whole = got[k]
        assert whole, t.url
        if t.url in har:
            assert len(body) == har[t.url], t.url
            checked += 1
        path = t.url.split("?", 1)[0]
        if path.endswith(".png"):
            assert body.startswith(b"\x89PNG\r\n\x1a\n"), t.url  # PNG signature (RFC 2083 §12.11)
        elif path.endswith(".json"):
            json.loads(body)
        elif path.endswith(".html"):
            assert b"<html" in body.lower(), t.url
    assert checked >= 20


def test_http1_over_tls_manifest_is_the_mpd_the_player_parsed():
    """The MPD decrypted from dash-tls is the presentation's manifest as make_media.sh wrote it
    (data/video/has/manifests/), byte for byte."""
    cap, key = HAS / "dash-tls.pcap.gz", HAS / "dash-tls.keylog"
    mpd = [t for t in transactions(cap, keylog=key) if t.url == "https://hs.test/dash/manifest.mpd"]
    assert len(mpd) == 1
    got = keylog_bodies(cap, key)(mpd)
    written = (ROOT / "data" / "video" / "has" / "manifests" / "dash" / "manifest.mpd").read_bytes()
    for k in range(len(mpd)):
        body, whole = got[k]
        assert whole and body == written


def test_without_keys_nothing_is_read(tmp_path):
    cap = HAS / "dash-tls.pcap.gz"
    mpd = [t for t in transactions(cap, keylog=HAS / "dash-tls.keylog") if t.url == "https://hs.test/dash/manifest.mpd"]
    other = tmp_path / "other.keylog"
    other.write_text("CLIENT_RANDOM " + "00" * 32 + " " + "11" * 48 + "\n")
    assert keylog_bodies(cap, other)(mpd) == {}
