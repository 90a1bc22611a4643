"""Which ended RTP streams make whole calls that can be handed on (the streaming scan).

A streaming scan (:func:`qoe.rtp.iter_scan`) hands a call on once every stream of it has
ended, and in the order of the calls' first packets, so that results come out as from a
whole-capture scan. Streams belong together when they share a SIP Call-ID or a pair of
UDP ends (symmetric RTP, RFC 4961 §3: one port pair carries both directions of a call);
flows still tracked (live streams, undecided flows) take part, so a call with one live
member waits.

References
----------
.. [1] RFC 4961, "Symmetric RTP / RTP Control Protocol (RTCP)" (2007), §3.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

__all__ = ["Member", "ready_groups"]

#: One stream or tracked flow: (first frame, its pair of UDP ends, its Call-ID or None, ended).
Member = tuple[int, Hashable, "str | None", bool]


def ready_groups(members: Sequence[Member]) -> list[list[int]]:
    """The groups of ``members`` (indices) that can be handed on, in order of their first frame.

    Members sharing a pair of UDP ends or a Call-ID are one group (transitively). A group
    is ready when all its members have ended, and it is handed on only when no group with
    a live member started before it (so the order of first packets is kept).
    """
    parent = list(range(len(members)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[Hashable, int] = {}
    for i, (_, pair, call_id, _) in enumerate(members):
        for k in (pair, call_id):
            if k is None:
                continue
            j = first.setdefault(k, i)
            if j != i:
                parent[root(i)] = root(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(members)):
        groups.setdefault(root(i), []).append(i)
    bound = min((min(members[i][0] for i in g) for g in groups.values() if not all(members[i][3] for i in g)),
                default=None)
    ready = sorted((min(members[i][0] for i in g), g) for g in groups.values() if all(members[i][3] for i in g))
    return [g for start, g in ready if bound is None or start <= bound]
