"""HTTP field names and values as text, each distinct one held once.

HTTP/2 and HTTP/3 field blocks decode to bytes (hpack, pylsqpack), HTTP/1.x heads parse to
bytes (httptools, h11), and a transaction keeps its fields as latin-1 text (RFC 9110 §5.5:
field values are octets; latin-1 maps each to one character). A browser sends the same names
and mostly the same values on every request (``user-agent``, ``accept``, ``sec-ch-ua``...), a
server the same on every response. Decoded one by one, each transaction held its own copy of
each: on copies of Chromium's HTTP/3 load (``tests/big_capture.py`` "quic", decrypted) the
field strings were 161 kB of the 227 kB a load that a QUIC pass holds until its pages are
made. Through a bounded cache of the recent distinct lines, the same line costs one tuple of
two strings. What the cache holds is bounded in bytes too: a line whose name or value is
longer than :data:`LONGEST` is decoded on its own, never kept.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

__all__ = ["CACHED", "LONGEST", "field_line", "fields_text"]

#: Distinct lines remembered (least recently used forgotten first): a browser's page holds a
#: few hundred; a line seen once (a path, an etag) passes through.
CACHED = 4096
#: Longest name or value cached (bytes): at most about 2 x CACHED x LONGEST bytes held (8 MiB).
LONGEST = 1024


@functools.lru_cache(maxsize=CACHED)
def _cached(name: bytes, value: bytes) -> tuple[str, str]:
    return name.decode("latin-1"), value.decode("latin-1")


def field_line(name: bytes, value: bytes) -> tuple[str, str]:
    """One field line as text, the same tuple for the same line while cached."""
    if len(value) <= LONGEST and len(name) <= LONGEST:
        return _cached(name, value)
    return name.decode("latin-1"), value.decode("latin-1")


def fields_text(fields: Iterable[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    """Decoded field lines (name, value), as text (:func:`field_line`)."""
    cached, most = _cached, LONGEST
    return [cached(k, v) if len(v) <= most and len(k) <= most else (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in fields]
