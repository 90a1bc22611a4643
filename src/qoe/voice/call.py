"""Call scores: the seed paper's VoIP QoE and the network-side E-model, per direction.

A call has a stream each way; the seed paper (Pujol et al., IMC 2014, §7) scores each
direction from the user's point of view: *user talks* (the user's voice at the far end)
and *user listens* (the far end's voice at the user). For each direction this module
gives two scores and every term behind them.

Full reference (paper §7.1), when the reference speech is given
    The received audio is rebuilt through a jitter buffer (:mod:`qoe.rtp.jitterbuffer`,
    adaptive by default) with loss concealment (:mod:`qoe.voice.playout`); each play of
    the reference inside it is located (:mod:`qoe.voice.locate`) and scored with P.862
    (:mod:`qoe.voice.p862`) → MOS-LQO → ``z1`` (R by G.107 Appendix I); ``z2`` is the
    G.107 delay impairment Id of the mouth-to-ear delay; ``z = max(0, z1 − z2)``; MOS
    from ``z`` (:func:`qoe.voice.combined.combined_score`).

Network side (no reference)
    G.107 R from the effective loss after the jitter buffer (network + late loss), its
    burst ratio (eq. 7-32, from the observed loss runs), the codec's Ie/Bpl (G.113
    Appendix I: ``"G.711-plc"`` with concealment, ``"G.711"`` without) and the delay, and
    the simplified estimate of Cole & Rosenbluth (2001), for the whole stream and per
    window (default 10 s) with the worst and mean window (:mod:`qoe.voice.netscore`).

Mouth-to-ear delay
    Per played packet: packetisation (one packet's duration: its first sample waits that
    long before the packet is sent, G.114 Annex A.2) + network one-way delay + time in the
    jitter buffer. The network part is, by order of preference: measured from a
    sender-side and a receiver-side capture (:mod:`qoe.rtp.delay`); the given
    ``one_way_ms`` or RTCP's round-trip time / 2 as the delay of the least-delayed packet,
    plus the delay variation the receiver capture shows (arrival time minus RTP
    timestamp, above its minimum); or that variation alone (a base of 0 ms, *assumed*,
    with a :class:`~qoe.errors.QoEWarning`).

    Delay hurts a conversation, not a direction: a long uplink queue makes the user wait
    for the answer whether the user talks or listens (the seed paper §7.2 finds the
    "user listens" score falling with uplink buffers for this reason). With
    ``delay_basis="conversation"`` (default) ``Ta`` of both directions is the mean of the
    two directions' mouth-to-ear delays (half the mouth-to-ear round trip; our reading
    of G.107's Ta for asymmetric paths); ``"direction"`` uses each direction's own delay.
    ``T = Ta`` and ``Tr = 2·Ta`` (G.107 defaults for the echo terms), as in
    :func:`qoe.voice.combined.combined_score` and :mod:`qoe.voice.netscore`.

Every result says which inputs were measured and which assumed (``inputs`` and
``notes``).

The inputs (:class:`Reference`, :class:`Call`, :func:`find_calls`) and the result
classes are defined in the private modules ``_call_inputs`` and ``_call_results`` and
re-exported here; import them from this module.

References
----------
.. [1] Pujol, Hohlfeld, Ciucu, Feldmann, Barford, "A QoE Perspective on Sizing Network
   Buffers", ACM IMC 2014, §7.1 (z1, z2, z), §7.2 (user talks / user listens).
.. [2] ITU-T G.107 (06/2015), clause 7.4 (Id from Ta, T, Tr), 7.5 (Ie,eff, BurstR),
   Annex B and Appendix I (R ↔ MOS).
.. [3] ITU-T G.113 (11/2007), Appendix I, Tables I.1 and I.3 (Ie, Bpl of G.711 with and
   without packet-loss concealment).
.. [4] ITU-T G.114 (05/2003), Annex A.2 (packetisation delay of frame-based codecs) and
   A.3 (jitter-buffer delay).
.. [5] ITU-T P.862 (02/2001) and P.862.1 (11/2003) (MOS-LQO).
.. [6] RFC 3550, §6.4.1 (round-trip time from RTCP LSR/DLSR).
.. [7] R. G. Cole and J. H. Rosenbluth, "Voice over IP performance monitoring", ACM
   SIGCOMM CCR 31(2), 2001.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from qoe.errors import InputError, QoEError, QoEWarning, UnsupportedCodecError
from qoe.voice import emodel, g711
# The scorer's inputs and results live in modules of their own and are re-exported here:
# qoe.voice.call stays the one place to import them from.
from qoe.voice._call_inputs import Call, Reference, find_calls, is_audio, pair_id
from qoe.voice._call_results import (
    USER_LISTENS,
    USER_TALKS,
    CallScore,
    DelayTerms,
    Direction,
    DirectionScore,
    FullReferenceScore,
    NetworkScore,
    PlayScore,
)
from qoe.voice.combined import combined_score
from qoe.rtp.delay import OneWayDelay
from qoe.rtp.jitterbuffer import JitterBuffer, PlayoutResult, parse_jitter_buffer
from qoe.voice.locate import Play, locate_reference
from qoe.rtp.lossmodel import loss_pattern
from qoe.voice.netscore import windowed_scores
from qoe.voice.p862 import pesq
from qoe.voice.playout import Conceal, playout_stream, rebuild_audio

if TYPE_CHECKING:  # pragma: no cover
    from qoe.rtp import RtpStream
    from qoe.rtp.sip import SipCall

__all__ = [
    "USER_TALKS",
    "USER_LISTENS",
    "Reference",
    "Call",
    "find_calls",
    "DelayTerms",
    "NetworkScore",
    "PlayScore",
    "FullReferenceScore",
    "DirectionScore",
    "CallScore",
    "score_call",
    "score_calls",
]

DelayBasis = Literal["conversation", "direction"]

# RFC 3551 §4.5 (Table 4): the audio encodings whose G.113 Appendix I presets exist here.
_EMODEL_PRESET = {"G729": "G.729A+VAD"}
# P.862 (02/2001) clause 10.1.3: the utterance search looks a few hundred ms either side;
# each play is cut with this much of the received signal around it (but never into the
# next play), so that a play delayed by the jitter buffer is still inside the cut.
_PLAY_MARGIN_S = 0.25
# A play must cover at least 2 s of the reference to be scored: P.862.3 (11/2007)
# clause 7.1.1 asks for 8-12 s samples, and PESQ on less than a couple of utterances
# is not meaningful. (Our threshold.)
_MIN_PLAY_S = 2.0


def _f(x: Any) -> float:
    return float(x) if x is not None else float("nan")


# --------------------------------------------------------------------------- per stream


@dataclass
class _Prep:
    """What is computed per stream before the directions are combined."""

    stream: RtpStream
    playout: PlayoutResult
    ptime_ms: float
    net_ms: np.ndarray  # per received packet
    net_source: str
    m2e_ms: np.ndarray  # per received packet; NaN unless played
    arrival_ns: np.ndarray
    capture: str | None
    notes: list[str]
    ta_ms: np.ndarray | None = None


def _ptime_ms(stream: RtpStream) -> tuple[float, str]:
    """One packet's duration: SDP ``a=ptime``, else the typical timestamp step."""
    if stream.ptime_ms:
        return float(stream.ptime_ms), "SDP a=ptime"
    p = stream.packets
    order = np.argsort(p.seq_ext, kind="stable")
    ds = np.diff(p.seq_ext[order])
    dt = np.diff(p.ts_ext[order])
    steps = dt[(ds == 1) & (dt > 0)]
    if steps.size == 0:
        return 0.0, "unknown (no consecutive packets): 0 ms"
    return 1000.0 * float(np.median(steps)) / float(stream.clock_rate), "RTP timestamp step"


