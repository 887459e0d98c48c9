"""Phi (Checco et al. 2017, section 4): exact engine against the shared reference fits, an
independent brute-force quadrature, NUTS, the paper's qualitative claims and properties."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.metrics.ratings.phi_measure import phi, phi_of_precision
from monitor.metrics.ratings.phi_posterior import hpd_of_draws
from tests.golden import GOLDEN

FOLDER = GOLDEN / "phi"
CASES = sorted(FOLDER.glob("*.json"))
SMALL = [p for p in CASES if not p.stem.startswith("1_")]
PRIORS = ["precision", "phi", "gamma"]


def _load(path: Path) -> tuple[dict, np.ndarray, np.ndarray]:
    d = json.loads(path.read_text(encoding="utf-8"))
    m = np.array([[np.nan if v is None else v for v in row] for row in d["matrix"]], float)
    items, _ = np.nonzero(~np.isnan(m))
    return d, items, m[~np.isnan(m)]


def _fit(path: Path, **kw):
    d, items, values = _load(path)
    return d, phi(items, values, scale_min=d["scale"]["min"], scale_max=d["scale"]["max"], **kw)


def _tol(ref_hpd: list[float]) -> float:
    # The reference integrates log p on a 600-point grid over a fixed range: on wide posteriors
    # (a few items) its HPD ends are resolved only to ~3% of the width; brute force agrees with
    # the exact engine there (test_default_against_brute_force).
    return max(0.005, 0.03 * (ref_hpd[1] - ref_hpd[0]))


def test_cases_present():
    assert len(CASES) >= 10


@pytest.mark.parametrize("prior", PRIORS)
@pytest.mark.parametrize("path", SMALL, ids=[p.stem for p in SMALL])
def test_exact_authors_mapping_matches_reference_quadrature(path, prior):
    d, r = _fit(path, mapping="authors", prior=prior)
    q = d["reference"]["quadrature"][prior]
    assert r.mean == pytest.approx(q["phi_mean"], abs=0.005)
    assert r.median == pytest.approx(q["phi_median"], abs=0.005)
    tol = _tol(q["phi_hpd95"])
    assert r.hpd.low == pytest.approx(q["phi_hpd95"][0], abs=tol)
    assert r.hpd.high == pytest.approx(q["phi_hpd95"][1], abs=tol)
    assert r.method == "exact"
    assert r.rhat is None
    assert r.divergences is None


def test_exact_large_random_case():
    path = FOLDER / "1_random_1000x100_10pt.json"
    d, items, values = _load(path)
    q = d["reference"]["quadrature"]["precision"]
    r = phi(items, values, scale_min=0, scale_max=9, mapping="authors", prior="precision")
    assert r.mean == pytest.approx(q["phi_mean"], abs=0.005)
    assert r.hpd.low == pytest.approx(q["phi_hpd95"][0], abs=0.005)
    assert r.hpd.high == pytest.approx(q["phi_hpd95"][1], abs=0.005)
    assert r.map == pytest.approx(d["reference"]["map"]["phi"], abs=0.005)
    # Default mapping (bin centres) against the reference's NUTS with that mapping.
    nb = d["reference"]["nuts_bins_mapping"]
    b = phi(items, values, scale_min=0, scale_max=9, prior="precision")
    assert b.mean == pytest.approx(nb["phi_mean"], abs=0.005)
    assert b.hpd.low == pytest.approx(nb["phi_hpd95"][0], abs=0.005)
    assert b.hpd.high == pytest.approx(nb["phi_hpd95"][1], abs=0.005)
    assert b.map == pytest.approx(d["reference"]["map_bins_mapping"], abs=0.005)


@pytest.mark.parametrize("path", SMALL, ids=[p.stem for p in SMALL])
def test_map_matches_reference(path):
    d, r = _fit(path, mapping="authors", prior="precision", engine="map")
    assert r.map == pytest.approx(d["reference"]["map"]["phi"], abs=0.005)
    assert r.mean is None
    assert "mode" in r.reason
    _, g = _fit(path, mapping="authors", prior="gamma", engine="map")
    assert g.map == pytest.approx(d["reference"]["hypotheses"]["gamma_prior"]["map"], abs=0.005)


@pytest.mark.parametrize("stem", ["7c", "7d"])
def test_bin_centres_against_reference_nuts(stem):
    d, r = _fit(FOLDER / f"{stem}.json", prior="precision")
    nb = d["reference"]["nuts_bins_mapping"]
    assert r.mean == pytest.approx(nb["phi_mean"], abs=0.02)
    assert r.hpd.low == pytest.approx(nb["phi_hpd95"][0], abs=0.02)
    assert r.hpd.high == pytest.approx(nb["phi_hpd95"][1], abs=0.02)


def _brute_force(items, values, lo, hi, prior):
    """Independent check of the default (bin centres): the joint posterior on a 2-D grid (mu
    uniform on (0, 1), log p uniform), item means summed out, then 10^6 draws of Phi."""
    from scipy import special

    y = (values - lo + 0.5) / (hi - lo + 1.0)
    mu = (np.arange(3000) + 0.5) / 3000
    u = np.linspace(-6.0, 9.0, 2001)
    p = np.exp(u)
    a, b = mu[None, :] * p[:, None], (1 - mu[None, :]) * p[:, None]
    lognorm = special.gammaln(p)[:, None] - special.gammaln(a) - special.gammaln(b)
    logpost = u.copy() + {"phi": -0.5 * np.log(2) * p, "gamma": 3 * u - 2 * p}[prior]
    stats = np.column_stack(
        [np.bincount(items), np.bincount(items, np.log(y)), np.bincount(items, np.log1p(-y))]
    )
    rows, counts = np.unique(stats.round(9), axis=0, return_counts=True)
    for (n, s1, s2), c in zip(rows, counts, strict=True):
        ll = (a - 1) * s1 + (b - 1) * s2 + n * lognorm
        top = ll.max(axis=1, keepdims=True)
        logpost += c * (top[:, 0] + np.log(np.exp(ll - top).mean(axis=1)))
    w = np.exp(logpost - logpost.max())
    cdf = np.cumsum(w) / w.sum()
    draws = phi_of_precision(np.exp(np.interp(np.random.default_rng(0).random(10**6), cdf, u)))
    return draws.mean(), hpd_of_draws(draws)


@pytest.mark.parametrize("stem", ["7c", "8c_4items", "6b_marginals_random"])
@pytest.mark.parametrize("prior", ["phi", "gamma"])
def test_default_against_brute_force(stem, prior):
    d, items, values = _load(FOLDER / f"{stem}.json")
    lo, hi = d["scale"]["min"], d["scale"]["max"]
    mean, (low, high) = _brute_force(items, values, lo, hi, prior)
    r = phi(items, values, scale_min=lo, scale_max=hi, prior=prior)
    assert r.mean == pytest.approx(mean, abs=0.005)
    assert r.hpd.low == pytest.approx(low, abs=0.005)
    assert r.hpd.high == pytest.approx(high, abs=0.005)


@pytest.mark.slow
def test_nuts_agrees_with_exact_golden_and_reference():
    path = FOLDER / "7c.json"
    d, items, values = _load(path)
    kw = dict(scale_min=0, scale_max=1, mapping="authors", prior="phi")
    n = phi(items, values, engine="nuts", seed=7, draws=600, chains=2, **kw)
    e = phi(items, values, **kw)
    ref = d["reference"]["nuts"]["phi"]
    for fit in (n, e):
        assert fit.mean == pytest.approx(ref["phi_mean"], abs=0.03)
        assert fit.hpd.low == pytest.approx(ref["phi_hpd95"][0], abs=0.05)
        assert fit.hpd.high == pytest.approx(ref["phi_hpd95"][1], abs=0.05)
        np.testing.assert_allclose(fit.item_mean, ref["mu_mean_rating_scale"], atol=0.03)
    assert n.mean == pytest.approx(e.mean, abs=0.03)
    assert n.rhat is not None
    assert n.rhat < 1.02
    assert n.ess is not None
    assert n.ess > 200
    assert n.divergences is not None
    assert n.method == "nuts"


def _synthetic(rng, n_items, n_workers, p, scale=5, single=0):
    mu = rng.beta(2, 2, n_items)
    y = rng.beta(mu[:, None] * p, (1 - mu[:, None]) * p, (n_items, n_workers))
    x = np.clip(np.floor(y * scale), 0, scale - 1) + 1
    items = np.repeat(np.arange(n_items), n_workers)
    values = x.ravel()
    if single:
        items = np.concatenate([items, np.arange(n_items, n_items + single)])
        values = np.concatenate([values, rng.integers(1, scale + 1, single)])
    return items, values.astype(float)


@pytest.mark.slow
def test_nuts_agrees_with_exact_synthetic_with_gold_and_single_ratings():
    rng = np.random.default_rng(3)
    items, values = _synthetic(rng, 25, 4, 8.0, single=2)
    gold = np.full(27, np.nan)
    gold[:3] = [5.0, 1.0, 3.0]
    kw = dict(scale_min=1, scale_max=5, gold=gold, gold_sd=0.5)
    n = phi(items, values, engine="nuts", seed=11, draws=500, chains=2, **kw)
    e = phi(items, values, **kw)
    assert n.mean == pytest.approx(e.mean, abs=0.02)
    assert n.hpd.low == pytest.approx(e.hpd.low, abs=0.04)
    assert n.hpd.high == pytest.approx(e.hpd.high, abs=0.04)
    np.testing.assert_allclose(n.item_mean, e.item_mean, atol=0.08)
    np.testing.assert_allclose(n.item_hpd, e.item_hpd, atol=0.25)


def test_constant_ratings_give_phi_near_one():
    _d, r = _fit(FOLDER / "2_constant.json")
    assert r.mean > 0.99
    assert r.hpd.low > 0.99
    assert r.reading == "agreement"


@pytest.mark.parametrize("stem", ["3_prevalence_99_1", "7a_80pct_balanced", "7b_80pct_unbalanced"])
def test_prevalence_examples_give_high_agreement(stem):
    _, r = _fit(FOLDER / f"{stem}.json")
    assert r.mean > 0.85
    assert r.reading == "agreement"


def test_near_random_hpd_straddles_zero():
    # Uniformly random ratings, few of them (synthetic: the golden random case is so large, and
    # with bin centres so slightly positive, that its HPD excludes 0).
    rng = np.random.default_rng(5)
    items = np.repeat(np.arange(12), 3)
    values = rng.integers(1, 6, items.size).astype(float)
    r = phi(items, values, scale_min=1, scale_max=5)
    assert r.hpd.low < 0 < r.hpd.high
    assert r.reading == "not enough data"
    _, tiny = _fit(FOLDER / "7c.json", mapping="authors")
    assert tiny.hpd.low < 0 < tiny.hpd.high


def test_map_overstates_with_few_judgments_and_mean_is_headline():
    rng = np.random.default_rng(0)
    items, values = _synthetic(rng, 300, 3, 5.0)
    r = phi(items, values, scale_min=1, scale_max=5)
    assert r.map > r.mean
    assert r.hpd.low <= r.mean <= r.hpd.high


def test_gold_prior_moves_item_means():
    items = np.repeat(np.arange(6), 3)
    values = np.array([1, 2, 1, 4, 5, 4, 2, 3, 2, 5, 5, 4, 3, 3, 4, 1, 1, 2], float)
    base = phi(items, values, scale_min=1, scale_max=5)
    gold = np.array([5.0] + [np.nan] * 5)
    moved = phi(items, values, scale_min=1, scale_max=5, gold=gold, gold_sd=0.3)
    assert moved.item_mean[0] > base.item_mean[0] + 0.5
    assert moved.item_hpd[0, 0] > base.item_hpd[0, 0]
    # A gold value the workers contradict is read as dispersion: Phi drops.
    assert moved.mean < base.mean


def test_item_means_on_rating_scale_and_intervals():
    rng = np.random.default_rng(2)
    items, values = _synthetic(rng, 40, 5, 20.0)
    r = phi(items, values, scale_min=1, scale_max=5, n_items=41)
    assert r.item_mean.shape == (41,)
    assert r.item_hpd.shape == (41, 2)
    assert np.isnan(r.item_mean[40])
    assert np.all(np.isnan(r.item_hpd[40]))
    means = np.bincount(items, weights=values) / np.bincount(items)
    assert np.corrcoef(means, r.item_mean[:40])[0, 1] > 0.98
    assert np.all(r.item_hpd[:40, 0] <= r.item_mean[:40])
    assert np.all(r.item_mean[:40] <= r.item_hpd[:40, 1])
    assert np.all((r.item_hpd[:40] > 0.5) & (r.item_hpd[:40] < 5.5))


def test_single_rating_items_do_not_inform_phi_but_get_means():
    rng = np.random.default_rng(4)
    items, values = _synthetic(rng, 30, 3, 6.0)
    base = phi(items, values, scale_min=1, scale_max=5)
    more_items = np.concatenate([items, [30, 31]])
    more = phi(more_items, np.concatenate([values, [1.0, 5.0]]), scale_min=1, scale_max=5)
    assert more.mean == pytest.approx(base.mean, abs=1e-9)
    assert more.n_informative == 30
    assert more.n_items == 32
    assert more.item_mean[30] < 3 < more.item_mean[31]


def test_no_dispersion_to_measure_is_undefined():
    r = phi([0, 1, 2], [1.0, 2.0, 3.0], scale_min=1, scale_max=5)
    assert r.mean is None
    assert r.hpd is None
    assert r.reading is None
    assert "two or more" in r.reason


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(items=[0, 1], values=[1.0]), "equal length"),
        (dict(items=[0, 0], values=[1.0, 7.0]), "on the scale"),
        (dict(items=[0.5, 0], values=[1.0, 2.0]), "integer codes"),
        (dict(items=[0, 0], values=[1.0, np.nan]), "finite"),
        (dict(items=[0, 0], values=[1.0, 2.0], prior="flat"), "prior"),
        (dict(items=[0, 0], values=[1.0, 2.0], engine="gibbs"), "engine"),
        (dict(items=[0, 0], values=[1.0, 2.0], mapping="x"), "mapping"),
        (dict(items=[0, 0], values=[1.0, 2.0], gold=[1.0, 2.0]), "gold"),
        (dict(items=[0, 0], values=[1.0, 2.0], gold_sd=-1.0), "gold_sd"),
        (dict(items=[0, 3], values=[1.0, 2.0], n_items=2), "n_items"),
    ],
)
def test_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        phi(scale_min=1, scale_max=5, **kwargs)
    with pytest.raises(ValueError, match="scale_min < scale_max"):
        phi([0, 0], [1.0, 1.0], scale_min=1, scale_max=1)


ratings = st.lists(st.lists(st.integers(1, 5), min_size=2, max_size=4), min_size=2, max_size=8)


def _flatten(rows):
    items = np.concatenate([np.full(len(r), i) for i, r in enumerate(rows)])
    return items, np.concatenate([np.asarray(r, float) for r in rows])


@settings(max_examples=20, deadline=None)
@given(rows=ratings, data=st.data())
def test_relabelling_items_and_workers_changes_nothing(rows, data):
    items, values = _flatten(rows)
    perm = np.array(data.draw(st.permutations(range(len(rows)))))
    order = np.array(data.draw(st.permutations(range(items.size))))  # judgment order: workers
    a = phi(items, values, scale_min=1, scale_max=5)
    b = phi(perm[items][order], values[order], scale_min=1, scale_max=5)
    assert b.mean == pytest.approx(a.mean, abs=1e-6)
    assert b.hpd.low == pytest.approx(a.hpd.low, abs=1e-6)
    assert b.hpd.high == pytest.approx(a.hpd.high, abs=1e-6)
    np.testing.assert_allclose(b.item_mean[perm], a.item_mean, atol=1e-6)


@settings(max_examples=20, deadline=None)
@given(rows=ratings)
def test_duplicating_the_data_narrows_the_hpd(rows):
    items, values = _flatten(rows)
    a = phi(items, values, scale_min=1, scale_max=5)
    b = phi(
        np.concatenate([items, items + len(rows)]), np.tile(values, 2), scale_min=1, scale_max=5
    )
    assert b.hpd.high - b.hpd.low <= a.hpd.high - a.hpd.low + 1e-9


def _campaign(n_items: int, seed: int, start: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Five ratings 1-5 per item around a true value, one rater in ten at random."""
    rng = np.random.default_rng(seed)
    items = np.repeat(np.arange(start, start + n_items), 5)
    truth = rng.integers(1, 6, n_items).repeat(5)
    values = np.clip(truth + np.rint(rng.normal(0, 0.7, items.size)), 1, 5)
    noisy = rng.random(items.size) < 0.1
    return items, np.where(noisy, rng.integers(1, 6, items.size), values).astype(float)


