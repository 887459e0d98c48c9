"""One-coin Dawid-Skene in sparse form (many categories) against the same model computed with
dense (N, K) arrays, and what it must recover."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.metrics.labels.gold import wilson_interval
from monitor.metrics.labels.label_model import worker_interval
from monitor.metrics.labels.one_coin import one_coin_dawid_skene


def _dense(items, workers, labels, n, w, k, gold, hist, hist_weight, iters, smoothing=1.0):  # noqa: ANN001, ANN202, PLR0913
    """The same EM with the whole (N, K) posterior: the definition, written plainly."""
    judged = np.bincount(items, minlength=n) > 0
    t = np.zeros((n, k))
    np.add.at(t, (items, labels), 1.0)
    t[judged] /= t[judged].sum(axis=1, keepdims=True)
    clamp = gold >= 0
    t[clamp] = np.eye(k)[gold[clamp]]
    n_w = np.bincount(workers, minlength=w)

    def m(t):  # noqa: ANN001, ANN202
        right = np.bincount(workers, weights=t[items, labels], minlength=w)
        pool = right.sum() / items.size
        p = (right + smoothing * pool + hist_weight * hist) / (n_w + smoothing + hist_weight)
        p = np.clip(p, 1e-10, 1 - 1e-10)
        prior = np.maximum(t[judged].mean(axis=0), 1e-10)
        return p, prior / prior.sum()

    p, prior = m(t)
    for _ in range(iters):
        s = np.tile(np.log(prior), (n, 1))
        np.add.at(s, (items, slice(None)), (np.log1p(-p[workers]) - np.log(k - 1))[:, None])
        np.add.at(s, (items, labels), np.log(p[workers]) - np.log1p(-p[workers]) + np.log(k - 1))
        s -= s.max(axis=1, keepdims=True)
        t = np.exp(s)
        t /= t.sum(axis=1, keepdims=True)
        t[clamp] = np.eye(k)[gold[clamp]]
        p, prior = m(t)
    return t, p, prior


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(3, 9), st.booleans(), st.booleans())
def test_the_sparse_form_is_the_dense_model(seed: int, k: int, with_gold: bool, hist: bool) -> None:
    rng = np.random.default_rng(seed)
    n, w = 12, 5
    items = np.repeat(np.arange(n - 2), 3)  # the last two items unjudged
    workers = rng.integers(0, w, items.size)
    truth = rng.integers(0, k, n)
    labels = np.where(rng.random(items.size) < 0.7, truth[items], rng.integers(0, k, items.size))
    gold = np.full(n, -1)
    if with_gold:
        gold[[0, n - 1]] = truth[[0, n - 1]]
    past = np.where(rng.random(w) < 0.5, rng.random(w), np.nan) if hist else np.full(w, np.nan)
    res = one_coin_dawid_skene(items, workers, labels, n_items=n, n_workers=w, n_classes=k,
                               gold=gold, worker_prior=past, max_iter=5, tol=0.0)  # fmt: skip
    weight = np.where(np.isnan(past), 0.0, 10.0)
    _t, p, prior = _dense(items, workers, labels, n, w, k, gold, np.nan_to_num(past), weight, 5)
    assert res.iterations == 5
    np.testing.assert_allclose(res.prior, prior, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(res.accuracy, np.where(np.bincount(workers, minlength=w) > 0, p, np.nan),
                               rtol=1e-9, atol=1e-12)  # fmt: skip
    # one more E-step from the final parameters: the stored cells, and the rest as prior x rest
    full = res.posterior.toarray()
    kept = full > 0
    judged = np.bincount(items, minlength=n) > 0
    full = np.where(kept, full, res.prior[None, :] * res.rest[:, None])
    s_t, _, _ = _dense(items, workers, labels, n, w, k, gold, np.nan_to_num(past), weight, 6)
    np.testing.assert_allclose(full[judged], s_t[judged], rtol=1e-7, atol=1e-12)
    best = np.argmax(np.where(full == full.max(axis=1, keepdims=True), res.prior, -1.0), axis=1)
    assert np.array_equal(res.labels[judged], best[judged])
    assert np.all(res.labels[~judged & (gold < 0)] == -1)
    if with_gold:
        assert res.labels[0] == truth[0]
        assert res.labels[n - 1] == truth[n - 1]


def test_good_and_bad_workers_told_apart_with_many_classes() -> None:
    rng = np.random.default_rng(3)
    n, k = 3000, 5000
    truth = rng.integers(0, k, n)
    acc = np.array([0.95, 0.9, 0.85, 0.8, 0.02, 0.02])  # the last two answer at random
    items = np.repeat(np.arange(n), 3)
    workers = np.concatenate([rng.choice(6, 3, replace=False) for _ in range(n)])
    right = rng.random(items.size) < acc[workers]
    labels = np.where(right, truth[items], rng.integers(0, k, items.size))
    res = one_coin_dawid_skene(items, workers, labels, n_items=n, n_workers=6, n_classes=k,
                               max_iter=200)  # fmt: skip
    assert res.converged
    np.testing.assert_allclose(res.accuracy, acc, atol=0.03)
    assert np.mean(res.labels == truth) > 0.9  # the better worker wins a disagreement
    assert np.all(res.high[4:] < res.floor)
    assert np.all(res.low[:4] > res.floor)
    assert res.posterior.nnz <= items.size  # one cell per judgment at most


def test_bad_input_refused() -> None:
    with pytest.raises(ValueError, match="labels must lie"):
        one_coin_dawid_skene([0], [0], [7], n_items=1, n_workers=1, n_classes=3)


def test_worker_interval_is_wilson_with_alone_workers_open() -> None:
    rng = np.random.default_rng(3)
    acc = rng.uniform(0, 1, 40)
    n = rng.integers(0, 4, 40)
    trials = np.where(rng.random(40) < 0.3, 0.0, n + rng.integers(0, 10, 40) * 0.5)
    low, high = worker_interval(acc, n, trials, 0.9)
    want_low, want_high = wilson_interval(acc, trials, 0.9)
    alone = (n > 0) & (trials == 0)
    want_low[alone], want_high[alone] = 0.0, 1.0
    np.testing.assert_array_equal(low, want_low)
    np.testing.assert_array_equal(high, want_high)
