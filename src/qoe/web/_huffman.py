"""HPACK Huffman decoding a byte at a time: a table-driven state machine (RFC 7541 §5.2, Appendix B).

``hpack`` (the HPACK decoder qoe uses for HTTP/2 header blocks) decodes Huffman-coded string
literals a nibble at a time in pure Python, with two table look-ups and two flag tests per
input byte; on decrypted browser captures that is about half of qoe's HTTP/2 time. This
module decodes the same strings with one look-up per input byte: the canonical code of
RFC 7541 Appendix B (taken as data from ``hpack.huffman_constants``, which holds it as the
RFC prints it) is made into its code tree; each state of the machine is an internal node
of the tree (the bits of a code read so far), and for each state and input byte the table
holds the state after the byte's eight bits and the symbols completed on the way.

The result and the errors are ``hpack``'s own (RFC 7541 §5.2): a string containing EOS is
an error, padding longer than 7 bits or not made of the most significant bits of EOS (all
ones) is an error; both raise ``hpack.exceptions.HPACKDecodingError``.
:func:`install` makes ``hpack.Decoder`` use :func:`decode_huffman` (hpack's decoder calls
the module-level name ``hpack.hpack.decode_huffman`` for each Huffman-coded literal; the
replacement is only made when that name is still hpack's own function, and returns the same
bytes or raises the same error for every input: ``tests/web/test_huffman.py`` checks it).

References
----------
.. [1] RFC 7541, "HPACK: Header Compression for HTTP/2", §5.2 (string literal
   representation, Huffman padding and EOS rules), Appendix B (the Huffman code).
"""

from __future__ import annotations

import hpack.hpack
import hpack.huffman_table
from hpack.exceptions import HPACKDecodingError
from hpack.huffman_constants import REQUEST_CODES, REQUEST_CODES_LENGTH  # RFC 7541 Appendix B, as data

__all__ = ["decode_huffman", "install"]

_EOS = 256  # RFC 7541 Appendix B: the 257th symbol, EOS (30 bits, all ones)
_MAX_PADDING = 7  # RFC 7541 §5.2: padding strictly longer than 7 bits is a decoding error


def _tree(codes: list[int], lengths: list[int]) -> tuple[list[list[int]], list[int]]:
    """The code tree of a canonical Huffman code: ``children[node] = [child0, child1]`` with a
    child ``>= 0`` an internal node and ``-1 - symbol`` a leaf; and each internal node's depth
    when it is reached from the root by ones only (else -1)."""
    children: list[list[int]] = [[0, 0]]
    used: list[list[bool]] = [[False, False]]
    for sym, (code, n) in enumerate(zip(codes, lengths)):
        node = 0
        for k in range(n - 1, -1, -1):
            bit = (code >> k) & 1
            if k == 0:
                children[node][bit] = -1 - sym
                used[node][bit] = True
            else:
                if not used[node][bit]:
                    children.append([0, 0])
                    used.append([False, False])
                    children[node][bit] = len(children) - 1
                    used[node][bit] = True
                node = children[node][bit]
    ones = [-1] * len(children)
    node, depth = 0, 0
    while node >= 0:  # the all-ones path: the prefixes of EOS (RFC 7541 §5.2 padding)
        ones[node] = depth
        node = children[node][1]
        depth += 1
    return children, ones


def _table(codes: list[int], lengths: list[int]) -> tuple[list[int], list[bytes], int, frozenset[int]]:
    """The byte table, as two lists indexed by ``state * 256 + byte``: ``next_state * 256`` and
    the symbols completed on the way; the failed state (EOS read, a sink) and the states that
    may end a string."""
    children, ones = _tree(codes, lengths)
    n = len(children)
    fail = n  # once EOS is read the string is an error, whatever follows
    # per state and nibble first (4 bits), then two nibbles make a byte
    nib: list[tuple[int, bytes]] = []
    for state in range(n + 1):
        for v in range(16):
            if state == fail:
                nib.append((fail, b""))
                continue
            node, out = state, bytearray()
            for k in (3, 2, 1, 0):
                child = children[node][(v >> k) & 1]
                if child >= 0:
                    node = child
                    continue
                sym = -1 - child
                if sym == _EOS:
                    node = fail
                    break
                out.append(sym)
                node = 0
            nib.append((node, bytes(out)))
    # two flat lists (the next state, the symbols completed), their values shared: 1.7 MB
    # where a list of (state, bytes) pairs took 8 MB, and one look-up cheaper per byte
    nxt: list[int] = []
    outs: list[bytes] = []
    ints: dict[int, int] = {}
    texts: dict[bytes, bytes] = {}
    for state in range(n + 1):
        for byte in range(256):
            mid, a = nib[state * 16 + (byte >> 4)]
            end, b = nib[mid * 16 + (byte & 15)]
            nxt.append(ints.setdefault(end * 256, end * 256))
            ab = a + b
            outs.append(texts.setdefault(ab, ab))
    accepting = frozenset(s * 256 for s in range(n) if 0 <= ones[s] <= _MAX_PADDING)
    return nxt, outs, fail * 256, accepting


_Tables = tuple[list[int], list[bytes], int, frozenset[int]]
_BUILT: list[_Tables] = []  # the byte table once built (a capture without HTTP/2 never needs it)


def _tables() -> _Tables:
    """The byte table, the failed state and the accepting states; built on first use."""
    if not _BUILT:
        _BUILT.append(_table(REQUEST_CODES, REQUEST_CODES_LENGTH))
    return _BUILT[0]


def decode_huffman(data: bytes | bytearray | memoryview | None) -> bytes:
    """The octets a Huffman-coded HPACK string literal stands for (RFC 7541 §5.2).

    Parameters
    ----------
    data : bytes-like or None
        The literal's octets (after its length prefix).

    Returns
    -------
    bytes
        The decoded string (``b""`` for an empty or None input).

    Raises
    ------
    hpack.exceptions.HPACKDecodingError
        The string contains EOS, or its padding is longer than 7 bits or not all ones.

    Examples
    --------
    RFC 7541 Appendix C.4.1, the Huffman-coded ``:authority`` value:

    >>> decode_huffman(bytes.fromhex("f1e3c2e5f23a6ba0ab90f4ff"))
    b'www.example.com'
    """
    if not data:
        return b""
    nxt, outs, fail, accepting = _BUILT[0] if _BUILT else _tables()
    state = 0
    parts = []
    add = parts.append
    for byte in data:
        i = state + byte
        state = nxt[i]
        add(outs[i])
    if state not in accepting:
        raise HPACKDecodingError("Invalid Huffman string" if state == fail else "Incomplete Huffman string")
    return b"".join(parts)


def install() -> bool:
    """Make ``hpack``'s decoder use :func:`decode_huffman`; True when it does.

    Only made when ``hpack.hpack.decode_huffman`` is still ``hpack.huffman_table.decode_huffman``
    (the layout of hpack 4.x); with another layout hpack is left as it is (False).
    """
    current = getattr(hpack.hpack, "decode_huffman", None)
    if current is decode_huffman:
        return True
    if current is not getattr(hpack.huffman_table, "decode_huffman", None):
        return False
    hpack.hpack.decode_huffman = decode_huffman
    return True
