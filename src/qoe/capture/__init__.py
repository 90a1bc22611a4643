"""Reading packet captures: pcap and pcapng files to UDP datagrams and TCP segments.

The layer every scorer stands on. It knows files, link layers, IP and transports, and
nothing of QoE.

- :func:`read_packets` streams :class:`Packet` records (UDP and TCP, with
  :class:`TcpInfo` for TCP), one Python object per packet.
- :func:`read_udp_batches` streams :class:`UdpBatch` columns of NumPy arrays, the fast
  path for large captures (vectorised header extraction for the common layouts).

Both read in chunks (memory flat in the file size), keep timestamps exact as integer
nanoseconds, reassemble IPv4/IPv6 fragments, number frames as Wireshark does, raise
:class:`~qoe.errors.CaptureError` for files they cannot read (missing file, not a capture,
unsupported link type) and warn with :class:`~qoe.errors.QoEWarning` (then stop) when a
file is cut short inside a record.
"""

from __future__ import annotations

from qoe.capture._batch import read_udp_batches
from qoe.capture._files import probe
from qoe.capture._linktypes import SUPPORTED_LINKTYPES, linktype_name
from qoe.capture._reader import read_packets
from qoe.capture._types import (
    TCP_ACK,
    TCP_AE,
    TCP_CWR,
    TCP_ECE,
    TCP_FIN,
    TCP_PSH,
    TCP_RST,
    TCP_SYN,
    TCP_URG,
    Packet,
    TcpInfo,
    UdpBatch,
)

__all__ = [
    "read_packets",
    "read_udp_batches",
    "probe",
    "Packet",
    "TcpInfo",
    "UdpBatch",
    "SUPPORTED_LINKTYPES",
    "linktype_name",
    "TCP_FIN",
    "TCP_SYN",
    "TCP_RST",
    "TCP_PSH",
    "TCP_ACK",
    "TCP_URG",
    "TCP_ECE",
    "TCP_CWR",
    "TCP_AE",
]
