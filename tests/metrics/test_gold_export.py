"""The export measured on gold, cross-fitted (:mod:`monitor.metrics.labels.gold_export`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from monitor.metrics.labels.gold import wilson_interval
from monitor.metrics.labels.gold_export import (
    accuracy_on_gold,
    cross_fitted_answers,
    deal_gold_folds,
    mae_on_gold,
)


@given(st.integers(0, 200), st.integers(2, 10), st.integers(0, 5))
def test_the_folds_deal_every_gold_item_once_in_folds_of_near_equal_size(
    n: int, folds: int, seed: int
) -> None:
    fold = deal_gold_folds(n, folds, seed)
    assert fold.shape == (n,)
    sizes = np.bincount(fold, minlength=folds)
    assert sizes.sum() == n
    assert sizes.max() - sizes.min() <= 1


@given(st.integers(2, 60), st.integers(2, 6), st.integers(0, 3))
def test_each_gold_item_is_answered_by_the_fit_that_withheld_its_gold(
    n_gold: int, folds: int, seed: int
) -> None:
    """A fit that answers each item with the number of the fit, and records what it withheld:
    every gold item is withheld exactly once, and its answer is that fit's."""
    n_items = n_gold + 7
    gold_items = np.sort(np.random.default_rng(seed).choice(n_items, n_gold, replace=False))
    seen: list[np.ndarray] = []

    def fit(withheld: np.ndarray) -> np.ndarray:
        seen.append(withheld.copy())
        assert withheld.shape == (n_items,)
        return np.full(n_items, len(seen) - 1)

    answers = cross_fitted_answers(fit, gold_items, n_items, folds, seed)
    withheld = np.array(seen)
    assert len(seen) == min(folds, n_gold)
    assert (withheld.sum(axis=0)[gold_items] == 1).all()
    assert not withheld[:, np.setdiff1d(np.arange(n_items), gold_items)].any()
    assert (answers[gold_items] == withheld[:, gold_items].argmax(axis=0)).all()


def test_a_model_that_copies_the_gold_it_is_given_scores_only_what_it_was_not_given() -> None:
    """The point of the cross-fitting: a model that answers the gold where it has it and the
    wrong class elsewhere is right on gold it learnt from, and wrong on all the withheld gold."""
    gold = np.array([0, 1, 2, 1, 0, 2, 1, 1, 0, 0], dtype=np.int64)

    def fit(withheld: np.ndarray) -> np.ndarray:
        return np.where(withheld, (gold + 1) % 3, gold)

    answers = cross_fitted_answers(fit, np.arange(10), 10, folds=5)
    assert accuracy_on_gold(answers, gold).value == 0.0
    assert accuracy_on_gold(fit(np.zeros(10, dtype=bool)), gold).value == 1.0


def test_accuracy_on_gold_is_the_share_right_with_wilsons_interval() -> None:
    answers = np.array([1, 0, 2, 2, -1, 1, 0, 0])
    gold = np.array([1, 0, 2, 1, 1, 1, 0, 2])
    s = accuracy_on_gold(answers, gold, confidence=0.9)
    assert s.value == pytest.approx(5 / 8)
    low, high = wilson_interval(np.array([5 / 8]), np.array([8]), 0.9)
    assert (s.low, s.high) == (pytest.approx(low[0]), pytest.approx(high[0]))
    assert s.n == 8
    assert s.measure == "accuracy"


def test_mae_on_gold_and_its_bootstrap_interval() -> None:
    rng = np.random.default_rng(3)
    gold = rng.uniform(0, 100, 400)
    answers = gold + rng.normal(0, 10, 400)
    s = mae_on_gold(answers, gold, draws=1000)
    err = np.abs(answers - gold)
    assert s.value == pytest.approx(err.mean())
    se = err.std(ddof=1) / np.sqrt(err.size)
    # a percentile bootstrap of a mean of 400 values: close to mean +- 1.96 se
    assert s.low == pytest.approx(err.mean() - 1.96 * se, abs=0.3 * se)
    assert s.high == pytest.approx(err.mean() + 1.96 * se, abs=0.3 * se)


def test_mae_on_no_gold_is_undefined() -> None:
    s = mae_on_gold(np.zeros(0), np.zeros(0))
    assert s.n == 0
    assert np.isnan(s.value)
