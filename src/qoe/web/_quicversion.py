"""Which QUIC versions a datagram opens: the versions qoe reads, and the others it names.

QUIC's version-independent properties (RFC 8999) let a passive reader tell a long header and
its version from any QUIC datagram; everything after the connection IDs is the version's. qoe
reads version 1 (RFC 9000, RFC 9001) and version 2 (RFC 9369, the same protocol with its own
Initial salt, key labels and long header packet types, which aioquic's packet protection
follows), and says how many connections of any other version it left unread (a draft
version, a Google QUIC one) rather than passing over them in silence. A datagram that
continues a connection whose start the capture does not hold (:func:`joins_late`) opens one
too, read for its timing (a known connection's client on new addresses with one of its
connection IDs is that connection, decrypted on: ``qoe.web.quic._Paths``).

Pure functions over bytes, and one over the columns of a :class:`qoe.capture.UdpBatch` (the
page reader's look for QUIC among the datagrams it reads for DNS), without aioquic: the DNS
and page modules stay light to import.

References
----------
.. [1] RFC 8999, "Version-Independent Properties of QUIC" (2021): §5.1 (long header: the
   header form bit, the version in bytes 1-4), §6 (Version Negotiation: version 0).
.. [2] RFC 9000, "QUIC: A UDP-Based Multiplexed and Secure Transport" (2021): §14.1 (a
   client's first datagram is at least 1200 bytes), §15 (version 1), §17.2 (the fixed bit),
   §17.2.2 (Initial: long packet type 0b00).
.. [3] RFC 9369, "QUIC Version 2" (2023): §3.1 (version 0x6b3343cf), §3.2 (Initial: long
   packet type 0b01).
.. [4] IANA, "QUIC Versions" registry: 0xff0000NN the drafts of RFC 9000, 0x5130xxxx
   ("Q0xx") Google QUIC.
.. [5] RFC 8656, "Traversal Using Relays around NAT (TURN)" (2020): §12.4-12.5 (ChannelData:
   a channel number 0x4000-0x4FFF, a length, over UDP up to 3 bytes of padding).
.. [6] RFC 9443, "Multiplexing Scheme Updates for QUIC" (2023), and RFC 7983 §7: the first
   byte's ranges of QUIC, TURN channels, STUN, DTLS and RTP on one port.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: RFC 9000 §15: version 1.
QUIC_V1 = 0x00000001
#: RFC 9369 §3.1: version 2.
QUIC_V2 = 0x6B3343CF
#: The versions read, each with the first four bits of its Initial packet's first byte:
#: header form 1, fixed bit 1, then the long packet type (0b00 in version 1, RFC 9000 §17.2.2;
#: 0b01 in version 2, RFC 9369 §3.2).
INITIAL_TYPE = {QUIC_V1: 0xC0, QUIC_V2: 0xD0}
#: RFC 9000 §14.1: a client's datagrams that carry an Initial packet are at least this long.
MIN_INITIAL_DATAGRAM = 1200
#: The port where a long header of a version not read is taken for QUIC (HTTP/3's, RFC 9114
#: §3.1): elsewhere the same first byte and size can be another protocol (an ESP SPI in UDP).
QUIC_PORT = 443


def initial_version(payload: bytes) -> int:
    """The version of a UDP payload that starts a QUIC Initial packet of a version read
    (:data:`INITIAL_TYPE`) in a datagram of at least :data:`MIN_INITIAL_DATAGRAM` bytes, else 0."""
    if len(payload) < MIN_INITIAL_DATAGRAM:
        return 0
    version = int.from_bytes(payload[1:5], "big")
    return version if INITIAL_TYPE.get(version) == payload[0] & 0xF0 else 0


def other_version(payload: bytes, sport: int, dport: int) -> int:
    """The version of a UDP payload to or from :data:`QUIC_PORT` that starts with a long header
    and the fixed bit (RFC 8999 §5.1, RFC 9000 §17.2) of a version not read, in a datagram of
    at least :data:`MIN_INITIAL_DATAGRAM` bytes (a client's first flight in versions 1 and 2,
    kept as the bound for the others), else 0; 0 for Version Negotiation (version 0, RFC 8999
    §6)."""
    if len(payload) < MIN_INITIAL_DATAGRAM or payload[0] & 0xC0 != 0xC0 or QUIC_PORT not in (sport, dport):
        return 0
    version = int.from_bytes(payload[1:5], "big")
    return 0 if version in INITIAL_TYPE else version


#: The fewest bytes of a short header packet: the first byte, a packet number and the 16-byte
#: tag of QUIC v1's AEADs (RFC 9001 §5.3) with a payload that covers header protection's
#: 16-byte sample 4 bytes after the packet number's start (§5.4.2), with no Destination
#: Connection ID: 1 + 4 + 16.
MIN_SHORT_PACKET = 21


def _turn_channel_data(payload: bytes) -> bool:
    """TURN ChannelData (RFC 8656 §12.4: a channel number 0x4000-0x4FFF, then the length of the
    application data that follows): its first byte falls in a QUIC short header's range (RFC
    9443 §2, RFC 7983 §7), a WebRTC call relayed over UDP 443 sends it."""
    length = int.from_bytes(payload[2:4], "big")  # (over UDP, up to 3 bytes of padding may follow, §12.5)
    return 0x40 <= payload[0] <= 0x4F and length + 4 <= len(payload) <= length + 7


def joins_late(payload: bytes, sport: int, dport: int) -> bool:
    """Whether a UDP payload to or from :data:`QUIC_PORT` on a 4-tuple with no connection
    continues a QUIC connection whose start the capture does not hold: a short header with
    the fixed bit (RFC 9000 §17.3.1) of at least :data:`MIN_SHORT_PACKET` bytes that is not
    TURN ChannelData, or a long header of a version read that is not its client's first
    Initial (a capture begun during the handshake). The connection began before the capture,
    or moved to this address or port (RFC 9000 §9: migration, a NAT's rebinding)."""
    if QUIC_PORT not in (sport, dport) or not payload:
        return False
    first = payload[0]
    if first & 0xC0 == 0x40:
        return len(payload) >= MIN_SHORT_PACKET and not _turn_channel_data(payload)
    return first & 0xC0 == 0xC0 and int.from_bytes(payload[1:5], "big") in INITIAL_TYPE


def opens_quic(batch: Any) -> bool:
    """Whether a :class:`qoe.capture.UdpBatch` holds a datagram that :func:`initial_version`,
    :func:`other_version` or :func:`joins_late` would take (from its first bytes, ``head``, and
    its columns; a short header at port 443 is taken whether TURN's or not: the QUIC pass tells)."""
    h = batch.head
    version = ((h[:, 1].astype(np.uint32) << 24) | (h[:, 2].astype(np.uint32) << 16)
               | (h[:, 3].astype(np.uint32) << 8) | h[:, 4])
    kind = h[:, 0] & 0xF0
    read = (((kind == INITIAL_TYPE[QUIC_V1]) & (version == QUIC_V1))
            | ((kind == INITIAL_TYPE[QUIC_V2]) & (version == QUIC_V2)))
    port = (batch.dport == QUIC_PORT) | (batch.sport == QUIC_PORT)
    other = ((h[:, 0] & 0xC0) == 0xC0) & (version != 0) & port
    wire = batch.lengths + batch.cut  # (a datagram the snapshot length cut, at its length on the wire)
    short = ((h[:, 0] & 0xC0) == 0x40) & port & (wire >= MIN_SHORT_PACKET)
    return bool(np.any(((read | other) & (wire >= MIN_INITIAL_DATAGRAM)) | short))


def version_name(version: int) -> str:
    """A QUIC version as people name it: ``"1"``, ``"2"``, a draft of RFC 9000 (``"draft-29"``
    for 0xff00001d), Google QUIC's ASCII tag (``"Q050"``), else its hex value."""
    if version in (QUIC_V1, QUIC_V2):
        return "1" if version == QUIC_V1 else "2"
    if version >> 8 == 0xFF0000:
        return f"draft-{version & 0xFF}"
    tag = version.to_bytes(4, "big")
    if tag[:1] == b"Q" and tag[1:].isdigit():
        return tag.decode("ascii")
    return f"0x{version:08x}"
