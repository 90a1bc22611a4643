"""Decode an RTP audio stream of any common codec and place its samples on the RTP timeline.

G.711 (PCMA/PCMU) is decoded by the own tables (:mod:`qoe.voice.g711`) and L16 by NumPy;
every other codec by FFmpeg's decoder through PyAV, fed frame by frame in RTP timestamp
order from the payload formats of :mod:`qoe.voice.payload`.

Loss
----
A gap in the sequence numbers between two played packets is loss (a gap in timestamps
alone is a silence the sender did not send: DTX). Lost packets are given to decoders that
conceal loss themselves as the codec's own "frame lost" signal, and the decoder's output
fills the gap:

* Opus: a TOC-only packet, i.e. a zero-length frame (RFC 6716 §3.2.1), which libopus
  conceals (its in-band FEC, RFC 7587 §3.3, is not used);
* AMR, AMR-WB: NO_DATA frames (RFC 4867 §5.3, FT 15), concealed by the OpenCORE decoders
  (3GPP TS 26.091 / 26.191 error concealment);
* G.729: all-zero frames, which FFmpeg's G.729 decoder takes for erased frames and
  conceals (G.729 §4.4).

For the other codecs (G.722, G.726, G.723.1, GSM, iLBC, Speex, L16) FFmpeg's decoders have
no loss concealment: the gap is filled like G.711's, by the receiver's ``conceal`` choice
(silence or repetition, :mod:`qoe.voice.timeline`), and the result's notes say so.

Timeline
--------
Sample ``k`` of the output is RTP time ``ts_first + k · clock_rate / sample_rate``. The
two rates differ for G.722 (clock 8000 Hz, audio 16000 Hz, RFC 3551 §4.5.2).

References
----------
.. [1] RFC 3551, §4.5 (audio encodings, clock rates, L16 in network byte order §4.5.11).
.. [2] RFC 3952 (iLBC), RFC 4867 (AMR), RFC 5574 (Speex), RFC 7587 (Opus); see
   :mod:`qoe.voice.payload`.
.. [3] RFC 6716, §3.1 (Opus bandwidths), §3.2.1 (zero-length frames).
.. [4] ITU-T G.729 (06/2012), §4.4 (concealment of erased frames).
.. [5] ITU-T P.862.2 (11/2007): wide-band PESQ for 16 kHz speech (50-7000 Hz).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from math import gcd
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from qoe.errors import InputError, QoEError, UnsupportedCodecError
from qoe.voice import g711, payload as pf
from qoe.voice.identify import identify_stream, _with_codec
from qoe.voice.timeline import Conceal, ReceivedAudio, rebuild_audio, _repeat_conceal

if TYPE_CHECKING:  # pragma: no cover
    from qoe.rtp import RtpStream
    from qoe.rtp.jitterbuffer import PlayoutResult

__all__ = [
    "AudioFormat", "audio_format", "stream_band", "decode_packets", "decode_stream", "pesq_audio",
]

Band = Literal["nb", "wb"]

# RFC 3551 §4.5.4: G.726 at 16, 24, 32, 40 kbit/s, i.e. 2..5 bits per 8 kHz sample.
_G726_RATES = (16, 24, 32, 40)
# RFC 3551 §4.5.8: a GSM 06.10 frame is 33 octets (20 ms).
_GSM_FRAME = 33
# RFC 5574 §3 / §6: Speex at 8000 (narrow-band), 16000 (wide-band), 32000 Hz (ultra-wide-band).
_SPEEX_RATES = (8000, 16000, 32000)
# RFC 3551 §6 Table 4: the static L16 payload types, 44100 Hz, 10 with two channels, 11 with one.
_L16_STATIC_CHANNELS = {10: 2, 11: 1}
# RFC 7587 §4.1: the Opus RTP clock is 48000 Hz whatever the audio bandwidth; the decoder
# outputs at that rate.
_OPUS_RATE = 48000

#: Encoding names (SDP ``a=rtpmap``, upper case) that :func:`audio_format` knows.
_DECODABLE: tuple[str, ...] = (
    "PCMA", "PCMU", "G722", *(f"G726-{r}" for r in _G726_RATES), *(f"AAL2-G726-{r}" for r in _G726_RATES),
    "G729", "G729A", "G723", "GSM", "ILBC", "L16", "OPUS", "SPEEX", "AMR", "AMR-WB",
)


@dataclass(frozen=True, slots=True)
class AudioFormat:
    """How one stream's payloads are decoded.

    Attributes
    ----------
    codec : str
        Encoding name, upper case (``"G722"``, ``"G726-32"``, ``"AMR-WB"``, ...).
    clock_rate : int
        RTP clock rate (Hz).
    sample_rate : int
        Rate of the decoded audio (Hz).
    channels : int
        Decoded channels (L16 keeps the stream's; every other codec decodes to mono).
    decoder : str or None
        FFmpeg decoder name; None for G.711 (own tables) and L16 (NumPy).
    band : {"nb", "wb"}
        Audio bandwidth: ``"wb"`` for 16 kHz-class codecs (G.722, AMR-WB, L16 at 16 kHz or
        more, Speex wide-band); Opus is settled from its packets (see :func:`decode_packets`).
    plc : bool
        Whether the decoder conceals lost frames itself.
    params : dict
        SDP ``a=fmtp`` parameters (lower-case keys).
    """

    codec: str
    clock_rate: int
    sample_rate: int
    channels: int = 1
    decoder: str | None = None
    band: Band = "nb"
    plc: bool = False
    params: Mapping[str, str] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        """Decoded samples per RTP clock tick."""
        return self.sample_rate / self.clock_rate


def audio_format(
    codec: str | None,
    clock_rate: int | None,
    *,
    payload_type: int | None = None,
    channels: int = 1,
    fmtp: Mapping[str, str] | None = None,
) -> AudioFormat:
    """How a stream with this encoding name, clock rate and SDP parameters is decoded.

    Parameters
    ----------
    codec : str or None
        Encoding name (SDP ``a=rtpmap`` or RFC 3551 Table 4); any case.
    clock_rate : int or None
        RTP clock rate.
    payload_type : int, optional, keyword-only
        For the error message, and G.711 by static type when ``codec`` is None.
    channels : int, keyword-only
        ``a=rtpmap`` channels (L16 keeps them).
    fmtp : mapping, optional, keyword-only
        ``a=fmtp`` parameters (iLBC ``mode``, AMR ``octet-align``, ...).

    Raises
    ------
    UnsupportedCodecError
        A codec not in ``_DECODABLE``, or options of it that are not supported.
    """
    params = {str(k).lower(): str(v).strip() for k, v in (fmtp or {}).items()}
    name = (codec or "").upper()
    if not name and payload_type in g711._G711_PAYLOAD_TYPES:
        name = g711._G711_PAYLOAD_TYPES[payload_type]
    rate = int(clock_rate or 0)
    what = f"payload type {payload_type} ({codec or 'unknown codec'}/{clock_rate or '?'})"
    if name in ("PCMA", "PCMU"):
        return AudioFormat(name, rate or 8000, rate or 8000, params=params)
    if name == "G722":
        # RFC 3551 §4.5.2: G.722 is sampled at 16 kHz, its RTP clock runs at 8000 Hz.
        return AudioFormat(name, 8000, 16000, decoder="g722", band="wb", params=params)
    if name.startswith(("G726-", "AAL2-G726-")):
        kbit = name.rsplit("-", 1)[1]
        if not kbit.isdigit() or int(kbit) not in _G726_RATES:
            raise UnsupportedCodecError(f"{what}: G.726 runs at 16, 24, 32 or 40 kbit/s (RFC 3551 §4.5.4)")
        # RFC 3551 §4.5.4: "G726-xx" packs codewords from the least significant bit of each
        # octet (FFmpeg's adpcm_g726le, its RTP demuxer's choice for these names); the
        # "AAL2-G726-xx" names of RFC 3551 §4.5.4 / ITU-T I.366.2 Annex E pack from the most
        # significant bit (FFmpeg's adpcm_g726).
        dec = "adpcm_g726" if name.startswith("AAL2-") else "adpcm_g726le"
        return AudioFormat(name, 8000, 8000, decoder=dec, params={**params, "kbit": kbit})
    if name in ("G729", "G729A", "G729D", "G729E"):
        if name in ("G729D", "G729E"):
            raise UnsupportedCodecError(f"{what}: G.729 Annex D/E is not supported")
        return AudioFormat(name, 8000, 8000, decoder="g729", plc=True, params=params)
    if name in ("G723", "G7231"):
        return AudioFormat("G723", 8000, 8000, decoder="g723_1", params=params)
    if name == "GSM":
        return AudioFormat(name, 8000, 8000, decoder="gsm", params=params)
    if name == "ILBC":
        return AudioFormat(name, 8000, 8000, decoder="ilbc", params=params)
    if name == "L16":
        if rate <= 0:
            raise UnsupportedCodecError(f"{what}: L16 needs its clock rate from SDP (RFC 3551 §4.5.11)")
        return AudioFormat(name, rate, rate, channels=max(int(channels or 1), 1), band="wb" if rate >= 16000 else "nb",
                           params=params)
    if name == "OPUS":
        # RFC 7587 §4.1: the clock rate is 48000 whatever the bandwidth.
        return AudioFormat(name, _OPUS_RATE, _OPUS_RATE, decoder="libopus", plc=True, params=params)
    if name == "SPEEX":
        if rate not in _SPEEX_RATES:
            raise UnsupportedCodecError(f"{what}: Speex runs at 8000, 16000 or 32000 Hz (RFC 5574 §6)")
        return AudioFormat(name, rate, rate, decoder="speex", band="wb" if rate >= 16000 else "nb", params=params)
    if name in ("AMR", "AMR-WB"):
        wb = name == "AMR-WB"
        if int(channels or 1) != 1:
            raise UnsupportedCodecError(f"{what}: multi-channel AMR (RFC 4867 §4.1) is not supported")
        pf._check_amr_params(params, codec=name)
        return AudioFormat(name, 16000 if wb else 8000, 16000 if wb else 8000,
                           decoder="libopencore_amrwb" if wb else "libopencore_amrnb",
                           band="wb" if wb else "nb", plc=True, params=params)
    raise UnsupportedCodecError(
        f"{what} cannot be decoded; qoe decodes " + ", ".join(_DECODABLE)
    )


def _stream_format(stream: RtpStream) -> AudioFormat:
    """:func:`audio_format` of an :class:`~qoe.rtp.RtpStream` (its codec, clock rate, channels, fmtp).

    The static L16 payload types carry their channel count in RFC 3551 Table 4 (10: two, 11:
    one), which no SDP restates (FFmpeg's RTP muxer announces ``m=audio ... 10`` without
    ``a=rtpmap``): for them the table's count is used. A dynamic payload type that no SDP
    names is recognised from its payloads (:func:`qoe.voice.identify.identify_stream`: AMR,
    AMR-WB, Opus), or the :class:`~qoe.errors.UnsupportedCodecError` says what to pass.
    """
    found = identify_stream(stream)  # a dynamic payload type without SDP: from its payloads, or an error
    if found is not None:
        stream = _with_codec(stream, found)
    channels = getattr(stream, "channels", 1) or 1
    if (stream.codec or "").upper() == "L16" and stream.payload_type in _L16_STATIC_CHANNELS:
        channels = _L16_STATIC_CHANNELS[stream.payload_type]
    return audio_format(stream.codec, stream.clock_rate, payload_type=stream.payload_type,
                        channels=channels, fmtp=getattr(stream, "fmtp", None))


def stream_band(stream: RtpStream) -> Band:
    """The audio bandwidth of ``stream`` without decoding it: ``"wb"`` or ``"nb"``.

    The format's (:attr:`AudioFormat.band`: G.722, AMR-WB, 16 kHz L16 and Speex are
    wide-band), and for Opus the bandwidth most of its packets' TOC bytes announce (RFC 6716
    §3.1), as :func:`decode_packets` settles it. A stream qoe cannot decode counts as
    narrow-band.
    """
    try:
        fmt = _stream_format(stream)
    except QoEError:
        return "nb"
    if fmt.codec == "OPUS":
        return _opus_band([pf._opus_bandwidth(bytes(p)) or "" for p in stream.packets.payloads], fmt.band)
    return fmt.band


def _opus_band(bands: Sequence[str], default: Band) -> Band:
    """RFC 6716 §3.1: the bandwidth of the most packets (wide-band: WB, SWB or FB)."""
    if not bands:
        return default
    wide = sum(b in ("WB", "SWB", "FB") for b in bands)
    return "wb" if wide * 2 >= len(bands) else "nb"


# --------------------------------------------------------------------------- the decoders


class _Decoder:
    """One FFmpeg decoder, fed frame by frame; output as int16, shape (n, channels)."""

    def __init__(self, fmt: AudioFormat) -> None:
        import av  # noqa: PLC0415 - PyAV only for codecs other than G.711 and L16

        self.fmt = fmt
        self._av = av
        ctx = av.CodecContext.create(fmt.decoder, "r")
        ctx.sample_rate = fmt.sample_rate
        ctx.layout = "mono"
        if fmt.decoder in ("adpcm_g726", "adpcm_g726le"):
            # RFC 3551 §4.5.4: G726-xx codes are xx/8 bits per 8 kHz sample (FFmpeg's decoder
            # reads the code size from bits_per_coded_sample)
            ctx.options = {"bits_per_coded_sample": str(int(fmt.params["kbit"]) // 8)}
        if fmt.decoder == "ilbc":
            # RFC 3952 §5: 20 ms frames of 38 octets or 30 ms frames of 50 (FFmpeg's decoder
            # reads the mode from block_align)
            ctx.options = {"block_align": "50" if fmt.params.get("mode") == "30" else "38"}
        self.ctx = ctx

    def decode(self, frame: bytes) -> np.ndarray:
        try:
            frames = self.ctx.decode(self._av.Packet(frame))
        except self._av.FFmpegError:  # a corrupt frame: the decoder skips it
            return np.zeros((0, 1), dtype=np.int16)
        chunks = [self._int16(f) for f in frames]
        return np.concatenate(chunks) if chunks else np.zeros((0, 1), dtype=np.int16)

    @staticmethod
    def _int16(frame: Any) -> np.ndarray:
        x = frame.to_ndarray()
        planar = frame.format.is_planar
        x = x.T if planar else x.reshape(-1, len(frame.layout.channels))
        if x.dtype.kind == "f":
            return np.clip(np.rint(x * 32768.0), -32768, 32767).astype(np.int16)  # full scale 1.0 = 32768
        if x.dtype == np.int32:
            return (x >> 16).astype(np.int16)
        return x.astype(np.int16)


def _frames(fmt: AudioFormat, payload: bytes) -> list[bytes]:
    """The decoder frames of one payload (see :mod:`qoe.voice.payload`)."""
    c = fmt.codec
    if c in ("G722",) or c.startswith(("G726", "AAL2")) or c in ("OPUS", "SPEEX"):
        return [payload]  # a sample stream (G.722, G.726) or one decoder packet (Opus, Speex)
    if c in ("G729", "G729A"):
        return pf._g729_frames(payload)[0]
    if c == "G723":
        return pf.g723_frames(payload)
    if c == "GSM":
        return pf._fixed_frames(payload, _GSM_FRAME, codec=c)
    if c == "ILBC":
        mode = fmt.params.get("mode")
        return pf._fixed_frames(payload, pf._ilbc_frame_bytes(len(payload), int(mode) if mode else None), codec=c)
    if c in ("AMR", "AMR-WB"):
        return pf.amr_frames(payload, wideband=c == "AMR-WB", octet_aligned=fmt.params.get("octet-align") == "1")
    raise UnsupportedCodecError(f"{c}: no payload format")  # pragma: no cover - audio_format refuses first


def _lost_frames(fmt: AudioFormat, previous: bytes, frames: int) -> list[bytes]:
    """The decoder's own "frame lost" input for ``frames`` lost packets like ``previous``."""
    if fmt.codec == "OPUS":
        return [pf._opus_lost(previous)] * frames
    per = max(len(_frames(fmt, previous)), 1)
    if fmt.codec in ("AMR", "AMR-WB"):
        return [pf._amr_no_data()] * (per * frames)
    if fmt.codec in ("G729", "G729A"):
        return [bytes(10)] * (per * frames)  # G.729 §4.4 / FFmpeg: an all-zero frame is an erasure
    return []


