"""Scoring one manifest row, in whatever process runs it (a pool worker, a Dask worker, or this one).

:func:`score_task` never raises for a bad input: a :class:`~qoe.errors.QoEError` (or any
other exception) becomes the row's ``error``, so that one bad capture cannot stop a batch.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any

from qoe.errors import QoEError, QoEWarning
from qoe.report import to_plain

__all__: list[str] = []

#: Thread pools of the native libraries a worker uses, each held to one thread: a batch
#: gets its parallelism from running rows side by side, and N workers × M threads on N
#: cores would only contend. Read by OpenMP, OpenBLAS, MKL, numexpr and FFmpeg-based
#: tools when they start (set before a pool's processes start, and again in each worker).
THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
}


def limit_threads() -> None:
    """One thread per worker for OpenCV (now) and for libraries that read :data:`THREAD_ENV` later."""
    for k, v in THREAD_ENV.items():
        os.environ.setdefault(k, v)
    try:
        import cv2  # noqa: PLC0415 - OpenCV's own pool ignores OMP_NUM_THREADS

        cv2.setNumThreads(1)
    except ImportError:  # pragma: no cover - OpenCV is a dependency; a worker without it scores no video
        pass


def score_in_worker(task: dict[str, Any]) -> dict[str, Any]:
    """:func:`score_task` on a worker that is not ours to set up (Dask): :func:`limit_threads` first."""
    limit_threads()
    return score_task(task)


def score_task(task: dict[str, Any]) -> dict[str, Any]:
    """Score one row (a task of :func:`~qoe.batch._manifest.make_task`).

    Returns
    -------
    dict
        ``row``, ``row_key``, ``records`` (flat plain-Python records of the task's table;
        none when the row failed), ``error`` (None, or the message), ``warnings`` and
        ``report_notes`` (lists of str), ``seconds`` (wall-clock time of the row) and
        ``cpu_seconds`` (CPU time of the worker process meanwhile, all its threads).
    """
    from qoe.api import score  # noqa: PLC0415 - a worker loads the scorers on its first row
    from qoe.batch._manifest import option_objects  # noqa: PLC0415

    t0, cpu0 = time.perf_counter(), time.process_time()
    out: dict[str, Any] = {"row": task["row"], "row_key": task["row_key"], "records": [], "error": None,
                           "warnings": [], "report_notes": []}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", QoEWarning)
        try:
            options = option_objects(task["options"]) or None
            report = score(task["capture"], reference=task["reference"], kind=task["kind"], options=options,
                           sender_capture=task["sender_capture"], ssrc=task["ssrc"])
            out["records"] = [to_plain(r) for r in report.to_records(task["table"])]
            out["report_notes"] = list(report.notes)
        except QoEError as exc:
            out["error"] = str(exc) or type(exc).__name__
        except Exception as exc:  # noqa: BLE001 - a bug or an unforeseen input: recorded, the batch goes on
            out["error"] = f"{type(exc).__name__}: {exc}"
    out["warnings"] = [str(w.message) for w in caught if issubclass(w.category, QoEWarning)]
    for w in caught:  # other warnings (deprecations, NumPy) are shown as they would have been
        if not issubclass(w.category, QoEWarning):
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    out["seconds"] = time.perf_counter() - t0
    out["cpu_seconds"] = time.process_time() - cpu0
    return out
