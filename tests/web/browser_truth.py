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

The comparisons with qoe (public API only) live here too, so that the tests and the report
(``python tests/web/browser_truth.py`` prints data/web/browser/measured.md) measure the same way:
:func:`syn_matches`, :func:`tls_matches`, :func:`object_deltas`, :func:`plt_facts`.

Import from a test as ``from web.browser_truth import load, scenarios`` (tests/ is on the path).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

TCP_PROTOCOLS = ("h1", "tls12", "tls13", "h2")
TLS_PROTOCOLS = ("tls12", "tls13", "h2")

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
    def load_event_start_ms(self) -> float:
        """``loadEventStart`` of the navigation (ms after timeOrigin): where Playwright's HAR
        ``onLoad`` is taken (it reads ``performance.timing.loadEventStart``)."""
        return float(self.navigation["loadEventStart"])

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


def tshark_rows(name: str) -> list[dict[str, str]]:
    """tshark's decrypted view of capture ``name`` (``<name>.tshark-http.tsv``, made by
    data/web/browser/make_tshark.py: one row per HTTP message; HTTP/3: per QUIC STREAM frame of a
    request stream, tshark 4.0 having no QPACK)."""
    lines = Path(f"{CAPTURES / name}.tshark-http.tsv").read_text().splitlines()
    header = lines[1].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[2:]]


@functools.lru_cache(maxsize=None)
def load(name: str) -> BrowserTruth:
    """Read the truth files of capture ``name`` (see the module docstring); read once per process
    (the records are shared: do not modify them)."""
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


# -- comparisons with qoe (public API) ---------------------------------------------------------


def _ms(t: BrowserTruth, ns: int | None) -> float | None:
    return None if ns is None else ns / 1e6 - t.time_origin_ms


def tcp_view(t: BrowserTruth) -> tuple[list[Any], list[Any]]:
    """qoe's TCP connections and TLS sessions of the capture (``qoe.web.tcp.connections`` and
    the ``tls`` of each ``qoe.web.http.connection_results``)."""
    import warnings  # noqa: PLC0415

    from qoe.web.http import connection_results  # noqa: PLC0415
    from qoe.web.tcp import connections  # noqa: PLC0415

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        conns = connections(t.pcap)
        sessions = [r.tls for r in connection_results(t.pcap) if r.tls is not None]
    return conns, sessions


def syn_matches(t: BrowserTruth, conns: list[Any], sessions: list[Any] = (), *,  # type: ignore[assignment]
                tolerance_ms: float = 5.0) -> list[dict[str, Any]]:
    """Each resource entry that timed a connection (``connectEnd > connectStart``) against the SYNs.

    ``kind``: ``own`` when a SYN to the entry's server address lies within ``tolerance_ms`` of its
    ``connectStart``; ``late-bound`` when none does but a connection to that address had sent its
    SYN before ``connectStart`` and was not yet ready then (TCP established and, with a TLS
    session in ``sessions``, the client's Finished sent): Chromium's socket pool gives a request
    the first connection that completes, not necessarily the one started for it, and times the
    request's wait from when it joined; otherwise ``unmatched``. The navigation entry is left
    out (see :func:`navigation_connection`).
    """
    fin = {x.connection: x.client_finished_ns for x in sessions}
    ready: dict[int, float | None] = {}
    for c in conns:
        times = [c.established_ts_ns, fin.get(c.id.index)] if c.id.index in fin else [c.established_ts_ns]
        ready[c.id.index] = None if None in times else _ms(t, max(times))
    out = []
    for e in t.resources:
        if not e["connectEnd"] > e["connectStart"]:
            continue
        ip = t.server_address(e["name"])
        syns = [(_ms(t, c.syn_ts_ns), c) for c in conns if c.id.server[0] == ip and c.syn_ts_ns is not None]
        syn_ms, conn = min(syns, key=lambda sc: abs(sc[0] - e["connectStart"]))
        delta = syn_ms - e["connectStart"]
        if abs(delta) <= tolerance_ms:
            kind = "own"
        elif any(s < e["connectStart"] and (ready.get(c.id.index) is None or ready[c.id.index] >= e["connectStart"] - tolerance_ms)
                 for s, c in syns):
            kind = "late-bound"
        else:
            kind = "unmatched"
        out.append({"url": e["name"], "connectStart": e["connectStart"], "syn_ms": syn_ms, "delta_ms": delta,
                    "kind": kind, "client_port": conn.id.client[1]})
    return out


