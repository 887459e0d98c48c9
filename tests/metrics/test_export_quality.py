"""The expected quality of the exports: labels (accuracy), label sets, preference rankings
(pair accuracy) and ratings (mean absolute error)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import ndtr

from monitor.metrics.labels.export_accuracy import (
    _OneCoin,
    expected_accuracy,
    expected_set_accuracy,
    held_out_rho,
)
from monitor.metrics.preferences.pair_accuracy import expected_pair_accuracy
from monitor.metrics.ratings.export_error import expected_mae
from tests.hypothesis_profiles import examples


def crowd(acc: float, n_items: int, per_item: int, n_workers: int, k: int, seed: int):
    """Workers of accuracy ``acc`` (errors spread evenly), the majority vote as the export."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, n_items)
    items = np.repeat(np.arange(n_items), per_item)
    workers = rng.integers(0, n_workers, items.size)
    right = rng.random(items.size) < acc
    answers = np.where(right, truth[items], (truth[items] + rng.integers(1, k, items.size)) % k)
    votes = np.zeros((n_items, k))
    np.add.at(votes, (items, answers), 1)
    exported = votes.argmax(axis=1)
    n = np.bincount(workers, minlength=n_workers)
    return items, workers, answers, exported, truth, n


def test_worked_example_two_workers_one_item() -> None:
    # known accuracies 0.9, equal priors: 0.81 / (0.81 + 0.01); the drawn accuracies lower it
    r = expected_accuracy([0, 0], [0, 1], [0, 0], [0], [0.9, 0.9], [1e6, 1e6], [0.5, 0.5])
    assert r.value == pytest.approx(0.81 / 0.82, abs=1e-3)
    few = expected_accuracy([0, 0], [0, 1], [0, 0], [0], [0.9, 0.9], [5, 5], [0.5, 0.5])
    assert few.value < r.value  # uncertain accuracies: less sure
    # the items' part: one item, p (1 - p)
    assert r.items_sd == pytest.approx(math.sqrt(r.value * (1 - r.value)), abs=1e-3)


def test_a_label_nobody_gave_and_gold() -> None:
    # the exported class 1 was never answered: its posterior is small, not zero
    r = expected_accuracy([0, 0], [0, 1], [0, 0], [1], [0.9, 0.9], [100, 100], [0.5, 0.5])
    assert 0 < r.value < 0.05
    g = expected_accuracy([0, 0], [0, 1], [0, 0], [1], [0.9, 0.9], [100, 100], [0.5, 0.5],
                          gold=[True])  # fmt: skip
    assert g.value == 1.0


def test_perfect_unanimous_crowd_is_right_on_nearly_every_item() -> None:
    items, workers, answers, exported, _, n = crowd(1.0, 200, 5, 10, 3, seed=1)
    r = expected_accuracy(items, workers, answers, exported, np.full(10, 0.99), n, [1 / 3] * 3)
    assert r.value > 0.99
    assert r.high <= 1.0


def test_coin_flip_workers_give_about_chance() -> None:
    items, workers, answers, exported, truth, n = crowd(0.5, 400, 5, 10, 2, seed=2)
    r = expected_accuracy(items, workers, answers, exported, np.full(10, 0.5), n, [0.5, 0.5])
    assert r.value == pytest.approx(0.5, abs=0.05)
    assert r.low <= (exported == truth).mean() <= r.high


def test_honest_crowd_with_true_accuracies_predicts_the_export() -> None:
    items, workers, answers, exported, truth, n = crowd(0.7, 1000, 5, 20, 3, seed=3)
    r = expected_accuracy(items, workers, answers, exported, np.full(20, 0.7), n, [1 / 3] * 3)
    assert r.low <= (exported == truth).mean() <= r.high
    assert r.high - r.low < 0.1


def hard_items_crowd(seed: int, share_hard: float = 0.3):
    """Ten workers of accuracy 0.85 on 1,000 binary items, but on a share of hard items every
    worker is right only 55% of the time: the judgments of an item are not independent."""
    rng = np.random.default_rng(seed)
    n_items, per_item = 1000, 10
    truth = rng.integers(0, 2, n_items)
    hard = rng.random(n_items) < share_hard
    items = np.repeat(np.arange(n_items), per_item)
    workers = np.tile(np.arange(per_item), n_items)
    right = rng.random(items.size) < np.where(hard[items], 0.55, 0.85)
    answers = np.where(right, truth[items], 1 - truth[items])
    exported = (np.bincount(items, weights=answers, minlength=n_items) > per_item / 2).astype(int)
    return items, workers, answers, exported, truth


def test_held_out_loss_is_the_leave_one_out_likelihood() -> None:
    """The vectorised leave-one-out likelihood against the plain loop over judgments: the
    tempered one-coin posterior of each judgment's answer from the other judgments of its
    item, then the chance the worker agrees with it."""
    items = np.array([0, 0, 0, 1, 1, 2, 3, 3, 3, 3])
    workers = np.array([0, 1, 2, 0, 2, 1, 0, 1, 2, 3])
    answers = np.array([0, 0, 2, 1, 1, 2, 0, 1, 1, 1])
    acc = np.array([0.9, 0.6, 0.75, 0.3])
    prior = np.array([0.5, 0.3, 0.2])
    K = 3
    model = _OneCoin(items, workers, answers, np.array([0, 1, 2, 1]), prior)
    for rho in (0.0, 0.3, 2.0):
        loss = 0.0
        for j in range(items.size):
            others = [k for k in range(items.size) if items[k] == items[j] and k != j]
            t = 1.0 / (1.0 + max(len(others) - 1, 0) * rho)
            b = np.zeros(K)
            for k in others:
                b[answers[k]] += t * math.log(acc[workers[k]] * (K - 1) / (1 - acc[workers[k]]))
            post = prior * np.exp(b) / (prior * np.exp(b)).sum()
            a, p = acc[workers[j]], post[answers[j]]
            loss -= math.log(p * a + (1 - p) * (1 - a) / (K - 1))
        assert model.held_out_loss(acc, rho) == pytest.approx(loss, rel=1e-9)


