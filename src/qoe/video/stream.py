"""Score a received video stream: stream facts, and with a reference, per-frame quality.

The pipeline for one stream: the receiver rebuilds and decodes it
(:mod:`qoe.video.receiver`); its frames are placed on the reference's time line
(:mod:`qoe.video.align`: by presentation time, the offset found by content when the
stream did not keep the reference's timestamps); for each reference frame the frame on
screen is compared with it (PSNR and SSIM on luma, :mod:`qoe.video.metrics`) and mapped to
MOS (:mod:`qoe.video.mos`). Without a reference the stream facts are the result: what an
operator sees without the source (frames decoded, damaged, frozen; packets lost and late).

The received stream is decoded once: its first pass keeps, besides times, flags and
thumbnails (to align), the luma planes of the frames shown, up to :data:`RETAIN_BYTES`
(10 s of 720p fit); the scoring pass takes them from there. A longer stream is decoded a
second time instead, so that memory stays bounded whatever the stream's length. The
reference is decoded once too: its pass (thumbnails of all its frames to align) keeps its
luma planes under the same bound (a second :data:`RETAIN_BYTES`), and its frames in the
received stream's span are scored from there; a longer reference is read again.

References
----------
.. [1] Pujol et al., "A QoE Perspective on Sizing Network Buffers", IMC 2014, §8.1 (PSNR and
   SSIM of each frame mapped to MOS; medians reported).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from qoe.capture import capture_path
from qoe.errors import AlignmentError, InputError, QoEWarning, UnsupportedCodecError
from qoe.options import OptionsBase
from qoe.report import as_dict, brief
from qoe.video.align import THUMB_SIZE, Offset, find_offset, thumbnail
from qoe.video._ssim import SSIM_VARIANTS
from qoe.video.comparison import VideoComparison, compare_frames
from qoe.rtp.srtp import parse_srtp_key
from qoe.video._decrypt import decrypt_source
from qoe.video.flows import find_video
from qoe.video.headers import HeaderFacts, stream_header_facts
from qoe.video.io import Frame, read_frames
from qoe.video.mos import PSNR_TABLES
from qoe.video.receiver import CLOCK_HZ, ReceivedVideo, receive_rtp, receive_ts

__all__ = ["MAX_FRAMES", "RETAIN_BYTES", "VideoOptions", "StreamFacts", "VideoScore", "stream_facts", "score_stream", "score_capture", "iter_score_capture"]

#: Default of ``VideoOptions.max_frames``: most frames of one stream (and of the reference)
#: a scoring pass takes. Each frame taken keeps its time, flags and a 32x18 luma thumbnail
#: (about 2.5 KiB while the pass runs, twice that when it ends), so 100,000 frames (66 min
#: at 25 fps, 28 min at 60 fps) stay within 0.5 GB.
MAX_FRAMES = 100_000


@dataclass(frozen=True)
class VideoOptions(OptionsBase):
    """How to score the video streams of a capture (what :func:`qoe.score` passes on).

    Attributes
    ----------
    sdp : str or path, optional
        An SDP (file or text) for RTP streams the capture's signalling does not describe
        (what ``ffmpeg -sdp_file`` wrote): names dynamic payload types, carries
        ``sprop-parameter-sets``.
    jitter_buffer : str, optional
        The receiver's jitter buffer for RTP streams (``"fixed:200"``; default none:
        every packet that arrived is decoded), see :func:`qoe.rtp.parse_jitter_buffer`.
    variant : {"wang", "ssim.m", "ffmpeg"}
        SSIM definition (:data:`qoe.video.SSIM_VARIANTS`).
    psnr_table : str
        PSNR → MOS table (:data:`qoe.video.PSNR_TABLES`).
    max_frames : int or None
        Most frames of a stream (and of the reference) scored (default
        :data:`MAX_FRAMES`; None: no limit). A longer stream is scored on its first
        ``max_frames`` frames shown, with a :class:`~qoe.errors.QoEWarning` and a note
        starting ``partial:`` in its result.
    srtp_keys : tuple of str
        SRTP master keys (``SUITE:BASE64``, :func:`qoe.rtp.srtp.parse_srtp_key`) to decrypt
        SRTP video streams with, besides the ``a=crypto`` keys of their SDP (the same
        option as :class:`qoe.voice.CallOptions`'s).
    """

    sdp: str | None = None
    jitter_buffer: str | None = None
    variant: str = "wang"
    psnr_table: str = "zinner2010"
    max_frames: int | None = MAX_FRAMES
    srtp_keys: tuple[str, ...] = ()

    KIND: ClassVar[str] = "video"

    def __post_init__(self) -> None:
        if self.variant not in SSIM_VARIANTS:
            raise InputError(f"variant must be one of {', '.join(SSIM_VARIANTS)}; given {self.variant!r}")
        if self.psnr_table not in PSNR_TABLES:
            raise InputError(f"psnr_table must be one of {', '.join(PSNR_TABLES)}; given {self.psnr_table!r}")
        if self.sdp is not None:
            if not isinstance(self.sdp, (str, os.PathLike)):
                raise InputError(f"sdp must be an SDP file's path (str or os.PathLike); given {type(self.sdp).__name__}")
            object.__setattr__(self, "sdp", os.fspath(self.sdp))
        _check_max_frames(self.max_frames)
        keys = (self.srtp_keys,) if isinstance(self.srtp_keys, str) else tuple(self.srtp_keys)
        for k in keys:
            parse_srtp_key(k)  # raises InputError / UnsupportedCodecError naming the suite
        object.__setattr__(self, "srtp_keys", keys)

    def to_dict(self) -> dict[str, Any]:
        """The options as plain Python (keys as their suite only: a key never leaves in a report)."""
        out = as_dict(self)
        out["srtp_keys"] = [f"{parse_srtp_key(k).suite}:***" for k in self.srtp_keys]
        return out


def _check_max_frames(max_frames: int | None) -> None:
    if max_frames is not None and (isinstance(max_frames, bool) or not isinstance(max_frames, int) or max_frames < 1):
        raise InputError(f"max_frames must be a whole number of at least 1 (or None: no limit); given {max_frames!r}")


class _Unset:
    """The default of a deprecated per-field keyword: tells "not given" from any value."""

    def __repr__(self) -> str:
        return "<not given>"


_UNSET: Any = _Unset()
# Old keyword -> VideoOptions field (issue 21: the CLI flag and the option field share one name).
_FIELD = {"sdp": "sdp", "buffer": "jitter_buffer", "variant": "variant", "psnr_table": "psnr_table",
          "max_frames": "max_frames"}


def _resolve(func: str, options: VideoOptions | None, **given: Any) -> VideoOptions:
    """The options of a call: ``options``, or the deprecated keywords made into one (issue 21).

    A keyword given beside ``options`` is ambiguous: an InputError rather than one of them
    silently winning. Keywords alone still work for one release, with a DeprecationWarning
    that names the new spelling.
    """
    kw = {_FIELD[k]: v for k, v in given.items() if v is not _UNSET}
    if options is not None:
        if not isinstance(options, VideoOptions):
            raise InputError(f"{func}: options must be a qoe.video.VideoOptions; given {type(options).__name__}")
        if kw:
            raise InputError(
                f"{func}: ambiguous options: {', '.join(sorted(kw))} given both as keyword(s) and in options=; "
                "give them in VideoOptions only"
            )
        return options
    if not kw:
        return VideoOptions()
    spelled = ", ".join(f"{k}={v!r}" for k, v in kw.items())
    warnings.warn(f"{func}({', '.join(f'{k}=' for k in given if given[k] is not _UNSET)}...) is deprecated and goes "
                  f"in the next release: pass options=VideoOptions({spelled})", DeprecationWarning, stacklevel=3)
    return VideoOptions(**kw)


#: Bytes of luma planes the first decoding pass keeps for the scoring pass (the bounded
#: look-ahead of :func:`score_stream`), for the received stream and again for the reference:
#: 256 MiB hold 290 frames of 1280x720 (11.6 s at 25 fps) or 2,600 of 352x288; a stream or
#: reference with more is decoded a second time instead. Scoring 10 s of 720p so peaks at
#: 550 MiB (330 MiB when the reference was read twice; benchmarks/video_e2e.py's files).
RETAIN_BYTES = 256 * 2**20
# The chroma planes of a kept received frame: the scoring is on luma (compare_frames, planes="y").
_NO_PLANE = np.empty((0, 0), dtype=np.uint8)

# A gap between frames longer than this many frame intervals is a freeze (a frame missing).
_FREEZE_GAP = 1.5


@dataclass(frozen=True)
class StreamFacts:
    """What the received stream shows without a reference.

    Attributes
    ----------
    name, transport, codec : str
    jitter_buffer : str
        The receiver's jitter buffer (``"none"`` for plain UDP and streams not decoded;
        ``buffer``, its old name, still reads it for one release, with a
        :class:`DeprecationWarning`). The JSON key and table column are ``jitter_buffer``
        too (``buffer`` before issue 21).
        Decoded picture size (0 when nothing decoded).
    frame_rate : float
        From the most common interval between presentation times (NaN: fewer than 2 frames).
    packets_received, packets_lost, packets_late : int
        As :class:`qoe.video.receiver.ReceivedVideo`'s: an RTP packet the capture holds twice
        is received once.
    ts_cc_errors : int
        MPEG-TS continuity-counter errors (0 for H.264 over RTP).
    frames_expected : int
        Frames between the first and the last decoded one at the frame rate.
    frames_decoded, frames_damaged : int
        Frames the decoder gave (as ``ffprobe -show_frames`` counts them); those decoded
        from data that lost packets.
    frames_untimed : int
        Decoded frames without a presentation time (the decoder gave none, e.g. after a
        lost key frame) or with one before the previous frame's: a player cannot place
        them, they are never shown.
    frames_missing : int
        ``frames_expected`` minus the frames shown (not below 0): each leaves the
        previous frame on screen.
    freeze_events : int
        Gaps of more than 1.5 frame intervals between consecutive decoded frames.
    freeze_s : float
        Time the screen stayed frozen beyond the normal frame interval, summed.
    keyframes_damaged : int
        Key pictures (IDR, I slices, or MPEG-TS random access points) that lost packets.
    first_pts, last_pts : int
        Presentation times (90 kHz) of the first and last decoded frame.
    notes : tuple of str
    headers : HeaderFacts or None
        RTP streams (encrypted or not): frames, frame rate, bitrate, key frames, W3C freezes
        and pauses from the RTP headers (:mod:`qoe.video.headers`), named after getStats()
        (``HeaderFacts.GETSTATS``); their fields are columns of :meth:`to_record`, and
        their frames the ``frames`` detail table. None for MPEG-TS.
    """

    name: str
    transport: str
    codec: str
    jitter_buffer: str
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
    frames_untimed: int
    frames_missing: int
    freeze_events: int
    freeze_s: float
    keyframes_damaged: int
    first_pts: int
    last_pts: int
    notes: tuple[str, ...] = ()
    headers: HeaderFacts | None = None

    kind: ClassVar[str] = "video"
    #: The headline columns of :meth:`to_record` with ``brief=True``.
    BRIEF_COLUMNS: ClassVar[tuple[str, ...]] = (
        "stream", "transport", "codec", "width", "height", "packets_lost", "frames_decoded", "frames_missing",
        "freeze_s",
    )

    @property
    def label(self) -> str:
        """A short name of the stream for notes."""
        return self.name

    @property
    def buffer(self) -> str:
        """Deprecated: :attr:`jitter_buffer` (issue 21: one name per concept)."""
        warnings.warn("StreamFacts.buffer is now StreamFacts.jitter_buffer; the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return self.jitter_buffer

    def identity(self) -> dict[str, Any]:
        """The columns that name this stream in detail tables."""
        return {"stream": self.name}

    def to_record(self, *, brief: bool = False) -> dict[str, Any]:
        """One flat record (the stream's row in a table); ``brief``: the headline columns.

        The header facts (:attr:`headers`) are columns too, after the decoded ones."""
        rec = {"stream": self.name, **as_dict(self, skip=("name", "notes", "headers"))}
        if self.headers is not None:
            rec.update(self.headers.to_record())
        return _brief(rec, self.BRIEF_COLUMNS) if brief else rec

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain Python (NaN kept: the serialiser decides)."""
        d = as_dict(self, skip=("headers",))
        if self.headers is not None:
            d["headers"] = self.headers.to_dict()
        return d

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        """``frames``: per RTP frame, its header facts (RTP streams; none for MPEG-TS)."""
        return {"frames": self.headers.frame_records()} if self.headers is not None else {}


_brief = brief


@dataclass(frozen=True)
class _Pass:
    """What a first decoding pass keeps: times, flags and thumbnails, no full frames."""

    pts: np.ndarray
    damaged: np.ndarray
    thumbs: np.ndarray
    width: int
    height: int
    decoded: int
    cut: bool = False  # stopped at max_frames
    kept: list[np.ndarray] | None = None  # the luma planes of the frames shown, when they fit
    kept_s: list[float | None] | None = None  # their times in seconds as decoded (``pts_s``), when kept


class _Counted:
    """An iterator that counts what passes through it."""

    def __init__(self, it: Iterable[Any]) -> None:
        self._it = iter(it)
        self.n = 0

    def __iter__(self) -> Iterator[Any]:
        for x in self._it:
            self.n += 1
            yield x


def _first_pass(frames: Iterable[Any], max_frames: int | None = None, keep_bytes: int = 0) -> _Pass:
    """Times, damage flags and thumbnails of the frames a player shows (``_sorted_frames``),
    the first ``max_frames`` of them (None: all); with ``keep_bytes``, their luma planes too
    while they fit in that many bytes (else none)."""
    counted = _Counted(frames)
    pts, dmg, thumbs = [], [], []
    kept: list[np.ndarray] | None = [] if keep_bytes > 0 else None
    secs: list[float | None] = []
    held = 0
    w = h = 0
    shown = _sorted_frames(counted)
    cut = False
    for f in shown:
        if max_frames is not None and len(pts) >= max_frames:
            cut = True  # one frame more was decoded to know the stream had more
            counted.n -= 1
            break
        pts.append(f.pts)
        dmg.append(f.damaged)
        thumbs.append(thumbnail(f.y))
        h, w = f.y.shape
        if kept is not None:
            held += f.y.nbytes
            if held > keep_bytes:
                kept = None  # too long to hold: the scoring pass decodes it again
            else:  # its own copy: a view would keep the decoder's whole picture (Y, U, V) alive
                kept.append(f.y if f.y.flags.owndata else f.y.copy())
                secs.append(getattr(f, "pts_s", None))
    return _Pass(
        pts=np.asarray(pts, dtype=np.int64),
        damaged=np.asarray(dmg, dtype=bool),
        thumbs=np.asarray(thumbs, dtype=np.float32).reshape(-1, THUMB_SIZE[1], THUMB_SIZE[0]),
        width=w,
        height=h,
        decoded=counted.n,
        cut=cut,
        kept=kept,
        kept_s=secs if kept is not None else None,
    )


def _cut_note(what: str, max_frames: int | None) -> str:
    return (f"partial: {what} has more than max_frames={max_frames} frames shown; scored on its first "
            f"{max_frames} (raise VideoOptions.max_frames, or None, to score it all)")


def _shown(frames: Iterable[Any], max_frames: int | None) -> Iterator[Any]:
    """``_sorted_frames``, the first ``max_frames`` (None: all)."""
    return itertools.islice(_sorted_frames(frames), max_frames)


def _interval(pts: np.ndarray) -> int | None:
    """The most common positive step between presentation times (ticks)."""
    d = np.diff(np.unique(pts))
    d = d[d > 0]
    if d.size == 0:
        return None
    vals, counts = np.unique(d, return_counts=True)
    return int(vals[np.argmax(counts)])


def _facts(video: ReceivedVideo, p: _Pass, max_frames: int | None = None) -> StreamFacts:
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
        name=video.name, transport=video.transport, codec=video.codec, jitter_buffer=video.jitter_buffer,
        width=p.width, height=p.height, frame_rate=rate,
        packets_received=video.packets_received, packets_lost=video.packets_lost, packets_late=video.packets_late,
        ts_cc_errors=video.ts_cc_errors, frames_expected=int(expected), frames_decoded=p.decoded,
        frames_damaged=int(np.count_nonzero(p.damaged)), frames_untimed=p.decoded - n,
        frames_missing=max(0, int(expected) - n),
        freeze_events=events, freeze_s=freeze, keyframes_damaged=video.keyframes_damaged,
        first_pts=int(p.pts[0]) if n else 0, last_pts=int(p.pts[-1]) if n else 0,
        notes=video.notes + ((_cut_note("the stream", max_frames),) if p.cut else ()),
        headers=video.headers,
    )


