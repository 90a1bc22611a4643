"""The scan's SIP book: SIP messages taken once, and the media their SDP announced.

:class:`SipBook` takes the SIP messages of a capture in arrival order, sets aside copies
of a message the capture saw twice (the Linux ``any`` device, a span port), and keeps
every SDP media announcement by the address and port it names, in capture order: an
announcement holds from its frame until the next one for the same address and port (a
later call or a re-INVITE, RFC 3264 §8). The scan asks it which announcement an RTP flow
follows (:meth:`SipBook.announcement`) and which ports carry RTCP.

References
----------
.. [1] RFC 3261, "SIP: Session Initiation Protocol", §17.1.1.1 (T1 = 500 ms),
   §17.1.1.2 (Timer A), §17.1.2.2 (Timer E), §13.3.1.4 (2xx retransmission).
.. [2] RFC 3264, "An Offer/Answer Model with SDP", §6 (answer), §8 (modifying a session).
.. [3] RFC 3550 §11 (RTCP on the next port), RFC 3605 (``a=rtcp``).
"""

from __future__ import annotations

import collections

from qoe.rtp.sip import SdpMedia, SipMessage, parse_sip

# A SIP message whose bytes equal one seen less than this long before is a copy of it (the
# capture saw the packet twice: Linux "any" device, span port), not a new message: a UA
# retransmits over UDP no earlier than T1 (RFC 3261 §17.1.1.2 Timer A, §17.1.2.2 Timer E,
# §13.3.1.4 for 2xx), whose default is 500 ms (§17.1.1.1).
SIP_COPY_NS = 500_000_000

#: One announcement: (frame of its SIP message, Call-ID, media section).
Announcement = tuple[int, "str | None", SdpMedia]


def in_force(seen: list[Announcement] | None, frame: int) -> Announcement | None:
    """The announcement (of one address and port, in capture order) in force at ``frame``:
    the last one before it, else the first one after it."""
    if not seen:
        return None
    pick = seen[0]
    for ann in seen:  # in capture order; a port is rarely announced more than a few times
        if ann[0] > frame:
            break
        pick = ann
    return pick