def _same_result(a, b, tol: float) -> None:
    """Equal within ``tol``; HPD ends within 1e-3 of the HPD's width as well (each grid finds
    an end by linear interpolation between its points: about 4e-4 of the width)."""
    for f in ("mean", "median", "precision_mean", "map"):
        assert getattr(b, f) == pytest.approx(getattr(a, f), abs=tol), f
    ends = max(tol, 1e-3 * (a.hpd.high - a.hpd.low))
    assert b.hpd.low == pytest.approx(a.hpd.low, abs=ends)
    assert b.hpd.high == pytest.approx(a.hpd.high, abs=ends)
    np.testing.assert_allclose(b.item_mean, a.item_mean, atol=tol)
    np.testing.assert_allclose(b.item_hpd, a.item_hpd, atol=tol)


def test_a_kept_grid_gives_the_fresh_answer():
    """1% more items: the posterior of p from the kept grid (its log L_i, those of the new
    statistics computed) is the fresh search's within the quadrature's accuracy."""
    items, values = _campaign(20_000, 1)
    first = phi(items, values, scale_min=1, scale_max=5)
    assert first.grid is not None
    assert first.grid.keys.shape[0] == first.grid.logl.shape[0]
    more_items, more_values = _campaign(200, 2, start=20_000)
    more_items = np.r_[items, more_items, [20_200, 20_200]]  # and a statistic never seen
    more_values = np.r_[values, more_values, [1.0, 4.0]]
    fresh = phi(more_items, more_values, scale_min=1, scale_max=5)
    kept = phi(more_items, more_values, scale_min=1, scale_max=5, grid=first.grid)
    assert kept.grid is not None
    np.testing.assert_array_equal(kept.grid.u, first.grid.u)  # reused, not searched again
    assert not np.array_equal(fresh.grid.u, first.grid.u)
    _same_result(fresh, kept, 1e-6)
    back = type(first.grid).from_array(first.grid.to_array())
    assert back is not None
    np.testing.assert_array_equal(back.logl, first.grid.logl)
    np.testing.assert_array_equal(back.keys, first.grid.keys)
    assert back.u_map == np.log(first.map_precision)


