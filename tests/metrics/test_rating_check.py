"""The held-out check of the rating model against the plain mean (monitor.metrics.ratings.model_check)."""

from __future__ import annotations

import numpy as np
import pytest

from monitor.metrics.ratings.model import rating_model
from monitor.metrics.ratings.model_check import deal_folds, holdout_check

SCALE = (0.0, 100.0)


def _few_items_each(seed: int) -> tuple:
    """60 items, 6 judgments each, by 180 interchangeable workers who judged 2 items each
    (no bias, one noise): the model's biases and noises come from 2 items and add error."""
    rng = np.random.default_rng(seed)
    truth = rng.uniform(20, 80, 60)
    it = np.repeat(np.arange(60), 6)
    wk = rng.permutation(np.repeat(np.arange(180), 2))
    x = np.clip(truth[it] + rng.normal(0, 15, it.size), 0, 100).round()
    return it, wk, x, truth, 60, 180


def _distinct_workers(seed: int) -> tuple:
    """6 workers on every item: 3 precise (two of them biased by +-10), 3 noisy (sd 30)."""
    rng = np.random.default_rng(seed)
    truth = rng.uniform(20, 80, 60)
    it = np.repeat(np.arange(60), 6)
    wk = np.tile(np.arange(6), 60)
    sd, bias = np.array([3, 3, 3, 30, 30, 30]), np.array([0, 10, -10, 0, 0, 0])
    x = np.clip(truth[it] + bias[wk] + rng.normal(0, 1, it.size) * sd[wk], 0, 100)
    return it, wk, x, truth, 60, 6


@pytest.mark.parametrize("seed", range(3))
def test_interchangeable_workers_on_two_items_each_give_about_the_plain_mean(seed: int) -> None:
    # nothing for the model to gain: the estimated priors shrink what it would fit on 2 items
    # (biases to 0, noises to the pooled one), so it is about the plain mean, not worse
    it, wk, x, truth, N, W = _few_items_each(seed)
    fit = rating_model(it, wk, x, n_items=N, n_workers=W, scale=SCALE)
    plain = np.bincount(it, weights=x, minlength=N) / 6
    assert np.max(np.abs(fit.mean - plain)) < 2.0
    assert np.mean((fit.mean - truth) ** 2) < 1.02 * np.mean((plain - truth) ** 2)
    # without the estimated priors (one pseudo-judgment of bias, two of noise) it was worse
    check = holdout_check(it, wk, x, n_items=N, n_workers=W, scale=SCALE, fit=fit)
    assert check.n == it.size
    assert check.model_mse == pytest.approx(check.plain_mse, rel=0.02)


def test_one_judgment_per_worker_makes_the_model_the_plain_mean_and_falls_back() -> None:
    # every worker judged one item: the estimated priors leave no bias and one noise, so the
    # model's means are the plain means, which is no better
    rng = np.random.default_rng(5)
    truth = rng.uniform(20, 80, 40)
    it = np.repeat(np.arange(40), 5)
    wk = np.arange(it.size)
    x = truth[it] + rng.normal(0, 10, it.size) + rng.normal(0, 8, it.size)
    fit = rating_model(it, wk, x, n_items=40, n_workers=it.size, scale=SCALE)
    plain = np.bincount(it, weights=x, minlength=40) / 5
    assert np.allclose(fit.mean, plain, atol=1e-3)
    check = holdout_check(it, wk, x, n_items=40, n_workers=it.size, scale=SCALE, fit=fit)
    assert check.fallback
    assert check.model_mse == pytest.approx(check.plain_mse, rel=1e-4)


