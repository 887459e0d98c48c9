"""Bootstrap features of many categories (more than ``poisson.WIDE``) are sparse and give the
replicate sums the dense ones give, in a full pass and in an update."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

from monitor.metrics.agreement import ValueCounts
from monitor.metrics.agreement.poisson import (
    WIDE,
    Update,
    alpha_features,
    alpha_replicates,
    fleiss_features,
    fleiss_replicates,
    replicate_sums,
)

V = WIDE + 44
DOMAIN = np.arange(float(V))


def _counts(items: np.ndarray, codes: np.ndarray, n_items: int) -> ValueCounts:
    return ValueCounts.from_judgments(items, codes, n_items=n_items, value_domain=DOMAIN)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), cut=st.integers(1, 599))
def test_sparse_features_give_the_dense_sums(seed: int, cut: int) -> None:
    rng = np.random.default_rng(seed)
    n = 5000  # more than a block of items: several blocks of weights
    items = rng.integers(0, n, 600)
    truth = rng.integers(0, V, n)
    codes = np.where(rng.random(items.size) < 0.6, truth[items], rng.integers(0, V, items.size))
    vc = _counts(items, codes, n)
    for features, replicates in (
        (alpha_features(vc, "nominal"), lambda s: alpha_replicates(s, "nominal", DOMAIN)),
        (fleiss_features(vc), lambda s: fleiss_replicates(s, 2)),
    ):
        assert sparse.issparse(features)
        assert features.nnz <= 3 * n + items.size
        dense = features.toarray()
        wide = replicate_sums(np.arange(n), features, n_boot=40, seed=seed)
        plain = replicate_sums(np.arange(n), dense, n_boot=40, seed=seed)
        np.testing.assert_allclose(wide, plain, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(replicates(wide), replicates(plain), rtol=1e-9, equal_nan=True)
    before = alpha_features(_counts(items[:cut], codes[:cut], n), "nominal")
    after = alpha_features(vc, "nominal")
    touched = np.unique(items[cut:])
    start = replicate_sums(np.arange(n), before, n_boot=40, seed=seed)
    update = Update(touched, before[touched], after[touched])
    np.testing.assert_allclose(
        update.apply(start, seed=seed),
        replicate_sums(np.arange(n), after, n_boot=40, seed=seed),
        rtol=1e-9,
        atol=1e-9,
    )
