"""Time series of one scored item: a call direction per window, a video stream per frame.

* :func:`call_series` — a voice direction's network-side scores per window
  (:class:`qoe.voice.WindowScores`): mouth-to-ear delay, loss after the jitter buffer and
  G.107 MOS, one point per window, with the call's overall MOS as a line.
* :func:`video_frames` — a video stream scored against its reference: PSNR and SSIM of
  every reference frame against the frame on screen, frames on which the screen froze
  (still the previous frame) shaded, frames never shown marked.
* :func:`video_rtp` — a video stream's facts from its RTP headers (encrypted or not): frames
  and payload kbit/s per second, W3C freezes (webrtc-stats ``freezeCount``) shaded.
* :func:`streaming_series` — an adaptive streaming session: played bitrate, buffer,
  startup and stalls over time.

References
----------
.. [1] ITU-T G.107 (06/2015), §7 (R from delay and loss) and Annex B (R → MOS).
.. [2] Z. Wang et al., "Image quality assessment: from error visibility to structural
   similarity", IEEE Trans. Image Process. 13(4), 2004 (SSIM).
.. [3] C. Pujol et al., "A QoE Perspective on Sizing Network Buffers", ACM IMC 2014, §7–§8.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from qoe.errors import InputError
from qoe.plot._mpl import new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["call_series", "video_frames", "video_rtp", "frozen_mask", "streaming_series"]


def call_series(direction: Any, *, title: str | None = None) -> Figure:
    """Delay, loss and MOS per window of one scored call direction.

    Parameters
    ----------
    direction : qoe.voice.DirectionScore
        One direction of a call from :func:`qoe.score` (or :func:`qoe.voice.score_call`)
        with its network-side score.
    title : str, optional
        Default: the stream and its direction.

    Returns
    -------
    matplotlib.figure.Figure
        Three panels sharing the time axis (seconds from the stream's first packet):
        mean mouth-to-ear delay (ms), loss after the jitter buffer (%, G.107 Ppl), and
        the G.107 MOS per window with the whole stream's MOS dashed.

    Raises
    ------
    InputError
        ``direction`` has no network-side score (nothing was received).
    """
    network = getattr(direction, "network", None)
    windows = getattr(network, "windows", None)
    if windows is None:
        raise InputError(f"{getattr(direction, 'stream', direction)!r}: no network-side scores to plot")
    t = np.asarray(windows.start_s, dtype=float) + windows.window_s / 2
    fig = new_figure(figsize=(8, 6))
    ax_d, ax_l, ax_m = fig.subplots(3, 1, sharex=True)
    ax_d.plot(t, windows.delay_ms, marker="o", ms=3)
    ax_d.set_ylabel("delay (ms)")
    ax_l.bar(t, windows.ppl, width=windows.window_s * 0.8, color="#d7191c")
    ax_l.set_ylabel("loss (%)")
    ax_m.plot(t, windows.mos, marker="o", ms=3, color="#1a9641", label="per window")
    ax_m.axhline(network.mos, ls="--", color="grey", label=f"call {network.mos:.2f}")
    ax_m.set_ylim(1, 4.6)
    ax_m.set_ylabel("MOS (G.107)")
    ax_m.set_xlabel(f"time (s), windows of {windows.window_s:g} s")
    ax_m.legend(loc="lower left", fontsize=8)
    for ax in (ax_d, ax_l, ax_m):
        ax.grid(alpha=0.3)
    label = getattr(direction, "direction", None)  # "user talks" / "user listens", or None
    fig.suptitle(title or (f"{direction.stream} ({label})" if label else direction.stream))
    return fig


def frozen_mask(shown: Any) -> np.ndarray:
    """Which reference frames met a frozen screen: the same received frame as the one before.

    Parameters
    ----------
    shown : array of int
        Per reference frame, the index of the received frame on screen (negative: none yet).

    Returns
    -------
    ndarray of bool
        True where the frame shown is the previous reference frame's (a lost, late or
        undecodable frame): the count of True is :attr:`qoe.video.VideoScore.frames_frozen`.
    """
    shown = np.asarray(shown)
    out = np.zeros(shown.shape, dtype=bool)
    out[1:] = (shown[1:] == shown[:-1]) & (shown[1:] >= 0)
    return out


def _spans(mask: np.ndarray) -> list[tuple[int, int]]:
    """Runs of True as (first, last) index pairs."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(np.int8), [0]])))
    return list(zip(edges[::2], edges[1::2] - 1))


