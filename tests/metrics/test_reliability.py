"""Dawid-Skene label model: hand cases, planted workers, crowd-kit agreement, invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from monitor.metrics.labels.gold import wilson_interval
from monitor.metrics.labels.label_model import dawid_skene, tie_break
from monitor.metrics.labels.multilabel_model import multilabel_model
from monitor.metrics.ratings.model import rating_model
from tests.hypothesis_profiles import examples


def _campaign(
    seed: int, n_items: int, accuracies: np.ndarray, per_item: int, k: int = 3
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each item judged by ``per_item`` distinct random workers; errors uniform over classes."""
    rng = np.random.default_rng(seed)
    w = accuracies.size
    truth = rng.integers(0, k, n_items)
    items = np.repeat(np.arange(n_items), per_item)
    workers = np.concatenate([rng.choice(w, per_item, replace=False) for _ in range(n_items)])
    right = rng.random(items.size) < accuracies[workers]
    wrong = (truth[items] + rng.integers(1, k, items.size)) % k
    labels = np.where(right, truth[items], wrong)
    return items, workers, labels, truth


def test_unanimous_perfect_workers() -> None:
    truth = np.array([0, 1, 2, 1, 0, 2] * 5)
    items = np.tile(np.arange(30), 3)
    workers = np.repeat(np.arange(3), 30)
    m = dawid_skene(items, workers, truth[items], n_items=31, n_workers=4, n_classes=3)
    assert m.converged
    assert np.array_equal(m.labels[:30], truth)
    assert m.labels[30] == -1
    assert np.allclose(m.posterior[:30], np.eye(3)[truth], atol=1e-6)
    assert np.allclose(m.posterior[30], m.prior)  # unjudged item: the prior
    assert np.allclose(m.posterior.sum(axis=1), 1.0)
    assert np.all(m.accuracy[:3] > 0.95)
    assert np.isnan(m.accuracy[3])
    assert np.isnan(m.low[3])
    assert np.isnan(m.high[3])
    assert m.n.tolist() == [30, 30, 30, 0]
    assert m.prior == pytest.approx([1 / 3] * 3, abs=1e-6)
    assert m.chance == pytest.approx(1 / 3, abs=1e-6)


def test_unanimous_workers_on_the_one_coin_fallback_keep_their_answers() -> None:
    """Workers with fewer than ``min_judgments`` judgments, all right: their one-coin accuracy
    is 1, and the other classes must stay improbable (floored), not drop out of the product
    (a confusion cell of 0 counted as log 1 gave every item a posterior of one half)."""
    truth = np.array([0, 1, 0, 1, 0, 1])
    items = np.repeat(np.arange(6), 3)
    workers = np.tile(np.arange(3), 6)
    m = dawid_skene(items, workers, truth[items], n_items=6, n_workers=4, n_classes=2)
    assert m.one_coin[:3].all()
    assert np.array_equal(m.labels, truth)
    assert np.allclose(m.posterior, np.eye(2)[truth], atol=1e-6)


def test_spammers_fall_below_the_floor_and_noisy_workers_do_not() -> None:
    rng = np.random.default_rng(3)
    n, k = 400, 2
    truth = rng.integers(0, k, n)
    honest = [np.where(rng.random(n) < 0.8, truth, 1 - truth) for _ in range(6)]
    noisy = np.where(rng.random(n) < 0.7, truth, 1 - truth)
    random_ = rng.integers(0, k, n)
    constant = np.zeros(n, dtype=np.int64)
    answers = np.concatenate([*honest, noisy, random_, constant])
    items = np.tile(np.arange(n), 9)
    workers = np.repeat(np.arange(9), n)
    m = dawid_skene(items, workers, answers, n_items=n, n_workers=9, n_classes=k)
    assert m.converged
    assert m.chance == pytest.approx(max(truth.mean(), 1 - truth.mean()), abs=0.03)
    assert m.chance < m.floor < 1
    assert m.high[7] < m.floor
    assert m.high[8] < m.floor  # random, constant
    assert m.low[6] > m.floor
    assert np.all(m.low[:6] > m.floor)  # noisy but honest, honest
    assert m.accuracy[6] == pytest.approx(0.7, abs=0.05)


def test_planted_accuracies_are_recovered() -> None:
    acc = np.linspace(0.35, 0.95, 30)
    items, workers, labels, truth = _campaign(1, 3000, acc, 5)
    m = dawid_skene(items, workers, labels, n_items=3000, n_workers=30, n_classes=3)
    assert m.converged
    assert not m.one_coin.any()
    assert np.abs(m.accuracy - acc).max() < 0.06
    assert np.mean(m.labels == truth) > np.mean(_majority(items, labels, 3000, 3) == truth)
    inside = (m.low <= acc) & (acc <= m.high)
    assert inside.mean() >= 0.8


def _majority(items: np.ndarray, labels: np.ndarray, n: int, k: int) -> np.ndarray:
    votes = np.zeros((n, k))
    np.add.at(votes, (items, labels), 1)
    return votes.argmax(axis=1)


