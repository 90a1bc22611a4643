"""Which codec a dynamic RTP payload type carries when no SDP says it, from the payloads themselves.

A capture without its signalling (a tap that saw only the media, a WebRTC call, a trunk
whose SIP went another way) leaves dynamic payload types (96-127, RFC 3551 §3) without an
``a=rtpmap``. Some payload formats describe themselves well enough to be recognised:

AMR and AMR-WB (RFC 4867)
    Every payload must parse exactly, to its last octet, in one of the two payload modes:
    octet-aligned (§4.4: a CMR octet whose four low bits are zero, ToC octets whose two low
    bits are zero, each frame padded to an octet) or bandwidth-efficient (§4.3: CMR, ToC
    entries and frames bit-packed, the padding to an octet zero). The CMR must be a mode of
    the codec or 15, every frame type a defined one (AMR: 0-8, 15; AMR-WB: 0-9, 14, 15) and
    each frame the size its type has (3GPP TS 26.101 Table 1a, TS 26.201 Table 2). Between
    consecutive packets the RTP timestamp advances 160 (AMR, 8000 Hz) or 320 (AMR-WB,
    16000 Hz) per frame (§4.1: 20 ms frames), and the timestamps advance against the
    arrival times at that clock rate: that, not the frame sizes, tells AMR from AMR-WB.
Opus (RFC 6716, RFC 7587)
    Every TOC byte (§3.1) with a valid frame-count code and length (§3.2: code 1, an even
    length; code 2, a first frame that fits; code 3, 1 to 48 frames of at most 120 ms in
    all); the RTP clock runs at 48000 Hz (RFC 7587 §4.1), and between consecutive packets
    the timestamp advances by the duration the TOC announces.
telephone-event (RFC 4733)
    4-octet event payloads (§2.3: event, E, R = 0, volume <= 63, duration); packets of one
    event share a timestamp while the duration grows, and the growth against the arrival
    times gives the clock rate. Recognised, but carrying no audio: it is not decoded.

What is recognised comes with its evidence (:attr:`Identified.evidence`), which the decoded
audio's notes repeat. When the payloads do not single out one codec, the error says what
failed and what to pass (``codec="AMR/8000 octet-align=1"``, ``qoe extract --codec``).

References
----------
.. [1] RFC 3551 §3 (dynamic payload types 96-127) and §6.
.. [2] RFC 4867 §3.6, §4.1, §4.3, §4.4 (AMR, AMR-WB payload formats); 3GPP TS 26.101
   Table 1a, TS 26.201 Table 2 (bits per frame type).
.. [3] RFC 6716 §3.1, §3.2 (the Opus TOC byte and frame packing); RFC 7587 §4.1.
.. [4] RFC 4733 §2.3 (telephone-event payload format).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from qoe.errors import InputError, UnsupportedCodecError
from qoe.voice.payload import _AMR_FRAME_BITS, _AMR_WB_FRAME_BITS

if TYPE_CHECKING:  # pragma: no cover
    from qoe.rtp import RtpStream

__all__ = ["Identified", "identify_payloads", "identify_stream", "recognised_audio", "parse_codec_spec"]

# RFC 3551 §3: payload types 96-127 are dynamic (bound by signalling only).
_DYNAMIC = range(96, 128)
# How many packets are looked at (the first ones): enough evidence, bounded time on long streams.
_SAMPLE = 400
# At least this many payloads, and this share of them parsing exactly, to call a codec recognised.
_MIN_PACKETS = 5
_MIN_SHARE = 0.95
# Share of consecutive packets whose timestamp step must be the frames' duration, and how far the
# clock rate measured against the arrival times may be from the codec's (capture timing jitter).
_MIN_STEP_SHARE = 0.8
_CLOCK_TOLERANCE = 0.15
# RFC 4867 §4.1: 20 ms frames; the RTP clock is 8000 Hz (AMR) or 16000 Hz (AMR-WB).
_AMR_CLOCK = {"AMR": 8000, "AMR-WB": 16000}
_AMR_TICKS = {"AMR": 160, "AMR-WB": 320}
# RFC 4867 §4.3.1: CMR values are the speech modes (AMR 0-7, AMR-WB 0-8) or 15 (no request).
_AMR_CMR = {"AMR": set(range(8)) | {15}, "AMR-WB": set(range(9)) | {15}}
# RFC 7587 §4.1: the Opus RTP clock is 48000 Hz.
_OPUS_CLOCK = 48000
# RFC 6716 §3.1 Table 2: frame size (ms) by TOC config: 0-11 SILK 10/20/40/60, 12-15 Hybrid
# 10/20, 16-31 CELT 2.5/5/10/20.
_OPUS_FRAME_MS = [10, 20, 40, 60] * 3 + [10, 20] * 2 + [2.5, 5, 10, 20] * 4
# RFC 6716 §3.2.5: a code-3 packet holds 1..48 frames, at most 120 ms of audio.
_OPUS_MAX_FRAMES, _OPUS_MAX_MS = 48, 120.0
# RFC 4733 §2.3: 4 octets per event; volume 0..63 (6 bits, so always); R reserved, 0.
_TE_BYTES = 4


@dataclass(frozen=True, slots=True)
class Identified:
    """A codec recognised from a dynamic payload type's packets.

    Attributes
    ----------
    codec : str
        Encoding name as an SDP would write it (``"AMR"``, ``"AMR-WB"``, ``"OPUS"``,
        ``"telephone-event"``).
    clock_rate : int
        RTP clock rate (Hz).
    channels : int
        Channels (``a=rtpmap``'s encoding parameter: Opus is always 2 there, RFC 7587 §7).
    fmtp : mapping of str to str
        What an ``a=fmtp`` line would have said (AMR: ``octet-align``).
    evidence : str
        Why: how many payloads parsed, the timestamp steps, the measured clock rate.
    """

    codec: str
    clock_rate: int
    channels: int = 1
    fmtp: Mapping[str, str] = field(default_factory=dict)
    evidence: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Fields as plain Python values."""
        return {"codec": self.codec, "clock_rate": self.clock_rate, "channels": self.channels,
                "fmtp": dict(self.fmtp), "evidence": self.evidence}


# --------------------------------------------------------------------------- AMR


def _amr_frames_bits(payload: bytes, codec: str, octet_aligned: bool) -> int | None:
    """The number of frames of ``payload`` if it parses exactly in this mode (RFC 4867), else None."""
    table = _AMR_WB_FRAME_BITS if codec == "AMR-WB" else _AMR_FRAME_BITS
    value, size = int.from_bytes(payload, "big"), 8 * len(payload)
    pos = 0

    def take(n: int) -> int | None:
        nonlocal pos
        if pos + n > size:
            return None
        v = (value >> (size - pos - n)) & ((1 << n) - 1)
        pos += n
        return v

    cmr = take(4)
    if cmr is None or cmr not in _AMR_CMR[codec]:
        return None
    if octet_aligned and take(4) != 0:  # §4.4.1: four reserved bits, zero
        return None
    fts: list[int] = []
    while True:
        more, ft, _q = take(1), take(4), take(1)
        if more is None or ft is None or _q is None or ft not in table:
            return None
        if octet_aligned and take(2) != 0:  # §4.4.2: ToC padding, zero
            return None
        fts.append(ft)
        if not more:
            break
        if len(fts) > 16:  # far more frames than any sender puts in a packet: not AMR
            return None
    for ft in fts:
        n = table[ft]
        if take(n) is None:
            return None
        if octet_aligned and n % 8 and take(8 - n % 8) is None:  # §4.4.2: frames padded to octets
            return None
    rest = size - pos
    if rest >= 8 or (rest and take(rest) != 0):  # only the zero padding of the last octet is left
        return None
    return len(fts)


def _amr_candidate(payloads: Sequence[bytes], steps: np.ndarray, consecutive: np.ndarray, clock: float | None,
                   codec: str, octet_aligned: bool) -> tuple[Identified | None, str]:
    frames = [_amr_frames_bits(p, codec, octet_aligned) for p in payloads]
    ok = np.array([f is not None for f in frames])
    mode = "octet-aligned" if octet_aligned else "bandwidth-efficient"
    name = f"{codec} {mode}"
    share = float(ok.mean())
    if share < _MIN_SHARE:
        return None, f"{name}: {int(ok.sum())} of {len(payloads)} payloads parse"
    nframes = np.array([f or 0 for f in frames], dtype=np.int64)
    expect = nframes[:-1] * _AMR_TICKS[codec]
    usable = consecutive & ok[:-1]
    step_share = float((steps[usable] == expect[usable]).mean()) if usable.any() else 0.0
    if step_share < _MIN_STEP_SHARE:
        return None, f"{name}: timestamps advance {_AMR_TICKS[codec]} a frame in {step_share:.0%} of packets"
    want = _AMR_CLOCK[codec]
    if clock is None or abs(clock / want - 1.0) > _CLOCK_TOLERANCE:
        got = "unknown" if clock is None else f"{clock:.0f} Hz"
        return None, f"{name}: the timestamps run at {got} against the arrival times, not {want} Hz"
    evidence = (f"{codec} ({mode}, RFC 4867 §{'4.4' if octet_aligned else '4.3'}) recognised without SDP: "
                f"{int(ok.sum())} of {len(payloads)} payloads parse exactly (CMR, ToC, frame sizes), the timestamp "
                f"advances {_AMR_TICKS[codec]} a frame in {step_share:.0%} of packets, clock {clock:.0f} Hz "
                f"against the arrival times")
    return Identified(codec, want, 1, {"octet-align": "1" if octet_aligned else "0"}, evidence), ""


# --------------------------------------------------------------------------- Opus


def _opus_ms(payload: bytes) -> float | None:
    """The duration of an Opus packet (RFC 6716 §3.1-§3.2), None if its TOC and length are invalid."""
    n = len(payload)
    if n < 1:
        return None
    toc = payload[0]
    frame_ms = _OPUS_FRAME_MS[toc >> 3]
    code = toc & 0x3
    if code == 0:  # §3.2.2: one frame
        return frame_ms
    if code == 1:  # §3.2.3: two frames of equal size
        return 2 * frame_ms if (n - 1) % 2 == 0 else None
    if code == 2:  # §3.2.4: two frames, the first's length coded in 1 or 2 octets
        if n < 2:
            return None
        first, used = (payload[1], 1) if payload[1] < 252 else ((payload[2] * 4 + payload[1], 2) if n >= 3 else (0, 0))
        return 2 * frame_ms if used and 1 + used + first <= n else None
    if n < 2:  # code 3, §3.2.5: a frame-count octet (v, p, M)
        return None
    m = payload[1] & 0x3F
    if m == 0 or m > _OPUS_MAX_FRAMES or m * frame_ms > _OPUS_MAX_MS:
        return None
    return m * frame_ms


def _opus_candidate(payloads: Sequence[bytes], steps: np.ndarray, consecutive: np.ndarray,
                    clock: float | None) -> tuple[Identified | None, str]:
    ms = [_opus_ms(p) for p in payloads]
    ok = np.array([m is not None for m in ms])
    if float(ok.mean()) < _MIN_SHARE:
        return None, f"Opus: {int(ok.sum())} of {len(payloads)} TOC bytes are valid"
    ticks = np.array([round((m or 0) * _OPUS_CLOCK / 1000) for m in ms], dtype=np.int64)
    usable = consecutive & ok[:-1]
    step_share = float((steps[usable] == ticks[:-1][usable]).mean()) if usable.any() else 0.0
    if step_share < _MIN_STEP_SHARE:
        return None, f"Opus: timestamps advance by the TOC's duration at 48 kHz in {step_share:.0%} of packets"
    if clock is None or abs(clock / _OPUS_CLOCK - 1.0) > _CLOCK_TOLERANCE:
        got = "unknown" if clock is None else f"{clock:.0f} Hz"
        return None, f"Opus: the timestamps run at {got} against the arrival times, not 48000 Hz"
    configs = sorted({p[0] >> 3 for p, good in zip(payloads, ok) if good})
    evidence = (f"Opus (RFC 6716 §3.1 TOC, RFC 7587) recognised without SDP: {int(ok.sum())} of {len(payloads)} "
                f"TOC bytes valid (configs {configs}), the timestamp advances by the TOC's duration at 48 kHz in "
                f"{step_share:.0%} of packets, clock {clock:.0f} Hz against the arrival times")
    return Identified("OPUS", _OPUS_CLOCK, 2, {}, evidence), ""


# --------------------------------------------------------------------------- telephone-event


def _te_candidate(payloads: Sequence[bytes], ts: np.ndarray, arrival_ns: np.ndarray) -> tuple[Identified | None, str]:
    ok = np.array([len(p) == _TE_BYTES and not (p[1] & 0x40) for p in payloads])  # R bit reserved, 0
    if float(ok.mean()) < _MIN_SHARE:
        return None, f"telephone-event: {int(ok.sum())} of {len(payloads)} payloads are 4-octet events"
    dur = np.array([int.from_bytes(p[2:4], "big") if len(p) >= 4 else 0 for p in payloads], dtype=np.int64)
    same = (ts[1:] == ts[:-1]) & ok[1:] & ok[:-1]
    grows = same & (dur[1:] > dur[:-1])
    if same.sum() < _MIN_PACKETS or float(grows.sum()) < 0.5 * float(same.sum()):
        return None, "telephone-event: packets do not share timestamps with a growing duration"
    rate = (dur[1:] - dur[:-1])[grows] / ((arrival_ns[1:] - arrival_ns[:-1])[grows] / 1e9)
    rate = rate[np.isfinite(rate)]
    clock = float(np.median(rate)) if rate.size else None
    known = min((8000, 16000, 48000), key=lambda c: abs((clock or 0) - c))
    if clock is None or abs(clock / known - 1.0) > 0.3:
        return None, "telephone-event: the durations do not grow at a known clock rate"
    evidence = (f"telephone-event (RFC 4733 §2.3) recognised without SDP: {int(ok.sum())} of {len(payloads)} "
                f"payloads are 4-octet events, {int(grows.sum())} packets repeat their event's timestamp with a "
                f"growing duration, clock {clock:.0f} Hz from the durations against the arrival times")
    return Identified("telephone-event", known, 1, {}, evidence), ""


# --------------------------------------------------------------------------- entry points


def _clock(steps: np.ndarray, gaps_s: np.ndarray, consecutive: np.ndarray) -> float | None:
    """The RTP clock rate the timestamps run at against the arrival times (median over the stream)."""
    use = consecutive & (steps > 0) & (gaps_s > 0)
    if use.sum() < _MIN_PACKETS - 1:
        return None
    # total ticks over total time: robust to senders that emit packets in bursts
    return float(steps[use].sum() / gaps_s[use].sum())


def identify_payloads(
    payloads: Sequence[bytes],
    ts_ext: np.ndarray,
    seq_ext: np.ndarray,
    arrival_ns: np.ndarray,
    *,
    payload_type: int,
) -> Identified:
    """Recognise the codec of one dynamic payload type's packets (in arrival order).

    Parameters
    ----------
    payloads : sequence of bytes
        The RTP payloads.
    ts_ext, seq_ext, arrival_ns : numpy.ndarray of int64
        Unwrapped RTP timestamps and sequence numbers, and arrival times (ns), per packet.
    payload_type : int, keyword-only
        For the messages.

    Returns
    -------
    Identified

    Raises
    ------
    UnsupportedCodecError
        No codec, or more than one, fits the packets; the message lists what was tried and
        says what to pass.
    """
    n = min(len(payloads), _SAMPLE)
    if n < _MIN_PACKETS:
        raise UnsupportedCodecError(
            f"payload type {payload_type} has no SDP and only {len(payloads)} packet(s), too few to recognise its "
            f"codec from the payloads; {_WHAT_TO_PASS}")
    pays = [bytes(p) for p in payloads[:n]]
    ts = np.asarray(ts_ext[:n], dtype=np.int64)
    seq = np.asarray(seq_ext[:n], dtype=np.int64)
    arr = np.asarray(arrival_ns[:n], dtype=np.int64)
    consecutive = np.diff(seq) == 1
    steps = np.diff(ts)
    gaps_s = np.diff(arr) / 1e9
    clock = _clock(steps, gaps_s, consecutive)
    found: list[Identified] = []
    why: list[str] = []
    for codec in ("AMR", "AMR-WB"):
        for oa in (True, False):
            hit, reason = _amr_candidate(pays, steps, consecutive, clock, codec, oa)
            (found.append(hit) if hit else why.append(reason))  # type: ignore[func-returns-value]
    hit, reason = _opus_candidate(pays, steps, consecutive, clock)
    (found.append(hit) if hit else why.append(reason))  # type: ignore[func-returns-value]
    hit, reason = _te_candidate(pays, ts, arr)
    (found.append(hit) if hit else why.append(reason))  # type: ignore[func-returns-value]
    if len(found) == 1:
        return found[0]
    if found:
        names = ", ".join(f"{f.codec} {dict(f.fmtp)}" if f.fmtp else f.codec for f in found)
        raise UnsupportedCodecError(
            f"payload type {payload_type} has no SDP and its payloads fit more than one codec ({names}); "
            f"{_WHAT_TO_PASS}")
    raise UnsupportedCodecError(
        f"payload type {payload_type} has no SDP and its payloads do not identify a codec ({'; '.join(why)}); "
        f"{_WHAT_TO_PASS}")


_WHAT_TO_PASS = ("give the codec as an SDP a=rtpmap names it, with its a=fmtp parameters, e.g. "
                 "codec=\"AMR/8000 octet-align=1\" (qoe extract --codec \"AMR/8000 octet-align=1\"), "
                 "\"AMR-WB/16000\", \"opus/48000/2\", \"G729/8000\"")


def identify_stream(stream: RtpStream) -> Identified | None:
    """The codec of a stream whose dynamic payload type no SDP names, recognised from its packets.

    Returns None when the stream's codec is known (from SDP or the static table) or its
    payload type is static. SRTP payloads that were not decrypted are ciphertext: they are
    not looked at (None).

    Raises
    ------
    UnsupportedCodecError
        As :func:`identify_payloads`; also when the stream kept no payloads.
    """
    if stream.codec or stream.payload_type not in _DYNAMIC:
        return None
    if stream.srtp is not None and not stream.srtp.decrypted:
        return None
    p = stream.packets
    if p is None or len(p) == 0 or not p.payloads:
        raise UnsupportedCodecError(
            f"stream {stream.key}: payload type {stream.payload_type} has no SDP and no payloads were kept to "
            f"recognise its codec; {_WHAT_TO_PASS}")
    main = np.flatnonzero(p.payload_type == stream.payload_type)
    return identify_payloads([p.payloads[i] for i in main[:_SAMPLE]], p.ts_ext[main], p.seq_ext[main],
                             p.arrival_ns[main], payload_type=stream.payload_type)


def recognised_audio(stream: RtpStream) -> Identified | None:
    """The audio codec :func:`identify_stream` recognises for ``stream``, or None (named by SDP,
    static, not recognised, or telephone-event, which carries no audio): never raises."""
    try:
        found = identify_stream(stream)
    except UnsupportedCodecError:
        return None
    return None if found is None or found.codec == "telephone-event" else found


def parse_codec_spec(spec: str) -> Identified:
    """A codec given as an SDP names it: ``"NAME/RATE[/CHANNELS] [key=value[;key=value]]"``.

    Examples
    --------
    >>> parse_codec_spec("AMR/8000 octet-align=1").fmtp
    {'octet-align': '1'}
    >>> parse_codec_spec("opus/48000/2").channels
    2
    """
    text = str(spec).strip()
    head, _, params = text.partition(" ")
    parts = head.split("/")
    try:
        name, rate = parts[0], int(parts[1])
        channels = int(parts[2]) if len(parts) > 2 else 1
    except (IndexError, ValueError):
        raise InputError(f"codec must be written as an SDP a=rtpmap names it, NAME/RATE[/CHANNELS] then optional "
                         f"key=value;key=value (a=fmtp), e.g. \"AMR/8000 octet-align=1\"; given codec={spec!r}") from None
    if not name or rate <= 0 or channels <= 0:
        raise InputError(f"codec needs a name, a clock rate > 0 and channels > 0; given codec={spec!r}")
    fmtp: dict[str, str] = {}
    for item in params.replace(" ", ";").split(";"):
        if not item:
            continue
        key, eq, value = item.partition("=")
        if not eq:
            raise InputError(f"codec parameters are key=value pairs (a=fmtp); given {item!r} in codec={spec!r}")
        fmtp[key.strip().lower()] = value.strip()
    return Identified(name, rate, channels, fmtp, f"codec given: {text}")


def _with_codec(stream: RtpStream, codec: Identified) -> RtpStream:
    """``stream`` with its main payload type bound to ``codec`` (as an SDP would have bound it)."""
    return dataclasses.replace(stream, codec=codec.codec, clock_rate=codec.clock_rate, channels=codec.channels,
                               fmtp=dict(codec.fmtp), media=None)
