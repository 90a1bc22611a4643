"""A faster constructor for the frozen result dataclasses built in bulk: once per TCP
connection or HTTP message (:mod:`qoe.web`), once per RTP stream (:mod:`qoe.rtp`: its
statistics and key, thousands at the end of a trunk's capture).

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (a global
and an attribute lookup, then a call, per field): 7.8 µs for a 31-field
:class:`qoe.web.tcp.Direction`, two per TCP connection; 2.4 µs for a 23-field
:class:`qoe.rtp.RtpStats`. :func:`builder` makes a function
with the same parameters and defaults that sets the fields straight into the
instance ``__dict__``, or, for a class with ``__slots__``, into the slots of a plain
twin class with the same slots (plain attribute stores, which the interpreter specialises;
calling each slot's member descriptor costs a call per field) whose instance then takes
the dataclass as its ``__class__`` (allowed between classes with the same slot layout):
about a seventh of the constructor's cost (1.0 µs for a Direction, 2.8 µs through the
descriptors; 0.37 µs for an RtpStats), and an instance equal to the one the class's own
constructor gives: a ``default_factory`` field left out is made by its factory, and
``__post_init__`` runs last, as in the class's ``__init__`` (no ``InitVar`` fields).
:func:`replaced` is the same for ``dataclasses.replace`` on a dataclass without slots and
without ``__post_init__``.

References
----------
.. [1] Python documentation, ``dataclasses`` (frozen instances, ``__post_init__``) and the
   data model (``__slots__``: member descriptors; ``__class__`` assignment between classes
   with the same layout), Python 3.11.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def builder(cls: type[T], *, positional: bool = False) -> Callable[..., T]:
    """A keyword-only constructor of frozen dataclass ``cls`` that skips ``object.__setattr__``.

    Parameters
    ----------
    cls : type
        A dataclass whose fields are all ``__init__`` parameters (no ``InitVar``). Its
        ``__post_init__``, if any, is called last and a ``default_factory`` field left out is
        made by its factory, as the class's own ``__init__`` does.
    positional : bool, optional
        Take the fields by position too, in the class's order (as ``cls(*values)``), for a
        caller that has each record's values as a row.

    Returns
    -------
    callable
        ``make(**fields) -> cls`` (or ``make(*values)``): the fields by name, defaults as
        in ``cls``.

    Raises
    ------
    TypeError
        ``cls`` is not such a dataclass.
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} must be a dataclass")
    fields = [f for f in dataclasses.fields(cls) if f.init]
    if len(fields) != len(dataclasses.fields(cls)):
        raise TypeError(f"{cls.__name__}: every field must be an __init__ parameter")
    post = getattr(cls, "__post_init__", None)
    if post is not None and post.__code__.co_argcount > 1:  # InitVar values passed to it
        raise TypeError(f"{cls.__name__}: InitVar fields are not supported")
    slotted = "__slots__" in cls.__dict__
    twin = _twin(cls) if slotted else None
    env: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_twin": twin, "_made": _MADE}
    params, body, made = [], [], []
    for k, f in enumerate(fields):
        if f.default_factory is not dataclasses.MISSING:  # made when left out, as __init__ does
            env[f"_f{k}"] = f.default_factory
            params.append(f"{f.name}=_made")
            made.append(f"    if {f.name} is _made:\n        {f.name} = _f{k}()")
        elif f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            env[f"_d{k}"] = f.default
            params.append(f"{f.name}=_d{k}")
        if twin is not None:
            body.append(f"    self.{f.name} = {f.name}")
        elif slotted:
            env[f"_s{k}"] = cls.__dict__[f.name].__set__  # the slot's member descriptor
            body.append(f"    _s{k}(self, {f.name})")
        else:
            body.append(f"    d[{f.name!r}] = {f.name}")
    if twin is not None:
        head = "    self = _new(_twin)\n"
        body.append("    self.__class__ = _cls")
    else:
        head = "    self = _new(_cls)\n" + ("" if slotted else "    d = self.__dict__\n")
    head = "".join(m + "\n" for m in made) + head
    if post is not None:
        body.append("    self.__post_init__()")
    src = f"def make({'' if positional else '*, '}{', '.join(params)}):\n{head}" + "\n".join(body) + "\n    return self\n"
    exec(src, env)  # noqa: S102 - code built from the field names above, nothing from input
    make = env["make"]
    make.__qualname__ = make.__name__ = f"make_{cls.__name__}"
    make.__doc__ = f"A {cls.__name__}, as ``{cls.__name__}(**fields)`` gives it (see qoe._records)."
    return make


