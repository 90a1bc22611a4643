"""What the call scorer takes: reference speech, and audio streams grouped into calls.

Import these names from :mod:`qoe.voice.call`; grouping (pure bookkeeping over stream
keys) lives apart from scoring.

References
----------
.. [1] RFC 3551, §4.5 (Table 4: audio encodings) and §5 (Table 5: video clock rates).
.. [2] RFC 4961 (symmetric RTP: one port pair carries both directions of a call).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from qoe.rtp import RtpStream, StreamKey
    from qoe.rtp.sip import SipCall

__all__ = ["Reference", "Call", "find_calls", "is_audio", "pair_id"]


@dataclass(frozen=True, slots=True)
class Reference:
    """A reference speech signal and its name.

    Attributes
    ----------
    samples : numpy.ndarray
        1-D speech (int16 or float).
    fs : int
        Its sample rate (must equal the stream's RTP clock rate: 8000 for G.711).
    name : str
        How results name it (e.g. the file name).
    """

    samples: np.ndarray
    fs: int
    name: str = "reference"


@dataclass(frozen=True)
class Call:
    """The streams of one call: SIP-grouped, or the two directions of one address pair.

    Attributes
    ----------
    call_id : str
        SIP Call-ID, or ``"a:port <-> b:port"`` for streams without signalling.
    streams : tuple of RtpStream
        Its audio streams, in order of their first packet.
    sip : SipCall or None
        The SIP dialogue, when the capture had it.
    """

    call_id: str
    streams: tuple[RtpStream, ...]
    sip: SipCall | None = None


def is_audio(stream: RtpStream) -> bool:
    """Whether voice scoring takes ``stream``: audio (:func:`qoe.rtp.media_kind`) with a known clock rate."""
    return stream.media == "audio" and bool(stream.clock_rate)


def pair_id(key: StreamKey) -> str:
    """The name of a call without signalling: its two ends, ``"a:port <-> b:port"``, sorted."""
    a, b = sorted([f"{key.src}:{key.sport}", f"{key.dst}:{key.dport}"])
    return f"{a} <-> {b}"


def find_calls(streams: Sequence[RtpStream], sip_calls: Sequence[SipCall] = ()) -> list[Call]:
    """Group audio streams into calls.

    Streams announced by the same SIP call (``RtpStream.call_id``) form one call; so do
    streams that flow both ways between the same two ports (symmetric RTP, RFC 4961) and
    any stream sharing a port pair with a SIP-grouped one. Video streams (90 kHz clock)
    and streams of unknown clock rate are left out.

    Parameters
    ----------
    streams : sequence of RtpStream
        E.g. :func:`qoe.rtp.find_streams` or ``scan_capture(...).streams``.
    sip_calls : sequence of SipCall, optional
        ``scan_capture(...).calls``: attached to the calls by Call-ID.

    Returns
    -------
    list of Call
        In order of their first stream.
    """
    audio = [s for s in streams if is_audio(s)]
    parent = list(range(len(audio)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def join(i: int, j: int) -> None:
        parent[root(i)] = root(j)

    by_pair: dict[frozenset[tuple[str, int]], int] = {}
    by_call: dict[str, int] = {}
    for i, s in enumerate(audio):
        k = s.key
        pair = frozenset({(k.src, k.sport), (k.dst, k.dport)})
        if pair in by_pair:
            join(i, by_pair[pair])
        else:
            by_pair[pair] = i
        if s.call_id:
            if s.call_id in by_call:
                join(i, by_call[s.call_id])
            else:
                by_call[s.call_id] = i
    groups: dict[int, list[RtpStream]] = {}
    for i, s in enumerate(audio):
        groups.setdefault(root(i), []).append(s)
    sip = {c.call_id: c for c in sip_calls}
    calls = []
    for members in groups.values():
        members.sort(key=lambda s: s.stats.first_ns)
        cid = next((s.call_id for s in members if s.call_id), None)
        if cid is None:
            cid = pair_id(members[0].key)
        calls.append(Call(call_id=cid, streams=tuple(members), sip=sip.get(cid)))
    calls.sort(key=lambda c: c.streams[0].stats.first_ns)
    return calls
