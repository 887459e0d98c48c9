"""The expected pair accuracy of a ranking: the share of item pairs it orders right.

Each ranked item ``i`` has a score ``s_i`` with posterior standard error ``se_i`` (the
reliability model's, :mod:`monitor.metrics.preferences.model`). The ranking orders ``i`` above
``j`` when ``s_i > s_j``; with ``d = s_i - s_j`` and ``sd_d = sqrt(se_i^2 + se_j^2)`` (the
scores' covariance left out), the true order agrees with probability ``p_ij = Phi(|d| /
sd_d)``. The expectation is the mean of ``p_ij`` over the pairs of ranked items (at most
``MAX_PAIRS``, drawn at random beyond). Pairs share items, so they are not independent: the
items' part of the variance counts ``N / 2`` independent pairs (as many as disjoint pairs the
``N`` items make), ``mean p (1 - p) / (N / 2)``; the interval is ``E +- z`` times its root,
clipped to [0, 1].
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtr, ndtri

from monitor.metrics.labels.export_accuracy import ExpectedAccuracy

MAX_PAIRS = 2_000_000


def expected_pair_accuracy(
    score: ArrayLike, se: ArrayLike, *, confidence: float = 0.95, seed: int = 0
) -> ExpectedAccuracy:
    """Expected share of pairs of ranked items that the ranking by ``score`` orders as the
    truth does, from each score's standard error ``se`` (module docstring). Items whose score
    or se is not finite are left out; ``n`` is the number of items.

    Two items one standard error of the difference apart: ``Phi(1) = 0.841``.

    >>> r = expected_pair_accuracy([0.0, 2 ** 0.5], [1.0, 1.0])
    >>> round(r.value, 3), r.n
    (0.841, 2)
    """
    s = np.asarray(score, dtype=np.float64)
    e = np.asarray(se, dtype=np.float64)
    ok = np.isfinite(s) & np.isfinite(e)
    s, e = s[ok], np.maximum(e[ok], 1e-12)
    N = s.size
    nan = float("nan")
    if N < 2:
        return ExpectedAccuracy(nan, nan, nan, N, nan, nan)
    total = N * (N - 1) // 2
    if total <= MAX_PAIRS:
        i, j = np.triu_indices(N, k=1)
    else:
        rng = np.random.default_rng(seed)
        i = rng.integers(0, N, MAX_PAIRS)
        j = (i + rng.integers(1, N, MAX_PAIRS)) % N
    p = ndtr(np.abs(s[i] - s[j]) / np.sqrt(e[i] ** 2 + e[j] ** 2))
    value = float(p.mean())
    items_var = float((p * (1.0 - p)).mean()) / max(N / 2.0, 1.0)
    half = float(ndtri(0.5 + confidence / 2.0)) * np.sqrt(items_var)
    return ExpectedAccuracy(value, float(max(0.0, value - half)), float(min(1.0, value + half)),
                            N, 0.0, float(np.sqrt(items_var)))  # fmt: skip


__all__ = ["expected_pair_accuracy"]