def _rtt_ms(streams: Sequence[RtpStream]) -> tuple[float | None, int]:
    """Round-trip time from the RTCP of a call's streams (the largest median), and the count.

    A report block about a stream received at the capture point gives a near-zero RTT
    (the capture sees the SR arrive and the RR leave); the stream the capture side
    sends gives the true round trip to the far end. The largest median is taken.
    """
    best, count = None, 0
    for s in streams:
        if s.rtcp is not None and s.rtcp.rtt_ms:
            med = float(np.median(np.asarray(s.rtcp.rtt_ms, dtype=float)))
            if best is None or med > best:
                best, count = med, len(s.rtcp.rtt_ms)
    return best, count


def _matched_delays(owd: OneWayDelay, seq_ext: np.ndarray) -> np.ndarray:
    """The measured one-way delay of each received packet (by sequence number).

    Each capture extends sequence numbers from its own first packet (RFC 3550 A.1), so
    the whole-cycle shift that matches most packets is used. Packets the sender capture
    did not see (outside the overlap of the two captures) get the mean delay.
    """
    sent = owd.seq_ext[owd.received]
    dly = owd.delay_ms[owd.received]
    if sent.size == 0:
        return np.zeros(seq_ext.shape[0])
    shift = max((0, -65536, 65536), key=lambda k: np.intersect1d(sent, seq_ext + k).size)
    want = seq_ext + shift
    pos = np.minimum(np.searchsorted(sent, want), sent.size - 1)
    hit = sent[pos] == want
    return np.where(hit, dly[pos], float(dly.mean()))


