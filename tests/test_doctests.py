"""The Examples sections of the public modules run as doctests."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["qoe.mos", "qoe.voice.emodel", "qoe.rtp", "qoe.rtp.lossmodel", "qoe.voice.combined", "qoe.web.g1030",
           "qoe.report"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
