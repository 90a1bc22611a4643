"""RTP header and padding bytes per stream: W3C webrtc-stats ``headerBytesReceived``.

``RTCInboundRtpStreamStats.headerBytesReceived`` is the "total number of RTP header and
padding bytes received for this SSRC", retransmissions included, so that
``headerBytesReceived + bytesReceived`` is what arrived as RTP over the transport. The
header is RFC 3550 §5.1's: 12 bytes, a CSRC list of 4 bytes each, and the header extension
(§5.3.1: a 4-byte word of profile and length, then the length's 32-bit words: RFC 8285
elements in WebRTC). Padding (§5.1, the P bit) counts its last byte, the count.

SRTP (RFC 3711 §3.1) leaves the header and the P bit in clear, but encrypts the padding
with the payload (the count is no longer the last byte: an authentication tag follows).
What a browser pads is a padding-only packet (libwebrtc's bandwidth probes on the RTX
stream, payload empty), so in an encrypted stream a packet with the P bit is taken as
padding after its header up to the tag: ``length - header - tag``. The tag length is
the suite's (RFC 3711 §5.1 / RFC 4568 §6.2 / RFC 7714 §12) when the SDP's ``a=crypto``
names it; DTLS-SRTP negotiates the profile in the handshake (RFC 5764 §4.1.2), which DTLS
1.3 encrypts: then :data:`ASSUMED_TAG` (10 bytes, SRTP_AES128_CM_HMAC_SHA1_80, the profile
Chromium 156 chose in every call of data/video/webrtc: ``transport.srtpCipher``), said so.
On those calls the result equals the receiving browser's ``headerBytesReceived`` for
every stream (media SSRC plus its RTX stream).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from qoe.rtp.srtp import SUITES, SrtpInfo

#: Authentication tag (bytes) assumed for a DTLS-SRTP stream whose profile the capture hides:
#: SRTP_AES128_CM_HMAC_SHA1_80 (RFC 5764 §4.1.2; 80-bit HMAC-SHA1 tag, RFC 3711 §5.2).
ASSUMED_TAG = 10


class HeaderByteBook:
    """Per flow of a scan: header bytes, clear padding bytes, and the packets with the P bit
    and what follows their headers (for SRTP, module docstring)."""

    def __init__(self) -> None:
        self.sums = np.zeros((0, 4), dtype=np.int64)  # header, clear padding, P packets' rest, P packets

    def add(self, fid: np.ndarray, header: np.ndarray, padding: np.ndarray, has_p: np.ndarray,
            length: np.ndarray, n_flows: int) -> None:
        """Add a batch's packets: their flow ids, header lengths (12 + CSRCs + extension),
        padding counts read in clear (0 where unknown), P bits and RTP lengths on the wire."""
        if self.sums.shape[0] < n_flows:
            self.sums = np.concatenate((self.sums, np.zeros((n_flows - self.sums.shape[0], 4), dtype=np.int64)))
        cols = [(0, header)]
        if padding.any():
            cols.append((1, padding))
        if has_p.any():  # else the P packets' columns gain nothing
            cols += [(2, np.where(has_p, length - header, 0)), (3, has_p.astype(np.int64))]
        for col, w in cols:
            self.sums[:, col] += np.bincount(fid, weights=w, minlength=self.sums.shape[0]).astype(np.int64)[:self.sums.shape[0]]

    def settled(self, fids: np.ndarray) -> list[int | None]:
        """The header and padding bytes of each flow of ``fids`` when they do not depend on
        SRTP (no packet with the padding bit), else None: :meth:`result` needs its SRTP status."""
        rows = np.zeros((fids.size, 4), dtype=np.int64)
        have = fids < self.sums.shape[0]
        rows[have] = self.sums[fids[have]]
        total = (rows[:, 0] + rows[:, 1]).tolist()  # header + padding read in clear, as result()
        return [None if n_p else t for t, n_p in zip(total, rows[:, 3].tolist())]

    def result(self, fid: int, srtp: SrtpInfo | None) -> HeaderBytes:
        """The header and padding bytes of flow ``fid``, given what is known of its SRTP."""
        header, clear_pad, rest, n_p = (int(x) for x in self.sums[fid]) if fid < self.sums.shape[0] else (0, 0, 0, 0)
        if srtp is None or not n_p:
            return HeaderBytes(header + clear_pad, None)
        suite = srtp.sdes.suite if srtp.sdes is not None else None
        tag = SUITES[suite].tag if suite in SUITES else ASSUMED_TAG
        how = (f"the {suite} tag of {tag} bytes" if suite in SUITES else
               f"a {tag}-byte SRTP tag assumed (SRTP_AES128_CM_HMAC_SHA1_80: DTLS 1.3 hides the negotiated profile)")
        note = (f"header_bytes: {n_p} packet(s) with the padding bit taken as padding-only (SRTP encrypts the "
                f"padding count), {how}")
        return HeaderBytes(header + max(0, rest - tag * n_p), note)


@dataclass(frozen=True, slots=True)
class HeaderBytes:
    """A stream's RTP header and padding bytes, and how padding was counted (None: read)."""

    total: int
    note: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"header_bytes": self.total}
