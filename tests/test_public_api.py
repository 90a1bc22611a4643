"""The public surface: what each package exports, one error hierarchy.

A *public module* is any module of :mod:`qoe` whose dotted path has no component starting
with ``_`` (``qoe.voice.emodel`` is one, ``qoe.voice.call._score`` and everything under
``qoe.voice.p862._*`` are not). For each public module these tests check that

* it declares ``__all__``, every name in it exists, and none starts with ``_``;
* every function and class it defines (``obj.__module__`` is the module) and does not
  name with a leading ``_`` is in its ``__all__`` — a new public function fails here until
  it is exported;
* for a package, every function and class it takes from its own private modules (the
  implementation behind its face, e.g. ``qoe.rtp._scan``) is in its ``__all__`` too: a
  package shows no implementation helper under a public-looking name.

Names a public module imports from *another public module* are not its exports (they
are exported where they live). Constants cannot be told apart from imported values, so
only functions and classes are checked for completeness.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import qoe
import qoe.errors

#: The packages the issue names; their subpackages and modules are walked too.
PACKAGES = ["qoe", "qoe.voice", "qoe.rtp", "qoe.capture", "qoe.web", "qoe.mos", "qoe.report", "qoe.api", "qoe.options",
            "qoe.batch"]


def _is_private(name: str) -> bool:
    return any(part.startswith("_") for part in name.split("."))


def _public_modules() -> list[str]:
    names = set()
    for pkg in PACKAGES:
        mod = importlib.import_module(pkg)
        names.add(pkg)
        if hasattr(mod, "__path__"):
            for info in pkgutil.walk_packages(mod.__path__, prefix=pkg + "."):
                if not _is_private(info.name):
                    names.add(info.name)
    return sorted(names)


PUBLIC = _public_modules()


def _home(obj: object) -> str | None:
    return getattr(obj, "__module__", None)


def test_the_walk_finds_the_packages_and_their_public_modules():
    for name in ("qoe.voice.emodel", "qoe.voice.call", "qoe.voice.p862", "qoe.rtp.sip", "qoe.web.g1030"):
        assert name in PUBLIC, name
    assert not [m for m in PUBLIC if _is_private(m)]


@pytest.mark.parametrize("name", PUBLIC)
def test_all_lists_existing_public_names(name):
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    defined = [
        n for n, obj in vars(module).items()
        if not n.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj)) and _home(obj) == name
    ]
    if exported is None:
        assert not defined, f"{name} defines {defined} but has no __all__"
        return
    assert len(set(exported)) == len(exported), f"{name}.__all__ lists a name twice"
    for n in exported:
        assert hasattr(module, n), f"{name}.__all__ names {n!r}, which {name} does not have"
        assert not n.startswith("_") or n == "__version__", f"{name}.__all__ exports the private name {n!r}"


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_function_and_class_is_exported(name):
    module = importlib.import_module(name)
    exported = set(getattr(module, "__all__", ()))
    is_package = hasattr(module, "__path__")
    missing = []
    for n in dir(module):
        if n.startswith("_"):
            continue
        obj = getattr(module, n)
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        home = _home(obj) or ""
        defined_here = home == name
        reexported = is_package and _is_private(home) and home.startswith(name + ".")
        if (defined_here or reexported) and n not in exported:
            missing.append(f"{n} (from {home})")
    assert not missing, f"{name} has public names missing from its __all__: {', '.join(missing)}"


def test_voice_exports_what_users_call_and_no_modules():
    import qoe.voice

    assert 12 <= len(qoe.voice.__all__) <= 20, qoe.voice.__all__
    for n in qoe.voice.__all__:
        assert not inspect.ismodule(getattr(qoe.voice, n)), f"qoe.voice.__all__ lists the module {n!r}"
    # the call scorer, its options and its inputs and results are reached from the package itself
    for n in ("score_call", "score_calls", "find_calls", "CallOptions", "Reference", "CallScore", "DirectionScore",
              "r_factor", "pesq", "load_speech"):
        assert n in qoe.voice.__all__, n


def test_the_top_level_names_are_the_documented_ones():
    """``qoe.__all__`` is the stable surface the issue and DESIGN.md name: changing it is a decision."""
    assert set(qoe.__all__) == {
        "__version__", "score", "batch", "Report", "QoEError", "InputError", "NoSpeechError", "AlignmentError",
        "CaptureError", "UnsupportedCodecError", "StreamNotFoundError", "EncryptedStreamError", "QoEWarning",
    }
    assert inspect.ismodule(qoe.batch) and callable(qoe.batch.run) and "run" in qoe.batch.__all__
    for name in qoe.__all__:  # each is documented
        if name != "__version__":
            assert (getattr(qoe, name).__doc__ or "").strip(), name


def test_the_package_is_typed():
    from pathlib import Path

    assert (Path(qoe.__file__).parent / "py.typed").is_file()
    hints = inspect.get_annotations(qoe.batch.run)
    assert {"manifest", "workers", "scheduler", "resume", "progress", "return"} <= set(hints)
    assert {"capture", "reference", "kind", "options", "return"} <= set(inspect.get_annotations(qoe.score))


def test_all_names_exist():
    for name in qoe.__all__:
        assert hasattr(qoe, name), name


def test_every_error_is_exported_and_derives_from_qoeerror():
    classes = [c for _, c in inspect.getmembers(qoe.errors, inspect.isclass) if c.__module__ == "qoe.errors"]
    for cls in classes:
        assert cls.__name__ in qoe.__all__, cls.__name__
        if cls is not qoe.QoEWarning:
            assert issubclass(cls, qoe.QoEError), cls.__name__


def test_input_error_is_a_value_error():
    assert issubclass(qoe.InputError, ValueError)


def test_version_is_a_string():
    assert isinstance(qoe.__version__, str) and qoe.__version__


# -- the API pages document every public name ------------------------------------------------

DOCS_API = __import__("pathlib").Path(__file__).resolve().parents[1] / "docs" / "api"
_DIRECTIVE = __import__("re").compile(r"^\.\. (automodule|autofunction|autoclass|autodata):: (\S+)\n((?:   .*\n|\s*\n)*)",
                                      __import__("re").M)


def _documented() -> dict[str, set[str]]:
    """Module -> the names of it the API pages document.

    ``automodule:: M`` with ``:members:`` documents ``M.__all__`` (or the names it lists),
    and with ``:imported-members:`` those of its re-exported names too; ``autofunction::
    M.N`` (and class, data) documents ``N``.
    """
    out: dict[str, set[str]] = {}
    for page in sorted(DOCS_API.glob("*.rst")):
        for kind, target, body in _DIRECTIVE.findall(page.read_text(encoding="utf-8")):
            if kind != "automodule":
                mod, _, name = target.rpartition(".")
                out.setdefault(mod, set()).add(name)
                continue
            opts = " ".join(body.split())
            if ":members:" not in opts or ":no-members:" in opts:
                continue
            listed = opts.split(":members:", 1)[1].split(":", 1)[0].replace(",", " ").split()
            module = importlib.import_module(target)
            out.setdefault(target, set()).update(listed or getattr(module, "__all__", ()))
            if kind == "automodule":
                out.setdefault(target, set())
    return out


def _undocumented() -> tuple[list[str], list[str]]:
    """(public names on no API page, names a page lists that their module does not export)."""
    documented = _documented()
    objects = set()  # functions, classes and modules documented anywhere (by identity)
    for mod, names in documented.items():
        module = importlib.import_module(mod)
        objects.add(id(module))
        objects |= {id(getattr(module, n)) for n in names if hasattr(module, n)}
    missing, stale = [], []
    for name in PUBLIC:
        module = importlib.import_module(name)
        exported = set(getattr(module, "__all__", ()))
        stale += [f"{name}.{n}" for n in documented.get(name, set()) - exported]
        parts = name.split(".")
        ancestors = [importlib.import_module(a) for a in (".".join(parts[:k]) for k in range(1, len(parts)))
                     if a in documented]
        for n in sorted(exported - documented.get(name, set())):
            obj = getattr(module, n)
            if (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismodule(obj)) and id(obj) in objects:
                continue  # documented under another public name
            if any(n in documented[a.__name__] and getattr(a, n, None) is obj for a in ancestors):
                continue  # its package shows it
            missing.append(f"{name}.{n}")
    return missing, stale


def test_every_public_name_is_on_an_api_page():
    """Each public module's ``__all__`` is on the API pages (docs/api/*.rst): in its own section,
    or (a function, class or module) where the object is documented under another public name.
    A name a page lists must be in its module's ``__all__`` (the page and the exports cannot
    drift apart)."""
    missing, stale = _undocumented()
    assert not stale, f"API pages list names their module does not export: {stale}"
    assert not missing, f"{len(missing)} public names are on no API page (docs/api/*.rst): {missing}"