def test_agrees_with_crowdkit_from_the_same_start() -> None:
    pd = pytest.importorskip("pandas")
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    acc = np.random.default_rng(5).uniform(0.3, 0.95, 40)
    items, workers, labels, _ = _campaign(5, 500, acc, 5)
    df = pd.DataFrame({"task": items, "worker": workers, "label": labels})
    m = dawid_skene(items, workers, labels, n_items=500, n_workers=40, n_classes=3,
                    smoothing=0.0, min_judgments=0, tol=1e-6)  # fmt: skip
    # crowd-kit stops earlier (objective gain < tol on its own objective): nearly the same labels
    ck = crowdkit.DawidSkene(n_iter=100, tol=1e-6).fit(df)
    assert np.mean(ck.labels_.sort_index().to_numpy() == m.labels) >= 0.99
    # the same number of steps from the same start: the same iterates
    same = crowdkit.DawidSkene(n_iter=m.iterations, tol=-np.inf).fit(df)
    probas = same.probas_.sort_index()[[0, 1, 2]].to_numpy()
    assert np.abs(probas - m.posterior).max() < 1e-8
    errors = same.errors_
    conf = np.array(
        [[[errors.loc[(w, a), t] for a in range(3)] for t in range(3)] for w in range(3)]
    )
    assert np.abs(conf - m.confusion[:3]).max() < 1e-8
    assert np.allclose(same.priors_.sort_index().to_numpy(), m.prior)
    # gold: crowd-kit's true_labels clamp the same way
    gold = np.full(500, -1)
    gold[:50] = _majority(items, labels, 500, 3)[:50]
    true_labels = pd.Series(gold[:50], index=np.arange(50))
    ck_gold = crowdkit.DawidSkene(n_iter=5, tol=-np.inf).fit(df, true_labels=true_labels)
    mg = dawid_skene(items, workers, labels, n_items=500, n_workers=40, n_classes=3, gold=gold,
                     smoothing=0.0, min_judgments=0, max_iter=5, tol=0.0)  # fmt: skip
    probas = ck_gold.probas_.sort_index()[[0, 1, 2]].to_numpy()
    assert np.abs(probas - mg.posterior).max() < 1e-8


def _expert_alone(seed: int = 3) -> tuple[np.ndarray, ...]:
    """A crowd of 30 workers right 75% of the time (5 per item, 400 items, 80% of class 0), and
    one more worker right on the 15 shared items they judge, alone on 10 items they call 3."""
    rng = np.random.default_rng(seed)
    k, n, w = 4, 400, 30
    truth = rng.choice(k, n, p=[0.8, 0.1, 0.05, 0.05])
    items = np.repeat(np.arange(n), 5)
    workers = np.concatenate([rng.choice(w, 5, replace=False) for _ in range(n)])
    right = rng.random(items.size) < 0.75
    labels = np.where(right, truth[items], rng.integers(0, k, items.size))
    shared = rng.choice(n, 15, replace=False)
    lone = np.arange(n, n + 10)
    items = np.concatenate([items, shared, lone])
    workers = np.concatenate([workers, np.full(25, w)])
    labels = np.concatenate([labels, truth[shared], np.full(10, 3)])
    return items, workers, labels, lone


@pytest.mark.parametrize("model", ["dawid_skene", "one_coin"])
def test_items_judged_once_do_not_judge_their_judge(model: str) -> None:
    # counted, the lone items' posteriors hand the class prior back to their judge: the expert
    # looks wrong where they alone answered (0.68), and their answers there give way to class 0
    from monitor.metrics.labels.one_coin import one_coin_dawid_skene

    items, workers, labels, lone = _expert_alone()
    fit = dawid_skene if model == "dawid_skene" else one_coin_dawid_skene
    kw = dict(n_items=410, n_workers=31, n_classes=4)
    looped = fit(items, workers, labels, min_item_judgments=1, **kw)  # type: ignore[operator]
    assert looped.accuracy[30] < 0.75
    assert np.all(looped.labels[lone] == 0)
    m = fit(items, workers, labels, **kw)  # type: ignore[operator]
    assert m.accuracy[30] > 0.95
    assert np.all(m.labels[lone] == 3)
    # the interval counts the 15 judgments that measure them: Wilson's on 15, not on 25
    low, _ = wilson_interval(np.array([m.accuracy[30]]), np.array([15.0]))
    assert m.low[30] == pytest.approx(low[0])
    assert m.n[30] == 25
    # a worker who only ever judged alone: the crowd's accuracy, and any value holds
    alone = fit(np.array([0, 0, 1]), np.array([0, 1, 2]), np.array([1, 1, 0]), n_items=2,
                n_workers=3, n_classes=2)  # type: ignore[operator]  # fmt: skip
    assert (alone.low[2], alone.high[2]) == (0.0, 1.0)


def test_gold_clamps_the_truth() -> None:
    # all three workers say 1 on item 0, but gold says 0
    items = np.array([0, 0, 0, 1, 1, 1])
    workers = np.array([0, 1, 2, 0, 1, 2])
    labels = np.array([1, 1, 1, 0, 0, 1])
    gold = np.array([0, -1, 2])  # item 2 unjudged but gold
    m = dawid_skene(items, workers, labels, n_items=3, n_workers=3, n_classes=3, gold=gold)
    assert np.array_equal(m.posterior[0], [1.0, 0.0, 0.0])
    assert np.array_equal(m.posterior[2], [0.0, 0.0, 1.0])
    assert m.labels[0] == 0
    assert m.labels[2] == 2
    free = dawid_skene(items, workers, labels, n_items=3, n_workers=3, n_classes=3)
    assert free.labels[0] == 1
    assert free.labels[2] == -1


