"""HTTP field names and values as text, each distinct one held once.

HTTP/2 and HTTP/3 field blocks decode to bytes (hpack, pylsqpack), HTTP/1.x heads parse to
bytes (httptools, h11), and a transaction keeps its fields as latin-1 text (RFC 9110 §5.5: field values are octets; latin-1 maps each to one
character). A browser sends the same names and mostly the same values on every request
(``user-agent``, ``accept``, ``sec-ch-ua``...), a server the same on every response. Decoded
one by one, each transaction held its own copy of each: on copies of Chromium's HTTP/3 load
(``tests/big_capture.py`` "quic", decrypted) the field strings were 161 kB of the 227 kB a
load that a QUIC pass holds until its pages are made. Shared through a bounded cache of the
recent distinct ones, the same text costs one string.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

__all__ = ["field_line", "field_text", "fields_text"]

#: Distinct names and values remembered (least recently used forgotten first): a browser's
#: page holds a few hundred; a value seen once (a path, an etag) passes through.
CACHED = 4096


@functools.lru_cache(maxsize=CACHED)
def field_text(raw: bytes) -> str:
    """``raw`` as latin-1 text, the same ``str`` object for the same bytes while cached."""
    return raw.decode("latin-1")


@functools.lru_cache(maxsize=CACHED)
def field_line(name: bytes, value: bytes) -> tuple[str, str]:
    """One field line as text, the same tuple for the same line while cached."""
    return field_text(name), field_text(value)


def fields_text(fields: Iterable[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    """Decoded field lines (name, value), as text (:func:`field_text`); the same line, the
    same tuple while cached."""
    line = field_line
    return [line(k, v) for k, v in fields]
