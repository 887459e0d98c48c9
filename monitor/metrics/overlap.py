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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


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
    confidence, min_overlap, max_overlap = rule.confidence, rule.min_overlap, rule.max_overlap
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
    more = np.where(gold, 0, more)
    need = np.maximum(more, min_overlap - n)
    return np.clip(np.minimum(need, max_overlap - n), 0, None).astype(np.int64)


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