def test_one_coin_fallback_and_wide_interval_for_few_judgments() -> None:
    acc = np.full(20, 0.8)
    items, workers, labels, _ = _campaign(2, 300, acc, 3)
    # worker 20 answers 3 items, all wrong
    few_items = np.array([0, 1, 2])
    truth_guess = _majority(items, labels, 300, 3)[few_items]
    items = np.concatenate([items, few_items])
    workers = np.concatenate([workers, [20, 20, 20]])
    labels = np.concatenate([labels, (truth_guess + 1) % 3])
    m = dawid_skene(items, workers, labels, n_items=300, n_workers=21, n_classes=3)
    assert m.one_coin[20]
    assert not m.one_coin[:20].any()
    assert m.n[20] == 3
    rows = m.confusion[20]
    assert np.allclose(np.diag(rows), rows[0, 0])
    assert np.allclose(rows.sum(axis=1), 1.0)
    assert m.high[20] - m.low[20] > 0.4  # 3 judgments never give a tight interval
    assert m.high[20] > m.chance  # ... nor a flag
    assert np.all(m.high[:20] - m.low[:20] < 0.35)
    assert np.all(m.high[:20] - m.low[:20] < m.high[20] - m.low[20])


def test_worker_prior_pulls_the_estimate() -> None:
    acc = np.full(10, 0.75)
    items, workers, labels, _ = _campaign(4, 300, acc, 3)
    base = dawid_skene(items, workers, labels, n_items=300, n_workers=10, n_classes=3)
    prior = np.full(10, np.nan)
    prior[0] = 0.05
    m = dawid_skene(items, workers, labels, n_items=300, n_workers=10, n_classes=3,
                    worker_prior=prior)  # fmt: skip
    assert m.accuracy[0] < base.accuracy[0] - 0.05
    low, high = wilson_interval(m.accuracy[:1], m.n[:1] + 10.0)  # history is evidence too
    assert m.low[0] == pytest.approx(low[0])
    assert m.high[0] == pytest.approx(high[0])
    assert np.allclose(m.accuracy[5:], base.accuracy[5:], atol=0.1)


def test_not_converged_is_reported() -> None:
    acc = np.random.default_rng(0).uniform(0.4, 0.9, 15)
    items, workers, labels, _ = _campaign(0, 200, acc, 4)
    m = dawid_skene(items, workers, labels, n_items=200, n_workers=15, n_classes=3, max_iter=1)
    assert not m.converged
    assert m.iterations == 1
    done = dawid_skene(items, workers, labels, n_items=200, n_workers=15, n_classes=3)
    assert done.converged
    assert 1 < done.iterations < 100
    assert np.isfinite(done.log_likelihood)
    assert done.log_likelihood < 0


def test_bad_input_raises() -> None:
    with pytest.raises(ValueError, match="labels"):
        dawid_skene([0], [0], [3], n_items=1, n_workers=1, n_classes=3)
    with pytest.raises(ValueError, match="gold"):
        dawid_skene([0], [0], [1], n_items=1, n_workers=1, n_classes=3, gold=[5])
    with pytest.raises(ValueError, match="init"):
        dawid_skene([0], [0], [1], n_items=1, n_workers=1, n_classes=3, init=np.ones((2, 3)))
    with pytest.raises(ValueError, match="worker_prior"):
        dawid_skene([0], [0], [1], n_items=1, n_workers=1, n_classes=3, worker_prior=[2.0])


judgments = st.integers(2, 5).flatmap(
    lambda k: st.tuples(
        st.just(k),
        st.lists(
            st.tuples(st.integers(0, 7), st.integers(0, 5), st.integers(0, k - 1)),
            min_size=1,
            max_size=60,
        ),
    )
)


@settings(max_examples=examples(40), deadline=None)
@given(judgments, st.integers(0, 2**31))
@example(case=(5, [(0, 0, 2), (1, 0, 2), (2, 1, 1), (2, 1, 1), (2, 2, 0), (2, 2, 0)]), seed=0)
@example(case=(3, [(0, 0, 1), (0, 1, 1), (1, 2, 0), (1, 2, 2), (2, 0, 0), (2, 1, 2)]), seed=0)
def test_properties(case: tuple[int, list[tuple[int, int, int]]], seed: int) -> None:
    k, rows = case
    items = np.array([r[0] for r in rows])
    workers = np.array([r[1] for r in rows])
    labels = np.array([r[2] for r in rows])
    kw = dict(n_items=8, n_workers=6, n_classes=k, min_judgments=3, tol=1e-10, max_iter=300)
    m = dawid_skene(items, workers, labels, **kw)  # type: ignore[arg-type]
    assert np.allclose(m.posterior.sum(axis=1), 1.0)
    assert np.allclose(m.confusion.sum(axis=2), 1.0)
    seen = m.n > 0
    assert np.all((m.accuracy[seen] >= 0) & (m.accuracy[seen] <= 1))
    assert np.all(
        (m.low[seen] <= m.accuracy[seen] + 1e-9) & (m.accuracy[seen] <= m.high[seen] + 1e-9)
    )
    assert 1.0 / k - 1e-9 <= m.chance <= 1.0
    rng = np.random.default_rng(seed)
    # renaming workers and items, and shuffling the judgments, permutes the result (up to where
    # the stop rule lands: near a symmetric saddle, one EM step more moves a posterior by ~1e-5)
    pw, pi, order = rng.permutation(6), rng.permutation(8), rng.permutation(len(rows))
    p = dawid_skene(pi[items][order], pw[workers][order], labels[order], **kw)  # type: ignore[arg-type]
    assert np.allclose(p.posterior[pi], m.posterior, atol=1e-3)
    assert np.allclose(p.accuracy[pw], m.accuracy, atol=1e-3, equal_nan=True)
    # relabelling the classes permutes the posterior columns
    pk = rng.permutation(k)
    r = dawid_skene(items, workers, pk[labels], **kw)  # type: ignore[arg-type]
    assert np.allclose(r.posterior[:, pk], m.posterior, atol=1e-3)
    assert np.allclose(r.accuracy, m.accuracy, atol=1e-3, equal_nan=True)


