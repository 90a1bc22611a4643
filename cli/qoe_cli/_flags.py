"""Old spellings of ``qoe`` flags (issue 21: a flag is the name of the option field it sets).

A renamed flag keeps working for one release: :func:`renamed` adds the old spelling as a
hidden option of its own that, when given, hands its value to the new parameter and prints
one line on standard error naming the new flag::

    qoe: warning: --web-preset is deprecated: use --preset (the old spelling goes in the next release)

Both spellings on one command line are a usage error (exit 2), as a keyword given with its
deprecated spelling is an :class:`~qoe.errors.InputError` in the library.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click
from click.core import ParameterSource

__all__ = ["RenamedOption", "renamed"]

_GIVEN = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
_META = "qoe_cli.renamed"


class RenamedOption(click.Option):
    """The hidden old spelling of a flag: :attr:`renamed_to` is the new one (what the tests
    that check flag names read)."""

    def __init__(self, *args: Any, renamed_to: str, **kwargs: Any) -> None:
        super().__init__(*args, hidden=True, expose_value=False, callback=_record, **kwargs)
        self.renamed_to = renamed_to


def _record(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if ctx.get_parameter_source(param.name) in _GIVEN:  # type: ignore[arg-type]
        ctx.meta.setdefault(_META, {})[param.name] = value
    return value


def renamed(old: str, new: str, *, target: str | None = None, hint: str = "",
            **attrs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator (below ``@click.command``): ``old`` is the deprecated spelling of flag ``new``.

    Parameters
    ----------
    old, new : str
        The flags, e.g. ``"--web-preset"``, ``"--preset"`` (or boolean pairs,
        ``"--counts/--no-counts"``, ``"--show-counts/--no-show-counts"``).
    target : str, optional
        The command's parameter the old flag's value goes to (default: ``new``'s name).
    hint : str
        Said after the new flag in the message (e.g. ``" with --kind video"``).
    **attrs
        ``type``, ``multiple``, ``is_flag``... of the old flag, as the new one has them.
    """
    dest = target or new.split("/")[0].lstrip("-").replace("-", "_")
    name = "renamed_" + old.split("/")[0].lstrip("-").replace("-", "_")

    def decorator(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            given = ctx.meta.get(_META, {})
            if name in given:
                if ctx.get_parameter_source(dest) in _GIVEN:
                    raise click.UsageError(f"{old} is the old spelling of {new}: give {new} only")
                click.echo(f"qoe: warning: {old} is deprecated: use {new}{hint} (the old spelling goes in the next "
                           "release)", err=True)
                kwargs[dest] = given.pop(name)
            return f(*args, **kwargs)

        return click.option(old, name, cls=RenamedOption, renamed_to=new, **attrs)(wrapper)

    return decorator
