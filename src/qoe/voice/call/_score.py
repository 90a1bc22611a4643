"""The call scorer's entry points: :func:`score_call` (one call) and :func:`score_calls` (a capture).

Per call: each stream is played out and its delays found (:mod:`._delay`), the delay
the delay impairment uses is chosen (``delay_basis``), then each direction is scored on
the network side (:mod:`._network`) and, with references, on the full reference
(:mod:`._reference`). See :mod:`qoe.voice.call` for the method.
"""

from __future__ import annotations

import warnings
from types import MappingProxyType
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from qoe.errors import InputError, QoEWarning
from qoe.rtp.delay import OneWayDelay, delays_between
from qoe.rtp.jitterbuffer import parse_jitter_buffer
from qoe.rtp.lossmodel import loss_pattern
from qoe.voice.call._delay import Prep, delay_terms, prepare, rtt_ms, set_ta
from qoe.voice.call._inputs import Call, Reference, find_calls, is_audio, pair_id
from qoe.voice.call._network import emodel_preset, network_score
from qoe.voice.identify import recognised_audio, _with_codec
from qoe.voice.netscore import window_ranges
from qoe.voice.call._options import CallOptions
from qoe.voice.call._reference import full_reference
from qoe.voice.call._results import USER_LISTENS, USER_TALKS, CallScore, Direction, DirectionScore

if TYPE_CHECKING:  # pragma: no cover
    from qoe.rtp import RtpStream
    from qoe.rtp.sip import SipCall

__all__ = ["score_call", "score_calls", "iter_score_calls", "iter_score_call_groups"]

_NONE: Mapping[int, str] = MappingProxyType({})


# --------------------------------------------------------------------------- the user's end


def _direction_of(stream: RtpStream, user: str | None) -> Direction | None:
    if user is None:
        return None
    if stream.key.dst == user:
        return USER_LISTENS
    if stream.key.src == user:
        return USER_TALKS
    return None


def _user_end(given: str | None, found: str | None, sip: SipCall | None) -> tuple[str | None, str]:
    """The user's end of a call and the note saying how it was chosen.

    By order of preference: the ``user`` option; the address at which the first of two
    captures was taken (``found``); the SIP caller; unknown.
    """
    if given is not None:
        return given, f"user's end: {given} (given)"
    if found is not None:
        return found, f"user's end: {found} (where the first of the two captures was taken)"
    if sip is not None and sip.caller:
        return sip.caller, f"user's end: {sip.caller}, the SIP caller (From {sip.from_uri})"
    return None, "user's end unknown: directions are not labelled (give user=<address>)"


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


# --------------------------------------------------------------------------- one direction


def _direction_score(
    prep: Prep,
    *,
    call_id: str,
    user: str | None,
    measured: bool,
    options: CallOptions,
    references: Sequence[Reference],
    recognised: Mapping[int, str] = _NONE,
) -> DirectionScore:
    """Every score of one stream, once its delays are known; ``measured``: seen by both captures;
    ``recognised``: the evidence of codecs recognised without SDP, by SSRC."""
    s = prep.stream
    pl = prep.playout
    notes = list(prep.notes)
    if s.ssrc in recognised:
        notes.insert(0, recognised[s.ssrc])
    inputs = {
        "network_delay": prep.net_source,
        "packetisation_delay": "SDP a=ptime" if s.ptime_ms else "RTP timestamps",
        "jitter_buffer": f"simulated ({pl.jitter_buffer})",
        "loss": "measured at the receiver" if measured else "measured at the capture point",
        "delay_basis": options.delay_basis,
    }
    if not measured:
        notes.append(
            "loss and delay variation as seen at the capture point: if the capture was taken at the sender of "
            "this stream, the network's effect on it is not in the capture"
        )
    lp = loss_pattern(pl.lost | pl.slot_late)
    params = options.emodel_params
    delay = delay_terms(prep, basis=options.delay_basis, emodel_params=params)
    preset, band, preset_note = emodel_preset(s, options.conceal, options.codec)
    notes.append(preset_note)
    network = None
    if preset is not None and pl.played.any():
        try:
            network = network_score(prep, preset, window_s=options.window_s, emodel_params=params, band=band)
            inputs["codec_impairment"] = preset
            # G.107 Table 3: bufferbloat delays (seconds) are past its 500 ms; said once per direction, not warned
            notes.extend(f"E-model input {m} (scores extrapolated)" for m in window_ranges(network.windows, **params))
        except InputError as exc:  # e.g. a G.113 preset without Bpl on a lossy stream
            notes.append(f"network-side score skipped: {exc}")
    full = None
    if references:
        full, fr_notes = full_reference(prep, references, conceal=options.conceal,
                                        min_correlation=options.min_correlation, emodel_params=params)
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
        jitter_buffer=pl.jitter_buffer,
        conceal=options.conceal,
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