def _network_delay(
    stream: RtpStream,
    playout: PlayoutResult,
    owd: OneWayDelay | None,
    *,
    one_way_ms: float | None,
    rtt_ms: float | None,
    rtt_count: int,
) -> tuple[np.ndarray, str, str]:
    """Per received packet: network one-way delay (ms), its source and a provenance note."""
    p = stream.packets
    if owd is not None:
        net = _matched_delays(owd, p.seq_ext)
        if owd.relative:
            base = float(one_way_ms) if one_way_ms is not None else 0.0
            how = "given" if one_way_ms is not None else "assumed"
            note = (
                "network one-way delay: the two captures do not share a clock, so delays are measured relative to "
                f"the least-delayed packet, plus a base of {base:g} ms ({how})"
            )
            return net + base, "measured-relative", note
        note = ("network one-way delay: measured (sender- and receiver-side captures, packets matched by SSRC "
                "and sequence number)")
        return net, "measured", note
    # One capture: the delay variation is visible (arrival time minus RTP timestamp),
    # the base delay is not.
    a = (p.arrival_ns - p.arrival_ns[0]) / 1e6
    t = (p.ts_ext - p.ts_ext[0]) * (1000.0 / float(stream.clock_rate))
    transit = a - t
    first = ~playout.duplicate
    var = transit - transit[first].min()
    if one_way_ms is not None:
        base, source = float(one_way_ms), "given"
        note = f"network one-way delay: {base:g} ms given for the least-delayed packet, plus the delay variation seen in the capture"
    elif rtt_ms is not None:
        base, source = rtt_ms / 2.0, "rtcp"
        note = (
            f"network one-way delay: RTCP round-trip time / 2 = {base:.1f} ms (median of {rtt_count} report(s)) for the "
            "least-delayed packet, plus the delay variation seen in the capture"
        )
    else:
        base, source = 0.0, "assumed"
        note = (
            "network one-way delay: assumed 0 ms for the least-delayed packet (only one capture given, no RTCP "
            "round-trip time); only the delay variation seen in the capture is counted"
        )
    return base + var, source, note


def _prepare(
    stream: RtpStream,
    *,
    buffer: JitterBuffer,
    owd: OneWayDelay | None,
    one_way_ms: float | None,
    rtt: tuple[float | None, int],
    capture: str | None,
) -> _Prep:
    if stream.packets is None or len(stream.packets) == 0:
        raise InputError(f"stream {stream.key}: no packet table (scan the capture keeping packets)")
    playout = playout_stream(stream, buffer=buffer)
    ptime, ptime_how = _ptime_ms(stream)
    net, source, note = _network_delay(stream, playout, owd, one_way_ms=one_way_ms, rtt_ms=rtt[0], rtt_count=rtt[1])
    m2e = np.where(playout.played, ptime + net + playout.buffer_delay_ms, np.nan)
    notes = [note, f"packetisation delay: {ptime:g} ms ({ptime_how})"]
    return _Prep(stream, playout, ptime, net, source, m2e, stream.packets.arrival_ns, capture, notes)


def _conversation_ta(prep: _Prep, others: Sequence[_Prep]) -> tuple[np.ndarray, str]:
    """Per received packet of ``prep``: the mean of its mouth-to-ear delay and the other direction's."""
    arr = np.concatenate([o.arrival_ns[o.playout.played] for o in others]) if others else np.zeros(0, np.int64)
    val = np.concatenate([o.m2e_ms[o.playout.played] for o in others]) if others else np.zeros(0)
    if arr.size == 0:
        return prep.m2e_ms, "this direction's mouth-to-ear delay (the other direction is not in the capture)"
    order = np.argsort(arr, kind="stable")
    arr, val = arr[order].astype(np.float64), val[order]
    own = prep.arrival_ns.astype(np.float64)
    if own.max() < arr[0] or own.min() > arr[-1]:  # no overlap in time: the other's mean
        other = np.full(own.shape, float(val.mean()))
    else:
        other = np.interp(own, arr, val)  # the other direction's delay at the same moment
    return (prep.m2e_ms + other) / 2.0, "mean of both directions' mouth-to-ear delays (conversation)"


