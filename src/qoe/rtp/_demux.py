"""The scan's demultiplexing book: STUN, DTLS and TURN datagrams beside RTP on one 5-tuple.

A WebRTC call carries STUN (ICE connectivity checks and consent), DTLS (the DTLS-SRTP key
exchange) and SRTP/SRTCP on one UDP 5-tuple; a receiver tells them apart by the first byte
of each datagram (RFC 7983 §7, ranges updated by RFC 9443 §4):

=========  ==================================================
first byte  protocol
=========  ==================================================
0-3        STUN (RFC 8489)
16-19      ZRTP (RFC 6189)
20-63      DTLS (RFC 9443: 20-63; DTLS 1.3's unified header, RFC 9147 §4, starts 0b001)
64-79      TURN channel (RFC 8656 §12)
128-191    RTP and RTCP (RFC 3550; RTCP by its packet type, RFC 5761 §4)
=========  ==================================================

The scan takes 128-191 as RTP/RTCP already (version 2); :class:`DemuxBook` counts the other
kinds per 5-tuple (both directions together), so that an RTP stream whose 5-tuple also
carried a DTLS handshake is known to be DTLS-SRTP (RFC 5764 §4.1: the SRTP keys come from
that handshake, and never appear in the capture).

References
----------
.. [1] RFC 7983, "Multiplexing Scheme Updates for SRTP Extension for DTLS", §7.
.. [2] RFC 9443, "Multiplexing Scheme Updates for QUIC", §4 (DTLS takes 20-63).
.. [3] RFC 9147, "The Datagram Transport Layer Security (DTLS) Protocol Version 1.3", §4
   (unified header: first three bits 001).
.. [4] RFC 6347, "DTLS Version 1.2", §4.1 (record header: content type, version 254.253
   (DTLS 1.2) or 254.255 (DTLS 1.0)); RFC 8446 §5.1 (content types 20-24); RFC 9147 §4 (26, ack).
.. [5] RFC 8489, "Session Traversal Utilities for NAT (STUN)", §5 (first two bits 0, magic
   cookie 0x2112A442 at bytes 4-7).
.. [6] RFC 5764, "DTLS Extension to Establish Keys for SRTP", §4.1.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from qoe.rtp.srtp import SrtpInfo

# RFC 8489 §5: the magic cookie, bytes 4-7 of every STUN message.
STUN_MAGIC_COOKIE = 0x2112A442
# RFC 8446 §5.1 content types (change_cipher_spec 20, alert 21, handshake 22,
# application_data 23, heartbeat 24) and RFC 9147 §4 ack (26).
_DTLS_CONTENT_TYPES = np.array([20, 21, 22, 23, 24, 26])
_DTLS_HANDSHAKE = 22
# RFC 6347 §4.1: DTLS 1.0 is version {254, 255}, DTLS 1.2 {254, 253} (DTLS 1.3 keeps 254.253
# in its plaintext records, RFC 9147 §4).
_DTLS_VERSIONS = np.array([0xFEFF, 0xFEFD])

KINDS = ("stun", "dtls", "dtls_handshake", "dtls13", "turn_channel", "zrtp")


def classify(head: np.ndarray, length: np.ndarray) -> dict[str, np.ndarray]:
    """Which datagrams are which (RFC 7983 §7 / RFC 9443 §4), from their first 16 bytes.

    Each range is checked further where the protocol allows, so that a random datagram is
    rarely taken for one: STUN by its magic cookie, DTLS 1.0/1.2 records by content type and
    version, DTLS 1.3 unified headers (0b001xxxxx) by their fixed bits alone.
    """
    b0 = head[:, 0].astype(np.int64)
    word1 = head[:, 4:8].astype(np.int64)
    cookie = (word1[:, 0] << 24) | (word1[:, 1] << 16) | (word1[:, 2] << 8) | word1[:, 3]
    version = (head[:, 1].astype(np.int64) << 8) | head[:, 2]
    stun = (b0 <= 3) & (length >= 20) & (cookie == STUN_MAGIC_COOKIE)
    dtls12 = np.isin(b0, _DTLS_CONTENT_TYPES) & np.isin(version, _DTLS_VERSIONS) & (length >= 13)
    dtls13 = ((b0 & 0xE0) == 0x20) & (length >= 2)  # RFC 9147 §4: 0 0 1 C S L E E
    return {
        "stun": stun,
        "dtls": dtls12 | dtls13,
        "dtls_handshake": dtls12 & (b0 == _DTLS_HANDSHAKE),
        "dtls13": dtls13,
        "turn_channel": (b0 >= 64) & (b0 <= 79) & (length >= 4),
        "zrtp": (b0 >= 16) & (b0 <= 19) & (length >= 12),
    }


class DemuxBook:
    """Per 5-tuple (both directions, by address codes and ports): datagrams of each kind."""

    def __init__(self) -> None:
        self.counts: dict[tuple[int, int, int, int], dict[str, int]] = {}
        self.first_dtls_ns: dict[tuple[int, int, int, int], int] = {}

    @staticmethod
    def key(src: int, sport: int, dst: int, dport: int) -> tuple[int, int, int, int]:
        """The 5-tuple's key, the same for both directions."""
        a, b = (src, sport), (dst, dport)
        return (*a, *b) if a <= b else (*b, *a)  # type: ignore[return-value]

    def add(self, b: Any, cand: np.ndarray) -> None:
        """Count the STUN/DTLS/TURN/ZRTP datagrams among rows ``cand`` of batch ``b``."""
        kinds = classify(b.head[cand], b.lengths[cand])
        anyk = np.zeros(cand.size, dtype=bool)
        for m in kinds.values():
            anyk |= m
        hit = np.flatnonzero(anyk)
        if hit.size == 0:
            return
        kinds = {k: m[hit] for k, m in kinds.items()}
        rows = cand[hit]
        src, dst = b.src[rows].tolist(), b.dst[rows].tolist()
        sport, dport = b.sport[rows].tolist(), b.dport[rows].tolist()
        ts = b.ts_ns[rows].tolist()
        flags = {k: m.tolist() for k, m in kinds.items()}
        for j in range(rows.size):
            key = self.key(src[j], sport[j], dst[j], dport[j])
            c = self.counts.setdefault(key, dict.fromkeys(KINDS, 0))
            for k in KINDS:
                if flags[k][j]:
                    c[k] += 1
            if flags["dtls"][j] and key not in self.first_dtls_ns:
                self.first_dtls_ns[key] = int(ts[j])

    def of(self, src: int, sport: int, dst: int, dport: int) -> dict[str, int] | None:
        """The counts of a 5-tuple (None: nothing but RTP/RTCP or other UDP seen on it)."""
        return self.counts.get(self.key(src, sport, dst, dport))


