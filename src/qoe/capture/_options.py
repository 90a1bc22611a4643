"""Checks of the readers' options: an :class:`~qoe.errors.InputError` naming the option
and quoting the value given."""

from __future__ import annotations

import operator

from qoe.errors import InputError


def positive_int(value: object, name: str) -> int:
    """``value`` as an ``int`` if it is a positive integer (a Python or NumPy integer)."""
    try:
        v = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InputError(f"{name} must be a positive integer, given {value!r}") from None
    if v <= 0:
        raise InputError(f"{name} must be a positive integer, given {v}")
    return v
