"""Loss probability and G.107 BurstR from loss traces."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
import pytest

from qoe.errors import InputError
from qoe.rtp.lossmodel import LossRunCounts, loss_pattern, runs


def test_no_loss():
    lp = loss_pattern(np.zeros(50, bool))
    assert (lp.lost, lp.ppl, lp.burst_r, lp.bursts, lp.max_burst) == (0, 0.0, 1.0, 0, 0)


def test_all_lost():
    lp = loss_pattern(np.ones(5, bool))
    assert lp.ppl == 100.0 and lp.burst_r == float("inf") and lp.max_burst == 5


def test_bernoulli_loss_has_burst_ratio_one(rng):
    # G.107 §7.5: BurstR = 1 for random (independent) loss. 2e5 draws at 5 %: the
    # estimator's standard error is about 0.005, so 0.02 is four of them.
    lp = loss_pattern(rng.random(200_000) < 0.05)
    assert lp.ppl == pytest.approx(5.0, abs=0.1)
    assert lp.burst_r == pytest.approx(1.0, abs=0.02)


def test_gilbert_loss_recovers_markov_parameters(rng):
    # Simulate the 2-state Markov model of G.107 eq. (7-32) with p = 0.01, q = 0.25:
    # BurstR = 1/(p + q) = 3.846..., Ppl = p/(p + q) = 3.85 %.
    p, q, n = 0.01, 0.25, 400_000
    u = rng.random(n)
    lost = np.empty(n, bool)
    state = False
    for i in range(n):
        state = (u[i] < p) if not state else (u[i] >= q)
        lost[i] = state
    lp = loss_pattern(lost)
    assert lp.p == pytest.approx(p, rel=0.05)
    assert lp.q == pytest.approx(q, rel=0.05)
    assert lp.burst_r == pytest.approx(1 / (p + q), rel=0.05)
    assert lp.ppl == pytest.approx(100 * p / (p + q), rel=0.05)
    # equivalently: mean observed run length over the random-loss expectation
    assert lp.burst_r == pytest.approx(lp.mean_burst * (1 - lp.ppl / 100), rel=0.02)


def test_hand_counted_transitions():
    # Transitions counted by hand on 0 0 1 1 0 1 0 0:
    seq = [0, 0, 1, 1, 0, 1, 0, 0]
    lp = loss_pattern(seq)
    # predecessors (first 7): rx at 0,1,4,6 → next lost at 1→2 and 4→5: p = 2/4
    # lost at 2,3,5 → next received at 3→4 and 5→6: q = 2/3
    assert lp.p == pytest.approx(2 / 4) and lp.q == pytest.approx(2 / 3)
    assert lp.burst_r == pytest.approx(1 / (2 / 4 + 2 / 3))
    assert (lp.bursts, lp.mean_burst, lp.max_burst, lp.mean_gap) == (2, 1.5, 2, 1.0)


def test_open_final_burst():
    lp = loss_pattern([0] * 9 + [1] * 3)
    assert lp.q == pytest.approx(1 / 3)
    assert lp.burst_r == pytest.approx(1 / (1 / 9 + 1 / 3))


def test_runs():
    starts, lengths = runs([1, 1, 0, 0, 1, 0, 1, 1, 1])
    assert starts.tolist() == [0, 4, 6] and lengths.tolist() == [2, 1, 3]


@pytest.mark.parametrize(("arg", "match"), [([], "empty"), ([[0, 1]], "1-D")])
def test_bad_input(arg, match):
    with pytest.raises(InputError, match=match):
        loss_pattern(arg)


@pytest.mark.parametrize("seed", range(6))
def test_loss_run_counts_in_pieces_equal_loss_pattern(seed):
    """LossRunCounts fed a sequence in pieces (and two sequences interleaved) gives
    loss_pattern's figures for the whole sequence."""
    rng = np.random.default_rng(seed)
    seqs = [rng.random(int(rng.integers(1, 3000))) < rng.choice([0.0, 0.02, 0.3, 0.9]) for _ in range(2)]
    if seed == 5:
        seqs[0][-7:] = True  # ends inside a loss run
    counts = LossRunCounts(2)
    cuts = [np.sort(rng.choice(np.arange(m.size + 1), size=min(10, m.size + 1))) for m in seqs]
    pieces = [list(zip(np.concatenate(([0], c)), np.concatenate((c, [m.size])))) for c, m in zip(cuts, seqs)]
    for k in range(max(len(p) for p in pieces)):
        for i, (m, p) in enumerate(zip(seqs, pieces)):
            if k < len(p):
                counts.add_sequence(i, m[p[k][0]:p[k][1]])
    got = counts.patterns()
    for i, m in enumerate(seqs):
        lp = loss_pattern(m)
        assert {k: v[i] for k, v in got.items()} == pytest.approx(lp.to_dict())


@settings(max_examples=300, deadline=None)
@given(lost=st.lists(st.booleans(), min_size=1, max_size=40))
def test_the_counts_of_a_whole_sequence_are_those_of_its_runs_added(lost):
    """LossRunCounts.of_sequence (what loss_pattern counts with) counts a whole sequence
    from its loss runs: every count must be what add_sequence on an empty sequence gives
    (the reference: the runs fed through add_runs), first or last packet lost or not."""
    m = np.array(lost)
    fed = LossRunCounts(1)
    fed.add_sequence(0, m)
    whole = LossRunCounts.of_sequence(m)
    for name in ("n", "lost", "tail", "rx_to_lost", "lost_to_rx", "max_burst", "lead_rx", "first", "last"):
        assert getattr(whole, name).tolist() == getattr(fed, name).tolist(), name
