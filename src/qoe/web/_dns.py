"""DNS queries a capture's clients sent (UDP to port 53), read with dpkt (RFC 1035 §4.1).

A page starts at its main host's first query (:mod:`qoe.web.pages`).

References
----------
.. [1] RFC 1035, "Domain names - implementation and specification", §4.1 (message format),
   §4.2.1 (UDP usage).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from qoe.web._quicversion import opens_quic

__all__ = ["DnsQuery", "dns_queries", "iter_dns_queries"]

# RFC 1035 §4.2.1: DNS over UDP on port 53.
_DNS_PORT = 53
# UDP datagrams read at a time for DNS: a batch holds its datagrams until it is full, so a
# small one keeps the lazy DNS reader of iter_page_loads from holding a capture's UDP
_DNS_BATCH = 256


@dataclass(frozen=True, slots=True)
class DnsQuery:
    """A DNS query a client sent (RFC 1035 §4.1.2)."""

    ts_ns: int
    client: str
    name: str



def dns_queries(capture: str | os.PathLike[str]) -> list[DnsQuery]:
    """The DNS queries (UDP to port 53) of a capture, in capture order (RFC 1035 §4.1)."""
    return list(iter_dns_queries(capture))


def iter_dns_queries(capture: str | os.PathLike[str], *, quic_seen: list[bool] | None = None) -> Iterator[DnsQuery]:
    """:func:`dns_queries` one at a time, as the capture is read.

    ``quic_seen``, when given, has its first item set True once a datagram that opens a QUIC
    connection is read (:func:`qoe.web._quicversion.opens_quic`: an Initial of version 1 or 2,
    or a long header of another version to or from port 443, which the QUIC reader names as
    not read): the page reader then also reads QUIC.
    """
    # the capture readers load when a capture is read: qoe.web.pages (which the CLI and
    # qoe.score import for WebOptions) stays light
    from qoe.capture import read_udp_batches  # noqa: PLC0415

    for b in read_udp_batches(capture, batch_size=_DNS_BATCH):
        yield from batch_queries(b, quic_seen)


def batch_queries(b: Any, quic_seen: list[bool] | None = None) -> list[DnsQuery]:
    """The DNS queries among the datagrams of a :class:`qoe.capture.UdpBatch` (``quic_seen``:
    as :func:`iter_dns_queries`)."""
    if quic_seen is not None and not quic_seen[0] and len(b.lengths) and opens_quic(b):
        quic_seen[0] = True
    out: list[DnsQuery] = []
    queries = np.flatnonzero(b.dport == _DNS_PORT).tolist()
    if not queries:
        return out
    # dpkt loads when a capture holding DNS is read (25 ms): qoe.web.pages (imported by the
    # CLI) stays light, and so does a pass over a capture without DNS
    import dpkt  # noqa: PLC0415

    for i in queries:
        try:
            msg = dpkt.dns.DNS(b.payload_of(i))
        except (dpkt.UnpackError, IndexError, ValueError):
            continue
        if msg.qr == dpkt.dns.DNS_Q and msg.qd:
            out.append(DnsQuery(ts_ns=int(b.ts_ns[i]), client=b.addresses[b.src[i]], name=msg.qd[0].name))
    return out
