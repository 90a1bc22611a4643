"""The Examples sections of the public modules (and of public names defined in private ones) run as doctests."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["qoe.mos", "qoe.voice.emodel", "qoe.rtp", "qoe.rtp.lossmodel", "qoe.voice.combined", "qoe.web.g1030", "qoe.web.http",
           "qoe.report", "qoe.video.has.yin"]
#: Public names whose definitions live in private modules (found there by name, not by path).
OBJECTS = ["qoe.voice.CallOptions"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0


@pytest.mark.parametrize("path", OBJECTS)
def test_object_doctests(path):
    module_name, attr = path.rsplit(".", 1)
    obj = getattr(importlib.import_module(module_name), attr)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = doctest.DocTestFinder().find(obj, attr, globs={attr: obj})
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0, f"{path} has no examples"
    assert result.failed == 0