def _emodel_preset(stream: RtpStream, conceal: str, codec: str | None) -> tuple[str | None, str]:
    if codec is not None:
        emodel.codec(codec)  # validates, listing the known presets
        return codec, f"codec Ie/Bpl: preset {codec!r} (given)"
    try:
        g711.g711_codec(stream.payload_type, stream.codec)
    except UnsupportedCodecError:
        name = (stream.codec or "").upper()
        if name in _EMODEL_PRESET:
            preset = _EMODEL_PRESET[name]
            return preset, f"codec Ie/Bpl: G.113 preset {preset!r} assumed for {stream.codec}"
        return None, (
            f"network-side score skipped: no G.113 Appendix I preset for payload type {stream.payload_type} "
            f"({stream.codec or 'unknown codec'}); give codec=<preset>"
        )
    if conceal == "repeat":
        return "G.711-plc", "codec Ie/Bpl: G.113 'G.711-plc' (concealment on)"
    return "G.711", "codec Ie/Bpl: G.113 'G.711' (no concealment)"


def _network_score(
    prep: _Prep, preset: str, *, window_s: float, emodel_params: Mapping[str, Any]
) -> NetworkScore:
    pl = prep.playout
    p = prep.stream.packets
    lost = pl.lost | pl.slot_late
    delay = np.full(lost.shape[0], np.nan)
    played = pl.played
    delay[p.seq_ext[played] - pl.seq_first] = prep.ta_ms[played]
    send_s = np.arange(lost.shape[0]) * (prep.ptime_ms / 1000.0 if prep.ptime_ms > 0 else 0.02)
    ws = windowed_scores(send_s, lost, delay, codec=preset, window_s=window_s, **emodel_params)
    o = ws.overall
    d = 0.0 if math.isnan(o["delay_ms"]) else o["delay_ms"]
    full = emodel.r_factor(codec=preset, ppl=o["ppl"], burst_r=o["burst_r"], one_way_ms=d, **emodel_params)
    return NetworkScore(
        codec=ws.codec,
        ppl=float(o["ppl"]),
        burst_r=float(o["burst_r"]),
        delay_ms=float(o["delay_ms"]),
        id_=float(full.id_),
        ie_eff=float(full.ie_eff),
        r=float(o["r"]),
        mos=float(o["mos"]),
        mos_simplified=float(o["mos_simplified"]),
        mos_min=float(o["mos_min"]),
        mos_mean=float(o["mos_mean"]),
        windows=ws,
    )


def _z_terms(mos_lqo: float, ta_ms: float, emodel_params: Mapping[str, Any]) -> dict[str, float]:
    """The seed paper's z1, z2, z and MOS (§7.1) of a MOS-LQO heard at a delay ``ta_ms``."""
    cs = combined_score(mos_lqo, ta_ms, **emodel_params)
    return {"z1": float(cs.z1), "z2": float(cs.z2), "z": float(cs.z), "mos": float(cs.mos)}


