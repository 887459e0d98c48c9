"""The hierarchical priors of the rating model (:mod:`monitor.metrics.ratings.model`): how much
a worker's bias and noise are shrunk toward the crowd, estimated by moments from the same sums as
a sweep of the model, so that the full fit and its local update
(:mod:`monitor.metrics.ratings.update`) share them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

NU_MAX = 1e6  # the noise prior's largest weight (no spread between workers beyond chance)
NOISE_Z = 1.0
MIN_WORKERS = 5  # fewer workers estimate no prior: 1 pseudo-judgment of bias 0, 2 of noise


def bias_prior(
    var: NDArray[Any],
    mb: NDArray[Any],
    R: NDArray[Any],
    A: NDArray[Any],
    C: NDArray[Any],
    m: NDArray[Any],
) -> NDArray[np.float64]:
    """Per worker, the bias prior's weight in judgments, ``s_j^2 / tau^2`` (at least 1): the
    biases are drawn from ``N(0, tau^2)`` (a hierarchical prior, Gelman et al. 2013, *Bayesian
    Data Analysis* 5.4), ``tau^2`` estimated by moments from the products of one worker's
    residuals on two different items, ``E[r_ij r_ik] = b_j^2`` (their noises are independent),
    so the estimate does not lean on the fitted noise (which the biases themselves shrink):
    ``tau^2 = sum_j ((R_j - c mb_j)^2 - S_j) / sum_j mb_j (mb_j - 1)`` over workers with two
    free judgments or more, ``c = sum R / sum mb`` the common offset (censoring) and ``S_j =
    sum (r_ij - c)^2`` (from ``A_j + sbar^2 C_j``, the squares with their leave-one-out
    variances added back, ``v_ij ~ sbar^2 v_ij^2 q_ij``, exact when the co-judges' noises are
    equal). Biases that vary no more between workers than their estimates would by chance
    shrink to 0, and a worker judged on few items keeps little of their raw bias. With fewer
    than ``MIN_WORKERS`` workers: 1 pseudo-judgment of bias 0."""
    use = mb > 0
    if int(use.sum()) < MIN_WORKERS:
        return np.ones_like(var)
    two = mb >= 2
    if not two.any():
        return np.full_like(var, np.inf)
    sbar2 = float(np.sum(m * var) / max(m.sum(), 1.0))
    centre = float(np.sum(R) / mb.sum())
    share = np.where(m > 0, mb / np.maximum(m, 1.0), 0.0)
    sq = share * (A + sbar2 * C)  # sum over free judgments of r^2, approximately
    S = sq - 2.0 * centre * R + centre**2 * mb
    cross = (R - centre * mb) ** 2 - S
    tau2 = float(np.sum(cross[two]) / np.sum(mb[two] * (mb[two] - 1.0)))
    if tau2 <= 0.0:
        return np.full_like(var, np.inf)
    return np.maximum(var / tau2, 1.0)


def noise_prior(ss: NDArray[Any], m: NDArray[Any], C: NDArray[Any], pooled: float) -> float:
    """The weight in judgments of the noise prior at the pooled variance, estimated by moments
    (a hierarchical prior on ``s_j^2``): a scaled inverse chi-square with ``nu`` degrees of
    freedom has variance about ``2 s0^4 / nu``; the workers' raw variances ``ss_j / m_j``
    spread around ``s0^2`` by that plus their sampling variance ``2 (s0^2 + vbar_j)^2 / m_j``,
    ``vbar_j ~ s0^2 C_j / m_j`` the mean variance of their leave-one-out means (as in
    :func:`bias_prior`), weighted by ``m_j``: ``between = (sum m_j (ss_j / m_j - s0^2)^2 - sum
    2 (s0^2 + vbar_j)^2) / sum m_j``, ``nu = 2 s0^4 / between`` where ``between`` exceeds twice
    its standard error (else no evidence that the noises differ: ``NU_MAX``). At least 2 (so 2
    judgments never give ``s_j = 0``), at most ``NU_MAX`` (every worker at the pooled noise)."""
    use = m > 0
    if int(use.sum()) < MIN_WORKERS:
        return 2.0
    rv, mj = ss[use] / m[use], m[use]
    terms = mj * (rv - pooled) ** 2 - 2.0 * (pooled * (1.0 + C[use] / mj)) ** 2
    between = float(np.sum(terms)) / float(mj.sum())
    se = float(np.std(terms)) * np.sqrt(terms.size) / float(mj.sum())
    between -= NOISE_Z * se  # what the spread shows beyond chance (continuous in the data)
    if between * NU_MAX <= 2.0 * pooled**2:
        return NU_MAX
    return float(np.clip(2.0 * pooled**2 / between, 2.0, NU_MAX))
