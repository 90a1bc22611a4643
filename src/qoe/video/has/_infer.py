"""Segments inferred from sizes and timing alone, for sessions whose HTTP is encrypted (no key log).

Without keys a capture shows, per TCP connection, when the client sent something (a
request) and how many bytes the server sent back, and when. Following the approach of
VideoOptimizer (matching response sizes to the manifest), with a manifest of the
presentation (a file the user has, since the one in the capture is encrypted):

* each client transmission after the TLS handshake starts a response; the server bytes
  until the next client transmission are its size (retransmitted bytes counted once, TCP
  sequence numbers; sizes include TLS record overhead, about 0.2 %); a reset (RST) while
  a response is in progress makes it aborted (a player that abandons a download resets the
  connection);
* the segment duration D is the manifest's (median); a response of B bytes carries about
  8·B / D bit/s of media: it is taken for a segment of the representation (video or audio)
  whose declared bandwidth is nearest in ratio, when within a factor of ``2`` (other
  responses, scripts, manifests, are not segments);
* the k-th inferred segment of a media type is given the k-th media time of that type (a
  player that re-downloads or abandons segments breaks this: the result says it is inferred).

Every segment so found has ``time_source="inferred"`` and the session ``inferred=True``.

References
----------
.. [1] AT&T VideoOptimizer, "Video analysis" (segments of encrypted streams matched by size to
   the manifest), https://developer.att.com/video-optimizer.
.. [2] RFC 8446 (TLS 1.3) §5 (records: the handshake, then application data).
.. [3] RFC 9293 (TCP) §3.4 (sequence numbers: bytes counted once).
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from qoe.capture import tcp_segment_rows
from qoe.report import as_dict
from qoe.video.has.manifest import Manifest, Representation
from qoe.video.has.segments import SegmentRequest

__all__ = ["Download", "opaque_downloads", "infer_requests", "MAX_RATIO"]

#: A response is a segment of the representation nearest in bitrate when within this factor.
MAX_RATIO = 2.0
_TLS_HANDSHAKE = 0x16
_RST = 0x04  # RFC 9293 §3.1: the RST control bit
_LEAD_NS = 250_000_000  # first audio and video segment requests: 4-30 ms apart in data/video/has
_MOD = 1 << 32


@dataclass(frozen=True, slots=True)
class Download:
    """One response of an opaque (encrypted) connection: sizes and times only."""

    connection: tuple[str, int, str, int]
    request_ns: int
    first_byte_ns: int | None
    last_byte_ns: int | None
    bytes: int
    aborted: bool = False

    @property
    def client(self) -> str:
        """The client's address."""
        return self.connection[0]

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain Python."""
        return as_dict(self)


class _Conn:
    __slots__ = ("key", "tls", "requests", "last_client_ts", "server_high", "cur", "server_isn", "client_isn",
                 "client_high")

    def __init__(self, key: tuple[str, int, str, int]) -> None:
        self.key = key
        self.tls: bool | None = None
        self.requests: list[list[Any]] = []  # [request_ns, first, last, bytes]
        self.last_client_ts = -1
        self.server_high: int | None = None
        self.cur: list[Any] | None = None
        self.server_isn: int | None = None
        self.client_isn: int | None = None
        self.client_high = 0


def opaque_downloads(capture: str | os.PathLike[str], *, ports: Sequence[int] = (443,)) -> list[Download]:
    """The responses of the capture's TLS connections to ``ports``, by size and time.

    Parameters
    ----------
    capture : path
    ports : sequence of int, keyword-only
        Server ports whose connections are read as opaque (default 443). A connection whose
        client's first bytes are not a TLS handshake record is left out unless its port is
        listed (then its bytes are counted as they are: e.g. cleartext read as if encrypted).

    Returns
    -------
    list of Download
        In request order; the first exchange of each TLS connection (the handshake) is left out.
    """

    conns: dict[tuple[str, int, str, int], _Conn] = {}
    want = set(ports)
    for row in tcp_segment_rows(capture):
        ts, src, sport, dst, dport, payload = row[1], row[2], row[3], row[4], row[5], row[6]
        seq, data_len, flags = row[7], row[13], row[9]
        if flags & _RST:  # a reset ends the response in progress: the player (or server) gave it up
            c = conns.get((src, sport, dst, dport)) or conns.get((dst, dport, src, sport))
            if c is not None and c.cur is not None and len(c.cur) == 5:
                c.cur.append(True)
            continue
        if dport in want:
            c = conns.get((src, sport, dst, dport))
            if c is None:
                c = conns[(src, sport, dst, dport)] = _Conn((src, sport, dst, dport))
            if data_len <= 0:
                continue
            if c.client_isn is None:
                c.client_isn = seq
            end = (seq - c.client_isn) % _MOD + data_len
            if end <= c.client_high:
                continue  # a retransmitted request (its ACK was late): not a new one
            c.client_high = end
            if c.tls is None:
                c.tls = bool(payload) and payload[0] == _TLS_HANDSHAKE
            if ts - c.last_client_ts > 1_000_000 or c.cur is None or c.cur[4] is not None:  # a new transmission
                # [request, first byte, last byte, lowest byte, end]: bytes past the previous response only
                c.cur = [ts, None, None, None, None]
                c.requests.append(c.cur)
            c.last_client_ts = ts
        elif sport in want:
            c = conns.get((dst, dport, src, sport))
            if c is None or c.cur is None or data_len <= 0:
                continue
            if c.server_isn is None:
                c.server_isn = seq
            lo = (seq - c.server_isn) % _MOD  # unwrapped (connections under 4 GiB)
            hi = lo + data_len
            if c.server_high is not None and hi <= c.server_high:
                continue  # a retransmission of bytes an earlier response already had
            lo = max(lo, c.server_high or 0) if c.cur[3] is None else lo
            r = c.cur
            r[1] = ts if r[1] is None else r[1]
            r[2] = ts
            r[3] = lo if r[3] is None else min(r[3], lo)
            r[4] = hi if r[4] is None else max(r[4], hi)
            c.server_high = hi if c.server_high is None else max(c.server_high, hi)
    out = []
    for c in conns.values():
        reqs = c.requests[1:] if c.tls else c.requests  # TLS: the first exchange is the handshake
        out += [Download(c.key, r[0], r[1], r[2], r[4] - r[3], aborted=len(r) > 5)
                for r in reqs if r[4] is not None and r[4] > r[3]]
    out.sort(key=lambda d: d.request_ns)
    return out


def _segment_duration(manifest: Manifest) -> float:
    durs = [s.duration_s for r in manifest.representations for s in r.segments if s.duration_s > 0]
    return statistics.median(durs) if durs else math.nan


def infer_requests(downloads: Iterable[Download], manifest: Manifest) -> tuple[list[SegmentRequest], list[str]]:
    """Segment requests inferred from opaque downloads and the presentation's manifest.

    Returns
    -------
    (list of SegmentRequest, list of str)
        The inferred segments (``time_source="inferred"``) and notes.
    """
    d = _segment_duration(manifest)
    notes = []
    reps: list[Representation] = [r for r in manifest.representations
                                  if r.media_type in ("video", "audio", "muxed") and r.segments]
    if not math.isfinite(d) or not reps:
        return [], ["the manifest lists no segments: nothing can be inferred"]
    rates = {}
    for r in reps:
        if r.bandwidth:
            rates[r.id] = float(r.bandwidth)
        else:  # an HLS audio rendition has no BANDWIDTH: 64 kbit/s assumed
            rates[r.id] = 64e3
            notes.append(f"representation {r.id}: no declared bandwidth, 64 kbit/s assumed for matching")
    matched: list[tuple[Download, Representation]] = []
    for dl in downloads:
        est = dl.bytes * 8 / d
        best = min(reps, key=lambda r: abs(math.log(est / rates[r.id])))
        if abs(math.log(est / rates[best.id])) <= math.log(MAX_RATIO):
            matched.append((dl, best))
    # A player asks for its first audio and video segments together: a "segment" of one type
    # well before the first of another type is something else (the page's player script)
    firsts: dict[str, int] = {}
    for dl, rep in matched:
        firsts.setdefault(rep.media_type, dl.request_ns)
    if len(firsts) > 1:
        def early(dl: Download, rep: Representation) -> bool:
            other = min(t for k, t in firsts.items() if k != rep.media_type)
            return dl.request_ns < other - _LEAD_NS
        dropped = [m for m in matched if early(*m)]
        if dropped:
            notes.append(f"{len(dropped)} response(s) of a segment's size before the player's first segments: "
                         "taken for page objects, not segments")
        matched = [m for m in matched if not early(*m)]
    counters: dict[str, int] = {}
    out: list[SegmentRequest] = []
    for dl, best in matched:
        k = counters.get(best.media_type, 0)
        if not dl.aborted:  # an abandoned segment is asked for again: it keeps its media time
            counters[best.media_type] = k + 1
        timeline = best.segments
        if k >= len(timeline):
            notes.append(f"more {best.media_type} downloads than segments: the rest left out")
            continue
        seg = timeline[k]
        out.append(SegmentRequest(
            media_type=best.media_type, representation=best.id, bandwidth=best.bandwidth, width=best.width,
            height=best.height, number=seg.number, start_s=seg.start_s, duration_s=seg.duration_s,
            url=f"(encrypted) {dl.connection[2]}:{dl.connection[3]}", byte_range=None, connection=-1,
            request_ns=dl.request_ns, response_start_ns=dl.first_byte_ns, response_end_ns=dl.last_byte_ns,
            bytes=dl.bytes, status=None, complete=not dl.aborted, aborted=dl.aborted or dl.last_byte_ns is None,
            time_source="inferred"))
    notes.append(f"segments inferred from encrypted sizes and timing: each response matched by its bitrate over "
                 f"{d:g} s to the nearest representation of the manifest (within ×{MAX_RATIO:g}), media times in "
                 "download order")
    return out, sorted(set(notes), key=notes.index)
