"""Video quality: frame metrics (PSNR, SSIM), MOS tables, and file-against-file comparison.

* :mod:`qoe.video.metrics` — :func:`psnr`, :func:`ssim` on arrays (pure functions).
* :mod:`qoe.video.mos` — PSNR/SSIM → MOS tables (Zinner et al. 2010; EvalVid).
* :mod:`qoe.video.io` — :func:`read_frames`: decoded Y, U, V planes with their true PTS (PyAV).
* :mod:`qoe.video.align` — which distorted frame was on screen at each reference time.
* :mod:`qoe.video.comparison` — :func:`compare` two files frame by frame.
* :mod:`qoe.video.depacketize` — H.264 access units from RTP (RFC 6184), MPEG-TS checks (H.265,
  VP8, VP9 and AV1 depacketisers are private modules the receiver uses).
* :mod:`qoe.video.headers` — frames, frame rate, key frames, W3C freezes from RTP headers alone.
* :mod:`qoe.video.flows` — the video streams of a capture (RTP video, MPEG-TS in UDP).
* :mod:`qoe.video.receiver` — the receiver model: jitter-buffer deadlines, PyAV decoding.
* :mod:`qoe.video.stream` — :func:`score_capture`: stream facts and per-frame scores.
"""

from __future__ import annotations

from qoe.video.align import Offset, find_offset, pair_frames, shown_index
from qoe.video.comparison import VideoComparison, compare, compare_frames
from qoe.video.flows import VideoSource, find_video, rtx_partner
from qoe.video.headers import FrameFacts, HeaderFacts, header_facts, stream_header_facts
from qoe.video.receiver import DecodedFrame, ReceivedVideo, receive_rtp, receive_ts
from qoe.video.stream import (
    MAX_FRAMES,
    StreamFacts,
    VideoOptions,
    VideoScore,
    iter_score_capture,
    score_capture,
    score_stream,
    stream_facts,
)
from qoe.video.io import Frame, read_frames
from qoe.video.metrics import SSIM_VARIANTS, ClipSummary, FrameScores, psnr, ssim, ssim_downsample_factor
from qoe.video.mos import PSNR_TABLES, SSIM_TABLES, psnr_to_mos, ssim_to_mos

__all__ = [
    "MAX_FRAMES",
    "psnr",
    "ssim",
    "FrameScores",
    "ClipSummary",
    "SSIM_VARIANTS",
    "ssim_downsample_factor",
    "psnr_to_mos",
    "ssim_to_mos",
    "PSNR_TABLES",
    "SSIM_TABLES",
    "Frame",
    "read_frames",
    "pair_frames",
    "shown_index",
    "compare",
    "compare_frames",
    "VideoComparison",
    "Offset",
    "find_offset",
    "VideoSource",
    "find_video",
    "rtx_partner",
    "FrameFacts",
    "HeaderFacts",
    "header_facts",
    "stream_header_facts",
    "DecodedFrame",
    "ReceivedVideo",
    "receive_rtp",
    "receive_ts",
    "StreamFacts",
    "VideoOptions",
    "VideoScore",
    "stream_facts",
    "score_stream",
    "score_capture",
    "iter_score_capture",
]
