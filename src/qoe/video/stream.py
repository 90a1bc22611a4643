"""Score a received video stream: stream facts, and with a reference, per-frame quality.

The pipeline for one stream: the receiver rebuilds and decodes it
(:mod:`qoe.video.receiver`); its frames are placed on the reference's time line
(:mod:`qoe.video.align`: by presentation time, the offset found by content when the
stream did not keep the reference's timestamps); for each reference frame the frame on
screen is compared with it (PSNR and SSIM on luma, :mod:`qoe.video.metrics`) and mapped to
MOS (:mod:`qoe.video.mos`). Without a reference the stream facts are the result: what an
operator sees without the source (frames decoded, damaged, frozen; packets lost and late).

Decoding happens twice per stream (thumbnails to align, then full frames to score), so that
memory holds a few frames at a time, whatever the stream's length.

References
----------
.. [1] Pujol et al., "A QoE Perspective on Sizing Network Buffers", IMC 2014, §8.1 (PSNR and
   SSIM of each frame mapped to MOS; medians reported).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from qoe.errors import AlignmentError, InputError
from qoe.video.align import THUMB_SIZE, Offset, find_offset, shown_frames, thumbnail
from qoe.video.receiver import CLOCK_HZ, ReceivedVideo

__all__ = ["StreamFacts", "VideoScore", "stream_facts", "score_stream"]

# A gap between frames longer than this many frame intervals is a freeze (a frame missing).
_FREEZE_GAP = 1.5


@dataclass(frozen=True)
class StreamFacts:
    """What the received stream shows without a reference.

    Attributes
    ----------
    name, transport, codec, buffer : str
    width, height : int
        Decoded picture size (0 when nothing decoded).
    frame_rate : float
        From the most common interval between presentation times (NaN: fewer than 2 frames).
    packets_received, packets_lost, packets_late : int
    ts_cc_errors : int
        MPEG-TS continuity-counter errors (0 for H.264 over RTP).
    frames_expected : int
        Frames between the first and the last decoded one at the frame rate.
    frames_decoded, frames_damaged : int
        Frames the decoder gave; those decoded from data that lost packets.
    frames_missing : int
        ``frames_expected - frames_decoded`` (not below 0): each leaves the previous frame
        on screen.
    freeze_events : int
        Gaps of more than 1.5 frame intervals between consecutive decoded frames.
    freeze_s : float
        Time the screen stayed frozen beyond the normal frame interval, summed.
    keyframes_damaged : int
        Key pictures (IDR, I slices, or MPEG-TS random access points) that lost packets.
    first_pts, last_pts : int
        Presentation times (90 kHz) of the first and last decoded frame.
    notes : tuple of str
    """

    name: str
    transport: str
    codec: str
    buffer: str
    width: int
    height: int
    frame_rate: float
    packets_received: int
    packets_lost: int
    packets_late: int
    ts_cc_errors: int
    frames_expected: int
    frames_decoded: int
    frames_damaged: int
    frames_missing: int
    freeze_events: int
    freeze_s: float
    keyframes_damaged: int
    first_pts: int
    last_pts: int
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Pass:
    """What a first decoding pass keeps: times, flags and thumbnails, no full frames."""

    pts: np.ndarray
    damaged: np.ndarray
    thumbs: np.ndarray
    width: int
    height: int


def _first_pass(frames: Iterator[Any]) -> _Pass:
    """Times, damage flags and thumbnails of frames given in presentation order."""
    pts, dmg, thumbs = [], [], []
    w = h = 0
    for f in frames:
        pts.append(f.pts)
        dmg.append(f.damaged)
        thumbs.append(thumbnail(f.y))
        h, w = f.y.shape
    return _Pass(
        pts=np.asarray(pts, dtype=np.int64),
        damaged=np.asarray(dmg, dtype=bool),
        thumbs=np.asarray(thumbs, dtype=np.float32).reshape(-1, THUMB_SIZE[1], THUMB_SIZE[0]),
        width=w,
        height=h,
    )


def _interval(pts: np.ndarray) -> int | None:
    """The most common positive step between presentation times (ticks)."""
    d = np.diff(np.unique(pts))
    d = d[d > 0]
    if d.size == 0:
        return None
    vals, counts = np.unique(d, return_counts=True)
    return int(vals[np.argmax(counts)])


def _facts(video: ReceivedVideo, p: _Pass) -> StreamFacts:
    step = _interval(p.pts)
    n = int(p.pts.size)
    if step is None or n == 0:
        expected, events, freeze, rate = n, 0, 0.0, float("nan")
    else:
        span = int(p.pts[-1] - p.pts[0])
        expected = span // step + 1
        gaps = np.diff(p.pts)
        long = gaps > _FREEZE_GAP * step
        events = int(np.count_nonzero(long))
        freeze = float(np.sum(gaps[long] - step)) / CLOCK_HZ
        rate = CLOCK_HZ / step
    return StreamFacts(
        name=video.name, transport=video.transport, codec=video.codec, buffer=video.buffer,
        width=p.width, height=p.height, frame_rate=rate,
        packets_received=video.packets_received, packets_lost=video.packets_lost, packets_late=video.packets_late,
        ts_cc_errors=video.ts_cc_errors, frames_expected=int(expected), frames_decoded=n,
        frames_damaged=int(np.count_nonzero(p.damaged)), frames_missing=max(0, int(expected) - n),
        freeze_events=events, freeze_s=freeze, keyframes_damaged=video.keyframes_damaged,
        first_pts=int(p.pts[0]) if n else 0, last_pts=int(p.pts[-1]) if n else 0, notes=video.notes,
    )


def stream_facts(video: ReceivedVideo) -> StreamFacts:
    """The no-reference facts of a received stream (one decoding pass)."""
    return _facts(video, _first_pass(sorted_frames(video.frames())))


@dataclass(frozen=True)
class VideoScore:
    """A received stream scored against its reference, frame by frame.

    Attributes
    ----------
    facts : StreamFacts
    reference : str
    alignment : str
        ``"pts"`` or ``"content"`` (see :class:`qoe.video.align.Offset`).
    offset_s : float
        Added to received presentation times to put them on the reference's time line.
    ref_time_s : numpy.ndarray of float
        Per scored reference frame, its presentation time.
    shown : numpy.ndarray of int64
        Per scored reference frame, the index (in presentation order) of the received
        frame on screen; -1 when none had been decoded yet (compared with black).
    frozen : numpy.ndarray of bool
        Per scored reference frame: the frame on screen is the one already shown for the
        previous reference frame.
    psnr_db, ssim : numpy.ndarray of float
        Per scored reference frame (luma); PSNR is inf for identical frames.
    frames_scored : int
    frames_frozen : int
    psnr_clip_db : float
        FFmpeg's clip PSNR: the PSNR of the mean squared error over all scored frames.
    psnr_mean_db, psnr_median_db, ssim_mean, ssim_median : float
    mos_psnr, mos_ssim : float
        The median over frames of the per-frame MOS (the seed paper reports medians).
    """

    facts: StreamFacts
    reference: str
    alignment: str
    offset_s: float
    ref_time_s: np.ndarray
    shown: np.ndarray
    frozen: np.ndarray
    psnr_db: np.ndarray
    ssim: np.ndarray
    mse: np.ndarray
    frames_scored: int
    frames_frozen: int
    psnr_clip_db: float
    psnr_mean_db: float
    psnr_median_db: float
    ssim_mean: float
    ssim_median: float
    mos_psnr: float
    mos_ssim: float


def score_stream(
    video: ReceivedVideo,
    reference: str | os.PathLike[str],
    *,
    data_range: float = 255.0,
) -> VideoScore:
    """Score a received stream against its reference file, frame by frame.

    Parameters
    ----------
    video : ReceivedVideo
        From :func:`qoe.video.receiver.receive_rtp` or :func:`~qoe.video.receiver.receive_ts`.
    reference : path
        The video that was sent (any file FFmpeg reads).
    data_range : float, keyword-only
        Pixel value range (255 for 8-bit video).

    Notes
    -----
    The scored reference frames are those from the first received frame's time to the
    last's; before the stream's first decoded frame the screen is black (luma 16, the
    bottom of the limited range, ITU-R BT.601/709), and such frames score against it.

    Raises
    ------
    AlignmentError
        The stream or the reference decodes to nothing.
    """
    from qoe.video import io as vio  # noqa: PLC0415
    from qoe.video import metrics, mos  # noqa: PLC0415

    ref_name = os.fspath(reference)
    dist = _first_pass(sorted_frames(video.frames()))
    ref = _first_pass(_ref_frames(vio, ref_name))
    facts = _facts(video, dist)
    if dist.pts.size == 0:
        raise AlignmentError(f"{video.name}: no frame could be decoded from the received stream")
    off: Offset = find_offset(ref.pts, ref.thumbs, dist.pts, dist.thumbs, usable=~dist.damaged)
    dpts = dist.pts + off.ticks
    lo, hi = dpts[0], dpts[-1]
    step = _interval(ref.pts) or 0
    sel = np.flatnonzero((ref.pts >= lo - step) & (ref.pts <= hi))
    if sel.size == 0:
        raise AlignmentError(
            f"{video.name}: the received frames ({lo / CLOCK_HZ:.3f}-{hi / CLOCK_HZ:.3f} s in the reference's "
            f"time) do not overlap the reference {ref_name}"
        )
    shown = shown_frames(ref.pts[sel], dpts)
    frozen = np.zeros(sel.size, dtype=bool)
    frozen[1:] = (shown[1:] == shown[:-1]) & (shown[1:] >= 0)
    want = set(sel.tolist())
    mse = np.empty(sel.size)
    psnr = np.empty(sel.size)
    ssim = np.empty(sel.size)
    # second pass: full frames, both in presentation order, received one kept while on screen
    dist_iter = iter(sorted_frames(video.frames()))
    cur_idx, cur = -1, None
    k = 0
    for i, rf in enumerate(_ref_frames(vio, ref_name)):
        if i not in want:
            continue
        while cur_idx < shown[k]:
            cur = next(dist_iter)
            cur_idx += 1
        ry = rf.y
        dy = cur.y if shown[k] >= 0 and cur is not None else np.full_like(ry, 16)
        if dy.shape != ry.shape:
            raise InputError(
                f"{video.name}: received frames are {dy.shape[1]}x{dy.shape[0]}, the reference {ref_name} "
                f"{ry.shape[1]}x{ry.shape[0]}"
            )
        mse[k] = metrics.mse(ry, dy)
        psnr[k] = metrics.psnr(ry, dy, data_range=data_range)
        ssim[k] = metrics.ssim(ry, dy, data_range=data_range)
        k += 1
    clip = float(metrics.psnr_from_mse(np.mean(mse), data_range=data_range))
    return VideoScore(
        facts=facts, reference=ref_name, alignment=off.method, offset_s=off.ticks / CLOCK_HZ,
        ref_time_s=ref.pts[sel] / CLOCK_HZ, shown=shown, frozen=frozen, psnr_db=psnr, ssim=ssim, mse=mse,
        frames_scored=int(sel.size), frames_frozen=int(np.count_nonzero(frozen)), psnr_clip_db=clip,
        psnr_mean_db=float(np.mean(psnr)), psnr_median_db=float(np.median(psnr)),
        ssim_mean=float(np.mean(ssim)), ssim_median=float(np.median(ssim)),
        mos_psnr=float(np.median(mos.psnr_to_mos(psnr))), mos_ssim=float(np.median(mos.ssim_to_mos(ssim))),
    )


def sorted_frames(frames: Iterator[Any]) -> Iterator[Any]:
    """Frames in presentation order (decoders emit them so; this checks, and holds one back)."""
    last = None
    for f in frames:
        if last is not None and f.pts < last:
            continue  # a frame out of order (a damaged stream's decoder output): not shown
        last = f.pts
        yield f


def _ref_frames(vio: Any, path: str) -> Iterator[Any]:
    """The reference's frames with pts in 90 kHz ticks."""
    for f in vio.read_frames(path):
        yield _RefFrame(pts=int(round(f.pts_s * CLOCK_HZ)), y=f.y, damaged=False)


@dataclass(frozen=True, slots=True)
class _RefFrame:
    pts: int
    y: np.ndarray
    damaged: bool
