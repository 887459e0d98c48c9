"""One-coin Dawid-Skene for label campaigns with many categories, in memory linear in the
judgments.

Dawid & Skene (1979) give each worker a K x K confusion matrix: with K categories that is K²
numbers per worker and an (N, K) posterior, 11 GiB at K = 10,000. The one-coin model (Dawid &
Skene's model with one parameter per worker, as in Karger, Oh & Shah 2011 and Zhang, Chen, Zhou
& Jordan 2014, "Spectral methods meet EM", section 2) gives worker ``w`` one accuracy ``p_w``:
the right class with probability ``p_w``, each of the ``K - 1`` others with ``(1 - p_w) / (K -
1)``. Item ``i`` has class ``k`` with prior ``pi_k``.

- E-step: ``T[i, k] ∝ pi_k exp(A[i, k])`` with ``A[i, k] = sum_{judgments (i, w, k)} log(p_w (K
  - 1) / (1 - p_w))``, zero for the classes nobody answered on ``i``; so ``T[i, k] = pi_k
  exp(A[i, k]) / D_i`` on the answered classes and ``pi_k / D_i`` on every other, ``D_i = 1 +
  sum_{answered k} pi_k (exp(A[i, k]) - 1)``. Only the answered classes are stored (a sparse
  row per item), with the item's scale ``1 / D_i`` for the rest.
- M-step: ``p_w = (sum_{judgments (i, w, l)} T[i, l] + s p_pool + h_w a_w) / (n_w + s + h_w)``
  (``s``: smoothing pseudo-judgments at the pooled accuracy ``p_pool``; ``h_w``: history
  pseudo-judgments at the worker's past accuracy ``a_w``); ``pi_k = mean_i T[i, k]``, over
  the judged items, from the stored entries and ``pi_k sum_i 1 / D_i`` for the rest.
- Stop when the log-likelihood per judgment changes by less than ``tol``.
- Items judged by fewer than ``min_item_judgments`` workers (gold aside) enter no worker's
  accuracy: a lone answer cannot be checked against anyone, and where the items a worker alone
  judged are not drawn like the rest EM reads the difference as errors and confirms it through
  its own posteriors (:func:`monitor.metrics.labels.label_model.dawid_skene`); ``n_w`` and the
  interval count the judgments that do.

The start is the majority-vote shares (as :func:`monitor.metrics.labels.label_model.dawid_skene`),
gold items are clamped to their class, and labels break exact ties by the higher prior, then
the first declared class. A worker's accuracy is ``p_w`` (``sum_k pi_k e_w[k, k]`` of the full
model), with the same Wilson interval, chance ``max_k pi_k`` and per-worker chance ``sum_k pi_k
q_wk = p_w sum_k pi_k² + (1 - p_w) (1 - sum_k pi_k²) / (K - 1)``.

Cost per iteration: O(judgments + K), memory O(judgments + K + workers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Unpack

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

from monitor.metrics.labels.label_model import (
    EPS,
    LabelOptions,
    SingleLabelFit,
    label_inputs,
    worker_accuracy,
)


@dataclass(frozen=True, eq=False)
class OneCoinModel(SingleLabelFit):
    """The one-coin model's estimates; ``posterior`` holds each item's answered (and gold)
    classes only: every other class ``k`` has ``prior[k] * rest[i]``."""

    posterior: sparse.csr_array = field(repr=False)  # (N, K), the answered classes
    rest: NDArray[np.float64] = field(repr=False)  # (N,) posterior / prior of the others
    labels: NDArray[np.int64] = field(repr=False)  # (N,) -1 unjudged (gold: the gold class)
    label_posterior: NDArray[np.float64] = field(repr=False)  # (N,) posterior of the label
    prior: NDArray[np.float64] = field(repr=False)  # (K,)


class _Cells:
    """The (item, class) cells some judgment (or gold) names, sorted by item then class: the
    only cells of the posterior stored. ``cell[j]``: judgment ``j``'s cell."""

    def __init__(self, items: NDArray, labels: NDArray, gold: NDArray | None, n: int, k: int):
        keys = items * k + labels
        if gold is not None:
            g = np.flatnonzero(gold >= 0)
            keys_all = np.concatenate([keys, g * k + gold[g]])
        else:
            keys_all = keys
        self.keys = np.unique(keys_all)
        self.row = self.keys // k
        self.col = self.keys % k
        self.cell = np.searchsorted(self.keys, keys)
        self.indptr = np.searchsorted(self.row, np.arange(n + 1))
        self.n, self.k = n, k

    def row_sum(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.bincount(self.row, weights=x, minlength=self.n).astype(np.float64)

    def row_max(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        out = np.full(self.n, -np.inf)
        np.maximum.at(out, self.row, x)
        return out


def one_coin_dawid_skene(
    items: ArrayLike, workers: ArrayLike, labels: ArrayLike, **options: Unpack[LabelOptions]
) -> OneCoinModel:
    """One-coin Dawid-Skene EM (see the module docstring); the arguments as
    :func:`monitor.metrics.labels.label_model.dawid_skene`'s (``options``:
    :class:`~monitor.metrics.labels.label_model.LabelOptions`)."""
    ins = label_inputs(items, workers, labels, options)
    it, wk, lb, g, hist, hist_weight, o = ins
    n_items, n_workers, k = o["n_items"], o["n_workers"], int(o["n_classes"])
    max_iter, tol, smoothing = o["max_iter"], o["tol"], o["smoothing"]

    c = _Cells(it, lb, g, n_items, k)
    per_item = np.bincount(it, minlength=n_items)
    judged = per_item > 0
    n_judged = max(int(judged.sum()), 1)
    n_w = np.bincount(wk, minlength=n_workers).astype(np.int64)
    clamped = np.zeros(n_items, bool) if g is None else g >= 0
    gold_cell = np.zeros(c.keys.size, bool)
    if g is not None:
        gold_cell = clamped[c.row] & (g[c.row] == c.col)
    clamp_cells = clamped[c.row]
    taught = (per_item >= o["min_item_judgments"]) | clamped
    taught_j = taught[it].astype(np.float64)  # the judgments that enter the accuracies
    m_w = np.bincount(wk, taught_j, n_workers)

    # start: majority-vote shares, nothing for the classes nobody answered
    votes = np.bincount(c.cell, minlength=c.keys.size).astype(np.float64)
    t = votes / np.maximum(per_item[c.row], 1)
    rest = np.where(judged, 0.0, 1.0)
    t = np.where(clamp_cells, gold_cell.astype(np.float64), t)
    rest[clamped] = 0.0

    def m_step(
        t: NDArray[np.float64], rest: NDArray[np.float64], prior: NDArray[np.float64] | None
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        right = np.bincount(wk, weights=t[c.cell] * taught_j, minlength=n_workers)
        p_pool = float(right.sum() / m_w.sum()) if m_w.sum() > 0 else 1.0 / k
        p = (right + smoothing * p_pool + hist_weight * hist) / np.maximum(
            m_w + smoothing + hist_weight, EPS
        )
        p = np.clip(p, EPS, 1.0 - EPS)
        mass = np.bincount(c.col, weights=np.where(judged[c.row], t, 0.0), minlength=k)
        if prior is None:  # the start: the answers' shares only
            new = mass / n_judged
        else:  # the classes nobody answered on an item share its rest in proportion to pi
            spread = float(rest[judged].sum())
            inside = np.bincount(c.col, weights=np.where(judged[c.row], rest[c.row], 0.0),
                                 minlength=k)  # fmt: skip
            new = (mass + prior * (spread - inside)) / n_judged
        new = np.maximum(new, EPS)
        return p, new / new.sum()

    def e_step(
        p: NDArray[np.float64], prior: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
        odds = np.log(p) + np.log(k - 1.0) - np.log1p(-p) if k > 1 else np.zeros_like(p)
        a = np.bincount(c.cell, weights=odds[wk], minlength=c.keys.size)
        base = np.bincount(it, weights=np.log1p(-p[wk]) - np.log(max(k - 1.0, 1.0)),
                           minlength=n_items)  # fmt: skip
        # log D_i = log(sum_answered pi_k e^a + (1 - sum_answered pi_k)), stably
        lp = np.log(prior[c.col]) + a
        top = np.maximum(c.row_max(lp), 0.0)
        inside = c.row_sum(np.exp(lp - top[c.row]))
        others = np.maximum(1.0 - c.row_sum(prior[c.col]), 0.0)
        log_d = top + np.log(inside + others * np.exp(-top))
        t = np.exp(lp - log_d[c.row])
        rest = np.exp(-log_d)
        rest[~judged] = 1.0
        log_lik = float((base + log_d)[judged].sum())
        t = np.where(clamp_cells, gold_cell.astype(np.float64), t)
        rest[clamped] = 0.0
        return t, rest, log_lik

    p, prior = m_step(t, rest, None)
    loss = -np.inf
    converged = False
    iterations = 0
    log_lik = -np.inf
    while iterations < max_iter:
        iterations += 1
        t, rest, log_lik = e_step(p, prior)
        p, prior = m_step(t, rest, prior)
        new_loss = log_lik / max(it.size, 1)
        if abs(new_loss - loss) < tol:
            converged = True
            break
        loss = new_loss
    t, rest, log_lik = e_step(p, prior)

    labels_out, label_post = _labels(c, t, rest, prior, judged)
    if g is not None:
        labels_out[clamped] = g[clamped]
        label_post[clamped] = 1.0
    sq = float(np.sum(prior * prior))
    w_chance = p * sq + (1.0 - p) * (1.0 - sq) / max(k - 1, 1)
    per_worker = worker_accuracy(ins, p, n_w, m_w, float(prior.max()), w_chance)
    return OneCoinModel(
        posterior=sparse.csr_array((t, c.col, c.indptr), shape=(n_items, k)),
        rest=rest,
        labels=labels_out,
        label_posterior=label_post,
        prior=prior,
        **per_worker,
        iterations=iterations,
        converged=converged,
        log_likelihood=log_lik,
    )


def _labels(
    c: _Cells,
    t: NDArray[np.float64],
    rest: NDArray[np.float64],
    prior: NDArray[np.float64],
    judged: NDArray[np.bool_],
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Each judged item's class of highest posterior, ties to the higher prior then the first
    class; a class nobody answered wins only when its share of the rest is higher."""
    n = judged.size
    labels = np.full(n, -1, np.int64)
    post = np.full(n, np.nan)
    if c.keys.size:  # the best answered cell per item: by posterior, prior, then class code
        order = np.lexsort((c.col, -prior[c.col], -t, c.row))
        first = order[np.r_[True, c.row[order][1:] != c.row[order][:-1]]]
        labels[c.row[first]] = c.col[first]
        post[c.row[first]] = t[first]
    # the best class nobody answered on an item: the first by prior not among its cells
    per_row = np.diff(c.indptr)
    most = int(per_row.max(initial=0)) + 1
    by_prior = np.lexsort((np.arange(prior.size), -prior))[: min(most, prior.size)]
    rows = np.flatnonzero(judged)
    if rows.size and by_prior.size:
        taken = np.isin(rows[:, None] * prior.size + by_prior[None, :], c.keys)
        free = ~taken.all(axis=1)
        pick = by_prior[np.argmin(taken, axis=1)]
        other = np.where(free, prior[pick] * rest[rows], -np.inf)
        have = labels[rows]
        cur = np.where(have >= 0, post[rows], -np.inf)
        cur_prior = np.where(have >= 0, prior[np.maximum(have, 0)], -np.inf)
        better = (other > cur) | (
            (other == cur)
            & ((prior[pick] > cur_prior) | ((prior[pick] == cur_prior) & (pick < have)))
        )
        better &= free
        labels[rows[better]] = pick[better]
        post[rows[better]] = other[better]
    labels[~judged] = -1
    return labels, post


__all__ = ["OneCoinModel", "one_coin_dawid_skene"]
