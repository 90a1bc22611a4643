"""What a connection's first client bytes start: an HTTP/1.x request (RFC 9112 §3) or the
HTTP/2 connection preface (RFC 9113 §3.4).

The dispatch's sniff of a connection in clear (``qoe.web._dispatch``), the choice of a
decrypted connection's application without an ALPN that says (``qoe.web.decrypt``) and the
HTTP/2 parser's check of the preface (``qoe.web._h2``). A leaf: no parser is loaded to ask.

References
----------
.. [1] RFC 9112 §2.2 (empty lines before a request), §3 (request line); RFC 9110 §5.6.2, §9.1
   (method = token). RFC 9113 §3.4 (the HTTP/2 client connection preface).
"""

from __future__ import annotations

import re

__all__ = ["MAX_SNIFF", "PREFACE", "looks_like_h2_preface", "looks_like_request"]

#: Client bytes looked at to recognise the protocol: RFC 9112 §3 recommends accepting
#: request lines of at least 8000 octets.
MAX_SNIFF = 8192
_METHOD = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 §9.1: method = token (§5.6.2 tchar)
_MAX_METHOD = 32  # longer "methods" are not HTTP in practice (the registry's longest has 17)
# RFC 9112 §3: request-line = method SP request-target SP HTTP-version (§2.3: HTTP/d.d)
_REQUEST_LINE = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+ [^ \r\n]+ HTTP/[0-9]\.[0-9]\r?")
#: RFC 9113 §3.4: the client connection preface.
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def looks_like_h2_preface(prefix: bytes) -> bool | None:
    """Whether a connection's first client bytes are the HTTP/2 preface (RFC 9113 §3.4);
    None while they are a prefix of it."""
    n = min(len(prefix), len(PREFACE))
    if bytes(prefix[:n]) != PREFACE[:n]:
        return False
    return True if n == len(PREFACE) else None


def looks_like_request(prefix: bytes) -> bool | None:
    """Whether a connection's first client bytes start an HTTP/1.x request line (RFC 9112 §3;
    empty lines before it are allowed, §2.2); None while they cannot tell yet."""
    p = prefix.lstrip(b"\r\n")
    if not p:
        return None if len(prefix) < MAX_SNIFF else False
    m = _METHOD.match(p)
    if m is None or m.end() > _MAX_METHOD:
        return False
    if m.end() == len(p):
        return None
    if p[m.end()] != 0x20:
        return False
    nl = p.find(b"\n")
    if nl < 0:
        return None if len(p) < MAX_SNIFF else False
    return _REQUEST_LINE.fullmatch(p[:nl]) is not None
