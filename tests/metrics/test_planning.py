"""The pair planner (monitor.metrics.preferences.planning): never an implied or judged pair, triangles
closed, shares and budget respected, stable ids, the same plan for the same seed."""

from __future__ import annotations

import numpy as np
import pytest

from monitor.metrics.preferences.intraobserver import implied_pairs
from monitor.metrics.preferences.planning import (
    GOLD,
    INFORMATION,
    KNOWN,
    PURPOSES,
    RETEST,
    TRIANGLE,
    pair_id,
    plan_pairs,
    quotas,
)
from monitor.metrics.preferences.triangles import triangle_state


def _campaign(n_items=200, n_workers=20, per_worker=40, seed=1):
    rng = np.random.default_rng(seed)
    truth = rng.normal(0, 1, n_items)
    w = np.repeat(np.arange(n_workers), per_worker)
    a = rng.integers(0, n_items, w.size)
    b = (a + rng.integers(1, n_items, w.size)) % n_items
    y = np.where(truth[a] > truth[b], 1, -1)
    return truth, w, a, b, y


def _plan(truth, w, a, b, y, n_workers, **kw):
    n_items = truth.size
    kw.setdefault("budget", 30 * n_workers)
    kw.setdefault("plan_for", np.arange(n_workers))
    return plan_pairs(
        w, a, b, y, n_items=n_items, score=truth, score_sd=np.full(n_items, 0.5),
        accuracy=np.full(n_workers, 0.85), **kw,
    )  # fmt: skip


def _keys(w, a, b, n):
    return set(((w * n + np.minimum(a, b)) * n + np.maximum(a, b)).tolist())


def test_never_an_implied_or_judged_pair() -> None:
    # annotator 0 ordered a chain 0 > 1 > 2 > 3 > 4 (and ties 5 = 6 = 7): everything between
    # them is implied; many more judgments make wedges elsewhere
    truth, w, a, b, y = _campaign(n_items=60, n_workers=6, per_worker=50)
    chain_a = np.array([0, 1, 2, 3, 5, 6])
    chain_b = np.array([1, 2, 3, 4, 6, 7])
    chain_y = np.array([1, 1, 1, 1, 0, 0])
    w = np.r_[np.zeros(6, int), w]
    a, b, y = np.r_[chain_a, a], np.r_[chain_b, b], np.r_[chain_y, y]
    plan = _plan(truth, w, a, b, y, 6, budget=600)
    imp = implied_pairs(w, a, b, y)
    implied = _keys(imp.workers, imp.items[:, 0], imp.items[:, 1], 60)
    judged = _keys(w, a, b, 60)
    planned = _keys(plan.workers, plan.left, plan.right, 60)
    assert len(implied) > 10
    assert len(plan) > 300
    assert planned.isdisjoint(implied)
    assert planned.isdisjoint(judged)
    for lo, hi in [(0, 2), (0, 4), (1, 3), (5, 7)]:
        assert (0 * 60 + lo) * 60 + hi not in planned
    # no pair twice, never an item against itself
    assert len(planned) == len(plan)
    assert (plan.left != plan.right).all()


def test_triangles_are_closed_to_the_target() -> None:
    truth, w, a, b, y = _campaign(n_items=500, n_workers=30, per_worker=40)
    before = triangle_state(w, a, b, y).n_triplets
    assert (before < 10).all()  # random pairs over 500 items close almost nothing
    plan = _plan(truth, w, a, b, y, 30, budget=30 * 30)
    # the annotators answer the planned pairs along the truth
    ans = np.where(truth[plan.left] > truth[plan.right], 1, -1)
    after = triangle_state(
        np.r_[w, plan.workers], np.r_[a, plan.left], np.r_[b, plan.right], np.r_[y, ans]
    ).n_triplets
    assert (after >= 10).all()
    assert (plan.closing >= 10).all()
    # the rest goes to information
    assert (plan.purpose == INFORMATION).sum() > 0.2 * len(plan)


def test_existing_wedges_are_closed_with_one_pair_each() -> None:
    # annotator 0: item 0 beat 1..20 (a star): every pair of its losers closes a triangle
    truth = np.linspace(1, -1, 50)
    a = np.zeros(20, int)
    b = np.arange(1, 21)
    y = np.ones(20, int)
    w = np.zeros(20, int)
    plan = _plan(truth, w, a, b, y, 1, budget=12, plan_for=[0])
    tri = plan.purpose == TRIANGLE
    assert tri.sum() >= 10
    # star pairs: both items among the losers of item 0 (not implied: 0 beat both)
    assert np.isin(plan.left[tri], b).all()
    assert np.isin(plan.right[tri], b).all()


