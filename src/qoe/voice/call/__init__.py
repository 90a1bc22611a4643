"""Call scores: the seed paper's VoIP QoE and the network-side E-model, per direction.

A call has a stream each way; the seed paper (Pujol et al., IMC 2014, §7) scores each
direction from the user's point of view: *user talks* (the user's voice at the far end)
and *user listens* (the far end's voice at the user). For each direction this package
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
    ``network_delay_ms`` or RTCP's round-trip time / 2 as the delay of the least-delayed
    packet, plus the delay variation the receiver capture shows (arrival time minus RTP
    timestamp, above its minimum); or that variation alone (a base of 0 ms, *assumed*,
    with a :class:`~qoe.errors.QoEWarning`).

    Delay hurts a conversation, not a direction: a long uplink queue makes the user wait
    for the answer whether the user talks or listens (the seed paper §7.2 finds the
    "user listens" score falling with uplink buffers for this reason). With
    ``delay_basis="conversation"`` (default) ``Ta`` of both directions is the mean of the
    two directions' mouth-to-ear delays (half the mouth-to-ear round trip; our reading
    of G.107's Ta for asymmetric paths); ``"direction"`` uses each direction's own delay.
    ``T = Ta`` and ``Tr = 2·Ta``, the one-way delay convention of
    :func:`qoe.voice.emodel.r_factor` (``mouth_to_ear_ms``).

How to score — jitter buffer, concealment, delay basis, window, codec preset, the user's
end, the network delay when it is not measured, whether two captures share a clock —
is one frozen :class:`CallOptions`, which :func:`qoe.score` and the ``qoe score`` command
build. Every result says which inputs were measured and which assumed (``inputs`` and
``notes``).

Layout: ``_options`` (:class:`CallOptions`), ``_inputs`` (:class:`Reference`,
:class:`Call`, :func:`find_calls`), ``_results`` (the result classes), ``_delay`` (play
out and delays per stream), ``_network`` (the network-side score), ``_reference`` (locate
and score the plays of a reference), ``_score`` (:func:`score_call`, :func:`score_calls`, :func:`iter_score_calls`).
Import every name from here.

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

from qoe.voice.call._inputs import Call, Reference, find_calls
from qoe.voice.call._options import CallOptions
from qoe.voice.call._results import (
    USER_LISTENS,
    USER_TALKS,
    CallScore,
    DelayTerms,
    DirectionScore,
    FullReferenceScore,
    NetworkScore,
    PlayScore,
)
from qoe.voice.call._score import iter_score_call_groups, iter_score_calls, score_call, score_calls

__all__ = [
    "score_call",
    "score_calls",
    "iter_score_calls",
    "iter_score_call_groups",
    "find_calls",
    "CallOptions",
    "Reference",
    "Call",
    "CallScore",
    "DirectionScore",
    "DelayTerms",
    "NetworkScore",
    "FullReferenceScore",
    "PlayScore",
    "USER_TALKS",
    "USER_LISTENS",
]
