"""RTP streams in a capture: discovery, per-packet tables and RFC 3550 statistics.

A stream is one synchronisation source (SSRC) on one UDP 5-tuple direction. For each
stream this module gives

* a columnar table of the received packets (:class:`RtpPackets`), in arrival order, that
  the jitter buffer, the G.711 decoder and the one-way delay matcher work on;
* the receiver statistics of RFC 3550 (:class:`RtpStats`): packets, expected, lost,
  sequence errors, interarrival jitter, arrival deltas, and a loss-burst profile for the
  E-model's BurstR (ITU-T G.107).

The statistics are computed the way Wireshark's RTP analysis computes them, so that they
equal ``tshark -q -z rtp,streams`` on the same capture (see :func:`rtp_stats` for the
conventions).

References
----------
.. [1] RFC 3550, "RTP: A Transport Protocol for Real-Time Applications", §5.1 (header),
   §6.4.1 (interarrival jitter), Appendix A.1 (sequence numbers), A.3 (expected and lost
   packets), A.8 (jitter estimation).
.. [2] RFC 3551, "RTP Profile for Audio and Video Conferences with Minimal Control",
   §6 Tables 4 and 5 (static payload types and clock rates).
.. [3] RFC 5761, "Multiplexing RTP Data and Control Packets on a Single Port", §4
   (RTCP packet types 200-204 seen as RTP payload types 72-76).
.. [4] Wireshark User's Guide, §"RTP Streams" / "RTP Stream Analysis" (columns Lost,
   Max Delta, Max Jitter, Mean Jitter).
.. [5] ITU-T G.107 (06/2015), Appendix I/II? -- BurstR: "the average length of observed
   bursts in an arrival sequence divided by the average length of bursts expected for
   the network under random loss", §3.6 / eq. (7-29).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from qoe.errors import InputError

__all__ = [
    "RtpPackets",
    "StreamKey",
    "RtpStats",
    "RtpStream",
    "STATIC_PAYLOAD_TYPES",
    "rtp_stats",
    "make_packets",
    "extend_sequence",
]

# RFC 3550 A.1: sequence numbers are 16 bits; RTP timestamps are 32 bits (§5.1).
_SEQ_MOD = 1 << 16
_TS_MOD = 1 << 32
# RFC 3551 §4.5.13 / RFC 3389 §5: payload type 13 is comfort noise; 19 was reserved for it
# in RFC 1890 and is still treated as comfort noise by common analysers.
_COMFORT_NOISE_PTS = (13, 19)

# RFC 3551 §6, Table 4 (audio) and Table 5 (video): static payload type -> (encoding, clock rate).
# PT 9 (G722) is sampled at 16 kHz but its RTP clock runs at 8000 Hz (RFC 3551 §4.5.2).
STATIC_PAYLOAD_TYPES: dict[int, tuple[str, int]] = {
    0: ("PCMU", 8000),
    3: ("GSM", 8000),
    4: ("G723", 8000),
    5: ("DVI4", 8000),
    6: ("DVI4", 16000),
    7: ("LPC", 8000),
    8: ("PCMA", 8000),
    9: ("G722", 8000),
    10: ("L16", 44100),
    11: ("L16", 44100),
    12: ("QCELP", 8000),
    13: ("CN", 8000),
    14: ("MPA", 90000),
    15: ("G728", 8000),
    16: ("DVI4", 11025),
    17: ("DVI4", 22050),
    18: ("G729", 8000),
    25: ("CelB", 90000),
    26: ("JPEG", 90000),
    28: ("nv", 90000),
    31: ("H261", 90000),
    32: ("MPV", 90000),
    33: ("MP2T", 90000),
    34: ("H263", 90000),
}


@dataclass(frozen=True, slots=True)
class RtpPackets:
    """The received packets of one RTP stream, one row per packet, in arrival order.

    Attributes
    ----------
    frame : numpy.ndarray of int64
        1-based frame number of the packet in the capture (as Wireshark numbers frames).
    arrival_ns : numpy.ndarray of int64
        Capture timestamp, integer nanoseconds since the Unix epoch.
    seq : numpy.ndarray of uint16
        Sequence number as on the wire (RFC 3550 §5.1).
    seq_ext : numpy.ndarray of int64
        Extended sequence number ``cycles * 65536 + seq`` (RFC 3550 A.1); the first
        packet's cycle is 0, a packet reordered to before a wrap may get cycle -1.
    timestamp : numpy.ndarray of uint32
        RTP timestamp as on the wire.
    ts_ext : numpy.ndarray of int64
        RTP timestamp unwrapped across 2**32 the same way as ``seq_ext``.
    marker : numpy.ndarray of bool
        Marker bit (RFC 3550 §5.1; for audio, the first packet of a talkspurt).
    payload_type : numpy.ndarray of uint8
        Payload type (7 bits).
    payloads : tuple of bytes
        RTP payloads, after the CSRC list and header extension and without padding.
    """

    frame: np.ndarray
    arrival_ns: np.ndarray
    seq: np.ndarray
    seq_ext: np.ndarray
    timestamp: np.ndarray
    ts_ext: np.ndarray
    marker: np.ndarray
    payload_type: np.ndarray
    payloads: tuple[bytes, ...] = ()

    def __len__(self) -> int:
        return int(self.frame.shape[0])


@dataclass(frozen=True, slots=True, order=True)
class StreamKey:
    """What identifies one RTP stream: the UDP direction and the SSRC (RFC 3550 §3)."""

    src: str
    sport: int
    dst: str
    dport: int
    ssrc: int

    def __str__(self) -> str:
        return f"{self.src}:{self.sport} -> {self.dst}:{self.dport} ssrc=0x{self.ssrc:08x}"


@dataclass(frozen=True, slots=True)
class RtpStats:
    """Receiver statistics of one RTP stream (RFC 3550 §6.4.1, A.3, A.8).

    Times are in milliseconds unless the name says otherwise. ``lost`` is
    ``expected - packets`` (RFC 3550 A.3) and is negative when duplicates outnumber
    losses, as in Wireshark.

    Attributes
    ----------
    first_ns, last_ns : int
        Arrival time of the first and last packet (ns since the epoch).
    packets : int
        Packets received (duplicates included).
    expected : int
        ``highest extended sequence number - first + 1`` (RFC 3550 A.3).
    lost : int
        ``expected - packets`` (RFC 3550 A.3).
    loss_fraction : float
        ``lost / expected`` (0 for an empty expectation).
    duplicates : int
        Packets whose extended sequence number had been received before.
    out_of_order : int
        Packets that arrived with an extended sequence number below the highest one
        seen so far and were not duplicates.
    sequence_errors : int
        Packets whose sequence number is not the previous one + 1.
    min_delta_ms, mean_delta_ms, max_delta_ms : float
        Arrival-time difference to the previous packet.
    min_jitter_ms, mean_jitter_ms, max_jitter_ms : float
        RFC 3550 §6.4.1 interarrival jitter estimate after each packet.
    loss_bursts : int
        Number of runs of consecutive missing sequence numbers.
    mean_burst_length, max_burst_length : float, int
        Mean and longest run of consecutive missing packets (0 without loss).
    mean_gap_length : float
        Mean run of consecutive received sequence numbers between losses.
    burst_ratio : float
        G.107 BurstR estimated from the observed loss pattern (1 for random loss,
        > 1 for bursty loss; 1 without loss).
    """

    first_ns: int
    last_ns: int
    packets: int
    expected: int
    lost: int
    loss_fraction: float
    duplicates: int
    out_of_order: int
    sequence_errors: int
    min_delta_ms: float
    mean_delta_ms: float
    max_delta_ms: float
    min_jitter_ms: float
    mean_jitter_ms: float
    max_jitter_ms: float
    loss_bursts: int
    mean_burst_length: float
    max_burst_length: int
    mean_gap_length: float
    burst_ratio: float

    @property
    def duration_s(self) -> float:
        """Time from the first to the last packet, in seconds."""
        return (self.last_ns - self.first_ns) / 1e9

    def to_dict(self) -> dict[str, Any]:
        """The statistics as a flat dict of Python numbers."""
        return asdict(self)


@dataclass(frozen=True)
class RtpStream:
    """One RTP stream found in a capture.

    Attributes
    ----------
    key : StreamKey
        Addresses, ports and SSRC.
    payload_type : int
        The most frequent payload type of the stream.
    codec : str or None
        Encoding name from SDP ``a=rtpmap`` or RFC 3551's static table, else None.
    clock_rate : int or None
        RTP clock rate in Hz; None when unknown (then jitter is not computed).
    packets : RtpPackets or None
        The per-packet table; None when the stream was scanned for statistics only.
    stats : RtpStats
        Receiver statistics.
    call_id : str or None
        SIP Call-ID of the call whose SDP announced this stream.
    ptime_ms : float or None
        Packetisation time from SDP ``a=ptime``.
    found_by : str
        ``"sdp"`` when SIP/SDP announced the stream, ``"heuristic"`` otherwise.
    """

    key: StreamKey
    payload_type: int
    codec: str | None
    clock_rate: int | None
    packets: RtpPackets | None
    stats: RtpStats
    call_id: str | None = None
    ptime_ms: float | None = None
    found_by: str = "heuristic"
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def ssrc(self) -> int:
        return self.key.ssrc

    def to_dict(self) -> dict[str, Any]:
        """One flat record: identification, codec and the statistics."""
        k = self.key
        out: dict[str, Any] = {
            "src": k.src,
            "sport": k.sport,
            "dst": k.dst,
            "dport": k.dport,
            "ssrc": f"0x{k.ssrc:08x}",
            "payload_type": self.payload_type,
            "codec": self.codec,
            "clock_rate": self.clock_rate,
            "call_id": self.call_id,
            "found_by": self.found_by,
        }
        out.update(self.stats.to_dict())
        return out


def extend_sequence(values: np.ndarray, modulus: int) -> np.ndarray:
    """Unwrap a wrapping counter (RTP sequence numbers or timestamps) to int64.

    Each value is placed at the distance from its predecessor that is shortest modulo
    ``modulus`` (half a cycle at most, RFC 3550 A.1's rule for telling a wrap from a
    reordering), so the first value keeps cycle 0 and later ones count cycles.

    Parameters
    ----------
    values : numpy.ndarray
        Counter values as on the wire, in arrival order.
    modulus : int
        ``2**16`` for sequence numbers, ``2**32`` for timestamps.

    Returns
    -------
    numpy.ndarray of int64

    Examples
    --------
    >>> extend_sequence(np.array([65534, 65535, 0, 1], dtype=np.uint16), 1 << 16).tolist()
    [65534, 65535, 65536, 65537]
    """
    v = np.asarray(values).astype(np.int64)
    if v.size == 0:
        return v
    half = modulus // 2
    d = np.diff(v)
    d = (d + half) % modulus - half  # shortest signed distance modulo `modulus`
    out = np.empty_like(v)
    out[0] = v[0]
    np.cumsum(d, out=out[1:])
    out[1:] += v[0]
    return out


def make_packets(
    frame: np.ndarray,
    arrival_ns: np.ndarray,
    seq: np.ndarray,
    timestamp: np.ndarray,
    marker: np.ndarray,
    payload_type: np.ndarray,
    payloads: tuple[bytes, ...] | list[bytes] = (),
) -> RtpPackets:
    """Build an :class:`RtpPackets` table from raw columns, extending seq and timestamp.

    Parameters
    ----------
    frame, arrival_ns, seq, timestamp, marker, payload_type : array_like
        One value per packet in arrival order (see :class:`RtpPackets`).
    payloads : sequence of bytes, optional
        The RTP payloads; empty when not kept.

    Returns
    -------
    RtpPackets
    """
    seq = np.asarray(seq).astype(np.uint16)
    timestamp = np.asarray(timestamp).astype(np.uint32)
    n = seq.shape[0]
    payloads = tuple(payloads)
    if payloads and len(payloads) != n:
        raise InputError(f"make_packets: {len(payloads)} payloads for {n} packets")
    return RtpPackets(
        frame=np.asarray(frame, dtype=np.int64),
        arrival_ns=np.asarray(arrival_ns, dtype=np.int64),
        seq=seq,
        seq_ext=extend_sequence(seq, _SEQ_MOD),
        timestamp=timestamp,
        ts_ext=extend_sequence(timestamp, _TS_MOD),
        marker=np.asarray(marker, dtype=bool),
        payload_type=np.asarray(payload_type).astype(np.uint8),
        payloads=payloads,
    )


def rtp_stats(packets: RtpPackets, clock_rate: int | None) -> RtpStats:
    """Receiver statistics of one stream, computed from its packet table.

    Parameters
    ----------
    packets : RtpPackets
        The received packets of one stream in arrival order.
    clock_rate : int or None
        RTP clock rate in Hz (e.g. 8000 for G.711); None or 0 leaves jitter at 0.

    Returns
    -------
    RtpStats

    References
    ----------
    RFC 3550 §6.4.1, A.3, A.8.
    """
    n = len(packets)
    if n == 0:
        raise InputError("rtp_stats: the stream has no packets")
    arr = packets.arrival_ns
    seq_ext = packets.seq_ext
    # RFC 3550 A.3: expected = highest extended seq - base + 1; lost = expected - received.
    base = int(seq_ext[0])
    highest = int(seq_ext.max())
    expected = highest - base + 1
    lost = expected - n

    # Duplicates / out of order / sequence errors, in arrival order.
    seen: set[int] = set()
    dup = ooo = seq_err = 0
    top = None
    for i, s in enumerate(seq_ext.tolist()):
        if s in seen:
            dup += 1
        elif top is not None and s < top:
            ooo += 1
        if i and s != prev + 1:  # noqa: F821 - prev set below on every iteration
            seq_err += 1
        seen.add(s)
        top = s if top is None else max(top, s)
        prev = s

    deltas_ms = np.diff(arr) / 1e6 if n > 1 else np.zeros(0)
    jit = _jitter_series(packets, clock_rate)[1:]  # the first packet has no jitter
    bursts = _loss_bursts(seq_ext)
    return RtpStats(
        first_ns=int(arr[0]),
        last_ns=int(arr[-1]),
        packets=n,
        expected=expected,
        lost=lost,
        loss_fraction=lost / expected if expected > 0 else 0.0,
        duplicates=dup,
        out_of_order=ooo,
        sequence_errors=seq_err,
        min_delta_ms=float(deltas_ms.min()) if deltas_ms.size else 0.0,
        mean_delta_ms=float(deltas_ms.mean()) if deltas_ms.size else 0.0,
        max_delta_ms=float(deltas_ms.max()) if deltas_ms.size else 0.0,
        min_jitter_ms=float(jit.min()) if jit.size else 0.0,
        mean_jitter_ms=float(jit.mean()) if jit.size else 0.0,
        max_jitter_ms=float(jit.max()) if jit.size else 0.0,
        **bursts,
    )


def _jitter_series(packets: RtpPackets, clock_rate: int | None) -> np.ndarray:
    """Jitter estimate after each packet (RFC 3550 §6.4.1, A.8), in ms (first draft)."""
    n = len(packets)
    out = np.zeros(n)
    if not clock_rate:
        return out
    arr_ms = packets.arrival_ns / 1e6
    ts_ms = packets.ts_ext * (1000.0 / clock_rate)
    j = 0.0
    ref = None
    for i in range(n):
        usable = not packets.marker[i] and int(packets.payload_type[i]) not in _COMFORT_NOISE_PTS
        if ref is not None and usable:
            d = (arr_ms[i] - arr_ms[ref]) - (ts_ms[i] - ts_ms[ref])
            j += (abs(d) - j) / 16.0  # RFC 3550 §6.4.1: J += (|D| - J) / 16
        if usable or ref is None:
            ref = i
        out[i] = j
    return out


def _loss_bursts(seq_ext: np.ndarray) -> dict[str, Any]:
    """Loss-burst profile from the set of received extended sequence numbers.

    A burst is a run of consecutive sequence numbers, between the first and the highest
    received, that never arrived; a gap is a run of received ones between bursts.
    BurstR is estimated with the two-state Markov model of G.107 (06/2015) §7.2 note /
    Appendix: p = P(loss | previous received), q = P(received | previous lost),
    BurstR = 1 / (p + q).
    """
    got = np.unique(seq_ext)
    span = int(got[-1] - got[0] + 1)
    received = np.zeros(span, dtype=bool)
    received[got - got[0]] = True
    # run-length encode
    change = np.flatnonzero(np.diff(received.astype(np.int8))) + 1
    starts = np.concatenate(([0], change))
    lengths = np.diff(np.concatenate((starts, [span])))
    is_rx = received[starts]
    burst_len = lengths[~is_rx]
    gap_len = lengths[is_rx]
    n_bursts = int(burst_len.size)
    if n_bursts == 0:
        return dict(loss_bursts=0, mean_burst_length=0.0, max_burst_length=0,
                    mean_gap_length=float(span), burst_ratio=1.0)
    n_lost = int(burst_len.sum())
    n_rx = span - n_lost
    # Transitions received->lost happen once per burst; lost->received once per burst
    # (the sequence ends on a received packet).
    p = n_bursts / n_rx
    q = n_bursts / n_lost
    return dict(
        loss_bursts=n_bursts,
        mean_burst_length=float(burst_len.mean()),
        max_burst_length=int(burst_len.max()),
        mean_gap_length=float(gap_len.mean()),
        burst_ratio=float(1.0 / (p + q)),
    )
