"""H.265 access units from RTP packets (RFC 7798), in Annex B byte-stream form.

The payload header is a NAL unit header (RFC 7798 §1.1.4, H.265 §7.3.1.2: F, Type (6 bits),
LayerId (6), TID (3)). Type 0-47: a single NAL unit packet (§4.4.1); 48: an aggregation
packet (§4.4.2), NAL units each after a 16-bit size; 49: a fragmentation unit (§4.4.3), an
FU header ``S E FuType`` after the payload header, the NAL unit's header rebuilt from the
payload header with FuType as its type; 50: PACI (§4.4.4), not taken. DONL fields are present
only when ``sprop-max-don-diff`` > 0 (§4.4): qoe reads streams without them and says so.

Loss: as H.264 (:func:`qoe.video.depacketize.h264_access_units`): a fragmented NAL unit that
lost a fragment is left out whole (§4.4.3: the receiver discards the fragments after a lost
one), the access unit is damaged, the decoder conceals; ``sprop-vps``/``sps``/``pps`` of the
SDP (§7.1) go before the first access unit.

References
----------
.. [1] RFC 7798, "RTP Payload Format for High Efficiency Video Coding (HEVC)", §1.1.4, §4.4,
   §7.1.
.. [2] ITU-T H.265 (08/2021), §7.3.1.2, Table 7-1 (NAL unit types: 16-23 IRAP).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from qoe.video._rtpframes import rtp_frames
from qoe.video.depacketize import ANNEXB_START, AccessUnit

__all__ = ["h265_access_units"]

# RFC 7798 §4.4: aggregation packet, fragmentation unit, PACI.
_AP, _FU, _PACI = 48, 49, 50
# H.265 Table 7-1: IRAP pictures (BLA, IDR, CRA, reserved IRAP) are types 16-23.
_IRAP = range(16, 24)


def _ntype(b0: int) -> int:
    return (b0 >> 1) & 0x3F


def h265_access_units(seq_ext: np.ndarray, timestamp: np.ndarray, marker: np.ndarray, payloads: Sequence[bytes],
                      *, parameter_sets: Iterable[bytes] = ()) -> list[AccessUnit]:
    """Rebuild H.265 access units from the RTP packets of one stream (see the module notes)."""
    params = [p for p in parameter_sets if p]
    prefix = b"".join(ANNEXB_START + p for p in params)
    prefix_types = tuple(_ntype(p[0]) for p in params)
    out = []
    for f in rtp_frames(seq_ext, timestamp, marker, payloads):
        nals: list[bytes] = []
        dropped = 0
        fu: list[bytes] | None = None
        broken = False
        damaged = f.gap_inside or (f.gap_before and f.prev_marker) or not f.marker
        prev = None
        for s, p in zip(f.seqs, f.payloads):
            if prev is not None and s != prev + 1 and fu is not None:
                fu, broken = None, True  # a fragment lost inside
            prev = s
            if len(p) < 3:
                dropped += 1
                continue
            t = _ntype(p[0])
            if t == _FU:
                h = p[2]
                if h & 0x80:  # S
                    if fu is not None or broken:
                        dropped += 1
                    fu, broken = [bytes([(p[0] & 0x81) | ((h & 0x3F) << 1), p[1]]), p[3:]], False
                elif fu is not None:
                    fu.append(p[3:])
                else:
                    broken = True
                if h & 0x40:  # E
                    if fu is not None:
                        nals.append(b"".join(fu))
                    else:
                        dropped += 1
                    fu, broken = None, False
                continue
            if fu is not None or broken:
                dropped += 1
                fu, broken = None, False
            if t == _AP:
                i = 2
                while i + 2 <= len(p):
                    size = int.from_bytes(p[i : i + 2], "big")
                    if size == 0 or i + 2 + size > len(p):
                        dropped += 1
                        break
                    nals.append(p[i + 2 : i + 2 + size])
                    i += 2 + size
            elif t == _PACI or t > _PACI:
                dropped += 1
            else:
                nals.append(p)
        if fu is not None or broken:
            dropped += 1
        types = tuple(_ntype(n[0]) for n in nals)
        out.append(AccessUnit(
            timestamp=f.timestamp, data=prefix + b"".join(ANNEXB_START + n for n in nals),
            complete=not damaged and dropped == 0, first_seq=f.seqs[0], last_seq=f.seqs[-1], packets=len(f.seqs),
            dropped_nals=dropped, nal_types=prefix_types + types, key=any(t in _IRAP for t in types),
        ))
        prefix, prefix_types = b"", ()
    return out
