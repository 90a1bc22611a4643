"""The received audio on the RTP timeline: the result record, G.711 placement, concealment.

:class:`ReceivedAudio` is what :mod:`qoe.voice.decode` (every codec) and :func:`rebuild_audio`
(G.711, vectorised) return: samples placed at their RTP timestamps, with what no played
packet covered filled by *concealment*:

``"silence"``
    zeros.

``"repeat"``
    packet repetition: the last ``L`` samples before the gap (``L`` = the stream's
    packet length, i.e. the last good packet) are repeated for the length of the gap,
    under a gain that falls linearly from 1 at the start of the gap to 0 after
    ``fade_ms`` (60 ms by default), and silence after that, so that a long gap does
    not buzz. This is the classic receiver-based repetition scheme surveyed by Perkins
    et al. (1998), with a fade in the spirit of G.711 Appendix I (whose concealment is
    attenuated to silence after 60 ms of loss); it is *not* the Appendix I algorithm
    (no pitch search, no overlap-add).

:mod:`qoe.voice.playout` (which packets a receiver played) and :mod:`qoe.voice.decode`
(the decoders) both build on this module; it imports neither.

References
----------
.. [1] ITU-T G.711 (11/1988); see :mod:`qoe.voice.g711`.
.. [2] RFC 3551, §4.5.14 (PCMA/PCMU: 8000 Hz, one octet per sample), §4.1 (the RTP
   timestamp counts samples).
.. [3] C. Perkins, O. Hodson, V. Hardman, "A survey of packet loss recovery techniques
   for streaming audio", IEEE Network 12(5):40-48, 1998 (receiver-based repair by
   repetition).
.. [4] ITU-T G.711 Appendix I (09/1999), "A high quality low-complexity algorithm for
   packet loss concealment with G.711" (attenuation reaching silence after 60 ms).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from qoe.errors import InputError
from qoe.voice import g711

if TYPE_CHECKING:  # pragma: no cover
    from qoe.rtp.jitterbuffer import PlayoutResult

__all__ = ["ReceivedAudio", "rebuild_audio", "Conceal"]

Conceal = Literal["silence", "repeat"]

# Repetition fades to silence over 60 ms, as G.711 Appendix I (09/1999) mutes its
# concealment after 60 ms of consecutive loss.
FADE_MS = 60.0


@dataclass(frozen=True, slots=True)
class ReceivedAudio:
    """The audio rebuilt from one stream.

    Attributes
    ----------
    samples : numpy.ndarray of int16
        The signal at ``sample_rate``; ``samples[k]`` is RTP timestamp ``ts_first + k``
        (``ts_first + k * clock_rate / sample_rate`` when ``clock_rate`` is given). 1-D,
        or ``(n, channels)`` for multi-channel L16.
    sample_rate : int
        Hz (the RTP clock rate of G.711: 8000; the decoder's rate for other codecs).
    ts_first : int
        Extended RTP timestamp of the first sample.
    concealed : numpy.ndarray of bool
        Per sample: not from a played packet (filled by concealment).
    conceal : str
        ``"silence"`` or ``"repeat"``.
    codec : str
        Encoding name (``"PCMA"``, ``"PCMU"``, ``"G722"``, ...).
    playout : PlayoutResult or None
        The jitter buffer that chose the played packets, if any.
    clock_rate : int or None
        RTP clock rate (G.722: 8000 for 16 kHz audio); None: the same as ``sample_rate``.
    band : {"nb", "wb"}
        Audio bandwidth of the codec (:mod:`qoe.voice.decode`): ``"nb"`` for G.711.
    notes : tuple of str
        What the decoder did about loss and silence.
    """

    samples: np.ndarray
    sample_rate: int
    ts_first: int
    concealed: np.ndarray
    conceal: str
    codec: str
    playout: PlayoutResult | None = None
    clock_rate: int | None = None
    band: str = "nb"
    notes: tuple[str, ...] = ()

    @property
    def duration_s(self) -> float:
        return self.samples.shape[0] / self.sample_rate

    @property
    def channels(self) -> int:
        return 1 if self.samples.ndim == 1 else int(self.samples.shape[1])

    def as_float(self, dtype: str = "float32") -> np.ndarray:
        """The samples as floats, full scale 1.0 (= 32768)."""
        return self.samples.astype(dtype) / 32768.0

    def to_dict(self) -> dict[str, Any]:
        """Summary figures as a flat dict (no sample arrays)."""
        out: dict[str, Any] = {
            "codec": self.codec,
            "sample_rate": self.sample_rate,
            "samples": int(self.samples.shape[0]),
            "duration_s": self.duration_s,
            "conceal": self.conceal,
            "concealed_samples": int(self.concealed.sum()),
            "concealed_fraction": float(self.concealed.mean()) if self.concealed.size else 0.0,
            "band": self.band,
        }
        if self.channels != 1:
            out["channels"] = self.channels
        if self.notes:
            out["decoder_notes"] = list(self.notes)
        if self.playout is not None:
            out.update(self.playout.to_dict())
        return out


def _payload_arrays(payloads: Any) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.fromiter((len(p) for p in payloads), dtype=np.int64, count=len(payloads))
    codes = np.frombuffer(b"".join(payloads), dtype=np.uint8)
    return codes, lengths


def rebuild_audio(
    ts_ext: np.ndarray,
    payloads: tuple[bytes, ...] | list[bytes],
    *,
    law: str,
    played: np.ndarray | None = None,
    conceal: Conceal = "silence",
    fade_ms: float = FADE_MS,
    sample_rate: int = 8000,
    ts_first: int | None = None,
    playout: PlayoutResult | None = None,
) -> ReceivedAudio:
    """Decode G.711 payloads and place them by RTP timestamp; conceal what is missing.

    Parameters
    ----------
    ts_ext : numpy.ndarray of int64
        Unwrapped RTP timestamp of each received packet (the clock counts samples).
    payloads : sequence of bytes
        The G.711 payload of each packet.
    law : {"PCMA", "PCMU"}, keyword-only
        G.711 law (see :func:`qoe.voice.g711.g711_codec`).
    played : numpy.ndarray of bool, optional, keyword-only
        Packets to use (e.g. ``PlayoutResult.played``); default: all. The others are
        concealed like lost packets.
    conceal : {"silence", "repeat"}, keyword-only
        How to fill samples no played packet covers (see the module docstring).
    fade_ms : float, keyword-only
        Length of the fade of repetition concealment.
    sample_rate : int, keyword-only
        Output rate = RTP clock rate (8000 for G.711).
    ts_first : int, optional, keyword-only
        Timestamp of the first output sample; default: the smallest received.
    playout : PlayoutResult, optional, keyword-only
        Kept in the result for reference.

    Returns
    -------
    ReceivedAudio
        Runs from ``ts_first`` to the end of the last received packet.

    Raises
    ------
    InputError
        Mismatched lengths, no packets, an unknown concealment.

    Examples
    --------
    Two 4-sample A-law packets with a lost one between them, repetition concealment
    with a fade over 8 samples (1 ms at 8 kHz):

    >>> p = g711.encode_alaw(np.full(4, 1000, dtype=np.int16))
    >>> a = rebuild_audio([0, 8], [p, p], law="PCMA", conceal="repeat", fade_ms=1.0)
    >>> a.samples.tolist()
    [1008, 1008, 1008, 1008, 1008, 882, 756, 630, 1008, 1008, 1008, 1008]
    """
    ts = np.asarray(ts_ext, dtype=np.int64)
    n = ts.shape[0]
    if n == 0 or len(payloads) != n:
        raise InputError(
            f"rebuild_audio: need one payload per timestamp and at least one packet; given "
            f"{n} timestamps and {len(payloads)} payloads"
        )
    if conceal not in ("silence", "repeat"):
        raise InputError(f"conceal must be 'silence' or 'repeat', given conceal={conceal!r}")
    if not (math.isfinite(fade_ms) and fade_ms >= 0):
        raise InputError(f"fade_ms must be a finite number >= 0, given {fade_ms!r}")
    if law not in ("PCMA", "PCMU"):
        raise InputError(f"law must be 'PCMA' or 'PCMU', given law={law!r}")
    use = np.ones(n, dtype=bool) if played is None else np.asarray(played, dtype=bool)
    if use.shape != (n,):
        raise InputError(f"rebuild_audio: played has shape {use.shape}, expected ({n},)")

    codes, lengths = _payload_arrays(payloads)
    t0 = int(ts.min()) if ts_first is None else int(ts_first)
    total = int((ts + lengths).max()) - t0
    total = max(total, 0)
    out = np.zeros(total, dtype=np.int16)
    covered = np.zeros(total, dtype=bool)

    decoded = g711.decode(codes, law)  # type: ignore[arg-type]
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    # Vectorised placement: the k-th sample of packet i goes to ts_i - t0 + k.
    sel = np.flatnonzero(use & (lengths > 0))
    if sel.size:
        ln = lengths[sel]
        pkt_start_out = np.repeat(ts[sel] - t0, ln)
        pkt_start_in = np.repeat(offsets[sel], ln)
        within = np.arange(int(ln.sum())) - np.repeat(np.cumsum(ln) - ln, ln)
        dst = pkt_start_out + within
        src = pkt_start_in + within
        ok = (dst >= 0) & (dst < total)
        out[dst[ok]] = decoded[src[ok]]
        covered[dst[ok]] = True

    concealed = ~covered
    if conceal == "repeat" and concealed.any():
        positive = lengths[lengths > 0]
        frame = int(np.median(positive)) if positive.size else 0
        _repeat_conceal(out, concealed, frame, int(round(fade_ms * sample_rate / 1000.0)))
    return ReceivedAudio(
        samples=out,
        sample_rate=int(sample_rate),
        ts_first=t0,
        concealed=concealed,
        conceal=conceal,
        codec=law,
        playout=playout,
    )


def _repeat_conceal(out: np.ndarray, missing: np.ndarray, frame: int, fade: int) -> None:
    """Fill each run of missing samples in place by repeating the last ``frame`` samples, fading.

    ``out`` is 1-D int16; ``missing`` marks the samples to fill; ``fade`` is the length of
    the linear fade to silence, in samples (the module docstring's ``"repeat"``).
    """
    if frame <= 0:
        return
    m = missing.astype(np.int8)
    edges = np.diff(np.concatenate(([0], m, [0])))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    for g0, g1 in zip(starts.tolist(), ends.tolist()):
        if g0 == 0:
            continue  # nothing before the gap to repeat: silence
        src = out[max(0, g0 - frame):g0].astype(np.float64)
        length = g1 - g0
        reps = -(-length // src.shape[0])
        fill = np.tile(src, reps)[:length]
        k = np.arange(length, dtype=np.float64)
        gain = np.clip(1.0 - k / fade, 0.0, 1.0) if fade > 0 else np.zeros(length)
        out[g0:g1] = np.rint(fill * gain).astype(np.int16)