def _l16(fmt: AudioFormat, payload: bytes) -> np.ndarray:
    """RFC 3551 §4.5.11: L16 samples are 16-bit signed, network byte order, channels interleaved."""
    ch = fmt.channels
    usable = len(payload) // (2 * ch) * 2 * ch
    return np.frombuffer(payload[:usable], dtype=">i2").astype(np.int16).reshape(-1, ch)


# --------------------------------------------------------------------------- the timeline


def decode_packets(
    ts_ext: np.ndarray,
    seq_ext: np.ndarray,
    payloads: Sequence[bytes],
    fmt: AudioFormat,
    *,
    played: np.ndarray | None = None,
    conceal: Conceal = "silence",
    fade_ms: float = 60.0,
    playout: PlayoutResult | None = None,
) -> ReceivedAudio:
    """Decode one stream's payloads in RTP order and place them on the RTP timeline.

    Parameters
    ----------
    ts_ext, seq_ext : numpy.ndarray of int64
        Unwrapped RTP timestamp and sequence number of each received packet.
    payloads : sequence of bytes
        The RTP payload of each packet.
    fmt : AudioFormat
        From :func:`audio_format`.
    played : numpy.ndarray of bool, optional, keyword-only
        Packets to decode (e.g. ``PlayoutResult.played``); default: all. The others are
        lost to the decoder.
    conceal : {"silence", "repeat"}, keyword-only
        How gaps the decoder does not conceal itself are filled (see
        :mod:`qoe.voice.timeline`).
    fade_ms : float, keyword-only
        Fade of repetition concealment.
    playout : PlayoutResult, optional, keyword-only
        Kept in the result.

    Returns
    -------
    ReceivedAudio
        ``samples`` int16, 1-D for mono and ``(n, channels)`` for multi-channel L16;
        ``concealed`` marks samples not decoded from a played packet (also those the
        decoder concealed); ``band`` the audio bandwidth; ``notes`` what was done about
        loss and silence.

    Raises
    ------
    InputError
        Mismatched lengths, no packet to play, an unknown concealment.
    """
    ts, seq, use = _checked_packets(ts_ext, seq_ext, payloads, played, conceal)
    if fmt.codec in ("PCMA", "PCMU"):
        return rebuild_audio(ts, list(payloads), law=fmt.codec, played=use, conceal=conceal, fade_ms=fade_ms,
                             sample_rate=fmt.sample_rate, playout=playout)
    t0 = int(ts.min())
    order = _rtp_order(ts, seq, use)
    fmt = _settled_format(fmt, payloads, order)
    run = _DecodeRun(fmt, t0)
    for i in order.tolist():
        run.packet(int(ts[i]), int(seq[i]), bytes(payloads[i]))
    if not run.pieces:
        raise InputError("decode_packets: no played packet decoded to any audio")
    out, covered, filled = _placed(run.pieces)
    notes = run.notes(covered, conceal)
    if conceal == "repeat":
        _repeat_gaps(out, ~filled, run.pieces, round(fade_ms * fmt.sample_rate / 1000.0))
    band = _opus_band(run.bands, fmt.band) if fmt.codec == "OPUS" else fmt.band
    return ReceivedAudio(
        samples=out[:, 0] if out.shape[1] == 1 else out,
        sample_rate=fmt.sample_rate,
        ts_first=t0,
        concealed=~covered,
        conceal=conceal,
        codec=fmt.codec,
        playout=playout,
        clock_rate=fmt.clock_rate,
        band=band,
        notes=tuple(notes),
    )


