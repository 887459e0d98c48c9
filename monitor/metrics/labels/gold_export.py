"""The export measured on gold, cross-fitted: each gold item's exported answer is computed with
that item's gold withheld, then scored against its gold.

The crowd-only figure of the verdict (:mod:`monitor.metrics.labels.export_accuracy`) scores the
export against what an unlimited crowd of the same workers would answer: errors the workers
share are invisible to it. Gold gives the one number that needs no model: how often the export
is right on items whose truth it did not learn from. Every gold item the model was given would
be right by construction (its answer is clamped to the gold), so the gold items are dealt into
``folds`` folds and, for each fold, the model is fitted with that fold's gold withheld (its items
answered by the crowd alone) while the other folds' gold still anchors the workers: the
cross-fitting of Chernozhukov et al. (2018, *Econometrics Journal* 21:C1), here with the
answers rather than a nuisance parameter. The withheld items are scored:

- labels: ``accuracy = c / n``, the share of the ``n`` gold items whose cross-fitted answer is
  their gold, with the Wilson interval (:func:`~monitor.metrics.labels.gold.wilson_interval`);
- ratings: ``mae = mean_i |a_i - g_i|``, with a percentile bootstrap interval over the gold
  items (Efron & Tibshirani 1993, ch. 13).

The figure speaks of the gold items; it stands for the rest of the campaign where the gold was
drawn like the rest of the items (a random sample), as a platform's control tasks are meant to
be.

>>> import numpy as np
>>> gold_items = np.arange(10)
>>> answers = cross_fitted_answers(lambda withheld: np.where(withheld, 1, 0), gold_items, 20, 2)
>>> answers[:10].tolist()
[1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
>>> s = accuracy_on_gold(np.array([1, 1, 1, 0]), np.array([1, 1, 1, 1]))
>>> round(s.value, 2), s.n
(0.75, 4)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from monitor.metrics.labels.gold import wilson_interval


@dataclass(frozen=True)
class GoldScore:
    """The cross-fitted export scored on ``n`` gold items: ``value`` (``accuracy``: share
    right; ``mae``: mean absolute error) with its interval at ``confidence``."""

    measure: str
    value: float
    low: float
    high: float
    n: int
    folds: int
    confidence: float


def deal_gold_folds(n_gold: int, folds: int, seed: int = 0) -> NDArray[np.int64]:
    """The fold of each of ``n_gold`` gold items: a seeded random order dealt round the folds,
    so the folds' sizes differ by at most one."""
    if folds < 2:
        raise ValueError("folds must be at least 2.")
    fold = np.empty(n_gold, dtype=np.int64)
    fold[np.random.default_rng(seed).permutation(n_gold)] = np.arange(n_gold) % folds
    return fold


def cross_fitted_answers(
    fit: Callable[[NDArray[np.bool_]], NDArray],
    gold_items: NDArray[np.int64],
    n_items: int,
    folds: int = 5,
    seed: int = 0,
) -> NDArray:
    """Each gold item's exported answer from the fit that withheld its gold.

    ``fit(withheld)`` fits the model with the gold of the items where ``withheld`` (an (N,)
    mask) is True left out, and returns the exported answer of every item. The result is an
    (N,) array holding, at each gold item, the answer of the fit that withheld it (elsewhere,
    the last fit's answer: read only the gold items)."""
    gold_items = np.asarray(gold_items, dtype=np.int64)
    fold = deal_gold_folds(gold_items.size, min(folds, max(gold_items.size, 2)), seed)
    out: NDArray | None = None
    for k in range(int(fold.max()) + 1 if fold.size else 0):
        withheld = np.zeros(n_items, dtype=bool)
        withheld[gold_items[fold == k]] = True
        answers = np.asarray(fit(withheld))
        if out is None:
            out = answers.copy()
        out[withheld] = answers[withheld]
    if out is None:
        raise ValueError("no gold item to withhold.")
    return out


def accuracy_on_gold(
    answers: NDArray, gold: NDArray, *, folds: int = 5, confidence: float = 0.95
) -> GoldScore:
    """The share of gold items whose (cross-fitted) answer is their gold, with the Wilson
    interval. ``answers`` and ``gold``: one entry per gold item; an answer of -1 (none) counts
    as wrong."""
    right = np.asarray(answers) == np.asarray(gold)
    n = int(right.size)
    p = float(right.mean()) if n else float("nan")
    low, high = wilson_interval(np.array([p]), np.array([n]), confidence)
    return GoldScore("accuracy", p, float(low[0]), float(high[0]), n, folds, confidence)


def mae_on_gold(
    answers: NDArray[np.float64],
    gold: NDArray[np.float64],
    *,
    folds: int = 5,
    confidence: float = 0.95,
    draws: int = 2000,
    seed: int = 0,
) -> GoldScore:
    """The mean absolute error of the (cross-fitted) answers on the gold items, with a
    percentile bootstrap interval that resamples the gold items."""
    err = np.abs(np.asarray(answers, dtype=np.float64) - np.asarray(gold, dtype=np.float64))
    n = int(err.size)
    if n == 0:
        return GoldScore("mae", float("nan"), float("nan"), float("nan"), 0, folds, confidence)
    rng = np.random.default_rng(seed)
    step = max(1, 1_000_000 // n)  # draws per batch: at most a million indices at once
    means = np.concatenate([
        err[rng.integers(0, n, size=(min(step, draws - b), n))].mean(axis=1)
        for b in range(0, draws, step)
    ])  # fmt: skip
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return GoldScore("mae", float(err.mean()), float(low), float(high), n, folds, confidence)
