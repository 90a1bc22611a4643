"""SIP signalling and SDP session descriptions: where a call's RTP streams go, and in what codec.

A SIP call (RFC 3261) is set up by an INVITE whose body is an SDP offer (RFC 3264) and a
2xx answer whose body is the SDP answer. Each SDP media line says where one party wants
to *receive* RTP (connection address ``c=`` and port ``m=``), which payload types it
accepts and what they mean (``a=rtpmap``), and the packetisation time (``a=ptime``). This
module parses those messages from UDP payloads and groups them into calls by Call-ID,
so that :mod:`qoe.rtp` can name the codec and clock rate of each stream and tie
both directions of a call together.

Only what stream discovery needs is parsed: start line, Call-ID, CSeq, From, To,
Content-Type, Content-Length and an ``application/sdp`` body (with its SDES ``a=crypto``
keys, :class:`SdesCrypto`, which :mod:`qoe.rtp.srtp` decrypts SRTP streams with). Multipart bodies and SIP
over TCP/TLS are not handled.

References
----------
.. [1] RFC 3261, "SIP: Session Initiation Protocol", §7 (message format), §7.3.3 (compact
   header names), §20 (header fields), §21 (status codes).
.. [2] RFC 4566, "SDP: Session Description Protocol", §5 (``v= o= s= c= t= m= a=`` lines),
   §5.7 (connection data), §5.14 (media descriptions), §6 (``rtpmap``, ``ptime``,
   ``sendrecv`` ...).
.. [3] RFC 3264, "An Offer/Answer Model with SDP", §5 and §6 (offer and answer).
.. [4] RFC 3605, "RTCP attribute in SDP" (``a=rtcp:port``); RFC 5761 §5.1.1 (``a=rtcp-mux``).
.. [5] RFC 4568, "SDP Security Descriptions for Media Streams" (SDES): §4 (``a=crypto``
   syntax), §5.1 (the key a party announces is the one it *sends* with), §6.1 (offer and
   answer: the answer accepts one of the offer's lines by its tag), §6.2 (suites), §9.1
   (grammar); RFC 3711 §3.1 (the SRTP packet, MKI); RFC 7714 §14.2 (``AEAD_AES_*_GCM``).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from qoe.errors import InputError

__all__ = [
    "SdesCrypto",
    "SdpMedia",
    "SessionDescription",
    "SipMessage",
    "SipCall",
    "parse_sdp",
    "parse_sip",
    "group_calls",
    "parse_crypto",
    "sender_crypto",
]

# RFC 3261 §27.4 (methods of RFC 3261) plus the extension methods registered since
# (PRACK RFC 3262, SUBSCRIBE/NOTIFY RFC 6665, UPDATE RFC 3311, INFO RFC 6086,
# REFER RFC 3515, MESSAGE RFC 3428, PUBLISH RFC 3903).
_SIP_METHODS = (
    "INVITE", "ACK", "BYE", "CANCEL", "OPTIONS", "REGISTER", "PRACK", "SUBSCRIBE",
    "NOTIFY", "PUBLISH", "INFO", "REFER", "MESSAGE", "UPDATE",
)
_METHODS = frozenset(_SIP_METHODS)

# RFC 3261 §7.3.3: compact forms of header field names.
_COMPACT = {"i": "call-id", "f": "from", "t": "to", "c": "content-type", "l": "content-length",
            "m": "contact", "v": "via", "e": "content-encoding", "k": "supported", "s": "subject"}

_REQUEST_LINE = re.compile(r"^([A-Z]+) (\S+) SIP/2\.0$")
_STATUS_LINE = re.compile(r"^SIP/2\.0 (\d{3})(?: (.*))?$")
_ANGLE_URI = re.compile(r"<([^>]*)>")


@dataclass(frozen=True, slots=True)
class SdesCrypto:
    """One ``a=crypto`` line of an SDP media section (RFC 4568 SDES).

    The key is the one the *author of the SDP* encrypts the media it **sends** with
    (RFC 4568 §5.1): in a call, the stream from A to B is decrypted with A's key, which
    is in A's SDP, not in the SDP that announced B's receiving port.

    Attributes
    ----------
    tag : int
        The line's tag (RFC 4568 §4.1): the answer accepts an offered line by its tag.
    suite : str
        The crypto-suite (``AES_CM_128_HMAC_SHA1_80``, ``AES_CM_128_HMAC_SHA1_32``,
        ``AEAD_AES_128_GCM``, ...; RFC 4568 §6.2, RFC 7714 §14.2), upper case.
    key_salt : bytes
        The first key-param's ``inline:`` value, base64-decoded: master key || master salt
        (RFC 4568 §6.1: 30 bytes for the AES_CM_128 suites).
    lifetime : int or None
        Master key lifetime in packets (``|2^20`` or ``|1048576``), if given.
    mki : int or None
        Master Key Identifier value of the first key-param (``|1:4``), if given.
    mki_length : int
        Length in bytes of the MKI field carried in each SRTP packet (0: none; RFC 3711 §3.1).
    session_params : tuple of str
        Session parameters as written (``KDR=``, ``UNENCRYPTED_SRTP``, ``WSH=``, ...;
        RFC 4568 §6.3).
    keys : int
        Number of key-params on the line (only the first one is used by :mod:`qoe.rtp.srtp`).
    """

    tag: int
    suite: str
    key_salt: bytes
    lifetime: int | None = None
    mki: int | None = None
    mki_length: int = 0
    session_params: tuple[str, ...] = ()
    keys: int = 1

    def __repr__(self) -> str:  # the key stays out of logs and tracebacks
        return f"SdesCrypto(tag={self.tag}, suite={self.suite!r}, key_salt=<{len(self.key_salt)} bytes>, mki={self.mki})"


def parse_crypto(value: str) -> SdesCrypto | None:
    """Parse the value of an ``a=crypto`` attribute (RFC 4568 §9.1); None if malformed.

    ``<tag> <crypto-suite> inline:<base64 key||salt>[|<lifetime>][|<MKI>:<length>][;inline:...]
    [<session-param> ...]``.

    Parameters
    ----------
    value : str
        What follows ``a=crypto:``.

    Returns
    -------
    SdesCrypto or None

    Examples
    --------
    >>> c = parse_crypto("1 AES_CM_128_HMAC_SHA1_80 inline:d0RmdmcmVCspeEc3QGZiNWpVLFJhQX1cfHAwJSoj|2^20|1:32")
    >>> (c.tag, c.suite, len(c.key_salt), c.lifetime, c.mki, c.mki_length)
    (1, 'AES_CM_128_HMAC_SHA1_80', 30, 1048576, 1, 32)
    """
    parts = value.split()
    if len(parts) < 3 or not parts[0].isdigit():
        return None
    key_params = parts[2].split(";")  # RFC 4568 §9.1: key-params = key-param *(";" key-param)
    method, _, info = key_params[0].partition(":")
    if method.lower() != "inline":
        return None
    fields_ = info.split("|")
    try:
        key = base64.b64decode(fields_[0] + "=" * (-len(fields_[0]) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    lifetime = mki = None
    mki_length = 0
    for f in fields_[1:]:
        if ":" in f:  # RFC 4568 §9.1: mki = mki-value ":" mki-length (decimal, length in bytes)
            v, _, ln = f.partition(":")
            if v.isdigit() and ln.isdigit():
                mki, mki_length = int(v), int(ln)
        elif f.startswith("2^") and f[2:].isdigit():  # lifetime = ["2^"] 1*DIGIT
            lifetime = 1 << int(f[2:])
        elif f.isdigit():
            lifetime = int(f)
    return SdesCrypto(tag=int(parts[0]), suite=parts[1].upper(), key_salt=key, lifetime=lifetime, mki=mki,
                      mki_length=mki_length, session_params=tuple(parts[3:]), keys=len(key_params))


def sender_crypto(sender: SdpMedia | None, receiver: SdpMedia | None = None) -> SdesCrypto | None:
    """The SDES key a stream is encrypted with: the sender's ``a=crypto`` (RFC 4568 §5.1).

    Each party's SDP gives the key it sends with. When the sender's media section has
    several lines (it made the offer), the one the other side accepted is the one whose
    tag the receiver's section (the answer) repeats (RFC 4568 §6.1); without an answer,
    the first line.

    Parameters
    ----------
    sender : SdpMedia or None
        The media section in the SDP of the party that sends the stream.
    receiver : SdpMedia or None
        The media section in the SDP of the party that receives it (the one whose
        address and port the stream goes to).

    Returns
    -------
    SdesCrypto or None
        None when the sender announced no key.
    """
    if sender is None or not sender.crypto:
        return None
    if len(sender.crypto) > 1 and receiver is not None:
        accepted = {c.tag for c in receiver.crypto}
        for c in sender.crypto:
            if c.tag in accepted:
                return c
    return sender.crypto[0]


@dataclass(frozen=True, slots=True)
class SdpMedia:
    """One ``m=`` section of an SDP body: where its author wants to receive media.

    Attributes
    ----------
    media : str
        ``audio``, ``video``, ...
    address : str or None
        Connection address (media-level ``c=``, else the session-level one).
    port : int
        Media port (0: the stream is rejected/disabled, RFC 3264 §6).
    protocol : str
        Transport, e.g. ``RTP/AVP``.
    payload_types : tuple of int
        Payload types in preference order (RFC 4566 §5.14).
    rtpmap : dict of int to (str, int, int)
        ``a=rtpmap``: payload type -> (encoding name, clock rate, channels).
    ptime_ms : float or None
        ``a=ptime`` (RFC 4566 §6).
    rtcp_port : int or None
        ``a=rtcp`` port (RFC 3605); otherwise RTCP is on port + 1 (RFC 3550 §11).
    rtcp_mux : bool
        ``a=rtcp-mux`` (RFC 5761): RTCP shares the RTP port.
    direction : str
        ``sendrecv``, ``sendonly``, ``recvonly`` or ``inactive`` (RFC 4566 §6).
    fmtp : dict of int to dict of str to str
        ``a=fmtp`` (RFC 4566 §6): payload type -> its format parameters, ``key=value``
        pairs split at ``;`` (e.g. H.264's ``packetization-mode`` and
        ``sprop-parameter-sets``, RFC 6184 §8.1); a parameter without ``=`` maps to "".
    crypto : tuple of SdesCrypto
        ``a=crypto`` lines (RFC 4568), in order: keys this SDP's author sends with.
    mid : str or None
        ``a=mid`` (RFC 5888 §4): the section's identification tag, which the MID header
        extension carries under BUNDLE (RFC 8843 §15).
    extmap : dict of int to str
        ``a=extmap`` (RFC 8285 §5): header-extension ID -> its URI (e.g.
        ``http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time``).
    ssrcs : tuple of int
        SSRCs of ``a=ssrc`` lines (RFC 5576 §4.1): the sources this SDP's author sends.
    ssrc_groups : tuple of (str, tuple of int)
        ``a=ssrc-group`` lines (RFC 5576 §4.2): semantics (``FID``: media SSRC then its
        RTX SSRC, RFC 4588 §8; ``SIM``, ``FEC-FR``) and the SSRCs, in order.
    """

    media: str
    address: str | None
    port: int
    protocol: str
    payload_types: tuple[int, ...]
    rtpmap: dict[int, tuple[str, int, int]] = field(default_factory=dict)
    ptime_ms: float | None = None
    rtcp_port: int | None = None
    rtcp_mux: bool = False
    direction: str = "sendrecv"
    fmtp: dict[int, dict[str, str]] = field(default_factory=dict)
    crypto: tuple[SdesCrypto, ...] = ()
    mid: str | None = None
    extmap: dict[int, str] = field(default_factory=dict)
    ssrcs: tuple[int, ...] = ()
    ssrc_groups: tuple[tuple[str, tuple[int, ...]], ...] = ()

    def rtx_of(self) -> dict[int, int]:
        """RTX SSRC -> its media SSRC, from ``a=ssrc-group:FID`` (RFC 5576 §4.2, RFC 4588 §8)."""
        return {g[1]: g[0] for sem, g in self.ssrc_groups if sem.upper() == "FID" and len(g) >= 2}

    @property
    def secure(self) -> bool:
        """Whether the transport is SRTP: ``RTP/SAVP`` (RFC 3711 §12), ``RTP/SAVPF``
        (RFC 5124 §6), or their ``UDP/TLS/`` forms of DTLS-SRTP (RFC 5764 §8)."""
        return "SAVP" in self.protocol.upper()

    def encoding(self, payload_type: int) -> tuple[str, int] | None:
        """(encoding name, clock rate) of ``payload_type`` from ``a=rtpmap``, if given."""
        m = self.rtpmap.get(payload_type)
        return None if m is None else (m[0], m[1])


@dataclass(frozen=True, slots=True)
class SessionDescription:
    """A parsed SDP body (RFC 4566): origin, session-level address and media sections."""

    origin: str | None
    address: str | None
    media: tuple[SdpMedia, ...]


@dataclass(frozen=True, slots=True)
class SipMessage:
    """One SIP request or response seen in a capture.

    Attributes
    ----------
    frame : int
        Frame number in the capture.
    time_ns : int
        Capture time, ns since the epoch.
    src, sport, dst, dport : str, int, str, int
        UDP addresses.
    method : str or None
        Request method, None for a response.
    status : int or None
        Response status code, None for a request.
    reason : str
        Reason phrase of a response (empty for a request).
    call_id : str or None
        ``Call-ID`` header.
    cseq : int or None
        CSeq number.
    cseq_method : str or None
        CSeq method (tells which request a response answers).
    from_uri, to_uri : str or None
        URIs of the ``From`` and ``To`` headers.
    sdp : SessionDescription or None
        The SDP body, if the message has one.
    """

    frame: int
    time_ns: int
    src: str
    sport: int
    dst: str
    dport: int
    method: str | None
    status: int | None
    reason: str
    call_id: str | None
    cseq: int | None
    cseq_method: str | None
    from_uri: str | None
    to_uri: str | None
    sdp: SessionDescription | None


@dataclass(frozen=True)
class SipCall:
    """The SIP dialogue of one Call-ID and the media its offer and answer announced.

    Attributes
    ----------
    call_id : str
        The Call-ID shared by all messages of the call.
    from_uri, to_uri : str or None
        Caller and callee URIs (``From``/``To`` of the first INVITE).
    caller, callee : str or None
        IP addresses the first INVITE came from and went to.
    invite_ns, answer_ns, end_ns : int or None
        Times of the first INVITE, of the first 2xx answer to an INVITE, and of the first
        BYE or CANCEL.
    status : int or None
        The final status of the INVITE (e.g. 200, 486), None if none was seen.
    offer, answer : tuple of SdpMedia
        Media sections of the first SDP offer (caller's receive side) and of the first SDP
        answer (callee's receive side).
    messages : int
        Number of SIP messages of this call in the capture. :func:`qoe.rtp.scan_capture`
        counts a message the capture holds twice (the same bytes less than T1 = 500 ms
        apart, RFC 3261 §17.1.1.1: a Linux "any" capture or a span port) once; a UA's
        retransmission (T1 or later) counts again, as tshark's "Number of SIP messages" does.
    """

    call_id: str
    from_uri: str | None
    to_uri: str | None
    caller: str | None
    callee: str | None
    invite_ns: int | None
    answer_ns: int | None
    end_ns: int | None
    status: int | None
    offer: tuple[SdpMedia, ...]
    answer: tuple[SdpMedia, ...]
    messages: int

    @property
    def media(self) -> tuple[SdpMedia, ...]:
        """Every media section announced in the call (offer, then answer)."""
        return self.offer + self.answer

    @property
    def setup_s(self) -> float | None:
        """Call set-up time: INVITE to first 2xx, in seconds (None if not answered)."""
        if self.invite_ns is None or self.answer_ns is None:
            return None
        return (self.answer_ns - self.invite_ns) / 1e9

    def to_dict(self) -> dict[str, Any]:
        """One flat record of the call (media summarised as ``addr:port pts``)."""

        def fmt(media: tuple[SdpMedia, ...]) -> str:
            return " ".join(
                f"{m.address}:{m.port}/{','.join(str(p) for p in m.payload_types)}" for m in media
            )

        return {
            "call_id": self.call_id,
            "from": self.from_uri,
            "to": self.to_uri,
            "caller": self.caller,
            "callee": self.callee,
            "invite_ns": self.invite_ns,
            "answer_ns": self.answer_ns,
            "end_ns": self.end_ns,
            "status": self.status,
            "setup_s": self.setup_s,
            "offer": fmt(self.offer),
            "answer": fmt(self.answer),
            "messages": self.messages,
        }


def _fmtp(value: str) -> tuple[int, dict[str, str]] | None:
    """``<format> <parameters>`` of an ``a=fmtp`` line (RFC 4566 §6) as (payload type, dict)."""
    fmt, _, params = value.strip().partition(" ")
    if not fmt.isdigit():
        return None
    out: dict[str, str] = {}
    for item in params.split(";"):
        key, _, val = item.strip().partition("=")
        if key:
            out[key.strip()] = val.strip()
    return int(fmt), out


def parse_sdp(text: str) -> SessionDescription:
    """Parse an SDP body (RFC 4566 §5) into its media sections.

    Unknown lines are ignored; a malformed ``m=`` line is skipped.

    Parameters
    ----------
    text : str or bytes
        The SDP text (lines separated by CRLF or LF); bytes are read as UTF-8.

    Returns
    -------
    SessionDescription

    Raises
    ------
    InputError
        ``text`` is neither text nor bytes.

    Examples
    --------
    >>> sdp = parse_sdp("v=0\\r\\no=- 1 1 IN IP4 192.0.2.1\\r\\ns=-\\r\\nc=IN IP4 192.0.2.1\\r\\n"
    ...                 "t=0 0\\r\\nm=audio 4000 RTP/AVP 8 101\\r\\na=rtpmap:8 PCMA/8000\\r\\n"
    ...                 "a=rtpmap:101 telephone-event/8000\\r\\na=ptime:20\\r\\n")
    >>> m = sdp.media[0]
    >>> (m.address, m.port, m.payload_types, m.encoding(8), m.ptime_ms)
    ('192.0.2.1', 4000, (8, 101), ('PCMA', 8000), 20.0)
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "replace")  # RFC 4566 §5: UTF-8 (ISO 10646) text
    if not isinstance(text, str):
        raise InputError(f"parse_sdp takes the SDP text (str or bytes); given {type(text).__name__} "
                         "(an SDP file: give its text, pathlib.Path(file).read_text())")
    origin = None
    session_addr = None
    sections: list[dict[str, Any]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if len(line) < 2 or line[1] != "=":
            continue
        kind, value = line[0], line[2:].strip()
        cur = sections[-1] if sections else None
        if kind == "o":
            origin = value
        elif kind == "c":
            addr = _connection_address(value)
            if cur is None:
                session_addr = addr
            else:
                cur["address"] = addr
        elif kind == "m":
            parts = value.split()
            if len(parts) < 3:
                sections.append({"skip": True})
                continue
            try:
                port = int(parts[1].split("/")[0])  # RFC 4566 §5.14: <port>/<number of ports>
            except ValueError:
                sections.append({"skip": True})
                continue
            pts = tuple(int(p) for p in parts[3:] if p.isdigit())
            sections.append({"media": parts[0], "port": port, "protocol": parts[2], "pts": pts,
                             "rtpmap": {}, "fmtp": {}, "attrs": {}, "crypto": [], "extmap": {}, "ssrcs": [],
                             "groups": []})
        elif kind == "a" and cur is not None and not cur.get("skip"):
            name, _, val = value.partition(":")
            if name == "rtpmap":
                pt_s, _, enc = val.partition(" ")
                bits = enc.strip().split("/")
                try:
                    clock = int(bits[1]) if len(bits) > 1 else 0
                    chans = int(bits[2]) if len(bits) > 2 and bits[2] else 1
                    cur["rtpmap"][int(pt_s)] = (bits[0], clock, chans)
                except ValueError:
                    pass
            elif name == "fmtp":
                fmt = _fmtp(val)
                if fmt is not None:
                    cur["fmtp"][fmt[0]] = fmt[1]
            elif name == "crypto":  # RFC 4568 §4: one line per offered key
                c = parse_crypto(val)
                if c is not None:
                    cur["crypto"].append(c)
            elif name == "extmap":  # RFC 8285 §5: a=extmap:<id>[/<direction>] <URI> [<attributes>]
                head, _, rest = val.partition(" ")
                ident = head.split("/")[0]
                if ident.isdigit() and rest.strip():
                    cur["extmap"][int(ident)] = rest.split()[0]
            elif name == "ssrc":  # RFC 5576 §4.1: a=ssrc:<ssrc-id> <attribute>[:<value>]
                ident = val.split(" ")[0]
                if ident.isdigit() and int(ident) not in cur["ssrcs"]:
                    cur["ssrcs"].append(int(ident))
            elif name == "ssrc-group":  # RFC 5576 §4.2: a=ssrc-group:<semantics> <ssrc-id> ...
                parts = val.split()
                if len(parts) >= 2 and all(p.isdigit() for p in parts[1:]):
                    cur["groups"].append((parts[0], tuple(int(p) for p in parts[1:])))
            else:
                cur["attrs"][name] = val
    media = []
    for s in sections:
        if s.get("skip"):
            continue
        attrs = s["attrs"]
        ptime = None
        if "ptime" in attrs:
            try:
                ptime = float(attrs["ptime"])
            except ValueError:
                ptime = None
        rtcp_port = None
        if attrs.get("rtcp"):
            head = attrs["rtcp"].split()[0]
            rtcp_port = int(head) if head.isdigit() else None
        direction = next((d for d in ("sendonly", "recvonly", "inactive", "sendrecv") if d in attrs), "sendrecv")
        media.append(
            SdpMedia(
                media=s["media"],
                address=s.get("address", session_addr),
                port=s["port"],
                protocol=s["protocol"],
                payload_types=s["pts"],
                rtpmap=s["rtpmap"],
                ptime_ms=ptime,
                rtcp_port=rtcp_port,
                rtcp_mux="rtcp-mux" in attrs,
                direction=direction,
                fmtp=s["fmtp"],
                crypto=tuple(s["crypto"]),
                mid=attrs.get("mid") or None,
                extmap=s["extmap"],
                ssrcs=tuple(s["ssrcs"]),
                ssrc_groups=tuple(s["groups"]),
            )
        )
    return SessionDescription(origin=origin, address=session_addr, media=tuple(media))


def _connection_address(value: str) -> str | None:
    """The address of a ``c=IN IP4 <addr>[/ttl]`` line (RFC 4566 §5.7)."""
    parts = value.split()
    if len(parts) < 3:
        return None
    return parts[2].split("/")[0]


def parse_sip(
    data: bytes,
    *,
    frame: int = 0,
    time_ns: int = 0,
    src: str = "",
    sport: int = 0,
    dst: str = "",
    dport: int = 0,
) -> SipMessage | None:
    """Parse one SIP message from a UDP payload; None if it is not SIP.

    Parameters
    ----------
    data : bytes
        The UDP payload.
    frame, time_ns, src, sport, dst, dport
        Where the message was seen (copied into the result).

    Returns
    -------
    SipMessage or None

    References
    ----------
    RFC 3261 §7.1 (requests), §7.2 (responses), §7.3 (header fields), §7.5 (framing).
    """
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        head, sep, body = data.partition(b"\n\n")
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        text = head.decode("latin-1")
    lines = text.replace("\r\n", "\n").split("\n")
    if not lines:
        return None
    start = lines[0].strip()
    method = status = None
    reason = ""
    m = _REQUEST_LINE.match(start)
    if m and m.group(1) in _METHODS:
        method = m.group(1)
    else:
        m = _STATUS_LINE.match(start)
        if not m:
            return None
        status = int(m.group(1))
        reason = m.group(2) or ""
    headers: dict[str, str] = {}
    last = None
    for line in lines[1:]:
        if line[:1] in (" ", "\t") and last is not None:  # RFC 3261 §7.3.1 line folding
            headers[last] += " " + line.strip()
            continue
        name, colon, value = line.partition(":")
        if not colon:
            continue
        key = name.strip().lower()
        key = _COMPACT.get(key, key)
        if key not in headers:  # the first occurrence is the one that counts here
            headers[key] = value.strip()
        last = key
    cseq = cseq_method = None
    if "cseq" in headers:
        bits = headers["cseq"].split()
        if bits and bits[0].isdigit():
            cseq = int(bits[0])
        if len(bits) > 1:
            cseq_method = bits[1].upper()
    if "content-length" in headers and headers["content-length"].isdigit():
        body = body[: int(headers["content-length"])]
    sdp = None
    ctype = headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "application/sdp" and body:
        sdp = parse_sdp(body.decode("utf-8", errors="replace"))
    return SipMessage(
        frame=frame, time_ns=time_ns, src=src, sport=sport, dst=dst, dport=dport,
        method=method, status=status, reason=reason,
        call_id=headers.get("call-id"), cseq=cseq, cseq_method=cseq_method,
        from_uri=_uri(headers.get("from")), to_uri=_uri(headers.get("to")), sdp=sdp,
    )


def _uri(value: str | None) -> str | None:
    """The URI of a From/To header value (``"name" <uri>;tag=...`` or ``uri;tag=...``)."""
    if not value:
        return None
    m = _ANGLE_URI.search(value)  # RFC 3261 §20.20: name-addr "display name" <uri>
    if m:
        return m.group(1)
    bare = value.split(";")[0].strip()  # addr-spec without angle brackets, then params
    return bare or None


def group_calls(messages: Iterable[SipMessage]) -> list[SipCall]:
    """Group SIP messages into calls by Call-ID (RFC 3261 §8.1.1.4), in time order.

    The offer is the SDP of the first INVITE that has one (RFC 3264 §5); the answer the
    first SDP in a response to an INVITE (or in the ACK, for a late offer).

    Parameters
    ----------
    messages : iterable of SipMessage
        Messages in capture order.

    Returns
    -------
    list of SipCall
        Calls that had at least one INVITE, ordered by the time of their first INVITE.
    """
    by_id: dict[str, list[SipMessage]] = {}
    for msg in messages:
        if msg.call_id:
            by_id.setdefault(msg.call_id, []).append(msg)
    calls = []
    for call_id, msgs in by_id.items():
        invites = [m for m in msgs if m.method == "INVITE"]
        if not invites:
            continue
        first = invites[0]
        offer_msg = next((m for m in invites if m.sdp is not None), None)
        answers = [m for m in msgs if m.status is not None and m.cseq_method == "INVITE"]
        answer_msg = next((m for m in answers if m.sdp is not None), None)
        if offer_msg is None:  # late offer: SDP in the 2xx, answer in the ACK (RFC 3264 §5)
            offer_msg = answer_msg
            answer_msg = next((m for m in msgs if m.method == "ACK" and m.sdp is not None), None)
        ok = next((m for m in answers if 200 <= m.status < 300), None)  # type: ignore[operator]
        final = next((m for m in answers if m.status >= 200), None)  # type: ignore[operator]
        end = next((m for m in msgs if m.method in ("BYE", "CANCEL")), None)
        calls.append(
            SipCall(
                call_id=call_id,
                from_uri=first.from_uri,
                to_uri=first.to_uri,
                caller=first.src or None,
                callee=first.dst or None,
                invite_ns=first.time_ns,
                answer_ns=ok.time_ns if ok else None,
                end_ns=end.time_ns if end else None,
                status=final.status if final else None,
                offer=offer_msg.sdp.media if offer_msg and offer_msg.sdp else (),
                answer=answer_msg.sdp.media if answer_msg and answer_msg.sdp else (),
                messages=len(msgs),
            )
        )
    calls.sort(key=lambda c: (c.invite_ns or 0, c.call_id))
    return calls
