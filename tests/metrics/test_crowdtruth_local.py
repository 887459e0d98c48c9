"""The local CrowdTruth update (``crowdtruth_local``): exact where nothing is left out (no new
judgment; every unit in the block of an open task), close to a full iteration after a small
increment, and strict about what it is given."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.metrics.crowdtruth.scores import (
    CrowdTruthScores,
    crowdtruth,
    crowdtruth_local,
    label_counts,
)

TIGHT = {"tol": 1e-12, "max_iter": 2000}


def _campaign(seed: int, n: int, n_units: int, n_workers: int, units_from: int = 0) -> tuple:
    rng = np.random.default_rng(seed)
    units = rng.integers(units_from, n_units, n)
    workers = rng.integers(0, n_workers, n)
    truth = (np.arange(n_units) * 7) % 4
    values = np.where(rng.random(n) < 0.7, truth[units], rng.integers(0, 4, n))
    return workers, units, values


def _block(workers, units, values, n_old: int) -> tuple:
    """The judgments of the units that got a new one (index >= n_old), and which were seen."""
    touched = np.zeros(units.max() + 1, dtype=bool)
    touched[units[n_old:]] = True
    rows = np.flatnonzero(touched[units])
    return workers[rows], units[rows], label_counts(values[rows], 4), rows < n_old


def _gap(a: np.ndarray, b: np.ndarray) -> float:
    both = np.isfinite(a) & np.isfinite(b)
    assert np.array_equal(np.isfinite(a), np.isfinite(b))
    return float(np.max(np.abs(a[both] - b[both]), initial=0.0))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), closed=st.booleans(), k=st.integers(1, 40))
def test_no_new_judgment_changes_nothing(seed: int, closed: bool, k: int) -> None:
    w, u, v = _campaign(seed, 400, 60, 12)
    prev = crowdtruth(w, u, label_counts(v, 4), closed=closed, n_workers=12, n_units=60, **TIGHT)
    rows = np.flatnonzero(u < k)  # a block of units, all of whose judgments were seen
    res = crowdtruth_local(
        w[rows], u[rows], label_counts(v[rows], 4), np.ones(rows.size, dtype=bool),
        previous=prev.scores, worker_sums=prev.worker_sums, n_workers=12, n_units=60,
        closed=closed, tol=1e-12,
    )  # fmt: skip
    for f in ("uqs", "wqs", "wwa", "wua"):
        assert _gap(getattr(res, f), getattr(prev, f)) < 1e-9, f
    assert res.iterations <= 2
    block = np.unique(u[rows])
    np.testing.assert_allclose(res.uas[block].toarray(), prev.uas[block].toarray(), atol=1e-9)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), extra=st.integers(1, 200))
def test_every_unit_in_the_block_of_an_open_task_is_a_full_iteration(seed: int, extra: int) -> None:
    w0, u0, v0 = _campaign(seed, 500, 50, 10)
    w1, u1, v1 = _campaign(seed + 1, extra, 50, 12)  # two new workers too
    w, u, v = np.r_[w0, w1], np.r_[u0, u1], np.r_[v0, v1]
    prev = crowdtruth(w0, u0, label_counts(v0, 4), closed=False, n_workers=10, n_units=50, **TIGHT)
    full = crowdtruth(w, u, label_counts(v, 4), closed=False, n_workers=12, n_units=50, **TIGHT)
    seen = np.arange(w.size) < w0.size
    res = crowdtruth_local(
        w, u, label_counts(v, 4), seen, previous=prev.scores, worker_sums=prev.worker_sums,
        n_workers=12, n_units=50, closed=False, **TIGHT,
    )  # fmt: skip
    for f in ("uqs", "wqs", "wwa", "wua"):
        assert _gap(getattr(res, f), getattr(full, f)) < 1e-7, f
    np.testing.assert_allclose(res.uas.toarray(), full.uas.toarray(), atol=1e-7)


@pytest.mark.parametrize("closed", [False, True])
def test_a_small_increment_lands_near_the_full_iteration(closed: bool) -> None:
    """2% new judgments on 2% of the units: the block's scores and the workers' within a few
    thousandths, the other units within half the workers' largest move (what a caller bounds),
    AQS kept."""
    n_w, n_u = 60, 3000
    w0, u0, v0 = _campaign(1, 15_000, n_u, n_w)
    w1, u1, v1 = _campaign(2, 300, 60, n_w)
    w, u, v = np.r_[w0, w1], np.r_[u0, u1], np.r_[v0, v1]
    prev = crowdtruth(w0, u0, label_counts(v0, 4), closed=closed, n_workers=n_w, n_units=n_u)
    full = crowdtruth(
        w, u, label_counts(v, 4), closed=closed, n_workers=n_w, n_units=n_u,
        warm_start=prev.scores, **TIGHT,
    )  # fmt: skip
    bw, bu, bc, seen = _block(w, u, v, w0.size)
    res = crowdtruth_local(
        bw, bu, bc, seen, previous=prev.scores, worker_sums=prev.worker_sums, n_workers=n_w,
        n_units=n_u, closed=closed,
    )  # fmt: skip
    assert res.converged
    assert res.iterations < 10
    moved = _gap(res.wqs, prev.wqs)
    block = np.unique(u1)
    assert _gap(res.wqs, full.wqs) < 0.5 * moved + 2e-3
    assert _gap(res.uqs[block], full.uqs[block]) < 0.5 * moved + 2e-3
    assert _gap(res.uqs, full.uqs) < 0.5 * moved + 2e-3
    others = np.setdiff1d(np.arange(n_u), block)
    np.testing.assert_array_equal(res.uqs[others], prev.uqs[others])
    assert res.uas[others].nnz == 0  # the caller keeps the previous rows
    if closed:
        np.testing.assert_array_equal(res.aqs, prev.aqs)


def test_new_units_and_workers_enter_the_block() -> None:
    w0, u0, v0 = _campaign(3, 2000, 200, 20)
    prev = crowdtruth(w0, u0, label_counts(v0, 4), n_workers=20, n_units=200)
    w1 = np.array([20, 21, 20, 21, 5])  # two new workers on a new unit, one old worker
    u1 = np.array([200, 200, 201, 201, 201])
    v1 = np.array([1, 1, 2, 3, 2])
    w, u, v = np.r_[w0, w1], np.r_[u0, u1], np.r_[v0, v1]
    bw, bu, bc, seen = _block(w, u, v, w0.size)
    res = crowdtruth_local(
        bw, bu, bc, seen, previous=prev.scores, worker_sums=prev.worker_sums, n_workers=22,
        n_units=202,
    )  # fmt: skip
    assert res.unit_kept[200]
    assert res.unit_kept[201]
    assert res.worker_kept[20:].all()
    assert np.isfinite(res.wqs[20:]).all()
    assert np.isfinite(res.uqs[200:]).all()
    assert res.uas[[200, 201]].nnz > 0


def test_bad_inputs_are_refused() -> None:
    w, u, v = _campaign(4, 300, 30, 6)
    prev = crowdtruth(w, u, label_counts(v, 4), n_workers=6, n_units=30)
    common = {"previous": prev.scores, "n_workers": 6, "n_units": 30}
    seen = np.ones(w.size, dtype=bool)
    with pytest.raises(ValueError, match="worker_sums"):
        crowdtruth_local(w, u, label_counts(v, 4), seen, worker_sums=np.ones((7, 4)), **common)
    with pytest.raises(ValueError, match=r"same length|length"):
        crowdtruth_local(w, u, label_counts(v, 4), seen[1:], worker_sums=prev.worker_sums, **common)
    no_aqs = prev.scores.__class__(uqs=prev.uqs, wqs=prev.wqs, aqs=None)
    with pytest.raises(ValueError, match="AQS"):
        crowdtruth_local(
            w, u, label_counts(v, 4), seen, previous=no_aqs, worker_sums=prev.worker_sums,
            n_workers=6, n_units=30,
        )  # fmt: skip


@pytest.mark.parametrize("closed", [True, False])
def test_the_local_result_is_the_plain_expressions(closed: bool) -> None:
    """The result assembled by ``scores._result``: WQS = WWA x WUA on the kept workers, NaN
    elsewhere; the first iteration's scores undefined, AQS only for a closed task."""
    w, u, v = _campaign(3, 400, 60, 12)
    prev = crowdtruth(w, u, label_counts(v, 4), closed=closed, n_workers=12, n_units=60, **TIGHT)
    w2, u2, v2 = _campaign(4, 430, 60, 12)
    w2, u2, v2 = np.r_[w, w2[400:]], np.r_[u, u2[400:]], np.r_[v, v2[400:]]
    bw, bu, bc, seen = _block(w2, u2, v2, 400)
    res = crowdtruth_local(bw, bu, bc, seen, previous=prev.scores, worker_sums=prev.worker_sums,
                           n_workers=12, n_units=60, closed=closed)  # fmt: skip
    nan_w = np.full(12, np.nan)
    np.testing.assert_array_equal(res.wqs, np.where(res.worker_kept, res.wwa * res.wua, np.nan))
    for f in ("wqs", "wwa", "wua"):
        np.testing.assert_array_equal(getattr(res.initial, f), nan_w)
    np.testing.assert_array_equal(res.initial.uqs, np.full(60, np.nan))
    assert res.initial.uas.shape == (60, 4)
    assert res.initial.uas.nnz == 0
    if closed:
        assert res.aqs is not None
        assert res.initial.aqs is not None
        np.testing.assert_array_equal(res.aqs, prev.aqs)
        np.testing.assert_array_equal(res.initial.aqs, np.full(4, np.nan))
    else:
        assert res.aqs is None
        assert res.initial.aqs is None
    assert res.converged == (res.max_change < 1e-3)


