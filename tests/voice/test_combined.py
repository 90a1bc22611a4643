"""The seed paper's combined VoIP score (IMC 2014 §7.1)."""

from __future__ import annotations

import numpy as np
import pytest

from qoe.errors import InputError
from qoe.mos import mos_to_r, r_to_mos
from qoe.voice.combined import combined_score
from qoe.voice.emodel import r_factor


def test_terms_follow_the_paper():
    s = combined_score(3.8, 300.0)
    assert float(s.z1) == pytest.approx(float(mos_to_r(3.8)), abs=1e-12)
    full = r_factor(ta=300.0, t=300.0, tr=600.0)
    assert float(s.z2) == pytest.approx(float(full.id_), abs=1e-12)
    assert float(s.z) == pytest.approx(float(s.z1 - s.z2), abs=1e-12)
    assert float(s.mos) == pytest.approx(float(r_to_mos(s.z)), abs=1e-12)


def test_no_delay_keeps_listening_quality():
    # At 0 ms only the tiny default Idle (0.149) is subtracted: the MOS barely moves.
    s = combined_score(4.0, 0.0)
    assert float(s.mos) == pytest.approx(4.0, abs=0.01)


def test_floor_at_zero():
    s = combined_score(1.5, 5000.0)
    assert float(s.z) == 0.0 and float(s.mos) == 1.0


def test_uplink_bufferbloat_ordering():
    # Seed paper §7.2: uplink delays of 98 / 788 / 3167 ms (8 / 64 / 256 packets, Table 2)
    # drive the combined MOS down even with the same listening quality.
    s = combined_score(4.0, np.array([98.0, 788.0, 3167.0]))
    assert np.all(np.diff(s.mos) < 0)
    assert float(s.mos[-1]) < 1.5


def test_broadcast_and_dict():
    s = combined_score(np.array([3.0, 4.0])[:, None], np.array([0.0, 200.0, 400.0]))
    assert s.mos.shape == (2, 3)
    assert isinstance(combined_score(4.0, 0.0).to_dict()["mos"], float)


@pytest.mark.parametrize("bad", [0.5, 5.5, float("nan")])
def test_bad_mos(bad):
    with pytest.raises(InputError, match="mos_lqo must lie in"):
        combined_score(bad, 100.0)
