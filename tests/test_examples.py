"""The example notebooks run from top to bottom without an error (nbmake executes each cell)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("nbmake")
pytest.importorskip("matplotlib")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize("notebook", sorted(EXAMPLES.glob("*.ipynb")), ids=lambda p: p.stem)
def test_the_notebook_runs(notebook):
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbmake",
                          "--nbmake-timeout=900", str(notebook)],
                         capture_output=True, text=True, timeout=1200, cwd=notebook.parent)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