def _checked_packets(
    ts_ext: np.ndarray, seq_ext: np.ndarray, payloads: Sequence[bytes], played: np.ndarray | None, conceal: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Step 1: the timestamps, sequence numbers and played mask as arrays, checked (InputError)."""
    ts = np.asarray(ts_ext, dtype=np.int64)
    seq = np.asarray(seq_ext, dtype=np.int64)
    n = ts.shape[0]
    if n == 0 or len(payloads) != n or seq.shape != ts.shape:
        raise InputError(f"decode_packets: need one timestamp, sequence number and payload per packet; given "
                         f"{n}, {seq.shape[0]} and {len(payloads)}")
    if conceal not in ("silence", "repeat"):
        raise InputError(f"conceal must be 'silence' or 'repeat', given conceal={conceal!r}")
    use = np.ones(n, dtype=bool) if played is None else np.asarray(played, dtype=bool)
    if use.shape != (n,):
        raise InputError(f"decode_packets: played has shape {use.shape}, expected ({n},)")
    return ts, seq, use


def _rtp_order(ts: np.ndarray, seq: np.ndarray, use: np.ndarray) -> np.ndarray:
    """Step 2: the played packets' indices in RTP order (timestamp, then sequence number)."""
    order = np.flatnonzero(use)
    return order[np.lexsort((seq[order], ts[order]))]


def _settled_format(fmt: AudioFormat, payloads: Sequence[bytes], order: np.ndarray) -> AudioFormat:
    """Step 3: what the payloads settle that the SDP may not have (the iLBC mode)."""
    if fmt.codec == "ILBC" and order.size:
        # RFC 3952 §5: the SDP's mode, else the frame size the payloads show (30 ms when both fit)
        given = fmt.params.get("mode")
        size = pf._ilbc_frame_bytes(len(payloads[order[0]]), int(given) if given else None)
        fmt = dataclasses.replace(fmt, params={**fmt.params, "mode": "20" if size == 38 else "30"})
    return fmt


class _DecodeRun:
    """Step 4: packets decoded one by one in RTP order, each piece at its place on the timeline.

    ``pieces`` holds (first output sample, int16 samples (n, channels), decoded from a
    played packet: True; the decoder's concealment of lost packets: False).
    """

    def __init__(self, fmt: AudioFormat, t0: int) -> None:
        self.fmt = fmt
        self.t0 = t0
        self.ratio = fmt.ratio
        self.decoder = _Decoder(fmt) if fmt.decoder else None
        self.pieces: list[tuple[int, np.ndarray, bool]] = []
        self.bands: list[str] = []
        self.sid = 0  # G.729 Annex B SID frames
        self.concealed_by_decoder = 0  # samples
        self.prev_seq: int | None = None
        self.prev_pay: bytes | None = None
        self.expected: int | None = None  # RTP time right after the last decoded packet

    def packet(self, t: int, seq: int, pay: bytes) -> None:
        """Decode one played packet (RTP time ``t``), after concealing the packets lost before it."""
        if self.prev_seq is not None and seq == self.prev_seq:
            return  # a duplicate
        if self.decoder is not None and self.fmt.plc and self.prev_pay is not None and self.expected is not None:
            self._conceal_lost(t, seq - self.prev_seq - 1)  # type: ignore[operator]
        x = self._decoded(pay)
        if x.shape[0]:
            self.pieces.append((round((t - self.t0) * self.ratio), x, True))
        self.expected = t + round(x.shape[0] / self.ratio)
        self.prev_seq, self.prev_pay = seq, pay

    def _conceal_lost(self, t: int, missing: int) -> None:
        """The decoder's own concealment of ``missing`` lost packets, up to RTP time ``t``."""
        if missing <= 0 or t <= self.expected:  # type: ignore[operator]
            return
        pos = self.expected
        for fr in _lost_frames(self.fmt, self.prev_pay, missing):  # type: ignore[arg-type]
            x = self.decoder.decode(fr)  # type: ignore[union-attr]
            if x.shape[0] == 0 or pos >= t:  # type: ignore[operator]
                continue
            self.pieces.append((round((pos - self.t0) * self.ratio), x, False))  # type: ignore[operator]
            pos += round(x.shape[0] / self.ratio)  # type: ignore[operator]
            self.concealed_by_decoder += x.shape[0]

    def _decoded(self, pay: bytes) -> np.ndarray:
        """The samples of one payload, (n, channels) int16; a malformed payload decodes to none."""
        fmt = self.fmt
        if fmt.codec == "L16":
            return _l16(fmt, pay)
        if fmt.codec in ("G729", "G729A") and pf._g729_frames(pay)[1]:
            self.sid += 1
        if fmt.codec == "OPUS":
            self.bands.append(pf._opus_bandwidth(pay) or "")
        try:
            frames = _frames(fmt, pay)
        except InputError:
            frames = []  # a malformed payload: lost to the decoder
        chunks = [self.decoder.decode(fr) for fr in frames]  # type: ignore[union-attr]
        chunks = [c for c in chunks if c.shape[0]]
        return np.concatenate(chunks) if chunks else np.zeros((0, fmt.channels), dtype=np.int16)

    def notes(self, covered: np.ndarray, conceal: str) -> list[str]:
        """What was done about loss and silence, for the result's notes."""
        fmt, notes = self.fmt, []
        if fmt.plc and self.concealed_by_decoder:
            notes.append(f"{fmt.codec}: lost packets concealed by the decoder ({self.concealed_by_decoder} samples)")
        elif not fmt.plc and not covered.all():
            notes.append(f"{fmt.codec}: the decoder has no loss concealment; gaps filled by {conceal}")
        if self.sid:
            notes.append(f"G.729: {self.sid} Annex B SID frame(s): no comfort noise generated (silence)")
        return notes


def _placed(pieces: Sequence[tuple[int, np.ndarray, bool]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Step 5: the pieces laid on one (n, channels) timeline; which samples a played packet
    covered, and which any piece (played or concealed by the decoder) filled."""
    total = max(p0 + x.shape[0] for p0, x, _ in pieces)
    ch = pieces[0][1].shape[1]
    out = np.zeros((total, ch), dtype=np.int16)
    covered = np.zeros(total, dtype=bool)
    filled = np.zeros(total, dtype=bool)
    for p0, x, real in pieces:
        if p0 < 0:
            x, p0 = x[-p0:], 0
        if real:
            out[p0:p0 + x.shape[0]] = x
            covered[p0:p0 + x.shape[0]] = True
        else:  # concealment output: never over a played packet's samples
            span = ~covered[p0:p0 + x.shape[0]]
            out[p0:p0 + x.shape[0]][span] = x[span]
        filled[p0:p0 + x.shape[0]] = True
    return out, covered, filled


def _repeat_gaps(out: np.ndarray, gaps: np.ndarray, pieces: Sequence[tuple[int, np.ndarray, bool]], fade: int) -> None:
    """Step 6 (``conceal="repeat"``): each channel's unfilled gaps by repetition of the median packet."""
    if not gaps.any():
        return
    frame = int(np.median([x.shape[0] for _, x, r in pieces if r]))
    for c in range(out.shape[1]):
        col = out[:, c].copy()
        _repeat_conceal(col, gaps, frame, fade)
        out[:, c] = col


def decode_stream(
    stream: RtpStream,
    *,
    played: np.ndarray | None = None,
    conceal: Conceal = "silence",
    fade_ms: float = 60.0,
    playout: PlayoutResult | None = None,
) -> ReceivedAudio:
    """:func:`decode_packets` on a stream's packets of its main payload type.

    Raises
    ------
    UnsupportedCodecError
        The stream's codec is not decodable (the message names it).
    InputError
        No packet table or payloads.
    """
    fmt = _stream_format(stream)
    p = stream.packets
    if p is None or len(p) == 0 or not p.payloads:
        raise InputError(f"stream {stream.key}: no packet payloads kept, cannot rebuild its audio")
    main = p.payload_type == stream.payload_type
    use = main if played is None else (np.asarray(played, dtype=bool) & main)
    return decode_packets(p.ts_ext, p.seq_ext, p.payloads, fmt, played=use, conceal=conceal, fade_ms=fade_ms,
                          playout=playout)


# --------------------------------------------------------------------------- for P.862

#: P.862 (02/2001) and P.862.2 (11/2007) score 8 kHz (narrow-band) and 16 kHz (wide-band) speech.
_PESQ_RATES: Mapping[str, int] = {"nb": 8000, "wb": 16000}


def pesq_audio(audio: ReceivedAudio) -> ReceivedAudio:
    """The audio as P.862 scores it: mono, at 8 kHz for narrow-band, 16 kHz for wide-band codecs.

    Multi-channel audio is averaged to mono; other rates are resampled by
    :func:`scipy.signal.resample_poly` (polyphase, by the reduced ratio). The
    ``concealed`` mask follows by nearest sample; ``clock_rate`` keeps the RTP clock, so
    that positions on the RTP timeline still convert to samples.

    References
    ----------
    .. [1] ITU-T P.862 (02/2001) clause 1 and P.862.2 (11/2007) clause 1: narrow-band speech
       at 8 kHz; wide-band speech (50-7000 Hz) at 16 kHz.
    """
    fs = _PESQ_RATES["wb" if audio.band == "wb" else "nb"]
    x = audio.samples
    if x.ndim == 2:
        x = np.rint(x.astype(np.float64).mean(axis=1)).astype(np.int16)
    concealed = audio.concealed
    if audio.sample_rate != fs:
        import scipy.signal  # noqa: PLC0415 - SciPy's signal module (~0.3 s to import), only to resample

        g = gcd(fs, audio.sample_rate)
        up, down = fs // g, audio.sample_rate // g
        y = scipy.signal.resample_poly(x.astype(np.float64), up, down)
        x = np.clip(np.rint(y), -32768, 32767).astype(np.int16)
        idx = np.minimum((np.arange(x.shape[0]) * down) // up, concealed.shape[0] - 1)
        concealed = concealed[idx]
    if x is audio.samples:
        return audio
    return dataclasses.replace(audio, samples=x, sample_rate=fs, concealed=concealed,
                               clock_rate=audio.clock_rate or audio.sample_rate)
