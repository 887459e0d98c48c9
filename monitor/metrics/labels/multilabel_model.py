"""Multi-label sets: one binary Dawid-Skene per option, all options at once.

Each judgment of item ``i`` by worker ``w`` says, for every option ``a``, present (``y = 1``,
the option was selected) or absent (``y = 0``). Per option (Dawid & Skene 1979, two classes):
truth ``z_ia ~ Bernoulli(pi_a)``, worker sensitivity ``alpha_wa = P(y = 1 | z = 1)`` and
specificity ``beta_wa = P(y = 0 | z = 0)``.

- E-step: ``logit q_ia = logit pi_a + sum_{judgments of i} [y log(alpha / (1 - beta))
  + (1 - y) log((1 - alpha) / beta)]``: one sparse (item x judgment) product for all options.
- M-step: ``alpha_wa = sum q y / sum q``, ``beta_wa = sum (1 - q)(1 - y) / sum (1 - q)`` over the
  worker's judgments, each with ``smoothing`` pseudo-judgments at the pooled rate of the option
  (Dirichlet MAP, as in ``dawid_skene``), the pooled rate itself with ``smoothing``
  pseudo-judgments at the rate over all options; ``pi_a`` = mean of ``q`` over judged items with
  ``smoothing`` pseudo-items at the share of judgments selecting the option (Beta MAP).
- Start: the share of the item's judgments selecting the option (majority vote). Stop when no
  ``q_ia`` moves by more than ``tol``.
- Items judged by fewer than ``min_item_judgments`` workers enter no worker's counts (as in
  ``dawid_skene``: a lone judgment cannot be checked against anyone, and EM would read items a
  worker alone judged that differ from the rest as their errors); the interval counts the
  judgments that do.
- Why the two priors: in an open set most options are words one or two workers typed once. Their
  MLE is on the boundary (``pi_a -> 0``, and ``alpha_a`` a ratio of two vanishing soft counts),
  which EM approaches sublinearly: the golden case ``ct_open_small`` (25 options, 72 judgments)
  had not converged after 100 steps and took 1949 at ``tol = 1e-6``; with the priors, 11.

Per worker: ``accuracy`` = the mean over options of the balanced accuracy ``(alpha_wa +
beta_wa) / 2`` (Brodersen et al. 2010, ICPR), weighted by ``pi_a (1 - pi_a)``, the variance of
the option's truth: an option (almost) never or always present says nothing about skill and would
pull every worker towards the same value. Wilson interval on it with the worker's number of
judgments (on items others judged too) as trials (the options of one judgment are not
independent decisions, so counting judgments, not judgment x option, stays conservative).
Options are usually rare (present in 10-30% of items), so the plain accuracy ``pi alpha + (1 -
pi) beta`` is dominated by the absences: a worker never selecting anything would score ``1 -
pi`` while one who flips a quarter of the options scores 0.75. The balanced accuracy of any
answerer independent of the truth is exactly 0.5 (``alpha + beta = 1``), whatever the
prevalence (and so is any weighted mean), so ``chance = 0.5`` and ``floor = chance +
floor_margin (1 - chance)`` is the level the flags use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict, Unpack

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

from monitor.metrics.common import check_keywords, check_same_length
from monitor.metrics.labels.label_model import (
    EPS,
    FIT_DEFAULTS,
    FitSettings,
    LabelFit,
    chance_floor,
    measured_accuracy,
)


@dataclass(frozen=True, eq=False)
class MultilabelModel(LabelFit):
    """One binary Dawid-Skene per option (present / absent); ``accuracy`` (W,) the mean
    balanced accuracy."""

    posterior: NDArray[np.float64] = field(repr=False)  # (N, A)
    sensitivity: NDArray[np.float64] = field(repr=False)  # (W, A)
    specificity: NDArray[np.float64] = field(repr=False)  # (W, A)
    prior: NDArray[np.float64] = field(repr=False)  # (A,)


def _codes(name: str, x: ArrayLike, upper: int) -> NDArray[np.int64]:
    a = np.asarray(x).reshape(-1).astype(np.int64)
    if a.size and (a.min() < 0 or a.max() >= upper):
        raise ValueError(f"{name} must lie in 0..{upper - 1}.")
    return a


class _OptionSizes(TypedDict):
    n_items: int
    n_workers: int
    n_options: int


class MultilabelOptions(_OptionSizes, FitSettings):
    """The keyword arguments of :func:`multilabel_model`: the codes' ranges ``n_items``,
    ``n_workers``, ``n_options`` (required), and the fit's :class:`FitSettings`
    (``smoothing``: pseudo-judgments at the pooled rates of each option)."""


def multilabel_model(
    judgment_items: ArrayLike,
    judgment_workers: ArrayLike,
    ann_judgment: ArrayLike,
    ann_code: ArrayLike,
    **options: Unpack[MultilabelOptions],
) -> MultilabelModel:
    """Binary Dawid-Skene per option (formulas in the module docstring).

    ``judgment_items``, ``judgment_workers``: one entry per judgment; ``ann_judgment``,
    ``ann_code``: one entry per selected option (index of the judgment, option code);
    ``options``: :class:`MultilabelOptions`.
    """
    check_keywords(
        options, MultilabelOptions.__required_keys__, MultilabelOptions.__optional_keys__
    )
    o: MultilabelOptions = {**FIT_DEFAULTS, **options}
    n_items, n_workers, n_options = o["n_items"], o["n_workers"], o["n_options"]
    max_iter, tol, confidence, smoothing = o["max_iter"], o["tol"], o["confidence"], o["smoothing"]
    if max_iter < 1 or not 0.0 < confidence < 1.0 or smoothing < 0 or n_options < 1:
        raise ValueError("need max_iter >= 1, 0 < confidence < 1, smoothing >= 0, n_options >= 1.")
    it = _codes("judgment_items", judgment_items, n_items)
    wk = _codes("judgment_workers", judgment_workers, n_workers)
    check_same_length(judgment_items=it, judgment_workers=wk)
    aj = _codes("ann_judgment", ann_judgment, max(it.size, 1) if it.size else 0)
    ac = _codes("ann_code", ann_code, n_options)
    check_same_length(ann_judgment=aj, ann_code=ac)
    n, a = it.size, n_options
    y = np.zeros((n, a))
    y[aj, ac] = 1.0  # a repeated annotation counts once
    ones = np.ones(n)
    to_item = sparse.csr_matrix((ones, (it, np.arange(n))), shape=(n_items, n))
    to_worker = sparse.csr_matrix((ones, (wk, np.arange(n))), shape=(n_workers, n))
    n_i = np.bincount(it, minlength=n_items).astype(np.float64)
    n_w = np.bincount(wk, minlength=n_workers).astype(np.int64)
    judged = n_i > 0
    taught = (n_i >= o["min_item_judgments"])[it].astype(np.float64)[:, None]  # (n, 1)
    m_w = np.bincount(wk, taught[:, 0], n_workers)

    q = np.asarray(to_item @ y) / np.maximum(n_i, 1.0)[:, None]
    rate = y.mean(axis=0) if n else np.full(a, 0.5)  # share of judgments selecting each option
    prior = np.full(a, 0.5)
    sens = np.full((n_workers, a), 0.5)
    spec = np.full((n_workers, a), 0.5)

    def m_step(q: NDArray[np.float64]) -> tuple[NDArray, NDArray, NDArray]:
        qt = q[it] * taught  # the judgments that count: P(present); the others: 0
        pos = np.asarray(to_worker @ qt)  # (W, A) soft count of truly present
        neg = m_w[:, None] - pos
        tp = np.asarray(to_worker @ (qt * y))
        tn = np.asarray(to_worker @ ((taught - qt) * (1.0 - y)))
        # each option's pooled rate, itself shrunk to the rate over all options
        all_s = (tp.sum() + EPS) / (pos.sum() + 2 * EPS)
        all_c = (tn.sum() + EPS) / (neg.sum() + 2 * EPS)
        pool_s = (tp.sum(0) + smoothing * all_s) / np.maximum(pos.sum(0) + smoothing, EPS)
        pool_c = (tn.sum(0) + smoothing * all_c) / np.maximum(neg.sum(0) + smoothing, EPS)
        s = (tp + smoothing * pool_s) / np.maximum(pos + smoothing, EPS)
        c = (tn + smoothing * pool_c) / np.maximum(neg + smoothing, EPS)
        pr = (q[judged].sum(axis=0) + smoothing * rate) / (judged.sum() + smoothing)
        clip = (1e-6, 1.0 - 1e-6)
        return np.clip(s, *clip), np.clip(c, *clip), np.clip(pr, *clip)

    converged = False
    iterations = 0
    while iterations < max_iter:
        iterations += 1
        sens, spec, prior = m_step(q)
        w_yes = np.log(sens / (1.0 - spec))[wk]  # (n, A)
        w_no = np.log((1.0 - sens) / spec)[wk]
        logit = np.asarray(to_item @ (y * w_yes + (1.0 - y) * w_no)) + np.log(prior / (1 - prior))
        new_q = 1.0 / (1.0 + np.exp(-np.clip(logit, -700, 700)))
        step = float(np.max(np.abs(new_q - q), initial=0.0))
        q = new_q
        if step < tol:
            converged = True
            break
    sens, spec, prior = m_step(q)
    q[~judged] = prior
    acc_wa = (sens + spec) / 2.0
    # options weighted by the variance of their truth: an option (almost) never or always present
    # says nothing about skill; every weighted mean of 0.5 is 0.5, so chance stays 0.5
    wt = prior * (1.0 - prior)
    acc = np.where(n_w > 0, acc_wa @ (wt / wt.sum()), np.nan)
    chance = 0.5
    return MultilabelModel(
        posterior=q,
        **measured_accuracy(acc, n_w, m_w, confidence),
        sensitivity=sens,
        specificity=spec,
        prior=prior,
        **chance_floor(chance, o["floor_margin"]),
        iterations=iterations,
        converged=converged,
    )