# ---------------------------------------------------------------- ratings


def _ratings(
    seed: int, n_items: int, bias: np.ndarray, noise: np.ndarray, per_item: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    w = bias.size
    mu = rng.uniform(20, 80, n_items)
    items = np.repeat(np.arange(n_items), per_item)
    workers = np.concatenate([rng.choice(w, per_item, replace=False) for _ in range(n_items)])
    x = mu[items] + bias[workers] + rng.normal(0, 1, items.size) * noise[workers]
    return items, workers, x, mu


def test_rating_model_recovers_planted_biases_and_noise() -> None:
    rng = np.random.default_rng(8)
    bias = rng.normal(0, 8, 40)
    noise = rng.uniform(2, 20, 40)
    items, workers, x, mu = _ratings(8, 4000, bias, noise, 5)
    m = rating_model(items, workers, x, n_items=4000, n_workers=40, scale=(0, 100))
    assert m.converged
    assert m.n.sum() == x.size
    n = np.bincount(workers, minlength=40)
    assert np.sum(n * m.bias) == pytest.approx(0.0, abs=1e-6)  # gauge
    centred = bias - np.sum(n * bias) / n.sum()
    assert np.abs(m.bias - centred).max() < 2.0
    assert np.abs(m.noise_sd - noise).max() < 0.15 * noise.max()
    assert np.mean((m.low <= noise) & (noise <= m.high)) >= 0.85  # nominal 0.95
    plain = np.bincount(items, weights=x) / np.bincount(items)
    assert np.abs(m.mean - mu - np.mean(m.mean - mu)).mean() < 0.7 * np.abs(plain - mu).mean()
    assert np.all(m.sd > 0)
    assert np.all(m.sd < 10)


def test_rating_flags_constant_and_random_answerers_not_noisy_honest_ones() -> None:
    rng = np.random.default_rng(9)
    n = 300
    mu = rng.uniform(0, 100, n)
    honest = [mu + rng.normal(0, 8, n) for _ in range(5)]
    noisy = mu + 10 + rng.normal(0, 35, n)  # biased, noisy, but tracking the truth
    constant = np.full(n, 50.0)
    random_ = rng.uniform(0, 100, n)
    x = np.concatenate([*honest, noisy, constant, random_])
    items = np.tile(np.arange(n), 8)
    workers = np.repeat(np.arange(8), n)
    m = rating_model(items, workers, x, n_items=n, n_workers=8, scale=(0, 100))
    flagged = m.low > m.worker_floor_sd
    assert flagged.tolist() == [False] * 6 + [True, True]
    assert m.bias[5] > 5
    assert m.chance_sd == pytest.approx(np.std(m.mean))
    assert m.floor_sd < m.chance_sd


def test_rating_gold_clamps_and_few_judgments_stay_uncertain() -> None:
    items = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    workers = np.array([0, 1, 2, 0, 1, 2, 0, 3])
    x = np.array([10.0, 12, 14, 50, 52, 54, 30, 30])
    gold = np.array([np.nan, 40.0, np.nan])
    m = rating_model(items, workers, x, n_items=3, n_workers=4, scale=(0, 100), gold=gold)
    assert m.mean[1] == 40.0
    assert m.sd[1] == 0.0
    assert np.isnan(m.spread_p[1])
    assert m.bias[0] < m.bias[2]  # gold sets the gauge: everybody is high on item 1
    assert m.noise_sd[3] >= 1.0
    assert m.high[3] / m.low[3] > 3  # 1 judgment: not precise
    free = rating_model(items, workers, x, n_items=3, n_workers=4, scale=(0, 100), bias=False)
    assert np.all(free.bias[free.n > 0] == 0.0)
    assert free.mean[1] == pytest.approx(52.0, abs=1.0)


def test_rating_ambiguous_item_has_a_small_p_value() -> None:
    rng = np.random.default_rng(4)
    noise = np.full(10, 5.0)
    items, workers, x, _ = _ratings(4, 400, np.zeros(10), noise, 6)
    x[items == 0] = np.array([0.0, 100, 5, 95, 10, 90])
    m = rating_model(items, workers, x, n_items=400, n_workers=10, scale=(0, 100))
    assert m.spread_p[0] < 1e-6
    assert m.item_spread[0] > 5 * m.expected_spread[0]
    rest = m.spread_p[1:]
    assert 0.3 < np.mean(rest) < 0.7
    assert np.mean(rest < 0.05) < 0.12
    assert rng is not None


def test_rating_not_converged_is_reported() -> None:
    items, workers, x, _ = _ratings(2, 200, np.linspace(-10, 10, 12), np.linspace(2, 30, 12), 4)
    m = rating_model(items, workers, x, n_items=200, n_workers=12, scale=(0, 100), max_iter=1)
    assert not m.converged
    assert m.iterations == 1
    with pytest.raises(ValueError, match="scale"):
        rating_model(items, workers, x, n_items=200, n_workers=12, scale=(1, 1))


@settings(max_examples=examples(40), deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.integers(0, 4), st.floats(0, 10)), min_size=2, max_size=50
    ),
    st.integers(0, 2**31),
    st.floats(-50, 50),
)
def test_rating_properties(rows: list[tuple[int, int, float]], seed: int, shift: float) -> None:
    items = np.array([r[0] for r in rows])
    workers = np.array([r[1] for r in rows])
    x = np.round(np.array([r[2] for r in rows]), 1)  # ratings on a grid, some at the bounds
    kw = dict(n_items=7, n_workers=5, scale=(0.0, 10.0), tol=1e-12, max_iter=2000)
    m = rating_model(items, workers, x, **kw)  # type: ignore[arg-type]
    seen = m.n > 0
    assert np.all(m.noise_sd[seen] >= 0.1 - 1e-12)
    assert np.all((m.low[seen] <= m.noise_sd[seen]) & (m.noise_sd[seen] <= m.high[seen]))
    judged = np.bincount(items, minlength=7) > 0
    assert np.all(np.isfinite(m.mean[judged]))
    assert np.isnan(m.mean[~judged]).all()
    rng = np.random.default_rng(seed)
    pw, pi, order = rng.permutation(5), rng.permutation(7), rng.permutation(len(rows))
    p = rating_model(pi[items][order], pw[workers][order], x[order], **kw)  # type: ignore[arg-type]
    assert np.allclose(p.mean[pi], m.mean, atol=1e-6, equal_nan=True)
    assert np.allclose(p.noise_sd[pw], m.noise_sd, atol=1e-6, equal_nan=True)
    # shifting the values and the scale shifts the means, nothing else
    kw2 = dict(kw, scale=(shift, shift + 10.0))
    s = rating_model(items, workers, x + shift, **kw2)  # type: ignore[arg-type]
    assert np.allclose(s.mean, m.mean + shift, atol=1e-6, equal_nan=True)
    assert np.allclose(s.noise_sd, m.noise_sd, atol=1e-6, equal_nan=True)


