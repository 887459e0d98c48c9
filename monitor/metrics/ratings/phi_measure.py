"""Phi: Bayesian agreement for ratings on a bounded scale (Checco et al. 2017, section 4).

Ratings of item ``i`` are rescaled into (0, 1) and modelled as ``y_ij ~ Beta(mu_i p, (1 - mu_i) p)``
with one precision ``p`` shared by every item and a mean ``mu_i`` per item (section 4.3);
``Phi = 1 - 2^(1 - p/2)`` (section 4.2; the printed formula lost its exponent), so Phi = 0 for the
uniform Beta (p = 2), Phi -> 1 as p grows and Phi -> -1 as p -> 0.

Engines
-------
``exact`` (default): given p the item means are independent, so the marginal posterior of p is
one-dimensional. Item i enters only through ``n_i``, ``sum_j log y_ij`` and ``sum_j log(1 - y_ij)``;
its factor ``L_i(p) = int_0^1 prior(mu) prod_j Beta(y_ij | mu p, (1 - mu) p) dmu`` is a 1-D integral,
computed by Gauss-Legendre on logit(mu) around the integrand's mode (vectorised items x p-grid x
nodes, items with equal statistics computed once). ``log p`` is then integrated on an adaptive grid.
No sampling: deterministic, and the same answer as NUTS up to Monte-Carlo error. The grid and
each distinct item's ``log L_i`` on it (:class:`~monitor.metrics.ratings.phi_grid.PhiGrid`) can
be handed to the next call: while the new posterior is still resolved on it (the checks a fresh
grid passes), the posterior of p is ``counts @ log L`` plus the items never seen, with no
search; a posterior that moved is followed by sliding the grid by whole steps (only the points
added are computed); else a fresh grid.
``nuts``: PyMC NUTS on the full model (``monitor.metrics.ratings.phi_nuts``), seeded, with R-hat, ESS and
divergences as fields. ``map``: the joint mode only (section 4.4).

The MAP overstates agreement when items have few judgments: the joint mode over many item means
favours a high precision (7,000 items x 5 workers: MAP 0.71, posterior mean 0.62). The headline is
therefore the posterior mean (``PhiResult.mean``) with its 95% HPD; ``PhiResult.map`` is secondary.

Items with a single rating say nothing about dispersion: they are left out of the posterior of p
(and of the MAP, where they would push p to infinity) but still get a posterior item mean, given the
posterior of p from the other items. Items without ratings get NaN item means.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special

from monitor.metrics.common import Interval
from monitor.metrics.ratings.phi_data import ItemGroups, Mapping, PhiData, prepare
from monitor.metrics.ratings.phi_grid import PhiGrid, posterior_grid, reused_grid
from monitor.metrics.ratings.phi_posterior import (
    LEVEL,
    LOG2,
    MAP_WARM,
    MAX_GRID_PATTERNS,
    NODES,
    U_RANGE,
    WEIGHTS,
    Prior,
    cumtrapz,
    grid_chunks,
    hpd_of_density,
    integrand_mode,
    item_quadrature,
    log_integrand,
    log_prior_p,
)

Engine = Literal["exact", "nuts", "map"]
Reading = Literal["agreement", "disagreement", "inconclusive", "not enough data"]


@dataclass(frozen=True)
class PhiResult:
    """Phi of a campaign. ``mean`` is the headline; ``map`` is secondary (see module docstring).

    ``item_mean`` and ``item_hpd`` (shapes (N,) and (N, 2)) are on the rating scale; NaN for items
    without ratings. ``rhat``, ``ess`` and ``divergences`` are set by the NUTS engine only.
    """

    mean: float | None
    median: float | None
    hpd: Interval | None
    map: float | None
    map_precision: float | None
    precision_mean: float | None
    reading: Reading | None
    item_mean: NDArray[np.float64]
    item_hpd: NDArray[np.float64]
    method: Engine
    prior: Prior
    mapping: Mapping
    n_items: int
    n_informative: int
    n_judgments: int
    # set by one engine only; alike in shape to other results' optional fields (a cluster job's
    # outcome and report), which mean nothing of the sort
    rhat: float | None = None
    ess: float | None = None
    divergences: int | None = None
    converged: bool | None = None
    reason: str | None = None
    grid: PhiGrid | None = None
    """The exact engine's grid, for the next call (None when there are too many patterns)."""


