"""The audio a receiver played: a jitter buffer over an RTP stream, then its decoded audio.

:func:`playout_stream` runs a jitter buffer (:mod:`qoe.rtp.jitterbuffer`) over a stream,
with talkspurts from the marker bits, timestamp jumps and, for G.711, packets whose decoded
level is silence (:func:`silent_packets`); :func:`extract_audio` decodes the packets it
played (:mod:`qoe.voice.decode`) onto the RTP timeline (:mod:`qoe.voice.timeline`), with
lost and late packets concealed. :class:`~qoe.voice.timeline.ReceivedAudio` and
:func:`~qoe.voice.timeline.rebuild_audio` are importable from here too.

References
----------
.. [1] ITU-T G.711 (11/1988); see :mod:`qoe.voice.g711`.
.. [2] ITU-T G.100.1 (06/2015): the dBov level scale (0 dBov = a full-scale square wave).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import TYPE_CHECKING

import numpy as np

from qoe.errors import EncryptedStreamError, InputError, UnsupportedCodecError
from qoe.rtp.jitterbuffer import JitterBuffer, PlayoutResult, simulate
from qoe.voice import g711
from qoe.voice.decode import decode_stream, _stream_format
from qoe.voice.identify import identify_stream, parse_codec_spec, _with_codec
from qoe.voice.timeline import FADE_MS as _FADE_MS
from qoe.voice.timeline import Conceal, ReceivedAudio, _payload_arrays, rebuild_audio

if TYPE_CHECKING:  # pragma: no cover
    from qoe.rtp import RtpStream

__all__ = [
    "ReceivedAudio",
    "rebuild_audio",
    "silent_packets",
    "playout_stream",
    "extract_audio",
]

# A packet whose decoded level is below -60 dBov carries silence (G.711 idle codes decode
# to |x| <= 8 = -72 dBov). 0 dBov = a full-scale square wave, RMS 32768 (ITU-T G.100.1).
_SILENCE_DBOV = -60.0


def silent_packets(
    payloads: tuple[bytes, ...] | list[bytes], law: str, *, threshold_dbov: float = _SILENCE_DBOV
) -> np.ndarray:
    """Which G.711 payloads carry silence (RMS level below ``threshold_dbov``).

    Parameters
    ----------
    payloads : sequence of bytes
        G.711 payloads.
    law : {"PCMA", "PCMU"}
        The G.711 law.
    threshold_dbov : float, keyword-only
        Level (dB relative to full scale, RMS 32768) under which a packet is silent.

    Returns
    -------
    numpy.ndarray of bool
        One flag per payload; empty payloads are silent.
    """
    codes, lengths = _payload_arrays(payloads)
    out = np.ones(lengths.shape[0], dtype=bool)
    if codes.size == 0:
        return out
    x = g711.decode(codes, law, dtype="float64")  # type: ignore[arg-type]
    nz = lengths > 0
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[nz]
    energy = np.add.reduceat(x * x, starts)
    mean_sq = energy / lengths[nz]
    # dBov of RMS: 10 log10(mean square), full scale 1.0.
    with np.errstate(divide="ignore"):
        level = 10.0 * np.log10(mean_sq)
    out[nz] = level < threshold_dbov
    return out


def _encrypted(stream: RtpStream) -> bool:
    """Whether the stream's payloads are still SRTP ciphertext (RFC 3711)."""
    return stream.srtp is not None and not stream.srtp.decrypted


def _main_payload_mask(stream: RtpStream) -> np.ndarray:
    return stream.packets.payload_type == stream.payload_type  # type: ignore[union-attr]


_UNSET = object()


