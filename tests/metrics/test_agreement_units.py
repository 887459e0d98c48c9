"""Worked examples, undefined values, validation, bootstrap and worker-vs-aggregate."""

from __future__ import annotations

import numpy as np
import pytest

from monitor.metrics.agreement import krippendorff
from monitor.metrics.agreement.aggregate import codetermination, worker_vs_aggregate
from monitor.metrics.agreement.bootstrap import bootstrap_alpha, bootstrap_fleiss, bootstrap_kappa
from monitor.metrics.agreement.kappa import (
    cohen_kappa,
    fleiss_kappa,
    pairwise_agreement,
    percent_agreement,
    scott_pi,
)
from monitor.metrics.agreement.krippendorff import LEVELS, ValueCounts, krippendorff_alpha

# ------------------------------------------------------------------ worked examples


def test_lecture_cohen_example() -> None:
    """Mizzaro, lecture 23: 20 YY, 5 YN, 10 NY, 15 NN -> p_o 0.7, p_e 0.5, kappa 0.4."""
    a = np.repeat([0, 0, 1, 1], [20, 5, 10, 15])
    b = np.repeat([0, 1, 0, 1], [20, 5, 10, 15])
    r = cohen_kappa(a, b, 2)
    assert (r.p_o, r.p_e, r.n_items) == pytest.approx((0.7, 0.5, 50))
    assert r.kappa == pytest.approx(0.4)


def test_lecture_fleiss_example() -> None:
    """Lecture 23: 14 raters, 10 items, 5 categories: P_bar .378, P_e .213, kappa .210."""
    table = np.array([
        [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ])  # fmt: skip
    u, v = np.nonzero(table)
    r = fleiss_kappa(ValueCounts.from_grouped(u, v, table[u, v]))
    assert round(r.kappa, 3) == 0.210
    assert round(r.p_bar, 3) == 0.378
    assert round(r.p_e, 3) == 0.213
    assert r.raters_per_item == 14
    pa = percent_agreement(ValueCounts.from_grouped(u, v, table[u, v]))
    assert np.round(pa.per_item, 3)[:3].tolist() == [1.0, 0.253, 0.308]


def test_appendix_a_example_and_reversed_question() -> None:
    """Checco et al. Appendix A: {0,0,0,0,1}, {1,1,1,1,0}: D_o 2/5, D_e 5/9, alpha 0.28;
    coding item 2 the other way round gives -0.125 with the same percent agreement."""
    items = np.repeat([0, 1], 5)
    vc = ValueCounts.from_judgments(items, [0, 0, 0, 0, 1, 1, 1, 1, 1, 0])
    r = krippendorff_alpha(vc)
    assert (r.alpha, r.observed_disagreement, r.expected_disagreement) == pytest.approx(
        (0.28, 0.4, 5 / 9)
    )
    flipped = ValueCounts.from_judgments(items, [0, 0, 0, 0, 1, 0, 0, 0, 0, 1])
    assert krippendorff_alpha(flipped).alpha == pytest.approx(-0.125)
    assert percent_agreement(vc).mean == percent_agreement(flipped).mean == pytest.approx(0.6)


def test_krippendorff_2011_canonical_example() -> None:
    """Krippendorff (2011): 4 coders, 12 units, missing data: .743 .815 .849 .797."""
    data = np.array([
        [1, 2, 3, 3, 2, 1, 4, 1, 2, 0, 0, 0],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, 0, 3],
        [0, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, 0],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, 0],
    ])  # fmt: skip
    coder, unit = np.nonzero(data)
    vc = ValueCounts.from_judgments(unit, data[coder, unit] - 1, value_domain=[1, 2, 3, 4, 5])
    got = [round(krippendorff_alpha(vc, level).alpha, 3) for level in LEVELS]
    assert got == [0.743, 0.815, 0.849, 0.797]


# ------------------------------------------------------------------ undefined stays undefined


