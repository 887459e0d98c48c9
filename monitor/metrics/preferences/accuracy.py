"""An annotator's accuracy against the true order, through a consensus that may itself be wrong.

The reliability model's ``eta`` (:mod:`monitor.metrics.preferences.model`) is the probability of
answering along the Bradley-Terry outcome of a pair, which for close items is itself a coin:
it is not the share of answers along the true order, and the model's scores, fitted to every
answer, make the consensus look surer than it is. Here the annotator's accuracy ``a`` is the
probability that an answer goes along the true order of its pair (a tie is wrong), and the
consensus enters only through its chance of being right.

For each strict answer ``n`` of annotator ``k``, ``c_n`` is the probability, given the
comparisons of every *other* annotator, that the answer is along the true order: the pair's
score difference ``d`` has the cavity posterior ``N(m_n, v_n)`` (the annotator's own pull on the
scores undone by one Newton step and their Fisher weight removed from the precisions,
:func:`monitor.metrics.preference_model.consensus_cavity`), the true order is ``sign(d)``, so
``c_n = Phi(y_n m_n / sqrt(v_n))``. On a gold pair, ``c_n`` is 1 or 0. The answer goes along
the consensus with probability ``q_n = a c_n + (1 - a) (1 - c_n)``, the likelihood of ``a``
(Dawid & Skene 1979 with the consensus's correctness in place of a known label). A consensus
near a coin (``c_n`` near 1/2: pairs judged once, items with few other comparisons) makes the
likelihood flat, so the interval stays wide: a consensus that is often wrong certifies nobody.

Prior: uniform, each annotator on their own answers; the estimate is the posterior mean, the
interval its equal-tailed quantiles, on a grid of ``GRID`` points in (0, 1). No crowd prior: where
the consensus cannot tell (every ``c_n`` near 1/2), a prior fitted to the crowd's answers would
itself be fitted to nothing and, concentrated, would show every annotator as the crowd; uniform,
the interval stays as wide as the answers leave it. The ``c_n`` are binned to ``1 / C_BINS``
(an error below 0.003 in any ``c_n``), so the cost is one (W x C_BINS) @ (C_BINS x GRID)
product whatever the number of comparisons.

Ties are wrong, unless the pair's gold says its items are equal (then a tie counts as a right
answer and a strict one as a wrong one, both certain). The share of strict answers
``1 - tau`` has the Beta(n_tie + 1/2, n_strict + 1/2) posterior, independent of ``a`` given the
scores, and the accuracy over all answers is ``(1 - tau) a_strict``: its interval from the
product of the two posteriors (``TAU_NODES`` quantiles of ``tau``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy import special

GRID = 400
"""Points of the accuracy grid, at the midpoints of equal cells of (0, 1)."""
C_BINS = 201
"""The consensus's chance of being right is binned to this many equal cells of [0, 1] (odd: a
coin, 1/2, is the centre of its cell)."""
TAU_NODES = 32
"""Quantiles of the strict-answer share used to spread the interval when there are ties."""


@dataclass(frozen=True)
class TrueAccuracy:
    """Per annotator (W,): the expected share of answers along the true order, its interval,
    the strict-answer accuracy alone and the information the consensus gives (``certainty``:
    the mean of ``(2 c_n - 1)^2`` over the strict answers, 0 where every consensus is a coin,
    1 where it is sure)."""

    accuracy: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    strict: NDArray[np.float64]
    certainty: NDArray[np.float64]
    right: NDArray[np.float64] | None = field(default=None, repr=False)  # (strict,) c_n
    # alike in shape to behaviour.SideTest's fields and _lookup: other quantities


def consensus_right(
    y: NDArray[np.float64], mean: NDArray[np.float64], var: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``P(sign d = y)`` for ``d ~ N(mean, var)``: the chance that an answer ``y`` (+-1) is along
    the true order of its pair, given what the other comparisons say of ``d``."""
    return special.ndtr(y * mean / np.sqrt(np.maximum(var, 1e-12)))