def stream_facts(video: ReceivedVideo, *, options: VideoOptions | None = None,
                 max_frames: int | None = _UNSET) -> StreamFacts:
    """The no-reference facts of a received stream (one decoding pass).

    ``options.max_frames`` (see :class:`VideoOptions`): a stream with more frames shown is
    described by its first ``max_frames``, with a :class:`~qoe.errors.QoEWarning` and a
    ``partial:`` note. The ``max_frames`` keyword is deprecated (one release): use
    ``options=VideoOptions(max_frames=...)``; both given is an InputError.
    """
    max_frames = _resolve("stream_facts", options, max_frames=max_frames).max_frames
    p = _first_pass(video.frames(), max_frames)
    if p.cut:
        warnings.warn(f"{video.name}: {_cut_note('the stream', max_frames)}", QoEWarning, stacklevel=2)
    return _facts(video, p, max_frames)


@dataclass(frozen=True)
class VideoScore:
    """A received stream scored against its reference, frame by frame.

    Attributes
    ----------
    facts : StreamFacts
        The no-reference facts of the stream.
    comparison : VideoComparison
        Per reference frame: the received frame on screen, PSNR, SSIM and MOS; clip
        summaries (:class:`qoe.video.VideoComparison`).
    alignment : {"pts", "content"}
        How received times were put on the reference's time line
        (:class:`qoe.video.align.Offset`).
    offset_s : float
        Added to received presentation times.
    frames_frozen : int
        Scored reference frames whose screen still showed the frame already shown for
        the previous reference frame (a lost, late or undecodable frame).
    """

    facts: StreamFacts
    comparison: VideoComparison
    alignment: str
    offset_s: float
    frames_frozen: int

    kind: ClassVar[str] = "video"
    #: The headline columns of :meth:`to_record` with ``brief=True``.
    BRIEF_COLUMNS: ClassVar[tuple[str, ...]] = (
        "stream", "transport", "codec", "packets_lost", "frames_frozen", "freeze_s", "psnr_db", "ssim",
        "mos_psnr", "mos_ssim", "mos",
    )

    @property
    def label(self) -> str:
        """A short name of the stream for notes."""
        return self.facts.name

    @property
    def mos(self) -> float:
        """The stream's MOS: Zinner et al.'s SSIM table applied to the median frame SSIM.

        The seed paper (§8.1) reports SSIM-based MOS because SSIM "has been shown to
        correlate better with human perception" than PSNR; the PSNR-based MOS is in
        ``mos_psnr`` of :meth:`to_record`.
        """
        return self.comparison.to_record(brief=True)["mos_ssim"]

    def identity(self) -> dict[str, Any]:
        """The columns that name this stream in detail tables."""
        return {"stream": self.facts.name}

    def to_record(self, *, brief: bool = False) -> dict[str, Any]:
        """One flat record: the stream facts, the alignment, the clip scores and ``mos``."""
        rec = self.facts.to_record()
        cmp = self.comparison.to_record()
        rec.update({
            "reference": cmp.pop("reference"),
            "alignment": self.alignment,
            "offset_s": self.offset_s,
            "frames_frozen": self.frames_frozen,
        })
        for k in ("distorted", "width", "height"):
            cmp.pop(k)
        rec.update(cmp)
        rec["mos"] = self.mos
        return _brief(rec, self.BRIEF_COLUMNS) if brief else rec

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain Python: facts, alignment and the comparison with its frames."""
        return {
            "facts": self.facts.to_dict(),
            "alignment": self.alignment,
            "offset_s": self.offset_s,
            "frames_frozen": self.frames_frozen,
            "mos": self.mos,
            "comparison": self.comparison.to_dict(frames=True),
        }

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        """Detail tables: ``frames`` (per reference frame: the frame shown, PSNR, SSIM, MOS) and,
        for RTP, ``rtp_frames`` (per RTP frame, its header facts: :mod:`qoe.video.headers`)."""
        out = {"frames": self.comparison.frame_records()}
        if self.facts.headers is not None:
            out["rtp_frames"] = self.facts.headers.frame_records()
        return out


def score_stream(
    video: ReceivedVideo,
    reference: str | os.PathLike[str],
    *,
    options: VideoOptions | None = None,
    variant: str = _UNSET,
    psnr_table: str = _UNSET,
    max_frames: int | None = _UNSET,
) -> VideoScore:
    """Score a received stream against its reference file, frame by frame.

    Parameters
    ----------
    video : ReceivedVideo
        From :func:`qoe.video.receiver.receive_rtp` or :func:`~qoe.video.receiver.receive_ts`.
    reference : path
        The video that was sent (any file FFmpeg reads).
    options : VideoOptions, optional, keyword-only
        ``variant`` and ``psnr_table``: SSIM definition and PSNR → MOS table (see
        :func:`qoe.video.compare`); ``max_frames``: most frames of the stream, and of the
        reference, taken; past it, a :class:`~qoe.errors.QoEWarning` and a ``partial:`` note.
    variant, psnr_table, max_frames : keyword-only, deprecated
        The same one at a time: they work for one release with a DeprecationWarning;
        given with ``options`` they are an InputError (ambiguous).

    Notes
    -----
    The reference frames scored are those from the first received frame's time to the
    last's (in the reference's time): a capture that starts or ends inside the stream is
    scored on what it holds. For each, the received frame on screen is the last decoded
    one with a presentation time at or before it (:mod:`qoe.video.align`).

    Raises
    ------
    AlignmentError
        The stream decodes to nothing, or its frames do not overlap the reference.
    """
    opts = _resolve("score_stream", options, variant=variant, psnr_table=psnr_table, max_frames=max_frames)
    variant, psnr_table, max_frames = opts.variant, opts.psnr_table, opts.max_frames
    ref_name = os.fspath(reference)
    dist = _first_pass(video.frames(), max_frames, keep_bytes=RETAIN_BYTES)
    if dist.pts.size == 0:
        raise AlignmentError(f"{video.name}: no frame could be decoded from the received stream")
    facts = _facts(video, dist, max_frames)
    # One decoder thread, as for the received stream: a batch (qoe.batch) runs one row per core,
    # and FFmpeg's own threads would only compete with the other workers.
    ref = _first_pass(_ref_frames(read_frames(ref_name, threads=1)), max_frames, keep_bytes=RETAIN_BYTES)
    for what, p in ((f"the stream {video.name}", dist), (f"the reference {ref_name}", ref)):
        if p.cut:
            warnings.warn(_cut_note(what, max_frames), QoEWarning, stacklevel=2)
    start = None if video.start_pts is None else int(ref.pts[0]) - video.start_pts
    off: Offset = find_offset(ref.pts, ref.thumbs, dist.pts, dist.thumbs, usable=~dist.damaged, start_ticks=start)
    lo, hi = (dist.pts[0] + off.ticks) / CLOCK_HZ, (dist.pts[-1] + off.ticks) / CLOCK_HZ
    step = (_interval(ref.pts) or 0) / CLOCK_HZ
    if not ((ref.pts / CLOCK_HZ >= lo - step / 2) & (ref.pts / CLOCK_HZ <= hi + step / 2)).any():
        raise AlignmentError(
            f"{video.name}: the received frames ({lo:.3f}-{hi:.3f} s in the reference's time) do not overlap "
            f"the reference {ref_name}"
        )
    if dist.kept is not None:  # the first pass kept the frames: no second decoding
        kept, dist_pts = dist.kept, dist.pts.tolist()
        object.__setattr__(dist, "kept", None)  # let each plane go once scored
        received: Iterator[Frame] = (
            Frame(pts_s=(p + off.ticks) / CLOCK_HZ, y=y, u=_NO_PLANE, v=_NO_PLANE) for p, y in _drain(dist_pts, kept)
        )
    else:
        received = (
            Frame(pts_s=(f.pts + off.ticks) / CLOCK_HZ, y=f.y, u=f.u, v=f.v)
            for f in _shown(video.frames(), max_frames)
        )
    if ref.kept is not None and ref.kept_s is not None and not ref.cut and ref.decoded == ref.pts.size:  # decoded once
        ref_planes, ref_s = ref.kept, ref.kept_s
        object.__setattr__(ref, "kept", None)
        ref_frames: Iterable[Frame] = (Frame(pts_s=s, y=y, u=_NO_PLANE, v=_NO_PLANE) for s, y in _drain(ref_s, ref_planes))
    else:  # too long to hold, cut at max_frames, or frames the first pass did not show: read again
        ref_frames = read_frames(ref_name, threads=1)
    in_span = (f for f in ref_frames if f.pts_s is not None and lo - step / 2 <= f.pts_s <= hi + step / 2)
    cmp = compare_frames(in_span, received, ref_name=ref_name, dist_name=video.name, variant=variant,
                         psnr_table=psnr_table)
    shown = cmp.dist_index
    frozen = int(np.count_nonzero((shown[1:] == shown[:-1]) & (shown[1:] >= 0)))
    return VideoScore(facts=facts, comparison=cmp, alignment=off.method, offset_s=off.ticks / CLOCK_HZ,
                      frames_frozen=frozen)


def _drain(pts: list[Any], planes: list[np.ndarray]) -> Iterator[tuple[Any, np.ndarray]]:
    """(pts, plane) pairs, each plane released from ``planes`` as it is handed out."""
    for i, p in enumerate(pts):
        y = planes[i]
        planes[i] = _NO_PLANE
        yield p, y


def _sorted_frames(frames: Iterable[Any]) -> Iterator[Any]:
    """The frames a player shows, in presentation order.

    A frame without a presentation time (``pts`` None or negative: the decoder could not
    give one) or one that goes back in time (a damaged stream's decoder can emit such a
    frame) is never on screen, and is dropped.
    """
    last = None
    for f in frames:
        if f.pts is None or f.pts < 0 or (last is not None and f.pts <= last):
            continue
        last = f.pts
        yield f


@dataclass(frozen=True, slots=True)
class _RefFrame:
    pts: int
    y: np.ndarray
    damaged: bool
    pts_s: float  # the time as decoded (seconds), which the scoring pass pairs by


def _ref_frames(frames: Iterable[Any]) -> Iterator[_RefFrame]:
    """The reference's frames with their times in 90 kHz ticks."""
    for f in frames:
        if f.pts_s is not None:
            yield _RefFrame(pts=int(round(f.pts_s * CLOCK_HZ)), y=f.y, damaged=False, pts_s=f.pts_s)