def test_one_value_in_the_whole_campaign() -> None:
    items = np.repeat(np.arange(4), 3)
    codes = np.zeros(12, dtype=int)
    workers = np.tile(np.arange(3), 4)
    vc = ValueCounts.from_judgments(items, codes, n_values=3)
    for level in LEVELS:
        r = krippendorff_alpha(vc, level)
        assert r.alpha is None
        assert "one value" in r.reason
    f = fleiss_kappa(vc)
    assert f.kappa is None
    assert "P_e = 1" in f.reason
    c = cohen_kappa(codes[:4], codes[4:8], 3)
    assert c.kappa is None
    assert c.p_e == 1.0
    assert "p_e = 1" in c.reason
    assert scott_pi(codes[:4], codes[4:8], 3).kappa is None
    assert percent_agreement(vc).mean == 1.0
    pw = pairwise_agreement(items, workers, codes, n_values=3, min_overlap=1)
    assert np.isnan(pw.measures["cohen_kappa"]).all()
    got = pw.pair(0, 1)
    assert got["cohen_kappa"] is None
    assert got["percent_agreement"] == 1.0
    assert got["reason"]
    assert bootstrap_alpha(vc, seed=1).interval is None
    assert bootstrap_kappa(codes[:4], codes[4:8], 3, seed=1).interval is None


def test_no_item_with_two_judgments() -> None:
    vc = ValueCounts.from_judgments([0, 1, 2], [0, 1, 2])
    for level in LEVELS:
        r = krippendorff_alpha(vc, level)
        assert r.alpha is None
        assert "two judgments" in r.reason
        assert r.n_items_pairable == 0
    pa = percent_agreement(vc)
    assert pa.mean is None
    assert pa.pooled is None
    assert pa.reason
    assert fleiss_kappa(vc).kappa is None
    assert cohen_kappa([], [], 3).kappa is None


def test_empty_input() -> None:
    vc = ValueCounts.from_judgments(np.array([], int), np.array([], int), n_values=2)
    assert krippendorff_alpha(vc).alpha is None
    assert percent_agreement(vc).mean is None
    assert fleiss_kappa(vc).kappa is None


def test_fleiss_needs_equal_raters() -> None:
    vc = ValueCounts.from_judgments([0, 0, 1, 1, 1], [0, 1, 0, 0, 1])
    r = fleiss_kappa(vc)
    assert r.kappa is None
    assert "Krippendorff" in r.reason
    assert krippendorff_alpha(vc).alpha is not None
    assert bootstrap_fleiss(vc, seed=0).interval is None


# ------------------------------------------------------------------ validation


def test_validation_errors() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        ValueCounts.from_judgments([0, -1], [0, 1])
    with pytest.raises(ValueError, match="outside"):
        ValueCounts.from_judgments([0, 1], [0, 3], n_values=2)
    with pytest.raises(ValueError, match="increasing"):
        ValueCounts.from_judgments([0, 1], [0, 1], value_domain=[2.0, 1.0])
    with pytest.raises(ValueError, match="integer codes"):
        ValueCounts.from_judgments([0, 1], [0.5, 1])
    with pytest.raises(ValueError, match="equal length"):
        ValueCounts.from_judgments([0, 1], [0])
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha(ValueCounts.from_judgments([0, 0], [0, 1]), "cardinal")
    with pytest.raises(ValueError, match="more than once"):
        pairwise_agreement([0, 0], [1, 1], [0, 1], min_overlap=1)
    with pytest.raises(ValueError, match="weights"):
        cohen_kappa([0], [1], 2, "cubic")
    with pytest.raises(ValueError, match="seed"):
        bootstrap_alpha(ValueCounts.from_judgments([0, 0], [0, 1]), seed="x")
    with pytest.raises(ValueError, match="different value domains"):
        _ = ValueCounts.from_judgments([0], [0], n_values=2) + ValueCounts.from_judgments(
            [0], [0], n_values=3
        )
    with pytest.raises(ValueError, match="max_iter"):
        codetermination([0], [0], [0], kind="label", max_iter=0)