def video_frames(video: Any, *, title: str | None = None) -> Figure:
    """PSNR and SSIM per reference frame of a scored video stream, freezes shaded.

    Parameters
    ----------
    video : qoe.video.VideoScore
        A stream scored against its reference (:func:`qoe.score` with a reference video).
    title : str, optional
        Default: the stream's name.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels over the reference's presentation time (s): PSNR (dB) and SSIM per
        frame; spans where the screen froze (:func:`frozen_mask`) shaded blue, frames
        with nothing on screen marked red on the time axis.

    Raises
    ------
    InputError
        ``video`` carries no frame comparison (a stream without a reference).
    """
    cmp = getattr(video, "comparison", None)
    if cmp is None:
        raise InputError(f"{getattr(video, 'label', video)!r}: no frame scores to plot (score it with a reference)")
    t = np.asarray(cmp.ref_pts_s, dtype=float)
    shown = np.asarray(cmp.dist_index)
    frozen = frozen_mask(shown)
    fig = new_figure(figsize=(8, 5))
    ax_p, ax_s = fig.subplots(2, 1, sharex=True)
    psnr = np.asarray(cmp.psnr.values, dtype=float)
    identical = np.isposinf(psnr)  # PSNR of a frame equal to its reference is +inf: drawn on top
    ax_p.plot(t, np.where(identical, np.nan, psnr), lw=1)
    if identical.any():
        top = np.nanmax(np.where(np.isfinite(psnr), psnr, np.nan)) if np.isfinite(psnr).any() else 60.0
        ax_p.plot(t[identical], np.full(int(identical.sum()), top + 2), "^", ms=3, color="grey",
                  label="identical (∞ dB)")
        ax_p.legend(loc="lower left", fontsize=8)
    ax_p.set_ylabel("PSNR (dB)")
    ax_s.plot(t, cmp.ssim.values, lw=1, color="#1a9641")
    ax_s.set_ylabel("SSIM")
    ax_s.set_xlabel("reference time (s)")
    step = float(np.median(np.diff(t))) if t.size > 1 else 0.0
    for ax in (ax_p, ax_s):
        for a, b in _spans(frozen):
            ax.axvspan(t[a] - step / 2, t[b] + step / 2, color="#2c7bb6", alpha=0.2, lw=0)
        none = t[shown < 0]
        if none.size:
            ax.plot(none, np.full(none.size, ax.get_ylim()[0]), "|", color="#d7191c", ms=8)
        ax.grid(alpha=0.3)
    n_frozen = int(frozen.sum())
    fig.suptitle(title or f"{getattr(video, 'label', 'video')}: {n_frozen} frozen frame(s) shaded")
    return fig