def tls_matches(t: BrowserTruth, sessions: list[Any]) -> list[dict[str, Any]]:
    """Each entry that timed a TLS handshake (``secureConnectionStart > connectStart``) against
    qoe's TLS session on the same server address whose ClientHello and client Finished are
    nearest its ``secureConnectionStart`` and ``connectEnd`` (sum of both distances).

    Deltas (ms, qoe − browser): ``client_hello`` − secureConnectionStart, ``client_finished`` −
    connectEnd, ``handshake_end`` (qoe's ``handshake_end_ns``) − connectEnd. Entries whose best
    session lacks a time have None there.
    """
    out = []
    for e in t.entries:
        if not e["secureConnectionStart"] > e["connectStart"]:
            continue
        ip = t.server_address(e["name"])
        cands = [s for s in sessions if s.server[0] == ip and s.client_hello_ns is not None]

        def cost(s: Any) -> float:
            ch = abs(_ms(t, s.client_hello_ns) - e["secureConnectionStart"])
            fin = abs(_ms(t, s.client_finished_ns) - e["connectEnd"]) if s.client_finished_ns else 1e6
            return ch + fin

        s = min(cands, key=cost)
        d = lambda ns, ref: None if ns is None else _ms(t, ns) - ref  # noqa: E731
        out.append({"url": e["name"], "version": s.version_name, "resumed": s.resumed,
                    "client_hello": d(s.client_hello_ns, e["secureConnectionStart"]),
                    "client_finished": d(s.client_finished_ns, e["connectEnd"]),
                    "handshake_end": d(s.handshake_end_ns, e["connectEnd"]),
                    "handshake_visible": s.handshake_visible})
    return out


def navigation_connection(t: BrowserTruth, conns: list[Any], sessions: list[Any]) -> dict[str, Any] | None:
    """The main document's own connection when the navigation opened one over TLS
    (``connectEnd > connectStart``): the session whose client Finished is nearest ``connectEnd``,
    its SYN and ClientHello (ms after timeOrigin) and ``connectStart``/``connectEnd``."""
    nav = t.navigation
    if not (nav["connectEnd"] > nav["connectStart"] and t.protocol in TLS_PROTOCOLS):
        return None
    ip = t.server_address(nav["name"])
    cands = [s for s in sessions if s.server[0] == ip and s.client_finished_ns is not None]
    s = min(cands, key=lambda s: abs(_ms(t, s.client_finished_ns) - nav["connectEnd"]))
    conn = next(c for c in conns if c.id.index == s.connection)
    return {"connectStart": nav["connectStart"], "connectEnd": nav["connectEnd"], "syn_ms": _ms(t, conn.syn_ts_ns),
            "client_hello_ms": _ms(t, s.client_hello_ns), "client_finished_ms": _ms(t, s.client_finished_ns),
            "first_syn_ms": min(_ms(t, c.syn_ts_ns) for c in conns if c.syn_ts_ns is not None)}


def page_view(t: BrowserTruth, *, keys: bool = False) -> list[Any]:
    """``qoe.web.page_loads`` of the capture (warnings silenced); with ``keys``, decrypted
    with the capture's key log when it has one."""
    import warnings  # noqa: PLC0415

    from qoe.web import WebOptions, page_loads  # noqa: PLC0415

    options = WebOptions(keylog=str(t.keylog)) if keys and t.keylog.exists() else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return page_loads(t.pcap, options=options)


def object_deltas(t: BrowserTruth, pages: list[Any]) -> list[dict[str, Any]]:
    """Per object (timing entry matched to qoe's transaction by URL): qoe − browser, ms, for
    ``requestStart`` (qoe: first request byte), ``responseStart`` (first response byte) and
    ``responseEnd`` (last response byte). ``matched`` False when qoe has no single transaction."""
    txs: dict[str, list[Any]] = {}
    for p in pages:
        for x in p.transactions:
            txs.setdefault(x.url, []).append(x)
    out = []
    for e in t.entries:
        m = txs.get(e["name"], [])
        row: dict[str, Any] = {"url": e["name"], "matched": len(m) == 1}
        if len(m) == 1:
            x = m[0]
            for key, ns in (("requestStart", x.request_start_ns), ("responseStart", x.response_start_ns),
                            ("responseEnd", x.response_end_ns)):
                row[key] = None if ns is None else _ms(t, ns) - e[key]
        out.append(row)
    return out


