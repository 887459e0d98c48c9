"""Davidson's Bradley-Terry with ties (bench/davidson.py), the benches' reference fit."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau

from tests.golden import load, params
from tests.metrics.test_transitivity import arrays

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from davidson import davidson  # noqa: E402

SMALL = params("pairwise_small_weak.json")[0].values[0]


def _taus(case, fit_kwargs):
    a = arrays(case)
    items = sorted({j["left"] for j in case["judgments"]} | {j["right"] for j in case["judgments"]})
    latent = np.array([case["truth_info"]["latent_scores"][x] for x in items])
    types = case["truth_info"]["annotators"]
    good = np.array([types[a["names"][w]]["type"] == "good" for w in a["workers"]])
    out = {}
    for name, m in (("all", np.ones_like(good)), ("good", good)):
        fit = davidson(a["left"][m], a["right"][m], a["outcome"][m], **fit_kwargs)
        out[name] = (fit, kendalltau(fit.log_strength, latent[fit.items]).statistic)
    return out


def test_davidson_recovers_latent_order_on_golden() -> None:
    case = load(SMALL)
    taus = _taus(case, {"regularization": 0.01})
    for fit, tau in taus.values():
        assert fit.converged
        assert tau > 0.75
    # plain maximum likelihood: defined with all annotators, undefined (not an error) with the
    # good ones, whose best item never loses
    fit_all = davidson(*[arrays(case)[k] for k in ("left", "right", "outcome")])
    assert fit_all.converged
    assert fit_all.undefined is None
    assert kendalltau(fit_all.log_strength, taus["all"][0].log_strength).statistic == pytest.approx(
        1.0
    )
    a = arrays(case)
    types = case["truth_info"]["annotators"]
    good = np.array([types[a["names"][w]]["type"] == "good" for w in a["workers"]])
    und = davidson(a["left"][good], a["right"][good], a["outcome"][good])
    assert und.log_strength is None
    assert "strongly connected" in und.undefined.reason


def _simulate(rng, theta, nu, reps):
    pairs = np.array(list(itertools.combinations(range(len(theta)), 2)))
    left = np.repeat(pairs[:, 0], reps)
    right = np.repeat(pairs[:, 1], reps)
    pi_l, pi_r = np.exp(theta[left]), np.exp(theta[right])
    tie = nu * np.sqrt(pi_l * pi_r)
    d = pi_l + pi_r + tie
    u = rng.random(len(left)) * d
    outcome = np.where(u < pi_l, 1, np.where(u < pi_l + pi_r, -1, 0)).astype(np.int8)
    return left, right, outcome


def test_davidson_recovers_planted_parameters() -> None:
    rng = np.random.default_rng(3)
    theta = rng.normal(size=12)
    theta -= theta.mean()
    left, right, outcome = _simulate(rng, theta, nu=0.8, reps=40)
    fit = davidson(left, right, outcome)
    assert fit.converged
    assert fit.iterations < 20
    assert abs(fit.log_strength.sum()) < 1e-9
    z = (fit.log_strength - theta) / fit.se
    assert np.max(np.abs(z)) < 4
    assert abs(fit.tie_parameter - 0.8) < 4 * fit.tie_parameter_se


def test_davidson_standard_errors_match_a_numerical_hessian() -> None:
    rng = np.random.default_rng(5)
    theta = rng.normal(size=5)
    left, right, outcome = _simulate(rng, theta - theta.mean(), nu=0.5, reps=15)
    fit = davidson(left, right, outcome)
    k = len(theta)

    def loglik(phi):
        # free parameters: theta_1..theta_{k-1} with theta_k = -sum, then log nu
        th = np.r_[phi[: k - 1], -phi[: k - 1].sum()]
        lam = phi[k - 1]
        a, b = th[left], th[right]
        t = lam + (a + b) / 2
        d = np.logaddexp(np.logaddexp(a, b), t)
        return np.sum(np.where(outcome == 1, a, np.where(outcome == -1, b, t)) - d)

    phi = np.r_[fit.log_strength[: k - 1], np.log(fit.tie_parameter)]
    h = np.zeros((k, k))
    eps = 1e-4
    for i, j in itertools.product(range(k), repeat=2):
        e_i, e_j = np.eye(k)[i] * eps, np.eye(k)[j] * eps
        h[i, j] = (
            loglik(phi + e_i + e_j)
            - loglik(phi + e_i - e_j)
            - loglik(phi - e_i + e_j)
            + loglik(phi - e_i - e_j)
        ) / (4 * eps**2)
    cov_phi = np.linalg.inv(-h)
    jac = np.zeros((k, k))  # (theta_1..theta_k) from phi
    jac[: k - 1, : k - 1] = np.eye(k - 1)
    jac[k - 1, : k - 1] = -1
    cov_theta = jac[:, : k - 1] @ cov_phi[: k - 1, : k - 1] @ jac[:, : k - 1].T
    np.testing.assert_allclose(fit.se, np.sqrt(np.diag(cov_theta)), rtol=1e-4)
    nu_se = fit.tie_parameter * np.sqrt(cov_phi[k - 1, k - 1])
    assert fit.tie_parameter_se == pytest.approx(nu_se, rel=1e-4)


def test_davidson_ties_never_break_it() -> None:
    # every answer a tie: undefined, not a crash
    fit = davidson([0, 1, 2], [1, 2, 0], [0, 0, 0])
    assert fit.log_strength is None
    assert "tie" in fit.undefined.reason
    # no tie at all: plain Bradley-Terry (nu = 0)
    fit = davidson([0, 1, 2, 0, 1, 2], [1, 2, 0, 1, 2, 0], [1, 1, 1, -1, 1, 1])
    assert fit.tie_parameter == 0.0
    assert fit.tie_parameter_se is None
    assert fit.converged
    # an item that only ties and wins is fine with the ridge, and the sum gauge holds
    fit = davidson([0, 0, 1], [1, 2, 2], [0, 1, 1], regularization=0.1)
    assert fit.converged
    assert np.all(np.isfinite(fit.log_strength))


def test_davidson_iteration_fields_and_validation() -> None:
    rng = np.random.default_rng(1)
    left, right, outcome = _simulate(rng, rng.normal(size=6), nu=0.5, reps=5)
    fit = davidson(left, right, outcome, max_iter=1)
    assert not fit.converged
    assert fit.iterations == 1
    assert fit.max_iter == 1
    warm = davidson(left, right, outcome, init=davidson(left, right, outcome))
    assert warm.converged
    assert warm.iterations <= 2
    big = davidson(left, right, outcome, se_max_items=3)
    assert big.se is None
    assert "se_max_items" in big.se_undefined.reason
    with pytest.raises(ValueError, match="max_iter"):
        davidson(left, right, outcome, max_iter=0)


def test_ridge_does_not_inflate_standard_errors() -> None:
    """A small ridge changes the fit by little, and so its standard errors (in the gauge
    sum(log pi) = 0), instead of adding the ridge's 1/lambda variance along the gauge."""
    rng = np.random.default_rng(5)
    strength = np.linspace(-1, 1, 6)
    left = rng.integers(0, 6, 600)
    right = (left + rng.integers(1, 6, 600)) % 6
    diff = strength[left] - strength[right]
    u = rng.random(600)
    p_left = 1 / (1 + np.exp(-diff))
    outcome = np.where(np.abs(diff) < 0.2, 0, np.where(u < p_left, 1, -1)).astype(np.int8)
    plain = davidson(left, right, outcome)
    ridge = davidson(left, right, outcome, regularization=0.01)
    assert plain.se is not None
    assert ridge.se is not None
    np.testing.assert_allclose(ridge.se, plain.se, rtol=0.05)
