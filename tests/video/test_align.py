"""Pairing by presentation time: the last distorted frame with PTS ≤ t is the one on screen."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qoe.errors import InputError
from qoe.video import pair_frames, shown_index


def frames(times):
    return [SimpleNamespace(pts_s=t) for t in times]


def test_freeze_repeats_last_frame():
    ref = [k * 0.04 for k in range(8)]
    dist = [0.0, 0.04, 0.08, 0.20, 0.24, 0.28]  # 0.12 and 0.16 lost
    assert shown_index(ref, dist).tolist() == [0, 1, 2, 2, 2, 3, 4, 5]


def test_before_first_frame_is_unpaired():
    assert shown_index([0.0, 0.04, 0.08], [0.05]).tolist() == [-1, -1, 0]


def test_tolerance_absorbs_time_base_rounding():
    # 1001/30000 s at 1/12800 s ticks is 427.09 ticks: a muxer writes 427 or 428
    t = 1001 / 30000
    later = 428 / 12800
    assert shown_index([t], [0.0, later]).tolist() == [1]
    assert shown_index([t], [0.0, later], tolerance_s=0.0).tolist() == [0]


def test_unsorted_times_are_refused():
    with pytest.raises(InputError, match="non-decreasing"):
        shown_index([0.0], [0.04, 0.0])
    with pytest.raises(InputError, match="NaN"):
        shown_index([np.nan], [0.0])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 400), min_size=1, max_size=40),
    st.lists(st.integers(0, 400), max_size=40),
)
def test_streaming_equals_arrays(ref_ticks, dist_ticks):
    ref = sorted(t / 100 for t in ref_ticks)
    dist = sorted(t / 100 for t in dist_ticks)
    how, pairs = pair_frames(frames(ref), frames(dist))
    got = [p.dist_index for p in pairs]
    if not dist:
        assert how == "pts" and got == [-1] * len(ref)
        return
    assert how == "pts"
    assert got == shown_index(ref, dist).tolist()


def test_index_fallback_without_timestamps():
    how, pairs = pair_frames(frames([None, None, None]), frames([0.0, 0.04]))
    assert how == "index"
    assert [(p.ref_index, p.dist_index) for p in pairs] == [(0, 0), (1, 1), (2, -1)]


def test_explicit_index_pairing_and_bad_option():
    how, pairs = pair_frames(frames([0.0, 0.04]), frames([0.04, 0.08]), by="index")
    assert how == "index" and [p.dist_index for p in pairs] == [0, 1]
    with pytest.raises(InputError, match="pairing"):
        pair_frames([], [], by="nearest")  # type: ignore[arg-type]


def test_out_of_order_distorted_stream_is_refused():
    how, pairs = pair_frames(frames([0.0, 0.04, 0.08]), frames([0.0, 0.08, 0.04]))
    with pytest.raises(InputError, match="presentation order"):
        list(pairs)
