"""What every options object shares: its names, a checked copy, and a plain-Python view.

:class:`qoe.voice.CallOptions`, :class:`qoe.video.VideoOptions` and
:class:`qoe.web.WebOptions` are frozen dataclasses that check their values in
``__post_init__``; this base gives them the same ``names()``, ``replace(**changes)`` (an
unknown name is an :class:`~qoe.errors.InputError` listing the known ones) and
``to_dict()``.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, ClassVar, TypeVar

from qoe.errors import InputError
from qoe.report import as_dict

__all__ = ["OptionsBase"]

_T = TypeVar("_T", bound="OptionsBase")


class OptionsBase:
    """Mixin for a frozen options dataclass (set ``KIND`` to name it in messages)."""

    #: Names the options in error messages (``"call"``, ``"video"``, ``"web"``).
    KIND: ClassVar[str] = ""

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The option names, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    def replace(self: _T, **changes: Any) -> _T:
        """A copy with ``changes`` (checked like the original).

        Raises
        ------
        InputError
            A name that is not an option, or a bad value.
        """
        unknown = sorted(set(changes) - set(self.names()))
        if unknown:
            raise InputError(
                f"unknown {self.KIND} option(s) {', '.join(unknown)}; the options are: {', '.join(self.names())}"
            )
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def _check_keylog(self) -> None:
        """Check an options object's ``keylog`` field (None, a key log file's path, or a tuple
        of them) and keep it as plain strings, the options' JSON view.

        Raises
        ------
        InputError
            Anything else.
        """
        k = getattr(self, "keylog")
        if k is not None and not (isinstance(k, (str, os.PathLike)) or
                                  (isinstance(k, (tuple, list)) and all(isinstance(x, (str, os.PathLike)) for x in k))):
            # (never the value's repr: a KeyLog's would print its secrets)
            sources = getattr(k, "sources", None)
            given = f"a {type(k).__name__}" + (f" read from {', '.join(map(str, sources))}" if sources else "")
            raise InputError(f"keylog must be a key log file's path or a tuple of them (options hold paths, "
                             f"written with the results); given {given}")
        if isinstance(k, (list, os.PathLike)) or (isinstance(k, tuple) and not all(isinstance(x, str) for x in k)):
            object.__setattr__(self, "keylog", os.fspath(k) if isinstance(k, os.PathLike)
                               else tuple(os.fspath(x) for x in k))

    def to_dict(self) -> dict[str, Any]:
        """The options as plain Python: what a report records of how it was scored.

        A field that says how the work is done rather than what is computed (its dataclass
        field's ``metadata={"in_report": False}``: :attr:`qoe.web.WebOptions.read_ahead`) is
        left out, so that a report is the same however it was computed.
        """
        d = as_dict(self)
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.metadata.get("in_report") is False:
                d.pop(f.name, None)
        return d