def plt_facts(t: BrowserTruth, pages: list[Any]) -> dict[str, Any]:
    """qoe's page(s) against the browser: the PLT definitions side by side (ms).

    ``qoe_plt`` = qoe's ``plt_s`` (fully loaded: first SYN/DNS → last byte of the last object);
    ``browser_fully_loaded`` = the last ``responseEnd`` − qoe's start (same start, the browser's end);
    ``load_event_end`` = ``loadEventEnd`` (from timeOrigin); ``start_vs_time_origin`` = qoe's start
    − timeOrigin.
    """
    p = pages[0]
    start = _ms(t, p.start_ns)
    return {"pages": len(pages), "objects": p.objects, "start_event": p.start_event,
            "qoe_plt": p.plt_s * 1000, "qoe_end": _ms(t, p.end_ns), "start_vs_time_origin": start,
            "browser_last_response_end": t.last_response_end_ms,
            "browser_fully_loaded": t.last_response_end_ms - start,
            "load_event_end": t.load_event_end_ms, "complete": p.complete, "notes": list(p.notes)}


def har_facts(t: BrowserTruth) -> dict[str, Any]:
    """qoe's HAR reader (``qoe.web.har.read_har``) on Playwright's HAR, against the timing JSON:
    the page's onLoad on the epoch clock − (timeOrigin + loadEventStart), ms; the HAR page's start −
    timeOrigin; per entry, the HAR-derived response end − Resource Timing ``responseEnd``."""
    from qoe.web.har import read_har  # noqa: PLC0415

    log = read_har(t.har_path)
    page = log.pages[0]
    on_load_epoch_ms = page.started_ns / 1e6 + (page.on_load_ms or 0.0)
    ends = []
    for x in log.transactions:
        try:
            e = t.entry(x.url)
        except KeyError:
            continue
        if x.response_end_ns is not None:
            ends.append(_ms(t, x.response_end_ns) - e["responseEnd"])
    return {"pages": len(log.pages), "entries": len(log.transactions), "on_load_ms": page.on_load_ms,
            "har_on_load_ms": t.har_on_load_ms, "page_start_vs_time_origin": page.started_ns / 1e6 - t.time_origin_ms,
            "on_load_vs_load_event_start": on_load_epoch_ms - (t.time_origin_ms + t.load_event_start_ms),
            "response_end_deltas": ends, "statuses": sorted({x.status for x in log.transactions}, key=str),
            "versions": sorted({str(x.response_version) for x in log.transactions})}


def _summary(values: list[float | None]) -> str:
    v = sorted(abs(x) for x in values if x is not None)
    if not v:
        return "-"
    med = v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
    return f"{med:.2f} / {v[-1]:.2f} (n={len(v)})"


