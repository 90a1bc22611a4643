"""Where a batch's tasks run: in this process, in a local process pool, or on a Dask cluster.

Each runner calls ``done(result)`` in the calling thread as each task completes (in
completion order) and returns when every task has a result. A task that the machinery
itself fails (a worker process that died, a Dask worker lost) gets a result with its
``error`` set, like a task whose input was bad: the batch goes on.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any

from qoe.batch._task import THREAD_ENV, limit_threads, score_in_worker, score_task
from qoe.errors import InputError

__all__: list[str] = []

Done = Callable[[dict[str, Any]], None]


def failed(task: dict[str, Any], message: str) -> dict[str, Any]:
    """The result of a task that could not run."""
    return {"row": task["row"], "row_key": task["row_key"], "records": [], "error": message, "warnings": [],
            "report_notes": [], "seconds": None, "cpu_seconds": None}


def run_inline(tasks: Sequence[dict[str, Any]], done: Done) -> None:
    """Every task in this process, one after the other (``workers=0``: for debugging; the
    caller's thread settings are left as they are)."""
    for task in tasks:
        done(score_task(task))


@contextmanager
def _thread_env() -> Iterator[None]:
    """:data:`THREAD_ENV` in ``os.environ`` while a pool starts its processes (a pool starts
    them on its first submissions; they inherit the variables and NumPy/OpenBLAS read them
    when they load, before any code of ours runs in the worker), then as before."""
    saved = {k: os.environ.get(k) for k in THREAD_ENV}
    os.environ.update({k: v for k, v in THREAD_ENV.items() if saved[k] is None})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)


#: Why worker processes that die before any of them could start mean the caller's script.
NEVER_STARTED = (
    "qoe.batch: every worker process died as it started, before scoring a row. Worker processes "
    "are started with 'spawn', which imports the main script again in each of them: a script that "
    "calls qoe.batch.run at its top level starts a batch in every worker. Call it under "
    "'if __name__ == \"__main__\":' (Python's multiprocessing guide, 'Safe importing of the main "
    "module'), or score in this process with workers=0. The workers' own error is on standard error."
)


def _started(flag: Any) -> None:
    """A worker's initializer: it came up (the caller's main script imported), then
    :func:`limit_threads`."""
    flag.set()
    limit_threads()


def run_local(tasks: Sequence[dict[str, Any]], workers: int, done: Done) -> None:
    """The tasks on ``workers`` processes of this machine.

    Processes are started with ``spawn`` (a clean interpreter: safe when the caller runs
    threads, e.g. a Dask client or a progress bar, where ``fork`` can deadlock). At most
    two tasks per worker are queued at a time, so that when a worker process dies only the
    tasks it held are at stake: they run again in a new pool, each alone if it was at
    stake twice; a task that kills a worker when alone gets an error.

    Raises
    ------
    InputError
        The pool broke before any worker process came up (:data:`NEVER_STARTED`: a spawned
        worker imports the caller's main script, and one without the ``__main__`` guard
        starts a batch of its own there and dies); no row has a result then.
    """
    ctx = multiprocessing.get_context("spawn")
    up = ctx.Event()  # set by the first worker that comes up
    todo = list(tasks)
    strikes: dict[int, int] = {}
    while todo:
        alone = [t for t in todo if strikes.get(t["row"], 0) >= 2]
        if alone:  # each suspect on its own one-worker pool: a death is then its own
            task = alone[0]
            todo.remove(task)
            pool = ProcessPoolExecutor(max_workers=1, mp_context=ctx, initializer=_started, initargs=(up,))
            try:
                with _thread_env():
                    fut = pool.submit(score_task, task)
                done(fut.result())
            except BrokenProcessPool:
                done(failed(task, "the worker process died while scoring this row (a crash in a native library?)"))
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
            continue
        todo = _run_pool(ctx, todo, workers, strikes, done, up)


def _run_pool(ctx: Any, todo: list[dict[str, Any]], workers: int, strikes: dict[int, int],
              done: Done, up: Any) -> list[dict[str, Any]]:
    """Run ``todo`` on one pool until it ends or breaks; the tasks left when it broke."""
    queue = list(reversed(todo))
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_started, initargs=(up,))
    running: dict[Any, dict[str, Any]] = {}

    def fill() -> None:
        while queue and len(running) < 2 * workers:
            task = queue.pop()
            running[pool.submit(score_task, task)] = task

    try:
        with _thread_env():  # the pool starts its processes on the first submissions
            fill()
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                task = running.pop(fut)
                try:
                    done(fut.result())
                except BrokenProcessPool:
                    if not up.is_set():
                        raise InputError(NEVER_STARTED) from None
                    for t in [task, *running.values()]:
                        strikes[t["row"]] = strikes.get(t["row"], 0) + 1
                    return [task, *running.values(), *reversed(queue)]
            fill()
        return []
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def run_dask(tasks: Sequence[dict[str, Any]], scheduler: Any, done: Done) -> None:
    """The tasks on a Dask cluster: ``scheduler`` is its address (``"tcp://host:8786"``) or a
    :class:`distributed.Client`. A client made here is closed at the end.

    Raises
    ------
    InputError
        Dask's distributed scheduler is not installed (the ``dask`` extra), or the
        scheduler cannot be reached.
    """
    try:
        from distributed import Client, as_completed  # noqa: PLC0415 - Dask is optional (the dask extra)
    except ImportError as exc:
        raise InputError("scheduler: running on Dask needs dask.distributed (pip install 'qoe[dask]')") from exc
    if isinstance(scheduler, str):
        try:
            client = Client(scheduler, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise InputError(f"scheduler {scheduler}: cannot connect ({exc})") from exc
        own = True
    elif isinstance(scheduler, Client):
        client, own = scheduler, False
    else:
        raise InputError(f"scheduler: give an address (tcp://host:8786) or a distributed.Client; "
                         f"given a {type(scheduler).__name__}")
    try:
        futures = {client.submit(score_in_worker, t, pure=False): t for t in tasks}
        for fut in as_completed(futures, loop=client.loop):
            task = futures[fut]
            try:
                done(fut.result())
            except Exception as exc:  # noqa: BLE001 - a lost worker (KilledWorker), a cancelled task
                done(failed(task, f"Dask could not run this row: {type(exc).__name__}: {exc}"))
            fut.release()
    finally:
        if own:
            client.close()