def _undecoded(src: Any, reason: str) -> StreamFacts:
    """The facts of an RTP video stream qoe does not decode (VP8, VP9, H.265, AV1, ...):
    its packets and losses, no frames."""
    rtp = src.rtp
    codec = (src.sdp.encoding(rtp.payload_type) or (None,))[0] if src.sdp is not None else None
    return StreamFacts(
        name=src.name, transport="rtp", codec=(codec or rtp.codec or f"PT {rtp.payload_type}").lower(),
        jitter_buffer="none", width=0, height=0, frame_rate=float("nan"),
        packets_received=rtp.stats.packets - rtp.stats.duplicates,
        packets_lost=max(0, rtp.stats.lost), packets_late=0, ts_cc_errors=0, frames_expected=0, frames_decoded=0,
        frames_damaged=0, frames_untimed=0, frames_missing=0, freeze_events=0, freeze_s=0.0, keyframes_damaged=0,
        first_pts=0, last_pts=0, notes=(*src.notes, f"not decoded: {reason}"),
        headers=stream_header_facts(rtp, rtx=src.rtx, extensions=src.extensions),
    )


def score_capture(
    capture: str | os.PathLike[str],
    reference: str | os.PathLike[str] | None = None,
    *,
    options: VideoOptions | None = None,
    scan: Any = None,
    sdp: str | os.PathLike[str] | None = _UNSET,
    buffer: Any = _UNSET,
    variant: str = _UNSET,
    psnr_table: str = _UNSET,
    max_frames: int | None = _UNSET,
) -> list[VideoScore | StreamFacts]:
    """Every video stream of a capture: scored against ``reference``, else its facts.

    Parameters and results as :func:`iter_score_capture`.

    Returns
    -------
    list of VideoScore or StreamFacts
        ``list(iter_score_capture(...))``.
    """
    opts = _resolve("score_capture", options, sdp=sdp, buffer=buffer, variant=variant, psnr_table=psnr_table,
                    max_frames=max_frames)
    return list(iter_score_capture(capture, reference, options=opts, scan=scan))


