"""The expected accuracy of the exported labels: the share of items whose answer is right.

A reliability model's own posteriors are overconfident: they treat each worker's accuracy as
known. Here each draw ``s`` of ``draws`` takes every worker's accuracy from its posterior given
the worker's answers, ``acc_w ~ Beta(a_w m_w + 1, (1 - a_w) m_w + 1)`` (``a_w`` the model's
accuracy, ``m_w`` the worker's judgments), and scores the exported label ``l_i`` of each item
under the one-coin model (Dawid & Skene 1979 with one accuracy per worker, errors spread evenly
over the ``K - 1`` other classes, class prior ``pi``):

``p_is = pi_l exp(B_il) / sum_k pi_k exp(B_ik)``, ``B_ik = sum_{judgments (i, w) answering k}
log(acc_w (K - 1) / (1 - acc_w))``

(a class nobody answered has ``B_ik = 0``, so the cost is linear in the judgments, whatever
``K``). A gold item's label is right: ``p_is = 1``. The expectation is ``E = mean_s mean_i p_is``.
Its variance has two parts: the model's, ``var_s(mean_i p_is)`` over the draws, and the items'
(which of them turn out right is a Poisson-binomial draw), ``mean_s sum_i p_is (1 - p_is) / N^2``.
The interval is ``E +- z sqrt(model + items)``, clipped to [0, 1].

Multi-label sets (:func:`expected_set_accuracy`): each option of each item is one binary unit
(answered by every judgment of the item, chosen or not); an exported set is right when every
option is, ``p_is = prod_a p_ias``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtri

DRAWS = 100
"""Draws of the workers' accuracies: the model's part of the variance to within about 15%."""
ACC_CLIP = (1e-6, 1.0 - 1e-6)


@dataclass(frozen=True)
class ExpectedAccuracy:
    """``value``: expected share right; ``low``/``high``: its interval; ``n``: items scored;
    ``model_sd``, ``items_sd``: the two parts of its standard deviation; ``posterior``: the
    model's own mean posterior of the exported labels (for comparison)."""

    value: float
    low: float
    high: float
    n: int
    model_sd: float
    items_sd: float


