"""HAR 1.2: transactions out to HTTP Archive files, and HAR files in as transactions.

Export (:func:`to_har`, :func:`write_har`) writes each :class:`~qoe.web.http.Transaction`
as one entry; import (:func:`read_har`, :func:`parse_har`) turns the entries of a HAR
written by a browser, browsertime, mitmproxy or qoe itself back into
:class:`~qoe.web.http.Transaction` records and its pages into :class:`HarPage` records, so
that page loads from any of them are scored the same way.

Export rules (the spec's, with what a capture can and cannot see)
-----------------------------------------------------------------
* ``timings``: ``blocked`` and ``dns`` are -1 (a connection's queueing is invisible and
  DNS is not tied to an entry here); ``connect`` is SYN → first request byte for the
  first exchange of a connection and -1 for a reused one ("connect would be -1 for
  requests which re-use an existing connection"); ``ssl``, inside ``connect``, is the client's
  TLS handshake (ClientHello → its Finished; QUIC: first Initial → first Handshake packet:
  ``Transaction.tls_start_ns``/``tls_end_ns``) on a decrypted connection's first exchange,
  else -1; ``send`` = request first → last byte; ``wait`` = request's last byte →
  response's first byte (0 when the response began before the request ended, e.g. a 100
  Continue); ``receive`` = the rest up to the response's last byte. ``time`` is the sum of
  the timings that are not -1, as the spec requires.
* Sizes: ``headersSize`` is the head's bytes on the wire; ``bodySize`` the body after
  de-chunking; ``content.size`` equals it because a ``Content-Encoding`` is not undone
  (the encoding is named in ``_contentEncoding``); -1 where unknown.
* ``pages``: given :class:`HarPage` records, every page and ``pageref``; without them the
  ``pages`` array is empty and entries have no parent page, which the spec prescribes
  for "an HTTP trace tool [that] isn't able to group requests by a page".
  ``pageTimings.onLoad``/``onContentLoad`` are -1 unless known (a capture cannot see the
  browser's events); ``_plt`` is the page's fully-loaded time (ms from
  ``startedDateTime`` to the last byte of its last entry), ``_onloadEstimate`` qoe's
  estimate of the load event (``Page.onload_s``) when the page's objects give one.
* Custom fields start with ``_`` (``_plt``, ``_qoe``, ...). ``_qoe`` holds the whole
  transaction so that qoe reads its own files back exactly; ``_securityDetails.protocol``
  names what protected an entry (``"TLS 1.3"``, ``"QUIC"``) as Chromium's HAR does, and is
  the one other writers' custom field read on import (``Transaction.security``); the others
  are ignored, as the spec allows.

Import rules
------------
Times: ``startedDateTime`` (ISO 8601) is ``started_ns``; the request starts after
``blocked + dns + connect`` (``ssl`` is inside ``connect``), then ``send``, ``wait`` and
``receive`` follow, -1 and absent phases counting 0. ``connect`` other than -1 gives
``connection_start_ns`` (after ``blocked + dns``); ``connect == -1`` marks a reused
connection. ``ssl`` other than -1 within it gives the handshake as a browser times it
(``tls_end_ns`` at the end of ``connect``, ``tls_start_ns`` ``ssl`` before it). Entries are
numbered per ``connection`` id in ``startedDateTime`` order.

References
----------
.. [1] J. Odvarko, "HAR 1.2 Spec", Software is hard (2011),
   http://www.softwareishard.com/blog/har-12-spec/ (sections log, pages, pageTimings,
   entries, request, response, content, timings, Custom Fields, Versioning Scheme).
.. [2] ISO 8601 date and time format (``startedDateTime``).
.. [3] RFC 6265, "HTTP State Management Mechanism", §4.1.1 (Set-Cookie), §4.2.1 (Cookie).
"""

from __future__ import annotations

import calendar
import json
import math
import os
import re
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import IO, Any
from urllib.parse import parse_qsl, urlsplit

from qoe.errors import InputError, QoEWarning
from qoe.outputs import atomic_output
from qoe.report import as_dict
from qoe.web._pagemodel import (_NS, Page, WebOptions, _custom_bounds, _mos, _resolve, _response_bytes, build_pages,
                                 txn_protocol)
from qoe.web._results import Transaction

__all__ = ["HarPage", "HarLog", "to_har", "write_har", "parse_har", "read_har", "pages_from_har",
           "to_har_pages"]

