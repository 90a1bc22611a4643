"""A user's SDP under BUNDLE, and RTX streams tied to the media streams they repair.

Under BUNDLE (RFC 8843) every media section of a WebRTC call shares one 5-tuple, so a
user-given SDP (the browser's offer or answer) cannot be matched to streams by port. It is
matched here by what the packets carry, in the order of RFC 8843 §9.2 ("Associating
RTP/RTCP Streams with the Correct SDP Media Description"): the MID header extension
(``urn:ietf:params:rtp-hdrext:sdes:mid``, RFC 8843 §15, its ID from the SDP's ``a=extmap``)
of the stream's first packets that carry one names the section's ``a=mid``; else the SSRC a
section lists (``a=ssrc``, RFC 5576 §4.1); else a payload type that only one section maps
(``a=rtpmap``; a payload type in more than one section of a bundle tells nothing, §9.2).
Browsers send the MID on a stream's first packets only, until the receiver acknowledges
it, and Chromium's unified-plan descriptions may have no ``a=ssrc`` lines at all: with two
video sections sharing payload types (two video transceivers) only the MID tells them apart.

RTX (RFC 4588) resends lost packets on a stream of its own (its SSRC, its sequence numbers,
the original's timestamp, RFC 4588 §4). It is tied to its media stream by
``a=ssrc-group:FID <media> <rtx>`` (RFC 5576 §4.2, RFC 4588 §8) when an SDP says so; else by
its payload type, whose ``a=fmtp apt=`` names the media stream's (the one stream of that payload
type on its UDP direction, of its MID when it carries one); else by its packets: an RTX stream on the same UDP direction whose packets carry timestamps of
one video stream (a retransmission carries its original's, §4). An RTX packet's payload starts with the original sequence number (OSN, §4): in plain
RTP the numbers it repaired are read from it; in SRTP the OSN is encrypted and only the
count of RTX packets is known.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qoe.rtp._packet import SEQ_MOD
from qoe.rtp.sip import SdpMedia

# An RTX candidate's packets that must carry timestamps of its media stream: at least three
# exact 32-bit matches (RTP timestamps start at random values, RFC 3550 §5.1, so chance
# matches between unrelated streams are negligible) and a tenth of its packets (the rest are
# padding probes with timestamps of their own: 218 of 287 RTX packets in vp8-loss).
_RTX_TS_SHARE = 0.1
_RTX_MIN_SHARED = 3


def section_for(ssrc: int, payload_type: int, sdp: Sequence[SdpMedia], *,
                mid: str | None = None) -> tuple[SdpMedia, str] | None:
    """The section of ``sdp`` that describes a stream, and how it was matched.

    RFC 8843 §9.2's steps, in its order: the MID the stream's packets carry (``mid``, the
    §15 header extension) picks the section with that ``a=mid`` (a MID the SDP does not
    have: no section, the stream "is not decoded"); else the SSRC a section lists
    (``a=ssrc``, RFC 5576 §4.1), if that section maps the stream's payload type; else a
    payload type that only one section maps (``a=rtpmap``). A MID names one media section
    of each description: of the offer's and the answer's sections with that MID, the one
    that lists the SSRC is taken, else the first that maps the payload type (and a payload
    type that both map is in one section of the bundle).
    """
    def maps(m: SdpMedia) -> bool:
        return payload_type in m.rtpmap or payload_type in m.payload_types

    if mid is not None:
        named = [m for m in sdp if m.mid == mid]
        if not named:
            return None
        best = next((m for m in named if ssrc in m.ssrcs), None) or next((m for m in named if maps(m)), named[0])
        return best, f"MID {mid!r} (RFC 8843 §15 header extension, a=mid:{mid})"
    for m in sdp:
        if ssrc in m.ssrcs:
            return (m, f"a=ssrc:{ssrc}") if maps(m) else None
    holders = [m for m in sdp if payload_type in m.rtpmap]
    # one section of the bundle: an offer's and its answer's sections with one MID are one
    if holders and len({m.mid if m.mid is not None else id(m) for m in holders}) == 1:
        return holders[0], f"payload type {payload_type} (only in this section's a=rtpmap)"
    return None


def rtx_pairs_from_sdp(sdp: Sequence[SdpMedia]) -> dict[int, int]:
    """RTX SSRC -> media SSRC, from every section's ``a=ssrc-group:FID``."""
    out: dict[int, int] = {}
    for m in sdp:
        out.update(m.rtx_of())
    return out


