"""qoe: Quality of Experience scores for voice calls, RTP video and web page loads.

The public surface is the names in ``__all__``: :func:`score` (one capture → a
:class:`Report`), :mod:`batch` (a manifest of captures → a DataFrame, on a process pool or a
Dask cluster), the errors and ``__version__``. Domain functions live in :mod:`qoe.voice`,
:mod:`qoe.video`, :mod:`qoe.web` and :mod:`qoe.mos`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:  # (loaded when first used: __getattr__ below)
    from qoe import batch
    from qoe.api import score
    from qoe.report import Report

# Names loaded when first asked for (PEP 562): ``qoe.score`` brings every scorer's options,
# ``qoe.batch`` hashlib, uuid and the executors, ``qoe.Report`` the report module; a command
# such as ``qoe streams`` needs none of them (about 25 ms of its start on a quiet machine).
_LAZY = {"score": ("qoe.api", "score"), "batch": ("qoe.batch", None), "Report": ("qoe.report", "Report")}


def __getattr__(name: str) -> Any:
    """``qoe.score``, ``qoe.batch``, ``qoe.Report`` and the subpackages (``qoe.api``,
    ``qoe.voice``, ...) imported when first used, and ``qoe.__version__`` read from the installed package's metadata when first asked
    (PEP 562): importing :mod:`importlib.metadata` costs about 40 ms, which every
    ``import qoe`` and every ``qoe`` command would otherwise pay."""
    import importlib  # noqa: PLC0415
    import importlib.util  # noqa: PLC0415

    if name in _LAZY:
        module_name, attr = _LAZY[name]
        module = importlib.import_module(module_name)
        value = module if attr is None else getattr(module, attr)
        globals()[name] = value
        return value
    if not name.startswith("_") and importlib.util.find_spec(f"qoe.{name}") is not None:
        return importlib.import_module(f"qoe.{name}")  # a subpackage (qoe.api, qoe.voice, ...), as before
    if name != "__version__":
        raise AttributeError(f"module 'qoe' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415 - read only when __version__ is asked for

    try:
        value = version("qoe")
    except PackageNotFoundError:  # running from a source tree without install
        value = "0.0.0+unknown"
    globals()["__version__"] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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
