"""RTP header extensions (RFC 8285): every element of every packet of a stream, by ID and name.

SRTP leaves the RTP header and its extensions in clear (RFC 3711 §3.1), so the extensions a
WebRTC sender adds can be read from any capture: the send time of each packet
(``abs-send-time``), a sequence number shared by every stream of the transport
(``transport-wide-cc``), the audio level, the MID that names the media section under BUNDLE
(RFC 8843 §15). :func:`read_header_extensions` reads them for the streams of a scan and
returns one :class:`HeaderExtensions` per stream, row for row with the stream's packet table.

The names come from the SDP's ``a=extmap`` lines when the user gives them (``sdp=``, the
browser's offer or answer); without, the two that queueing-delay analysis needs are
inferred from their values, and said so with the evidence in :attr:`HeaderExtensions.names`:
``abs-send-time`` is a 3-byte element that advances by about one second (2**18 units) per
second of arrival; ``transport-wide-cc`` a 2-byte element that moves forward by small steps
from packet to packet; ``sdes:mid`` a constant short text.

The public accessor for queueing delay (agreed with :mod:`qoe.video`)::

    scan = qoe.rtp.scan_capture(path)                 # keep_packets=True (the default)
    ext = qoe.rtp.read_header_extensions(path, scan.streams)
    for s, e in zip(scan.streams, ext):
        send_s = e.abs_send_time_s()                  # per packet, NaN where absent
        twcc = e.transport_seq()                       # per packet, -1 where absent
        # one-way delay variation: (arrival - first arrival) - (send - first send)
        owd_ms = ((e.arrival_ns - e.arrival_ns[0]) / 1e6) - (send_s - send_s[0]) * 1e3

References
----------
.. [1] RFC 8285, "A General Mechanism for RTP Header Extensions", §4.2 (one-byte header:
   profile 0xBEDE, ID 1-14, length - 1 in 4 bits, ID 0 padding, ID 15 reserved: stop),
   §4.3 (two-byte header: profile 0x100 in its top 12 bits, ID 1-255, length 0-255, ID 0
   padding), §5 (``a=extmap``).
.. [2] RFC 3550 §5.3.1 (header extension: 16-bit profile, 16-bit length in 32-bit words).
.. [3] "RTP Header Extension for Absolute Sender Time",
   http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time: 24 bits, 6.18 fixed-point
   seconds (wraps every 64 s).
.. [4] draft-holmer-rmcat-transport-wide-cc-extensions-01 §2: a 16-bit transport-wide
   sequence number, one counter for every stream of the transport.
.. [5] RFC 8843 §15 (MID header extension, ``urn:ietf:params:rtp-hdrext:sdes:mid``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qoe.errors import InputError
from qoe.rtp._packet import RTP_FIXED_HEADER, extend_sequence
from qoe.rtp._results import RtpStream
from qoe.rtp.sip import SdpMedia

__all__ = [
    "ABS_SEND_TIME",
    "TRANSPORT_WIDE_CC",
    "SDES_MID",
    "HeaderExtensions",
    "extension_elements",
    "read_header_extensions",
]

#: URIs of the extensions that have accessors (as ``a=extmap`` names them).
ABS_SEND_TIME = "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time"
TRANSPORT_WIDE_CC = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"
SDES_MID = "urn:ietf:params:rtp-hdrext:sdes:mid"

# RFC 8285 §4.2: the one-byte form's profile; §4.3: the two-byte form's, in the top 12 bits.
_ONE_BYTE_PROFILE = 0xBEDE
_TWO_BYTE_PROFILE = 0x100
# abs-send-time: 6.18 fixed point, so 2**18 units per second and a 2**24-unit (64 s) wrap.
_AST_UNITS_PER_S = 1 << 18
_AST_MOD = 1 << 24
# The inference's thresholds: abs-send-time advances 1 s per s of arrival (within 10 %: the
# sender's pacing and queueing change the ratio between packets, not over the stream);
# transport-wide-cc moves forward by 1..64 (the other streams of the transport take the
# numbers between) on at least 90 % of consecutive packets.
_AST_RATE_TOL = 0.1
_TWCC_MAX_STEP = 64
_SHARE = 0.9


def extension_elements(profile: int, block: bytes) -> list[tuple[int, bytes]]:
    """The (ID, data) elements of one RTP header extension block (RFC 8285 §4.2, §4.3).

    Parameters
    ----------
    profile : int
        The extension's 16-bit "defined by profile" word: 0xBEDE for the one-byte form,
        0x100X for the two-byte form (RFC 8285 §4.3: the low 4 bits are "appbits").
    block : bytes
        The extension's data (its length is the header's length field times 4).

    Returns
    -------
    list of (int, bytes)
        In order; an empty list for another profile (not RFC 8285).

    Examples
    --------
    >>> extension_elements(0xBEDE, bytes([0x22, 0x01, 0x02, 0x03, 0x31, 0x00, 0x07, 0x00]))
    [(2, b'\\x01\\x02\\x03'), (3, b'\\x00\\x07')]
    >>> extension_elements(0x1000, bytes([0x05, 0x02, 0xAB, 0xCD]))
    [(5, b'\\xab\\xcd')]
    """
    out = []
    n = len(block)
    i = 0
    if profile == _ONE_BYTE_PROFILE:
        while i < n:
            b = block[i]
            ident, length = b >> 4, (b & 0x0F) + 1
            if ident == 0:  # §4.2: padding byte
                i += 1
                continue
            if ident == 15:  # §4.2: reserved; the rest is not to be read
                break
            if i + 1 + length > n:
                break
            out.append((ident, block[i + 1:i + 1 + length]))
            i += 1 + length
    elif profile >> 4 == _TWO_BYTE_PROFILE:
        while i < n:
            ident = block[i]
            if ident == 0:  # §4.3: padding byte
                i += 1
                continue
            if i + 1 >= n:
                break
            length = block[i + 1]
            if i + 2 + length > n:
                break
            out.append((ident, block[i + 2:i + 2 + length]))
            i += 2 + length
    return out


def _elements_of_packet(data: bytes) -> list[tuple[int, bytes]]:
    """The RFC 8285 elements of one RTP packet (RFC 3550 §5.3.1: after the CSRC list)."""
    if len(data) < RTP_FIXED_HEADER or not data[0] & 0x10:
        return []
    at = RTP_FIXED_HEADER + 4 * (data[0] & 0x0F)
    if at + 4 > len(data):
        return []
    profile = int.from_bytes(data[at:at + 2], "big")
    words = int.from_bytes(data[at + 2:at + 4], "big")
    return extension_elements(profile, data[at + 4:at + 4 + 4 * words])


@dataclass(frozen=True)
class HeaderExtensions:
    """The RTP header extensions of one stream's packets, row for row with its packet table.

    Attributes
    ----------
    frame, arrival_ns : numpy.ndarray of int64
        The packets' frame numbers and arrival times (those of :attr:`RtpStream.packets`).
    elements : dict of int to tuple of (bytes or None)
        Per extension ID, each packet's element data (None where the packet has none).
    names : dict of int to str
        Per ID, what it is: the SDP ``a=extmap`` URI, or ``"inferred: <URI> (<evidence>)"``
        when the values tell (abs-send-time, transport-wide-cc, MID); IDs not named are
        left out.
    """

    frame: np.ndarray
    arrival_ns: np.ndarray
    elements: Mapping[int, tuple[bytes | None, ...]] = field(default_factory=dict)
    names: Mapping[int, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.frame.size)

    def id_of(self, uri: str) -> int | None:
        """The ID that carries ``uri`` (given or inferred), or None."""
        for ident, name in self.names.items():
            if name == uri or name.startswith(f"inferred: {uri} "):
                return ident
        return None

    def values(self, ident: int) -> np.ndarray:
        """Each packet's element ``ident`` as a big-endian unsigned integer (-1 where absent)."""
        col = self.elements.get(ident, ())
        return np.array([-1 if v is None else int.from_bytes(v[:8], "big") for v in col] if col else
                        np.full(len(self), -1), dtype=np.int64)

    def abs_send_time_s(self) -> np.ndarray:
        """Per packet, the sender's abs-send-time in seconds, unwrapped across its 64 s wrap
        (relative to the first value's wrap period); NaN where absent or not identified."""
        ident = self.id_of(ABS_SEND_TIME)
        out = np.full(len(self), np.nan)
        if ident is None:
            return out
        v = self.values(ident)
        have = np.flatnonzero(v >= 0)
        if have.size:
            out[have] = extend_sequence(v[have], _AST_MOD) / _AST_UNITS_PER_S
        return out

    def transport_seq(self) -> np.ndarray:
        """Per packet, the transport-wide sequence number, unwrapped across 2**16; -1 where
        absent or not identified."""
        ident = self.id_of(TRANSPORT_WIDE_CC)
        out = np.full(len(self), -1, dtype=np.int64)
        if ident is None:
            return out
        v = self.values(ident)
        have = np.flatnonzero(v >= 0)
        if have.size:
            out[have] = extend_sequence(v[have], 1 << 16)
        return out

    def mid(self) -> str | None:
        """The MID the stream's packets carry (RFC 8843 §15), the most frequent one; None if none."""
        ident = self.id_of(SDES_MID)
        if ident is None:
            return None
        texts = [v.decode("ascii", "replace") for v in self.elements.get(ident, ()) if v]
        return max(set(texts), key=texts.count) if texts else None

    def to_dict(self) -> dict[str, Any]:
        """Which IDs were seen in how many packets, and their names."""
        return {"header_extensions": {str(i): {"packets": sum(v is not None for v in col),
                                               "name": self.names.get(i)} for i, col in self.elements.items()}}


