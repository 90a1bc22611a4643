"""The Examples sections of the qoe.video modules run as doctests."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["qoe.video.metrics", "qoe.video.mos", "qoe.video.align"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