# ---------------------------------------------------------------- multi-label


def _multilabel(seed: int, n_items: int, quality: np.ndarray, per_item: int, n_opt: int = 5):
    """Honest workers flip each option with prob 1 - quality; quality < 0: random selection."""
    rng = np.random.default_rng(seed)
    truth = rng.random((n_items, n_opt)) < 0.3
    items = np.repeat(np.arange(n_items), per_item)
    workers = np.concatenate(
        [rng.choice(quality.size, per_item, replace=False) for _ in range(n_items)]
    )
    q = quality[workers][:, None]
    flip = rng.random((items.size, n_opt)) > np.abs(q)
    said = np.where(q > 0, truth[items] ^ flip, rng.random((items.size, n_opt)) < 0.5)
    said[q[:, 0] == 0] = False  # quality 0: never selects anything
    j, c = np.nonzero(said)
    return items, workers, j, c, truth


def test_multilabel_recovers_truth_and_flags_spammers() -> None:
    quality = np.array([0.9] * 8 + [0.75, -1.0, 0.0])
    items, workers, j, c, truth = _multilabel(6, 1500, quality, 5)
    m = multilabel_model(items, workers, j, c, n_items=1501, n_workers=11, n_options=5)
    assert m.converged
    assert m.posterior.shape == (1501, 5)
    assert np.mean((m.posterior[:1500] > 0.5) == truth) > 0.97
    assert np.allclose(m.posterior[1500], m.prior)  # unjudged
    assert m.prior == pytest.approx(truth.mean(axis=0), abs=0.03)
    assert np.abs(m.accuracy[:8] - 0.9).max() < 0.03
    assert m.accuracy[8] == pytest.approx(0.75, abs=0.04)
    assert m.chance == 0.5
    assert m.floor == pytest.approx(0.6)
    assert m.accuracy[9] == pytest.approx(0.5, abs=0.05)
    assert m.accuracy[10] < 0.55
    assert np.all(m.low[:9] > m.floor)
    assert m.high[9] < m.floor
    assert m.high[10] < m.floor
    one = multilabel_model(items, workers, j, c, n_items=1501, n_workers=11, n_options=5,
                           max_iter=1)  # fmt: skip
    assert not one.converged
    assert one.iterations == 1


