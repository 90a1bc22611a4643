"""One pass over a capture: SIP calls, RTCP reports and RTP streams, found and measured.

:func:`scan_capture` reads a capture's UDP datagrams once, in NumPy batches
(:func:`qoe.capture.read_udp_batches`): it parses SIP and its SDP, RTCP compound packets
(and the round-trip times their LSR/DLSR give), and groups RTP packets into flows by
UDP direction and SSRC (and tunnel: inside a tunnel an address code stands for the
address in that encapsulation, :attr:`qoe.capture.UdpBatch.encapsulations`), accepting a
flow when SDP announced it or, by a heuristic, when its first packets progress like RTP;
each accepted flow's statistics are computed as it goes (:class:`qoe.rtp._stats.StreamStats`,
all streams of a batch at once). The public names are re-exported, and documented as a
whole, by :mod:`qoe.rtp`.

References
----------
.. [1] RFC 3550, "RTP: A Transport Protocol for Real-Time Applications", §5.1 (header),
   §6.4.1 (round-trip time from LSR/DLSR), §11 (RTP and RTCP ports).
.. [2] RFC 5761, "Multiplexing RTP Data and Control Packets on a Single Port", §4.
.. [3] RFC 3261, "SIP: Session Initiation Protocol", §7.1-§7.2 (start lines), §27.4
   (methods); RFC 4566, "SDP", §5; RFC 3605 (RTCP attribute in SDP).
.. [4] Wireshark and tshark number frames from 1 and time streams from frame 1
   (:attr:`qoe.capture.CaptureInfo.first_frame_ns`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from functools import partial
from typing import Any

from qoe.errors import InputError, QoEWarning
from qoe.rtp._batchprep import prepare
from qoe.rtp._results import RtpScan, RtpStream
from qoe.rtp._scanner import _Scanner
from qoe.rtp._stats import JITTER_RULES, LOSS_RULES, REORDER_WINDOW
from qoe.rtp.sip import SdpMedia

#: Default of ``scan_capture(max_streams=...)``: most RTP streams one scan takes.
MAX_STREAMS = 100_000
#: Default of ``scan_capture(max_flows=...)``: most UDP flows one scan tracks that are not
#: RTP streams (undecided by the heuristic, or rejected by it). Each takes about 1.2 KiB
#: (its key, its place in the flow index, its held first packet and the sample the SRTP
#: heuristic reads; ``benchmarks/rtp_flow_limit.py`` measures it), so the default bounds
#: them near 120 MB.
MAX_FLOWS = 100_000

#: Default of ``stream_timeout_s``: a stream (or an undecided flow) with no packet for this
#: long is ended and handed on. RFC 3550 §6.3.5 times a participant out after M = 5
#: deterministic RTCP intervals Td without an RTP or RTCP packet from it, and Td is at
#: least Tmin = 5 s (§6.2): 5 x 5 s = 25 s.
STREAM_TIMEOUT_S = 25.0
#: ``read_ahead=True``: batches of UDP datagrams read, decoded and sorted by kind
#: (:mod:`qoe.rtp._batchprep`) ahead of the scan, in a child process (or, where it cannot
#: fork, a thread: :func:`qoe.capture.read_ahead`). Measured on 1.4 M packets of 4,000
#: streams (2 vCPUs, ``benchmarks/rtp_many_streams.py``, 2026-11-27): ``qoe streams``
#: 0.86 s wall for concurrent calls and 0.88 s for sequential ones, against 0.92 s and
#: 1.05 s reading in a thread (which takes turns with the scan for the GIL) and 1.03 s and
#: 1.12 s not reading ahead, for 10-15 % more CPU time; so the library leaves it off by
#: default (a pool of scans, ``qoe.batch``, already keeps every core busy) and
#: ``qoe streams``, which scans one capture, turns it on with two cores (``read_ahead=None``;
#: not for a capture under 8 MiB, :data:`qoe.capture.READ_AHEAD_MIN_BYTES`).
#: Two batches ahead rather than one: the two processes take turns being the slower (a batch
#: of new calls costs the scan more, a batch of many calls the reader), and a second batch
#: in hand evens that out: ``qoe streams`` 1.14 -> 1.08 s (concurrent) and 1.06 -> 1.00 s
#: (sequential), 8 alternating runs each on a slow afternoon, with the same peak RSS (83 and
#: 74 MB: the slots in use fit in the memory a batch takes anyway); 4 ahead gained 2-4 %
#: more for 15-24 MB. The batches are sorted and parsed (:func:`prepare`) by whichever
#: process would otherwise wait (``read_ahead``'s ``then``): on concurrent calls the reader
#: was the slower one, and the scan waited 0.17-0.23 s for it; ``qoe streams`` 0.935 ->
#: 0.87 s (concurrent), 0.867 -> 0.855 s (sequential), 2.07 -> 2.10 s (20,000 short
#: streams: the scan is the slower one there), means of 6, 6 and 4 alternating runs.
READ_AHEAD = 2
#: Bytes of capture read at a time; with ``batch_size=None`` (the default) each such chunk's
#: datagrams are one batch, their payloads left where they were read (no batch buffer joined
#: from several chunks: a copy of the capture saved). Measured on the 1.4 M packets of
#: ``benchmarks/rtp_many_streams.py`` (230-byte frames; ``perf stat -e task-clock``, process
#: CPU with imports, alternating runs): concurrent calls 1.29-1.32 s against 1.35-1.44 s for
#: batches of 32,768 datagrams joined from 1 MiB chunks, sequential 1.33-1.49 s against
#: 1.44-1.71 s (2 and 8 MiB chunks: 1.45-1.58 s); peak RSS of ``qoe streams`` 75 MiB
#: (92 MiB before). Batches of 16,384 datagrams and fewer were slower (shorter runs of a
#: stream per batch).
CHUNK_BYTES = 4 << 20


def scan_capture(
    path: str | os.PathLike[str],
    *,
    keep_packets: bool = True,
    heuristic: bool = True,
    min_packets: int = 4,
    batch_size: int | None = None,
    reorder_window: int = REORDER_WINDOW,
    event_jitter: bool = False,
    max_streams: int | None = MAX_STREAMS,
    max_flows: int | None = MAX_FLOWS,
    loss_rule: str = "rfc3550",
    jitter_rule: str = "every-packet",
    infer_clock: bool = True,
    sdp: Sequence[SdpMedia] = (),
    stream_timeout_s: float | None = STREAM_TIMEOUT_S,
    read_ahead: bool | None = False,
) -> RtpScan:
    """Find every RTP stream, SIP call and RTCP report in a capture, in one pass.

    Parameters
    ----------
    path : str or os.PathLike
        A pcap or pcapng capture (read with :func:`qoe.capture.read_udp_batches`).
    keep_packets : bool, optional
        Keep each stream's per-packet table and payloads (:attr:`RtpStream.packets`).
        They are kept on disk, not in memory: appended as the capture is read to two
        temporary files that have no name (made in ``TMPDIR``, unlinked at once: the
        space, the RTP payload bytes plus 36 bytes per packet, is freed when the last
        stream that needs them is gone, or the process ends), and a stream's table is
        read back when it is used (a few recently used tables, up to 16 MiB, are
        cached). Memory then grows with the number of streams, not with their length.
        False computes the statistics only (about 1.5 KiB per stream with the default
        ``reorder_window``).
    heuristic : bool, optional
        Also accept flows that no SDP announced when their first packets progress like
        RTP (version 2, one SSRC, sequence numbers and timestamps moving forward, one
        dominant payload type): judged on a flow's first ``max(16, min_packets)``
        packets, or at the end of the capture on all of them. False keeps only
        SDP-announced streams.
    min_packets : int, optional
        Fewest packets for a flow to be taken as RTP by the heuristic. A flow with fewer
        (or one the heuristic rejects on its few packets at the end of the capture) is
        still a stream when it turns out to be the RTX stream (RFC 4588) of a media stream,
        however short: tied by the SDP's ``a=ssrc-group:FID`` or its payload type's
        ``a=fmtp apt=``, or by carrying timestamps of a video stream (every packet's, below
        three packets); or when ``sdp`` lists its SSRC.
    batch_size : int or None, optional
        Datagrams read per batch; None (the default): the datagrams of each
        :data:`qoe.rtp.CHUNK_BYTES` (4 MiB) of the capture, without assembling a batch's payloads
        into one buffer (a copy of the capture saved: about 7 % of the scan's CPU time and
        17 MiB of peak memory on 1.4 M packets, against batches of 32,768). The statistics
        do not depend on it (but for float rounding); memory grows with it.
    reorder_window : int, optional
        How many sequence numbers behind a stream's highest one a packet may arrive and
        still be told apart as a duplicate or a late packet (default 4096; see
        :func:`rtp_stats`). Each stream keeps one bit per number of it.
    event_jitter : bool, optional
        Count RFC 4733 event packets (payload types that SDP maps to
        ``telephone-event``) in the jitter as if they were audio samples at their
        rtpmap clock rate. False (the default, as Wireshark) leaves them out of the
        jitter: they still count in the arrival deltas, and the next audio packet's
        transit difference is taken from the last event packet's arrival and the last
        audio packet's timestamp (see :func:`rtp_stats`, ``telephone_events``).
    max_streams : int or None, optional
        Most RTP streams taken (default :data:`MAX_STREAMS`, 100,000; None: no limit):
        the statistics of a stream take about 1.5 KiB, so a capture crafted with millions
        of SSRCs cannot exhaust memory. Flows that would be taken past the limit are left
        out, in the order they are decided, with a :class:`~qoe.errors.QoEWarning`; the
        streams kept are reported whole.
    max_flows : int or None, optional
        Most UDP flows (by direction and SSRC) tracked that are not RTP streams: those the
        heuristic has not decided yet (fewer than ``max(16, min_packets)`` packets) and
        those it rejected, remembered so that their later packets are passed over (default
        :data:`MAX_FLOWS`, 100,000; None: no limit). A flow takes about 1.2 KiB, so a capture
        crafted with millions of one-packet flows cannot exhaust memory. Past the limit, new
        flows are not looked at (their datagrams are counted and a
        :class:`~qoe.errors.QoEWarning` says how many) unless SIP/SDP announced them: an RTP
        stream that starts after that without signalling is missed. Flows to or from ports
        that are never RTP (DNS, NTP, DHCP, ...) are not tracked and do not count.
    loss_rule : {"rfc3550", "tshark"}, optional
        How ``expected`` and ``lost`` are counted (:func:`rtp_stats`): RFC 3550 A.3
        (default: from the first packet's sequence number to the highest received; a
        packet older than the first one is not a wrap) or as tshark prints them.
    jitter_rule : {"every-packet", "in-order"}, optional
        ``"every-packet"`` (default): RFC 3550 A.8 on every packet, as tshark (see the
        conventions in :mod:`qoe.rtp`); ``"in-order"``: the receiver's rule libwebrtc
        reports as getStats' ``jitter`` (:func:`qoe.rtp.in_order_jitter_ms`: in-order
        packets only, once per timestamp), computed from the packet headers (kept
        on disk for it without ``keep_packets`` too).
    infer_clock : bool, optional
        For a stream whose clock rate nothing names (no SDP, a dynamic payload type),
        infer it and its media kind from the timestamps' rate against arrival time (8000,
        16000, 48000 or 90000 Hz; from the packet headers, kept on disk for it with or
        without ``keep_packets``, so both infer the same), compute its jitter with it,
        and say so with the evidence in :attr:`RtpStream.notes` (default True).
    sdp : sequence of SdpMedia, optional
        Media sections of an SDP the user gives (:func:`qoe.rtp.parse_sdp`: a browser's
        offer or answer) for streams the capture's own signalling does not announce. Under
        BUNDLE (RFC 8843) they share one port, so a section is matched, never by port, in
        RFC 8843 §9.2's order: by the MID its first packets carry (the §15 header
        extension, whose ID the SDP's ``a=extmap`` gives), else by the stream's SSRC
        (``a=ssrc``), else by a payload type only it maps; its
        ``a=ssrc-group:FID`` ties RTX streams to their media streams (RFC 4588,
        :attr:`RtpStream.rtx`; without it RTX is recognised by its timestamps).
    stream_timeout_s : float or None, optional
        A stream with no packet for this long (default :data:`STREAM_TIMEOUT_S`, 25 s:
        RFC 3550 §6.3.5's participant timeout, 5 RTCP intervals of at least 5 s) has
        ended: its statistics are final and its state is released. So has one silent for
        :data:`BYE_GRACE_S` (2 s) after an RTCP BYE of its SSRC or a SIP BYE or CANCEL of
        its call. Either way it must also have been silent for more than
        :data:`ACTIVE_AT_END_INTERVALS` of its mean packet interval. A later packet of
        the same flow (direction and SSRC) starts a new stream: a second *segment*,
        reported as a stream of its own. An undecided flow silent this long is decided as
        at the end of the capture. None: streams end with the capture only.
    read_ahead : bool or None, optional
        Read and prepare the next batch in a child process while one is scanned
        (:func:`qoe.capture.read_ahead` with ``process=True``: on Linux, when this process
        runs no other thread; else in a second thread; :data:`READ_AHEAD`): less wall time
        on a machine with a core to spare, more CPU time. The streams are the same. None:
        when this process may run on two cores or more and the capture holds 8 MiB or more
        (:func:`qoe.capture.read_ahead_pays`), as ``qoe streams`` does. Default False (a
        pool of scans, :mod:`qoe.batch`, keeps every core busy already).

    Returns
    -------
    RtpScan

    Raises
    ------
    CaptureError
        The file cannot be read as a capture.
    InputError
        ``min_packets`` < 2, ``batch_size`` < 1, ``reorder_window`` < 1, ``max_streams`` or
        ``max_flows`` < 1.

    References
    ----------
    RFC 3550 §5.1, §6.4, §11; RFC 5761 §4; RFC 3261 §7; RFC 4566 §5; RFC 3264 §8
    (an announcement holds until the next one for its address and port: a stream
    follows the one in force at its first packet); RFC 4733 §2.3.
    """
    _check_rules(min_packets, loss_rule, jitter_rule)
    if max_streams is not None and max_streams < 1:
        raise InputError(f"max_streams must be at least 1 (or None: no limit), given {max_streams}")
    if max_flows is not None and max_flows < 1:
        raise InputError(f"max_flows must be at least 1 (or None: no limit), given {max_flows}")
    _check_timeout(stream_timeout_s)
    name, sc = _new_scanner(path, keep_packets=keep_packets, heuristic=heuristic, min_packets=min_packets,
                            reorder_window=reorder_window, event_jitter=event_jitter, max_streams=max_streams,
                            max_flows=max_flows, loss_rule=loss_rule, jitter_rule=jitter_rule,
                            infer_clock=infer_clock, sdp=sdp, stream_timeout_s=stream_timeout_s)
    from qoe.capture import relaxed_gc_scope  # noqa: PLC0415 - as _new_scanner

    with relaxed_gc_scope():  # the collector's young generation relaxed while the scan works
        for b in _batches(name, batch_size, read_ahead, sc.timeout_ns):
            sc.batch(b)
            del b  # not held while the next batch is read: one batch in memory at a time
            sc.expire()
        return sc.finish(name)


def _check_rules(min_packets: int, loss_rule: str, jitter_rule: str) -> None:
    """The checks :func:`scan_capture` and :func:`iter_scan` both make first."""
    if min_packets < 2:
        raise InputError(f"min_packets must be at least 2, given {min_packets}")
    if loss_rule not in LOSS_RULES:
        raise InputError(f"loss_rule must be one of {LOSS_RULES}, given {loss_rule!r}")
    if jitter_rule not in JITTER_RULES:
        raise InputError(f"jitter_rule must be one of {JITTER_RULES}, given {jitter_rule!r}")


def _new_scanner(path: str | os.PathLike[str], **options: Any) -> tuple[str, _Scanner]:
    """The capture's name and a scanner of it with ``options``, which knows the time of its frame 1."""
    # the capture layer (dpkt and the readers, about half the time of `import qoe.rtp`) is
    # loaded when a capture is scanned, not when qoe.rtp is imported for its numbers
    from qoe.capture import capture_path, probe  # noqa: PLC0415

    name = capture_path(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the read below reports a damaged file once
        # frame 1, even when a later frame has an earlier time (as tshark)
        first_ns = probe(name).first_frame_ns
    return name, _Scanner(first_ns=first_ns, **options)


def _batches(name: str, batch_size: int | None, read_ahead: bool | None, timeout_ns: int | None) -> Any:
    """The capture's UDP datagrams in prepared batches (:func:`prepare`, with the scan's
    silence timeout), read ahead in a child process with ``read_ahead`` (None: when there
    is a second core and the capture is not small, :func:`qoe.capture.read_ahead_pays`)."""
    from qoe.capture import read_ahead as ahead, read_ahead_pays, read_udp_batches  # noqa: PLC0415 - as scan_capture

    batches = read_udp_batches(name, batch_size=batch_size, chunk_size=CHUNK_BYTES)
    if read_ahead is None:
        read_ahead = read_ahead_pays(name)
    if read_ahead:  # prepared by whichever process would otherwise wait (read_ahead's then)
        return ahead(batches, READ_AHEAD, process=True, then=partial(prepare, timeout_ns=timeout_ns))
    return (prepare(b, timeout_ns) for b in batches)


def _check_timeout(stream_timeout_s: float | None) -> None:
    if stream_timeout_s is not None and not (isinstance(stream_timeout_s, (int, float)) and stream_timeout_s > 0):
        raise InputError(f"stream_timeout_s must be a positive number of seconds (or None), given {stream_timeout_s!r}")


class ScanStream:
    """What :func:`iter_scan` returns: an iterator (once) over the calls of a capture as they
    end, each a ``(streams, sip_calls)`` pair; then :attr:`scan` holds the rest.

    Attributes
    ----------
    scan : RtpScan or None
        After the last call: the capture's scan without streams and calls (its datagram
        and RTCP counts, its RTCP summaries of streams still tracked at the end); None before.
    """

    def __init__(self, scanner: _Scanner, batches: Any, path: str) -> None:
        from qoe.capture import relaxed_gc  # noqa: PLC0415 - as _new_scanner

        self._sc = scanner
        self._gen = relaxed_gc(self._run(batches, path))  # the collector relaxed between the calls given
        self.scan: RtpScan | None = None

    def __iter__(self) -> ScanStream:
        return self

    def __next__(self) -> tuple[list[RtpStream], list[Any]]:
        return next(self._gen)

    @property
    def live_streams(self) -> int:
        """RTP streams the scan is tracking now (taken, not ended): their statistics rows."""
        return self._sc.stats.live

    @property
    def tracked_flows(self) -> int:
        """UDP flows the scan is tracking now (undecided, or taken as RTP and not ended)."""
        return self._sc.tracked_flows()

    @property
    def ended_streams(self) -> int:
        """Streams ended before the capture did (silence, BYE)."""
        return self._sc.ended_streams

    @property
    def waiting_streams(self) -> int:
        """Streams ended and not yet handed on (a call's other streams, or an earlier call, still live)."""
        return len(self._sc.done)

    def _run(self, batches: Any, path: str) -> Any:
        sc = self._sc
        for b in batches:
            sc.batch(b)
            del b
            sc.expire()
            sc.out.extend(sc.ready())
            while sc.out:
                yield sc.out.pop(0)
        scan = sc.finish(path)
        sc.out.extend(sc.ready(final=True))
        while sc.out:
            yield sc.out.pop(0)
        self.scan = scan


def iter_scan(
    path: str | os.PathLike[str],
    *,
    keep_packets: bool = True,
    heuristic: bool = True,
    min_packets: int = 4,
    batch_size: int | None = None,
    reorder_window: int = REORDER_WINDOW,
    event_jitter: bool = False,
    max_streams: int | None = MAX_STREAMS,
    max_flows: int | None = MAX_FLOWS,
    loss_rule: str = "rfc3550",
    jitter_rule: str = "every-packet",
    infer_clock: bool = True,
    sdp: Sequence[SdpMedia] = (),
    stream_timeout_s: float = STREAM_TIMEOUT_S,
    read_ahead: bool | None = False,
) -> ScanStream:
    """:func:`scan_capture` as a stream: each call's streams as soon as they have all ended,
    the scan's state of them released, so that memory follows the calls in progress, not
    the capture.

    Parameters
    ----------
    path, keep_packets, heuristic, min_packets, batch_size, reorder_window, event_jitter, max_streams, max_flows, loss_rule, jitter_rule, infer_clock, sdp, stream_timeout_s, read_ahead
        As :func:`scan_capture` (``stream_timeout_s`` cannot be None here).

    Returns
    -------
    ScanStream
        An iterator over ``(streams, sip_calls)``: the streams of one call or more (joined
        by Call-ID or by a shared pair of UDP ends, as :func:`qoe.voice.find_calls` joins
        them) in order of their first packet, with those calls' SIP calls
        (:class:`qoe.rtp.sip.SipCall`). The pairs come in order of their first packet;
        together they hold the streams :func:`scan_capture` gives with the same
        ``stream_timeout_s``. A stream's statistics are those of the streams
        :func:`scan_capture` returns; what differs is only what a scan of the whole
        capture can see and a streaming one cannot: an SDP announcement, an RTCP report or
        feedback, or a SIP message of a call, that comes after its streams ended (a SIP
        call without any stream is not given). :attr:`ScanStream.live_streams` and
        :attr:`ScanStream.tracked_flows` say what the scan holds.

    Raises
    ------
    CaptureError, InputError
        As :func:`scan_capture` (the capture is read while iterating).
    """
    _check_rules(min_packets, loss_rule, jitter_rule)
    if stream_timeout_s is None:
        raise InputError("iter_scan needs a stream_timeout_s (streams must end to be handed on)")
    _check_timeout(stream_timeout_s)
    name, sc = _new_scanner(path, keep_packets=keep_packets, heuristic=heuristic, min_packets=min_packets,
                            reorder_window=reorder_window, event_jitter=event_jitter, max_streams=max_streams,
                            max_flows=max_flows, loss_rule=loss_rule, jitter_rule=jitter_rule,
                            infer_clock=infer_clock, sdp=sdp, stream_timeout_s=stream_timeout_s, streaming=True)
    return ScanStream(sc, _batches(name, batch_size, read_ahead, sc.timeout_ns), name)


def find_streams(
    path: str | os.PathLike[str],
    *,
    keep_packets: bool = True,
    heuristic: bool = True,
    min_packets: int = 4,
    reorder_window: int = REORDER_WINDOW,
    loss_rule: str = "rfc3550",
) -> list[RtpStream]:
    """The RTP streams of a capture, with their packets and statistics.

    See :func:`scan_capture` (this returns its ``streams``); warns with
    :class:`~qoe.errors.QoEWarning` when the capture holds no RTP stream.

    Parameters
    ----------
    path : str or os.PathLike
        A pcap or pcapng capture.
    keep_packets, heuristic, min_packets, reorder_window, loss_rule
        As for :func:`scan_capture`.

    Returns
    -------
    list of RtpStream
        In order of their first packet.
    """
    scan = scan_capture(path, keep_packets=keep_packets, heuristic=heuristic, min_packets=min_packets,
                        reorder_window=reorder_window, loss_rule=loss_rule)
    if not scan.streams:
        warnings.warn(f"{scan.path}: no RTP stream found in {scan.udp_packets} UDP datagrams", QoEWarning, stacklevel=2)
    return list(scan.streams)