@dataclass(frozen=True, slots=True)
class RtxInfo:
    """The RTX stream (RFC 4588) that repairs a media stream, as the capture shows it.

    Attributes
    ----------
    ssrc : int
        The RTX stream's SSRC.
    packets : int
        RTX packets received (retransmissions and padding probes alike: in SRTP a probe
        cannot be told from a retransmission).
    repaired : int or None
        Sequence numbers missing from the media stream that an RTX packet carried (RFC
        4588 §4: its payload's first two bytes are the original sequence number); None
        when the payloads are encrypted (SRTP) or were not kept.
    found_by : str
        ``"sdp"`` (``a=ssrc-group:FID``), ``"apt"`` (the RTX payload type's ``a=fmtp apt=``
        in the given SDP names the media stream's payload type) or ``"timestamps"`` (RTX
        packets carry timestamps of the media stream).
    header_bytes : int or None
        The RTX stream's RTP header and padding bytes (:attr:`RtpStream.header_bytes`).
    """

    ssrc: int
    packets: int
    repaired: int | None
    found_by: str
    header_bytes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"rtx_ssrc": f"0x{self.ssrc:08x}", "rtx_packets": self.packets, "rtx_repaired": self.repaired,
                "rtx_found_by": self.found_by, "rtx_header_bytes": self.header_bytes}

    @staticmethod
    def record(info: RtxInfo | None) -> dict[str, Any]:
        if info is not None:
            return info.to_dict()
        return {"rtx_ssrc": None, "rtx_packets": 0, "rtx_repaired": None, "rtx_found_by": None,
                "rtx_header_bytes": None}


