"""The E-model against two independent public implementations run as oracles (issue 11).

Narrow-band R is checked against (1) ``manucorporat/e-model`` (Go) and (2) OpenBACH's
``voip_qoe`` job (Python, CNES), each built/run outside the repository on the same cases;
the second is described where its table starts, below.

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

A third reference for the narrow-band model is G.107's own default case
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


# --------------------------------------------------------------------------------------
# Second oracle: OpenBACH's voip_qoe job (CNES, Python, GPL-3.0-or-later)
# --------------------------------------------------------------------------------------
#
# Oracle: ``compute_r_value`` of OpenBACH's ``voip_qoe`` job (A. Auger, CNES; "See ITU-T
# G.107 recommendation (06/2015)"), as stored in the public repository andreagarbugli/quicos
# at commit cec6fd927b473d161b51d8c6f2dad947c1d48e1f, file
# ``openbach-extra/externals_jobs/stable_jobs/service/voip_qoe/voip_qoe_src/files/compute_mos.py``
# (R: lines 38-100; Idte, the T < 1 ms rule and Idtes: lines 182-201), with its defaults
# ``.../files/etc/default_constants.yml``. Written independently of the Go oracle (other
# author, other language). Its licence (GPL-3.0) keeps it out of this repository: it was
# read through the project's search tool, saved to a scratch directory outside the
# repository with that file and a 15-line driver of ours, and run there:
#
#     cd /tmp/openbach_oracle && python run_oracle.py < cases.jsonl
#
# The driver takes one JSON object per line, {"T": .., "Ta": .., "Ppl": .., "c": {..}},
# builds the constants object from default_constants.yml plus Ie 0, Bpl 1, BurstR 1, A 0
# and the "c" overrides, and prints ``"R = %f" % compute_r_value(c, T, Ta, Ppl, 0,
# use_jitter=False)`` (jitter off: OpenBACH otherwise adds 2 x jitter to T and Ta). The
# table holds what it printed. Its inputs differ from ours in two places, mapped below:
# it takes the receive-side noise floor as Nfo (default -62 dBmp = Nfor + RLR, G.107
# clause 7.2), so a case changing RLR sets Nfo = -64 + RLR; and Tr is a constant.
#
# What it covers that the Go oracle does not: the delay-sensitivity classes (sT, mT), Tr
# apart from T, and the T < 1 ms rule. Its Idte is 0 for T < 1 ms and its Idtes is formed
# from that Idte (compute_mos.py lines 189-200), the order r_factor's Notes argue for
# (issue 11, point 8): at STMR 23 dB, T = 0.5 ms it prints 90.409252, ours to the digit,
# where the Go oracle (no T < 1 ms rule) prints 90.406976.

_OB_KEYS = {"T": "t", "Ta": "ta", "Ppl": "ppl", "Tr": "tr", "SLR": "slr", "RLR": "rlr",
            "STMR": "stmr", "LSTR": "lstr", "TELR": "telr", "WEPL": "wepl", "qdu": "qdu",
            "Ie": "ie", "Bpl": "bpl", "BurstR": "burst_r", "A": "a", "NC": "nc", "Ps": "ps",
            "Pr": "pr", "sT": "s_t", "mT": "m_t"}

# (the JSON line fed to the driver, R printed by OpenBACH's compute_r_value)
OPENBACH_R = [
    ({}, 93.206208),
    ({"T": 20, "c": {"TELR": 40, "STMR": 5, "LSTR": 8}}, 84.592978),  # TERVs (STMR < 9 dB)
    ({"T": 20, "c": {"TELR": 40}}, 87.421657),
    ({"T": 20, "c": {"TELR": 40, "STMR": 25, "LSTR": 28}}, 84.434660),  # Idtes (STMR > 20 dB)
    ({"T": 150, "c": {"TELR": 40, "STMR": 5, "LSTR": 8}}, 52.507834),
    ({"T": 150, "c": {"TELR": 40}}, 51.771809),
    ({"T": 150, "c": {"TELR": 40, "STMR": 25, "LSTR": 28}}, 49.216215),
    ({"T": 0.5, "c": {"STMR": 23, "LSTR": 26}}, 90.409252),  # T < 1 ms rule, then Idtes = Ist
    ({"T": 0.99, "c": {"STMR": 23, "LSTR": 26}}, 90.409222),
    ({"T": 1, "c": {"STMR": 23, "LSTR": 26}}, 90.404993),
    ({"T": 50, "c": {"TELR": 55}}, 90.392809),
    ({"T": 150, "c": {"TELR": 55}}, 82.834575),
    ({"T": 300, "c": {"TELR": 55}}, 75.240631),
    ({"T": 300, "Ta": 300, "c": {"Tr": 600}}, 72.666360),
    ({"T": 300, "Ta": 300, "c": {"Tr": 600, "sT": 0.55, "mT": 120}}, 77.332827),  # "low" class
    ({"T": 300, "Ta": 300, "c": {"Tr": 600, "sT": 0.4, "mT": 150}}, 81.248500),  # "very low" class
    ({"Ta": 400, "c": {"sT": 0.55, "mT": 120}}, 76.311662),
    ({"Ta": 150}, 93.042677),
    ({"Ta": 400}, 69.136119),
    ({"c": {"Tr": 80, "WEPL": 40}}, 91.010504),  # listener echo alone
    ({"Ppl": 2, "c": {"Bpl": 25.1}}, 86.195138),
    ({"Ppl": 2, "c": {"Bpl": 25.1, "BurstR": 3}}, 85.832340),
    ({"Ppl": 5, "c": {"Ie": 11, "Bpl": 19}}, 64.706208),
    ({"T": 120, "Ta": 150, "Ppl": 1.5, "c": {"Tr": 240, "Bpl": 25.1, "A": 5, "qdu": 2, "NC": -60}}, 83.558635),
    ({"c": {"SLR": 14, "RLR": 8, "Nfo": -56, "Ps": 55, "Pr": 50}}, 73.343605),  # Nfo = Nfor + RLR
]


def _openbach_kwargs(case: dict) -> dict:
    flat = {**{k: v for k, v in case.items() if k != "c"}, **case.get("c", {})}
    nfo = flat.pop("Nfo", None)
    kwargs = {_OB_KEYS[k]: v for k, v in flat.items()}
    if nfo is not None:  # OpenBACH's Nfo is G.107's Nfor + RLR (clause 7.2)
        kwargs["nfor"] = nfo - kwargs.get("rlr", 2.0)
    return kwargs


@pytest.mark.parametrize(("case", "r_oracle"), OPENBACH_R, ids=[str(c) for c, _ in OPENBACH_R])
def test_narrowband_r_matches_openbach_oracle(case, r_oracle):
    res = em.r_factor(**_openbach_kwargs(case))
    assert float(res.r) == pytest.approx(r_oracle, abs=PRINTED)


def test_the_two_oracles_agree_where_both_apply():
    # Both oracles printed the same R on every case they share (neither copies the other);
    # where they part (T < 1 ms with STMR > 20 dB) the text's rule decides, and OpenBACH
    # applies it as r_factor does.
    go = {tuple(sorted(c.items())): r for c, r in ORACLE_R}
    shared = 0
    for case, r in OPENBACH_R:
        flat = {**{k: v for k, v in case.items() if k != "c"}, **case.get("c", {})}
        go_key = tuple(sorted({{"NC": "Nc", "qdu": "Qdu"}.get(k, k): v for k, v in flat.items()}.items()))
        if go_key in go:
            shared += 1
            assert r == go[go_key], go_key
    assert shared >= 15


def test_every_wideband_preset_names_its_source():
    # Issue 11, point 9, for G.113 Appendix IV: each wide-band preset says which secondary source
    # its Ie,WB (and Bpl,WB) were checked against, or that it is unverified.
    for preset in em.CODECS_WB.values():
        assert preset.source == em.UNVERIFIED or (
            preset.source.startswith("Ie,WB") and "checked against" in preset.source
            and ("sipnab" in preset.source or "Mitel" in preset.source))
    assert [p.name for p in em.CODECS_WB.values() if p.source == em.UNVERIFIED] == ["G.711-wb"]