@pytest.mark.parametrize("seed", range(3))
def test_a_model_better_than_the_mean_is_kept(seed: int) -> None:
    it, wk, x, truth, N, W = _distinct_workers(seed)
    fit = rating_model(it, wk, x, n_items=N, n_workers=W, scale=SCALE)
    plain = np.bincount(it, weights=x, minlength=N) / 6
    assert np.mean((fit.mean - truth) ** 2) < np.mean((plain - truth) ** 2)
    check = holdout_check(it, wk, x, n_items=N, n_workers=W, scale=SCALE, fit=fit)
    assert not check.fallback
    assert check.model_mse < check.plain_mse
    # the same verdict from a cold start of every fold
    cold = holdout_check(it, wk, x, n_items=N, n_workers=W, scale=SCALE)
    assert cold.model_mse == pytest.approx(check.model_mse, rel=1e-3)


def test_folds_leave_every_item_judged_twice_a_judgment_in_training() -> None:
    rng = np.random.default_rng(3)
    items = rng.integers(0, 40, 300)
    fold = deal_folds(items, 40, 5, seed=1)
    assert fold.min() >= 0
    assert fold.max() <= 4
    n_i = np.bincount(items, minlength=40)
    for k in range(5):
        held = np.bincount(items[fold == k], minlength=40)
        assert np.all(held <= np.ceil(n_i / 5))
        assert np.all(n_i[n_i >= 2] - held[n_i >= 2] >= 1)
    assert np.array_equal(fold, deal_folds(items, 40, 5, seed=1))  # the same data, same folds


def test_nothing_to_hold_out_falls_back_and_gold_items_are_not_scored() -> None:
    check = holdout_check([0, 1, 2], [0, 1, 2], [10.0, 20.0, 30.0], n_items=3, n_workers=3,
                          scale=SCALE)  # fmt: skip
    assert check.n == 0
    assert check.fallback
    it, wk, x, _, N, W = _distinct_workers(0)
    gold = np.full(N, np.nan)
    gold[:10] = 50.0
    check = holdout_check(it, wk, x, n_items=N, n_workers=W, scale=SCALE, gold=gold)
    assert check.n == 6 * (N - 10)
    with pytest.raises(ValueError, match="folds"):
        holdout_check(it, wk, x, n_items=N, n_workers=W, scale=SCALE, folds=1)


def test_a_capped_check_uses_a_subset_of_the_items() -> None:
    it, wk, x, _, N, W = _distinct_workers(1)
    fit = rating_model(it, wk, x, n_items=N, n_workers=W, scale=SCALE)
    full = holdout_check(it, wk, x, n_items=N, n_workers=W, scale=SCALE, fit=fit)
    capped = holdout_check(it, wk, x, n_items=N, n_workers=W, scale=SCALE, fit=fit,
                           max_judgments=150)  # fmt: skip
    assert capped.n <= 150 < full.n
    assert capped.n % 6 == 0  # whole items, 6 judgments each
    assert not capped.fallback


def test_the_standard_error_of_the_difference_matches_its_spread_over_campaigns() -> None:
    # 30 campaigns from one generator: the difference of held-out errors varies between them
    # about as much as each campaign's clustered standard error says
    diffs, ses = [], []
    for seed in range(30):
        it, wk, x, _, N, W = _distinct_workers(100 + seed)
        check = holdout_check(it, wk, x, n_items=N, n_workers=W, scale=SCALE)
        diffs.append(check.model_mse - check.plain_mse)
        ses.append(check.diff_se)
    spread, typical = float(np.std(diffs, ddof=1)), float(np.sqrt(np.mean(np.square(ses))))
    assert np.all(np.isfinite(ses))
    assert min(ses) > 0
    assert 0.6 < spread / typical < 1.6
    # a model that is the plain mean (one judgment per worker) differs by nothing, no spread
    rng = np.random.default_rng(5)
    it = np.repeat(np.arange(40), 5)
    x = rng.uniform(0, 100, it.size)
    same = holdout_check(it, np.arange(it.size), x, n_items=40, n_workers=it.size, scale=SCALE)
    assert 0.0 <= same.diff_se < 1e-5 * same.plain_mse  # the fits agree to their tolerance