# --------------------------------------------------------------------------- one call


def _prepare_call(
    streams: Sequence[RtpStream],
    *,
    call_id: str,
    options: CallOptions,
    delays: Mapping[int, OneWayDelay],
    captures: Mapping[int, str],
    delay_guesses: list[tuple[str, int, bool]] | None = None,
) -> list[Prep]:
    """Each stream played out with its delays, and the delay its Id uses.

    Calls whose delay had to be assumed are added to ``delay_guesses`` as (call, streams
    with an assumed delay, whether the delays are relative), for ``_warn_delays``.
    """
    rtt = rtt_ms(streams)
    jitter_buffer = parse_jitter_buffer(options.jitter_buffer)
    base = options.network_delay_ms
    preps = [prepare(s, jitter_buffer=jitter_buffer, owd=delays.get(s.ssrc), base_ms=base, rtt=rtt, capture=captures.get(s.ssrc))
             for s in streams]
    if delay_guesses is not None:
        assumed = sum(pr.net_source == "assumed" for pr in preps)
        relative = base is None and any(pr.net_source == "measured-relative" for pr in preps)
        if assumed or relative:
            delay_guesses.append((call_id, assumed, relative))
    set_ta(preps, options.delay_basis)
    return preps


def _score_call(
    streams: Sequence[RtpStream],
    *,
    call_id: str,
    sip: SipCall | None,
    options: CallOptions,
    references: Sequence[Reference],
    delays: Mapping[int, OneWayDelay],
    captures: Mapping[int, str],
    found_user: str | None = None,
    extra_notes: Sequence[str] = (),
    delay_guesses: list[tuple[str, int, bool]] | None = None,
    recognised: Mapping[int, str] = _NONE,
) -> CallScore:
    user, user_note = _user_end(options.user, found_user, sip)
    preps = _prepare_call(streams, call_id=call_id, options=options, delays=delays, captures=captures,
                          delay_guesses=delay_guesses)
    out = [
        _direction_score(pr, call_id=call_id, user=user, measured=pr.stream.ssrc in delays, options=options,
                         references=references, recognised=recognised)
        for pr in preps
    ]
    order = {USER_TALKS: 0, USER_LISTENS: 1, None: 2}
    out.sort(key=lambda d: order[d.direction])
    return CallScore(call_id=call_id, user=user, directions=tuple(out), notes=(user_note, *extra_notes))