def test_multilabel_items_judged_once_do_not_judge_their_judge() -> None:
    # worker 11 judges 20 shared items well and 30 items alone, selecting everything there
    quality = np.array([0.9] * 11)
    items, workers, j, c, truth = _multilabel(6, 300, quality, 5)
    shared = np.arange(20)
    sets = [np.flatnonzero(truth[i]) for i in shared] + [np.arange(5)] * 30
    alone_items = np.concatenate([shared, np.arange(300, 330)])
    base = items.size
    items = np.concatenate([items, alone_items])
    workers = np.concatenate([workers, np.full(50, 11)])
    j = np.concatenate([j, np.repeat(base + np.arange(50), [s.size for s in sets])])
    c = np.concatenate([c, *sets])
    kw = dict(n_items=331, n_workers=12, n_options=5)
    m = multilabel_model(items, workers, j, c, **kw)  # type: ignore[arg-type]
    looped = multilabel_model(items, workers, j, c, min_item_judgments=1, **kw)  # type: ignore[arg-type]
    # measured on the 20 shared items they got right, not on the 30 they alone filled
    assert m.accuracy[11] > looped.accuracy[11] + 0.1
    low, high = wilson_interval(np.array([m.accuracy[11]]), np.array([20.0]))
    assert (m.low[11], m.high[11]) == pytest.approx((low[0], high[0]))
    assert m.n[11] == 50


@settings(max_examples=examples(30), deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 3), st.sets(st.integers(0, 3))),
        min_size=1,
        max_size=40,
    ),
    st.integers(0, 2**31),
)
def test_multilabel_properties(rows: list[tuple[int, int, set[int]]], seed: int) -> None:
    items = np.array([r[0] for r in rows])
    workers = np.array([r[1] for r in rows])
    j = np.array([k for k, r in enumerate(rows) for _ in r[2]], dtype=np.int64)
    c = np.array([o for r in rows for o in sorted(r[2])], dtype=np.int64)
    kw = dict(n_items=6, n_workers=4, n_options=4, tol=1e-10, max_iter=500)
    m = multilabel_model(items, workers, j, c, **kw)  # type: ignore[arg-type]
    assert np.all((m.posterior >= 0) & (m.posterior <= 1))
    seen = m.n > 0
    assert np.all((m.accuracy[seen] >= 0) & (m.accuracy[seen] <= 1))
    assert np.all(
        (m.low[seen] <= m.accuracy[seen] + 1e-9) & (m.accuracy[seen] <= m.high[seen] + 1e-9)
    )
    perm = np.random.default_rng(seed).permutation(4)
    p = multilabel_model(items, workers, j, perm[c], **kw)  # type: ignore[arg-type]
    assert np.allclose(p.posterior[:, perm], m.posterior, atol=1e-6)
    assert np.allclose(p.accuracy, m.accuracy, atol=1e-6, equal_nan=True)


def test_empty_and_tiny_campaigns() -> None:
    e = np.array([], dtype=np.int64)
    m = dawid_skene(e, e, e, n_items=3, n_workers=2, n_classes=2)
    assert m.converged
    assert m.labels.tolist() == [-1, -1, -1]
    assert np.isnan(m.accuracy).all()
    assert np.allclose(m.posterior, 0.5)
    one = dawid_skene([0, 1], [0, 0], [0, 0], n_items=2, n_workers=1, n_classes=1)
    assert one.labels.tolist() == [0, 0]
    assert one.accuracy[0] == pytest.approx(1.0)
    r = rating_model(e, e, np.array([]), n_items=2, n_workers=2, scale=(0, 10))
    assert np.isnan(r.mean).all()
    assert np.isnan(r.noise_sd).all()
    r = rating_model([0], [0], [3.0], n_items=1, n_workers=1, scale=(0, 10))
    assert r.mean[0] == 3.0
    assert not r.low[0] > r.worker_floor_sd[0]  # one judgment: no flag
    ml = multilabel_model(e, e, e, e, n_items=2, n_workers=2, n_options=3)
    assert ml.converged
    assert np.allclose(ml.posterior, 0.5)
    assert np.isnan(ml.accuracy).all()


def test_warm_starts_and_rating_history() -> None:
    acc = np.random.default_rng(1).uniform(0.5, 0.95, 20)
    items, workers, labels, _ = _campaign(11, 600, acc, 4)
    kw = dict(n_items=600, n_workers=20, n_classes=3)
    cold = dawid_skene(items, workers, labels, **kw)  # type: ignore[arg-type]
    warm = dawid_skene(items, workers, labels, **kw, init=cold.posterior)  # type: ignore[arg-type]
    assert warm.converged
    assert warm.iterations < cold.iterations
    assert np.array_equal(warm.labels, cold.labels)
    assert np.allclose(warm.accuracy, cold.accuracy, atol=1e-3)

    bias, noise = np.zeros(10), np.full(10, 10.0)
    items, workers, x, _ = _ratings(12, 500, bias, noise, 4)
    # worker 10 gives 2 ratings; history says their noise sd is 2
    extra = [x[items == 0].mean(), x[items == 1].mean()]
    items = np.concatenate([items, [0, 1]])
    workers = np.concatenate([workers, [10, 10]])
    x = np.concatenate([x, extra])
    kw2 = dict(n_items=500, n_workers=11, scale=(0.0, 100.0))
    base = rating_model(items, workers, x, **kw2)  # type: ignore[arg-type]
    prior = np.full(11, np.nan)
    prior[10] = 2.0
    hist = rating_model(items, workers, x, **kw2, worker_prior=prior)  # type: ignore[arg-type]
    assert base.noise_sd[10] > 5.0  # 2 judgments: pulled to the crowd's noise, never 0
    assert hist.noise_sd[10] < 4.0
    assert hist.high[10] - hist.low[10] < base.high[10] - base.low[10]
    again = rating_model(items, workers, x, **kw2, init=base.mean)  # type: ignore[arg-type]
    assert again.iterations <= base.iterations
    assert np.allclose(again.mean, base.mean, atol=1e-3)


