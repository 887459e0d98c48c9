"""Hypothesis properties of the agreement measures."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.metrics.agreement.bootstrap import bootstrap_alpha
from monitor.metrics.agreement.kappa import (
    cohen_kappa,
    fleiss_kappa,
    pairwise_agreement,
    percent_agreement,
    scott_pi,
)
from monitor.metrics.agreement.krippendorff import (
    LEVELS,
    ValueCounts,
    krippendorff_alpha,
    krippendorff_alphas,
)

SETTINGS = settings(max_examples=50, deadline=None)


@st.composite
def campaigns(draw, max_items: int = 12, max_workers: int = 6, max_values: int = 5):
    """(items, workers, codes, n_values): each worker judges an item at most once."""
    n_items = draw(st.integers(1, max_items))
    n_workers = draw(st.integers(2, max_workers))
    n_values = draw(st.integers(2, max_values))
    seed = draw(st.integers(0, 2**32 - 1))
    density = draw(st.floats(0.3, 1.0))
    rng = np.random.default_rng(seed)
    mask = rng.random((n_items, n_workers)) < density
    mask[:, 0] = True  # every item judged at least once
    items, workers = np.nonzero(mask)
    codes = rng.integers(0, n_values, size=items.size)
    return items, workers, codes, n_values


def alphas(items, codes, n_values, domain=None):
    vc = ValueCounts.from_judgments(items, codes, n_values=None if domain is not None else n_values,
                                    value_domain=domain)  # fmt: skip
    return {level: krippendorff_alpha(vc, level).alpha for level in LEVELS}


def same(a, b, tol=1e-9):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= tol


@SETTINGS
@given(campaigns())
def test_bounds(c):
    items, workers, codes, v = c
    vc = ValueCounts.from_judgments(items, codes, n_values=v)
    pa = percent_agreement(vc)
    if pa.mean is not None:
        assert 0.0 <= pa.mean <= 1.0
        assert 0.0 <= pa.pooled <= 1.0
        assert np.all((pa.per_item[pa.pairable] >= 0) & (pa.per_item[pa.pairable] <= 1))
        assert np.isnan(pa.per_item[~pa.pairable]).all()
    for level in LEVELS:
        r = krippendorff_alpha(vc, level)
        assert (r.alpha is None) == (r.reason is not None)
        if r.alpha is not None:
            assert r.alpha <= 1.0 + 1e-12
            assert np.isfinite(r.alpha)
            assert r.observed_disagreement >= -1e-12
            assert r.expected_disagreement > 0
    pw = pairwise_agreement(items, workers, codes, n_values=v, min_overlap=1)
    for arr in pw.measures.values():
        assert np.all(arr[~np.isnan(arr)] <= 1.0 + 1e-12)
    assert np.all(pw.measures["percent_agreement"] <= 1.0)
    k = pw.measures["cohen_kappa"]
    assert np.all(k[~np.isnan(k)] >= -1.0 - 1e-9)
    assert np.all(k[~np.isnan(k)] <= 1.0 + 1e-9)


@SETTINGS
@given(campaigns(), st.integers(0, 2**32 - 1))
def test_invariant_under_relabelling_items_and_workers(c, seed):
    items, workers, codes, v = c
    rng = np.random.default_rng(seed)
    item_perm = rng.permutation(items.max() + 1)
    worker_perm = rng.permutation(workers.max() + 1)
    order = rng.permutation(items.size)  # and the row order
    before = alphas(items, codes, v)
    after = alphas(item_perm[items][order], codes[order], v)
    assert all(same(before[k], after[k]) for k in LEVELS)
    nw = worker_perm.size
    pw1 = pairwise_agreement(items, workers, codes, n_values=v, n_workers=nw, min_overlap=1)
    pw2 = pairwise_agreement(item_perm[items][order], worker_perm[workers][order], codes[order],
                             n_values=v, n_workers=nw, min_overlap=1)  # fmt: skip
    m1, m2 = pw1.matrix("cohen_kappa"), pw2.matrix("cohen_kappa")
    # worker a in the first is worker_perm[a] in the second
    np.testing.assert_allclose(m1, m2[np.ix_(worker_perm, worker_perm)], atol=1e-12)


@SETTINGS
@given(campaigns())
def test_symmetric_in_workers(c):
    items, workers, codes, v = c
    pw = pairwise_agreement(items, workers, codes, n_values=v, min_overlap=1)
    for name in pw.measures:
        m = pw.matrix(name)
        np.testing.assert_array_equal(np.isnan(m), np.isnan(m.T))
        np.testing.assert_allclose(m, m.T, atol=1e-12)
    rng = np.random.default_rng(len(items))
    a = rng.integers(0, v, 30)
    b = rng.integers(0, v, 30)
    for w in (None, "linear", "quadratic"):
        assert same(cohen_kappa(a, b, v, w).kappa, cohen_kappa(b, a, v, w).kappa)
        assert same(scott_pi(a, b, v, w).kappa, scott_pi(b, a, v, w).kappa)


@SETTINGS
@given(campaigns(), st.integers(0, 2**32 - 1))
def test_nominal_alpha_invariant_under_permuting_categories(c, seed):
    items, _workers, codes, v = c
    perm = np.random.default_rng(seed).permutation(v)
    assert same(alphas(items, codes, v)["nominal"], alphas(items, perm[codes], v)["nominal"])
    vc1 = ValueCounts.from_judgments(items, codes, n_values=v)
    vc2 = ValueCounts.from_judgments(items, perm[codes], n_values=v)
    assert same(fleiss_kappa(vc1).kappa, fleiss_kappa(vc2).kappa)
    assert same(percent_agreement(vc1).mean, percent_agreement(vc2).mean)


@SETTINGS
@given(campaigns(), st.integers(0, 2**32 - 1))
def test_interval_and_ordinal_alpha_invariances(c, seed):
    """Interval alpha is invariant under affine maps, ordinal under monotone ones."""
    items, _workers, codes, v = c
    rng = np.random.default_rng(seed)
    base = np.arange(v, dtype=np.float64)
    affine = 3.5 * base - 7.0
    monotone = np.cumsum(rng.uniform(0.1, 10.0, v))
    a0 = alphas(items, codes, v, base)
    assert same(a0["interval"], alphas(items, codes, v, affine)["interval"], 1e-8)
    assert same(a0["ordinal"], alphas(items, codes, v, monotone)["ordinal"], 1e-8)


@SETTINGS
@given(st.integers(1, 20), st.integers(2, 6), st.integers(2, 5), st.integers(0, 2**32 - 1))
def test_perfect_agreement_gives_one(n_items, n_workers, n_values, seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, n_values, n_items)
    if np.unique(truth).size < 2:
        truth[0], truth[-1] = 0, 1
        if n_items == 1:
            return
    items = np.repeat(np.arange(n_items), n_workers)
    workers = np.tile(np.arange(n_workers), n_items)
    codes = truth[items]
    vc = ValueCounts.from_judgments(items, codes, n_values=n_values)
    for level in LEVELS:
        assert same(krippendorff_alpha(vc, level).alpha, 1.0, 1e-12)
    assert same(fleiss_kappa(vc).kappa, 1.0, 1e-12)
    assert percent_agreement(vc).mean == 1.0
    pw = pairwise_agreement(items, workers, codes, n_values=n_values, min_overlap=1)
    for name, arr in pw.measures.items():
        np.testing.assert_allclose(arr, 1.0, atol=1e-12, err_msg=name)


@SETTINGS
@given(campaigns(), st.integers(0, 2**32 - 1), st.integers(1, 5))
def test_incremental_update_equals_recomputation(c, seed, n_batches):
    items, _workers, codes, v = c
    rng = np.random.default_rng(seed)
    domain = np.cumsum(rng.uniform(0.5, 3.0, v))
    order = rng.permutation(items.size)
    cuts = np.sort(rng.integers(0, items.size + 1, n_batches - 1))
    batches = np.split(order, cuts)
    vc = ValueCounts.from_judgments(items[batches[0]], codes[batches[0]], value_domain=domain)
    for batch in batches[1:]:
        vc = vc.update(items[batch], codes[batch])
    full = ValueCounts.from_judgments(items, codes, value_domain=domain)
    assert vc.n_items == full.n_items
    assert (vc.counts != full.counts).nnz == 0
    np.testing.assert_array_equal(vc.n, full.n)
    np.testing.assert_allclose(vc.s1, full.s1, atol=1e-9)
    np.testing.assert_allclose(vc.s2, full.s2, atol=1e-9)
    for level in LEVELS:
        assert same(krippendorff_alpha(vc, level).alpha, krippendorff_alpha(full, level).alpha)
    half = items.size // 2
    a = ValueCounts.from_judgments(items[:half], codes[:half], value_domain=domain)
    b = ValueCounts.from_judgments(items[half:], codes[half:], value_domain=domain)
    assert same(
        krippendorff_alpha(a + b, "interval").alpha, krippendorff_alpha(full, "interval").alpha
    )


@SETTINGS
@given(campaigns())
def test_matches_reference_package(c):
    krippendorff = __import__("pytest").importorskip("krippendorff")
    items, workers, codes, v = c
    domain = np.arange(1.0, v + 1.0) ** 1.5
    data = np.full((workers.max() + 1, items.max() + 1), np.nan)
    data[workers, items] = domain[codes]
    vc = ValueCounts.from_judgments(items, codes, value_domain=domain)
    for level in LEVELS:
        ours = krippendorff_alpha(vc, level).alpha
        if ours is None:
            continue
        ref = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert abs(ours - ref) <= 1e-9


@settings(max_examples=15, deadline=None)
@given(campaigns(max_items=30), st.integers(0, 1000))
def test_bootstrap_is_seeded_and_brackets_plausibly(c, seed):
    items, _workers, codes, v = c
    vc = ValueCounts.from_judgments(items, codes, n_values=v)
    for level in ("nominal", "ordinal", "interval", "ratio"):
        r1 = bootstrap_alpha(vc, level, n_boot=50, seed=seed)
        r2 = bootstrap_alpha(vc, level, n_boot=50, seed=seed)
        assert r1 == r2
        if r1.interval is not None:
            assert r1.interval.low <= r1.interval.high <= 1.0 + 1e-12
            assert r1.n_defined <= 50


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 40),
    st.integers(1, 6),
    st.lists(st.tuples(st.integers(0, 39), st.integers(0, 5), st.integers(0, 3)), max_size=60),
    st.booleans(),
)
def test_count_matrix_is_the_summed_coo_table(
    n: int, v: int, cells: list[tuple[int, int, int]], weighted: bool
) -> None:
    """Both ways of building it (one bincount for a small table, COO for a wide one) give the
    canonical CSR of the summed pairs, without stored zeros."""
    from scipy import sparse

    from monitor.metrics.common import count_matrix

    rows = np.array([r % n for r, _, _ in cells], dtype=np.int64)
    cols = np.array([c % v for _, c, _ in cells], dtype=np.int64)
    w = np.array([x for _, _, x in cells], dtype=np.int64) if weighted else None
    for width in (v, v + 70_000):  # a small table, then one too wide for a bincount
        want = sparse.coo_array(
            (np.ones(rows.size, dtype=np.int64) if w is None else w, (rows, cols)),
            shape=(n, width),
        ).toarray()
        got = count_matrix(rows, cols, (n, width), w)
        assert got.has_canonical_format
        assert np.all(got.data != 0)
        assert got.data.dtype == np.int64
        np.testing.assert_array_equal(got.toarray(), want)


@SETTINGS
@given(campaigns(), st.booleans())
def test_alphas_from_one_coincidence_matrix_are_each_levels(c, spread):
    """Every level from the shared coincidence matrix equals that level computed alone (the
    same D_o, D_e, n and reason), on codes and on an uneven positive domain."""
    items, _, codes, n_values = c
    domain = np.cumsum(np.arange(1.0, n_values + 1)) if spread else None
    vc = ValueCounts.from_judgments(items, codes, n_values=None if spread else n_values,
                                    value_domain=domain)  # fmt: skip
    together = krippendorff_alphas(vc, list(LEVELS))
    assert list(together) == list(LEVELS)
    for level in LEVELS:
        alone = krippendorff_alpha(vc, level)
        got = together[level]
        assert (got.n_pairable, got.n_items_pairable, got.reason) == (
            alone.n_pairable, alone.n_items_pairable, alone.reason,
        )  # fmt: skip
        for f in ("alpha", "observed_disagreement", "expected_disagreement"):
            assert same(getattr(got, f), getattr(alone, f), 1e-12), (level, f)