def repaired_numbers(media: Any, rtx: Any) -> int | None:
    """How many of the media stream's missing sequence numbers the RTX packets carried (OSN,
    RFC 4588 §4), from the two packet tables; None without payloads or when encrypted."""
    if rtx.srtp is not None and not rtx.srtp.decrypted:
        return None
    mp, rp = media.packets, rtx.packets
    if mp is None or rp is None or not rp.payloads:
        return None
    first, top = int(mp.seq_ext[0]), int(mp.seq_ext.max())
    have = set(mp.seq_ext.tolist())
    base = first - first % SEQ_MOD
    out = set()
    for pl in rp.payloads:
        if len(pl) < 2:
            continue  # padding only
        osn = int.from_bytes(pl[:2], "big")
        # the extended number nearest the media stream's range
        cands = [base - SEQ_MOD + osn, base + osn, base + SEQ_MOD + osn]
        e = min(cands, key=lambda x: abs(x - (first + top) // 2))
        if first <= e <= top and e not in have:
            out.add(e)
    return len(out)


def rtx_by_timestamps(streams: Sequence[Any], taken: set[int], tables: Sequence[Any] | None = None) -> dict[int, int]:
    """RTX index -> media index, for streams no SDP pairs (``taken``: indices already paired):
    on the same UDP direction as a video stream, with another payload type (RFC 4588 §8.6:
    RTX has its own), fewer distinct timestamps, and packets carrying timestamps of that
    video stream (a retransmission keeps its original's, RFC 4588 §4; :data:`_RTX_MIN_SHARED`,
    or every packet of a stream that has fewer). ``tables``: each stream's packets when
    ``streams`` do not hold them (a scan without ``keep_packets`` reads headers only)."""
    out: dict[int, int] = {}
    tables = [s.packets for s in streams] if tables is None else list(tables)
    video = [i for i, s in enumerate(streams) if tables[i] is not None and s.media == "video"]
    if not video:  # a voice capture: no packet table is loaded
        return out
    directions = {(streams[i].key.src, streams[i].key.sport, streams[i].key.dst, streams[i].key.dport) for i in video}
    stamps = {i: set(np.unique(tables[i].timestamp).tolist()) for i in video}
    for i, s in enumerate(streams):
        k = s.key
        if tables[i] is None or i in taken or (k.src, k.sport, k.dst, k.dport) not in directions or len(tables[i]) == 0:
            continue
        ts = tables[i].timestamp.tolist()
        mine = len(set(ts))
        best, share = None, 0.0
        for j, st in stamps.items():
            o = streams[j]
            if j == i or j in out or o.payload_type == s.payload_type or len(st) <= mine:
                continue
            if (o.key.src, o.key.sport, o.key.dst, o.key.dport) != (s.key.src, s.key.sport, s.key.dst, s.key.dport):
                continue
            shared = sum(t in st for t in ts)
            if shared >= min(_RTX_MIN_SHARED, len(ts)) and shared / len(ts) > share:
                best, share = j, shared / len(ts)
        if best is not None and share >= _RTX_TS_SHARE:
            out[i] = best
    return out


def apt_of(payload_type: int, sdp: Sequence[SdpMedia], mid: str | None = None) -> int | None:
    """The media payload type that RTX payload type ``payload_type`` repairs: its ``a=fmtp
    apt=`` (RFC 4588 §8: the rtx media types' required "apt" parameter, given in SDP's ``a=fmtp``), in the
    sections with MID ``mid`` when given, else in every section that maps it as ``rtx``
    (None when they disagree, or none does)."""
    found = set()
    for m in sdp:
        if mid is not None and m.mid != mid:
            continue
        enc = m.rtpmap.get(payload_type)
        apt = m.fmtp.get(payload_type, {}).get("apt")
        if enc is not None and enc[0].lower() == "rtx" and apt is not None and apt.strip().isdigit():
            found.add(int(apt))
    return found.pop() if len(found) == 1 else None


def rtx_by_apt(streams: Sequence[Any], taken: set[int], sdp: Sequence[SdpMedia],
               mids: Sequence[str | None]) -> dict[int, int]:
    """RTX index -> media index by the SDP's payload types (:func:`apt_of`), for streams not
    paired yet (``taken``): an RTX payload type's stream on the UDP direction of exactly one
    unpaired stream of its ``apt`` payload type (of the same MID, RFC 8843 §15, when the RTX
    stream's packets carry one). Two such media streams (two transceivers sharing payload
    types, RFC 8843 §9.2) and no MID: not tied."""
    out: dict[int, int] = {}
    if not sdp:
        return out
    for i, s in enumerate(streams):
        if i in taken:
            continue
        apt = apt_of(s.payload_type, sdp, mids[i])
        if apt is None:
            continue
        k = s.key
        cands = [j for j, o in enumerate(streams)
                 if j != i and j not in taken and j not in out.values() and o.payload_type == apt
                 and (o.key.src, o.key.sport, o.key.dst, o.key.dport) == (k.src, k.sport, k.dst, k.dport)
                 and (mids[i] is None or mids[j] in (None, mids[i]))]
        if mids[i] is not None and len(cands) > 1:
            cands = [j for j in cands if mids[j] == mids[i]]
        if len(cands) == 1:
            out[i] = cands[0]
    return out


def tie_rtx(streams: list[Any], sdp: Sequence[SdpMedia], *, tables: Sequence[Any] | None = None,
            mids: Sequence[str | None] | None = None) -> dict[int, int]:
    """Tie RTX streams to the media streams they repair, in place (RFC 4588; module docstring):
    the media stream gets :class:`RtxInfo` and a note, the RTX stream a note. In order: the
    SDP's ``a=ssrc-group:FID``, its RTX payload types' ``apt=`` (:func:`rtx_by_apt`), the
    timestamps (:func:`rtx_by_timestamps`; ``tables``: the streams' packets when they do not
    hold them). ``mids``: the MID each stream's packets carry (RFC 8843 §15), or None.
    Returns RTX index -> media index."""
    at = {(s.key.src, s.key.sport, s.key.dst, s.key.dport, s.key.ssrc): i for i, s in enumerate(streams)}
    mids = [None] * len(streams) if mids is None else list(mids)
    pairs: dict[int, tuple[int, str]] = {}
    for rtx_ssrc, media_ssrc in rtx_pairs_from_sdp(sdp).items():
        for i, s in enumerate(streams):
            if s.key.ssrc == rtx_ssrc:
                j = at.get((s.key.src, s.key.sport, s.key.dst, s.key.dport, media_ssrc))
                if j is not None:
                    pairs[i] = (j, "sdp")
    for i, j in rtx_by_apt(streams, set(pairs) | {j for j, _ in pairs.values()}, sdp, mids).items():
        pairs[i] = (j, "apt")
    for i, j in rtx_by_timestamps(streams, set(pairs) | {j for j, _ in pairs.values()}, tables).items():
        pairs[i] = (j, "timestamps")
    for i, (j, how) in pairs.items():
        r, m = streams[i], streams[j]
        info = RtxInfo(ssrc=r.key.ssrc, packets=r.stats.packets, repaired=repaired_numbers(m, r), found_by=how,
                       header_bytes=r.header_bytes)
        why = {"sdp": "a=ssrc-group:FID in the given SDP",
               "apt": f"its payload type {r.payload_type} is RTX with apt={m.payload_type} in the given SDP (RFC 4588 §8)",
               }.get(how, "its packets carry timestamps of that stream (RFC 4588 §4)")
        streams[i] = dataclasses.replace(r, notes=(*r.notes, f"RTX (RFC 4588) of stream 0x{m.key.ssrc:08x}: {why}; "
                                                              "its packets are repairs, not a stream of its own"))
        note = (f"repaired by RTX stream 0x{r.key.ssrc:08x} ({r.stats.packets} packets"
                + (f", {info.repaired} missing packet(s) repaired" if info.repaired is not None else
                   "; which packets they repaired is encrypted (SRTP: the original sequence number is in the "
                   "payload)") + "); lost counts RFC 3550's loss before repair, as the browser's packetsLost")
        streams[j] = dataclasses.replace(m, rtx=info, notes=(*m.notes, note))
    return {i: j for i, (j, _) in pairs.items()}
