"""qoe: Quality of Experience scores for voice calls, RTP video and web page loads.

The public surface is the names in ``__all__``; domain functions live in
:mod:`qoe.voice`, :mod:`qoe.video`, :mod:`qoe.web` and :mod:`qoe.mos`.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from qoe.api import score
from qoe.errors import (
    AlignmentError,
    CaptureError,
    InputError,
    NoSpeechError,
    QoEError,
    QoEWarning,
    StreamNotFoundError,
    UnsupportedCodecError,
)
from qoe.report import Report

try:
    __version__ = version("qoe")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+unknown"

__all__ = [
    "__version__",
    "score",
    "Report",
    "QoEError",
    "InputError",
    "NoSpeechError",
    "AlignmentError",
    "CaptureError",
    "UnsupportedCodecError",
    "StreamNotFoundError",
    "QoEWarning",
]