def test_a_mode_far_from_the_kept_one_is_searched_again():
    items, values = _campaign(3_000, 6)
    fresh = phi(items, values, scale_min=1, scale_max=5)
    far = replace(fresh.grid, u_map=fresh.grid.u_map + 1.0)
    kept = phi(items, values, scale_min=1, scale_max=5, grid=far)
    assert kept.map == pytest.approx(fresh.map, abs=1e-7)
    near = replace(fresh.grid, u_map=fresh.grid.u_map + 0.02)
    assert phi(items, values, scale_min=1, scale_max=5, grid=near).map == pytest.approx(
        fresh.map, abs=1e-7
    )


def test_a_grid_that_no_longer_holds_the_posterior_is_searched_again():
    items, values = _campaign(3_000, 3)
    noisy = phi(items, np.random.default_rng(4).integers(1, 6, items.size).astype(float),
                scale_min=1, scale_max=5)  # fmt: skip
    fresh = phi(items, values, scale_min=1, scale_max=5)
    kept = phi(items, values, scale_min=1, scale_max=5, grid=noisy.grid)
    assert noisy.grid is not None
    assert kept.grid is not None
    np.testing.assert_array_equal(kept.grid.u, fresh.grid.u)
    _same_result(fresh, kept, 0.0)


@settings(max_examples=40, deadline=None)
@given(
    known=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), unique=True, max_size=12),
    rows=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=12),
)
def test_rows_are_matched_to_the_known_ones(known, rows):
    from monitor.metrics.ratings.phi_grid import _match_rows

    k = np.array(known, dtype=float).reshape(-1, 2)
    r = np.array(rows, dtype=float).reshape(-1, 2)
    got = _match_rows(k, r)
    where = {row: i for i, row in enumerate(known)}
    assert got.tolist() == [where.get(row, -1) for row in rows]


def test_a_kept_grid_follows_a_moving_posterior():
    """Increments that move the posterior of p by more than the grid's margin: the grid slides
    by whole steps (same spacing, only the points added computed) and the answer stays the
    fresh search's."""
    items, values = _campaign(20_000, 5)
    res = phi(items, values, scale_min=1, scale_max=5)
    step = np.diff(res.grid.u[:2])[0]
    slid = 0
    for k in range(4):  # noisier items each time: the precision falls
        more_items = np.repeat(np.arange(20_000 + 400 * k, 20_400 + 400 * k), 5)
        rng = np.random.default_rng(k)
        more_values = rng.integers(1, 6, more_items.size).astype(float)
        items, values = np.r_[items, more_items], np.r_[values, more_values]
        kept = phi(items, values, scale_min=1, scale_max=5, grid=res.grid)
        fresh = phi(items, values, scale_min=1, scale_max=5)
        _same_result(fresh, kept, 1e-6)
        if np.diff(kept.grid.u[:2])[0] == pytest.approx(step, rel=1e-9):
            slid += not np.allclose(kept.grid.u, res.grid.u)
        res = kept
    assert slid >= 2