def _infer_names(arrival_ns: np.ndarray, elements: dict[int, list[bytes | None]]) -> dict[int, str]:
    """Name abs-send-time, transport-wide-cc and MID from their values (module docstring)."""
    names: dict[int, str] = {}
    for ident, col in elements.items():
        rows = np.array([i for i, v in enumerate(col) if v is not None], dtype=np.int64)
        if rows.size < 3:
            continue
        sizes = {len(col[i]) for i in rows.tolist()}  # type: ignore[arg-type]
        if sizes == {3}:
            v = np.array([int.from_bytes(col[i], "big") for i in rows.tolist()], dtype=np.int64)  # type: ignore[arg-type]
            span_s = (arrival_ns[rows[-1]] - arrival_ns[rows[0]]) / 1e9
            sent_s = (extend_sequence(v, _AST_MOD)[-1] - extend_sequence(v, _AST_MOD)[0]) / _AST_UNITS_PER_S
            if span_s > 0.5 and abs(sent_s / span_s - 1.0) <= _AST_RATE_TOL:
                names[ident] = (f"inferred: {ABS_SEND_TIME} (3-byte values advance {sent_s:.3f} s over "
                                f"{span_s:.3f} s of arrival)")
        elif sizes == {2}:
            v = np.array([int.from_bytes(col[i], "big") for i in rows.tolist()], dtype=np.int64)  # type: ignore[arg-type]
            step = (v[1:] - v[:-1]) % (1 << 16)
            fwd = np.count_nonzero((step >= 1) & (step <= _TWCC_MAX_STEP))
            if fwd >= _SHARE * step.size:
                names[ident] = (f"inferred: {TRANSPORT_WIDE_CC} (2-byte values move forward by 1-{_TWCC_MAX_STEP} "
                                f"on {fwd} of {step.size} consecutive packets)")
        texts = {col[i] for i in rows.tolist()}
        if ident not in names and len(texts) == 1:
            (t,) = texts
            if t and len(t) <= 16 and all(0x21 <= c <= 0x7E for c in t):  # RFC 8843 §15: a token
                names[ident] = f"inferred: {SDES_MID} (the same text {t.decode()!r} on every packet)"
    return names


