"""Reading video files: decoded frames as 8-bit Y, U, V planes with their presentation times.

:func:`read_frames` decodes any file FFmpeg reads (through PyAV, which bundles FFmpeg) and
yields one :class:`Frame` per decoded picture, in presentation order, streaming (one frame
in memory at a time besides the decoder's own). Each frame carries its true presentation
time (PTS × time base, seconds), not a position counted from the start of the stream
(OpenCV's ``VideoCapture`` reports the latter, so it is not used for timing).

Planes are taken as the decoder gives them for 8-bit 4:2:0 (``yuv420p`` and full-range
``yuvj420p``: code values are compared unchanged, as FFmpeg's ``psnr``/``ssim`` filters do).
Other pixel formats are converted to ``yuv420p`` by FFmpeg's swscale, with a
:class:`~qoe.errors.QoEWarning`. Luma is never extracted as ``gray`` through a conversion:
that rescales limited-range video (16–235 → 0–255).

References
----------
.. [1] PyAV, https://pyav.basswood-io.com/ (FFmpeg's libavformat/libavcodec).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from qoe.errors import InputError, QoEWarning
from qoe.video._planes import plane_array

__all__ = ["Frame", "VideoInfo", "read_frames", "probe"]

_DIRECT_FORMATS = ("yuv420p", "yuvj420p")  # 8-bit 4:2:0 planar: planes used as decoded
_TARGET_FORMAT = "yuv420p"


@dataclass(frozen=True, eq=False)
class Frame:
    """One decoded picture.

    Attributes
    ----------
    pts_s : float or None
        Presentation time in seconds (PTS × time base); ``None`` when the file carries no
        timestamps (e.g. a raw H.264 elementary stream).
    y, u, v : numpy.ndarray
        The 8-bit planes (uint8, C-contiguous): luma ``(H, W)`` and the two chroma planes
        ``(ceil(H/2), ceil(W/2))``.
    """

    pts_s: float | None
    y: np.ndarray = field(repr=False)
    u: np.ndarray = field(repr=False)
    v: np.ndarray = field(repr=False)

    @property
    def shape(self) -> tuple[int, int]:
        """(height, width) of the luma plane."""
        return self.y.shape  # type: ignore[return-value]


@dataclass(frozen=True)
class VideoInfo:
    """What the container says about the video stream (before decoding)."""

    path: str
    codec: str
    width: int
    height: int
    pix_fmt: str | None
    time_base: Fraction | None
    average_rate: Fraction | None
    frames: int  # 0 when the container does not say


def _open(path: str | os.PathLike[str], input_format: str | None, options: Mapping[str, str] | None) -> Any:
    import av  # noqa: PLC0415 - imported on first use: the metrics do not need it

    name = os.fspath(path)
    if not os.path.exists(name):
        raise InputError(f"{name}: no such video file")
    try:
        container = av.open(name, format=input_format, options=dict(options or {}))
    except (av.error.FFmpegError, OSError, ValueError) as exc:
        raise InputError(f"{name}: cannot read as video ({exc})") from None
    if not container.streams.video:
        container.close()
        raise InputError(f"{name}: holds no video stream")
    return container


def probe(path: str | os.PathLike[str], *, input_format: str | None = None,
          options: Mapping[str, str] | None = None) -> VideoInfo:
    """The video stream's codec, size, pixel format and time base, without decoding.

    Raises
    ------
    InputError
        A missing or unreadable file, or one without a video stream.
    """
    container = _open(path, input_format, options)
    try:
        s = container.streams.video[0]
        cc = s.codec_context
        return VideoInfo(
            path=os.fspath(path),
            codec=cc.name,
            width=int(cc.width),
            height=int(cc.height),
            pix_fmt=cc.pix_fmt,
            time_base=s.time_base,
            average_rate=s.average_rate,
            frames=int(s.frames or 0),
        )
    finally:
        container.close()


def read_frames(
    path: str | os.PathLike[str],
    *,
    input_format: str | None = None,
    options: Mapping[str, str] | None = None,
    threads: int = 0,
) -> Iterator[Frame]:
    """Decode the first video stream of a file, frame by frame.

    The file is opened (and its errors raised) at the call; frames are decoded as the
    iterator is consumed, so memory stays bounded whatever the file's length.

    Parameters
    ----------
    path : str or os.PathLike
        Any file FFmpeg reads: MP4, MKV, MPEG-TS, Y4M, raw H.264, ...
    input_format : str, optional
        Force a demuxer (FFmpeg's ``-f``), e.g. ``"rawvideo"`` for a raw .yuv file.
    options : mapping, optional
        Demuxer options, e.g. ``{"video_size": "1280x720", "pixel_format": "yuv420p",
        "framerate": "25"}`` for ``rawvideo``.
    threads : int
        Decoder threads (0: FFmpeg's choice).

    Yields
    ------
    Frame
        In presentation order, with ``pts_s`` from the frame's own timestamp.

    Raises
    ------
    InputError
        A missing or unreadable file, or one without a video stream (at the call).

    Warns
    -----
    QoEWarning
        Packets the decoder rejected (the frames it could decode are still yielded), and
        a pixel format that had to be converted to ``yuv420p``.
    """
    container = _open(path, input_format, options)
    stream = container.streams.video[0]
    stream.thread_type = "AUTO"
    stream.codec_context.thread_count = int(threads)
    return _decode(container, stream, os.fspath(path))


def _demux(container: Any, stream: Any, name: str) -> Iterator[Any]:
    """The packets of ``stream``; ends with a warning where the file announces a stream PyAV
    did not list when it opened it (FFmpeg adds streams a damaged or changing MPEG-TS
    announces mid-file; PyAV then fails with IndexError on every later packet)."""
    try:
        yield from container.demux(stream)
    except IndexError:
        warnings.warn(f"{name}: a stream appeared mid-file that the demuxer cannot follow; "
                      "the frames before it were decoded", QoEWarning, stacklevel=3)


def _decode(container: Any, stream: Any, name: str) -> Iterator[Frame]:
    import av  # noqa: PLC0415 - PyAV loads FFmpeg's libraries (75 ms): only when a file is decoded

    bad_packets = 0
    first_error = ""
    converted_from = None
    try:
        for packet in _demux(container, stream, name):
            try:
                frames = packet.decode()
            except av.error.FFmpegError as exc:  # a corrupt packet: keep going, say so at the end
                bad_packets += 1
                first_error = first_error or str(exc)
                continue
            for frame in frames:
                fmt = frame.format.name
                if fmt not in _DIRECT_FORMATS:
                    converted_from = converted_from or fmt
                    frame = frame.reformat(format=_TARGET_FORMAT)
                time_base = frame.time_base if frame.time_base is not None else stream.time_base
                pts_s = None if frame.pts is None or time_base is None else float(frame.pts * time_base)
                yield Frame(pts_s, plane_array(frame, 0), plane_array(frame, 1), plane_array(frame, 2))
    except av.error.FFmpegError as exc:
        raise InputError(f"{name}: cannot demux the video stream ({exc})") from None
    finally:
        container.close()
        if converted_from is not None:
            warnings.warn(f"{name}: pixel format {converted_from} converted to {_TARGET_FORMAT} (swscale) "
                          "before scoring", QoEWarning, stacklevel=2)
        if bad_packets:
            warnings.warn(f"{name}: the decoder rejected {bad_packets} packet(s) ({first_error}); "
                          "scored the frames it could decode", QoEWarning, stacklevel=2)
