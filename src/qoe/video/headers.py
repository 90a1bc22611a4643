"""Video facts from RTP headers alone: frames, frame rate, bitrate, key frames, freezes, pauses.

What a receiver's ``getStats()`` reports about an inbound video stream can mostly be read
from the clear RTP headers, even when the payload is encrypted (SRTP leaves the header in
clear, RFC 3711 §3.1):

* **Frames** (RFC 3550 §5.1): the packets of one video frame share an RTP timestamp, and the
  marker bit ends the frame (RFC 6184 §5.1, RFC 7741 §4.1, RFC 7798 §4.1, RFC 9628 §4.1, AV1
  RTP §7.2). A frame is *complete* when no sequence number is missing inside it or between
  the previous frame's marker-bit end and its first packet, and its last packet has the
  marker bit; an incomplete frame whose missing packets arrived later in its RTX stream
  (RFC 4588 §4: a retransmission carries the original's RTP timestamp) is *repaired*.
  Per frame: size (payload bytes), packets, complete, repaired, first and last arrival
  (the spread between them is how long the frame took to arrive).
* **Per stream**: frames received (``framesReceived``; distinct timestamps), frames complete
  (what a decoder gets, ≈ ``framesDecoded``), frames per second and payload bitrate per
  second of arrival (``framesPerSecond``, ``bytesReceived`` per second), key frames.
* **Key frames**: read from the payload when it is readable (``key_frames=`` from a
  depacketiser: H.264 IDR, H.265 IRAP, VP8 P bit, VP9 frame_type, AV1 sequence header);
  otherwise a *guess by size* — a frame at least :data:`KEY_SIZE_RATIO` times the median
  frame size of the stream (key frames are intra-coded and several times larger than the
  predicted frames around them; ≈ ``keyFramesDecoded``). The record says which rule was used.
* **Freezes** (W3C webrtc-stats, ``RTCInboundRtpStreamStats.freezeCount`` and
  ``totalFreezesDuration``): a freeze is an interval between two consecutively rendered
  frames of at least max(3 × mean, mean + 150 ms), the mean being that of the last 30
  intervals; its duration is the interval. **Pauses** (``pauseCount``,
  ``totalPausesDuration``): an interval above 5 s; it is a pause, not a freeze. From a
  capture, a frame is taken as rendered when its last packet arrived (RTX included;
  complete or repaired frames, in the order they completed): the browser renders after its
  jitter buffer, which absorbs some of the gaps, so a header-only count is an estimate (on
  the ten WebRTC calls of data/video/webrtc: equal to the browser's freezeCount on seven,
  one off on three; durations within 1.2 s, tests/video/test_headers.py).
* **Queueing delay** without a sender capture: WebRTC senders stamp each packet with its
  send time (``abs-send-time``, 6.18 fixed-point seconds, read by
  :func:`qoe.rtp.read_header_extensions`); arrival minus send time is the one-way delay up
  to the unknown clock offset, so its excess over the stream's smallest is the delay that
  queues added (the seed paper's bufferbloat seen from one end): ``queue_delay_p50_ms``,
  ``p95``, ``max`` and its median per second. ``transport-wide-cc`` numbers packets but
  carries no time: from one capture it gives no delay (its feedback, in SRTCP, is
  encrypted), and the record says which was used.
* **Losses and repair**: packets missing between two frames are the next frame's head when
  the frame before ended with its marker bit, else that frame's tail. A frame repaired by
  RTX needs as many RTX packets with its timestamp as it missed (RTX payloads are
  encrypted under SRTP: which packet an RTX packet repeats, its OSN, cannot be read, its
  timestamp can).

References
----------
.. [1] W3C, "Identifiers for WebRTC's Statistics API" (webrtc-stats), RTCInboundRtpStreamStats:
   framesReceived, framesDecoded, framesPerSecond, keyFramesDecoded, freezeCount,
   totalFreezesDuration, pauseCount, totalPausesDuration, bytesReceived.
.. [2] RFC 3550, §5.1 (timestamp, marker bit); RFC 4588, §4 (RTX: original timestamp).
.. [3] RFC 3711, §3.1 (SRTP: the RTP header stays in clear).
.. [4] "RTP Header Extension for Absolute Sender Time",
   http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from qoe.report import as_dict
from qoe.rtp import in_order_jitter_ms

__all__ = ["FrameFacts", "HeaderFacts", "header_facts", "stream_header_facts", "KEY_SIZE_RATIO", "FREEZE_WINDOW", "PAUSE_S"]

#: A frame this many times the stream's median frame size or more is guessed a key frame.
#: Intra-coded frames of real-time video are typically 3-10 times the size of the predicted
#: frames between them; 2.5 leaves room for a predicted frame after a scene change.
KEY_SIZE_RATIO = 2.5
#: webrtc-stats freezeCount: the mean inter-frame interval is that of the last 30 frames.
FREEZE_WINDOW = 30
#: webrtc-stats freezeCount: an interval ≥ max(3 × mean, mean + 150 ms) is a freeze.
FREEZE_FACTOR, FREEZE_MARGIN_S = 3.0, 0.150
#: webrtc-stats pauseCount: an interval of more than 5 s between rendered frames is a pause.
PAUSE_S = 5.0


@dataclass(frozen=True, slots=True)
class FrameFacts:
    """One video frame as the RTP headers show it.

    Attributes
    ----------
    timestamp : int
        Extended RTP timestamp.
    first_seq, last_seq : int
        Extended sequence numbers of its first and last packet received.
    packets : int
        Packets of the media stream received (each sequence number once).
    size_bytes : int
        Payload bytes of those packets (with the SRTP authentication tag when encrypted).
    marker : bool
        Its last packet has the marker bit.
    complete : bool
        No packet missing (see the module notes).
    repaired : bool
        Incomplete in the media stream, completed by its RTX stream.
    key : bool
        A key frame (read from the payload, or guessed by size: :class:`HeaderFacts`
        ``key_rule``).
    first_arrival_s, last_arrival_s : float
        Arrival of its first and last packet (RTX included), seconds since the stream's first.
    """

    timestamp: int
    first_seq: int
    last_seq: int
    packets: int
    size_bytes: int
    marker: bool
    complete: bool
    repaired: bool
    key: bool
    first_arrival_s: float
    last_arrival_s: float

    @property
    def spread_ms(self) -> float:
        """Time from the frame's first packet to its last (ms)."""
        return (self.last_arrival_s - self.first_arrival_s) * 1e3

    def to_dict(self) -> dict[str, Any]:
        """Plain Python, with ``spread_ms``."""
        return {**as_dict(self), "spread_ms": self.spread_ms}