def streaming_series(session: Any, *, title: str | None = None) -> Figure:
    """Played bitrate, buffer and stalls over time of one adaptive streaming session.

    Parameters
    ----------
    session : qoe.video.has.StreamingSession
        From :func:`qoe.score` (``kind="streaming"``) or :func:`qoe.video.has.sessions`.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        Two panels over session time (s): the declared bitrate of the video being played
        (kbit/s, one step per ``tick_s``) with the requested segments' bitrates as dots
        at their completion; the playable buffer (s of media). Startup and stalls are
        shaded red in both.
    """
    tables = session.tables()
    sec = tables["seconds"]
    if not sec:
        raise InputError(f"{getattr(session, 'label', session)!r}: nothing to plot (no segment was played)")
    t = np.array([r["t_s"] for r in sec], dtype=float)
    rate = np.array([r["bitrate_kbps"] for r in sec], dtype=float)
    buf = np.array([r["buffer_s"] for r in sec], dtype=float)
    fig = new_figure(figsize=(8, 5))
    ax_r, ax_b = fig.subplots(2, 1, sharex=True)
    ax_r.step(t, rate, where="post", lw=1.5, label="played")
    segs = [r for r in tables["segments"] if r["media_type"] in ("video", "muxed") and r["number"] >= 0]
    if segs:
        ax_r.plot([r["response_end_s"] for r in segs], [r["bandwidth"] / 1e3 for r in segs], ".", ms=4,
                  color="grey", label="downloaded")
    ax_r.set_ylabel("video bitrate (kbit/s)")
    ax_r.legend(loc="lower right", fontsize=8)
    ax_b.plot(t, buf, lw=1.2, color="#1a9641")
    ax_b.set_ylabel("buffer (s of media)")
    ax_b.set_xlabel("session time (s)")
    start = getattr(session, "join_time_s", float("nan"))
    spans = [(0.0, start)] if np.isfinite(start) else []
    spans += [(s["start_s"], s["start_s"] + s["duration_s"]) for s in tables["stalls"]]
    for ax in (ax_r, ax_b):
        for a, b in spans:
            ax.axvspan(a, b, color="#d7191c", alpha=0.2, lw=0)
        ax.grid(alpha=0.3)
    fig.suptitle(title or f"{getattr(session, 'label', 'session')}: {len(tables['stalls'])} stall(s); "
                          "startup and stalls shaded")
    return fig


def video_rtp(video: Any, *, title: str | None = None) -> Figure:
    """Frames and bitrate per second of a video stream, from its RTP headers, freezes shaded.

    Parameters
    ----------
    video : qoe.video.StreamFacts or qoe.video.VideoScore
        An RTP video stream (its :class:`qoe.video.HeaderFacts`, encrypted or not).
    title : str, optional
        Default: the stream's name and its freeze count.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels over seconds from the stream's first packet: complete frames per second
        (≈ getStats ``framesPerSecond``) and payload kbit/s; the W3C freezes (an interval
        between completed frames ≥ max(3 × mean, mean + 150 ms), :mod:`qoe.video.headers`)
        shaded where they happened.

    Raises
    ------
    InputError
        ``video`` has no header facts (MPEG-TS in UDP, or not a video stream).
    """
    facts = getattr(video, "facts", video)
    h = getattr(facts, "headers", None)
    if h is None:
        raise InputError(f"{getattr(video, 'label', video)!r}: no RTP header facts to plot (not an RTP video stream)")
    t = np.arange(len(h.fps_series)) + 0.5
    fig = new_figure(figsize=(8, 5))
    ax_f, ax_b = fig.subplots(2, 1, sharex=True)
    ax_f.step(t, h.fps_series, where="mid", lw=1)
    ax_f.set_ylabel("frames / s")
    ax_b.step(t, h.kbps_series, where="mid", lw=1, color="#1a9641")
    ax_b.set_ylabel("payload kbit/s")
    ax_b.set_xlabel("time from the stream's first packet (s)")
    done = sorted(f.last_arrival_s for f in h.frames if f.complete or f.repaired)
    gaps = np.diff(done) if len(done) > 1 else np.zeros(0)
    window: list[float] = []
    for i, d in enumerate(gaps.tolist()):  # the freezes, as qoe.video.headers counts them
        if window:
            mean = sum(window) / len(window)
            if d <= 5.0 and d >= max(3 * mean, mean + 0.150):
                for ax in (ax_f, ax_b):
                    ax.axvspan(done[i], done[i + 1], color="#2c7bb6", alpha=0.2, lw=0)
        if d <= 5.0:
            window = (window + [d])[-30:]
    for ax in (ax_f, ax_b):
        ax.grid(alpha=0.3)
    fig.suptitle(title or f"{getattr(video, 'label', 'video')}: {h.freeze_count} freeze(s) shaded")
    return fig