def phi_of_precision(p: ArrayLike) -> NDArray[np.float64]:
    """Phi = 1 - 2^(1 - p/2) (section 4.2)."""
    p = np.asarray(p, dtype=float)
    return -np.expm1((1.0 - p / 2.0) * LOG2)


def reading_of(hpd: Interval, wide: float = 0.5) -> Reading:
    """Section 4.6: an HPD above 0 is agreement, below 0 disagreement; one that holds 0 and is
    wider than ``wide`` means not enough data, a narrower one is inconclusive (random-like)."""
    if hpd.low > 0:
        return "agreement"
    if hpd.high < 0:
        return "disagreement"
    return "not enough data" if hpd.high - hpd.low > wide else "inconclusive"


# --------------------------------------------------------------------------- engines


def _exact(
    d: PhiData, prior: Prior, wide: float, groups: ItemGroups, grid: PhiGrid | None = None
) -> dict[str, Any]:
    rep, counts = groups.informative(d)
    keys = groups.informative_keys(d)
    stats = d.item_stats(rep)
    reused = None if grid is None else reused_grid(grid, keys, stats, counts, prior)
    logl: NDArray | None
    if reused is not None:
        u, lp, logl = reused
    else:
        small = rep.size <= MAX_GRID_PATTERNS  # keep log L only for a grid worth keeping
        store: list[NDArray] | None = [] if small else None
        u, lp = posterior_grid(stats, counts, prior, keep=store)
        logl = np.vstack(store) if store else None
    kept = None if logl is None else PhiGrid(u, keys, logl)  # None: too many patterns
    dens = np.exp(lp - lp.max())
    cdf = cumtrapz(dens, u)
    wts = np.gradient(cdf)  # trapezoid weights of the normalised density
    wts = wts / wts.sum()
    ph = phi_of_precision(np.exp(u))
    mean = float(np.clip(wts @ ph, -1.0, 1.0))
    median = float(phi_of_precision(np.exp(np.interp(0.5, cdf, u))))
    # Density of Phi = density of u / (dPhi/du), dPhi/du = (ln 2 / 2) p 2^(1 - p/2).
    p = np.exp(u)
    logd = lp - (np.log(0.5 * LOG2) + u + (1.0 - 0.5 * p) * LOG2)
    ua, ub = hpd_of_density(u[None, :], logd[None, :], dens[None, :])
    low, high = phi_of_precision(np.exp(ua[0])), phi_of_precision(np.exp(ub[0]))
    hpd = Interval(float(low), float(high), LEVEL)
    item_mean, item_hpd = _exact_items(d, u, cdf, groups)
    return dict(
        mean=mean,
        median=median,
        hpd=hpd,
        precision_mean=float(wts @ np.exp(u)),
        reading=reading_of(hpd, wide),
        item_mean=item_mean,
        item_hpd=item_hpd,
        converged=True,
        grid=kept,
    )


