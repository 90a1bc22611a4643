"""Batch scoring: a manifest of captures → one :class:`pandas.DataFrame` of results.

:func:`run` scores every row of a manifest with :func:`qoe.score`, on a local process pool
by default or on a Dask cluster, writes the results as they complete, and can resume a
batch that was stopped. One bad input never stops a batch: its row gets an ``error``.

The manifest (a CSV file, a DataFrame, or a list of dicts) has one row per thing to
score:

==================  ==========================================================================
column              meaning
==================  ==========================================================================
``capture``         the capture (pcap/pcapng) to score; required
``reference``       reference speech or video (:func:`qoe.score`); several paths separated by
                    ``;`` in a CSV cell, or a list in a DataFrame or dict
``sender_capture``  the capture taken at the far end (voice: one-way delays)
``kind``            ``auto`` (default), ``voice``, ``video`` or ``web``
``ssrc``            score only the call holding this RTP stream
*option name*       a field of :class:`qoe.voice.CallOptions`, :class:`qoe.video.VideoOptions`
                    or :class:`qoe.web.WebOptions` (``jitter_buffer``, ``window_s``,
                    ``idle_gap_s``, ...), as :func:`qoe.score` takes it as a keyword (a name
                    two kinds share, ``jitter_buffer``, is an error: name the kind); or
                    ``<kind>.<field>`` for one kind's option (``video.jitter_buffer``)
*anything else*     a label (``buffer``, ``workload``, ``direction``, ``run``, ...), carried
                    through to each result row
==================  ==========================================================================

Relative paths are taken from the manifest file's folder (for a DataFrame or list, the
current folder), or from ``root``. Empty cells mean "not given".

Each result row holds ``row`` (the manifest row, from 0), ``row_key`` (the row's identity:
a hash of its cells, see :func:`row_key`), the manifest's columns as given, ``error``
(missing, or why the row could not be scored), ``warnings`` (the
:class:`~qoe.errors.QoEWarning` messages of the row), ``report_notes``, ``seconds`` and
``cpu_seconds`` (the row's wall-clock and CPU time of scoring), then the columns of the
report's records (:meth:`qoe.Report.to_records`): one row per scored call direction, video
stream or page load. A record column whose name the manifest also uses is renamed
``result_<name>``: always ``result_capture`` (the voice records' capture file name), and
e.g. ``result_kind`` when the manifest has a ``kind`` column, ``result_direction`` when it
has a ``direction`` label. A row that scored nothing, or failed, gives one row with empty
result columns.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from qoe.batch import _manifest, _sink
from qoe.errors import InputError
from qoe.outputs import check_output
from qoe.report import columns, to_plain

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["run", "row_key", "MANIFEST_INPUTS", "ADDED_COLUMNS"]

PathLike = Union[str, "os.PathLike[str]"]

#: The manifest columns that are inputs of :func:`qoe.score` (every other column is an option or a label).
MANIFEST_INPUTS = _manifest.INPUTS
#: The columns :func:`run` adds to each result row (a manifest may not use these names).
ADDED_COLUMNS = _manifest.ADDED


def row_key(row: Mapping[str, Any]) -> str:
    """The identity of a manifest row, under which :func:`run` records (and resumes) it.

    A hash of the row's non-empty cells, names and values as given (before relative paths
    are resolved): two rows with the same capture, references, options and labels share
    a key whatever their position or column order.

    Parameters
    ----------
    row : mapping
        A manifest row (column → value).

    Returns
    -------
    str
        16 hexadecimal digits.

    Examples
    --------
    >>> row_key({"capture": "a.pcap", "buffer": 64}) == row_key({"buffer": 64, "capture": "a.pcap", "run": None})
    True
    """
    return _manifest.row_key({str(k): to_plain(v) for k, v in row.items() if not _manifest.is_missing(v)})


def run(
    manifest: PathLike | pd.DataFrame | Sequence[Mapping[str, Any]],
    *,
    workers: int | None = None,
    scheduler: str | Any | None = None,
    resume: bool | PathLike | None = None,
    progress: bool = True,
    output: PathLike | None = None,
    table: str = "results",
    root: PathLike | None = None,
) -> pd.DataFrame:
    """Score every row of a manifest; results as one DataFrame, written as they complete.

    Parameters
    ----------
    manifest : path, DataFrame or list of dicts
        A CSV file, a DataFrame or a list of mappings, one row per thing to score; its
        columns are described in :mod:`qoe.batch`.
    workers : int, optional, keyword-only
        Local worker processes (default: every core this process may use). Each runs one row
        at a time with one thread for OpenCV, OpenMP and BLAS. ``0`` scores in this process,
        one row after the other (for debugging). Not with ``scheduler``.
    scheduler : str or distributed.Client, optional, keyword-only
        Run the rows on a Dask cluster: its scheduler's address (``"tcp://host:8786"``) or
        a :class:`distributed.Client` (needs the ``dask`` extra). The workers must be able to
        import :mod:`qoe` and read the paths of the manifest.
    resume : bool or path, optional, keyword-only
        Skip the rows already scored without error: ``True`` reads them from ``output``
        (none if it does not exist yet), a path reads them from that earlier output (CSV or
        Parquet). Their rows are returned (and written to ``output``) as read; rows that
        failed are scored again. Default: score every row (an existing ``output`` is
        replaced).
    progress : bool, keyword-only
        Show a progress bar (tqdm, on standard error).
    output : path, optional, keyword-only
        Write the results here as rows complete: ``.csv`` (appended row by row) or
        ``.parquet`` (rewritten every few seconds; needs pyarrow, the ``parquet`` extra).
    table : str, keyword-only
        Which table of each report to collect: ``"results"`` (one row per scored item) or a
        detail table (``"windows"``, ``"plays"``, ``"frames"``, ``"objects"``; see
        :meth:`qoe.Report.tables`).
    root : path, optional, keyword-only
        The folder relative paths of the manifest are taken from.

    Returns
    -------
    pandas.DataFrame
        One row per result (see :mod:`qoe.batch`), in manifest order.

    Raises
    ------
    InputError
        A manifest that cannot be read (no ``capture`` column, an unknown
        ``<kind>.<field>`` option, a column the batch adds), an output that is neither
        ``.csv`` nor ``.parquet``, ``resume`` without an output to resume from, both
        ``workers`` and ``scheduler``, or a scheduler that cannot be reached; every local
        worker process died as it started (a script that calls ``run`` at its top level,
        outside ``if __name__ == "__main__":``: each spawned worker imports it again and
        starts a batch there). Bad rows do not raise: see the ``error`` column.

    Examples
    --------
    >>> import qoe.batch
    >>> df = qoe.batch.run("runs.csv", output="results.csv", resume=True)   # doctest: +SKIP
    >>> df.groupby(["buffer", "workload"])["mos"].median()                   # doctest: +SKIP
    """
    from qoe.batch._executors import run_dask, run_inline, run_local  # noqa: PLC0415 - the executors load the scorers, only when a batch runs

    if workers is not None and scheduler is not None:
        raise InputError("give workers (a local pool) or scheduler (a Dask cluster), not both")
    if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 0):
        raise InputError(f"workers must be a whole number >= 0; given workers={workers!r}")
    m = _manifest.read_manifest(manifest, root=root)
    out_path = Path(output) if output is not None else None
    if out_path is not None:  # an output never replaces an input (the manifest, a capture, a reference)
        inputs = [manifest] if isinstance(manifest, (str, os.PathLike)) else []
        for t in (_manifest.make_task(m, i, table=table) for i in range(len(m.rows))):
            inputs += [v for k in ("capture", "sender_capture") if isinstance(v := t.get(k), str)]
        out_path.parent.mkdir(parents=True, exist_ok=True)
        check_output(out_path, inputs=inputs)  # before anything is scored
    previous = _previous(resume, out_path)
    keys = [_manifest.row_key(r) for r in m.rows]
    first: dict[str, int] = {}
    for i, k in enumerate(keys):
        if k in first:
            raise InputError(f"manifest {m.source}: rows {first[k]} and {i} are the same (same cells); "
                             "give them a label that tells them apart (e.g. a run column)")
        first[k] = i
    done_keys = {r["row_key"] for r in previous if r.get("error") is None}
    failed_keys = {r["row_key"] for r in previous if r.get("error") is not None}
    wanted = set(keys)
    # one attempt per key in the file: failed attempts of this manifest's rows are dropped (they run again)
    kept = [r for r in previous if not (r["row_key"] in failed_keys and r["row_key"] in wanted)]
    sink = _sink.Sink(out_path, kept)
    tasks = [_manifest.make_task(m, i, table=table) for i, k in enumerate(keys) if k not in done_keys]
    fresh: dict[int, list[dict[str, Any]]] = {}

    from tqdm import tqdm  # noqa: PLC0415 - tqdm only when progress is shown

    bar = tqdm(total=len(keys), initial=len(keys) - len(tasks), disable=not progress, unit="row", desc="qoe batch",
               dynamic_ncols=True)

    def done(result: dict[str, Any]) -> None:
        rows = _result_rows(m, result)
        fresh[result["row"]] = rows
        sink.add(rows)
        bar.update(1)

    try:
        if scheduler is not None:
            run_dask(tasks, scheduler, done)
        elif workers == 0:
            run_inline(tasks, done)
        else:
            from qoe.capture import usable_cores  # noqa: PLC0415 - as the executors

            n = workers or usable_cores()
            run_local(tasks, min(n, max(1, len(tasks))), done)
    finally:
        sink.close()
        bar.close()
    return _frame(m, keys, kept, fresh)


def _previous(resume: Any, out_path: Path | None) -> list[dict[str, Any]]:
    """The rows of the output being resumed (none when not resuming)."""
    if resume is None or resume is False:
        return []
    if resume is True:
        if out_path is None:
            raise InputError("resume=True resumes the output file: give output=")
        return _sink.read_rows(out_path) if out_path.is_file() else []
    path = Path(resume)
    if not path.is_file():
        raise InputError(f"resume {path}: no such file")
    return _sink.read_rows(path)


def _result_rows(m: _manifest.Manifest, result: dict[str, Any]) -> list[dict[str, Any]]:
    """The output rows of one scored manifest row: its cells, the added columns, its records."""
    row = m.rows[result["row"]]
    head = {
        "row": result["row"],
        "row_key": result["row_key"],
        **{c: row.get(c) for c in m.columns},
        "error": result["error"],
        "warnings": "; ".join(result["warnings"]) or None,
        "report_notes": "; ".join(result["report_notes"]) or None,
        "seconds": result["seconds"],
        "cpu_seconds": result["cpu_seconds"],
    }
    records = result["records"] or [{}]
    return [{**head, **{(f"result_{k}" if k in head else k): v for k, v in rec.items()}} for rec in records]


def _frame(m: _manifest.Manifest, keys: list[str], kept: list[dict[str, Any]], fresh: dict[int, list[dict[str, Any]]]):  # noqa: ANN202
    """Every row of the manifest's results, in manifest order (earlier results first where resumed)."""
    import pandas as pd  # noqa: PLC0415 - pandas only when results are collected

    by_key: dict[str, list[dict[str, Any]]] = {}
    for r in kept:
        by_key.setdefault(r["row_key"], []).append(r)
    rows: list[dict[str, Any]] = []
    for i, k in enumerate(keys):
        if i in fresh:
            rows += fresh[i]
        elif k in by_key:
            rows += [{**r, "row": i} for r in by_key[k]]
    lead = ["row", "row_key", *m.columns, "error", "warnings", "report_notes", "seconds", "cpu_seconds"]
    names = list(dict.fromkeys([*lead, *columns(rows)]))
    return pd.DataFrame.from_records(rows, columns=names)