def report() -> str:
    """The Markdown report of every comparison on every capture (data/web/browser/measured.md)."""
    lines = ["# qoe against the browser's own timing (data/web/browser)", "",
             "Made by `python tests/web/browser_truth.py` (the functions the tests use). Times in ms;",
             "'a / b (n)' = median / maximum of |qoe − browser| over n objects or connections.", ""]
    lines += ["## Connections: the capture's SYN against Resource Timing's connectStart", "",
              "| capture | own SYN within 5 ms | late-bound | unmatched | own: median / max abs(SYN − connectStart) "
              "| navigation: connectStart − its SYN | first SYN − timeOrigin |", "| --- | --- | --- | --- | --- | --- | --- |"]
    tls_rows, obj_rows, har_rows, today_rows, nokey_rows = [], [], [], [], []
    for name in scenarios():
        t = load(name)
        found = page_view(t)
        keyed = page_view(t, keys=True) if t.keylog.exists() else None
        if found and keyed:
            p, k = found[0], keyed[0]
            nokey_rows.append(f"| `{name}` | {len(found)} | {p.plt_s * 1000:.1f} | {k.plt_s * 1000:.1f} | "
                              f"{(p.plt_s - k.plt_s) * 1000:+.1f} | {(p.start_ns - k.start_ns) / 1e6:+.1f} | "
                              f"{(p.end_ns - k.end_ns) / 1e6:+.1f} | {_ms(t, p.end_ns) - t.last_response_end_ms:+.1f} | "
                              f"{_ms(t, p.end_ns) - t.load_event_end_ms:+.1f} | {_ms(t, k.start_ns):+.1f} | "
                              f"{_ms(t, k.start_ns) - t.navigation['connectStart']:+.1f} |")
        for label, view in (("no", found), ("yes", keyed)):
            if view is None:
                continue
            per = "; ".join(f"{p.plt_s:.3f}, {p.objects}, {p.connections}, {p.diagnosis}, {p.loss_share:.2f}, "
                            f"{(p.notes[0][:40] if p.notes else '-')!r}" for p in view) or "(none)"
            today_rows.append(f"| `{name}` | {label} | {t.load_event_end_ms / 1000:.3f} / "
                              f"{t.last_response_end_ms / 1000:.3f} | {len(view)} | {per} |")
        h = har_facts(t)
        har_rows.append(f"| `{name}` | {h['entries']} | {h['har_on_load_ms']:.0f} | {h['page_start_vs_time_origin']:.1f} | "
                        f"{h['on_load_vs_load_event_start']:.1f} | {_summary(h['response_end_deltas'])} | {', '.join(h['versions'])} |")
        if t.protocol not in TCP_PROTOCOLS:
            continue
        conns, sessions = tcp_view(t)
        m = syn_matches(t, conns, sessions)
        own = [r["delta_ms"] for r in m if r["kind"] == "own"]
        nav = navigation_connection(t, conns, sessions)
        first = min(_ms(t, c.syn_ts_ns) for c in conns if c.syn_ts_ns is not None)
        navtxt = f"{nav['connectStart'] - nav['syn_ms']:.2f}" if nav else "(reused a connection)"
        lines.append(f"| `{name}` | {len(own)} | {sum(r['kind'] == 'late-bound' for r in m)} | "
                     f"{sum(r['kind'] == 'unmatched' for r in m)} | {_summary(own)} | {navtxt} | {first:.2f} |")
        if t.protocol in TLS_PROTOCOLS:
            tm = tls_matches(t, sessions)
            full = [r for r in tm if not r["resumed"]]
            tls_rows.append(f"| `{name}` | {tm[0]['version'] if tm else '-'} | {len(tm)} ({len(tm) - len(full)} resumed) | "
                            f"{_summary([r['client_hello'] for r in tm])} | {_summary([r['client_finished'] for r in tm])} | "
                            f"{_summary([r['handshake_end'] for r in full])} | {_summary([r['handshake_end'] for r in tm if r['resumed']])} |")
        if t.protocol == "h1":
            pages = found
            d = object_deltas(t, pages)
            f = plt_facts(t, pages)
            obj_rows.append(f"| `{name}` | {sum(r['matched'] for r in d)}/{len(d)} | {_summary([r.get('requestStart') for r in d])} | "
                            f"{_summary([r.get('responseStart') for r in d])} | {_summary([r.get('responseEnd') for r in d])} | "
                            f"{f['pages']} | {f['qoe_plt']:.1f} | {f['browser_fully_loaded']:.1f} | {f['load_event_end']:.1f} | "
                            f"{f['start_vs_time_origin']:.2f} |")
    lines += ["", "## TLS handshakes: qoe.web.tls against secureConnectionStart / connectEnd", "",
              "| capture | version | entries with a handshake | ClientHello − secureConnectionStart | client Finished − connectEnd "
              "| handshake_end − connectEnd, full handshakes | the same, resumed |", "| --- | --- | --- | --- | --- | --- | --- |", *tls_rows]
    lines += ["", "## HTTP/1.1 cleartext: qoe.web.page_loads against Resource Timing", "",
              "| capture | objects matched | requestStart | responseStart | responseEnd | qoe pages | qoe plt_s (ms) "
              "| browser fully loaded (last responseEnd − qoe start) | loadEventEnd | qoe start − timeOrigin |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |", *obj_rows]
    lines += ["", "## qoe.web.page_loads on every capture, without and with the key log", "",
              "What qoe says, for comparison with the browser (one page each: 40 objects it timed and its icon "
              "request): pages found, "
              "and per page PLT (s), objects, connections, diagnosis, loss_share and the first note. "
              "Without keys, objects are the encrypted connections that carried requests, one each "
              "(docs/guide/web.md); connections opened and never used count in connections only.", "",
              "| capture | key log | browser loadEventEnd / last responseEnd (s) | qoe pages | qoe per page: plt_s, objects, "
              "connections, diagnosis, loss_share, note |", "| --- | --- | --- | --- | --- |", *today_rows]
    lines += ["", "## PLT without the key log against the decrypted page and the browser", "",
              "qoe's first page without keys against the same capture decrypted with its key log, and its end "
              "(the last byte of the connections' activity) against the browser's last responseEnd and "
              "loadEventEnd, and the decrypted page's start (its first SYN or QUIC Initial) against the "
              "navigation's start (timeOrigin) and its connectStart. ms; differences without − with keys, "
              "and qoe − browser.", "",
              "| capture | pages without keys | plt_s without keys | plt_s with keys | difference | start difference "
              "| end difference | end − last responseEnd | end − loadEventEnd | start − timeOrigin "
              "| start − connectStart |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |", *nokey_rows]
    lines += ["", "## Playwright's HAR read by qoe.web.har.read_har", "",
              "| capture | entries | pageTimings.onLoad | HAR page start − timeOrigin | HAR onLoad − loadEventStart (epoch) "
              "| HAR entry end − responseEnd | httpVersion read |", "| --- | --- | --- | --- | --- | --- | --- |", *har_rows]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(report(), end="")
