"""Run a piece of test code in a fresh Python interpreter.

For what depends on the state of the whole process: ``qoe.capture.read_ahead(...,
process=True)`` forks its reader only while the process runs no other Python thread, and
a test session may hold threads left by earlier tests (a progress bar's monitor, a Dask
client), with which the reader would silently stay in a thread.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run_fresh(code: str, *args: object, prelude: str = "", env: dict[str, str] | None = None) -> str:
    """Run ``prelude`` then ``code`` (dedented) with ``sys.argv[1:]`` = ``args``; its stdout.

    ``env``: the child's whole environment (default: this process's). The test fails with
    the child's output when it exits with an error (an assertion in ``code`` included).
    """
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(prelude) + textwrap.dedent(code), *map(str, args)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout
