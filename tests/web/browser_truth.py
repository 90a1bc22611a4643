"""The browser's own view of the real page loads in data/web/browser/ (the truth for tests).

Each capture ``<name>.pcap`` there was made by ``data/web/browser/make_browser.sh`` (Chromium 156
through Playwright, nginx or an aioquic HTTP/3 server, the tbf testbed) and has beside it what the
browser and the servers said about the same load. :func:`load` reads them into one
:class:`BrowserTruth`; nothing here needs Chromium, tshark or decryption.

Times: Resource/Navigation Timing values are ms after ``performance.timeOrigin`` (W3C High
Resolution Time: ms since the Unix epoch, the same host clock as the capture);
:meth:`BrowserTruth.epoch_ns` turns one into ns since the epoch, the unit of qoe's records. Zero
means "did not happen" for the optional phases (W3C Resource Timing Level 2 §4.3: e.g.
``secureConnectionStart`` of a cleartext fetch).

Import from a test as ``from web.browser_truth import load, scenarios`` (tests/ is on the path).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

BROWSER_DATA = Path(__file__).resolve().parents[2] / "data" / "web" / "browser"
CAPTURES = BROWSER_DATA / "captures"


def scenarios() -> list[str]:
    """Names of the captures present (``<name>.scenario.json`` in data/web/browser/captures)."""
    return sorted(p.name[: -len(".scenario.json")] for p in CAPTURES.glob("*.scenario.json"))


def _json_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


@dataclass(frozen=True)
class BrowserTruth:
    """Everything recorded about one page load besides the capture.

    Attributes
    ----------
    name : str
        The scenario (``h2-idle``, ``h1-up``, ...).
    scenario : dict
        ``<name>.scenario.json``: protocol (h1, tls12, tls13, h2, h3), condition, delay, loss,
        buffer, host addresses, the commands.
    time_origin_ms : float
        ``performance.timeOrigin`` (ms since the Unix epoch).
    navigation : dict
        The navigation entry (``PerformanceNavigationTiming.toJSON()``).
    resources : list of dict
        Every resource entry (``PerformanceResourceTiming.toJSON()``), in the browser's order.
    har : dict
        Playwright's HAR (``{"log": ...}``).
    server_log : list of dict
        One record per request as the server logged it (nginx ``$msec`` = when the response was
        written, ``$connection``; h3_server.py: request time, QUIC connection id, stream id).
    drops : list of dict
        Packets dropped by the loss forwarder (without its summary line).
    drop_summary : dict or None
        The forwarder's last line (packets and drops per direction), None without forwarder.
    """

    name: str
    scenario: dict[str, Any]
    time_origin_ms: float
    navigation: dict[str, Any]
    resources: list[dict[str, Any]]
    har: dict[str, Any]
    server_log: list[dict[str, Any]] = field(repr=False)
    drops: list[dict[str, Any]] = field(repr=False)
    drop_summary: dict[str, Any] | None

    @property
    def pcap(self) -> Path:
        return CAPTURES / f"{self.name}.pcap"

    @property
    def keylog(self) -> Path:
        return CAPTURES / f"{self.name}.keylog"

    @property
    def har_path(self) -> Path:
        return CAPTURES / f"{self.name}.har"

    @property
    def protocol(self) -> str:
        return str(self.scenario["protocol"])

    @property
    def hosts(self) -> dict[str, str]:
        """Host name → server address."""
        return dict(self.scenario["hosts"])

    def epoch_ns(self, ms: float) -> int:
        """A performance time (ms after timeOrigin) as ns since the Unix epoch."""
        return round((self.time_origin_ms + ms) * 1e6)

    @property
    def load_event_end_ms(self) -> float:
        """``loadEventEnd`` of the navigation (ms after timeOrigin)."""
        return float(self.navigation["loadEventEnd"])

    @property
    def entries(self) -> list[dict[str, Any]]:
        """The navigation entry followed by the resource entries (all 40 objects)."""
        return [self.navigation, *self.resources]

    def entry(self, url: str) -> dict[str, Any]:
        """The timing entry of one URL (KeyError when the browser recorded none)."""
        for e in self.entries:
            if e["name"] == url:
                return e
        raise KeyError(url)

    def new_connection_entries(self) -> list[dict[str, Any]]:
        """Entries whose fetch opened a connection (``connectEnd > connectStart``, §4.3)."""
        return [e for e in self.entries if e["connectEnd"] > e["connectStart"]]

    def server_address(self, url: str) -> str:
        return self.hosts[urlsplit(url).hostname or ""]

    @property
    def har_on_load_ms(self) -> float:
        """``pages[0].pageTimings.onLoad`` (ms after the HAR page's ``startedDateTime``)."""
        return float(self.har["log"]["pages"][0]["pageTimings"]["onLoad"])

    def late_urls(self) -> list[str]:
        """The objects fetched by script after the load event (the manifest's ``late``)."""
        manifest = json.loads((BROWSER_DATA / "site-manifest.json").read_text())
        scheme = "http" if self.protocol == "h1" else "https"
        return [f"{scheme}://{m['host']}{m['path']}" for m in manifest if m["late"]]

    @property
    def last_response_end_ms(self) -> float:
        """The last ``responseEnd`` of every entry: the browser's "fully loaded" end."""
        return max(float(e["responseEnd"]) for e in self.entries)


def load(name: str) -> BrowserTruth:
    """Read the truth files of capture ``name`` (see the module docstring)."""
    base = CAPTURES / name
    timing = json.loads(Path(f"{base}.timing.json").read_text())
    drops = _json_lines(Path(f"{base}.drops.jsonl"))
    summary = drops.pop() if drops and drops[-1].get("summary") else None
    return BrowserTruth(
        name=name,
        scenario=json.loads(Path(f"{base}.scenario.json").read_text()),
        time_origin_ms=float(timing["timeOrigin"]),
        navigation=timing["navigation"][0],
        resources=list(timing["resource"]),
        har=json.loads(Path(f"{base}.har").read_text()),
        server_log=_json_lines(Path(f"{base}.server-access.jsonl")),
        drops=drops,
        drop_summary=summary,
    )