def _full_reference(
    prep: _Prep,
    references: Sequence[Reference],
    *,
    conceal: Conceal,
    min_correlation: float,
    emodel_params: Mapping[str, Any],
) -> tuple[FullReferenceScore | None, list[str]]:
    """Rebuild the audio, locate each reference in it, score each play. Returns (score, notes)."""
    s = prep.stream
    notes: list[str] = []
    try:
        law = g711.g711_codec(s.payload_type, s.codec)
    except UnsupportedCodecError as exc:
        return None, [f"full-reference score skipped: {exc}"]
    p = s.packets
    if not p.payloads:
        return None, ["full-reference score skipped: the packet payloads were not kept"]
    fs = int(s.clock_rate)
    played = prep.playout.played & (p.payload_type == s.payload_type)
    audio = rebuild_audio(p.ts_ext, p.payloads, law=law, played=played, conceal=conceal, sample_rate=fs,
                          playout=prep.playout)
    pos = p.ts_ext - audio.ts_first  # sample position of each packet's first sample
    found: list[tuple[Reference, Play]] = []
    for ref in references:
        if int(ref.fs) != fs:
            raise InputError(
                f"reference {ref.name!r} is sampled at {ref.fs} Hz but stream {s.key} plays at {fs} Hz; "
                f"resample it first (e.g. qoe.voice.load_speech(path, fs={fs}))"
            )
        plays = locate_reference(audio.samples, ref.samples, fs=fs, min_correlation=min_correlation)
        for play in plays:
            if play.ref_end - play.ref_start < _MIN_PLAY_S * fs:
                notes.append(
                    f"{ref.name}: a play covering only {(play.ref_end - play.ref_start) / fs:.2f} s of it at "
                    f"{play.offset / fs:.2f} s was not scored (less than {_MIN_PLAY_S:g} s)"
                )
                continue
            found.append((ref, play))
    if not found:
        notes.append(
            "full-reference score: no reference was found in this stream's audio (envelope correlation below "
            f"{min_correlation:g}): " + ", ".join(r.name for r in references)
        )
        return None, notes
    found.sort(key=lambda rp: rp[1].offset)
    n = audio.samples.shape[0]
    margin = int(_PLAY_MARGIN_S * fs)
    scores = []
    for i, (ref, play) in enumerate(found):
        lo = play.start - margin
        hi = play.end + margin
        if i > 0:
            lo = max(lo, found[i - 1][1].end)
        if i + 1 < len(found):
            hi = min(hi, found[i + 1][1].start)
        lo, hi = max(0, min(lo, play.start)), min(n, max(hi, play.end))
        deg = audio.samples[lo:hi]
        refpart = np.asarray(ref.samples)[play.ref_start : play.ref_end]
        try:
            res = pesq(refpart, deg, fs=fs, mode="nb")
        except QoEError as exc:
            notes.append(f"{ref.name}: the play at {play.offset / fs:.2f} s could not be scored by P.862: {exc}")
            continue
        inside = played & (pos >= play.start) & (pos < play.end)
        ta = float(np.nanmean(prep.ta_ms[inside])) if inside.any() else float(np.nanmean(prep.ta_ms[played]))
        scores.append(
            PlayScore(
                reference=ref.name,
                start_s=play.offset / fs,
                coverage=play.coverage,
                correlation=play.correlation,
                mos_lqo=float(res.mos_lqo),
                pesq_raw=_f(res.raw),
                ta_ms=ta,
                **_z_terms(res.mos_lqo, ta, emodel_params),
            )
        )
        if play.coverage < 1.0:
            notes.append(f"{ref.name}: the play at {play.offset / fs:.2f} s is cut by the capture; "
                         f"{100 * play.coverage:.0f} % of the reference scored")
    if not scores:
        return None, notes
    mos_lqo = float(np.mean([sc.mos_lqo for sc in scores]))
    ta = float(np.mean([sc.ta_ms for sc in scores]))
    fr = FullReferenceScore(plays=tuple(scores), mos_lqo=mos_lqo, ta_ms=ta, **_z_terms(mos_lqo, ta, emodel_params))
    return fr, notes


def _delay_terms(prep: _Prep, *, basis: DelayBasis, emodel_params: Mapping[str, Any]) -> DelayTerms:
    """The mouth-to-ear delay of one direction, its parts and its delay impairment (means over played packets)."""
    pl = prep.playout
    played = pl.played
    ta_mean = _mean(prep.ta_ms[played])
    idv = float(emodel.delay_impairment(0.0 if math.isnan(ta_mean) else ta_mean, **emodel_params))
    net_played = prep.net_ms[played]
    return DelayTerms(
        packetisation_ms=prep.ptime_ms,
        network_ms=_mean(net_played),
        network_min_ms=float(np.min(net_played)) if net_played.size else float("nan"),
        network_max_ms=float(np.max(net_played)) if net_played.size else float("nan"),
        network_source=prep.net_source,
        buffer_ms=_mean(pl.buffer_delay_ms[played]),
        mouth_to_ear_ms=_mean(prep.m2e_ms[played]),
        mouth_to_ear_max_ms=float(np.nanmax(prep.m2e_ms[played])) if played.any() else float("nan"),
        basis=basis,
        ta_ms=ta_mean,
        id_=idv,
    )


