"""The receiver: what a set-top box rebuilds and decodes from a captured video stream.

A video stream in a capture is one of

* H.264 (RFC 6184), H.265 (RFC 7798), VP8 (RFC 7741), VP9 (RFC 9628) or AV1 (AOMedia RTP
  payload format v1.0) over RTP, described by an SDP (from SIP, or a file the user gives);
* an MPEG-2 transport stream over RTP (RFC 2250, payload type 33);
* an MPEG-2 transport stream in plain UDP datagrams (IPTV multicast style).

The receiver model: packets lost in the network, or later than the playout deadline of a
jitter buffer (:mod:`qoe.rtp.jitterbuffer`; plain UDP has no timestamps and no deadline),
are gone, as on a set-top box; what remains is decoded with FFmpeg's decoders through PyAV,
keeping every frame's true presentation time (the RTP timestamp, or the PES PTS of the
transport stream) and whether the data it was decoded from was damaged. No retransmission
is modelled (the seed paper's IPTV setting, §8).

References
----------
.. [1] RFC 6184, "RTP Payload Format for H.264 Video", §5.1, §8.1; RFC 7798 (H.265), RFC 7741
   (VP8), RFC 9628 (VP9), AOMedia "RTP Payload Format for AV1" v1.0.0: the private modules
   ``_h265``, ``_vp8``, ``_vp9``, ``_av1``.
.. [2] RFC 2250, "RTP Payload Format for MPEG1/MPEG2 Video", §2.
.. [3] ISO/IEC 13818-1 (06/2021), §2.4.3.2-3 (transport packets, continuity counter),
   §2.4.3.6-7 (PES header: PTS, 33 bits at 90 kHz).
.. [4] RFC 3550, §5.1 (timestamp: 90 kHz for video, RFC 3551 §5).
.. [5] Pujol et al., "A QoE Perspective on Sizing Network Buffers", IMC 2014, §8 (RTP video
   over UDP; loss is the impairment).
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from qoe.errors import InputError, QoEWarning, UnsupportedCodecError
from qoe.rtp import RtpStream, SdpMedia, parse_jitter_buffer, simulate
from qoe.video.depacketize import (
    TS_PACKET,
    AccessUnit,
    check_transport_stream,
    h264_access_units,
    slice_types,
    sprop_parameter_sets,
)
from qoe.video._av1 import av1_temporal_units
from qoe.video._h265 import h265_access_units
from qoe.video._planes import plane_array
from qoe.video._rtpframes import drop_until_key
from qoe.video._vp8 import vp8_frames
from qoe.video._vp9 import vp9_frames
from qoe.video.headers import HeaderFacts, stream_header_facts

__all__ = ["DecodedFrame", "ReceivedVideo", "receive_rtp", "receive_ts", "decode"]

Transport = Literal["rtp-h264", "rtp-h265", "rtp-vp8", "rtp-vp9", "rtp-av1", "rtp-mpegts", "udp-mpegts"]
# FFmpeg decoder per RTP payload format (AV1: dav1d, FFmpeg's own av1 decoder needs a hardware accelerator).
_DECODERS = {"rtp-h264": "h264", "rtp-h265": "hevc", "rtp-vp8": "vp8", "rtp-vp9": "vp9", "rtp-av1": "libdav1d"}
# RFC 3551 §5: video RTP clocks run at 90 kHz; ISO/IEC 13818-1 §2.4.3.7: so does the PTS.
CLOCK_HZ = 90_000
# ISO/IEC 13818-1 §2.4.3.7: PTS is a 33-bit count.
_PTS_MOD = 1 << 33
# H.264 §7.4.3 Table 7-6: slice_type 2 and 7 are I slices.
_I_SLICES = (2, 7)


@dataclass(frozen=True, slots=True)
class DecodedFrame:
    """One decoded picture with its presentation time.

    Attributes
    ----------
    pts : int
        Presentation time in 90 kHz ticks (the RTP timestamp, extended; or the PES PTS).
    y, u, v : numpy.ndarray of uint8
        The planes (4:2:0: ``u`` and ``v`` are half size each way).
    damaged : bool
        Decoded from data that lost packets (the access unit or PES was incomplete).
    keyframe : bool
        The decoder marked it a key frame.
    """

    pts: int
    y: np.ndarray
    u: np.ndarray
    v: np.ndarray
    damaged: bool
    keyframe: bool

    @property
    def time_s(self) -> float:
        """Presentation time in seconds."""
        return self.pts / CLOCK_HZ


@dataclass(frozen=True)
class ReceivedVideo:
    """A video stream as the receiver kept it, ready to decode.

    Attributes
    ----------
    name : str
        The stream, as ``"src:port -> dst:port"`` (with the SSRC for RTP).
    transport : {"rtp-h264", "rtp-h265", "rtp-vp8", "rtp-vp9", "rtp-av1", "rtp-mpegts", "udp-mpegts"}
    codec : str
        FFmpeg's decoder name (``"h264"``, ``"hevc"``, ``"mpeg2video"``, ...).
    packets_received, packets_lost, packets_late : int
        Datagrams that arrived, sequence numbers never received (RTP only; 0 for plain
        UDP, whose losses show as continuity-counter errors), and packets dropped for
        missing their playout deadline. For RTP, ``packets_received`` counts each sequence
        number once: a copy of a packet (a capture that saw it twice, or a network
        duplicate) is not a packet received, as ``tshark -z rtp,streams`` shows (its
        "Lost" goes negative by the copies; the stream's ``stats.duplicates`` counts them).
    jitter_buffer : str
        The jitter buffer that set the deadlines (``"none"`` for plain UDP; ``buffer``,
        its old name, still reads it for one release, with a :class:`DeprecationWarning`).
    units : list of AccessUnit
        H.264, H.265, VP8, VP9, AV1 over RTP: the access units (frames, temporal units)
        rebuilt from the packets kept, in the codec's byte-stream form, those the
        receiver's loss rule lets through (see :func:`receive_rtp`).
    ts : bytes
        MPEG-TS: the transport stream rebuilt from the packets kept.
    ts_cc_errors : int
        MPEG-TS: continuity-counter discontinuities (ISO/IEC 13818-1 §2.4.3.3).
    damaged_pts : frozenset of int
        MPEG-TS: PTS of the PES packets of the video PID that lost transport packets.
    keyframes_damaged : int
        Access units (or PES packets) holding an IDR or I slice that arrived incomplete.
    headers : HeaderFacts or None
        RTP (not MPEG-TS): the stream's facts from its headers (:mod:`qoe.video.headers`),
        from every packet received (before the jitter buffer).
    start_pts : int or None
        RTP: the extended timestamp of the stream's first packet in the capture (90 kHz):
        when the capture holds the stream from its start, the time of its first frame.
        None for plain UDP.
    notes : tuple of str
    """

    name: str
    transport: str
    codec: str
    packets_received: int
    packets_lost: int
    packets_late: int
    jitter_buffer: str
    units: list[AccessUnit] = field(default_factory=list)
    ts: bytes = b""
    ts_cc_errors: int = 0
    damaged_pts: frozenset[int] = frozenset()
    keyframes_damaged: int = 0
    start_pts: int | None = None
    notes: tuple[str, ...] = ()
    headers: HeaderFacts | None = None

    @property
    def buffer(self) -> str:
        """Deprecated: :attr:`jitter_buffer` (issue 21: one name per concept)."""
        warnings.warn("ReceivedVideo.buffer is now ReceivedVideo.jitter_buffer; the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return self.jitter_buffer

    def frames(self) -> Iterator[DecodedFrame]:
        """Decode the stream: frames in presentation order (see :func:`decode`)."""
        return decode(self)


def _kept(stream: RtpStream, jitter_buffer: Any) -> tuple[np.ndarray, int, int, str]:
    """Packets the receiver keeps: not duplicates, not later than their deadline."""
    p = stream.packets
    jb = parse_jitter_buffer(jitter_buffer if jitter_buffer is not None else "none")
    play = simulate(p.arrival_ns, p.seq_ext, p.ts_ext, clock_rate=CLOCK_HZ, jitter_buffer=jb)
    return play.played, int(np.count_nonzero(play.lost)), int(np.count_nonzero(play.late)), str(jb)


class _Unset:
    """The default of a deprecated keyword: tells "not given" from any value (None included)."""

    def __repr__(self) -> str:
        return "<not given>"


_UNSET: Any = _Unset()


def _stream_name(stream: RtpStream) -> str:
    return str(stream.key)


def receive_rtp(
    stream: RtpStream,
    *,
    sdp: SdpMedia | None = None,
    jitter_buffer: Any = None,
    rtx: RtpStream | None = None,
    extensions: Any = None,
    buffer: Any = _UNSET,
) -> ReceivedVideo:
    """Rebuild what a receiver decodes from an RTP video stream.

    Parameters
    ----------
    stream : RtpStream
        Found with its packet table and payloads (``scan_capture(..., keep_packets=True)``).
    sdp : SdpMedia, optional, keyword-only
        The stream's SDP media section, when the capture's own SIP did not announce it
        (e.g. the file ``ffmpeg -sdp_file`` wrote): names a dynamic payload type (H.264)
        and carries ``sprop-parameter-sets``.
    jitter_buffer : JitterBuffer or str, optional, keyword-only
        The receiver's jitter buffer (``"fixed:200"``: packets later than 200 ms after
        the first packet's arrival plus their timestamp distance are dropped). Default:
        none, every packet that arrived is used.
    rtx : RtpStream, optional, keyword-only
        The stream's RTX stream (RFC 4588), for the header facts' repaired frames
        (:mod:`qoe.video.headers`); not decoded (its payloads may be encrypted).
    extensions : HeaderExtensions, optional, keyword-only
        The stream's RFC 8285 header extensions (:func:`qoe.rtp.read_header_extensions`):
        abs-send-time gives the header facts' queueing delay.
    buffer : deprecated
        The old name of ``jitter_buffer`` (issue 21: one name per concept); works for one
        release with a :class:`DeprecationWarning`; given with ``jitter_buffer``, an InputError.

    Notes
    -----
    Loss rules: H.264 and H.265 units go to the decoder damaged (a fragmented NAL unit that
    lost a piece left out, RFC 6184 §5.8, RFC 7798 §4.4.3), the decoder conceals; VP8, VP9
    and AV1 frames that are incomplete, and those after them until the next key frame, are
    not decoded (their decoders cannot conceal a missing reference; a WebRTC receiver
    waits for a key frame).

    Raises
    ------
    UnsupportedCodecError
        The payload is neither H.264 (RFC 6184) nor an MPEG-2 transport stream (RFC 2250).
    InputError
        The stream has no packet table or payloads, or both ``jitter_buffer`` and ``buffer``
        were given.
    """
    if buffer is not _UNSET:
        if jitter_buffer is not None:
            raise InputError(f"receive_rtp: ambiguous jitter buffer: both jitter_buffer={jitter_buffer!r} and its "
                             f"deprecated spelling buffer={buffer!r} given")
        warnings.warn("receive_rtp(buffer=) is now receive_rtp(jitter_buffer=); the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        jitter_buffer = buffer
    p = stream.packets
    if p is None or not p.payloads:
        raise InputError(f"stream {_stream_name(stream)}: no payloads (scan the capture keeping packets)")
    pt = stream.payload_type
    codec = stream.codec
    fmtp: dict[str, str] = {}
    if sdp is not None:
        enc = sdp.encoding(pt)
        if enc is not None:
            codec = enc[0]
        fmtp = sdp.fmtp.get(pt, {})
    name = (codec or "").upper()
    played, lost, late, buf = _kept(stream, jitter_buffer)
    idx = np.flatnonzero(played)
    common = dict(
        name=_stream_name(stream), packets_received=int(np.unique(p.seq_ext).size), packets_lost=lost, packets_late=late, jitter_buffer=buf,
        start_pts=int(p.ts_ext[0]) if len(p) else None,
    )
    if name == "MP2T" or pt == 33:  # RFC 2250: timestamps are per packet, not per frame: no header facts
        order = idx[np.argsort(p.seq_ext[idx], kind="stable")]
        data = b"".join(p.payloads[i] for i in order.tolist())
        common["start_pts"] = None  # RFC 2250 §2: the RTP timestamp is not the PES PTS
        return _receive_ts_bytes(data, transport="rtp-mpegts", **common)
    if name == "H264":
        mode = fmtp.get("packetization-mode", "0")
        notes = []
        if mode == "2":
            notes.append("packetization-mode=2 (interleaved): STAP-B, MTAP and FU-B units are not taken")
        units = h264_access_units(
            p.seq_ext[idx], p.ts_ext[idx], p.marker[idx], [p.payloads[i] for i in idx.tolist()],
            parameter_sets=sprop_parameter_sets(fmtp.get("sprop-parameter-sets")),
        )
        kd = sum(1 for u in units if not u.complete and (u.idr or any(t in _I_SLICES for t in slice_types(u.data))))
        common["headers"] = _with_keys(stream, rtx, units, extensions)
        return ReceivedVideo(transport="rtp-h264", codec="h264", units=units, keyframes_damaged=kd,
                             notes=tuple(notes), **common)
    args = (p.seq_ext[idx], p.ts_ext[idx], p.marker[idx], [p.payloads[i] for i in idx.tolist()])
    if name in ("H265", "HEVC"):
        sets = [x for k in ("sprop-vps", "sprop-sps", "sprop-pps") for x in sprop_parameter_sets(fmtp.get(k))]
        notes = []
        if fmtp.get("sprop-max-don-diff", "0") not in ("", "0"):
            notes.append("sprop-max-don-diff > 0: DONL fields (RFC 7798 §4.4) are not read, units may be damaged")
        units = h265_access_units(*args, parameter_sets=sets)
        common["headers"] = _with_keys(stream, rtx, units, extensions)
        kd = sum(1 for u in units if not u.complete and u.idr)
        return ReceivedVideo(transport="rtp-h265", codec="hevc", units=units, keyframes_damaged=kd,
                             notes=tuple(notes), **common)
    framers = {"VP8": ("rtp-vp8", "vp8", vp8_frames), "VP9": ("rtp-vp9", "vp9", vp9_frames),
               "AV1": ("rtp-av1", "av1", av1_temporal_units)}
    if name in framers:
        transport, dec, framer = framers[name]
        every = framer(*args)
        units, dropped, kd = drop_until_key(every, [u.idr for u in every])
        common["headers"] = _with_keys(stream, rtx, every, extensions)
        notes = []
        if every and not any(u.complete and u.idr for u in every):
            notes.append(f"no complete {name} key frame in the stream: are its payloads encrypted (SRTP)? give "
                         "srtp_keys (--srtp-key SUITE:BASE64) or the SDP with its a=crypto line")
        if dropped:
            notes.append(f"{dropped} frame(s) not decoded: incomplete, or after an incomplete one before the next "
                         "key frame (a receiver waits for a key frame)")
        layered = sum(u.layer_frames for u in every)
        if layered > len(every):  # VP9 spatial layers (RFC 9628 §4.2)
            notes.append(f"spatial layers: {layered} layer frames in {len(every)} pictures (RFC 9628 §4.2); each "
                         "picture decoded as one VP9 superframe and its top layer shown: frames count pictures, as "
                         "the receiver's framesDecoded; the sender's framesSent counts layer frames")
        return ReceivedVideo(transport=transport, codec=dec, units=units, keyframes_damaged=kd, notes=tuple(notes),
                             **common)
    raise UnsupportedCodecError(
        f"stream {_stream_name(stream)}: payload type {pt} ({codec or 'not named by any SDP'}) is not decoded; "
        "H.264 (RFC 6184), H.265 (RFC 7798), VP8 (RFC 7741), VP9 (RFC 9628), AV1 (AOMedia) with their SDP, "
        "and MPEG-TS (RFC 2250) are"
        + ("" if codec else ": give the SDP file the sender wrote")
    )


def _with_keys(stream: RtpStream, rtx: RtpStream | None, units: list[AccessUnit], extensions: Any) -> HeaderFacts:
    """Header facts with the key frames the payload says (IDR, IRAP, VP8/VP9 key, AV1 sequence header)."""
    return stream_header_facts(stream, rtx=rtx, key_frames={u.timestamp: u.idr for u in units},
                               extensions=extensions)


def receive_ts(name: str, payloads: list[bytes]) -> ReceivedVideo:
    """Rebuild a transport stream carried in plain UDP datagrams, in arrival order.

    Plain UDP has no sequence numbers: a lost datagram shows only as continuity-counter
    errors of the transport packets after it (ISO/IEC 13818-1 §2.4.3.3).
    """
    return _receive_ts_bytes(
        b"".join(payloads), transport="udp-mpegts", name=name, packets_received=len(payloads),
        packets_lost=0, packets_late=0, jitter_buffer="none",
    )


def _pes_pts(pk: np.ndarray) -> int | None:
    """PTS of a PES packet starting in this transport packet (ISO/IEC 13818-1 §2.4.3.6-7)."""
    afc = (pk[3] >> 4) & 0x3
    i = 4
    if afc & 0x2:
        i += 1 + int(pk[4])
    if i + 14 > TS_PACKET or pk[i] != 0 or pk[i + 1] != 0 or pk[i + 2] != 1:
        return None
    if not (pk[i + 7] & 0x80):  # PTS_DTS_flags '1x'
        return None
    b = pk[i + 9 : i + 14].astype(np.int64)
    return int(((b[0] >> 1) & 0x7) << 30 | b[1] << 22 | (b[2] >> 1) << 15 | b[3] << 7 | (b[4] >> 1))


def _receive_ts_bytes(data: bytes, *, transport: str, **common: Any) -> ReceivedVideo:
    chk = check_transport_stream(data)
    notes = []
    if chk.bad_sync or chk.stray_bytes:
        notes.append(f"{chk.bad_sync} transport packets without sync byte and {chk.stray_bytes} stray bytes left out")
    codec, vpid = _ts_video(data, common["name"])
    # PES of the video PID that lost packets: a counter discontinuity before a packet hits
    # the PES that the previous packet of the PID belonged to
    buf = np.frombuffer(data[: (len(data) // TS_PACKET) * TS_PACKET], dtype=np.uint8).reshape(-1, TS_PACKET)
    buf = buf[buf[:, 0] == 0x47]
    damaged: set[int] = set()
    key_damaged = 0
    cur_pts: int | None = None
    cur_key = False
    cur_bad = False
    rows = np.flatnonzero(chk.pid == vpid)
    for r in rows.tolist():
        pk = buf[r]
        if chk.lost_before[r]:
            cur_bad = True
        if pk[1] & 0x40:  # payload_unit_start_indicator: a new PES
            if cur_pts is not None and cur_bad:
                damaged.add(cur_pts)
                key_damaged += int(cur_key)
            cur_pts, cur_bad = _pes_pts(pk), False
            afc = (pk[3] >> 4) & 0x3
            cur_key = bool(afc & 0x2 and pk[4] > 0 and pk[5] & 0x40)  # random_access_indicator
    if cur_pts is not None and cur_bad:
        damaged.add(cur_pts)
        key_damaged += int(cur_key)
    return ReceivedVideo(
        transport=transport, codec=codec, ts=data, ts_cc_errors=sum(chk.cc_errors.values()),
        damaged_pts=frozenset(damaged), keyframes_damaged=key_damaged, notes=tuple(notes), **common,
    )


def _ts_video(data: bytes, name: str) -> tuple[str, int]:
    """(decoder name, PID) of the first video stream of a transport stream (PyAV's demuxer)."""
    import av  # noqa: PLC0415 - PyAV loads FFmpeg's libraries: only when video is decoded

    try:
        with av.open(io.BytesIO(data), format="mpegts") as c:
            if not c.streams.video:
                raise InputError(f"{name}: the transport stream has no video stream")
            s = c.streams.video[0]
            return s.codec_context.name, int(s.id)
    except av.error.FFmpegError as exc:
        raise InputError(f"{name}: not a readable MPEG transport stream ({exc})") from None


def _planes(frame: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Y, U, V of a decoded frame in 4:2:0 (converted when the stream is not)."""
    if frame.format.name != "yuv420p":
        frame = frame.reformat(format="yuv420p")
    # each plane by its own size and line size: any picture size (odd, or H/2 odd) decodes
    return plane_array(frame, 0), plane_array(frame, 1), plane_array(frame, 2)


def decode(video: ReceivedVideo) -> Iterator[DecodedFrame]:
    """Decode a received stream with FFmpeg (PyAV), frames in presentation order.

    Frames keep the stream's own presentation time. A packet the decoder rejects is
    counted (:class:`~qoe.errors.QoEWarning` at the end) and skipped: the decoder's error
    concealment and the next key frame repair what they can, as on a real receiver. The
    decoder runs on one thread, so that concealment is FFmpeg's single-threaded one
    (threaded decoding conceals damaged pictures differently).

    Raises
    ------
    InputError
        A transport stream FFmpeg's demuxer cannot open or finds no video stream in (a
        damaged one can probe differently from :func:`receive_ts`'s first look).
    """
    import av  # noqa: PLC0415 - PyAV loads FFmpeg's libraries (75 ms): only when video is decoded

    errors = [0]
    if video.transport in _DECODERS:
        ctx = av.CodecContext.create(_DECODERS[video.transport], "r")
        _one_thread(ctx)
        damaged = {u.timestamp for u in video.units if not u.complete}
        yield from _decoded(ctx, (_packet(av, u) for u in video.units if u.data), damaged, None, errors)
    else:
        try:
            container = av.open(io.BytesIO(video.ts), format="mpegts")
        except av.error.FFmpegError as exc:
            raise InputError(f"{video.name}: not a readable MPEG transport stream ({exc})") from None
        try:
            if not container.streams.video:  # receive_ts checked it; a ReceivedVideo made by hand may not be
                raise InputError(f"{video.name}: the transport stream has no video stream")
            stream = container.streams.video[0]
            _one_thread(stream.codec_context)
            packets = _demuxed(container.demux(stream), video.name)
            yield from _decoded(stream.codec_context, packets, video.damaged_pts, _PTS_MOD, errors)
        finally:
            container.close()
    if errors[0]:
        warnings.warn(f"{video.name}: the decoder rejected {errors[0]} packet(s)", QoEWarning, stacklevel=2)


def _packet(av: Any, unit: Any) -> Any:
    """An access unit rebuilt from RTP as a PyAV packet with its RTP timestamp as PTS.

    Never called for a unit with no data (every NAL unit lost): an empty packet is the
    decoder's end-of-stream signal, after which it takes nothing more."""
    pkt = av.Packet(unit.data)
    pkt.pts = unit.timestamp
    return pkt


def _demuxed(packets: Iterator[Any], name: str) -> Iterator[Any]:
    """The packets of PyAV's ``demux()``, without its closing empty packets (:func:`_decoded` flushes).

    PyAV (18.1) ``demux()`` sizes its table of streams when it starts; an MPEG-TS whose PMT
    gains a stream later (an encoder restarted with new PIDs, or a damaged table) makes its
    closing loop index past its list of streams (IndexError). Every packet was read by then.
    """
    try:
        for pkt in packets:
            if pkt.size:
                yield pkt
    except IndexError:
        warnings.warn(f"{name}: the transport stream gained a stream after its start (new or damaged PAT/PMT)",
                      QoEWarning, stacklevel=3)


def _top_layers(frames: list[Any]) -> list[Any]:
    """The frames one packet decoded to, one per presentation time: the last of those that
    share one. A VP9 superframe of spatial layers (:func:`qoe.video._vp9.vp9_superframe`)
    decodes to a frame per layer, lowest first, all with the picture's time; a WebRTC
    receiver shows the top one (RFC 9628 §4: the layers of a picture share its timestamp)."""
    if len(frames) < 2:
        return frames
    out: list[Any] = []
    for f in frames:
        if out and f.pts is not None and out[-1].pts == f.pts:
            out[-1] = f
        else:
            out.append(f)
    return out


def _decoded(ctx: Any, packets: Iterator[Any], damaged: Any, modulo: int | None, errors: list[int]
             ) -> Iterator[DecodedFrame]:
    """Frames of ``packets`` through decoder ``ctx``, then those its flush gives; a packet the
    decoder rejects is skipped and counted in ``errors[0]``."""
    import av  # noqa: PLC0415 - loaded by decode() already

    for pkt in packets:
        try:
            frames = ctx.decode(pkt)
        except av.error.FFmpegError:
            errors[0] += 1
            continue
        for f in _top_layers(frames):
            yield _frame(f, damaged, modulo=modulo)
    try:
        for f in ctx.decode(None):
            yield _frame(f, damaged, modulo=modulo)
    except av.error.FFmpegError:
        errors[0] += 1


def _one_thread(ctx: Any) -> None:
    """Decode on one thread: FFmpeg's error concealment of damaged pictures depends on threading.

    With slice or frame threads, FFmpeg's H.264 decoder conceals lost macroblocks
    differently (slice threads skip much of it); on one thread its output is what
    ``ffmpeg -threads 1`` gives, bit for bit, damaged frames included (checked on
    data/video: every frame of every capture equals the stored ``framemd5``).
    """
    ctx.thread_count = 1
    ctx.thread_type = "NONE"


def _frame(f: Any, damaged: set[int] | frozenset[int], modulo: int | None = None) -> DecodedFrame:
    pts = int(f.pts) if f.pts is not None else -1
    key = pts % modulo if modulo else pts
    y, u, v = _planes(f)
    return DecodedFrame(pts=pts, y=y, u=u, v=v, damaged=key in damaged, keyframe=bool(f.key_frame))
