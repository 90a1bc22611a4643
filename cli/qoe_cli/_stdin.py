"""The CAPTURE argument: a path, or ``-`` for a capture on standard input.

``tcpdump -w - | qoe streams -`` and ``tshark -r big.pcapng -Y sip||rtp -w - | qoe score -``:
the capture is copied to a temporary file first (qoe's passes read a capture more than
once: the kinds ``qoe score --kind auto`` finds, the DNS beside the page loads), removed
when the command ends. Gzip-compressed input is read as a file would be. A HAR file on
standard input (``qoe web pages -``) is kept as ``stdin.har``, so that it is read as one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

import click

__all__ = ["CAPTURE", "CaptureFile"]

_CHUNK = 1 << 20


class CaptureFile(click.Path):
    """A capture file that exists, or ``-``: standard input, spooled to a temporary file."""

    def __init__(self) -> None:
        super().__init__(exists=True, dir_okay=False, allow_dash=True)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        path = super().convert(value, param, ctx)
        if path != "-":
            return path
        stdin = click.get_binary_stream("stdin")
        if stdin.isatty():
            self.fail("'-' reads the capture from standard input, which is a terminal: pipe a capture in "
                      "(tcpdump -w - ... | qoe ... -)", param, ctx)
        first = stdin.read(_CHUNK)
        if not first:
            self.fail("'-': standard input held no bytes; pipe a capture in (tcpdump -w - ... | qoe ... -)", param, ctx)
        folder = tempfile.mkdtemp(prefix="qoe-stdin-")
        if ctx is not None:
            ctx.call_on_close(lambda: shutil.rmtree(folder, ignore_errors=True))
        name = "stdin.har" if first.lstrip()[:1] == b"{" else "stdin.pcap"
        spooled = os.path.join(folder, name)
        with open(spooled, "wb") as out:
            out.write(first)
            shutil.copyfileobj(stdin, out, _CHUNK)
        return spooled


#: The type of every command's CAPTURE argument.
CAPTURE = CaptureFile()
