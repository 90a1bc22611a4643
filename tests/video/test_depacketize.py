"""H.264 RTP depacketisation (RFC 6184) and transport-stream checks (ISO/IEC 13818-1).

Packets are built here byte by byte from the RFC's payload structures (§5.6 single NAL
unit, §5.7.1 STAP-A, §5.8 FU-A) and the standard's transport packet (§2.4.3.2); expected
values follow from those definitions.
"""

from __future__ import annotations

import numpy as np
import pytest

from qoe.errors import InputError
from qoe.video.depacketize import (
    ANNEXB_START,
    check_transport_stream,
    h264_access_units,
    nal_types,
    slice_types,
    sprop_parameter_sets,
)

SPS = bytes([0x67, 0x64, 0x00, 0x14, 0xAC])  # nal_unit_type 7
PPS = bytes([0x68, 0xEF, 0x3C, 0xB0])  # 8
# IDR slice (type 5, NRI 3): first_mb_in_slice ue(v)=0 -> '1', slice_type ue(v)=7 -> '0001000'
IDR = bytes([0x65, 0b10001000, 0x80]) + bytes(range(1, 41))
# non-IDR slice (type 1, NRI 2): first_mb 0 '1', slice_type 5 (P) '00110' -> 1001 10..
P_SLICE = bytes([0x41, 0b10011000]) + bytes(range(1, 31))


def fu_a(nal: bytes, pieces: int) -> list[bytes]:
    """RFC 6184 §5.8: FU indicator (F, NRI, type 28), FU header (S, E, R, type), fragment."""
    body = nal[1:]
    cut = np.linspace(0, len(body), pieces + 1).astype(int)
    out = []
    for k in range(pieces):
        ind = (nal[0] & 0xE0) | 28
        hdr = (0x80 if k == 0 else 0) | (0x40 if k == pieces - 1 else 0) | (nal[0] & 0x1F)
        out.append(bytes([ind, hdr]) + body[cut[k] : cut[k + 1]])
    return out


def stap_a(*nals: bytes) -> bytes:
    """RFC 6184 §5.7.1: STAP-A header (type 24, the highest NRI), then size-prefixed NAL units."""
    nri = max(n[0] & 0x60 for n in nals)
    return bytes([nri | 24]) + b"".join(len(n).to_bytes(2, "big") + n for n in nals)


def units(payloads, stamps, markers, seqs=None, **kw):
    n = len(payloads)
    seqs = np.arange(n) if seqs is None else np.asarray(seqs)
    return h264_access_units(np.asarray(seqs, np.int64), np.asarray(stamps, np.int64), np.asarray(markers, bool), payloads, **kw)


def annexb(*nals: bytes) -> bytes:
    return b"".join(ANNEXB_START + n for n in nals)


def test_single_stap_and_fragments_rebuild_the_nal_units():
    pk = [stap_a(SPS, PPS), *fu_a(IDR, 3), P_SLICE]
    aus = units(pk, [0, 0, 0, 0, 3600], [0, 0, 0, 1, 1])
    assert [a.timestamp for a in aus] == [0, 3600]
    assert aus[0].data == annexb(SPS, PPS, IDR)
    assert aus[0].nal_types == (7, 8, 5) and aus[0].idr and aus[0].complete
    assert aus[1].data == annexb(P_SLICE) and aus[1].complete and not aus[1].idr
    assert (aus[0].packets, aus[0].first_seq, aus[0].last_seq) == (4, 0, 3)


def test_a_lost_fragment_drops_that_nal_unit_and_marks_the_unit_damaged():
    frags = fu_a(IDR, 3)
    aus = units([stap_a(SPS, PPS), frags[0], frags[2], P_SLICE], [0, 0, 0, 3600], [0, 0, 1, 1], seqs=[0, 1, 3, 4])
    assert aus[0].data == annexb(SPS, PPS)  # the IDR lost its middle: left out
    assert not aus[0].complete and aus[0].dropped_nals == 1
    assert aus[1].complete


def test_reordered_and_duplicated_packets_are_put_in_sequence_order_once():
    frags = fu_a(IDR, 3)
    pk = [frags[0], frags[2], frags[1], frags[1]]
    aus = units(pk, [0, 0, 0, 0], [0, 1, 0, 0], seqs=[10, 12, 11, 11])
    assert aus[0].data == annexb(IDR) and aus[0].complete and aus[0].packets == 3


def test_a_unit_without_its_marker_end_or_after_a_gap_is_incomplete():
    # no packet lost: a sender that never sets the marker bit damages nothing
    aus = units([P_SLICE, P_SLICE], [0, 3600], [0, 1])
    assert [a.complete for a in aus] == [True, True]
    # packet 1 lost at the border after a marker-bit end: the next unit may have lost its head
    aus = units([P_SLICE, P_SLICE], [0, 3600], [1, 1], seqs=[0, 2])
    assert [a.complete for a in aus] == [True, False]
    # ... and without the marker bit, the first may have lost its tail too
    aus = units([P_SLICE, P_SLICE], [0, 3600], [0, 1], seqs=[0, 2])
    assert [a.complete for a in aus] == [False, False]


