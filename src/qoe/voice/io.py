"""File-level voice operations: captures in, WAV files and per-stream delay records out.

The pure functions (:mod:`qoe.voice.g711`, :mod:`qoe.rtp.jitterbuffer`,
:mod:`qoe.rtp.delay`, :mod:`qoe.voice.playout`) work on arrays and stream tables; this
module is where files are read (through :func:`qoe.rtp.find_streams`) and written
(WAV through soundfile).
"""

from __future__ import annotations

import operator
import os
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import soundfile

from qoe.capture import capture_path
from qoe.errors import InputError, StreamNotFoundError
from qoe.outputs import atomic_output
from qoe.rtp import find_streams
from qoe.rtp.delay import Clocks, OneWayDelay, delays_between
from qoe.rtp.jitterbuffer import JitterBuffer, PlayoutResult
from qoe.rtp.decrypt import decrypt_streams
from qoe.rtp.srtp import SrtpInfo
from qoe.voice.playout import Conceal, ReceivedAudio, extract_audio, playout_stream

if TYPE_CHECKING:  # pragma: no cover
    from qoe.rtp import RtpStream

__all__ = ["write_wav", "select_stream", "extract_wav", "capture_delays", "parse_ssrc"]


def write_wav(audio: ReceivedAudio, path: str | os.PathLike[str], *,
              inputs: Iterable[str | os.PathLike[str] | None] = ()) -> None:
    """Write rebuilt audio as a 16-bit PCM WAV file at its sample rate (mono, or L16's channels).

    Written atomically (:func:`qoe.outputs.atomic_output`); a ``path`` that is one of
    ``inputs`` is refused with :class:`~qoe.errors.InputError`.
    """
    with atomic_output(path, inputs=inputs) as tmp:
        soundfile.write(os.fspath(tmp), audio.samples, audio.sample_rate, subtype="PCM_16", format="WAV")


def parse_ssrc(text: str | int | None) -> int | None:
    """``"0x7a1c0003"``, ``"2048655363"`` or an int -> the SSRC as an int (None stays None)."""
    if text is None:
        return None
    if isinstance(text, str):
        try:
            value = int(text.strip(), 0)
        except ValueError:
            raise InputError(f"SSRC {text!r} is not a number (write it as 0x7a1c0003 or in decimal)") from None
    elif isinstance(text, bool) or not hasattr(type(text), "__index__"):  # an integer of any kind, NumPy's too
        raise InputError(f"SSRC must be an integer or its text (0x7a1c0003 or decimal); given {type(text).__name__}")
    else:
        value = operator.index(text)
    if not 0 <= value < 1 << 32:
        raise InputError(f"SSRC {text!r} is outside 0..0xffffffff (RFC 3550 §5.1: 32 bits)")
    return value


def _describe(streams: Sequence[RtpStream]) -> str:
    return ", ".join(f"0x{s.ssrc:08x} ({s.key.src}:{s.key.sport} -> {s.key.dst}:{s.key.dport}, "
                     f"{s.codec or 'PT ' + str(s.payload_type)})" for s in streams)


def select_stream(streams: Sequence[RtpStream], ssrc: int | None, *, source: str = "the capture") -> RtpStream:
    """The stream with this SSRC; without one, the only stream there is.

    Raises
    ------
    StreamNotFoundError
        No stream, an unknown SSRC, or several streams and no SSRC; the message lists
        the SSRCs present.
    """
    if not streams:
        raise StreamNotFoundError(f"{source}: no RTP stream found")
    if ssrc is None:
        if len(streams) == 1:
            return streams[0]
        raise StreamNotFoundError(
            f"{source} holds {len(streams)} RTP streams; choose one by its SSRC: {_describe(streams)}"
        )
    hits = [s for s in streams if s.ssrc == ssrc]
    if not hits:
        raise StreamNotFoundError(f"{source}: no RTP stream with SSRC 0x{ssrc:08x}; present: {_describe(streams)}")
    return max(hits, key=lambda s: s.stats.packets)


