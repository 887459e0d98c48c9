"""Flag statistics of preference campaigns on hand-worked cases."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import binom

from monitor.metrics.labels.gold import wilson_interval
from monitor.metrics.preferences.flags import (
    ambiguous_pairs,
    benjamini_hochberg,
    chance_floor,
    gold_pair_accuracy,
    kappa_interval,
)
from monitor.metrics.preferences.intraobserver import P_E_STRICT, P_E_WEAK, triangle_state
from monitor.metrics.preferences.model import preference_model
from monitor.metrics.preferences.triangles import triplets_per_pair
from tests.metrics.test_preference_model import simulate


def test_chance_floor_cases() -> None:
    # strict answers: 0.5 whatever the tie rate; a left habit matters only with unbalanced sides
    assert chance_floor([0.0, 0.3, 0.9]).tolist() == [0.5, 0.5, 0.5]
    assert chance_floor(0.0, left_rate=1.0, consensus_left=0.5).item() == 0.5
    assert chance_floor(0.0, left_rate=1.0, consensus_left=0.8).item() == pytest.approx(0.8)
    # every answer, a tie counting as not along: (1 - t) / 2
    assert chance_floor([0.0, 0.5, 1.0], over="all").tolist() == [0.5, 0.25, 0.0]
    # a tie on a tied consensus counts as agreement: t c0 + (1 - t)(1 - c0) / 2
    got = chance_floor(0.4, consensus_tie=0.5, over="all_ties_agree").item()
    assert got == pytest.approx(0.4 * 0.5 + 0.6 * 0.5 * 0.5)
    with pytest.raises(ValueError, match="tie_rate must hold shares"):
        chance_floor(1.5)
    with pytest.raises(ValueError, match="over must be"):
        chance_floor(0.1, over="some")


def test_chance_floor_is_what_a_random_answerer_reaches() -> None:
    rng = np.random.default_rng(0)
    n, t, q = 200_000, 0.3, 0.5
    consensus = rng.choice([1, -1], n)
    answer = np.where(rng.random(n) < t, 0, np.where(rng.random(n) < q, 1, -1))
    assert np.mean(answer == consensus) == pytest.approx(chance_floor(t, over="all"), abs=0.005)
    strict = answer != 0
    assert np.mean(answer[strict] == consensus[strict]) == pytest.approx(0.5, abs=0.005)


def test_gold_pair_accuracy_counts_strict_answers_on_ordering_gold() -> None:
    workers = [0, 0, 0, 0, 1, 1, 1, 2]
    outcome = [1, -1, 1, 0, 1, 1, -1, 1]
    gold = [1.0, 1.0, -2.0, 1.0, 0.0, np.nan, -1.0, np.nan]
    g = gold_pair_accuracy(workers, outcome, gold, n_workers=4)
    # worker 0: three strict gold answers, one right; the tie counts for nothing
    # worker 1: equal gold and no gold count for nothing; one right; worker 2: none
    assert g.n.tolist() == [3, 1, 0, 0]
    assert g.accuracy[:2].tolist() == [1 / 3, 1.0]
    assert np.isnan(g.accuracy[2:]).all()
    low, high = wilson_interval(np.array([1 / 3]), np.array([3.0]))
    assert (g.low[0], g.high[0]) == (low[0], high[0])
    assert g.level == "pairwise"


def test_effective_triplets_of_a_complete_block_and_of_disjoint_triangles() -> None:
    pairs = list(itertools.combinations(range(8), 2))
    left, right = [a for a, _ in pairs], [b for _, b in pairs]
    state = triangle_state([0] * 28, left, right, [1] * 28)
    ki = kappa_interval(state.n_triplets, state.n_transitive, triplets_per_pair(state), P_E_WEAK)
    # 56 triplets over 28 pairs, each pair in 6 triplets: n_eff = 3 * 56^2 / (28 * 36)
    assert ki.n_effective[0] == pytest.approx(3 * 56**2 / (28 * 36))
    assert ki.kappa[0] == 1.0
    assert ki.high[0] == pytest.approx(1.0)
    p_low = wilson_interval(np.array([1.0]), ki.n_effective)[0][0]
    assert ki.low[0] == pytest.approx((p_low - P_E_WEAK) / (1 - P_E_WEAK))
    # two triangles sharing no pair are two independent triplets
    two = triangle_state([0] * 6, [0, 1, 0, 3, 4, 3], [1, 2, 2, 4, 5, 5], [1, 1, -1, 1, 1, 1])
    kt = kappa_interval(two.n_triplets, two.n_transitive, triplets_per_pair(two), P_E_STRICT)
    assert kt.n_effective[0] == 2.0
    assert kt.kappa[0] == pytest.approx((0.5 - 0.75) / 0.25)
    with pytest.raises(ValueError, match="n_transitive must lie"):
        kappa_interval([1], [2], [3], P_E_WEAK)


def test_ambiguous_pairs_known_splits() -> None:
    eta = np.r_[np.full(8, 0.9), 0.5, 0.5]
    # pair (0, 1): eight reliable annotators split 4 to 4; pair (2, 3): two random ones 1 to 1;
    # pair (4, 5): judged once; pair (6, 7): eight reliable, 7 to 1
    workers = np.r_[np.arange(8), 8, 9, 0, np.arange(8)]
    left = np.r_[np.zeros(8, int), 2, 2, 4, np.full(8, 6)]
    right = np.r_[np.ones(8, int), 3, 3, 5, np.full(8, 7)]
    outcome = np.r_[[1, -1] * 4, 1, -1, 1, [1] * 7, -1]
    amb = ambiguous_pairs(eta, workers, left, right, outcome)
    assert amb.pairs.tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert amb.p_value[0] == pytest.approx(binom.sf(3, 8, 0.1))
    assert amb.p_value[1] == pytest.approx(0.75)
    assert amb.p_value[2] == 1.0
    assert amb.p_value[3] == pytest.approx(binom.sf(0, 8, 0.1))
    assert amb.against.tolist() == [4, 1, 0, 1]
    assert amb.first.tolist() == [4, 1, 1, 7]
    assert amb.expected_against[0] == pytest.approx(0.8)
    assert np.all(amb.q_value >= amb.p_value)
    low, high = wilson_interval(np.array([4, 1, 1, 7]) / np.array([8, 2, 1, 8]), [8, 2, 1, 8])
    np.testing.assert_allclose(amb.first_low, low)
    np.testing.assert_allclose(amb.first_high, high)
    assert amb.first_low[0] < 0.5 < amb.first_high[0]  # 4 to 4: they divide
    assert amb.first_low[3] > 0.5  # 7 to 1 of 8: a clear majority
    with pytest.raises(ValueError, match="accuracy must hold probabilities"):
        ambiguous_pairs([1.5], [0], [0], [1], [1])


def test_ambiguous_pairs_on_a_fitted_campaign_find_the_contested_pair() -> None:
    rng = np.random.default_rng(3)
    c = simulate(rng, [0.95] * 8, 150, n_items=30)
    # every annotator judges pair (0, 1) with a coin
    extra_w = np.arange(8)
    extra_y = np.where(rng.random(8) < 0.5, 1, -1)
    extra_y[:4] = [1, -1, 1, -1]
    w, a = np.r_[c["workers"], extra_w], np.r_[c["left"], np.zeros(8, int)]
    b, y = np.r_[c["right"], np.ones(8, int)], np.r_[c["outcome"], extra_y]
    m = preference_model(w, a, b, y)
    amb = ambiguous_pairs(m.accuracy, w, a, b, y)
    row = np.flatnonzero((amb.pairs[:, 0] == 0) & (amb.pairs[:, 1] == 1))[0]
    assert amb.p_value[row] < 0.05
    assert np.mean(amb.p_value < 0.01) < 0.05


def test_benjamini_hochberg_known_values() -> None:
    # sorted 0.01, 0.03, 0.04, 0.20 -> p m / rank 0.04, 0.06, 0.0533, 0.20, then running minima
    # from the top: 0.04, 0.0533, 0.0533, 0.20
    q = benjamini_hochberg([0.01, 0.04, 0.03, 0.20])
    np.testing.assert_allclose(q, [0.04, 0.16 / 3, 0.16 / 3, 0.20])
    assert benjamini_hochberg([]).size == 0