def test_parameter_sets_from_the_sdp_go_before_the_first_unit():
    aus = units([IDR, P_SLICE], [0, 3600], [1, 1], parameter_sets=[SPS, PPS])
    assert aus[0].data == annexb(SPS, PPS, IDR)
    assert aus[1].data == annexb(P_SLICE)


def test_interleaved_mode_units_are_not_taken():
    stap_b = bytes([0x19, 0x00, 0x00]) + len(P_SLICE).to_bytes(2, "big") + P_SLICE  # type 25
    (au,) = units([stap_b], [0], [1])
    assert au.data == b"" and au.dropped_nals == 1 and not au.complete


def test_mismatched_columns_are_refused():
    with pytest.raises(InputError, match="2 sequence numbers"):
        h264_access_units(np.arange(2), np.zeros(1, np.int64), np.zeros(1, bool), [b"x"])


def test_sprop_parameter_sets_and_slice_headers():
    # the sprop-parameter-sets that `ffmpeg -f rtp -sdp_file` wrote for a libx264 stream
    sps, pps = sprop_parameter_sets("Z2QAFKy0CwS2AiAAAAMAIAAABkHihVQ=,aO88sA==")
    assert (sps[0] & 0x1F, pps[0] & 0x1F) == (7, 8)
    with pytest.raises(InputError, match="not base64"):
        sprop_parameter_sets("Z2Q*")
    assert nal_types(annexb(SPS, PPS, IDR, P_SLICE)) == [7, 8, 5, 1]
    assert slice_types(annexb(SPS, PPS, IDR, P_SLICE)) == [7, 5]


def ts_packet(pid: int, cc: int, *, start: bool = False, payload: bool = True, disc: bool = False) -> bytes:
    """ISO/IEC 13818-1 §2.4.3.2: sync, PUSI, PID, adaptation_field_control, continuity_counter."""
    afc = (0b10 if disc else 0) | (0b01 if payload else 0)
    head = bytes([0x47, (0x40 if start else 0) | (pid >> 8), pid & 0xFF, (afc << 4) | (cc & 0xF)])
    body = (bytes([1, 0x80]) + bytes(182 - 2 + (0 if payload else 0))) if disc else bytes(184)
    return (head + body)[:188]


def test_continuity_counter_gaps_are_found_per_pid():
    pk = [ts_packet(256, i) for i in range(5)] + [ts_packet(257, 0), ts_packet(257, 1)]
    pk[3] = ts_packet(256, 7)  # 2 -> 7: packets lost before it
    chk = check_transport_stream(b"".join(pk))
    assert chk.packets == 7 and chk.cc_errors == {256: 2}  # 2 -> 7, then 7 -> 4
    assert chk.lost_before.tolist() == [False, False, False, True, True, False, False]


def test_a_duplicate_packet_and_a_signalled_discontinuity_are_no_errors():
    pk = [ts_packet(256, 0), ts_packet(256, 1), ts_packet(256, 1), ts_packet(256, 2), ts_packet(256, 9, disc=True),
          ts_packet(256, 10)]
    chk = check_transport_stream(b"".join(pk))
    assert chk.cc_errors == {}


def test_bad_sync_and_stray_bytes_are_counted():
    bad = bytearray(ts_packet(256, 1))
    bad[0] = 0x00
    chk = check_transport_stream(ts_packet(256, 0) + bytes(bad) + b"\x47\x00")
    assert (chk.packets, chk.bad_sync, chk.stray_bytes) == (1, 1, 2)


def test_looks_like_h264_needs_rfc6184_headers_and_parameter_sets():
    from qoe.video.depacketize import looks_like_h264

    sps, pps = bytes([0x67, 0x4D, 0x40, 0x1E]), bytes([0x68, 0xEE, 0x3C, 0x80])
    stap = bytes([0x18]) + len(sps).to_bytes(2, "big") + sps + len(pps).to_bytes(2, "big") + pps  # RFC 6184 §5.7.1
    fu_start, fu_end = bytes([0x7C, 0x85]) + b"\x88" * 50, bytes([0x7C, 0x45]) + b"\x11" * 20  # §5.8, IDR
    slices = [bytes([0x41, 0x9A]) + b"\x22" * 30] * 20  # non-IDR single NAL units
    assert looks_like_h264([stap, fu_start, fu_end, *slices])
    assert not looks_like_h264([fu_start, fu_end, *slices])  # no parameter sets
    assert not looks_like_h264([stap, bytes([0x80, 1, 2])] + slices[:5])  # forbidden bit set in 1 of 7
    rng = np.random.default_rng(1)
    assert not looks_like_h264([rng.bytes(160) for _ in range(200)])  # e.g. audio frames
    assert not looks_like_h264([])