def test_ratio_alpha_refuses_a_huge_grid() -> None:
    n = krippendorff.MAX_RATIO_VALUES + 10
    vc = ValueCounts.from_values(np.repeat(np.arange(n // 2 + 5), 2)[:n], np.arange(1.0, n + 1))
    with pytest.raises(ValueError, match="interval level"):
        krippendorff_alpha(vc, "ratio")


# ------------------------------------------------------------------ continuous interval alpha


def test_continuous_interval_alpha_matches_reference() -> None:
    kr = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(5)
    truth = rng.normal(size=60)
    data = truth[None, :] + rng.normal(scale=0.7, size=(4, 60))
    data[rng.random(data.shape) < 0.2] = np.nan
    coder, unit = np.nonzero(~np.isnan(data))
    vc = ValueCounts.from_values(unit, data[coder, unit])
    assert vc.n_values == coder.size  # all distinct
    for level in ("interval", "ordinal", "nominal", "ratio"):
        ref = kr.alpha(reliability_data=data, level_of_measurement=level)
        assert krippendorff_alpha(vc, level).alpha == pytest.approx(ref, abs=1e-9)


def test_interval_alpha_large_continuous() -> None:
    # 200,000 distinct values (its speed is bench/agreement.py's to measure, not a test's)
    rng = np.random.default_rng(0)
    n_items = 50_000
    items = np.repeat(np.arange(n_items), 4)
    values = rng.normal(size=n_items)[items] + rng.normal(scale=0.5, size=items.size) + 1e3
    r = krippendorff_alpha(ValueCounts.from_values(items, values), "interval")
    assert r.alpha == pytest.approx(0.8, abs=0.02)  # var 1 between, 0.25 within


# ------------------------------------------------------------------ bootstrap


def test_bootstrap_kappa_and_fleiss() -> None:
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 3, 200)
    a = np.where(rng.random(200) < 0.8, truth, rng.integers(0, 3, 200))
    b = np.where(rng.random(200) < 0.8, truth, rng.integers(0, 3, 200))
    for pooled in (False, True):
        for weights in (None, "linear", "quadratic"):
            r = bootstrap_kappa(a, b, 3, weights=weights, pooled=pooled, n_boot=300, seed=3)
            assert r.interval.low < r.estimate < r.interval.high
            assert r == bootstrap_kappa(
                a, b, 3, weights=weights, pooled=pooled, n_boot=300, seed=np.random.default_rng(3)
            )
    items = np.repeat(np.arange(200), 2)
    vc = ValueCounts.from_judgments(items, np.column_stack([a, b]).reshape(-1), n_values=3)
    f = bootstrap_fleiss(vc, n_boot=300, seed=4)
    assert f.interval.low < f.estimate < f.interval.high
    assert f.estimate == pytest.approx(scott_pi(a, b, 3).kappa)
    for level in LEVELS:
        r = bootstrap_alpha(vc, level, n_boot=300, seed=5)
        assert r.interval.low < r.estimate < r.interval.high
        assert r.n_defined == 300


def test_bootstrap_alpha_replicate_matches_direct_computation() -> None:
    """One replicate's alpha equals alpha on the resampled items, computed from scratch."""
    rng = np.random.default_rng(9)
    items = np.repeat(np.arange(30), 3)
    codes = rng.integers(0, 4, items.size)
    vc = ValueCounts.from_judgments(items, codes, n_values=4)
    for level in LEVELS:
        r = bootstrap_alpha(vc, level, n_boot=1, seed=11, confidence=0.5)
        draw = np.random.default_rng(11).integers(0, 30, 30)
        new_items = np.repeat(np.arange(30), 3)
        new_codes = codes.reshape(30, 3)[draw].reshape(-1)
        direct = krippendorff_alpha(
            ValueCounts.from_judgments(new_items, new_codes, n_values=4), level
        )
        assert r.interval.low == pytest.approx(direct.alpha, abs=1e-9)


# ------------------------------------------------------------------ worker vs aggregate


def _loo_majority_brute(items, workers, codes, n_workers):
    credit = [[] for _ in range(n_workers)]
    for j in range(items.size):
        others = [codes[k] for k in range(items.size) if items[k] == items[j] and k != j]
        if not others:
            continue
        vals, cnt = np.unique(others, return_counts=True)
        top = vals[cnt == cnt.max()]
        credit[workers[j]].append(1.0 / top.size if codes[j] in top else 0.0)
    return np.array([np.mean(c) if c else np.nan for c in credit])


def test_worker_vs_majority_of_the_others() -> None:
    rng = np.random.default_rng(4)
    mask = rng.random((40, 6)) < 0.6
    items, workers = np.nonzero(mask)
    codes = rng.integers(0, 3, items.size)
    r = worker_vs_aggregate(items, workers, codes, kind="label", n_values=3, n_workers=6)
    np.testing.assert_allclose(r.agreement, _loo_majority_brute(items, workers, codes, 6))
    assert all(reason is None for reason in r.reasons)
    # tie: others {A, B} -> a worker saying A gets 1/2
    r = worker_vs_aggregate([0, 0, 0], [0, 1, 2], [0, 0, 1], kind="label")
    np.testing.assert_allclose(r.agreement, [0.5, 0.5, 0.0])
    np.testing.assert_allclose(r.pairwise_agreement, [0.5, 0.5, 0.0])


def test_worker_vs_mean_of_the_others() -> None:
    rng = np.random.default_rng(6)
    truth = rng.integers(1, 5, 30)
    items = np.repeat(np.arange(30), 5)
    workers = np.tile(np.arange(5), 30)
    values = truth[items].astype(float)
    values[workers == 3] += 1  # consistently one point high: still correlated
    values[workers == 4] = 3  # constant: correlation not defined
    domain = np.arange(1.0, 7.0)
    codes = np.searchsorted(domain, values)
    r = worker_vs_aggregate(items, workers, codes, kind="rating", value_domain=domain)
    assert r.agreement[:4] == pytest.approx(np.ones(4))
    assert r.value(4) is None
    assert "do not vary" in r.reasons[4]
    assert r.mean_abs_diff[3] > r.mean_abs_diff[0]
    single = worker_vs_aggregate([0, 1], [0, 1], [0, 1], kind="rating")
    assert single.value(0) is None
    assert "no item" in single.reasons[0]


def test_codetermination_separates_good_workers_from_spammers() -> None:
    rng = np.random.default_rng(8)
    n_items, good, bad = 150, 5, 3
    truth = rng.integers(0, 4, n_items)
    items = np.repeat(np.arange(n_items), good + bad)
    workers = np.tile(np.arange(good + bad), n_items)
    codes = np.where(
        (workers < good) & (rng.random(items.size) < 0.85),
        truth[items],
        rng.integers(0, 4, items.size),
    )
    r = codetermination(items, workers, codes, kind="label", n_values=4, max_iter=50, tol=1e-9)
    assert r.converged
    assert 1 <= r.iterations <= 50
    assert r.max_change < 1e-9
    assert r.weights[:good].min() > r.weights[good:].max()
    assert np.mean(r.truth == truth) > 0.95
    one = codetermination(items, workers, codes, kind="label", n_values=4, max_iter=1, tol=1e-12)
    assert not one.converged
    assert one.iterations == 1
    warm = codetermination(
        items, workers, codes, kind="label", n_values=4, initial_weights=r.weights, tol=1e-9
    )
    assert warm.iterations <= 2

    values = truth[items] + np.where(
        workers < good, rng.normal(0, 0.3, items.size), rng.normal(0, 3, items.size)
    )
    domain, rcodes = np.unique(values, return_inverse=True)
    r = codetermination(items, workers, rcodes, kind="rating", value_domain=domain, tol=1e-8)
    assert r.converged
    assert r.weights[:good].min() > r.weights[good:].max()
    plain = np.bincount(items, weights=values) / (good + bad)
    assert np.corrcoef(r.truth, truth)[0, 1] > np.corrcoef(plain, truth)[0, 1] + 0.05