_MADE = object()  # the default of a default_factory field: made by the factory


def _twin(cls: type) -> type | None:
    """A plain class with the slots of ``cls`` (same names, same order, so the same layout),
    whose instances can take ``cls`` as their ``__class__``; None when ``cls`` has slots
    from a base class too, or the interpreter refuses the assignment."""
    if any("__slots__" in vars(b) and vars(b)["__slots__"] for b in cls.__mro__[1:]):
        return None
    twin = type(f"_{cls.__name__}Fill", (), {"__slots__": tuple(cls.__slots__), "__module__": __name__})
    try:
        probe = object.__new__(twin)
        probe.__class__ = cls
    except TypeError:
        return None
    return twin


def replaced(obj: T, **changes: Any) -> T:
    """``dataclasses.replace(obj, **changes)`` for a frozen dataclass without slots and without
    ``__post_init__``: a copy of the instance dictionary with ``changes`` (names checked)."""
    cls = type(obj)
    if hasattr(cls, "__post_init__") or "__slots__" in cls.__dict__:
        raise TypeError(f"{cls!r} must be a dataclass without slots and without __post_init__")
    unknown = set(changes) - {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    if unknown:
        raise TypeError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
    new = object.__new__(cls)
    d = new.__dict__
    d.update(obj.__dict__)
    d.update(changes)
    return new


# -- pickling records by their fields ---------------------------------------------------------

#: The start of the module attribute names of the positional builders of :func:`record_reducer`
#: (``_make:<module>:<qualname>``, "/" for ".").
MAKER_PREFIX = "_make:"
_REDUCERS: dict[type, Callable[[Any], tuple[Any, ...]] | None] = {}
_NAMED: dict[str, Callable[..., Any]] = {}


def record_reducer(cls: type) -> Callable[[Any], tuple[Any, ...]] | None:
    """A pickle reducer for instances of ``cls``, or None when ``cls`` is not such a record.

    For a dataclass whose fields are all ``__init__`` parameters and that has no
    ``__post_init__`` (so that making it again from its fields gives the same instance with
    no check run twice): ``reduce(obj) -> (maker, fields)``, the tuple of the instance's
    fields (one ``operator.attrgetter`` call) and a positional :func:`builder` of ``cls``
    that pickle finds by name in this module (``_make:<module>:<qualname>``, made in any
    process on first use: module ``__getattr__``). For a frozen dataclass with slots, about
    a third of the time of pickle's own way both ways (``__getstate__``/``__setstate__``
    through ``object.__setattr__`` per field): the records a child process hands over
    (``qoe.capture.read_ahead``, ``qoe.web._split``).
    """
    try:
        return _REDUCERS[cls]
    except KeyError:
        pass
    red = None
    if (dataclasses.is_dataclass(cls) and not hasattr(cls, "__post_init__")
            and all(f.init for f in dataclasses.fields(cls))):
        from operator import attrgetter  # noqa: PLC0415 - only where records are pickled

        names = [f.name for f in dataclasses.fields(cls)]
        get: Callable[[Any], Any] = attrgetter(*names) if len(names) > 1 else (lambda o, n=names[0]: (getattr(o, n),))
        make = maker_named(f"{MAKER_PREFIX}{cls.__module__.replace('.', '/')}:{cls.__qualname__.replace('.', '/')}")

        def red(obj: Any, make: Any = make, get: Any = get) -> tuple[Any, ...]:
            return make, get(obj)
    _REDUCERS[cls] = red
    return red


def maker_named(name: str) -> Callable[..., Any]:
    """The positional :func:`builder` that ``name`` (``_make:<module>:<qualname>``) stands for."""
    make = _NAMED.get(name)
    if make is None:
        import importlib  # noqa: PLC0415 - only where records are unpickled

        module, qualname = name[len(MAKER_PREFIX):].replace("/", ".").split(":")
        cls: Any = importlib.import_module(module)
        for part in qualname.split("."):
            cls = getattr(cls, part)
        make = builder(cls, positional=True)
        make.__module__, make.__name__, make.__qualname__ = __name__, name, name
        make.record = cls  # type: ignore[attr-defined] - the class it makes
        _NAMED[name] = make
    return make


def __getattr__(name: str) -> Any:  # PEP 562: the makers of record_reducer, found by pickle
    if name.startswith(MAKER_PREFIX):
        return maker_named(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
