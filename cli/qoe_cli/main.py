"""Entry point of the ``qoe`` command: the Click group and its error policy.

Commands live one module per domain and are attached with ``add_command``. A
:class:`qoe.QoEError` becomes one line on standard error and exit status 2; any other
exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
import warnings

# NumPy's OpenBLAS starts a worker thread per core when NumPy is imported, and an idle worker
# spins for about 2**28 cycles (0.1 s) before it sleeps: on 2 vCPUs that spin took the core
# the command's reader process needed (qoe streams on 4,000 calls: 75 ms less CPU, 12 ms less
# wall with the workers asleep at once). OpenBLAS's OPENBLAS_THREAD_TIMEOUT (4: 2**4 cycles)
# puts them to sleep when idle; BLAS work (video alignment, PSNR) still uses every core,
# as fast (timed: a 1080p frame's dot product and a 300 x 4096 product). Set before NumPy is
# imported (the command modules import it); a value the user set is kept.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import click  # noqa: E402 - after the environment above

import qoe  # noqa: E402
from qoe.errors import QoEError, QoEWarning  # noqa: E402


class QoEGroup(click.Group):
    """A Click group that turns :class:`qoe.QoEError` into a one-line message, exit 2,
    and imports its commands lazily from :data:`qoe_cli.commands.COMMANDS`."""

    def list_commands(self, ctx: click.Context) -> list[str]:  # noqa: D102 - Click API
        from qoe_cli.commands import COMMANDS

        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:  # noqa: D102
        from qoe_cli.commands import COMMANDS, ONE_BLAS_THREAD

        if cmd_name in COMMANDS:
            if cmd_name in ONE_BLAS_THREAD and "numpy" not in sys.modules:
                os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
            module_name, attr = COMMANDS[cmd_name].split(":")
            command = getattr(importlib.import_module(module_name), attr)
        else:
            command = super().get_command(ctx, cmd_name)
        _started()
        return command

    def invoke(self, ctx: click.Context):  # noqa: D102 - Click API
        try:
            return super().invoke(ctx)
        except QoEError as exc:
            click.echo(f"qoe: error: {exc}", err=True)
            sys.exit(2)


class _WarningPrinter:
    """``warnings.showwarning`` for one command: a QoEWarning as one line, each text once.

    A capture is read once per kind (RTP, then TCP for page loads), so the reader's warning
    about a damaged record would come once per pass; the user needs it once.
    """

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
        if issubclass(category, QoEWarning):
            text = str(message)
            if text not in self.seen:
                self.seen.add(text)
                click.echo(f"qoe: warning: {text}", err=True)
        else:
            click.echo(warnings.formatwarning(message, category, filename, lineno, line), err=True, nl=False)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--version``: what ``click.version_option`` prints, with ``qoe.__version__`` read
    only when asked (reading it imports importlib.metadata, ~40 ms)."""
    if value and not ctx.resilient_parsing:
        click.echo(f"qoe, version {qoe.__version__}")
        ctx.exit()


@click.group(cls=QoEGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
def cli() -> None:
    """Score the quality people perceive (QoE) of voice calls, RTP video and web page
    loads, from packet captures, reference media and plain network figures.

    A CAPTURE may be - (the capture on standard input); -o FILE.json or FILE.csv writes
    that format."""
    warnings.showwarning = _WarningPrinter()


_STARTING = False  # main() sets it: the collector is off until the command's modules are loaded


def _started() -> None:
    """The command is found (its modules imported): the start-up's objects, nearly all of
    them modules, classes and functions that live until the exit, are moved out of the
    collector's reach (``gc.freeze``) and the collector is turned back on (see :func:`main`)."""
    global _STARTING
    if _STARTING:
        _STARTING = False
        gc.freeze()
        gc.enable()


def main() -> None:
    """Console-script entry point.

    The garbage collector is off while the command's modules are imported (NumPy's, qoe's:
    a few collections over everything imported so far, 10-15 ms of every command on 2
    vCPUs), and what they made is then frozen (``gc.freeze``): later collections do not
    traverse it again (the few hundred objects the imports left as garbage stay, a few
    kilobytes). The process ends with the command: what is still alive is frozen too, so
    that the interpreter's shutdown does not run full collections over it only for the
    exit to free it (20-25 ms; reference counts still free what they hold, and the
    standard streams are still flushed).
    """
    global _STARTING
    _STARTING = gc.isenabled()
    gc.disable()
    try:
        cli()
    finally:
        _started()
        gc.freeze()
