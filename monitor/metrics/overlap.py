"""Dynamic overlap: how many more judgments each item wants (pure).

The confidence of an item's exported answer is its posterior under the *typical* worker: each
answer counted as from a worker right with probability ``a`` (the crowd's median accuracy),
errors spread evenly over the ``K - 1`` other classes, on the model's class prior,

    P(k | answers) ∝ prior_k a^(n_k) ((1 - a) / (K - 1))^(n - n_k).

Each worker's own accuracy (Dawid-Skene's posterior) would trust a worker who agreed with the
others on their first few items: grown in chunks, a campaign of weak workers (duck, median 62%
right) settled its items after three answers at a posterior of 0.95 and exported 57% right
answers against 90% with every judgment. The typical worker's posterior is the vote margin's
(``log r`` per net answer, ``r = a (K - 1) / (1 - a)``), which a few lucky answers cannot
inflate.

An item is settled (``need`` 0) once that posterior of its exported answer reaches
``confidence`` with at least ``min_overlap`` judgments; it never gets more than
``max_overlap`` in all. An unsettled item wants the answers that would lift the odds
``p / (1 - p)`` of its exported answer to ``c / (1 - c)`` if each agreed with it:
``ceil(log(target odds / odds) / log r)`` (the sequential probability ratio view; cf. BUOCA
and Toloka's dynamic overlap, which stop an item at a fixed confidence).

Repair: the caller counts no answer of a stopped or blocked worker, so an item whose answer
rested on them wants judgments again in the same cycle.

Pairs of a preference campaign (:func:`pair_need`): the same rule on the posterior of the
pair's exported order (two outcomes), its strict answers each counted as from an annotator
right with the crowd's median accuracy on strict answers, on an even prior; ties count as
judgments, never as evidence (``monitor.pipeline.overlap`` says why the model's own posterior
of the order is not used).

Items of a multi-label campaign (:func:`set_need`): each option a two-class label (the
exported present or absent, on the option's prior share), the item's ``need`` the largest of
its options'.

Items of a rating campaign (:func:`rating_need`): the exported answer is a number, settled
once the posterior probability that the truth lies within a tolerance of it reaches
``confidence``. The posterior is normal around the exported answer, each rating that counts
worth one typical rating: error variance ``v = max(sigma^2, mean square of the item's ratings
about the exported answer)``, ``sigma^2`` the typical rater's (bias^2 + noise^2). The item's
own spread can only widen it: ratings that agree closely say nothing more than typical ones
(a few lucky agreeing ratings cannot settle an item, as a few lucky answers cannot settle a
label), ratings that spread more than typical raters do (an item the raters read differently,
or an answer pulled away from the ratings) want more. An unsettled item wants the typical
ratings that shrink the sd to ``tolerance / z``: ``1 / sd_k^2 = n / v + k / sigma^2``. No
prior on the item counts: the model's mean has a flat prior, and the export is that mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import special


def typical_posterior(
    counts: NDArray[np.float64], prior: NDArray[np.float64], typical: float
) -> NDArray[np.float64]:
    """Each item's class posterior (N, K) from its answers per class ``counts`` (N, K), each
    counted as from a worker right with probability ``typical`` (module docstring)."""
    K = counts.shape[1]
    a = min(max(typical, 1e-9), 1 - 1e-9)
    wrong = (1.0 - a) / max(K - 1, 1)
    n = counts.sum(axis=1, keepdims=True)
    log_post = np.log(np.maximum(prior, 1e-300))[None, :] + counts * math.log(a)
    log_post += (n - counts) * math.log(wrong)
    log_post -= log_post.max(axis=1, keepdims=True)
    post = np.exp(log_post)
    return post / post.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class Overlap:
    """When an item is settled: its answer's posterior at ``confidence`` with ``min_overlap``
    judgments, and never more than ``max_overlap`` in all."""

    confidence: float = 0.99
    min_overlap: int = 3
    max_overlap: int = 10


def label_need(
    confidence_of: NDArray[np.float64], n: NDArray[np.int64], gold: NDArray[np.bool_],
    typical: float, k: int, rule: Overlap,
) -> NDArray[np.int64]:  # fmt: skip
    """Judgments each item wants (module docstring): ``confidence_of`` (N,) the posterior of its
    exported answer, ``n`` (N,) the judgments that count, ``gold`` (N,) the items whose class
    is given (they want only ``min_overlap``), ``typical`` the typical worker's accuracy over
    ``k`` classes."""
    confidence, max_overlap = rule.confidence, rule.max_overlap
    p = np.clip(confidence_of, 1e-12, 1 - 1e-12)
    target = confidence / (1.0 - confidence)
    odds = p / (1.0 - p)
    a = min(max(typical, 0.0), 1 - 1e-9)
    ratio = a * (k - 1) / (1.0 - a)
    if ratio > 1.0:
        steps = np.ceil(np.log(target / odds) / math.log(ratio) - 1e-9)
        more = np.where(odds >= target, 0, np.maximum(steps, 1)).astype(np.int64)
    else:  # a typical answer says nothing: only the caps end an item
        more = np.where(odds >= target, 0, max_overlap).astype(np.int64)
    return _capped(more, np.asarray(n), np.asarray(gold), rule)


def pair_posterior(
    along: NDArray[np.int64], against: NDArray[np.int64], typical: float
) -> NDArray[np.float64]:
    """Each pair's posterior of its exported order from its strict answers ``along`` and
    ``against`` it, each counted as from an annotator right with probability ``typical`` (the
    crowd's median accuracy on strict answers), on an even prior: the odds are
    ``(a / (1 - a))^(along - against)``. A tie says nothing of the order (Davidson's tie is as
    likely either way) and is no evidence here, nor is any answer of a crowd at or below
    chance (``typical <= 0.5``: one half)."""
    counts = np.stack([np.asarray(along), np.asarray(against)], axis=1).astype(np.float64)
    return typical_posterior(counts, np.array([0.5, 0.5]), max(typical, 0.5))[:, 0]


def pair_need(
    along: NDArray[np.int64], against: NDArray[np.int64], n: NDArray[np.int64],
    gold: NDArray[np.bool_], typical: float, rule: Overlap,
) -> NDArray[np.int64]:  # fmt: skip
    """Judgments each judged pair of a preference campaign wants: the label rule
    (:func:`label_need`, two outcomes) on the posterior of the pair's exported order
    (:func:`pair_posterior`). ``n`` counts every judgment that counts, ties included (a
    platform's overlap counts them), so a pair its annotators keep calling a tie stops at
    ``max_overlap``; ``gold`` the pairs whose order the items' gold values give (they want only
    ``min_overlap``). A pair whose exported order is undefined (equal scores) is passed with
    ``along = against = 0``: its posterior is one half."""
    return label_need(pair_posterior(along, against, typical), n, gold, typical, 2, rule)


def set_need(
    present: NDArray[np.int64], n: NDArray[np.int64], exported: NDArray[np.bool_],
    prior: NDArray[np.float64], gold: NDArray[np.bool_], typical: float, rule: Overlap,
) -> NDArray[np.int64]:  # fmt: skip
    """Judgments each item of a multi-label campaign wants: the largest over its options of the
    label rule (:func:`label_need`, two classes) on each option's exported present / absent.
    ``present`` (N, A): the judgments that count selecting each option, of ``n`` (N,) that
    count; ``exported`` (N, A): the options the export holds present; ``prior`` (A,): each
    option's share present. Each judgment says present or absent for every option, counted as
    from a worker right with probability ``typical`` (at or below one half: no evidence), so
    an option's log-odds of present are ``logit(prior) + (present - absent) log(a / (1 - a))``.
    ``gold`` (N,): the items whose set is given (they want only ``min_overlap``)."""
    present = np.asarray(present, dtype=np.float64)
    N, A = present.shape
    n = np.asarray(n, dtype=np.int64)
    if A == 0:  # nothing to settle but the floor
        return label_need(np.ones(N), n, gold, typical, 2, rule)
    a = min(max(typical, 0.5), 1 - 1e-9)
    pi = np.clip(np.asarray(prior, dtype=np.float64), 1e-12, 1 - 1e-12)
    step = math.log(a / (1 - a))
    log_odds = np.log(pi / (1.0 - pi))[None, :] + (2.0 * present - n[:, None]) * step
    sure = special.expit(np.where(exported, log_odds, -log_odds))
    need = label_need(sure.ravel(), np.repeat(n, A), np.repeat(np.asarray(gold), A), a, 2, rule)
    return need.reshape(N, A).max(axis=1)


def rating_precision(
    ss: NDArray[np.float64], n: NDArray[np.int64], sigma2: float
) -> NDArray[np.float64]:
    """``1 / sd^2`` of each item's truth under the typical rater: its ``n`` (N,) ratings that
    count, each with the error variance ``v = max(sigma2, ss / n)``, the larger of the typical
    rater's and the ratings' own mean square around the exported answer (``ss`` (N,): their sum
    of squares about it), so ``n / v`` (0 without a rating)."""
    ss = np.asarray(ss, dtype=np.float64)
    count = np.asarray(n, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.maximum(sigma2, np.where(count > 0, ss / np.maximum(count, 1.0), 0.0))
        return np.where(count > 0, np.where(v > 0, count / v, np.inf), 0.0)


def rating_confidence(
    ss: NDArray[np.float64], n: NDArray[np.int64], sigma2: float, tolerance: float
) -> NDArray[np.float64]:
    """The posterior probability that each item's truth lies within ``tolerance`` of its
    exported answer, the posterior normal around it with the precision of
    :func:`rating_precision`: ``2 Phi(tolerance / sd) - 1``."""
    with np.errstate(divide="ignore"):
        sd = 1.0 / np.sqrt(rating_precision(ss, n, sigma2))
        return special.erf(tolerance / (sd * math.sqrt(2.0)))


def rating_need(
    ss: NDArray[np.float64], n: NDArray[np.int64], gold: NDArray[np.bool_], sigma2: float,
    tolerance: float, rule: Overlap,
) -> NDArray[np.int64]:  # fmt: skip
    """Judgments each item of a rating campaign wants (module docstring): settled once
    :func:`rating_confidence` reaches ``rule.confidence`` (the precision ``(z / tolerance)^2``,
    ``z = Phi^-1((1 + c) / 2)``) with ``min_overlap`` ratings; else the typical ratings
    (error variance ``sigma2``) that lift the precision there, ``1 / sd_k^2 = 1 / sd^2 +
    k / sigma2``, at least up to ``min_overlap``, never past ``max_overlap`` in all.
    ``sigma2`` infinite (the run cannot tell what the typical rater reaches): only the caps end
    an item. ``gold`` (N,): the items whose value is given (they want only ``min_overlap``)."""
    if not tolerance > 0:
        raise ValueError("tolerance must be > 0")
    n = np.asarray(n, dtype=np.int64)
    precision = rating_precision(ss, n, sigma2)
    target = (special.ndtri((1.0 + rule.confidence) / 2.0) / tolerance) ** 2
    settled = precision >= target
    if math.isfinite(sigma2):
        with np.errstate(invalid="ignore"):
            steps = np.ceil(np.nan_to_num((target - precision) * sigma2) - 1e-9)
        more = np.where(settled, 0, np.maximum(steps, 1))
    else:
        more = np.where(settled, 0, rule.max_overlap)
    more = np.minimum(more, rule.max_overlap)  # steps can be huge: cap before the int cast
    return _capped(more.astype(np.int64), n, np.asarray(gold), rule)


def _capped(
    more: NDArray[np.int64], n: NDArray[np.int64], gold: NDArray[np.bool_], rule: Overlap
) -> NDArray[np.int64]:
    """``more`` (none for gold), at least up to ``min_overlap``, never past ``max_overlap``."""
    more = np.where(gold, 0, more)
    need = np.maximum(more, rule.min_overlap - n)
    return np.clip(np.minimum(need, rule.max_overlap - n), 0, None).astype(np.int64)