def test_independent_answers_keep_the_plain_model() -> None:
    items, workers, answers, exported, _, _ = crowd(0.7, 1000, 5, 20, 3, seed=3)
    model = _OneCoin(items, workers, answers, exported, np.full(3, 1 / 3))
    assert held_out_rho([model], np.full(20, 0.7)) < 0.02


def test_items_that_mislead_many_workers_at_once_lower_the_expectation() -> None:
    """On hard items the workers split more often than independent answers would: the
    leave-one-out fit finds the correlation, and the expectation falls to the truth where the
    plain one-coin posteriors would promise far more (the rte case in miniature)."""
    items, workers, answers, exported, truth = hard_items_crowd(seed=11)
    acc = np.array([np.mean((answers == truth[items])[workers == w]) for w in range(10)])
    n = np.full(10, 1000)
    model = _OneCoin(items, workers, answers, exported, np.array([0.5, 0.5]))
    rho = held_out_rho([model], acc)
    assert rho > 0.02
    true = (exported == truth).mean()
    r = expected_accuracy(items, workers, answers, exported, acc, n, [0.5, 0.5])
    plain = _OneCoin(items, workers, answers, exported, np.array([0.5, 0.5]))(acc).mean()
    assert plain - true > 0.03  # independence promises too much
    assert abs(r.value - true) < 0.6 * abs(plain - true)  # 0.027 off instead of 0.064


@settings(max_examples=examples(40), deadline=None)
@given(
    acc=st.floats(0.0, 1.0),
    n_items=st.integers(1, 30),
    per_item=st.integers(1, 6),
    k=st.integers(2, 5),
    seed=st.integers(0, 10_000),
)
def test_value_is_a_share_inside_its_interval(
    acc: float, n_items: int, per_item: int, k: int, seed: int
) -> None:
    items, workers, answers, exported, _, n = crowd(acc, n_items, per_item, 4, k, seed)
    rng = np.random.default_rng(seed)
    r = expected_accuracy(items, workers, answers, exported, rng.random(4), n,
                          rng.dirichlet(np.ones(k)), draws=20)  # fmt: skip
    assert 0.0 <= r.low <= r.value <= r.high <= 1.0
    assert r.n == n_items


def test_label_sets_exactly_right() -> None:
    # one option, unanimous and sure: right; two sure options: the product
    one = expected_set_accuracy([0, 0, 0], [0, 1, 2], [[1], [1], [1]], [[True]],
                                [0.99] * 3, [1000] * 3, [0.5])  # fmt: skip
    assert one.value > 0.99
    rng = np.random.default_rng(5)
    items = np.repeat(np.arange(50), 4)
    chosen = rng.random((items.size, 3)) < 0.5  # coin flips on every option
    exported = rng.random((50, 3)) < 0.5
    r = expected_set_accuracy(items, np.tile(np.arange(4), 50), chosen, exported,
                              [0.5] * 4, [150] * 4, [0.5] * 3)  # fmt: skip
    assert r.value == pytest.approx(0.125, abs=0.05)  # chance: 1 / 2^3
    assert 0 <= r.low <= r.value <= r.high <= 1


def test_pair_accuracy_worked_example_and_bounds() -> None:
    r = expected_pair_accuracy([0.0, 1.0, 3.0], [0.5, 0.5, 0.5])
    d = np.array([1.0, 3.0, 2.0]) / math.sqrt(0.5)
    assert r.value == pytest.approx(float(ndtr(d).mean()))
    assert r.n == 3
    sure = expected_pair_accuracy(np.arange(50.0), np.full(50, 1e-3))
    assert sure.value == pytest.approx(1.0)
    flat = expected_pair_accuracy(np.zeros(50), np.ones(50))
    assert flat.value == pytest.approx(0.5)
    assert math.isnan(expected_pair_accuracy([1.0], [1.0]).value)


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.tuples(st.floats(-5, 5), st.floats(0.01, 3)), min_size=2, max_size=40))
def test_pair_accuracy_is_a_share_inside_its_interval(rows: list[tuple[float, float]]) -> None:
    r = expected_pair_accuracy([x for x, _ in rows], [s for _, s in rows])
    assert 0.5 <= r.value <= 1.0
    assert 0.0 <= r.low <= r.value <= r.high <= 1.0


def test_expected_mae_of_normal_errors() -> None:
    r = expected_mae([2.0] * 400 + [float("nan")])
    assert r.n == 400
    assert r.value == pytest.approx(2.0 * math.sqrt(2 / math.pi))
    errors = np.abs(np.random.default_rng(0).normal(0, 2.0, 400))
    assert r.low <= errors.mean() <= r.high
