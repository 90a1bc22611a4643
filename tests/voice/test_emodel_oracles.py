"""The E-model against an independent public implementation run as an oracle (issue 11).

Oracle: ``manucorporat/e-model``, ``main.go`` at commit
e6b8411f597190dba2858edc95a7766aa9c9133e (a Go implementation of G.107 06/2015), read
through the project's search tool and run, not copied: built with ``go build`` (Go 1.26)
in a scratch directory outside the repository and fed one JSON object per case,

    echo '{"SLR":8,"RLR":2,"STMR":15,"LSTR":18,"Ds":3,"TELR":65,"WEPL":110,"T":0,
           "Tr":0,"Ta":0,"Qdu":1,"Ie":0,"Bpl":4.3,"Ppl":0,"BurstR":1,"Nc":-70,
           "Nfor":-64,"Ps":35,"Pr":35,"A":0}' | ./emodel_go -stdin

with the keys of each case below replacing those defaults; it prints ``R = %f``, and that
printed value is what the table holds. What the oracle leaves out, so no case relies on
it: the delay-sensitivity classes (its Idd has sT = 1, mT = 100 ms), the T < 1 ms rule
(it forms Idte and Idtes at any T) and G.107.1 (it is narrow-band only).

The second, independent reference for the narrow-band model is G.107's own default case
(clause 7.7: R = 93.2062 with its intermediates), checked in ``test_emodel.py``; the
oracle agrees with it (93.206208). No runnable public implementation of G.107.1 was found
(the one found, a JavaScript calculator, takes natural logarithms for lg and cannot
serve; see ``r_factor``'s Notes), so the wide-band terms are checked here only where they
are built from narrow-band ones the oracle computes (Idd,WB = 1.29 Idd), and by hand in
``test_emodel.py``.
"""

from __future__ import annotations

import pytest

from qoe.voice import emodel as em

# The oracle prints R with 6 decimals: half a unit in the last place.
PRINTED = 5e-7

# Oracle key -> r_factor keyword.
_KEYS = {"SLR": "slr", "RLR": "rlr", "STMR": "stmr", "LSTR": "lstr", "Ds": "ds", "TELR": "telr",
         "WEPL": "wepl", "T": "t", "Tr": "tr", "Ta": "ta", "Qdu": "qdu", "Ie": "ie", "Bpl": "bpl",
         "Ppl": "ppl", "BurstR": "burst_r", "Nc": "nc", "Nfor": "nfor", "Ps": "ps", "Pr": "pr",
         "A": "a"}

# (changes from the defaults above, R printed by the oracle). LSTR is given with STMR because
# the oracle takes it as given (here LSTR = STMR + Dr, G.107 Table 3, Dr = 3).
ORACLE_R = [
    ({}, 93.206208),
    ({"T": 20, "TELR": 40, "STMR": 5, "LSTR": 8}, 84.592978),  # TERVs (STMR < 9 dB)
    ({"T": 20, "TELR": 40}, 87.421657),
    ({"T": 20, "TELR": 40, "STMR": 25, "LSTR": 28}, 84.434660),  # Idtes (STMR > 20 dB)
    ({"T": 150, "TELR": 40, "STMR": 5, "LSTR": 8}, 52.507834),
    ({"T": 150, "TELR": 40}, 51.771809),
    ({"T": 150, "TELR": 40, "STMR": 25, "LSTR": 28}, 49.216215),
    ({"T": 1, "STMR": 23, "LSTR": 26}, 90.404993),
    ({"T": 50, "TELR": 55}, 90.392809),
    ({"T": 150, "TELR": 55}, 82.834575),
    ({"T": 300, "TELR": 55}, 75.240631),
    ({"T": 300, "Ta": 300, "Tr": 600}, 72.666360),
    ({"Ta": 150}, 93.042677),
    ({"Ta": 400}, 69.136119),
    ({"Bpl": 25.1, "Ppl": 2}, 86.195138),
    ({"Bpl": 25.1, "Ppl": 2, "BurstR": 3}, 85.832340),
    ({"Ie": 11, "Bpl": 19, "Ppl": 5}, 64.706208),
    ({"T": 120, "Ta": 150, "Tr": 240, "Ppl": 1.5, "Bpl": 25.1, "A": 5, "Qdu": 2, "Nc": -60}, 83.558635),
]


@pytest.mark.parametrize(("case", "r_oracle"), ORACLE_R, ids=[str(c) for c, _ in ORACLE_R])
def test_narrowband_r_matches_go_oracle(case, r_oracle):
    res = em.r_factor(**{_KEYS[k]: v for k, v in case.items()})
    assert float(res.r) == pytest.approx(r_oracle, abs=PRINTED)


def test_t_below_one_ms_with_high_stmr_matches_go_oracle():
    # Issue 11, point 8: STMR 23 dB, T = 0.5 ms. The oracle has no T < 1 ms rule and forms
    # Idtes = sqrt(Idte^2 + Ist^2) with its small (1 - e^-T) Idte: R = 90.406976. Applying the
    # rule before Idtes (r_factor Notes) gives Idtes = Ist and differs from it only by that
    # small Idte (0.0023); zeroing Idtes after it would differ by Ist = 1.40.
    res = em.r_factor(stmr=23.0, lstr=26.0, t=0.5)
    assert float(res.r) == pytest.approx(90.406976, abs=0.003)
    assert abs(float(res.r) + float(res.ist) - 90.406976) > 1.3  # what the other order gives


def test_wideband_idd_is_1_29_times_go_oracle_idd():
    # G.107.1 clause 7.4: Idd,WB = 1.29 Idd. The oracle's Idd at Ta = 400 ms is the drop of R
    # from the default case: 93.206208 - 69.136119.
    idd_oracle = 93.206208 - 69.136119
    wb = em.r_factor(band="wb", ta=400.0)
    assert float(wb.idd) == pytest.approx(1.29 * idd_oracle, abs=1.29 * 2 * PRINTED)


def test_every_codec_preset_names_its_source():
    # Issue 11, point 9: each preset cites what its values were checked against, or says it
    # is unverified. Ie values agreeing with the secondary sources quoted in emodel.py.
    checked = {"G.711": 0.0, "G.711-plc": 0.0, "G.726-32": 7.0, "G.729": 10.0, "G.729A+VAD": 11.0,
               "G.723.1-6.3": 15.0, "G.723.1-5.3": 19.0, "G.723.1+VAD": 15.0}
    for preset in em.CODECS.values():
        assert preset.source
        if preset.name in checked:
            assert preset.ie == checked[preset.name]
            assert preset.source.startswith("Ie checked against")
            assert ("Bpl unverified" in preset.source) == (preset.bpl is not None)
        else:
            assert preset.source == em.UNVERIFIED
    # A preset another module adds without a source is unverified by default.
    assert em.Codec("X", 1.0, None, "x").source == em.UNVERIFIED
