"""The public surface: exported names, one error hierarchy."""

from __future__ import annotations

import inspect

import qoe
import qoe.errors


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
