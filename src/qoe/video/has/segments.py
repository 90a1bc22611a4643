"""HTTP transactions to segment requests: representation, media time, audio/video, retries, aborts.

A transaction is a segment request when its URL (and, for a byte-range request, its ``Range``
start) is a segment the manifest lists (:mod:`qoe.video.has.manifest`); a DASH SegmentBase
representation's requests are its file's URL with any range. Then:

* ``retry``: the same segment (representation and number) was requested before;
* ``aborted``: the response did not arrive whole (the player, or the network, gave it up: the
  connection closed or was reset before its last byte, RFC 9112 §6.3 item 5 / §9.6), or an
  error status (≥ 400) answered it;
* ``redundant``: a segment of the same media time (another representation) completed before
  (a player that replaces buffered media, e.g. dash.js "fast switching").

References
----------
.. [1] RFC 9110, "HTTP Semantics" (2022): §14.2 (Range), §15.3.7 (206 Partial Content).
.. [2] RFC 9112, "HTTP/1.1" (2022): §6.3 (message body length), §9.6 (tear-down).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from qoe.report import as_dict
from qoe.video.has.manifest import Manifest, Representation, Segment

__all__ = ["SegmentRequest", "SegmentIndex", "map_requests"]

_NS = 1e9


@dataclass(frozen=True, slots=True)
class SegmentRequest:
    """One request for a segment and what its response was.

    Attributes
    ----------
    media_type : {"video", "audio", "muxed", "text", "other"}
    representation : str
        Representation id (DASH) or media playlist name (HLS).
    bandwidth : int
        Declared bits per second of the representation (HLS audio renditions: 0).
    width, height : int or None
    number : int
        Segment number (-1: initialisation segment).
    start_s, duration_s : float
        Media time of the segment.
    url : str
    byte_range : tuple of (int, int) or None
    connection : int
        TCP connection index (:attr:`qoe.web.http.Transaction.connection`).
    request_ns, response_start_ns, response_end_ns : int or None
        First request byte, first and last response byte (capture times, ns).
    bytes : int
        Response body bytes on the wire (missing bytes included).
    status : int or None
    complete : bool
        The response arrived whole.
    aborted, retry, redundant : bool
        See the module notes.
    time_source : {"manifest", "bytes", "inferred"}
        Where the media time comes from: the manifest's segment list, a byte range scaled by
        the declared bandwidth (DASH SegmentBase), or inference from encrypted sizes.
    """

    media_type: str
    representation: str
    bandwidth: int
    width: int | None
    height: int | None
    number: int
    start_s: float
    duration_s: float
    url: str
    byte_range: tuple[int, int] | None
    connection: int
    request_ns: int | None
    response_start_ns: int | None
    response_end_ns: int | None
    bytes: int
    status: int | None
    complete: bool
    aborted: bool = False
    retry: bool = False
    redundant: bool = False
    time_source: str = "manifest"

    @property
    def init(self) -> bool:
        """An initialisation segment."""
        return self.number < 0

    @property
    def download_s(self) -> float:
        """Request start → last response byte, s (NaN when either is unknown)."""
        if self.request_ns is None or self.response_end_ns is None:
            return math.nan
        return (self.response_end_ns - self.request_ns) / _NS

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain Python."""
        return as_dict(self)


def _strip(url: str) -> str:
    return url.split("#", 1)[0]


def _no_query(url: str) -> str:
    return _strip(url).split("?", 1)[0]


def _range_start(headers: Iterable[tuple[str, str]]) -> tuple[int, int | None] | None:
    """RFC 9110 §14.1.2: ``Range: bytes=first-[last]`` (the first range only)."""
    for name, value in headers:
        if name.lower() == "range":
            unit, _, spec = value.partition("=")
            if unit.strip().lower() != "bytes":
                return None
            first, _, last = spec.split(",")[0].strip().partition("-")
            try:
                return int(first), (int(last) if last else None)
            except ValueError:
                return None
    return None