class SipBook:
    """SIP messages of a capture, de-duplicated, and the SDP announcements by address and port."""

    def __init__(self, *, keep_all: bool = True) -> None:
        # keep_all: every message, for the whole capture's calls (scan_capture); else only
        # by Call-ID until the call is handed on (pop_calls) or forgotten (forget_idle)
        self.keep_all = keep_all
        self.messages: list[SipMessage] = []
        self.by_call: dict[str, list[SipMessage]] = {}  # (not keep_all) Call-ID -> its messages
        self.ended: dict[str, int] = {}  # Call-ID -> time of its first BYE or CANCEL (RFC 3261 §15)
        self._seen: dict[bytes, int] = {}  # SIP messages of the last SIP_COPY_NS: bytes -> when seen
        self._order: collections.deque[tuple[int, bytes]] = collections.deque()  # the same, in arrival order
        self.copies = 0
        # (address, port) -> its announcements in capture order: (frame, Call-ID, media)
        self.announced: dict[tuple[str, int], list[Announcement]] = {}
        self.new_announcements = False  # set when one is added; the scan clears it
        self.rtcp_ports: set[tuple[str, int]] = set()

    def add(self, data: bytes, *, time_ns: int, frame: int, src: str, sport: int, dst: str, dport: int) -> None:
        """Take one datagram that starts like a SIP message (unless it is a copy)."""
        t = time_ns
        seen = self._seen.get(data)
        if seen is not None and abs(t - seen) < SIP_COPY_NS:  # a copy of a message already taken
            self.copies += 1
            return
        self._seen[data] = t
        self._order.append((t, data))
        while self._order and t - self._order[0][0] >= SIP_COPY_NS:  # forget what is out of the window
            t0, d0 = self._order.popleft()
            if self._seen.get(d0) == t0:
                del self._seen[d0]
        msg = parse_sip(data, frame=frame, time_ns=t, src=src, sport=sport, dst=dst, dport=dport)
        if msg is None:
            return
        if self.keep_all:
            self.messages.append(msg)
        elif msg.call_id:
            self.by_call.setdefault(msg.call_id, []).append(msg)
        if msg.call_id and msg.method in ("BYE", "CANCEL"):
            self.ended.setdefault(msg.call_id, t)
        if msg.sdp is not None:
            for m in msg.sdp.media:
                if m.port and m.address:
                    # each announcement holds from its frame until the next one for the
                    # same address and port (a later call or a re-INVITE, RFC 3264 §8)
                    self.announced.setdefault((m.address, m.port), []).append((msg.frame, msg.call_id, m))
                    self.rtcp_ports.add((m.address, m.rtcp_port or (m.port + 1)))
                    self.new_announcements = True

    def names(self, src: str, sport: int, dst: str, dport: int) -> bool:
        """Whether an announcement names either end of a flow."""
        return (dst, dport) in self.announced or (src, sport) in self.announced

    def announcement(self, src: str, sport: int, dst: str, dport: int, first_frame: int) -> tuple[str | None, SdpMedia] | None:
        """(Call-ID, media) of the SDP announcement that a flow follows.

        The announcement of the flow's receiving address and port (else of its sending
        one, for symmetric RTP) in force at the flow's first packet: the last one seen
        before it. A flow that starts before any announcement of its port takes the
        first one made after it.
        """
        seen = self.announced.get((dst, dport)) or self.announced.get((src, sport))
        pick = in_force(seen, first_frame)
        return None if pick is None else (pick[1], pick[2])

    def both_ends(self, src: str, sport: int, dst: str, dport: int, first_frame: int) -> tuple[SdpMedia | None, SdpMedia | None]:
        """(sender's, receiver's) media sections of a flow, for its SRTP keys.

        The receiving side's announcement is the one of the flow's destination address and
        port; the sender's, of its source address and port (symmetric RTP, RFC 4961), else
        the other party's media section of the same call (RFC 3264 §6).
        """
        recv = in_force(self.announced.get((dst, dport)), first_frame)
        send = in_force(self.announced.get((src, sport)), first_frame)
        if send is not None and recv is not None and send[1] != recv[1]:
            send = None  # the source port was announced by another call
        if send is None and recv is not None and recv[1] is not None:
            other = [ann for (addr, port), seen in self.announced.items() if (addr, port) != (dst, dport)
                     for ann in seen if ann[1] == recv[1] and ann[2].media == recv[2].media]
            send = in_force(sorted(other, key=lambda x: x[0]), first_frame) if other else None
        return (send[2] if send is not None else None), (recv[2] if recv is not None else None)

    def pop_calls(self, call_ids: set[str]) -> list[SipMessage]:
        """(Not ``keep_all``) the messages of calls ``call_ids``, in capture order, forgotten
        here with their announcements: the calls have been handed on."""
        msgs = [m for c in call_ids for m in self.by_call.pop(c, ())]
        msgs.sort(key=lambda m: m.frame)
        for c in call_ids:
            self.ended.pop(c, None)
        self._drop_announcements(call_ids)
        return msgs

    def forget_idle(self, before_ns: int, keep: set[str]) -> None:
        """(Not ``keep_all``) forget calls (other than ``keep``) whose last message came
        before ``before_ns``: calls that no stream follows (a failed INVITE, OPTIONS)."""
        idle = {c for c, msgs in self.by_call.items() if c not in keep and msgs[-1].time_ns < before_ns}
        if idle:
            for c in idle:
                del self.by_call[c]
                self.ended.pop(c, None)
            self._drop_announcements(idle)

    def _drop_announcements(self, call_ids: set[str]) -> None:
        for where in [w for w, seen in self.announced.items() if any(a[1] in call_ids for a in seen)]:
            seen = self.announced[where]
            gone = [a for a in seen if a[1] in call_ids]
            left = [a for a in seen if a[1] not in call_ids]
            for a in gone:
                m = a[2]
                self.rtcp_ports.discard((m.address, m.rtcp_port or (m.port + 1)))
            if left:
                self.announced[where] = left
            else:
                del self.announced[where]
