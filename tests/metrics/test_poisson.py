"""Poisson bootstrap: replicates from item sums, and updates equal to recomputing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.metrics.agreement.kappa import fleiss_kappa
from monitor.metrics.agreement.krippendorff import ValueCounts, krippendorff_alpha
from monitor.metrics.agreement.poisson import (
    Update,
    alpha_features,
    alpha_replicates,
    block_weights,
    fleiss_features,
    fleiss_replicates,
    replicate_sums,
)

DOMAIN = np.arange(1.0, 6.0)


def _counts(items: np.ndarray, codes: np.ndarray, n_items: int) -> ValueCounts:
    return ValueCounts.from_judgments(items, codes, n_items=n_items, value_domain=DOMAIN)


def _random(seed: int, n_items: int = 300, per_item: int = 4) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    items = np.repeat(np.arange(n_items), per_item)
    truth = rng.integers(0, 5, n_items)
    codes = np.clip(truth[items] + rng.integers(-1, 2, items.size), 0, 4)
    return items, codes


def test_weights_are_poisson_one_and_reproducible() -> None:
    w = block_weights(7, 3, 400).astype(np.float64)
    assert w.shape == (400, 4096)
    assert abs(w.mean() - 1.0) < 0.01
    assert abs(w.var() - 1.0) < 0.02
    assert abs((w == 0).mean() - np.exp(-1)) < 0.005
    assert np.array_equal(block_weights(7, 3, 400), block_weights(7, 3, 400))
    assert not np.array_equal(block_weights(7, 3, 400), block_weights(7, 4, 400))
    assert not np.array_equal(block_weights(7, 3, 400), block_weights(8, 3, 400))


@pytest.mark.parametrize("level", ["nominal", "interval", "ratio"])
def test_unit_weights_give_the_estimate(level: str) -> None:
    items, codes = _random(1)
    vc = _counts(items, codes, 300)
    sums = alpha_features(vc, level).sum(axis=0)[None, :]  # type: ignore[arg-type]
    got = alpha_replicates(sums, level, vc.value_domain)  # type: ignore[arg-type]
    assert got[0] == pytest.approx(krippendorff_alpha(vc, level).alpha, abs=1e-12)  # type: ignore[arg-type]


def test_unit_weights_give_fleiss() -> None:
    items, codes = _random(2)
    vc = _counts(items, codes, 300)
    sums = fleiss_features(vc).sum(axis=0)[None, :]
    assert fleiss_replicates(sums, 4)[0] == pytest.approx(fleiss_kappa(vc).kappa, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    cut=st.integers(1, 1199),
    level=st.sampled_from(["nominal", "interval", "ratio"]),
)
def test_update_equals_recomputing(seed: int, cut: int, level: str) -> None:
    items, codes = _random(seed)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(items.size)  # judgments arrive in any order, on old and new items
    items, codes = items[perm], codes[perm]
    before = alpha_features(_counts(items[:cut], codes[:cut], 300), level)  # type: ignore[arg-type]
    after = alpha_features(_counts(items, codes, 300), level)  # type: ignore[arg-type]
    touched = np.unique(items[cut:])
    full_before = replicate_sums(np.arange(300), before, n_boot=50, seed=seed)
    full_after = replicate_sums(np.arange(300), after, n_boot=50, seed=seed)
    update = Update(touched, before[touched], after[touched])
    np.testing.assert_allclose(
        update.apply(full_before, seed=seed), full_after, rtol=1e-9, atol=1e-9
    )


def test_interval_brackets_the_estimate_and_shrinks_with_data() -> None:
    widths = []
    for n_items in (200, 3000):
        items, codes = _random(5, n_items)
        vc = _counts(items, codes, n_items)
        est = krippendorff_alpha(vc, "interval").alpha
        reps = alpha_replicates(
            replicate_sums(np.arange(n_items), alpha_features(vc, "interval"), n_boot=300, seed=1),
            "interval",
            vc.value_domain,
        )
        lo, hi = np.quantile(reps, [0.025, 0.975])
        assert lo < est < hi
        widths.append(hi - lo)
    assert widths[1] < widths[0] / 2


def test_single_value_replicates_are_undefined() -> None:
    vc = _counts(np.array([0, 0, 1, 1]), np.array([2, 2, 2, 2]), 2)
    for level in ("nominal", "interval", "ratio"):
        sums = replicate_sums(np.arange(2), alpha_features(vc, level), n_boot=20, seed=0)  # type: ignore[arg-type]
        assert np.isnan(alpha_replicates(sums, level, vc.value_domain)).all()  # type: ignore[arg-type]


def test_weight_table_is_the_poisson_one_quantile_function() -> None:
    from scipy import stats

    from monitor.metrics.agreement.poisson import _QUANTILE

    levels = (np.arange(1 << 16) + 0.5) / (1 << 16)
    assert np.array_equal(_QUANTILE, stats.poisson.ppf(levels, 1.0))
