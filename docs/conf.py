"""Sphinx configuration of the qoe documentation (``make docs``; a test builds it with -W)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "cli")]
os.environ.setdefault("MPLBACKEND", "Agg")

project = "qoe"
author = "the qoe developers"
copyright = "2026, the qoe developers"  # noqa: A001 - Sphinx's name

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_nb",
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
root_doc = "index"

# API reference: the docstrings are NumPy style; numpydoc renders them.
autosummary_generate = True
autodoc_default_options = {"members": True, "member-order": "bysource", "show-inheritance": False}
autodoc_typehints = "none"  # numpydoc shows the documented types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# Examples: notebooks are executed by the test suite (nbmake); the docs show them as committed.
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

# The References sections cite by number without a marker in the text ([1] etc.):
# docutils would warn of every citation not referenced.
suppress_warnings = ["ref.citation"]

html_theme = "pydata_sphinx_theme"
html_title = "qoe"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