@dataclass(frozen=True)
class HeaderFacts:
    """A video stream's facts from its RTP headers (names after webrtc-stats where one exists).

    Attributes
    ----------
    frames_received : int
        Distinct RTP timestamps (``framesReceived``).
    frames_complete : int
        Frames complete or repaired: what a decoder gets (≈ ``framesDecoded``).
    frames_incomplete, frames_repaired : int
        Frames with a packet missing for good; frames completed by RTX.
    frames_per_second : float
        Complete frames per second of the stream's duration (≈ the mean of
        ``framesPerSecond``); NaN under 2 frames.
    bytes_received : int
        Payload bytes of the media stream's packets as captured (``bytesReceived`` minus
        ``retransmittedBytesReceived``, plus the SRTP authentication tag, 10 bytes a packet
        for the usual AES_CM_128_HMAC_SHA1_80; a capture cut at a snap length counts only
        what it holds).
    bitrate_kbps : float
        Mean payload bitrate (kbit/s) over the stream's duration.
    key_frames : int
        Key frames (``keyFramesDecoded``), by ``key_rule``.
    key_rule : {"payload", "size"}
        How key frames were told: read from the payload, or guessed by size
        (:data:`KEY_SIZE_RATIO` × the median frame size).
    freeze_count : int
    total_freezes_duration_s : float
        W3C freezes on the times frames completed (see the module notes).
    pause_count : int
    total_pauses_duration_s : float
        W3C pauses (intervals over 5 s).
    fps_series, kbps_series : tuple of float
        Complete frames and payload kbit/s in each second from the stream's first packet.
    queue_delay_source : str
        ``"abs-send-time"``, or why there is no queueing delay (NaN below).
    queue_delay_p50_ms, queue_delay_p95_ms, queue_delay_max_ms : float
        One-way delay in excess of the stream's smallest (see the module notes).
    queue_delay_series_ms : tuple of float
        Its median in each second from the stream's first packet (NaN: no packet).
    jitter_ms : float
        RFC 3550 §6.4.1 interarrival jitter at the stream's end by the receiver's rule
        (libwebrtc's ``jitter``: in-order packets, once per frame;
        :func:`qoe.rtp.in_order_jitter_ms`), NaN when not computed.
    frames : tuple of FrameFacts
        Per frame, in timestamp order (the ``frames`` detail table).
    """

    frames_received: int
    frames_complete: int
    frames_incomplete: int
    frames_repaired: int
    frames_per_second: float
    bytes_received: int
    bitrate_kbps: float
    key_frames: int
    key_rule: str
    freeze_count: int
    total_freezes_duration_s: float
    pause_count: int
    total_pauses_duration_s: float
    fps_series: tuple[float, ...]
    kbps_series: tuple[float, ...]
    frames: tuple[FrameFacts, ...] = ()
    queue_delay_source: str = "none: no abs-send-time header extension read"
    queue_delay_p50_ms: float = float("nan")
    queue_delay_p95_ms: float = float("nan")
    queue_delay_max_ms: float = float("nan")
    queue_delay_series_ms: tuple[float, ...] = ()
    jitter_ms: float = float("nan")

    #: webrtc-stats names of the fields that have one (for users comparing with getStats()).
    GETSTATS: ClassVar[Mapping[str, str]] = {
        "frames_received": "framesReceived",
        "frames_complete": "framesDecoded",
        "frames_per_second": "framesPerSecond",
        "bytes_received": "bytesReceived",
        "key_frames": "keyFramesDecoded",
        "freeze_count": "freezeCount",
        "total_freezes_duration_s": "totalFreezesDuration",
        "pause_count": "pauseCount",
        "total_pauses_duration_s": "totalPausesDuration",
        "jitter_ms": "jitter (s in getStats)",
    }

    def to_record(self) -> dict[str, Any]:
        """The per-stream fields (no series, no frames)."""
        return {k: v for k, v in as_dict(self).items()
                if k not in ("frames", "fps_series", "kbps_series", "queue_delay_series_ms")}

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain Python (frames as records)."""
        d = as_dict(self)
        d["frames"] = [f.to_dict() for f in self.frames]
        return d

    def frame_records(self) -> list[dict[str, Any]]:
        """The ``frames`` detail table: one record per frame."""
        return [f.to_dict() for f in self.frames]


def _groups(seq: np.ndarray, ts: np.ndarray) -> list[np.ndarray]:
    """Indices (into ``seq``, sorted by sequence number) of each timestamp's packets, frames in
    timestamp order."""
    order = np.lexsort((seq, ts))
    ts_sorted = ts[order]
    cuts = np.flatnonzero(np.diff(ts_sorted)) + 1
    return np.split(order, cuts)


def header_facts(
    seq_ext: np.ndarray,
    ts_ext: np.ndarray,
    marker: np.ndarray,
    arrival_ns: np.ndarray,
    sizes: np.ndarray,
    *,
    clock_rate: int = 90_000,
    rtx_timestamps: Sequence[int] | np.ndarray = (),
    rtx_arrival_ns: Sequence[int] | np.ndarray = (),
    key_frames: Mapping[int, bool] | None = None,
) -> HeaderFacts:
    """The header-only facts of one RTP video stream (see the module notes).

    Parameters
    ----------
    seq_ext, ts_ext, marker, arrival_ns, sizes : numpy.ndarray
        Per packet of the media stream (any order, duplicates allowed): extended sequence
        number and RTP timestamp (:class:`qoe.rtp.RtpPackets`), marker bit, capture time (ns),
        payload bytes.
    clock_rate : int, keyword-only
        RTP clock (90 kHz for video, RFC 3551 §5); only the frames' order uses it.
    rtx_timestamps, rtx_arrival_ns : array_like, keyword-only
        The RTX stream's packets carrying a payload (RFC 4588; padding-only probes left out):
        their RTP timestamps (the originals', extended like ``ts_ext``) and capture times.
    key_frames : mapping of int to bool, optional, keyword-only
        Key frames read from the payload, by extended timestamp; when None they are guessed
        by size.

    Returns
    -------
    HeaderFacts
    """
    seq_ext = np.asarray(seq_ext, dtype=np.int64)
    if seq_ext.size == 0:
        return HeaderFacts(0, 0, 0, 0, float("nan"), 0, float("nan"), 0, "size" if key_frames is None else "payload",
                           0, 0.0, 0, 0.0, (), (), ())
    _, first = np.unique(seq_ext, return_index=True)  # each sequence number once
    seq = seq_ext[first]
    ts = np.asarray(ts_ext, dtype=np.int64)[first]
    mk = np.asarray(marker, dtype=bool)[first]
    arr = np.asarray(arrival_ns, dtype=np.int64)[first]
    size = np.asarray(sizes, dtype=np.int64)[first]
    t0 = int(np.asarray(arrival_ns).min())
    rtx: dict[int, list[int]] = defaultdict(list)
    for t, a in zip(np.asarray(rtx_timestamps, dtype=np.int64).tolist(),
                    np.asarray(rtx_arrival_ns, dtype=np.int64).tolist()):
        rtx[t].append(a)
    groups = _groups(seq, ts)
    # the frame before each one in sequence-number order: the gap between them is lost packets
    firsts = np.array([seq[g[0]] for g in groups])
    by_seq = np.argsort(firsts, kind="stable")
    before = np.full(len(groups), -1)
    before[by_seq[1:]] = by_seq[:-1]
    # packets missing inside each frame, and between it and the frame before it in sequence
    # order: a gap after a frame that ended with its marker bit is the next frame's head; after
    # one that did not, the frame's own tail (at least its last packet; the rest taken as its too)
    missing = np.array([int(seq[g[-1]] - seq[g[0]] + 1 - g.size) for g in groups])
    for k in range(len(groups)):
        j = int(before[k])
        if j < 0:
            continue
        gap = max(0, int(seq[groups[k][0]] - seq[groups[j][-1]] - 1))
        missing[k if mk[groups[j][-1]] else j] += gap
    rows = []
    for k, g in enumerate(groups):
        s = seq[g]
        end_marker = bool(mk[g[-1]])
        complete = int(missing[k]) == 0 and end_marker
        t = int(ts[g[0]])
        extra = rtx.get(t, [])
        repaired = not complete and len(extra) >= max(1, int(missing[k]))
        times = arr[g].tolist() + extra
        rows.append([t, int(s[0]), int(s[-1]), int(s.size), int(size[g].sum()), end_marker, complete, repaired,
                     (min(times) - t0) / 1e9, (max(times) - t0) / 1e9])
    sizes_f = np.array([r[4] for r in rows], dtype=np.float64)
    if key_frames is None:
        med = float(np.median(sizes_f)) if sizes_f.size else 0.0
        keys = [bool(med > 0 and sz >= KEY_SIZE_RATIO * med) for sz in sizes_f]
        rule = "size"
    else:
        keys = [bool(key_frames.get(r[0], False)) for r in rows]
        rule = "payload"
    frames = tuple(FrameFacts(*r[:8], keys[i], *r[8:]) for i, r in enumerate(rows))
    return _stream(frames, rule, arr, size, t0, clock_rate)


def _stream(frames: tuple[FrameFacts, ...], rule: str, arr: np.ndarray, size: np.ndarray, t0: int,
            clock_rate: int) -> HeaderFacts:
    good = [f for f in frames if f.complete or f.repaired]
    # a frame is taken as rendered when its last packet (RTX included) arrived, in that order
    shown = sorted(f.last_arrival_s for f in good)
    freezes, freeze_s, pauses, pause_s = _freezes(np.asarray(shown))
    span_s = (int(arr.max()) - t0) / 1e9
    n_sec = int(np.floor(span_s)) + 1
    fps = np.bincount(np.floor(np.asarray(shown)).astype(np.int64), minlength=n_sec)[:n_sec] if shown else np.zeros(n_sec)
    sec = ((arr - t0) // 1_000_000_000).astype(np.int64)
    kbps = np.bincount(sec, weights=size.astype(np.float64), minlength=n_sec)[:n_sec] * 8 / 1e3
    dur = shown[-1] - shown[0] if len(shown) > 1 else 0.0
    return HeaderFacts(
        frames_received=len(frames), frames_complete=len(good),
        frames_incomplete=sum(1 for f in frames if not f.complete and not f.repaired),
        frames_repaired=sum(1 for f in frames if f.repaired),
        frames_per_second=(len(good) - 1) / dur if dur > 0 else float("nan"), bytes_received=int(size.sum()),
        bitrate_kbps=float(size.sum()) * 8 / 1e3 / span_s if span_s > 0 else float("nan"),
        key_frames=sum(1 for f in good if f.key), key_rule=rule,
        freeze_count=freezes, total_freezes_duration_s=freeze_s, pause_count=pauses, total_pauses_duration_s=pause_s,
        fps_series=tuple(float(x) for x in fps), kbps_series=tuple(float(x) for x in kbps), frames=frames,
    )


def _freezes(shown: np.ndarray) -> tuple[int, float, int, float]:
    """W3C freezes and pauses over render times (s): (freezeCount, totalFreezesDuration,
    pauseCount, totalPausesDuration)."""
    window: list[float] = []
    freezes = pauses = 0
    freeze_s = pause_s = 0.0
    for d in np.diff(shown).tolist():
        if d > PAUSE_S:  # webrtc-stats pauseCount: more than 5 s since the last rendered frame
            pauses += 1
            pause_s += d
            continue
        if window:
            mean = sum(window) / len(window)
            if d >= max(FREEZE_FACTOR * mean, mean + FREEZE_MARGIN_S):  # webrtc-stats freezeCount
                freezes += 1
                freeze_s += d
        window.append(d)
        if len(window) > FREEZE_WINDOW:
            window.pop(0)
    return freezes, freeze_s, pauses, pause_s


#: RFC 3551 §6 Table 5: the static payload type of MPEG-2 transport streams (RFC 2250).
_MP2T_PT = 33


def stream_header_facts(stream: Any, *, rtx: Any = None, key_frames: Mapping[int, bool] | None = None,
                        clock_rate: int = 90_000, extensions: Any = None) -> HeaderFacts:
    """:func:`header_facts` of a :class:`qoe.rtp.RtpStream` (scanned with its packets), with the
    packets of its RTX stream (RFC 4588) when known (padding-only RTX packets left out), and
    the queueing delay when ``extensions`` (:class:`qoe.rtp.HeaderExtensions` of the stream,
    row for row with its packets) carry abs-send-time."""
    p = stream.packets
    sizes = p.sizes()  # on the wire: a snap length that cut the packets does not shrink them
    marker = p.marker
    if stream.payload_type == _MP2T_PT or (getattr(stream, "codec", None) or "").upper() == "MP2T":
        # RFC 2250 §2: MPEG-TS over RTP sets the marker bit only where the timestamp is
        # discontinuous, never at a frame's end: each timestamp group stands whole on its own
        # (complete when no packet is missing), or none would ever be complete
        marker = np.ones(len(p), dtype=bool)
    kw: dict[str, Any] = {}
    if rtx is not None and rtx.packets is not None and len(rtx.packets):
        r = rtx.packets
        keep = np.array([len(x) > 0 for x in r.payloads], dtype=bool) if r.payloads else np.ones(len(r), dtype=bool)
        # the originals' timestamps, extended as the media stream's (RFC 4588 §4: the same value)
        ts = _extend_like(r.timestamp[keep].astype(np.int64), p.timestamp.astype(np.int64), p.ts_ext)
        kw = {"rtx_timestamps": ts, "rtx_arrival_ns": r.arrival_ns[keep]}
    facts = header_facts(p.seq_ext, p.ts_ext, marker, p.arrival_ns, sizes, clock_rate=clock_rate,
                         key_frames=key_frames, **kw)
    jit = in_order_jitter_ms(p, clock_rate)
    if jit.size:
        facts = dataclasses.replace(facts, jitter_ms=float(jit[-1]))
    if extensions is None or len(extensions) != len(p):
        return facts
    send = extensions.abs_send_time_s()
    if not np.isfinite(send).any():
        why = ("none: transport-wide-cc numbers packets but carries no time (its feedback is SRTCP); no abs-send-time"
               if (extensions.transport_seq() >= 0).any() else "none: no abs-send-time header extension")
        return dataclasses.replace(facts, queue_delay_source=why)
    return dataclasses.replace(facts, **_queueing_delay(p.arrival_ns, send))


def _extend_like(raw: np.ndarray, media_raw: np.ndarray, media_ext: np.ndarray) -> np.ndarray:
    """32-bit timestamps extended to the media stream's nearest extended value (RFC 3550 A.1 style)."""
    if raw.size == 0 or media_raw.size == 0:
        return raw
    lookup = dict(zip(media_raw.tolist(), media_ext.tolist()))
    base = int(media_ext[0]) - int(media_raw[0])
    return np.array([lookup.get(t, t + base) for t in raw.tolist()], dtype=np.int64)


#: Fewest packets with a send time for a queueing-delay estimate.
_MIN_TIMED = 10


def _queueing_delay(arrival_ns: np.ndarray, send_s: np.ndarray, *, source: str = "abs-send-time"
                   ) -> dict[str, Any]:
    """One-way delay in excess of the smallest, from arrival and send times (see the module notes).

    Parameters
    ----------
    arrival_ns : numpy.ndarray of int64
        Capture times of the packets.
    send_s : numpy.ndarray of float
        Their send times (s, any origin; NaN where unknown), e.g.
        :meth:`qoe.rtp.HeaderExtensions.abs_send_time_s`.

    Returns
    -------
    dict
        The ``queue_delay_*`` fields of :class:`HeaderFacts`.
    """
    arr = np.asarray(arrival_ns, dtype=np.int64)
    send = np.asarray(send_s, dtype=np.float64)
    ok = np.isfinite(send)
    if int(ok.sum()) < _MIN_TIMED:
        return {"queue_delay_source": f"none: fewer than {_MIN_TIMED} packets carry {source}"}
    t0 = int(arr.min())
    a = arr[ok]
    owd_ms = (a - a[0]) / 1e6 - (send[ok] - send[ok][0]) * 1e3
    q = owd_ms - owd_ms.min()
    sec = (a - t0) // 1_000_000_000
    n_sec = int((int(arr.max()) - t0) // 1_000_000_000) + 1
    series = [float(np.median(q[sec == k])) if np.any(sec == k) else float("nan") for k in range(n_sec)]
    return {
        "queue_delay_source": source,
        "queue_delay_p50_ms": float(np.percentile(q, 50)),
        "queue_delay_p95_ms": float(np.percentile(q, 95)),
        "queue_delay_max_ms": float(q.max()),
        "queue_delay_series_ms": tuple(series),
    }