def playout_stream(
    stream: RtpStream,
    *,
    jitter_buffer: JitterBuffer | str | None = "adaptive",
    silence_dbov: float = _SILENCE_DBOV,
    buffer: JitterBuffer | str | None | object = _UNSET,
) -> PlayoutResult:
    """Run a jitter buffer over an :class:`~qoe.rtp.RtpStream`.

    Talkspurts for the adaptive buffer come from the marker bits, timestamp jumps and,
    for G.711 streams, packets whose decoded level is below ``silence_dbov``. When the
    capture's snapshot length cut the payloads (``RtpPackets.cut_payloads``), the level is the one of
    the bytes captured (the packet's first milliseconds): on the client captures of
    data/voice/captures cut at 70 bytes (16 payload bytes, 2 ms), the late losses equal the whole
    capture's on 10 of 11 (both-b64: 5 instead of 8); talkspurts from markers and timestamps
    alone, as for other codecs, gave 85 late packets and MOS 1.19 instead of 0 and 4.37 on
    down-b256.

    Parameters
    ----------
    stream : RtpStream
        An audio stream with its packet table.
    jitter_buffer : str or buffer, keyword-only
        ``"adaptive"`` (default), ``"fixed:<ms>"``, ``"none"`` or a buffer object (see
        :func:`qoe.rtp.jitterbuffer.parse_jitter_buffer`), as :func:`extract_audio` and
        :class:`~qoe.voice.call.CallOptions` name it.
    silence_dbov : float, keyword-only
        Level under which a G.711 packet is silence.
    buffer : deprecated
        The old name of ``jitter_buffer`` (issue 21: one name per concept); works for one
        release with a :class:`DeprecationWarning`.
    """
    if buffer is not _UNSET:
        if jitter_buffer != "adaptive":
            raise InputError("ambiguous jitter buffer: both jitter_buffer and its deprecated spelling buffer given")
        warnings.warn("playout_stream(buffer=) is now playout_stream(jitter_buffer=); the old name goes in the "
                      "next release", DeprecationWarning, stacklevel=2)
        jitter_buffer = buffer  # type: ignore[assignment]
    if stream.packets is None or len(stream.packets) == 0:
        raise InputError(f"stream {stream.key}: no packet table (scan the capture keeping packets)")
    if not stream.clock_rate:
        raise InputError(f"stream {stream.key}: unknown RTP clock rate (payload type {stream.payload_type})")
    p = stream.packets
    silent = None
    if p.payloads and not _encrypted(stream):  # SRTP payloads are noise: no silence test
        try:
            law = g711.g711_codec(stream.payload_type, stream.codec)
        except UnsupportedCodecError:  # not G.711: talkspurts from markers and timestamps only
            law = None
        if law is not None:
            silent = silent_packets(p.payloads, law, threshold_dbov=silence_dbov)
            silent &= _main_payload_mask(stream)  # other payload types: not silence-tested
    return simulate(
        p.arrival_ns,
        p.seq_ext,
        p.ts_ext,
        clock_rate=int(stream.clock_rate),
        jitter_buffer=jitter_buffer,
        marker=p.marker,
        silent=silent,
    )


def extract_audio(
    stream: RtpStream,
    *,
    jitter_buffer: JitterBuffer | str | None = "adaptive",
    conceal: Conceal = "silence",
    fade_ms: float = _FADE_MS,
    codec: str | None = None,
) -> ReceivedAudio:
    """The audio a receiver with the given jitter buffer would have played.

    Parameters
    ----------
    stream : RtpStream
        An audio stream with its packet table and payloads, of a codec
        :mod:`qoe.voice.decode` decodes (G.711 by the own tables).
    jitter_buffer : str or buffer, keyword-only
        ``"adaptive"`` (default), ``"fixed:<ms>"`` or ``"none"`` (see
        :func:`qoe.rtp.jitterbuffer.parse_jitter_buffer`).
    conceal : {"silence", "repeat"}, keyword-only
        Concealment of lost and late packets the decoder does not conceal itself.
    fade_ms : float, keyword-only
        Fade of repetition concealment.
    codec : str, optional, keyword-only
        The stream's codec as an SDP names it (``"AMR/8000 octet-align=1"``,
        :func:`qoe.voice.identify.parse_codec_spec`), for a dynamic payload type the
        capture holds no SDP for and whose payloads do not say it. Default: the SDP's, else
        recognised from the payloads (:mod:`qoe.voice.identify`; the evidence is a note of
        the result).

    Raises
    ------
    EncryptedStreamError
        The stream is SRTP and its payloads were not decrypted
        (:func:`qoe.rtp.decrypt.decrypt_streams`).
    UnsupportedCodecError
        The codec is not decodable (the message names the payload type).
    InputError
        The stream has no packet table or payloads, or the capture's snapshot length cut its
        payloads (``RtpPackets.cut_payloads``: what is left is not the audio sent).
    """
    cut = stream.packets.cut_payloads() if stream.packets is not None else 0
    if cut:
        n = len(stream.packets)  # type: ignore[arg-type]
        raise InputError(f"stream {stream.key}: the capture's snapshot length cut {cut} of its {n} payloads: its "
                         "audio cannot be rebuilt (capture whole packets, tcpdump -s 0)")
    if _encrypted(stream):
        raise EncryptedStreamError(
            f"stream {stream.key} is SRTP-encrypted (found by {stream.srtp.found_by}) and not decrypted: "  # type: ignore[union-attr]
            f"decrypt it first (qoe.rtp.decrypt.decrypt_streams, with the capture's SDES key or srtp_keys=)"
        )
    found = parse_codec_spec(codec) if codec is not None else identify_stream(stream)
    if found is not None:
        stream = _with_codec(stream, found)
    _stream_format(stream)  # refuse an undecodable codec before playing out
    p = stream.packets
    if p is None or len(p) == 0 or not p.payloads:
        raise InputError(f"stream {stream.key}: no packet payloads kept, cannot rebuild its audio")
    playout = playout_stream(stream, jitter_buffer=jitter_buffer)
    audio = decode_stream(stream, played=playout.played, conceal=conceal, fade_ms=fade_ms, playout=playout)
    if found is not None:
        audio = dataclasses.replace(audio, notes=(found.evidence, *audio.notes))
    return audio