def test_a_campaign_without_a_shared_unit_is_undefined() -> None:
    res = crowdtruth([0, 1], [0, 1], label_counts([0, 1], 2), n_workers=2, n_units=2, tol=0.0)
    for scores in (res, res.initial):
        for f in ("uqs", "wqs", "wwa", "wua"):
            np.testing.assert_array_equal(getattr(scores, f), np.full(2, np.nan))
    assert res.aqs is not None
    assert np.isnan(res.aqs).all()
    assert res.converged
    assert res.iterations == 0
    assert res.max_change == 0.0
    assert res.worker_sums is None


def test_chained_local_updates_keep_every_score_non_negative() -> None:
    """A campaign grown in chunks of 400, each brought up to date locally from the last: the
    stored sums less the block's recomputed ones once dipped below zero (-7e-32 here; a UQS
    of -7e22 on a real campaign) and the next run refused the scores as a warm start."""
    rng = np.random.default_rng(8)
    n_u, n_w, n, k = 1500, 300, 12_000, 400
    units, workers = rng.integers(0, n_u, n), rng.integers(0, n_w, n)
    truth = (np.arange(n_u) * 7) % 4
    acc = rng.uniform(0.2, 0.95, n_w)
    values = np.where(rng.random(n) < acc[workers], truth[units], rng.integers(0, 4, n))
    prev = crowdtruth(workers[:k], units[:k], label_counts(values[:k], 4), n_workers=n_w,
                      n_units=n_u)  # fmt: skip
    for end in range(2 * k, 5 * k, k):
        touched = np.zeros(n_u, dtype=bool)
        touched[units[end - k : end]] = True
        rows = np.flatnonzero(touched[units[:end]])
        res = crowdtruth_local(
            workers[rows], units[rows], label_counts(values[rows], 4), rows < end - k,
            previous=prev.scores, worker_sums=prev.worker_sums, n_workers=n_w, n_units=n_u,
        )  # fmt: skip
        for scores in (res.uqs, res.wqs, res.worker_sums):
            assert not (np.asarray(scores)[np.isfinite(scores)] < 0).any()
        prev = res


def test_a_unit_score_fallen_to_a_denormal_leaves_every_score_finite() -> None:
    """A warm start whose unit scores are denormal floats (a unit everyone disagreed on): the
    AQS denominators fall below the smallest normal float, and their inverse overflowed to inf,
    inf x 0 made NaN of every worker's score (a real preference campaign grown in chunks)."""
    w, u, v = _campaign(4, 600, 40, 12)
    prev = crowdtruth(w, u, label_counts(v, 4), n_workers=12, n_units=40)
    uqs = np.array(prev.uqs, dtype=np.float64)
    uqs[:] = 5e-324  # the smallest denormal
    start = CrowdTruthScores(uqs=uqs, wqs=prev.wqs, aqs=prev.aqs)
    res = crowdtruth(w, u, label_counts(v, 4), n_workers=12, n_units=40, warm_start=start,
                     max_iter=1)  # fmt: skip
    for scores in (res.wqs, res.aqs):
        kept = np.asarray(scores)[~np.isnan(prev.wqs if scores is res.wqs else prev.aqs)]
        assert np.isfinite(kept).all()
