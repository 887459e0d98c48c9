"""The held-out check of the rating model against the plain mean (monitor.metrics.ratings.model_check)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numpy.typing import ArrayLike, NDArray

from monitor.metrics.ratings.model import RatingJudgments, rating_model
from monitor.metrics.ratings.model_check import HoldoutCheck, deal_folds, holdout_check

SCALE = (0.0, 100.0)


def _check(
    it: ArrayLike,
    wk: ArrayLike,
    x: ArrayLike,
    *,
    n_items: int,
    n_workers: int,
    scale: tuple[float, float] = SCALE,
    gold: NDArray[np.float64] | None = None,
    **kw: Any,
) -> HoldoutCheck:
    """:func:`holdout_check` on the judgments as arrays (gold NaN where none, no history)."""
    g = np.full(n_items, np.nan) if gold is None else gold
    data = RatingJudgments(np.asarray(it), np.asarray(wk), np.asarray(x), g, None, scale)
    return holdout_check(data, n_workers=n_workers, **kw)


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
    check = _check(it, wk, x, n_items=N, n_workers=W, scale=SCALE, fit=fit)
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
    check = _check(it, wk, x, n_items=40, n_workers=it.size, scale=SCALE, fit=fit)
    assert check.fallback
    assert check.model_mse == pytest.approx(check.plain_mse, rel=1e-4)


@pytest.mark.parametrize("seed", range(3))
def test_a_model_better_than_the_mean_is_kept(seed: int) -> None:
    it, wk, x, truth, N, W = _distinct_workers(seed)
    fit = rating_model(it, wk, x, n_items=N, n_workers=W, scale=SCALE)
    plain = np.bincount(it, weights=x, minlength=N) / 6
    assert np.mean((fit.mean - truth) ** 2) < np.mean((plain - truth) ** 2)
    check = _check(it, wk, x, n_items=N, n_workers=W, scale=SCALE, fit=fit)
    assert not check.fallback
    assert check.model_mse < check.plain_mse
    # the same verdict from a cold start of every fold
    cold = _check(it, wk, x, n_items=N, n_workers=W, scale=SCALE)
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
    check = _check([0, 1, 2], [0, 1, 2], [10.0, 20.0, 30.0], n_items=3, n_workers=3,
                          scale=SCALE)  # fmt: skip
    assert check.n == 0
    assert check.fallback
    it, wk, x, _, N, W = _distinct_workers(0)
    gold = np.full(N, np.nan)
    gold[:10] = 50.0
    check = _check(it, wk, x, n_items=N, n_workers=W, scale=SCALE, gold=gold)
    assert check.n == 6 * (N - 10)
    with pytest.raises(ValueError, match="folds"):
        _check(it, wk, x, n_items=N, n_workers=W, scale=SCALE, folds=1)


def test_a_capped_check_uses_a_subset_of_the_items() -> None:
    it, wk, x, _, N, W = _distinct_workers(1)
    fit = rating_model(it, wk, x, n_items=N, n_workers=W, scale=SCALE)
    full = _check(it, wk, x, n_items=N, n_workers=W, scale=SCALE, fit=fit)
    capped = _check(it, wk, x, n_items=N, n_workers=W, scale=SCALE, fit=fit,
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
        check = _check(it, wk, x, n_items=N, n_workers=W, scale=SCALE)
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
    same = _check(it, np.arange(it.size), x, n_items=40, n_workers=it.size, scale=SCALE)
    assert 0.0 <= same.diff_se < 1e-5 * same.plain_mse  # the fits agree to their tolerance


def test_the_model_is_kept_only_where_it_wins_by_more_than_its_uncertainty() -> None:
    from monitor.metrics.ratings.model_check import MARGIN_SE

    se = 2.0
    beyond = HoldoutCheck(100.0 - MARGIN_SE * se - 0.01, 100.0, 500, 5, se)
    within = HoldoutCheck(100.0 - MARGIN_SE * se + 0.01, 100.0, 500, 5, se)
    worse = HoldoutCheck(101.0, 100.0, 500, 5, se)
    assert not beyond.fallback
    assert within.fallback
    assert worse.fallback
    # no standard error (fewer than two items held out): the point comparison alone
    assert not HoldoutCheck(99.0, 100.0, 1, 5).fallback
    assert HoldoutCheck(float("nan"), float("nan"), 0, 5).fallback


def _valence_shape(seed: int) -> tuple:
    """The shape of a small real rating campaign (Snow et al. 2008's valence): 100 items, 10
    judgments each, 38 workers of very unequal activity (some judged most items, many a few),
    a wide interval scale (-100..100), answers off by heavy-tailed errors (Student's t, 2
    degrees of freedom) and no worker better than another: a model of per-worker biases and
    noises has nothing real to find, and what it fits to a few shared items is luck."""
    rng = np.random.default_rng(seed)
    truth = rng.uniform(-50, 50, 100)
    activity = rng.pareto(0.7, 38) + 0.05
    it = np.repeat(np.arange(100), 10)
    p = activity / activity.sum()
    wk = np.concatenate([rng.choice(38, size=10, replace=False, p=p) for _ in range(100)])
    x = np.clip(np.round(truth[it] + 20 * rng.standard_t(2, it.size)), -100, 100)
    return it, wk, x, truth


def test_on_the_shape_of_a_small_real_campaign_the_model_is_kept_only_on_a_real_win() -> None:
    """Where the workers are alike, the model's held-out win over the plain mean is mostly
    within its uncertainty: the old rule (any win) kept the model on most draws, the margin
    keeps the plain mean on most; wherever the model is kept, its means are no worse than the
    plain mean against the truth beyond two paired standard errors."""
    kept_any = kept_margin = 0
    for seed in range(8):
        it, wk, x, truth = _valence_shape(seed)
        fit = rating_model(it, wk, x, n_items=100, n_workers=38, scale=(-100.0, 100.0))
        check = _check(it, wk, x, n_items=100, n_workers=38, scale=(-100.0, 100.0),
                              fit=fit)  # fmt: skip
        kept_any += int(check.model_mse < check.plain_mse)
        kept_margin += int(not check.fallback)
        if not check.fallback:
            plain = np.bincount(it, weights=x, minlength=100) / 10
            d = np.abs(fit.mean - truth) - np.abs(plain - truth)
            assert d.mean() <= 2 * d.std(ddof=1) / 10
    assert kept_any >= 5
    assert kept_margin <= 2
