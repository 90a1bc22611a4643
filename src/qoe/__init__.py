"""qoe: Quality of Experience scores for voice calls, RTP video and web page loads.

The public surface is the names in ``__all__``: :func:`score` (one capture → a
:class:`Report`), :mod:`batch` (a manifest of captures → a DataFrame, on a process pool or a
Dask cluster), the errors and ``__version__``. Domain functions live in :mod:`qoe.voice`,
:mod:`qoe.video`, :mod:`qoe.web` and :mod:`qoe.mos`.
"""

from __future__ import annotations

from qoe import batch
from qoe.api import score
from qoe.errors import (
    AlignmentError,
    CaptureError,
    EncryptedStreamError,
    InputError,
    NoSpeechError,
    QoEError,
    QoEWarning,
    StreamNotFoundError,
    UnsupportedCodecError,
)
from qoe.report import Report


def __getattr__(name: str) -> str:
    """``qoe.__version__``, read from the installed package's metadata when first asked
    (PEP 562): importing :mod:`importlib.metadata` costs about 40 ms, which every
    ``import qoe`` and every ``qoe`` command would otherwise pay."""
    if name != "__version__":
        raise AttributeError(f"module 'qoe' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415 - read only when __version__ is asked for

    try:
        value = version("qoe")
    except PackageNotFoundError:  # running from a source tree without install
        value = "0.0.0+unknown"
    globals()["__version__"] = value
    return value


__all__ = [
    "__version__",
    "score",
    "batch",
    "Report",
    "QoEError",
    "InputError",
    "NoSpeechError",
    "AlignmentError",
    "CaptureError",
    "UnsupportedCodecError",
    "EncryptedStreamError",
    "StreamNotFoundError",
    "QoEWarning",
]