def test_skewed_classes_use_the_workers_own_chance() -> None:
    rng = np.random.default_rng(13)
    n = 2000
    truth = (rng.random(n) < 0.1).astype(np.int64)
    # honest: sensitivity 0.8, specificity 0.86 (accuracy about 0.85, under max prior 0.9)
    honest = [
        np.where(truth == 1, rng.random(n) < 0.8, rng.random(n) > 0.86).astype(np.int64)
        for _ in range(6)
    ]
    constant = np.zeros(n, dtype=np.int64)
    skewed_random = (rng.random(n) < 0.1).astype(np.int64)
    random_ = rng.integers(0, 2, n)
    answers = np.concatenate([*honest, constant, skewed_random, random_])
    items = np.tile(np.arange(n), 9)
    workers = np.repeat(np.arange(9), n)
    m = dawid_skene(items, workers, answers, n_items=n, n_workers=9, n_classes=2)
    assert m.chance == pytest.approx(0.9, abs=0.02)
    assert np.all(m.high[:6] < m.floor)  # the campaign-wide floor would flag honest workers
    assert np.all(m.low[:6] > m.worker_floor[:6])  # their own chance does not
    assert np.all(m.high[6:] < m.worker_floor[6:])  # constant and random answerers: flagged
    assert m.worker_chance[6] == pytest.approx(0.9, abs=0.02)
    assert m.worker_chance[8] == pytest.approx(0.5, abs=0.03)
    assert np.all(m.worker_chance <= m.chance + 1e-9)


def test_judgments_at_the_bounds_are_censored() -> None:
    rng = np.random.default_rng(21)
    n, w = 600, 30
    mu = np.where(rng.random(n) < 0.5, rng.uniform(0, 5, n), rng.uniform(5, 90, n))
    bias = rng.normal(0, 10, w)
    items = np.repeat(np.arange(n), 6)
    workers = np.concatenate([rng.choice(w, 6, replace=False) for _ in range(n)])
    x = np.clip(mu[items] + bias[workers] + rng.normal(0, 8, items.size), 0, 100)
    kw = dict(n_items=n, n_workers=w, scale=(0.0, 100.0))
    cens = rating_model(items, workers, x, **kw)  # type: ignore[arg-type]
    naive = rating_model(items, workers, x, **kw, censored=False)  # type: ignore[arg-type]
    assert cens.converged
    assert naive.converged
    assert np.abs(cens.mean - mu).mean() < np.abs(naive.mean - mu).mean()
    free = (x > 0) & (x < 100)
    n_free = np.bincount(workers, weights=free, minlength=w)
    # the biases come from the uncensored judgments only (gauge over those)
    assert np.sum(n_free * cens.bias) == pytest.approx(0.0, abs=1e-6)
    assert np.corrcoef(cens.bias, bias)[0, 1] > 0.9


