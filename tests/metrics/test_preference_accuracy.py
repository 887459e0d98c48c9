"""An annotator's accuracy against the true order through a consensus that may be wrong
(monitor.metrics.preferences.accuracy) and its place in the preference model's fit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from monitor.metrics.preferences.accuracy import consensus_right, true_accuracy
from monitor.metrics.preferences.model import preference_model


def _simulate(acc: np.ndarray, n: int, rng: np.random.Generator, sure: float = 1.0):
    """Answers of annotators with accuracy ``acc`` (W,), ``n`` each, on pairs whose consensus is
    right with a chance drawn in (0.5, 0.5 + sure / 2) and calibrated: the truth is drawn from
    it. Returns (workers, c) with ``c`` the chance each answer is along the truth given the
    consensus."""
    W = len(acc)
    workers = np.repeat(np.arange(W), n)
    conf = 0.5 + sure * rng.uniform(0.0, 0.5, W * n)  # P(truth = consensus order)
    truth_is_consensus = rng.uniform(size=W * n) < conf
    right = rng.uniform(size=W * n) < acc[workers]
    along_consensus = right == truth_is_consensus
    c = np.where(along_consensus, conf, 1 - conf)
    return workers, c


def test_worked_example_gold_only() -> None:
    # every answer on gold (c is 1 or 0): the likelihood of a is binomial and the prior
    # uniform, so 18 of 20 right gives Beta(19, 3): mean 19/22 = 0.8636, and 6 of 20 Beta(7, 15)
    workers = np.repeat([0, 1], 20)
    c = np.concatenate([np.r_[np.ones(18), np.zeros(2)], np.r_[np.ones(6), np.zeros(14)]])
    r = true_accuracy(workers, c, np.zeros(2, dtype=np.int64), 2)
    assert r.accuracy == pytest.approx([19 / 22, 7 / 22], abs=1e-4)
    for k, hits in enumerate((18, 6)):
        post = stats.beta(1 + hits, 1 + 20 - hits)
        assert r.low[k] == pytest.approx(post.ppf(0.025), abs=2e-3)
        assert r.high[k] == pytest.approx(post.ppf(0.975), abs=2e-3)
    assert r.certainty == pytest.approx([1.0, 1.0])


def test_a_coin_consensus_certifies_nobody() -> None:
    # every consensus at 1/2: the answers say nothing about a, the interval is the prior's
    workers = np.repeat([0, 1, 2], 50)
    r = true_accuracy(workers, np.full(150, 0.5), np.zeros(3, dtype=np.int64), 3)
    assert r.low == pytest.approx([0.025] * 3, abs=2e-3)
    assert r.high == pytest.approx([0.975] * 3, abs=2e-3)
    assert r.accuracy == pytest.approx([0.5, 0.5, 0.5], abs=1e-6)
    assert r.certainty == pytest.approx([0.0, 0.0, 0.0])


def test_intervals_cover_at_their_nominal_rate() -> None:
    # data from the model: annotators' accuracies from a Beta, a calibrated consensus
    rng = np.random.default_rng(3)
    W = 400
    acc = rng.beta(8, 3, W)
    workers, c = _simulate(acc, 40, rng)
    r = true_accuracy(workers, c, np.zeros(W, dtype=np.int64), W)
    covered = np.mean((r.low <= acc) & (acc <= r.high))
    assert 0.91 <= covered <= 0.99
    # the uniform prior pulls 40 answers' estimate a little toward 1/2, and no more
    assert -0.04 < np.mean(r.accuracy - acc) < 0.0


def test_a_weaker_consensus_widens_the_interval() -> None:
    rng = np.random.default_rng(4)
    acc = rng.beta(8, 3, 200)
    sure = true_accuracy(*_simulate(acc, 40, rng, 1.0), np.zeros(200, dtype=np.int64), 200)
    weak = true_accuracy(*_simulate(acc, 40, rng, 0.3), np.zeros(200, dtype=np.int64), 200)
    assert np.mean(weak.high - weak.low) > 1.15 * np.mean(sure.high - sure.low)


def test_a_worker_at_chance_gets_an_interval_holding_chance() -> None:
    rng = np.random.default_rng(5)
    acc = np.r_[rng.beta(8, 3, 100), 0.5]
    workers, c = _simulate(acc, 60, rng)
    r = true_accuracy(workers, c, np.zeros(101, dtype=np.int64), 101)
    assert r.low[-1] <= 0.5 <= r.high[-1]


def test_ties_are_wrong_answers() -> None:
    # the same strict answers, plus as many ties for the second annotator: half the accuracy
    workers = np.repeat([0, 1], 40)
    c = np.tile(np.r_[np.ones(32), np.zeros(8)], 2)
    r = true_accuracy(workers, c, np.array([0, 40]), 2)
    assert r.strict[0] == pytest.approx(r.strict[1])
    assert r.accuracy[1] == pytest.approx(r.strict[1] * 40.5 / 81, rel=1e-9)
    assert r.low[1] < r.accuracy[1] < r.high[1] < r.strict[1]
    # only ties: nothing right
    only = true_accuracy(np.zeros(0, dtype=np.int64), np.zeros(0), np.array([30]), 1)
    assert only.high[0] < 0.1


def test_a_tie_is_right_where_gold_says_the_items_are_equal() -> None:
    # annotator 0 ties every pair, annotator 1 answers strictly; half the pairs are equal by
    # gold, the other half ordered by it
    rng = np.random.default_rng(8)
    n_items, per = 12, 40
    gold_items = np.repeat(np.arange(6), 2).astype(float)  # items 2j and 2j + 1 are equal
    left = rng.integers(0, n_items, 2 * per)
    right = (left + rng.integers(1, n_items, 2 * per)) % n_items
    order = np.sign(gold_items[left] - gold_items[right])
    workers = np.repeat([0, 1], per)
    y = np.where(workers == 0, 0, np.where(order >= 0, 1, -1)).astype(np.int64)
    gold = order.copy()
    m = preference_model(workers, left, right, y, gold=gold)
    assert m.answer_accuracy is not None
    equal = order == 0
    tie_share = equal[:per].mean()  # annotator 0 is right exactly on the equal pairs
    strict_share = (~equal[per:]).mean()  # annotator 1 is right exactly on the ordered ones
    assert m.answer_accuracy[0] == pytest.approx(tie_share, abs=0.05)
    assert m.answer_accuracy[1] == pytest.approx(strict_share, abs=0.05)


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(0, 30),
    ties=st.integers(0, 10),
    seed=st.integers(0, 2**16),
)
def test_estimate_lies_in_its_interval(n: int, ties: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    c = rng.uniform(size=n)
    r = true_accuracy(np.zeros(n, dtype=np.int64), c, np.array([ties]), 1)
    assert 0.0 <= r.low[0] <= r.accuracy[0] <= r.high[0] <= 1.0


def test_consensus_right_is_the_chance_of_the_sign() -> None:
    assert consensus_right(np.array([1.0, -1.0]), np.array([1.0, 1.0]), np.array([1.0, 1.0])) == (
        pytest.approx([special.ndtr(1.0), special.ndtr(-1.0)])
    )


def _campaign(rng: np.random.Generator, acc: np.ndarray, n_items: int = 60, per: int = 60):
    """Annotators of accuracy ``acc`` compare random pairs of items with distinct true scores:
    each answer is along the true order with the annotator's accuracy."""
    truth = rng.permutation(n_items).astype(float)
    W = len(acc)
    workers = np.repeat(np.arange(W), per)
    left = rng.integers(0, n_items, W * per)
    right = (left + rng.integers(1, n_items, W * per)) % n_items
    order = np.sign(truth[left] - truth[right]).astype(np.int64)
    right_answer = rng.uniform(size=W * per) < acc[workers]
    y = np.where(right_answer, order, -order)
    return workers, left, right, y, truth


