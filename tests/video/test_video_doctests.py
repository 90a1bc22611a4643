"""The Examples sections of the qoe.video modules (and of their public names) run as doctests."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["qoe.video.mos", "qoe.video.align"]
# qoe.video.metrics re-exports names defined in private modules: their docstrings are checked by name
PUBLIC = ["qoe.video.metrics.psnr", "qoe.video.metrics.ssim", "qoe.video.metrics.ssim_downsample_factor"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("name", PUBLIC)
def test_public_name_doctests(name):
    module, attr = name.rsplit(".", 1)
    obj = getattr(importlib.import_module(module), attr)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = doctest.DocTestFinder().find(obj, attr, globs={attr: obj})
    for t in tests:
        runner.run(t)
    assert runner.tries > 0 and runner.failures == 0