def _exact_items(
    d: PhiData, u: NDArray, cdf: NDArray, groups: ItemGroups, comps: int = 10
) -> tuple[NDArray, NDArray]:
    """Posterior means and 95% HPDs of the item means, rating scale, (N,) and (N, 2).

    The posterior of mu_i mixes its conditional posteriors over p; the mixture uses ``comps``
    equal-mass points of the posterior of p (quantiles), each conditional integrated on nodes.
    """
    n_all = d.n.size
    mean = np.full(n_all, np.nan)
    hpd = np.full((n_all, 2), np.nan)
    rated, rep, inverse = groups.rated, groups.rep, groups.inverse
    if rated.size == 0:
        return mean, hpd
    pq = np.exp(np.interp((np.arange(comps) + 0.5) / comps, cdf, u))
    stats = d.item_stats(rep)
    n = stats.n
    mu_mean = np.empty(rep.size)
    lows, highs = np.empty(rep.size), np.empty(rep.size)
    for sl in grid_chunks(rep.size, comps * 4):
        z, f, logl = item_quadrature(pq, stats.at(sl))
        half = (z[..., -1] - z[..., 0]) / (NODES[-1] - NODES[0])
        logw = f - (logl - n[sl, None] * special.gammaln(pq))[..., None] + np.log(half)[..., None]
        w = np.exp(logw) * WEIGHTS  # quadrature weights of each conditional, summing to 1
        mu_mean[sl] = (w * special.expit(z)).sum(axis=(1, 2)) / comps
        # Mixture density on a common z grid per item.
        zlo, zhi = z[..., 0].min(axis=1), z[..., -1].max(axis=1)
        grid = zlo[:, None] + (zhi - zlo)[:, None] * np.linspace(0.0, 1.0, 81)
        fz = log_integrand(
            grid[:, None, :], pq[None, :, None], stats.at(np.s_[sl, None, None]), True
        )
        dens = np.exp(fz - (logl - n[sl, None] * special.gammaln(pq))[..., None]).mean(axis=1)
        logd = np.log(dens) - np.log(special.expit(grid) * special.expit(-grid))
        za, zb = hpd_of_density(grid, logd, dens)
        lows[sl], highs[sl] = special.expit(za), special.expit(zb)
    a, b = d.to_rating
    idx = rated
    mean[idx] = a[idx] + b[idx] * mu_mean[inverse]
    hpd[idx, 0] = a[idx] + b[idx] * lows[inverse]
    hpd[idx, 1] = a[idx] + b[idx] * highs[inverse]
    return mean, hpd


def _map(
    d: PhiData, prior: Prior, groups: ItemGroups, start: float | None = None
) -> tuple[float, float]:
    """Joint mode (section 4.4) profiled over p: each item's mean is maximised given p.

    The prior density is taken in its own parameter (p for 'precision' and 'gamma', Phi for
    'phi', where the flat prior makes the MAP the maximum likelihood) and mu is flat on (0, 1).
    A coarse scan of log p, then Brent's method around its best point; from ``start`` (log p of
    an earlier mode) Brent's method within ``MAP_WARM`` of it, while the mode is inside.
    """
    rep, counts = groups.informative(d)
    items = d.item_stats(rep).at(np.s_[:, None])

    def objective(u: NDArray) -> NDArray:
        p = np.exp(np.atleast_1d(u))
        z, _ = integrand_mode(p[None, :], items, False)
        f = log_integrand(z, p[None, :], items, False)
        f = f + items.n * special.gammaln(p)[None, :]
        lpri = log_prior_p(p, prior) if prior != "phi" else np.zeros_like(p)
        return lpri + counts @ f

    def best(lo: float, hi: float) -> float:
        res = optimize.minimize_scalar(
            lambda v: -float(objective(np.array([v]))[0]),
            bounds=(lo, hi),
            method="bounded",
            options={"xatol": 1e-9},
        )
        return float(res.x)

    u_best = None
    if start is not None and np.isfinite(start):
        lo, hi = max(start - MAP_WARM, U_RANGE[0]), min(start + MAP_WARM, U_RANGE[1])
        u_best = best(lo, hi)
        if not lo + 1e-6 < u_best < hi - 1e-6:  # the mode left the bracket: search it all
            u_best = None
    if u_best is None:
        u = np.linspace(*U_RANGE, 35)
        k = int(np.argmax(objective(u)))
        u_best = float(u[k]) if k in (0, u.size - 1) else best(u[k - 1], u[k + 1])
    p_best = float(np.exp(u_best))
    return float(phi_of_precision(p_best)), p_best