def extract_wav(
    capture: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    ssrc: int | str | None = None,
    jitter_buffer: JitterBuffer | str | None = "adaptive",
    conceal: Conceal = "silence",
    srtp_keys: Sequence[str] | str = (),
    codec: str | None = None,
) -> dict[str, Any]:
    """Rebuild the audio of one voice stream of a capture (any codec of :mod:`qoe.voice.decode`) and write it as WAV.

    An SRTP stream (:attr:`qoe.rtp.RtpStream.srtp`) is decrypted first
    (:func:`qoe.rtp.decrypt.decrypt_streams`) with its sender's SDES key from the capture's SDP,
    else with ``srtp_keys``; without a key that authenticates it, nothing is written.

    Parameters
    ----------
    capture : path
        pcap or pcapng file.
    output : path
        WAV file to write (16-bit PCM at the decoder's rate: 8000 Hz for G.711, 16000 Hz
        for G.722, 48000 Hz for Opus, ...; L16's channels).
    ssrc : int or str, optional, keyword-only
        The stream; needed when the capture holds several.
    jitter_buffer : str or buffer, keyword-only
        ``"adaptive"``, ``"fixed:<ms>"`` or ``"none"``.
    conceal : {"silence", "repeat"}, keyword-only
        Concealment of lost and late packets.
    srtp_keys : str or sequence of str, keyword-only
        SRTP keys as ``SUITE:BASE64`` (:func:`qoe.rtp.srtp.parse_srtp_key`), tried after the
        key of the capture's SDP; also tried on a stream not recognised as SRTP.
    codec : str, optional, keyword-only
        The codec of a dynamic payload type the capture has no SDP for, as an SDP names it
        (``"AMR/8000 octet-align=1"``); default: recognised from the payloads
        (:mod:`qoe.voice.identify`).

    Returns
    -------
    dict
        The stream, the output file, the playout summary (loss, late, delays) and, for an
        SRTP stream, how it was decrypted (``srtp``, ``srtp_suite``, ``srtp_key_source``,
        ``srtp_auth_failures``: packets that failed authentication and count as lost).

    Raises
    ------
    EncryptedStreamError
        The stream is SRTP and no key decrypts it (the message says what to pass).
    StreamNotFoundError, UnsupportedCodecError, CaptureError, InputError
    """
    name = capture_path(capture)
    keys = [srtp_keys] if isinstance(srtp_keys, str) else list(srtp_keys)
    stream = select_stream(find_streams(name), parse_ssrc(ssrc), source=name)
    (stream,) = decrypt_streams(name, [stream], keys=keys)
    audio = extract_audio(stream, jitter_buffer=jitter_buffer, conceal=conceal, codec=codec)
    write_wav(audio, output, inputs=[name])
    k = stream.key
    srtp = SrtpInfo.record(stream.srtp)
    return {
        "capture": name,
        "ssrc": f"0x{k.ssrc:08x}",
        "src": f"{k.src}:{k.sport}",
        "dst": f"{k.dst}:{k.dport}",
        "output": os.fspath(output),
        **audio.to_dict(),
        **{key: srtp[key] for key in ("srtp", "srtp_suite", "srtp_key_source", "srtp_auth_failures")},
    }


def _voice_playout(stream: RtpStream, jitter_buffer: JitterBuffer | str | None) -> PlayoutResult:
    """The voice receiver: talkspurts also from silent G.711 payloads."""
    return playout_stream(stream, jitter_buffer=jitter_buffer)


_UNSET: Any = object()


def capture_delays(
    sender_capture: str | os.PathLike[str],
    receiver_capture: str | os.PathLike[str],
    *,
    clocks: Clocks = "auto",
    jitter_buffer: JitterBuffer | str | None = None,
    ssrc: int | str | None = None,
    buffer: JitterBuffer | str | None = _UNSET,
) -> list[OneWayDelay]:
    """One-way delay of every RTP stream present in both captures (matched by SSRC).

    Parameters
    ----------
    sender_capture, receiver_capture : path
        Captures taken at the sending and at the receiving end.
    clocks : {"auto", "same", "different"}, keyword-only
        See :func:`qoe.rtp.delay.one_way_delay`.
    jitter_buffer : str or buffer, optional, keyword-only
        Receiver jitter buffer whose late packets count as late loss.
    ssrc : int or str, optional, keyword-only
        Only this stream.
    buffer : deprecated
        The old name of ``jitter_buffer`` (issue 21); works for one release with a
        :class:`DeprecationWarning`.

    Raises
    ------
    StreamNotFoundError
        No stream is in both captures (or not the one asked for); the message lists the
        SSRCs of each capture.
    """
    if buffer is not _UNSET:
        if jitter_buffer is not None:
            raise InputError("ambiguous jitter buffer: both jitter_buffer and its deprecated spelling buffer given")
        warnings.warn("capture_delays(buffer=) is now capture_delays(jitter_buffer=); the old name goes in the "
                      "next release", DeprecationWarning, stacklevel=2)
        jitter_buffer = buffer
    s_name = capture_path(sender_capture, "sender_capture")
    r_name = capture_path(receiver_capture, "receiver_capture")
    sent, recv = find_streams(s_name), find_streams(r_name)
    want = parse_ssrc(ssrc)
    if want is not None:
        sent = [select_stream(sent, want, source=s_name)]
        recv = [select_stream(recv, want, source=r_name)]
    out = delays_between(sent, recv, clocks=clocks, jitter_buffer=jitter_buffer, playout=_voice_playout)
    if not out:
        raise StreamNotFoundError(
            f"no RTP stream (SSRC) is in both {s_name} [{_describe(sent) or 'none'}] and "
            f"{r_name} [{_describe(recv) or 'none'}]"
        )
    return out
