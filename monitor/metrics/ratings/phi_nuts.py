"""PyMC NUTS engine for Phi (Checco et al. 2017, section 4.5): the general sampler, for validation.

Imported lazily by :func:`monitor.metrics.ratings.phi_measure.phi` with ``engine="nuts"``; PyMC itself is imported
inside :func:`nuts_fit`. Same model as the exact engine: items with at least two ratings enter the
likelihood through (n_i, sum log y, sum log(1 - y)); items with a single rating get their posterior
mean from the sampled precisions by the exact 1-D integrals (a cut: they do not inform p).
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

import numpy as np
from scipy import special

from monitor.metrics.common import Interval
from monitor.metrics.ratings.phi_data import PhiData
from monitor.metrics.ratings.phi_posterior import (
    FLAT_PRECISION_SD,
    GAMMA_RATE,
    GAMMA_SHAPE,
    WEIGHTS,
    Prior,
    hpd_of_draws,
    item_quadrature,
)


def nuts_fit(
    d: PhiData,
    prior: Prior,
    *,
    seed: int | np.random.Generator | None,
    draws: int,
    tune: int,
    chains: int,
    target_accept: float = 0.95,
) -> dict[str, Any]:
    """Sample p and the item means with NUTS; returns the PhiResult fields of the posterior."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # arviz announces its refactor on import
        import arviz as az
        import pymc as pm
        import pytensor.tensor as pt

    if draws < 10 or tune < 0 or chains < 1:
        raise ValueError("NUTS needs draws >= 10, tune >= 0 and chains >= 1.")
    if isinstance(seed, np.random.Generator):
        seed = int(seed.integers(2**31))
    inform = np.flatnonzero(d.n >= 2)
    n, s1, s2 = d.n[inform].astype(float), d.s1[inform], d.s2[inform]
    gm = d.gold[inform]
    gold = ~np.isnan(gm)
    with pm.Model():
        if prior == "phi":
            phi_v = pm.Uniform("phi", -1.0, 1.0)
            p = pm.Deterministic("p", 2.0 - 2.0 * pt.log2(1.0 - phi_v))
        else:
            if prior == "precision":
                p = pm.TruncatedNormal("p", mu=2.0, sigma=FLAT_PRECISION_SD, lower=0.0)
            else:
                p = pm.Gamma("p", alpha=GAMMA_SHAPE, beta=GAMMA_RATE)
            pm.Deterministic("phi", 1.0 - pt.power(2.0, 1.0 - p / 2.0))
        mu = pm.Uniform("mu", 0.0, 1.0, shape=inform.size)
        if gold.any():
            # Uniform(0, 1) times this normal kernel is the truncated normal of section 4.7.
            dev = mu[np.flatnonzero(gold)] - gm[gold]
            pm.Potential("gold", -0.5 * pt.sum(dev**2 / d.gold_sd[inform][gold] ** 2))
        a, b = mu * p, (1.0 - mu) * p
        loglik = p * (mu * s1 + (1.0 - mu) * s2) - n * (
            pt.gammaln(a) + pt.gammaln(b) - pt.gammaln(p)
        )
        pm.Potential("beta", pt.sum(loglik))
        logger = logging.getLogger("pymc")
        level = logger.level
        logger.setLevel(logging.ERROR)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                idata = pm.sample(
                    draws=draws,
                    tune=tune,
                    chains=chains,
                    cores=1,
                    random_seed=seed,
                    target_accept=target_accept,
                    progressbar=False,
                    compute_convergence_checks=False,
                )
        finally:
            logger.setLevel(level)
    post = idata.posterior
    phi_draws = post["phi"].values.ravel()
    p_draws = post["p"].values.ravel()
    low, high = hpd_of_draws(phi_draws)
    hpd = Interval(low, high, 0.95)
    rhat = float(az.rhat(idata, var_names=["phi"])["phi"].values)
    ess = float(az.ess(idata, var_names=["phi"])["phi"].values)
    divergences = int(idata.sample_stats["diverging"].values.sum())

    a_r, b_r = d.to_rating
    n_all = d.n.size
    item_mean = np.full(n_all, np.nan)
    item_hpd = np.full((n_all, 2), np.nan)
    mu_draws = post["mu"].values.reshape(-1, inform.size)
    item_mean[inform] = a_r[inform] + b_r[inform] * mu_draws.mean(axis=0)
    for k, i in enumerate(inform):
        lo, hi = hpd_of_draws(mu_draws[:, k])
        item_hpd[i] = a_r[i] + b_r[i] * np.array([lo, hi])
    single = np.flatnonzero(d.n == 1)
    if single.size:
        item_mean[single], item_hpd[single] = _single_items(d, single, p_draws, seed)
    return dict(
        mean=float(phi_draws.mean()),
        median=float(np.median(phi_draws)),
        hpd=hpd,
        precision_mean=float(p_draws.mean()),
        item_mean=item_mean,
        item_hpd=item_hpd,
        rhat=rhat,
        ess=ess,
        divergences=divergences,
        converged=bool(rhat < 1.01 and divergences == 0),
    )


def _single_items(
    d: PhiData, single: np.ndarray, p_draws: np.ndarray, seed: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """Means and HPDs of single-rating items: mu drawn from its conditional posterior given each
    of (a thinned set of) the sampled precisions, by inverse CDF on the quadrature nodes."""
    rng = np.random.default_rng(seed)
    p = rng.choice(p_draws, size=min(200, p_draws.size), replace=False)
    z, f, logl = item_quadrature(p, d.item_stats(single))
    w = np.exp(f - f.max(axis=-1, keepdims=True)) * WEIGHTS
    w /= w.sum(axis=-1, keepdims=True)
    mu = special.expit(z)
    a_r, b_r = d.to_rating
    means = (w * mu).sum(axis=(1, 2)) / p.size
    hpds = np.empty((single.size, 2))
    for k in range(single.size):
        sample = rng.choice(mu[k].ravel(), size=4000, p=w[k].ravel() / p.size)
        hpds[k] = hpd_of_draws(sample)
    del logl
    return a_r[single] + b_r[single] * means, a_r[single, None] + b_r[single, None] * hpds