def test_shares_and_budget_are_respected() -> None:
    truth, w, a, b, y = _campaign(n_items=300, n_workers=40, per_worker=40)
    gold = np.where(np.arange(300) % 5 == 0, truth, np.nan)
    plan = _plan(truth, w, a, b, y, 40, budget=2000, retest=0.2, gold=gold, gold_share=0.1)
    assert len(plan) == 2000
    assert np.bincount(plan.workers, minlength=40).tolist() == [50] * 40
    n = np.bincount(plan.purpose, minlength=len(PURPOSES))
    assert abs(n[RETEST] - 400) <= 40
    assert abs(n[GOLD] - 200) <= 30
    # a retest pair is one the annotator judged; a gold pair has two different gold values
    judged = _keys(w, a, b, 300)
    r = plan.purpose == RETEST
    assert _keys(plan.workers[r], plan.left[r], plan.right[r], 300) <= judged
    g = plan.purpose == GOLD
    assert np.isfinite(gold[plan.left[g]]).all()
    assert np.isfinite(gold[plan.right[g]]).all()
    assert (gold[plan.left[g]] != gold[plan.right[g]]).all()
    # per-annotator quota
    capped = _plan(truth, w, a, b, y, 40, budget=2000, per_annotator=7)
    assert np.bincount(capped.workers, minlength=40).tolist() == [7] * 40


def test_quotas() -> None:
    assert quotas(3, 10, None).tolist() == [4, 3, 3]
    assert quotas(3, 10, 2).tolist() == [2, 2, 2]
    assert quotas(3, 4, 5).tolist() == [2, 1, 1]
    # by information: more to the informative, between half and 1.5 times the even share
    q = quotas(4, 400, None, [0.0, 0.1, 0.4, 0.9])
    assert q.sum() == 400
    assert q.tolist() == sorted(q.tolist())
    assert q[0] == 50
    assert q[3] == 150
    assert quotas(4, 400, 120, [0.0, 0.1, 0.4, 0.9]).max() <= 120
    assert quotas(4, 400, None, [0.5] * 4).tolist() == [100] * 4
    # other bounds: nothing for an annotator whose answers teach nothing, no cap short of 10x
    free = quotas(4, 400, None, [0.0, 0.1, 0.4, 0.9], shares=(0.0, 10.0))
    assert free.sum() == 400
    assert free[0] == 0
    assert free[3] > 150
    assert free.tolist() == [0, 29, 114, 257]  # in proportion to the information


def test_accurate_annotators_get_more_pairs() -> None:
    truth, w, a, b, y = _campaign(n_items=300, n_workers=10, per_worker=30)
    plan = plan_pairs(
        w, a, b, y, n_items=300, score=truth, score_sd=np.full(300, 0.5),
        accuracy=np.r_[np.full(5, 0.55), np.full(5, 0.95)], plan_for=np.arange(10), budget=400,
    )  # fmt: skip
    n = np.bincount(plan.workers, minlength=10)
    assert n.sum() == 400
    assert n[:5].max() < n[5:].min()


def test_excluded_pairs_are_never_planned() -> None:
    truth, w, a, b, y = _campaign(n_items=40, n_workers=5, per_worker=20)
    first = _plan(truth, w, a, b, y, 5, budget=100)
    again = _plan(
        truth, w, a, b, y, 5, budget=100, exclude=(first.workers, first.left, first.right)
    )
    assert _keys(first.workers, first.left, first.right, 40).isdisjoint(
        _keys(again.workers, again.left, again.right, 40)
    )


def test_new_annotators_start_on_known_pairs_and_gold() -> None:
    truth, w, a, b, y = _campaign(n_items=100, n_workers=10, per_worker=30)
    gold = np.where(np.arange(100) < 20, truth, np.nan)
    plan = plan_pairs(
        w, a, b, y, n_items=100, score=truth, score_sd=np.full(100, 0.2),
        accuracy=np.r_[np.full(10, 0.8), np.nan], plan_for=[10], budget=20, gold=gold,
        gold_share=0.3,
    )  # fmt: skip
    assert len(plan) == 20
    assert set(plan.purpose.tolist()) <= {KNOWN, GOLD, INFORMATION}
    k = plan.purpose == KNOWN
    assert k.sum() >= 6
    # known pairs: an order the model is sure of (two sds apart at least)
    sd = np.sqrt(2 * 0.2**2)
    assert (np.abs(truth[plan.left[k]] - truth[plan.right[k]]) >= 2 * sd).mean() >= 0.9