#: ``log.creator.name`` of the files qoe writes (and whose ``_qoe`` fields it trusts).
_CREATOR = "qoe"
_NS_PER_MS = 1_000_000


@dataclass(frozen=True, slots=True)
class HarPage:
    """One page of a HAR log (``log.pages[]``) with its entries.

    Attributes
    ----------
    id, title : str
        ``pages[].id`` (what entries' ``pageref`` names) and ``title``.
    started_ns : int
        ``startedDateTime``: when the page load began (ns since the Unix epoch).
    on_content_load_ms, on_load_ms : float or None
        ``pageTimings`` (ms after ``startedDateTime``); None when absent or -1.
    transactions : tuple of Transaction
        The entries whose ``pageref`` is this page, in ``startedDateTime`` order.
    plt_ms : float or None
        The page's fully-loaded time as qoe measured it (``_plt``), when its entries cannot
        give it: an HTTPS page, whose objects are encrypted, has connections but no entries.
    onload_estimate_ms : float or None
        qoe's estimate of the load event (``_onloadEstimate``: ``Page.onload_s``, ms after
        ``startedDateTime``), which a capture gives where a browser's HAR has ``onLoad``.
    """

    id: str
    title: str
    started_ns: int
    on_content_load_ms: float | None
    on_load_ms: float | None
    transactions: tuple[Transaction, ...] = ()
    plt_ms: float | None = None
    onload_estimate_ms: float | None = None

    @property
    def fully_loaded_ms(self) -> float | None:
        """``startedDateTime`` → the last byte of the last entry (ms), None without entries."""
        ends = [t.response_end_ns for t in self.transactions if t.response_end_ns is not None]
        return (max(ends) - self.started_ns) / _NS_PER_MS if ends else None

    def to_dict(self) -> dict[str, Any]:
        return as_dict(self)


@dataclass(frozen=True, slots=True)
class HarLog:
    """What a HAR file holds, as qoe records.

    Attributes
    ----------
    pages : tuple of HarPage
    transactions : tuple of Transaction
        Every entry, in ``startedDateTime`` order (pages hold theirs too).
    creator, browser : tuple of (str, str) or None
        ``(name, version)`` of ``log.creator`` and ``log.browser``.
    version : str
        ``log.version``.
    """

    pages: tuple[HarPage, ...]
    transactions: tuple[Transaction, ...]
    creator: tuple[str, str] | None
    browser: tuple[str, str] | None
    version: str

    def to_dict(self) -> dict[str, Any]:
        return as_dict(self)


# -- time ------------------------------------------------------------------------------

_ISO = re.compile(
    r"^(\d{4})-?(\d\d)-?(\d\d)[T ](\d\d):?(\d\d):?(\d\d)(?:[.,](\d+))?(Z|[+-]\d\d(?::?\d\d)?)?$"
)