def _draw_accuracy(
    accuracy: NDArray[np.float64], n: NDArray[np.float64], draws: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    a = np.clip(np.nan_to_num(accuracy, nan=0.5), *ACC_CLIP)
    m = np.maximum(np.nan_to_num(n, nan=0.0), 0.0)
    return np.clip(rng.beta(a * m + 1.0, (1.0 - a) * m + 1.0, size=(draws, a.size)), *ACC_CLIP)


def _unit_probability(
    units: NDArray[np.int64],
    workers: NDArray[np.int64],
    answers: NDArray[np.int64],
    exported: NDArray[np.int64],
    prior: NDArray[np.float64],
    acc: NDArray[np.float64],
) -> NDArray[np.float64]:
    """(draws, U): the one-coin posterior of each unit's exported class, per accuracy draw."""
    U, K = exported.size, prior.size
    cells, where = np.unique(units * K + answers, return_inverse=True)
    row, col = cells // K, cells % K
    pi = np.clip(prior, 1e-12, None)
    pi = pi / pi.sum()
    rest = 1.0 - np.bincount(row, weights=pi[col], minlength=U)  # unanswered classes' prior
    rest = np.clip(rest, 0.0, None)
    starts = np.flatnonzero(np.r_[True, row[1:] != row[:-1]]) if row.size else row
    hit = col == exported[row]
    unanswered = (exported >= 0) & (np.bincount(row[hit], minlength=U) == 0)
    out = np.empty((acc.shape[0], U))
    for s in range(acc.shape[0]):
        a = acc[s]
        w = np.log(a * max(K - 1, 1) / (1.0 - a))[workers]
        b = np.bincount(where, weights=w, minlength=cells.size)
        top = np.zeros(U)  # >= 0: the unanswered classes sit at B = 0
        if row.size:  # cells are sorted by unit
            top[row[starts]] = np.maximum(np.maximum.reduceat(b, starts), 0.0)
        term = pi[col] * np.exp(b - top[row])
        z = np.bincount(row, weights=term, minlength=U) + rest * np.exp(-top)
        mine = np.bincount(row[hit], weights=term[hit], minlength=U).astype(np.float64)
        mine[unanswered] = pi[exported[unanswered]] * np.exp(-top[unanswered])
        out[s] = mine / z
    return out


def _summary(p: NDArray[np.float64], confidence: float) -> ExpectedAccuracy:
    """Value and interval from (draws, N) probabilities of being right (module docstring)."""
    N = p.shape[1]
    if N == 0:
        nan = float("nan")
        return ExpectedAccuracy(nan, nan, nan, 0, nan, nan)
    per_draw = p.mean(axis=1)
    value = float(per_draw.mean())
    model_var = float(per_draw.var(ddof=1)) if p.shape[0] > 1 else 0.0
    items_var = float((p * (1.0 - p)).sum(axis=1).mean()) / N**2
    z = float(ndtri(0.5 + confidence / 2.0))
    half = z * np.sqrt(model_var + items_var)
    return ExpectedAccuracy(
        value,
        float(max(0.0, value - half)),
        float(min(1.0, value + half)),
        N,
        float(np.sqrt(model_var)),
        float(np.sqrt(items_var)),
    )


def expected_accuracy(
    items: ArrayLike,
    workers: ArrayLike,
    answers: ArrayLike,
    exported: ArrayLike,
    accuracy: ArrayLike,
    n: ArrayLike,
    prior: ArrayLike,
    *,
    gold: ArrayLike | None = None,
    draws: int = DRAWS,
    confidence: float = 0.95,
    seed: int = 0,
) -> ExpectedAccuracy:
    """The expected share of items whose exported label is right, with its interval (module
    docstring). ``items``, ``workers``, ``answers``: one entry per judgment (codes);
    ``exported``: (N,) the exported class per item, -1 for none (not scored); ``accuracy``,
    ``n``: (W,) each worker's accuracy and judgments; ``prior``: (K,) the class prior;
    ``gold``: (N,) bool, items whose label is known (right by construction).

    Two workers of accuracy 0.9 answering class 0 on one item, equal priors:
    ``p = 0.81 / (0.81 + 0.01) = 0.988`` for known accuracies; drawn from Beta(91, 11) each,
    a little less.

    >>> r = expected_accuracy([0, 0], [0, 1], [0, 0], [0], [0.9, 0.9], [100, 100], [0.5, 0.5])
    >>> round(r.value, 2), r.n, r.low <= r.value <= r.high
    (0.98, 1, True)
    """
    it = np.asarray(items, dtype=np.int64)
    wk = np.asarray(workers, dtype=np.int64)
    ans = np.asarray(answers, dtype=np.int64)
    ex = np.asarray(exported, dtype=np.int64)
    acc = np.asarray(accuracy, dtype=np.float64)
    cnt = np.asarray(n, dtype=np.float64)
    pi = np.asarray(prior, dtype=np.float64)
    rng = np.random.default_rng(seed)
    drawn = _draw_accuracy(acc, cnt, draws, rng)
    p = _unit_probability(it, wk, ans, ex, pi, drawn)
    if gold is not None:
        p[:, np.asarray(gold, dtype=bool)] = 1.0
    judged = np.bincount(it, minlength=ex.size) > 0
    return _summary(p[:, (ex >= 0) & judged], confidence)


def expected_set_accuracy(
    items: ArrayLike,
    workers: ArrayLike,
    chosen: ArrayLike,
    exported: ArrayLike,
    accuracy: ArrayLike,
    n: ArrayLike,
    prior: ArrayLike,
    *,
    draws: int = DRAWS,
    confidence: float = 0.95,
    seed: int = 0,
) -> ExpectedAccuracy:
    """Multi-label sets: the expected share of items whose exported set is exactly right.
    ``items``, ``workers``: one entry per judgment; ``chosen``: (judgments, A) bool, the
    options each judgment chose; ``exported``: (N, A) bool, the exported sets (items without a
    judgment are not scored); ``prior``: (A,) each option's share of items that hold it.

    >>> r = expected_set_accuracy([0, 0], [0, 1], [[1, 0], [1, 0]], [[1, 0]],
    ...                           [0.9, 0.9], [100, 100], [0.5, 0.5])
    >>> round(r.value, 2)
    0.97
    """
    it = np.asarray(items, dtype=np.int64)
    wk = np.asarray(workers, dtype=np.int64)
    ch = np.asarray(chosen, dtype=bool)
    ex = np.asarray(exported, dtype=bool)
    N, A = ex.shape
    q = np.asarray(prior, dtype=np.float64)
    rng = np.random.default_rng(seed)
    drawn = _draw_accuracy(np.asarray(accuracy, dtype=np.float64),
                           np.asarray(n, dtype=np.float64), draws, rng)  # fmt: skip
    right = np.ones((draws, N))
    for a in range(A):
        pa = _unit_probability(it, wk, ch[:, a].astype(np.int64), ex[:, a].astype(np.int64),
                               np.array([1.0 - q[a], q[a]]), drawn)  # fmt: skip
        right *= pa
    judged = np.bincount(it, minlength=N) > 0
    return _summary(right[:, judged], confidence)


__all__ = ["ExpectedAccuracy", "expected_accuracy", "expected_set_accuracy"]