def true_accuracy(
    workers: NDArray[np.int64],
    right: NDArray[np.float64],
    n_ties: NDArray[np.int64],
    n_workers: int,
    confidence: float = 0.95,
) -> TrueAccuracy:
    """The module's estimate. ``workers, right : (n,)`` each answer's annotator and the chance
    ``c_n`` that it is along the true order (1 or 0 where gold says); ``n_ties : (W,)`` each
    annotator's other answers, ties, all wrong."""
    W = n_workers
    grid = (np.arange(GRID) + 0.5) / GRID
    cell = np.clip(np.floor(np.asarray(right) * C_BINS), 0, C_BINS - 1).astype(np.int64)
    # exact 0 and 1 (gold) get their own bins
    c = np.asarray(right, dtype=np.float64)
    cell = np.where(c <= 0.0, C_BINS, np.where(c >= 1.0, C_BINS + 1, cell))
    centres = np.concatenate([(np.arange(C_BINS) + 0.5) / C_BINS, [0.0, 1.0]])
    K = C_BINS + 2
    counts = np.bincount(workers * K + cell, minlength=W * K).reshape(W, K).astype(np.float64)
    with np.errstate(divide="ignore"):
        log_q = np.log((1 - centres)[:, None] + np.outer(2 * centres - 1, grid))
    log_q = np.maximum(log_q, -745.0)
    loglik = counts @ log_q  # (W, GRID)
    n_strict = counts.sum(axis=1)
    sums = np.bincount(workers * K + cell, (2 * c - 1) ** 2, W * K).reshape(W, K).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        certainty = np.where(n_strict > 0, sums / np.maximum(n_strict, 1), 0.0)
    post = np.exp(loglik - loglik.max(axis=1, keepdims=True))  # uniform prior
    post /= post.sum(axis=1, keepdims=True)
    strict = post @ grid
    tail = (1 - confidence) / 2
    nt = np.asarray(n_ties, dtype=np.float64)
    if not nt.any():
        cdf = np.cumsum(post, axis=1)
        low, high = _quantile(cdf, grid, tail), _quantile(cdf, grid, 1 - tail)
        return TrueAccuracy(strict, low, high, strict, certainty)
    # the share of strict answers, 1 - tau ~ Beta(n_strict + 1/2, n_tie + 1/2)
    nodes = (np.arange(TAU_NODES) + 0.5) / TAU_NODES
    share = special.betaincinv(n_strict[:, None] + 0.5, nt[:, None] + 0.5, nodes[None, :])
    mean_share = (n_strict + 0.5) / (n_strict + nt + 1.0)
    low, high = np.empty(W), np.empty(W)
    for k in range(W):
        vals = np.outer(share[k], grid).ravel()
        wts = np.tile(post[k], TAU_NODES) / TAU_NODES
        order = np.argsort(vals, kind="stable")
        cum = np.cumsum(wts[order])
        top = len(cum) - 1
        low[k] = vals[order][min(int(np.searchsorted(cum, tail)), top)]
        high[k] = vals[order][min(int(np.searchsorted(cum, 1 - tail)), top)]
    return TrueAccuracy(strict * mean_share, low, high, strict, certainty)


def _quantile(cdf: NDArray[np.float64], grid: NDArray[np.float64], p: float) -> NDArray:
    """Per row, the grid point where the cumulative posterior first reaches ``p``, interpolated
    within its cell."""
    idx = np.minimum((cdf < p).sum(axis=1), len(grid) - 1)
    rows = np.arange(len(cdf))
    below = np.where(idx > 0, cdf[rows, np.maximum(idx - 1, 0)], 0.0)
    mass = np.maximum(cdf[rows, idx] - below, 1e-300)
    frac = np.clip((p - below) / mass, 0.0, 1.0)
    step = 1.0 / len(grid)
    return grid[idx] - step / 2 + frac * step