def _direction_score(
    prep: _Prep,
    *,
    call_id: str,
    user: str | None,
    measured: bool,
    delay_basis: DelayBasis,
    conceal: Conceal,
    codec: str | None,
    window_s: float,
    references: Sequence[Reference],
    min_correlation: float,
    emodel_params: Mapping[str, Any],
) -> DirectionScore:
    """Every score of one stream, once its delays are known; ``measured``: seen by both captures."""
    s = prep.stream
    pl = prep.playout
    notes = list(prep.notes)
    inputs = {
        "network_delay": prep.net_source,
        "packetisation_delay": "SDP a=ptime" if s.ptime_ms else "RTP timestamps",
        "jitter_buffer": f"simulated ({pl.buffer})",
        "loss": "measured at the receiver" if measured else "measured at the capture point",
        "delay_basis": delay_basis,
    }
    if not measured:
        notes.append(
            "loss and delay variation as seen at the capture point: if the capture was taken at the sender of "
            "this stream, the network's effect on it is not in the capture"
        )
    lp = loss_pattern(pl.lost | pl.slot_late)
    delay = _delay_terms(prep, basis=delay_basis, emodel_params=emodel_params)
    preset, preset_note = _emodel_preset(s, conceal, codec)
    notes.append(preset_note)
    network = None
    if preset is not None and pl.played.any():
        network = _network_score(prep, preset, window_s=window_s, emodel_params=emodel_params)
        inputs["codec_impairment"] = preset
    full = None
    if references:
        full, fr_notes = _full_reference(prep, references, conceal=conceal, min_correlation=min_correlation,
                                         emodel_params=emodel_params)
        notes.extend(fr_notes)
        inputs["reference"] = "located: " + ", ".join(sorted({p.reference for p in full.plays})) if full else "not found"
    else:
        inputs["reference"] = "none given (network-side score only)"
    return DirectionScore(
        call_id=call_id,
        direction=_direction_of(s, user),
        stream=str(s.key),
        ssrc=s.ssrc,
        codec=s.codec,
        payload_type=int(s.payload_type),
        clock_rate=int(s.clock_rate),
        capture=prep.capture,
        jitter_buffer=pl.buffer,
        conceal=conceal,
        expected=pl.expected,
        received=pl.received,
        network_lost=pl.network_lost,
        late_lost=pl.late_lost,
        duplicates=int(pl.duplicate.sum()),
        effective_loss=pl.effective_loss,
        burst_r=float(lp.burst_r),
        loss_bursts=lp.bursts,
        max_burst=lp.max_burst,
        jitter_ms=float(s.stats.mean_jitter_ms),
        delay=delay,
        network=network,
        full_reference=full,
        inputs=inputs,
        notes=tuple(notes),
    )


# --------------------------------------------------------------------------- calls


def _direction_of(stream: RtpStream, user: str | None) -> Direction | None:
    if user is None:
        return None
    if stream.key.dst == user:
        return USER_LISTENS
    if stream.key.src == user:
        return USER_TALKS
    return None


def _user_note(user: str, how: str) -> str:
    """The call note saying which address was taken as the user's end, and how."""
    return f"user's end: {user} ({how})"


def _user_at(capture: str, call: Call, delays: Mapping[int, OneWayDelay], captures: Mapping[int, str]) -> str | None:
    """The address at which ``capture`` was taken, from the call's streams seen in both captures.

    A stream scored from ``capture`` was received there (its destination is the user's
    end); one scored from the other capture was sent from there (its source is).
    """
    both = [s for s in call.streams if s.ssrc in delays]
    listened = [s for s in both if captures.get(s.ssrc) == capture]
    talked = [s for s in both if captures.get(s.ssrc) != capture]
    if listened:
        return listened[0].key.dst
    if talked:
        return talked[0].key.src
    return None


def _mean(x: np.ndarray) -> float:
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else float("nan")