def _extmap_for(s: RtpStream, sdp: Sequence[SdpMedia]) -> dict[int, str]:
    """The ``a=extmap`` of the media section that describes stream ``s``: by its SSRC
    (``a=ssrc``), else the section of its media kind, else every section's (the IDs of a
    BUNDLE group are shared, RFC 8843 §9.1)."""
    for m in sdp:
        if s.key.ssrc in m.ssrcs:
            return dict(m.extmap)
    for m in sdp:
        if s.media is not None and m.media == s.media:
            return dict(m.extmap)
    out: dict[int, str] = {}
    for m in sdp:
        out.update(m.extmap)
    return out


def read_header_extensions(
    capture: str | os.PathLike[str],
    streams: Sequence[RtpStream],
    *,
    sdp: Sequence[SdpMedia] = (),
) -> list[HeaderExtensions]:
    """The RFC 8285 header extensions of every packet of ``streams``, read again from ``capture``.

    Parameters
    ----------
    capture : path
        The capture the streams were found in (:func:`qoe.rtp.scan_capture` with
        ``keep_packets=True``: the packet tables give the frames to read).
    streams : sequence of RtpStream
        Streams of that capture.
    sdp : sequence of SdpMedia, keyword-only
        Media sections of the user's SDP (:func:`qoe.rtp.parse_sdp`; a browser's offer or
        answer): their ``a=extmap`` lines name the IDs. Without, the names are inferred.

    Returns
    -------
    list of HeaderExtensions
        One per stream, in order, row for row with its packet table.

    Raises
    ------
    InputError
        A stream has no packet table.
    """
    # the capture layer (dpkt and the readers, about half the time of `import qoe.rtp`) is
    # loaded when extensions are read, not when qoe.rtp is imported for its numbers
    from qoe.capture import capture_path, read_udp_batches  # noqa: PLC0415

    name = capture_path(capture)
    want: set[int] = set()
    for s in streams:
        if s.packets is None:
            raise InputError(f"{name}: stream {s.key} has no packet table (scan with keep_packets=True)")
        want.update(s.packets.frame.tolist())
    frames = np.fromiter(want, dtype=np.int64, count=len(want))
    frames.sort()
    found: dict[int, list[tuple[int, bytes]]] = {}
    for b in read_udp_batches(name):
        if len(b) == 0:
            continue
        hit = np.flatnonzero(np.isin(b.index, frames) & (b.head[:, 0] & 0x10 != 0))
        for i in hit.tolist():
            found[int(b.index[i])] = _elements_of_packet(bytes(b.payload_of(i)))
    out = []
    for s in streams:
        p = s.packets
        rows = p.frame.tolist()  # type: ignore[union-attr]
        ids = sorted({ident for f in rows for ident, _ in found.get(f, ())})
        cols: dict[int, list[bytes | None]] = {ident: [None] * len(rows) for ident in ids}
        for r, f in enumerate(rows):
            for ident, data in found.get(f, ()):
                cols[ident][r] = data
        arrival = p.arrival_ns  # type: ignore[union-attr]
        given = _extmap_for(s, sdp) if sdp else {}
        names = {i: given[i] for i in ids if i in given} if given else _infer_names(arrival, cols)
        out.append(HeaderExtensions(frame=p.frame, arrival_ns=arrival,  # type: ignore[union-attr]
                                    elements={i: tuple(c) for i, c in cols.items()}, names=names))
    return out
