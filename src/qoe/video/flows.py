"""The video streams of a capture: RTP video (H.264, MPEG-TS) and MPEG-TS in plain UDP.

RTP streams come from :func:`qoe.rtp.scan_capture` (SIP/SDP or the RTP heuristic) and are
video when :func:`qoe.rtp.media_kind` says so, or when an SDP the user gives announces
them. Plain UDP flows are MPEG-2 transport streams when every datagram is a whole number
of 188-byte packets, each starting with the sync byte 0x47 (ISO/IEC 13818-1 §2.4.3.2), as
IPTV multicast and ``ffmpeg -f mpegts udp://`` send them.

The datagrams of plain-UDP transport streams are written, as the capture is read, to an
anonymous temporary file (:class:`tempfile.TemporaryFile`: it has no name and its space is
given back when the last source that reads it is gone); a :class:`VideoSource` reads its
datagrams back from it when they are used, so finding the streams of a capture does not
hold its video in memory (issue 13), as :func:`qoe.rtp.scan_capture` does for RTP.

References
----------
.. [1] ISO/IEC 13818-1 (06/2021), §2.4.3.2 (transport packet: 188 bytes, sync byte 0x47).
.. [2] RFC 4566, §5.14 (``m=`` line: media type, port), §6 (``a=rtpmap``, ``a=fmtp``).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import weakref
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import IO, overload

import numpy as np

from qoe.capture import capture_path, read_udp_batches
from qoe.errors import InputError
from qoe.rtp import (
    ACTIVE_AT_END_INTERVALS,
    HeaderExtensions,
    RtpScan,
    RtpStream,
    SdpMedia,
    parse_sdp,
    read_header_extensions,
    scan_capture,
)
from qoe.video.depacketize import looks_like_h264

__all__ = ["VideoSource", "find_video", "load_sdp", "needed_for_video", "rtx_partner"]

_TS = 188
_SYNC = 0x47
# A flow is taken for a transport stream after this many datagrams that all look like one.
_MIN_TS_DATAGRAMS = 4


@dataclass(frozen=True)
class VideoSource:
    """One video stream found in a capture, before the receiver rebuilds it.

    Attributes
    ----------
    name : str
        ``"src:port -> dst:port"`` (and the SSRC for RTP).
    rtp : RtpStream or None
        The RTP stream (with its packets), or None for plain UDP.
    sdp : SdpMedia or None
        The SDP media section that describes it, when known.
    payloads : sequence of bytes
        Plain UDP: the datagrams' payloads in arrival order (read back from a temporary
        file when used: ``list(source.payloads)`` loads them).
    arrival_ns : numpy.ndarray of int64
        Plain UDP: their capture times.
    notes : tuple of str
        How the stream was recognised, when no signalling said so.
    rtx : RtpStream or None
        Its RTX stream (RFC 4588), when one is found (:func:`rtx_partner`).
    extensions : HeaderExtensions or None
        RTP: its packets' RFC 8285 header extensions (:func:`qoe.rtp.read_header_extensions`).
    """

    name: str
    rtp: RtpStream | None = None
    sdp: SdpMedia | None = None
    payloads: Sequence[bytes] = ()
    arrival_ns: np.ndarray | None = None
    notes: tuple[str, ...] = ()
    rtx: RtpStream | None = None
    extensions: HeaderExtensions | None = None


#: An RTX stream is taken for a media stream's when at least this share of its packets that
#: carry a payload have a timestamp of the media stream (RFC 4588 §4: a retransmission keeps
#: the original's timestamp) and it shares the media stream's addresses and ports (BUNDLE).
#: Low, because libwebrtc sends bandwidth probes on the RTX SSRC with other timestamps
#: (padding-only, but a capture cut at a snap length keeps their padding): 17-96 % of the RTX
#: packets of the calls in data/video/webrtc repeat a media packet; other streams on the
#: 5-tuple (audio, the other direction's reports) share none.
_RTX_SHARE = 0.1


def rtx_partner(stream: RtpStream, streams: Sequence[RtpStream]) -> RtpStream | None:
    """The RTX stream (RFC 4588 §4, SSRC multiplexing) of ``stream`` among ``streams``, or None.

    Without an SDP's ``a=ssrc-group:FID``: another SSRC on the same addresses and ports, of
    another payload type (simulcast layers share timestamps too, under the media's payload
    type), whose packets with a payload carry the media stream's RTP timestamps (at
    least 10 % of them: a retransmission keeps the original's timestamp; bandwidth probes do
    not); the one with most such packets."""
    if stream.packets is None or not len(stream.packets):
        return None
    k = stream.key
    media_ts = stream.packets.timestamp
    best, best_n = None, 0
    for s in streams:
        if s is stream or s.packets is None or not len(s.packets) or s.payload_type == stream.payload_type:
            continue
        sk = s.key
        if (sk.src, sk.sport, sk.dst, sk.dport) != (k.src, k.sport, k.dst, k.dport) or s.ssrc == stream.ssrc:
            continue
        p = s.packets
        has = np.array([len(x) > 0 for x in p.payloads], dtype=bool) if p.payloads else np.ones(len(p), dtype=bool)
        n = int(has.sum())
        if n == 0:
            continue
        hits = int(np.isin(p.timestamp[has], media_ts).sum())
        if hits and hits >= _RTX_SHARE * n and hits > best_n:
            best, best_n = s, hits
    return best


class _SpillFile:
    """An anonymous temporary file, closed as soon as the last object that reads it is gone.

    The spill and every :class:`_Datagrams` read it through this object, not through the
    file: when the last of them lets go of it (reference counting, not a later garbage
    collection), :func:`weakref.finalize` closes the file, so that it is never left for the
    file object's own finaliser, which would warn (``ResourceWarning: unclosed file``).
    """

    __slots__ = ("file", "_closer", "__weakref__")

    def __init__(self) -> None:
        self.file: IO[bytes] = tempfile.TemporaryFile(prefix="qoe-ts-")  # noqa: SIM115 - closed by _closer
        self._closer = weakref.finalize(self, self.file.close)


class _Spill:
    """Datagrams of several flows appended to one anonymous temporary file, by flow."""

    def __init__(self) -> None:
        self.file: _SpillFile | None = None
        self.size = 0
        self.where: dict[object, tuple[array, array]] = {}  # flow -> (offsets, lengths)

    def add(self, key: object, data: bytes | memoryview) -> None:
        if self.file is None:
            self.file = _SpillFile()
        self.file.file.write(data)
        off, ln = self.where.setdefault(key, (array("q"), array("q")))
        off.append(self.size)
        ln.append(len(data))
        self.size += len(data)

    def count(self, key: object) -> int:
        return len(self.where[key][0]) if key in self.where else 0

    def payloads(self, key: object) -> _Datagrams:
        assert self.file is not None
        self.file.file.flush()
        off, ln = self.where[key]
        return _Datagrams(self.file, np.frombuffer(off, dtype=np.int64), np.frombuffer(ln, dtype=np.int64))


class _Datagrams(Sequence[bytes]):
    """The payloads of one flow, read from the spill file when asked for (a read-only sequence)."""

    __slots__ = ("_file", "_off", "_len")

    def __init__(self, file: _SpillFile, off: np.ndarray, ln: np.ndarray) -> None:
        self._file, self._off, self._len = file, off, ln  # the file stays open while a reader lives

    def __len__(self) -> int:
        return int(self._off.size)

    @overload
    def __getitem__(self, i: int) -> bytes: ...
    @overload
    def __getitem__(self, i: slice) -> list[bytes]: ...
    def __getitem__(self, i: int | slice) -> bytes | list[bytes]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError(i)
        i %= n
        return os.pread(self._file.file.fileno(), int(self._len[i]), int(self._off[i]))

    def __iter__(self) -> Iterator[bytes]:
        fd = self._file.file.fileno()
        for o, n in zip(self._off.tolist(), self._len.tolist()):
            yield os.pread(fd, n, o)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and len(other) == len(self) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{len(self)} datagrams, {int(self._len.sum())} bytes, in a temporary file>"


def load_sdp(sdp: str | os.PathLike[str] | None) -> list[SdpMedia]:
    """The media sections of an SDP file or text (None: none).

    A value with a newline, or starting with ``v=``, is SDP text; anything else a path.
    """
    if sdp is None:
        return []
    text = os.fspath(sdp)
    if "\n" not in text and not text.startswith("v="):
        try:
            with open(text, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError as exc:
            raise InputError(f"{sdp}: cannot read the SDP file ({exc.strerror})") from None
    media = parse_sdp(text).media
    if not media:
        raise InputError(f"{sdp}: no media section (m= line) in the SDP")
    return list(media)


def _sdp_for(stream: RtpStream, media: list[SdpMedia]) -> SdpMedia | None:
    """The SDP section announcing ``stream``: its port and address, else its port alone."""
    k = stream.key
    same_port = [m for m in media if m.port == k.dport]
    exact = [m for m in same_port if m.address == k.dst]
    return (exact or same_port or [None])[0]  # port alone: NAT, or a sender writing 127.0.0.1


def _h264_sdp(stream: RtpStream) -> SdpMedia:
    """The SDP section a sender of H.264 on this stream would have written (RFC 6184 §8.2.1)."""
    k = stream.key
    text = (f"v=0\r\nc=IN IP4 {k.dst}\r\nm=video {k.dport} RTP/AVP {stream.payload_type}\r\n"
            f"a=rtpmap:{stream.payload_type} H264/90000\r\na=fmtp:{stream.payload_type} packetization-mode=1\r\n")
    return parse_sdp(text).media[0]


def _cut_note() -> str:
    return (f"partial: the stream was still sending when the capture ended (its last packet within "
            f"{ACTIVE_AT_END_INTERVALS} packet intervals of the capture's last UDP datagram, no RTCP BYE): the "
            "capture may have cut it, and it is scored on what the capture holds")


def _as_video(s: RtpStream, media: list[SdpMedia]) -> tuple[SdpMedia | None, tuple[str, ...]] | None:
    """The SDP section and notes of RTP stream ``s`` when :func:`find_video` takes it as video, else None."""
    m = _sdp_for(s, media) or next((x for x in media if s.ssrc in x.ssrcs), None)
    kind = m.media if m is not None else s.media
    notes: tuple[str, ...] = ()
    # no SDP names the payload (the media kind may be inferred from the clock rate: qoe.rtp)
    if m is None and s.codec is None and kind in (None, "video") and looks_like_h264(s.packets.payloads):
        kind, m = "video", _h264_sdp(s)
        notes = (f"payload type {s.payload_type} taken for H.264 (RFC 6184) by its NAL units: no SDP names it",)
    return (m, notes) if kind == "video" else None


def needed_for_video(streams: Sequence[RtpStream], sdp: Sequence[SdpMedia] = ()) -> list[RtpStream]:
    """The RTP streams of a scan that :func:`find_video` needs, of ``streams``: video streams,
    RTX streams, and every stream on the UDP addresses and ports of a video stream (an RTX
    stream that no SDP names is told by its timestamps: :func:`rtx_partner`).

    A caller that scans a capture once for voice and video, handing on calls as they end
    (:func:`qoe.rtp.iter_scan`, ``qoe.score(kind="auto")``), keeps these streams of each call
    for :func:`find_video` (its ``scan=``) and releases the others.

    Parameters
    ----------
    streams : sequence of RtpStream
        Streams of a scan that kept their packets: one call's (:func:`qoe.rtp.iter_scan`
        hands on the streams sharing UDP addresses and ports together), or all.
    sdp : sequence of SdpMedia, optional
        The media sections of the SDP given to :func:`find_video` (:func:`load_sdp`).

    Returns
    -------
    list of RtpStream
        In the order of ``streams``.
    """
    media = list(sdp)
    video = {(s.key.src, s.key.sport, s.key.dst, s.key.dport) for s in streams if _as_video(s, media) is not None}
    return [s for s in streams
            if (s.codec or "").lower() == "rtx" or (s.key.src, s.key.sport, s.key.dst, s.key.dport) in video]


def find_video(capture: str | os.PathLike[str], *, sdp: str | os.PathLike[str] | None = None,
               scan: RtpScan | None = None) -> list[VideoSource]:
    """Every video stream of a capture, in order of their first packet.

    Parameters
    ----------
    capture : path
        pcap or pcapng.
    sdp : path or str, optional, keyword-only
        An SDP (file or text) that describes streams the capture's own signalling does
        not, e.g. what ``ffmpeg -sdp_file`` wrote: a stream to its ``m=`` port is taken as
        that media, with its payload names and format parameters.
    scan : RtpScan, optional, keyword-only
        What ``qoe.rtp.scan_capture(capture)`` returned, when the caller has it already
        (``qoe.score(kind="auto")`` scans once for voice and video, applying ``sdp``);
        else the capture is scanned here with ``sdp`` (:func:`qoe.rtp.scan_capture`: a
        browser's SDP under BUNDLE names its streams' codecs by ``a=ssrc`` or payload type).

    Notes
    -----
    An RTP stream of a dynamic payload type that no SDP describes is taken for H.264 when
    its payloads are RFC 6184 packets carrying parameter sets
    (:func:`qoe.video.depacketize.looks_like_h264`); the source's ``notes`` say so.
    """
    name = capture_path(capture)
    media = load_sdp(sdp)
    out: list[tuple[int, VideoSource]] = []
    if scan is None:  # the SDP also applies under BUNDLE (a=ssrc, or a payload type only one section maps)
        scan = scan_capture(name, keep_packets=True, sdp=media)
    rtp_keys = set()
    calls = {c.call_id: c for c in scan.calls}
    for s in scan.streams:
        if (s.codec or "").lower() == "rtx":  # RFC 4588 §8: retransmissions of a media stream, not one of their own
            continue
        rtp_keys.add((s.key.src, s.key.sport, s.key.dst, s.key.dport, s.key.encapsulation))
        taken = _as_video(s, media)
        if taken is not None:
            m, notes = taken
            call = calls.get(s.call_id) if s.call_id else None
            if call is not None:  # SIP decides: answered and never ended by BYE or CANCEL
                if call.answer_ns is not None and call.end_ns is None:
                    notes += ("partial: the call was answered and the capture holds no BYE or CANCEL for it "
                              "(RFC 3261 §15): scored on what the capture holds",)
            elif s.active_at_end:
                notes += (_cut_note(),)
            k = s.key
            out.append((int(s.packets.frame[0]), VideoSource(name=str(k), rtp=s, sdp=m, notes=notes,
                                                             rtx=rtx_partner(s, scan.streams))))
    rtp_sources = [i for i, (_, v) in enumerate(out) if v.rtp is not None]
    if rtp_sources:  # RFC 8285 header extensions (abs-send-time: queueing delay), one more read of the capture
        exts = read_header_extensions(name, [out[i][1].rtp for i in rtp_sources], sdp=media)
        for i, e in zip(rtp_sources, exts):
            out[i] = (out[i][0], dataclasses.replace(out[i][1], extensions=e))
    # flows by (src, sport, dst, dport, encapsulation): subscribers of two tunnels stay apart
    first_frame: dict[tuple[str, int, str, int, str], int] = {}
    spill = _Spill()  # the flows' datagrams, on disk
    times: dict[tuple[str, int, str, int, str], array] = {}
    not_ts: set[tuple[str, int, str, int, str]] = set()
    last_ns = scan.last_ns
    for b in read_udp_batches(name):
        ln = np.diff(b.offsets)
        for i in np.flatnonzero((ln >= _TS) & (ln % _TS == 0)).tolist():
            key = (b.addresses[b.src[i]], int(b.sport[i]), b.addresses[b.dst[i]], int(b.dport[i]),
                   b.encapsulation_of(i))
            if key in rtp_keys or key in not_ts:
                continue
            data = b.payload_of(i)
            if any(data[j] != _SYNC for j in range(0, len(data), _TS)):
                not_ts.add(key)  # one datagram that is not whole transport packets: not a TS flow
                continue
            first_frame.setdefault(key, int(b.index[i]))
            spill.add(key, data)
            times.setdefault(key, array("q")).append(int(b.ts_ns[i]))
    for key in times:
        if key not in not_ts and spill.count(key) >= _MIN_TS_DATAGRAMS:
            src, sport, dst, dport, encap = key
            arr = np.asarray(times[key], dtype=np.int64)
            # the rule of qoe.rtp.RtpStream.active_at_end (MPEG-TS has no BYE)
            interval = (int(arr.max()) - int(arr.min())) / (arr.size - 1)
            cut = last_ns is not None and last_ns - int(arr.max()) <= ACTIVE_AT_END_INTERVALS * interval
            out.append((first_frame[key], VideoSource(
                name=f"{src}:{sport} -> {dst}:{dport}" + (f" via {encap}" if encap else ""),
                payloads=spill.payloads(key),
                arrival_ns=arr, notes=(_cut_note(),) if cut else ())))
    return [v for _, v in sorted(out, key=lambda t: t[0])]