def score_call(
    streams: Sequence[RtpStream] | Call,
    *,
    references: Sequence[Reference] = (),
    delays: Mapping[int, OneWayDelay] | None = None,
    one_way_ms: float | None = None,
    user: str | None = None,
    jitter_buffer: JitterBuffer | str = "adaptive",
    conceal: Conceal = "repeat",
    delay_basis: DelayBasis = "conversation",
    window_s: float = 10.0,
    codec: str | None = None,
    captures: Mapping[int, str] | None = None,
    call_id: str | None = None,
    min_correlation: float = 0.4,
    emodel_params: Mapping[str, Any] | None = None,
) -> CallScore:
    """Score one call, per direction: network-side always, full-reference with a reference.

    Parameters
    ----------
    streams : sequence of RtpStream, or Call
        The call's streams *as received* (the receiver-side capture of each), with their
        packet tables and payloads (``find_streams(..., keep_packets=True)``).
    references : sequence of Reference, keyword-only
        Reference speech. Each is looked for in every direction's audio (a call's two
        directions usually carry different speech); plays found are scored.
    delays : mapping of SSRC to OneWayDelay, optional, keyword-only
        Measured one-way delays (:func:`qoe.rtp.delay.delays_between`) of the streams
        seen by a sender-side capture too.
    one_way_ms : float, optional, keyword-only
        Network one-way delay of the least-delayed packet, for streams without a
        measured delay (instead of RTCP's or an assumed 0 ms); see the module docstring.
    user : str, optional, keyword-only
        The user's IP address: streams to it are "user listens", from it "user talks".
        Default: the SIP caller, when the call was set up by SIP; otherwise unknown.
    jitter_buffer : str or buffer, keyword-only
        ``"adaptive"`` (default: :class:`~qoe.rtp.jitterbuffer.AdaptiveBuffer`),
        ``"fixed:<ms>"`` or ``"none"``.
    conceal : {"repeat", "silence"}, keyword-only
        Loss concealment of the rebuilt audio; also chooses the G.711 preset of the
        network-side score (``"G.711-plc"`` for ``"repeat"``, ``"G.711"`` for ``"silence"``).
    delay_basis : {"conversation", "direction"}, keyword-only
        The delay the delay impairment uses (module docstring).
    window_s : float, keyword-only
        Window of the network-side per-window scores (default 10 s).
    codec : str, optional, keyword-only
        A G.113 preset name (:data:`qoe.voice.emodel.CODECS`) overriding the one chosen
        from the payload type.
    captures : mapping of SSRC to str, optional, keyword-only
        Which capture each stream was read from (reported only).
    call_id : str, optional, keyword-only
        Name of the call (default: the Call's, or the streams' SIP Call-ID / address pair).
    min_correlation : float, keyword-only
        Envelope correlation needed to locate a reference (:func:`qoe.voice.locate.locate_reference`).
    emodel_params : mapping, optional, keyword-only
        Other G.107 parameters (e.g. ``{"telr": 55}``) for every E-model term.

    Returns
    -------
    CallScore

    Raises
    ------
    InputError
        No streams, a stream without packets, bad options, a reference at another rate.

    Warns
    -----
    QoEWarning
        When a network one-way delay had to be assumed (0 ms).

    References
    ----------
    Pujol et al., IMC 2014, §7.1; ITU-T G.107 (06/2015); see the module docstring.
    """
    sip = None
    if isinstance(streams, Call):
        call_id = call_id or streams.call_id
        sip = streams.sip
        streams = streams.streams
    streams = list(streams)
    if not streams:
        raise InputError("score_call: no streams given")
    if delay_basis not in ("conversation", "direction"):
        raise InputError(f"delay_basis must be 'conversation' or 'direction'; given {delay_basis!r}")
    if conceal not in ("repeat", "silence"):
        raise InputError(f"conceal must be 'repeat' or 'silence'; given {conceal!r}")
    if one_way_ms is not None and not (math.isfinite(one_way_ms) and one_way_ms >= 0):
        raise InputError(f"one_way_ms must be a finite number of ms >= 0; given {one_way_ms!r}")
    if not (isinstance(window_s, (int, float)) and window_s > 0):
        raise InputError(f"window_s must be > 0; given {window_s!r}")
    buffer = parse_jitter_buffer(jitter_buffer)
    params = dict(emodel_params or {})
    delays = dict(delays or {})
    captures = dict(captures or {})
    call_id = call_id or next((s.call_id for s in streams if s.call_id), None) or pair_id(streams[0].key)

    call_notes: list[str] = []
    if user is not None:
        call_notes.append(_user_note(user, "given"))
    elif sip is not None and sip.caller:
        user = sip.caller
        call_notes.append(f"user's end: {user}, the SIP caller (From {sip.from_uri})")
    else:
        call_notes.append("user's end unknown: directions are not labelled (give user=<address>)")

    rtt = _rtt_ms(streams)
    preps = [
        _prepare(s, buffer=buffer, owd=delays.get(s.ssrc), one_way_ms=one_way_ms, rtt=rtt, capture=captures.get(s.ssrc))
        for s in streams
    ]
    assumed = [pr for pr in preps if pr.net_source == "assumed"]
    if assumed:
        warnings.warn(
            f"call {call_id}: one-way delay assumed 0 ms (plus the delay variation seen) for "
            f"{len(assumed)} stream(s): only one capture given and no RTCP round-trip time; "
            "give a sender-side capture or one_way_ms",
            QoEWarning,
            stacklevel=2,
        )
    if one_way_ms is None and any(pr.net_source == "measured-relative" for pr in preps):
        warnings.warn(
            f"call {call_id}: the two captures do not share a clock; one-way delay assumed 0 ms for the "
            "least-delayed packet (plus the measured variation); give one_way_ms",
            QoEWarning,
            stacklevel=2,
        )
    for pr in preps:
        k = pr.stream.key
        others = [o for o in preps if o.stream.key.src == k.dst and o.stream.key.dst == k.src]
        if delay_basis == "conversation":
            pr.ta_ms, how = _conversation_ta(pr, others)
        else:
            pr.ta_ms, how = pr.m2e_ms, "this direction's mouth-to-ear delay"
        pr.notes.append(f"delay impairment Id from: {how}")

    out = [
        _direction_score(pr, call_id=call_id, user=user, measured=pr.stream.ssrc in delays, delay_basis=delay_basis,
                         conceal=conceal, codec=codec, window_s=window_s, references=references,
                         min_correlation=min_correlation, emodel_params=params)
        for pr in preps
    ]
    order = {USER_TALKS: 0, USER_LISTENS: 1, None: 2}
    out.sort(key=lambda d: order[d.direction])
    return CallScore(call_id=call_id, user=user, directions=tuple(out), notes=tuple(call_notes))