def score_call(
    streams: Sequence[RtpStream] | Call,
    *,
    references: Sequence[Reference] = (),
    delays: Mapping[int, OneWayDelay] | None = None,
    captures: Mapping[int, str] | None = None,
    call_id: str | None = None,
    options: CallOptions | None = None,
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
    captures : mapping of SSRC to str, optional, keyword-only
        Which capture each stream was read from (reported only).
    call_id : str, optional, keyword-only
        Name of the call (default: the Call's, or the streams' SIP Call-ID / address pair).
    options : CallOptions, optional, keyword-only
        How to score (jitter buffer, concealment, delay basis, window, codec preset, the
        user's end, the network delay when not measured, ...); default ``CallOptions()``.
        The user's end defaults here to the SIP caller, when the call was set up by SIP.

    Returns
    -------
    CallScore

    Raises
    ------
    InputError
        No streams, a stream without packets, a reference at another rate.

    Warns
    -----
    QoEWarning
        When a network one-way delay had to be assumed (0 ms).

    References
    ----------
    Pujol et al., IMC 2014, §7.1; ITU-T G.107 (06/2015); see :mod:`qoe.voice.call`.
    """
    sip = None
    if isinstance(streams, Call):
        call_id = call_id or streams.call_id
        sip = streams.sip
        streams = streams.streams
    streams = list(streams)
    if not streams:
        raise InputError("score_call: no streams given")
    options = _options(options)
    call_id = call_id or next((s.call_id for s in streams if s.call_id), None) or pair_id(streams[0].key)
    guesses: list[tuple[str, int, bool]] = []
    out = _score_call(streams, call_id=call_id, sip=sip, options=options, references=references,
                      delays=dict(delays or {}), captures=dict(captures or {}), delay_guesses=guesses)
    _warn_delays(guesses, stacklevel=2)
    return out


def _warn_delays(guesses: Sequence[tuple[str, int, bool]], *, stacklevel: int) -> None:
    """One warning for all the calls whose one-way delay was assumed (not one per call)."""

    def which(calls: list[str]) -> str:
        shown = ", ".join(calls[:3]) + (f" and {len(calls) - 3} more" if len(calls) > 3 else "")
        return f"call {shown}" if len(calls) == 1 else f"{len(calls)} calls ({shown})"

    assumed = [(c, n) for c, n, _ in guesses if n]
    if assumed:
        warnings.warn(
            f"{which([c for c, _ in assumed])}: one-way delay assumed 0 ms (plus the delay variation seen) for "
            f"{sum(n for _, n in assumed)} stream(s): only one capture given and no RTCP round-trip time; "
            "give a sender-side capture or network_delay_ms",
            QoEWarning,
            stacklevel=stacklevel + 1,
        )
    relative = [c for c, _, r in guesses if r]
    if relative:
        warnings.warn(
            f"{which(relative)}: the two captures do not share a clock; one-way delay assumed 0 ms for the "
            "least-delayed packet (plus the measured variation); give network_delay_ms",
            QoEWarning,
            stacklevel=stacklevel + 1,
        )


def _recognised(stream: RtpStream, evidence: dict[int, str]) -> RtpStream:
    """``stream`` with the codec its payloads show when no SDP named its dynamic payload type
    (:mod:`qoe.voice.identify`; its evidence added to ``evidence``); unchanged otherwise, also
    when nothing is recognised (it is not audio qoe can score, as before)."""
    found = recognised_audio(stream)
    if found is None:
        return stream
    evidence[stream.ssrc] = found.evidence
    return _with_codec(stream, found)


def _options(options: CallOptions | None) -> CallOptions:
    if options is None:
        return CallOptions()
    if not isinstance(options, CallOptions):
        raise InputError(f"options must be a qoe.voice.CallOptions; given a {type(options).__name__}")
    return options


# --------------------------------------------------------------------------- a capture


def _pick_receivers(
    streams: Sequence[RtpStream], far: Sequence[RtpStream], owds: Sequence[OneWayDelay], *, here: str, there: str
) -> tuple[list[RtpStream], dict[int, OneWayDelay], dict[int, str]]:
    """Each stream as seen at its receiving end, the measured delays and which capture each came from."""
    delays = {o.ssrc: o for o in owds if o.ssrc is not None}
    received_at_far = {o.ssrc for o in owds if o.ssrc is not None and o.reversed}  # user's end -> far end
    by_ssrc_far = {s.ssrc: s for s in far}
    chosen, caps = [], {}
    for s in streams:
        at_far = s.ssrc in received_at_far
        chosen.append(by_ssrc_far[s.ssrc] if at_far else s)
        caps[s.ssrc] = there if at_far else here
    return chosen, delays, caps


def score_calls(
    streams: Sequence[RtpStream],
    *,
    sender_streams: Sequence[RtpStream] | None = None,
    sip_calls: Sequence[SipCall] = (),
    sender_sip_calls: Sequence[SipCall] = (),
    references: Sequence[Reference] = (),
    capture: str | None = None,
    sender_capture: str | None = None,
    options: CallOptions | None = None,
) -> list[CallScore]:
    """Score every call of a capture (and, optionally, of the far end's capture).

    Parameters
    ----------
    streams, sender_streams, sip_calls, sender_sip_calls, references, capture, sender_capture, options
        See :func:`iter_score_calls`.

    Returns
    -------
    list of CallScore
        In order of the calls' first packets: ``list(iter_score_calls(...))``.

    Warns
    -----
    QoEWarning
        A reference found in no stream; a delay that had to be assumed.
    """
    return list(iter_score_calls(streams, sender_streams=sender_streams, sip_calls=sip_calls,
                                 sender_sip_calls=sender_sip_calls, references=references, capture=capture,
                                 sender_capture=sender_capture, options=options))


def iter_score_calls(
    streams: Sequence[RtpStream],
    *,
    sender_streams: Sequence[RtpStream] | None = None,
    sip_calls: Sequence[SipCall] = (),
    sender_sip_calls: Sequence[SipCall] = (),
    references: Sequence[Reference] = (),
    capture: str | None = None,
    sender_capture: str | None = None,
    options: CallOptions | None = None,
) -> Iterator[CallScore]:
    """Score every call of a capture (and, optionally, of the far end's capture), one call at a time.

    Parameters
    ----------
    streams : sequence of RtpStream
        The streams of the capture taken at the user's end (with packets and payloads).
    sender_streams : sequence of RtpStream, optional, keyword-only
        The streams of a capture taken at the far end. Streams seen in both are matched
        by SSRC (:func:`qoe.rtp.delay.delays_between`, with ``options.clocks``): their
        one-way delay is measured, each is scored from the capture at its receiving end,
        and (unless ``options.user`` is given) the user's end is the first capture's:
        streams received there are "user listens", streams received at the far end
        "user talks".
    sip_calls, sender_sip_calls : sequence of SipCall, keyword-only
        SIP calls of each capture (``scan_capture(...).calls``).
    references : sequence of Reference, keyword-only
        See :func:`score_call`.
    capture, sender_capture : str, optional, keyword-only
        Names of the two captures, for the results.
    options : CallOptions, optional, keyword-only
        How to score (see :class:`CallOptions`); default ``CallOptions()``.

    Yields
    ------
    CallScore
        Each call as soon as it is scored, in order of the calls' first packets; the
        warnings below come when the last call has been given.

    Raises
    ------
    InputError
        Bad ``options`` (at the call).

    Warns
    -----
    QoEWarning
        A reference found in no stream; a delay that had to be assumed.
    """
    return _iter_score_calls(streams, sender_streams=sender_streams, sip_calls=sip_calls,
                             sender_sip_calls=sender_sip_calls, references=references, capture=capture,
                             sender_capture=sender_capture, options=_options(options))


def _iter_score_calls(
    streams: Sequence[RtpStream],
    *,
    sender_streams: Sequence[RtpStream] | None = None,
    sip_calls: Sequence[SipCall] = (),
    sender_sip_calls: Sequence[SipCall] = (),
    references: Sequence[Reference] = (),
    capture: str | None = None,
    sender_capture: str | None = None,
    options: CallOptions,
) -> Iterator[CallScore]:
    """:func:`iter_score_calls` with the options checked."""
    recognised: dict[int, str] = {}
    streams = [s for s in (_recognised(s, recognised) for s in streams) if is_audio(s)]
    here, there = capture or "capture", sender_capture or "sender capture"
    delays: dict[int, OneWayDelay] = {}
    caps = {s.ssrc: here for s in streams}
    chosen: list[RtpStream] = list(streams)
    extra_notes: list[str] = []
    two = sender_streams is not None
    if two:
        far = [s for s in (_recognised(s, {}) for s in sender_streams) if is_audio(s)]  # type: ignore[union-attr]
        owds = delays_between(far, streams, clocks=options.clocks)
        chosen, delays, caps = _pick_receivers(streams, far, owds, here=here, there=there)
        main = {s.ssrc for s in streams}
        unmatched = [s for s in far if s.ssrc not in main]
        if unmatched:
            extra_notes.append(f"{len(unmatched)} stream(s) of the far end's capture are not in the user's capture "
                               "and were not scored")
    guesses: list[tuple[str, int, bool]] = []
    located: set[str] = set()
    for call in find_calls(chosen, list(sip_calls) + list(sender_sip_calls)):
        found = _user_at(here, call, delays, caps) if two and options.user is None else None
        scored = _score_call(list(call.streams), call_id=call.call_id, sip=call.sip, options=options,
                             references=references, delays=delays, captures=caps, found_user=found,
                             extra_notes=extra_notes, delay_guesses=guesses, recognised=recognised)
        located.update(p.reference for d in scored.directions if d.full_reference for p in d.full_reference.plays)
        yield scored
    _warn_delays(guesses, stacklevel=2)
    if references:
        for ref in references:
            if ref.name not in located:
                warnings.warn(f"reference {ref.name!r} was not found in any stream's audio", QoEWarning, stacklevel=2)


def iter_score_call_groups(
    groups: Iterable[tuple[Sequence[RtpStream], Sequence[SipCall]]],
    *,
    references: Sequence[Reference] = (),
    capture: str | None = None,
    options: CallOptions | None = None,
) -> Iterator[CallScore]:
    """Score the calls of one capture as they come, group by group (:func:`qoe.rtp.iter_scan`).

    Parameters
    ----------
    groups : iterable of (sequence of RtpStream, sequence of SipCall)
        Streams that hold whole calls (no call has streams in two groups), with their SIP
        calls, in order of their first packet: what :func:`qoe.rtp.iter_scan` gives. A
        group is taken only when the calls of the one before have been given.
    references, capture, options
        As :func:`iter_score_calls` (one capture: no far end).

    Yields
    ------
    CallScore
        Each call as :func:`iter_score_calls` scores it given all the streams and calls at
        once, in the same order; nothing of a group is kept once its calls are given.

    Warns
    -----
    QoEWarning
        As :func:`iter_score_calls`, when the last group has been scored.
    """
    return _iter_groups(groups, references=references, capture=capture, options=_options(options))


def _iter_groups(groups: Iterable[tuple[Sequence[RtpStream], Sequence[SipCall]]], *, references: Sequence[Reference],
                 capture: str | None, options: CallOptions) -> Iterator[CallScore]:
    here = capture or "capture"
    guesses: list[tuple[str, int, bool]] = []
    located: set[str] = set()
    extra_notes: list[str] = []
    for group, sip_calls in groups:
        recognised: dict[int, str] = {}
        streams = [s for s in (_recognised(s, recognised) for s in group) if is_audio(s)]
        caps = {s.ssrc: here for s in streams}
        for call in find_calls(streams, list(sip_calls)):
            scored = _score_call(list(call.streams), call_id=call.call_id, sip=call.sip, options=options,
                                 references=references, delays={}, captures=caps, found_user=None,
                                 extra_notes=extra_notes, delay_guesses=guesses, recognised=recognised)
            located.update(p.reference for d in scored.directions if d.full_reference for p in d.full_reference.plays)
            yield scored
    _warn_delays(guesses, stacklevel=2)
    for ref in references:
        if ref.name not in located:
            warnings.warn(f"reference {ref.name!r} was not found in any stream's audio", QoEWarning, stacklevel=2)
