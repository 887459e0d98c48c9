"""Dynamic overlap: how many more judgments each item wants (pure).

An item is settled once the posterior of its exported answer reaches ``confidence`` with at
least ``min_overlap`` judgments; it never gets more than ``max_overlap`` in all. An unsettled
item wants the judgments a typical worker (right with probability ``a``, errors spread evenly
over the ``K - 1`` other classes) would need to lift the leading answer's posterior odds
``p / (1 - p)`` to ``c / (1 - c)``: each answer agreeing with it multiplies the odds by
``r = a (K - 1) / (1 - a)``, so ``need = ceil(log(target odds / odds) / log r)`` (the
sequential-probability view of Dawid-Skene's posterior; cf. BUOCA and Toloka's dynamic overlap,
which stop an item at a fixed confidence).

Repair: the posterior is taken without the answers of stopped or blocked workers
(:func:`without`), so that an item whose answer rested on them wants judgments again in the
same cycle: its answer changes, or its confidence falls below the setting.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray


def without(
    posterior: NDArray[np.float64],
    items: NDArray[np.int64],
    own: NDArray[np.float64],
    dropped: NDArray[np.bool_],
) -> NDArray[np.float64]:
    """The posterior (N, K) of each item's class without the judgments ``dropped``: each
    dropped judgment's likelihood ``own`` (n, K), P(its answer | class k) for its worker, is
    divided out (naive Bayes, in logs). Gold rows (one-hot) stay as they are."""
    if not dropped.any():
        return posterior
    log_post = np.log(np.maximum(posterior, 1e-300))
    np.subtract.at(log_post, items[dropped], np.log(np.maximum(own[dropped], 1e-300)))
    log_post -= log_post.max(axis=1, keepdims=True)
    out = np.exp(log_post)
    out /= out.sum(axis=1, keepdims=True)
    hard = posterior.max(axis=1) >= 1.0  # gold: the class is given, not inferred
    out[hard] = posterior[hard]
    return out


def label_need(
    posterior: NDArray[np.float64],
    n: NDArray[np.int64],
    gold: NDArray[np.bool_],
    typical: float,
    *,
    confidence: float,
    min_overlap: int,
    max_overlap: int,
) -> NDArray[np.int64]:
    """Judgments each item wants (module docstring): ``posterior`` (N, K) of the judgments that
    count, ``n`` (N,) their number, ``gold`` (N,) the items whose class is given (they want
    only ``min_overlap``), ``typical`` the typical worker's accuracy."""
    K = posterior.shape[1]
    p = np.clip(posterior.max(axis=1), 1e-12, 1 - 1e-12)
    target = confidence / (1.0 - confidence)
    odds = p / (1.0 - p)
    a = min(max(typical, 0.0), 1 - 1e-9)
    ratio = a * (K - 1) / (1.0 - a) if a > 0 else 0.0
    if ratio > 1.0:
        steps = np.ceil(np.log(target / odds) / math.log(ratio) - 1e-9)
        more = np.where(odds >= target, 0, np.maximum(steps, 1)).astype(np.int64)
    else:  # a typical answer says nothing: only the caps end an item
        more = np.where(odds >= target, 0, max_overlap).astype(np.int64)
    more = np.where(gold, 0, more)
    need = np.maximum(more, min_overlap - n)
    return np.clip(np.minimum(need, max_overlap - n), 0, None).astype(np.int64)