def mark_dtls(streams: list[Any], book: DemuxBook, addresses: Sequence[str]) -> None:
    """Mark, in place, the streams whose 5-tuple carried DTLS as DTLS-SRTP, with a note (RFC 5764,
    RFC 7983; ``addresses``: the scan's address codes)."""
    if not book.counts:
        return
    code = {a: i for i, a in enumerate(addresses)}
    for i, s in enumerate(streams):
        k = s.key
        c = book.of(code[k.src], k.sport, code[k.dst], k.dport)
        if c is None or not c["dtls"]:
            continue
        dtls13 = f", {c['dtls13']} with DTLS 1.3's unified header" if c["dtls13"] else ""
        note = (f"DTLS-SRTP (RFC 5764): {c['dtls']} DTLS record(s) ({c['dtls_handshake']} handshake"
                f"{dtls13}) and {c['stun']} STUN message(s) "
                "share this stream's 5-tuple (RFC 7983): the payloads are encrypted with keys that are never in "
                "the capture and cannot be decoded; measured instead from the clear RTP headers: packets, "
                "loss, reordering, arrival deltas, jitter, frames (timestamps, marker bit) and header extensions")
        srtp = s.srtp if s.srtp is not None and s.srtp.found_by == "sdp" else SrtpInfo(found_by="dtls")
        streams[i] = dataclasses.replace(s, srtp=srtp, notes=(*s.notes, note))
