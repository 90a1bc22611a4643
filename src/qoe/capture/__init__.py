"""Reading packet captures: pcap and pcapng files to UDP datagrams and TCP segments.

The layer every scorer stands on. It knows files, link layers, IP and transports, and
nothing of QoE.

- :func:`read_packets` streams :class:`Packet` records (UDP and TCP, with
  :class:`TcpInfo` for TCP), one Python object per packet.
- :func:`read_udp_batches` streams :class:`UdpBatch` columns of NumPy arrays, the fast
  path for large captures (vectorised header extraction for the common layouts).
  :func:`read_ahead` runs such a reader in a background thread or (``process=True``, on
  Linux) a forked child process, one batch ahead of its caller (reading overlaps the
  caller's work on two cores); :func:`usable_cores` says whether there is a second core
  to run it on, :func:`read_ahead_pays` whether a capture is large enough to gain from
  it, :func:`fork_available` whether a child process can read it. :func:`relaxed_gc` and :func:`relaxed_gc_scope` relax the garbage
  collector's young generation while a pass over a capture works (its many short-lived
  objects are freed before the collector looks) and give the caller its own threshold
  whenever its code runs.
- :func:`read_tcp_segments` streams the same TCP :class:`Packet` records as
  ``read_packets(..., protocols=("tcp",))`` with the headers of each chunk read in NumPy
  columns; :func:`tcp_segment_rows` gives them as plain tuples of the fields
  :data:`TCP_SEGMENT_FIELDS` (for TCP reassembly; :func:`tcp_segment_row` turns a Packet
  into one), :func:`tcp_segment_chunks` a chunk of the file at a time, optionally only the
  connections of a range of :func:`flow_bucket` (to split a capture's connections between
  processes) or the segments captured within given times (to read a few moments again; :func:`time_spans`
  checks and merges them).
- :func:`probe` checks that a file is a capture qoe reads and describes it
  (:class:`CaptureInfo`: format, interfaces, and the time of frame 1 that Wireshark's
  relative times count from) from the file's first records only.

Both readers read in chunks of ``chunk_size`` bytes (memory flat in the file size), keep
timestamps exact as integer nanoseconds, reassemble IPv4/IPv6 fragments within the
bounds of a :class:`ReassemblyLimits` (``reassembly=``), and number frames as Wireshark
does.

Errors and warnings
-------------------
Every problem with the *file* is a :class:`~qoe.errors.CaptureError` (missing file,
directory, unreadable, not a pcap/pcapng file, unsupported link type, damaged header),
raised when :func:`read_packets` / :func:`read_udp_batches` is called, with the file name
and what was found (first bytes, link-type number and name). Bad *options* (``protocols``,
``batch_size``, ``chunk_size``, ``reassembly``) are :class:`~qoe.errors.InputError`. A
file cut short inside a record, or a damaged record later in the file, gives every packet
before it and one :class:`~qoe.errors.QoEWarning` naming the file and the record.

Conventions
-----------
- Frame numbers count every packet record (and the pcapng blocks Wireshark shows as
  frames); a reassembled datagram takes the number and time of its completing fragment.
- ``interface`` counts pcapng Interface Description Blocks over the whole file.
- A pcapng Simple Packet Block has no timestamp: its ``ts_ns`` is 0.
- Paths, ``os.PathLike`` and seekable binary file objects are accepted; gzip-compressed
  captures (``.pcap.gz``) are read transparently.
- Tunnels are decapsulated (MPLS label stacks and Ethernet pseudowires, GRE, ERSPAN
  I/II/III, VXLAN, GTP-U, IP-in-IP, IPv6-in-IPv4, PPPoE, L2TPv2): a packet is its innermost
  IP packet's datagram or segment, and :attr:`Packet.encapsulation` names what it came
  through. Outer and inner IP fragments are both reassembled.
- Not decoded: ESP-protected payloads, L2TPv3, VXLAN-GPE/Geneve, GRE version 1 (PPTP),
  link types other than those in :data:`SUPPORTED_LINKTYPES`.

References
----------
.. [1] G. Harris, M. Richardson, "PCAP Capture File Format", draft-ietf-opsawg-pcap.
.. [2] M. Tüxen et al., "PCAP Now Generic (pcapng) Capture File Format",
   draft-ietf-opsawg-pcapng.
.. [3] tcpdump.org, "LINK-LAYER HEADER TYPES", https://www.tcpdump.org/linktypes.html.
.. [4] RFC 791 (IPv4), RFC 815 (reassembly), RFC 8200 (IPv6), RFC 768 (UDP), RFC 9293 (TCP).
.. [5] Tunnels: RFC 3032, RFC 4385, RFC 4448 (MPLS); RFC 2784, RFC 2890 (GRE);
   draft-foschiano-erspan-03 (ERSPAN); RFC 7348 (VXLAN); 3GPP TS 29.281 (GTP-U); RFC 2003,
   RFC 4213 (IP in IP); RFC 2516 (PPPoE); RFC 2661 (L2TPv2).
"""

from __future__ import annotations

from qoe.capture._udp_batches import read_udp_batches
from qoe.capture._collector import relaxed_gc, relaxed_gc_scope
from qoe.capture._forkahead import fork_available
from qoe.capture._readahead import READ_AHEAD_MIN_BYTES, read_ahead, read_ahead_pays, usable_cores
from qoe.capture._files import capture_path, probe
from qoe.capture._records import CaptureInfo, Interface, byte_rows
from qoe.capture._linktypes import SUPPORTED_LINKTYPES
from qoe.capture._reader import read_packets
from qoe.capture._reassembly import ReassemblyLimits
from qoe.capture._tcp_segments import (FLOW_BUCKETS, TCP_SEGMENT_FIELDS, SegmentChunk, flow_bucket, read_tcp_segments,
                                       tcp_segment_chunks,
                                       tcp_segment_row, tcp_segment_rows, time_spans, TimeSpans)
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
    "read_ahead",
    "usable_cores",
    "fork_available",
    "read_ahead_pays",
    "READ_AHEAD_MIN_BYTES",
    "byte_rows",
    "relaxed_gc",
    "relaxed_gc_scope",
    "read_tcp_segments",
    "tcp_segment_rows",
    "tcp_segment_chunks",
    "SegmentChunk",
    "time_spans",
    "TimeSpans",
    "flow_bucket",
    "FLOW_BUCKETS",
    "tcp_segment_row",
    "TCP_SEGMENT_FIELDS",
    "probe",
    "capture_path",
    "CaptureInfo",
    "Interface",
    "ReassemblyLimits",
    "Packet",
    "TcpInfo",
    "UdpBatch",
    "SUPPORTED_LINKTYPES",
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