def score_calls(
    streams: Sequence[RtpStream],
    *,
    sender_streams: Sequence[RtpStream] | None = None,
    sip_calls: Sequence[SipCall] = (),
    sender_sip_calls: Sequence[SipCall] = (),
    references: Sequence[Reference] = (),
    user: str | None = None,
    capture: str | None = None,
    sender_capture: str | None = None,
    clocks: Literal["auto", "same", "different"] = "auto",
    **options: Any,
) -> list[CallScore]:
    """Score every call of a capture (and, optionally, of the far end's capture).

    Parameters
    ----------
    streams : sequence of RtpStream
        The streams of the capture taken at the user's end (with packets and payloads).
    sender_streams : sequence of RtpStream, optional, keyword-only
        The streams of a capture taken at the far end. Streams seen in both are matched
        by SSRC (:func:`qoe.rtp.delay.delays_between`): their one-way delay is
        measured, each is scored from the capture at its receiving end, and (unless
        ``user`` is given) the user's end is the first capture's: streams received
        there are "user listens", streams received at the far end "user talks".
    sip_calls, sender_sip_calls : sequence of SipCall, keyword-only
        SIP calls of each capture (``scan_capture(...).calls``).
    references : sequence of Reference, keyword-only
        See :func:`score_call`.
    user : str, optional, keyword-only
        The user's IP address (see :func:`score_call`).
    capture, sender_capture : str, optional, keyword-only
        Names of the two captures, for the results.
    clocks : {"auto", "same", "different"}, keyword-only
        Whether the two captures share a clock (:func:`qoe.rtp.delay.one_way_delay`).
    **options
        Passed to :func:`score_call` (``jitter_buffer``, ``conceal``, ``one_way_ms``,
        ``delay_basis``, ``window_s``, ``codec``, ``min_correlation``, ``emodel_params``).

    Returns
    -------
    list of CallScore
        In order of the calls' first packets.

    Warns
    -----
    QoEWarning
        A reference found in no stream; a delay that had to be assumed.
    """
    from qoe.rtp.delay import delays_between  # noqa: PLC0415 - delay imports playout lazily

    streams = [s for s in streams if is_audio(s)]
    here, there = capture or "capture", sender_capture or "sender capture"
    delays: dict[int, OneWayDelay] = {}
    caps: dict[int, str] = {}
    chosen: list[RtpStream] = list(streams)
    two = sender_streams is not None
    extra_notes: list[str] = []
    if two:
        far = [s for s in sender_streams if is_audio(s)]  # type: ignore[union-attr]
        owds = delays_between(far, streams, clocks=clocks)
        by_ssrc_main = {s.ssrc: s for s in streams}
        by_ssrc_far = {s.ssrc: s for s in far}
        received_at_far: set[int] = set()
        for o in owds:
            if o.ssrc is None:
                continue
            delays[o.ssrc] = o
            if o.reversed:  # flows from the user's end to the far end: received at the far end
                received_at_far.add(o.ssrc)
        chosen = []
        for s in streams:
            if s.ssrc in received_at_far:
                chosen.append(by_ssrc_far[s.ssrc])
                caps[s.ssrc] = there
            else:
                chosen.append(s)
                caps[s.ssrc] = here
        unmatched = [s for s in far if s.ssrc not in by_ssrc_main]
        if unmatched:
            extra_notes.append(f"{len(unmatched)} stream(s) of the far end's capture are not in the user's capture "
                               "and were not scored")
    else:
        for s in streams:
            caps[s.ssrc] = here
    calls = find_calls(chosen, list(sip_calls) + list(sender_sip_calls))
    out = []
    for call in calls:
        u = user
        if u is None and two:
            u = _user_at(here, call, delays, caps)
        res = score_call(call, references=references, delays=delays, user=u, captures=caps, **options)
        notes = res.notes
        if u is not None and user is None:  # score_call took u as given: say where it came from
            given, found = _user_note(u, "given"), _user_note(u, "where the first of the two captures was taken")
            notes = tuple(found if n == given else n for n in notes)
        if notes != res.notes or extra_notes:
            res = replace(res, notes=notes + tuple(extra_notes))
        out.append(res)
    if references:
        located = {p.reference for c in out for d in c.directions if d.full_reference for p in d.full_reference.plays}
        for ref in references:
            if ref.name not in located:
                warnings.warn(f"reference {ref.name!r} was not found in any stream's audio", QoEWarning, stacklevel=2)
    return out