def _iso(ns: int) -> str:
    """ISO 8601 UTC with microseconds: ``2009-04-16T12:07:23.596000Z``."""
    sec, frac = divmod(ns, 10**9)
    y, mo, d, h, mi, s = _gmtime(sec)
    return f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}.{frac // 1000:06d}Z"


def _gmtime(sec: int) -> tuple[int, int, int, int, int, int]:
    t = time.gmtime(sec)
    return t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec


def _parse_iso(text: Any, where: str) -> int:
    if not isinstance(text, str):
        raise InputError(f"{where}: startedDateTime must be an ISO 8601 string; given {text!r}")
    m = _ISO.match(text.strip())
    if m is None:
        raise InputError(f"{where}: startedDateTime is not ISO 8601: {text!r}")
    y, mo, d, h, mi, s, frac, tz = m.groups()
    sec = calendar.timegm((int(y), int(mo), int(d), int(h), int(mi), int(s), 0, 0, 0))
    ns = int((frac or "").ljust(9, "0")[:9] or 0)
    if tz is None:
        warnings.warn(f"{where}: startedDateTime {text!r} has no time zone; taken as UTC", QoEWarning, stacklevel=3)
    elif tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        digits = tz[1:].replace(":", "")
        sec -= sign * (int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60)
    return sec * 10**9 + ns


def _ms(ns: int | None) -> float:
    return -1.0 if ns is None else ns / _NS_PER_MS


# -- export ----------------------------------------------------------------------------


def _header_list(headers: Iterable[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in headers]


def _cookies(headers: Iterable[tuple[str, str]], name: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for k, v in headers:
        if k.lower() != name:
            continue
        if name == "cookie":  # RFC 6265 §4.2.1: cookie-pair *( ";" SP cookie-pair )
            for pair in v.split(";"):
                n, eq, val = pair.strip().partition("=")
                if eq:
                    out.append({"name": n, "value": val})
        else:  # RFC 6265 §4.1.1: Set-Cookie: name=value *( ";" SP attribute )
            first, *attrs = v.split(";")
            n, eq, val = first.strip().partition("=")
            if not eq:
                continue
            c: dict[str, Any] = {"name": n, "value": val}
            for a in attrs:
                an, _, av = a.strip().partition("=")
                key = an.lower()
                if key in ("path", "domain", "expires"):
                    c[key] = av
                elif key == "httponly":
                    c["httpOnly"] = True
                elif key == "secure":
                    c["secure"] = True
            out.append(c)
    return out


def _version(v: str | None) -> str:
    return f"HTTP/{v}" if v else ""


def _entry(t: Transaction, pageref: str | None) -> dict[str, Any]:
    req_s, req_e, resp_s, resp_e = t.request_start_ns, t.request_end_ns, t.response_start_ns, t.response_end_ns
    connect = -1.0
    if not t.reused and t.connection_start_ns is not None and req_s is not None:
        connect = _ms(req_s - t.connection_start_ns)
    send = _ms(req_e - req_s) if req_s is not None and req_e is not None else 0.0
    if resp_s is not None and req_e is not None:
        wait = max(0.0, _ms(resp_s - req_e))
        receive = _ms(resp_e - max(resp_s, req_e)) if resp_e is not None else 0.0
    else:
        wait = receive = 0.0
    receive = max(0.0, receive)
    ssl = -1.0
    if connect >= 0 and t.tls_start_ns is not None and t.tls_end_ns is not None:
        # the handshake inside connect (HAR 1.2 "ssl ... also included in the connect field"); a
        # request sent before the client's Finished (0-RTT) ends it there
        ssl = max(0.0, _ms(min(t.tls_end_ns, req_s) - t.tls_start_ns))  # type: ignore[type-var]
    timings = {"blocked": -1, "dns": -1, "connect": connect, "send": send, "wait": wait, "receive": receive, "ssl": ssl}
    started = t.started_ns if t.started_ns is not None else req_s
    location = next((v for k, v in t.response_headers if k.lower() == "location"), "")
    split = urlsplit(t.url or "")
    entry: dict[str, Any] = {
        "startedDateTime": _iso(started if started is not None else 0),
        "time": sum(v for v in timings.values() if v >= 0),
        "request": {
            "method": t.method or "",
            "url": t.url or (f"http://{t.host}" if t.host else ""),
            "httpVersion": _version(t.request_version),
            "cookies": _cookies(t.request_headers, "cookie"),
            "headers": _header_list(t.request_headers),
            "queryString": [{"name": n, "value": v} for n, v in parse_qsl(split.query, keep_blank_values=True)],
            "headersSize": t.request_header_bytes if t.request_header_bytes is not None else -1,
            "bodySize": t.request_body_bytes if t.request_body_bytes is not None else -1,
        },
        "response": {
            "status": t.status if t.status is not None else 0,
            "statusText": t.reason or "",
            "httpVersion": _version(t.response_version),
            "cookies": _cookies(t.response_headers, "set-cookie"),
            "headers": _header_list(t.response_headers),
            "content": {
                "size": t.response_body_bytes if t.response_body_bytes is not None else 0,
                "mimeType": t.content_type or "",
            },
            "redirectURL": location,
            "headersSize": t.response_header_bytes if t.response_header_bytes is not None else -1,
            "bodySize": t.response_body_bytes if t.response_body_bytes is not None else -1,
        },
        "cache": {},
        "timings": timings,
    }
    if pageref is not None:
        entry["pageref"] = pageref
    if t.server is not None:
        entry["serverIPAddress"] = t.server[0]
    entry["connection"] = str(t.connection)
    if t.content_encoding:
        entry["response"]["content"]["_contentEncoding"] = t.content_encoding
    if t.response_body_wire_bytes is not None:
        entry["response"]["_bodyWireSize"] = t.response_body_wire_bytes
    if t.security:
        entry["_securityDetails"] = {"protocol": t.security}  # as Chromium's HAR names it
    entry["_complete"] = t.complete
    if t.partial:
        entry["_partial"] = t.partial
    if t.error:
        entry["_error"] = t.error
    entry["_qoe"] = t.to_dict()
    return entry


def to_har(
    transactions: Iterable[Transaction],
    *,
    pages: Sequence[HarPage] | None = None,
    creator_version: str | None = None,
    comment: str | None = None,
) -> dict[str, Any]:
    """A HAR 1.2 log (a JSON-ready dict) of ``transactions``.

    Parameters
    ----------
    transactions : iterable of Transaction
        The entries, written in ``startedDateTime`` order.
    pages : sequence of HarPage, optional, keyword-only
        Page grouping: each page's transactions get its ``pageref`` (matched by equality);
        without it, ``pages`` is empty and no entry has a parent page (HAR 1.2, "log").
    creator_version : str, optional, keyword-only
        ``log.creator.version`` (default: qoe's version).
    comment : str, optional, keyword-only
        ``log.comment``.

    Returns
    -------
    dict
        ``{"log": {...}}``; every number is finite.

    References
    ----------
    .. [1] J. Odvarko, "HAR 1.2 Spec", http://www.softwareishard.com/blog/har-12-spec/.
    """
    if creator_version is None:
        # only when a HAR is written without a version: importlib.metadata costs ~10 ms to import
        from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

        try:
            creator_version = version("qoe")
        except PackageNotFoundError:  # running from a source tree
            creator_version = "0"
    txs = sorted(transactions, key=lambda t: (t.started_ns if t.started_ns is not None else -1))
    refs: dict[Transaction, str] = {}
    har_pages = []
    for p in pages or ():
        timings: dict[str, Any] = {
            "onContentLoad": p.on_content_load_ms if p.on_content_load_ms is not None else -1,
            "onLoad": p.on_load_ms if p.on_load_ms is not None else -1,
        }
        page: dict[str, Any] = {"startedDateTime": _iso(p.started_ns), "id": p.id, "title": p.title,
                                "pageTimings": timings}
        plt = p.fully_loaded_ms if p.fully_loaded_ms is not None else p.plt_ms
        if plt is not None:
            page["_plt"] = plt
        if p.onload_estimate_ms is not None:
            page["_onloadEstimate"] = p.onload_estimate_ms
        har_pages.append(page)
        for t in p.transactions:
            refs.setdefault(t, p.id)
    log: dict[str, Any] = {
        "version": "1.2",
        "creator": {"name": _CREATOR, "version": creator_version},
        "pages": har_pages,
        "entries": [_entry(t, refs.get(t)) for t in txs],
    }
    if comment is not None:
        log["comment"] = comment
    return {"log": log}


def write_har(
    path: str | os.PathLike[str] | IO[str],
    transactions: Iterable[Transaction],
    *,
    pages: Sequence[HarPage] | None = None,
    comment: str | None = None,
    inputs: Iterable[str | os.PathLike[str] | None] = (),
) -> None:
    """Write :func:`to_har` of ``transactions`` as UTF-8 JSON (HAR 1.2 requires UTF-8).

    A path is written atomically (:func:`qoe.outputs.atomic_output`), never over one of
    ``inputs`` (:class:`~qoe.errors.InputError`); a text stream is written as is.
    """
    har = to_har(transactions, pages=pages, comment=comment)
    text = json.dumps(har, ensure_ascii=False, indent=1, allow_nan=False)
    if hasattr(path, "write"):
        path.write(text)  # type: ignore[union-attr]
        return
    with atomic_output(path, inputs=inputs) as tmp:
        tmp.write_text(text, encoding="utf-8")


# -- import ----------------------------------------------------------------------------


def _num(value: Any) -> float | None:
    """A HAR number, None for -1 / absent / not a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    return float(value)


def _headers(obj: Mapping[str, Any], where: str) -> tuple[tuple[str, str], ...]:
    raw = obj.get("headers", [])
    if not isinstance(raw, list):
        raise InputError(f"{where}: headers must be a list; given {type(raw).__name__}")
    out = []
    for h in raw:
        if isinstance(h, Mapping) and "name" in h:
            out.append((str(h["name"]), str(h.get("value", ""))))
    return tuple(out)


def _hv(headers: Sequence[tuple[str, str]], name: str) -> str | None:
    for k, v in headers:
        if k.lower() == name:
            return v
    return None


#: ALPN protocol ids (RFC 7301 §6 registry) that browsers write as ``httpVersion``: Chromium's
#: DevTools HAR writes "h2"/"h3", Playwright "h3" (and "HTTP/2.0" for HTTP/2). RFC 9113 §1 and
#: RFC 9114 §1 name the versions "HTTP/2" and "HTTP/3" (no minor version). Over a QUIC version
#: other than 1 Chromium adds its name of that version after a slash (its nextHopProtocol,
#: which Playwright copies: "h3/quic2draft08" over QUIC version 2, RFC 9369, in
#: data/web/browser/captures/h3v2-idle.har), and HTTP/3's drafts had ids "h3-NN".
_ALPN_VERSIONS = {"h2": "2", "h3": "3"}


def _alpn_base(v: str) -> str:
    """An ALPN-like ``httpVersion`` without what follows its id: "h3/quic2draft08" and "h3-29"
    are "h3" (lower case); anything else as it is, lower case."""
    x = v.strip().lower()
    if x.startswith(("h3/", "h3-")):
        return "h3"
    return x


def _strip_version(v: Any) -> str | None:
    if not isinstance(v, str) or not v:
        return None
    base = _alpn_base(v)
    if base in _ALPN_VERSIONS:
        return _ALPN_VERSIONS[base]
    return v[5:] if v.upper().startswith("HTTP/") else v


def _transaction(e: Mapping[str, Any], where: str, conn: int, seq: int, own: bool) -> Transaction:
    if own and isinstance(e.get("_qoe"), Mapping):
        d = dict(e["_qoe"])
        try:
            d["interim_statuses"] = tuple(d.get("interim_statuses", ()))
            for k in ("client", "server"):
                d[k] = tuple(d[k]) if d.get(k) is not None else None
            for k in ("request_headers", "response_headers"):
                d[k] = tuple(tuple(x) for x in d.get(k, ()))
            return Transaction(**{f.name: d[f.name] for f in fields(Transaction) if f.name in d})
        except (TypeError, KeyError) as exc:
            raise InputError(f"{where}: unreadable _qoe record ({exc})") from None
    started = _parse_iso(e.get("startedDateTime"), where)
    req = e.get("request")
    resp = e.get("response")
    if not isinstance(req, Mapping) or not isinstance(resp, Mapping):
        raise InputError(f"{where}: request and response objects are required (HAR 1.2 'entries')")
    timings = e.get("timings") if isinstance(e.get("timings"), Mapping) else {}
    blocked, dns, connect, ssl = (_num(timings.get(k)) for k in ("blocked", "dns", "connect", "ssl"))
    send, wait, receive = (_num(timings.get(k)) for k in ("send", "wait", "receive"))
    ms = _NS_PER_MS
    before = (blocked or 0) + (dns or 0)
    if send is None and wait is None and receive is None:  # timings absent: only the total
        total = _num(e.get("time"))
        req_start = started
        req_end = resp_start = None
        resp_end = started + round(total * ms) if total is not None else None
    else:
        req_start = started + round((before + (connect or 0)) * ms)
        req_end = req_start + round((send or 0) * ms)
        resp_start = req_end + round((wait or 0) * ms)
        resp_end = resp_start + round((receive or 0) * ms)
    req_headers = _headers(req, where + ".request")
    resp_headers = _headers(resp, where + ".response")
    url = req.get("url") if isinstance(req.get("url"), str) else None
    parts = urlsplit(url or "")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "") if url else None
    host = parts.netloc or _hv(req_headers, "host") or None
    status = resp.get("status")
    status = int(status) if isinstance(status, (int, float)) and not isinstance(status, bool) and status > 0 else None
    content = resp.get("content") if isinstance(resp.get("content"), Mapping) else {}
    size, compression = _num(content.get("size")), _num(content.get("compression"))
    encoding = _hv(resp_headers, "content-encoding")
    if size is not None and compression is not None:
        body = int(size - compression)  # HAR "compression: number of bytes saved"
    elif size is not None and encoding is None:
        body = int(size)
    else:
        body = None
    server = None
    if isinstance(e.get("serverIPAddress"), str) and e["serverIPAddress"]:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        server = (e["serverIPAddress"].strip("[]"), port)
    cl = _hv(resp_headers, "content-length")
    n = lambda v: int(v) if _num(v) is not None else None  # noqa: E731
    partial = None if status is not None else "no response (HAR status 0)"
    shaken = connect is not None and ssl is not None and ssl <= connect  # HAR 1.2: ssl is inside connect
    tls_end = started + round((before + connect) * ms) if shaken else None  # type: ignore[operator]
    return Transaction(
        connection=conn,
        sequence=seq,
        reused=(connect is None) if "connect" in timings else seq > 0,  # HAR: -1 "re-use"
        client=None,
        server=server,
        connection_start_ns=started + round(before * ms) if connect is not None else None,
        tls_end_ns=tls_end,
        tls_start_ns=tls_end - round(ssl * ms) if tls_end is not None and ssl is not None else None,
        started_ns=started,
        method=req.get("method") if isinstance(req.get("method"), str) else None,
        target=target,
        host=host,
        url=url,
        request_version=_strip_version(req.get("httpVersion")),
        status=status,
        reason=resp.get("statusText") if isinstance(resp.get("statusText"), str) else None,
        response_version=_strip_version(resp.get("httpVersion")),
        interim_statuses=(),
        request_start_ns=req_start,
        request_end_ns=req_end,
        response_start_ns=resp_start,
        response_end_ns=resp_end,
        request_header_bytes=n(req.get("headersSize")),
        request_body_wire_bytes=None,
        request_body_bytes=n(req.get("bodySize")),
        request_missing_bytes=0,
        response_header_bytes=n(resp.get("headersSize")),
        response_body_wire_bytes=n(resp.get("bodySize")),
        response_body_bytes=body,
        response_missing_bytes=0,
        content_type=(content.get("mimeType") or None) if isinstance(content.get("mimeType"), str)
        else _hv(resp_headers, "content-type"),
        content_length=int(cl) if cl is not None and cl.strip().isdigit() else None,
        content_encoding=encoding,
        transfer_encoding=_hv(resp_headers, "transfer-encoding"),
        referer=_hv(req_headers, "referer"),
        user_agent=_hv(req_headers, "user-agent"),
        request_headers=req_headers,
        response_headers=resp_headers,
        complete=partial is None,
        partial=partial,
        protocol=_alpn(resp.get("httpVersion") or req.get("httpVersion")),
        security=_security(e),
    )


def _security(e: Mapping[str, Any]) -> str | None:
    """``_securityDetails.protocol`` (Chromium's and Playwright's custom field, which qoe
    writes too: ``"TLS 1.3"``, ``"QUIC"``), else None."""
    d = e.get("_securityDetails")
    p = d.get("protocol") if isinstance(d, Mapping) else None
    return p if isinstance(p, str) and p else None


def _alpn(v: Any) -> str | None:
    """A HAR ``httpVersion`` as its ALPN protocol id (RFC 7301 §6): browsers write ``HTTP/1.1``,
    ``http/2.0``, ``h2`` or ``h3`` (Chromium; ``h3/<QUIC version>`` over QUIC other than
    version 1), ``HTTP/2``, ``HTTP/3``."""
    if not isinstance(v, str) or not v:
        return None
    x = _alpn_base(v)
    if x in ("h2", "http/2", "http/2.0", "h2c"):
        return "h2"
    if x in ("h3", "http/3", "http/3.0"):
        return "h3"
    if x in ("http/1.1", "http/1.0"):
        return x
    return None


def parse_har(har: Mapping[str, Any], *, source: str = "HAR") -> HarLog:
    """Read a HAR log (already decoded JSON) into pages and transactions.

    Parameters
    ----------
    har : mapping
        ``{"log": {...}}`` as in HAR 1.2 (1.1 and later 1.x minor versions are read too,
        their unknown fields ignored, per the spec's versioning scheme).
    source : str, keyword-only
        Name of the input for error messages (a file name).

    Raises
    ------
    InputError
        Not a HAR log, a major version other than 1, an entry without request/response,
        or a ``startedDateTime`` that is not ISO 8601 (the message names ``source`` and the
        entry).
    """
    log = har.get("log") if isinstance(har, Mapping) else None
    if not isinstance(log, Mapping):
        raise InputError(f"{source}: not a HAR file (no 'log' object)")
    version = str(log.get("version", "1.1"))  # HAR 1.2 "log.version": default 1.1
    if not re.fullmatch(r"1\.\d+", version):
        raise InputError(f"{source}: HAR version {version!r} not supported (major version must be 1)")
    entries = log.get("entries")
    if not isinstance(entries, list):
        raise InputError(f"{source}: log.entries must be a list")
    creator = log.get("creator") if isinstance(log.get("creator"), Mapping) else None
    own = creator is not None and creator.get("name") == _CREATOR
    order = sorted(range(len(entries)), key=lambda i: _parse_iso(
        entries[i].get("startedDateTime") if isinstance(entries[i], Mapping) else None, f"{source}: entry {i}"))
    conn_ids: dict[str, int] = {}
    seqs: dict[int, int] = {}
    txs: list[tuple[Transaction, str | None]] = []
    for i in order:
        e = entries[i]
        where = f"{source}: entry {i}"
        cid = e.get("connection")
        if isinstance(cid, (str, int)) and str(cid) != "":
            conn = conn_ids.setdefault(str(cid), len(conn_ids))
        else:
            conn = -1
        seq = seqs.get(conn, 0) if conn >= 0 else 0
        if conn >= 0:
            seqs[conn] = seq + 1
        pageref = e.get("pageref") if isinstance(e.get("pageref"), str) else None
        txs.append((_transaction(e, where, conn, seq, own), pageref))
    pages = []
    raw_pages = log.get("pages") or []
    if not isinstance(raw_pages, list):
        raise InputError(f"{source}: log.pages must be a list")
    for j, p in enumerate(raw_pages):
        if not isinstance(p, Mapping) or "id" not in p:
            raise InputError(f"{source}: page {j} has no id")
        pt = p.get("pageTimings") if isinstance(p.get("pageTimings"), Mapping) else {}
        pages.append(HarPage(
            id=str(p["id"]),
            title=str(p.get("title", "")),
            started_ns=_parse_iso(p.get("startedDateTime"), f"{source}: page {j}"),
            on_content_load_ms=_num(pt.get("onContentLoad")),
            on_load_ms=_num(pt.get("onLoad")),
            transactions=tuple(t for t, ref in txs if ref == str(p["id"])),
            plt_ms=_num(p.get("_plt")) if own else None,
            onload_estimate_ms=_num(p.get("_onloadEstimate")) if own else None,
        ))
    browser = log.get("browser") if isinstance(log.get("browser"), Mapping) else None
    return HarLog(
        pages=tuple(pages),
        transactions=tuple(t for t, _ in txs),
        creator=(str(creator.get("name", "")), str(creator.get("version", ""))) if creator else None,
        browser=(str(browser.get("name", "")), str(browser.get("version", ""))) if browser else None,
        version=version,
    )


def read_har(path: str | os.PathLike[str]) -> HarLog:
    """Read a HAR file (UTF-8 JSON; a BOM is accepted, as the spec asks of readers).

    Raises
    ------
    InputError
        The file is missing, not JSON, or not a HAR log (see :func:`parse_har`).
    """
    name = os.fspath(path)
    try:
        with open(name, encoding="utf-8-sig") as f:
            har = json.load(f)
    except FileNotFoundError:
        raise InputError(f"{name}: no such HAR file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{name}: not a HAR file (not UTF-8 JSON: {exc})") from None
    return parse_har(har, source=name)


def pages_from_har(
    log: Any,
    *,
    options: WebOptions | None = None,
    **deprecated: Any,
) -> list[Page]:
    """Score the pages of a HAR log (browsers, browsertime, other testbeds) like a capture's.

    Parameters
    ----------
    log : qoe.web.har.HarLog
        From :func:`qoe.web.har.read_har` / :func:`~qoe.web.har.parse_har`.
    options : qoe.web.WebOptions, optional, keyword-only
        ``idle_gap_s``: for a log without pages, how its entries are grouped (as
        :func:`qoe.web.pages.build_pages`); ``preset`` or ``t_min``/``t_max``: the G.1030 mapping.
    **deprecated
        ``idle_gap_s``, ``preset``, ``bounds=(t_min, t_max)`` as keywords: still taken for one
        release, with a DeprecationWarning; with ``options`` an InputError.

    Raises
    ------
    InputError
        ``log`` is not a HarLog (a path or a dict: read it with ``read_har`` / ``parse_har``).

    Notes
    -----
    Each HAR page keeps its own grouping. Its PLT is ``pageTimings.onLoad`` when the log
    has it (what the browser measured), else fully loaded from the entries
    (``startedDateTime`` → the last entry's end); a note says which. A HAR holds no TCP
    facts: RTT and loss are unknown (NaN) and the diagnosis is ``neither``.
    """
    opts = _resolve("pages_from_har", options, deprecated, ("idle_gap_s", "preset", "bounds"))
    if not isinstance(log, HarLog):
        raise InputError(f"pages_from_har takes a HAR log as qoe.web.har.read_har (a path) or parse_har (its JSON) "
                         f"gives it; given {type(log).__name__}")
    preset, b = opts.preset, _custom_bounds(opts)
    if not log.pages:
        return build_pages(log.transactions, options=opts)
    out = []
    for index, hp in enumerate(sorted(log.pages, key=lambda p: p.started_ns)):
        if hp.on_load_ms is not None:
            plt, source = hp.on_load_ms / 1e3, "PLT is the HAR's pageTimings.onLoad"
        elif hp.fully_loaded_ms is not None:
            plt, source = hp.fully_loaded_ms / 1e3, "PLT is fully loaded from the HAR's entries (no onLoad)"
        elif hp.plt_ms is not None:
            plt, source = hp.plt_ms / 1e3, "PLT is qoe's _plt (fully loaded; the page's objects are not entries)"
        else:
            continue
        txns = hp.transactions
        main = _main_document(hp)
        ttfb = math.nan
        if main is not None and main.response_start_ns is not None:
            ttfb = (main.response_start_ns - hp.started_ns) / _NS
        mos = _mos(plt, preset, b)
        out.append(Page(
            client=(main.client[0] if main is not None and main.client else ""), index=index,
            url=main.url if main is not None else hp.title, host=main.host if main is not None else None,
            scheme=(main.url or "").split(":", 1)[0] if main is not None and main.url else "http",
            protocol="; ".join(sorted({txn_protocol(t) for t in txns})),
            start_ns=hp.started_ns, end_ns=hp.started_ns + int(round(plt * _NS)), start_event="har",
            plt_s=plt, onload_s=_onload_s(hp), ttfb_s=ttfb,
            objects=len(txns), connections=len({t.connection for t in txns}),
            new_connections=sum(1 for t in txns if not t.reused), bytes=sum(
                _response_bytes(t) for t in txns),
            rtt_s=math.nan, rtt_min_s=math.nan, rtt_baseline_s=math.nan, rtt_baseline="page minimum", round_trips=0, rtt_component_s=math.nan, retransmissions=0,
            loss_wait_s=0.0, diagnosis="neither", rtt_share=math.nan, loss_share=math.nan, mos=mos,
            preset="custom" if b is not None else preset, complete=all(t.complete for t in txns),
            statuses=tuple(t.status for t in txns if t.status is not None),
            notes=(source, "a HAR holds no TCP facts: RTT and loss unknown"), transactions=tuple(txns),
        ))
    return out


def _main_document(hp: HarPage) -> Any:
    """The page's main document: its first entry that does not start before the page (HAR 1.2,
    "pages": ``startedDateTime`` is the beginning of the page load), within the 1 ms of an ISO
    time; the first entry when none does. (browsertime's Chrome HAR in data/web/external/
    browsertime holds an image from 249 ms before its page, ahead of the document.)"""
    txns = hp.transactions
    if not txns:
        return None
    return next((t for t in txns if t.request_start_ns is not None and t.request_start_ns >= hp.started_ns - _NS // 1000),
                txns[0])


def _onload_s(hp: HarPage) -> float:
    """The page's load event (s after its start): the browser's ``onLoad``, else qoe's own
    estimate (``_onloadEstimate``), else NaN."""
    if hp.on_load_ms is not None:
        return hp.on_load_ms / 1e3
    return hp.onload_estimate_ms / 1e3 if hp.onload_estimate_ms is not None else math.nan


def to_har_pages(found: Sequence[Page]) -> list[Any]:
    """The pages as :class:`qoe.web.har.HarPage` records for :func:`qoe.web.har.to_har`.

    ``pageTimings.onLoad`` stays unknown (-1: a capture cannot see the browser's event); the
    PLT goes in the custom field ``_plt`` and the load event's estimate, when the objects give
    one, in ``_onloadEstimate`` (HAR 1.2: custom fields start with an underscore).
    """
    return [HarPage(id=f"page_{p.index}", title=p.url or f"page {p.index}", started_ns=p.start_ns,
                    on_content_load_ms=None, on_load_ms=None, transactions=p.transactions, plt_ms=p.plt_s * 1e3,
                    onload_estimate_ms=p.onload_s * 1e3 if math.isfinite(p.onload_s) else None)
            for p in found]