class SegmentIndex:
    """Lookup of a request (URL, range start) to its representation and segment, for one manifest."""

    def __init__(self, manifest: Manifest) -> None:
        self.manifest = manifest
        self._exact: dict[tuple[str, int | None], tuple[Representation, Segment]] = {}
        self._loose: dict[tuple[str, int | None], tuple[Representation, Segment]] = {}
        self._files: dict[str, Representation] = {}
        for rep in manifest.representations:
            segs = list(rep.segments) + ([rep.init] if rep.init is not None else [])
            for s in segs:
                key_start = s.byte_range[0] if s.byte_range else None
                self._exact.setdefault((_strip(s.url), key_start), (rep, s))
                self._loose.setdefault((_no_query(s.url), key_start), (rep, s))
            if rep.file_url:
                self._files[_no_query(rep.file_url)] = rep

    def __len__(self) -> int:
        return len(self._exact) + len(self._files)

    def lookup(self, url: str, rng: tuple[int, int | None] | None) -> tuple[Representation, Segment, str] | None:
        """(representation, segment, time source) of a request, or None when it is not a segment."""
        start = rng[0] if rng else None
        for table, key in ((self._exact, _strip(url)), (self._loose, _no_query(url))):
            hit = table.get((key, start))
            if hit is None and start is not None:
                hit = table.get((key, None))  # a range request inside a whole-file segment
            if hit is not None:
                return hit[0], hit[1], "manifest"
        rep = self._files.get(_no_query(url))
        if rep is None:
            return None
        init = rep.init
        if init is not None and init.byte_range is not None and rng is not None and rng[0] <= init.byte_range[1]:
            return rep, init, "manifest"
        # SegmentBase: a byte range of the one file, in media time by the declared bandwidth
        off = (rng[0] - (init.byte_range[1] + 1 if init is not None and init.byte_range else 0)) if rng else 0
        length = ((rng[1] - rng[0] + 1) if rng and rng[1] is not None else 0)
        bps = rep.bandwidth or 1
        seg = Segment(number=max(0, off), start_s=max(0.0, off * 8 / bps), duration_s=length * 8 / bps, url=url,
                      byte_range=(rng[0], rng[1]) if rng and rng[1] is not None else None)
        return rep, seg, "bytes"


def map_requests(transactions: Iterable[Any], index: SegmentIndex) -> list[SegmentRequest]:
    """The segment requests among ``transactions`` (qoe.web transactions), in request order.

    Parameters
    ----------
    transactions : iterable of qoe.web.http.Transaction
        Any transactions; those that are not segments of ``index``'s manifest are skipped.
    index : SegmentIndex

    Returns
    -------
    list of SegmentRequest
        With ``retry``, ``aborted`` and ``redundant`` set (see the module notes).
    """
    rows: list[tuple[int, Any, Representation, Segment, str]] = []
    for t in transactions:
        if not t.url or (t.method or "GET") not in ("GET",):
            continue
        rng = _range_start(t.request_headers)
        hit = index.lookup(t.url, rng)
        if hit is None:
            continue
        start = t.request_start_ns if t.request_start_ns is not None else (t.started_ns or 0)
        rows.append((start, t, *hit))
    rows.sort(key=lambda r: r[0])
    seen: set[tuple[str, str, int]] = set()
    done_time: dict[tuple[str, float], int] = {}
    out: list[SegmentRequest] = []
    for start, t, rep, seg, source in rows:
        key = (rep.media_type, rep.id, seg.number if source == "manifest" else seg.byte_range[0] if seg.byte_range else 0)
        status = t.status
        # a response whose body bytes the capture did not hold (a snap length) still arrived whole:
        # only an end that never came (a reset, a close, the capture's end) makes it aborted
        arrived = t.response_end_ns is not None and (
            bool(t.complete) or (t.partial or "").endswith("body bytes missing from the capture"))
        aborted = not arrived or (status is not None and status >= 400)
        whole = arrived
        tkey = (rep.media_type, round(seg.start_s, 3))
        redundant = not seg.number < 0 and tkey in done_time and done_time[tkey] <= start
        req = SegmentRequest(
            media_type=rep.media_type, representation=rep.id, bandwidth=rep.bandwidth, width=rep.width,
            height=rep.height, number=seg.number, start_s=seg.start_s, duration_s=seg.duration_s, url=t.url,
            byte_range=seg.byte_range, connection=t.connection, request_ns=t.request_start_ns,
            response_start_ns=t.response_start_ns, response_end_ns=t.response_end_ns,
            bytes=int(t.response_body_wire_bytes or 0), status=status, complete=whole, aborted=aborted,
            retry=key in seen, redundant=redundant, time_source=source,
        )
        seen.add(key)
        if not aborted and t.response_end_ns is not None and not seg.number < 0:
            done_time.setdefault(tkey, t.response_end_ns)
        out.append(req)
    return out
