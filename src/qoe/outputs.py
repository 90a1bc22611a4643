"""Writing output files safely: atomically, and never over an input.

An output is written to a temporary file in the destination's folder and renamed over
the destination only when complete (:func:`os.replace` is atomic on POSIX and Windows
within one file system), so a reader never sees half a file and a failure leaves any
previous file intact. An output path that names one of the inputs is refused before
anything is written.

Only a regular file is replaced that way. A destination that exists and is not a regular
file (``/dev/null``, ``/dev/stdout``, a terminal, a named pipe) is written in place: a rename
would put a regular file where the device or the pipe was (run as root, ``-o /dev/null``
turned the system's ``/dev/null`` into a file, which every later ``> /dev/null`` then
filled and every reader of ``/dev/null`` read back). A symbolic link is followed: the file
it names is replaced, and the link stays.

References
----------
.. [1] IEEE Std 1003.1-2017 (POSIX), ``rename()``: "If the link named by the new argument
   exists, it shall be removed and old renamed to new ... a link named new shall remain
   visible to other threads throughout the renaming operation".
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from qoe.errors import InputError

__all__ = ["atomic_output", "check_output", "written_in_place"]

PathLike = str | os.PathLike[str]


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _umask() -> int:
    """The process's file-mode mask, read without changing it (``os.umask`` can only be
    read by setting it, which races with other threads); 0o022 where it cannot be read."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def check_output(path: PathLike, *, inputs: Iterable[PathLike | None] = ()) -> Path:
    """Refuse an output path before anything is computed: one of ``inputs``, or in a missing folder.

    Parameters
    ----------
    path : str or path-like
        The output file to be.
    inputs : iterable of paths, optional
        The files the output is made from.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    InputError
        ``path`` names one of ``inputs`` (the same file, or the same path), or a folder, or
        its folder does not exist.
    """
    dest = Path(path)
    for src in inputs:
        if src is not None and (_same_file(dest, Path(src)) or dest.resolve() == Path(src).resolve()):
            raise InputError(f"{dest}: refusing to write the output over an input file")
    folder = dest.parent if str(dest.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"{dest}: cannot write the output, folder {folder} does not exist")
    if dest.is_dir():
        raise InputError(f"{dest}: cannot write the output, it is a folder (give a file name in it)")
    return dest


def written_in_place(path: PathLike) -> bool:
    """Whether ``path`` exists and is not a regular file (a device such as ``/dev/null``, a
    terminal, a named pipe, a socket; symbolic links followed): such an output is opened
    and written where it is, never replaced by a rename (see the module)."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):  # absent, or a dangling link: a new regular file
        return False


@contextlib.contextmanager
def atomic_output(path: PathLike, *, inputs: Iterable[PathLike | None] = ()) -> Iterator[Path]:
    """A temporary path to write ``path``'s content to; renamed to ``path`` on success.

    Parameters
    ----------
    path : str or path-like
        The output file. Its folder must exist.
    inputs : iterable of paths, optional
        The files the output is made from: writing over one of them is refused.

    Yields
    ------
    pathlib.Path
        A new empty file next to ``path`` (next to the file it names, for a symbolic link),
        with the same suffix (libraries that choose a format by the suffix, such as
        matplotlib and pandas, still see it); ``path`` itself when it is not a regular file
        (:func:`written_in_place`).

    Raises
    ------
    InputError
        ``path`` is one of ``inputs``, or its folder does not exist or cannot be written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "r.txt"
    >>> with atomic_output(out) as tmp:
    ...     _ = tmp.write_text("done")
    >>> out.read_text()
    'done'
    """
    dest = check_output(path, inputs=inputs)
    if written_in_place(dest):  # a device or a pipe: written where it is
        yield dest
        return
    if dest.is_symlink():  # the file the link names is replaced; the link stays
        dest = Path(os.path.realpath(dest))
    folder = dest.parent
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=dest.suffix, dir=folder)
    except OSError as exc:
        raise InputError(f"{dest}: cannot write the output ({exc.strerror})") from exc
    os.close(fd)
    tmp = Path(tmp_name)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; an output gets the usual mode
    try:
        yield tmp
        os.replace(tmp, dest)
    finally:
        if tmp.exists():
            tmp.unlink()