def test_information_pairs_are_the_uncertain_ones() -> None:
    truth, w, a, b, y = _campaign(n_items=400, n_workers=10, per_worker=30)
    sd = np.where(np.arange(400) < 40, 2.0, 0.1)  # 40 items barely known
    plan = plan_pairs(
        w, a, b, y, n_items=400, score=truth, score_sd=sd, accuracy=np.full(10, 0.9),
        plan_for=np.arange(10), budget=200, close_share=0.0, triplet_target=0,
    )  # fmt: skip
    wide = (plan.left < 40) | (plan.right < 40)
    assert wide.mean() > 0.8


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_information_partners_come_from_across_the_scale(seed: int) -> None:
    # not a chain of near neighbours: with intervals as wide as the spread of the scores (a
    # campaign of a few comparisons per item), partners come from across the scale (the
    # A-optimal choice among random candidates tilts toward uncertain orders, not neighbours)
    truth, w, a, b, y = _campaign(n_items=300, n_workers=10, per_worker=30, seed=seed)
    plan = plan_pairs(
        w, a, b, y, n_items=300, score=truth, score_sd=np.full(300, 1.0),
        accuracy=np.full(10, 0.85), plan_for=np.arange(10), budget=300, close_share=0.0,
        triplet_target=0, seed=seed,
    )  # fmt: skip
    rank = np.argsort(np.argsort(truth))
    gap = np.abs(rank[plan.left] - rank[plan.right])
    assert np.median(gap) > 300 / 20  # neighbours within 2% of the items: 3
    assert np.quantile(gap, 0.9) > 300 / 5


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_information_pairs_balance_the_degrees(seed: int) -> None:
    # items compared unevenly so far (sds from their degrees): the plan raises the least
    # known most, so degrees end more even than after as many random pairs
    rng = np.random.default_rng(seed)
    n_i, n_w = 300, 10
    truth = rng.normal(0, 1, n_i)
    heavy = rng.random(n_i) < 0.3
    p = np.where(heavy, 5.0, 1.0)
    a = rng.choice(n_i, 600, p=p / p.sum())
    b = rng.choice(n_i, 600, p=p / p.sum())
    a, b = a[a != b], b[a != b]
    w = rng.integers(0, n_w, a.size)
    y = np.where(truth[a] > truth[b], 1, -1)
    deg = np.bincount(a, minlength=n_i) + np.bincount(b, minlength=n_i)
    sd = 1 / np.sqrt(0.1 + 0.25 * deg)
    plan = plan_pairs(
        w, a, b, y, n_items=n_i, score=truth, score_sd=sd, accuracy=np.full(n_w, 0.85),
        plan_for=np.arange(n_w), budget=600, close_share=0.0, triplet_target=0, seed=seed,
    )  # fmt: skip
    planned = deg + np.bincount(plan.left, minlength=n_i) + np.bincount(plan.right, minlength=n_i)
    ra, rb = rng.integers(0, n_i, len(plan)), rng.integers(0, n_i, len(plan))
    randomly = deg + np.bincount(ra, minlength=n_i) + np.bincount(rb, minlength=n_i)
    assert planned.std() < 0.8 * randomly.std()
    assert (planned == 0).sum() <= (randomly == 0).sum()
    # and never an implied or judged pair
    imp = implied_pairs(w, a, b, y)
    banned = _keys(imp.workers, imp.items[:, 0], imp.items[:, 1], n_i) | _keys(w, a, b, n_i)
    assert not banned & _keys(plan.workers, plan.left, plan.right, n_i)


def test_same_seed_same_plan() -> None:
    truth, w, a, b, y = _campaign()
    one = _plan(truth, w, a, b, y, 20, seed=7, retest=0.1)
    two = _plan(truth, w, a, b, y, 20, seed=7, retest=0.1)
    three = _plan(truth, w, a, b, y, 20, seed=8, retest=0.1)
    for f in ("workers", "left", "right", "purpose"):
        assert np.array_equal(getattr(one, f), getattr(two, f))
    assert not np.array_equal(one.left, three.left)


def test_pair_ids_are_stable() -> None:
    first = pair_id("c", "w1", "a", "b", 1)
    assert first == pair_id("c", "w1", "a", "b", 1)
    assert first.startswith("p-")
    assert len(first) == 18
    others = {pair_id("c", "w1", "b", "a", 1), pair_id("c", "w2", "a", "b", 1),
              pair_id("c", "w1", "a", "b", 2), pair_id("d", "w1", "a", "b", 1)}  # fmt: skip
    assert first not in others
    assert len(others) == 4


@pytest.mark.parametrize(
    "kw",
    [{"retest": 1.5}, {"gold_share": -0.1}, {"retest": 0.6, "gold_share": 0.6}, {"budget": -1}],
)
def test_bad_options_raise(kw) -> None:  # noqa: ANN001
    truth, w, a, b, y = _campaign(n_items=20, n_workers=2, per_worker=5)
    with pytest.raises(ValueError):
        _plan(truth, w, a, b, y, 2, **kw)


def test_a_plan_for_ten_thousand_items_and_a_thousand_annotators() -> None:
    # at the bench's size (its timing is bench/planning.py's, not a test's): the whole budget,
    # every annotator served, no pair twice for one annotator
    truth, w, a, b, y = _campaign(n_items=10_000, n_workers=1000, per_worker=30)
    plan = _plan(truth, w, a, b, y, 1000, budget=30_000, retest=0.1)
    assert len(plan) == 30_000
    assert np.bincount(plan.workers, minlength=1000).min() > 0
    lo, hi = np.minimum(plan.left, plan.right), np.maximum(plan.left, plan.right)
    assert np.unique((plan.workers * 10_000 + lo) * 10_000 + hi).size == len(plan)