def phi(
    items: ArrayLike,
    values: ArrayLike,
    *,
    scale_min: float,
    scale_max: float,
    n_items: int | None = None,
    mapping: Mapping = "bin_centres",
    prior: Prior = "phi",
    gold: ArrayLike | None = None,
    gold_sd: float | None = None,
    engine: Engine = "exact",
    seed: int | np.random.Generator | None = None,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    wide_hpd: float = 0.5,
    grid: PhiGrid | None = None,
) -> PhiResult:
    """Phi agreement of ratings (Checco et al. 2017, sections 4.2-4.7).

    Parameters
    ----------
    items : ndarray of int, shape (n,)
        Item code 0..N-1 of each rating.
    values : ndarray of float, shape (n,)
        The ratings, on the scale [scale_min, scale_max].
    mapping : {"bin_centres", "authors"}
        Into (0, 1): ``bin_centres`` (default) puts scale point x at the centre of its bin,
        ``(x - min + 0.5)/(max - min + 1)``; ``authors`` is agreement-phi's
        ``t = (x - min)/(max - min)``, ``y = (t (l - 1) + 0.5)/l`` with l the item's number of
        ratings (for comparison with published numbers: it depends on how many workers rated).
    prior : {"phi", "precision", "gamma"}
        ``phi`` (default): flat on Phi in (-1, 1), as the paper's text says; ``precision``: the
        authors' code, p ~ N(2, 1e6) on p > 0 (flat for practical purposes); ``gamma``:
        p ~ Gamma(mean 2, sd 1). Item means are flat on (0, 1).
    gold : ndarray of float, shape (N,), optional
        Gold value per item on the rating scale, NaN for none: mu_i ~ N(gold_i rescaled, gold_sd)
        truncated to (0, 1) (section 4.7).
    gold_sd : float, optional
        sd of the gold prior in rating points; default 0.1 on the (0, 1) scale.
    engine : {"exact", "nuts", "map"}
        ``exact`` quadrature (default), ``nuts`` PyMC (``seed``, ``draws``, ``tune``, ``chains``),
        ``map`` the joint mode only.
    wide_hpd : float
        An HPD holding 0 and wider than this reads "not enough data" (section 4.6).
    grid : PhiGrid, optional
        ``PhiResult.grid`` of an earlier call with the same scale, mapping, prior and gold sd:
        the exact engine reuses it while the posterior is still resolved on it (module
        docstring); the result is the same within the quadrature's accuracy.

    Returns
    -------
    PhiResult
        ``mean`` (headline) with ``hpd``; ``map`` is reported too but overstates agreement when
        items have few ratings.
    """
    if prior not in ("phi", "precision", "gamma"):
        raise ValueError(f"prior must be 'phi', 'precision' or 'gamma', got {prior!r}.")
    if engine not in ("exact", "nuts", "map"):
        raise ValueError(f"engine must be 'exact', 'nuts' or 'map', got {engine!r}.")
    if not wide_hpd > 0:
        raise ValueError(f"wide_hpd must be positive, got {wide_hpd}.")
    d = prepare(items, values, scale_min, scale_max, n_items, mapping, gold, gold_sd)
    n_all = d.n.size
    base: dict[str, Any] = dict(
        method=engine,
        prior=prior,
        mapping=mapping,
        n_items=n_all,
        n_informative=int(np.count_nonzero(d.n >= 2)),
        n_judgments=d.n_judgments,
    )
    nan_items: dict[str, Any] = dict(
        item_mean=np.full(n_all, np.nan), item_hpd=np.full((n_all, 2), np.nan)
    )
    if base["n_informative"] == 0:
        return PhiResult(
            mean=None, median=None, hpd=None, map=None, map_precision=None, precision_mean=None,
            reading=None, **nan_items, **base,
            reason="No item has two or more ratings, so there is no dispersion to measure.",
        )  # fmt: skip
    groups = ItemGroups.of(d)
    map_phi, map_p = _map(d, prior, groups, None if grid is None else grid.u_map)
    if engine == "map":
        return PhiResult(
            mean=None, median=None, hpd=None, map=map_phi, map_precision=map_p,
            precision_mean=None, reading=None, **nan_items, **base,
            reason="engine='map' computes the joint mode only; use 'exact' for the posterior.",
        )  # fmt: skip
    if engine == "exact":
        fit = _exact(d, prior, wide_hpd, groups, grid)
        if fit["grid"] is not None:
            fit["grid"] = replace(fit["grid"], u_map=float(np.log(map_p)))
    else:
        from monitor.metrics.ratings.phi_nuts import nuts_fit

        fit = nuts_fit(d, prior, seed=seed, draws=draws, tune=tune, chains=chains)
        fit["reading"] = reading_of(fit["hpd"], wide_hpd)
    return PhiResult(map=map_phi, map_precision=map_p, **fit, **base)
