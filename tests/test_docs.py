"""The documentation builds with Sphinx, warnings as errors (what ``make docs`` runs).

A docstring that breaks reStructuredText, a guide page that names a function that does not
exist, or a toctree entry without its page fails this test.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sphinx")
pytest.importorskip("numpydoc")
pytest.importorskip("myst_nb")
pytest.importorskip("pydata_sphinx_theme")

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_docs_build_without_warnings(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-d", str(tmp_path / "doctrees"),
         str(DOCS), str(tmp_path / "html")],
        capture_output=True, text=True, timeout=600,
    )
    assert res.returncode == 0, res.stderr[-4000:]
    html = (tmp_path / "html" / "api" / "qoe.html").read_text(encoding="utf-8")
    assert "qoe.score" in html  # the API reference was generated from the docstrings
    for page in ("guide/voice", "guide/figures", "api/web", "api/plot"):
        assert (tmp_path / "html" / f"{page}.html").is_file()