def test_model_answer_accuracy_tracks_the_truth() -> None:
    rng = np.random.default_rng(11)
    acc = np.r_[np.full(10, 0.9), np.full(5, 0.75), [0.5, 0.5]]
    w, left, right, y, _ = _campaign(rng, acc)
    m = preference_model(w, left, right, y, ties_allowed=False)
    assert m.answer_accuracy is not None
    assert m.answer_accuracy_low is not None
    assert m.answer_accuracy_high is not None
    # the annotators at chance score below every good one, and well below
    assert m.answer_accuracy[:10].min() > m.answer_accuracy[15:].max() + 0.1
    assert np.all(m.answer_accuracy_low[15:] < 0.6)
    # the good annotators' true accuracy is held
    good = (m.answer_accuracy_low[:10] <= 0.9) & (m.answer_accuracy_high[:10] >= 0.9)
    assert np.mean(good) >= 0.8


def test_an_annotator_cannot_certify_themselves() -> None:
    # annotator 6 alone compares items 20..29, consistently (80 answers along one order): no
    # other annotator says anything of those items, so the consensus their answers are judged
    # by is a coin and their interval stays wide, however consistent they are
    rng = np.random.default_rng(12)
    w, left, right, y, _ = _campaign(rng, np.full(6, 0.9), n_items=20, per=80)
    own_l = rng.integers(20, 30, 80)
    own_r = 20 + (own_l - 20 + rng.integers(1, 10, 80)) % 10
    own_y = np.where(own_l > own_r, 1, -1)
    m = preference_model(
        np.r_[w, np.full(80, 6)],
        np.r_[left, own_l],
        np.r_[right, own_r],
        np.r_[y, own_y],
        ties_allowed=False,
    )
    assert m.answer_accuracy_low is not None
    assert m.answer_accuracy_high is not None
    assert m.answer_accuracy_low[6] < 0.1
    assert m.answer_accuracy_high[6] > 0.9
    # the six others, judged by each other, are told apart from a coin
    assert np.all(m.answer_accuracy_low[:6] > 0.6)


