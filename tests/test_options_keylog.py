"""The ``keylog`` option of web and streaming options: checked and kept as plain strings alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from qoe.errors import InputError
from qoe.video.has import StreamingOptions
from qoe.web import WebOptions
from qoe.web.keylog import read_keylog


@pytest.mark.parametrize("cls", [WebOptions, StreamingOptions])
def test_a_keylog_is_kept_as_plain_strings(cls):
    assert cls(keylog=Path("a.keylog")).keylog == "a.keylog"
    assert cls(keylog=[Path("a.keylog"), "b.keylog"]).keylog == ("a.keylog", "b.keylog")
    assert cls(keylog=("a.keylog",)).keylog == ("a.keylog",)
    assert cls().keylog is None


@pytest.mark.parametrize("cls", [WebOptions, StreamingOptions])
@pytest.mark.parametrize("bad", [5, ("a.keylog", 7), b"a.keylog"])
def test_anything_else_is_an_input_error(cls, bad):
    with pytest.raises(InputError, match="keylog must be a key log file's path"):
        cls(keylog=bad)


@pytest.mark.parametrize("cls", [WebOptions, StreamingOptions])
def test_a_keylog_object_is_refused_without_printing_its_secrets(cls):
    """A KeyLog (read_keylog's) is not a path: the error names it and its file, and holds
    none of its secrets (its repr would)."""
    path = Path(__file__).resolve().parent.parent / "data" / "web" / "tls" / "tls13-ech.keylog"
    log = read_keylog(path)
    with pytest.raises(InputError) as e:
        cls(keylog=log)
    text = str(e.value)
    assert f"given a KeyLog read from {path}" in text
    assert not any(secret.hex() in text or repr(secret)[2:-1] in text for secret in log.secrets.values())