def iter_score_capture(
    capture: str | os.PathLike[str],
    reference: str | os.PathLike[str] | None = None,
    *,
    options: VideoOptions | None = None,
    scan: Any = None,
    sdp: str | os.PathLike[str] | None = _UNSET,
    buffer: Any = _UNSET,
    variant: str = _UNSET,
    psnr_table: str = _UNSET,
    max_frames: int | None = _UNSET,
) -> Iterator[VideoScore | StreamFacts]:
    """Every video stream of a capture, one at a time: scored against ``reference``, else its facts.

    Parameters
    ----------
    capture : path
        pcap or pcapng holding RTP video (H.264, MPEG-TS) or MPEG-TS in plain UDP.
    reference : path, optional
        The video that was sent; without it each stream's no-reference
        :class:`StreamFacts` is the result.
    options : VideoOptions, optional, keyword-only
        How to score: ``sdp`` (an SDP describing RTP streams the capture's signalling does
        not, what ``ffmpeg -sdp_file`` wrote, see :func:`qoe.video.flows.find_video`),
        ``jitter_buffer`` (the receiver's, for RTP streams), ``variant``, ``psnr_table``,
        ``max_frames`` (see :func:`score_stream`). Default: ``VideoOptions()``.
    scan : RtpScan, optional, keyword-only
        The capture's :func:`qoe.rtp.scan_capture`, when the caller has it already (see
        :func:`qoe.video.flows.find_video`).
    sdp, buffer, variant, psnr_table, max_frames : keyword-only, deprecated
        The options one at a time (``buffer`` is ``jitter_buffer``): they work for one
        release with a DeprecationWarning; given with ``options`` they are an InputError
        (ambiguous).

    Yields
    ------
    VideoScore or StreamFacts
        One per stream, in order of its first packet, as soon as it is scored (one
        stream's frames are held at a time). A stream of a codec qoe does not decode
        (H.263 over RTP, a payload type no SDP names), or an SRTP stream no key decrypts,
        gets its packet and header facts, no frames, and a note saying so, with or without
        a reference.
    """
    opts = _resolve("iter_score_capture", options, sdp=sdp, buffer=buffer, variant=variant, psnr_table=psnr_table,
                    max_frames=max_frames)
    sdp, jitter_buffer = opts.sdp, opts.jitter_buffer
    name = capture_path(capture)
    for src in find_video(name, sdp=sdp, scan=scan):
        src, encrypted = decrypt_source(name, src, opts.srtp_keys)
        if encrypted is not None:
            yield _undecoded(src, encrypted)
            continue
        cut = src.rtp.packets.cut_payloads() if src.rtp is not None and src.rtp.packets is not None else 0
        if cut:
            yield _undecoded(src, f"the capture's snapshot length cut {cut} of the stream's {len(src.rtp.packets)} "
                                  "payloads: its frames cannot be rebuilt")
            continue
        if src.rtp is not None:
            try:
                video = receive_rtp(src.rtp, sdp=src.sdp, jitter_buffer=jitter_buffer, rtx=src.rtx, extensions=src.extensions)
            except UnsupportedCodecError as exc:
                yield _undecoded(src, str(exc))
                continue
        else:
            video = receive_ts(src.name, list(src.payloads))
        if src.notes:
            video = dataclasses.replace(video, notes=src.notes + video.notes)
        if reference is None:
            yield stream_facts(video, options=opts)
        else:
            yield score_stream(video, reference, options=opts)