@pytest.mark.parametrize("censor", [False, True])
def test_rating_gold_anchors_the_common_bias(censor: bool) -> None:
    # planted biases with a nonzero mean: without gold the gauge (mean-zero biases) cannot see it
    rng = np.random.default_rng(31)
    n, w = 600, 30
    mu = rng.uniform(0, 90, n) if censor else rng.uniform(20, 80, n)
    bias = rng.normal(6, 8, w)
    items = np.repeat(np.arange(n), 6)
    workers = np.concatenate([rng.choice(w, 6, replace=False) for _ in range(n)])
    x = mu[items] + bias[workers] + rng.normal(0, 8, items.size)
    if censor:  # many judgments at the bounds: the free ones are a selected sample
        x = np.clip(x, 0, 100)
    gold = np.full(n, np.nan)
    chosen = rng.choice(n, n // 10, replace=False)
    gold[chosen] = mu[chosen]
    other = np.isnan(gold)
    kw = dict(n_items=n, n_workers=w, scale=(0.0, 100.0))
    plain = rating_model(items, workers, x, **kw)  # type: ignore[arg-type]
    with_gold = rating_model(items, workers, x, gold=gold, **kw)  # type: ignore[arg-type]
    assert plain.converged
    assert with_gold.converged
    err_plain = np.abs(plain.mean - mu)[other].mean()
    err_gold = np.abs(with_gold.mean - mu)[other].mean()
    assert err_gold < 0.6 * err_plain
    assert abs(np.mean((with_gold.mean - mu)[other])) < 1.0  # no shift of the non-gold items
    assert np.abs(with_gold.bias - bias).mean() < 0.2 * np.abs(plain.bias - bias).mean()
    assert np.all(with_gold.mean[~other] == gold[~other])


def test_multilabel_open_set_with_rare_options_converges() -> None:
    # an open set: 5 real options plus 40 words each selected by one or two workers only. Their
    # truth is "absent everywhere", a boundary the plain EM crept towards for thousands of steps
    rng = np.random.default_rng(12)
    quality = np.array([0.9, 0.9, 0.85, 0.85, -1.0, 0.75])
    items, workers, j, c, truth = _multilabel(12, 24, quality, 6)
    stray = np.flatnonzero(rng.random(items.size) < 0.6)
    j = np.concatenate([j, stray])
    c = np.concatenate([c, 5 + rng.integers(0, 40, stray.size)])
    kw = dict(n_items=24, n_workers=6, n_options=45)
    m = multilabel_model(items, workers, j, c, **kw)  # type: ignore[arg-type]
    assert m.converged
    assert m.iterations < 50
    votes = np.zeros((24, 45))
    np.add.at(votes, (items[j], c), 1.0)
    assert np.all(m.posterior[:, 5:][votes[:, 5:] <= 1] < 0.05)  # a word said once is not truth
    assert m.prior[5:].max() < 0.1
    assert np.mean((m.posterior[:, :5] > 0.5) == truth) > 0.9
    # the stray words (never truly present) do not water the accuracy down to the same level
    assert m.accuracy[4] < 0.65
    assert np.all(m.accuracy[[0, 1, 2, 3, 5]] > m.floor)
    # the same fixed point as a long run with a tight tolerance
    tight = multilabel_model(items, workers, j, c, **kw, tol=1e-12, max_iter=5000)  # type: ignore[arg-type]
    assert tight.converged
    assert np.allclose(tight.accuracy, m.accuracy, atol=1e-4)


def test_rating_two_raters_share_their_noise_and_converge() -> None:
    # two workers on the same items: only s_a^2 + s_b^2 is identified; the plain update swapped
    # the two values back and forth and never converged
    rng = np.random.default_rng(17)
    n = 80
    mu = rng.uniform(20, 80, n)
    items = np.tile(np.arange(n), 2)
    workers = np.repeat([0, 1], n)
    x = (
        mu[items]
        + np.where(workers == 1, 6.0, 0.0)
        + rng.normal(0, 1, 2 * n) * np.where(workers, 9, 3)
    )
    m = rating_model(items, workers, x, n_items=n, n_workers=2, scale=(0, 100), max_iter=100)
    assert m.converged
    assert m.iterations < 50
    assert m.shared_noise.tolist() == [True, True]
    assert m.noise_sd[0] == m.noise_sd[1]
    d = x[n:] - x[:n]
    assert m.noise_sd[0] ** 2 == pytest.approx(np.var(d) / 2, rel=0.1)
    assert m.bias[1] - m.bias[0] == pytest.approx(np.mean(d), rel=0.05)
    # gold identifies each worker (here weakly: 8 gold items, 139 steps): no sharing
    gold = np.full(n, np.nan)
    gold[:8] = mu[:8]
    kw = dict(n_items=n, n_workers=2, scale=(0.0, 100.0), max_iter=500)
    g = rating_model(items, workers, x, gold=gold, **kw)  # type: ignore[arg-type]
    assert g.converged
    assert not g.shared_noise.any()
    assert g.noise_sd[0] < g.noise_sd[1]


@pytest.mark.parametrize("n_workers", [3, 6, 10])
def test_rating_two_judgments_per_item_converge(n_workers: int) -> None:
    noise = np.linspace(3, 12, n_workers)
    items, workers, x, _ = _ratings(n_workers, 300, np.linspace(-5, 5, n_workers), noise, 2)
    m = rating_model(items, workers, x, n_items=300, n_workers=n_workers, scale=(0, 100))
    assert m.converged
    assert m.iterations < 60
    assert not m.shared_noise.any()
    assert np.corrcoef(m.noise_sd, noise)[0, 1] > 0.8


def test_dawid_skene_keeps_exact_ties_whatever_the_class_codes() -> None:
    # items 1 and 2 are each split between two classes that nothing else tells apart: the
    # posterior stays split equally (EM used to roll off the tie along rounding errors, to one
    # side or the other depending on how the classes were numbered)
    rows = [(0, 0, 1), (0, 1, 1), (1, 2, 0), (1, 2, 2), (2, 0, 0), (2, 1, 2)]
    items, workers, labels = (np.array(c) for c in zip(*rows, strict=True))
    kw = dict(n_items=3, n_workers=3, n_classes=3, min_judgments=3, tol=1e-10, max_iter=300)
    m = dawid_skene(items, workers, labels, **kw)  # type: ignore[arg-type]
    assert m.posterior[1, 0] == m.posterior[1, 2]
    assert m.posterior[2, 0] == m.posterior[2, 2]
    for perm in ([2, 1, 0], [1, 2, 0], [0, 2, 1]):
        pk = np.array(perm)
        r = dawid_skene(items, workers, pk[labels], **kw)  # type: ignore[arg-type]
        assert np.allclose(r.posterior[:, pk], m.posterior, atol=1e-9)
    # a tied item's label: the class of higher prior, then the first declared
    t = np.array([[0.5, 0.0, 0.5], [0.2, 0.6, 0.2], [1 / 3, 1 / 3, 1 / 3]])
    assert tie_break(t, np.array([0.2, 0.3, 0.5])).tolist() == [2, 1, 2]
    assert tie_break(t, np.array([0.4, 0.2, 0.4])).tolist() == [0, 1, 0]