def _sparse(rng: np.random.Generator, n_items: int = 3000, n: int = 1500) -> tuple:
    """Ten annotators right 90% of the time on ``n`` pairs of random items among ``n_items``
    (each item in about one comparison: chains and stars of pairs judged once), with the items'
    true scores."""
    score = rng.normal(0, 2, n_items)
    w = np.arange(n) % 10
    left = rng.integers(0, n_items, n)
    right = (left + rng.integers(1, n_items, n)) % n_items
    along = rng.random(n) < 0.9
    y = np.where((score[left] > score[right]) == along, 1, -1)
    return w, left, right, y


def test_the_cavity_is_the_consensus_without_the_annotator_on_pairs_judged_once() -> None:
    """On pairs judged about once, each answer's chance of being right given the others is
    what a fit without the annotator says (its scores' posterior, within 0.03 on average and
    0.2 at the most), and the annotators' intervals hold their 90%; with the two items'
    variances alone (their covariance left out) every consensus of a chain turned against
    the answer, and the ten annotators came out right 16% to 57% of the time."""
    rng = np.random.default_rng(3)
    w, left, right, y = _sparse(rng)
    m = preference_model(w, left, right, y, n_workers=10, n_items=3000, position_bias=False)
    assert m.answer_right is not None
    assert m.answer_accuracy_low is not None
    assert m.answer_accuracy_high is not None
    assert np.all(m.answer_accuracy_low <= 0.9)
    assert np.all(m.answer_accuracy_high >= 0.9)
    for k in range(3):
        keep = w != k
        alone = preference_model(w[keep], left[keep], right[keep], y[keep], n_workers=10,
                                 n_items=3000, position_bias=False)  # fmt: skip
        mine = np.flatnonzero(w == k)  # the strict answers come first, in their order
        d = alone.score[left[mine]] - alone.score[right[mine]]
        sd = np.hypot(alone.score_se[left[mine]], alone.score_se[right[mine]])
        exact = special.ndtr(y[mine] * d / sd)
        gap = np.abs(m.answer_right[mine] - exact)
        assert gap.mean() < 0.03
        assert gap.max() < 0.2
