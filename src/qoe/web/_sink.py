"""The contract between TCP reassembly (``qoe.web.tcp``) and the protocols above it.

TCP reassembly delivers each direction of a connection as an in-order byte stream to a
:class:`ByteSink`, one sink per connection, made by a factory the caller passes. HTTP/1.x
(``qoe.web.http``) and TLS timing are sinks. Bytes are pushed as they become deliverable,
so a parser above never needs the whole connection in memory (a gigabyte download passes
through with memory bounded by the reassembly limits and the parser's own buffer).

Conventions
-----------
- ``direction`` is :data:`CLIENT` (0: bytes the connection's initiator sent) or
  :data:`SERVER` (1: bytes the responder sent). The initiator is the side that sent the
  SYN without ACK; when the capture holds no handshake, the reassembler decides and says
  how in :attr:`ConnectionId.initiator_known`.
- ``offset`` counts payload bytes from the first byte after the SYN (relative sequence
  number − 1 in Wireshark's terms); offsets are contiguous: each delivery starts where the
  last delivery or gap of that direction ended.
- ``ts_ns`` is the capture time, in integer nanoseconds, of the packet that made these
  bytes deliverable in order: for bytes that filled a hole, the retransmission's time, as
  the receiving application would get them.
- A gap is a run of bytes that the capture never held (lost before the capture point, or
  the capture began late); after a gap, deliveries go on at ``offset + length``.

References
----------
.. [1] RFC 9293, "Transmission Control Protocol (TCP)", §3.4 (sequence numbers), §3.10.7
   (segment arrives: in-order delivery).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

CLIENT = 0
SERVER = 1


@dataclass(frozen=True, slots=True)
class ConnectionId:
    """One TCP connection as the reassembler saw it.

    Attributes
    ----------
    client, server : tuple of (str, int)
        (address, port) of the initiator and the responder.
    index : int
        0-based number of this connection in the capture, in order of first packet (the
        same 4-tuple reused later is a new connection with a new index).
    first_ts_ns : int
        Capture time of the connection's first packet (the SYN when captured).
    initiator_known : bool
        True when the SYN (or SYN/ACK) was captured and fixed the roles; False when the
        reassembler guessed them (see ``qoe.web.tcp``).
    """

    client: tuple[str, int]
    server: tuple[str, int]
    index: int
    first_ts_ns: int
    initiator_known: bool


class ByteSink(Protocol):
    """What receives the in-order bytes of one connection (both directions)."""

    def data(self, direction: int, ts_ns: int, offset: int, payload: bytes) -> None:
        """Bytes ``[offset, offset + len(payload))`` of ``direction``, deliverable at ``ts_ns``."""

    def gap(self, direction: int, ts_ns: int, offset: int, length: int) -> None:
        """Bytes ``[offset, offset + length)`` of ``direction`` are missing from the capture."""

    def close(self, direction: int, ts_ns: int, how: str) -> None:
        """``direction`` ended: ``how`` is ``"fin"``, ``"rst"`` or ``"end-of-capture"``."""


SinkFactory = Callable[[ConnectionId], "ByteSink | None"]
"""Called once per new connection; returns its sink, or None to ignore the connection's bytes."""
