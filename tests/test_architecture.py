"""The layering of docs/architecture.md, checked on every module's imports.

Each module's ``import``/``from ... import`` statements (at any depth, lazy ones included) are
read with :mod:`ast`; a rule is broken when a package imports a ``qoe`` package its row of the
table in docs/architecture.md does not allow.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "qoe"
CLI = ROOT / "cli" / "qoe_cli"

# package -> the qoe packages it may import (docs/architecture.md, "Which layer may import which")
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "mos": {"errors"},
    "capture": {"errors", "_records"},
    "rtp": {"errors", "capture", "report", "_records"},
    "voice": {"errors", "mos", "capture", "rtp", "report", "options", "outputs"},
    # "web": only qoe.video.has (adaptive streaming over HTTP), public names only (test below)
    "video": {"errors", "mos", "capture", "rtp", "report", "options", "outputs", "web"},
    "web": {"errors", "mos", "capture", "report", "options", "outputs", "_records"},
    "report": {"errors"},
    "_records": set(),
    "options": {"errors", "report"},
    "outputs": {"errors"},
    "plot": {"errors", "mos", "outputs", "report"},
}


def _package_of(path: Path) -> str:
    rel = path.relative_to(SRC).parts
    return rel[0].removesuffix(".py")


def _qoe_imports(path: Path) -> list[tuple[int, str]]:
    """(line, dotted module) of every ``qoe`` import in ``path``, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = ["qoe", *path.relative_to(SRC).with_suffix("").parts]
    if here[-1] == "__init__":
        here = here[:-1]
    else:
        here = here[:-1]  # the module's package
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "qoe"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] == "qoe":
                if mod == "qoe":  # from qoe import voice, ...
                    out += [(node.lineno, f"qoe.{a.name}") for a in node.names]
                else:
                    out.append((node.lineno, mod))
    return out


MODULES = sorted(p for p in SRC.rglob("*.py") if _package_of(p) in ALLOWED)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_layers_import_only_what_they_may(path):
    pkg = _package_of(path)
    allowed = ALLOWED[pkg] | {pkg}
    bad = [
        f"line {line}: {mod}"
        for line, mod in _qoe_imports(path)
        if mod.split(".")[1] not in allowed
    ]
    assert not bad, f"qoe.{pkg} may import only {sorted(allowed)}: {bad}"


@pytest.mark.parametrize("path", [p for p in MODULES if _package_of(p) == "video"], ids=lambda p: str(p.relative_to(SRC)))
def test_only_video_has_uses_web_and_only_its_public_names(path):
    """qoe.video may use qoe.web for HTTP adaptive streaming only (qoe.video.has), through
    qoe.web's public modules (no ``qoe.web._x``), so that qoe.web's internals can change."""
    in_has = path.relative_to(SRC).parts[:2] == ("video", "has")
    web = [mod for _, mod in _qoe_imports(path) if mod.split(".")[1] == "web"]
    if not in_has:
        assert not web, f"{path.name}: only qoe.video.has may import qoe.web; found {web}"
    private = [m for m in web if any(part.startswith("_") for part in m.split("."))]
    assert not private, f"{path.name} imports private qoe.web modules: {private}"


def test_every_package_has_a_rule():
    packages = {_package_of(p) for p in SRC.rglob("*.py")}
    unruled = packages - set(ALLOWED) - {"__init__", "api", "demo", "batch", "py"}
    assert not unruled, f"add these packages to docs/architecture.md and ALLOWED: {sorted(unruled)}"


TESTS = ROOT / "tests"


@pytest.mark.parametrize("path", sorted(CLI.rglob("*.py")) + sorted(TESTS.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_the_cli_and_the_tests_use_public_modules_only(path):
    """The CLI and the tests import public modules only: private ones can move freely."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    private = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "qoe":
            # `from qoe.web import _sink` names a private module as much as `qoe.web._sink` does
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names
                                     if a.name.startswith("_") and not a.name.startswith("__")]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("qoe.")]
        private += [f"line {node.lineno}: {n}" for n in names if any(part.startswith("_") for part in n.split("."))]
    assert not private, f"{path.name} imports private modules: {private}"



def _module_graph_tool():
    """tools/module_graph.py, loaded from its file (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("module_graph", ROOT / "tools" / "module_graph.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_no_import_cycle_between_modules():
    """No module imports (directly or through others) a module that imports it back.

    Lazy imports count: a function-level import that closes a loop is a cycle still. A
    package's ``__init__`` imports its modules, so a module that imports its own package
    (``from qoe.rtp import RtpStream`` inside ``qoe.rtp.delay``) closes a cycle too: import a
    name from the module that defines it.
    """
    tool = _module_graph_tool()
    found = tool.cycles(tool.module_graph(SRC))
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def _lazy_imports_without_reason(path: Path) -> list[int]:
    """Lines of function-level imports that give no reason for being there.

    A reason is a comment after the import (``# noqa: PLC0415 - pandas only when ...``) or a
    comment line above its block of imports (consecutive import lines, blank lines between
    them allowed, share one reason).
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    tree = ast.parse("\n".join(lines), filename=str(path))

    def reason(text: str) -> str:
        comment = text.partition("#")[2]
        return comment.replace("noqa: PLC0415", "").strip(" -:\u2013")

    def is_import(text: str) -> bool:
        t = text.strip()
        return t.startswith(("import ", "from ")) and " import " in t or t.startswith("import ")

    bad = []
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(func):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
            if any(reason(lines[i]) for i in range(first, last + 1)):
                continue
            i, j = first - 1, last + 1  # the block of imports around it
            while i >= 0 and (is_import(lines[i]) or not lines[i].strip()):
                i -= 1
            while j < len(lines) and (is_import(lines[j]) or not lines[j].strip()):
                j += 1
            block = range(i + 1, j)
            if not (i >= 0 and lines[i].strip().startswith("#")) and not any(reason(lines[k]) for k in block):
                bad.append(node.lineno)
    return bad


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_a_function_level_import_says_why(path):
    """Imports go at the top of a module; one inside a function breaks a real cost (an optional
    dependency, a slow import, ``import qoe`` kept light) and says which (issue 21)."""
    bad = _lazy_imports_without_reason(path)
    assert not bad, f"{path.relative_to(SRC)}: function-level imports without a reason at lines {bad}"



def test_the_cycle_finder_finds_cycles():
    """The finder itself: a loop of three, a module importing its package, and none."""
    tool = _module_graph_tool()
    assert tool.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]
    assert tool.cycles({"p": {"p.m"}, "p.m": {"p"}}) == [["p", "p.m"]]
    assert tool.cycles({"a": {"b"}, "b": set()}) == []


def test_the_module_page_is_true_to_the_code():
    """docs/modules.md (each package's modules, their jobs and the imports inside the package) is
    what tools/module_graph.py makes of the code now."""
    tool = _module_graph_tool()
    page = ROOT / "docs" / "modules.md"
    assert page.is_file() and page.read_text(encoding="utf-8") == tool.page(SRC), (
        "docs/modules.md is out of date: run python tools/module_graph.py --write"
    )
